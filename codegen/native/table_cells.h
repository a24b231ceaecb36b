/* The cells of `dump --format table`'s records table for a coordinator topic's batch, made from
 * the decoded records' slots with a Writer's plans (json_writer.h), a column list each: what
 * codegen/dumps/table.py's reference makes of each record (tests/test_table_native.py compares
 * the two). A record the plans do not make exactly (another kind or class, a value they cannot
 * print) gets the reference's row, row(rec). Part of the _jsontext
 * module (jsontext.c).
 */
#ifndef SPECGEN_TABLE_CELLS_H
#define SPECGEN_TABLE_CELLS_H

enum { C_PARTITION, C_FILE, C_OFFSET, C_TIMESTAMP, C_TIME, C_NAME, C_KEY, C_VALUE, N_CELLS };

/* The JSON of a key or value being printed, kept between records (a buffer each print would
   allocate again); no Python code runs while it is in use. */
static Buf cells_json;

/* The text of b as a str (the JSON the plans print is UTF-8). */
static PyObject *cells_text(const Buf *b) { return PyUnicode_DecodeUTF8(b->p, b->len, NULL); }

/* The key cell of a record (a new reference): keys[key_bytes], else its key's JSON by the
   key's plan ("" for an empty object), kept in keys. NULL with an error, or NULL without one
   where the plans cannot print it. */
static PyObject *key_cell(Writer *w, PyObject *rec, PyObject *key_bytes, PyObject *keys) {
    PyObject *cell = PyDict_GetItemWithError(keys, key_bytes);
    if (cell) return Py_NewRef(cell);
    if (PyErr_Occurred()) return NULL;
    PyObject *key = slot(w, rec, R_KEY);
    if (!key) return NULL;
    PyObject *zero = PyLong_FromLong(0);
    if (!zero) return NULL;
    const Plan *plan = plan_of(w, key, zero);
    Py_DECREF(zero);
    if (!plan) return NULL;
    Buf *b = &cells_json;
    b->len = 0;
    Py_INCREF(key);
    int rc = put_struct(b, plan, key, 0);
    Py_DECREF(key);
    if (rc >= 0) {
        cell = b->len == 2 && memcmp(b->p, "{}", 2) == 0 ? PyUnicode_New(0, 0) : cells_text(b);
        if (cell && PyDict_SetItem(keys, key_bytes, cell) < 0) Py_CLEAR(cell);
    }
    b->len = 0;
    return cell;
}

/* The value cell of a record (a new reference): "<tombstone>", its value's JSON by the
   value's plan, or (a group's members decoded in place) the writer's value_text. NULL with an
   error, or NULL without one where neither prints it. */
static PyObject *value_cell(Writer *w, PyObject *rec, int is_record, PyObject *version,
                            PyObject *tombstone) {
    if (!is_record) return Py_NewRef(tombstone);
    PyObject *members = slot(w, rec, R_MEMBERS), *value = slot(w, rec, R_VALUE);
    if (!members || !value) return NULL;
    if (members != Py_None) {
        PyObject *text = PyObject_CallOneArg(w->value_text, rec);
        if (!text) return NULL;
        PyObject *cell = NULL;
        if (PyBytes_CheckExact(text))
            cell = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(text), PyBytes_GET_SIZE(text), NULL);
        else if (text != Py_None)
            PyErr_Format(PyExc_TypeError, "value_text must return bytes or None, not %R", text);
        Py_DECREF(text);
        return cell;
    }
    const Plan *plan = plan_of(w, value, version);
    if (!plan) return NULL;
    Buf *b = &cells_json;
    b->len = 0;
    Py_INCREF(value);
    int rc = put_struct(b, plan, value, 0);
    Py_DECREF(value);
    PyObject *cell = rc >= 0 ? cells_text(b) : NULL;
    b->len = 0;
    return cell;
}

/* A record's cells into cells[C_OFFSET..C_VALUE] (new references): 1 made, 0 not here (the
   reference makes the row), -1 on error. */
