/* object_arrays: JSON arrays of objects of int64 rows (lag's commits, for
 * codegen.forensics.lag_json.commits_json and lag_lines.h): each row's members a prefix (what
 * comes before the value: b'{"a":', b',"b":', ...) and its int64 column's value, or null where
 * its mask says so, as orjson prints the same dicts. ObjectRows holds the rows as object_rows
 * reads them from their buffers, put_object_rows prints a run of them (their numbers by
 * int64_text.h). Included by jsontext.c after the values' text (json_values.h: Buf,
 * PUT_LITERAL) and int64_text.h, before lag_lines.h, which prints its commits with
 * put_object_rows.
 */
#define MAX_OBJECT_FIELDS 16

/* The longest prefix (what comes before a member's value) object_arrays takes. */
#define PREFIX_MAX 32

/* What ends a row: the tail and the "," before the next row (the last row's made the "]"). */
#define ROW_TAIL_MAX (PREFIX_MAX + 16)

/* A row's constant pieces: field i's prefix and the row's tail (ObjectRows.row_tail); each
   one's length and the size it is copied as (its text zero-padded to that, a fixed size: no
   call; 16, 32 or 48 bytes, the least that holds it). */
typedef struct {
    unsigned char len[MAX_OBJECT_FIELDS], size[MAX_OBJECT_FIELDS];
    unsigned char tail_len, tail_size;
} RowPieces;

/* The int64 rows' objects, as object_arrays reads them: nf fields printed per row, each a
   prefix (what comes before its value: at most PREFIX_MAX bytes, zero-padded to that), int64
   column and mask (NULL: none; a 0 byte: null), then the tail (PREFIX_MAX bytes, zero-padded):
   "}", after the text of the trailing fields null in every row (fold_masks); row_tail the tail
   and "," (zero-padded to ROW_TAIL_MAX bytes). */
typedef struct {
    Py_ssize_t nf;
    char prefix[MAX_OBJECT_FIELDS][PREFIX_MAX];
    Py_ssize_t prefix_len[MAX_OBJECT_FIELDS];
    const int64_t *column[MAX_OBJECT_FIELDS];
    const char *mask[MAX_OBJECT_FIELDS];
    char tail[PREFIX_MAX];
    Py_ssize_t tail_len;
    char row_tail[ROW_TAIL_MAX];
    int masked; /* whether a field of the nf has a mask (fold_masks) */
    RowPieces pieces;
    int layout; /* the ROWS_ layout its pieces are, else ROWS_ANY */
} ObjectRows;

/* The field counts the loop is unrolled for: lag's commits (COMMIT_FIELDS in
   codegen.forensics.commits), with log ends (masked where some are unknown, no mask where all
   are known) and without (their two fields null in every row, folded into the tail: no mask
   left). */
#define UNROLLED_FIELDS 6
#define UNROLLED_FIELDS_FOLDED 4

/* The pieces of lag's commits: ',"commitTimestamp":' (19 bytes) past 16 bytes,
   '{"recordOffset":', ',"offset":', ',"leaderEpoch":', ',"logEndOffset":' and ',"lag":' within;
   the row's tail "},", or without log ends ',"logEndOffset":null,"lag":null},' (33). As
   constants, put_rows_of's copies are stores of their sizes, each piece's length an immediate
   (not a load a field). */
static const RowPieces COMMIT_PIECES = {{16, 19, 10, 15, 16, 7}, {16, 32, 16, 16, 16, 16}, 2, 16};
static const RowPieces COMMIT_PIECES_FOLDED = {{16, 19, 10, 15}, {16, 32, 16, 16}, 33, 48};
/* Which of lag's commits' fields is of millisecond times (commitTimestamp): int64_time_text's. */
#define COMMIT_TIME_FIELD 1
enum { ROWS_ANY, ROWS_COMMITS, ROWS_COMMITS_FOLDED };

/* The size a piece of len bytes is copied as. */
static unsigned char copy_size(Py_ssize_t len) {
    return len <= 16 ? 16 : len <= 32 ? 32 : 48;
}

