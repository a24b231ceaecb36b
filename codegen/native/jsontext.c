/* The jsonl lines of `dump --format jsonl`, written as text from decoded records, in C.
 *
 * The decoding stays the record loop's (records.c, engine.c); this module only prints. A
 * Plan is the JSON form of one generated struct at one version, built by
 * codegen/dumps/json_text.py from the struct's layout table and its JSON names: a list of
 * fields, each (JSON key, slot, kind, nullable, tagged default, child plan), printed in the
 * order and under the conditions of the generated to_json, as orjson prints to_json's dict
 * (compact, non-ASCII raw, control characters escaped). A Writer prints the lines of one file:
 * Writer.batch(records, close) -> bytes, one call per log batch.
 *
 * A record the plans print exactly is printed here; any other record (another kind, a value
 * without a plan, a value they cannot print: a string with a lone surrogate, a type the decoder
 * does not make) is printed by the writer's `line(rec)` callable, the Python reference, so every
 * line is the reference's. Slots are read at the member offsets checked when a plan is made,
 * and only from objects of exactly the planned class.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#include "shared.h"

/* Field kinds (codegen/dumps/json_text.py: the same numbers). */
enum { K_INT = 1, K_BOOL, K_STRING, K_BYTES, K_RECORDS, K_UUID, K_STRUCT, K_ARRAY, K_LAST };

/* The record fields the writer reads (DecodedRecord's slots, by name). */
enum {
    R_OFFSET, R_TIMESTAMP, R_KIND, R_KEY_BYTES, R_VALUE, R_VALUE_VERSION, R_NEWER, R_NOTE,
    R_MEMBERS, R_RECORD_TYPE, R_NAME, R_KEY, N_RECORD_FIELDS,
};
static const char *const RECORD_FIELDS[N_RECORD_FIELDS] = {
    "offset", "timestamp", "kind", "key_bytes", "value", "value_version", "newer_than_spec",
    "note", "members", "record_type", "name", "key",
};

static PyObject *S_bytes;

/* --------------------------------------------------------------------------- output buffer */

typedef struct {
    char *p;
    Py_ssize_t len, cap;
    PyObject *owner; /* a bytes object p points into (the batch's result), or NULL: PyMem */
} Buf;

static int buf_grow(Buf *b, Py_ssize_t more) {
    Py_ssize_t cap = b->cap ? b->cap : 1 << 16;
    while (cap - b->len < more) {
        if (cap > PY_SSIZE_T_MAX / 2) {
            PyErr_NoMemory();
            return -1;
        }
        cap *= 2;
    }
    if (b->owner) {
        if (_PyBytes_Resize(&b->owner, cap) < 0) { /* owner released and NULL */
            b->p = NULL;
            b->len = b->cap = 0;
            return -1;
        }
        b->p = PyBytes_AS_STRING(b->owner);
        b->cap = cap;
        return 0;
    }
    char *p = PyMem_Realloc(b->p, (size_t)cap);
    if (!p) {
        PyErr_NoMemory();
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

static inline int buf_reserve(Buf *b, Py_ssize_t more) {
    return LIKELY(b->cap - b->len >= more) ? 0 : buf_grow(b, more);
}

static inline int buf_put(Buf *b, const char *s, Py_ssize_t n) {
    if (buf_reserve(b, n) < 0) return -1;
    memcpy(b->p + b->len, s, (size_t)n);
    b->len += n;
    return 0;
}

#define PUT_LITERAL(b, s) buf_put((b), (s), (Py_ssize_t)(sizeof(s) - 1))

static const char DIGIT_PAIRS[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* A decimal integer, two digits per step (offsets and timestamps have 13 to 19). */
static int buf_int64(Buf *b, long long v) {
    char tmp[24];
    char *end = tmp + sizeof tmp, *o = end;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    while (u >= 100) {
        unsigned d = (unsigned)(u % 100) * 2;
        u /= 100;
        *--o = DIGIT_PAIRS[d + 1];
        *--o = DIGIT_PAIRS[d];
    }
    if (u >= 10) {
        *--o = DIGIT_PAIRS[u * 2 + 1];
        *--o = DIGIT_PAIRS[u * 2];
    } else {
        *--o = (char)('0' + u);
    }
    if (v < 0) *--o = '-';
    return buf_put(b, o, end - o);
}

/* --------------------------------------------------------------------------- values */

/* Results of printing one value: done, or the record must go to the reference (-2), or a
   real error (-1, with an exception set). */
#define NOT_HERE (-2)

static int put_int(Buf *b, PyObject *v) {
    if (!PyLong_CheckExact(v)) return NOT_HERE;
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow) return NOT_HERE; /* past 64 bits: the reference's encoder */
    if (x == -1 && PyErr_Occurred()) return -1;
    return buf_int64(b, x);
}

static const char HEX[] = "0123456789abcdef";

/* A JSON string as orjson writes it: '"' and '\\' escaped, the control characters below
   0x20 as \b \t \n \f \r or \u00xx, everything else (non-ASCII too) as its UTF-8 bytes. */
static int put_text(Buf *b, const char *s, Py_ssize_t n) {
    if (n > (PY_SSIZE_T_MAX - 2) / 6) {
        PyErr_NoMemory();
        return -1;
    }
    if (buf_reserve(b, 6 * n + 2) < 0) return -1;
    char *o = b->p + b->len;
    *o++ = '"';
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (LIKELY(c >= 0x20 && c != '"' && c != '\\')) {
            *o++ = (char)c;
            continue;
        }
        *o++ = '\\';
        switch (c) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '\b': *o++ = 'b'; break;
        case '\t': *o++ = 't'; break;
        case '\n': *o++ = 'n'; break;
        case '\f': *o++ = 'f'; break;
        case '\r': *o++ = 'r'; break;
        default:
            *o++ = 'u';
            *o++ = '0';
            *o++ = '0';
            *o++ = HEX[c >> 4];
            *o++ = HEX[c & 15];
        }
    }
    *o++ = '"';
    b->len = o - b->p;
    return 0;
}

