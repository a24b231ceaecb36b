/* A table's text from its cells: what codegen/dumps/text_table.py's columns_text draws (the
 * readable reference; tests/test_text_table.py compares the two on drawn tables), without a
 * Python object per cell. Part of the _jsontext module (jsontext.c).
 *
 * Cells whose characters are each one terminal cell wide (ASCII, and Latin letters up to
 * U+02FF) are measured, cut and padded here by their length. Any other cell is measured and
 * fitted by the reference's own functions (width_of, fit: rich's tables of wide and zero-width
 * characters), so the text is the reference's whatever rich's version says.
 */
#ifndef SPECGEN_TABLE_TEXT_H
#define SPECGEN_TABLE_TEXT_H

/* A character shown escaped (text_table._ESCAPES): C0 and C1 controls, DEL, U+2028/U+2029. */
static inline int table_escaped(Py_UCS4 c) {
    return c < 0x20 || (c >= 0x7F && c < 0xA0) || c == 0x2028 || c == 0x2029;
}

/* One cell wide whatever rich's version (its single-cell ranges, Latin part). */
static inline int table_single_cell(Py_UCS4 c) {
    return (c >= 0x20 && c < 0x7F) || (c >= 0xA0 && c <= 0xAC) || (c >= 0xAE && c <= 0x2FF);
}

/* The escape of c (table_escaped) into out; its length. */
static int table_escape(Py_UCS4 c, Py_UCS4 *out) {
    static const char hex[] = "0123456789abcdef";
    const char *s = NULL;
    if (c == '\n') s = "\\n";
    else if (c == '\r') s = "\\r";
    else if (c == '\t') s = "\\t";
    if (s) {
        out[0] = (Py_UCS4)s[0];
        out[1] = (Py_UCS4)s[1];
        return 2;
    }
    if (c < 0x100) {
        out[0] = '\\', out[1] = 'x', out[2] = (Py_UCS4)hex[c >> 4], out[3] = (Py_UCS4)hex[c & 15];
        return 4;
    }
    out[0] = '\\', out[1] = 'u';
    for (int i = 0; i < 4; i++) out[2 + i] = (Py_UCS4)hex[(c >> (12 - 4 * i)) & 15];
    return 6;
}

/* The cell as shown (a new reference): itself when it has nothing to escape, else a new
   string with its controls escaped. *single: 1 when each of its characters is one cell. */
static PyObject *table_shown(PyObject *cell, int *single) {
    const int kind = PyUnicode_KIND(cell);
    const void *data = PyUnicode_DATA(cell);
    const Py_ssize_t n = PyUnicode_GET_LENGTH(cell);
    Py_ssize_t extra = 0;
    int one = 1;
    if (kind == PyUnicode_1BYTE_KIND) {
        const Py_UCS1 *p = data;
        const int ascii = PyUnicode_IS_ASCII(cell);
        for (Py_ssize_t i = 0; i < n; i++) {
            const Py_UCS1 c = p[i];
            if (UNLIKELY(c < 0x20 || (c >= 0x7F && c < 0xA0))) {
                extra += (c == '\n' || c == '\r' || c == '\t') ? 1 : 3;
            } else if (!ascii && !table_single_cell(c)) {
                one = 0;
            }
        }
    } else {
        for (Py_ssize_t i = 0; i < n; i++) {
            const Py_UCS4 c = PyUnicode_READ(kind, data, i);
            if (table_escaped(c))
                extra += (c == '\n' || c == '\r' || c == '\t') ? 1 : c < 0x100 ? 3 : 5;
            else if (!table_single_cell(c))
                one = 0;
        }
    }
    *single = one;
    if (LIKELY(!extra)) return Py_NewRef(cell);
    if (n > PY_SSIZE_T_MAX / (Py_ssize_t)sizeof(Py_UCS4) - extra) return PyErr_NoMemory();
    Py_UCS4 *out = PyMem_Malloc((size_t)(n + extra) * sizeof(Py_UCS4));
    if (!out) return PyErr_NoMemory();
    Py_ssize_t len = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        const Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (table_escaped(c)) len += table_escape(c, out + len);
        else out[len++] = c;
    }
    PyObject *shown = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, out, len);
    PyMem_Free(out);
    return shown;
}

/* The buffer of the last table drawn, kept for the next (up to this size), or empty. */
#define TABLE_BUFFER_KEPT (64 << 20)
static Buf table_buffer;

/* The text being written: characters of one kind (1, 2 or 4 bytes), widened when a wider
   character comes. */
typedef struct {
    Buf b;
    int kind;
} TableOut;

