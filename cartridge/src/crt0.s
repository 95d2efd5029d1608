; Start-up code of the Koholint test cartridge: interrupt vectors, the entry
; point at 0x100, RAM clearing, initialised data and the OAM DMA routine.
; SDCC's own sm83 crt0 does not zero globals, so this one does.
	.module crt0
	.globl _main
	.globl l__INITIALIZER, s__INITIALIZER, s__INITIALIZED

	.area _HEADER (ABS)
	.org 0x40               ; VBlank
	jp vblank_handler
	.org 0x48               ; STAT: LY = LYC = 0, a new frame starts
	jp stat_handler

	.org 0x100
	nop
	jp init

	.org 0x150
init:
	di
	ld sp, #0xE000
	ld hl, #0xC000          ; zero all of WRAM
	ld bc, #0x2000
clear_wram$:
	xor a
	ld (hl+), a
	dec bc
	ld a, b
	or c
	jr nz, clear_wram$
	ld hl, #0xFF80          ; zero HRAM
	ld b, #0x7F
clear_hram$:
	ld (hl+), a
	dec b
	jr nz, clear_hram$
	ld de, #s__INITIALIZED
	ld hl, #s__INITIALIZER
	ld bc, #l__INITIALIZER
copy_data$:
	ld a, b
	or c
	jr z, copy_dma$
	ld a, (hl+)
	ld (de), a
	inc de
	dec bc
	jr copy_data$
copy_dma$:
	ld hl, #dma_routine     ; OAM DMA must run from HRAM
	ld de, #0xFF80
	ld b, #(dma_routine_end - dma_routine)
copy_dma_loop$:
	ld a, (hl+)
	ld (de), a
	inc de
	dec b
	jr nz, copy_dma_loop$
	call _main
halt_forever$:
	halt
	jr halt_forever$

vblank_handler:             ; count the frame and flag it for wait_vblank()
	push af
	ldh a, (0xE7)
	inc a
	ldh (0xE7), a
	ld a, #1
	ldh (0x8A), a
	pop af
	reti

stat_handler:               ; flag the frame start for wait_frame_start()
	push af
	ld a, #1
	ldh (0x8B), a
	pop af
	reti

dma_routine:
	ldh (0x46), a
	ld a, #40
dma_wait$:
	dec a
	jr nz, dma_wait$
	ret
dma_routine_end:

	.area _CODE
_oam_dma::                  ; copy the shadow OAM at C000 into OAM
	ld a, #0xC0
	jp 0xFF80

_joypad_read::              ; A = (buttons << 4) | d-pad, 1 = pressed
	ld a, #0x20                 ; select the d-pad
	ldh (0x00), a
	ldh a, (0x00)
	ldh a, (0x00)               ; read twice: the lines settle
	cpl
	and a, #0x0F
	ld b, a
	ld a, #0x10                 ; select A, B, SELECT, START
	ldh (0x00), a
	ldh a, (0x00)
	ldh a, (0x00)
	cpl
	and a, #0x0F
	swap a
	or a, b
	ld e, a
	ld a, #0x30
	ldh (0x00), a
	ld a, e
	ret

	.area _HOME
	.area _CODE
	.area _INITIALIZER
	.area _GSINIT
	.area _GSFINAL
	.area _DATA
	.area _INITIALIZED
	.area _BSEG
	.area _BSS
	.area _HEAP
