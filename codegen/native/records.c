/* The record loop of the coordinator dump decoder, in C.
 *
 * RecordLoop(record_class, new_key, slow, record_kind, tombstone_kind) is built once per
 * CoordinatorDecoder (codegen/dumps/coordinator.py); calling it with the (decompressed) record
 * bytes of one v2 data batch does what CoordinatorDecoder._decode_v2_well_formed does:
 *
 * - it first parses every record (varint lengths, attributes, timestamp and offset deltas,
 *   key, value, headers), each length checked against the record's bounds before use, and
 *   raises MalformedRecords on the first one that does not parse exactly, as the pure loop
 *   raises _Malformed: the caller then hands the batch to the reference parser, whose error it
 *   reports. No reader runs for such a batch. (The parse keeps a Parsed, 72 bytes, per record
 *   of the count given, which loop and add_v2 check against the bytes given, one per record:
 *   so up to 72 bytes per byte of records; add_entries checks 7 bytes per record, the least a
 *   record takes, so up to about 10 there.)
 * - then, record by record:
 *   - a known key (its record type decodes it exactly: new_key(key) returns
 *     (key, type_id, name, key_obj, readers, newer_readers)) is decoded once and cached by
 *     its bytes;
 *   - a value with a version < 256 whose reader (readers[version], any callable with the
 *     reader(buf, offset) -> (obj, end) signature, called with vectorcall) reads it exactly
 *     becomes a "record"; a null value a "tombstone"; a version newer than the specs (no
 *     reader in readers, one in newer_readers: the newest flexible version's) a "record"
 *     newer_than_spec;
 *   - everything else is slow(key, value, offset, timestamp): CoordinatorDecoder.decode.
 *
 * DecodedRecord objects are allocated with tp_alloc and their slots written at the offsets of
 * their member descriptors, checked when the loop is built.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#include "shared.h"

#if defined(__GNUC__)
#define COLD __attribute__((cold, noinline))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define COLD
#define LIKELY(x) (x)
#define UNLIKELY(x) (x)
#endif

#if PY_VERSION_HEX >= 0x030E0000
#define HASH_BYTES Py_HashBuffer
#else
#define HASH_BYTES _Py_HashBytes
#endif

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
#define MAX_VARINT32 5
#define MAX_VARINT64 10

static PyObject *MalformedRecords, *Two, *MinusOne;

/* --------------------------------------------------------------------------- key cache */

/* Open addressing with linear probing, keyed by the key's bytes (hashed as bytes objects are,
   with the interpreter's keyed hash, so crafted keys cannot make every lookup collide). */
typedef struct {
    Py_hash_t hash;
    PyObject *key;   /* bytes, owned; NULL: empty */
    PyObject *known; /* (key, type_id, name, key_obj, readers), owned */
} Entry;

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

/* --------------------------------------------------------------------------- varints */

/* An unsigned varint of at most max_bytes bytes in d[*pos:limit]; -1 when it runs past limit
   or is longer (codegen/dumps/varints.py: read_zigzag32 / read_zigzag64 before the zig-zag). */
static inline int read_unsigned(const unsigned char *d, Py_ssize_t *pos, Py_ssize_t limit,
                                int max_bytes, uint64_t *out) {
    Py_ssize_t p = *pos;
    if (LIKELY(p < limit && d[p] < 0x80)) {
        *out = d[p];
        *pos = p + 1;
        return 0;
    }
    uint64_t result = 0;
    for (int i = 0; i < max_bytes; i++, p++) {
        if (p >= limit) return -1;
        unsigned char b = d[p];
        result |= (uint64_t)(b & 0x7F) << (7 * i);
        if (b < 0x80) {
            *out = result;
            *pos = p + 1;
            return 0;
        }
    }
    return -1;
}

static inline int read_zigzag32(const unsigned char *d, Py_ssize_t *pos, Py_ssize_t limit,
                                int64_t *out) {
    uint64_t u;
    if (read_unsigned(d, pos, limit, MAX_VARINT32, &u) < 0) return -1;
    u &= 0xFFFFFFFFu;
    *out = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
    return 0;
}

static inline int read_zigzag64(const unsigned char *d, Py_ssize_t *pos, Py_ssize_t limit,
                                int64_t *out) {
    uint64_t u;
    if (read_unsigned(d, pos, limit, MAX_VARINT64, &u) < 0) return -1;
    *out = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
    return 0;
}

/* A length-prefixed field (key, value, header key or value) in d[*pos:limit]: -1 when
   malformed, else 0 with *len the length (-1: null, allowed only when nullable). */
static inline int read_length(const unsigned char *d, Py_ssize_t *pos, Py_ssize_t limit,
                              int nullable, int64_t *len) {
    if (read_zigzag32(d, pos, limit, len) < 0) return -1;
    if (*len >= 0) {
        if (*len > limit - *pos) return -1;
        *pos += *len;
        return 0;
    }
    return (*len == -1 && nullable) ? 0 : -1;
}

/* --------------------------------------------------------------------------- records */

