/* int64_text: an int64 in decimal, written at a pointer with room for INT64_TEXT_MAX characters
 * (no bound check a digit), from tables of digits filled when the module loads (digit_quads);
 * int64_text_topped keeps a column's top digits for the values that share them. Used by
 * object_rows.h (a commit's numbers) and timeline_arrays.h. Included by jsontext.c first of
 * those.
 */

/* The most characters int64_text writes: a sign and 19 digits. */
#define INT64_TEXT_MAX 20

/* The four digits of each number below 10000, one after another (n's at 4 * n), filled when
   the module loads (digit_quads). */
static char DIGIT_QUADS[4 * 10000];

/* The values whose text SMALL_TEXT holds: -SMALL_MAX to SMALL_MAX. */
#define SMALL_MAX 9999

/* The text of each v in [-SMALL_MAX, SMALL_MAX] at v + SMALL_MAX: its characters (sign and
   up to four digits) from the first byte, its length in the last. A small value (a leader
   epoch, -1 at random among small ones; most offsets and lags) is one 8-byte copy and its
   length, its sign without a branch (the branch on a leader epoch's sign mispredicted a third
   of the rows); a block's first digits (quad_text) the same. Filled with DIGIT_QUADS. */
static char SMALL_TEXT[2 * SMALL_MAX + 1][8];

static void small_texts(void) {
    for (int v = -SMALL_MAX; v <= SMALL_MAX; v++) {
        char *text = SMALL_TEXT[v + SMALL_MAX];
        int len = 0;
        if (v < 0) text[len++] = '-';
        const int u = v < 0 ? -v : v;
        for (int div = 1000; div > 1; div /= 10)
            if (u >= div) text[len++] = (char)('0' + u / div % 10);
        text[len++] = (char)('0' + u % 10);
        text[7] = (char)len;
    }
}

static void digit_quads(void) {
    small_texts();
    for (int n = 0; n < 10000; n++) {
        DIGIT_QUADS[4 * n] = (char)('0' + n / 1000);
        DIGIT_QUADS[4 * n + 1] = (char)('0' + n / 100 % 10);
        DIGIT_QUADS[4 * n + 2] = (char)('0' + n / 10 % 10);
        DIGIT_QUADS[4 * n + 3] = (char)('0' + n % 10);
    }
}

/* u (below 10000) in decimal at o, no leading zero; returns the end. Its text and length
   from SMALL_TEXT: one 8-byte copy (the bytes past the end left for the next write), where
   a width table, then the last `width` digits of its quad, took two loads in a row. */
static HOT_INLINE char *quad_text(char *o, unsigned u) {
    memcpy(o, SMALL_TEXT[SMALL_MAX + u], 8);
    return o + SMALL_TEXT[SMALL_MAX + u][7];
}

/* u (below 10000) as four digits at o, leading zeros kept. */
static HOT_INLINE char *quad_digits(char *o, unsigned u) {
    memcpy(o, DIGIT_QUADS + 4 * u, 4);
    return o + 4;
}

/* u (below 10^8) in decimal at o, no leading zero. */
static HOT_INLINE char *octet_text(char *o, unsigned u) {
    if (u < 10000) return quad_text(o, u);
    const unsigned hi = u / 10000;
    return quad_digits(quad_text(o, hi), u - hi * 10000);
}

/* u (below 10^8) as eight digits at o, leading zeros kept. */
static HOT_INLINE char *octet_digits(char *o, unsigned u) {
    const unsigned hi = u / 10000;
    return quad_digits(quad_digits(o, hi), u - hi * 10000);
}

/* v in decimal at o (room for INT64_TEXT_MAX characters there); returns the end. Blocks of
   up to eight digits from the left, each of one or two quads from the table: what the number's
   size costs (a small offset or lag one quad, a millisecond timestamp's 13 digits four), no
   division chain over all its digits. At most INT64_TEXT_MAX bytes are written: the first
   block's text is copied as 8 bytes (at most 9 with the sign; the digits after it overwrite
   what is past its end), and a 19-digit number's first block has 3 digits (below 2^63 + 1):
   its last digit ends 20 bytes in with the sign. */