static int put_string(Buf *b, PyObject *v) {
    if (!PyUnicode_CheckExact(v)) return NOT_HERE;
    Py_ssize_t n;
    const char *s;
    if (PyUnicode_IS_COMPACT_ASCII(v)) {
        s = (const char *)PyUnicode_DATA(v);
        n = PyUnicode_GET_LENGTH(v);
    } else {
        s = PyUnicode_AsUTF8AndSize(v, &n);
        if (!s) {
            /* A lone surrogate: the reference's encoder says how it is printed. */
            if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) return -1;
            PyErr_Clear();
            return NOT_HERE;
        }
    }
    return put_text(b, s, n);
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char B64URL[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Base64 of p[0:n] in quotes: padded (bytes, base64.b64encode) or not (uuids, Kafka's
   Uuid.toString: url-safe, '=' stripped). */
static int put_base64(Buf *b, const unsigned char *p, Py_ssize_t n, const char *alphabet,
                      int pad) {
    if (n > (PY_SSIZE_T_MAX - 8) / 4 * 3) {
        PyErr_NoMemory();
        return -1;
    }
    if (buf_reserve(b, (n + 2) / 3 * 4 + 2) < 0) return -1;
    char *o = b->p + b->len;
    *o++ = '"';
    Py_ssize_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t w = ((uint32_t)p[i] << 16) | ((uint32_t)p[i + 1] << 8) | p[i + 2];
        *o++ = alphabet[w >> 18];
        *o++ = alphabet[(w >> 12) & 63];
        *o++ = alphabet[(w >> 6) & 63];
        *o++ = alphabet[w & 63];
    }
    if (n - i == 1) {
        uint32_t w = (uint32_t)p[i] << 16;
        *o++ = alphabet[w >> 18];
        *o++ = alphabet[(w >> 12) & 63];
        if (pad) {
            *o++ = '=';
            *o++ = '=';
        }
    } else if (n - i == 2) {
        uint32_t w = ((uint32_t)p[i] << 16) | ((uint32_t)p[i + 1] << 8);
        *o++ = alphabet[w >> 18];
        *o++ = alphabet[(w >> 12) & 63];
        *o++ = alphabet[(w >> 6) & 63];
        if (pad) *o++ = '=';
    }
    *o++ = '"';
    b->len = o - b->p;
    return 0;
}

/* uuid.UUID, whose value is its `int` slot: read in C, not through its Python properties. */
static PyTypeObject *UuidType;
static PyObject *S_int;

/* The int of an exact uuid.UUID (new reference), or NULL: not one (no error) or an error. */
static PyObject *uuid_int(PyObject *v) {
    if (Py_TYPE(v) != UuidType) return NULL;
    PyObject *i = PyObject_GetAttr(v, S_int);
    if (!i && PyErr_ExceptionMatches(PyExc_AttributeError)) PyErr_Clear();
    if (i && !PyLong_CheckExact(i)) Py_CLEAR(i);
    return i;
}

/* An exact uuid.UUID's 16 bytes (UUID.bytes: its int big-endian), printed: 0, NOT_HERE (an
   int outside 0..2**128-1, where UUID.bytes raises) or -1. */
static int put_uuid_int(Buf *b, PyObject *i) {
    unsigned char raw[16];
#if PY_VERSION_HEX >= 0x030D0000
    Py_ssize_t need = PyLong_AsNativeBytes(
        i, raw, 16,
        Py_ASNATIVEBYTES_BIG_ENDIAN | Py_ASNATIVEBYTES_UNSIGNED_BUFFER |
            Py_ASNATIVEBYTES_REJECT_NEGATIVE);
    if (need < 0) {
        if (!PyErr_ExceptionMatches(PyExc_ValueError)) return -1;
        PyErr_Clear();
        return NOT_HERE;
    }
    if (need > 16) return NOT_HERE;
#else
    if (_PyLong_AsByteArray((PyLongObject *)i, raw, 16, 0, 0) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return -1;
        PyErr_Clear();
        return NOT_HERE;
    }
#endif
    return put_base64(b, raw, 16, B64URL, 0);
}

