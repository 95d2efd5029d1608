"""Generated worlds: each size as promised, the same seed the same bytes, every one winnable on
the world graph, and the ROM boots on real PyBoy into play in the generated start room."""

from __future__ import annotations

import json
import time

import pytest

from koholint.baselines.world_route import play
from koholint.cli import main
from koholint.game.emulator import GameBoy
from koholint.game.ram import GameplayType, RamAddress
from koholint.game.rom import bundled_cartridge, read_rom
from koholint.game.worldgen import SIZES, build_rom, generate, solve
from koholint.game.worlds import WorldError, decode_world, encode_world, region_of
from koholint.planning.executor import MacroExecutor
from koholint.planning.macros import StartGame
from koholint.planning.view import read_view

ENGINE = bundled_cartridge().read_bytes()


@pytest.mark.parametrize(
    ("size", "rooms", "keys", "puzzles"),
    [
        ("small", range(10, 17), 1, 1),
        ("medium", range(20, 31), 2, 2),
        ("large", range(50, 80), 3, 3),
    ],
)
def test_each_size_has_its_rooms_keys_and_puzzles(size, rooms, keys, puzzles):
    for seed in range(3):
        world = generate(seed, size)
        assert len(world.world.rooms) in rooms
        assert len(world.items["key"]) >= keys
        assert len(world.items["block"]) >= puzzles
        actions = [step.action for step in world.route]
        assert actions[-1] == "instrument"
        assert actions.count("door") == len(world.items["key"])
        assert actions.count("puzzle") == len(world.items["block"])


@pytest.mark.parametrize("size", sorted(SIZES))
def test_the_same_seed_gives_the_same_bytes_in_well_under_a_second(size, tmp_path):
    started = time.perf_counter()
    first = build_rom(generate(7, size), ENGINE)
    assert time.perf_counter() - started < 1.0
    assert build_rom(generate(7, size), ENGINE) == first
    assert build_rom(generate(8, size), ENGINE) != first
    assert region_of(first)[:4] == b"KWLD"
    path = tmp_path / "cartridge.gb"
    path.write_bytes(first)
    assert read_rom(path).size == len(first)  # the header checksum and the size hold


@pytest.mark.parametrize("size", sorted(SIZES))
def test_every_world_of_forty_seeds_is_winnable(size):
    for seed in range(40):
        assert solve(generate(seed, size).world)[-1].action == "instrument"


def test_a_world_without_its_key_cannot_be_won():
    world = generate(0, "small").world
    for room in world.rooms:
        room.rows = [row.replace("K", ",") for row in room.rows]
    with pytest.raises(WorldError, match="cannot be won"):
        solve(world)


@pytest.mark.parametrize("size", sorted(SIZES))
def test_a_generated_rom_boots_into_play_in_its_start_room(size, tmp_path):
    generated = generate(1, size)
    rom = tmp_path / "cartridge.gb"
    rom.write_bytes(build_rom(generated, ENGINE))
    start = generated.world.room(generated.world.start[0])
    with GameBoy(rom=rom) as gameboy:
        gameboy.tick(100)
        result = MacroExecutor(gameboy).execute(StartGame())
        assert result.ok, result
        assert read_view(gameboy).in_play
        assert gameboy.ram.room_key() == start.key
        _, x, y = generated.world.start
        assert gameboy.ram.link_position() == (x * 16 + 8, y * 16 + 8)
        tiles = gameboy.ram.room_objects()
        assert tiles == [[_metatile(c) for c in row] for row in start.rows]


def _metatile(cell: str) -> int:
    from koholint.game.worlds import METATILES

    return METATILES[cell]


def test_the_default_rom_carries_its_world_in_the_region():
    region = region_of(ENGINE)
    assert region[5] == 13  # rooms
    assert len(encode_world(generate(0, "small").world)) < len(region)


def test_koholint_cartridge_generate_writes_the_rom_and_its_card(tmp_path, capsys):
    assert (
        main(["cartridge", "generate", "--seed", "5", "--size", "medium", "--out", str(tmp_path)])
        == 0
    )
    card = json.loads((tmp_path / "world.json").read_text())
    rom = (tmp_path / "cartridge.gb").read_bytes()
    assert rom == build_rom(generate(5, "medium"), ENGINE)
    assert card["size"] == "medium"
    assert card["seed"] == 5
    assert card["counts"]["rooms"] == len(card["rooms"]) >= 20
    assert {"chest", "key", "instrument", "block"} <= set(card["key_items"])
    assert card["walkthrough_length"]["route_steps"] == len(card["route"])
    assert "24 rooms" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("size", "seed"), [("small", 0), ("small", 3), ("medium", 0), ("large", 0), ("large", 18)]
)
def test_the_walkthrough_controller_wins_a_generated_world_from_power_on(size, seed, tmp_path):
    generated = generate(seed, size)
    rom = tmp_path / "cartridge.gb"
    rom.write_bytes(build_rom(generated, ENGINE))
    with GameBoy(rom=rom) as gameboy:
        route = play(gameboy, generated.world)
        assert gameboy.ram.byte(RamAddress.GAMEPLAY_TYPE) == GameplayType.CREDITS
        assert gameboy.ram.has_instrument()
    assert route.walkthrough.frames < 20_000


def test_the_default_world_reads_back_from_its_rom_and_the_controller_wins_it():
    region = region_of(ENGINE)
    world = decode_world(region)
    dialogs_at = int.from_bytes(region[16:18], "little") - 0x4000
    assert encode_world(world)[:dialogs_at] == region[:dialogs_at]  # rooms, exits, stairs exact
    assert [step.action for step in solve(world)].count("door") == 1
    with GameBoy() as gameboy:
        play(gameboy, world)
        assert gameboy.ram.has_instrument()


def test_generate_verify_records_the_walkthroughs_frames(tmp_path, capsys):
    args = ["cartridge", "generate", "--seed", "2", "--size", "small", "--out", str(tmp_path)]
    assert main([*args, "--verify"]) == 0
    length = json.loads((tmp_path / "world.json").read_text())["walkthrough_length"]
    assert 0 < length["frames_from_power_on"] < 20_000
    assert "won from power-on" in capsys.readouterr().out
