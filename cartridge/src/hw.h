/* Game Boy hardware registers and memory regions used by the cartridge. */
#ifndef HW_H
#define HW_H

#define REG8(addr) (*(volatile unsigned char *)(addr))
#define RAM8(addr) (*(unsigned char *)(addr))

#define rP1 REG8(0xFF00)
#define rLCDC REG8(0xFF40)
#define rSCY REG8(0xFF42)
#define rSCX REG8(0xFF43)
#define rSTAT REG8(0xFF41)
#define rLY REG8(0xFF44)
#define rLYC REG8(0xFF45)
#define rBGP REG8(0xFF47)
#define rOBP0 REG8(0xFF48)
#define rOBP1 REG8(0xFF49)
#define rWY REG8(0xFF4A)
#define rWX REG8(0xFF4B)
#define rIE REG8(0xFFFF)

/* Set by the VBlank and STAT (LY = 0) interrupt handlers in crt0.s. */
#define hVBlankDone REG8(0xFF8A)
#define hFrameStart REG8(0xFF8B)

#define VRAM_TILES ((volatile unsigned char *)0x8000)
#define BG_MAP ((volatile unsigned char *)0x9800)
#define WIN_MAP ((volatile unsigned char *)0x9C00)

/* LCD on, window map 9C00, tile data 8000, BG map 9800, 8x16 sprites, sprites on, BG on. */
#define LCDC_PLAY 0xD7
#define LCDC_WINDOW 0x20
#define LCDC_ON 0x80

#define PAD_RIGHT 0x01
#define PAD_LEFT 0x02
#define PAD_UP 0x04
#define PAD_DOWN 0x08
#define PAD_A 0x10
#define PAD_B 0x20
#define PAD_SELECT 0x40
#define PAD_START 0x80

#endif
