/* The interpreter: one read of a message, walking its tables (tables.h). Every check, its
 * order and its error (class, text, field path, byte offset) are those of the pure reader
 * (templates/read.py.j2 and codegen/runtime/wire.py); errors are built only on the failure
 * paths (COLD). Objects are allocated with tp_alloc and their slots written at the member
 * offsets the loader checked, else through setattr; with rows, tuples in slot order. Part of
 * the _engine module (engine.c).
 */
#ifndef SPECGEN_INTERPRETER_H
#define SPECGEN_INTERPRETER_H

/* --------------------------------------------------------------------------- errors */

static COLD PyObject *path_string(const Path *path, PyObject *leaf) {
    Py_ssize_t depth = 0;
    for (const Path *p = path; p; p = p->parent) depth++;
    PyObject *parts = PyList_New(depth + 1);
    if (!parts) return NULL;
    Py_ssize_t i = depth;
    Py_INCREF(leaf);
    PyList_SET_ITEM(parts, i, leaf);
    for (const Path *p = path; p; p = p->parent) {
        PyObject *head = p->index < 0 ? (Py_INCREF(p->name), p->name)
                                       : PyUnicode_FromFormat("%U[%zd]", p->name, p->index);
        if (!head) { Py_DECREF(parts); return NULL; }
        PyList_SET_ITEM(parts, --i, head);
    }
    PyObject *dot = PyUnicode_FromString(".");
    PyObject *joined = dot ? PyUnicode_Join(dot, parts) : NULL;
    Py_XDECREF(dot);
    Py_DECREF(parts);
    return joined;
}

/* Raise cls(reason, field=<path>.<leaf>, offset=offset); steals reason. Returns -1. */
static COLD int raise_at(PyObject *cls, const Path *path, PyObject *leaf, Py_ssize_t offset,
                         PyObject *reason) {
    if (!reason) return -1;
    PyObject *field = path_string(path, leaf);
    PyObject *off = PyLong_FromSsize_t(offset);
    PyObject *args = PyTuple_Pack(1, reason);
    PyObject *kwargs = PyDict_New();
    PyObject *exc = NULL;
    if (field && off && args && kwargs && PyDict_SetItem(kwargs, S_field, field) == 0 &&
        PyDict_SetItem(kwargs, S_offset, off) == 0)
        exc = PyObject_Call(cls, args, kwargs);
    if (exc) {
        PyErr_SetObject(cls, exc);
        Py_DECREF(exc);
    }
    Py_XDECREF(field); Py_XDECREF(off); Py_XDECREF(args); Py_XDECREF(kwargs);
    Py_DECREF(reason);
    return -1;
}

static COLD int err_need(Ctx *c, const Path *path, PyObject *leaf, Py_ssize_t at, Py_ssize_t size) {
    Py_ssize_t left = c->len - at;
    return raise_at(BufferUnderflow, path, leaf, at,
                    PyUnicode_FromFormat("needs %zd bytes, only %zd left", size, left > 0 ? left : 0));
}

static COLD int err_end(const Path *path, PyObject *leaf, Py_ssize_t at) {
    return raise_at(BufferUnderflow, path, leaf, at, PyUnicode_FromString("the bytes end here"));
}

static COLD int err_underflow(Ctx *c, const Path *path, PyObject *leaf, Py_ssize_t at, int64_t n) {
    return raise_at(BufferUnderflow, path, leaf, at,
                    PyUnicode_FromFormat("length %lld runs past the end (%zd bytes left)",
                                         (long long)n, c->len - at));
}

static COLD int err_null(const Path *path, PyObject *leaf, Py_ssize_t at) {
    return raise_at(UnexpectedNull, path, leaf, at,
                    PyUnicode_FromString("null in a field that is not nullable at this version"));
}

static COLD int err_too_long(const Path *path, PyObject *leaf, Py_ssize_t at, int64_t n) {
    return raise_at(InvalidLength, path, leaf, at,
                    PyUnicode_FromFormat("string length %lld is above %d", (long long)n,
                                         MAX_STRING_LENGTH));
}