static int table_widen(TableOut *t, int kind) {
    const Py_ssize_t n = t->b.len / t->kind;
    Buf wide = {NULL, 0, 0, NULL};
    if (n > PY_SSIZE_T_MAX / kind || buf_reserve(&wide, n * kind) < 0) {
        PyMem_Free(wide.p);
        if (!PyErr_Occurred()) PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) PyUnicode_WRITE(kind, wide.p, i, PyUnicode_READ(t->kind, t->b.p, i));
    wide.len = n * kind;
    PyMem_Free(t->b.p);
    t->b = wide;
    t->kind = kind;
    return 0;
}

/* s[start:start + n] appended. */
static int table_put(TableOut *t, PyObject *s, Py_ssize_t start, Py_ssize_t n) {
    const int kind = PyUnicode_KIND(s);
    if (UNLIKELY(kind > t->kind)) {
        const Py_UCS4 top = PyUnicode_MAX_CHAR_VALUE(s);
        const int need = top < 0x100 ? 1 : top < 0x10000 ? 2 : 4;
        if (need > t->kind && table_widen(t, need) < 0) return -1;
    }
    if (n > PY_SSIZE_T_MAX / 4 || buf_reserve(&t->b, n * t->kind) < 0) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        return -1;
    }
    const void *data = PyUnicode_DATA(s);
    if (kind == t->kind) {
        memcpy(t->b.p + t->b.len, (const char *)data + start * kind, (size_t)(n * kind));
    } else if (kind == PyUnicode_1BYTE_KIND && t->kind == PyUnicode_2BYTE_KIND) {
        const Py_UCS1 *from = (const Py_UCS1 *)data + start;
        Py_UCS2 *to = (Py_UCS2 *)(t->b.p + t->b.len);
        for (Py_ssize_t i = 0; i < n; i++) to[i] = from[i];
    } else {
        const Py_ssize_t at = t->b.len / t->kind;
        for (Py_ssize_t i = 0; i < n; i++)
            PyUnicode_WRITE(t->kind, t->b.p, at + i, PyUnicode_READ(kind, data, start + i));
    }
    t->b.len += n * t->kind;
    return 0;
}

/* One character appended (ASCII, or the ellipsis). */
static int table_put_char(TableOut *t, Py_UCS4 c, Py_ssize_t times) {
    if (c > 0xFF && t->kind == 1 && table_widen(t, 2) < 0) return -1;
    if (times > PY_SSIZE_T_MAX / 4 || buf_reserve(&t->b, times * t->kind) < 0) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        return -1;
    }
    if (t->kind == 1) {
        memset(t->b.p + t->b.len, (int)c, (size_t)times);
    } else {
        const Py_ssize_t at = t->b.len / t->kind;
        for (Py_ssize_t i = 0; i < times; i++) PyUnicode_WRITE(t->kind, t->b.p, at + i, c);
    }
    t->b.len += times * t->kind;
    return 0;
}

/* The line begun at character `start` without its trailing whitespace (str.rstrip), then a
   line end. */
static int table_end_line(TableOut *t, Py_ssize_t start) {
    Py_ssize_t n = t->b.len / t->kind;
    while (n > start && Py_UNICODE_ISSPACE(PyUnicode_READ(t->kind, t->b.p, n - 1))) n--;
    t->b.len = n * t->kind;
    return table_put_char(t, '\n', 1);
}

/* A cell in a column `width` wide: a single-cell one cut (an ellipsis last) or padded by its
   length; any other by fit(cell, width), the reference's. */
static int table_fit_cell(TableOut *t, PyObject *cell, int single, Py_ssize_t width, PyObject *fit) {
    if (single) {
        const Py_ssize_t n = PyUnicode_GET_LENGTH(cell);
        if (n <= width) {
            if (table_put(t, cell, 0, n) < 0) return -1;
            return table_put_char(t, ' ', width - n);
        }
        if (table_put(t, cell, 0, width - 1) < 0) return -1;
        return table_put_char(t, 0x2026, 1);
    }
    PyObject *w = PyLong_FromSsize_t(width);
    if (!w) return -1;
    PyObject *fitted = PyObject_CallFunctionObjArgs(fit, cell, w, NULL);
    Py_DECREF(w);
    if (!fitted) return -1;
    int rc = -1;
    if (!PyUnicode_Check(fitted))
        PyErr_Format(PyExc_TypeError, "fit must return a str, not %R", fitted);
    else
        rc = table_put(t, fitted, 0, PyUnicode_GET_LENGTH(fitted));
    Py_DECREF(fitted);
    return rc;
}

