/* commit_columns(): the offset commits of __consumer_offsets rows decoded in one pass over the
 * key and value binary columns, into the Arrow buffers of the topic decoder's columns
 * (codegen.dumps.views.commits.decode_commits). Part of the _engine module (engine.c).
 *
 * Each commit is checked and read by commit_check() (commit_check.h: the layouts, the shipped
 * specs'); decode_commits checks that the package's specs are these before it calls this
 * function. A row is accepted or refused exactly as the generated readers accept or refuse it;
 * a refused row is listed, and the caller takes its error text from the reference decoder
 * (codegen.columnar.topics.decode_topic_arrays). The legacy and current members of a union
 * share their children's value buffers; each member's validity bitmap is its own, and every
 * child of a member has the member's.
 */
#ifndef SPECGEN_COMMIT_COLUMNS_H
#define SPECGEN_COMMIT_COLUMNS_H

/* A binary Arrow array's buffers as commit_columns() takes them. */
typedef struct {
    Py_ssize_t offset;  /* the array's offset into its buffers */
    Py_buffer validity, offsets, data;
    int has_validity, has_data, wide; /* wide: int64 offsets (large_binary) */
} BinaryIn;

static void binary_release(BinaryIn *b) {
    if (b->has_validity) PyBuffer_Release(&b->validity);
    if (b->offsets.obj) PyBuffer_Release(&b->offsets);
    if (b->has_data) PyBuffer_Release(&b->data);
}

static inline int bit_at(const Py_buffer *bitmap, Py_ssize_t i) {
    return (((const unsigned char *)bitmap->buf)[i >> 3] >> (i & 7)) & 1;
}

/* (offset, validity or None, offsets, data or None, wide) -> b, checked against n rows. */
static int binary_in(PyObject *spec, Py_ssize_t n, BinaryIn *b) {
    PyObject *validity, *offsets, *data;
    memset(b, 0, sizeof(*b));
    if (!PyArg_ParseTuple(spec, "nOOOp", &b->offset, &validity, &offsets, &data, &b->wide))
        return -1;
    if (b->offset < 0) goto bad;
    if (validity != Py_None) {
        if (PyObject_GetBuffer(validity, &b->validity, PyBUF_SIMPLE) < 0) return -1;
        b->has_validity = 1;
        if (b->validity.len < (b->offset + n + 7) / 8) goto bad;
    }
    if (PyObject_GetBuffer(offsets, &b->offsets, PyBUF_SIMPLE) < 0) return -1;
    if (b->offsets.len / (b->wide ? 8 : 4) < b->offset + n + 1) goto bad;
    if (data != Py_None) {
        if (PyObject_GetBuffer(data, &b->data, PyBUF_SIMPLE) < 0) return -1;
        b->has_data = 1;
    }
    return 0;
bad:
    PyErr_SetString(PyExc_ValueError, "commit_columns: a binary array's buffers are too short");
    return -1;
}

static inline int64_t binary_offset(const BinaryIn *b, Py_ssize_t i) {
    const unsigned char *p = b->offsets.buf;
    if (b->wide) { int64_t v; memcpy(&v, p + 8 * (b->offset + i), 8); return v; }
    int32_t v;
    memcpy(&v, p + 4 * (b->offset + i), 4);
    return v;
}

static inline int binary_valid(const BinaryIn *b, Py_ssize_t i) {
    return !b->has_validity || bit_at(&b->validity, b->offset + i);
}

/* An output buffer: a bytes object of a known largest size, zeroed or not. */
static PyObject *commit_out(Py_ssize_t size, int zeroed, unsigned char **p) {
    PyObject *b = PyBytes_FromStringAndSize(NULL, size);
    if (!b) return NULL;
    *p = (unsigned char *)PyBytes_AS_STRING(b);
    if (zeroed) memset(*p, 0, (size_t)size);
    return b;
}

enum {
    CO_TYPE_VALID, CO_TYPE, CO_NAME_VALID, CO_NAME_OFFSETS, CO_NAME_DATA,
    CO_KEY, CO_KEY0, CO_KEY1, CO_GROUP_OFFSETS, CO_GROUP_DATA, CO_TOPIC_OFFSETS, CO_TOPIC_DATA,
    CO_PARTITION,
    CO_VALUE, CO_VALUE0, CO_VALUE1, CO_OFFSET, CO_EPOCH, CO_META_OFFSETS, CO_META_DATA,
    CO_COMMIT_TS, CO_EXPIRE_TS,
    CO_VERSION_VALID, CO_VERSION, CO_TOMBSTONE, CO_NEWER,
    CO_COUNT
};
enum { CO_FLAGS, CO_ALL }; /* what commit_columns writes */

/* What commit_rows() reads and writes: the rows' buffers, the output buffers (p, each
   CO_COUNT's), and the rows refused. */