/* Whether m[0:n] has no 0 byte. */
static int mask_all_set(const char *m, Py_ssize_t n) {
    return n == 0 || memchr(m, 0, (size_t)n) == NULL;
}

/* Whether m[0:n] is all 0 bytes: 64 at a time, OR-ed as words. */
static int mask_all_clear(const char *m, Py_ssize_t n) {
    Py_ssize_t i = 0;
    for (; i + 64 <= n; i += 64) {
        uint64_t acc = 0;
        for (int j = 0; j < 64; j += 8) {
            uint64_t w;
            memcpy(&w, m + i + j, 8);
            acc |= w;
        }
        if (acc) return 0;
    }
    for (; i < n; i++)
        if (m[i]) return 0;
    return 1;
}

/* r's row tail, pieces and layout, from its prefixes and tail. */
static void row_pieces(ObjectRows *r) {
    memset(r->row_tail, 0, sizeof r->row_tail);
    memcpy(r->row_tail, r->tail, (size_t)r->tail_len);
    r->row_tail[r->tail_len] = ',';
    RowPieces *c = &r->pieces;
    memset(c, 0, sizeof *c);
    for (Py_ssize_t i = 0; i < r->nf; i++) {
        c->len[i] = (unsigned char)r->prefix_len[i];
        c->size[i] = copy_size(c->len[i]);
    }
    c->tail_len = (unsigned char)(r->tail_len + 1);
    c->tail_size = copy_size(c->tail_len);
    r->layout = r->nf == UNROLLED_FIELDS && !memcmp(c, &COMMIT_PIECES, sizeof *c) ? ROWS_COMMITS
                : r->nf == UNROLLED_FIELDS_FOLDED && !r->masked &&
                        !memcmp(c, &COMMIT_PIECES_FOLDED, sizeof *c)
                    ? ROWS_COMMITS_FOLDED
                    : ROWS_ANY;
}

/* The masks of r's n rows made what the rows need read: one set in every row dropped (its
   value always printed), the trailing fields whose masks are clear in every row folded into
   the tail as their text ("prefix" "null"), while the tail fits in PREFIX_MAX bytes (lag's
   commits without log ends: ',"logEndOffset":null,"lag":null}', 32). A field null in every
   row before a printed one keeps its mask, and so does the first (a row is never the tail
   alone). Then the pieces of what is left (row_pieces). */
static void fold_masks(ObjectRows *r, Py_ssize_t n) {
    memset(r->tail, 0, PREFIX_MAX);
    r->tail[0] = '}';
    r->tail_len = 1;
    for (Py_ssize_t i = 0; i < r->nf; i++)
        if (r->mask[i] && mask_all_set(r->mask[i], n)) r->mask[i] = NULL;
    while (r->nf > 1) {
        const Py_ssize_t i = r->nf - 1, len = r->prefix_len[i];
        if (!r->mask[i] || len + 4 + r->tail_len > PREFIX_MAX || !mask_all_clear(r->mask[i], n))
            break;
        memmove(r->tail + len + 4, r->tail, (size_t)r->tail_len);
        memcpy(r->tail, r->prefix[i], (size_t)len);
        memcpy(r->tail + len, "null", 4);
        r->tail_len += len + 4;
        r->nf--;
    }
    r->masked = 0;
    for (Py_ssize_t i = 0; i < r->nf; i++) r->masked |= r->mask[i] != NULL;
    row_pieces(r);
}

/* size bytes of text at o (16 or 32: a constant where put_rows_of is given constant pieces,
   else a branch on it); put_row_tail's the same, of 16, 32 or 48 (a row's tail). */
static HOT_INLINE void put_piece(char *o, const char *text, unsigned char size) {
    if (size == 16) memcpy(o, text, 16);
    else memcpy(o, text, 32);
}

static HOT_INLINE void put_row_tail(char *o, const char *text, unsigned char size) {
    if (size == 48) memcpy(o, text, 48);
    else put_piece(o, text, size);
}

