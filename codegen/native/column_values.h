/* The columns of columns() (columns.h) as Arrow buffers: their kinds, growing string and
 * binary data, a uuid's text, a Python value converted for its column (a default once:
 * Ready), stored, and a column finished or filled with a constant.
 * Part of the _engine module (engine.c).
 */
#ifndef SPECGEN_COLUMN_VALUES_H
#define SPECGEN_COLUMN_VALUES_H

enum { COL_OBJECT = 0, COL_TAGGED, COL_INT8, COL_INT16, COL_INT32, COL_INT64, COL_FLOAT64,
       COL_BOOL, COL_STRING, COL_BINARY };
static const char *const COL_NAMES[] = {"object", "tagged", "int8", "int16", "int32", "int64",
                                        "float64", "bool", "string", "binary", NULL};
static const Py_ssize_t COL_WIDTH[] = {0, 0, 1, 2, 4, 8, 8, 0, 0, 0};

#define IS_OBJECT_KIND(kind) ((kind) == COL_OBJECT || (kind) == COL_TAGGED)
#define BIT_SET(bitmap, row) ((bitmap)[(row) >> 3] |= (unsigned char)(1u << ((row) & 7)))
#define BIT_CLEAR(bitmap, row) ((bitmap)[(row) >> 3] &= (unsigned char)~(1u << ((row) & 7)))

/* A default as its atomic column stores it, converted once. */
typedef struct {
    PyObject *owner; /* NULL: no ready value (the default is made per row) */
    int null;
    long long i;
    double d;
    const char *s;
    Py_ssize_t len;
    unsigned char bytes[8]; /* the value of a fixed-width column, as stored */
    int skip; /* the column is this value in every row: filled once at the end */
} Ready;

typedef struct {
    int kind;
    PyObject *attr;           /* borrowed */
    PyObject *valid_obj, *values_obj, *offsets_obj; /* bytearrays */
    unsigned char *validity;  /* set when a row's value is written and not null */
    unsigned char *values;    /* fixed widths, and the bool bitmap */
    int32_t *offsets;         /* strings and bytes */
    PyObject *data_obj;       /* strings and bytes: a bytearray of cap bytes, len used */
    char *data;
    Py_ssize_t len, cap;
    PyObject *list;           /* object columns */
    int follows; /* every reader writes a value in every accepted row: validity = the rows' */
    const Ready *constant; /* every reader's value is this default: filled at the end */
} Column;


/* Room for more bytes in a string or bytes column's data (col_reserve's slow path). */
static COLD int col_grow(Column *col, Py_ssize_t more) {
    if (more > PY_SSIZE_T_MAX / 4 - col->len) { PyErr_NoMemory(); return -1; }
    Py_ssize_t cap = col->cap ? col->cap : 4096;
    while (cap - col->len < more) cap *= 2;
    if (!col->data_obj) {
        if (!(col->data_obj = PyByteArray_FromStringAndSize(NULL, cap))) return -1;
    } else if (PyByteArray_Resize(col->data_obj, cap) < 0) {
        return -1;
    }
    col->data = PyByteArray_AS_STRING(col->data_obj);
    col->cap = cap;
    return 0;
}

static HOT_INLINE int col_reserve(Column *col, Py_ssize_t more) {
    return LIKELY(more <= col->cap - col->len) ? 0 : col_grow(col, more);
}

static HOT_INLINE int col_append(Column *col, const char *p, Py_ssize_t n) {
    if (UNLIKELY(col_reserve(col, n) < 0)) return -1;
    if (LIKELY(n)) memcpy(col->data + col->len, p, (size_t)n); /* data is NULL until it grows */
    col->len += n;
    return 0;
}

/* runtime.json_values.uuid_json: URL-safe base64 of the 16 bytes without padding (22 characters). */
static void uuid_text(const unsigned char *p, char *out) {
    base64_text(out, p, 16, B64URL, 0);
}

static inline void col_fixed(Column *col, Py_ssize_t row, int opcode, const unsigned char *p) {
    switch (opcode) {
    case OP_INT8: col->values[row] = p[0]; break;
    case OP_INT16: { int16_t v = (int16_t)load16(p); memcpy(col->values + 2 * row, &v, 2); break; }
    case OP_UINT16: { int32_t v = load16(p); memcpy(col->values + 4 * row, &v, 4); break; }
    case OP_INT32: { int32_t v = (int32_t)load32(p); memcpy(col->values + 4 * row, &v, 4); break; }
    case OP_UINT32: { int64_t v = load32(p); memcpy(col->values + 8 * row, &v, 8); break; }
    case OP_INT64:
    case OP_FLOAT64: { uint64_t v = load64(p); memcpy(col->values + 8 * row, &v, 8); break; }
    case OP_BOOL:
        if (p[0]) BIT_SET(col->values, row);
        else BIT_CLEAR(col->values, row);
        break;
    }
}

