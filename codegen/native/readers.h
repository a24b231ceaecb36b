/* The readers Python calls: Reader (one message at one version: reader(buf, offset) ->
 * (obj, end), decode(data), and the C API other native modules read with) and PairReader (a
 * coordinator record's key and value in one call). Part of the _engine module (engine.c).
 */
#ifndef SPECGEN_READERS_H
#define SPECGEN_READERS_H

static void free_tables(Reader *r) {
    if (!r->tables) return;
    for (Py_ssize_t i = 0; i < r->ntables; i++) {
        STable *t = &r->tables[i];
        for (Py_ssize_t j = 0; t->absent && j < t->nabsent; j++) Py_XDECREF(t->absent[j].def);
        for (Py_ssize_t j = 0; t->tagged && j < t->ntagged; j++) Py_XDECREF(t->tagged[j].def);
        PyMem_Free(t->ops); PyMem_Free(t->absent); PyMem_Free(t->tagged); PyMem_Free(t->elsewhere);
        Py_XDECREF(t->cls);
    }
    PyMem_Free(r->tables);
    r->tables = NULL;
    r->ntables = 0;
}

static int Reader_traverse(Reader *r, visitproc visit, void *arg) {
    Py_VISIT(r->table);
    Py_VISIT(r->classes);
    Py_VISIT(r->unknown_factory);
    Py_VISIT(r->no_tags);
    for (Py_ssize_t i = 0; i < r->ntables; i++) {
        STable *t = &r->tables[i];
        Py_VISIT(t->cls);
        for (Py_ssize_t j = 0; t->absent && j < t->nabsent; j++) Py_VISIT(t->absent[j].def);
        for (Py_ssize_t j = 0; t->tagged && j < t->ntagged; j++) Py_VISIT(t->tagged[j].def);
    }
    return 0;
}

static int Reader_clear(Reader *r) {
    free_tables(r);
    Py_CLEAR(r->table);
    Py_CLEAR(r->classes);
    Py_CLEAR(r->unknown_factory);
    Py_CLEAR(r->no_tags);
    Py_CLEAR(r->message);
    return 0;
}

static void Reader_dealloc(Reader *r) {
    PyObject_GC_UnTrack(r);
    Reader_clear(r);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

/* runtime.wire.checked_offset, for what the fast test below does not pass: the pure readers'
   errors (a TypeError, a BufferUnderflow outside the buffer), or the offset as an int. */
static PyObject *CheckedOffset;

static COLD int slow_offset(PyObject *arg, Py_ssize_t len, Py_ssize_t *pos) {
    if (!CheckedOffset) {
        PyObject *runtime = PyImport_ImportModule("codegen.runtime.wire");
        if (!runtime) return -1;
        CheckedOffset = PyObject_GetAttrString(runtime, "checked_offset");
        Py_DECREF(runtime);
        if (!CheckedOffset) return -1;
    }
    PyObject *checked = PyObject_CallFunction(CheckedOffset, "nO", len, arg);
    if (!checked) return -1;
    *pos = PyLong_AsSsize_t(checked);
    Py_DECREF(checked);
    return *pos == -1 && PyErr_Occurred() ? -1 : 0;
}

/* The offset argument as a position from 0 to len (the buffer's length in bytes): every
   read below starts inside the buffer or at its end, so no bounds check can overflow. */
static inline int check_offset(PyObject *arg, Py_ssize_t len, Py_ssize_t *pos) {
    if (LIKELY(PyLong_CheckExact(arg))) {
        int overflow;
        long long at = PyLong_AsLongLongAndOverflow(arg, &overflow);
        if (LIKELY(!overflow && at >= 0 && at <= len)) {
            *pos = (Py_ssize_t)at;
            return 0;
        }
    }
    return slow_offset(arg, len, pos);
}

/* Read one message of buf at offset (NULL: 0); the object (new reference) or NULL. *pos is
   where it ends, *len the buffer's length in bytes. */
static PyObject *reader_read(Reader *r, PyObject *buf, PyObject *offset, Py_ssize_t *pos,
                             Py_ssize_t *len) {
    if (!r->tables) {
        PyErr_SetString(PyExc_RuntimeError, "this reader has been cleared");
        return NULL;
    }
    PyObject *obj = NULL;
    *pos = 0;
    if (LIKELY(PyBytes_CheckExact(buf))) {
        Ctx c = {(const unsigned char *)PyBytes_AS_STRING(buf), PyBytes_GET_SIZE(buf), r};
        *len = c.len;
        if (offset && check_offset(offset, c.len, pos) < 0) return NULL;
        if (read_struct(&c, &r->tables[0], pos, NULL, &obj) < 0) return NULL;
        return obj;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE) < 0) return NULL;
    Ctx c = {(const unsigned char *)view.buf, view.len, r};
    *len = view.len;
    int rc = offset ? check_offset(offset, c.len, pos) : 0;
    if (rc == 0) rc = read_struct(&c, &r->tables[0], pos, NULL, &obj);
    PyBuffer_Release(&view);
    return rc < 0 ? NULL : obj;
}

