"""Build the Koholint test cartridge ROM from source with SDCC's SM83 port.

    python3 cartridge/tools/build.py            # regenerate data, build, install as package data
    python3 cartridge/tools/build.py --check    # build and compare with the committed ROM

The engine's code ends below the world region (ROM 0x4000-0x7FFF, koholint.game.worlds);
the default world (tools/rooms.py) is encoded into it and the checksums fixed. The build is
bit-for-bit reproducible: same sources and SDCC version, same ROM.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CARTRIDGE = Path(__file__).resolve().parent.parent
SRC = CARTRIDGE / "src"
TOOLS = CARTRIDGE / "tools"
INSTALLED_ROM = CARTRIDGE.parent / "libs" / "koholint" / "data" / "cartridge.gb"
TITLE = "KOHOLINT"
CODE_LOC = "0x200"
# Above every fixed LADX address the game mirrors (highest: DBD0); the stack grows down from E000.
DATA_LOC = "0xDC00"
TOOLCHAIN = ("sdcc", "sdasgb", "makebin")
INSTALL_HINT = (
    "install SDCC with its SM83 port: `sudo apt-get install sdcc` on Debian/Ubuntu "
    "(`brew install sdcc` on macOS), then run `make cartridge` again"
)


class BuildError(RuntimeError):
    """The cartridge could not be built; the message says why and what to do."""


def check_toolchain() -> None:
    missing = [tool for tool in TOOLCHAIN if shutil.which(tool) is None]
    if missing:
        raise BuildError(f"{', '.join(missing)} not found on PATH: {INSTALL_HINT}")


def run(command: list[str], cwd: Path) -> None:
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        raise BuildError(f"`{' '.join(command)}` failed:\n{result.stdout}{result.stderr}")


def generate_sources() -> None:
    for script in ("gfx.py", "rooms.py"):
        run([sys.executable, str(TOOLS / script)], cwd=CARTRIDGE)


def install_default_world(engine: bytes) -> bytes:
    """The engine ROM with the default world in its region; the code must end below it."""
    sys.path.insert(0, str(TOOLS))
    import rooms

    worlds = rooms.worlds
    region = engine[worlds.REGION_ADDRESS : worlds.REGION_ADDRESS + worlds.REGION_SIZE]
    if region.strip(b"\xff"):  # makebin pads unused ROM with 0xFF
        raise BuildError(
            f"the engine's code reaches into the world region at 0x{worlds.REGION_ADDRESS:04X}: "
            "shrink it or move the region"
        )
    return worlds.install_world(engine, worlds.encode_world(rooms.world()))


def build(out: Path) -> bytes:
    """Compile, link and pack the ROM into `out`; return its bytes."""
    check_toolchain()
    generate_sources()
    with tempfile.TemporaryDirectory(prefix="koholint-cart-") as tmp:
        work = Path(tmp)
        run(["sdasgb", "-plosgff", "-o", str(work / "crt0.rel"), str(SRC / "crt0.s")], cwd=work)
        objects = [str(work / "crt0.rel")]
        for source in sorted(SRC.glob("*.c")):
            obj = work / f"{source.stem}.rel"
            run(["sdcc", "-msm83", "--opt-code-speed", "-c", str(source), "-o", str(obj)], cwd=work)
            objects.append(str(obj))
        ihx = work / "cartridge.ihx"
        run(
            [
                "sdcc",
                "-msm83",
                "--no-std-crt0",
                "--code-loc",
                CODE_LOC,
                "--data-loc",
                DATA_LOC,
                *objects,
                "-o",
                str(ihx),
            ],
            cwd=work,
        )
        rom = work / "cartridge.gb"
        run(["makebin", "-Z", "-yn", TITLE, "-yN", str(ihx), str(rom)], cwd=work)
        data = install_default_world(rom.read_bytes())
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="compare a fresh build with the committed ROM"
    )
    parser.add_argument("--out", type=Path, default=INSTALLED_ROM, help="where to write the ROM")
    args = parser.parse_args(argv)
    try:
        if args.check:
            with tempfile.TemporaryDirectory() as tmp:
                fresh = build(Path(tmp) / "cartridge.gb")
            committed = INSTALLED_ROM.read_bytes()
            if fresh != committed:
                print(f"cartridge differs from {INSTALLED_ROM}: run `make cartridge` and commit it")
                return 1
            print(
                f"cartridge matches {INSTALLED_ROM.name} (sha256 {hashlib.sha256(fresh).hexdigest()})"
            )
            return 0
        data = build(args.out)
    except BuildError as error:
        print(f"cartridge build failed: {error}", file=sys.stderr)
        return 2
    print(f"built {args.out} ({len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
