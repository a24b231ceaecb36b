/* CommitEffects: the committed offsets of one log partition of __consumer_offsets and the
 * tombstones that deleted one, in one pass over its rows in log order, fed a chunk at a time
 * (codegen.dumps.views.effects).
 *
 * Each row has a kind: 0 nothing to apply (another record, one that did not decode), 1 a
 * plain commit, 2 a plain tombstone, 3 a transactional commit, 4 a transactional tombstone,
 * 5 an ABORT marker, 6 a COMMIT marker. A plain row takes effect at once; a transactional one
 * waits with its producer's other rows for the producer's next marker and takes effect there,
 * in order, if it is a COMMIT, never if it is an ABORT or if none follows. Per key (group,
 * topic, partition) the row that took effect last is the key's committed offset, none after a
 * tombstone; a tombstone that takes effect while its key has a committed offset deleted it.
 * The pure backend computes the same with sorts (compaction.apply_offsets, offsets._latest,
 * offsets._deletions): the reference the tests hold this to.
 *
 * Two ways to feed it. add_records: the engine's columns (key and value bytes, record offset,
 * timestamp; add_checked the same, each offset commit checked by the pass as it reads it,
 * commit_check.h, where add_records takes rows decoded before); each committed offset's row
 * is kept as its key's record type, value bytes, offset and timestamp (a plain commit's value
 * beside its key's bytes in the key's entry when both fit, else in an arena: a value as long
 * as its key's committed one written over it, others appended and the arena compacted as it
 * fills with superseded ones), so the caller decodes the few rows of the answer again and
 * memory is bounded by the keys. A key is an offset commit key's bytes after the type up to
 * its partition (bytes after that are no part of it, as the decoder reads none); a key of
 * another shape is its bytes after the type.
 * add_commit_rows: commit rows (decoded group, topic, partition columns), numbered from 0 in
 * the order added; the row numbers are the answer.
 *
 * History mode (CommitEffects(history=True); add_records then takes each row's decoded
 * committed offset, commit timestamp and leader epoch too, which add_checked reads from the
 * value it checks; no value bytes are kept, so no
 * live() or take_deleted()): every row that takes effect is noted, as it does, with its key's
 * number; effect_rows() gives their rows (record offsets or row numbers) in that order; keyed(order) gives them by key (the keys in
 * the caller's order, each key's rows in the order they took effect): what lag reads
 * (codegen.forensics.commits.keyed_effects). key_rows(start) says where each key was first
 * seen, so the caller decodes a key's strings once per key, not once per row.
 *
 * Keys are found in a KeyStore (key_store.h, included before this part), the key table
 * superseded_commits.h uses too; each key's entry holds its committed offset. The history is
 * an EffectHistory (effect_history.h, included before this part).
 */

typedef struct {
    int64_t row;    /* record offset (add_records) or row number; -1: no committed offset */
    int64_t time;   /* timestamp */
    size_t value;   /* the value's bytes in the value arena */
    int32_t length; /* their length */
    uint16_t type;  /* the key's record type */
    uint8_t beside; /* a key's committed value only: its bytes in the key's entry, after the
                       key's (value unused), not in the value arena */
} EffectRow;

/* History mode: a row's decoded committed offset, commit timestamp and leader epoch. */
typedef struct {
    int64_t committed, commit_time;
    int32_t epoch;
} Decoded;

/* A key's entry is three cache lines (the KeyStore starts its entries at one): its KeyEntry,
   first row and committed offset (the history's numbers are kept in the waiting rows and the
   history, not here), then its bytes when they are at most EFFECT_KEY_INLINE (an
   offset commit key's are some 30 to 40) and, after them, its committed value's when both fit.
   Finding a key and applying a plain commit to it then read neighbouring lines, where the key
   bytes and the value were each a line elsewhere (in the KeyStore's arena and the value
   arena). A commit value is 24 bytes without metadata, so key and value nearly always end in
   the second line; the third holds the values with metadata (some 40 to 60 bytes, a fifth of
   a real dump's commits), which in two lines went to the value arena: a copy there, and the
   arena compacted as the values of a key change length (some 30 instructions a row of the
   whole pass, and a line elsewhere). */
#define EFFECT_KEY_INLINE 128
#define EFFECT_COPY 64 /* the bytes a plain commit's value is copied as, when they fit */

typedef struct {
    KeyEntry key;  /* its entry in the KeyStore */
    int64_t first; /* the row number the key was first seen at */
    EffectRow live;
    /* a key of at most this many bytes, from the second line (the one fetched ahead with the
       first, as a key's bytes and value are some 60 bytes) */
    _Alignas(KEY_STORE_LINE) uint8_t bytes[EFFECT_KEY_INLINE];
} EffectKey;

_Static_assert(sizeof(EffectKey) == 3 * KEY_STORE_LINE, "a key's entry is three cache lines");

/* In history mode a key's entry is one line, its bytes in it when at most HISTORY_KEY_INLINE
   (nearly every offset commit key): no committed offset or value is kept there, and a lookup
   (nearly all a history row costs) then reads one line of the entries, not two (24 k keys of a
   1 M-row partition in 1.5 MB of entries, not 4.6 MB, beside L2's 2 MB). */
#define HISTORY_KEY_INLINE 40

typedef struct {
    KeyEntry key;
    int64_t first; /* as EffectKey's, at the same place */
    uint8_t bytes[HISTORY_KEY_INLINE];
} HistoryKey;

_Static_assert(sizeof(HistoryKey) == KEY_STORE_LINE, "a history key's entry is one line");
_Static_assert(offsetof(HistoryKey, first) == offsetof(EffectKey, first),
               "first is at one place in both entries");

typedef struct {
    int64_t key, next; /* next: the producer's next waiting row, -1 after the last */
    EffectRow row;
    Decoded decoded;
    uint8_t tombstone;
} Waiting;

typedef struct {
    int64_t key;
    EffectRow row;
} Deleted;

typedef struct {
    int64_t producer;
    int64_t head, tail; /* the producer's waiting rows (indices in waiting), -1 when none */
    uint8_t used;
} ProducerSlot;

typedef struct {
    PyObject_HEAD
    KeyStore store; /* the keys, each entry an EffectKey */
    uint8_t *values; /* the bytes of the values kept (and of superseded ones until compacted) */
    size_t values_len, values_cap, values_live;
    ProducerSlot *producers;
    size_t producer_mask, producer_count;
    Waiting *waiting;
    size_t waiting_len, waiting_cap, waiting_count; /* count: those still in a list */
    Deleted *deleted;
    size_t deleted_len, deleted_cap;
    uint8_t *scratch; /* a key built from decoded columns */
    size_t scratch_cap;
    int64_t rows; /* rows added */
    int mode;     /* 0 none yet, 1 add_records, 2 add_commit_rows */
    int keep_history;
    EffectHistory history; /* the rows that took effect, in the order they did */
} EffectsObject;

/* The entries (not in history mode, whose entries are HistoryKeys). */
static HOT_INLINE EffectKey *effect_keys(EffectsObject *e) {
    return (EffectKey *)e->store.entries;
}

/* The row number key k was first seen at, in either mode's entry. */
static HOT_INLINE int64_t *effects_first(EffectsObject *e, int64_t k) {
    return (int64_t *)((uint8_t *)key_store_entry(&e->store, (size_t)k) +
                       offsetof(EffectKey, first));
}

/* Each mode's key entry layout, as constants for the key table's probe (key_store_probe_in). */
#define EFFECT_LAYOUT \
    ((KeyLayout){sizeof(EffectKey), offsetof(EffectKey, bytes), EFFECT_KEY_INLINE})
#define HISTORY_LAYOUT \
    ((KeyLayout){sizeof(HistoryKey), offsetof(HistoryKey, bytes), HISTORY_KEY_INLINE})

/* The number of the key of these bytes (added if new, first seen at row number `index`; h:
   their commit_key_hash), -1 with an error set. history: e->keep_history, a constant where
   the caller's loop is made for one mode. In history mode a key's number is checked against
   the history's limit as the key is added (every number the history notes is one of these). */
static HOT_INLINE int64_t effects_key_in(EffectsObject *e, const int history,
                                         const uint8_t *bytes, size_t size, uint64_t h,
                                         int64_t index) {
    int added;
    int64_t k = key_store_find_or_add_in(&e->store, history ? HISTORY_LAYOUT : EFFECT_LAYOUT,
                                         bytes, (int32_t)size, h, &added, history);
    if (UNLIKELY(added) && k >= 0) {
        if (history && (uint64_t)k > HISTORY_MAX_KEY) {
            PyErr_Format(PyExc_ValueError, "CommitEffects: more than %lu keys in history mode",
                         (unsigned long)HISTORY_MAX_KEY);
            return -1;
        }
        *effects_first(e, k) = index;
        if (!history) effect_keys(e)[k].live.row = -1;
    }
    return k;
}