static int put_uuid(Buf *b, PyObject *v) {
    PyObject *i = uuid_int(v);
    if (i) {
        int rc = put_uuid_int(b, i);
        Py_DECREF(i);
        return rc;
    }
    if (PyErr_Occurred()) return -1;
    PyObject *raw = PyObject_GetAttr(v, S_bytes);
    if (!raw) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
        PyErr_Clear();
        return NOT_HERE;
    }
    int rc = NOT_HERE;
    if (PyBytes_CheckExact(raw) && PyBytes_GET_SIZE(raw) == 16)
        rc = put_base64(b, (const unsigned char *)PyBytes_AS_STRING(raw), 16, B64URL, 0);
    Py_DECREF(raw);
    return rc;
}

/* --------------------------------------------------------------------------- plans */

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

/* --------------------------------------------------------------------------- writer */

/* The middles kept, by the identity of the record's key bytes (the record loop shares one
   bytes object per key), its kind and value version; the table holds references to what it
   is keyed by, so an address is never reused while kept. Cleared when full. */
#define MIDDLES_SIZE (1 << 16)
#define MIDDLES_SLOTS (MIDDLES_SIZE * 2)
/* Records whose middles are asked for at once. */
#define PREFETCH_AHEAD 32

typedef struct {
    PyObject *key_bytes, *kind, *middle; /* owned; key_bytes NULL: empty */
    long version;
} Middle;

typedef struct {
    PyObject_HEAD
    PyTypeObject *record_cls;
    Py_ssize_t offsets[N_RECORD_FIELDS];
    PyObject *record_kind, *tombstone_kind;
    PyObject *noted_kinds; /* tuple: the kinds batch() notes (with newer_than_spec records) */
    Middle *middles;      /* MIDDLES_SLOTS entries, or NULL before the first */
    Py_ssize_t nmiddles;
    PyObject *middle;     /* middle(rec) -> bytes */
    PyObject *plans;      /* dict: value class -> tuple of Plan or None, by version (the last
                             also every later version's) */
    PyObject *make_plans; /* make_plans(cls) -> that tuple */
    PyObject *value_text; /* value_text(rec) -> bytes, or None: the line's reference */
    PyObject *line;       /* line(rec) -> bytes: the reference's whole line */
    int busy;             /* in batch(): its buffer is in use */
    Buf buf;              /* batch()'s lines, written straight into the bytes it returns */
    Py_ssize_t size_hint; /* the capacity the next batch's bytes start with */
} Writer;

static void middles_clear(Writer *w) {
    if (!w->middles) return;
    for (Py_ssize_t i = 0; i < MIDDLES_SLOTS; i++) {
        Middle *m = &w->middles[i];
        if (!m->key_bytes) continue;
        PyObject *key = m->key_bytes, *kind = m->kind, *middle = m->middle;
        m->key_bytes = m->kind = m->middle = NULL;
        Py_DECREF(key);
        Py_DECREF(kind);
        Py_DECREF(middle);
    }
    w->nmiddles = 0;
}

static int Writer_traverse(Writer *w, visitproc visit, void *arg) {
    Py_VISIT(w->record_cls);
    Py_VISIT(w->record_kind);
    Py_VISIT(w->tombstone_kind);
    Py_VISIT(w->noted_kinds);
    Py_VISIT(w->middle);
    Py_VISIT(w->plans);
    Py_VISIT(w->make_plans);
    Py_VISIT(w->value_text);
    Py_VISIT(w->line);
    return 0;
}

static int Writer_clear(Writer *w) {
    Py_CLEAR(w->record_cls);
    Py_CLEAR(w->record_kind);
    Py_CLEAR(w->tombstone_kind);
    Py_CLEAR(w->noted_kinds);
    middles_clear(w);
    Py_CLEAR(w->middle);
    Py_CLEAR(w->plans);
    Py_CLEAR(w->make_plans);
    Py_CLEAR(w->value_text);
    Py_CLEAR(w->line);
    return 0;
}

static void Writer_dealloc(Writer *w) {
    PyObject_GC_UnTrack(w);
    Writer_clear(w);
    PyMem_Free(w->middles);
    PyMem_Free(w->buf.p);
    Py_TYPE(w)->tp_free((PyObject *)w);
}

/* Writer(record_class, record_kind, tombstone_kind, noted_kinds, middle, make_plans,
   value_text, line). */