/* The C API for other native modules (records.c; EngineCAPI in shared.h). */
static PyObject *reader_read_raw(PyObject *self, const unsigned char *buf, Py_ssize_t len,
                                 Py_ssize_t *pos) {
    Reader *r = (Reader *)self;
    if (UNLIKELY(!r->tables || *pos < 0 || *pos > len)) {
        PyErr_SetString(PyExc_ValueError, "cleared reader or offset outside the buffer");
        return NULL;
    }
    Ctx c = {buf, len, r};
    PyObject *obj = NULL;
    if (read_struct(&c, &r->tables[0], pos, NULL, &obj) < 0) return NULL;
    return obj;
}

static EngineCAPI engine_capi = {NULL, reader_read_raw};

static PyObject *Reader_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                   PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames && PyTuple_GET_SIZE(kwnames))
        return usage_error("reader(buf, offset) takes no keyword arguments");
    if (nargs < 1 || nargs > 2)
        return usage_error("reader(buf, offset) takes one or two arguments");
    Py_ssize_t pos, len;
    PyObject *obj = reader_read((Reader *)self, args[0], nargs == 2 ? args[1] : NULL, &pos, &len);
    if (!obj) return NULL;
    PyObject *end = PyLong_FromSsize_t(pos);
    if (!end) { Py_DECREF(obj); return NULL; }
    PyObject *result = PyTuple_New(2);
    if (!result) { Py_DECREF(obj); Py_DECREF(end); return NULL; }
    PyTuple_SET_ITEM(result, 0, obj);
    PyTuple_SET_ITEM(result, 1, end);
    return result;
}

static COLD void locate_error(Reader *r) {
    if (!PyErr_ExceptionMatches(DecodeError)) return;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyObject *located = PyObject_CallMethod(value, "located", "Oi", r->message, r->version);
    if (!located) {
        Py_XDECREF(type); Py_XDECREF(value); Py_XDECREF(tb);
        return;
    }
    Py_DECREF(located);
    PyErr_Restore(type, value, NULL);
    Py_XDECREF(tb);
}

/* decode(data): the whole buffer is one message, as KafkaMessage.decode. */
static PyObject *Reader_decode(Reader *r, PyObject *data) {
    Py_ssize_t pos, total; /* total: in bytes, whatever the buffer's item size */
    PyObject *obj = reader_read(r, data, NULL, &pos, &total);
    if (!obj) {
        locate_error(r);
        return NULL;
    }
    if (pos != total) {
        Py_DECREF(obj);
        PyObject *reason = PyUnicode_FromFormat("%zd bytes left after the message", total - pos);
        PyObject *off = PyLong_FromSsize_t(pos), *ver = PyLong_FromLong(r->version);
        PyObject *args = reason ? PyTuple_Pack(1, reason) : NULL;
        PyObject *kwargs = (off && ver) ? Py_BuildValue("{s:s,s:O,s:O,s:O}", "field", "", "offset", off,
                                                          "message", r->message, "version", ver)
                                        : NULL;
        PyObject *exc = (args && kwargs) ? PyObject_Call(TrailingBytes, args, kwargs) : NULL;
        if (exc) { PyErr_SetObject(TrailingBytes, exc); Py_DECREF(exc); }
        Py_XDECREF(reason); Py_XDECREF(off); Py_XDECREF(ver); Py_XDECREF(args); Py_XDECREF(kwargs);
        return NULL;
    }
    return obj;
}

