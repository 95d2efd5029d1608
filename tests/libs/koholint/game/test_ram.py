"""The RAM map's typed readers."""

import pytest

from koholint.game.ram import RamAddress, RamReader, RoomFlag, bcd_to_int


class FakeMemory(dict):
    """Logic-only stand-in for PyBoy's memory: unset bytes read 0; (bank, addr) reads bank 1."""

    def __getitem__(self, key):
        if isinstance(key, tuple):
            return self.get(("banked", key[1]), 0)
        return self.get(key, 0)


def test_bcd_decoding():
    assert bcd_to_int(0x00) == 0
    assert bcd_to_int(0x99) == 99
    with pytest.raises(ValueError, match="not a BCD byte"):
        bcd_to_int(0x1A)


def test_rupees_read_as_bcd():
    memory = FakeMemory({RamAddress.RUPEES_HIGH: 0x02, RamAddress.RUPEES_LOW: 0x45})
    assert RamReader(memory).rupees() == 245


def test_room_key_distinguishes_indoor_maps():
    outdoors = FakeMemory({RamAddress.MAP_ROOM: 0x10, RamAddress.MAP_ID: 0x07})
    indoors = FakeMemory(
        {RamAddress.MAP_ROOM: 0x10, RamAddress.MAP_ID: 0x07, RamAddress.IS_INDOOR: 1}
    )
    assert RamReader(outdoors).room_key() == (0, 0, 0x10)
    assert RamReader(indoors).room_key() == (1, 0x07, 0x10)


def test_banked_reads_go_to_wram_bank_one_for_the_dx_rom():
    memory = FakeMemory({("banked", RamAddress.HEALTH): 24, RamAddress.HEALTH: 3})
    assert RamReader(memory, banked=True).byte(RamAddress.HEALTH) == 24
    assert RamReader(memory, banked=False).byte(RamAddress.HEALTH) == 3
    # HRAM is never banked.
    memory[RamAddress.LINK_X] = 77
    assert RamReader(memory, banked=True).byte(RamAddress.LINK_X) == 77


def test_visited_rooms_read_both_tables():
    memory = FakeMemory(
        {
            RamAddress.OVERWORLD_ROOM_STATUS + 0x21: RoomFlag.VISITED,
            RamAddress.OVERWORLD_ROOM_STATUS + 0x22: RoomFlag.CHEST_OPEN,
            RamAddress.INDOOR_ROOM_STATUS + 0x10: RoomFlag.VISITED | RoomFlag.CLEARED,
        }
    )
    assert RamReader(memory).visited_rooms() == {(0, 0x21), (1, 0x10)}


def test_dialog_state_drops_the_box_position_bit():
    memory = FakeMemory({RamAddress.DIALOG_STATE: 0x89})
    assert RamReader(memory).dialog_state() == 0x09
