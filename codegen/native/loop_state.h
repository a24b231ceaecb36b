/* The record loop's object and what its two modes share (part of the _records module,
 * records.c): DecodedRecord's slots, the Loop object with its key cache, a record's allocation,
 * the slow path, and the engine's errors the fast path turns into it. The coordinator mode
 * (record_loop.h) and the user-topic mode (user_loop.h) are built on it.
 */
#ifndef SPECGEN_LOOP_STATE_H
#define SPECGEN_LOOP_STATE_H

#include "log_entries.h"

/* DecodedRecord's fields, in declaration order (its __slots__). */
enum {
    F_OFFSET, F_TIMESTAMP, F_KIND, F_RECORD_TYPE, F_NAME, F_KEY, F_VALUE, F_VALUE_VERSION,
    F_KEY_BYTES, F_VALUE_BYTES, F_NEWER_THAN_SPEC, F_ERROR, F_NOTE, F_MEMBERS, N_FIELDS,
};
static const char *const FIELD_NAMES[N_FIELDS] = {
    "offset", "timestamp", "kind", "record_type", "name", "key", "value", "value_version",
    "key_bytes", "value_bytes", "newer_than_spec", "error", "note", "members",
};

/* The pure loop's key cache is cleared before a batch when it holds more keys than this. */
#define KEY_CACHE_SIZE (1 << 16)

/* Open addressing with linear probing, keyed by the key's bytes (hashed as bytes objects are,
   with the interpreter's keyed hash, so crafted keys cannot make every lookup collide). */
typedef struct {
    Py_hash_t hash;
    PyObject *key;   /* bytes, owned; NULL: empty */
    PyObject *known; /* (key, type_id, name, key_obj, readers), owned */
} Entry;

/* A user topic's mode of the loop (user_loop.h). */
typedef struct UserMode UserMode;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyTypeObject *record_cls;
    Py_ssize_t offsets[N_FIELDS];
    PyObject *new_key, *slow, *record_kind, *tombstone_kind;
    Entry *entries;
    Py_ssize_t mask; /* capacity - 1; capacity is a power of two */
    Py_ssize_t used;
    Py_ssize_t with_headers; /* records with headers in the last batch read */
    UserMode *user;          /* a user topic's sides (user_loop.h), or NULL */
} Loop;

static void cache_clear(Loop *L) {
    if (!L->entries) return;
    for (Py_ssize_t i = 0; i <= L->mask; i++) {
        Py_CLEAR(L->entries[i].key);
        Py_CLEAR(L->entries[i].known);
    }
    PyMem_Free(L->entries);
    L->entries = NULL;
    L->mask = -1;
    L->used = 0;
}

/* The cached (key, ...) tuple for these bytes, borrowed, or NULL. */
static inline PyObject *cache_get(Loop *L, const char *key, Py_ssize_t len, Py_hash_t hash) {
    if (!L->entries) return NULL;
    for (Py_ssize_t i = (size_t)hash & L->mask;; i = (i + 1) & L->mask) {
        Entry *e = &L->entries[i];
        if (!e->key) return NULL;
        if (e->hash == hash && PyBytes_GET_SIZE(e->key) == len &&
            memcmp(PyBytes_AS_STRING(e->key), key, len) == 0)
            return e->known;
    }
}

static void cache_place(Entry *entries, Py_ssize_t mask, Py_hash_t hash, PyObject *key,
                        PyObject *known) {
    Py_ssize_t i = (size_t)hash & mask;
    while (entries[i].key) i = (i + 1) & mask;
    entries[i].hash = hash;
    entries[i].key = key;
    entries[i].known = known;
}

/* Store a new key (not in the cache); the table stays at most half full. */
static int cache_put(Loop *L, PyObject *key, Py_hash_t hash, PyObject *known) {
    if ((L->used + 1) * 2 > L->mask + 1) {
        Py_ssize_t capacity = L->entries ? (L->mask + 1) * 2 : 1024;
        Entry *grown = PyMem_Calloc(capacity, sizeof(Entry));
        if (!grown) {
            PyErr_NoMemory();
            return -1;
        }
        for (Py_ssize_t i = 0; L->entries && i <= L->mask; i++)
            if (L->entries[i].key)
                cache_place(grown, capacity - 1, L->entries[i].hash, L->entries[i].key,
                            L->entries[i].known);
        PyMem_Free(L->entries);
        L->entries = grown;
        L->mask = capacity - 1;
    }
    Py_INCREF(key);
    Py_INCREF(known);
    cache_place(L->entries, L->mask, hash, key, known);
    L->used++;
    return 0;
}

