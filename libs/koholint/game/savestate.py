"""Save states that remember their ROM: PyBoy's state, compressed, wrapped with the ROM's sha256.

A state made from one ROM is refused by an emulator running another, before PyBoy
sees a byte of it. Decompression is bounded (a small upload cannot inflate to gigabytes),
and a caller that knows the size of its emulator's states (``expected_payload_bytes``)
gets truncated or padded payloads refused too, so a bad state never half-loads.

>>> blob = pack_state("ab" * 32, b"payload", held_buttons=4)
>>> unpack_state(blob, expected_rom_sha256="ab" * 32)
SaveState(rom_sha256='abab...', held_buttons=4, payload=7 bytes)
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

MAGIC = b"KHLSTATE"
FORMAT_VERSION = 1
_HEADER = struct.Struct("<8sB32sBI")
MAX_STATE_BYTES = 4 * 1024 * 1024
# PyBoy's states are ~150 KiB (the cartridge's) up to ~1 MiB (CGB with large cartridge RAM).
MAX_PAYLOAD_BYTES = 4 * 1024 * 1024


class SaveStateError(ValueError):
    """A save state that cannot be loaded; the message says why."""


class SaveStateRomMismatchError(SaveStateError):
    """The state was made from another ROM."""


@dataclass(frozen=True)
class SaveState:
    rom_sha256: str
    held_buttons: int
    payload: bytes

    def __repr__(self) -> str:
        return (
            f"SaveState(rom_sha256='{self.rom_sha256[:4]}...', held_buttons={self.held_buttons}, "
            f"payload={len(self.payload)} bytes)"
        )


def pack_state(rom_sha256: str, payload: bytes, *, held_buttons: int = 0) -> bytes:
    compressed = zlib.compress(payload, 1)  # PyBoy states are mostly zeros: ~20x smaller, fast
    header = _HEADER.pack(
        MAGIC, FORMAT_VERSION, bytes.fromhex(rom_sha256), held_buttons, len(compressed)
    )
    return header + compressed


def unpack_state(
    blob: bytes,
    *,
    expected_rom_sha256: str | None = None,
    expected_payload_bytes: int | None = None,
) -> SaveState:
    """Parse a state; refuse corrupt bytes and, when given, a state from another ROM or of
    another size than the emulator's own."""
    if len(blob) > MAX_STATE_BYTES:
        raise SaveStateError(
            f"save state of {len(blob)} bytes exceeds the {MAX_STATE_BYTES}-byte limit"
        )
    if len(blob) < _HEADER.size or blob[: len(MAGIC)] != MAGIC:
        raise SaveStateError(
            "not a Koholint save state (bad magic); make states with GameBoy.save_state()"
        )
    magic, version, rom_hash, held, length = _HEADER.unpack_from(blob)
    if version != FORMAT_VERSION:
        raise SaveStateError(
            f"save state format {version} is not supported (expected {FORMAT_VERSION})"
        )
    compressed = blob[_HEADER.size :]
    if len(compressed) != length:
        raise SaveStateError(
            f"save state truncated or padded: {len(compressed)} payload bytes, header says {length}"
        )
    if expected_rom_sha256 is not None and rom_hash.hex() != expected_rom_sha256:
        raise SaveStateRomMismatchError(
            f"save state belongs to ROM {rom_hash.hex()[:12]}..., but this emulator runs "
            f"{expected_rom_sha256[:12]}...; load it with the ROM it was made from"
        )
    payload = _inflate(compressed, expected_payload_bytes or MAX_PAYLOAD_BYTES)
    if expected_payload_bytes is not None and len(payload) != expected_payload_bytes:
        raise SaveStateError(
            f"save state payload is {len(payload)} bytes, but this emulator's states are "
            f"{expected_payload_bytes}: truncated, padded or from another emulator version"
        )
    return SaveState(rom_sha256=rom_hash.hex(), held_buttons=held, payload=payload)


def _inflate(compressed: bytes, limit: int) -> bytes:
    """Decompress at most `limit` bytes: a stream that inflates further is refused unread."""
    inflater = zlib.decompressobj()
    try:
        payload = inflater.decompress(compressed, limit)
    except zlib.error as error:
        raise SaveStateError(f"save state payload is corrupt ({error})") from error
    if inflater.unconsumed_tail:
        raise SaveStateError(f"save state payload inflates past {limit} bytes; refused")
    if not inflater.eof or inflater.unused_data:
        raise SaveStateError("save state payload is corrupt (incomplete or trailing data)")
    return payload
