/* Koholint test cartridge: rooms, Link, transitions, stairs, pickups and death. */
#include "game.h"

#define SWING_FRAMES 14
#define SWORD_ACTIVE_FROM 3
#define PUSH_FRAMES 16
#define KNOCKBACK_FRAMES 8
#define INVINCIBLE_FRAMES 48
#define PASS_OUT_FRAMES 90
#define FADE_FRAMES 16
#define TRANSITION_FRAMES_PER_STATE 2
#define RUPEE_VALUE 5

unsigned char cur_room;
const unsigned char *room_data;
unsigned char swing_timer;
static unsigned char push_timer, push_dir;
static unsigned char knock_timer;
static signed char knock_dx, knock_dy;
static unsigned char motion_timer;
static unsigned char transition_dir, transition_timer;
static unsigned char warp_index;
static unsigned char walk_frames;
static unsigned char key_cell;

static const signed char dir_dx[4] = {1, -1, 0, 0};
static const signed char dir_dy[4] = {0, 0, -1, 1};

unsigned char *room_status(void) {
    unsigned char *table = room_data[R_INDOOR] ? wIndoorARoomStatus : wOverworldRoomStatus;
    return table + room_data[R_ID];
}

void set_room_flag(unsigned char flag) {
    unsigned char *status = room_status();
    *status |= flag;
    hRoomStatus = *status;
}

static unsigned char floor_tile(void) { return room_data[R_INDOOR] ? MT_DFLOOR : MT_FLOOR; }

unsigned char cell_at(unsigned char px, unsigned char py) {
    if (px >= 160 || py >= 128) return MT_WALL;
    return wRoomObjects[CELL(px >> 4, py >> 4)];
}

static unsigned char is_solid(unsigned char metatile) {
    switch (metatile) {
    case MT_WALL: case MT_TREE: case MT_CHEST: case MT_CHEST_OPEN: case MT_BLOCK:
    case MT_BLOCK_ON_PLATE: case MT_GATE: case MT_LOCKED: case MT_DWALL: case MT_WATER:
    case MT_SIGN:
        return 1;
    default:
        return 0;
    }
}

unsigned char box_blocked(unsigned char x, unsigned char y) {
    /* A 12x12 box centred on (x, y); outside the room counts as solid. */
    unsigned char left = x - 6, right = x + 5, top = y - 6, bottom = y + 5;
    if (x < 6 || y < 6) return 1;
    return is_solid(cell_at(left, top)) || is_solid(cell_at(right, top)) ||
           is_solid(cell_at(left, bottom)) || is_solid(cell_at(right, bottom));
}

void set_cell(unsigned char cell, unsigned char metatile) {
    wRoomObjects[cell] = metatile;
    queue_metatile(cell);
}

static void replace_all(unsigned char from, unsigned char to) {
    unsigned char tx, ty;
    for (ty = 0; ty < 8; ty++) {
        for (tx = 0; tx < 10; tx++) {
            if (wRoomObjects[CELL(tx, ty)] == from) set_cell(CELL(tx, ty), to);
        }
    }
}

static unsigned char build_cell(unsigned char metatile, unsigned char flags, unsigned char cell) {
    /* Apply what the room status remembers to one authored metatile. */
    switch (metatile) {
    case MT_CHEST: return flags & ROOM_CHEST_OPEN ? MT_CHEST_OPEN : MT_CHEST;
    case MT_GATE: return flags & ROOM_PUZZLE_SOLVED ? floor_tile() : MT_GATE;
    case MT_LOCKED: return flags & ROOM_DOOR_OPEN ? floor_tile() : MT_LOCKED;
    case MT_RUPEE: return flags & ROOM_RUPEE_TAKEN ? floor_tile() : MT_RUPEE;
    case MT_HEART: return flags & ROOM_HEART_TAKEN ? floor_tile() : MT_HEART;
    case MT_BLOCK: return flags & ROOM_PUZZLE_SOLVED ? floor_tile() : MT_BLOCK;
    case MT_PLATE: return flags & ROOM_PUZZLE_SOLVED ? MT_BLOCK_ON_PLATE : MT_PLATE;
    case MT_KEY:
        key_cell = cell;
        if (flags & ROOM_KEY_TAKEN) return floor_tile();
        return (room_has_enemies() && !(flags & ROOM_CLEARED)) ? floor_tile() : MT_KEY;
    default: return metatile;
    }
}

