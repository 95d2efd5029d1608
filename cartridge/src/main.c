/* Koholint test cartridge: main loop, video, input, HUD, title and credits (menus.c: the
 * file select and name entry between them).
 *
 * Each frame has two phases. At VBlank (LY 144) the loop writes VRAM: OAM DMA,
 * queued tiles, the HUD, dialog-box jobs and whole-screen redraws. At the start
 * of the next frame (LY 0, the LY=LYC interrupt) it runs the game logic, which
 * touches only RAM. An emulator that stops between frames (PyBoy stops at LY 0)
 * therefore always sees the state of a whole frame, never half of one. */
#include "game.h"

unsigned char pad, pad_new;
unsigned char hud_dirty;
unsigned char oam_index;
unsigned char screen_request;

static unsigned int rng_state = 0xACE1;
static unsigned char pending_cells[16];
static unsigned char pending_count;

unsigned char rng_next(void) {
    /* xorshift16 (7, 9, 8): full period over the non-zero states. */
    rng_state ^= rng_state << 7;
    rng_state ^= rng_state >> 9;
    rng_state ^= rng_state << 8;
    return (unsigned char)rng_state;
}

void rng_seed(unsigned char a, unsigned char b) {
    rng_state = ((unsigned int)a << 8) ^ b ^ 0xACE1;
    if (rng_state == 0) rng_state = 0xACE1;
}

static void wait_vblank(void) {
    hVBlankDone = 0;
    while (!hVBlankDone) {
        __asm__("halt");
    }
}

static void wait_frame_start(void) {
    hFrameStart = 0;
    while (!hFrameStart) {
        __asm__("halt");
    }
}

static void lcd_off(void) {
    /* Turning the LCD off outside VBlank harms real hardware. */
    if (!(rLCDC & LCDC_ON)) return;
    while (rLY < 144) {}
    rLCDC = 0;
}

static void read_pad(void) {
    /* In assembly (crt0.s): SDCC 4.2 miscompiles two back-to-back volatile reads of P1. */
    unsigned char previous = pad;
    pad = joypad_read();
    pad_new = pad & (unsigned char)~previous;
}

static void draw_metatile(unsigned char cell) {
    const unsigned char *tiles = metatile_tiles[wRoomObjects[cell]];
    volatile unsigned char *dst = BG_MAP + ((unsigned int)CELL_Y(cell) << 6) + (CELL_X(cell) << 1);
    dst[0] = tiles[0];
    dst[1] = tiles[1];
    dst[32] = tiles[2];
    dst[33] = tiles[3];
}

void queue_metatile(unsigned char cell) {
    if (pending_count < sizeof(pending_cells)) pending_cells[pending_count++] = cell;
}

static void clear_bg(void) {
    volatile unsigned char *dst = BG_MAP;
    unsigned int i;
    for (i = 0; i < 1024; i++) dst[i] = ' ';
}

static void draw_room(void) {
    unsigned char tx, ty;
    clear_bg();
    for (ty = 0; ty < 8; ty++) {
        for (tx = 0; tx < 10; tx++) draw_metatile(CELL(tx, ty));
    }
    pending_count = 0;
    hud_dirty = 1;
}

static void draw_text(unsigned char x, unsigned char y, const char *text) {
    volatile unsigned char *dst = BG_MAP + ((unsigned int)y << 5) + x;
    while (*text) *dst++ = (unsigned char)*text++;
}

static void put_digits(volatile unsigned char *dst, unsigned char bcd_high, unsigned char bcd_low) {
    dst[0] = '0' + (bcd_high & 0x0F);
    dst[1] = '0' + (bcd_low >> 4);
    dst[2] = '0' + (bcd_low & 0x0F);
}

static unsigned char item_tile(unsigned char item) {
    return item == INVENTORY_SWORD ? T_SWORD : T_NO_ITEM;
}

static void draw_hud(void) {
    volatile unsigned char *row = BG_MAP + (16 << 5);
    unsigned char heart, health = wHealth;
    row[0] = 'B';
    row[1] = item_tile(wInventoryItems[0]);
    row[2] = 'A';
    row[3] = item_tile(wInventoryItems[1]);
    for (heart = 0; heart < MAX_HEARTS; heart++) {
        unsigned char tile = T_BLANK;
        if (heart < wMaxHearts) {
            tile = health >= 8 ? T_HEART_FULL : (health >= 4 ? T_HEART_HALF : T_HEART_EMPTY);
            health = health >= 8 ? health - 8 : 0;
        }
        row[5 + heart] = tile;
    }
    row += 32;
    row[0] = T_RUPEE;
    put_digits(row + 1, wRupeeCountHigh, wRupeeCountLow);
    row[5] = T_KEY;
    row[6] = '0' + (wDungeonSmallKeys & 0x0F);
    row[8] = (wHasInstrument1 & HAS_INSTRUMENT) ? T_INSTRUMENT : T_BLANK;
    hud_dirty = 0;
}