/* Write a ready value into row's atomic column (replacing what the row has there). */
static inline int col_write(Column *col, Py_ssize_t row, const Ready *v) {
    if (v->null) {
        if (col->offsets) col->len = col->offsets[row];
        BIT_CLEAR(col->validity, row);
        return 0;
    }
    switch (col->kind) {
    case COL_INT8: col->values[row] = v->bytes[0]; break;
    case COL_INT16: memcpy(col->values + 2 * row, v->bytes, 2); break;
    case COL_INT32: memcpy(col->values + 4 * row, v->bytes, 4); break;
    case COL_INT64: case COL_FLOAT64: memcpy(col->values + 8 * row, v->bytes, 8); break;
    case COL_BOOL:
        if (v->i) BIT_SET(col->values, row);
        else BIT_CLEAR(col->values, row);
        break;
    default:
        col->len = col->offsets[row];
        if (col_append(col, v->s, v->len) < 0) return -1;
    }
    if (!col->follows) BIT_SET(col->validity, row);
    return 0;
}

/* A Python value as an atomic column stores it (new reference in out->owner), or -1 with a
   TypeError when the column cannot hold it. A uuid becomes its uuid_json text. */
static int col_convert(const Column *col, PyObject *v, Ready *out) {
    memset(out, 0, sizeof(Ready));
    if (v == Py_None) {
        out->null = 1;
    } else {
        switch (col->kind) {
        case COL_INT8: case COL_INT16: case COL_INT32: case COL_INT64: case COL_BOOL:
            if (!PyLong_Check(v)) goto wrong;
            out->i = PyLong_AsLongLong(v);
            if (out->i == -1 && PyErr_Occurred()) return -1;
            if (col->kind == COL_INT8) { int8_t x = (int8_t)out->i; memcpy(out->bytes, &x, 1); }
            if (col->kind == COL_INT16) { int16_t x = (int16_t)out->i; memcpy(out->bytes, &x, 2); }
            if (col->kind == COL_INT32) { int32_t x = (int32_t)out->i; memcpy(out->bytes, &x, 4); }
            if (col->kind == COL_INT64) { int64_t x = out->i; memcpy(out->bytes, &x, 8); }
            break;
        case COL_FLOAT64:
            out->d = PyFloat_AsDouble(v);
            if (out->d == -1.0 && PyErr_Occurred()) return -1;
            memcpy(out->bytes, &out->d, 8);
            break;
        case COL_STRING:
            if (Py_TYPE(v) == UuidType) {
                PyObject *b = PyObject_GetAttrString(v, "bytes");
                if (!b) return -1;
                char text[22];
                if (!PyBytes_Check(b) || PyBytes_GET_SIZE(b) != 16) { Py_DECREF(b); goto wrong; }
                uuid_text((const unsigned char *)PyBytes_AS_STRING(b), text);
                Py_DECREF(b);
                if (!(v = PyUnicode_FromStringAndSize(text, 22))) return -1;
                out->owner = v;
                out->s = PyUnicode_AsUTF8AndSize(v, &out->len);
                return out->s ? 0 : -1;
            }
            if (!PyUnicode_Check(v)) goto wrong;
            if (!(out->s = PyUnicode_AsUTF8AndSize(v, &out->len))) return -1;
            break;
        case COL_BINARY:
            if (!PyBytes_Check(v)) goto wrong;
            out->s = PyBytes_AS_STRING(v);
            out->len = PyBytes_GET_SIZE(v);
            break;
        default: goto wrong;
        }
    }
    Py_INCREF(v);
    out->owner = v;
    return 0;
wrong:
    PyErr_Format(PyExc_TypeError, "columns: a %s value in the %s column %U",
                 Py_TYPE(v)->tp_name, COL_NAMES[col->kind], col->attr);
    return -1;
}

/* Store an object (stolen) into row's column: nested values, tagged fields, defaults. */
static int col_store(Column *col, Py_ssize_t row, PyObject *v, Py_ssize_t n) {
    if (IS_OBJECT_KIND(col->kind)) {
        if (v == Py_None && !col->list) { Py_DECREF(v); return 0; }
        if (!col->list) { /* made at the first value: a column of nulls costs nothing */
            if (!(col->list = PyList_New(n))) { Py_DECREF(v); return -1; }
            for (Py_ssize_t i = 0; i < n; i++) {
                Py_INCREF(Py_None);
                PyList_SET_ITEM(col->list, i, Py_None);
            }
        }
        PyObject *old = PyList_GET_ITEM(col->list, row);
        PyList_SET_ITEM(col->list, row, v);
        Py_DECREF(old);
        return 0;
    }
    Ready ready;
    int rc = col_convert(col, v, &ready);
    Py_DECREF(v);
    if (rc == 0) rc = col_write(col, row, &ready);
    Py_XDECREF(ready.owner);
    return rc;
}

static int col_buffer(Py_ssize_t size, PyObject **obj, unsigned char **p) {
    *obj = PyByteArray_FromStringAndSize(NULL, size);
    if (!*obj) return -1;
    *p = (unsigned char *)PyByteArray_AS_STRING(*obj);
    memset(*p, 0, (size_t)size);
    return 0;
}