/* Terminal cells of a cell: its length when single, else width_of(cell). -1 on error. */
static Py_ssize_t table_width(PyObject *cell, int single, PyObject *width_of) {
    if (single) return PyUnicode_GET_LENGTH(cell);
    PyObject *w = PyObject_CallOneArg(width_of, cell);
    if (!w) return -1;
    const Py_ssize_t n = PyLong_Check(w) ? PyLong_AsSsize_t(w) : -1;
    Py_DECREF(w);
    if (n < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "width_of must return a count");
        return -1;
    }
    return n;
}

/* text_table._column_widths: within `room`, the widest columns narrowed to one cap. */
static void table_column_widths(const Py_ssize_t *natural, Py_ssize_t *widths, Py_ssize_t n,
                                Py_ssize_t room) {
    long long total = 0;
    Py_ssize_t top = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        total += natural[i];
        if (natural[i] > top) top = natural[i];
        widths[i] = natural[i];
    }
    if (total <= room) return;
    Py_ssize_t cap = top, c = 0, above = PY_SSIZE_T_MAX;
    int fits = 0;
    for (;;) { /* the distinct widths, widest first: lower the cap step by step */
        Py_ssize_t next = -1;
        for (Py_ssize_t i = 0; i < n; i++)
            if (natural[i] < above && natural[i] > next) next = natural[i];
        if (next < 0) break;
        above = c = next;
        long long narrower = 0;
        for (Py_ssize_t i = 0; i < n; i++) narrower += natural[i] < c ? natural[i] : c;
        if (narrower <= room) {
            fits = 1;
            break;
        }
        cap = c;
    }
    if (!fits) c = 0;
    long long wide = 0, rest = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (natural[i] >= cap) wide++;
        else rest += natural[i];
    }
    long long share = room - rest, q = share / wide;
    if (q * wide != share && (share < 0) != (wide < 0)) q--; /* floor division */
    long long best = c > q ? c : q;
    if (best < 1) best = 1;
    for (Py_ssize_t i = 0; i < n; i++) widths[i] = natural[i] < best ? natural[i] : (Py_ssize_t)best;
}

/* table_text(header, columns, title, width, width_of, fit) -> str: columns_text's text of
   the cells given column by column (a list of str per column, each as long). */