static COLD PyObject *malformed(Py_ssize_t index, Py_ssize_t pos, const char *what) {
    PyErr_Format(MalformedRecords, "record %zd at byte %zd: %s", index, pos, what);
    return NULL;
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

/* True (and the error cleared) when the pending error is an Exception, which the pure loop's
   `except Exception` turns into the slow path; other errors propagate. */
static int caught(void) {
    if (!PyErr_ExceptionMatches(PyExc_Exception)) return 0;
    PyErr_Clear();
    return 1;
}

/* The known-key tuple for the key bytes d[start:start+len], borrowed; NULL with *failed = 0
   when new_key rejected the key (*key_obj then holds the new key bytes to pass on), NULL with
   *failed = 1 on a real error. */
static PyObject *known_key(Loop *L, const unsigned char *key, Py_ssize_t len, Py_hash_t hash,
                           PyObject **key_obj, int *failed) {
    PyObject *known = cache_get(L, (const char *)key, len, hash);
    if (LIKELY(known != NULL)) return known;
    *key_obj = PyBytes_FromStringAndSize((const char *)key, len);
    if (!*key_obj) {
        *failed = 1;
        return NULL;
    }
    known = PyObject_CallOneArg(L->new_key, *key_obj);
    if (!known) {
        *failed = !caught();
        return NULL;
    }
    if (!PyTuple_CheckExact(known) || PyTuple_GET_SIZE(known) != 6 ||
        !PyBytes_CheckExact(PyTuple_GET_ITEM(known, 0)) ||
        !PyTuple_CheckExact(PyTuple_GET_ITEM(known, 4)) ||
        !PyTuple_CheckExact(PyTuple_GET_ITEM(known, 5))) {
        PyErr_Format(PyExc_TypeError,
                     "new_key must return (key, type_id, name, key_obj, readers, newer_readers), "
                     "not %R",
                     known);
        Py_DECREF(known);
        *failed = 1;
        return NULL;
    }
    int rc = cache_put(L, PyTuple_GET_ITEM(known, 0), hash, known);
    Py_DECREF(known); /* the cache holds it */
    if (rc < 0) {
        *failed = 1;
        return NULL;
    }
    return known;
}

/* One record's fields, found by the first pass over a batch. */
typedef struct {
    const unsigned char *key, *value;
    const unsigned char *headers; /* the first header, after the count (checked) */
    int64_t key_len, value_len, ts_delta, off_delta, n_headers;
    Py_hash_t key_hash;
} Parsed;

/* The decoded record of one parsed record (new reference), or NULL on error. */
static PyObject *decode_one(Loop *L, const Parsed *r, PyObject *offset, PyObject *ts) {
    const unsigned char *key = r->key, *value = r->value;
    const int64_t key_len = r->key_len, value_len = r->value_len;
    PyObject *key_obj = NULL, *value_obj = NULL, *out = NULL;
    PyObject *known = NULL;
    if (key_len >= 0) {
        int failed = 0;
        known = known_key(L, key, (Py_ssize_t)key_len, r->key_hash, &key_obj, &failed);
        if (!known && failed) goto done;
        /* Held while readers run Python code, which may let another thread clear the cache. */
        Py_XINCREF(known);
    }
    if (value_len >= 0) {
        value_obj = PyBytes_FromStringAndSize((const char *)value, (Py_ssize_t)value_len);
        if (!value_obj) goto done;
    }
    if (!known) goto slow;
    PyObject *cached_key = PyTuple_GET_ITEM(known, 0), *type_id = PyTuple_GET_ITEM(known, 1),
             *name = PyTuple_GET_ITEM(known, 2), *decoded_key = PyTuple_GET_ITEM(known, 3),
             *readers = PyTuple_GET_ITEM(known, 4), *newer_readers = PyTuple_GET_ITEM(known, 5);
    Py_XSETREF(key_obj, Py_NewRef(cached_key));
    if (!value_obj) {
        Py_INCREF(offset);
        Py_INCREF(ts);
        out = new_record(L, offset, ts, L->tombstone_kind, type_id, name, decoded_key,
                         Py_NewRef(Py_None), MinusOne, cached_key, NULL);
        goto done;
    }
    /* A version of 256 or more or negative, or no reader for it: the slow path. A version
       newer than the specs is read by newer_readers[version] (the newest flexible one's). */
    if (value_len < 2 || value[0] != 0) goto slow;
    PyObject *reader = value[1] < PyTuple_GET_SIZE(readers) ? PyTuple_GET_ITEM(readers, value[1])
                                                            : Py_None;
    int newer = 0;
    if (reader == Py_None) {
        if (value[1] >= PyTuple_GET_SIZE(newer_readers)) goto slow;
        reader = PyTuple_GET_ITEM(newer_readers, value[1]);
        if (reader == Py_None) goto slow;
        newer = 1;
    }
    PyObject *decoded_value;
    if (Engine && Py_TYPE(reader) == Engine->reader_type) {
        /* The engine's reader, straight from the record's bytes. */
        Py_ssize_t end = 2;
        decoded_value = Engine->read(reader, value, (Py_ssize_t)value_len, &end);
        if (!decoded_value) {
            if (caught()) goto slow;
            goto done;
        }
        if (end != value_len) {
            Py_DECREF(decoded_value);
            goto slow;
        }
    } else {
        PyObject *args[3] = {NULL, value_obj, Two};
        PyObject *result =
            PyObject_Vectorcall(reader, args + 1, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
        if (!result) {
            if (caught()) goto slow;
            goto done;
        }
        if (!PyTuple_CheckExact(result) || PyTuple_GET_SIZE(result) != 2 ||
            !PyLong_CheckExact(PyTuple_GET_ITEM(result, 1))) {
            Py_DECREF(result);
            goto slow;
        }
        Py_ssize_t end = PyLong_AsSsize_t(PyTuple_GET_ITEM(result, 1));
        if (end != value_len) {
            Py_DECREF(result);
            if (end == -1 && PyErr_Occurred() && !caught()) goto done;
            goto slow;
        }
        decoded_value = Py_NewRef(PyTuple_GET_ITEM(result, 0));
        Py_DECREF(result);
    }
    PyObject *version = PyLong_FromLong(value[1]);
    if (!version) {
        Py_DECREF(decoded_value);
        goto done;
    }
    Py_INCREF(offset);
    Py_INCREF(ts);
    out = new_record(L, offset, ts, L->record_kind, type_id, name, decoded_key, decoded_value,
                     version, cached_key, value_obj);
    value_obj = NULL; /* stolen */
    Py_DECREF(version);
    if (out && newer) {
        PyObject **flag = (PyObject **)((char *)out + L->offsets[F_NEWER_THAN_SPEC]);
        Py_SETREF(*flag, Py_NewRef(Py_True));
    }
    goto done;
slow:
    out = call_slow(L, key_obj, value_obj, offset, ts);
done:
    Py_XDECREF(known);
    Py_XDECREF(key_obj);
    Py_XDECREF(value_obj);
    return out;
}

static int as_int64(PyObject *o, int64_t *out) {
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred()) return -1;
    *out = (int64_t)v;
    return 0;
}

/* Parse the count records of d[pos:end] into recs: 0, or -1 with MalformedRecords set.
   hash_keys: fill key_hash (the decoding loop's cache needs it; the columnar loop does not). */
static int parse(const unsigned char *d, Py_ssize_t pos, Py_ssize_t end,
                 Py_ssize_t count, Parsed *recs, int hash_keys) {
    for (Py_ssize_t i = 0; i < count; i++) {
        Parsed *r = &recs[i];
        int64_t size, n_headers, n;
        const Py_ssize_t rec_start = pos;
        Py_ssize_t p = pos;
        if (read_zigzag32(d, &p, end, &size) < 0 || size < 0 || size > end - p) {
            malformed(i, rec_start, "invalid record size");
            return -1;
        }
        const Py_ssize_t rec_end = p + (Py_ssize_t)size;
        pos = rec_end;
        if (p >= rec_end) goto malformed_record; /* the attributes byte */
        p++;
        if (read_zigzag64(d, &p, rec_end, &r->ts_delta) < 0 ||
            read_zigzag32(d, &p, rec_end, &r->off_delta) < 0)
            goto malformed_record;
        r->key = d + p;
        if (read_length(d, &p, rec_end, 1, &r->key_len) < 0) goto malformed_record;
        if (r->key_len >= 0) {
            r->key = d + p - r->key_len;
            if (hash_keys) r->key_hash = HASH_BYTES(r->key, (Py_ssize_t)r->key_len);
        }
        r->value = d + p;
        if (read_length(d, &p, rec_end, 1, &r->value_len) < 0) goto malformed_record;
        if (r->value_len >= 0) r->value = d + p - r->value_len;
        /* Headers are checked, and where they start kept for the columnar loop. Each takes
           two bytes or more, so a count above half the bytes left cannot fit (read_headers
           says so too). */
        if (read_zigzag32(d, &p, rec_end, &n_headers) < 0 || n_headers < 0 ||
            n_headers > (rec_end - p) / 2)
            goto malformed_record;
        r->n_headers = n_headers;
        r->headers = d + p;
        for (int64_t h = 0; h < n_headers; h++)
            if (read_length(d, &p, rec_end, 0, &n) < 0 || read_length(d, &p, rec_end, 1, &n) < 0)
                goto malformed_record;
        if (p != rec_end) goto malformed_record;
        continue;
    malformed_record:
        malformed(i, rec_start, "its fields do not fill its size exactly");
        return -1;
    }
    if (pos != end) {
        malformed(count, pos, "bytes left after the last record");
        return -1;
    }
    return 0;
}

/* The records of d[pos:end], count of them: a list, or NULL with MalformedRecords (or another
   error) set. The whole batch is parsed before any reader runs. */
static PyObject *run(Loop *L, const unsigned char *d, Py_ssize_t pos, Py_ssize_t end,
                     Py_ssize_t count, int64_t base_offset, PyObject *base_offset_obj,
                     int64_t base_ts, PyObject *base_ts_obj, PyObject *append_ts_obj) {
    Parsed *recs = PyMem_Malloc((count ? count : 1) * sizeof(Parsed));
    if (!recs) return PyErr_NoMemory();
    PyObject *out = NULL;
    L->with_headers = 0;
    if (parse(d, pos, end, count, recs, 1) < 0) goto done;
    for (Py_ssize_t i = 0; i < count; i++) L->with_headers += recs[i].n_headers > 0;
    out = PyList_New(count);
    if (!out) goto done;
    for (Py_ssize_t i = 0; i < count; i++) {
        const Parsed *r = &recs[i];
        PyObject *offset = sum(base_offset, r->off_delta, base_offset_obj);
        PyObject *ts = append_ts_obj ? Py_NewRef(append_ts_obj)
                                     : sum(base_ts, r->ts_delta, base_ts_obj);
        PyObject *rec = (offset && ts) ? decode_one(L, r, offset, ts) : NULL;
        Py_XDECREF(offset);
        Py_XDECREF(ts);
        if (!rec) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, i, rec);
    }
done:
    PyMem_Free(recs);
    return out;
}

/* loop(data, start, end, count, base_offset, base_timestamp, log_append, append_timestamp) */
static PyObject *Loop_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                 PyObject *kwnames) {
    Loop *L = (Loop *)self;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if ((kwnames && PyTuple_GET_SIZE(kwnames)) || nargs != 8) {
        PyErr_SetString(PyExc_TypeError,
                        "loop(data, start, end, count, base_offset, base_timestamp, log_append, "
                        "append_timestamp) takes 8 positional arguments");
        return NULL;
    }
    if (!L->slow) {
        PyErr_SetString(PyExc_RuntimeError, "this record loop has been cleared");
        return NULL;
    }
    Py_ssize_t start = PyLong_AsSsize_t(args[1]);
    Py_ssize_t end = start == -1 && PyErr_Occurred() ? -1 : PyLong_AsSsize_t(args[2]);
    Py_ssize_t count = end == -1 && PyErr_Occurred() ? -1 : PyLong_AsSsize_t(args[3]);
    if (count == -1 && PyErr_Occurred()) return NULL;
    if (!PyLong_CheckExact(args[4]) || !PyLong_CheckExact(args[5]) ||
        !PyLong_CheckExact(args[7])) {
        PyErr_SetString(PyExc_TypeError, "the base offset and timestamps must be ints");
        return NULL;
    }
    int64_t base_offset, base_ts;
    if (as_int64(args[4], &base_offset) < 0 || as_int64(args[5], &base_ts) < 0) return NULL;
    int log_append = PyObject_IsTrue(args[6]);
    if (log_append < 0) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *out = NULL;
    /* Every record takes one byte or more, so count is bounded by the bytes given. */
    if (start < 0 || end < start || end > view.len || count < 0 || count > end - start) {
        PyErr_Format(PyExc_ValueError,
                     "bad bounds: start %zd, end %zd, count %zd for %zd bytes", start, end, count,
                     view.len);
    } else {
        if (L->used > KEY_CACHE_SIZE) cache_clear(L);
        out = run(L, (const unsigned char *)view.buf, start, end, count, base_offset, args[4],
                  base_ts, args[5], log_append ? args[7] : NULL);
    }
    PyBuffer_Release(&view);
    return out;
}

/* --------------------------------------------------------------------------- the type */

/* record_class must be the slotted DecodedRecord: exactly FIELD_NAMES as its __slots__. */
static int check_record_class(Loop *L, PyObject *cls) {
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "record_class must be a class");
        return -1;
    }
    PyTypeObject *type = (PyTypeObject *)cls;
    PyObject *slots = direct_slots(type, N_FIELDS);
    int ok = slots != NULL;
    for (int i = 0; ok && i < N_FIELDS; i++) {
        PyObject *name = PyTuple_GET_ITEM(slots, i);
        ok = PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, FIELD_NAMES[i]) == 0;
        L->offsets[i] = ok ? member_offset(type, name) : -1;
        ok = ok && L->offsets[i] >= 0;
    }
    if (PyErr_Occurred()) return -1;
    if (!ok) {
        PyErr_Format(PyExc_TypeError,
                     "%R is not the slotted DecodedRecord this loop was written for (its "
                     "__slots__ must be %s, ... %s): update codegen/native/records.c with it",
                     cls, FIELD_NAMES[0], FIELD_NAMES[N_FIELDS - 1]);
        return -1;
    }
    return 0;
}