static PyObject *Writer_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyTypeObject *cls;
    PyObject *record_kind, *tombstone_kind, *noted_kinds, *middle, *make_plans, *value_text, *line;
    if (kwargs && PyDict_GET_SIZE(kwargs)) {
        PyErr_SetString(PyExc_TypeError, "Writer takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O!UUO!OOOO:Writer", &PyType_Type, &cls, &record_kind,
                          &tombstone_kind, &PyTuple_Type, &noted_kinds, &middle, &make_plans,
                          &value_text, &line))
        return NULL;
    if (!direct_slots(cls, -1)) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "%s's slots cannot be read directly", cls->tp_name);
        return NULL;
    }
    Writer *w = (Writer *)type->tp_alloc(type, 0);
    if (!w) return NULL;
    for (int i = 0; i < N_RECORD_FIELDS; i++) {
        PyObject *name = PyUnicode_InternFromString(RECORD_FIELDS[i]);
        if (!name) goto fail;
        w->offsets[i] = member_offset(cls, name);
        Py_DECREF(name);
        if (w->offsets[i] < 0) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError, "%s.%s is not a slot that can be read directly",
                             cls->tp_name, RECORD_FIELDS[i]);
            goto fail;
        }
    }
    w->record_cls = (PyTypeObject *)Py_NewRef(cls);
    w->record_kind = Py_NewRef(record_kind);
    w->tombstone_kind = Py_NewRef(tombstone_kind);
    w->noted_kinds = Py_NewRef(noted_kinds);
    w->middle = Py_NewRef(middle);
    w->make_plans = Py_NewRef(make_plans);
    w->value_text = Py_NewRef(value_text);
    w->line = Py_NewRef(line);
    if (!(w->plans = PyDict_New())) goto fail;
    return (PyObject *)w;
fail:
    Py_DECREF(w);
    return NULL;
}

static inline PyObject *slot(const Writer *w, PyObject *rec, int field) {
    return *(PyObject **)((char *)rec + w->offsets[field]);
}

/* 1 when equal, 0 when not, -1 on error. */
static inline int same(PyObject *a, PyObject *b) {
    return a == b ? 1 : PyObject_RichCompareBool(a, b, Py_EQ);
}

/* The Plan of a value's class at a version (borrowed), or NULL: none (no error) or an
   error (set). */
static const Plan *plan_of(Writer *w, PyObject *value, PyObject *version) {
    PyObject *cls = (PyObject *)Py_TYPE(value);
    PyObject *plans = PyDict_GetItemWithError(w->plans, cls);
    if (!plans) {
        if (PyErr_Occurred()) return NULL;
        plans = PyObject_CallOneArg(w->make_plans, cls);
        if (!plans) return NULL;
        if (!PyTuple_CheckExact(plans)) {
            PyErr_Format(PyExc_TypeError, "make_plans must return a tuple, not %R", plans);
            Py_DECREF(plans);
            return NULL;
        }
        int rc = PyDict_SetItem(w->plans, cls, plans);
        Py_DECREF(plans); /* the dict holds it */
        if (rc < 0) return NULL;
    }
    if (!PyLong_CheckExact(version)) return NULL;
    Py_ssize_t v = PyLong_AsSsize_t(version);
    if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return NULL;
    }
    const Py_ssize_t size = PyTuple_GET_SIZE(plans);
    if (v < 0 || !size) return NULL;
    /* the last plan is also every later version's (value_plans: past the newest) */
    PyObject *plan = PyTuple_GET_ITEM(plans, v < size ? v : size - 1);
    return Py_TYPE(plan) == &PlanType ? (const Plan *)plan : NULL;
}

/* Where the middle of (key_bytes, kind, version) is looked for first. */
static inline Py_ssize_t middle_slot(PyObject *key_bytes, PyObject *kind, long version) {
    size_t h = ((uintptr_t)key_bytes >> 4) * 0x9E3779B97F4A7C15ULL;
    h ^= ((uintptr_t)kind >> 4) + (size_t)version * 0x85EBCA6BULL;
    return (Py_ssize_t)((h ^ (h >> 29)) & (MIDDLES_SLOTS - 1));
}

/* The middle of a record printed here (JsonlLines._middle's text): a new bytes object, NULL
   with an error set, or NULL without one where the reference prints it. */
static PyObject *build_middle(Writer *w, PyObject *rec, int is_record, long version) {
    PyObject *record_type = slot(w, rec, R_RECORD_TYPE), *name = slot(w, rec, R_NAME);
    PyObject *key = slot(w, rec, R_KEY), *kind = slot(w, rec, R_KIND);
    if (!record_type || !name || !key || !kind || !PyLong_CheckExact(record_type))
        return NULL;
    PyObject *zero = PyLong_FromLong(0);
    if (!zero) return NULL;
    const Plan *key_plan = plan_of(w, key, zero);
    Py_DECREF(zero);
    if (!key_plan) return NULL;
    Buf b = {NULL, 0, 0};
    Py_INCREF(key);
    int rc = PUT_LITERAL(&b, "\"kind\":");
    if (rc >= 0) rc = put_string(&b, kind);
    if (rc >= 0) rc = PUT_LITERAL(&b, ",\"recordType\":");
    if (rc >= 0) rc = put_int(&b, record_type);
    if (rc >= 0) rc = PUT_LITERAL(&b, ",\"recordName\":");
    if (rc >= 0) rc = put_string(&b, name);
    if (rc >= 0) rc = PUT_LITERAL(&b, ",\"valueVersion\":");
    if (rc >= 0) rc = version >= 0 ? buf_int64(&b, version) : PUT_LITERAL(&b, "null");
    if (rc >= 0) rc = PUT_LITERAL(&b, ",\"key\":{\"type\":\"");
    if (rc >= 0) rc = put_int(&b, record_type);
    if (rc >= 0) rc = PUT_LITERAL(&b, "\",\"data\":");
    if (rc >= 0) rc = put_struct(&b, key_plan, key, 0);
    if (rc >= 0 && !is_record) rc = PUT_LITERAL(&b, "},\"value\":null");
    if (rc >= 0 && is_record) {
        rc = PUT_LITERAL(&b, "},\"value\":{\"version\":\"");
        if (rc >= 0) rc = buf_int64(&b, version);
        if (rc >= 0) rc = PUT_LITERAL(&b, "\",\"data\":");
    }
    Py_DECREF(key);
    PyObject *out = rc >= 0 ? PyBytes_FromStringAndSize(b.p, b.len) : NULL;
    PyMem_Free(b.p);
    return out;
}