/* runtime.too_many: a count that cannot fit (elements of size bytes or more), else one
   above Kafka's limit. */
static COLD int err_too_many(Ctx *c, const Path *path, PyObject *leaf, Py_ssize_t at, int64_t n,
                             Py_ssize_t size) {
    if (n * size > c->len - at)
        return raise_at(InvalidLength, path, leaf, at,
                        PyUnicode_FromFormat("array of %lld elements cannot fit in the %zd bytes left",
                                             (long long)n, c->len - at));
    return raise_at(InvalidLength, path, leaf, at,
                    PyUnicode_FromFormat("array of %lld elements is above %d, the most Kafka reads",
                                         (long long)n, MAX_ARRAY_LENGTH));
}

static COLD int err_too_many_tags(const Path *path, Py_ssize_t at, int64_t n) {
    return raise_at(InvalidTaggedField, path, S_tagged_fields, at,
                    PyUnicode_FromFormat("%lld tagged fields are above %d, the most Kafka reads",
                                         (long long)n, MAX_TAGGED_FIELDS));
}

static COLD int err_utf8(const Path *path, PyObject *leaf, Py_ssize_t at) {
    /* A UnicodeDecodeError is set: say what it says, as runtime.bad_utf8 does. */
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    Py_ssize_t start = 0;
    PyObject *reason = NULL;
    if (value && PyObject_IsInstance(value, PyExc_UnicodeDecodeError) == 1 &&
        PyUnicodeDecodeError_GetStart(value, &start) == 0)
        reason = PyUnicodeDecodeError_GetReason(value);
    if (!reason) {
        PyErr_Restore(type, value, tb);
        return -1;
    }
    Py_XDECREF(type); Py_XDECREF(value); Py_XDECREF(tb);
    PyObject *text = PyUnicode_FromFormat("invalid UTF-8 (%U at byte %zd)", reason, at + start);
    Py_DECREF(reason);
    return raise_at(InvalidUtf8, path, leaf, at, text);
}

/* --------------------------------------------------------------------------- primitives */

/* runtime.wire.read_uvarint: wire.h's reader, at most 5 bytes, raising what the pure reader
   raises where it refuses. */
static COLD int err_varint(const Path *path, PyObject *leaf, Py_ssize_t at, int status) {
    if (status == VARINT_CUT)
        return raise_at(BufferUnderflow, path, leaf, at,
                        PyUnicode_FromString("the bytes end inside an unsigned varint"));
    return raise_at(InvalidLength, path, leaf, at,
                    PyUnicode_FromString("unsigned varint longer than 5 bytes"));
}

static int read_uvarint(Ctx *c, Py_ssize_t *pos, int64_t *out, const Path *path, PyObject *leaf) {
    int status = read_varint(c->buf, pos, c->len, MAX_VARINT32, out);
    if (UNLIKELY(status < 0)) return err_varint(path, leaf, *pos, status);
    return 0;
}

/* The template's length macro: a uvarint (first byte inline) or a big-endian int16/int32. */
static inline int read_length(Ctx *c, int compact, int width, Py_ssize_t *pos, int64_t *n,
                              const Path *path, PyObject *leaf) {
    Py_ssize_t o = *pos;
    if (compact) {
        if (UNLIKELY(o >= c->len)) return err_end(path, leaf, o);
        unsigned char b = c->buf[o];
        if (LIKELY(b < 0x80)) {
            *n = (int64_t)b - 1;
            *pos = o + 1;
            return 0;
        }
        int64_t u;
        if (read_uvarint(c, pos, &u, path, leaf) < 0) return -1;
        *n = u - 1;
        return 0;
    }
    if (UNLIKELY(width > c->len - o)) return err_need(c, path, leaf, o, width);
    *n = width == 2 ? (int64_t)(int16_t)load16(c->buf + o) : (int64_t)(int32_t)load32(c->buf + o);
    *pos = o + width;
    return 0;
}