static PyObject *Reader_get_direct(Reader *r, void *closure) {
    for (Py_ssize_t i = 0; i < r->ntables; i++)
        if (!r->tables[i].direct) Py_RETURN_FALSE;
    Py_RETURN_TRUE;
}

static PyMethodDef Reader_methods[] = {
    {"decode", (PyCFunction)Reader_decode, METH_O,
     "decode(data) -> obj: the whole buffer as one message (TrailingBytes otherwise); "
     "errors carry the message name and version."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef Reader_members[] = {
    {"message", T_OBJECT, offsetof(Reader, message), READONLY, "the message name"},
    {"version", T_INT, offsetof(Reader, version), READONLY, "the version read"},
    {"table", T_OBJECT, offsetof(Reader, table), READONLY, "the layout table"},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef Reader_getset[] = {
    {"direct_slots", (getter)Reader_get_direct, NULL,
     "True when every struct's slots are written directly (no setattr)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "codegen.native._engine.Reader",
    .tp_basicsize = sizeof(Reader),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A native reader of one message at one version: reader(buf, offset) -> (obj, end).",
    .tp_dealloc = (destructor)Reader_dealloc,
    .tp_traverse = (traverseproc)Reader_traverse,
    .tp_clear = (inquiry)Reader_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Reader, vectorcall),
    .tp_methods = Reader_methods,
    .tp_members = Reader_members,
    .tp_getset = Reader_getset,
};

static PyObject *make_reader(PyObject *module, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"table", "classes", "unknown_tags", "rows", "no_tags", NULL};
    PyObject *table, *classes, *factory, *no_tags = NULL;
    int rows = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!OO|$pO:reader", keywords, &PyTuple_Type,
                                     &table, &classes, &factory, &rows, &no_tags))
        return NULL;
    if (PyTuple_GET_SIZE(table) != 5 || !PyUnicode_Check(PyTuple_GET_ITEM(table, 0)) ||
        PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(table, 0), MAGIC) != 0) {
        table_error("not a native layout table", NULL);
        return NULL;
    }
    long format, version;
    if (as_int(PyTuple_GET_ITEM(table, 1), &format) < 0) return NULL;
    if (format != FORMAT_VERSION) {
        PyErr_Format(PyExc_ValueError,
                     "layout table format %ld, but this engine reads format %d: regenerate the "
                     "tables or rebuild the engine",
                     format, FORMAT_VERSION);
        return NULL;
    }
    PyObject *message = PyTuple_GET_ITEM(table, 2), *structs = PyTuple_GET_ITEM(table, 4);
    if (as_int(PyTuple_GET_ITEM(table, 3), &version) < 0) return NULL;
    if (!PyUnicode_Check(message) || !PyTuple_Check(structs) || PyTuple_GET_SIZE(structs) < 1) {
        table_error("bad header", NULL);
        return NULL;
    }
    if (!PyCallable_Check(factory)) {
        PyErr_SetString(PyExc_TypeError, "unknown_tags must be callable");
        return NULL;
    }
    Reader *r = PyObject_GC_New(Reader, &ReaderType);
    if (!r) return NULL;
    r->vectorcall = Reader_vectorcall;
    Py_INCREF(table); r->table = table;
    Py_INCREF(classes); r->classes = classes;
    Py_INCREF(factory); r->unknown_factory = factory;
    Py_INCREF(message); r->message = message;
    Py_XINCREF(no_tags); r->no_tags = no_tags;
    r->version = (int)version;
    r->rows = rows;
    r->factory_is_dict = factory == (PyObject *)&PyDict_Type;
    r->ntables = PyTuple_GET_SIZE(structs);
    r->tables = PyMem_Calloc(r->ntables, sizeof(STable));
    PyObject_GC_Track(r);
    if (!r->tables) { PyErr_NoMemory(); goto fail; }
    for (Py_ssize_t i = 0; i < r->ntables; i++)
        if (load_struct(r, &r->tables[i], PyTuple_GET_ITEM(structs, i)) < 0) goto fail;
    for (Py_ssize_t i = 0; i < r->ntables; i++) settle_offsets(&r->tables[i]);
    return (PyObject *)r;