static HOT_INLINE int64_t effects_key(EffectsObject *e, const uint8_t *bytes, size_t size,
                                      uint64_t h, int64_t index) {
    return e->keep_history ? effects_key_in(e, 1, bytes, size, h, index)
                           : effects_key_in(e, 0, bytes, size, h, index);
}

static int effects_grow_producers(EffectsObject *e) {
    size_t old_size = e->producer_mask + 1, size = old_size * 2;
    ProducerSlot *old = e->producers, *slots = PyMem_Calloc(size, sizeof(ProducerSlot));
    if (!slots) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < old_size; i++) {
        if (!old[i].used) continue;
        uint64_t h = (uint64_t)old[i].producer * 0x9E3779B97F4A7C15ull;
        size_t at = (size_t)(h >> 20) & (size - 1);
        while (slots[at].used) at = (at + 1) & (size - 1);
        slots[at] = old[i];
    }
    PyMem_Free(old);
    e->producers = slots;
    e->producer_mask = size - 1;
    return 0;
}

static ProducerSlot *effects_producer(EffectsObject *e, int64_t producer) {
    if (e->producer_count * 2 >= e->producer_mask && effects_grow_producers(e) < 0) return NULL;
    uint64_t h = (uint64_t)producer * 0x9E3779B97F4A7C15ull;
    for (size_t at = (size_t)(h >> 20) & e->producer_mask;; at = (at + 1) & e->producer_mask) {
        ProducerSlot *slot = &e->producers[at];
        if (!slot->used) {
            *slot = (ProducerSlot){producer, -1, -1, 1};
            e->producer_count++;
            return slot;
        }
        if (slot->producer == producer) return slot;
    }
}

/* The value arena without the superseded values: each key's committed offset's and each
   waiting row's value copied into a new one (a row no longer waiting has length 0), of 4
   times their size or of 64 bytes for each key and waiting row if more: the arena fills up to
   twice the values kept before it is compacted again, and is not grown (each growth a copy)
   in between; and a compaction, which reads every key and waiting row, comes after some
   values' bytes for each, not after a few values where most are beside their keys (the
   transactional commits' values, and the few too long for an entry). */
static int effects_compact_values(EffectsObject *e) {
    size_t size = 0, at = 0, n = e->store.count + e->waiting_len;
    for (size_t i = 0; i < n; i++) {
        EffectRow *r = i < e->store.count ? &effect_keys(e)[i].live
                                          : &e->waiting[i - e->store.count].row;
        if (r->row >= 0 && r->length > 0 && !r->beside) size += (size_t)r->length;
    }
    size_t want = size > 16 * n ? size : 16 * n; /* n: entries held, so 16 * n fits */
    size_t cap = want < 1024 ? 4096 : want <= PY_SSIZE_T_MAX / 4 ? 4 * want : want;
    uint8_t *values = PyMem_Malloc(cap);
    if (!values) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        EffectRow *r = i < e->store.count ? &effect_keys(e)[i].live
                                          : &e->waiting[i - e->store.count].row;
        if (r->row < 0 || r->length <= 0 || r->beside) continue;
        memcpy(values + at, e->values + r->value, (size_t)r->length);
        r->value = at;
        at += (size_t)r->length;
    }
    PyMem_Free(e->values);
    e->values = values;
    e->values_cap = cap;
    e->values_len = e->values_live = at;
    return 0;
}

/* The waiting rows without those no longer in a producer's list, each list in its order. */
static int effects_compact_waiting(EffectsObject *e) {
    Waiting *waiting = PyMem_Malloc((e->waiting_count ? e->waiting_count : 1) * sizeof(Waiting));
    if (!waiting) {
        PyErr_NoMemory();
        return -1;
    }
    size_t at = 0;
    for (size_t p = 0; p <= e->producer_mask; p++) {
        ProducerSlot *slot = &e->producers[p];
        if (!slot->used || slot->head < 0) continue;
        int64_t w = slot->head;
        slot->head = slot->tail = -1;
        for (; w >= 0 && at < e->waiting_count; w = e->waiting[w].next) {
            waiting[at] = e->waiting[w];
            waiting[at].next = -1;
            if (slot->tail >= 0)
                waiting[slot->tail].next = (int64_t)at;
            else
                slot->head = (int64_t)at;
            slot->tail = (int64_t)at++;
        }
    }
    PyMem_Free(e->waiting);
    e->waiting = waiting;
    e->waiting_cap = e->waiting_count ? e->waiting_count : 1;
    e->waiting_len = at;
    return 0;
}

/* A row's value bytes into the arena (compacted first when superseded ones fill most of it). */
static int effects_keep_value(EffectsObject *e, EffectRow *r, const uint8_t *value,
                              int32_t length) {
    r->value = 0;
    r->length = e->keep_history ? 0 : length; /* the history keeps the decoded numbers only */
    if (r->length <= 0) return 0;
    if (e->values_len + (size_t)length > e->values_cap && e->values_len > 2 * e->values_live &&
        effects_compact_values(e) < 0)
        return -1;
    if (grow_array((void **)&e->values, &e->values_cap, e->values_len + (size_t)length, 1) < 0)
        return -1;
    memcpy(e->values + e->values_len, value, (size_t)length);
    r->value = e->values_len;
    e->values_len += (size_t)length;
    e->values_live += (size_t)length;
    return 0;
}

/* A row of key `key` noted in the history as it takes effect (history mode). */
static HOT_INLINE int effects_note(EffectsObject *e, int64_t key, int64_t row, int64_t committed,
                                   int64_t commit_time, int32_t epoch, int tombstone) {
    return history_note(&e->history, key, row, committed, commit_time, epoch, tombstone);
}

/* Row r of key `key` takes effect. */
static int effects_apply(EffectsObject *e, int64_t key, const EffectRow *r, const Decoded *d,
                         int tombstone) {
    if (e->keep_history) /* noted only: the history holds the rows, and the tombstones */
        return effects_note(e, key, r->row, d->committed, d->commit_time, d->epoch, tombstone);
    EffectKey *k = &effect_keys(e)[key];
    if (k->live.row >= 0 && k->live.length > 0 && !k->live.beside)
        e->values_live -= (size_t)k->live.length;
    if (!tombstone) {
        k->live = *r;
        if (r->length > 0) e->values_live += (size_t)r->length;
        return 0;
    }
    if (k->live.row >= 0) {
        if (grow_array((void **)&e->deleted, &e->deleted_cap, e->deleted_len + 1,
                       sizeof(Deleted)) < 0)
            return -1;
        e->deleted[e->deleted_len++] = (Deleted){key, *r};
    }
    k->live.row = -1;
    return 0;
}

/* One row: its kind (1 to 6), its key's number (kinds 1 to 4), its producer (3 to 6), and
   what is kept of it (kinds 1 to 4; its value's bytes not yet in the arena). */
static int effects_row(EffectsObject *e, uint8_t kind, int64_t key, int64_t producer,
                       EffectRow r, Decoded d, const uint8_t *value) {
    if (kind == 1 || kind == 2) {
        if (kind == 1 && effects_keep_value(e, &r, value, r.length) < 0) return -1;
        if (kind == 1) e->values_live -= (size_t)(r.length > 0 ? r.length : 0);
        return effects_apply(e, key, &r, &d, kind == 2);
    }
    ProducerSlot *p = effects_producer(e, producer);
    if (!p) return -1;
    if (kind == 3 || kind == 4) {
        if (e->waiting_len >= 2 * e->waiting_count + 1024 && effects_compact_waiting(e) < 0)
            return -1;
        if (kind == 3 && effects_keep_value(e, &r, value, r.length) < 0) return -1;
        if (kind == 4) r.length = 0;
        size_t w = e->waiting_len;
        if (grow_array((void **)&e->waiting, &e->waiting_cap, w + 1, sizeof(Waiting)) < 0)
            return -1;
        e->waiting[w] = (Waiting){key, -1, r, d, kind == 4};
        e->waiting_len++;
        e->waiting_count++;
        if (p->tail >= 0)
            e->waiting[p->tail].next = (int64_t)w;
        else
            p->head = (int64_t)w;
        p->tail = (int64_t)w;
        return 0;
    }
    int64_t w = p->head;
    p->head = p->tail = -1;
    for (; w >= 0; w = e->waiting[w].next) {
        Waiting *item = &e->waiting[w];
        if (item->row.length > 0) e->values_live -= (size_t)item->row.length;
        e->waiting_count--;
        if (kind == 6 &&
            effects_apply(e, item->key, &item->row, &item->decoded, item->tombstone) < 0)
            return -1;
        item->row.length = 0; /* its value no longer kept here */
    }
    if (!e->waiting_count) e->waiting_len = 0;
    return 0;
}