static PyObject *make_uuid(const unsigned char *p) {
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *value = PyLong_FromUnsignedNativeBytes(p, 16, Py_ASNATIVEBYTES_BIG_ENDIAN);
#else
    PyObject *value = _PyLong_FromByteArray(p, 16, 0, 0);
#endif
    if (!value) return NULL;
    PyObject *u = UuidType->tp_alloc(UuidType, 0);
    if (!u) { Py_DECREF(value); return NULL; }
    if (UuidIntOffset >= 0) {
        *(PyObject **)((char *)u + UuidIntOffset) = value;
        Py_INCREF(UuidSafeUnknown);
        *(PyObject **)((char *)u + UuidSafeOffset) = UuidSafeUnknown;
        return u;
    }
    if (PyObject_GenericSetAttr(u, S_int, value) < 0 ||
        PyObject_GenericSetAttr(u, S_is_safe, UuidSafeUnknown) < 0) {
        Py_DECREF(value); Py_DECREF(u);
        return NULL;
    }
    Py_DECREF(value);
    return u;
}

static const Py_ssize_t FIXED_SIZE[] = {0, 1, 2, 4, 8, 2, 4, 8, 1, 16};

static inline PyObject *fixed_value(int opcode, const unsigned char *p) {
    switch (opcode) {
    case OP_INT8: return PyLong_FromLong((int8_t)p[0]);
    case OP_INT16: return PyLong_FromLong((int16_t)load16(p));
    case OP_INT32: return PyLong_FromLong((int32_t)load32(p));
    case OP_INT64: return PyLong_FromLongLong((int64_t)load64(p));
    case OP_UINT16: return PyLong_FromLong(load16(p));
    case OP_UINT32: return PyLong_FromUnsignedLong(load32(p));
    case OP_FLOAT64: return PyFloat_FromDouble(PyFloat_Unpack8((const char *)p, 0));
    case OP_BOOL: return PyBool_FromLong(p[0] != 0);
    default: return make_uuid(p);
    }
}

/* --------------------------------------------------------------------------- objects */

/* Store an owned reference into a field (or a row's item, at its offset in the tuple: see
   settle_offsets); steals value. */
static inline int set_field(PyObject *obj, Py_ssize_t offset, PyObject *attr, PyObject *value) {
    if (LIKELY(offset >= 0)) {
        PyObject **slot = (PyObject **)((char *)obj + offset);
        PyObject *old = *slot;
        *slot = value;
        Py_XDECREF(old);
        return 0;
    }
    int rc = PyObject_GenericSetAttr(obj, attr, value);
    Py_DECREF(value);
    return rc;
}

static PyObject *new_instance(const STable *t) {
    if (t->rows) return PyTuple_New(t->nslots);
    if (t->direct) return t->cls->tp_alloc(t->cls, 0);
    return PyObject_CallOneArg(ObjectNew, (PyObject *)t->cls);
}

/* A default struct instance to copy: the class's default object and, per slot, how to copy
   it (share an immutable value, a new empty list, or a copy of a nested default struct).
   Copying at C speed instead of calling the dataclass constructor matters for messages with
   tagged struct fields (every absent one gets a default instance). */
enum { COPY_SHARE = 0, COPY_NEW_LIST = 1, COPY_STRUCT = 2 };

typedef struct {
    PyObject_HEAD
    PyTypeObject *cls;  /* owned */
    PyObject *obj;      /* owned: the default instance */
    Py_ssize_t n;
    Py_ssize_t *offsets;
    int *kinds;
    PyObject **children; /* owned Prototypes, for COPY_STRUCT slots */
} Prototype;

static void Prototype_dealloc(Prototype *p) {
    PyObject_GC_UnTrack(p);
    for (Py_ssize_t i = 0; p->children && i < p->n; i++) Py_XDECREF(p->children[i]);
    PyMem_Free(p->offsets); PyMem_Free(p->kinds); PyMem_Free(p->children);
    Py_XDECREF(p->cls); Py_XDECREF(p->obj);
    PyObject_GC_Del(p);
}

static int Prototype_traverse(Prototype *p, visitproc visit, void *arg) {
    Py_VISIT(p->cls);
    Py_VISIT(p->obj);
    for (Py_ssize_t i = 0; p->children && i < p->n; i++) Py_VISIT(p->children[i]);
    return 0;
}