fail:
    Py_DECREF(r);
    return NULL;
}

/* A coordinator record's key and value in one call: the int16 prefixes pick the readers
   (key: record type; value: version, a newer one read at the newest flexible version).
   Anything off that path (unknown type or version, short or malformed bytes, not bytes)
   goes to `slow`, the pure pair reader, so results and error texts are its own. */
typedef struct {
    Reader *key;
    Py_ssize_t nvalues;
    Reader **values; /* by version; NULL where the value spec has none */
    Py_ssize_t newest; /* the newest flexible value version, or -1 */
} PairType;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *types_arg, *slow; /* a private copy of the types mapping: its tuples hold the
                                   readers, which the caller can no longer remove */
    Py_ssize_t ntypes;
    PairType *types; /* by record type; key NULL where there is no such type */
} PairReader;

static void pair_free(PairReader *p) {
    for (Py_ssize_t i = 0; p->types && i < p->ntypes; i++) PyMem_Free(p->types[i].values);
    PyMem_Free(p->types);
    p->types = NULL;
    p->ntypes = 0;
}

static int PairReader_traverse(PairReader *p, visitproc visit, void *arg) {
    Py_VISIT(p->types_arg);
    Py_VISIT(p->slow);
    return 0;
}

static int PairReader_clear(PairReader *p) {
    pair_free(p);
    Py_CLEAR(p->types_arg);
    Py_CLEAR(p->slow);
    return 0;
}

static void PairReader_dealloc(PairReader *p) {
    PyObject_GC_UnTrack(p);
    PairReader_clear(p);
    Py_TYPE(p)->tp_free((PyObject *)p);
}

/* One read on the fast path: a new reference, or NULL with no error set when the slow path
   must decide (a decode error, which the slow path raises with its context). */
static PyObject *pair_part(Reader *r, PyObject *buf) {
    if (UNLIKELY(!r->tables)) return NULL; /* cleared by the collector: the slow path */
    Py_ssize_t pos = 2;
    Ctx c = {(const unsigned char *)PyBytes_AS_STRING(buf), PyBytes_GET_SIZE(buf), r};
    PyObject *obj = NULL;
    if (read_struct(&c, &r->tables[0], &pos, NULL, &obj) < 0) {
        if (PyErr_ExceptionMatches(DecodeError)) PyErr_Clear();
        return NULL;
    }
    return obj;
}

static PyObject *PairReader_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                       PyObject *kwnames) {
    PairReader *p = (PairReader *)self;
    if (PyVectorcall_NARGS(nargsf) != 2 || (kwnames && PyTuple_GET_SIZE(kwnames)))
        return usage_error("read_pair(key, value) takes two arguments");
    PyObject *key = args[0], *value = args[1], *k = NULL, *v = NULL;
    if (!PyBytes_CheckExact(key) || PyBytes_GET_SIZE(key) < 2) goto slow;
    if (value != Py_None && (!PyBytes_CheckExact(value) || PyBytes_GET_SIZE(value) < 2)) goto slow;
    uint16_t type = load16((const unsigned char *)PyBytes_AS_STRING(key));
    if (type >= p->ntypes || !p->types[type].key) goto slow;
    const PairType *t = &p->types[type];
    Reader *value_reader = NULL;
    if (value != Py_None) {
        uint16_t version = load16((const unsigned char *)PyBytes_AS_STRING(value));
        if (version & 0x8000) goto slow;
        if (version < t->nvalues) value_reader = t->values[version];
        else if (t->newest >= 0) value_reader = t->values[t->newest];
        if (!value_reader) goto slow;
    }
    k = pair_part(t->key, key);
    if (!k) goto slow_or_fail;
    if (value_reader) {
        v = pair_part(value_reader, value);
        if (!v) goto slow_or_fail;
    } else {
        v = Py_NewRef(Py_None);
    }
    PyObject *result = PyTuple_New(2);
    if (!result) { Py_DECREF(k); Py_DECREF(v); return NULL; }
    PyTuple_SET_ITEM(result, 0, k);
    PyTuple_SET_ITEM(result, 1, v);
    return result;
slow_or_fail:
    Py_XDECREF(k);
    if (PyErr_Occurred()) return NULL; /* not a decode error (memory): no slow path */
slow:
    return PyObject_Vectorcall(p->slow, args, 2, NULL);
}

