"""The PyBoy adapter: determinism, states as bytes, refusing states from another ROM."""

from pathlib import Path

import pytest

from koholint.game.emulator import Button, GameBoy
from koholint.game.ram import RamAddress
from koholint.game.rom import TITLE_START, bundled_cartridge, header_checksum
from koholint.game.savestate import SaveStateError, SaveStateRomMismatchError
from koholint.game.states import load_named_state


def other_rom(tmp_path: Path) -> Path:
    """The cartridge with another title: a different, valid ROM."""
    data = bytearray(bundled_cartridge().read_bytes())
    data[TITLE_START : TITLE_START + 8] = b"OTHERROM"
    data[0x14D] = header_checksum(bytes(data))
    path = tmp_path / "other.gb"
    path.write_bytes(bytes(data))
    return path


def walk(gameboy: GameBoy, frames: int) -> list[tuple[int, int]]:
    positions = []
    for frame in range(frames):
        gameboy.hold(Button.RIGHT if frame % 40 < 20 else Button.DOWN)
        gameboy.tick()
        positions.append(gameboy.ram.link_position())
    return positions


def test_state_round_trip_replays_identically():
    with GameBoy() as gameboy:
        gameboy.load_state(load_named_state("start_of_play"))
        saved = gameboy.save_state()
        first = walk(gameboy, 120)
        gameboy.load_state(saved)
        second = walk(gameboy, 120)
    assert first == second
    assert first[-1] != first[0]


def test_state_from_another_rom_is_refused_and_the_emulator_untouched(tmp_path: Path):
    with GameBoy(rom=other_rom(tmp_path)) as other, GameBoy() as gameboy:
        foreign = other.save_state()
        gameboy.tick(30)
        before = gameboy.save_state()
        with pytest.raises(
            SaveStateRomMismatchError, match="load it with the ROM it was made from"
        ):
            gameboy.load_state(foreign)
        assert gameboy.save_state() == before


def test_corrupt_state_is_refused():
    with GameBoy() as gameboy, pytest.raises(SaveStateError):
        gameboy.load_state(b"definitely not a state")


def test_tick_rejects_absurd_frame_counts():
    with GameBoy() as gameboy:
        with pytest.raises(ValueError, match="frames must be"):
            gameboy.tick(0)
        with pytest.raises(ValueError, match="frames must be"):
            gameboy.tick(10**9)


def test_render_only_when_asked():
    with GameBoy() as gameboy:
        gameboy.load_state(load_named_state("start_of_play"))
        gameboy.tick(2, render=True)
        frame = gameboy.screen_rgb()
    assert frame.shape == (144, 160, 3)
    assert frame.std() > 0  # the room is drawn, not a blank screen


def test_held_buttons_are_restored_with_a_state():
    with GameBoy() as gameboy:
        gameboy.load_state(load_named_state("start_of_play"))
        gameboy.hold(Button.UP)
        saved = gameboy.save_state()
        gameboy.hold(Button.NONE)
        gameboy.load_state(saved)
        y = gameboy.ram.byte(RamAddress.LINK_Y)
        gameboy.tick(10)
        assert gameboy.held == Button.UP
        assert gameboy.ram.byte(RamAddress.LINK_Y) < y


def test_gameboy_is_an_emulator_and_reads_memory():
    from koholint.game.emulator import Emulator

    with GameBoy() as gameboy:
        assert isinstance(gameboy, Emulator)
        gameboy.reset("start_of_play")
        assert gameboy.read_memory(RamAddress.LINK_X, 2) == bytes([72, 88])
        with pytest.raises(ValueError, match="address space"):
            gameboy.read_memory(0xFFFF, 2)
