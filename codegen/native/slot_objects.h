/* slot_objects: many objects of a slots dataclass made at once from columns, as the engine's
 * interpreter makes the generated classes' (interpreter.h): each allocated by its type and
 * its slots written at their offsets, no __init__ run. Where the class's __init__ only assigns
 * its fields (a dataclass without __post_init__, every field given: the caller's to check),
 * the objects are those cls(*row) makes. lag makes its PartitionLag objects so, some 3 k
 * instructions each by the dataclass's __init__. Included by records.c.
 */

/* slot_objects(cls, names, columns) -> list: objects of cls, the i-th with slot names[j] set
   to columns[j][i]; names a tuple of str (each a writable object slot cls itself defines),
   columns a tuple of as many lists or tuples, all of one length. */
static PyObject *slot_objects(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (!arity_ok(nargs, 3, "slot_objects(cls, names, columns)")) return NULL;
    PyObject *names = args[1], *columns = args[2];
    if (!PyType_Check(args[0]) || !PyTuple_CheckExact(names) || !PyTuple_CheckExact(columns) ||
        PyTuple_GET_SIZE(names) != PyTuple_GET_SIZE(columns) || PyTuple_GET_SIZE(names) < 1) {
        PyErr_SetString(PyExc_TypeError, "slot_objects(cls, names, columns): a class, and "
                                         "tuples of names and of columns of one length");
        return NULL;
    }
    PyTypeObject *cls = (PyTypeObject *)args[0];
    const Py_ssize_t nf = PyTuple_GET_SIZE(names);
    Py_ssize_t *offsets = PyMem_Malloc((size_t)nf * sizeof *offsets);
    if (!offsets) return PyErr_NoMemory();
    PyObject *out = NULL;
    Py_ssize_t n = -1;
    for (Py_ssize_t j = 0; j < nf; j++) {
        PyObject *name = PyTuple_GET_ITEM(names, j), *column = PyTuple_GET_ITEM(columns, j);
        if (!PyUnicode_Check(name) || (offsets[j] = member_offset(cls, name)) < 0) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError, "slot_objects: %R is not a writable object slot "
                                              "of %s", name, cls->tp_name);
            goto done;
        }
        for (Py_ssize_t k = 0; k < j; k++)
            if (offsets[k] == offsets[j]) {
                PyErr_Format(PyExc_ValueError, "slot_objects: %R named twice", name);
                goto done;
            }
        if (!PyList_CheckExact(column) && !PyTuple_CheckExact(column)) {
            PyErr_Format(PyExc_TypeError, "slot_objects: the column of %R is not a list or "
                                          "a tuple", name);
            goto done;
        }
        const Py_ssize_t len = Py_SIZE(column);
        if (n >= 0 && len != n) {
            PyErr_Format(PyExc_ValueError, "slot_objects: the column of %R holds %zd values, "
                                           "another %zd", name, len, n);
            goto done;
        }
        n = len;
    }
    /* the columns are held by the caller's tuple; a collection that tp_alloc starts could run
       a finalizer that changes a list: each list's length is checked as it is read */
    if (!(out = PyList_New(n))) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *obj = cls->tp_alloc(cls, 0);
        if (!obj) {
            Py_CLEAR(out);
            goto done;
        }
        for (Py_ssize_t j = 0; j < nf; j++) {
            PyObject *column = PyTuple_GET_ITEM(columns, j);
            if (Py_SIZE(column) != n) {
                PyErr_SetString(PyExc_RuntimeError, "slot_objects: a column changed size");
                Py_DECREF(obj);
                Py_CLEAR(out);
                goto done;
            }
            PyObject *v = PyList_CheckExact(column) ? PyList_GET_ITEM(column, i)
                                                    : PyTuple_GET_ITEM(column, i);
            *(PyObject **)((char *)obj + offsets[j]) = Py_NewRef(v);
        }
        PyList_SET_ITEM(out, i, obj);
    }
done:
    PyMem_Free(offsets);
    return out;
}