static void build_room(void) {
    const unsigned char *src = room_data + R_TILES;
    unsigned char flags = *room_status(), tx, ty;
    key_cell = 0xFF;
    for (ty = 0; ty < 8; ty++) {
        for (tx = 0; tx < 10; tx++) {
            unsigned char cell = CELL(tx, ty);
            wRoomObjects[cell] = build_cell(*src++, flags, cell);
        }
    }
}

static void update_room_position(void) {
    hLinkRoomPosition = CELL(hLinkPositionX >> 4, hLinkPositionY >> 4);
}

void enter_room(unsigned char room) {
    /* Redraws with the LCD off: the blank frame is part of the short transition. */
    cur_room = room;
    room_data = WORLD_POINTER(H_ROOM_TABLE) + (unsigned int)room * ROOM_RECORD_SIZE;
    hMapRoom = room_data[R_ID];
    hMapId = room_data[R_MAP];
    wIsIndoor = room_data[R_INDOOR];
    set_room_flag(ROOM_VISITED);
    rng_seed(wKoholintSeed, hMapRoom ^ (wIsIndoor << 7));
    update_room_position();
    spawn_entities();
    build_room();
    screen_request = SCREEN_ROOM;
    push_timer = 0;
    swing_timer = 0;
    knock_timer = 0;
}

void start_game(void) {
    wGameplayType = GAMEPLAY_WORLD;
    wGameplaySubtype = GAMEPLAY_WORLD_INTERACTIVE;
    wMaxHearts = 3;
    wHealth = 3 * 8;
    hLinkPositionX = WORLD[H_START_X];
    hLinkPositionY = WORLD[H_START_Y];
    hLinkDirection = DIR_UP;
    enter_room(WORLD[H_START_ROOM]);
}

static unsigned int rupee_count(void) {
    unsigned char low = wRupeeCountLow;
    return wRupeeCountHigh * 100 + (low >> 4) * 10 + (low & 0x0F);
}

static void store_rupees(unsigned int count) {
    /* Rupees are BCD in wRupeeCountHigh:Low, and saturate at 999. */
    if (count > 999) count = 999;
    wRupeeCountHigh = (unsigned char)(count / 100);
    count %= 100;
    wRupeeCountLow = (unsigned char)(((count / 10) << 4) | (count % 10));
    hud_dirty = 1;
}

static void add_rupees(unsigned char amount) { store_rupees(rupee_count() + amount); }

static unsigned char spend_rupees(unsigned char amount) {
    unsigned int have = rupee_count();
    if (have < amount) return 0;
    store_rupees(have - amount);
    return 1;
}

static void give_item(unsigned char item) {
    if (!wInventoryItems[0]) wInventoryItems[0] = item;
    else if (!wInventoryItems[1]) wInventoryItems[1] = item;
    if (item == INVENTORY_SWORD) wSwordLevel = 1;
    hud_dirty = 1;
}

void on_dialog_closed(unsigned char id) {
    if (id != DLG_SHOP) return;
    if (wDialogAskSelectionIndex != 0) {
        open_dialog(DLG_SHOP_NO);
    } else if (spend_rupees(WORLD[H_SHOP_PRICE])) {
        if (wMaxHearts < MAX_HEARTS) wMaxHearts++;
        wHealth = wMaxHearts << 3;
        set_room_flag(ROOM_CHEST_OPEN);
        open_dialog(DLG_SHOP_THANKS);
    } else {
        open_dialog(DLG_SHOP_POOR);
    }
}

static void start_transition(unsigned char dir) {
    transition_dir = dir;
    transition_timer = 0;
    wRoomTransitionState = 1;
}

static void transition_step(void) {
    if (++transition_timer < TRANSITION_FRAMES_PER_STATE) return;
    transition_timer = 0;
    if (wRoomTransitionState == 2) {
        if (transition_dir == DIR_LEFT) hLinkPositionX = 153;
        else if (transition_dir == DIR_RIGHT) hLinkPositionX = 7;
        else if (transition_dir == DIR_UP) hLinkPositionY = 121;
        else hLinkPositionY = 7;
        enter_room(room_data[R_EXITS + transition_dir]);
    }
    if (++wRoomTransitionState > 5) wRoomTransitionState = 0;
}