/* The middle bytes of a record (a new reference), or NULL with an error set. */
static PyObject *middle_of(Writer *w, PyObject *rec, PyObject *key_bytes, PyObject *kind,
                           int is_record, long version) {
    if (!w->middles && !(w->middles = PyMem_Calloc(MIDDLES_SLOTS, sizeof(Middle))))
        return PyErr_NoMemory();
    const Py_ssize_t first = middle_slot(key_bytes, kind, version);
    Py_ssize_t i = first;
    for (;; i = (i + 1) & (MIDDLES_SLOTS - 1)) {
        Middle *m = &w->middles[i];
        if (!m->key_bytes) break;
        if (m->key_bytes == key_bytes && m->kind == kind && m->version == version)
            return Py_NewRef(m->middle);
    }
    PyObject *middle = build_middle(w, rec, is_record, version);
    if (!middle && PyErr_Occurred()) return NULL;
    if (!middle && !(middle = PyObject_CallOneArg(w->middle, rec))) return NULL;
    if (!PyBytes_CheckExact(middle)) {
        PyErr_Format(PyExc_TypeError, "middle must return bytes, not %R", middle);
        Py_DECREF(middle);
        return NULL;
    }
    if (w->nmiddles >= MIDDLES_SIZE) middles_clear(w);
    /* The call may have run code: find the first free slot again. */
    i = first;
    while (w->middles[i].key_bytes) i = (i + 1) & (MIDDLES_SLOTS - 1);
    Middle *m = &w->middles[i];
    m->key_bytes = Py_NewRef(key_bytes);
    m->kind = Py_NewRef(kind);
    m->version = version;
    m->middle = Py_NewRef(middle);
    w->nmiddles++;
    return middle;
}

/* The value's text from the reference (value_text), appended: 0, NOT_HERE or -1. */
static int put_value_text(Writer *w, PyObject *rec) {
    PyObject *text = PyObject_CallOneArg(w->value_text, rec);
    if (!text) return -1;
    int rc = NOT_HERE;
    if (PyBytes_CheckExact(text))
        rc = buf_put(&w->buf, PyBytes_AS_STRING(text), PyBytes_GET_SIZE(text));
    else if (text != Py_None) {
        PyErr_Format(PyExc_TypeError, "value_text must return bytes or None, not %R", text);
        rc = -1;
    }
    Py_DECREF(text);
    return rc;
}

/* One record's line printed here: 0, NOT_HERE (nothing kept), or -1. The line of a record or
   tombstone of a known key: its position, the middle (kind, type, name, version, key, the
   value's opening), the value's data, then isNewerVersion and note where record_to_json adds
   them. */
static int put_record(Writer *w, PyObject *rec, PyObject *close) {
    PyObject *kind = slot(w, rec, R_KIND), *key_bytes = slot(w, rec, R_KEY_BYTES);
    if (!kind || !key_bytes || key_bytes == Py_None) return NOT_HERE;
    int is_record = same(kind, w->record_kind);
    if (is_record < 0) return -1;
    if (!is_record) {
        int is_tombstone = same(kind, w->tombstone_kind);
        if (is_tombstone <= 0) return is_tombstone < 0 ? -1 : NOT_HERE;
    }
    PyObject *offset = slot(w, rec, R_OFFSET), *ts = slot(w, rec, R_TIMESTAMP);
    PyObject *newer = slot(w, rec, R_NEWER), *note = slot(w, rec, R_NOTE);
    PyObject *version = slot(w, rec, R_VALUE_VERSION);
    if (!offset || !ts || !newer || !note || !version || !PyLong_CheckExact(version))
        return NOT_HERE;
    int overflow = 0;
    long version_number = PyLong_AsLongAndOverflow(version, &overflow);
    if (overflow) return NOT_HERE;
    int is_newer = PyObject_IsTrue(newer);
    if (is_newer < 0) return -1;
    int has_note = PyObject_IsTrue(note);
    if (has_note < 0) return -1;
    if (has_note && !PyUnicode_CheckExact(note)) return NOT_HERE;
    const Plan *plan = NULL;
    PyObject *value = NULL;
    if (is_record) {
        /* A group's members: value_json decodes their payloads (value_text's job). */
        PyObject *members = slot(w, rec, R_MEMBERS);
        value = slot(w, rec, R_VALUE);
        if (!members || !value) return NOT_HERE;
        if (members == Py_None) {
            plan = plan_of(w, value, version);
            if (!plan && PyErr_Occurred()) return -1;
        }
    }
    Buf *b = &w->buf;
    const Py_ssize_t start = b->len;
    int rc = PUT_LITERAL(b, "{\"offset\":");
    if (rc >= 0) rc = put_int(b, offset);
    if (rc >= 0) rc = PUT_LITERAL(b, ",\"timestamp\":");
    if (rc >= 0) rc = put_int(b, ts);
    if (rc >= 0) rc = PUT_LITERAL(b, ",");
    if (rc < 0) goto undo;
    PyObject *middle = middle_of(w, rec, key_bytes, kind, is_record, version_number);
    if (!middle) {
        rc = -1;
        goto undo;
    }
    rc = buf_put(b, PyBytes_AS_STRING(middle), PyBytes_GET_SIZE(middle));
    Py_DECREF(middle);
    if (rc >= 0 && is_record) {
        if (plan) {
            Py_INCREF(value);
            rc = put_struct(b, plan, value, 0);
            Py_DECREF(value);
        } else {
            rc = put_value_text(w, rec);
        }
        if (rc >= 0) rc = PUT_LITERAL(b, "}");
    }
    if (rc >= 0 && is_newer) rc = PUT_LITERAL(b, ",\"isNewerVersion\":true");
    if (rc >= 0 && has_note) {
        rc = PUT_LITERAL(b, ",\"note\":");
        if (rc >= 0) rc = put_string(b, note);
    }
    if (rc >= 0) rc = buf_put(b, PyBytes_AS_STRING(close), PyBytes_GET_SIZE(close));
    if (rc >= 0) return 0;
undo:
    b->len = start;
    return rc;
}

