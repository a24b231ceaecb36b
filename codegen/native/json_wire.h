/* A struct of a message printed as JSON straight from its wire bytes: no object per record.
 * Part of the _jsontext module (jsontext.c), after json_writer.h; user_wire.h prints a user
 * topic's batches with it.
 *
 * A WirePlan is one struct of a message at one version, as data: its wire layout (the ops of
 * the engine's layout table, tables.h: opcode, flags, slot, element, child) and its JSON form
 * (the fields of json_plans.h's Plan, by slot instead of by member offset). Both are built by
 * codegen/dumps/json_text.py (wire_plans) from the tables and JSON names the generated package
 * carries. A struct is read in two passes: walk() checks the bytes as the engine's interpreter
 * (interpreter.h) checks them and notes each slot's value (a number, or where its bytes are);
 * print_struct() then prints the slots in JSON order, walking nested structs again.
 *
 * walk() never raises: anything the engine would refuse (or that this printer does not know)
 * is NOT_HERE, and the batch printers of user_wire.h then ask the reference for that record's
 * text (the record loop's record, whose error says what is wrong), or return None for the
 * whole batch when it gives none. So a record printed here is exactly one the engine reads.
 */
#ifndef SPECGEN_JSON_WIRE_H
#define SPECGEN_JSON_WIRE_H

#include "table_format.h"
#include "v2_records.h"

/* The engine's limits (engine.c): what it refuses, this printer leaves to it. */
#define WIRE_MAX_STRING 0x7FFF
#define WIRE_MAX_ARRAY 1000000
#define WIRE_MAX_TAGS 10000
#define WIRE_MAX_SLOTS 64
#define WIRE_MAX_DEPTH 32

/* Tagged defaults this printer compares with (to_json prints a tagged field when it differs). */
enum { D_NONE = 0, D_INT, D_TEXT, D_EMPTY_LIST, D_UUID, D_STRUCT };

typedef struct WirePlan WirePlan;

typedef struct {
    int opcode, flags, element;
    Py_ssize_t slot;
    WirePlan *child; /* borrowed from the plan's refs */
} WOp;

typedef struct {
    int64_t tag;
    WOp op;
} WTag;

typedef struct {
    PyObject *key; /* bytes: '"name":' */
    Py_ssize_t slot;
    int kind, element, nullable, tagged;
    int dkind;       /* the tagged default's kind */
    int64_t dint;    /* D_INT */
    PyObject *dtext; /* D_TEXT, D_UUID: bytes */
} WField;

struct WirePlan {
    PyObject_HEAD
    int flexible;
    Py_ssize_t nslots, nops, ntagged, nelsewhere, nfields;
    WOp *ops;
    WTag *tagged;
    int64_t *elsewhere;
    WField *fields;
    const WOp **slot_ops; /* per slot, its op (wire or tagged), or NULL */
    PyObject *refs;       /* the child plans, kept */
};

static PyTypeObject WirePlanType;

/* One slot's value: a number (n), or where its bytes are (p, and n their length or an array's
   count); null; set (a tagged field read: else its default). */
typedef struct {
    const unsigned char *p;
    int64_t n;
    int set, null;
} SV;

static const Py_ssize_t WIRE_FIXED[] = {0, 1, 2, 4, 8, 2, 4, 8, 1, 16};

static int walk(const WirePlan *w, const unsigned char *d, Py_ssize_t len, Py_ssize_t *pos,
                SV *sv, int depth);

/* The interpreter's read_length: a compact uvarint minus one, or a big-endian int16/int32. */
static inline int wire_length(const unsigned char *d, Py_ssize_t len, Py_ssize_t *pos,
                              int compact, int width, int64_t *n) {
    Py_ssize_t o = *pos;
    if (compact) {
        int64_t u;
        if (read_varint(d, pos, len, MAX_VARINT32, &u) < 0) return NOT_HERE;
        *n = u - 1;
        return 0;
    }
    if (width > len - o) return NOT_HERE;
    *n = width == 2 ? (int64_t)(int16_t)load16(d + o) : (int64_t)(int32_t)load32(d + o);
    *pos = o + width;
    return 0;
}