static void fade_step(void) {
    static const unsigned char fade[4] = {0xE4, 0x90, 0x40, 0x00};
    unsigned char level = motion_timer >> 2;
    motion_timer++;
    if (wLinkMotionState == MOTION_FADE_OUT) {
        rBGP = fade[level];
        if (motion_timer < FADE_FRAMES) return;
        const unsigned char *warp = WORLD_POINTER(H_WARP_TABLE) + warp_index * WARP_RECORD_SIZE;
        hLinkPositionX = warp[3];
        hLinkPositionY = warp[4];
        hLinkDirection = warp[5];
        enter_room(warp[2]);
        wLinkMotionState = MOTION_FADE_IN;
        motion_timer = 0;
        return;
    }
    rBGP = fade[3 - level];
    if (motion_timer >= FADE_FRAMES) {
        rBGP = 0xE4;
        wLinkMotionState = MOTION_NORMAL;
    }
}

static void pass_out_step(void) {
    if (++motion_timer < PASS_OUT_FRAMES) return;
    if (wDeathCount < 0xFF) wDeathCount++;
    wHealth = wMaxHearts << 3;
    wInvincibilityCounter = 0;
    wLinkMotionState = MOTION_NORMAL;
    hLinkPositionX = WORLD[H_START_X];
    hLinkPositionY = WORLD[H_START_Y];
    hLinkDirection = DIR_UP;
    enter_room(WORLD[H_START_ROOM]);
}

void hurt_link(unsigned char damage, unsigned char from_x, unsigned char from_y) {
    signed char dx = (signed char)(hLinkPositionX - from_x), dy = (signed char)(hLinkPositionY - from_y);
    if (wInvincibilityCounter || wLinkMotionState != MOTION_NORMAL) return;
    wHealth = wHealth > damage ? wHealth - damage : 0;
    hud_dirty = 1;
    wInvincibilityCounter = INVINCIBLE_FRAMES;
    knock_timer = KNOCKBACK_FRAMES;
    swing_timer = 0;
    knock_dx = dx > 0 ? 1 : (dx < 0 ? -1 : 0);
    knock_dy = dy > 0 ? 1 : (dy < 0 ? -1 : 0);
    if (wHealth == 0) {
        wLinkMotionState = MOTION_PASS_OUT;
        motion_timer = 0;
        knock_timer = 0;
    }
}

unsigned char sword_hits(unsigned char x, unsigned char y) {
    unsigned char sx, sy, ddx, ddy;
    if (swing_timer == 0 || swing_timer > SWING_FRAMES - SWORD_ACTIVE_FROM) return 0;
    sx = hLinkPositionX + dir_dx[hLinkDirection] * 12;
    sy = hLinkPositionY + dir_dy[hLinkDirection] * 12;
    ddx = x > sx ? x - sx : sx - x;
    ddy = y > sy ? y - sy : sy - y;
    return ddx < 12 && ddy < 12;
}

void on_room_cleared(void) {
    set_room_flag(ROOM_CLEARED);
    if (key_cell != 0xFF && !(hRoomStatus & ROOM_KEY_TAKEN)) set_cell(key_cell, MT_KEY);
}

static unsigned char probe_cell(unsigned char reach) {
    unsigned char px = hLinkPositionX + dir_dx[hLinkDirection] * reach;
    unsigned char py = hLinkPositionY + dir_dy[hLinkDirection] * reach;
    if (px >= 160 || py >= 128) return 0xFF;
    return CELL(px >> 4, py >> 4);
}

static void push_block(unsigned char cell) {
    unsigned char tx = CELL_X(cell) + dir_dx[hLinkDirection];
    unsigned char ty = CELL_Y(cell) + dir_dy[hLinkDirection];
    unsigned char dest, target;
    if (tx < 1 || tx > 8 || ty < 1 || ty > 6) return;
    dest = CELL(tx, ty);
    target = wRoomObjects[dest];
    if ((target != floor_tile() && target != MT_PLATE) || entity_blocks_cell(dest)) return;
    set_cell(cell, floor_tile());
    move_block_entity(dest);
    if (target != MT_PLATE) {
        set_cell(dest, MT_BLOCK);
        return;
    }
    set_cell(dest, MT_BLOCK_ON_PLATE);
    set_room_flag(ROOM_PUZZLE_SOLVED);
    replace_all(MT_GATE, floor_tile());
}

