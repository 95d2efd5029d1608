"""The game: RAM map, ROM checks, the PyBoy adapter, save states, GameState, navigation."""
