"""ROM checks: the cartridge passes; anything else is refused with a message naming file and problem."""

from pathlib import Path

import pytest

from koholint.game.rom import (
    HEADER_CHECKSUM,
    InvalidRomError,
    bundled_cartridge,
    header_checksum,
    read_rom,
    validate_rom_bytes,
)


def test_bundled_cartridge_is_a_valid_rom():
    info = read_rom(bundled_cartridge())
    assert info.title == "KOHOLINT"
    assert info.size == 32 * 1024
    assert not info.cgb
    assert info.is_bundled_cartridge
    assert len(info.sha256) == 64


def test_text_file_is_refused_naming_the_file(tmp_path: Path):
    path = tmp_path / "notes.txt"
    path.write_text("not a rom")
    with pytest.raises(InvalidRomError, match=r"notes\.txt.*too small"):
        read_rom(path)


def test_bad_header_checksum_is_refused(tmp_path: Path):
    data = bytearray(bundled_cartridge().read_bytes())
    data[HEADER_CHECKSUM] ^= 0xFF
    path = tmp_path / "corrupt.gb"
    path.write_bytes(bytes(data))
    with pytest.raises(InvalidRomError, match=r"corrupt\.gb: bad header checksum"):
        read_rom(path)


def test_size_that_is_not_whole_banks_is_refused():
    data = bundled_cartridge().read_bytes() + b"\x00" * 100
    with pytest.raises(InvalidRomError, match="multiple of 16 KiB"):
        validate_rom_bytes(data, "padded.gb")


def test_missing_file_names_the_path(tmp_path: Path):
    with pytest.raises(InvalidRomError, match="no such file"):
        read_rom(tmp_path / "missing.gb")


def test_header_checksum_matches_the_committed_rom():
    data = bundled_cartridge().read_bytes()
    assert header_checksum(data) == data[HEADER_CHECKSUM]