static int Loop_traverse(Loop *L, visitproc visit, void *arg) {
    Py_VISIT(L->record_cls);
    Py_VISIT(L->new_key);
    Py_VISIT(L->slow);
    for (Py_ssize_t i = 0; L->entries && i <= L->mask; i++) Py_VISIT(L->entries[i].known);
    return 0;
}

static int Loop_clear(Loop *L) {
    Py_CLEAR(L->record_cls);
    Py_CLEAR(L->new_key);
    Py_CLEAR(L->slow);
    Py_CLEAR(L->record_kind);
    Py_CLEAR(L->tombstone_kind);
    cache_clear(L);
    return 0;
}

static void Loop_dealloc(Loop *L) {
    PyObject_GC_UnTrack(L);
    Loop_clear(L);
    PyObject_GC_Del(L);
}

static PyObject *Loop_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"record_class", "new_key", "slow", "record_kind", "tombstone_kind",
                            NULL};
    PyObject *cls, *new_key, *slow, *record_kind, *tombstone_kind;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOUU:RecordLoop", names, &cls, &new_key,
                                     &slow, &record_kind, &tombstone_kind))
        return NULL;
    if (!PyCallable_Check(new_key) || !PyCallable_Check(slow)) {
        PyErr_SetString(PyExc_TypeError, "new_key and slow must be callable");
        return NULL;
    }
    Loop *L = PyObject_GC_New(Loop, type);
    if (!L) return NULL;
    L->vectorcall = Loop_vectorcall;
    L->record_cls = NULL;
    L->new_key = L->slow = L->record_kind = L->tombstone_kind = NULL;
    L->entries = NULL;
    L->mask = -1;
    L->used = 0;
    L->with_headers = 0;
    PyObject_GC_Track(L);
    if (check_record_class(L, cls) < 0) {
        Py_DECREF(L);
        return NULL;
    }
    L->record_cls = (PyTypeObject *)Py_NewRef(cls);
    L->new_key = Py_NewRef(new_key);
    L->slow = Py_NewRef(slow);
    L->record_kind = Py_NewRef(record_kind);
    L->tombstone_kind = Py_NewRef(tombstone_kind);
    return (PyObject *)L;
}

static PyObject *Loop_clear_keys(Loop *L, PyObject *unused) {
    cache_clear(L);
    Py_RETURN_NONE;
}

static PyObject *Loop_get_cached_keys(Loop *L, void *closure) {
    return PyLong_FromSsize_t(L->used);
}

static PyObject *Loop_get_with_headers(Loop *L, void *closure) {
    return PyLong_FromSsize_t(L->with_headers);
}

static PyObject *Loop_batches(Loop *L, PyObject *const *args, Py_ssize_t nargs);