typedef struct {
    const BinaryIn *key, *value;
    const Py_buffer *control_valid, *control_values;
    Py_ssize_t control_offset;
    int has_control, has_control_valid;
    PyObject *names, *failed;
    Py_ssize_t nnames;
    const unsigned char *kd, *vd;
    int64_t kfirst, klast, vfirst, vlast;
    unsigned char **p;
    int32_t name_len, group_len, topic_len, meta_len; /* the string data written */
} CommitRows;

/* commit_columns' loop over the n rows; 0, or -1 with an error set. what: a constant (the loop
   is made once for each mode, so a row tests no mode, and what a mode does not write is not
   kept of a commit's check). */
static HOT_INLINE int commit_rows(CommitRows *s, Py_ssize_t n, const int what) {
    const int full = what == CO_ALL;
    const BinaryIn key = *s->key, value = *s->value;
    const Py_buffer control_valid = *s->control_valid, control_values = *s->control_values;
    const Py_ssize_t control_offset = s->control_offset, nnames = s->nnames;
    const int has_control = s->has_control, has_control_valid = s->has_control_valid;
    PyObject *names = s->names, *failed = s->failed;
    const unsigned char *kd = s->kd, *vd = s->vd;
    const int64_t kfirst = s->kfirst, klast = s->klast, vfirst = s->vfirst, vlast = s->vlast;
    unsigned char **p = s->p;
    int16_t *rtype = (int16_t *)p[CO_TYPE], *version = (int16_t *)p[CO_VERSION];
    int32_t *name_off = (int32_t *)p[CO_NAME_OFFSETS], *group_off = (int32_t *)p[CO_GROUP_OFFSETS];
    int32_t *topic_off = (int32_t *)p[CO_TOPIC_OFFSETS], *meta_off = (int32_t *)p[CO_META_OFFSETS];
    int32_t *partition = (int32_t *)p[CO_PARTITION], *epoch = (int32_t *)p[CO_EPOCH];
    int64_t *offset = (int64_t *)p[CO_OFFSET], *commit_ts = (int64_t *)p[CO_COMMIT_TS];
    int64_t *expire_ts = (int64_t *)p[CO_EXPIRE_TS];
    int32_t name_len = 0, group_len = 0, topic_len = 0, meta_len = 0;
    int64_t ke = kfirst, ve = vfirst;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t ks = ke, vs = ve;
        ke = binary_offset(&key, i + 1);
        ve = binary_offset(&value, i + 1);
        if (ke < ks || ke > klast || ve < vs || ve > vlast) {
            PyErr_SetString(PyExc_ValueError,
                            "commit_columns: a row's offsets are outside its data buffer");
            return -1;
        }
        if (full) {
            name_off[i] = name_len;
            group_off[i] = group_len;
            topic_off[i] = topic_len;
            meta_off[i] = meta_len;
        }
        int is_control = has_control &&
                         (!has_control_valid || bit_at(&control_valid, control_offset + i)) &&
                         bit_at(&control_values, control_offset + i);
        int kvalid = binary_valid(&key, i), vvalid = binary_valid(&value, i);
        if (is_control) continue;
        if (!kvalid) {
            if (vvalid) goto refused; /* a value without a key */
            continue;
        }
        Py_ssize_t klen = (Py_ssize_t)(ke - ks);
        if (klen < 2) goto refused;
        int t = (int16_t)load16(kd + ks);
        if (full) {
            rtype[i] = (int16_t)t;
            BIT_SET(p[CO_TYPE_VALID], i);
        }
        if (full && t >= 0 && t < nnames && PyTuple_GET_ITEM(names, t) != Py_None) {
            PyObject *name = PyTuple_GET_ITEM(names, t);
            memcpy(p[CO_NAME_DATA] + name_len, PyBytes_AS_STRING(name),
                   (size_t)PyBytes_GET_SIZE(name));
            name_len += (int32_t)PyBytes_GET_SIZE(name);
            BIT_SET(p[CO_NAME_VALID], i);
        }
        if (t != 0 && t != 1) continue; /* not an offset commit: left undecoded */
        if (!vvalid) BIT_SET(p[CO_TOMBSTONE], i);
        /* the key, version 0 of either record type, and the value */
        const unsigned char *kb = kd + ks + 2, *vb = vvalid ? vd + vs : NULL;
        CommitChecked cc;
        int rc = commit_check(t, kb, klen - 2, vvalid, vb, (Py_ssize_t)(ve - vs), &cc);
        if (full && cc.has_version) {
            version[i] = cc.version;
            BIT_SET(p[CO_VERSION_VALID], i);
        }
        if (cc.newer) BIT_SET(p[CO_NEWER], i);
        if (rc < 0) goto refused;
        if (!full) continue; /* the flags alone */
        /* accepted: the key's columns, and the value's */
        memcpy(p[CO_GROUP_DATA] + group_len, kb + cc.group_start, (size_t)cc.group_size);
        group_len += (int32_t)cc.group_size;
        memcpy(p[CO_TOPIC_DATA] + topic_len, kb + cc.topic_start, (size_t)cc.topic_size);
        topic_len += (int32_t)cc.topic_size;
        partition[i] = cc.partition;
        BIT_SET(p[CO_KEY], i);
        BIT_SET(p[t ? CO_KEY1 : CO_KEY0], i);
        if (rc == 0) continue; /* a tombstone */
        const CommitValue *cv = &cc.value;
        memcpy(p[CO_META_DATA] + meta_len, vb + 2 + cv->meta_start, (size_t)cv->meta_size);
        meta_len += (int32_t)cv->meta_size;
        expire_ts[i] = cv->expire_ts;
        offset[i] = cv->offset;
        epoch[i] = cv->epoch;
        commit_ts[i] = cv->commit_ts;
        BIT_SET(p[CO_VALUE], i);
        BIT_SET(p[t ? CO_VALUE1 : CO_VALUE0], i);
        continue;
    refused: {
            PyObject *row = PyLong_FromSsize_t(i);
            if (!row || PyList_Append(failed, row) < 0) { Py_XDECREF(row); return -1; }
            Py_DECREF(row);
        }
    }
    if (full) {
        name_off[n] = name_len;
        group_off[n] = group_len;
        topic_off[n] = topic_len;
        meta_off[n] = meta_len;
    }
    s->name_len = name_len;
    s->group_len = group_len;
    s->topic_len = topic_len;
    s->meta_len = meta_len;
    return 0;
}

