/* Shared declarations of the Koholint test cartridge. */
#ifndef GAME_H
#define GAME_H
#include "ladx.h"
#include "gfx.h"
#include "rooms.h"

/* Dialog box and HUD tiles (see tools/gfx.py). Font tiles equal their ASCII code. */
#define T_BLANK 0x00
#define T_BOX_TL 0x01
#define T_BOX_T 0x02
#define T_BOX_TR 0x03
#define T_BOX_L 0x04
#define T_BOX_R 0x05
#define T_BOX_BL 0x06
#define T_BOX_B 0x07
#define T_BOX_BR 0x08
#define T_CURSOR 0x0A
#define T_HEART_FULL 0x10
#define T_HEART_HALF 0x11
#define T_HEART_EMPTY 0x12
#define T_RUPEE 0x13
#define T_KEY 0x14
#define T_SWORD 0x15
#define T_INSTRUMENT 0x16
#define T_NO_ITEM 0x17

#define MAX_HEARTS 8
#define LINK_SPEED 1

/* main.c */
#define SCREEN_NONE 0
#define SCREEN_ROOM 1
#define SCREEN_CREDITS 2
#define SCREEN_FILE_SELECT 3
#define SCREEN_NAME_ENTRY 4
extern unsigned char pad, pad_new;
extern unsigned char hud_dirty;
extern unsigned char screen_request;
void queue_metatile(unsigned char cell);
unsigned char rng_next(void);
void rng_seed(unsigned char a, unsigned char b);
void oam_dma(void);
unsigned char joypad_read(void);

/* The world region (rooms.h: its layout, written by koholint.game.worlds). */
#define WORLD ((const unsigned char *)WORLD_ADDRESS)
#define WORLD_POINTER(offset) ((const unsigned char *)*(const unsigned int *)(WORLD + (offset)))

/* world.c */
extern unsigned char cur_room;
extern const unsigned char *room_data;
extern unsigned char swing_timer;
unsigned char *room_status(void);
void set_room_flag(unsigned char flag);
unsigned char cell_at(unsigned char px, unsigned char py);
unsigned char box_blocked(unsigned char x, unsigned char y);
void set_cell(unsigned char cell, unsigned char metatile);
void enter_room(unsigned char room);
void start_game(void);
void world_update(void);
void draw_link(void);
void hurt_link(unsigned char damage, unsigned char from_x, unsigned char from_y);
unsigned char sword_hits(unsigned char x, unsigned char y);
void on_room_cleared(void);

/* actors.c */
void spawn_entities(void);
unsigned char room_has_enemies(void);
void actors_update(void);
void draw_actors(void);
unsigned char npc_at(unsigned char x, unsigned char y, unsigned char reach);
unsigned char entity_blocks_cell(unsigned char cell);
void move_block_entity(unsigned char cell);

/* dialog.c */
void open_dialog(unsigned char id);
void dialog_update(void);
void dialog_flush(void);
extern unsigned char dialog_id;
void on_dialog_closed(unsigned char id);

/* menus.c */
void open_file_select(void);
void menus_update(void);
void menus_flush(void);
void draw_file_select(void);
void draw_name_entry(void);

/* oam building, main.c */
void put_object(unsigned char x, unsigned char y, unsigned char tile, unsigned char attr);
extern unsigned char oam_index;

#define CELL(tx, ty) ((unsigned char)(((ty) << 4) | (tx)))
#define CELL_X(cell) ((cell) & 0x0F)
#define CELL_Y(cell) ((cell) >> 4)

#endif