static PyMethodDef Loop_methods[] = {
    {"clear_keys", (PyCFunction)Loop_clear_keys, METH_NOARGS, "Forget the decoded keys."},
    {"batches", (PyCFunction)(void (*)(void))Loop_batches, METH_FASTCALL,
     "batches(data, pos, verify_crc, max_size, max_records, crc32c, batch_class, file, codec, "
     "timestamp_types, limit) -> (items, pos): (batch, records) of the plain v2 data batches "
     "from pos on, up to the first entry the caller must read itself."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Loop_getset[] = {
    {"cached_keys", (getter)Loop_get_cached_keys, NULL, "how many decoded keys are cached", NULL},
    {"with_headers", (getter)Loop_get_with_headers, NULL,
     "how many records of the last batch read have headers (which the records do not keep)",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject LoopType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "codegen.native._records.RecordLoop",
    .tp_basicsize = sizeof(Loop),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "RecordLoop(record_class, new_key, slow, record_kind, tombstone_kind)\n\n"
              "loop(data, start, end, count, base_offset, base_timestamp, log_append, "
              "append_timestamp) -> list of records of one v2 data batch, or MalformedRecords.",
    .tp_new = Loop_new,
    .tp_dealloc = (destructor)Loop_dealloc,
    .tp_traverse = (traverseproc)Loop_traverse,
    .tp_clear = (inquiry)Loop_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Loop, vectorcall),
    .tp_methods = Loop_methods,
    .tp_getset = Loop_getset,
};

/* --------------------------------------------------------------------------- columns */

/* ColumnBuilder(with_headers): the columnar record loop. It appends the records of v2 data
 * batches (add_v2: the batch's entry bytes for its header fields, and its decompressed records,
 * parsed by parse() above) and rows given by Python (add_rows: legacy entries and control
 * batches, decoded by the reference) and error rows (add_error) to growable Arrow buffers of the
 * kafka-log raw columns; finish() hands the buffers over and starts again. Batch-level fields
 * are written per record here. codegen/dumps/arrow.py drives it and wraps the buffers. */

typedef struct {
    char *p;
    Py_ssize_t len, cap;
} Buf;

static COLD int buf_grow(Buf *b, Py_ssize_t need) {
    Py_ssize_t cap = b->cap ? b->cap : 4096;
    while (cap < need) {
        if (cap > PY_SSIZE_T_MAX / 2) {
            PyErr_NoMemory();
            return -1;
        }
        cap *= 2;
    }
    char *p = PyMem_Realloc(b->p, cap);
    if (!p) {
        PyErr_NoMemory();
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

static inline int buf_reserve(Buf *b, Py_ssize_t extra) {
    if (LIKELY(b->len + extra <= b->cap)) return 0;
    return buf_grow(b, b->len + extra);
}

/* The column kinds: fixed-width values, bits (booleans), variable-length (int32 offsets). */
enum { K_FIXED, K_BITS, K_VAR };

typedef struct {
    Buf valid;  /* validity bits, one per row */
    Buf data;   /* values, bits or bytes */
    Buf offs;   /* K_VAR: int32 offsets, rows + 1 of them; list columns too */
    Py_ssize_t nulls;
} Col;

enum {
    C_OFFSET, C_TIMESTAMP, C_TS_TYPE, C_KEY, C_VALUE, C_HEADERS, C_PRODUCER_ID,
    C_PRODUCER_EPOCH, C_SEQUENCE, C_TXN, C_CONTROL, C_POSITION, C_HEADER_KEY, C_HEADER_VALUE,
    N_COLS,
};
/* The header children are indexed by header, not by row. */

typedef struct {
    Py_ssize_t len[N_COLS][3], nulls[N_COLS], rows, headers;
} Mark;

typedef struct {
    PyObject_HEAD
    int with_headers;
    Py_ssize_t rows, headers; /* rows; headers in the header children */
    Col cols[N_COLS];
} Columns;

static void mark_save(Columns *C, Mark *m) {
    for (int i = 0; i < N_COLS; i++) {
        m->len[i][0] = C->cols[i].valid.len;
        m->len[i][1] = C->cols[i].data.len;
        m->len[i][2] = C->cols[i].offs.len;
        m->nulls[i] = C->cols[i].nulls;
    }
    m->rows = C->rows;
    m->headers = C->headers;
}

static void mark_restore(Columns *C, const Mark *m) {
    for (int i = 0; i < N_COLS; i++) {
        C->cols[i].valid.len = m->len[i][0];
        C->cols[i].data.len = m->len[i][1];
        C->cols[i].offs.len = m->len[i][2];
        C->cols[i].nulls = m->nulls[i];
    }
    C->rows = m->rows;
    C->headers = m->headers;
}

/* Bit i of b (the buffer holds i bits already): set or cleared, a new byte zeroed. */
static inline int bit_put(Buf *b, Py_ssize_t i, int on) {
    if ((i & 7) == 0) {
        if (buf_reserve(b, 1) < 0) return -1;
        b->p[b->len++] = 0;
    }
    if (on) b->p[i >> 3] |= (char)(1 << (i & 7));
    else b->p[i >> 3] &= (char)~(1 << (i & 7));
    return 0;
}

static inline int put_valid(Col *c, Py_ssize_t row, int valid) {
    if (!valid) c->nulls++;
    return bit_put(&c->valid, row, valid);
}

static inline int put_fixed(Col *c, Py_ssize_t row, int valid, const void *v, size_t size) {
    if (put_valid(c, row, valid) < 0 || buf_reserve(&c->data, (Py_ssize_t)size) < 0) return -1;
    memcpy(c->data.p + c->data.len, v, size);
    c->data.len += (Py_ssize_t)size;
    return 0;
}

static inline int put_i64(Col *c, Py_ssize_t row, int valid, int64_t v) {
    return put_fixed(c, row, valid, &v, 8);
}
static inline int put_i32(Col *c, Py_ssize_t row, int valid, int32_t v) {
    return put_fixed(c, row, valid, &v, 4);
}

static inline int put_bool(Col *c, Py_ssize_t row, int valid, int v) {
    if (put_valid(c, row, valid) < 0) return -1;
    return bit_put(&c->data, row, v);
}

/* Close one variable-length value: its end offset (the data holds its bytes already). */
static inline int put_end(Col *c, Py_ssize_t end) {
    if (UNLIKELY(end > INT32_MAX)) {
        PyErr_SetString(PyExc_OverflowError,
                        "an Arrow batch of the records holds more than 2 GiB of keys, values or "
                        "headers; read with fewer rows per batch");
        return -1;
    }
    if (buf_reserve(&c->offs, 4) < 0) return -1;
    int32_t e = (int32_t)end;
    memcpy(c->offs.p + c->offs.len, &e, 4);
    c->offs.len += 4;
    return 0;
}

/* A variable-length value (NULL: null). */
static inline int put_var(Col *c, Py_ssize_t row, const unsigned char *v, Py_ssize_t len) {
    if (put_valid(c, row, v != NULL) < 0) return -1;
    if (v) {
        if (buf_reserve(&c->data, len) < 0) return -1;
        if (len) memcpy(c->data.p + c->data.len, v, len); /* p is NULL until it grows */
        c->data.len += len;
    }
    return put_end(c, c->data.len);
}

/* A header key as UTF-8: Header.name decodes it with errors="replace". */
static int put_header_key(Columns *C, const unsigned char *k, Py_ssize_t len) {
    Col *c = &C->cols[C_HEADER_KEY];
    int ascii = 1;
    for (Py_ssize_t i = 0; i < len && ascii; i++) ascii = k[i] < 0x80;
    if (ascii) return put_var(c, C->headers, k, len);
    PyObject *text = PyUnicode_DecodeUTF8((const char *)k, len, "replace");
    if (!text) return -1;
    Py_ssize_t n;
    const char *utf8 = PyUnicode_AsUTF8AndSize(text, &n);
    int rc = utf8 ? put_var(c, C->headers, (const unsigned char *)utf8, n) : -1;
    Py_DECREF(text);
    return rc;
}

/* The batch-level fields of one row. ts_type, pid, epoch: valid when has_batch. */
typedef struct {
    int has_batch, has_ts_type, txn, control;
    int32_t ts_type;
    int64_t producer_id, position;
    int16_t producer_epoch;
} BatchFields;

/* Bits [start, start + n) of b, which holds start bits: all set or all cleared. */
static int bits_fill(Buf *b, Py_ssize_t start, Py_ssize_t n, int on) {
    const Py_ssize_t end = start + n, bytes = (end + 7) >> 3;
    if (bytes > b->len) {
        if (buf_reserve(b, bytes - b->len) < 0) return -1;
        memset(b->p + b->len, 0, (size_t)(bytes - b->len));
        b->len = bytes;
    }
    Py_ssize_t i = start;
    for (; i < end && (i & 7); i++) {
        if (on) b->p[i >> 3] |= (char)(1 << (i & 7));
        else b->p[i >> 3] &= (char)~(1 << (i & 7));
    }
    if (end - i >= 8) { /* whole bytes */
        memset(b->p + (i >> 3), on ? 0xFF : 0, (size_t)((end - i) >> 3));
        i += (end - i) & ~(Py_ssize_t)7;
    }
    for (; i < end; i++) {
        if (on) b->p[i >> 3] |= (char)(1 << (i & 7));
        else b->p[i >> 3] &= (char)~(1 << (i & 7));
    }
    return 0;
}

/* One fixed-width value (or null) in rows [row, row + n) of a column. */
static int fill_fixed(Col *c, Py_ssize_t row, Py_ssize_t n, int valid, const void *v, size_t size) {
    if (n == 1) return put_fixed(c, row, valid, v, size); /* a batch of one: no fill loops */
    if (!valid) c->nulls += n;
    if (bits_fill(&c->valid, row, n, valid) < 0 || buf_reserve(&c->data, n * (Py_ssize_t)size) < 0)
        return -1;
    char *out = c->data.p + c->data.len;
    for (Py_ssize_t i = 0; i < n; i++) memcpy(out + i * (Py_ssize_t)size, v, size);
    c->data.len += n * (Py_ssize_t)size;
    return 0;
}

static int fill_bool(Col *c, Py_ssize_t row, Py_ssize_t n, int valid, int v) {
    if (n == 1) return put_bool(c, row, valid, v);
    if (!valid) c->nulls += n;
    if (bits_fill(&c->valid, row, n, valid) < 0) return -1;
    return bits_fill(&c->data, row, n, v);
}

/* The batch-level fields of rows [row, row + n): the same in every record of a batch. */
static int put_batch_fields(Columns *C, const BatchFields *b, Py_ssize_t row, Py_ssize_t n) {
    Col *c = C->cols;
    int16_t epoch = b->producer_epoch;
    if (fill_fixed(&c[C_TS_TYPE], row, n, b->has_ts_type, &b->ts_type, 4) < 0 ||
        fill_fixed(&c[C_PRODUCER_ID], row, n, b->has_batch, &b->producer_id, 8) < 0 ||
        fill_fixed(&c[C_PRODUCER_EPOCH], row, n, b->has_batch, &epoch, 2) < 0 ||
        fill_bool(&c[C_TXN], row, n, b->has_batch, b->txn) < 0 ||
        fill_bool(&c[C_CONTROL], row, n, b->has_batch, b->control) < 0 ||
        fill_fixed(&c[C_POSITION], row, n, 1, &b->position, 8) < 0)
        return -1;
    return 0;
}

/* The header list of a record (NULL headers: a null list). The bytes have been checked. */
static int put_headers(Columns *C, const unsigned char *h, int64_t count, Py_ssize_t limit) {
    Col *list = &C->cols[C_HEADERS];
    if (put_valid(list, C->rows, h != NULL) < 0) return -1;
    if (h) {
        Py_ssize_t p = 0;
        for (int64_t i = 0; i < count; i++) {
            int64_t klen = 0, vlen = -1;
            read_length(h, &p, limit, 0, &klen);
            if (put_header_key(C, h + p - klen, (Py_ssize_t)klen) < 0) return -1;
            read_length(h, &p, limit, 1, &vlen);
            if (put_var(&C->cols[C_HEADER_VALUE], C->headers,
                        vlen >= 0 ? h + p - vlen : NULL, vlen >= 0 ? (Py_ssize_t)vlen : 0) < 0)
                return -1;
            C->headers++;
        }
    }
    return put_end(list, C->headers);
}

static COLD int out_of_range(const char *what, Py_ssize_t index) {
    PyErr_Format(PyExc_OverflowError,
                 "record %zd: its %s does not fit in a signed 64-bit integer", index, what);
    return -1;
}

static inline int64_t be64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = (v << 8) | p[i];
    return (int64_t)v;
}
static inline int32_t be32(const unsigned char *p) {
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3]);
}

static inline int16_t be16(const unsigned char *p) { return (int16_t)((p[0] << 8) | p[1]); }

/* Whether the parsed records of a control batch pass decode_entry's checks of control keys
   and ABORT/COMMIT markers, with offsets that fit an int64: else the reference reads it. */
static int control_records_ok(const Parsed *recs, int32_t count, int64_t base_offset) {
    for (int32_t i = 0; i < count; i++) {
        const Parsed *r = &recs[i];
        int64_t offset;
        if (r->key_len < 4 || be16(r->key) < 0 ||
            __builtin_add_overflow(base_offset, r->off_delta, &offset))
            return 0;
        const int16_t type = be16(r->key + 2);
        if ((type == 0 || type == 1) && (r->value_len < 6 || be16(r->value) < 0)) return 0;
    }
    return 1;
}

/* Append the parsed records of one v2 data batch whose header is entry[0:61]. */
static int put_v2(Columns *C, const unsigned char *entry, const Parsed *recs, Py_ssize_t count,
                  int64_t position) {
    const int64_t base_offset = be64(entry), base_ts = be64(entry + 27),
                  max_ts = be64(entry + 35);
    const int attrs = (entry[21] << 8) | entry[22];
    const int32_t base_seq = be32(entry + 53);
    const int log_append = attrs & 0x08;
    BatchFields b = {1, 1, (attrs & 0x10) != 0, (attrs & 0x20) != 0, (attrs >> 3) & 1,
                     be64(entry + 43), position, (int16_t)((entry[51] << 8) | entry[52])};
    Col *c = C->cols;
    for (Py_ssize_t i = 0; i < count; i++) {
        const Parsed *r = &recs[i];
        const Py_ssize_t row = C->rows;
        int64_t offset, ts;
        if (__builtin_add_overflow(base_offset, r->off_delta, &offset))
            return out_of_range("offset", i);
        if (log_append) ts = max_ts;
        else if (__builtin_add_overflow(base_ts, r->ts_delta, &ts))
            return out_of_range("timestamp", i);
        /* Milliseconds to microseconds, wrapping as numpy's int64 does. */
        int64_t us = (int64_t)((uint64_t)ts * 1000u);
        /* The sequence: Record.sequence (null when negative) with headers, else
           increment_sequence (null only without a base sequence). */
        int has_seq = base_seq >= 0;
        int64_t seq = (int64_t)base_seq + r->off_delta;
        if (seq > INT32_MAX) seq -= 0x80000000LL;
        if (C->with_headers && seq < 0) has_seq = 0;
        if (put_i64(&c[C_OFFSET], row, 1, offset) < 0 ||
            put_i64(&c[C_TIMESTAMP], row, 1, us) < 0 ||
            put_var(&c[C_KEY], row, r->key_len >= 0 ? r->key : NULL,
                    r->key_len >= 0 ? (Py_ssize_t)r->key_len : 0) < 0 ||
            put_var(&c[C_VALUE], row, r->value_len >= 0 ? r->value : NULL,
                    r->value_len >= 0 ? (Py_ssize_t)r->value_len : 0) < 0 ||
            put_headers(C, C->with_headers ? r->headers : NULL, r->n_headers,
                        PY_SSIZE_T_MAX) < 0 ||
            put_i32(&c[C_SEQUENCE], row, has_seq, has_seq ? (int32_t)seq : 0) < 0)
            return -1;
        C->rows++;
    }
    return put_batch_fields(C, &b, C->rows - count, count);
}

static int Columns_full(Columns *C) {
    if (C->rows >= PY_SSIZE_T_MAX / 16) {
        PyErr_SetString(PyExc_OverflowError, "too many rows in one Arrow batch");
        return 1;
    }
    return 0;
}

/* add_v2(entry, records, start, end, position): entry is the batch's log entry (its header
   fields are read from entry[0:61]), records[start:end] its (decompressed) records. */
static PyObject *Columns_add_v2(Columns *C, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError,
                        "add_v2(entry, records, start, end, position) takes 5 arguments");
        return NULL;
    }
    Py_ssize_t start = PyLong_AsSsize_t(args[2]);
    Py_ssize_t end = start == -1 && PyErr_Occurred() ? -1 : PyLong_AsSsize_t(args[3]);
    if (end == -1 && PyErr_Occurred()) return NULL;
    int64_t position;
    if (as_int64(args[4], &position) < 0 || Columns_full(C)) return NULL;
    Py_buffer entry, data;
    if (PyObject_GetBuffer(args[0], &entry, PyBUF_SIMPLE) < 0) return NULL;
    if (PyObject_GetBuffer(args[1], &data, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&entry);
        return NULL;
    }
    PyObject *out = NULL;
    Parsed *recs = NULL;
    const unsigned char *e = entry.buf;
    if (entry.len < 61 || e[16] != 2) {
        PyErr_SetString(PyExc_ValueError, "entry is not a v2 batch of 61 bytes or more");
        goto done;
    }
    Py_ssize_t count = be32(e + 57);
    if (start < 0 || end < start || end > data.len || count < 0 || count > end - start) {
        PyErr_Format(PyExc_ValueError, "bad bounds: start %zd, end %zd, count %zd for %zd bytes",
                     start, end, count, data.len);
        goto done;
    }
    recs = PyMem_Malloc((count ? count : 1) * sizeof(Parsed));
    if (!recs) {
        PyErr_NoMemory();
        goto done;
    }
    if (parse(data.buf, start, end, count, recs, 0) < 0) goto done;
    /* Header lists are read again from where parse() left them: their bytes are checked. */
    Mark m;
    mark_save(C, &m);
    if (put_v2(C, e, recs, count, position) < 0) {
        mark_restore(C, &m);
        goto done;
    }
    out = Py_NewRef(Py_None);