static PyTypeObject PrototypeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "codegen.native._engine.Prototype",
    .tp_basicsize = sizeof(Prototype),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A default struct instance the engine copies.",
    .tp_dealloc = (destructor)Prototype_dealloc,
    .tp_traverse = (traverseproc)Prototype_traverse,
};

static PyObject *copy_default(const Prototype *p) {
    PyObject *obj = p->cls->tp_alloc(p->cls, 0);
    if (!obj) return NULL;
    for (Py_ssize_t i = 0; i < p->n; i++) {
        PyObject *v;
        switch (p->kinds[i]) {
        case COPY_NEW_LIST: v = PyList_New(0); break;
        case COPY_STRUCT: v = copy_default((const Prototype *)p->children[i]); break;
        default:
            v = *(PyObject **)((char *)p->obj + p->offsets[i]);
            Py_XINCREF(v);
        }
        if (!v && p->kinds[i] != COPY_SHARE) { Py_DECREF(obj); return NULL; }
        *(PyObject **)((char *)obj + p->offsets[i]) = v;
    }
    return obj;
}

static inline PyObject *default_value(int kind, PyObject *def) {
    switch (kind) {
    case DEF_LIST: return PyList_New(0);
    case DEF_STRUCT:
        if (Py_TYPE(def) == &PrototypeType) return copy_default((const Prototype *)def);
        return PyObject_CallNoArgs(def);
    default: Py_INCREF(def); return def;
    }
}

static PyObject *unknown_tags(Reader *r, PyObject *pairs) {
    if (!pairs && r->no_tags) {
        Py_INCREF(r->no_tags);
        return r->no_tags;
    }
    if (r->factory_is_dict) {
        PyObject *d = PyDict_New();
        if (!d || !pairs) return d;
        Py_ssize_t n = PyList_GET_SIZE(pairs);
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *pair = PyList_GET_ITEM(pairs, i);
            if (PyDict_SetItem(d, PyTuple_GET_ITEM(pair, 0), PyTuple_GET_ITEM(pair, 1)) < 0) {
                Py_DECREF(d);
                return NULL;
            }
        }
        return d;
    }
    if (pairs) return PyObject_CallOneArg(r->unknown_factory, pairs);
    PyObject *empty = PyList_New(0);
    if (!empty) return NULL;
    PyObject *result = PyObject_CallOneArg(r->unknown_factory, empty);
    Py_DECREF(empty);
    return result;
}

/* unknown_tags(r, NULL), the shared value without a call when there is one. */
static inline PyObject *no_unknown_tags(Reader *r) {
    if (LIKELY(r->no_tags != NULL)) {
        Py_INCREF(r->no_tags);
        return r->no_tags;
    }
    return unknown_tags(r, NULL);
}

/* --------------------------------------------------------------------------- the interpreter */

static int read_struct(Ctx *c, const STable *t, Py_ssize_t *pos, const Path *path, PyObject **out);

static int read_value(Ctx *c, const Op *op, Py_ssize_t *pos, const Path *path, PyObject **out);

/* A nested struct: read_struct behind the recursion guard (a message's root needs none: only
   nesting goes deep). */
static int read_child(Ctx *c, const STable *t, Py_ssize_t *pos, const Path *path, PyObject **out) {
    if (Py_EnterRecursiveCall(" while decoding a Kafka message")) return -1;
    int rc = read_struct(c, t, pos, path, out);
    Py_LeaveRecursiveCall();
    return rc;
}

/* A str of n UTF-8 bytes: ASCII (the usual names and ids) copied straight into a new compact
   string, anything else through CPython's decoder. */