static void bump(void) {
    /* Link walks into something solid: push a block or open a locked door. */
    unsigned char cell = probe_cell(8);
    if (cell == 0xFF) return;
    if (wRoomObjects[cell] == MT_BLOCK) {
        if (push_dir != hLinkDirection) { push_dir = hLinkDirection; push_timer = 0; }
        if (++push_timer >= PUSH_FRAMES) { push_timer = 0; push_block(cell); }
    } else if (wRoomObjects[cell] == MT_LOCKED && wDungeonSmallKeys) {
        wDungeonSmallKeys--;
        hud_dirty = 1;
        set_room_flag(ROOM_DOOR_OPEN);
        replace_all(MT_LOCKED, floor_tile());
    }
}

static unsigned char try_move(signed char dx, signed char dy) {
    unsigned char nx = hLinkPositionX + dx, ny = hLinkPositionY + dy;
    if (box_blocked(nx, ny) || npc_at(nx, ny, 12) != 0xFF) return 0;
    hLinkPositionX = nx;
    hLinkPositionY = ny;
    return 1;
}

static unsigned char at_exit(signed char dx, signed char dy) {
    unsigned char dir;
    if (dx < 0 && hLinkPositionX <= 6) dir = DIR_LEFT;
    else if (dx > 0 && hLinkPositionX >= 154) dir = DIR_RIGHT;
    else if (dy < 0 && hLinkPositionY <= 6) dir = DIR_UP;
    else if (dy > 0 && hLinkPositionY >= 122) dir = DIR_DOWN;
    else return 0;
    if (room_data[R_EXITS + dir] == NO_EXIT) return 0;
    start_transition(dir);
    return 1;
}

static void walk(void) {
    signed char dx = 0, dy = 0;
    unsigned char moved = 0;
    if (pad & PAD_RIGHT) dx = 1;
    else if (pad & PAD_LEFT) dx = -1;
    if (pad & PAD_DOWN) dy = 1;
    else if (pad & PAD_UP) dy = -1;
    if (!dx && !dy) { push_timer = 0; return; }
    if (dx && !dy) hLinkDirection = dx > 0 ? DIR_RIGHT : DIR_LEFT;
    else if (dy && !dx) hLinkDirection = dy > 0 ? DIR_DOWN : DIR_UP;
    else if (dir_dy[hLinkDirection] != dy && dir_dx[hLinkDirection] != dx)
        hLinkDirection = dy > 0 ? DIR_DOWN : DIR_UP;
    if (at_exit(dx, dy)) return;
    if (dx) moved |= try_move(dx, 0);
    if (dy) moved |= try_move(0, dy);
    walk_frames++;
    if (!moved && (!dx || !dy)) bump();
    else push_timer = 0;
}

static void knockback(void) {
    knock_timer--;
    try_move(knock_dx, 0);
    try_move(0, knock_dy);
    try_move(knock_dx, 0);
    try_move(0, knock_dy);
}

static void interact(void) {
    unsigned char npc = npc_at(hLinkPositionX + dir_dx[hLinkDirection] * 12,
                               hLinkPositionY + dir_dy[hLinkDirection] * 12, 8);
    unsigned char cell;
    if (npc != 0xFF) {
        if (wEntitiesTypeTable[npc] == ENTITY_ELDER) open_dialog(DLG_ELDER);
        else open_dialog(hRoomStatus & ROOM_CHEST_OPEN ? DLG_SHOP_SOLD : DLG_SHOP);
        return;
    }
    cell = probe_cell(10);
    if (cell != 0xFF && wRoomObjects[cell] == MT_CHEST && hLinkDirection == DIR_UP) {
        set_cell(cell, MT_CHEST_OPEN);
        set_room_flag(ROOM_CHEST_OPEN);
        give_item(INVENTORY_SWORD);
        open_dialog(DLG_SWORD);
        return;
    }
    if (wInventoryItems[1] == INVENTORY_SWORD) swing_timer = SWING_FRAMES;
}

