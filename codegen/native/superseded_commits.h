/* superseded_commits: the plain offset commits of a log partition's rows that a later plain
 * commit of the same key supersedes, found on the record loop's key bytes before anything is
 * taken out of the decoded columns (codegen.dumps.views.offsets.CommittedOffsets).
 *
 * A plain commit (kind 1: not transactional, with a value) is superseded when the next plain
 * row of its key is a plain commit too; a plain tombstone (kind 2) supersedes nothing and is
 * never superseded, so the commit just before each tombstone stays, as reduce_plain keeps it.
 * A transactional tombstone (kind 3) keeps more (the plain commit of its key before its
 * marker, which may come later; every plain commit after it while its marker is not read):
 * its key's rows are never superseded, in any chunk, before or after it. Rows of kind 0
 * (transactional commits, markers, other records, rows that did not decode) are passed over. The key of an offset commit is int16 record type (0 or 1, one layout), string
 * group, string topic, int32 partition: equal decoded keys are equal bytes after the type,
 * which is what is hashed. A key of another shape (trailing bytes, a negative length) answers
 * None: the caller reduces those rows without this step.
 */

typedef struct {
    uint64_t hash;
    size_t at; /* the key's bytes in the table's arena */
    int32_t size;
    int32_t chunk;
    int32_t row; /* the key's last plain row so far, in chunk */
    uint8_t kind;
    uint8_t used;
    uint8_t kept; /* a transactional tombstone's key */
} CommitSlot;

/* The keys seen, by open addressing, grown to stay at most half full, each key's bytes copied
   once into an arena: sized by the keys (tens of thousands), not the rows, so that a lookup
   stays in the caches rather than comparing with an older row's bytes. */
typedef struct {
    CommitSlot *slots;
    size_t mask, used;
    uint8_t *arena;
    size_t arena_len, arena_cap;
} CommitTable;

static HOT_INLINE CommitSlot *commit_slot(CommitTable *t, uint64_t h, const uint8_t *key,
                                          int32_t size) {
    for (size_t at = (size_t)h & t->mask;; at = (at + 1) & t->mask) {
        CommitSlot *slot = &t->slots[at];
        if (!slot->used || (slot->hash == h && slot->size == size &&
                            memcmp(t->arena + slot->at, key, (size_t)size) == 0))
            return slot;
    }
}

static int commit_table_grow(CommitTable *t) {
    size_t size = (t->mask + 1) * 2, old_size = t->mask + 1;
    CommitSlot *old = t->slots, *slots = PyMem_Calloc(size, sizeof(CommitSlot));
    if (!slots) {
        PyErr_NoMemory();
        return -1;
    }
    t->slots = slots;
    t->mask = size - 1;
    for (size_t i = 0; i < old_size; i++) {
        if (!old[i].used) continue;
        size_t at = (size_t)old[i].hash & t->mask;
        while (slots[at].used) at = (at + 1) & t->mask;
        slots[at] = old[i];
    }
    PyMem_Free(old);
    return 0;
}

/* A new key's slot (free until now): its bytes copied into the arena. */
static int commit_key_add(CommitTable *t, CommitSlot *slot, const uint8_t *key, int32_t size) {
    if (t->arena_len + (size_t)size > t->arena_cap) {
        size_t cap = t->arena_cap ? t->arena_cap * 2 : 1 << 16;
        while (cap < t->arena_len + (size_t)size) cap *= 2;
        uint8_t *arena = PyMem_Realloc(t->arena, cap);
        if (!arena) {
            PyErr_NoMemory();
            return -1;
        }
        t->arena = arena;
        t->arena_cap = cap;
    }
    memcpy(t->arena + t->arena_len, key, (size_t)size);
    slot->at = t->arena_len;
    t->arena_len += (size_t)size;
    t->used++;
    return 0;
}

static HOT_INLINE uint64_t commit_key_hash(const uint8_t *p, Py_ssize_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDull;
        h ^= h >> 29;
        p += 8;
        n -= 8;
    }
    uint64_t tail = 0;
    memcpy(&tail, p, (size_t)n);
    h = (h ^ tail) * 0xC4CEB9FE1A85EC53ull;
    return h ^ (h >> 32);
}

/* Whether key[0:size] is an offset commit key with nothing after it. */
static HOT_INLINE int commit_key_shape(const uint8_t *key, Py_ssize_t size) {
    if (size < 10) return 0;
    int type = (int16_t)(key[0] << 8 | key[1]);
    if (type != 0 && type != 1) return 0;
    Py_ssize_t group = (int16_t)(key[2] << 8 | key[3]);
    if (group < 0 || 4 + group + 2 > size) return 0;
    Py_ssize_t topic = (int16_t)(key[4 + group] << 8 | key[5 + group]);
    return topic >= 0 && 6 + group + topic + 4 == size;
}

typedef struct {
    Py_buffer offsets, data, kinds, out;
    Py_ssize_t rows;
} CommitChunk;