/* 1 when the summary counts the record (a noted kind, or newer than the specs), 0 when not,
   -1 on error. */
static int noted(Writer *w, PyObject *rec) {
    PyObject *kind, *newer;
    int rc = 0;
    if (Py_TYPE(rec) == w->record_cls) {
        kind = Py_XNewRef(slot(w, rec, R_KIND));
        newer = Py_XNewRef(slot(w, rec, R_NEWER));
    } else {
        kind = PyObject_GetAttrString(rec, RECORD_FIELDS[R_KIND]);
        newer = kind ? PyObject_GetAttrString(rec, RECORD_FIELDS[R_NEWER]) : NULL;
    }
    if (!kind || !newer) {
        PyErr_Clear();
        rc = 1; /* the counting raises, as it does for any such record */
    }
    for (Py_ssize_t i = 0; !rc && i < PyTuple_GET_SIZE(w->noted_kinds); i++)
        rc = same(kind, PyTuple_GET_ITEM(w->noted_kinds, i));
    if (!rc) rc = PyObject_IsTrue(newer);
    Py_XDECREF(kind);
    Py_XDECREF(newer);
    return rc;
}

#if defined(__GNUC__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)0)
#endif

/* The cache lines of the middles of records[start:start+n] asked for ahead of their use: the
   table slots first, then the middles those slots hold (their loads then overlap). */
static void prefetch_middles(Writer *w, PyObject *records, Py_ssize_t start, Py_ssize_t n) {
    Py_ssize_t slots[PREFETCH_AHEAD];
    Py_ssize_t count = 0;
    for (Py_ssize_t i = start; i < start + n; i++) {
        PyObject *rec = PyList_GET_ITEM(records, i);
        if (Py_TYPE(rec) != w->record_cls) continue;
        PyObject *key_bytes = slot(w, rec, R_KEY_BYTES), *kind = slot(w, rec, R_KIND);
        PyObject *version = slot(w, rec, R_VALUE_VERSION);
        if (!key_bytes || !kind || !version || !PyLong_CheckExact(version)) continue;
        int overflow = 0;
        long v = PyLong_AsLongAndOverflow(version, &overflow);
        if (overflow) continue;
        slots[count] = middle_slot(key_bytes, kind, v);
        PREFETCH(&w->middles[slots[count]]);
        count++;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *middle = w->middles[slots[i]].middle;
        if (middle) PREFETCH(middle);
    }
}