done:
    PyMem_Free(recs);
    PyBuffer_Release(&data);
    PyBuffer_Release(&entry);
    return out;
}

static Py_ssize_t Columns_nbytes(const Columns *C) {
    Py_ssize_t n = 0;
    for (int i = 0; i < N_COLS; i++) n += C->cols[i].data.len;
    return n;
}

/* The entry at data[at:at + total] has the stored CRC-32C crc32c(entry[21:]) gives (the
   function the pure loop calls). crc32c gets a slice of a memoryview of the caller's object,
   which keeps that object alive for as long as the callable keeps the view. */
static int crc_matches(PyObject *crc32c, PyObject *bytes_view, const unsigned char *e,
                       Py_ssize_t at, Py_ssize_t total) {
    PyObject *view = PySequence_GetSlice(bytes_view, at + 21, at + total);
    if (!view) return -1;
    PyObject *computed = PyObject_CallOneArg(crc32c, view);
    Py_DECREF(view);
    if (!computed) return -1;
    unsigned long value = PyLong_AsUnsignedLong(computed);
    Py_DECREF(computed);
    if (value == (unsigned long)-1 && PyErr_Occurred()) return -1;
    return value == (uint32_t)be32(e + 17);
}

/* The uncompressed v2 batch at d[pos:n]: its size (the 12-byte entry header included) when
   the segment reader's framing and _open_v2's checks take it as it is (control or not), 0 when
   the caller must leave it to the reference (anything else: a framing error, a legacy entry, a
   compressed batch, a bad count, a CRC that does not match while verify_crc), -1 with an error
   set. crc_ok receives whether its CRC matches. */
static Py_ssize_t plain_v2_size(const unsigned char *d, Py_ssize_t n, int64_t pos,
                                int64_t max_size, int64_t max_records, int verify_crc,
                                PyObject *crc32c, PyObject *bytes_view, int *crc_ok) {
    const unsigned char *e = d + pos;
    const Py_ssize_t rem = n - (Py_ssize_t)pos;
    if (rem < 12) return 0;
    const int32_t size = be32(e + 8);
    if (size < 14 || size > rem - 12 || size > max_size) return 0; /* framing: the reader's */
    const Py_ssize_t total = 12 + (Py_ssize_t)size;
    if (total < 61 || e[16] != 2 || (e[22] & 0x07)) return 0;
    const int32_t count = be32(e + 57);
    if (count < 0 || count > (total - 61) / 7 || count > max_size / 7 || count > max_records)
        return 0;
    *crc_ok = crc_matches(crc32c, bytes_view, e, (Py_ssize_t)pos, total);
    if (*crc_ok < 0) return -1;
    return verify_crc && !*crc_ok ? 0 : total;
}

/* data as a memoryview of unsigned bytes, whatever its buffer's item format: what crc32c is
   given slices of. */
static PyObject *byte_view(PyObject *data) {
    PyObject *view = NULL, *whole = PyMemoryView_FromObject(data);
    if (whole) {
        view = PyObject_CallMethod(whole, "cast", "s", "B");
        Py_DECREF(whole);
    }
    return view;
}

/* A v2 batch's header fields as the RecordBatch the reference makes of them (no records):
   batch_class(file, position, size, 2, base_offset, last_offset, partition_leader_epoch, crc,
   crc_valid, attributes, codec, timestamp_type, base_timestamp, max_timestamp, producer_id,
   producer_epoch, base_sequence, record_count). NULL with no error set when the last offset
   passes int64 (the reference reads it). */
static PyObject *record_batch(PyObject *batch_class, PyObject *file, PyObject *codec,
                              PyObject *ts_types, const unsigned char *e, int64_t pos,
                              Py_ssize_t total, int crc_ok) {
    const int64_t base_offset = be64(e);
    int64_t last_offset;
    if (__builtin_add_overflow(base_offset, (int64_t)be32(e + 23), &last_offset)) return NULL;
    const int attrs = be16(e + 21);
    PyObject *args[18] = {
        file,
        PyLong_FromLongLong(pos),
        PyLong_FromSsize_t(total),
        Py_NewRef(Two),
        PyLong_FromLongLong(base_offset),
        PyLong_FromLongLong(last_offset),
        PyLong_FromLong(be32(e + 12)),
        PyLong_FromUnsignedLong((uint32_t)be32(e + 17)),
        PyBool_FromLong(crc_ok),
        PyLong_FromLong(attrs),
        codec,
        PyTuple_GET_ITEM(ts_types, (attrs >> 3) & 1),
        PyLong_FromLongLong(be64(e + 27)),
        PyLong_FromLongLong(be64(e + 35)),
        PyLong_FromLongLong(be64(e + 43)),
        PyLong_FromLong(be16(e + 51)),
        PyLong_FromLong(be32(e + 53)),
        PyLong_FromLong(be32(e + 57)),
    };
    PyObject *batch = NULL;
    int made = 1;
    for (int i = 0; i < 18; i++) made &= args[i] != NULL;
    if (made) batch = PyObject_Vectorcall(batch_class, args, 18, NULL);
    for (int i = 0; i < 18; i++)
        if (i != 0 && i != 10 && i != 11) Py_XDECREF(args[i]); /* the borrowed ones kept */
    if (!batch && !PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "no batch made");
    return batch;
}

/* batches(data, pos, verify_crc, max_size, max_records, crc32c, batch_class, file, codec,
   timestamp_types, limit) -> (items, pos): the uncompressed v2 data batches of data from pos
   on, each as (record_batch(...), the loop's records of it), read as
   SegmentReader.decoded_batches reads them with this loop, a batch at a time. It stops before
   the first entry that is anything else (see plain_v2_size; a control batch; records the loop
   refuses, for whatever Exception: the caller reads that one as before, and gets the same
   answer) and after the batch that brings the records to limit; it returns where it stopped.
   codec is the records' codec (none), timestamp_types the two types by attribute bit 3. */
