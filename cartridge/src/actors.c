/* Koholint test cartridge: enemies, NPCs and the pushable block in the entity tables. */
#include "game.h"

#define DYING_FRAMES 12
#define CONTACT_DAMAGE 4
#define MIN_SPAWN_DISTANCE 3

static unsigned char enemies_in_room;

static unsigned char is_enemy(unsigned char type) {
    return type == ENTITY_OCTOROK || type == ENTITY_KEESE;
}

unsigned char room_has_enemies(void) { return enemies_in_room; }

static unsigned char distance(unsigned char a, unsigned char b) { return a > b ? a - b : b - a; }

static unsigned char seeded_cell(unsigned char cell) {
    /* With a non-zero seed, move the spawn to a floor cell chosen by the room's RNG. */
    const unsigned char *tiles = room_data + R_TILES;
    unsigned char link = hLinkRoomPosition, tries, tx, ty, metatile;
    if (!wKoholintSeed) return cell;
    for (tries = 0; tries < 24; tries++) {
        tx = 1 + (rng_next() & 7);
        ty = 1 + (rng_next() & 7);
        if (ty > 6) continue;
        metatile = tiles[ty * 10 + tx];
        if (metatile != MT_FLOOR && metatile != MT_DFLOOR) continue;
        if (distance(tx, CELL_X(link)) + distance(ty, CELL_Y(link)) < MIN_SPAWN_DISTANCE) continue;
        return CELL(tx, ty);
    }
    return cell;
}

static void spawn(unsigned char slot, unsigned char type, unsigned char cell) {
    wEntitiesTypeTable[slot] = type;
    wEntitiesPosXTable[slot] = (CELL_X(cell) << 4) + 8;
    wEntitiesPosYTable[slot] = (CELL_Y(cell) << 4) + 8;
    wEntitiesStatusTable[slot] = ENTITY_ACTIVE;
    wEntitiesStateTable[slot] = 0;
    wEntitiesHealthTable[slot] = 1;
    wEntitiesDirectionTable[slot] = rng_next() & 3;
    wEntitiesSpeedXTable[slot] = rng_next() & 1 ? 1 : 0xFF;
    wEntitiesSpeedYTable[slot] = rng_next() & 1 ? 1 : 0xFF;
    wEntitiesSpriteVariantTable[slot] = 0;
}

static unsigned char find_cell(unsigned char metatile) {
    unsigned char cell;
    for (cell = 0; cell < 0x80; cell++) {
        if ((cell & 0x0F) < 10 && wRoomObjects[cell] == metatile) return cell;
    }
    return 0xFF;
}

void spawn_entities(void) {
    const unsigned char *spawn_list = (const unsigned char *)*(const unsigned int *)(room_data + R_SPAWNS);
    unsigned char slot = 0, type, cell, cleared = *room_status() & ROOM_CLEARED;
    for (type = 0; type < ENTITY_SLOTS; type++) wEntitiesStatusTable[type] = ENTITY_OFF;
    enemies_in_room = 0;
    while ((type = spawn_list[0]) != 0) {
        cell = CELL(spawn_list[1], spawn_list[2]);
        spawn_list += 3;
        if (is_enemy(type)) {
            enemies_in_room = 1;
            if (cleared) continue;
            cell = seeded_cell(cell);
        }
        spawn(slot++, type, cell);
    }
}

void move_block_entity(unsigned char cell) {
    unsigned char slot;
    for (slot = 0; slot < ENTITY_SLOTS; slot++) {
        if (wEntitiesStatusTable[slot] && wEntitiesTypeTable[slot] == ENTITY_BLOCK) {
            wEntitiesPosXTable[slot] = (CELL_X(cell) << 4) + 8;
            wEntitiesPosYTable[slot] = (CELL_Y(cell) << 4) + 8;
        }
    }
}

unsigned char npc_at(unsigned char x, unsigned char y, unsigned char reach) {
    unsigned char slot, type;
    for (slot = 0; slot < ENTITY_SLOTS; slot++) {
        type = wEntitiesTypeTable[slot];
        if (!wEntitiesStatusTable[slot] || (type != ENTITY_ELDER && type != ENTITY_SHOPKEEPER)) continue;
        if (distance(x, wEntitiesPosXTable[slot]) < reach && distance(y, wEntitiesPosYTable[slot]) < reach)
            return slot;
    }
    return 0xFF;
}

unsigned char entity_blocks_cell(unsigned char cell) {
    unsigned char slot, x = (CELL_X(cell) << 4) + 8, y = (CELL_Y(cell) << 4) + 8;
    for (slot = 0; slot < ENTITY_SLOTS; slot++) {
        if (!wEntitiesStatusTable[slot] || wEntitiesTypeTable[slot] == ENTITY_BLOCK) continue;
        if (distance(x, wEntitiesPosXTable[slot]) < 14 && distance(y, wEntitiesPosYTable[slot]) < 14) return 1;
    }
    return 0;
}

