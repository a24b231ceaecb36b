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
 * None: the caller reduces those rows without this step. Keys are found in a KeyStore
 * (key_store.h), the key table CommitEffects uses too.
 */

/* A key's entry in the KeyStore (key_store.h). */
typedef struct {
    KeyEntry key;
    int32_t chunk;
    int32_t row; /* the key's last plain row so far, in chunk */
    uint8_t kind;
    uint8_t kept; /* a transactional tombstone's key */
} CommitSlot;

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
    KeyStore store = {.slots = NULL};
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
    if (key_store_init(&store, sizeof(CommitSlot)) < 0) goto done;
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
                int added;
                int64_t k = key_store_find_or_add(&store, key, size, commit_key_hash(key, size),
                                                  &added);
                if (k < 0) goto done;
                CommitSlot *slot = &((CommitSlot *)store.entries)[k];
                if (!added && slot->kept) continue;
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
    key_store_free(&store);
    if (chunks) release_commit_chunks(chunks, n);
    Py_DECREF(seq);
    return result;
}