static void take_pickups(void) {
    unsigned char cell = hLinkRoomPosition, metatile = wRoomObjects[cell];
    unsigned char i;
    if (metatile == MT_RUPEE) {
        add_rupees(RUPEE_VALUE);
        set_room_flag(ROOM_RUPEE_TAKEN);
    } else if (metatile == MT_HEART) {
        wHealth = wHealth + 8 > (wMaxHearts << 3) ? wMaxHearts << 3 : wHealth + 8;
        set_room_flag(ROOM_HEART_TAKEN);
    } else if (metatile == MT_KEY) {
        wDungeonSmallKeys++;
        set_room_flag(ROOM_KEY_TAKEN);
    } else if (metatile == MT_INSTRUMENT) {
        wHasInstrument1 |= HAS_INSTRUMENT;
        wGameplayType = GAMEPLAY_CREDITS;
        wGameplaySubtype = 0;
        return;
    } else if (metatile == MT_STAIRS_DOWN || metatile == MT_STAIRS_UP) {
        const unsigned char *warp = WORLD_POINTER(H_WARP_TABLE);
        for (i = 0; i < WORLD[H_WARPS]; i++, warp += WARP_RECORD_SIZE) {
            if (warp[0] == cur_room && warp[1] == cell) {
                warp_index = i;
                wLinkMotionState = MOTION_FADE_OUT;
                motion_timer = 0;
            }
        }
        return;
    } else {
        return;
    }
    hud_dirty = 1;
    set_cell(cell, floor_tile());
}

static void update_link(void) {
    if (wInvincibilityCounter) wInvincibilityCounter--;
    if (knock_timer) {
        knockback();
    } else if (swing_timer) {
        swing_timer--;
    } else if ((pad_new & PAD_B) && wInventoryItems[0] == INVENTORY_SWORD) {
        swing_timer = SWING_FRAMES;
    } else if (pad_new & PAD_A) {
        interact();
    } else {
        walk();
    }
    update_room_position();
    if (!wRoomTransitionState) take_pickups();
}

void world_update(void) {
    unsigned char swap;
    if (wRoomTransitionState) { transition_step(); return; }
    if (wLinkMotionState == MOTION_FADE_OUT || wLinkMotionState == MOTION_FADE_IN) {
        fade_step();
        return;
    }
    if (wLinkMotionState == MOTION_PASS_OUT) { pass_out_step(); return; }
    rng_next();
    if (wDialogState) { dialog_update(); return; }
    if (pad_new & PAD_SELECT) {
        swap = wInventoryItems[0];
        wInventoryItems[0] = wInventoryItems[1];
        wInventoryItems[1] = swap;
        hud_dirty = 1;
    }
    update_link();
    if (wGameplayType == GAMEPLAY_WORLD && !wDialogState) actors_update();
}

void draw_link(void) {
    unsigned char x = hLinkPositionX, y = hLinkPositionY, dir = hLinkDirection;
    unsigned char tile, attr = 0, step = (walk_frames >> 3) & 1;
    if (wInvincibilityCounter & 4) return;
    if (wLinkMotionState == MOTION_PASS_OUT) tile = SPR_LINK_PASSOUT;
    else if (wDialogState && dialog_id == DLG_SWORD) tile = SPR_LINK_HOLD;
    else if (knock_timer) tile = SPR_LINK_HURT;
    else if (dir == DIR_DOWN) tile = step ? SPR_LINK_DOWN2 : SPR_LINK_DOWN;
    else if (dir == DIR_UP) tile = step ? SPR_LINK_UP2 : SPR_LINK_UP;
    else {
        tile = step ? SPR_LINK_RIGHT2 : SPR_LINK_RIGHT;
        if (dir == DIR_LEFT) attr = 0x20;
    }
    put_object(x, y, tile, attr);
    if (!swing_timer || swing_timer > SWING_FRAMES - SWORD_ACTIVE_FROM) return;
    if (dir == DIR_UP) put_object(x, y - 14, SPR_SWORD_V, 0);
    else if (dir == DIR_DOWN) put_object(x, y + 14, SPR_SWORD_V, 0x40);
    else if (dir == DIR_RIGHT) put_object(x + 14, y, SPR_SWORD_H, 0);
    else put_object(x - 14, y, SPR_SWORD_H, 0x20);
}
