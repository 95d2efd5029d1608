"""The save-state container: round trip, a state from another ROM refused, corrupt bytes refused."""

import pytest

from koholint.game.savestate import (
    SaveStateError,
    SaveStateRomMismatchError,
    pack_state,
    unpack_state,
)

ROM_A = "aa" * 32
ROM_B = "bb" * 32


def test_round_trip_keeps_payload_and_held_buttons():
    payload = bytes(range(256)) * 40
    state = unpack_state(pack_state(ROM_A, payload, held_buttons=0x14), expected_rom_sha256=ROM_A)
    assert state.payload == payload
    assert state.held_buttons == 0x14
    assert state.rom_sha256 == ROM_A


def test_state_from_another_rom_is_refused():
    with pytest.raises(SaveStateRomMismatchError, match="belongs to ROM bbbb"):
        unpack_state(pack_state(ROM_B, b"x"), expected_rom_sha256=ROM_A)


@pytest.mark.parametrize(
    ("blob", "message"),
    [
        (b"", "bad magic"),
        (b"PYBOYSTATE" + b"\x00" * 64, "bad magic"),
        (pack_state(ROM_A, b"payload")[:-3], "truncated"),
    ],
)
def test_corrupt_bytes_are_refused(blob: bytes, message: str):
    with pytest.raises(SaveStateError, match=message):
        unpack_state(blob)


def test_corrupt_compressed_payload_is_refused():
    blob = bytearray(pack_state(ROM_A, b"payload" * 100))
    blob[-5:] = b"\xff" * 5
    with pytest.raises(SaveStateError, match="corrupt"):
        unpack_state(bytes(blob))
