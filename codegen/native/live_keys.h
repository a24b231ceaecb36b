/* LiveKeys: the live records of one coordinator log partition (what log compaction keeps and
 * the coordinator's loader must read: per key the record that took effect last, none after a
 * tombstone), in one pass over its rows in log order, fed a chunk at a time
 * (codegen.dumps.views.live, what downgrade-check judges).
 *
 * Each row has a kind, as CommitEffects' (commit_effects.h): 0 passed over (a control record
 * that is no end-transaction marker, a record without a key, a row that did not read), 1 a
 * plain record, 2 a plain tombstone, 3 a transactional record, 4 a transactional tombstone,
 * 5 an ABORT marker, 6 a COMMIT marker. A plain row takes effect at once; a transactional one
 * waits with its producer's other rows for the producer's next marker and takes effect there,
 * in order, if it is a COMMIT, never if it is an ABORT or if none follows. A key is the
 * record's whole key bytes (a KeyStore, key_store.h); its entry holds the record that took
 * effect last: its offset and its value's version (the value's first two bytes, big-endian,
 * -1 when it has fewer), or none after a tombstone. The pure backend computes the same with
 * sorts (live.reduce_live, live.live): the reference the tests hold this to.
 *
 * The rows passed over aside, the offsets must rise strictly, as in a log; add() answers False
 * at the first that does not (and for every later chunk): the caller then reads the rows with
 * the reference, which orders them first.
 */

/* A key's entry is two cache lines (the KeyStore starts its entries at one): its KeyEntry and
   the record that took effect last, then its bytes when they are at most LIVE_KEY_INLINE (a
   coordinator key's are some 20 to 60). Both are fetched ahead of the key's row
   (LIVE_AHEAD), where its bytes were a line of the arena, read only at the row. */
#define LIVE_KEY_INLINE 64

typedef struct {
    KeyEntry key;   /* its entry in the KeyStore */
    int64_t offset; /* the record that took effect last; -1: none (a tombstone's) */
    int32_t version;
    _Alignas(KEY_STORE_LINE) uint8_t bytes[LIVE_KEY_INLINE];
} LiveKey;

#define LIVE_LAYOUT ((KeyLayout){sizeof(LiveKey), offsetof(LiveKey, bytes), LIVE_KEY_INLINE})
#define LIVE_AHEAD 16 /* rows ahead whose key's slot is fetched (half of it: its entry) */
#define LIVE_RING (LIVE_AHEAD - 1) /* the ring of rows looked at ahead: an index mask */

typedef struct {
    int64_t key, offset;
    int32_t version;
    uint8_t tombstone;
} LiveWaiting;

typedef struct {
    int64_t producer;
    LiveWaiting *rows; /* the producer's rows waiting for its marker, in log order */
    size_t len, cap;
    uint8_t used;
} LiveProducer;

typedef struct {
    PyObject_HEAD
    KeyStore store; /* the keys, each entry a LiveKey */
    LiveProducer *producers;
    size_t producer_mask, producer_count;
    int64_t last_offset; /* of the last row not passed over */
    int started, disordered;
} LiveKeysObject;

static HOT_INLINE LiveKey *live_keys_entries(LiveKeysObject *s) {
    return (LiveKey *)s->store.entries;
}

static size_t live_producer_at(int64_t producer, size_t mask) {
    return (size_t)(((uint64_t)producer * 0x9E3779B97F4A7C15ull) >> 20) & mask;
}

static int live_grow_producers(LiveKeysObject *s) {
    size_t old_size = s->producer_mask + 1, size = old_size * 2;
    LiveProducer *old = s->producers, *slots = PyMem_Calloc(size, sizeof(LiveProducer));
    if (!slots) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < old_size; i++) {
        if (!old[i].used) continue;
        size_t at = live_producer_at(old[i].producer, size - 1);
        while (slots[at].used) at = (at + 1) & (size - 1);
        slots[at] = old[i];
    }
    PyMem_Free(old);
    s->producers = slots;
    s->producer_mask = size - 1;
    return 0;
}