static HOT_INLINE char *int64_text(char *o, long long v) {
    unsigned long long u = (unsigned long long)v;
    if (v < 0) {
        *o++ = '-';
        u = 0ULL - u;
    }
    const unsigned long long e8 = 100000000ULL;
    if (u < e8) return octet_text(o, (unsigned)u);
    if (u < e8 * e8) {
        const unsigned long long hi = u / e8;
        return octet_digits(octet_text(o, (unsigned)hi), (unsigned)(u - hi * e8));
    }
    const unsigned long long top = u / (e8 * e8), rest = u - top * (e8 * e8), mid = rest / e8;
    o = octet_digits(quad_text(o, (unsigned)top), (unsigned)mid);
    return octet_digits(o, (unsigned)(rest - mid * e8));
}

/* A column's digits above its last eight, as last written: the text of hi = v / 10^8 (up to
   11 digits) of a positive v, kept while the values' hi repeats (a millisecond timestamp's
   first five digits change once in 10^8 ms: its column's rows, in time order, share them).
   base is hi * 10^8 and span 10^8 while one is kept, span 0 before (v's top digits are the
   kept ones where v - base < span: one test, none kept or kept); a hi is kept only where
   base + 10^8 <= 2^63, so no negative value (past 2^63 as unsigned) is within 10^8 above
   base. */
typedef struct {
    unsigned long long base, span;
    Py_ssize_t len;
    char text[32];
} TopDigits;

/* The highest positive value whose top digits are kept: its block's base + 10^8 <= 2^63. */
#define TOP_KEPT_MAX (9223372036800000000ULL - 1)

/* u (10^4 <= u < 10^8) in decimal at o: its first digits (quad_text) and the last four. */
static HOT_INLINE char *mid_text(char *o, unsigned u) {
    const unsigned hi = u / 10000;
    return quad_digits(quad_text(o, hi), u - hi * 10000);
}

/* int64_text_topped's value v that is not small, below 10^8 or of the kept top digits: a
   negative one written whole, a positive one's top digits kept (where they can be) and then
   copied. Out of line: once a column's run of top digits, and for values past 10^8 below 0. */
static COLD char *int64_text_new_top(char *o, long long v, TopDigits *top) {
    const unsigned long long u = (unsigned long long)v, e8 = 100000000ULL;
    if (v < 0 || u > TOP_KEPT_MAX) return int64_text(o, v);
    const unsigned long long hi = u / e8;
    top->base = hi * e8;
    top->span = e8;
    top->len = int64_text(top->text, (long long)hi) - top->text;
    memcpy(o, top->text, 16);
    return octet_digits(o + top->len, (unsigned)(u - top->base));
}

/* v in decimal at o as int64_text writes it, the digits above the last eight copied from
   *top when its hi is v's (else int64_text_new_top); room as int64_text's (the copy of the top
   digits writes 16 bytes, within INT64_TEXT_MAX). Asked in the order the values come: a small
   one (SMALL_TEXT, no branch on its sign), one of 5 to 8 digits (v as unsigned below 10^8: no
   sign asked), one of the kept top digits (v - base below 10^8: one subtraction, which then
   leaves the last eight digits). */
static HOT_INLINE char *int64_text_topped(char *o, long long v, TopDigits *top) {
    const unsigned long long at = (unsigned long long)v + SMALL_MAX;
    if (at <= 2 * SMALL_MAX) {
        memcpy(o, SMALL_TEXT[at], 8);
        return o + SMALL_TEXT[at][7];
    }
    const unsigned long long u = (unsigned long long)v, e8 = 100000000ULL;
    if (u < e8) return mid_text(o, (unsigned)u);
    if (UNLIKELY(u - top->base >= top->span)) return int64_text_new_top(o, v, top);
    memcpy(o, top->text, 16);
    return octet_digits(o + top->len, (unsigned)(u - top->base));
}

/* int64_text_topped out of line, for int64_time_text's values without the kept top digits. */
static NOINLINE char *int64_text_topped_out(char *o, long long v, TopDigits *top) {
    return int64_text_topped(o, v, top);
}

/* v as int64_text_topped writes it, for a column of millisecond times (13 digits, each run of
   them in time order): whether v has the kept top digits asked first, the rest out of line
   (the first of each run of top digits), where a time took the tests for a small value and
   one below 10^8 first. */
static HOT_INLINE char *int64_time_text(char *o, long long v, TopDigits *top) {
    const unsigned long long u = (unsigned long long)v;
    if (UNLIKELY(u - top->base >= top->span)) return int64_text_topped_out(o, v, top);
    memcpy(o, top->text, 16);
    return octet_digits(o + top->len, (unsigned)(u - top->base));
}
