# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=False
"""The compiled fast path: RAM taps, the observation and the reward deltas in one C call,
and PyBoy's save state written into a C buffer instead of a Python call per byte.

Built by ``python -m koholint.game.build_fastpath`` (``make setup`` runs it) against the
installed PyBoy's ``.pxd`` files; ``koholint.game.fastpath`` falls back to the pure-Python
reference path when this module is missing or was built for another PyBoy.

Everything here mirrors a reference implementation in Python that stays the source of
truth: ``RawState`` (koholint.game.state), ``encode`` (koholint.env.encoding) and
``ZeldaEnv._reward_components`` (koholint.env.zelda). Tests compare them over the
walkthrough, value for value.
"""

from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy

from pyboy.core.mb cimport Motherboard
from pyboy.core.ram cimport RAM
from pyboy.pyboy cimport PyBoy
from pyboy.utils cimport IntIOInterface

from importlib.metadata import version as _version

PYBOY_VERSION = _version("pyboy")

# -- save states ---------------------------------------------------------------


cdef class _StateWriter(IntIOInterface):
    """PyBoy writes its state one byte at a time; here each byte is a C store."""

    cdef uint8_t *data
    cdef int64_t size
    cdef int64_t capacity

    def __cinit__(self, int64_t capacity=262144):
        self.data = <uint8_t *> malloc(capacity)
        if self.data == NULL:
            raise MemoryError()
        self.size = 0
        self.capacity = capacity

    def __init__(self, int64_t capacity=262144):
        pass  # IntIOInterface.__init__ wants a Python buffer; this writer has its own

    def __dealloc__(self):
        free(self.data)

    cpdef int64_t write(self, uint8_t value) except -1:
        cdef uint8_t *grown
        if self.size == self.capacity:
            grown = <uint8_t *> realloc(self.data, self.capacity * 2)
            if grown == NULL:
                raise MemoryError()
            self.data = grown
            self.capacity *= 2
        self.data[self.size] = value
        self.size += 1
        return 1

    cpdef int flush(self) except -1:
        return 0

    cpdef int64_t tell(self) except -1:
        return self.size

    cdef bytes value(self):
        return PyBytes_FromStringAndSize(<char *> self.data, self.size)


cdef class _StateReader(IntIOInterface):
    """PyBoy reads its state one byte at a time; here each byte is a C load."""

    cdef const uint8_t[:] data
    cdef int64_t position

    def __init__(self, const uint8_t[:] data):
        self.data = data
        self.position = 0

    cpdef uint8_t read(self) except? -1:
        if self.position >= self.data.shape[0]:
            raise ValueError("the save state ended early: it is truncated or not a PyBoy state")
        self.position += 1
        return self.data[self.position - 1]

    cpdef int seek(self, int64_t position) except -1:
        self.position = position
        return 0

    cpdef int64_t tell(self) except -1:
        return self.position

    cpdef int flush(self) except -1:
        return 0


def save_state(PyBoy pyboy):
    """The bytes ``PyBoy.save_state`` would write, from one C buffer."""
    writer = _StateWriter()
    pyboy.mb.save_state(writer)
    return writer.value()


def load_state(PyBoy pyboy, const uint8_t[:] payload):
    """``PyBoy.load_state`` from bytes; returns how many bytes the state used."""
    reader = _StateReader(payload)
    pyboy.mb.load_state(reader)
    return reader.position


# -- RAM taps, observation, reward deltas ----------------------------------------