/* Where an offset commit key's part after the type ends, -1 if the bytes are not one (too
   short, a length below -1): int16 type, int16-length group, int16-length topic (a length of
   -1 or 0 holds no bytes), int32 partition, so 10 bytes at least. */
static HOT_INLINE Py_ssize_t commit_key_end(const uint8_t *key, Py_ssize_t size) {
    if (size < 10) return -1;
    Py_ssize_t group = (int16_t)load16(key + 2);
    if (group < -1) return -1;
    Py_ssize_t at = 4 + (group > 0 ? group : 0); /* the topic's length */
    if (at + 6 > size) return -1;                /* it and the partition, the topic empty */
    Py_ssize_t topic = (int16_t)load16(key + at);
    if (topic < -1) return -1;
    at += 6 + (topic > 0 ? topic : 0);
    return at <= size ? at : -1;
}

/* The size of a key's part after the type that is its identity: an offset commit key's bytes
   up to its partition, as the check reads them (commit_key_parts, commit_check.h), else as
   commit_key_end reads them (null strings), or all of them after the type when they are not
   one. */
static HOT_INLINE int32_t commit_key_size(const uint8_t *key, int32_t bytes) {
    Py_ssize_t group, topic;
    if (LIKELY(commit_key_parts(key + 2, bytes - 2, &group, &topic) == 0))
        return (int32_t)commit_key_parts_size(group, topic);
    Py_ssize_t end = commit_key_end(key, bytes);
    return (int32_t)((end < 0 ? bytes : end) - 2);
}

#define EFFECT_MAX_BUFFERS 12

typedef struct {
    Py_buffer views[EFFECT_MAX_BUFFERS];
    int count;
} BufferSet;

static void buffers_release(BufferSet *set) {
    for (int v = 0; v < set->count; v++) PyBuffer_Release(&set->views[v]);
    set->count = 0;
}

static int buffers_get(BufferSet *set, PyObject *const *args, int n) {
    for (int v = 0; v < n; v++) {
        if (PyObject_GetBuffer(args[v], &set->views[v], PyBUF_SIMPLE) < 0) {
            buffers_release(set);
            return -1;
        }
        set->count++;
    }
    return 0;
}

/* n rows' kinds (uint8, 0 to 6) and int64 column(s) of n values each. */
static int rows_valid(const Py_buffer *kinds, Py_ssize_t n, const Py_buffer *int64s, int count) {
    for (int c = 0; c < count; c++)
        if (int64s[c].len != n * (Py_ssize_t)sizeof(int64_t)) {
            PyErr_SetString(PyExc_ValueError, "a chunk's columns are not one length");
            return 0;
        }
    const uint8_t *kind = kinds->buf;
    for (Py_ssize_t i = 0; i < n; i++)
        if (kind[i] > 6) {
            PyErr_SetString(PyExc_ValueError, "a row's kind is 0 to 6");
            return 0;
        }
    return 1;
}

static int effects_mode(EffectsObject *e, int mode) {
    if (e->mode && e->mode != mode) {
        PyErr_SetString(PyExc_ValueError,
                        "CommitEffects: add_records and add_commit_rows do not mix");
        return -1;
    }
    e->mode = mode;
    return 0;
}

/* Room in the value arena for `length` more bytes: compacted first when superseded values fill
   most of it, else grown; -1 with MemoryError. */
static int effects_value_room(EffectsObject *e, size_t length) {
    if (e->values_len > 2 * e->values_live && effects_compact_values(e) < 0) return -1;
    return grow_array((void **)&e->values, &e->values_cap, e->values_len + length, 1);
}

/* n bytes copied from src to dst (no overlap), short ones without a call: words from the
   front and from the back that may overlap, as a row's value is a few dozen bytes. */
static HOT_INLINE void copy_short(uint8_t *dst, const uint8_t *src, size_t n) {
    uint64_t w[8];
    if (n >= 8 && n <= 16) {
        memcpy(&w[0], src, 8);
        memcpy(&w[1], src + n - 8, 8);
        memcpy(dst, &w[0], 8);
        memcpy(dst + n - 8, &w[1], 8);
    } else if (n > 16 && n <= 32) {
        memcpy(w, src, 16);
        memcpy(&w[2], src + n - 16, 16);
        memcpy(dst, w, 16);
        memcpy(dst + n - 16, &w[2], 16);
    } else if (n > 32 && n <= 64) {
        memcpy(w, src, 32);
        memcpy(&w[4], src + n - 32, 32);
        memcpy(dst, w, 32);
        memcpy(dst + n - 32, &w[4], 32);
    } else if (n) {
        memcpy(dst, src, n);
    }
}

/* A plain commit (kind 1) of key `key`, not in history mode, takes effect: what effects_row
   does with it (its value kept, then effects_apply), without building and copying the row. A
   value that fits beside the key's bytes in its entry is written there (nearly every row);
   else one as long as the key's committed one in the arena (the same consumer committing
   again) is written over it, which only the key held: the arena does not grow, and is
   compacted only when values change length. The value's bytes end at or before `data_end`
   (the end of the chunk's value data). */
static HOT_INLINE int effects_plain_commit(EffectsObject *e, int64_t key, int64_t row,
                                           int64_t time, uint16_t type, const uint8_t *value,
                                           int32_t length, const uint8_t *data_end) {
    size_t n = length > 0 ? (size_t)length : 0;
    EffectKey *k = &effect_keys(e)[key];
    size_t key_size = (size_t)k->key.size;
    /* A value of at most EFFECT_COPY bytes (a commit's 24, or 40 to 60 with metadata) beside a
       key of at most EFFECT_KEY_INLINE - EFFECT_COPY (so both fit) is copied as EFFECT_COPY
       bytes where the chunk's data holds that many (the bytes past it are never read): one
       branch that goes the same way nearly every row, where copy_short's choice between sizes
       mispredicted a quarter of the rows, and no test of the sum of the sizes after it. */
    if (LIKELY(n <= EFFECT_COPY && key_size <= EFFECT_KEY_INLINE - EFFECT_COPY &&
               (size_t)(data_end - value) >= EFFECT_COPY))
        memcpy(k->bytes + key_size, value, EFFECT_COPY);
    else if (key_size + n <= EFFECT_KEY_INLINE) /* beside the key all the same */
        copy_short(k->bytes + key_size, value, n);
    else
        goto apart;
    if (UNLIKELY(!k->live.beside) && k->live.row >= 0 && k->live.length > 0)
        e->values_live -= (size_t)k->live.length; /* its value was in the arena */
    k->live.row = row;
    k->live.time = time;
    k->live.length = length;
    k->live.type = type;
    k->live.beside = 1; /* (live.value is not read beside) */
    return 0;
apart:
    if (LIKELY(k->live.row >= 0 && k->live.length == length && !k->live.beside)) {
        copy_short(e->values + k->live.value, value, n);
        k->live.row = row;
        k->live.time = time;
        k->live.type = type;
        return 0;
    }
    if (UNLIKELY(e->values_len + n > e->values_cap) && effects_value_room(e, n) < 0) return -1;
    if (k->live.row >= 0 && k->live.length > 0 && !k->live.beside)
        e->values_live -= (size_t)k->live.length;
    copy_short(e->values + e->values_len, value, n);
    k->live.row = row; /* the history's fields are never read here */
    k->live.time = time;
    k->live.value = e->values_len;
    k->live.length = length;
    k->live.type = type;
    k->live.beside = 0;
    e->values_len += n;
    e->values_live += n;
    return 0;
}

#define EFFECTS_AHEAD 16 /* rows ahead whose key's slot is fetched (half of it: its entry) */
#define EFFECTS_RING (EFFECTS_AHEAD - 1) /* the ring of rows looked at ahead: an index mask */
#define EFFECTS_DECODED_RING (2 * EFFECTS_AHEAD - 1) /* history mode's ring of their numbers */

