"""What a player has reached, read from RAM: rooms, items, fights, the win."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from koholint.ram import GameplayType, InventoryItem, RamAddress, RamReader


@dataclass(frozen=True)
class Progress:
    rooms_visited: int
    kills: int
    deaths: int
    rupees: int
    keys: int
    max_hearts: int
    has_sword: bool
    has_instrument: bool
    won: bool

    @classmethod
    def read(cls, ram: RamReader) -> Progress:
        inventory = ram.bytes(RamAddress.INVENTORY, 12)
        return cls(
            rooms_visited=len(ram.visited_rooms()),
            kills=ram.byte(RamAddress.KILL_COUNT),
            deaths=ram.byte(RamAddress.DEATH_COUNT),
            rupees=ram.rupees(),
            keys=ram.byte(RamAddress.DUNGEON_SMALL_KEYS),
            max_hearts=ram.byte(RamAddress.MAX_HEARTS),
            has_sword=InventoryItem.SWORD in inventory,
            has_instrument=ram.has_instrument(),
            won=ram.byte(RamAddress.GAMEPLAY_TYPE) == GameplayType.CREDITS,
        )

    def as_dict(self) -> dict[str, int | bool]:
        return asdict(self)
