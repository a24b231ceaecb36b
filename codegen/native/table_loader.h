/* The table loader: a Python layout table (codegen/native_tables.py; its numbers in
 * table_format.h) into the C structs of tables.h, checked as it goes (a table that does not
 * suit this engine is a ValueError naming what is wrong), with the slot offsets to write
 * directly where shared.h's checks pass and the default instances to copy (Prototype). Part
 * of the _engine module (engine.c).
 */
#ifndef SPECGEN_TABLE_LOADER_H
#define SPECGEN_TABLE_LOADER_H

static COLD int table_error(const char *what, PyObject *where) {
    if (!PyErr_Occurred())
        PyErr_Format(PyExc_ValueError, "layout table: %s (%R)", what, where ? where : Py_None);
    return -1;
}

static int as_int(PyObject *o, long *out) {
    *out = PyLong_AsLong(o);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

/* The byte offset of the struct class's slot `slot`, named attr, or -1 when it cannot be
   written directly (shared.h says when it can). */
static Py_ssize_t table_slot_offset(const STable *t, PyObject *attr, long slot) {
    PyObject *slots = t->direct ? direct_slots(t->cls, t->nslots) : NULL;
    return slots ? slot_offset(t->cls, slots, slot, attr) : -1;
}

static int is_table_class(Reader *r, PyTypeObject *type) {
    if (!PyDict_Check(r->classes)) return 0;
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(r->classes, &pos, &key, &value))
        if (value == (PyObject *)type) return 1;
    return 0;
}

static int shareable(Reader *r, PyObject *v) {
    return v == Py_None || PyLong_CheckExact(v) || PyUnicode_CheckExact(v) || PyBytes_CheckExact(v) ||
           PyBool_Check(v) || PyFloat_CheckExact(v) || Py_TYPE(v) == UuidType ||
           (r->no_tags && v == r->no_tags);
}

/* A Prototype of cls's default instance (new reference), or cls itself when its default
   cannot be copied slot by slot (then it is called for each default). */
static PyObject *prototype_of(Reader *r, PyObject *cls, int depth) {
    if (r->rows || depth > 64 || !PyType_Check(cls)) goto plain;
    PyTypeObject *type = (PyTypeObject *)cls;
    PyObject *slots = direct_slots(type, -1);
    if (!slots) {
        if (PyErr_Occurred()) return NULL;
        goto plain;
    }
    PyObject *obj = PyObject_CallNoArgs(cls);
    if (!obj) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(slots);
    Prototype *p = PyObject_GC_New(Prototype, &PrototypeType);
    if (!p) { Py_DECREF(obj); return NULL; }
    p->obj = obj;
    Py_INCREF(cls); p->cls = type;
    p->n = n;
    p->offsets = PyMem_Calloc(n + 1, sizeof(Py_ssize_t));
    p->kinds = PyMem_Calloc(n + 1, sizeof(int));
    p->children = PyMem_Calloc(n + 1, sizeof(PyObject *));
    PyObject_GC_Track(p);
    if (!p->offsets || !p->kinds || !p->children) { Py_DECREF(p); return PyErr_NoMemory(); }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t offset = slot_offset(type, slots, i, PyTuple_GET_ITEM(slots, i));
        if (offset < 0) {
            if (PyErr_Occurred()) { Py_DECREF(p); return NULL; }
            goto not_copyable;
        }
        p->offsets[i] = offset;
        PyObject *v = *(PyObject **)((char *)obj + offset);
        if (!v) goto not_copyable;
        if (PyList_CheckExact(v)) {
            if (PyList_GET_SIZE(v) != 0) goto not_copyable;
            p->kinds[i] = COPY_NEW_LIST;
        } else if (is_table_class(r, Py_TYPE(v))) {
            PyObject *child = prototype_of(r, (PyObject *)Py_TYPE(v), depth + 1);
            if (!child) { Py_DECREF(p); return NULL; }
            p->children[i] = child;
            if (Py_TYPE(child) != &PrototypeType) goto not_copyable;
            p->kinds[i] = COPY_STRUCT;
        } else if (shareable(r, v)) {
            p->kinds[i] = COPY_SHARE;
        } else {
            goto not_copyable;
        }
    }
    return (PyObject *)p;
not_copyable:
    Py_DECREF(p);
plain:
    Py_INCREF(cls);
    return cls;
}