# Field order of the snapshot: RawState's slots (koholint.game.state.RAW_FIELDS).
DEF F_INDOOR = 0
DEF F_MAP_ID = 1
DEF F_ROOM = 2
DEF F_X = 3
DEF F_Y = 4
DEF F_DIRECTION = 5
DEF F_MOTION = 6
DEF F_TRANSITION = 7
DEF F_DIALOG = 8
DEF F_SELECTION = 9
DEF F_GAMEPLAY_TYPE = 10
DEF F_GAMEPLAY_SUBTYPE = 11
DEF F_HEALTH = 12
DEF F_MAX_HEARTS = 13
DEF F_RUPEES = 14
DEF F_KEYS = 15
DEF F_INSTRUMENT = 16
DEF F_B_SLOT = 17
DEF F_A_SLOT = 18
DEF F_ROOM_STATUS = 19
DEF F_KILLS = 20
DEF F_DEATHS = 21
DEF F_INVINCIBLE = 22
DEF F_FRAME = 23
DEF F_FRONT = 24
DEF F_NEIGHBOURS = 25
DEF F_ENTITY_STATUS = 33
DEF F_ENTITY_TYPE = 49
DEF F_ENTITY_X = 65
DEF F_ENTITY_Y = 81
DEF FIELD_COUNT = 97

DEF OBSERVATION_SIZE = 128
DEF ENTITY_BASE = 64
DEF WORLD = 0x0B
DEF CREDITS = 0x01
DEF PASS_OUT = 7

cdef int NEIGHBOUR_DX[8]
cdef int NEIGHBOUR_DY[8]
NEIGHBOUR_DX[:] = [0, 1, 1, 1, 0, -1, -1, -1]
NEIGHBOUR_DY[:] = [-1, -1, 0, 1, 1, 1, 0, -1]
cdef int FRONT_INDEX[4]
FRONT_INDEX[:] = [2, 6, 0, 4]
cdef int FRONT_DX[4]
cdef int FRONT_DY[4]
FRONT_DX[:] = [20, -20, 0, 0]
FRONT_DY[:] = [0, 0, -20, 20]


cdef inline double _clip(double value) noexcept:
    return -1.0 if value < -1.0 else (1.0 if value > 1.0 else value)


