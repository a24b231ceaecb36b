/* commit_kinds: each __consumer_offsets row's kind for CommitEffects (commit_effects.h), from
 * its key bytes and its flags, in one pass over the engine's columns
 * (codegen.dumps.views.effects.record_kinds), as commit_rows reads the decoded rows
 * (codegen.dumps.views.commit_rows: offset_commits and compaction.end_markers):
 *
 * - a control record of a transactional batch whose key is int16 version, int16 type 0
 *   (ABORT) or 1 (COMMIT): 5 an ABORT marker, 6 a COMMIT marker;
 * - a record that is not a control record, read and decoded (flag DECODED), whose key's int16
 *   record type is 0 or 1 (LegacyOffsetCommitKey, OffsetCommitKey): 1 a plain commit, 2 a
 *   plain tombstone, 3 a transactional commit, 4 a transactional tombstone;
 * - any other row: 0.
 *
 * The flags of a row (uint8): CONTROL 1, TRANSACTIONAL 2, TOMBSTONE 4 (no value), DECODED 8
 * (the row was read and its offset commit, if it is one, decoded without an error).
 */

#define ROW_CONTROL 1
#define ROW_TRANSACTIONAL 2
#define ROW_TOMBSTONE 4
#define ROW_DECODED 8

static HOT_INLINE uint8_t commit_kind(const uint8_t *key, int32_t size, uint8_t flags) {
    if (flags & ROW_CONTROL) {
        if (!(flags & ROW_TRANSACTIONAL) || size < 4 || key[2] != 0 || key[3] > 1) return 0;
        return (uint8_t)(5 + key[3]);
    }
    if (!(flags & ROW_DECODED) || size < 2 || key[0] != 0 || key[1] > 1) return 0;
    return (uint8_t)(1 + ((flags & ROW_TOMBSTONE) != 0) + 2 * ((flags & ROW_TRANSACTIONAL) != 0));
}

/* commit_kinds(key_offsets, key_data, flags) -> bytes: each row's kind (uint8, above) of a
   binary key column (int32 offsets, rows + 1 of them from the first row, and data) and a
   uint8 of flags per row. */
static PyObject *commit_kinds(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (!arity_ok(nargs, 3, "commit_kinds(key_offsets, key_data, flags)")) return NULL;
    Py_buffer offsets, data, flags;
    if (PyObject_GetBuffer(args[0], &offsets, PyBUF_SIMPLE) < 0) return NULL;
    if (PyObject_GetBuffer(args[1], &data, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&offsets);
        return NULL;
    }
    if (PyObject_GetBuffer(args[2], &flags, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&data);
        PyBuffer_Release(&offsets);
        return NULL;
    }
    PyObject *out = NULL;
    Py_ssize_t n = flags.len;
    const int32_t *off = offsets.buf;
    const uint8_t *flag = flags.buf, *keys = data.buf;
    if (offsets.len != (n + 1) * (Py_ssize_t)sizeof(int32_t)) {
        PyErr_SetString(PyExc_ValueError, "commit_kinds: the key offsets are not one more than "
                                          "the rows' flags");
        goto done;
    }
    if (!(out = PyBytes_FromStringAndSize(NULL, n))) goto done;
    uint8_t *kind = (uint8_t *)PyBytes_AS_STRING(out);
    /* each row's offsets checked as it is read, as unsigned numbers: its end within the data
       (so not negative, as the data is at most INT32_MAX bytes here) and its start not past it */
    uint32_t limit = (uint32_t)(data.len < INT32_MAX ? data.len : INT32_MAX);
    for (Py_ssize_t i = 0; i < n; i++) {
        uint32_t start = (uint32_t)off[i], end = (uint32_t)off[i + 1];
        if (start > end || end > limit) {
            PyErr_SetString(PyExc_ValueError, "commit_kinds: a key's offsets are outside its data");
            Py_CLEAR(out);
            goto done;
        }
        kind[i] = commit_kind(keys + start, (int32_t)(end - start), flag[i]);
    }
done:
    PyBuffer_Release(&flags);
    PyBuffer_Release(&data);
    PyBuffer_Release(&offsets);
    return out;
}