/* Row i's leader epoch: -1 where valid[i] is 0 (valid[i] - 1 is -1 or 0: or-ed in, no
   branch on the row). */
static inline int32_t epoch_at(const int32_t *epochs, const uint8_t *valid, Py_ssize_t i) {
    return epochs[i] | ((int32_t)valid[i] - 1);
}

/* A chunk's columns as add_records and add_checked read them (committed, commit_time, epoch,
   epoch_valid: add_records' history mode). */
typedef struct {
    const int32_t *koff, *voff;
    const uint8_t *kdata, *vdata, *flag;
    const int64_t *producer, *offset, *time;
    const int64_t *committed, *commit_time;
    const int32_t *epoch;
    const uint8_t *epoch_valid;
    uint32_t vlen; /* the value data's bytes */
} PassColumns;

/* What add_checked's pass found of the commits it checked: the rows refused (in order; room for
   every row), how many of those it accepted were newer than the specs, and the rows left for
   Python (rows_left.h; room for every row, reserved before the pass: nothing fails in it but
   the key store's). */
typedef struct {
    int32_t *refused;
    Py_ssize_t refused_len, newer;
    RowsLeft left;
} PassChecks;

/* Row j (kind, refused) to the rows left for Python (add_checked). */
static inline void pass_left(const PassColumns *c, Py_ssize_t j, uint8_t kind, int refused,
                             PassChecks *out) {
    rows_left_add(&out->left, j, kind, refused, c->koff, c->voff, c->flag, c->producer,
                  c->offset, c->time);
}

/* Row j looked at ahead of its turn: its kind into kind[j] (commit_kinds.h), and for kinds 1
   to 4 its key's size after the type (*size; an offset commit key's bytes up to its partition)
   and their hash; 0 for the other kinds. Its offsets lie in the data (offsets_rise). check
   (add_checked, a constant): a commit (kinds 1 to 4) is checked here, where its key's bytes are
   read (commit_check.h; a tombstone by its flag): a refused one is kind 0 and listed in out, an
   accepted one's committed offset, commit time and epoch go to *d (a tombstone's are 0, 0 and
   -1, as add_records is given them); the rows of other kinds and the refused ones go to
   out->left (rows_left.h). */
static HOT_INLINE uint64_t effects_look(const PassColumns *c, uint8_t *kind, Py_ssize_t j,
                                        int32_t *size, const int check, Decoded *d,
                                        PassChecks *out) {
    const uint8_t *k = c->kdata + c->koff[j];
    int32_t bytes = c->koff[j + 1] - c->koff[j]; /* 2 or more for kinds 1 to 4 */
    uint8_t kj = kind[j] = commit_kind(k, bytes, c->flag[j]);
    if (kj < 1 || kj > 4) {
        if (check) pass_left(c, j, kj, 0, out);
        return 0;
    }
    if (check) {
        CommitChecked cc;
        int32_t vs = c->voff[j];
        int rc = commit_check(k[1], k + 2, bytes - 2, kj & 1 /* 2, 4: tombstones */,
                              c->vdata + vs, c->voff[j + 1] - vs, &cc);
        if (UNLIKELY(rc < 0)) {
            kind[j] = 0;
            out->refused[out->refused_len++] = (int32_t)j;
            pass_left(c, j, 0, 1, out);
            return 0;
        }
        out->newer += cc.newer;
        *d = rc ? (Decoded){cc.value.offset, cc.value.commit_ts, cc.value.epoch}
                : (Decoded){0, 0, -1};
        *size = (int32_t)cc.key_size; /* (commit_key_size's, the key being one) */
    } else {
        *size = commit_key_size(k, bytes);
    }
    return commit_key_hash(k + 2, *size);
}

/* add_records' and add_checked's loop over a chunk's n rows, each row's kind written to
   kind[]; 0, or -1 with an error set. history: e->keep_history as a constant (the loop is made
   once for each mode, so a row tests no mode and a key's entry is found by the mode's layout,
   not the store's); check: add_checked's, a constant (each commit checked as it is looked at
   ahead, and a history row's numbers taken from its check, into out). */
static HOT_INLINE int effects_pass(EffectsObject *e, const PassColumns *c, Py_ssize_t n,
                                   uint8_t *kind, const int history, const int check,
                                   PassChecks *out) {
    const int32_t *koff = c->koff, *voff = c->voff;
    const uint8_t *kdata = c->kdata, *vdata = c->vdata;
    const int64_t *offset = c->offset, *time = c->time;
    /* The ring: row i's hash and key size at i & EFFECTS_RING, from EFFECTS_AHEAD rows before
       its turn to its turn (0 past the end and for rows without a key), and (history, check)
       its numbers. */
    uint64_t ring_hash[EFFECTS_AHEAD] = {0};
    int32_t ring_size[EFFECTS_AHEAD] = {0};
    /* history mode: twice the rows ahead, so that row i's numbers are read where the look wrote
       them (row i + EFFECTS_AHEAD's go to a slot of their own), not copied out first (lag's
       history pass at 1 M records: 9 M instructions) */
    Decoded ring_decoded[2 * EFFECTS_AHEAD] = {{0}}; /* a marker's slot is never read */
    for (Py_ssize_t j = 0; j < EFFECTS_AHEAD && j < n; j++)
        ring_hash[j] = effects_look(c, kind, j, &ring_size[j], check, &ring_decoded[j], out);
    const int64_t rows = e->rows; /* the chunk's first row number (read once, not each row) */
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t hash = ring_hash[i & EFFECTS_RING], ahead = 0;
        int32_t size = ring_size[i & EFFECTS_RING];
        Decoded d = {0, 0, 0};
        const Decoded *noted = &d; /* the numbers history mode notes */
        if (history && check)
            noted = &ring_decoded[i & EFFECTS_DECODED_RING];
        else if (history && kind[i])
            d = (Decoded){c->committed[i], c->commit_time[i],
                          epoch_at(c->epoch, c->epoch_valid, i)};
        const Py_ssize_t slot =
            history ? (i + EFFECTS_AHEAD) & EFFECTS_DECODED_RING : i & EFFECTS_RING;
        if (i + EFFECTS_AHEAD < n)
            ahead = effects_look(c, kind, i + EFFECTS_AHEAD, &ring_size[i & EFFECTS_RING], check,
                                 &ring_decoded[slot], out);
        ring_hash[i & EFFECTS_RING] = ahead;
        key_store_prefetch(&e->store, ahead);
        key_store_prefetch_entry(&e->store, history ? HISTORY_LAYOUT : EFFECT_LAYOUT,
                                 ring_hash[(i + EFFECTS_AHEAD / 2) & EFFECTS_RING]);
        uint8_t ki = kind[i];
        if (!ki) continue;
        int64_t key = -1;
        if (ki <= 4) {
            const uint8_t *k = kdata + koff[i];
            if ((key = effects_key_in(e, history, k + 2, (size_t)size, hash, rows + i)) < 0)
                return -1;
            if (!history && ki == 1) { /* a plain commit: nearly every row */
                if (effects_plain_commit(e, key, offset[i], time[i],
                                         (uint16_t)(k[0] << 8 | k[1]), vdata + voff[i],
                                         voff[i + 1] - voff[i], vdata + c->vlen) < 0)
                    return -1;
                continue;
            }
            if (history && ki <= 2) {
                /* a plain row in history mode takes effect at once: only noted (the keys'
                   live rows and the values are not kept in history mode) */
                if (effects_note(e, key, offset[i], noted->committed, noted->commit_time,
                                 noted->epoch, ki == 2) < 0)
                    return -1;
                continue;
            }
        }
        EffectRow r = {.row = offset[i], .time = time[i]};
        const uint8_t *value = NULL;
        if (ki <= 4) {
            const uint8_t *k = kdata + koff[i];
            r.type = (uint16_t)(k[0] << 8 | k[1]);
            if (ki & 1) {
                r.length = voff[i + 1] - voff[i];
                value = vdata + voff[i];
            }
        }
        if (effects_row(e, ki, key, c->producer[i], r, history ? *noted : d, value) < 0)
            return -1;
    }
    return 0;
}

/* The eight columns add_records and add_checked both take first (b's first eight views) into
   c, checked: n rows (the flags' bytes), their int64 columns of n, the key and value offsets
   rising within their data (offsets_rise). 0, or -1 with ValueError. */