static Py_ssize_t count_set(const unsigned char *bitmap, Py_ssize_t n) {
    Py_ssize_t count = 0, i = 0;
    for (; i + 8 <= n / 8; i += 8) {
        uint64_t w;
        memcpy(&w, bitmap + i, 8);
        count += __builtin_popcountll(w);
    }
    for (Py_ssize_t row = i * 8; row < n; row++) count += (bitmap[row >> 3] >> (row & 7)) & 1;
    return count;
}

static PyObject *col_finish(Column *col, Py_ssize_t n) {
    if (IS_OBJECT_KIND(col->kind)) {
        Py_ssize_t nonnull = 0;
        for (Py_ssize_t i = 0; col->list && i < n; i++)
            nonnull += PyList_GET_ITEM(col->list, i) != Py_None;
        return Py_BuildValue("(On)", col->list ? col->list : Py_None, nonnull);
    }
    Py_ssize_t nulls = n - count_set(col->validity, n);
    if (col->offsets) {
        if (!col->data_obj && !(col->data_obj = PyByteArray_FromStringAndSize(NULL, 0))) return NULL;
        if (PyByteArray_Resize(col->data_obj, col->len) < 0) return NULL;
        return Py_BuildValue("(OnOO)", col->valid_obj, nulls, col->offsets_obj, col->data_obj);
    }
    return Py_BuildValue("(OnO)", col->valid_obj, nulls, col->values_obj);
}

/* Load the columns' kinds and allocate their buffers for n rows. */
static int col_setup(Column *cols, PyObject *kinds, Py_ssize_t n) {
    Py_ssize_t ncols = PyTuple_GET_SIZE(kinds), bitmap = (n + 7) / 8;
    if (n > (PY_SSIZE_T_MAX - 8) / 8) { PyErr_NoMemory(); return -1; }
    for (Py_ssize_t k = 0; k < ncols; k++) {
        PyObject *spec = PyTuple_GET_ITEM(kinds, k);
        Column *col = &cols[k];
        const char *name;
        if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 2 ||
            !PyUnicode_Check(PyTuple_GET_ITEM(spec, 0)) ||
            !(name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(spec, 1)))) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "columns: kinds are (attribute, kind) pairs");
            return -1;
        }
        col->attr = PyTuple_GET_ITEM(spec, 0);
        col->kind = -1;
        for (int j = 0; COL_NAMES[j]; j++)
            if (strcmp(COL_NAMES[j], name) == 0) col->kind = j;
        if (col->kind < 0) {
            PyErr_Format(PyExc_ValueError, "columns: unknown column kind %s", name);
            return -1;
        }
        if (IS_OBJECT_KIND(col->kind)) continue;
        if (col_buffer(bitmap, &col->valid_obj, &col->validity) < 0) return -1;
        if (col->kind == COL_STRING || col->kind == COL_BINARY) {
            unsigned char *p;
            if (col_buffer((n + 1) * 4, &col->offsets_obj, &p) < 0) return -1;
            col->offsets = (int32_t *)p;
        } else {
            Py_ssize_t size = col->kind == COL_BOOL ? bitmap : COL_WIDTH[col->kind] * n;
            if (col_buffer(size, &col->values_obj, &col->values) < 0) return -1;
        }
    }
    return 0;
}

static int same_ready(const Ready *a, const Ready *b) {
    return a->len == b->len && memcmp(a->bytes, b->bytes, 8) == 0 && a->i == b->i &&
           (a->len == 0 || memcmp(a->s, b->s, (size_t)a->len) == 0);
}

/* A constant column for n rows (the values under null rows too). */
static int col_fill(Column *col, Py_ssize_t n) {
    const Ready *v = col->constant;
    Py_ssize_t w = COL_WIDTH[col->kind];
    if (col->kind == COL_BOOL) {
        memset(col->values, v->i ? 0xFF : 0, (size_t)((n + 7) / 8));
    } else if (w == 8) {
        for (Py_ssize_t row = 0; row < n; row++) memcpy(col->values + 8 * row, v->bytes, 8);
    } else if (w == 4) {
        for (Py_ssize_t row = 0; row < n; row++) memcpy(col->values + 4 * row, v->bytes, 4);
    } else if (w == 2) {
        for (Py_ssize_t row = 0; row < n; row++) memcpy(col->values + 2 * row, v->bytes, 2);
    } else if (w == 1) {
        memset(col->values, v->bytes[0], (size_t)n);
    } else {
        if (v->len && n > INT32_MAX / v->len) {
            PyErr_Format(PyExc_OverflowError,
                         "column %U holds more than 2 GiB of bytes: decode smaller batches",
                         col->attr);
            return -1;
        }
        col->len = 0;
        if (col_reserve(col, n * v->len) < 0) return -1;
        for (Py_ssize_t row = 0; row < n; row++) {
            if (v->len) memcpy(col->data + row * v->len, v->s, (size_t)v->len);
            col->offsets[row + 1] = (int32_t)((row + 1) * v->len);
        }
        col->len = n * v->len;
    }
    return 0;
}

#endif /* SPECGEN_COLUMN_VALUES_H */
