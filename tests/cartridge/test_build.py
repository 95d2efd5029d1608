"""`make cartridge` rebuilds the committed ROM bit for bit, and says how to get sdcc when missing."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "cartridge" / "tools" / "build.py"


def load_tool(name: str):
    spec = importlib.util.spec_from_file_location(
        f"cartridge_tools_{name}", REPO / "cartridge" / "tools" / f"{name}.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[f"cartridge_tools_{name}"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.needs_sdcc
@pytest.mark.skipif(
    shutil.which("sdcc") is None, reason="sdcc not installed (apt-get install sdcc)"
)
def test_fresh_build_equals_the_committed_rom(tmp_path: Path):
    out = tmp_path / "cartridge.gb"
    result = subprocess.run(
        [sys.executable, str(BUILD), "--out", str(out)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert out.read_bytes() == (REPO / "libs" / "koholint" / "data" / "cartridge.gb").read_bytes()


def test_generated_sources_are_up_to_date(tmp_path: Path):
    """gfx.c/gfx.h/rooms.h in the repo are what the generators write now (no hand edits)."""
    src = REPO / "cartridge" / "src"
    before = {name: (src / name).read_bytes() for name in ("gfx.c", "gfx.h", "rooms.h")}
    for tool in ("gfx.py", "rooms.py"):
        subprocess.run([sys.executable, str(REPO / "cartridge" / "tools" / tool)], check=True)
    after = {name: (src / name).read_bytes() for name in before}
    assert before == after


def test_missing_sdcc_says_how_to_install_it():
    env = {**os.environ, "PATH": "/nonexistent"}
    result = subprocess.run(
        [sys.executable, str(BUILD), "--out", "/dev/null"], capture_output=True, text=True, env=env
    )
    assert result.returncode != 0
    assert "sdcc" in result.stderr
    assert "apt-get install sdcc" in result.stderr


def test_world_validator_rejects_a_one_sided_exit():
    rooms = load_tool("rooms")
    world = rooms.world()
    broken = world.room("village")
    broken.exits = {k: v for k, v in broken.exits.items() if k != "west"}
    with pytest.raises(
        rooms.worlds.WorldError,
        match="(village: west edge open with no exit|sword_glade: exit east is not mirrored)",
    ):
        rooms.worlds.validate(world)


def test_dialog_pages_fit_the_box():
    rooms = load_tool("rooms")
    worlds = rooms.worlds
    for text, _ in rooms.DIALOGS.values():
        for page in worlds.paginate(text):
            assert len(page) == worlds.TEXT_COLUMNS * worlds.LINES_PER_PAGE
            assert set(page) <= {chr(c) for c in range(0x20, 0x60)}  # the font's characters


def test_the_default_world_lies_in_the_roms_world_region():
    rooms = load_tool("rooms")
    worlds = rooms.worlds
    rom = (REPO / "libs" / "koholint" / "data" / "cartridge.gb").read_bytes()
    region = worlds.encode_world(rooms.world())
    assert rom[worlds.REGION_ADDRESS : worlds.REGION_ADDRESS + len(region)] == region
    assert worlds.install_world(rom, region) == rom  # checksums already right