/* Whether s[0:n] is UTF-8 as Python's strict decoder takes it: 1, 0, or -1 on error. */
static int utf8_ok(const unsigned char *s, Py_ssize_t n) {
    unsigned char high = 0;
    for (Py_ssize_t i = 0; i < n; i++) high |= s[i];
    if (high < 0x80) return 1;
    PyObject *text = PyUnicode_DecodeUTF8((const char *)s, n, NULL);
    if (text) {
        Py_DECREF(text);
        return 1;
    }
    if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) return -1;
    PyErr_Clear();
    return 0;
}

static Py_ssize_t wire_element_min(const WOp *op) {
    int compact = op->flags & F_COMPACT;
    switch (op->element) {
    case OP_STRUCT: return 1;
    case OP_STRING: return compact ? 1 : 2;
    case OP_BYTES: return compact ? 1 : 4;
    default: return op->element >= OP_INT8 && op->element <= OP_UUID ? WIRE_FIXED[op->element] : 0;
    }
}

static int wire_child(const WirePlan *child, const unsigned char *d, Py_ssize_t len,
                      Py_ssize_t *pos, int depth) {
    SV sv[WIRE_MAX_SLOTS];
    if (!child || depth >= WIRE_MAX_DEPTH) return NOT_HERE;
    return walk(child, d, len, pos, sv, depth + 1);
}

/* One value of op at *pos into *v: 0, NOT_HERE or -1. */
static int wire_value(const WOp *op, const unsigned char *d, Py_ssize_t len, Py_ssize_t *pos,
                      SV *v, int depth) {
    Py_ssize_t o = *pos;
    int rc;
    v->set = 1;
    v->null = 0;
    switch (op->opcode) {
    case OP_STRING:
    case OP_BYTES: {
        const int compact = op->flags & F_COMPACT, is_string = op->opcode == OP_STRING;
        int64_t n;
        if ((rc = wire_length(d, len, pos, compact, is_string ? 2 : 4, &n)) < 0) return rc;
        o = *pos;
        if (n < 0) {
            if (!(op->flags & F_NULLABLE)) return NOT_HERE;
            v->null = 1;
            return 0;
        }
        if ((is_string && compact && n > WIRE_MAX_STRING) || n > len - o) return NOT_HERE;
        if (is_string && (rc = utf8_ok(d + o, (Py_ssize_t)n)) <= 0) return rc < 0 ? -1 : NOT_HERE;
        v->p = d + o;
        v->n = n;
        *pos = o + (Py_ssize_t)n;
        return 0;
    }
    case OP_ARRAY: {
        const int compact = op->flags & F_COMPACT;
        int64_t n;
        if ((rc = wire_length(d, len, pos, compact, 4, &n)) < 0) return rc;
        o = *pos;
        if (n < 0) {
            if (!(op->flags & F_NULLABLE)) return NOT_HERE;
            v->null = 1;
            return 0;
        }
        const Py_ssize_t min = wire_element_min(op);
        if (min == 0 || n * min > len - o || n > WIRE_MAX_ARRAY) return NOT_HERE;
        v->p = d + o;
        v->n = n;
        if (op->element <= OP_UUID) {
            if (op->element == OP_FLOAT64) return NOT_HERE;
            *pos = o + (Py_ssize_t)n * min;
            return 0;
        }
        const WOp element = {op->element, compact, 0, 0, op->child};
        for (int64_t i = 0; i < n; i++) {
            SV item;
            rc = op->element == OP_STRUCT ? wire_child(op->child, d, len, pos, depth)
                                          : wire_value(&element, d, len, pos, &item, depth);
            if (rc < 0) return rc;
        }
        return 0;
    }
    case OP_STRUCT:
        if (op->flags & F_TAGGED_MARKER) {
            if (o >= len) return NOT_HERE;
            int64_t m = d[o];
            if (m < 0x80) *pos = o + 1;
            else if (read_varint(d, pos, len, MAX_VARINT32, &m) < 0) return NOT_HERE;
            const uint32_t low = (uint32_t)(m & 0xFFFFFFFF);
            if (low == 0 || low >= 0x80000000u) {
                v->null = 1;
                return 0;
            }
        } else if (op->flags & F_NULLABLE) {
            if (o >= len) return NOT_HERE;
            *pos = o + 1;
            if ((int8_t)d[o] < 0) {
                v->null = 1;
                return 0;
            }
        }
        v->p = d + *pos;
        return wire_child(op->child, d, len, pos, depth);
    default: {
        if (op->opcode < OP_INT8 || op->opcode > OP_UUID || op->opcode == OP_FLOAT64)
            return NOT_HERE;
        const Py_ssize_t size = WIRE_FIXED[op->opcode];
        if (size > len - o) return NOT_HERE;
        const unsigned char *p = d + o;
        switch (op->opcode) {
        case OP_INT8: v->n = (int8_t)p[0]; break;
        case OP_INT16: v->n = (int16_t)load16(p); break;
        case OP_INT32: v->n = (int32_t)load32(p); break;
        case OP_INT64: v->n = (int64_t)load64(p); break;
        case OP_UINT16: v->n = load16(p); break;
        case OP_UINT32: v->n = load32(p); break;
        case OP_BOOL: v->n = p[0] != 0; break;
        default: v->p = p; /* a uuid's 16 bytes */
        }
        *pos = o + size;
        return 0;
    }
    }
}

