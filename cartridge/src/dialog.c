/* Koholint test cartridge: the dialog box, following LADX's wDialogState values.
 * dialog_update() (logic phase) advances the state and leaves one window job;
 * dialog_flush() (VBlank phase) draws it. */
#include "game.h"

#define BOX_WIDTH 20
#define TEXT_COLUMN 2
#define CHOICE_ROW 3

#define JOB_NONE 0
#define JOB_ROW 1    /* fill window row job_row with job_left, job_middle, job_right */
#define JOB_CHAR 2   /* put job_middle at window offset job_offset */
#define JOB_CHOICE 3 /* draw the YES / NO choice with the cursor */

unsigned char dialog_id;
static unsigned char page, printed;
static unsigned char job, job_row, job_left, job_middle, job_right, job_offset;
static unsigned char window_shown;

static const unsigned char *dialog_record(void) {
    return WORLD_POINTER(H_DIALOG_TABLE) + dialog_id * DIALOG_RECORD_SIZE;
}

static void set_state(unsigned char state) { wDialogState = state ? state | DIALOG_BOX_BOTTOM : 0; }

static void row_job(unsigned char row, unsigned char left, unsigned char middle, unsigned char right) {
    job = JOB_ROW;
    job_row = row;
    job_left = left;
    job_middle = middle;
    job_right = right;
}

void open_dialog(unsigned char id) {
    dialog_id = id;
    page = 0;
    printed = 0;
    wDialogAskSelectionIndex = 0;
    set_state(1);
}

static void open_step(unsigned char state) {
    /* States 1..5 draw one row of the box each; state 1 also shows the window. */
    if (state == 1) {
        row_job(0, T_BOX_TL, T_BOX_T, T_BOX_TR);
        window_shown = 1;
    } else if (state < 5) {
        row_job(state - 1, T_BOX_L, ' ', T_BOX_R);
    } else {
        row_job(4, T_BOX_BL, T_BOX_B, T_BOX_BR);
    }
    set_state(state == 5 ? DIALOG_PRINTING : state + 1);
}

static void print_step(void) {
    const unsigned char *record = dialog_record();
    const char *text = (const char *)*(const unsigned int *)(record + D_TEXT) + (unsigned int)page * DIALOG_PAGE_CHARS;
    unsigned char row = 1 + (printed >= DIALOG_COLUMNS);
    job = JOB_CHAR;
    job_offset = (row << 5) + TEXT_COLUMN + (printed & (DIALOG_COLUMNS - 1));
    job_middle = (unsigned char)text[printed];
    if (++printed < DIALOG_PAGE_CHARS) return;
    if (page + 1 < record[D_PAGES]) {
        set_state(DIALOG_WAIT_A);
    } else if (record[D_CHOICE]) {
        set_state(DIALOG_CHOICE);
    } else {
        set_state(DIALOG_END);
    }
}

static void clear_line_step(unsigned char state) {
    row_job(state - DIALOG_CLEAR_LINE_1 + 1, T_BOX_L, ' ', T_BOX_R);
    if (state == DIALOG_CLEAR_LINE_2) {
        page++;
        printed = 0;
        set_state(DIALOG_PRINTING);
    } else {
        set_state(DIALOG_CLEAR_LINE_2);
    }
}

static void choice_step(void) {
    job = JOB_CHOICE;
    if (pad_new & (PAD_LEFT | PAD_RIGHT | PAD_UP | PAD_DOWN)) wDialogAskSelectionIndex ^= 1;
    else if (pad_new & PAD_A) set_state(DIALOG_CLOSING_1);
}

void dialog_update(void) {
    unsigned char state = wDialogState & 0x7F;
    if (state <= 5) {
        open_step(state);
    } else if (state == DIALOG_PRINTING) {
        print_step();
    } else if (state == DIALOG_CLEAR_LINE_1 || state == DIALOG_CLEAR_LINE_2) {
        clear_line_step(state);
    } else if (state == DIALOG_WAIT_A) {
        if (pad_new & PAD_A) set_state(DIALOG_CLEAR_LINE_1);
    } else if (state == DIALOG_END) {
        if (pad_new & PAD_A) set_state(DIALOG_CLOSING_1);
    } else if (state == DIALOG_CHOICE) {
        choice_step();
    } else if (state == DIALOG_CLOSING_1) {
        row_job(CHOICE_ROW, T_BOX_L, ' ', T_BOX_R);
        set_state(DIALOG_CLOSING_2);
    } else {
        window_shown = 0;
        set_state(0);
        on_dialog_closed(dialog_id);
    }
}

static void draw_choice(void) {
    volatile unsigned char *row = WIN_MAP + (CHOICE_ROW << 5);
    unsigned char no = wDialogAskSelectionIndex;
    row[4] = no ? ' ' : T_CURSOR;
    row[5] = 'Y';
    row[6] = 'E';
    row[7] = 'S';
    row[11] = no ? T_CURSOR : ' ';
    row[12] = 'N';
    row[13] = 'O';
}

void dialog_flush(void) {
    volatile unsigned char *dst;
    unsigned char x;
    if (job == JOB_ROW) {
        dst = WIN_MAP + ((unsigned int)job_row << 5);
        dst[0] = job_left;
        for (x = 1; x < BOX_WIDTH - 1; x++) dst[x] = job_middle;
        dst[BOX_WIDTH - 1] = job_right;
    } else if (job == JOB_CHAR) {
        WIN_MAP[job_offset] = job_middle;
    } else if (job == JOB_CHOICE) {
        draw_choice();
    }
    job = JOB_NONE;
    rLCDC = window_shown ? LCDC_PLAY | LCDC_WINDOW : LCDC_PLAY;
}
