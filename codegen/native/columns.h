/* columns(): many messages read straight into Arrow buffers (column_values.h). Part of the
 * _engine module (engine.c).
 *
 * columns(readers, kinds, data, starts, ends, index, trailing_ok): many messages into Arrow
 * columns. Row i is the bytes data[starts[i]:ends[i]] read by readers[index[i]] (index -1: a
 * null row). Top-level numbers, strings, bytes and uuids go straight from the wire into
 * column buffers; every other field (structs, arrays, tagged-field maps) is read as the
 * object reader reads it and handed back as a Python object (one list per such column).
 * A row is accepted or refused exactly as the reader's decode (or read, with trailing_ok)
 * accepts or refuses it; the caller gets a refused row's error text by decoding it again.
 */
#ifndef SPECGEN_COLUMNS_H
#define SPECGEN_COLUMNS_H

typedef struct {
    Reader *r;
    Py_ssize_t *slot_col; /* root slot -> column, or -1 */
    char *op_direct;      /* root op written straight into its column (DIRECT_*) */
    Ready *absent_ready, *tagged_ready;
} ColReader;

enum { DIRECT_NO = 0, DIRECT_YES = 1, DIRECT_NOT_NULL = 2 };

/* wire.h's varint reader for rows: at most 5 bytes; below 0 where read_uvarint raises. */
static inline int col_uvarint(const Ctx *c, Py_ssize_t *pos, int64_t *out) {
    return read_varint(c->buf, pos, c->len, MAX_VARINT32, out);
}

/* A string or bytes op straight into its column, with the checks of read_string_or_bytes:
   0, -1 refused, -2 fatal. */
static int col_string(const Ctx *c, const Op *op, Column *col, Py_ssize_t row, Py_ssize_t *pos) {
    int compact = op->flags & F_COMPACT, is_string = op->opcode == OP_STRING;
    Py_ssize_t o = *pos;
    int64_t n;
    if (compact) {
        if (LIKELY(o < c->len && c->buf[o] < 0x80)) n = (int64_t)c->buf[o++];
        else if (col_uvarint(c, &o, &n) < 0) return -1;
        n -= 1;
    } else if (is_string) {
        if (c->len - o < 2) return -1;
        n = (int16_t)load16(c->buf + o);
        o += 2;
    } else {
        if (c->len - o < 4) return -1;
        n = (int32_t)load32(c->buf + o);
        o += 4;
    }
    if (n < 0) {
        if (!(op->flags & F_NULLABLE)) return -1;
        *pos = o;
        return 0; /* null: the validity bit stays clear */
    }
    if (is_string && compact && n > MAX_STRING_LENGTH) return -1;
    if (n > c->len - o) return -1;
    const unsigned char *s = c->buf + o;
    if (is_string && !utf8_valid(s, (Py_ssize_t)n)) return -1;
    if (col_append(col, (const char *)s, (Py_ssize_t)n) < 0) return -2;
    if (!col->follows) BIT_SET(col->validity, row);
    *pos = o + (Py_ssize_t)n;
    return 0;
}

static int col_direct_kind(int opcode, int kind) {
    switch (opcode) {
    case OP_INT8: return kind == COL_INT8;
    case OP_INT16: return kind == COL_INT16;
    case OP_INT32: case OP_UINT16: return kind == COL_INT32;
    case OP_INT64: case OP_UINT32: return kind == COL_INT64;
    case OP_FLOAT64: return kind == COL_FLOAT64;
    case OP_BOOL: return kind == COL_BOOL;
    case OP_UUID: case OP_STRING: return kind == COL_STRING;
    case OP_BYTES: return kind == COL_BINARY;
    default: return 0;
    }
}

/* A value read per row (nested, tagged, or a default made per row): kept until the row is
   accepted, then stored. */
static inline void col_pending(PyObject **pending, int *npending, Py_ssize_t col, PyObject *v) {
    if (col < 0) { Py_DECREF(v); return; }
    if (!pending[col]) (*npending)++;
    Py_XSETREF(pending[col], v);
}

typedef struct {
    Column *cols;
    PyObject **pending;
    int npending;
    Py_ssize_t row;
} RowOut;