static LiveProducer *live_producer(LiveKeysObject *s, int64_t producer) {
    if (s->producer_count * 2 >= s->producer_mask && live_grow_producers(s) < 0) return NULL;
    for (size_t at = live_producer_at(producer, s->producer_mask);;
         at = (at + 1) & s->producer_mask) {
        LiveProducer *slot = &s->producers[at];
        if (!slot->used) {
            *slot = (LiveProducer){.producer = producer, .used = 1};
            s->producer_count++;
            return slot;
        }
        if (slot->producer == producer) return slot;
    }
}

static HOT_INLINE void live_apply(LiveKeysObject *s, int64_t key, int64_t offset,
                                  int32_t version, int tombstone) {
    LiveKey *k = &live_keys_entries(s)[key];
    k->offset = tombstone ? -1 : offset;
    k->version = version;
}

/* One row (kinds 1 to 6; key: its key's number for kinds 1 to 4). */
static int live_row(LiveKeysObject *s, uint8_t kind, int64_t key, int64_t producer,
                    int64_t offset, int32_t version) {
    if (kind == 1 || kind == 2) {
        live_apply(s, key, offset, version, kind == 2);
        return 0;
    }
    LiveProducer *p = live_producer(s, producer);
    if (!p) return -1;
    if (kind == 3 || kind == 4) {
        if (grow_array((void **)&p->rows, &p->cap, p->len + 1, sizeof(LiveWaiting)) < 0)
            return -1;
        p->rows[p->len++] = (LiveWaiting){key, offset, version, kind == 4};
        return 0;
    }
    if (kind == 6)
        for (size_t w = 0; w < p->len; w++)
            live_apply(s, p->rows[w].key, p->rows[w].offset, p->rows[w].version,
                       p->rows[w].tombstone);
    p->len = 0;
    return 0;
}

/* Row j's key hash (commit_key_hash of its whole key) for kinds 1 to 4, else 0. */
static HOT_INLINE uint64_t live_look(const uint8_t *kdata, const int32_t *koff,
                                     const uint8_t *kind, Py_ssize_t j) {
    if (kind[j] < 1 || kind[j] > 4) return 0;
    return commit_key_hash(kdata + koff[j], koff[j + 1] - koff[j]);
}

/* add(key_offsets, key_data, value_offsets, value_data, kinds, producers, offsets) -> bool:
   rows in log order: binary key and value (int32 offsets, rows + 1 of them from the first row,
   and data), uint8 kinds (0 to 6), int64 producer ids and record offsets. False when a row's
   offset is not above the last one's (nothing of this chunk or a later one is kept then). */
static PyObject *LiveKeys_add(LiveKeysObject *s, PyObject *const *args, Py_ssize_t nargs) {
    if (!arity_ok(nargs, 7,
                  "add(key_offsets, key_data, value_offsets, value_data, kinds, producers, "
                  "offsets)"))
        return NULL;
    if (s->disordered) Py_RETURN_FALSE;
    BufferSet b = {.count = 0};
    if (buffers_get(&b, args, 7) < 0) return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = b.views[4].len;
    if (!rows_valid(&b.views[4], n, &b.views[5], 2)) goto done;
    if (!offsets_valid(&b.views[0], n, b.views[1].len) ||
        !offsets_valid(&b.views[2], n, b.views[3].len)) {
        PyErr_SetString(PyExc_ValueError, "a key's or value's offsets are outside its data");
        goto done;
    }
    const int32_t *koff = b.views[0].buf, *voff = b.views[2].buf;
    const uint8_t *kdata = b.views[1].buf, *vdata = b.views[3].buf, *kind = b.views[4].buf;
    const int64_t *producer = b.views[5].buf, *offset = b.views[6].buf;
    /* The ring: row i's hash at i & LIVE_RING, from LIVE_AHEAD rows before its turn to its
       turn (0 past the end and for rows without a key), so that its key's slot, then its
       entry, are fetched while the rows before it are applied (as commit_effects.h's pass). */
    uint64_t ring[LIVE_AHEAD] = {0};
    for (Py_ssize_t j = 0; j < LIVE_AHEAD && j < n; j++) ring[j] = live_look(kdata, koff, kind, j);
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t hash = ring[i & LIVE_RING], ahead = 0;
        if (i + LIVE_AHEAD < n) ahead = live_look(kdata, koff, kind, i + LIVE_AHEAD);
        ring[i & LIVE_RING] = ahead;
        key_store_prefetch(&s->store, ahead);
        key_store_prefetch_entry(&s->store, LIVE_LAYOUT, ring[(i + LIVE_AHEAD / 2) & LIVE_RING]);
        if (!kind[i]) continue;
        if (s->started && offset[i] <= s->last_offset) {
            s->disordered = 1;
            result = Py_NewRef(Py_False);
            goto done;
        }
        s->started = 1;
        s->last_offset = offset[i];
        int64_t key = -1;
        int32_t version = -1;
        if (kind[i] <= 4) {
            const uint8_t *k = kdata + koff[i];
            int32_t size = koff[i + 1] - koff[i];
            int added;
            key = key_store_find_or_add_in(&s->store, LIVE_LAYOUT, k, size, hash, &added, 0);
            if (key < 0) goto done;
            if (added) live_keys_entries(s)[key].offset = -1;
            if ((kind[i] == 1 || kind[i] == 3) && voff[i + 1] - voff[i] >= 2) {
                const uint8_t *v = vdata + voff[i];
                version = (int16_t)(uint16_t)(v[0] << 8 | v[1]);
            }
        }
        if (live_row(s, kind[i], key, producer[i], offset[i], version) < 0) goto done;
    }
    result = Py_NewRef(Py_True);