cdef class Taps:
    """Reads the env's RAM taps straight from PyBoy's WRAM and HRAM arrays.

    ``read(observation)`` takes a new snapshot, fills the observation, and returns the
    reward deltas against the previous snapshot with what the env needs to count rooms and
    cells: ``(room_key, x, y, gameplay_type, room_changed, item, key, kill, win, rupee,
    damage, death)``. ``fields()`` gives the latest snapshot as a list in RawState's order.
    """

    cdef RAM ram
    cdef uint8_t[:] wram
    cdef int32_t previous[FIELD_COUNT]
    cdef int32_t current[FIELD_COUNT]
    cdef uint8_t solid[256]
    cdef uint8_t pickup[256]
    cdef uint8_t stairs[256]
    cdef uint8_t enemy[256]
    cdef uint8_t npc[256]
    cdef int chest, block, locked_door
    cdef readonly bint primed
    # Addresses as offsets into WRAM (C000-DFFF; D000-DFFF is bank 1 on colour ROMs, as
    # RawState's banked reads) or HRAM (FF80-FFFE).
    cdef int o_indoor, o_motion, o_transition, o_dialog, o_selection, o_gameplay_type
    cdef int o_gameplay_subtype, o_health, o_max_hearts, o_rupees_high, o_rupees_low, o_keys
    cdef int o_instrument, o_inventory, o_kills, o_deaths, o_invincible, o_room_objects
    cdef int o_entity_status, o_entity_type, o_entity_x, o_entity_y
    cdef int h_map_id, h_room, h_x, h_y, h_direction, h_room_status, h_frame
    cdef int instrument_bit
    cdef double weights[9]
    cdef bint enabled[9]

    def __init__(self, PyBoy pyboy, dict addresses, dict tables, int instrument_bit):
        self.ram = pyboy.mb.ram
        self.wram = self.ram.internal_ram0
        self.primed = False
        self.instrument_bit = instrument_bit
        self.o_indoor = addresses["IS_INDOOR"] - 0xC000
        self.o_motion = addresses["LINK_MOTION_STATE"] - 0xC000
        self.o_transition = addresses["ROOM_TRANSITION_STATE"] - 0xC000
        self.o_dialog = addresses["DIALOG_STATE"] - 0xC000
        self.o_selection = addresses["DIALOG_ASK_SELECTION"] - 0xC000
        self.o_gameplay_type = addresses["GAMEPLAY_TYPE"] - 0xC000
        self.o_gameplay_subtype = addresses["GAMEPLAY_SUBTYPE"] - 0xC000
        self.o_health = addresses["HEALTH"] - 0xC000
        self.o_max_hearts = addresses["MAX_HEARTS"] - 0xC000
        self.o_rupees_high = addresses["RUPEES_HIGH"] - 0xC000
        self.o_rupees_low = addresses["RUPEES_LOW"] - 0xC000
        self.o_keys = addresses["DUNGEON_SMALL_KEYS"] - 0xC000
        self.o_instrument = addresses["HAS_INSTRUMENT_1"] - 0xC000
        self.o_inventory = addresses["INVENTORY"] - 0xC000
        self.o_kills = addresses["KILL_COUNT"] - 0xC000
        self.o_deaths = addresses["DEATH_COUNT"] - 0xC000
        self.o_invincible = addresses["INVINCIBILITY_COUNTER"] - 0xC000
        self.o_room_objects = addresses["ROOM_OBJECTS"] - 0xC000
        self.o_entity_status = addresses["ENTITIES_STATUS"] - 0xC000
        self.o_entity_type = addresses["ENTITIES_TYPE"] - 0xC000
        self.o_entity_x = addresses["ENTITIES_X"] - 0xC000
        self.o_entity_y = addresses["ENTITIES_Y"] - 0xC000
        self.h_map_id = addresses["MAP_ID"] - 0xFF80
        self.h_room = addresses["MAP_ROOM"] - 0xFF80
        self.h_x = addresses["LINK_X"] - 0xFF80
        self.h_y = addresses["LINK_Y"] - 0xFF80
        self.h_direction = addresses["LINK_DIRECTION"] - 0xFF80
        self.h_room_status = addresses["ROOM_STATUS"] - 0xFF80
        self.h_frame = addresses["FRAME_COUNTER"] - 0xFF80
        for name in ("solid", "pickup", "stairs", "enemy", "npc"):
            if len(tables[name]) != 256:
                raise ValueError(f"lookup table {name} must have 256 entries")
        for value in range(256):
            self.solid[value] = tables["solid"][value]
            self.pickup[value] = tables["pickup"][value]
            self.stairs[value] = tables["stairs"][value]
            self.enemy[value] = tables["enemy"][value]
            self.npc[value] = tables["npc"][value]
        self.chest = tables["chest"]
        self.block = tables["block"]
        self.locked_door = tables["locked_door"]

    cdef inline int _high(self, int offset) noexcept:
        return self.ram.internal_ram1[offset]

    cdef void _snapshot(self, int32_t *fields) noexcept:
        cdef uint8_t[:] wram = self.wram
        cdef int x, y, tile_x, tile_y, tx, ty, slot, index, rupees_high, rupees_low
        fields[F_INDOOR] = wram[self.o_indoor]
        fields[F_MAP_ID] = self._high(self.h_map_id)
        fields[F_ROOM] = self._high(self.h_room)
        x = self._high(self.h_x)
        y = self._high(self.h_y)
        fields[F_X] = x
        fields[F_Y] = y
        fields[F_DIRECTION] = self._high(self.h_direction) & 3
        fields[F_MOTION] = wram[self.o_motion]
        fields[F_TRANSITION] = wram[self.o_transition]
        fields[F_DIALOG] = wram[self.o_dialog]
        fields[F_SELECTION] = wram[self.o_selection]
        fields[F_GAMEPLAY_TYPE] = wram[self.o_gameplay_type]
        fields[F_GAMEPLAY_SUBTYPE] = wram[self.o_gameplay_subtype]
        fields[F_HEALTH] = wram[self.o_health]
        fields[F_MAX_HEARTS] = wram[self.o_max_hearts]
        rupees_high = wram[self.o_rupees_high]
        rupees_low = wram[self.o_rupees_low]
        fields[F_RUPEES] = (rupees_high & 0x0F) * 100 + (rupees_low >> 4) * 10 + (rupees_low & 0x0F)
        fields[F_KEYS] = wram[self.o_keys]
        fields[F_INSTRUMENT] = 1 if wram[self.o_instrument] & self.instrument_bit else 0
        fields[F_B_SLOT] = wram[self.o_inventory]
        fields[F_A_SLOT] = wram[self.o_inventory + 1]
        fields[F_ROOM_STATUS] = self._high(self.h_room_status)
        fields[F_KILLS] = wram[self.o_kills]
        fields[F_DEATHS] = wram[self.o_deaths]
        fields[F_INVINCIBLE] = wram[self.o_invincible]
        fields[F_FRAME] = self._high(self.h_frame)
        tile_x = x >> 4
        tile_y = y >> 4
        for index in range(8):
            tx = tile_x + NEIGHBOUR_DX[index]
            ty = tile_y + NEIGHBOUR_DY[index]
            if 0 <= tx < 10 and 0 <= ty < 8:
                fields[F_NEIGHBOURS + index] = wram[self.o_room_objects + (ty << 4) + tx]
            else:
                fields[F_NEIGHBOURS + index] = -1
        fields[F_FRONT] = fields[F_NEIGHBOURS + FRONT_INDEX[fields[F_DIRECTION]]]
        for slot in range(16):
            fields[F_ENTITY_STATUS + slot] = wram[self.o_entity_status + slot]
            fields[F_ENTITY_TYPE + slot] = wram[self.o_entity_type + slot]
            fields[F_ENTITY_X + slot] = wram[self.o_entity_x + slot]
            fields[F_ENTITY_Y + slot] = wram[self.o_entity_y + slot]

    cdef void _encode(self, const int32_t *f, float[::1] out) noexcept:
        cdef int x = f[F_X], y = f[F_Y], room = f[F_ROOM], indoor = f[F_INDOOR]
        cdef int tile_x = x >> 4, tile_y = y >> 4, direction = f[F_DIRECTION]
        cdef int motion = f[F_MOTION], dialog = f[F_DIALOG] & 0x7F, mode = f[F_GAMEPLAY_TYPE]
        cdef int max_health = f[F_MAX_HEARTS] * 8, b_slot = f[F_B_SLOT], a_slot = f[F_A_SLOT]
        cdef int front = f[F_FRONT], slot, index, bit, tile, enemies = 0, distance, best = -1
        cdef int nearest_x = 0, nearest_y = 0, ex, ey, fx, fy
        cdef double npc_in_front = 0.0
        out[0] = 1.0 if indoor else 0.0
        out[1] = <float> (f[F_MAP_ID] / 255.0) if indoor else 0.0
        out[2] = <float> (room / 255.0)
        out[3] = <float> ((room >> 4) / 15.0)
        out[4] = <float> ((room & 15) / 15.0)
        out[5] = <float> (x / 160.0) if x < 160 else 1.0
        out[6] = <float> (y / 128.0) if y < 128 else 1.0
        out[7] = <float> (tile_x / 9.0) if tile_x < 9 else 1.0
        out[8] = <float> (tile_y / 7.0) if tile_y < 7 else 1.0
        for index in range(4):
            out[9 + index] = 1.0 if direction == index else 0.0
        out[13] = 1.0 if motion == 0 else 0.0
        out[14] = 1.0 if motion == 3 or motion == 4 else 0.0
        out[15] = 1.0 if motion == PASS_OUT else 0.0
        out[16] = 1.0 if f[F_TRANSITION] else 0.0
        out[17] = 1.0 if dialog != 0 else 0.0
        out[18] = 1.0 if 0 < dialog < 9 else 0.0
        out[19] = 1.0 if dialog == 9 or dialog == 12 else 0.0
        out[20] = 1.0 if dialog == 13 else 0.0
        out[21] = 1.0 if f[F_SELECTION] else 0.0
        out[22] = 1.0 if mode == 0x00 else 0.0
        out[23] = 1.0 if mode == WORLD else 0.0
        out[24] = 1.0 if mode == CREDITS else 0.0
        out[25] = <float> _clip(f[F_HEALTH] / <double> max_health) if max_health else 0.0
        out[26] = <float> _clip(f[F_MAX_HEARTS] / 14.0)
        out[27] = <float> _clip(f[F_HEALTH] / 112.0)
        out[28] = 1.0 if f[F_INVINCIBLE] else 0.0
        out[29] = <float> _clip(f[F_RUPEES] / 999.0)
        out[30] = <float> _clip(f[F_KEYS] / 9.0)
        out[31] = 1.0 if b_slot == 1 or a_slot == 1 else 0.0
        out[32] = 1.0 if a_slot == 1 else 0.0
        out[33] = 1.0 if b_slot == 1 else 0.0
        out[34] = 1.0 if f[F_INSTRUMENT] else 0.0
        out[35] = <float> (f[F_KILLS] / 255.0)
        out[36] = <float> (f[F_DEATHS] / 255.0)
        for bit in range(8):
            out[37 + bit] = <float> ((f[F_ROOM_STATUS] >> bit) & 1)
        for index in range(8):
            tile = f[F_NEIGHBOURS + index]
            out[45 + index] = 1.0 if tile < 0 or self.solid[tile] else 0.0
        for slot in range(16):
            if f[F_ENTITY_STATUS + slot] == 5 and self.enemy[f[F_ENTITY_TYPE + slot]]:
                enemies += 1
                ex = f[F_ENTITY_X + slot]
                ey = f[F_ENTITY_Y + slot]
                distance = abs(ex - x) + abs(ey - y)
                if best < 0 or distance < best:
                    best, nearest_x, nearest_y = distance, ex, ey
        if enemies:
            out[53] = 1.0
            out[54] = <float> _clip((nearest_x - x) / 160.0)
            out[55] = <float> _clip((nearest_y - y) / 128.0)
            out[56] = <float> (enemies / 16.0)
        else:
            out[53] = out[54] = out[55] = out[56] = 0.0
        fx = x + FRONT_DX[direction]
        fy = y + FRONT_DY[direction]
        for slot in range(16):
            if (
                f[F_ENTITY_STATUS + slot]
                and self.npc[f[F_ENTITY_TYPE + slot]]
                and abs(f[F_ENTITY_X + slot] - fx) < 12
                and abs(f[F_ENTITY_Y + slot] - fy) < 12
            ):
                npc_in_front = 1.0
                break
        out[57] = npc_in_front
        out[58] = 1.0 if front == self.chest else 0.0
        out[59] = 1.0 if front == self.block else 0.0
        out[60] = 1.0 if front == self.locked_door else 0.0
        out[61] = 1.0 if front >= 0 and self.pickup[front] else 0.0
        out[62] = 1.0 if front >= 0 and self.stairs[front] else 0.0
        out[63] = 1.0 if front >= 0 and not self.solid[front] else 0.0
        for slot in range(16):
            index = ENTITY_BASE + 4 * slot
            if f[F_ENTITY_STATUS + slot]:
                out[index] = 1.0
                out[index + 1] = 1.0 if self.enemy[f[F_ENTITY_TYPE + slot]] else 0.0
                out[index + 2] = <float> _clip((f[F_ENTITY_X + slot] - x) / 160.0)
                out[index + 3] = <float> _clip((f[F_ENTITY_Y + slot] - y) / 128.0)
            else:
                out[index] = out[index + 1] = out[index + 2] = out[index + 3] = 0.0

    def read(self, float[::1] observation not None):
        """Snapshot the taps, fill `observation`, and return what the env's step needs."""
        if observation.shape[0] != OBSERVATION_SIZE:
            raise ValueError(f"observation must hold {OBSERVATION_SIZE} floats")
        memcpy(self.previous, self.current, sizeof(self.current))
        self._snapshot(self.current)
        self._encode(self.current, observation)
        cdef const int32_t *before = self.previous
        cdef const int32_t *after = self.current
        cdef bint first = not self.primed
        self.primed = True
        if first:
            memcpy(self.previous, self.current, sizeof(self.current))
        cdef int indoor = after[F_INDOOR]
        room_key = (indoor, after[F_MAP_ID] if indoor else 0, after[F_ROOM])
        cdef bint changed = (
            before[F_INDOOR] != indoor
            or before[F_ROOM] != after[F_ROOM]
            or (indoor and before[F_MAP_ID] != after[F_MAP_ID])
            or before[F_GAMEPLAY_TYPE] != after[F_GAMEPLAY_TYPE]
        )
        cdef int items = _items_held(after) - _items_held(before)
        cdef int hearts = after[F_MAX_HEARTS] - before[F_MAX_HEARTS]
        return (
            room_key,
            after[F_X],
            after[F_Y],
            after[F_GAMEPLAY_TYPE],
            before[F_GAMEPLAY_TYPE],
            changed,
            <double> ((items if items > 0 else 0) + (hearts if hearts > 0 else 0)),
            _gain(before[F_KEYS], after[F_KEYS]),
            _gain(before[F_KILLS], after[F_KILLS]),
            1.0 if after[F_GAMEPLAY_TYPE] == CREDITS and before[F_GAMEPLAY_TYPE] != CREDITS else 0.0,
            _gain(before[F_RUPEES], after[F_RUPEES]),
            _gain(after[F_HEALTH], before[F_HEALTH]),
            1.0 if after[F_MOTION] == PASS_OUT and before[F_MOTION] != PASS_OUT else 0.0,
        )

    def set_weights(self, paid):
        """The reward's (component index, weight) pairs, in REWARD_COMPONENTS order."""
        cdef int index
        for index in range(9):
            self.enabled[index] = False
            self.weights[index] = 0.0
        for index, weight in paid:
            if not 0 <= index < 9:
                raise ValueError(f"reward component index {index} is not 0..8")
            self.enabled[index] = True
            self.weights[index] = weight

    def transition(
        self, float[::1] observation not None, set rooms, set cells, int coverage_bin,
        int action, frame,
    ):
        """One env step after the emulator ran: snapshot, observation, reward components,
        new rooms and cells (added to `rooms` and `cells`), the weighted reward and the
        step's info. Returns ``(reward, terminated, room_changed, info)``; mirrors
        ``ZeldaEnv._transition`` on the reference path."""
        cdef int room_type, before_type, index
        cdef double values[9]
        cdef double reward = 0.0
        if coverage_bin < 1:
            raise ValueError("coverage_bin must be >= 1")
        room_key, x, y, room_type, before_type, changed, values[1], values[2], values[3], \
            values[4], values[5], values[6], values[7] = self.read(observation)
        cell = (room_key, x // coverage_bin, y // coverage_bin)
        values[0] = values[8] = 0.0
        if room_type == WORLD:
            if room_key not in rooms:
                rooms.add(room_key)
                values[0] = 1.0 if before_type == WORLD else 0.0  # entering play is no room
            if cell not in cells:
                cells.add(cell)
                values[8] = 1.0
        for index in range(9):
            if self.enabled[index] and values[index] != 0.0:
                reward += values[index] * self.weights[index]
        info = {
            "reward_components": {
                "new_room": values[0], "item": values[1], "key": values[2], "kill": values[3],
                "win": values[4], "rupee": values[5], "damage": values[6], "death": values[7],
                "coverage": values[8],
            },
            "room_key": room_key,
            "cell": cell,
            "action": action,
            "frame": frame,
            "rooms": len(rooms),
            "cells": len(cells),
        }
        return reward, room_type == CREDITS, changed, info

    def fields(self):
        """The latest snapshot, in RawState's field order."""
        return [self.current[index] for index in range(FIELD_COUNT)]

    def reset(self):
        """Forget the previous snapshot: the next read compares against itself."""
        self.primed = False


cdef inline double _gain(int before, int after) noexcept:
    return <double> (after - before) if after > before else 0.0


cdef inline int _items_held(const int32_t *fields) noexcept:
    cdef int b_slot = fields[F_B_SLOT], a_slot = fields[F_A_SLOT]
    if b_slot and a_slot:
        return 1 if a_slot == b_slot else 2
    return 1 if (b_slot or a_slot) else 0



def work_ram(PyBoy pyboy):
    """PyBoy's work RAM (C000-DFFF, all banks) as a writable memoryview, without a copy."""
    return memoryview(pyboy.mb.ram.internal_ram0)