static PyObject *table_text(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 6 || !PyTuple_Check(args[0]) || !PyList_Check(args[1]) ||
        (args[2] != Py_None && !PyUnicode_Check(args[2])) || !PyLong_Check(args[3]))
        return usage_error("table_text(header, columns, title, width, width_of, fit): a tuple of "
                           "str, a list of lists of str, a str or None, an int and two callables");
    PyObject *header = args[0], *columns = args[1], *title = args[2];
    PyObject *width_of = args[4], *fit = args[5];
    const Py_ssize_t ncol = PyTuple_GET_SIZE(header);
    const Py_ssize_t page = PyLong_AsSsize_t(args[3]);
    if (page == -1 && PyErr_Occurred()) return NULL;
    if (ncol < 1 || PyList_GET_SIZE(columns) != ncol) {
        PyErr_SetString(PyExc_ValueError, "table_text: a column of cells per header, one at least");
        return NULL;
    }
    Py_ssize_t nrows = -1;
    for (Py_ssize_t i = 0; i < ncol; i++) {
        PyObject *column = PyList_GET_ITEM(columns, i);
        if (!PyUnicode_Check(PyTuple_GET_ITEM(header, i)) || !PyList_Check(column)) {
            PyErr_SetString(PyExc_TypeError, "table_text: str headers and a list per column");
            return NULL;
        }
        if (nrows >= 0 && PyList_GET_SIZE(column) != nrows) {
            PyErr_SetString(PyExc_ValueError, "table_text: columns of one length");
            return NULL;
        }
        nrows = PyList_GET_SIZE(column);
    }
    const Py_ssize_t ncells = nrows * ncol; /* each list's length is bounded by memory */
    if (nrows > (PY_SSIZE_T_MAX / (Py_ssize_t)sizeof(PyObject *)) / ncol ||
        ncol > PY_SSIZE_T_MAX / (Py_ssize_t)(4 * sizeof(Py_ssize_t)) - 1)
        return PyErr_NoMemory();
    PyObject **cells = PyMem_Calloc((size_t)(ncells ? ncells : 1), sizeof(PyObject *));
    char *single = PyMem_Malloc((size_t)(ncells ? ncells : 1));
    Py_ssize_t *natural = PyMem_Malloc((size_t)(2 * ncol) * sizeof(Py_ssize_t));
    Py_ssize_t *widths = natural ? natural + ncol : NULL;
    /* the last table's buffer again (a table's text is some megabytes: growing a new one
       each time costs more than writing it) */
    TableOut t = {table_buffer, 1};
    t.b.len = 0;
    table_buffer.p = NULL;
    table_buffer.cap = 0;
    PyObject *out = NULL;
    if (!cells || !single || !natural) {
        PyErr_NoMemory();
        goto done;
    }
    /* The cells as shown, before any callback runs (it could change the lists). */
    for (Py_ssize_t i = 0; i < ncol; i++) {
        PyObject *column = PyList_GET_ITEM(columns, i);
        for (Py_ssize_t r = 0; r < nrows; r++) {
            PyObject *cell = PyList_GET_ITEM(column, r);
            if (!PyUnicode_Check(cell)) {
                PyErr_Format(PyExc_TypeError, "table_text: cells are str, not %R", cell);
                goto done;
            }
            int one;
            if (!(cells[i * nrows + r] = table_shown(cell, &one))) goto done;
            single[i * nrows + r] = (char)one;
        }
    }
    for (Py_ssize_t i = 0; i < ncol; i++) {
        PyObject *h = PyTuple_GET_ITEM(header, i);
        int one;
        PyObject *shown = table_shown(h, &one); /* the header is not escaped: only measured */
        if (!shown) goto done;
        Py_DECREF(shown);
        if (one) { /* escapes are not single cells: a header with one is measured by width_of */
            for (Py_ssize_t k = 0; one && k < PyUnicode_GET_LENGTH(h); k++)
                one = !table_escaped(PyUnicode_READ_CHAR(h, k));
        }
        Py_ssize_t most = table_width(h, one, width_of);
        if (most < 0) goto done;
        for (Py_ssize_t r = 0; r < nrows; r++) {
            const Py_ssize_t w = table_width(cells[i * nrows + r], single[i * nrows + r], width_of);
            if (w < 0) goto done;
            if (w > most) most = w;
        }
        natural[i] = most;
    }
    const Py_ssize_t room = page - 2 - 2 * (ncol - 1);
    table_column_widths(natural, widths, ncol, room > ncol ? room : ncol);
    for (Py_ssize_t i = 0; i < ncol; i++)
        if (widths[i] < natural[i]) t.kind = PyUnicode_2BYTE_KIND; /* an ellipsis will come */
    if (title != Py_None) {
        long long total = 2 + 2 * (long long)(ncol - 1);
        for (Py_ssize_t i = 0; i < ncol; i++) total += widths[i];
        PyObject *centred = PyObject_CallMethod(title, "center", "L", total);
        if (!centred) goto done;
        int rc = PyUnicode_Check(centred) ? table_put(&t, centred, 0, PyUnicode_GET_LENGTH(centred)) : -1;
        Py_DECREF(centred);
        if (rc < 0 || table_end_line(&t, 0) < 0) goto done;
    }
    Py_ssize_t start = t.b.len / t.kind;
    if (table_put_char(&t, ' ', 1) < 0) goto done;
    for (Py_ssize_t i = 0; i < ncol; i++) {
        PyObject *h = PyTuple_GET_ITEM(header, i);
        int one = 1;
        for (Py_ssize_t k = 0; one && k < PyUnicode_GET_LENGTH(h); k++) {
            const Py_UCS4 c = PyUnicode_READ_CHAR(h, k);
            one = table_single_cell(c);
        }
        if ((i && table_put_char(&t, ' ', 2) < 0) || table_fit_cell(&t, h, one, widths[i], fit) < 0)
            goto done;
    }
    if (table_end_line(&t, start) < 0) goto done;
    for (Py_ssize_t r = 0; r < nrows; r++) {
        start = t.b.len / t.kind;
        if (table_put_char(&t, ' ', 1) < 0) goto done;
        for (Py_ssize_t i = 0; i < ncol; i++) {
            if ((i && table_put_char(&t, ' ', 2) < 0) ||
                table_fit_cell(&t, cells[i * nrows + r], single[i * nrows + r], widths[i], fit) < 0)
                goto done;
        }
        if (table_end_line(&t, start) < 0) goto done;
    }
    out = PyUnicode_FromKindAndData(t.kind, t.b.p, t.b.len / t.kind);
done:
    if (cells)
        for (Py_ssize_t k = 0; k < ncells; k++) Py_XDECREF(cells[k]);
    PyMem_Free(cells);
    PyMem_Free(single);
    PyMem_Free(natural);
    if (table_buffer.p || t.b.cap > TABLE_BUFFER_KEPT) { /* another table's, kept meanwhile */
        PyMem_Free(t.b.p);
    } else {
        table_buffer = t.b;
        table_buffer.len = 0;
    }
    return out;
}

#endif /* SPECGEN_TABLE_TEXT_H */
