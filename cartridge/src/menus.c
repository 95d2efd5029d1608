/* Koholint test cartridge: LA DX's file select and name entry (zladx, code/file_menus.asm).
 *
 * START on the title opens the file select (wGameplayType 02): three slots, the cursor in
 * wSaveSlot, UP/DOWN moves it (wrapping; a fourth position, the ERASE/COPY row, once a file
 * exists, LEFT/RIGHT choosing between them in wIsFileSelectionArrowShifted), A or START
 * chooses. An empty slot opens the name entry (03): a 16x4 grid of letters, the cursor in
 * wNameEntryCurrentChar (LEFT/RIGHT +-1, UP/DOWN +-16, wrapping), A writes the letter at
 * wSaveSlotNameCharIndex and moves it on (at most to the fifth), B moves it back, START keeps
 * the name and returns to the file select. A named slot starts the game. There is no
 * battery-backed save: names last until power-off, a file always starts a new game, and ERASE
 * and COPY are shown but do nothing. */
#include "game.h"

#define SLOTS 3
#define COMMAND_ROW 3
#define GRID_COLUMNS 16
#define GRID_CELLS 64
#define NAME_ROW 4
#define NAME_COLUMN 7
#define GRID_TOP 7
#define GRID_LEFT 2
#define SLOT_TOP 4
#define SLOT_STEP 3
#define COMMAND_SCREEN_ROW 14
#define ERASE_COLUMN 3
#define COPY_COLUMN 11

/* LA DX's NameEntryCharacterTable: what A writes from each grid cell. */
static const char name_grid[GRID_CELLS + 1] =
    "ABCDEFG  abcdefg"
    "HIJKLMN  hijklmn"
    "OPQRSTU  opqrstu"
    "VWXYZ    vwxyz  ";

static unsigned char menu_dirty;
static unsigned char drawn_grid_cursor;

static unsigned char *slot_name(unsigned char slot) { return wSaveSlotNames + slot * NAME_LENGTH; }

static unsigned char slot_named(unsigned char slot) {
    const unsigned char *name = slot_name(slot);
    unsigned char i;
    for (i = 0; i < NAME_LENGTH; i++) {
        if (name[i]) return 1;
    }
    return 0;
}

static unsigned char glyph(unsigned char letter) {
    /* The font has capitals only: lower-case letters show as capitals. */
    if (!letter) return '-';
    return letter >= 'a' && letter <= 'z' ? letter - ('a' - 'A') : letter;
}

void open_file_select(void) {
    wGameplayType = GAMEPLAY_FILE_SELECT;
    wGameplaySubtype = 0;
    screen_request = SCREEN_FILE_SELECT;
}

static void open_name_entry(void) {
    wGameplayType = GAMEPLAY_FILE_NEW;
    wGameplaySubtype = 0;
    wNameEntryCurrentChar = 0;
    wSaveSlotNameCharIndex = 0;
    drawn_grid_cursor = 0;
    screen_request = SCREEN_NAME_ENTRY;
}

static void move_slot_cursor(void) {
    /* UP/DOWN wrap over the three slots, and the command row once a file exists. */
    unsigned char last = wSaveFilesCount ? COMMAND_ROW : SLOTS - 1;
    if (pad_new & PAD_DOWN) wSaveSlot = wSaveSlot >= last ? 0 : wSaveSlot + 1;
    else if (pad_new & PAD_UP) wSaveSlot = wSaveSlot == 0 ? last : wSaveSlot - 1;
    else if ((pad_new & (PAD_LEFT | PAD_RIGHT)) && wSaveSlot == COMMAND_ROW)
        wIsFileSelectionArrowShifted ^= 1;
    else return;
    menu_dirty = 1;
}

static void file_select_update(void) {
    if (wGameplaySubtype != GAMEPLAY_FILE_SELECT_INTERACTIVE) {
        wGameplaySubtype = GAMEPLAY_FILE_SELECT_INTERACTIVE;
        return;
    }
    if (pad_new & (PAD_A | PAD_START)) {
        if (wSaveSlot == COMMAND_ROW) return;
        if (slot_named(wSaveSlot)) start_game();
        else open_name_entry();
        return;
    }
    move_slot_cursor();
}

static void move_grid_cursor(void) {
    unsigned char cursor = wNameEntryCurrentChar;
    if (pad_new & PAD_RIGHT) cursor = (cursor + 1) & (GRID_CELLS - 1);
    else if (pad_new & PAD_LEFT) cursor = (cursor - 1) & (GRID_CELLS - 1);
    else if (pad_new & PAD_DOWN) cursor = (cursor + GRID_COLUMNS) & (GRID_CELLS - 1);
    else if (pad_new & PAD_UP) cursor = (cursor - GRID_COLUMNS) & (GRID_CELLS - 1);
    else return;
    wNameEntryCurrentChar = cursor;
    menu_dirty = 1;
}

