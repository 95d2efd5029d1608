"""Build the compiled fast path (``koholint.game._fastpath``) in place, from source.

    python -m koholint.game.build_fastpath          # make setup runs this

Cython compiles ``_fastpath.pyx`` against the installed PyBoy's ``.pxd`` files (they ship in
PyBoy's wheel), so the module must be rebuilt when PyBoy changes; ``koholint.game.fastpath``
refuses a module built for another PyBoy version and uses the pure-Python path instead.
Needs Cython and a C compiler (``pip install cython``; gcc or clang).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

SOURCE = Path(__file__).with_name("_fastpath.pyx")


def build(verbose: bool = False) -> Path:
    """Compile the extension next to its source; returns the path of the built module."""
    try:
        import numpy
        from Cython.Build import cythonize
        from setuptools import Distribution, Extension  # type: ignore[import-untyped]
    except ImportError as error:
        raise SystemExit(
            f"building the fast path needs Cython and setuptools ({error}): pip install cython"
        ) from None
    extension = Extension(
        "koholint.game._fastpath",
        [str(SOURCE)],
        include_dirs=[numpy.get_include()],  # PyBoy's .pxd files cimport numpy
        # No fused multiply-add: rewards must round exactly as Python's float arithmetic.
        extra_compile_args=["-O3", "-ffp-contract=off"],
    )
    with tempfile.TemporaryDirectory() as scratch:
        modules = cythonize([extension], build_dir=scratch, quiet=not verbose, language_level=3)
        distribution = Distribution({"ext_modules": modules})
        command = distribution.get_command_obj("build_ext")
        command.build_temp = scratch
        command.build_lib = str(Path(scratch) / "lib")
        command.ensure_finalized()
        command.run()
        built = Path(command.get_ext_fullpath("koholint.game._fastpath"))
        target = SOURCE.with_name(built.name)
        shutil.copyfile(built, target)
    return target


def main() -> None:
    target = build(verbose="-v" in sys.argv)
    print(f"built {target}")


if __name__ == "__main__":
    main()