/* The tagged section of a flexible struct, as read_tagged_section reads it. */
static int walk_tags(const WirePlan *w, const unsigned char *d, Py_ssize_t len, Py_ssize_t *pos,
                     SV *sv, int depth) {
    int64_t left;
    Py_ssize_t o = *pos;
    if (o >= len) return NOT_HERE;
    if (d[o] < 0x80) {
        left = d[o];
        *pos = o + 1;
    } else if (read_varint(d, pos, len, MAX_VARINT32, &left) < 0 || left > WIRE_MAX_TAGS) {
        return NOT_HERE;
    }
    while (left-- > 0) {
        int64_t tag, size;
        if (read_varint(d, pos, len, MAX_VARINT32, &tag) < 0 ||
            read_varint(d, pos, len, MAX_VARINT32, &size) < 0)
            return NOT_HERE;
        o = *pos;
        if (size > len - o) return NOT_HERE;
        const Py_ssize_t end = o + (Py_ssize_t)size;
        const WTag *known = NULL;
        for (Py_ssize_t i = 0; i < w->ntagged; i++)
            if (w->tagged[i].tag == tag) {
                known = &w->tagged[i];
                break;
            }
        if (known) {
            Py_ssize_t p = o;
            int rc = wire_value(&known->op, d, len, &p, &sv[known->op.slot], depth);
            if (rc < 0) return rc;
            if (p != end) return NOT_HERE;
        } else {
            for (Py_ssize_t i = 0; i < w->nelsewhere; i++)
                if (w->elsewhere[i] == tag) return NOT_HERE;
            if (tag > 0x7FFFFFFF) return NOT_HERE;
        }
        *pos = end;
    }
    return 0;
}

static int walk(const WirePlan *w, const unsigned char *d, Py_ssize_t len, Py_ssize_t *pos,
                SV *sv, int depth) {
    memset(sv, 0, (size_t)w->nslots * sizeof(SV));
    for (Py_ssize_t i = 0; i < w->nops; i++) {
        int rc = wire_value(&w->ops[i], d, len, pos, &sv[w->ops[i].slot], depth);
        if (rc < 0) return rc;
    }
    return w->flexible ? walk_tags(w, d, len, pos, sv, depth) : 0;
}

/* ------------------------------------------------------------------------------- printing */

static int print_struct(Buf *b, const WirePlan *w, const unsigned char *d, Py_ssize_t len,
                        Py_ssize_t *pos, int depth);

/* Whether a tagged field read equals its default (then to_json leaves it out): 1, 0, or
   NOT_HERE (a struct read, which the reference compares with its default instance). */
static int is_default(const WField *f, const SV *v) {
    if (!v->set) return 1;
    switch (f->dkind) {
    case D_STRUCT: return v->null ? 0 : NOT_HERE;
    case D_NONE: return v->null;
    case D_INT: return !v->null && v->n == f->dint;
    case D_EMPTY_LIST: return !v->null && v->n == 0;
    case D_UUID: return !v->null && memcmp(v->p, PyBytes_AS_STRING(f->dtext), 16) == 0;
    default: /* D_TEXT */
        return !v->null && v->n == PyBytes_GET_SIZE(f->dtext) &&
               memcmp(v->p, PyBytes_AS_STRING(f->dtext), (size_t)v->n) == 0;
    }
}