static PyObject *Loop_batches(Loop *L, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 11) {
        PyErr_SetString(PyExc_TypeError,
                        "batches(data, pos, verify_crc, max_size, max_records, crc32c, "
                        "batch_class, file, codec, timestamp_types, limit) takes 11 arguments");
        return NULL;
    }
    if (!L->slow) {
        PyErr_SetString(PyExc_RuntimeError, "this record loop has been cleared");
        return NULL;
    }
    int64_t pos, max_size, max_records, limit;
    if (as_int64(args[1], &pos) < 0 || as_int64(args[3], &max_size) < 0 ||
        as_int64(args[4], &max_records) < 0 || as_int64(args[10], &limit) < 0)
        return NULL;
    int verify_crc = PyObject_IsTrue(args[2]);
    if (verify_crc < 0) return NULL;
    PyObject *crc32c = args[5], *batch_class = args[6], *file = args[7], *codec = args[8];
    PyObject *ts_types = args[9];
    if (!PyTuple_Check(ts_types) || PyTuple_GET_SIZE(ts_types) != 2) {
        PyErr_SetString(PyExc_TypeError, "batches: timestamp_types must be a tuple of 2");
        return NULL;
    }
    Py_buffer data;
    if (PyObject_GetBuffer(args[0], &data, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *bytes_view = byte_view(args[0]);
    if (!bytes_view) {
        PyBuffer_Release(&data);
        return NULL;
    }
    const unsigned char *d = data.buf;
    const Py_ssize_t n = data.len;
    PyObject *out = NULL, *items = PyList_New(0);
    int64_t records = 0;
    if (!items) goto done;
    if (pos < 0 || pos > n) {
        PyErr_Format(PyExc_ValueError, "batches: position %lld outside %zd bytes",
                     (long long)pos, n);
        goto done;
    }
    while (pos < n && records < limit) {
        int crc_ok = 0;
        const Py_ssize_t total = plain_v2_size(d, n, pos, max_size, max_records, verify_crc,
                                               crc32c, bytes_view, &crc_ok);
        if (total < 0) goto done;
        const unsigned char *e = d + pos;
        if (total == 0 || (e[22] & 0x20)) break;
        PyObject *batch = record_batch(batch_class, file, codec, ts_types, e, pos, total, crc_ok);
        if (!batch) {
            if (PyErr_Occurred()) goto done;
            break;
        }
        const int64_t base_offset = be64(e), base_ts = be64(e + 27);
        const int32_t count = be32(e + 57);
        PyObject *base_offset_obj = PyLong_FromLongLong(base_offset);
        PyObject *base_ts_obj = PyLong_FromLongLong(base_ts);
        PyObject *append_ts_obj = (e[22] & 0x08) ? PyLong_FromLongLong(be64(e + 35)) : NULL;
        PyObject *recs = NULL;
        if (base_offset_obj && base_ts_obj && (append_ts_obj || !(e[22] & 0x08))) {
            if (L->used > KEY_CACHE_SIZE) cache_clear(L);
            recs = run(L, e, 61, total, count, base_offset, base_offset_obj, base_ts,
                       base_ts_obj, append_ts_obj);
        }
        Py_XDECREF(base_offset_obj);
        Py_XDECREF(base_ts_obj);
        Py_XDECREF(append_ts_obj);
        if (!recs) {
            Py_DECREF(batch);
            /* the caller's own read of this batch says what it is */
            if (PyErr_ExceptionMatches(PyExc_Exception)) {
                PyErr_Clear();
                break;
            }
            goto done;
        }
        PyObject *item = PyTuple_Pack(2, batch, recs);
        Py_DECREF(batch);
        Py_DECREF(recs);
        if (!item) goto done;
        int appended = PyList_Append(items, item);
        Py_DECREF(item);
        if (appended < 0) goto done;
        records += count;
        pos += total;
    }
    out = Py_BuildValue("(OL)", items, (long long)pos);
done:
    Py_XDECREF(items);
    Py_DECREF(bytes_view);
    PyBuffer_Release(&data);
    return out;
}

/* add_entries(data, pos, position_base, verify_crc, max_size, max_records, batch_rows,
   flush_bytes, crc32c) -> pos: the uncompressed v2 batches of data from pos on, with the
   checks of the segment reader's framing and _open_v2 (and, for a control batch,
   decode_entry's checks of its keys and markers). It stops before the first entry that is
   anything else (a framing error, a legacy entry, a compressed batch, a bad count or CRC,
   records that do not parse, control records the checks refuse: the caller reads that one as
   the pure loop does), before an entry when flush_bytes of column data are held, and after
   the entry that brings the rows to batch_rows; it returns where it stopped. */
static PyObject *Columns_add_entries(Columns *C, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError,
                        "add_entries(data, pos, position_base, verify_crc, max_size, "
                        "max_records, batch_rows, flush_bytes, crc32c) takes 9 arguments");
        return NULL;
    }
    int64_t pos, base, max_size, max_records, batch_rows, flush_bytes;
    if (as_int64(args[1], &pos) < 0 || as_int64(args[2], &base) < 0 ||
        as_int64(args[4], &max_size) < 0 || as_int64(args[5], &max_records) < 0 ||
        as_int64(args[6], &batch_rows) < 0 || as_int64(args[7], &flush_bytes) < 0)
        return NULL;
    int verify_crc = PyObject_IsTrue(args[3]);
    if (verify_crc < 0) return NULL;
    PyObject *crc32c = args[8];
    Py_buffer data;
    if (PyObject_GetBuffer(args[0], &data, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *bytes_view = byte_view(args[0]);
    if (!bytes_view) {
        PyBuffer_Release(&data);
        return NULL;
    }
    const unsigned char *d = data.buf;
    const Py_ssize_t n = data.len;
    Parsed *recs = NULL;
    Py_ssize_t cap = 0;
    PyObject *out = NULL;
    if (pos < 0 || pos > n) {
        PyErr_Format(PyExc_ValueError, "add_entries: position %lld outside %zd bytes",
                     (long long)pos, n);
        goto done;
    }
    while (pos < n && Columns_nbytes(C) <= flush_bytes && !Columns_full(C)) {
        int crc_ok = 0;
        const Py_ssize_t total = plain_v2_size(d, n, pos, max_size, max_records, verify_crc,
                                               crc32c, bytes_view, &crc_ok);
        if (total < 0) goto done;
        if (total == 0) break;
        const unsigned char *e = d + pos;
        const int control = (e[22] & 0x20) != 0;
        const int32_t count = be32(e + 57);
        if (count > cap) {
            Parsed *more = PyMem_Realloc(recs, (size_t)count * sizeof(Parsed));
            if (!more) {
                PyErr_NoMemory();
                goto done;
            }
            recs = more;
            cap = count;
        }
        if (parse(e, 61, total, count, recs, 0) < 0) {
            if (!PyErr_ExceptionMatches(MalformedRecords)) goto done;
            PyErr_Clear(); /* the caller's reference read says why */
            break;
        }
        if (control && !control_records_ok(recs, count, be64(e))) break;
        Mark m;
        mark_save(C, &m);
        if (put_v2(C, e, recs, count, base + pos) < 0) {
            mark_restore(C, &m);
            goto done;
        }
        pos += total;
        if (C->rows >= batch_rows) break;
    }
    if (!PyErr_Occurred()) out = PyLong_FromLongLong(pos);
done:
    PyMem_Free(recs);
    Py_DECREF(bytes_view);
    PyBuffer_Release(&data);
    return out;
}

/* --------------------------------------------------------------------------- batch headers */

/* The (offset, control type) pairs of an uncompressed control batch's records, each checked
   as decode_entry checks control keys and ABORT/COMMIT markers: a tuple, or NULL with no
   error set when the reference must read the batch (records that do not parse, a malformed
   key or marker, an offset past int64), or NULL with an error. */
static PyObject *control_pairs(const unsigned char *e, Py_ssize_t total, int32_t count,
                               int64_t base_offset, Parsed *recs) {
    if (parse(e, 61, total, count, recs, 0) < 0) {
        if (!PyErr_ExceptionMatches(MalformedRecords)) return NULL;
        PyErr_Clear();
        return NULL;
    }
    if (!control_records_ok(recs, count, base_offset)) return NULL;
    PyObject *pairs = PyTuple_New(count);
    if (!pairs) return NULL;
    for (int32_t i = 0; i < count; i++) {
        const Parsed *r = &recs[i];
        PyObject *pair = Py_BuildValue("(Lh)", (long long)(base_offset + r->off_delta),
                                       be16(r->key + 2));
        if (!pair) {
            Py_DECREF(pairs);
            return NULL;
        }
        PyObject_GC_UnTrack(pair); /* ints only: never part of a cycle */
        PyTuple_SET_ITEM(pairs, i, pair);
    }
    PyObject_GC_UnTrack(pairs);
    return pairs;
}

#define N_HEADER_FIELDS 13

/* batch_headers(data, pos, verify_crc, max_size, max_records, crc32c, expansion, header_type,
   limit) -> (headers, pos): the headers of the v2 batches of data from pos on, as
   header_type (a tuple subclass of 13 fields: codegen.dumps.model.BatchHeader) with the
   checks of codegen.dumps.batches.read_batch_header. Data batches are not decompressed nor
   their records parsed; uncompressed control batches have their records parsed and their
   keys and markers checked. It stops before the first entry that is anything else (a framing
   error, a legacy entry, a bad header, count or CRC, a compressed control batch or one the
   checks refuse: the caller reads that one with the reference) and after limit headers.
   expansion[codec] bounds what a byte of that codec decompresses to (0: no bound). */
static PyObject *batch_headers(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError,
                        "batch_headers(data, pos, verify_crc, max_size, max_records, crc32c, "
                        "expansion, header_type, limit) takes 9 arguments");
        return NULL;
    }
    int64_t pos, max_size, max_records, limit, expansion[5];
    if (as_int64(args[1], &pos) < 0 || as_int64(args[3], &max_size) < 0 ||
        as_int64(args[4], &max_records) < 0 || as_int64(args[8], &limit) < 0)
        return NULL;
    int verify_crc = PyObject_IsTrue(args[2]);
    if (verify_crc < 0) return NULL;
    PyObject *crc32c = args[5];
    if (!PyTuple_Check(args[6]) || PyTuple_GET_SIZE(args[6]) != 5) {
        PyErr_SetString(PyExc_TypeError, "batch_headers: expansion must be a tuple of 5 ints");
        return NULL;
    }
    for (int i = 0; i < 5; i++)
        if (as_int64(PyTuple_GET_ITEM(args[6], i), &expansion[i]) < 0) return NULL;
    /* Its instances are filled here and left untracked by the cyclic collector: a tuple
       subclass without a __dict__ that could make a cycle. */
    if (!PyType_Check(args[7]) || !PyType_IsSubtype((PyTypeObject *)args[7], &PyTuple_Type) ||
        ((PyTypeObject *)args[7])->tp_dictoffset != 0) {
        PyErr_SetString(PyExc_TypeError,
                        "batch_headers: header_type must be a tuple subclass without a __dict__");
        return NULL;
    }
    PyTypeObject *header_type = (PyTypeObject *)args[7];
    Py_buffer data;
    if (PyObject_GetBuffer(args[0], &data, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *bytes_view = byte_view(args[0]);
    if (!bytes_view) {
        PyBuffer_Release(&data);
        return NULL;
    }
    const unsigned char *d = data.buf;
    const Py_ssize_t n = data.len;
    Parsed *recs = NULL;
    Py_ssize_t cap = 0;
    PyObject *out = NULL, *headers = PyList_New(0), *empty = PyTuple_New(0);
    if (!headers || !empty) goto done;
    if (pos < 0 || pos > n) {
        PyErr_Format(PyExc_ValueError, "batch_headers: position %lld outside %zd bytes",
                     (long long)pos, n);
        goto done;
    }
    while (pos < n && PyList_GET_SIZE(headers) < limit) {
        const unsigned char *e = d + pos;
        const Py_ssize_t rem = n - (Py_ssize_t)pos;
        if (rem < 12) break;
        const int32_t size = be32(e + 8);
        if (size < 14 || size > rem - 12 || size > max_size) break; /* framing: the reader's */
        const Py_ssize_t total = 12 + (Py_ssize_t)size;
        if (total < 61 || e[16] != 2) break;
        const int attrs = be16(e + 21), codec = attrs & 0x07, control = (attrs & 0x20) != 0;
        const int32_t count = be32(e + 57);
        const int64_t stored = total - 61;
        if (codec > 4 || count < 0 || count > max_size / 7 || count > max_records) break;
        if (codec == 0 && count > stored / 7) break;
        if (codec != 0 && expansion[codec] > 0 &&
            (stored > INT64_MAX / expansion[codec] || count > expansion[codec] * stored / 7))
            break;
        if (control && codec != 0) break;
        int crc_ok = crc_matches(crc32c, bytes_view, e, (Py_ssize_t)pos, total);
        if (crc_ok < 0) goto done;
        if (verify_crc && !crc_ok) break;
        const int64_t base_offset = be64(e);
        int64_t last_offset;
        if (__builtin_add_overflow(base_offset, (int64_t)be32(e + 23), &last_offset)) break;
        PyObject *controls = empty;
        if (control) {
            if (count > cap) {
                Parsed *more = PyMem_Realloc(recs, (size_t)count * sizeof(Parsed));
                if (!more) {
                    PyErr_NoMemory();
                    goto done;
                }
                recs = more;
                cap = count;
            }
            controls = control_pairs(e, total, count, base_offset, recs);
            if (!controls) {
                if (PyErr_Occurred()) goto done;
                break;
            }
        } else {
            Py_INCREF(controls);
        }
        PyObject *h = header_type->tp_alloc(header_type, N_HEADER_FIELDS);
        if (!h) {
            Py_DECREF(controls);
            goto done;
        }
        PyObject *fields[N_HEADER_FIELDS] = {
            PyLong_FromLongLong(pos),
            PyLong_FromSsize_t(total),
            PyLong_FromLong(2),
            PyLong_FromLongLong(base_offset),
            PyLong_FromLongLong(last_offset),
            PyLong_FromLongLong(be64(e + 27)),
            PyLong_FromLongLong(be64(e + 35)),
            PyLong_FromLongLong(be64(e + 43)),
            PyLong_FromLong(be16(e + 51)),
            PyLong_FromLong(be32(e + 53)),
            PyLong_FromLong(attrs),
            PyLong_FromLong(count),
            controls,
        };
        int failed = 0;
        for (int i = 0; i < N_HEADER_FIELDS; i++) {
            if (!fields[i]) failed = 1;
            PyTuple_SET_ITEM(h, i, fields[i]);
        }
        if (failed) {
            Py_DECREF(h);
            goto done;
        }
        PyObject_GC_UnTrack(h); /* ints and untracked tuples only: never part of a cycle */
        int appended = PyList_Append(headers, h);
        Py_DECREF(h);
        if (appended < 0) goto done;
        pos += total;
    }
    out = Py_BuildValue("(OL)", headers, (long long)pos);
done:
    PyMem_Free(recs);
    Py_XDECREF(headers);
    Py_XDECREF(empty);
    Py_DECREF(bytes_view);
    PyBuffer_Release(&data);
    return out;
}

static PyMethodDef records_functions[] = {
    {"batch_headers", (PyCFunction)(void (*)(void))batch_headers, METH_FASTCALL,
     "batch_headers(data, pos, verify_crc, max_size, max_records, crc32c, expansion, "
     "header_type, limit) -> (headers, pos): the v2 batch headers from pos on, up to the first "
     "entry the caller must read with the reference, or limit headers."},
    {NULL, NULL, 0, NULL},
};

static int opt_int64(PyObject *o, int *valid, int64_t *v) {
    *valid = o != Py_None;
    *v = 0;
    return *valid ? as_int64(o, v) : 0;
}

/* A bytes value or None; -1 with TypeError otherwise. */
static int bytes_or_none(PyObject *o, const unsigned char **p, Py_ssize_t *len) {
    if (o == Py_None) {
        *p = NULL;
        *len = 0;
        return 0;
    }
    if (!PyBytes_Check(o)) {
        PyErr_Format(PyExc_TypeError, "expected bytes or None, not %.100s", Py_TYPE(o)->tp_name);
        return -1;
    }
    *p = (const unsigned char *)PyBytes_AS_STRING(o);
    *len = PyBytes_GET_SIZE(o);
    return 0;
}

/* One row of add_rows: (offset, timestamp, key, value, headers, sequence). */
static int put_row(Columns *C, PyObject *row, const BatchFields *b) {
    if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != 6) {
        PyErr_SetString(PyExc_TypeError,
                        "a row is (offset, timestamp, key, value, headers, sequence)");
        return -1;
    }
    Col *c = C->cols;
    const Py_ssize_t r = C->rows;
    int64_t offset, ts, seq;
    int has_seq;
    const unsigned char *key, *value;
    Py_ssize_t key_len, value_len;
    PyObject *headers = PyTuple_GET_ITEM(row, 4);
    if (as_int64(PyTuple_GET_ITEM(row, 0), &offset) < 0 ||
        as_int64(PyTuple_GET_ITEM(row, 1), &ts) < 0 ||
        bytes_or_none(PyTuple_GET_ITEM(row, 2), &key, &key_len) < 0 ||
        bytes_or_none(PyTuple_GET_ITEM(row, 3), &value, &value_len) < 0 ||
        opt_int64(PyTuple_GET_ITEM(row, 5), &has_seq, &seq) < 0)
        return -1;
    if (headers != Py_None && !PyList_Check(headers)) {
        PyErr_SetString(PyExc_TypeError, "headers must be a list of (name, value) or None");
        return -1;
    }
    if (put_i64(&c[C_OFFSET], r, 1, offset) < 0 ||
        put_i64(&c[C_TIMESTAMP], r, 1, (int64_t)((uint64_t)ts * 1000u)) < 0 ||
        put_var(&c[C_KEY], r, key, key_len) < 0 || put_var(&c[C_VALUE], r, value, value_len) < 0 ||
        put_valid(&c[C_HEADERS], r, headers != Py_None) < 0)
        return -1;
    for (Py_ssize_t i = 0; headers != Py_None && i < PyList_GET_SIZE(headers); i++) {
        PyObject *h = PyList_GET_ITEM(headers, i);
        Py_ssize_t n;
        const char *name;
        const unsigned char *hv;
        Py_ssize_t hv_len;
        if (!PyTuple_Check(h) || PyTuple_GET_SIZE(h) != 2 ||
            !PyUnicode_Check(PyTuple_GET_ITEM(h, 0))) {
            PyErr_SetString(PyExc_TypeError, "a header is (name: str, value: bytes | None)");
            return -1;
        }
        if (!(name = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(h, 0), &n)) ||
            bytes_or_none(PyTuple_GET_ITEM(h, 1), &hv, &hv_len) < 0 ||
            put_var(&c[C_HEADER_KEY], C->headers, (const unsigned char *)name, n) < 0 ||
            put_var(&c[C_HEADER_VALUE], C->headers, hv, hv_len) < 0)
            return -1;
        C->headers++;
    }
    if (put_end(&c[C_HEADERS], C->headers) < 0 ||
        put_i32(&c[C_SEQUENCE], r, has_seq, (int32_t)seq) < 0 || put_batch_fields(C, b, r, 1) < 0)
        return -1;
    if (has_seq && (seq < INT32_MIN || seq > INT32_MAX)) {
        PyErr_Format(PyExc_OverflowError, "sequence %lld does not fit int32", (long long)seq);
        return -1;
    }
    C->rows++;
    return 0;
}