/* The root's tagged section, as read_tagged_section: 0, -1 refused, -2 fatal. */
static int col_tagged(Ctx *c, const ColReader *cr, const STable *t, Py_ssize_t *pos, RowOut *o) {
    int64_t left;
    if (col_uvarint(c, pos, &left) < 0 || left > MAX_TAGGED_FIELDS) return -1;
    for (Py_ssize_t i = 0; i < t->ntagged; i++) {
        const Tagged *tg = &t->tagged[i];
        Py_ssize_t k = cr->slot_col[tg->op.slot];
        if (cr->tagged_ready[i].owner) { /* a present tag's value (pending) replaces it */
            if (col_write(&o->cols[k], o->row, &cr->tagged_ready[i]) < 0) return -2;
            continue;
        }
        PyObject *v = default_value(tg->def_kind, tg->def);
        if (!v) return -1;
        col_pending(o->pending, &o->npending, k, v);
    }
    PyObject *pairs = NULL;
    while (left > 0) {
        left--;
        int64_t tag, size;
        if (col_uvarint(c, pos, &tag) < 0 || col_uvarint(c, pos, &size) < 0) goto fail;
        Py_ssize_t at = *pos;
        if (size > c->len - at) goto fail;
        Py_ssize_t end = at + (Py_ssize_t)size;
        const Tagged *known = NULL;
        for (Py_ssize_t i = 0; i < t->ntagged; i++)
            if (t->tagged[i].tag == tag) { known = &t->tagged[i]; break; }
        if (known) {
            PyObject *v;
            Py_ssize_t p = at;
            if (read_value(c, &known->op, &p, NULL, &v) < 0) goto fail;
            col_pending(o->pending, &o->npending, cr->slot_col[known->op.slot], v);
            if (p != end) goto fail;
        } else {
            for (Py_ssize_t i = 0; i < t->nelsewhere; i++)
                if (t->elsewhere[i] == tag) goto fail;
            if (tag > 0x7FFFFFFF) goto fail;
            if (!pairs && !(pairs = PyList_New(0))) goto fail;
            PyObject *pair = Py_BuildValue("(Ly#)", (long long)tag, (const char *)c->buf + at,
                                           (Py_ssize_t)size);
            if (!pair) goto fail;
            int rc = PyList_Append(pairs, pair);
            Py_DECREF(pair);
            if (rc < 0) goto fail;
        }
        *pos = end;
    }
    Py_ssize_t ucol = cr->slot_col[t->nslots - 1];
    /* A tagged-map column is null without unknown tags (the converter's None). */
    if (ucol >= 0 && (pairs || o->cols[ucol].kind != COL_TAGGED)) {
        PyObject *unknown = unknown_tags(c->r, pairs);
        if (!unknown) goto fail;
        col_pending(o->pending, &o->npending, ucol, unknown);
    }
    Py_XDECREF(pairs);
    return 0;
fail:
    Py_XDECREF(pairs);
    return -1;
}