done:
    buffers_release(&b);
    return result;
}

/* The n (offset, key) pairs by offset (distinct): a radix sort of the offsets above the least,
   11 bits a pass (two for a partition of up to 4 M offsets), where qsort's merge sort called
   its compare some 17 times a pair (38 k live keys: 17.8 M instructions). 0, or -1 with
   MemoryError. */
static int live_sort_pairs(int64_t *pairs, size_t n) {
    if (n < 2) return 0;
    int64_t low = pairs[0], high = pairs[0];
    for (size_t i = 1; i < n; i++) {
        if (pairs[2 * i] < low) low = pairs[2 * i];
        if (pairs[2 * i] > high) high = pairs[2 * i];
    }
    uint64_t span = (uint64_t)high - (uint64_t)low;
    int64_t *spare = PyMem_Malloc(n * 2 * sizeof(int64_t));
    if (!spare) {
        PyErr_NoMemory();
        return -1;
    }
    int64_t *from = pairs, *to = spare;
    size_t count[1 << 11];
    for (unsigned shift = 0; shift < 64 && (shift == 0 || span >> shift); shift += 11) {
        memset(count, 0, sizeof count);
        for (size_t i = 0; i < n; i++)
            count[(((uint64_t)from[2 * i] - (uint64_t)low) >> shift) & 2047]++;
        for (size_t d = 0, at = 0; d < 2048; d++) {
            size_t c = count[d];
            count[d] = at;
            at += c;
        }
        for (size_t i = 0; i < n; i++) {
            size_t at = count[(((uint64_t)from[2 * i] - (uint64_t)low) >> shift) & 2047]++;
            to[2 * at] = from[2 * i];
            to[2 * at + 1] = from[2 * i + 1];
        }
        int64_t *t = from;
        from = to;
        to = t;
    }
    if (from != pairs) memcpy(pairs, from, n * 2 * sizeof(int64_t));
    PyMem_Free(spare);
    return 0;
}

/* live() -> (offsets, versions, key_offsets, key_data): the live records by offset, as columns
   (bytes each): int64 offsets, int32 value versions, and the keys as a binary column, int32
   offsets (rows + 1) into their data; a column the caller reads at once, where a tuple a
   record was made and taken apart again. */
