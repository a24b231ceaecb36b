/* Plans: the JSON form of one generated struct at one version (built by
 * codegen/dumps/json_text.py), printed from an object's slots in the order and under the
 * conditions of the generated to_json. Part of the _jsontext module (jsontext.c).
 */
#ifndef SPECGEN_JSON_PLANS_H
#define SPECGEN_JSON_PLANS_H

typedef struct {
    PyObject *key;     /* bytes: '"name":' */
    Py_ssize_t offset; /* the slot's byte offset in the planned class */
    int kind, element, nullable;
    PyObject *tagged_default; /* printed only when != this; NULL: always printed */
    PyObject *child;          /* the Plan of a struct (or of an array's struct elements) */
} PField;

typedef struct {
    PyObject_HEAD
    PyTypeObject *cls;
    Py_ssize_t n;
    PField *fields;
} Plan;

static PyTypeObject PlanType;

static int put_struct(Buf *b, const Plan *plan, PyObject *obj, int depth);

static int put_kind(Buf *b, int kind, const Plan *child, PyObject *v, int depth) {
    switch (kind) {
    case K_INT: return put_int(b, v);
    case K_BOOL:
        if (v == Py_True) return PUT_LITERAL(b, "true");
        if (v == Py_False) return PUT_LITERAL(b, "false");
        return NOT_HERE;
    case K_STRING: return put_string(b, v);
    case K_BYTES:
        if (!PyBytes_CheckExact(v)) return NOT_HERE;
        return put_base64(b, (const unsigned char *)PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v), B64,
                          1);
    case K_RECORDS:
        if (!PyBytes_CheckExact(v)) return NOT_HERE;
        return PUT_LITERAL(b, "\"\"");
    case K_UUID: return put_uuid(b, v);
    case K_STRUCT: return put_struct(b, child, v, depth + 1);
    default: return NOT_HERE;
    }
}

static int put_field(Buf *b, const PField *f, PyObject *v, int depth) {
    if (v == Py_None) return f->nullable ? PUT_LITERAL(b, "null") : NOT_HERE;
    if (f->kind != K_ARRAY) return put_kind(b, f->kind, (const Plan *)f->child, v, depth);
    if (!PyList_CheckExact(v)) return NOT_HERE;
    if (PUT_LITERAL(b, "[") < 0) return -1;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); i++) {
        PyObject *item = PyList_GET_ITEM(v, i);
        if (item == Py_None) return NOT_HERE;
        if (i && PUT_LITERAL(b, ",") < 0) return -1;
        Py_INCREF(item); /* printing a string may run no code, but a struct's compare may */
        int rc = put_kind(b, f->element, (const Plan *)f->child, item, depth);
        Py_DECREF(item);
        if (rc < 0) return rc;
    }
    return PUT_LITERAL(b, "]");
}

#define MAX_DEPTH 64

/* v != default (to_json's test of a tagged field): 1, 0 or -1. Two exact uuids compare their
   ints, as UUID.__eq__ does, without its Python frame. */
static int tagged_differs(PyObject *v, PyObject *dflt) {
    if (v == dflt) return 0;
    PyObject *a = uuid_int(v);
    if (a) {
        PyObject *b = uuid_int(dflt);
        if (b) {
            int rc = PyObject_RichCompareBool(a, b, Py_NE);
            Py_DECREF(a);
            Py_DECREF(b);
            return rc;
        }
        Py_DECREF(a);
    }
    if (PyErr_Occurred()) return -1;
    return PyObject_RichCompareBool(v, dflt, Py_NE);
}

static int put_struct(Buf *b, const Plan *plan, PyObject *obj, int depth) {
    if (Py_TYPE(obj) != plan->cls || depth > MAX_DEPTH) return NOT_HERE;
    if (PUT_LITERAL(b, "{") < 0) return -1;
    int first = 1;
    for (Py_ssize_t i = 0; i < plan->n; i++) {
        const PField *f = &plan->fields[i];
        PyObject *v = *(PyObject **)((char *)obj + f->offset);
        if (!v) return NOT_HERE; /* an unset slot: the reference raises */
        Py_INCREF(v);
        int rc = 0;
        if (f->tagged_default) {
            rc = tagged_differs(v, f->tagged_default);
            if (rc == 0) {
                Py_DECREF(v);
                continue;
            }
        }
        if (rc >= 0 && !first) rc = PUT_LITERAL(b, ",");
        if (rc >= 0) rc = buf_put(b, PyBytes_AS_STRING(f->key), PyBytes_GET_SIZE(f->key));
        if (rc >= 0) rc = put_field(b, f, v, depth);
        Py_DECREF(v);
        if (rc < 0) return rc;
        first = 0;
    }
    return PUT_LITERAL(b, "}");
}

