/* row_flags: each row's flags for CommitEffects.add_records and add_checked (ROW_CONTROL, ...,
 * commit_kinds.h) read from the flag columns' Arrow bitmaps, eight rows a step, in place of
 * some ten numpy temporaries a chunk (codegen.dumps.views.effects._row_flags: the reference
 * the tests hold this to).
 */

/* The bytes 0 or 1 of an 8-bit value's bits, low bit first (a uint64 a value). */
static uint64_t row_flag_spread[256];

static void row_flag_spread_init(void) {
    if (row_flag_spread[255]) return;
    for (int b = 0; b < 256; b++) {
        uint64_t s = 0;
        for (int j = 0; j < 8; j++) s |= (uint64_t)((b >> j) & 1) << (8 * j);
        row_flag_spread[b] = s;
    }
}

/* One flag's bits: every row's (constant 0x00 or 0xFF), or the and of up to two bitmaps. */
typedef struct {
    uint8_t constant;
    int count;
    Py_buffer bitmap[2];
    Py_ssize_t bit_offset[2];
} RowFlagBits;

/* Bits bit..bit + 7 of a bitmap of len bytes, those past its end 0. */
static inline uint8_t row_flag_bits8(const uint8_t *b, Py_ssize_t len, Py_ssize_t bit) {
    Py_ssize_t q = bit >> 3;
    int s = (int)(bit & 7);
    unsigned lo = q < len ? b[q] : 0, hi = s && q + 1 < len ? b[q + 1] : 0;
    return (uint8_t)(lo >> s | hi << (8 - s));
}

static inline uint8_t row_flag_byte(const RowFlagBits *f, Py_ssize_t bit) {
    uint8_t out = f->constant;
    for (int k = 0; k < f->count; k++)
        out &= row_flag_bits8(f->bitmap[k].buf, f->bitmap[k].len, f->bit_offset[k] + bit);
    return out;
}

/* Bits bit..bit + 63 of one flag, its bitmaps holding bytes to bit + 71 (no bound checked;
   little-endian, as the engine's other readers of Arrow buffers). */
static inline uint64_t row_flag_word(const RowFlagBits *f, Py_ssize_t bit) {
    uint64_t out = f->constant ? ~(uint64_t)0 : 0;
    for (int k = 0; k < f->count; k++) {
        const uint8_t *b = f->bitmap[k].buf;
        Py_ssize_t at = f->bit_offset[k] + bit;
        int s = (int)(at & 7);
        uint64_t w;
        memcpy(&w, b + (at >> 3), sizeof w);
        w >>= s;
        if (s) w |= (uint64_t)b[(at >> 3) + 8] << (64 - s);
        out &= w;
    }
    return out;
}

_Static_assert(ROW_CONTROL == 1 && ROW_TRANSACTIONAL == 2 && ROW_TOMBSTONE == 4 &&
                   ROW_DECODED == 8,
               "row_flag_eight shifts each flag's bytes 0 or 1 to its bit");

/* Eight rows' flags from their bits (bytes 0 or 1 shifted to each flag's place: no carry). */
static inline uint64_t row_flag_eight(uint8_t control, uint8_t transactional, uint8_t tombstone,
                                      uint8_t decoded) {
    return row_flag_spread[control] | row_flag_spread[transactional] << 1 |
           row_flag_spread[tombstone] << 2 | row_flag_spread[decoded] << 3;
}

static void row_flag_bits_release(RowFlagBits *f) {
    for (int k = 0; k < f->count; k++) PyBuffer_Release(&f->bitmap[k]);
    f->count = 0;
}

/* An argument of row_flags: 0 or 1 (every row's bit), or (bitmap, bit_offset[, bitmap,
   bit_offset]) whose bits, n of them, are and-ed. 0, or -1 with an exception set. */