/* One value of JSON kind `kind` whose wire value is v (op: the field's op, for nested
   structs and arrays). */
static int print_kind(Buf *b, int kind, const WOp *op, const SV *v, const unsigned char *d,
                      Py_ssize_t len, int depth) {
    switch (kind) {
    case K_INT: return buf_int64(b, v->n);
    case K_BOOL: return v->n ? PUT_LITERAL(b, "true") : PUT_LITERAL(b, "false");
    case K_STRING: return put_text(b, (const char *)v->p, (Py_ssize_t)v->n);
    case K_BYTES: return put_base64(b, v->p, (Py_ssize_t)v->n, B64, 1);
    case K_RECORDS: return PUT_LITERAL(b, "\"\"");
    case K_UUID: return put_base64(b, v->p, 16, B64URL, 0);
    case K_STRUCT: {
        Py_ssize_t at = v->p - d;
        return print_struct(b, op->child, d, len, &at, depth + 1);
    }
    default: return NOT_HERE;
    }
}

static int print_array(Buf *b, const WField *f, const WOp *op, const SV *v,
                       const unsigned char *d, Py_ssize_t len, int depth) {
    if (PUT_LITERAL(b, "[") < 0) return -1;
    Py_ssize_t at = v->p - d;
    const WOp element = {op->element, op->flags & F_COMPACT, 0, 0, op->child};
    for (int64_t i = 0; i < v->n; i++) {
        if (i && PUT_LITERAL(b, ",") < 0) return -1;
        int rc;
        if (op->element == OP_STRUCT) {
            rc = print_struct(b, op->child, d, len, &at, depth + 1);
        } else {
            SV item = {0};
            rc = wire_value(&element, d, len, &at, &item, depth);
            if (rc >= 0) rc = print_kind(b, f->element, &element, &item, d, len, depth);
        }
        if (rc < 0) return rc;
    }
    return PUT_LITERAL(b, "]");
}

/* The JSON of the struct w at *pos (moved past it), as to_json and orjson print it. */
static int print_struct(Buf *b, const WirePlan *w, const unsigned char *d, Py_ssize_t len,
                        Py_ssize_t *pos, int depth) {
    SV sv[WIRE_MAX_SLOTS];
    if (!w || depth >= WIRE_MAX_DEPTH) return NOT_HERE;
    int rc = walk(w, d, len, pos, sv, depth);
    if (rc < 0) return rc;
    if (PUT_LITERAL(b, "{") < 0) return -1;
    int first = 1;
    for (Py_ssize_t i = 0; i < w->nfields; i++) {
        const WField *f = &w->fields[i];
        const SV *v = &sv[f->slot];
        const WOp *op = w->slot_ops[f->slot];
        if (f->tagged) {
            const int same = is_default(f, v);
            if (same == NOT_HERE) return NOT_HERE;
            if (same) continue;
        }
        if (!first && PUT_LITERAL(b, ",") < 0) return -1;
        first = 0;
        if (buf_put(b, PyBytes_AS_STRING(f->key), PyBytes_GET_SIZE(f->key)) < 0) return -1;
        if (v->null) {
            if (!f->nullable) return NOT_HERE;
            rc = PUT_LITERAL(b, "null");
        } else if (f->kind == K_ARRAY) {
            rc = print_array(b, f, op, v, d, len, depth);
        } else {
            rc = print_kind(b, f->kind, op, v, d, len, depth);
        }
        if (rc < 0) return rc;
    }
    return PUT_LITERAL(b, "}");
}

/* ------------------------------------------------------------------------------- WirePlan */

static void WirePlan_dealloc(WirePlan *w) {
    PyObject_GC_UnTrack(w);
    for (Py_ssize_t i = 0; w->fields && i < w->nfields; i++) {
        Py_XDECREF(w->fields[i].key);
        Py_XDECREF(w->fields[i].dtext);
    }
    PyMem_Free(w->ops);
    PyMem_Free(w->tagged);
    PyMem_Free(w->elsewhere);
    PyMem_Free(w->fields);
    PyMem_Free((void *)w->slot_ops);
    Py_XDECREF(w->refs);
    Py_TYPE(w)->tp_free((PyObject *)w);
}