static int pass_columns(const BufferSet *b, Py_ssize_t *rows, PassColumns *c) {
    const Py_buffer *v = b->views;
    Py_ssize_t n = *rows = v[4].len;
    for (int k = 5; k < 8; k++)
        if (v[k].len != n * (Py_ssize_t)sizeof(int64_t)) {
            PyErr_SetString(PyExc_ValueError, "a chunk's columns are not one length");
            return -1;
        }
    uint32_t klen = (uint32_t)(v[1].len < INT32_MAX ? v[1].len : INT32_MAX);
    uint32_t vlen = (uint32_t)(v[3].len < INT32_MAX ? v[3].len : INT32_MAX);
    *c = (PassColumns){.koff = v[0].buf, .voff = v[2].buf, .kdata = v[1].buf,
                       .vdata = v[3].buf, .flag = v[4].buf, .producer = v[5].buf,
                       .offset = v[6].buf, .time = v[7].buf, .vlen = vlen};
    if (v[0].len != (n + 1) * (Py_ssize_t)sizeof(int32_t) ||
        v[2].len != (n + 1) * (Py_ssize_t)sizeof(int32_t) ||
        !offsets_rise(c->koff, n, (int32_t)klen) || !offsets_rise(c->voff, n, (int32_t)vlen)) {
        PyErr_SetString(PyExc_ValueError, "a key's or value's offsets are outside its data");
        return -1;
    }
    return 0;
}

/* add_records(key_offsets, key_data, value_offsets, value_data, flags, producers, offsets,
   timestamps[, committed, commit_times, epochs, epoch_valid]) -> bytes: rows of the engine's
   columns, in log order: binary key and value (int32 offsets, rows + 1 of them from the first
   row, and data), uint8 flags (commit_kinds.h), int64 producer ids, record offsets and
   timestamps; in history mode (only), each row's decoded committed offset and commit timestamp
   (int64) and leader epoch (int32, as decoded: no cast of every row to int64), -1 where
   epoch_valid (uint8, 0 or 1) is 0 (a legacy value's: no np.where over the rows). Returns each
   row's kind (uint8, commit_kinds.h), read from its key bytes and flags. Every row is checked
   before any takes effect: the key and value offsets rise within their data (offsets_rise).
   One loop: each row's kind, key size and hash are read EFFECTS_AHEAD rows before its turn
   (into a ring of EFFECTS_AHEAD), so that the table's slot of a key a little ahead, then its
   entry, are fetched while a row is applied (a key is rarely in the cache), where a first
   loop over the chunk wrote them to two arrays the second read back. */
static PyObject *Effects_add_records(EffectsObject *e, PyObject *const *args,
                                     Py_ssize_t nargs) {
    if (!arity_ok(nargs, e->keep_history ? 12 : 8,
                  e->keep_history
                      ? "add_records(key_offsets, key_data, value_offsets, value_data, "
                        "flags, producers, offsets, timestamps, committed, commit_times, "
                        "epochs, epoch_valid) in history mode"
                      : "add_records(key_offsets, key_data, value_offsets, value_data, "
                        "flags, producers, offsets, timestamps)"))
        return NULL;
    if (effects_mode(e, 1) < 0) return NULL;
    BufferSet b = {.count = 0};
    if (buffers_get(&b, args, (int)nargs) < 0) return NULL;
    PyObject *result = NULL, *kinds = NULL;
    Py_ssize_t n;
    PassColumns c;
    if (pass_columns(&b, &n, &c) < 0) goto done;
    if (nargs == 12) {
        if (b.views[8].len != n * (Py_ssize_t)sizeof(int64_t) ||
            b.views[9].len != n * (Py_ssize_t)sizeof(int64_t) ||
            b.views[10].len != n * (Py_ssize_t)sizeof(int32_t) || b.views[11].len != n) {
            PyErr_SetString(PyExc_ValueError, "a chunk's columns are not one length");
            goto done;
        }
        c.committed = b.views[8].buf;
        c.commit_time = b.views[9].buf;
        c.epoch = b.views[10].buf;
        c.epoch_valid = b.views[11].buf;
    }
    if (!(kinds = PyBytes_FromStringAndSize(NULL, n))) goto done;
    uint8_t *kind = (uint8_t *)PyBytes_AS_STRING(kinds);
    if ((e->keep_history ? effects_pass(e, &c, n, kind, 1, 0, NULL)
                         : effects_pass(e, &c, n, kind, 0, 0, NULL)) < 0)
        goto done;
    e->rows += n;
    result = kinds;
    kinds = NULL;
done:
    Py_XDECREF(kinds);
    buffers_release(&b);
    return result;
}

/* add_checked(key_offsets, key_data, value_offsets, value_data, flags, producers, offsets,
   timestamps, waiting) -> (kinds, newer, refused, left): add_records' rows as the engine's
   record columns give them, each offset commit checked in the pass as it is read (commit_check.h, the check
   commit_columns decodes with), where add_records takes rows decoded before: flags as
   add_records' but TOMBSTONE where the value is null and DECODED saying only that the row was
   read; a commit refused is kind 0, as one that did not decode. In history mode each commit's
   committed offset, commit time and leader epoch are read from its value as it is checked.
   Returns each row's kind (as add_records), how many commits of kinds 1 to 4 were of a value
   version newer than the specs, the rows refused (ascending; commits of kinds 1 to 4 but
   for the check), and the rows left for Python: those read of kinds 0, 5 and 6, the refused
   among them, in order (bytes of rows_left.h's records), but the markers the view does nothing
   with (rows_left_drop_idle; waiting: int64 ids of the producers it holds records of). */
static PyObject *Effects_add_checked(EffectsObject *e, PyObject *const *args,
                                     Py_ssize_t nargs) {
    if (!arity_ok(nargs, 9,
                  "add_checked(key_offsets, key_data, value_offsets, value_data, flags, "
                  "producers, offsets, timestamps, waiting)"))
        return NULL;
    if (effects_mode(e, 1) < 0) return NULL;
    BufferSet b = {.count = 0};
    if (buffers_get(&b, args, 9) < 0) return NULL;
    PyObject *result = NULL, *kinds = NULL, *refused = NULL, *left = NULL;
    PassChecks out = {.refused = NULL};
    Py_ssize_t n;
    PassColumns c;
    if (pass_columns(&b, &n, &c) < 0) goto done;
    if (n > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "add_checked: more than 2**31 rows in a chunk");
        goto done;
    }
    if (b.views[8].len % (Py_ssize_t)sizeof(int64_t)) {
        PyErr_SetString(PyExc_ValueError, "add_checked: the waiting producers are not int64");
        goto done;
    }
    /* room for every row refused and left, made before the pass changes the key store: a row
       that did not fit in the pass left the chunk applied but not counted (e->rows) and its
       rows not given back */
    if (!(out.refused = PyMem_Malloc((n ? (size_t)n : 1) * sizeof(int32_t)))) {
        PyErr_NoMemory();
        goto done;
    }
    if (rows_left_reserve(&out.left, (size_t)n) < 0) goto done;
    if (!(kinds = PyBytes_FromStringAndSize(NULL, n))) goto done;
    uint8_t *kind = (uint8_t *)PyBytes_AS_STRING(kinds);
    if ((e->keep_history ? effects_pass(e, &c, n, kind, 1, 1, &out)
                         : effects_pass(e, &c, n, kind, 0, 1, &out)) < 0)
        goto done;
    e->rows += n;
    rows_left_drop_idle(&out.left, c.kdata, c.vdata, b.views[8].buf,
                        (size_t)b.views[8].len / sizeof(int64_t));
    if (!(refused = PyList_New(out.refused_len))) goto done;
    for (Py_ssize_t r = 0; r < out.refused_len; r++) {
        PyObject *row = PyLong_FromLong(out.refused[r]);
        if (!row) goto done;
        PyList_SET_ITEM(refused, r, row);
    }
    left = PyBytes_FromStringAndSize((const char *)out.left.rows,
                                     (Py_ssize_t)(out.left.len * sizeof(RowLeft)));
    if (!left) goto done;
    result = Py_BuildValue("(OnOO)", kinds, out.newer, refused, left);
done:
    Py_XDECREF(kinds);
    Py_XDECREF(refused);
    Py_XDECREF(left);
    PyMem_Free(out.refused);
    rows_left_free(&out.left);
    buffers_release(&b);
    return result;
}

/* add_commit_rows(group_offsets, group_data, topic_offsets, topic_data, partitions, kinds,
   producers): commit rows (codegen.dumps.views.offsets.COMMIT_ROW_SCHEMA) in log order, by
   their decoded key: two string columns (int32 offsets and data; no nulls among the rows of
   kinds 1 to 4) and int32 partitions; uint8 kinds, int64 producer ids. They are numbered from
   0 in the order added, and so is the answer. */