static int row_flag_bits_parse(PyObject *arg, Py_ssize_t n, RowFlagBits *f) {
    f->count = 0;
    f->constant = 0xFF;
    if (PyLong_Check(arg)) {
        long v = PyLong_AsLong(arg);
        if (v == -1 && PyErr_Occurred()) return -1;
        f->constant = v ? 0xFF : 0;
        return 0;
    }
    if (!PyTuple_Check(arg) || (PyTuple_GET_SIZE(arg) != 2 && PyTuple_GET_SIZE(arg) != 4)) {
        PyErr_SetString(PyExc_TypeError,
                        "row_flags: a flag is 0, 1 or (bitmap, bit_offset[, bitmap, bit_offset])");
        return -1;
    }
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(arg) / 2; k++) {
        Py_ssize_t off = PyLong_AsSsize_t(PyTuple_GET_ITEM(arg, 2 * k + 1));
        if (off == -1 && PyErr_Occurred()) return -1;
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(arg, 2 * k), &f->bitmap[k], PyBUF_SIMPLE) < 0)
            return -1;
        f->count = (int)k + 1;
        f->bit_offset[k] = off;
        if (off < 0 || off > PY_SSIZE_T_MAX - n - 7 || (off + n + 7) / 8 > f->bitmap[k].len) {
            PyErr_SetString(PyExc_ValueError, "row_flags: a bitmap is too short");
            return -1;
        }
    }
    return 0;
}

#define ROW_FLAG_ARGS 5

/* row_flags(n, control, transactional, tombstone, error, decode_error) -> bytes: each of the
   n rows' flags (uint8): ROW_CONTROL, ROW_TRANSACTIONAL, ROW_TOMBSTONE where those bits are
   set, ROW_DECODED where neither error bit is. */
static PyObject *row_flags(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (!arity_ok(nargs, 1 + ROW_FLAG_ARGS,
                  "row_flags(n, control, transactional, tombstone, error, decode_error)"))
        return NULL;
    Py_ssize_t n = PyLong_AsSsize_t(args[0]);
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "row_flags: n < 0");
        return NULL;
    }
    RowFlagBits f[ROW_FLAG_ARGS] = {{0}};
    PyObject *out = NULL;
    for (int a = 0; a < ROW_FLAG_ARGS; a++)
        if (row_flag_bits_parse(args[1 + a], n, &f[a]) < 0) goto done;
    if (!(out = PyBytes_FromStringAndSize(NULL, n))) goto done;
    row_flag_spread_init();
    char *row = PyBytes_AS_STRING(out);
    Py_ssize_t i = 0;
    /* 64 rows a step while every bitmap holds the 72 bits a step reads, then 8 at a time */
    for (; i + 72 <= n; i += 64) {
        uint64_t c = row_flag_word(&f[0], i), t = row_flag_word(&f[1], i),
                 s = row_flag_word(&f[2], i),
                 d = ~(row_flag_word(&f[3], i) | row_flag_word(&f[4], i));
        if (!(c | t | s) && !~d) { /* the usual run: records decoded, no flag set */
            memset(row + i, ROW_DECODED, 64);
            continue;
        }
        for (int k = 0; k < 64; k += 8) {
            uint64_t eight = row_flag_eight((uint8_t)(c >> k), (uint8_t)(t >> k),
                                            (uint8_t)(s >> k), (uint8_t)(d >> k));
            memcpy(row + i + k, &eight, sizeof eight);
        }
    }
    for (; i < n; i += 8) {
        uint64_t eight = row_flag_eight(
            row_flag_byte(&f[0], i), row_flag_byte(&f[1], i), row_flag_byte(&f[2], i),
            (uint8_t)~(row_flag_byte(&f[3], i) | row_flag_byte(&f[4], i)));
        memcpy(row + i, &eight, (size_t)(n - i < 8 ? n - i : 8));
    }
done:
    for (int a = 0; a < ROW_FLAG_ARGS; a++) row_flag_bits_release(&f[a]);
    return out;
}
