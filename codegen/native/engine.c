/* One table-driven decoder for every generated message.
 *
 * A layout table (built by codegen/native_tables.py) describes each struct of a message at
 * one version as a list of ops. reader(table, classes, unknown_tags) converts it once into the
 * C structs below and returns a callable with the pure reader's signature:
 * reader(buf, offset) -> (obj, next_offset). Objects are allocated with tp_alloc and their
 * slots written at the member offsets checked at load time (otherwise through the generic
 * setattr). With rows=True the same table reads rows: a tuple per struct, in slot order. Checks, their order and the errors (class, text, field path, byte offset) are
 * those of the pure reader in templates/read.py.j2 and codegen/runtime.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#include "shared.h"

#define FORMAT_VERSION 1
#define MAGIC "kafka-specgen-native"
#define MAX_STRING_LENGTH 0x7FFF
/* Kafka 4.4.0's read limits (runtime.wire.MAX_ARRAY_LENGTH, MAX_TAGGED_FIELDS), checked before
   anything is allocated; equal counts are read. */
#define MAX_ARRAY_LENGTH 1000000
#define MAX_TAGGED_FIELDS 10000

#if defined(__GNUC__)
#define COLD __attribute__((cold, noinline))
#define HOT_INLINE inline __attribute__((always_inline))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define COLD
#define HOT_INLINE inline
#define LIKELY(x) (x)
#define UNLIKELY(x) (x)
#endif

enum {
    OP_INT8 = 1, OP_INT16, OP_INT32, OP_INT64, OP_UINT16, OP_UINT32, OP_FLOAT64, OP_BOOL, OP_UUID,
    OP_STRING, OP_BYTES, OP_ARRAY, OP_STRUCT,
};
enum { F_COMPACT = 1, F_NULLABLE = 2, F_TAGGED_MARKER = 4 };
enum { DEF_VALUE = 0, DEF_UUID = 1, DEF_LIST = 2, DEF_STRUCT = 3 };

/* --------------------------------------------------------------------------- module state */

static PyObject *DecodeError, *BufferUnderflow, *InvalidLength, *UnexpectedNull, *InvalidUtf8,
    *InvalidTaggedField, *TrailingBytes;
static PyTypeObject *UuidType;
static PyObject *UuidSafeUnknown, *UuidCallable, *ObjectNew, *EmptyStr;
static Py_ssize_t UuidIntOffset = -1, UuidSafeOffset = -1;
static PyObject *S_tagged_fields, *S_field, *S_offset, *S_located, *S_unknown_tags, *S_int, *S_is_safe, *S_message, *S_version;

/* --------------------------------------------------------------------------- tables */

struct STable;

typedef struct {
    int opcode, flags, element;
    Py_ssize_t slot;   /* the field's position in __slots__ (and in a row) */
    Py_ssize_t offset; /* slot byte offset, or -1: generic setattr */
    PyObject *attr;    /* borrowed from the table tuple */
    struct STable *child;
} Op;

typedef struct {
    int64_t tag;
    Op op;
    int def_kind;
    PyObject *def; /* owned: a value, a uuid, or a class */
} Tagged;

typedef struct {
    Py_ssize_t slot, offset;
    PyObject *attr;
    int def_kind;
    PyObject *def;
} Absent;

typedef struct STable {
    PyTypeObject *cls; /* owned; in row mode the default-row factory, maybe not a class */
    int direct;        /* slots written at their offsets */
    int rows;          /* build tuples, not objects */
    Py_ssize_t nslots;
    int flexible;
    Py_ssize_t nops, nabsent, ntagged, nelsewhere;
    Op *ops;
    Absent *absent;
    Tagged *tagged;
    int64_t *elsewhere;
    Py_ssize_t unknown_offset;
} STable;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *table, *classes, *unknown_factory, *message;
    PyObject *no_tags; /* the shared value for no unknown tags, or NULL: ask the factory */
    int version;
    int rows;
    int factory_is_dict;
    Py_ssize_t ntables;
    STable *tables;
} Reader;