static void name_entry_update(void) {
    unsigned char index = wSaveSlotNameCharIndex;
    if (wGameplaySubtype != GAMEPLAY_FILE_NEW_INTERACTIVE) {
        wGameplaySubtype = GAMEPLAY_FILE_NEW_INTERACTIVE;
        return;
    }
    if (pad_new & PAD_START) {
        if (slot_named(wSaveSlot)) wSaveFilesCount |= 1 << wSaveSlot;
        open_file_select();
        return;
    }
    if (pad_new & PAD_A) {
        slot_name(wSaveSlot)[index] = (unsigned char)name_grid[wNameEntryCurrentChar];
        if (index < NAME_LENGTH - 1) wSaveSlotNameCharIndex = index + 1;
        menu_dirty = 1;
    } else if (pad_new & PAD_B) {
        if (index) wSaveSlotNameCharIndex = index - 1;
        menu_dirty = 1;
    } else {
        move_grid_cursor();
    }
}

void menus_update(void) {
    if (wGameplayType == GAMEPLAY_FILE_SELECT) file_select_update();
    else name_entry_update();
}

static void put_text(unsigned char x, unsigned char y, const char *text) {
    volatile unsigned char *dst = BG_MAP + ((unsigned int)y << 5) + x;
    while (*text) *dst++ = (unsigned char)*text++;
}

static void put_name(volatile unsigned char *dst, unsigned char slot) {
    const unsigned char *name = slot_name(slot);
    unsigned char i;
    for (i = 0; i < NAME_LENGTH; i++) dst[i] = glyph(name[i]);
}

static void draw_file_select_cursors(void) {
    unsigned char slot, on_command = wSaveSlot == COMMAND_ROW;
    volatile unsigned char *row = BG_MAP + (COMMAND_SCREEN_ROW << 5);
    for (slot = 0; slot < SLOTS; slot++) {
        BG_MAP[((unsigned int)(SLOT_TOP + slot * SLOT_STEP) << 5) + 2] = slot == wSaveSlot ? T_CURSOR : ' ';
    }
    if (!wSaveFilesCount) return;
    row[ERASE_COLUMN] = on_command && !wIsFileSelectionArrowShifted ? T_CURSOR : ' ';
    row[COPY_COLUMN] = on_command && wIsFileSelectionArrowShifted ? T_CURSOR : ' ';
}

static void draw_name_entry_cursors(void) {
    volatile unsigned char *marks = BG_MAP + ((NAME_ROW + 1) << 5) + NAME_COLUMN;
    unsigned char i, cursor = wNameEntryCurrentChar;
    put_name(BG_MAP + (NAME_ROW << 5) + NAME_COLUMN, wSaveSlot);
    for (i = 0; i < NAME_LENGTH; i++) marks[i] = i == wSaveSlotNameCharIndex ? '^' : ' ';
    i = drawn_grid_cursor;
    BG_MAP[((unsigned int)(GRID_TOP + 1 + ((i >> 4) << 1)) << 5) + GRID_LEFT + (i & 15)] = ' ';
    BG_MAP[((unsigned int)(GRID_TOP + 1 + ((cursor >> 4) << 1)) << 5) + GRID_LEFT + (cursor & 15)] = '^';
    drawn_grid_cursor = cursor;
}

void menus_flush(void) {
    /* VBlank: redraw the few tiles a button press changed. */
    if (!menu_dirty) return;
    if (wGameplayType == GAMEPLAY_FILE_SELECT) draw_file_select_cursors();
    else if (wGameplayType == GAMEPLAY_FILE_NEW) draw_name_entry_cursors();
    menu_dirty = 0;
}

void draw_file_select(void) {
    unsigned char slot;
    put_text(4, 1, "SELECT A FILE");
    for (slot = 0; slot < SLOTS; slot++) {
        unsigned char y = SLOT_TOP + slot * SLOT_STEP;
        BG_MAP[((unsigned int)y << 5) + 4] = '1' + slot;
        put_name(BG_MAP + ((unsigned int)y << 5) + 6, slot);
    }
    if (wSaveFilesCount) {
        put_text(ERASE_COLUMN + 1, COMMAND_SCREEN_ROW, "ERASE");
        put_text(COPY_COLUMN + 1, COMMAND_SCREEN_ROW, "COPY");
    }
    put_text(2, 16, "A/START: CHOOSE");
    draw_file_select_cursors();
}

void draw_name_entry(void) {
    unsigned char row;
    put_text(3, 1, "FILE");
    BG_MAP[(1 << 5) + 8] = '1' + wSaveSlot;
    put_text(10, 1, "NAME?");
    for (row = 0; row < 4; row++) {
        volatile unsigned char *dst = BG_MAP + ((unsigned int)(GRID_TOP + (row << 1)) << 5) + GRID_LEFT;
        const char *letters = name_grid + (row << 4);
        unsigned char column;
        for (column = 0; column < GRID_COLUMNS; column++) dst[column] = glyph((unsigned char)letters[column]);
    }
    put_text(1, 16, "A:PUT B:BACK");
    put_text(1, 17, "START:DONE");
    draw_name_entry_cursors();
}