/* Runs of r's rows, each printed as put_object_rows prints it, in one call (the rows' pieces
   and the kept top digits of each field read once for them all): rows at[k]:at[k + 1], after
   text[cut[k - 1]:cut[k]] (cut[-1] 0) where text is given (the line around them). */
typedef struct {
    const int64_t *at;
    Py_ssize_t n;
    const char *text;
    const Py_ssize_t *cut;
} RowRuns;

/* put_object_runs with nf fields (a constant where inlined with one: the fields' loop unrolled),
   masked 0 where no field has a mask (a constant: no mask asked of in the loop), the rows'
   pieces (constant ones: stores of their sizes, their lengths immediates) and the field of
   millisecond times (int64_time_text's; -1: none). The prefixes, columns and masks are read
   into locals first: the output is written through a char pointer, which may alias any memory
   the compiler cannot see is apart, so fields read through r would be read again after every
   write. */
static HOT_INLINE int put_rows_of(Buf *b, const ObjectRows *r, const RowRuns *runs,
                                  Py_ssize_t nf, int masked, const RowPieces *pieces,
                                  Py_ssize_t time_field) {
    char prefix[MAX_OBJECT_FIELDS][PREFIX_MAX];
    const int64_t *column[MAX_OBJECT_FIELDS];
    const char *mask[MAX_OBJECT_FIELDS];
    TopDigits top[MAX_OBJECT_FIELDS];
    char tail[ROW_TAIL_MAX];
    memcpy(tail, r->row_tail, ROW_TAIL_MAX);
    for (Py_ssize_t i = 0; i < nf; i++) {
        memcpy(prefix[i], r->prefix[i], PREFIX_MAX);
        column[i] = r->column[i];
        mask[i] = r->mask[i];
        top[i].base = top[i].span = 0; /* none kept yet */
        top[i].len = 0;
    }
    /* a piece's copy ends within its own text's room and its value's, the row tail's within
       ROW_TAIL_MAX */
    const Py_ssize_t row_room = nf * (PREFIX_MAX + INT64_TEXT_MAX) + ROW_TAIL_MAX;
    Py_ssize_t done = 0; /* of the text between the runs */
    for (Py_ssize_t k = 0; k < runs->n; k++) {
        if (runs->text) {
            if (buf_put(b, runs->text + done, runs->cut[k] - done) < 0) return -1;
            done = runs->cut[k];
        }
        const int64_t from = runs->at[k], to = runs->at[k + 1];
        if (from == to) {
            if (PUT_LITERAL(b, "[]") < 0) return -1;
            continue;
        }
        /* every row ends with ",": the last one's made the "]" (no test a row for it) */
        if (PUT_LITERAL(b, "[") < 0) return -1;
        for (int64_t row = from; row < to;) {
            /* the rows that fit in the room there is (grown only when one does not: a buffer
               sized for its text is not grown, and copied, for room it does not use) */
            if (buf_reserve(b, row_room) < 0) return -1;
            const int64_t fit = (b->cap - b->len) / row_room;
            const int64_t block_end = to - row > fit ? row + fit : to;
            char *o = b->p + b->len;
            for (; row < block_end; row++) {
#pragma GCC unroll 16
                for (Py_ssize_t i = 0; i < nf; i++) {
                    put_piece(o, prefix[i], pieces->size[i]);
                    o += pieces->len[i];
                    if (masked && mask[i] && !mask[i][row]) {
                        memcpy(o, "null", 4);
                        o += 4;
                    } else if (i == time_field) {
                        o = int64_time_text(o, column[i][row], &top[i]);
                    } else {
                        o = int64_text_topped(o, column[i][row], &top[i]);
                    }
                }
                put_row_tail(o, tail, pieces->tail_size);
                o += pieces->tail_len;
            }
            b->len = o - b->p;
        }
        /* the last row's "," is in the buffer still: it is drained only for room to write */
        b->p[b->len - 1] = ']';
    }
    return 0;
}

