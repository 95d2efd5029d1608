"""env-sim: the emulator as an HTTP service (sessions, reset, step, save/load, frames)."""
