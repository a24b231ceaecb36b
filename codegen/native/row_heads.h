/* int16_heads: the big-endian int16 each row of a binary column starts with (a coordinator
 * key's record type, a value's version), as int64, in one pass: what
 * codegen.forensics.loaded.LoadedPartition counts every record of a partition by. The pure
 * backend reads the same with numpy gathers (codegen.columnar.decode.Rows.int16_at): the
 * reference the tests hold this to.
 */

/* int16_heads(offsets, data, validity, bit_offset, null, short) -> bytes: for each of the
   rows (int32 offsets, rows + 1 of them from the first row, into data), int64: `null` where
   the row is null (validity: an Arrow bitmap whose bit bit_offset + i is row i's, or None: no
   null), `short` where it holds fewer than 2 bytes, else its first two bytes as a big-endian
   int16. */
static PyObject *int16_heads(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (!arity_ok(nargs, 6,
                  "int16_heads(offsets, data, validity, bit_offset, null, short)"))
        return NULL;
    Py_ssize_t bit_offset = PyLong_AsSsize_t(args[3]);
    if (bit_offset == -1 && PyErr_Occurred()) return NULL;
    long long null = PyLong_AsLongLong(args[4]);
    if (null == -1 && PyErr_Occurred()) return NULL;
    long long short_value = PyLong_AsLongLong(args[5]);
    if (short_value == -1 && PyErr_Occurred()) return NULL;
    Py_buffer offsets, data, validity = {.obj = NULL};
    if (PyObject_GetBuffer(args[0], &offsets, PyBUF_SIMPLE) < 0) return NULL;
    if (PyObject_GetBuffer(args[1], &data, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&offsets);
        return NULL;
    }
    PyObject *out = NULL;
    if (args[2] != Py_None && PyObject_GetBuffer(args[2], &validity, PyBUF_SIMPLE) < 0) goto done;
    if (offsets.len % (Py_ssize_t)sizeof(int32_t) || offsets.len < (Py_ssize_t)sizeof(int32_t)) {
        PyErr_SetString(PyExc_ValueError, "int16_heads: offsets are rows + 1 int32");
        goto done;
    }
    Py_ssize_t n = offsets.len / (Py_ssize_t)sizeof(int32_t) - 1;
    if (!offsets_valid(&offsets, n, data.len)) {
        PyErr_SetString(PyExc_ValueError, "int16_heads: a row's offsets are outside its data");
        goto done;
    }
    if (validity.obj && (bit_offset < 0 || bit_offset > PY_SSIZE_T_MAX - n - 7 ||
                         (bit_offset + n + 7) / 8 > validity.len)) {
        PyErr_SetString(PyExc_ValueError, "int16_heads: the validity bitmap is too short");
        goto done;
    }
    if (!(out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t)))) goto done;
    int64_t *head = (int64_t *)PyBytes_AS_STRING(out);
    const int32_t *off = offsets.buf;
    const uint8_t *bytes = data.buf, *bits = validity.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t bit = bit_offset + i;
        if (bits && !((bits[bit >> 3] >> (bit & 7)) & 1))
            head[i] = null;
        else if (off[i + 1] - off[i] < 2)
            head[i] = short_value;
        else
            head[i] = (int16_t)(uint16_t)(bytes[off[i]] << 8 | bytes[off[i] + 1]);
    }
done:
    PyBuffer_Release(&offsets);
    PyBuffer_Release(&data);
    if (validity.obj) PyBuffer_Release(&validity);
    return out;
}