static int WirePlan_traverse(WirePlan *w, visitproc visit, void *arg) {
    Py_VISIT(w->refs);
    return 0;
}

/* An op tuple (opcode, flags, slot, element, child) into *op; the child kept in refs. */
static int wire_op(PyObject *spec, WOp *op, Py_ssize_t nslots, PyObject *refs) {
    PyObject *child;
    if (!PyArg_ParseTuple(spec, "iiniO:WirePlan op", &op->opcode, &op->flags, &op->slot,
                          &op->element, &child))
        return -1;
    const int shape = op->opcode == OP_ARRAY ? op->element : op->opcode;
    if (op->slot < 0 || op->slot >= nslots || shape < OP_INT8 || shape > OP_STRUCT ||
        (op->opcode == OP_ARRAY && shape == OP_ARRAY) ||
        (shape == OP_STRUCT) != (child != Py_None) ||
        (child != Py_None && !PyObject_TypeCheck(child, &WirePlanType))) {
        PyErr_Format(PyExc_ValueError, "WirePlan: op %R does not fit", spec);
        return -1;
    }
    op->child = child == Py_None ? NULL : (WirePlan *)child;
    return child == Py_None ? 0 : PyList_Append(refs, child);
}

/* WirePlan(flexible, nslots, ops, tagged, elsewhere, fields): ops a tuple of (opcode, flags,
   slot, element, child), tagged of (tag, op), elsewhere of tags, fields of (key, slot, kind,
   element, nullable, tagged, default_kind, default), as codegen/dumps/json_text.py makes
   them. */
static PyObject *WirePlan_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    int flexible;
    Py_ssize_t nslots;
    PyObject *ops, *tagged, *elsewhere, *fields;
    if ((kwargs && PyDict_GET_SIZE(kwargs)) ||
        !PyArg_ParseTuple(args, "pnO!O!O!O!:WirePlan", &flexible, &nslots, &PyTuple_Type, &ops,
                          &PyTuple_Type, &tagged, &PyTuple_Type, &elsewhere, &PyTuple_Type,
                          &fields)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "WirePlan takes no keywords");
        return NULL;
    }
    if (nslots < 0 || nslots > WIRE_MAX_SLOTS) {
        PyErr_Format(PyExc_ValueError, "WirePlan: %zd slots (at most %d)", nslots,
                     WIRE_MAX_SLOTS);
        return NULL;
    }
    WirePlan *w = (WirePlan *)type->tp_alloc(type, 0);
    if (!w) return NULL;
    w->flexible = flexible;
    w->nslots = nslots;
    w->nops = PyTuple_GET_SIZE(ops);
    w->ntagged = PyTuple_GET_SIZE(tagged);
    w->nelsewhere = PyTuple_GET_SIZE(elsewhere);
    w->nfields = PyTuple_GET_SIZE(fields);
    w->refs = PyList_New(0);
    w->ops = PyMem_Calloc((size_t)w->nops + 1, sizeof(WOp));
    w->tagged = PyMem_Calloc((size_t)w->ntagged + 1, sizeof(WTag));
    w->elsewhere = PyMem_Calloc((size_t)w->nelsewhere + 1, sizeof(int64_t));
    w->fields = PyMem_Calloc((size_t)w->nfields + 1, sizeof(WField));
    w->slot_ops = PyMem_Calloc((size_t)nslots + 1, sizeof(WOp *));
    if (!w->refs || !w->ops || !w->tagged || !w->elsewhere || !w->fields || !w->slot_ops) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < w->nops; i++) {
        if (wire_op(PyTuple_GET_ITEM(ops, i), &w->ops[i], nslots, w->refs) < 0) goto fail;
        w->slot_ops[w->ops[i].slot] = &w->ops[i];
    }
    for (Py_ssize_t i = 0; i < w->ntagged; i++) {
        PyObject *op;
        long long tag;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(tagged, i), "LO!:WirePlan tagged", &tag,
                              &PyTuple_Type, &op) ||
            wire_op(op, &w->tagged[i].op, nslots, w->refs) < 0)
            goto fail;
        w->tagged[i].tag = tag;
        w->slot_ops[w->tagged[i].op.slot] = &w->tagged[i].op;
    }
    for (Py_ssize_t i = 0; i < w->nelsewhere; i++) {
        long long tag = PyLong_AsLongLong(PyTuple_GET_ITEM(elsewhere, i));
        if (tag == -1 && PyErr_Occurred()) goto fail;
        w->elsewhere[i] = tag;
    }
    for (Py_ssize_t i = 0; i < w->nfields; i++) {
        WField *f = &w->fields[i];
        PyObject *key, *dflt;
        long long dint = 0;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(fields, i), "O!niippiO:WirePlan field",
                              &PyBytes_Type, &key, &f->slot, &f->kind, &f->element, &f->nullable,
                              &f->tagged, &f->dkind, &dflt))
            goto fail;
        f->key = Py_NewRef(key);
        const WOp *op = f->slot >= 0 && f->slot < nslots ? w->slot_ops[f->slot] : NULL;
        int fits = op != NULL && f->kind >= K_INT && f->kind < K_LAST &&
                   (f->kind == K_ARRAY) == (op->opcode == OP_ARRAY) &&
                   (f->kind == K_STRUCT) == (op->opcode == OP_STRUCT) &&
                   (f->kind != K_ARRAY || (f->element >= K_INT && f->element < K_ARRAY &&
                                           (f->element == K_STRUCT) == (op->element == OP_STRUCT)));
        if (fits && f->tagged) {
            switch (f->dkind) {
            case D_NONE: break;
            case D_INT:
                dint = PyLong_AsLongLong(dflt);
                if (dint == -1 && PyErr_Occurred()) goto fail;
                f->dint = dint;
                break;
            case D_EMPTY_LIST: fits = f->kind == K_ARRAY; break;
            case D_STRUCT: fits = f->kind == K_STRUCT; break;
            case D_TEXT:
            case D_UUID:
                fits = PyBytes_CheckExact(dflt) && (f->dkind == D_TEXT || PyBytes_GET_SIZE(dflt) == 16);
                if (fits) f->dtext = Py_NewRef(dflt);
                break;
            default: fits = 0;
            }
        }
        if (!fits) {
            PyErr_Format(PyExc_ValueError, "WirePlan: field %R does not fit its op",
                         PyTuple_GET_ITEM(fields, i));
            goto fail;
        }
    }
    return (PyObject *)w; /* tracked by tp_alloc */