static PyObject *commit_columns(PyObject *self, PyObject *args) {
    Py_ssize_t n;
    PyObject *key_spec, *value_spec, *control_spec, *names;
    /* CO_ALL: every column; CO_FLAGS: the flags alone (tombstone, newer, refused rows), the
       other buffers empty. */
    int what = CO_ALL;
    if (!PyArg_ParseTuple(args, "nOOOO!|i:commit_columns", &n, &key_spec, &value_spec,
                          &control_spec, &PyTuple_Type, &names, &what))
        return NULL;
    if (n < 0 || n > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "commit_columns: bad row count");
        return NULL;
    }
    if (what != CO_ALL && what != CO_FLAGS) {
        PyErr_SetString(PyExc_ValueError, "commit_columns: what is COMMIT_FLAGS or COMMIT_ALL");
        return NULL;
    }
    int full = what == CO_ALL;
    BinaryIn key, value;
    Py_buffer control_valid = {0}, control_values = {0};
    Py_ssize_t control_offset = 0;
    int has_control = 0, has_control_valid = 0;
    PyObject *out[CO_COUNT] = {NULL};
    unsigned char *p[CO_COUNT] = {NULL};
    PyObject *failed = NULL, *result = NULL;
    memset(&key, 0, sizeof(key));
    memset(&value, 0, sizeof(value));
    if (binary_in(key_spec, n, &key) < 0 || binary_in(value_spec, n, &value) < 0) goto done;
    if (control_spec != Py_None) {
        PyObject *cv, *cb;
        if (!PyArg_ParseTuple(control_spec, "nOO", &control_offset, &cv, &cb)) goto done;
        if (cv != Py_None) {
            if (PyObject_GetBuffer(cv, &control_valid, PyBUF_SIMPLE) < 0) goto done;
            has_control_valid = 1;
        }
        if (PyObject_GetBuffer(cb, &control_values, PyBUF_SIMPLE) < 0) goto done;
        has_control = 1;
        Py_ssize_t need = (control_offset + n + 7) / 8;
        if (control_offset < 0 || control_values.len < need ||
            (has_control_valid && control_valid.len < need)) {
            PyErr_SetString(PyExc_ValueError, "commit_columns: the control array is too short");
            goto done;
        }
    }
    const unsigned char *kd = key.has_data ? key.data.buf : NULL;
    const unsigned char *vd = value.has_data ? value.data.buf : NULL;
    Py_ssize_t klen_all = key.has_data ? key.data.len : 0;
    Py_ssize_t vlen_all = value.has_data ? value.data.len : 0;
    int64_t kfirst = binary_offset(&key, 0), klast = binary_offset(&key, n);
    int64_t vfirst = binary_offset(&value, 0), vlast = binary_offset(&value, n);
    /* Every row inside [first, last], inside its data buffer: checked here and per row (each
       row's bytes are checked before they are read; the copies fit buffers of last - first). */
    if (kfirst < 0 || klast < kfirst || klast > klen_all || vfirst < 0 || vlast < vfirst ||
        vlast > vlen_all) {
        PyErr_SetString(PyExc_ValueError,
                        "commit_columns: a row's offsets are outside its data buffer");
        goto done;
    }
    if (klast - kfirst > INT32_MAX || vlast - vfirst > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "commit_columns: more than 2 GiB of keys or values");
        goto done;
    }
    Py_ssize_t nnames = PyTuple_GET_SIZE(names), longest = 0;
    for (Py_ssize_t t = 0; t < nnames; t++) {
        PyObject *name = PyTuple_GET_ITEM(names, t);
        if (name == Py_None) continue;
        if (!PyBytes_Check(name)) {
            PyErr_SetString(PyExc_TypeError, "commit_columns: names are bytes or None");
            goto done;
        }
        if (PyBytes_GET_SIZE(name) > longest) longest = PyBytes_GET_SIZE(name);
    }
    Py_ssize_t bits = (n + 7) / 8, offs = 4 * (n + 1);
    static const char bitmap_of[CO_COUNT] = {
        [CO_TYPE_VALID] = 1, [CO_NAME_VALID] = 1, [CO_KEY] = 1, [CO_KEY0] = 1, [CO_KEY1] = 1,
        [CO_VALUE] = 1, [CO_VALUE0] = 1, [CO_VALUE1] = 1, [CO_VERSION_VALID] = 1,
        [CO_TOMBSTONE] = 1, [CO_NEWER] = 1,
    };
    Py_ssize_t sizes[CO_COUNT] = {
        [CO_TYPE] = 2 * n, [CO_NAME_OFFSETS] = offs, [CO_NAME_DATA] = longest * n,
        [CO_GROUP_OFFSETS] = offs, [CO_GROUP_DATA] = (Py_ssize_t)(klast - kfirst),
        [CO_TOPIC_OFFSETS] = offs, [CO_TOPIC_DATA] = (Py_ssize_t)(klast - kfirst),
        [CO_PARTITION] = 4 * n, [CO_OFFSET] = 8 * n, [CO_EPOCH] = 4 * n,
        [CO_META_OFFSETS] = offs, [CO_META_DATA] = (Py_ssize_t)(vlast - vfirst),
        [CO_COMMIT_TS] = 8 * n, [CO_EXPIRE_TS] = 8 * n, [CO_VERSION] = 2 * n,
    };
    static const char written[CO_COUNT] = { /* every byte written: not cleared first */
        [CO_NAME_OFFSETS] = 1, [CO_NAME_DATA] = 1, [CO_GROUP_OFFSETS] = 1, [CO_GROUP_DATA] = 1,
        [CO_TOPIC_OFFSETS] = 1, [CO_TOPIC_DATA] = 1, [CO_META_OFFSETS] = 1, [CO_META_DATA] = 1,
    };
    for (int k = 0; k < CO_COUNT; k++) {
        /* bitmaps start clear; values of null slots are zero, as Arrow's builders leave them */
        Py_ssize_t size = bitmap_of[k] ? bits : sizes[k];
        if (!full && k != CO_TOMBSTONE && k != CO_NEWER) size = 0;
        if (!(out[k] = commit_out(size, !written[k], &p[k]))) goto done;
    }
    if (!(failed = PyList_New(0))) goto done;
    CommitRows rows = {&key, &value, &control_valid, &control_values, control_offset,
                       has_control, has_control_valid, names, failed, nnames, kd, vd,
                       kfirst, klast, vfirst, vlast, p, 0, 0, 0, 0};
    if ((full ? commit_rows(&rows, n, CO_ALL) : commit_rows(&rows, n, CO_FLAGS)) < 0)
        goto done;
    int32_t name_len = rows.name_len, group_len = rows.group_len, topic_len = rows.topic_len;
    int32_t meta_len = rows.meta_len;
    if (_PyBytes_Resize(&out[CO_NAME_DATA], name_len) < 0 ||
        _PyBytes_Resize(&out[CO_GROUP_DATA], group_len) < 0 ||
        _PyBytes_Resize(&out[CO_TOPIC_DATA], topic_len) < 0 ||
        _PyBytes_Resize(&out[CO_META_DATA], meta_len) < 0)
        goto done;
    if (!(result = PyTuple_New(CO_COUNT + 1))) goto done;
    for (int k = 0; k < CO_COUNT; k++) {
        PyTuple_SET_ITEM(result, k, out[k]);
        out[k] = NULL;
    }
    PyTuple_SET_ITEM(result, CO_COUNT, failed);
    failed = NULL;
done:
    for (int k = 0; k < CO_COUNT; k++) Py_XDECREF(out[k]);
    Py_XDECREF(failed);
    binary_release(&key);
    binary_release(&value);
    if (has_control_valid) PyBuffer_Release(&control_valid);
    if (has_control) PyBuffer_Release(&control_values);
    return result;
}

#endif /* SPECGEN_COMMIT_COLUMNS_H */