static void Plan_dealloc(Plan *p) {
    PyObject_GC_UnTrack(p);
    for (Py_ssize_t i = 0; i < p->n; i++) {
        Py_XDECREF(p->fields[i].key);
        Py_XDECREF(p->fields[i].tagged_default);
        Py_XDECREF(p->fields[i].child);
    }
    PyMem_Free(p->fields);
    Py_XDECREF(p->cls);
    Py_TYPE(p)->tp_free((PyObject *)p);
}

static int Plan_traverse(Plan *p, visitproc visit, void *arg) {
    Py_VISIT(p->cls);
    for (Py_ssize_t i = 0; i < p->n; i++) {
        Py_VISIT(p->fields[i].tagged_default);
        Py_VISIT(p->fields[i].child);
    }
    return 0;
}

/* Plan(cls, fields): fields a tuple of (key, attr, kind, element, nullable, tagged, default,
   child), as codegen/dumps/json_text.py makes them. TypeError or ValueError when the class's
   slots cannot be read directly or a field does not fit. */
static PyObject *Plan_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyTypeObject *cls;
    PyObject *fields;
    if (kwargs && PyDict_GET_SIZE(kwargs)) {
        PyErr_SetString(PyExc_TypeError, "Plan takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O!O!:Plan", &PyType_Type, &cls, &PyTuple_Type, &fields))
        return NULL;
    if (!direct_slots(cls, -1)) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "%s's slots cannot be read directly", cls->tp_name);
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(fields);
    Plan *p = (Plan *)type->tp_alloc(type, 0);
    if (!p) return NULL;
    p->cls = (PyTypeObject *)Py_NewRef(cls);
    p->fields = PyMem_Calloc(n ? (size_t)n : 1, sizeof(PField));
    if (!p->fields) {
        Py_DECREF(p);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *key, *attr, *tagged_default, *child;
        int kind, element, nullable, tagged;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(fields, i), "O!UiippOO:Plan field", &PyBytes_Type,
                              &key, &attr, &kind, &element, &nullable, &tagged, &tagged_default,
                              &child))
            goto fail;
        PField *f = &p->fields[i];
        p->n = i + 1;
        f->offset = member_offset(cls, attr);
        if (f->offset < 0) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError, "%s.%U is not a slot that can be read directly",
                             cls->tp_name, attr);
            goto fail;
        }
        int shape = kind == K_ARRAY ? element : kind;
        if (kind < K_INT || kind >= K_LAST || shape < K_INT || shape >= K_ARRAY ||
            (shape == K_STRUCT) != (child != Py_None) ||
            (child != Py_None && !PyObject_TypeCheck(child, &PlanType))) {
            PyErr_Format(PyExc_ValueError, "%s.%U: kind %d, element %d do not fit its plan",
                         cls->tp_name, attr, kind, element);
            goto fail;
        }
        f->key = Py_NewRef(key);
        f->kind = kind;
        f->element = element;
        f->nullable = nullable;
        f->tagged_default = tagged ? Py_NewRef(tagged_default) : NULL;
        f->child = child == Py_None ? NULL : Py_NewRef(child);
    }
    return (PyObject *)p; /* tracked by tp_alloc */
fail:
    Py_DECREF(p);
    return NULL;
}

/* Plan.dumps(obj): the JSON text of obj by this plan, or None where the reference prints it. */
static PyObject *Plan_dumps(Plan *p, PyObject *obj) {
    Buf b = {NULL, 0, 0};
    int rc = put_struct(&b, p, obj, 0);
    PyObject *out = NULL;
    if (rc == 0)
        out = PyBytes_FromStringAndSize(b.p, b.len);
    else if (rc == NOT_HERE)
        out = Py_NewRef(Py_None);
    PyMem_Free(b.p);
    return out;
}

static PyMethodDef Plan_methods[] = {
    {"dumps", (PyCFunction)Plan_dumps, METH_O,
     "dumps(obj) -> bytes | None: obj's JSON text by this plan (orjson's form of to_json), or "
     "None where the reference's encoder prints it"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject PlanType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "codegen.native._jsontext.Plan",
    .tp_basicsize = sizeof(Plan),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Plan(cls, fields): the JSON form of one struct at one version",
    .tp_new = Plan_new,
    .tp_dealloc = (destructor)Plan_dealloc,
    .tp_traverse = (traverseproc)Plan_traverse,
    .tp_methods = Plan_methods,
};

#endif /* SPECGEN_JSON_PLANS_H */