static void release_commit_chunks(CommitChunk *chunks, Py_ssize_t n) {
    for (Py_ssize_t c = 0; c < n; c++) {
        Py_buffer *views[] = {&chunks[c].offsets, &chunks[c].data, &chunks[c].kinds,
                              &chunks[c].out};
        for (int v = 0; v < 4; v++)
            if (views[v]->obj) PyBuffer_Release(views[v]);
    }
    PyMem_Free(chunks);
}

/* superseded_commits(chunks) -> bool | None: each chunk (offsets, data, kinds, out) is a
   binary key column's int32 offsets (rows + 1, from its first row) and data, a uint8 kind per
   row (0 to 3, above) and a writable uint8 per row, set to 1 where the row is superseded (else left as is);
   the chunks are consecutive rows of one log partition. None when a key of a row of kind 1
   to 3 is not an offset commit key (nothing is written then). */
static PyObject *superseded_commits(PyObject *module, PyObject *arg) {
    PyObject *seq = PySequence_Fast(arg, "superseded_commits(chunks): a list of chunks");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    CommitChunk *chunks = PyMem_Calloc((size_t)(n ? n : 1), sizeof(CommitChunk));
    CommitTable table = {NULL, 0, 0, NULL, 0, 0};
    PyObject *result = NULL;
    if (!chunks) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t c = 0; c < n; c++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, c);
        CommitChunk *ch = &chunks[c];
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 4) {
            PyErr_SetString(PyExc_TypeError, "a chunk is (offsets, data, kinds, out)");
            goto done;
        }
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(item, 0), &ch->offsets, PyBUF_SIMPLE) < 0 ||
            PyObject_GetBuffer(PyTuple_GET_ITEM(item, 1), &ch->data, PyBUF_SIMPLE) < 0 ||
            PyObject_GetBuffer(PyTuple_GET_ITEM(item, 2), &ch->kinds, PyBUF_SIMPLE) < 0 ||
            PyObject_GetBuffer(PyTuple_GET_ITEM(item, 3), &ch->out, PyBUF_WRITABLE) < 0)
            goto done;
        ch->rows = ch->kinds.len;
        if (ch->out.len != ch->rows || ch->offsets.len != (ch->rows + 1) * 4) {
            PyErr_SetString(PyExc_ValueError, "a chunk's offsets, kinds and out disagree");
            goto done;
        }
        const int32_t *off = ch->offsets.buf;
        const uint8_t *kind = ch->kinds.buf;
        for (Py_ssize_t i = 0; i < ch->rows; i++) {
            if (off[i + 1] < off[i] || off[i + 1] > ch->data.len || off[i] < 0) {
                PyErr_SetString(PyExc_ValueError, "a key's offsets are outside its data");
                goto done;
            }
            if (kind[i] > 3) {
                PyErr_SetString(PyExc_ValueError, "a kind is 0, 1, 2 or 3");
                goto done;
            }
            if (kind[i] == 0) continue;
            if (!commit_key_shape((const uint8_t *)ch->data.buf + off[i], off[i + 1] - off[i])) {
                result = Py_NewRef(Py_None);
                goto done;
            }
        }
    }
    table.mask = 4095;
    if (!(table.slots = PyMem_Calloc(table.mask + 1, sizeof(CommitSlot)))) {
        PyErr_NoMemory();
        goto done;
    }
    /* first the transactional tombstones' keys, then the plain rows in order */
    for (int pass = 0; pass < 2; pass++) {
        for (Py_ssize_t c = 0; c < n; c++) {
            const int32_t *off = chunks[c].offsets.buf;
            const uint8_t *kind = chunks[c].kinds.buf;
            const uint8_t *data = chunks[c].data.buf;
            for (Py_ssize_t i = 0; i < chunks[c].rows; i++) {
                if (kind[i] == 0 || (kind[i] == 3) != (pass == 0)) continue;
                const uint8_t *key = data + off[i] + 2;
                int32_t size = off[i + 1] - off[i] - 2;
                uint64_t h = commit_key_hash(key, size);
                CommitSlot *slot = commit_slot(&table, h, key, size);
                if (!slot->used) {
                    if (table.used * 2 >= table.mask) {
                        if (commit_table_grow(&table) < 0) goto done;
                        slot = commit_slot(&table, h, key, size);
                    }
                    if (commit_key_add(&table, slot, key, size) < 0) goto done;
                    slot->hash = h;
                    slot->size = size;
                    slot->used = 1;
                    slot->kind = 0;
                } else if (slot->kept) {
                    continue;
                }
                if (pass == 0) {
                    slot->kept = 1;
                    continue;
                }
                if (slot->kind == 1 && kind[i] == 1)
                    ((uint8_t *)chunks[slot->chunk].out.buf)[slot->row] = 1;
                slot->chunk = (int32_t)c;
                slot->row = (int32_t)i;
                slot->kind = kind[i];
            }
        }
    }
    result = Py_NewRef(Py_True);
done:
    PyMem_Free(table.slots);
    PyMem_Free(table.arena);
    if (chunks) release_commit_chunks(chunks, n);
    Py_DECREF(seq);
    return result;
}
