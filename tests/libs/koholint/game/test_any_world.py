"""Any engine world plays as the cartridge does: its opening's states derived from power-on,
the episode's seed written, the walkthrough baseline won, and one setting ($KOHOLINT_ROM,
`playing`) choosing the world for every env a process and its children make."""

from __future__ import annotations

import os

import numpy as np
import pytest

from koholint.baselines.play import run_episode
from koholint.cli import main
from koholint.env.zelda import ZeldaEnv
from koholint.game.emulator import GameBoy
from koholint.game.opening import named_state, opening_states
from koholint.game.ram import CARTRIDGE_SEED_ADDRESS, GameplayType
from koholint.game.rom import (
    ROM_ENV_VARIABLE,
    InvalidRomError,
    bundled_cartridge,
    default_rom,
    playing,
    read_rom,
    resolve_rom,
)
from koholint.game.states import UnknownStateError, load_named_state
from koholint.game.worldgen import generate, write_world

ENGINE = bundled_cartridge().read_bytes()


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A small generated world's folder and its GeneratedWorld."""
    generated = generate(5, "small")
    folder = tmp_path_factory.mktemp("worlds") / "small-5"
    write_world(generated, ENGINE, folder)
    return folder, generated


def test_the_derived_opening_states_of_the_cartridge_are_its_recorded_ones():
    derived = opening_states(bundled_cartridge())
    for name in ("title", "start_of_play"):
        recorded = load_named_state(name)
        with GameBoy() as a, GameBoy() as b:
            a.load_state(recorded)
            b.load_state(derived[name])
            assert a.read_memory(0xC000, 0x2000) == b.read_memory(0xC000, 0x2000), name


def test_a_generated_world_starts_play_in_its_own_start_room(world):
    folder, generated = world
    rom = read_rom(resolve_rom(folder))
    assert rom.engine
    assert not rom.is_bundled_cartridge
    env = ZeldaEnv(rom=str(rom.path), start_state="start_of_play", cartridge_seed=9)
    try:
        env.reset(seed=0)
        raw = env.raw_state
        assert raw.gameplay_type == GameplayType.WORLD
        assert raw.room_key == generated.world.room(generated.world.start[0]).key
        assert (
            env.gameboy.memory[CARTRIDGE_SEED_ADDRESS] == 9
        )  # the episode's seed, as on the cartridge
    finally:
        env.close()


def test_a_mark_of_the_default_route_is_refused_on_another_world_naming_what_it_has(world):
    rom = read_rom(resolve_rom(world[0]))
    with pytest.raises(UnknownStateError, match="start_of_play"):
        named_state("before_shop", rom)


def test_the_walkthrough_baseline_wins_a_generated_world_from_power_on(world, tmp_path):
    rom = str(resolve_rom(world[0]))
    result = run_episode("walkthrough", seed=3, start=None, max_steps=40_000, rom=rom)
    assert result.won, result
    assert result.milestones["instrument"]


def test_koholint_play_takes_a_world_folder(world, tmp_path, capsys):
    code = main(["play", "--policy", "walkthrough", "--start", "power-on",
                 "--rom", str(world[0]), "--out", str(tmp_path)])  # fmt: skip
    assert code == 0
    assert "yes" in capsys.readouterr().out.splitlines()[1]


def test_playing_makes_a_world_the_default_for_the_block_and_its_children(world, monkeypatch):
    monkeypatch.delenv(ROM_ENV_VARIABLE, raising=False)
    with playing(world[0]) as path:
        assert os.environ[ROM_ENV_VARIABLE] == str(path)
        assert default_rom() == path
        env = ZeldaEnv(start_state="start_of_play")
        try:
            observation, _ = env.reset(seed=1)
            assert env.gameboy.rom.path == path
            assert np.isfinite(observation).all()
        finally:
            env.close()
    assert ROM_ENV_VARIABLE not in os.environ
    assert default_rom() == bundled_cartridge()


def test_a_folder_without_a_cartridge_is_refused_naming_the_fix(tmp_path):
    with pytest.raises(InvalidRomError, match="koholint cartridge generate"):
        resolve_rom(tmp_path)
    with pytest.raises(InvalidRomError, match="no such file"):
        resolve_rom(tmp_path / "missing.gb")


def _default_route_milestones(memory, raw) -> dict[str, bool]:
    """The default world's milestones read from its own rooms (the puzzle at overworld 0x01,
    the dungeon's entrance at indoor 0x10, the key hall 0x08, the lock hall 0x09)."""
    from koholint.game.ram import RamAddress, RoomFlag

    overworld, indoor = RamAddress.OVERWORLD_ROOM_STATUS, RamAddress.INDOOR_ROOM_STATUS
    return {
        "sword": 1 in raw.inventory,
        "puzzle": bool(memory[overworld + 0x01] & RoomFlag.PUZZLE_SOLVED),
        "dungeon": bool(memory[indoor + 0x10] & RoomFlag.VISITED),
        "key": bool(memory[indoor + 0x08] & RoomFlag.KEY_TAKEN),
        "lock": bool(memory[indoor + 0x09] & RoomFlag.DOOR_OPEN),
        "instrument": raw.instrument,
    }


def _milestones_along(gameboy, walkthrough, every: int = 16):
    from koholint.env.zelda import milestones
    from koholint.game.state import RawState
    from koholint.game.walkthrough import WalkthroughPlayer

    player = WalkthroughPlayer(gameboy, walkthrough)
    while gameboy.frame < walkthrough.frames:
        player.advance_to(min(gameboy.frame + every, walkthrough.frames))
        raw = RawState(gameboy.memory, gameboy.rom.cgb)
        yield milestones(gameboy.memory, raw), raw


def test_on_the_default_world_the_milestones_of_any_room_are_its_routes():
    from koholint.game.walkthrough import load_walkthrough

    with GameBoy() as gameboy:
        seen = 0
        for found, raw in _milestones_along(gameboy, load_walkthrough()):
            assert found == _default_route_milestones(gameboy.memory, raw), gameboy.frame
            seen += 1
        assert all(found.values())
    assert seen > 100


def test_a_generated_world_reaches_every_milestone_in_route_order(tmp_path):
    from koholint.baselines.world_route import world_walkthrough
    from koholint.env.zelda import MILESTONES

    generated = generate(1, "medium")
    rom_path, _ = write_world(generated, ENGINE, tmp_path / "medium-1")
    rom = read_rom(rom_path)
    order: list[str] = []
    with GameBoy(rom=rom_path) as gameboy:
        for found, _ in _milestones_along(gameboy, world_walkthrough(rom), every=4):
            order += [name for name in MILESTONES if found[name] and name not in order]
    assert order[0] == "sword"
    assert order[-1] == "instrument"
    assert set(order) == set(MILESTONES)
