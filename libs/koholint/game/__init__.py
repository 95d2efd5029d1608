"""The game: RAM map, ROM checks, the PyBoy adapter, save states, GameState, navigation."""

import warnings

# pysdl2 prints a notice about its bundled SDL binaries whenever PyBoy's modules first load
# (through the emulator or the compiled fast path); headless emulation never opens a window.
warnings.filterwarnings("ignore", message="Using SDL2 binaries", category=UserWarning)