/* One row: 0, or -1 when the reader refuses it (maybe with an exception set), -2 fatal. */
static int col_row(Ctx *c, const ColReader *cr, RowOut *o, int trailing_ok) {
    const STable *t = &cr->r->tables[0];
    Column *cols = o->cols;
    Py_ssize_t pos = 0, row = o->row;
    for (Py_ssize_t i = 0; i < t->nops; i++) {
        const Op *op = &t->ops[i];
        Py_ssize_t k = cr->slot_col[op->slot];
        if (LIKELY(cr->op_direct[i])) {
            Column *col = &cols[k];
            const unsigned char *p = c->buf + pos;
            Py_ssize_t left = c->len - pos;
            switch (op->opcode) {
            case OP_STRING:
            case OP_BYTES: {
                int rc = col_string(c, op, col, row, &pos);
                if (rc < 0) return rc;
                continue;
            }
            case OP_INT64:
            case OP_FLOAT64: {
                if (UNLIKELY(left < 8)) return -1;
                uint64_t v = load64(p);
                memcpy(col->values + 8 * row, &v, 8);
                pos += 8;
                break;
            }
            case OP_INT32: {
                if (UNLIKELY(left < 4)) return -1;
                int32_t v = (int32_t)load32(p);
                memcpy(col->values + 4 * row, &v, 4);
                pos += 4;
                break;
            }
            case OP_UUID:
                if (UNLIKELY(left < 16)) return -1;
                if (col_reserve(col, 22) < 0) return -2;
                uuid_text(p, col->data + col->len);
                col->len += 22;
                pos += 16;
                break;
            default: {
                Py_ssize_t size = FIXED_SIZE[op->opcode];
                if (UNLIKELY(size > left)) return -1;
                col_fixed(col, row, op->opcode, p);
                pos += size;
            }
            }
            if (!col->follows) BIT_SET(col->validity, row);
            continue;
        }
        PyObject *v;
        if (read_value(c, op, &pos, NULL, &v) < 0) return -1;
        col_pending(o->pending, &o->npending, k, v);
    }
    for (Py_ssize_t i = 0; i < t->nabsent; i++) {
        const Absent *a = &t->absent[i];
        Py_ssize_t k = cr->slot_col[a->slot];
        if (cr->absent_ready[i].owner) {
            if (!cr->absent_ready[i].skip && col_write(&cols[k], row, &cr->absent_ready[i]) < 0)
                return -2;
            continue;
        }
        PyObject *v = default_value(a->def_kind, a->def);
        if (!v) return -1;
        col_pending(o->pending, &o->npending, k, v);
    }
    if (t->flexible) {
        int rc = col_tagged(c, cr, t, &pos, o);
        if (rc < 0) return rc;
    } else {
        Py_ssize_t ucol = cr->slot_col[t->nslots - 1];
        if (ucol >= 0 && cols[ucol].kind != COL_TAGGED) {
            PyObject *unknown = unknown_tags(c->r, NULL);
            if (!unknown) return -1;
            col_pending(o->pending, &o->npending, ucol, unknown);
        }
    }
    if (!trailing_ok && pos != c->len) return -1;
    return 0;
}

static int get_view(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, Py_ssize_t n,
                    const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_SIMPLE) < 0) return -1;
    if (n >= 0 && view->len != n * itemsize) {
        PyErr_Format(PyExc_ValueError, "columns: %s holds %zd bytes, expected %zd", what,
                     view->len, n * itemsize);
        PyBuffer_Release(view);
        view->obj = NULL;
        return -1;
    }
    return 0;
}

/* A typed buffer's items where they can be read as C ints: the buffer itself when it is
   aligned for them, else a copy (*copy, freed by the caller). NULL: no memory. */
static const void *aligned_items(const Py_buffer *view, size_t align, void **copy) {
    if (((uintptr_t)view->buf % align) == 0) return view->buf;
    *copy = PyMem_Malloc(view->len ? (size_t)view->len : 1);
    if (!*copy) { PyErr_NoMemory(); return NULL; }
    memcpy(*copy, view->buf, (size_t)view->len);
    return *copy;
}