static PyObject *LiveKeys_live(LiveKeysObject *s, PyObject *unused) {
    size_t n = 0, bytes = 0;
    for (size_t k = 0; k < s->store.count; k++)
        if (live_keys_entries(s)[k].offset >= 0) {
            n++;
            bytes += (size_t)live_keys_entries(s)[k].key.size;
        }
    if (bytes > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "live(): the live keys pass 2 GiB");
        return NULL;
    }
    int64_t *order = PyMem_Malloc((n ? n : 1) * 2 * sizeof(int64_t)); /* (offset, key) pairs */
    if (!order) return PyErr_NoMemory();
    size_t at = 0;
    for (size_t k = 0; k < s->store.count; k++) {
        if (live_keys_entries(s)[k].offset < 0) continue;
        order[2 * at] = live_keys_entries(s)[k].offset;
        order[2 * at + 1] = (int64_t)k;
        at++;
    }
    PyObject *out = NULL, *offsets = NULL, *versions = NULL, *key_offsets = NULL, *key_data = NULL;
    if (live_sort_pairs(order, n) < 0 ||
        !(offsets = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * sizeof(int64_t)))) ||
        !(versions = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * sizeof(int32_t)))) ||
        !(key_offsets = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)((n + 1) * sizeof(int32_t)))) ||
        !(key_data = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)bytes)))
        goto done;
    int64_t *offset = (int64_t *)PyBytes_AS_STRING(offsets);
    int32_t *version = (int32_t *)PyBytes_AS_STRING(versions);
    int32_t *key_at = (int32_t *)PyBytes_AS_STRING(key_offsets);
    uint8_t *data = (uint8_t *)PyBytes_AS_STRING(key_data);
    int32_t end = 0;
    key_at[0] = 0;
    for (size_t i = 0; i < n; i++) {
        const LiveKey *k = &live_keys_entries(s)[order[2 * i + 1]];
        offset[i] = k->offset;
        version[i] = k->version;
        const uint8_t *bytes_of = key_store_bytes(&s->store, &k->key);
        if (k->key.size) memcpy(data + end, bytes_of, (size_t)k->key.size);
        key_at[i + 1] = end += k->key.size;
    }
    out = PyTuple_Pack(4, offsets, versions, key_offsets, key_data);
done:
    Py_XDECREF(offsets);
    Py_XDECREF(versions);
    Py_XDECREF(key_offsets);
    Py_XDECREF(key_data);
    PyMem_Free(order);
    return out;
}

static PyObject *LiveKeys_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    if (PyTuple_GET_SIZE(args) || (kwargs && PyDict_GET_SIZE(kwargs))) {
        PyErr_SetString(PyExc_TypeError, "LiveKeys() takes no arguments");
        return NULL;
    }
    LiveKeysObject *s = (LiveKeysObject *)type->tp_alloc(type, 0);
    if (!s) return NULL;
    s->producer_mask = 63;
    if (key_store_init(&s->store, sizeof(LiveKey)) < 0) {
        Py_DECREF(s);
        return NULL;
    }
    s->store.inline_at = offsetof(LiveKey, bytes);
    s->store.inline_cap = LIVE_KEY_INLINE;
    if (!(s->producers = PyMem_Calloc(s->producer_mask + 1, sizeof(LiveProducer)))) {
        Py_DECREF(s);
        return PyErr_NoMemory();
    }
    return (PyObject *)s;
}

static void LiveKeys_dealloc(LiveKeysObject *s) {
    key_store_free(&s->store);
    if (s->producers)
        for (size_t i = 0; i <= s->producer_mask; i++) PyMem_Free(s->producers[i].rows);
    PyMem_Free(s->producers);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyMethodDef LiveKeys_methods[] = {
    {"add", (PyCFunction)(void (*)(void))LiveKeys_add, METH_FASTCALL,
     "add(key_offsets, key_data, value_offsets, value_data, kinds, producers, offsets) -> "
     "bool: rows in log order (False: an offset out of order; see live_keys.h)."},
    {"live", (PyCFunction)LiveKeys_live, METH_NOARGS,
     "live() -> (offsets, versions, key_offsets, key_data): the live records, by offset, as "
     "columns (see live_keys.h)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject LiveKeysType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "codegen.native._records.LiveKeys",
    .tp_basicsize = sizeof(LiveKeysObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The live records of one coordinator log partition, in one pass (live_keys.h).",
    .tp_new = LiveKeys_new,
    .tp_dealloc = (destructor)LiveKeys_dealloc,
    .tp_methods = LiveKeys_methods,
};
