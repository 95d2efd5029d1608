"""The compiled fast path against PyBoy's own state path and the reference RAM reader."""

from __future__ import annotations

import numpy as np
import pytest

from koholint.env.encoding import OBSERVATION_SIZE, encode
from koholint.game import fastpath
from koholint.game.emulator import Button, GameBoy
from koholint.game.state import RAW_FIELDS, RawState

needs_compiled = pytest.mark.skipif(
    not fastpath.COMPILED,
    reason="koholint.game._fastpath is not built: make setup (python -m koholint.game.build_fastpath)",
)


@pytest.fixture
def gameboy():
    emulator = GameBoy()
    emulator.reset("start_of_play")
    yield emulator
    emulator.close()


def wander(gameboy: GameBoy, frames: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    buttons = [Button.UP, Button.DOWN, Button.LEFT, Button.RIGHT, Button.A, Button.NONE]
    for _ in range(frames // 8):
        gameboy.hold(buttons[int(rng.integers(len(buttons)))])
        gameboy.tick(8)


def test_the_compiled_module_is_built_for_the_installed_pyboy():
    """make setup builds it (CI runs make setup): this fails when the build is broken."""
    assert fastpath.COMPILED, "python -m koholint.game.build_fastpath; else the env is slower"


@needs_compiled
def test_compiled_save_state_writes_the_bytes_pyboy_writes(gameboy):
    pyboy = gameboy._pyboy
    for seed in range(3):
        wander(gameboy, 200, seed)
        compiled = fastpath.save_state(pyboy)
        reference = fastpath.save_state(pyboy, compiled=False)
        assert len(compiled) > 100_000
        assert compiled == reference


@needs_compiled
def test_compiled_load_state_restores_what_pyboy_restores(gameboy):
    pyboy = gameboy._pyboy
    start = fastpath.save_state(pyboy)
    wander(gameboy, 400)
    after_reference = fastpath.save_state(pyboy)
    fastpath.load_state(pyboy, start)
    assert fastpath.save_state(pyboy) == start
    wander(gameboy, 400)
    assert fastpath.save_state(pyboy) == after_reference  # the same game from the same state
    fastpath.load_state(pyboy, start, compiled=False)
    assert fastpath.save_state(pyboy) == start


@needs_compiled
def test_compiled_load_state_refuses_a_truncated_state(gameboy):
    state = fastpath.save_state(gameboy._pyboy)
    with pytest.raises(ValueError, match="ended early"):
        fastpath.load_state(gameboy._pyboy, state[: len(state) // 2])


@needs_compiled
def test_taps_read_what_raw_state_reads_and_encode_the_same_observation(gameboy):
    taps = fastpath.taps(gameboy._pyboy)
    observation = np.empty(OBSERVATION_SIZE, np.float32)
    seen = set()
    for seed in range(40):
        wander(gameboy, 64, seed)
        taps.read(observation)
        fields = taps.fields()
        assert len(fields) == len(RAW_FIELDS)
        reference = RawState(gameboy.memory)
        fast = RawState.from_fields(fields, gameboy.memory)
        for name in RawState.__slots__:
            assert getattr(fast, name) == getattr(reference, name), name
        np.testing.assert_array_equal(observation, encode(reference))
        seen.add((reference.room_key, reference.x, reference.y))
    assert len(seen) > 20  # the walk really visits different states


@needs_compiled
def test_taps_refuse_a_wrong_observation_buffer(gameboy):
    taps = fastpath.taps(gameboy._pyboy)
    with pytest.raises(ValueError, match="128"):
        taps.read(np.empty(64, np.float32))


@needs_compiled
def test_work_ram_slices_read_what_pyboy_memory_reads(gameboy):
    slices = fastpath.work_ram_slices(gameboy._pyboy, banked=False)
    for seed in range(5):
        wander(gameboy, 120, seed)
        for start, stop in ((0xD800, 0xDA00), (0xC000, 0xC100), (0xDB00, 0xDC00)):
            assert slices[start:stop] == bytes(gameboy.memory[start:stop])
    with pytest.raises(IndexError, match="C000-DFFF"):
        slices[0xFF80:0xFFFF]
    assert fastpath.work_ram_slices(gameboy._pyboy, banked=True) is None