static inline PyObject *ascii_string(const char *s, Py_ssize_t n) {
    if (n == 0) return Py_NewRef(EmptyStr);
    if (n == 1) return PyUnicode_DecodeUTF8(s, n, NULL); /* the shared one-character strings */
    uint64_t high = 0, w;
    if (n >= 8) {
        /* whole words, the last one overlapping the one before */
        for (Py_ssize_t i = 0; i + 8 < n; i += 8) {
            memcpy(&w, s + i, 8);
            high |= w;
        }
        memcpy(&w, s + n - 8, 8);
        high |= w;
    } else {
        for (Py_ssize_t i = 0; i < n; i++) high |= (unsigned char)s[i];
    }
    if (high & UINT64_C(0x8080808080808080)) return PyUnicode_DecodeUTF8(s, n, NULL);
    PyObject *v = PyUnicode_New(n, 127);
    if (v) memcpy(PyUnicode_1BYTE_DATA(v), s, (size_t)n);
    return v;
}

static HOT_INLINE int read_string_or_bytes(Ctx *c, const Op *op, Py_ssize_t *pos,
                                           const Path *path, PyObject **out) {
    int compact = op->flags & F_COMPACT, is_string = op->opcode == OP_STRING;
    int64_t n = 0;
    if (read_length(c, compact, is_string ? 2 : 4, pos, &n, path, op->attr) < 0) return -1;
    Py_ssize_t o = *pos;
    if (n < 0) {
        if (!(op->flags & F_NULLABLE)) return err_null(path, op->attr, o);
        Py_INCREF(Py_None);
        *out = Py_None;
        return 0;
    }
    if (is_string && compact && UNLIKELY(n > MAX_STRING_LENGTH))
        return err_too_long(path, op->attr, o, n);
    if (UNLIKELY(n > c->len - o)) return err_underflow(c, path, op->attr, o, n);
    const char *s = (const char *)c->buf + o;
    PyObject *v;
    if (is_string) {
        v = ascii_string(s, (Py_ssize_t)n);
        if (!v) {
            if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) return err_utf8(path, op->attr, o);
            return -1;
        }
    } else {
        v = PyBytes_FromStringAndSize(s, (Py_ssize_t)n);
        if (!v) return -1;
    }
    *pos = o + (Py_ssize_t)n;
    *out = v;
    return 0;
}

static Py_ssize_t element_min_size(const Op *op) {
    int compact = op->flags & F_COMPACT;
    switch (op->element) {
    case OP_STRUCT: return 1;
    case OP_STRING: return compact ? 1 : 2;
    case OP_BYTES: return compact ? 1 : 4;
    default: return FIXED_SIZE[op->element];
    }
}

static int read_array(Ctx *c, const Op *op, Py_ssize_t *pos, const Path *path, PyObject **out) {
    int compact = op->flags & F_COMPACT;
    int64_t n = 0;
    if (read_length(c, compact, 4, pos, &n, path, op->attr) < 0) return -1;
    Py_ssize_t o = *pos;
    if (n < 0) {
        if (!(op->flags & F_NULLABLE)) return err_null(path, op->attr, o - (compact ? 1 : 4));
        Py_INCREF(Py_None);
        *out = Py_None;
        return 0;
    }
    Py_ssize_t min_size = element_min_size(op); /* n < 2^35, min_size <= 16: no overflow */
    if (UNLIKELY(n * min_size > c->len - o || n > MAX_ARRAY_LENGTH))
        return err_too_many(c, path, op->attr, o, n, min_size);
    PyObject *list = PyList_New((Py_ssize_t)n);
    if (!list) return -1;
    if (op->element <= OP_UUID) {
        Py_ssize_t size = FIXED_SIZE[op->element];
        for (Py_ssize_t i = 0; i < (Py_ssize_t)n; i++, o += size) {
            PyObject *v = fixed_value(op->element, c->buf + o);
            if (!v) { Py_DECREF(list); return -1; }
            PyList_SET_ITEM(list, i, v);
        }
        *pos = o;
        *out = list;
        return 0;
    }
    Op element = {op->element, compact, 0, -1, -1, op->attr, op->child};
    for (Py_ssize_t i = 0; i < (Py_ssize_t)n; i++) {
        Path node = {path, op->attr, i};
        PyObject *v;
        int rc = op->element == OP_STRUCT ? read_child(c, op->child, pos, &node, &v)
                                          : read_string_or_bytes(c, &element, pos, &node, &v);
        if (rc < 0) { Py_DECREF(list); return -1; }
        PyList_SET_ITEM(list, i, v);
    }
    *out = list;
    return 0;
}