static PyObject *Writer_batch(Writer *w, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyList_CheckExact(args[0]) || !PyBytes_CheckExact(args[1]) ||
        !PyList_CheckExact(args[2])) {
        PyErr_SetString(PyExc_TypeError, "batch(records: list, close: bytes, noted: list)");
        return NULL;
    }
    PyObject *records = args[0], *close = args[1], *noted_list = args[2];
    if (w->busy) {
        PyErr_SetString(PyExc_RuntimeError, "Writer.batch called again from its own callbacks");
        return NULL;
    }
    w->busy = 1;
    PyObject *out = NULL;
    Buf *b = &w->buf;
    PyMem_Free(b->p);
    b->len = 0;
    b->cap = Py_MAX(w->size_hint, 1 << 12);
    if (!(b->owner = PyBytes_FromStringAndSize(NULL, b->cap))) {
        b->p = NULL;
        b->cap = 0;
        w->busy = 0;
        return NULL;
    }
    b->p = PyBytes_AS_STRING(b->owner);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(records); i++) {
        if (w->middles && i % PREFETCH_AHEAD == 0)
            prefetch_middles(w, records, i, Py_MIN(PREFETCH_AHEAD, PyList_GET_SIZE(records) - i));
        PyObject *rec = PyList_GET_ITEM(records, i);
        Py_INCREF(rec);
        int rc = noted(w, rec);
        if (rc > 0) rc = PyList_Append(noted_list, rec);
        if (rc >= 0) rc = Py_TYPE(rec) == w->record_cls ? put_record(w, rec, close) : NOT_HERE;
        if (rc == NOT_HERE) {
            PyObject *line = PyObject_CallOneArg(w->line, rec);
            if (line && !PyBytes_CheckExact(line)) {
                PyErr_Format(PyExc_TypeError, "line must return bytes, not %R", line);
                Py_CLEAR(line);
            }
            rc = line ? buf_put(b, PyBytes_AS_STRING(line), PyBytes_GET_SIZE(line)) : -1;
            Py_XDECREF(line);
        }
        Py_DECREF(rec);
        if (rc < 0) goto done;
    }
    /* The next batch starts with room for this one's lines and a quarter more (at most
       1 MiB: a huge batch's lines grow by doubling). */
    w->size_hint = Py_MIN(b->len + b->len / 4, (Py_ssize_t)1 << 20);
    if (_PyBytes_Resize(&b->owner, b->len) == 0) out = b->owner;
    b->owner = NULL; /* now out (or released) */
done:
    Py_CLEAR(b->owner);
    b->p = NULL;
    b->len = b->cap = 0;
    w->busy = 0;
    return out;
}

static PyMethodDef Writer_methods[] = {
    {"batch", (PyCFunction)(void (*)(void))Writer_batch, METH_FASTCALL,
     "batch(records, close, noted) -> bytes: the jsonl lines of one log batch's records; close "
     "ends each line (the file and batch fields, '}' and the newline). The records the summary "
     "counts (noted kinds, newer than the specs, any other class) are appended to noted."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject WriterType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "codegen.native._jsontext.Writer",
    .tp_basicsize = sizeof(Writer),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Writer(record_class, record_kind, tombstone_kind, noted_kinds, middle, "
              "make_plans, value_text, line)",
    .tp_new = Writer_new,
    .tp_dealloc = (destructor)Writer_dealloc,
    .tp_traverse = (traverseproc)Writer_traverse,
    .tp_clear = (inquiry)Writer_clear,
    .tp_methods = Writer_methods,
};

/* --------------------------------------------------------------------------- integer rows */

#define MAX_OBJECT_FIELDS 16

/* object_arrays(prefixes, columns, masks, bounds) -> list of bytes: per k, the JSON array of
   the objects of rows bounds[k]:bounds[k + 1]: each row prefixes[0], columns[0][row],
   prefixes[1], columns[1][row], ... then "}" (prefixes: b'{"a":', b',"b":', ...). columns are
   int64 buffers of one length; masks, per column, a buffer of one byte per row (the value is
   null where it is 0) or None. What orjson writes of the same lists of dicts. */
static PyObject *object_arrays(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 || !PyTuple_Check(args[0]) || !PyTuple_Check(args[1]) ||
        !PyTuple_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError,
                        "object_arrays(prefixes, columns, masks, bounds): three tuples and a "
                        "buffer");
        return NULL;
    }
    const Py_ssize_t nf = PyTuple_GET_SIZE(args[0]);
    if (nf < 1 || nf > MAX_OBJECT_FIELDS || PyTuple_GET_SIZE(args[1]) != nf ||
        PyTuple_GET_SIZE(args[2]) != nf) {
        PyErr_Format(PyExc_ValueError, "object_arrays: 1 to %d fields, as many of each",
                     MAX_OBJECT_FIELDS);
        return NULL;
    }
    Py_buffer cols[MAX_OBJECT_FIELDS], masks[MAX_OBJECT_FIELDS], bounds;
    int held_cols = 0, held_masks[MAX_OBJECT_FIELDS] = {0}, held_bounds = 0;
    PyObject *out = NULL;
    Buf b = {NULL, 0, 0, NULL};
    Py_ssize_t n = -1;
    for (Py_ssize_t i = 0; i < nf; i++) {
        if (!PyBytes_Check(PyTuple_GET_ITEM(args[0], i))) {
            PyErr_SetString(PyExc_TypeError, "object_arrays: prefixes must be bytes");
            goto done;
        }
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(args[1], i), &cols[i], PyBUF_C_CONTIGUOUS) < 0)
            goto done;
        held_cols++;
        if (cols[i].itemsize != 8 || (n >= 0 && cols[i].len / 8 != n)) {
            PyErr_SetString(PyExc_ValueError, "object_arrays: int64 columns of one length");
            goto done;
        }
        n = cols[i].len / 8;
        PyObject *mask = PyTuple_GET_ITEM(args[2], i);
        if (mask != Py_None) {
            if (PyObject_GetBuffer(mask, &masks[i], PyBUF_C_CONTIGUOUS) < 0) goto done;
            held_masks[i] = 1;
            if (masks[i].itemsize != 1 || masks[i].len != n) {
                PyErr_SetString(PyExc_ValueError, "object_arrays: a byte of mask per row");
                goto done;
            }
        }
    }
    if (PyObject_GetBuffer(args[3], &bounds, PyBUF_C_CONTIGUOUS) < 0) goto done;
    held_bounds = 1;
    if (bounds.itemsize != 8 || bounds.len < 8) {
        PyErr_SetString(PyExc_ValueError, "object_arrays: int64 bounds, the end last");
        goto done;
    }
    const int64_t *at = bounds.buf;
    const Py_ssize_t groups = bounds.len / 8 - 1;
    for (Py_ssize_t k = 0; k <= groups; k++) {
        if (at[k] < 0 || at[k] > n || (k && at[k] < at[k - 1])) {
            PyErr_SetString(PyExc_ValueError, "object_arrays: bounds outside the rows");
            goto done;
        }
    }
    out = PyList_New(groups);
    if (!out) goto done;
    for (Py_ssize_t k = 0; k < groups; k++) {
        b.len = 0;
        if (PUT_LITERAL(&b, "[") < 0) goto fail;
        for (int64_t row = at[k]; row < at[k + 1]; row++) {
            if (row > at[k] && PUT_LITERAL(&b, ",") < 0) goto fail;
            for (Py_ssize_t i = 0; i < nf; i++) {
                PyObject *prefix = PyTuple_GET_ITEM(args[0], i);
                if (buf_put(&b, PyBytes_AS_STRING(prefix), PyBytes_GET_SIZE(prefix)) < 0)
                    goto fail;
                const int null = held_masks[i] && !((const char *)masks[i].buf)[row];
                if (null ? PUT_LITERAL(&b, "null") < 0
                         : buf_int64(&b, ((const int64_t *)cols[i].buf)[row]) < 0)
                    goto fail;
            }
            if (PUT_LITERAL(&b, "}") < 0) goto fail;
        }
        if (PUT_LITERAL(&b, "]") < 0) goto fail;
        PyObject *text = PyBytes_FromStringAndSize(b.p, b.len);
        if (!text) goto fail;
        PyList_SET_ITEM(out, k, text);
    }
    goto done;