static PyObject *Effects_add_commit_rows(EffectsObject *e, PyObject *const *args,
                                         Py_ssize_t nargs) {
    if (!arity_ok(nargs, 7,
                  "add_commit_rows(group_offsets, group_data, topic_offsets, topic_data, "
                  "partitions, kinds, producers)"))
        return NULL;
    if (effects_mode(e, 2) < 0) return NULL;
    BufferSet b = {.count = 0};
    if (buffers_get(&b, args, 7) < 0) return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = b.views[5].len;
    if (!rows_valid(&b.views[5], n, &b.views[6], 1)) goto done;
    if (b.views[4].len != n * (Py_ssize_t)sizeof(int32_t) ||
        !offsets_valid(&b.views[0], n, b.views[1].len) ||
        !offsets_valid(&b.views[2], n, b.views[3].len)) {
        PyErr_SetString(PyExc_ValueError, "a chunk's key columns do not hold its rows");
        goto done;
    }
    const int32_t *group = b.views[0].buf, *topic = b.views[2].buf, *partition = b.views[4].buf;
    const uint8_t *kind = b.views[5].buf;
    const int64_t *producer = b.views[6].buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t key = -1, row = e->rows++;
        if (!kind[i]) continue;
        if (kind[i] <= 4) {
            /* the key's bytes after its type, as add_records keeps them */
            int32_t g = group[i + 1] - group[i], t = topic[i + 1] - topic[i];
            if (g > INT16_MAX || t > INT16_MAX) {
                PyErr_SetString(PyExc_ValueError, "a key's group or topic is longer than a "
                                                  "key holds (32,767 bytes)");
                goto done;
            }
            size_t size = 2 + (size_t)g + 2 + (size_t)t + 4;
            if (grow_array((void **)&e->scratch, &e->scratch_cap, size, 1) < 0) goto done;
            uint8_t *s = e->scratch;
            s[0] = (uint8_t)(g >> 8), s[1] = (uint8_t)g;
            memcpy(s + 2, (const uint8_t *)b.views[1].buf + group[i], (size_t)g);
            s += 2 + g;
            s[0] = (uint8_t)(t >> 8), s[1] = (uint8_t)t;
            memcpy(s + 2, (const uint8_t *)b.views[3].buf + topic[i], (size_t)t);
            s += 2 + t;
            uint32_t p = (uint32_t)partition[i];
            s[0] = (uint8_t)(p >> 24), s[1] = (uint8_t)(p >> 16), s[2] = (uint8_t)(p >> 8);
            s[3] = (uint8_t)p;
            uint64_t h = commit_key_hash(e->scratch, (Py_ssize_t)size);
            if ((key = effects_key(e, e->scratch, size, h, row)) < 0) goto done;
        }
        EffectRow r = {.row = row};
        if (effects_row(e, kind[i], key, producer[i], r, (Decoded){0, 0, 0}, NULL) < 0)
            goto done;
    }
    result = Py_NewRef(Py_None);
done:
    buffers_release(&b);
    return result;
}

/* The rows as (rows, times, key offsets, key data, value offsets, value data): int64 record
   offsets or row numbers, int64 timestamps, each key's bytes with its record type and each
   value's (empty for a tombstone) as binary columns' buffers. */
static PyObject *effects_rows_out(EffectsObject *e, size_t n, const EffectRow *const *rows,
                                  const int64_t *keys) {
    size_t key_bytes = 0, value_bytes = 0;
    for (size_t i = 0; i < n; i++) {
        key_bytes += 2 + (size_t)effect_keys(e)[keys[i]].key.size;
        value_bytes += (size_t)(rows[i]->length > 0 ? rows[i]->length : 0);
    }
    if (key_bytes > INT32_MAX || value_bytes > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "the answer's keys or values pass 2 GiB");
        return NULL;
    }
    PyObject *out[6] = {
        PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * 8)),
        PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * 8)),
        PyBytes_FromStringAndSize(NULL, (Py_ssize_t)((n + 1) * 4)),
        PyBytes_FromStringAndSize(NULL, (Py_ssize_t)key_bytes),
        PyBytes_FromStringAndSize(NULL, (Py_ssize_t)((n + 1) * 4)),
        PyBytes_FromStringAndSize(NULL, (Py_ssize_t)value_bytes),
    };
    PyObject *result = NULL;
    for (int i = 0; i < 6; i++)
        if (!out[i]) goto done;
    int64_t *row = (int64_t *)PyBytes_AS_STRING(out[0]), *time = (int64_t *)PyBytes_AS_STRING(out[1]);
    int32_t *koff = (int32_t *)PyBytes_AS_STRING(out[2]), *voff = (int32_t *)PyBytes_AS_STRING(out[4]);
    uint8_t *kdata = (uint8_t *)PyBytes_AS_STRING(out[3]), *vdata = (uint8_t *)PyBytes_AS_STRING(out[5]);
    size_t ka = 0, va = 0;
    koff[0] = voff[0] = 0;
    for (size_t i = 0; i < n; i++) {
        const EffectRow *r = rows[i];
        const EffectKey *k = &effect_keys(e)[keys[i]];
        row[i] = r->row;
        time[i] = r->time;
        kdata[ka] = (uint8_t)(r->type >> 8), kdata[ka + 1] = (uint8_t)r->type;
        const uint8_t *key_bytes = key_store_bytes(&e->store, &k->key);
        if (k->key.size) memcpy(kdata + ka + 2, key_bytes, (size_t)k->key.size);
        ka += 2 + (size_t)k->key.size;
        koff[i + 1] = (int32_t)ka;
        if (r->length > 0) {
            memcpy(vdata + va,
                   r->beside ? key_bytes + k->key.size : e->values + r->value,
                   (size_t)r->length);
            va += (size_t)r->length;
        }
        voff[i + 1] = (int32_t)va;
    }
    result = PyTuple_New(6);
    if (!result) goto done;
    for (int i = 0; i < 6; i++) {
        PyTuple_SET_ITEM(result, i, out[i]);
        out[i] = NULL;
    }
done:
    for (int i = 0; i < 6; i++) Py_XDECREF(out[i]);
    return result;
}

static int compare_live(const void *a, const void *b) {
    int64_t x = (*(const EffectKey *const *)a)->live.row;
    int64_t y = (*(const EffectKey *const *)b)->live.row;
    return (x > y) - (x < y);
}

/* live() -> (rows, times, key offsets, key data, value offsets, value data): the keys'
   committed offsets, by row (record offset or row number) ascending. */
static int effects_not_history(EffectsObject *e, const char *what) {
    if (!e->keep_history) return 0;
    PyErr_Format(PyExc_ValueError, "CommitEffects: %s() is not kept in history mode (keyed() "
                                   "gives the commits and tombstones)", what);
    return -1;
}

static PyObject *Effects_live(EffectsObject *e, PyObject *unused) {
    if (effects_not_history(e, "live") < 0) return NULL;
    size_t n = 0;
    EffectKey *all = effect_keys(e);
    for (size_t k = 0; k < e->store.count; k++) n += all[k].live.row >= 0;
    const EffectKey **live = PyMem_Malloc((n ? n : 1) * sizeof(EffectKey *));
    const EffectRow **rows = PyMem_Malloc((n ? n : 1) * sizeof(EffectRow *));
    int64_t *keys = PyMem_Malloc((n ? n : 1) * sizeof(int64_t));
    PyObject *out = NULL;
    if (!live || !rows || !keys) {
        PyErr_NoMemory();
        goto done;
    }
    size_t i = 0;
    for (size_t k = 0; k < e->store.count; k++)
        if (all[k].live.row >= 0) live[i++] = &all[k];
    if (n) qsort(live, n, sizeof(EffectKey *), compare_live);
    for (i = 0; i < n; i++) {
        rows[i] = &live[i]->live;
        keys[i] = live[i] - all;
    }
    out = effects_rows_out(e, n, rows, keys);
done:
    PyMem_Free(live);
    PyMem_Free(rows);
    PyMem_Free(keys);
    return out;
}

/* take_deleted() -> (rows, times, key offsets, key data, value offsets, value data): the
   tombstones that deleted a committed offset since the last call, in the order they took
   effect. */