typedef struct {
    const unsigned char *buf;
    Py_ssize_t len;
    Reader *r;
} Ctx;

/* A stack-allocated path segment: the error path is built only when an error is raised. */
typedef struct Path {
    const struct Path *parent;
    PyObject *name;
    Py_ssize_t index; /* array index, or -1 */
} Path;

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

static inline uint16_t load16(const unsigned char *p) {
    uint16_t v; memcpy(&v, p, 2);
#if PY_LITTLE_ENDIAN
    v = __builtin_bswap16(v);
#endif
    return v;
}
static inline uint32_t load32(const unsigned char *p) {
    uint32_t v; memcpy(&v, p, 4);
#if PY_LITTLE_ENDIAN
    v = __builtin_bswap32(v);
#endif
    return v;
}
static inline uint64_t load64(const unsigned char *p) {
    uint64_t v; memcpy(&v, p, 8);
#if PY_LITTLE_ENDIAN
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* runtime.wire.read_uvarint: at most 5 bytes. */
static int read_uvarint(Ctx *c, Py_ssize_t *pos, int64_t *out, const Path *path, PyObject *leaf) {
    Py_ssize_t o = *pos, start = o;
    int64_t value = 0;
    int shift = 0;
    for (;;) {
        if (UNLIKELY(o >= c->len))
            return raise_at(BufferUnderflow, path, leaf, start,
                            PyUnicode_FromString("the bytes end inside an unsigned varint"));
        unsigned char b = c->buf[o++];
        value |= (int64_t)(b & 0x7F) << shift;
        if (b < 0x80) break;
        shift += 7;
        if (UNLIKELY(shift > 28))
            return raise_at(InvalidLength, path, leaf, start,
                            PyUnicode_FromString("unsigned varint longer than 5 bytes"));
    }
    *out = value;
    *pos = o;
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

/* --------------------------------------------------------------------------- loading tables */

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

/* --------------------------------------------------------------------------- Reader */

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
    if (kwnames && PyTuple_GET_SIZE(kwnames)) {
        PyErr_SetString(PyExc_TypeError, "reader(buf, offset) takes no keyword arguments");
        return NULL;
    }
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "reader(buf, offset) takes one or two arguments");
        return NULL;
    }
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
    if (PyVectorcall_NARGS(nargsf) != 2 || (kwnames && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "read_pair(key, value) takes two arguments");
        return NULL;
    }
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

/* --------------------------------------------------------------------------- columns */

/* columns(readers, kinds, data, starts, ends, index, trailing_ok): many messages into Arrow
   columns. Row i is the bytes data[starts[i]:ends[i]] read by readers[index[i]] (index -1: a
   null row). Top-level numbers, strings, bytes and uuids go straight from the wire into
   column buffers; every other field (structs, arrays, tagged-field maps) is read as the
   object reader reads it and handed back as a Python object (one list per such column).
   A row is accepted or refused exactly as the reader's decode (or read, with trailing_ok)
   accepts or refuses it; the caller gets a refused row's error text by decoding it again. */

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


typedef struct {
    Reader *r;
    Py_ssize_t *slot_col; /* root slot -> column, or -1 */
    char *op_direct;      /* root op written straight into its column (DIRECT_*) */
    Ready *absent_ready, *tagged_ready;
} ColReader;

enum { DIRECT_NO = 0, DIRECT_YES = 1, DIRECT_NOT_NULL = 2 };

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