static void draw_title(void) {
    clear_bg();
    draw_text(6, 3, "KOHOLINT");
    draw_text(1, 6, "OPEN TEST CARTRIDGE");
    draw_text(1, 8, "A LINK'S AWAKENING");
    draw_text(5, 9, "LOOK-ALIKE");
    draw_text(4, 13, "PRESS START");
}

static void draw_credits(void) {
    draw_text(4, 3, "YOU GOT THE");
    draw_text(1, 5, "SIREN INSTRUMENT!");
    draw_text(6, 9, "THE END");
    draw_text(1, 13, "THANKS FOR PLAYING");
}

static unsigned char redraw_screen(void) {
    /* Whole-screen redraws happen with the LCD off, inside VBlank. */
    if (screen_request == SCREEN_NONE) return 0;
    lcd_off();
    if (screen_request == SCREEN_ROOM) {
        draw_room();
    } else {
        clear_bg();
        if (screen_request == SCREEN_FILE_SELECT) draw_file_select();
        else if (screen_request == SCREEN_NAME_ENTRY) draw_name_entry();
        else draw_credits();
    }
    screen_request = SCREEN_NONE;
    rBGP = wLinkMotionState == MOTION_FADE_IN ? 0x00 : 0xE4;
    rLCDC = LCDC_PLAY;
    return 1;
}

static unsigned char write_vram(void) {
    unsigned char i;
    oam_dma();
    if (redraw_screen()) return 1;
    for (i = 0; i < pending_count; i++) draw_metatile(pending_cells[i]);
    pending_count = 0;
    dialog_flush();
    if (hud_dirty && wGameplayType == GAMEPLAY_WORLD) draw_hud();
    return 0;
}

void put_object(unsigned char x, unsigned char y, unsigned char tile, unsigned char attr) {
    /* A 16x16 object centred on room pixel (x, y), as two 8x16 sprites. */
    unsigned char *oam = wOAMBuffer + (oam_index << 2);
    unsigned char left = attr & 0x20 ? tile + 2 : tile;
    if (oam_index > 38) return;
    oam[0] = y + 8;
    oam[1] = x;
    oam[2] = left;
    oam[3] = attr;
    oam[4] = y + 8;
    oam[5] = x + 8;
    oam[6] = left ^ 2;
    oam[7] = attr;
    oam_index += 2;
}

static void oam_clear_from(unsigned char index) {
    unsigned char *oam = wOAMBuffer + (index << 2);
    for (; index < 40; index++, oam += 4) oam[0] = 0;
}

static void build_oam(void) {
    oam_index = 0;
    if (wGameplayType == GAMEPLAY_WORLD) {
        draw_link();
        draw_actors();
    }
    oam_clear_from(oam_index);
}

static void load_tiles(void) {
    unsigned int i;
    for (i = 0; i < sizeof(gfx_tiles); i++) VRAM_TILES[i] = gfx_tiles[i];
}

static void init_video(void) {
    load_tiles();
    draw_title();
    oam_clear_from(0);
    rSCX = 0;
    rSCY = 0;
    rBGP = 0xE4;
    rOBP0 = 0xE4;
    rOBP1 = 0x90;
    rWX = 7;
    rWY = 104;
    rLYC = 0;
    rSTAT = 0x40;
    rLCDC = LCDC_PLAY;
}

static void update(void) {
    if (wGameplayType == GAMEPLAY_TITLE) {
        if (pad_new & PAD_START) open_file_select();
    } else if (wGameplayType == GAMEPLAY_FILE_SELECT || wGameplayType == GAMEPLAY_FILE_NEW) {
        menus_update();
    } else if (wGameplayType == GAMEPLAY_WORLD) {
        world_update();
        if (wGameplayType == GAMEPLAY_CREDITS) screen_request = SCREEN_CREDITS;
    }
}

static void opening_loop(void) {
    /* The title, file select and name entry: the world's loop plus the menus' VBlank work,
     * kept apart so the world's frames keep their timing to the cycle. */
    while (wGameplayType != GAMEPLAY_WORLD) {
        wait_vblank();
        if (write_vram()) continue;
        menus_flush();
        wait_frame_start();
        read_pad();
        update();
        build_oam();
    }
}

void main(void) {
    lcd_off();
    init_video();
    wGameplayType = GAMEPLAY_TITLE;
    rIE = 0x03;
    __asm__("ei");
    opening_loop();
    while (1) {
        wait_vblank();
        if (write_vram()) continue;  /* after a redraw the LCD restarts mid-frame */
        wait_frame_start();
        read_pad();
        update();
        build_oam();
    }
}