static PyObject *Effects_take_deleted(EffectsObject *e, PyObject *unused) {
    if (effects_not_history(e, "take_deleted") < 0) return NULL;
    size_t n = e->deleted_len;
    const EffectRow **rows = PyMem_Malloc((n ? n : 1) * sizeof(EffectRow *));
    int64_t *keys = PyMem_Malloc((n ? n : 1) * sizeof(int64_t));
    PyObject *out = NULL;
    if (!rows || !keys) {
        PyErr_NoMemory();
    } else {
        for (size_t i = 0; i < n; i++) {
            rows[i] = &e->deleted[i].row;
            keys[i] = e->deleted[i].key;
        }
        if ((out = effects_rows_out(e, n, rows, keys))) e->deleted_len = 0;
    }
    PyMem_Free(rows);
    PyMem_Free(keys);
    return out;
}

/* 16 bytes, where int64 counts made it 32: the tallies of a partition of the 16 M-record dump's
   1,668 keys then fit L1 (27 KB) for the two passes that read and write one a row at random. */
typedef struct {
    uint32_t commits, deleted; /* counts, then (second pass) where the next one is written */
    uint32_t last;             /* the place of the key's last row in the history */
    uint8_t last_tombstone, seen; /* seen: 1 given in the order, 2 a commit of it written */
} KeyTally;

#define KEYED_OUTPUTS 10

/* Each history row's place in keyed()'s outputs (places[i], effect_history.h) from its key's
   tally (commits and deleted: where its next commit and deletion go), the row's record offset
   put there as it is found (rows, or deleted_at for a deletion): one pass over the history
   less than a scatter of it after. ahead (a constant where inlined): the key's next line of
   rows asked for ahead (history_scatter's HISTORY_AHEAD_KEYS). */
static HOT_INLINE void keyed_places(const EffectHistory *h, KeyTally *restrict tally,
                                    uint32_t *restrict places, int64_t *restrict rows,
                                    int64_t *restrict deleted_at, const int ahead) {
    const size_t n = h->len;
    const uint32_t *restrict keys = h->keys;
    const int64_t *restrict from_rows = h->rows;
    for (size_t i = 0; i < n; i++) {
        const uint32_t key = keys[i];
        KeyTally *t = &tally[key >> 1];
        if (key & 1) {
            /* after the key's first commit (seen 2: one of its commits placed) */
            if (t->seen == 2) {
                places[i] = HISTORY_DELETION + (uint32_t)t->deleted;
                deleted_at[t->deleted++] = from_rows[i];
            } else {
                places[i] = HISTORY_NO_PLACE;
            }
            continue;
        }
        const uint32_t p = t->commits++;
        places[i] = p;
        t->seen = 2;
        if (ahead) __builtin_prefetch(&rows[p + HISTORY_AHEAD_ITEMS], 1, 3);
        rows[p] = from_rows[i];
    }
}

/* keyed(order) -> (keys, bounds, rows, commit_times, committed, epochs, deleted_bounds,
   deleted, live, last), history mode: the rows that took effect by key. order: int64 key
   numbers, each of the keys once, in the order wanted. Of each key with a commit among them
   (keys: their numbers, in that order; bytes of int64 unless said), its commits are rows
   bounds[k]:bounds[k + 1] of rows (record offsets), commit_times, committed (offsets) and
   epochs, in the order they took effect; the record offsets of its tombstones after its first
   commit are deleted[k] (a list of lists of int), deleted_bounds[k]:deleted_bounds[k + 1] of
   them all; live (uint8) whether its last row is a commit, last that row's place in the
   history. */
static PyObject *Effects_keyed(EffectsObject *e, PyObject *arg) {
    if (!e->keep_history) {
        PyErr_SetString(PyExc_ValueError,
                        "CommitEffects: keyed() needs CommitEffects(history=True)");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    const EffectHistory *history = &e->history;
    size_t nk = e->store.count, n = history->len;
    PyObject *out[KEYED_OUTPUTS] = {NULL};
    PyObject *result = NULL;
    KeyTally *tally = NULL;
    uint32_t *places = NULL;
    if ((size_t)view.len != nk * sizeof(int64_t)) {
        PyErr_Format(PyExc_ValueError, "keyed(order): give each of the %zu keys' numbers once "
                                       "(int64)", nk);
        goto done;
    }
    const int64_t *order = view.buf;
    if (n > UINT32_MAX) { /* KeyTally's counts and places */
        PyErr_Format(PyExc_ValueError, "keyed(): more than %lu rows in the history",
                     (unsigned long)UINT32_MAX);
        goto done;
    }
    if (!(tally = PyMem_Calloc(nk ? nk : 1, sizeof(KeyTally)))) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t i = 0; i < nk; i++) {
        int64_t k = order[i];
        if (k < 0 || (size_t)k >= nk || tally[k].seen) {
            PyErr_Format(PyExc_ValueError, "keyed(order): key number %lld is out of range or "
                                           "given twice (%zu keys)", (long long)k, nk);
            goto done;
        }
        tally[k].seen = 1;
    }
    size_t commits = 0, deleted = 0, kept = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t key = history->keys[i];
        KeyTally *t = &tally[key >> 1];
        if (key & 1)
            t->deleted += t->commits > 0;
        else
            t->commits++;
        t->last = (uint32_t)i;
        t->last_tombstone = key & 1;
    }
    for (size_t i = 0; i < nk; i++) {
        const KeyTally *t = &tally[order[i]];
        kept += t->commits > 0;
        commits += (size_t)t->commits;
        deleted += (size_t)(t->commits > 0 ? t->deleted : 0);
    }
    /* at most one output item per history row or key: the sizes below cannot overflow as the
       history and key arrays of larger items are held already */
    Py_ssize_t sizes[KEYED_OUTPUTS] = {
        (Py_ssize_t)(kept * 8),       (Py_ssize_t)((kept + 1) * 8), (Py_ssize_t)(commits * 8),
        (Py_ssize_t)(commits * 8),    (Py_ssize_t)(commits * 8),    (Py_ssize_t)(commits * 8),
        (Py_ssize_t)((kept + 1) * 8), (Py_ssize_t)(deleted * 8),    (Py_ssize_t)kept,
        (Py_ssize_t)(kept * 8),
    };
    if (commits >= HISTORY_DELETION || deleted >= HISTORY_DELETION - 1) {
        PyErr_Format(PyExc_ValueError, "keyed(): more than %lu commits or deletions",
                     (unsigned long)HISTORY_DELETION - 1);
        goto done;
    }
    if (!(places = PyMem_Malloc((n ? n : 1) * sizeof(uint32_t)))) {
        PyErr_NoMemory();
        goto done;
    }
    for (int o = 0; o < KEYED_OUTPUTS; o++)
        if (!(out[o] = PyBytes_FromStringAndSize(NULL, sizes[o]))) goto done;
    int64_t *keys = (int64_t *)PyBytes_AS_STRING(out[0]), *bounds = (int64_t *)PyBytes_AS_STRING(out[1]);
    int64_t *rows = (int64_t *)PyBytes_AS_STRING(out[2]), *times = (int64_t *)PyBytes_AS_STRING(out[3]);
    int64_t *committed = (int64_t *)PyBytes_AS_STRING(out[4]);
    int64_t *epochs = (int64_t *)PyBytes_AS_STRING(out[5]);
    int64_t *deleted_bounds = (int64_t *)PyBytes_AS_STRING(out[6]);
    int64_t *deleted_at = (int64_t *)PyBytes_AS_STRING(out[7]);
    uint8_t *live = (uint8_t *)PyBytes_AS_STRING(out[8]);
    int64_t *last = (int64_t *)PyBytes_AS_STRING(out[9]);
    size_t c = 0, d = 0, k = 0;
    bounds[0] = deleted_bounds[0] = 0;
    for (size_t i = 0; i < nk; i++) {
        KeyTally *t = &tally[order[i]];
        if (!t->commits) continue;
        keys[k] = order[i];
        live[k] = !t->last_tombstone;
        last[k] = t->last;
        uint32_t key_commits = t->commits, key_deleted = t->deleted;
        t->commits = (uint32_t)c; /* now where the key's next commit and deletion are written */
        t->deleted = (uint32_t)d;
        c += (size_t)key_commits;
        d += (size_t)key_deleted;
        bounds[++k] = (int64_t)c;
        deleted_bounds[k] = (int64_t)d;
    }
    int64_t *const outputs[4] = {rows, times, committed, epochs};
    history_outputs_advise(outputs, commits);
    if (kept <= HISTORY_AHEAD_KEYS)
        keyed_places(history, tally, places, rows, deleted_at, 1);
    else
        keyed_places(history, tally, places, rows, deleted_at, 0);
    history_scatter(history, places, kept, times, committed, epochs);
    /* each key's deletions as a list of ints (what lag keeps per key): made here, where a
       slice a key in Python cost 1.3 k instructions */
    PyObject *lists = PyList_New((Py_ssize_t)kept);
    if (!lists) goto done;
    for (size_t j = 0; j < kept; j++) {
        PyObject *list = PyList_New((Py_ssize_t)(deleted_bounds[j + 1] - deleted_bounds[j]));
        if (!list) {
            Py_DECREF(lists);
            goto done;
        }
        PyList_SET_ITEM(lists, (Py_ssize_t)j, list);
        for (int64_t at = deleted_bounds[j]; at < deleted_bounds[j + 1]; at++) {
            PyObject *v = PyLong_FromLongLong(deleted_at[at]);
            if (!v) {
                Py_DECREF(lists);
                goto done;
            }
            PyList_SET_ITEM(list, (Py_ssize_t)(at - deleted_bounds[j]), v);
        }
    }
    Py_SETREF(out[7], lists);
    result = PyTuple_New(KEYED_OUTPUTS);
    if (!result) goto done;
    for (int o = 0; o < KEYED_OUTPUTS; o++) {
        PyTuple_SET_ITEM(result, o, out[o]);
        out[o] = NULL;
    }