/* add_rows(rows, position, timestamp_type, producer_id, producer_epoch, is_transactional,
   is_control): rows of (offset, timestamp, key, value, headers, sequence) tuples, headers
   None or a list of (name, value), sequence None or an int; timestamp_type None or an int. */
static PyObject *Columns_add_rows(Columns *C, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 7 || !PyList_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError,
                        "add_rows(rows: list, position, timestamp_type, producer_id, "
                        "producer_epoch, is_transactional, is_control) takes 7 arguments");
        return NULL;
    }
    BatchFields b = {1, 0, 0, 0, 0, 0, 0, 0};
    int64_t ts_type, epoch;
    int has;
    if (as_int64(args[1], &b.position) < 0 || opt_int64(args[2], &b.has_ts_type, &ts_type) < 0 ||
        as_int64(args[3], &b.producer_id) < 0 || opt_int64(args[4], &has, &epoch) < 0 ||
        (b.txn = PyObject_IsTrue(args[5])) < 0 || (b.control = PyObject_IsTrue(args[6])) < 0 ||
        Columns_full(C))
        return NULL;
    b.ts_type = (int32_t)ts_type;
    b.producer_epoch = (int16_t)epoch;
    Mark m;
    mark_save(C, &m);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(args[0]); i++) {
        if (put_row(C, PyList_GET_ITEM(args[0], i), &b) < 0) {
            mark_restore(C, &m);
            return NULL;
        }
    }
    Py_RETURN_NONE;
}

