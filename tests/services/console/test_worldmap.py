"""The console's world map on a world it was never shown: a generated world's rooms, all of
them, rendered from its own ROM (the controller's walkthrough, then walks out of rooms)."""

from __future__ import annotations

from console.worldmap import render_rooms
from koholint.game.rom import bundled_cartridge, read_rom
from koholint.game.worldgen import generate, write_world


def test_a_generated_worlds_map_has_every_room(tmp_path):
    generated = generate(2, "small")
    rom_path, _ = write_world(generated, bundled_cartridge().read_bytes(), tmp_path / "w")
    rooms = render_rooms(read_rom(rom_path))
    assert set(rooms) == {room.key for room in generated.world.rooms}
    assert all(png.startswith(b"\x89PNG") for png in rooms.values())