/* Where each root slot of a reader's table goes, and its defaults made ready. */
static int col_plan(ColReader *cr, PyObject *obj, Column *cols, Py_ssize_t ncols) {
    if (Py_TYPE(obj) != &ReaderType || ((Reader *)obj)->rows || !((Reader *)obj)->tables) {
        PyErr_SetString(PyExc_TypeError, "columns: readers are native object readers");
        return -1;
    }
    cr->r = (Reader *)obj;
    const STable *t = &cr->r->tables[0];
    cr->slot_col = PyMem_Calloc((size_t)t->nslots + 1, sizeof(Py_ssize_t));
    cr->op_direct = PyMem_Calloc((size_t)t->nops + 1, 1);
    cr->absent_ready = PyMem_Calloc((size_t)t->nabsent + 1, sizeof(Ready));
    cr->tagged_ready = PyMem_Calloc((size_t)t->ntagged + 1, sizeof(Ready));
    if (!cr->slot_col || !cr->op_direct || !cr->absent_ready || !cr->tagged_ready) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t s = 0; s < t->nslots; s++) cr->slot_col[s] = -1;
    for (Py_ssize_t s = -1; s < t->nops + t->nabsent + t->ntagged; s++) {
        Py_ssize_t slot;
        PyObject *attr;
        if (s < 0) {
            slot = t->nslots - 1;
            attr = S_unknown_tags;
        } else if (s < t->nops) {
            slot = t->ops[s].slot;
            attr = t->ops[s].attr;
        } else if (s < t->nops + t->nabsent) {
            slot = t->absent[s - t->nops].slot;
            attr = t->absent[s - t->nops].attr;
        } else {
            slot = t->tagged[s - t->nops - t->nabsent].op.slot;
            attr = t->tagged[s - t->nops - t->nabsent].op.attr;
        }
        for (Py_ssize_t k = 0; k < ncols; k++) {
            int same = PyUnicode_Compare(cols[k].attr, attr);
            if (same == -1 && PyErr_Occurred()) return -1;
            if (same == 0) { cr->slot_col[slot] = k; break; }
        }
    }
    for (Py_ssize_t i = 0; i < t->nops; i++) {
        Py_ssize_t k = cr->slot_col[t->ops[i].slot];
        const Op *op = &t->ops[i];
        if (k < 0 || !col_direct_kind(op->opcode, cols[k].kind)) continue;
        int maybe_null = (op->opcode == OP_STRING || op->opcode == OP_BYTES) && (op->flags & F_NULLABLE);
        cr->op_direct[i] = maybe_null ? DIRECT_YES : DIRECT_NOT_NULL;
    }
    /* Shared immutable defaults of atomic columns are converted once; others per row. */
    for (Py_ssize_t i = 0; i < t->nabsent + t->ntagged; i++) {
        int tagged = i >= t->nabsent;
        const Absent *a = tagged ? NULL : &t->absent[i];
        const Tagged *tg = tagged ? &t->tagged[i - t->nabsent] : NULL;
        Py_ssize_t k = cr->slot_col[tagged ? tg->op.slot : a->slot];
        int def_kind = tagged ? tg->def_kind : a->def_kind;
        if (k < 0 || IS_OBJECT_KIND(cols[k].kind) || (def_kind != DEF_VALUE && def_kind != DEF_UUID))
            continue;
        Ready *ready = tagged ? &cr->tagged_ready[i - t->nabsent] : &cr->absent_ready[i];
        if (col_convert(&cols[k], tagged ? tg->def : a->def, ready) < 0) return -1;
    }
    return 0;
}

/* Whether reader cr writes a value (never null) into column k in every row it accepts. */
static int col_always(const ColReader *cr, Py_ssize_t k) {
    const STable *t = &cr->r->tables[0];
    for (Py_ssize_t i = 0; i < t->nops; i++)
        if (cr->slot_col[t->ops[i].slot] == k) return cr->op_direct[i] == DIRECT_NOT_NULL;
    for (Py_ssize_t i = 0; i < t->nabsent; i++)
        if (cr->slot_col[t->absent[i].slot] == k)
            return cr->absent_ready[i].owner && !cr->absent_ready[i].null;
    return 0;
}

/* The default reader cr gives column k in every row it accepts, or NULL. */
static Ready *col_default(const ColReader *cr, Py_ssize_t k) {
    const STable *t = &cr->r->tables[0];
    for (Py_ssize_t i = 0; i < t->nabsent; i++)
        if (cr->slot_col[t->absent[i].slot] == k && cr->absent_ready[i].owner &&
            !cr->absent_ready[i].null)
            return &cr->absent_ready[i];
    return NULL;
}

static void col_unplan(ColReader *cr) {
    if (!cr->r) return;
    const STable *t = &cr->r->tables[0];
    for (Py_ssize_t i = 0; cr->absent_ready && i < t->nabsent; i++)
        Py_XDECREF(cr->absent_ready[i].owner);
    for (Py_ssize_t i = 0; cr->tagged_ready && i < t->ntagged; i++)
        Py_XDECREF(cr->tagged_ready[i].owner);
    PyMem_Free(cr->slot_col);
    PyMem_Free(cr->op_direct);
    PyMem_Free(cr->absent_ready);
    PyMem_Free(cr->tagged_ready);
}

/* The end offsets of rows (from, to] of the variable-length columns: rows that added no
   bytes (null rows), so each ends where the column's bytes end now. */
static void col_offsets_fill(Column *cols, const Py_ssize_t *varcols, Py_ssize_t nvar,
                             Py_ssize_t from, Py_ssize_t to) {
    for (Py_ssize_t j = 0; j < nvar; j++) {
        Column *col = &cols[varcols[j]];
        const int32_t end = (int32_t)col->len; /* checked when the last row was added */
        for (Py_ssize_t row = from + 1; row <= to; row++) col->offsets[row] = end;
    }
}