static int put_object_runs(Buf *b, const ObjectRows *r, const RowRuns *runs) {
    if (r->layout == ROWS_COMMITS && r->masked)
        return put_rows_of(b, r, runs, UNROLLED_FIELDS, 1, &COMMIT_PIECES, COMMIT_TIME_FIELD);
    if (r->layout == ROWS_COMMITS)
        return put_rows_of(b, r, runs, UNROLLED_FIELDS, 0, &COMMIT_PIECES, COMMIT_TIME_FIELD);
    if (r->layout == ROWS_COMMITS_FOLDED)
        return put_rows_of(b, r, runs, UNROLLED_FIELDS_FOLDED, 0, &COMMIT_PIECES_FOLDED,
                           COMMIT_TIME_FIELD);
    return put_rows_of(b, r, runs, r->nf, 1, &r->pieces, -1);
}

/* "[" + the objects of rows [from, to) joined by "," + "]". A row's text is at most "," + per
   field PREFIX_MAX and INT64_TEXT_MAX characters + the tail's PREFIX_MAX: the rows that fit in
   the room left are written without a check per row or value. */
static int put_object_rows(Buf *b, const ObjectRows *r, int64_t from, int64_t to) {
    const int64_t at[2] = {from, to};
    const RowRuns run = {at, 1, NULL, NULL};
    return put_object_runs(b, r, &run);
}

/* The buffers an ObjectRows reads, held until released. */
typedef struct {
    Py_buffer cols[MAX_OBJECT_FIELDS], masks[MAX_OBJECT_FIELDS];
    int held_cols, held_masks[MAX_OBJECT_FIELDS];
    Py_ssize_t nf;
} RowBuffers;

static void row_buffers_release(RowBuffers *h) {
    for (Py_ssize_t i = 0; i < h->nf; i++)
        if (h->held_masks[i]) PyBuffer_Release(&h->masks[i]);
    for (int i = 0; i < h->held_cols; i++) PyBuffer_Release(&h->cols[i]);
    h->held_cols = 0;
    memset(h->held_masks, 0, sizeof h->held_masks);
}

/* The rows of (prefixes, columns, masks) (object_arrays' first three arguments) into r, their
   buffers held in h (released by row_buffers_release, also after an error); their count, -1
   with an error set. `name` names the caller in errors. */
static Py_ssize_t object_rows(const char *name, PyObject *prefixes, PyObject *columns,
                              PyObject *masks, ObjectRows *r, RowBuffers *h) {
    memset(h, 0, sizeof *h);
    if (!PyTuple_Check(prefixes) || !PyTuple_Check(columns) || !PyTuple_Check(masks)) {
        PyErr_Format(PyExc_TypeError, "%s: prefixes, columns and masks are tuples", name);
        return -1;
    }
    const Py_ssize_t nf = PyTuple_GET_SIZE(prefixes);
    if (nf < 1 || nf > MAX_OBJECT_FIELDS || PyTuple_GET_SIZE(columns) != nf ||
        PyTuple_GET_SIZE(masks) != nf) {
        PyErr_Format(PyExc_ValueError, "%s: 1 to %d fields, as many of each", name,
                     MAX_OBJECT_FIELDS);
        return -1;
    }
    h->nf = r->nf = nf;
    Py_ssize_t n = -1;
    for (Py_ssize_t i = 0; i < nf; i++) {
        PyObject *given = PyTuple_GET_ITEM(prefixes, i);
        if (!PyBytes_Check(given)) {
            PyErr_Format(PyExc_TypeError, "%s: prefixes must be bytes", name);
            return -1;
        }
        r->prefix_len[i] = PyBytes_GET_SIZE(given);
        if (r->prefix_len[i] > PREFIX_MAX) {
            PyErr_Format(PyExc_ValueError, "%s: a prefix of %zd bytes (at most %d)", name,
                         r->prefix_len[i], PREFIX_MAX);
            return -1;
        }
        memset(r->prefix[i], 0, PREFIX_MAX);
        memcpy(r->prefix[i], PyBytes_AS_STRING(given), (size_t)r->prefix_len[i]);
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(columns, i), &h->cols[i], PyBUF_C_CONTIGUOUS) <
            0)
            return -1;
        h->held_cols++;
        if (h->cols[i].itemsize != 8 || (n >= 0 && h->cols[i].len / 8 != n)) {
            PyErr_Format(PyExc_ValueError, "%s: int64 columns of one length", name);
            return -1;
        }
        n = h->cols[i].len / 8;
        r->column[i] = h->cols[i].buf;
        r->mask[i] = NULL;
        PyObject *mask = PyTuple_GET_ITEM(masks, i);
        if (mask != Py_None) {
            if (PyObject_GetBuffer(mask, &h->masks[i], PyBUF_C_CONTIGUOUS) < 0) return -1;
            h->held_masks[i] = 1;
            if (h->masks[i].itemsize != 1 || h->masks[i].len != n) {
                PyErr_Format(PyExc_ValueError, "%s: a byte of mask per row", name);
                return -1;
            }
            r->mask[i] = h->masks[i].buf;
        }
    }
    fold_masks(r, n);
    return n;
}