static const char B64URL[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* runtime.json_values.uuid_json: URL-safe base64 of the 16 bytes without padding (22 characters). */
static void uuid_text(const unsigned char *p, char *out) {
    for (int i = 0; i < 15; i += 3) {
        uint32_t v = ((uint32_t)p[i] << 16) | ((uint32_t)p[i + 1] << 8) | p[i + 2];
        *out++ = B64URL[v >> 18];
        *out++ = B64URL[(v >> 12) & 63];
        *out++ = B64URL[(v >> 6) & 63];
        *out++ = B64URL[v & 63];
    }
    *out++ = B64URL[p[15] >> 2];
    *out = B64URL[(p[15] & 3) << 4];
}

/* Python's strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF. */
static int utf8_valid(const unsigned char *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        if (n - i >= 8) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!(w & 0x8080808080808080ULL)) { i += 8; continue; }
        }
        unsigned char c = s[i];
        if (c < 0x80) { i++; continue; }
        if (c < 0xC2) return 0;
        if (c < 0xE0) {
            if (n - i < 2 || (s[i + 1] & 0xC0) != 0x80) return 0;
            i += 2;
            continue;
        }
        if (c < 0xF0) {
            if (n - i < 3) return 0;
            unsigned char c1 = s[i + 1];
            if ((c1 & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80) return 0;
            if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F)) return 0;
            i += 3;
            continue;
        }
        if (c < 0xF5) {
            if (n - i < 4) return 0;
            unsigned char c1 = s[i + 1];
            if ((c1 & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80 || (s[i + 3] & 0xC0) != 0x80)
                return 0;
            if ((c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 > 0x8F)) return 0;
            i += 4;
            continue;
        }
        return 0;
    }
    return 1;
}

