/* Game state at the RAM addresses Link's Awakening DX uses (zladx disassembly,
 * src/constants/memory), so every RAM tap written for the real game reads this
 * cartridge unchanged. Python mirrors this list in koholint/ram.py. */
#ifndef LADX_H
#define LADX_H
#include "hw.h"

#define hLinkPositionX RAM8(0xFF98)   /* Link's centre, room pixels 0..159 */
#define hLinkPositionY RAM8(0xFF99)   /* Link's centre, room pixels 0..127 */
#define hLinkDirection RAM8(0xFF9E)   /* 0 right, 1 left, 2 up, 3 down */
#define hFrameCounter RAM8(0xFFE7)    /* incremented by the VBlank handler */
#define hMapRoom RAM8(0xFFF6)
#define hMapId RAM8(0xFFF7)
#define hRoomStatus RAM8(0xFFF8)      /* copy of the current room's status byte */
#define hLinkRoomPosition RAM8(0xFFFA) /* (tile y << 4) | tile x of Link's centre */

#define wOAMBuffer ((unsigned char *)0xC000)
#define wIsFileSelectionArrowShifted RAM8(0xD000) /* file select: 0 ERASE, 1 COPY */
#define wLinkMotionState RAM8(0xC11C)
#define wRoomTransitionState RAM8(0xC124)
#define wDialogAskSelectionIndex RAM8(0xC177)
#define wDialogState RAM8(0xC19F)

/* 16-slot entity tables. */
#define wEntitiesPosXTable ((unsigned char *)0xC200)
#define wEntitiesPosYTable ((unsigned char *)0xC210)
#define wEntitiesSpeedXTable ((unsigned char *)0xC240)
#define wEntitiesSpeedYTable ((unsigned char *)0xC250)
#define wEntitiesStatusTable ((unsigned char *)0xC280)
#define wEntitiesStateTable ((unsigned char *)0xC290)
#define wEntitiesHealthTable ((unsigned char *)0xC360)
#define wEntitiesDirectionTable ((unsigned char *)0xC380)
#define wEntitiesTypeTable ((unsigned char *)0xC3A0)
#define wEntitiesSpriteVariantTable ((unsigned char *)0xC3B0)
#define ENTITY_SLOTS 16

/* The room's 10x8 metatiles, rows 16 bytes apart, as in LADX's wRoomObjects. */
#define wRoomObjects ((unsigned char *)0xD711)
#define wOverworldRoomStatus ((unsigned char *)0xD800)
#define wIndoorARoomStatus ((unsigned char *)0xD900)

#define wInventoryItems ((unsigned char *)0xDB00) /* DB00 B slot, DB01 A slot */
#define wSwordLevel RAM8(0xDB4E)
#define wDeathCount RAM8(0xDB57)
#define wHealth RAM8(0xDB5A)
#define wMaxHearts RAM8(0xDB5B)
#define wRupeeCountHigh RAM8(0xDB5D)
#define wRupeeCountLow RAM8(0xDB5E)
#define wHasInstrument1 RAM8(0xDB65)
#define wSaveSlotNames ((unsigned char *)0xDB80) /* 3 x 5 letters, 0 = none */
#define wGameplayType RAM8(0xDB95)
#define wGameplaySubtype RAM8(0xDB96)
#define wIsIndoor RAM8(0xDBA5)
#define wSaveSlot RAM8(0xDBA6)              /* file select cursor: 0-2 slots, 3 ERASE/COPY */
#define wSaveFilesCount RAM8(0xDBA7)        /* bit n: slot n holds a file */
#define wNameEntryCurrentChar RAM8(0xDBA9)  /* name entry grid cursor, 0..63 */
#define wSaveSlotNameCharIndex RAM8(0xDBAA) /* where the next letter goes, 0..4 */
#define wKillCount RAM8(0xDBB5)
#define wInvincibilityCounter RAM8(0xDBC7)
#define wDungeonSmallKeys RAM8(0xDBD0)

/* Cartridge-only: the caller writes a seed here; every room entry reads it. */
#define wKoholintSeed RAM8(0xC0F0)

#define GAMEPLAY_TITLE 0x00
#define GAMEPLAY_CREDITS 0x01
#define GAMEPLAY_FILE_SELECT 0x02
#define GAMEPLAY_FILE_NEW 0x03
#define GAMEPLAY_FILE_SELECT_INTERACTIVE 0x07
#define GAMEPLAY_FILE_NEW_INTERACTIVE 0x02
#define NAME_LENGTH 5
#define GAMEPLAY_WORLD 0x0B
#define GAMEPLAY_WORLD_INTERACTIVE 0x07

#define MOTION_NORMAL 0
#define MOTION_FADE_OUT 3
#define MOTION_FADE_IN 4
#define MOTION_PASS_OUT 7

#define DIALOG_BOX_BOTTOM 0x80
#define DIALOG_PRINTING 6
#define DIALOG_CLEAR_LINE_1 7
#define DIALOG_CLEAR_LINE_2 8
#define DIALOG_WAIT_A 9
#define DIALOG_END 0x0C
#define DIALOG_CHOICE 0x0D
#define DIALOG_CLOSING_1 0x0E
#define DIALOG_CLOSING_2 0x0F

/* Room status bits (wOverworldRoomStatus / wIndoorARoomStatus). */
#define ROOM_RUPEE_TAKEN 0x01
#define ROOM_HEART_TAKEN 0x02
#define ROOM_DOOR_OPEN 0x04
#define ROOM_KEY_TAKEN 0x08
#define ROOM_CHEST_OPEN 0x10
#define ROOM_PUZZLE_SOLVED 0x20
#define ROOM_CLEARED 0x40
#define ROOM_VISITED 0x80

#define ENTITY_OFF 0
#define ENTITY_DYING 1
#define ENTITY_ACTIVE 5

#define INVENTORY_SWORD 0x01
#define HAS_INSTRUMENT 0x02

#define DIR_RIGHT 0
#define DIR_LEFT 1
#define DIR_UP 2
#define DIR_DOWN 3

#endif