done:
    for (int o = 0; o < KEYED_OUTPUTS; o++) Py_XDECREF(out[o]);
    PyMem_Free(tally);
    PyMem_Free(places);
    PyBuffer_Release(&view);
    return result;
}

/* effect_rows() -> int64 bytes, history mode: the rows that took effect (record offsets, or
   row numbers of add_commit_rows), in the order they did. */
static PyObject *Effects_effect_rows(EffectsObject *e, PyObject *unused) {
    if (!e->keep_history) {
        PyErr_SetString(PyExc_ValueError,
                        "CommitEffects: effect_rows() needs CommitEffects(history=True)");
        return NULL;
    }
    return PyBytes_FromStringAndSize((const char *)e->history.rows,
                                     (Py_ssize_t)(e->history.len * 8));
}

/* key_rows(start) -> int64 bytes: the row number each key from number `start` on was first
   seen at. */
static PyObject *Effects_key_rows(EffectsObject *e, PyObject *arg) {
    Py_ssize_t start = PyLong_AsSsize_t(arg);
    if (start == -1 && PyErr_Occurred()) return NULL;
    if (start < 0 || (size_t)start > e->store.count) {
        PyErr_Format(PyExc_ValueError, "key_rows(%zd): give 0 to the keys' count (%zu)", start,
                     e->store.count);
        return NULL;
    }
    size_t n = e->store.count - (size_t)start;
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * sizeof(int64_t)));
    if (!out) return NULL;
    int64_t *first = (int64_t *)PyBytes_AS_STRING(out);
    for (size_t i = 0; i < n; i++) first[i] = *effects_first(e, start + (int64_t)i);
    return out;
}

/* reserve(rows), history mode: room for `rows` rows in the history before they are added (an
   estimate: more rows grow it as before). */
static PyObject *Effects_reserve(EffectsObject *e, PyObject *arg) {
    if (!e->keep_history) {
        PyErr_SetString(PyExc_ValueError,
                        "CommitEffects: reserve() needs CommitEffects(history=True)");
        return NULL;
    }
    Py_ssize_t rows = PyLong_AsSsize_t(arg);
    if (rows == -1 && PyErr_Occurred()) return NULL;
    if (rows < 0) {
        PyErr_Format(PyExc_ValueError, "reserve(%zd): give a count of rows (0 or more)", rows);
        return NULL;
    }
    if (history_reserve(&e->history, (size_t)rows) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Effects_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"history", NULL};
    int keep_history = 0;
    if (PyTuple_GET_SIZE(args)) {
        PyErr_SetString(PyExc_TypeError,
                        "CommitEffects() takes no arguments but the keyword history");
        return NULL;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$p:CommitEffects", names, &keep_history))
        return NULL;
    EffectsObject *e = (EffectsObject *)type->tp_alloc(type, 0);
    if (!e) return NULL;
    e->keep_history = keep_history;
    if (keep_history) history_made(); /* its columns kept when freed (history_release) */
    e->producer_mask = 63;
    KeyLayout layout = keep_history ? HISTORY_LAYOUT : EFFECT_LAYOUT;
    if (key_store_init(&e->store, layout.entry_size) < 0) {
        Py_DECREF(e);
        return NULL;
    }
    e->store.inline_at = layout.inline_at;
    e->store.inline_cap = layout.inline_cap;
    e->producers = PyMem_Calloc(e->producer_mask + 1, sizeof(ProducerSlot));
    if (!e->producers) {
        Py_DECREF(e);
        return PyErr_NoMemory();
    }
    return (PyObject *)e;
}

static void Effects_dealloc(EffectsObject *e) {
    key_store_free(&e->store);
    PyMem_Free(e->values);
    PyMem_Free(e->producers);
    PyMem_Free(e->waiting);
    PyMem_Free(e->deleted);
    PyMem_Free(e->scratch);
    history_free(&e->history);
    Py_TYPE(e)->tp_free((PyObject *)e);
}

static PyObject *Effects_kept_bytes(EffectsObject *e, void *closure) {
    return PyLong_FromSize_t(e->store.arena_len + e->values_len);
}

static PyObject *Effects_deleted_count(EffectsObject *e, void *closure) {
    return PyLong_FromSize_t(e->deleted_len);
}

static PyObject *Effects_key_count(EffectsObject *e, void *closure) {
    return PyLong_FromSize_t(e->store.count);
}

static PyGetSetDef Effects_getset[] = {
    {"kept_bytes", (getter)Effects_kept_bytes, NULL,
     "The bytes of the keys and values held (superseded values until compacted).", NULL},
    {"deleted_count", (getter)Effects_deleted_count, NULL,
     "The deleting tombstones take_deleted() would give.", NULL},
    {"key_count", (getter)Effects_key_count, NULL, "The keys seen so far.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef Effects_methods[] = {
    {"add_records", (PyCFunction)(void (*)(void))Effects_add_records, METH_FASTCALL,
     "add_records(key_offsets, key_data, value_offsets, value_data, flags, producers, "
     "offsets, timestamps) -> kinds: rows of the engine's columns, in log order."},
    {"add_checked", (PyCFunction)(void (*)(void))Effects_add_checked, METH_FASTCALL,
     "add_checked(key_offsets, key_data, value_offsets, value_data, flags, producers, "
     "offsets, timestamps, waiting) -> (kinds, newer, refused, left): rows of the engine's "
     "columns, in log order, each offset commit checked as it is read."},
    {"add_commit_rows", (PyCFunction)(void (*)(void))Effects_add_commit_rows, METH_FASTCALL,
     "add_commit_rows(group_offsets, group_data, topic_offsets, topic_data, partitions, "
     "kinds, producers): commit rows in log order, by their decoded key."},
    {"live", (PyCFunction)Effects_live, METH_NOARGS,
     "live() -> (rows, times, key offsets, key data, value offsets, value data): the "
     "committed offsets."},
    {"take_deleted", (PyCFunction)Effects_take_deleted, METH_NOARGS,
     "take_deleted() -> (rows, times, key offsets, key data, value offsets, value data): the "
     "deleting tombstones since the last call."},
    {"keyed", (PyCFunction)Effects_keyed, METH_O,
     "keyed(order) -> (keys, bounds, rows, commit_times, committed, epochs, deleted_bounds, "
     "deleted, live, last): the rows that took effect, by key (CommitEffects(history=True))."},
    {"effect_rows", (PyCFunction)Effects_effect_rows, METH_NOARGS,
     "effect_rows() -> the rows that took effect, in the order they did "
     "(CommitEffects(history=True))."},
    {"reserve", (PyCFunction)Effects_reserve, METH_O,
     "reserve(rows): room for this many history rows before they are added "
     "(CommitEffects(history=True))."},
    {"key_rows", (PyCFunction)Effects_key_rows, METH_O,
     "key_rows(start) -> the row number each key from number start on was first seen at."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject EffectsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "codegen.native._records.CommitEffects",
    .tp_basicsize = sizeof(EffectsObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The committed offsets of one log partition, in one pass (commit_effects.h).",
    .tp_new = Effects_new,
    .tp_dealloc = (destructor)Effects_dealloc,
    .tp_methods = Effects_methods,
    .tp_getset = Effects_getset,
};