/* read_uvarint without raising: -1 where it raises. */
static inline int col_uvarint(const Ctx *c, Py_ssize_t *pos, int64_t *out) {
    Py_ssize_t o = *pos;
    int64_t value = 0;
    int shift = 0;
    for (;;) {
        if (o >= c->len) return -1;
        unsigned char b = c->buf[o++];
        value |= (int64_t)(b & 0x7F) << shift;
        if (b < 0x80) break;
        shift += 7;
        if (shift > 28) return -1;
    }
    *out = value;
    *pos = o;
    return 0;
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
    for (Py_ssize_t row = 0; row < n; row++) {
        int32_t k = idx[row];
        if (k < 0) {
            struct_nulls++;
        } else {
            if (k >= nreaders || st[row] < 0 || st[row] > en[row] || en[row] > data.len) {
                PyErr_Format(PyExc_ValueError,
                             "columns: row %zd: reader %d, bytes [%lld, %lld) of %zd", row, (int)k,
                             (long long)st[row], (long long)en[row], data.len);
                goto done;
            }
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
    }
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

static PyMethodDef module_methods[] = {
    {"columns", (PyCFunction)columns, METH_VARARGS,
     "columns(readers, kinds, data, starts, ends, index, trailing_ok)\n"
     "-> (validity, null_count, columns, failed)\n\n"
     "Rows data[starts[i]:ends[i]] read by readers[index[i]] (int64 starts and ends, int32 "
     "index; -1: a null row) into Arrow buffers, one column per (attribute, kind) of kinds "
     "(kind: object, tagged, int8, int16, int32, int64, float64, bool, string, binary). A "
     "column is (validity, null_count, values), (validity, null_count, offsets, data) or, for "
     "object and tagged columns, (list of objects, non-null count); failed lists the rows "
     "the reader refuses, whose errors the caller gets by decoding them again."},
    {"pair_reader", (PyCFunction)(void (*)(void))make_pair_reader, METH_FASTCALL,
     "pair_reader(types, slow) -> PairReader\n\n"
     "types: record type -> (key reader, tuple of value readers or None by version, newest "
     "flexible value version or -1); slow: the pure pair reader, called with (key, value) for "
     "anything off the fast path. The PairReader is called as read_pair(key, value) -> "
     "(key, value or None)."},
    {"reader", (PyCFunction)(void (*)(void))make_reader, METH_VARARGS | METH_KEYWORDS,
     "reader(table, classes, unknown_tags, *, rows=False, no_tags=None) -> Reader\n\n"
     "table: a layout table from codegen.native_tables; classes: struct name -> generated "
     "class (with rows=True: struct name -> a callable making that struct's default row); "
     "unknown_tags: called with a list of (tag, bytes) pairs in wire order (empty when none, "
     "unless no_tags is given: then that value is used) to make each unknown_tags value.\n"
     "rows=True reads rows: a tuple per struct in slot order, as the generated row readers."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef engine_module = {
    PyModuleDef_HEAD_INIT, "_engine", "The table-driven native decoder.", -1, module_methods,
};

static int intern(PyObject **dst, const char *s) {
    *dst = PyUnicode_InternFromString(s);
    return *dst ? 0 : -1;
}

static PyObject *get_attr(PyObject *module, const char *name) {
    return PyObject_GetAttrString(module, name);
}

PyMODINIT_FUNC PyInit__engine(void) {
    if (intern(&S_tagged_fields, "<tagged fields>") < 0 || intern(&S_field, "field") < 0 ||
        intern(&S_offset, "offset") < 0 || intern(&S_located, "located") < 0 ||
        intern(&S_unknown_tags, "unknown_tags") < 0 ||
        intern(&S_int, "int") < 0 || intern(&S_is_safe, "is_safe") < 0 ||
        intern(&S_message, "message") < 0 || intern(&S_version, "version") < 0)
        return NULL;
    PyObject *errors = PyImport_ImportModule("codegen.runtime.errors");
    if (!errors) return NULL;
    DecodeError = get_attr(errors, "DecodeError");
    BufferUnderflow = get_attr(errors, "BufferUnderflow");
    InvalidLength = get_attr(errors, "InvalidLength");
    UnexpectedNull = get_attr(errors, "UnexpectedNull");
    InvalidUtf8 = get_attr(errors, "InvalidUtf8");
    InvalidTaggedField = get_attr(errors, "InvalidTaggedField");
    TrailingBytes = get_attr(errors, "TrailingBytes");
    Py_DECREF(errors);
    if (!DecodeError || !BufferUnderflow || !InvalidLength || !UnexpectedNull || !InvalidUtf8 ||
        !InvalidTaggedField || !TrailingBytes)
        return NULL;
    PyObject *uuid = PyImport_ImportModule("uuid");
    if (!uuid) return NULL;
    UuidCallable = get_attr(uuid, "UUID");
    PyObject *safe = get_attr(uuid, "SafeUUID");
    UuidSafeUnknown = safe ? get_attr(safe, "unknown") : NULL;
    Py_XDECREF(safe);
    Py_DECREF(uuid);
    if (!UuidCallable || !UuidSafeUnknown || !PyType_Check(UuidCallable)) return NULL;
    UuidType = (PyTypeObject *)UuidCallable;
    /* uuid.UUID keeps int and is_safe in slots: write them directly when they are plain. */
    if (direct_slots(UuidType, -1)) {
        UuidIntOffset = member_offset(UuidType, S_int);
        UuidSafeOffset = UuidIntOffset < 0 ? -1 : member_offset(UuidType, S_is_safe);
        if (UuidSafeOffset < 0) UuidIntOffset = -1;
    }
    if (PyErr_Occurred()) return NULL;
    PyObject *builtins = PyImport_ImportModule("builtins");
    if (!builtins) return NULL;
    PyObject *object = get_attr(builtins, "object");
    Py_DECREF(builtins);
    ObjectNew = object ? get_attr(object, "__new__") : NULL;
    Py_XDECREF(object);
    if (!ObjectNew) return NULL;
    if (PyType_Ready(&ReaderType) < 0 || PyType_Ready(&PrototypeType) < 0 ||
        PyType_Ready(&PairReaderType) < 0)
        return NULL;
    EmptyStr = PyUnicode_FromStringAndSize(NULL, 0);
    if (!EmptyStr) return NULL;
    PyObject *m = PyModule_Create(&engine_module);
    if (!m) return NULL;
    Py_INCREF(&ReaderType);
    engine_capi.reader_type = &ReaderType;
    PyObject *capi = PyCapsule_New(&engine_capi, "codegen.native._engine._C_API", NULL);
    if (!capi || PyModule_AddObject(m, "_C_API", capi) < 0) {
        Py_XDECREF(capi);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&PairReaderType);
    if (PyModule_AddObject(m, "PairReader", (PyObject *)&PairReaderType) < 0) {
        Py_DECREF(&PairReaderType);
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddObject(m, "Reader", (PyObject *)&ReaderType) < 0 ||
        PyModule_AddIntConstant(m, "FORMAT_VERSION", FORMAT_VERSION) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