static int read_value(Ctx *c, const Op *op, Py_ssize_t *pos, const Path *path, PyObject **out) {
    Py_ssize_t o = *pos;
    switch (op->opcode) {
    case OP_STRING:
    case OP_BYTES:
        return read_string_or_bytes(c, op, pos, path, out);
    case OP_ARRAY:
        return read_array(c, op, pos, path, out);
    case OP_STRUCT: {
        if (op->flags & F_TAGGED_MARKER) {
            /* The pure reader indexes buf here: past the end is an IndexError. */
            if (o >= c->len) {
                PyErr_SetString(PyExc_IndexError, "index out of range");
                return -1;
            }
            int64_t m = c->buf[o];
            if (m < 0x80) *pos = o + 1;
            else if (read_uvarint(c, pos, &m, path, op->attr) < 0) return -1;
            uint32_t low = (uint32_t)(m & 0xFFFFFFFF);
            if (low == 0 || low >= 0x80000000u) {
                Py_INCREF(Py_None);
                *out = Py_None;
                return 0;
            }
            return read_child(c, op->child, pos, path, out);
        }
        if (op->flags & F_NULLABLE) {
            if (UNLIKELY(o >= c->len)) return err_need(c, path, op->attr, o, 1);
            *pos = o + 1;
            if ((int8_t)c->buf[o] < 0) {
                Py_INCREF(Py_None);
                *out = Py_None;
                return 0;
            }
        }
        Path node = {path, op->attr, -1};
        return read_child(c, op->child, pos, &node, out);
    }
    default: {
        Py_ssize_t size = FIXED_SIZE[op->opcode];
        if (UNLIKELY(size > c->len - o)) return err_need(c, path, op->attr, o, size);
        PyObject *v = fixed_value(op->opcode, c->buf + o);
        if (!v) return -1;
        *pos = o + size;
        *out = v;
        return 0;
    }
    }
}

static COLD int err_tagged_value(const Path *path, const Tagged *t, Py_ssize_t start, int64_t size) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyObject *text = value ? PyObject_Str(value) : NULL;
    Py_XDECREF(type); Py_XDECREF(value); Py_XDECREF(tb);
    if (!text) return -1;
    PyObject *reason = PyUnicode_FromFormat("tagged field %lld does not fit its %lld bytes: %U",
                                            (long long)t->tag, (long long)size, text);
    Py_DECREF(text);
    return raise_at(InvalidTaggedField, path, t->op.attr, start, reason);
}