static PyTypeObject PairReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "codegen.native._engine.PairReader",
    .tp_basicsize = sizeof(PairReader),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "read_pair(key, value) -> (key, value): a coordinator record in one call.",
    .tp_dealloc = (destructor)PairReader_dealloc,
    .tp_traverse = (traverseproc)PairReader_traverse,
    .tp_clear = (inquiry)PairReader_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(PairReader, vectorcall),
};

static COLD PyObject *pair_table_error(const char *what) {
    PyErr_Format(PyExc_TypeError, "pair_reader: %s", what);
    return NULL;
}

static PyObject *make_pair_reader(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyDict_Check(args[0]) || !PyCallable_Check(args[1]))
        return pair_table_error("pair_reader(types: dict, slow: callable)");
    PyObject *types = args[0], *item, *entry;
    Py_ssize_t it = 0, ntypes = 0;
    while (PyDict_Next(types, &it, &item, &entry)) {
        long id = PyLong_Check(item) ? PyLong_AsLong(item) : -1;
        if (id < 0 || id > 0x7fff) return pair_table_error("record types are ints 0..32767");
        if (id + 1 > ntypes) ntypes = id + 1;
    }
    PairReader *p = PyObject_GC_New(PairReader, &PairReaderType);
    if (!p) return NULL;
    p->vectorcall = PairReader_vectorcall;
    p->types_arg = NULL;
    p->slow = Py_NewRef(args[1]);
    p->ntypes = ntypes;
    p->types = PyMem_Calloc(ntypes ? ntypes : 1, sizeof(PairType));
    if (!p->types) { PyObject_GC_Track(p); Py_DECREF(p); return PyErr_NoMemory(); }
    PyObject_GC_Track(p);
    /* The readers are kept as pointers: the copy (whose entries are tuples, immutable) holds
       them for as long as this reader lives, whatever the caller does to its dict. */
    types = p->types_arg = PyDict_Copy(types);
    if (!types) { Py_DECREF(p); return NULL; }
    it = 0;
    while (PyDict_Next(types, &it, &item, &entry)) {
        PairType *t = &p->types[PyLong_AsLong(item)];
        PyObject *key, *values;
        Py_ssize_t newest;
        if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 3) goto bad;
        key = PyTuple_GET_ITEM(entry, 0);
        values = PyTuple_GET_ITEM(entry, 1);
        newest = PyLong_AsSsize_t(PyTuple_GET_ITEM(entry, 2));
        if (newest == -1 && PyErr_Occurred()) { Py_DECREF(p); return NULL; }
        if (Py_TYPE(key) != &ReaderType || !PyTuple_Check(values)) goto bad;
        t->nvalues = PyTuple_GET_SIZE(values);
        if (newest < -1 || newest >= t->nvalues) goto bad;
        t->values = PyMem_Calloc(t->nvalues ? t->nvalues : 1, sizeof(Reader *));
        if (!t->values) { Py_DECREF(p); return PyErr_NoMemory(); }
        for (Py_ssize_t i = 0; i < t->nvalues; i++) {
            PyObject *r = PyTuple_GET_ITEM(values, i);
            if (r == Py_None) continue;
            if (Py_TYPE(r) != &ReaderType || !((Reader *)r)->tables) goto bad;
            t->values[i] = (Reader *)r;
        }
        if (newest >= 0 && !t->values[newest]) goto bad;
        if (!((Reader *)key)->tables) goto bad;
        t->key = (Reader *)key;
        t->newest = newest;
    }
    return (PyObject *)p;
bad:
    Py_DECREF(p);
    return pair_table_error("each type maps to (key reader, tuple of value readers or None by "
                            "version, newest flexible version or -1)");
}

#endif /* SPECGEN_READERS_H */