fail:
    Py_CLEAR(out);
done:
    PyMem_Free(b.p);
    if (held_bounds) PyBuffer_Release(&bounds);
    for (Py_ssize_t i = 0; i < nf; i++)
        if (held_masks[i]) PyBuffer_Release(&masks[i]);
    for (int i = 0; i < held_cols; i++) PyBuffer_Release(&cols[i]);
    return out;
}

static PyMethodDef module_methods[] = {
    {"object_arrays", (PyCFunction)(void (*)(void))object_arrays, METH_FASTCALL,
     "object_arrays(prefixes, columns, masks, bounds) -> list of bytes: JSON arrays of objects "
     "of int64 columns (null where a mask is 0), one per run of rows."},
    {NULL, NULL, 0, NULL},
};

/* --------------------------------------------------------------------------- module */

static struct PyModuleDef jsontext_module = {
    PyModuleDef_HEAD_INIT, "_jsontext",
    "The jsonl lines of decoded records, printed from their slots (dump --format jsonl).", -1,
    module_methods,
};

PyMODINIT_FUNC PyInit__jsontext(void) {
    if (PyType_Ready(&PlanType) < 0 || PyType_Ready(&WriterType) < 0) return NULL;
    if (!S_bytes && !(S_bytes = PyUnicode_InternFromString("bytes"))) return NULL;
    if (!S_int && !(S_int = PyUnicode_InternFromString("int"))) return NULL;
    if (!UuidType) {
        PyObject *uuid = PyImport_ImportModule("uuid");
        PyObject *cls = uuid ? PyObject_GetAttrString(uuid, "UUID") : NULL;
        Py_XDECREF(uuid);
        if (!cls) return NULL;
        if (!PyType_Check(cls)) {
            Py_DECREF(cls);
            PyErr_SetString(PyExc_TypeError, "uuid.UUID is not a class");
            return NULL;
        }
        UuidType = (PyTypeObject *)cls; /* kept for the module's life */
    }
    PyObject *m = PyModule_Create(&jsontext_module);
    if (!m) return NULL;
    if (PyModule_AddObjectRef(m, "Plan", (PyObject *)&PlanType) < 0 ||
        PyModule_AddObjectRef(m, "Writer", (PyObject *)&WriterType) < 0 ||
        PyModule_AddIntConstant(m, "INT", K_INT) < 0 ||
        PyModule_AddIntConstant(m, "BOOL", K_BOOL) < 0 ||
        PyModule_AddIntConstant(m, "STRING", K_STRING) < 0 ||
        PyModule_AddIntConstant(m, "BYTES", K_BYTES) < 0 ||
        PyModule_AddIntConstant(m, "RECORDS", K_RECORDS) < 0 ||
        PyModule_AddIntConstant(m, "UUID", K_UUID) < 0 ||
        PyModule_AddIntConstant(m, "STRUCT", K_STRUCT) < 0 ||
        PyModule_AddIntConstant(m, "ARRAY", K_ARRAY) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