/* Bounds (an int64 buffer, held in view): rising, within [0, rows]; their count - 1 (the runs),
   -1 with an error set. */
static Py_ssize_t row_bounds(const char *name, PyObject *given, Py_buffer *view, Py_ssize_t rows) {
    if (PyObject_GetBuffer(given, view, PyBUF_C_CONTIGUOUS) < 0) return -1;
    const int64_t *at = view->buf;
    const Py_ssize_t runs = view->len / 8 - 1;
    if (view->itemsize != 8 || view->len < 8) {
        PyErr_Format(PyExc_ValueError, "%s: int64 bounds, the end last", name);
        PyBuffer_Release(view);
        return -1;
    }
    for (Py_ssize_t k = 0; k <= runs; k++) {
        if (at[k] < 0 || at[k] > rows || (k && at[k] < at[k - 1])) {
            PyErr_Format(PyExc_ValueError, "%s: bounds outside the rows", name);
            PyBuffer_Release(view);
            return -1;
        }
    }
    return runs;
}

/* object_arrays(prefixes, columns, masks, bounds) -> list of bytes: per k, the JSON array of
   the objects of rows bounds[k]:bounds[k + 1]: each row prefixes[0], columns[0][row],
   prefixes[1], columns[1][row], ... then "}" (prefixes: b'{"a":', b',"b":', ...). columns are
   int64 buffers of one length; masks, per column, a buffer of one byte per row (the value is
   null where it is 0) or None. What orjson writes of the same lists of dicts. */
static PyObject *object_arrays(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (!arity_ok(nargs, 4,
                  "object_arrays(prefixes, columns, masks, bounds): three tuples and a buffer"))
        return NULL;
    ObjectRows rows;
    RowBuffers held;
    Py_buffer bounds;
    PyObject *out = NULL;
    Buf b = {NULL, 0, 0, NULL};
    Py_ssize_t n = object_rows("object_arrays", args[0], args[1], args[2], &rows, &held);
    Py_ssize_t runs = n < 0 ? -1 : row_bounds("object_arrays", args[3], &bounds, n);
    if (runs < 0) goto done;
    const int64_t *at = bounds.buf;
    out = PyList_New(runs);
    for (Py_ssize_t k = 0; out && k < runs; k++) {
        b.len = 0;
        PyObject *text = put_object_rows(&b, &rows, at[k], at[k + 1]) < 0
                             ? NULL
                             : PyBytes_FromStringAndSize(b.p, b.len);
        if (!text) Py_CLEAR(out);
        else PyList_SET_ITEM(out, k, text);
    }
    PyBuffer_Release(&bounds);
done:
    PyMem_Free(b.p);
    row_buffers_release(&held);
    return out;
}