/* add_error(base_offset, position): a row of nulls but its offset (null when None or
   negative) and position; the caller keeps the error text. */
static PyObject *Columns_add_error(Columns *C, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "add_error(base_offset, position) takes 2 arguments");
        return NULL;
    }
    int has_offset;
    int64_t offset;
    BatchFields b = {0, 0, 0, 0, 0, 0, 0, 0};
    if (opt_int64(args[0], &has_offset, &offset) < 0 || as_int64(args[1], &b.position) < 0 ||
        Columns_full(C))
        return NULL;
    Col *c = C->cols;
    const Py_ssize_t r = C->rows;
    Mark m;
    mark_save(C, &m);
    if (put_i64(&c[C_OFFSET], r, has_offset && offset >= 0, has_offset ? offset : -1) < 0 ||
        put_i64(&c[C_TIMESTAMP], r, 0, 0) < 0 || put_var(&c[C_KEY], r, NULL, 0) < 0 ||
        put_var(&c[C_VALUE], r, NULL, 0) < 0 || put_valid(&c[C_HEADERS], r, 0) < 0 ||
        put_end(&c[C_HEADERS], C->headers) < 0 || put_i32(&c[C_SEQUENCE], r, 0, 0) < 0 ||
        put_batch_fields(C, &b, r, 1) < 0) {
        mark_restore(C, &m);
        return NULL;
    }
    C->rows++;
    Py_RETURN_NONE;
}

static PyObject *buf_take(Buf *b) {
    return PyBytes_FromStringAndSize(b->p ? b->p : "", b->len);
}

/* (null count, validity or None, data[, offsets]) of one column. */
static PyObject *col_take(Col *c, int kind) {
    PyObject *valid = c->nulls ? buf_take(&c->valid) : Py_NewRef(Py_None);
    PyObject *data = buf_take(&c->data);
    PyObject *offs = kind == K_VAR ? buf_take(&c->offs) : Py_NewRef(Py_None);
    PyObject *out = (valid && data && offs) ? Py_BuildValue("(nOOO)", c->nulls, valid, data, offs)
                                            : NULL;
    Py_XDECREF(valid);
    Py_XDECREF(data);
    Py_XDECREF(offs);
    return out;
}

static void Columns_reset(Columns *C) {
    for (int i = 0; i < N_COLS; i++) {
        Col *c = &C->cols[i];
        c->valid.len = c->data.len = c->nulls = 0;
        c->offs.len = 0;
    }
    /* Every variable-length and list column starts with offset 0. */
    static const int var_cols[] = {C_KEY, C_VALUE, C_HEADERS, C_HEADER_KEY, C_HEADER_VALUE};
    for (size_t i = 0; i < sizeof var_cols / sizeof *var_cols; i++) {
        Buf *o = &C->cols[var_cols[i]].offs;
        if (buf_reserve(o, 4) == 0) {
            memset(o->p, 0, 4);
            o->len = 4;
        }
    }
    C->rows = C->headers = 0;
}

static const int COL_KINDS[N_COLS] = {
    [C_OFFSET] = K_FIXED, [C_TIMESTAMP] = K_FIXED, [C_TS_TYPE] = K_FIXED, [C_KEY] = K_VAR,
    [C_VALUE] = K_VAR, [C_HEADERS] = K_VAR, [C_PRODUCER_ID] = K_FIXED,
    [C_PRODUCER_EPOCH] = K_FIXED, [C_SEQUENCE] = K_FIXED, [C_TXN] = K_BITS,
    [C_CONTROL] = K_BITS, [C_POSITION] = K_FIXED, [C_HEADER_KEY] = K_VAR,
    [C_HEADER_VALUE] = K_VAR,
};

/* finish() -> (rows, headers, columns): the buffers of every column (offset, timestamp,
   timestampType, key, value, headers, producerId, producerEpoch, sequence,
   isTransactional, isControl, batchPosition, header keys, header values), each
   (null count, validity or None, data, offsets or None); the builder starts again. */
static PyObject *Columns_finish(Columns *C, PyObject *unused) {
    for (int i = 0; i < N_COLS; i++)
        if (C->cols[i].offs.len == 0 && COL_KINDS[i] == K_VAR) return PyErr_NoMemory();
    PyObject *cols = PyTuple_New(N_COLS);
    if (!cols) return NULL;
    for (int i = 0; i < N_COLS; i++) {
        PyObject *c = col_take(&C->cols[i], COL_KINDS[i]);
        if (!c) {
            Py_DECREF(cols);
            return NULL;
        }
        PyTuple_SET_ITEM(cols, i, c);
    }
    PyObject *out = Py_BuildValue("(nnN)", C->rows, C->headers, cols);
    if (out) Columns_reset(C);
    return out;
}

static PyObject *Columns_get_rows(Columns *C, void *closure) { return PyLong_FromSsize_t(C->rows); }

static PyObject *Columns_get_nbytes(Columns *C, void *closure) {
    return PyLong_FromSsize_t(Columns_nbytes(C));
}

static PyObject *Columns_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"with_headers", NULL};
    int with_headers = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|p:ColumnBuilder", names, &with_headers))
        return NULL;
    Columns *C = (Columns *)type->tp_alloc(type, 0);
    if (!C) return NULL;
    C->with_headers = with_headers;
    Columns_reset(C);
    if (PyErr_Occurred()) {
        Py_DECREF(C);
        return NULL;
    }
    return (PyObject *)C;
}

static void Columns_dealloc(Columns *C) {
    for (int i = 0; i < N_COLS; i++) {
        PyMem_Free(C->cols[i].valid.p);
        PyMem_Free(C->cols[i].data.p);
        PyMem_Free(C->cols[i].offs.p);
    }
    Py_TYPE(C)->tp_free((PyObject *)C);
}

static PyMethodDef Columns_methods[] = {
    {"add_entries", (PyCFunction)(void (*)(void))Columns_add_entries, METH_FASTCALL,
     "add_entries(data, pos, position_base, verify_crc, max_size, max_records, batch_rows, "
     "flush_bytes, crc32c) -> pos: the uncompressed v2 batches from pos on, up to the first "
     "entry the caller must read, or until an Arrow batch is due."},
    {"add_v2", (PyCFunction)(void (*)(void))Columns_add_v2, METH_FASTCALL,
     "add_v2(entry, records, start, end, position): the records of a v2 data batch; "
     "MalformedRecords (nothing added) when they do not parse."},
    {"add_rows", (PyCFunction)(void (*)(void))Columns_add_rows, METH_FASTCALL,
     "add_rows(rows, position, timestamp_type, producer_id, producer_epoch, "
     "is_transactional, is_control): rows decoded in Python."},
    {"add_error", (PyCFunction)(void (*)(void))Columns_add_error, METH_FASTCALL,
     "add_error(base_offset, position): the row of an entry that could not be read."},
    {"finish", (PyCFunction)Columns_finish, METH_NOARGS,
     "finish() -> (rows, headers, column buffers); the builder starts again."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Columns_getset[] = {
    {"rows", (getter)Columns_get_rows, NULL, "rows added since the last finish()", NULL},
    {"nbytes", (getter)Columns_get_nbytes, NULL, "bytes of column data held", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ColumnsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "codegen.native._records.ColumnBuilder",
    .tp_basicsize = sizeof(Columns),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "ColumnBuilder(with_headers=True): the kafka-log raw columns as Arrow buffers.",
    .tp_new = Columns_new,
    .tp_dealloc = (destructor)Columns_dealloc,
    .tp_methods = Columns_methods,
    .tp_getset = Columns_getset,
};

static struct PyModuleDef records_module = {
    PyModuleDef_HEAD_INIT, "_records",
    "The coordinator dump record loop, the columnar record loop and the batch header pass.", -1,
    records_functions,
};

PyMODINIT_FUNC PyInit__records(void) {
    Two = PyLong_FromLong(2);
    MinusOne = PyLong_FromLong(-1);
    if (!Two || !MinusOne) return NULL;
    MalformedRecords = PyErr_NewExceptionWithDoc(
        "codegen.native._records.MalformedRecords",
        "The records of a batch do not parse; the reference parser tells why.",
        PyExc_ValueError, NULL);
    if (!MalformedRecords) return NULL;
    Engine = PyCapsule_Import("codegen.native._engine._C_API", 0);
    if (!Engine) PyErr_Clear(); /* not built: readers are called */
    if (PyType_Ready(&LoopType) < 0 || PyType_Ready(&ColumnsType) < 0) return NULL;
    PyObject *m = PyModule_Create(&records_module);
    if (!m) return NULL;
    Py_INCREF(&LoopType);
    Py_INCREF(MalformedRecords);
    Py_INCREF(&ColumnsType);
    if (PyModule_AddObject(m, "ColumnBuilder", (PyObject *)&ColumnsType) < 0 ||
        PyModule_AddObject(m, "RecordLoop", (PyObject *)&LoopType) < 0 ||
        PyModule_AddObject(m, "MalformedRecords", MalformedRecords) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