static void move_octorok(unsigned char slot) {
    /* Walks straight at half Link's speed, turning at random intervals or at walls. */
    unsigned char dir = wEntitiesDirectionTable[slot], x = wEntitiesPosXTable[slot], y = wEntitiesPosYTable[slot];
    if (wEntitiesStateTable[slot] == 0) {
        wEntitiesDirectionTable[slot] = rng_next() & 3;
        wEntitiesStateTable[slot] = 32 + (rng_next() & 63);
        return;
    }
    wEntitiesStateTable[slot]--;
    if (hFrameCounter & 1) return;
    if (dir == DIR_RIGHT) x++;
    else if (dir == DIR_LEFT) x--;
    else if (dir == DIR_UP) y--;
    else y++;
    if (box_blocked(x, y)) {
        wEntitiesStateTable[slot] = 0;
        return;
    }
    wEntitiesPosXTable[slot] = x;
    wEntitiesPosYTable[slot] = y;
}

static void move_keese(unsigned char slot) {
    /* Flies diagonally and bounces off walls, resting now and then. */
    unsigned char x = wEntitiesPosXTable[slot], y = wEntitiesPosYTable[slot];
    if (wEntitiesStateTable[slot]) {
        wEntitiesStateTable[slot]--;
        return;
    }
    if ((rng_next() & 0x7F) == 0) wEntitiesStateTable[slot] = 24;
    x += wEntitiesSpeedXTable[slot];
    if (box_blocked(x, y)) {
        wEntitiesSpeedXTable[slot] = (unsigned char)-wEntitiesSpeedXTable[slot];
        x = wEntitiesPosXTable[slot];
    }
    y += wEntitiesSpeedYTable[slot];
    if (box_blocked(x, y)) {
        wEntitiesSpeedYTable[slot] = (unsigned char)-wEntitiesSpeedYTable[slot];
        y = wEntitiesPosYTable[slot];
    }
    wEntitiesPosXTable[slot] = x;
    wEntitiesPosYTable[slot] = y;
}

static void update_dying(unsigned char slot) {
    unsigned char other;
    if (--wEntitiesStateTable[slot]) return;
    wEntitiesStatusTable[slot] = ENTITY_OFF;
    for (other = 0; other < ENTITY_SLOTS; other++) {
        if (wEntitiesStatusTable[other] && is_enemy(wEntitiesTypeTable[other])) return;
    }
    on_room_cleared();
}

void actors_update(void) {
    unsigned char slot, type, x, y;
    for (slot = 0; slot < ENTITY_SLOTS; slot++) {
        if (wEntitiesStatusTable[slot] == ENTITY_OFF) continue;
        if (wEntitiesStatusTable[slot] == ENTITY_DYING) { update_dying(slot); continue; }
        type = wEntitiesTypeTable[slot];
        if (!is_enemy(type)) continue;
        if (type == ENTITY_OCTOROK) move_octorok(slot);
        else move_keese(slot);
        x = wEntitiesPosXTable[slot];
        y = wEntitiesPosYTable[slot];
        if (sword_hits(x, y)) {
            wEntitiesStatusTable[slot] = ENTITY_DYING;
            wEntitiesStateTable[slot] = DYING_FRAMES;
            if (wKillCount < 0xFF) wKillCount++;
        } else if (distance(x, hLinkPositionX) < 10 && distance(y, hLinkPositionY) < 10) {
            hurt_link(CONTACT_DAMAGE, x, y);
        }
    }
}

void draw_actors(void) {
    unsigned char slot, type, tile, frame = (hFrameCounter >> 4) & 1;
    for (slot = 0; slot < ENTITY_SLOTS; slot++) {
        if (wEntitiesStatusTable[slot] == ENTITY_OFF) continue;
        type = wEntitiesTypeTable[slot];
        if (wEntitiesStatusTable[slot] == ENTITY_DYING) tile = SPR_POOF;
        else if (type == ENTITY_OCTOROK) tile = frame ? SPR_OCTOROK2 : SPR_OCTOROK;
        else if (type == ENTITY_KEESE) tile = frame ? SPR_KEESE2 : SPR_KEESE;
        else if (type == ENTITY_ELDER) tile = SPR_ELDER;
        else if (type == ENTITY_SHOPKEEPER) tile = SPR_SHOPKEEPER;
        else continue;
        wEntitiesSpriteVariantTable[slot] = frame;
        put_object(wEntitiesPosXTable[slot], wEntitiesPosYTable[slot], tile, 0);
    }
}