fail:
    Py_DECREF(w);
    return NULL;
}

/* WirePlan.dumps(data, start=0) -> bytes | None: the JSON of the struct at data[start:], which
   must end exactly at the end of data; None where the engine would refuse it (or this printer
   does not print it). */
static PyObject *WirePlan_dumps(WirePlan *w, PyObject *args) {
    Py_buffer view;
    Py_ssize_t start = 0;
    if (!PyArg_ParseTuple(args, "y*|n:dumps", &view, &start)) return NULL;
    Buf b = {NULL, 0, 0, NULL};
    PyObject *out = NULL;
    Py_ssize_t pos = start;
    int rc = start < 0 || start > view.len
                 ? NOT_HERE
                 : print_struct(&b, w, view.buf, view.len, &pos, 0);
    if (rc == 0 && pos == view.len)
        out = PyBytes_FromStringAndSize(b.p, b.len);
    else if (rc >= 0 || rc == NOT_HERE)
        out = Py_NewRef(Py_None);
    PyMem_Free(b.p);
    PyBuffer_Release(&view);
    return out;
}

static PyMethodDef WirePlan_methods[] = {
    {"dumps", (PyCFunction)WirePlan_dumps, METH_VARARGS,
     "dumps(data, start=0) -> bytes | None: the JSON of the struct in data[start:] (which it "
     "must fill), or None where the engine refuses it or the reference prints it"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject WirePlanType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "codegen.native._jsontext.WirePlan",
    .tp_basicsize = sizeof(WirePlan),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "WirePlan(flexible, nslots, ops, tagged, elsewhere, fields): one struct at one "
              "version, read and printed from its bytes",
    .tp_new = WirePlan_new,
    .tp_dealloc = (destructor)WirePlan_dealloc,
    .tp_traverse = (traverseproc)WirePlan_traverse,
    .tp_methods = WirePlan_methods,
};


#endif