static int record_cells_of(Writer *w, PyObject *rec, PyObject *keys, PyObject *times,
                           PyObject *time_text, PyObject *tombstone, PyObject **cells) {
    if (Py_TYPE(rec) != w->record_cls) return 0;
    PyObject *kind = slot(w, rec, R_KIND), *key_bytes = slot(w, rec, R_KEY_BYTES);
    if (!kind || !key_bytes || !PyBytes_CheckExact(key_bytes)) return 0;
    int is_record = same(kind, w->record_kind);
    if (is_record < 0) return -1;
    if (!is_record) {
        int is_tombstone = same(kind, w->tombstone_kind);
        if (is_tombstone <= 0) return is_tombstone;
    }
    PyObject *offset = slot(w, rec, R_OFFSET), *ts = slot(w, rec, R_TIMESTAMP);
    /* a record newer than the specs, or with a note, has the same cells (its key's and its
       value's JSON, the value's by the plan past the newest version) */
    PyObject *version = slot(w, rec, R_VALUE_VERSION), *name = slot(w, rec, R_NAME);
    if (!offset || !ts || !version || !name || !PyLong_CheckExact(offset) ||
        !PyLong_CheckExact(ts) || !PyUnicode_CheckExact(name) || !PyUnicode_GET_LENGTH(name))
        return 0;
    for (int i = C_OFFSET; i <= C_VALUE; i++) cells[i] = NULL;
    if (!(cells[C_KEY] = key_cell(w, rec, key_bytes, keys))) goto not_here;
    if (!(cells[C_VALUE] = value_cell(w, rec, is_record, version, tombstone))) goto not_here;
    PyObject *time = PyDict_GetItemWithError(times, ts);
    if (time) {
        Py_INCREF(time);
    } else {
        if (PyErr_Occurred() || !(time = PyObject_CallOneArg(time_text, ts))) goto fail;
        if (!PyUnicode_Check(time)) {
            PyErr_Format(PyExc_TypeError, "time_text must return a str, not %R", time);
            Py_DECREF(time);
            goto fail;
        }
        if (PyDict_SetItem(times, ts, time) < 0) {
            Py_DECREF(time);
            goto fail;
        }
    }
    cells[C_TIME] = time;
    if (!(cells[C_OFFSET] = PyObject_Str(offset)) || !(cells[C_TIMESTAMP] = PyObject_Str(ts)))
        goto fail;
    cells[C_NAME] = Py_NewRef(name);
    return 1;
not_here:
    if (PyErr_Occurred()) goto fail;
    for (int i = C_OFFSET; i <= C_VALUE; i++) Py_CLEAR(cells[i]);
    return 0;
fail:
    for (int i = C_OFFSET; i <= C_VALUE; i++) Py_CLEAR(cells[i]);
    return -1;
}

/* record_cells(writer, records, partition, file, columns, keys, times, time_text, row,
   tombstone) -> None: each record's cells appended to the eight column lists (partition and
   file the same for all); keys (key bytes -> key cell) and times (timestamp -> its UTC text,
   made by time_text) keep the cells that repeat; row(rec) -> the eight cells of a record made
   by the reference. */
static PyObject *record_cells(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 10 || Py_TYPE(args[0]) != &WriterType || !PyList_Check(args[1]) ||
        !PyUnicode_Check(args[2]) || !PyUnicode_Check(args[3]) || !PyList_Check(args[4]) ||
        PyList_GET_SIZE(args[4]) != N_CELLS || !PyDict_Check(args[5]) ||
        !PyDict_Check(args[6]) || !PyUnicode_Check(args[9]))
        return usage_error("record_cells(writer, records, partition, file, columns, keys, times, "
                           "time_text, row, tombstone): a Writer, a list, two str, a list of "
                           "eight lists, two dicts, two callables and a str");
    Writer *w = (Writer *)args[0];
    PyObject *records = args[1], *columns = args[4], *keys = args[5], *times = args[6];
    PyObject *time_text = args[7], *row = args[8], *tombstone = args[9];
    PyObject *lists[N_CELLS];
    for (int i = 0; i < N_CELLS; i++) {
        lists[i] = PyList_GET_ITEM(columns, i);
        if (!PyList_Check(lists[i])) {
            PyErr_SetString(PyExc_TypeError, "record_cells: a list per column");
            return NULL;
        }
    }
    /* the lists are held: a callback cannot free them while cells are appended */
    for (int i = 0; i < N_CELLS; i++) Py_INCREF(lists[i]);
    Py_INCREF(records);
    PyObject *result = NULL;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(records); k++) {
        PyObject *rec = Py_NewRef(PyList_GET_ITEM(records, k));
        PyObject *cells[N_CELLS] = {NULL};
        int made = record_cells_of(w, rec, keys, times, time_text, tombstone, cells);
        if (made > 0) {
            cells[C_PARTITION] = Py_NewRef(args[2]);
            cells[C_FILE] = Py_NewRef(args[3]);
        } else if (made == 0) {
            PyObject *reference = PyObject_CallOneArg(row, rec);
            if (reference && (!PyTuple_CheckExact(reference) ||
                              PyTuple_GET_SIZE(reference) != N_CELLS)) {
                PyErr_Format(PyExc_TypeError, "row must return a tuple of %d cells, not %R",
                             N_CELLS, reference);
                Py_CLEAR(reference);
            }
            if (reference) {
                for (int i = 0; i < N_CELLS; i++)
                    cells[i] = Py_NewRef(PyTuple_GET_ITEM(reference, i));
                Py_DECREF(reference);
                made = 1;
            } else {
                made = -1;
            }
        }
        Py_DECREF(rec);
        int rc = made;
        for (int i = 0; i < N_CELLS; i++) {
            if (rc > 0 && PyList_Append(lists[i], cells[i]) < 0) rc = -1;
            Py_XDECREF(cells[i]);
        }
        if (rc < 0) goto done;
    }
    result = Py_NewRef(Py_None);
done:
    Py_DECREF(records);
    for (int i = 0; i < N_CELLS; i++) Py_DECREF(lists[i]);
    return result;
}

#endif /* SPECGEN_TABLE_CELLS_H */