static PyObject *columns(PyObject *module, PyObject *args) {
    PyObject *readers, *kinds, *data_obj, *starts_obj, *ends_obj, *index_obj;
    int trailing_ok;
    if (!PyArg_ParseTuple(args, "O!O!OOOOp:columns", &PyTuple_Type, &readers, &PyTuple_Type,
                          &kinds, &data_obj, &starts_obj, &ends_obj, &index_obj, &trailing_ok))
        return NULL;
    Py_ssize_t nreaders = PyTuple_GET_SIZE(readers), ncols = PyTuple_GET_SIZE(kinds);
    Py_buffer data = {0}, starts = {0}, ends = {0}, index = {0};
    void *index_copy = NULL, *starts_copy = NULL, *ends_copy = NULL;
    ColReader *crs = NULL;
    Column *cols = NULL;
    PyObject **pending = NULL;
    Py_ssize_t *varcols = NULL, nvar = 0;
    PyObject *failed = NULL, *result = NULL, *valid_obj = NULL, *outs = NULL;
    unsigned char *valid;
    Py_ssize_t n = 0, struct_nulls = 0;
    if (get_view(data_obj, &data, 1, -1, "data") < 0) goto done;
    if (get_view(index_obj, &index, 1, -1, "index") < 0) goto done;
    if (index.len % 4) {
        PyErr_SetString(PyExc_ValueError, "columns: index is not int32");
        goto done;
    }
    n = index.len / 4;
    if (get_view(starts_obj, &starts, 8, n, "starts") < 0 ||
        get_view(ends_obj, &ends, 8, n, "ends") < 0)
        goto done;
    const int32_t *idx = aligned_items(&index, sizeof(int32_t), &index_copy);
    const int64_t *st = aligned_items(&starts, sizeof(int64_t), &starts_copy);
    const int64_t *en = aligned_items(&ends, sizeof(int64_t), &ends_copy);
    if (!idx || !st || !en) goto done;
    crs = PyMem_Calloc((size_t)nreaders + 1, sizeof(ColReader));
    cols = PyMem_Calloc((size_t)ncols + 1, sizeof(Column));
    pending = PyMem_Calloc((size_t)ncols + 1, sizeof(PyObject *));
    varcols = PyMem_Calloc((size_t)ncols + 1, sizeof(Py_ssize_t));
    if (!crs || !cols || !pending || !varcols) { PyErr_NoMemory(); goto done; }
    if (col_setup(cols, kinds, n) < 0) goto done;
    for (Py_ssize_t k = 0; k < nreaders; k++)
        if (col_plan(&crs[k], PyTuple_GET_ITEM(readers, k), cols, ncols) < 0) goto done;
    for (Py_ssize_t j = 0; j < ncols; j++) {
        cols[j].follows = !IS_OBJECT_KIND(cols[j].kind) && nreaders > 0;
        for (Py_ssize_t k = 0; cols[j].follows && k < nreaders; k++)
            cols[j].follows = col_always(&crs[k], j);
        Ready *first = cols[j].follows ? col_default(&crs[0], j) : NULL;
        for (Py_ssize_t k = 1; first && k < nreaders; k++) {
            Ready *other = col_default(&crs[k], j);
            if (!other || !same_ready(first, other)) first = NULL;
        }
        if (!first) continue;
        cols[j].constant = first;
        for (Py_ssize_t k = 0; k < nreaders; k++) col_default(&crs[k], j)->skip = 1;
    }
    /* A string or bytes value is at most its row's bytes: room for them all at once spares
       the doublings (a uuid's text, a default, or rows that share bytes may still need more). */
    Py_ssize_t live_bytes = 0;
    for (Py_ssize_t row = 0; row < n && live_bytes < data.len; row++)
        if (idx[row] >= 0 && 0 <= st[row] && st[row] <= en[row] && en[row] <= data.len)
            live_bytes += (Py_ssize_t)(en[row] - st[row]);
    if (live_bytes > data.len) live_bytes = data.len;
    for (Py_ssize_t k = 0; k < ncols; k++) {
        if (!cols[k].offsets || cols[k].constant) continue;
        varcols[nvar++] = k;
        if (live_bytes > 4096 && col_grow(&cols[k], live_bytes) < 0) goto done;
    }
    if (col_buffer((n + 7) / 8, &valid_obj, &valid) < 0) goto done;
    if (!(failed = PyList_New(0))) goto done;
    Py_ssize_t ended = 0; /* the variable-length columns' offsets are written up to row ended */
    for (Py_ssize_t row = 0; row < n; row++) {
        int32_t k = idx[row];
        if (k < 0) { /* a null row: its offsets are written with the next row read */
            struct_nulls++;
            continue;
        }
        if (k >= nreaders || st[row] < 0 || st[row] > en[row] || en[row] > data.len) {
            PyErr_Format(PyExc_ValueError,
                         "columns: row %zd: reader %d, bytes [%lld, %lld) of %zd", row, (int)k,
                         (long long)st[row], (long long)en[row], data.len);
            goto done;
        }
        col_offsets_fill(cols, varcols, nvar, ended, row); /* where this row starts */
        Ctx c = {(const unsigned char *)data.buf + st[row], (Py_ssize_t)(en[row] - st[row]),
                 crs[k].r};
        RowOut o = {cols, pending, 0, row};
        int rc = col_row(&c, &crs[k], &o, trailing_ok);
        if (rc == -2) goto done;
        if (rc == 0) {
            for (Py_ssize_t j = 0; o.npending && j < ncols; j++) {
                if (!pending[j]) continue;
                PyObject *v = pending[j];
                pending[j] = NULL;
                o.npending--;
                if (col_store(&cols[j], row, v, n) < 0) goto done;
            }
            BIT_SET(valid, row);
        } else {
            if (PyErr_Occurred()) {
                if (!PyErr_ExceptionMatches(PyExc_Exception)) goto done;
                PyErr_Clear();
            }
            for (Py_ssize_t j = 0; j < ncols; j++) {
                Py_CLEAR(pending[j]);
                if (cols[j].validity) BIT_CLEAR(cols[j].validity, row);
                if (cols[j].offsets) cols[j].len = cols[j].offsets[row];
            }
            struct_nulls++;
            PyObject *at = PyLong_FromSsize_t(row);
            if (!at || PyList_Append(failed, at) < 0) { Py_XDECREF(at); goto done; }
            Py_DECREF(at);
        }
        for (Py_ssize_t j = 0; j < nvar; j++) {
            Column *col = &cols[varcols[j]];
            if (UNLIKELY(col->len > INT32_MAX)) {
                PyErr_Format(PyExc_OverflowError,
                             "column %U holds more than 2 GiB of bytes: decode smaller batches",
                             col->attr);
                goto done;
            }
            col->offsets[row + 1] = (int32_t)col->len;
        }
        ended = row + 1;
    }
    col_offsets_fill(cols, varcols, nvar, ended, n);
    for (Py_ssize_t j = 0; j < ncols; j++) {
        if (cols[j].follows) memcpy(cols[j].validity, valid, (size_t)((n + 7) / 8));
        if (cols[j].constant && col_fill(&cols[j], n) < 0) goto done;
    }
    if (!(outs = PyList_New(ncols))) goto done;
    for (Py_ssize_t j = 0; j < ncols; j++) {
        PyObject *o = col_finish(&cols[j], n);
        if (!o) goto done;
        PyList_SET_ITEM(outs, j, o);
    }
    result = Py_BuildValue("(OnOO)", valid_obj, struct_nulls, outs, failed);
done:
    if (data.obj) PyBuffer_Release(&data);
    if (starts.obj) PyBuffer_Release(&starts);
    if (ends.obj) PyBuffer_Release(&ends);
    if (index.obj) PyBuffer_Release(&index);
    PyMem_Free(index_copy);
    PyMem_Free(starts_copy);
    PyMem_Free(ends_copy);
    for (Py_ssize_t k = 0; crs && k < nreaders; k++) col_unplan(&crs[k]);
    PyMem_Free(crs);
    for (Py_ssize_t j = 0; cols && j < ncols; j++) {
        Py_XDECREF(cols[j].valid_obj);
        Py_XDECREF(cols[j].values_obj);
        Py_XDECREF(cols[j].offsets_obj);
        Py_XDECREF(cols[j].list);
        Py_XDECREF(cols[j].data_obj);
        if (pending) Py_XDECREF(pending[j]);
    }
    PyMem_Free(cols);
    PyMem_Free(pending);
    PyMem_Free(varcols);
    Py_XDECREF(valid_obj);
    Py_XDECREF(failed);
    Py_XDECREF(outs);
    return result;
}

#endif /* SPECGEN_COLUMNS_H */