/* a + b as a Python int; a_obj is a when given (it is then returned, new reference, for b = 0). */
static inline PyObject *sum(int64_t a, int64_t b, PyObject *a_obj) {
    if (b == 0 && a_obj) {
        Py_INCREF(a_obj);
        return a_obj;
    }
    int64_t total;
    if (LIKELY(!__builtin_add_overflow(a, b, &total))) return PyLong_FromLongLong(total);
    PyObject *x = PyLong_FromLongLong(a), *y = PyLong_FromLongLong(b);
    PyObject *r = (x && y) ? PyNumber_Add(x, y) : NULL;
    Py_XDECREF(x);
    Py_XDECREF(y);
    return r;
}

static inline void set_slot(PyObject *obj, Py_ssize_t offset, PyObject *value) {
    *(PyObject **)((char *)obj + offset) = value;
}

/* A DecodedRecord without error, note or members. Steals offset, ts, value and value_bytes
   (value_bytes may be NULL: None); borrows the rest. NULL on failure (the stolen released). */
static PyObject *new_record(Loop *L, PyObject *offset, PyObject *ts, PyObject *kind,
                            PyObject *type_id, PyObject *name, PyObject *key_obj, PyObject *value,
                            PyObject *version, PyObject *key_bytes, PyObject *value_bytes) {
    PyObject *rec = L->record_cls->tp_alloc(L->record_cls, 0);
    if (UNLIKELY(!rec)) {
        Py_DECREF(offset);
        Py_DECREF(ts);
        Py_DECREF(value);
        Py_XDECREF(value_bytes);
        return NULL;
    }
    const Py_ssize_t *o = L->offsets;
    set_slot(rec, o[F_OFFSET], offset);
    set_slot(rec, o[F_TIMESTAMP], ts);
    set_slot(rec, o[F_KIND], Py_NewRef(kind));
    set_slot(rec, o[F_RECORD_TYPE], Py_NewRef(type_id));
    set_slot(rec, o[F_NAME], Py_NewRef(name));
    set_slot(rec, o[F_KEY], Py_NewRef(key_obj));
    set_slot(rec, o[F_VALUE], value);
    set_slot(rec, o[F_VALUE_VERSION], Py_NewRef(version));
    set_slot(rec, o[F_KEY_BYTES], Py_NewRef(key_bytes));
    set_slot(rec, o[F_VALUE_BYTES], value_bytes ? value_bytes : Py_NewRef(Py_None));
    set_slot(rec, o[F_NEWER_THAN_SPEC], Py_NewRef(Py_False));
    set_slot(rec, o[F_ERROR], Py_NewRef(Py_None));
    set_slot(rec, o[F_NOTE], Py_NewRef(Py_None));
    set_slot(rec, o[F_MEMBERS], Py_NewRef(Py_None));
    return rec;
}

/* slow(key, value, offset, ts); borrows everything (key and value may be NULL: None). */
static PyObject *call_slow(Loop *L, PyObject *key, PyObject *value, PyObject *offset,
                           PyObject *ts) {
    PyObject *args[5] = {NULL, key ? key : Py_None, value ? value : Py_None, offset, ts};
    return PyObject_Vectorcall(L->slow, args + 1, 4 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
}

/* The engine's C API (shared.h): its readers read from raw memory without building the
   (obj, end) tuple. NULL when the engine is not built: every reader is called. */
static const EngineCAPI *Engine;

/* codegen.runtime.errors.DecodeError, set as the module loads. */
static PyObject *DecodeError;

/* True (and the error cleared) when the pending error is what the pure loop's
   `except (LookupError, DecodeError)` turns into the slow path: a key or value that is not the
   common case, or bytes the codec refuses. Anything else is a bug, and propagates. */
static int caught(void) {
    if (!PyErr_ExceptionMatches(PyExc_LookupError) &&
        !(DecodeError && PyErr_ExceptionMatches(DecodeError)))
        return 0;
    PyErr_Clear();
    return 1;
}

#endif /* SPECGEN_LOOP_STATE_H */