static int read_tagged_section(Ctx *c, const STable *t, PyObject *obj, Py_ssize_t *pos,
                               const Path *path) {
    int64_t left;
    Py_ssize_t o = *pos;
    if (UNLIKELY(o >= c->len)) return err_end(path, S_tagged_fields, o);
    if (c->buf[o] < 0x80) {
        left = c->buf[o];
        *pos = o + 1;
    } else {
        if (read_uvarint(c, pos, &left, path, S_tagged_fields) < 0) return -1;
        if (UNLIKELY(left > MAX_TAGGED_FIELDS)) return err_too_many_tags(path, *pos, left);
    }
    for (Py_ssize_t i = 0; i < t->ntagged; i++) {
        const Tagged *tg = &t->tagged[i];
        PyObject *v = default_value(tg->def_kind, tg->def);
        if (!v || set_field(obj, tg->op.offset, tg->op.attr, v) < 0) return -1;
    }
    PyObject *pairs = NULL;
    while (left > 0) {
        left--;
        int64_t tag, size;
        if (read_uvarint(c, pos, &tag, path, S_tagged_fields) < 0 ||
            read_uvarint(c, pos, &size, path, S_tagged_fields) < 0)
            goto fail;
        o = *pos;
        if (size > c->len - o) {
            err_underflow(c, path, S_tagged_fields, o, size);
            goto fail;
        }
        Py_ssize_t end = o + (Py_ssize_t)size;
        const Tagged *known = NULL;
        for (Py_ssize_t i = 0; i < t->ntagged; i++)
            if (t->tagged[i].tag == tag) { known = &t->tagged[i]; break; }
        if (known) {
            PyObject *v;
            Py_ssize_t p = o;
            if (read_value(c, &known->op, &p, NULL, &v) < 0) {
                if (PyErr_ExceptionMatches(DecodeError) || PyErr_ExceptionMatches(PyExc_IndexError))
                    err_tagged_value(path, known, end - (Py_ssize_t)size, size);
                goto fail;
            }
            if (set_field(obj, known->op.offset, known->op.attr, v) < 0) goto fail;
            if (p != end) {
                raise_at(InvalidTaggedField, path, known->op.attr, p,
                         PyUnicode_FromFormat("tagged field declares %lld bytes but its value takes %lld",
                                              (long long)size, (long long)(size - (end - p))));
                goto fail;
            }
        } else {
            int elsewhere = 0;
            for (Py_ssize_t i = 0; i < t->nelsewhere; i++)
                if (t->elsewhere[i] == tag) { elsewhere = 1; break; }
            if (elsewhere) {
                raise_at(InvalidTaggedField, path, S_tagged_fields, o,
                         PyUnicode_FromFormat("tag %lld is not valid at this version", (long long)tag));
                goto fail;
            }
            if (tag > 0x7FFFFFFF) {
                raise_at(InvalidTaggedField, path, S_tagged_fields, o,
                         PyUnicode_FromFormat("tag %lld is above 2147483647, the largest tag Kafka reads",
                                              (long long)tag));
                goto fail;
            }
            if (!pairs && !(pairs = PyList_New(0))) goto fail;
            PyObject *pair = Py_BuildValue("(Ly#)", (long long)tag, (const char *)c->buf + o,
                                           (Py_ssize_t)size);
            if (!pair) goto fail;
            int rc = PyList_Append(pairs, pair);
            Py_DECREF(pair);
            if (rc < 0) goto fail;
        }
        *pos = end;
    }
    PyObject *unknown = unknown_tags(c->r, pairs);
    Py_XDECREF(pairs);
    if (!unknown) return -1;
    return set_field(obj, t->unknown_offset, S_unknown_tags, unknown);
fail:
    Py_XDECREF(pairs);
    return -1;
}

static int read_struct(Ctx *c, const STable *t, Py_ssize_t *pos, const Path *path, PyObject **out) {
    PyObject *obj = new_instance(t);
    if (!obj) return -1;
    for (const Op *op = t->ops, *end = t->ops + t->nops; op < end; op++) {
        PyObject *v = NULL;
        int code = op->opcode;
        if (code < OP_UUID) {
            /* numbers and bools, most fields: read_value's default case without the call */
            Py_ssize_t o = *pos, size = FIXED_SIZE[code];
            if (UNLIKELY(size > c->len - o)) {
                err_need(c, path, op->attr, o, size);
                goto fail;
            }
            v = fixed_value(code, c->buf + o);
            if (UNLIKELY(!v)) goto fail;
            *pos = o + size;
        } else if (code == OP_STRING || code == OP_BYTES) {
            if (read_string_or_bytes(c, op, pos, path, &v) < 0) goto fail;
        } else if (read_value(c, op, pos, path, &v) < 0) {
            goto fail;
        }
        if (set_field(obj, op->offset, op->attr, v) < 0) goto fail;
    }
    for (Py_ssize_t i = 0; i < t->nabsent; i++) {
        const Absent *a = &t->absent[i];
        PyObject *v = default_value(a->def_kind, a->def);
        if (!v || set_field(obj, a->offset, a->attr, v) < 0) goto fail;
    }
    if (t->flexible) {
        if (read_tagged_section(c, t, obj, pos, path) < 0) goto fail;
    } else {
        PyObject *unknown = no_unknown_tags(c->r);
        if (!unknown || set_field(obj, t->unknown_offset, S_unknown_tags, unknown) < 0) goto fail;
    }
    *out = obj;
    return 0;
fail:
    Py_DECREF(obj);
    return -1;
}

#endif /* SPECGEN_INTERPRETER_H */
