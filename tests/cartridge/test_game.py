"""The cartridge plays like Link's Awakening where the agent can tell, on real PyBoy."""

from __future__ import annotations

import pytest

from koholint.baselines.play import run_episode
from koholint.baselines.recorder import Route
from koholint.game.emulator import Button, GameBoy
from koholint.game.ram import (
    ADDRESS_DOCS,
    CARTRIDGE_SEED_ADDRESS,
    ENEMY_TYPES,
    MotionState,
    RamAddress,
)
from koholint.game.states import load_named_state
from koholint.game.walkthrough import WalkthroughPlayer

SENTINEL = 0xEE


@pytest.fixture
def gameboy():
    with GameBoy() as emulator:
        emulator.load_state(load_named_state("start_of_play"))
        yield emulator


def hold_for(gameboy: GameBoy, buttons: int, frames: int) -> list[tuple[int, int]]:
    positions = []
    gameboy.hold(buttons)
    for _ in range(frames):
        gameboy.tick()
        positions.append(gameboy.ram.link_position())
    return positions


def test_link_walks_at_one_pixel_per_frame(gameboy):
    positions = hold_for(gameboy, Button.RIGHT, 40)
    steps = {b[0] - a[0] for a, b in zip(positions, positions[1:], strict=False)}
    assert steps == {1}
    assert all(y == positions[0][1] for _, y in positions)


def test_walls_stop_link(gameboy):
    # The village's west wall stands at row 5, where Link starts: he stops against it.
    positions = hold_for(gameboy, Button.LEFT, 150)
    assert positions[-1] == positions[-20]
    assert positions[-1][0] == 16 + 6  # the wall tile ends at x=16; his box reaches 6 px left


def test_death_then_respawn_in_the_village(gameboy):
    gameboy.memory[RamAddress.HEALTH] = 4  # half a heart: one hit from death
    route = Route(gameboy)
    route.leave("up")
    deaths = gameboy.ram.byte(RamAddress.DEATH_COUNT)
    route.take_hit()
    assert gameboy.ram.byte(RamAddress.HEALTH) == 0
    assert gameboy.ram.byte(RamAddress.LINK_MOTION_STATE) == MotionState.PASS_OUT
    route.wait_until(lambda: gameboy.ram.byte(RamAddress.LINK_MOTION_STATE) == 0, 200, "respawn")
    route.wait(4)
    assert gameboy.ram.byte(RamAddress.DEATH_COUNT) == deaths + 1
    assert gameboy.ram.room_key() == (0, 0, 0x21)
    assert gameboy.ram.byte(RamAddress.HEALTH) == 3 * 8


def enemies_after_entering_crossroads(seed: int) -> list[tuple[int, int, int]]:
    with GameBoy() as emulator:
        emulator.load_state(load_named_state("start_of_play"))
        emulator.memory[CARTRIDGE_SEED_ADDRESS] = seed
        Route(emulator).leave("up")
        emulator.tick(30)
        return [
            (kind, x, y) for _, kind, x, y in emulator.ram.active_entities() if kind in ENEMY_TYPES
        ]


def test_seed_byte_varies_enemies_deterministically():
    default = enemies_after_entering_crossroads(0)
    seeded = enemies_after_entering_crossroads(7)
    assert len(default) == len(seeded) == 2
    assert seeded == enemies_after_entering_crossroads(7)
    assert seeded != default
    assert enemies_after_entering_crossroads(8) != seeded


def test_every_documented_address_is_written(walkthrough_trace):
    """Each address changes during the walkthrough, or the game overwrites a sentinel put there."""
    unchanged = [
        doc.address for doc in ADDRESS_DOCS if doc.address not in walkthrough_trace.changed
    ]
    walkthrough = walkthrough_trace.walkthrough
    overwritten = set()
    for address in unchanged:
        with GameBoy() as emulator:
            player = WalkthroughPlayer(emulator, walkthrough)
            player.advance_to(walkthrough.mark_frame("start_of_play"))
            emulator.memory[address] = SENTINEL
            player.play_to_end()
            if emulator.memory[address] != SENTINEL:
                overwritten.add(address)
    # The walkthrough never dies; death is covered by test_death_then_respawn_in_the_village.
    never_written = set(unchanged) - overwritten - {RamAddress.DEATH_COUNT}
    assert not never_written, [hex(address) for address in never_written]


def test_random_play_does_not_win():
    result = run_episode("random", seed=3, max_steps=5_000)
    assert not result.won
    assert result.rooms >= 1