static int load_default(Reader *r, long kind, PyObject *payload, int *def_kind, PyObject **def) {
    *def_kind = (int)kind;
    switch (kind) {
    case DEF_VALUE: Py_INCREF(payload); *def = payload; return 0;
    case DEF_LIST: *def = NULL; return 0;
    case DEF_UUID: {
        PyObject *kw = Py_BuildValue("{s:O}", "int", payload);
        if (!kw) return -1;
        PyObject *empty = PyTuple_New(0);
        *def = empty ? PyObject_Call(UuidCallable, empty, kw) : NULL;
        Py_XDECREF(empty);
        Py_DECREF(kw);
        return *def ? 0 : -1;
    }
    case DEF_STRUCT: {
        PyObject *cls = PyObject_GetItem(r->classes, payload);
        if (!cls) return -1;
        *def = prototype_of(r, cls, 0);
        Py_DECREF(cls);
        return *def ? 0 : -1;
    }
    default: return table_error("unknown default kind", payload);
    }
}

static int load_op(Reader *r, STable *t, PyObject *spec, Op *op) {
    long opcode, flags, slot, element, child;
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 6) return table_error("bad op", spec);
    if (as_int(PyTuple_GET_ITEM(spec, 0), &opcode) < 0 || as_int(PyTuple_GET_ITEM(spec, 1), &flags) < 0 ||
        as_int(PyTuple_GET_ITEM(spec, 2), &slot) < 0 || as_int(PyTuple_GET_ITEM(spec, 4), &element) < 0 ||
        as_int(PyTuple_GET_ITEM(spec, 5), &child) < 0)
        return -1;
    PyObject *attr = PyTuple_GET_ITEM(spec, 3);
    if (!PyUnicode_Check(attr)) return table_error("op attribute is not a str", spec);
    if (opcode < OP_INT8 || opcode > OP_STRUCT) return table_error("unknown opcode", spec);
    int needs_child = opcode == OP_STRUCT || (opcode == OP_ARRAY && element == OP_STRUCT);
    if (opcode == OP_ARRAY && (element < OP_INT8 || element > OP_STRUCT || element == OP_ARRAY))
        return table_error("bad array element", spec);
    if (needs_child && (child < 0 || child >= r->ntables)) return table_error("bad child index", spec);
    op->opcode = (int)opcode;
    op->flags = (int)flags;
    op->element = (int)element;
    op->attr = attr;
    op->child = needs_child ? &r->tables[child] : NULL;
    if (slot < 0 || slot >= t->nslots - 1) return table_error("bad slot", spec);
    op->slot = (Py_ssize_t)slot;
    op->offset = table_slot_offset(t, attr, slot);
    if (PyErr_Occurred()) return -1;
    if (t->direct && op->offset < 0) t->direct = 0;
    return 0;
}

static int load_fields(Reader *r, STable *t, PyObject *spec);

static int load_struct(Reader *r, STable *t, PyObject *spec) {
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 7) return table_error("bad struct", spec);
    PyObject *cls = PyObject_GetItem(r->classes, PyTuple_GET_ITEM(spec, 0));
    if (!cls) return -1;
    t->rows = r->rows;
    if (!t->rows && !PyType_Check(cls)) { Py_DECREF(cls); return table_error("not a class", spec); }
    t->cls = (PyTypeObject *)cls;
    t->flexible = PyObject_IsTrue(PyTuple_GET_ITEM(spec, 1));
    long nslots;
    if (t->flexible < 0 || as_int(PyTuple_GET_ITEM(spec, 2), &nslots) < 0) return -1;
    if (nslots < 1) return table_error("bad slot count", spec);
    t->nslots = (Py_ssize_t)nslots;
    if (t->rows) {
        t->direct = 0;
        return load_fields(r, t, spec);
    }
    /* Direct writes need exactly the generated slotted class: no __dict__, the slots the table
       names at the positions it gives, and nothing else to fill. */
    t->direct = direct_slots(t->cls, nslots) != NULL;
    if (PyErr_Occurred()) return -1;
    if (load_fields(r, t, spec) < 0) return -1;
    t->unknown_offset = table_slot_offset(t, S_unknown_tags, nslots - 1);
    if (PyErr_Occurred()) return -1;
    if (t->unknown_offset < 0) t->direct = 0;
    return 0;
}

