/* rows_left: the rows of a chunk that add_checked's pass (commit_effects.h) leaves for Python
 * (read rows that are not offset commits it applied: other records, markers, commits it refused),
 * written as the pass reads each row, with what Python reads of them
 * (codegen.dumps.views.consumer_offsets.apply_chunk), less the markers the view does nothing
 * with (rows_left_drop_idle): Python then reads a few hundred records instead of gathering from
 * the chunk's columns, which the pass has pushed out of the caches.
 *
 * A record is codegen.dumps.views.effects.LEFT_ROW (48 bytes, no padding): int64 producer (-1
 * where null), offset (-1 where null), timestamp (0 where null), as the pass is given them; int32
 * row, key start and size in the key data, value start and size in the value data (-1: null, the
 * flag ROW_TOMBSTONE); uint8 kind (commit_kinds.h; 0 for a commit refused), control,
 * transactional and refused (0 or 1).
 */

typedef struct {
    int64_t producer, offset, time;
    int32_t row, key_start, key_size, value_start, value_size;
    uint8_t kind, control, transactional, refused;
} RowLeft;

_Static_assert(sizeof(RowLeft) == 48, "RowLeft is LEFT_ROW's 48 bytes");

/* rows: room for cap rows, a chunk's every row, reserved before the pass (rows_left_reserve),
   so that adding a row cannot fail once the pass has changed the key store; producers: room
   for as many ids, rows_left_drop_idle's, so that it cannot fail either. */
typedef struct {
    RowLeft *rows;
    int64_t *producers;
    size_t len, cap;
} RowsLeft;

static void rows_left_free(RowsLeft *left) {
    PyMem_Free(left->rows);
    PyMem_Free(left->producers);
    *left = (RowsLeft){0};
}

/* Room for a chunk's n rows in left (empty), and for the producers of as many: 0, or -1 with
   MemoryError (nothing held). Pages past the rows written are not touched (the rows left are a
   few hundred a chunk). */
static int rows_left_reserve(RowsLeft *left, size_t n) {
    size_t cap = n ? n : 1;
    if (cap > PY_SSIZE_T_MAX / sizeof(RowLeft)) {
        PyErr_NoMemory();
        return -1;
    }
    left->rows = PyMem_Malloc(cap * sizeof(RowLeft));
    left->producers = PyMem_Malloc(cap * sizeof(int64_t));
    if (!left->rows || !left->producers) {
        rows_left_free(left);
        PyErr_NoMemory();
        return -1;
    }
    left->len = 0;
    left->cap = cap;
    return 0;
}

/* Row j of a chunk (offsets koff/voff, flags, producers, offsets, timestamps) appended to
   left (room reserved for every row) unless it was not read (no ROW_DECODED: Python counts it
   apart). */
static inline void rows_left_add(RowsLeft *left, Py_ssize_t j, uint8_t kind, int refused,
                                 const int32_t *koff, const int32_t *voff, const uint8_t *flag,
                                 const int64_t *producer, const int64_t *offset,
                                 const int64_t *time) {
    uint8_t f = flag[j];
    if (!(f & ROW_DECODED)) return;
    left->rows[left->len++] = (RowLeft){
        .producer = producer[j],
        .offset = offset[j],
        .time = time[j],
        .row = (int32_t)j,
        .key_start = koff[j],
        .key_size = koff[j + 1] - koff[j],
        .value_start = voff[j],
        .value_size = f & ROW_TOMBSTONE ? -1 : voff[j + 1] - voff[j],
        .kind = kind,
        .control = (f & ROW_CONTROL) != 0,
        .transactional = (f & ROW_TRANSACTIONAL) != 0,
        .refused = (uint8_t)refused,
    };
}

/* Whether producer p is one of ids[0..n). */
static int producer_among(const int64_t *ids, size_t n, int64_t p) {
    for (size_t i = 0; i < n; i++)
        if (ids[i] == p) return 1;
    return 0;
}

/* left's end-transaction markers that the view does nothing with dropped (a transactional
   batch of offset commits ends with one: most of the rows left): a marker (kind 5 or 6) whose
   producer is none of `waiting` (those the view holds records of) nor of a transactional data
   row left, and that reads without an error (codegen.dumps.decoded.control_record: a key
   version and a value version of 0 or more, a value of 6 bytes or more; a marker's key is 4
   bytes or more). kdata, vdata: the key and value data. Allocates nothing (the producers go to
   left->producers, reserved): it cannot fail after the pass. */
static void rows_left_drop_idle(RowsLeft *left, const uint8_t *kdata, const uint8_t *vdata,
                                const int64_t *waiting, size_t n_waiting) {
    int64_t *pending = left->producers; /* producers of transactional data rows left (rarely any) */
    size_t n_pending = 0, kept = 0;
    for (size_t i = 0; i < left->len; i++) {
        const RowLeft *r = &left->rows[i];
        if (!r->transactional || r->control) continue;
        pending[n_pending++] = r->producer;
    }
    for (size_t i = 0; i < left->len; i++) {
        const RowLeft *r = &left->rows[i];
        int idle = r->kind >= 5 && kdata[r->key_start] < 0x80 && r->value_size >= 6 &&
                   vdata[r->value_start] < 0x80 &&
                   !producer_among(waiting, n_waiting, r->producer) &&
                   !producer_among(pending, n_pending, r->producer);
        if (!idle) left->rows[kept++] = *r;
    }
    left->len = kept;
}