/* The ops, absent, tagged and elsewhere parts of a struct's table. */
static int load_fields(Reader *r, STable *t, PyObject *spec) {
    PyObject *ops = PyTuple_GET_ITEM(spec, 3), *absent = PyTuple_GET_ITEM(spec, 4),
             *tagged = PyTuple_GET_ITEM(spec, 5), *elsewhere = PyTuple_GET_ITEM(spec, 6);
    if (!PyTuple_Check(ops) || !PyTuple_Check(absent) || !PyTuple_Check(tagged) ||
        !PyTuple_Check(elsewhere))
        return table_error("bad struct", spec);
    t->nops = PyTuple_GET_SIZE(ops);
    t->nabsent = PyTuple_GET_SIZE(absent);
    t->ntagged = PyTuple_GET_SIZE(tagged);
    t->nelsewhere = PyTuple_GET_SIZE(elsewhere);
    t->ops = PyMem_Calloc(t->nops + 1, sizeof(Op));
    t->absent = PyMem_Calloc(t->nabsent + 1, sizeof(Absent));
    t->tagged = PyMem_Calloc(t->ntagged + 1, sizeof(Tagged));
    t->elsewhere = PyMem_Calloc(t->nelsewhere + 1, sizeof(int64_t));
    if (!t->ops || !t->absent || !t->tagged || !t->elsewhere) { PyErr_NoMemory(); return -1; }
    for (Py_ssize_t i = 0; i < t->nops; i++)
        if (load_op(r, t, PyTuple_GET_ITEM(ops, i), &t->ops[i]) < 0) return -1;
    for (Py_ssize_t i = 0; i < t->nabsent; i++) {
        PyObject *a = PyTuple_GET_ITEM(absent, i);
        long slot, kind;
        if (!PyTuple_Check(a) || PyTuple_GET_SIZE(a) != 4 || !PyUnicode_Check(PyTuple_GET_ITEM(a, 1)))
            return table_error("bad absent field", a);
        if (as_int(PyTuple_GET_ITEM(a, 0), &slot) < 0 || as_int(PyTuple_GET_ITEM(a, 2), &kind) < 0)
            return -1;
        Absent *dst = &t->absent[i];
        if (slot < 0 || slot >= t->nslots - 1) return table_error("bad slot", a);
        dst->slot = (Py_ssize_t)slot;
        dst->attr = PyTuple_GET_ITEM(a, 1);
        if (load_default(r, kind, PyTuple_GET_ITEM(a, 3), &dst->def_kind, &dst->def) < 0) return -1;
        dst->offset = table_slot_offset(t, dst->attr, slot);
        if (PyErr_Occurred()) return -1;
        if (dst->offset < 0) t->direct = 0;
    }
    for (Py_ssize_t i = 0; i < t->ntagged; i++) {
        PyObject *a = PyTuple_GET_ITEM(tagged, i);
        long kind;
        if (!PyTuple_Check(a) || PyTuple_GET_SIZE(a) != 4) return table_error("bad tagged field", a);
        Tagged *dst = &t->tagged[i];
        dst->tag = PyLong_AsLongLong(PyTuple_GET_ITEM(a, 0));
        if ((dst->tag == -1 && PyErr_Occurred()) || as_int(PyTuple_GET_ITEM(a, 2), &kind) < 0) return -1;
        if (load_op(r, t, PyTuple_GET_ITEM(a, 1), &dst->op) < 0) return -1;
        if (load_default(r, kind, PyTuple_GET_ITEM(a, 3), &dst->def_kind, &dst->def) < 0) return -1;
    }
    for (Py_ssize_t i = 0; i < t->nelsewhere; i++) {
        t->elsewhere[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(elsewhere, i));
        if (t->elsewhere[i] == -1 && PyErr_Occurred()) return -1;
    }
    return 0;
}

#define ROW_ITEM_OFFSET(slot) \
    ((Py_ssize_t)(offsetof(PyTupleObject, ob_item) + (size_t)(slot) * sizeof(PyObject *)))

/* Where set_field writes. A row's items are written as slots are, at their offsets in the
   tuple (new_instance makes it nslots long; every slot is checked below nslots - 1). A
   class with an op that cannot be written directly is filled through setattr throughout. */
static void settle_offsets(STable *t) {
    if (t->rows) {
        for (Py_ssize_t i = 0; i < t->nops; i++) t->ops[i].offset = ROW_ITEM_OFFSET(t->ops[i].slot);
        for (Py_ssize_t i = 0; i < t->nabsent; i++)
            t->absent[i].offset = ROW_ITEM_OFFSET(t->absent[i].slot);
        for (Py_ssize_t i = 0; i < t->ntagged; i++)
            t->tagged[i].op.offset = ROW_ITEM_OFFSET(t->tagged[i].op.slot);
        t->unknown_offset = ROW_ITEM_OFFSET(t->nslots - 1);
        return;
    }
    if (t->direct) return;
    for (Py_ssize_t i = 0; i < t->nops; i++) t->ops[i].offset = -1;
    for (Py_ssize_t i = 0; i < t->nabsent; i++) t->absent[i].offset = -1;
    for (Py_ssize_t i = 0; i < t->ntagged; i++) t->tagged[i].op.offset = -1;
    t->unknown_offset = -1;
}

#endif /* SPECGEN_TABLE_LOADER_H */
