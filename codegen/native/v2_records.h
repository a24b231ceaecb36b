/* The records of a v2 batch: zig-zag varints, the first pass that parses a batch's records
 * (every length checked against the record's bounds before use), big-endian header fields and
 * the checks of control records. Part of the _records module (records.c); the loops build on it.
 */
#ifndef SPECGEN_V2_RECORDS_H
#define SPECGEN_V2_RECORDS_H

#include "shared.h"
#include "wire.h"

#if PY_VERSION_HEX >= 0x030E0000
#define HASH_BYTES Py_HashBuffer
#else
#define HASH_BYTES _Py_HashBytes
#endif

static PyObject *MalformedRecords, *Two, *MinusOne;

static inline int read_zigzag32(const unsigned char *d, Py_ssize_t *pos, Py_ssize_t limit,
                                int64_t *out) {
    if (LIKELY(*pos < limit && d[*pos] < 0x80)) { /* one byte: most lengths and deltas */
        const unsigned b = d[(*pos)++];
        *out = (int64_t)(b >> 1) ^ -(int64_t)(b & 1);
        return 0;
    }
    int64_t bits;
    if (read_varint(d, pos, limit, MAX_VARINT32, &bits) < 0) return -1;
    uint64_t u = (uint64_t)bits & 0xFFFFFFFFu;
    *out = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
    return 0;
}

static inline int read_zigzag64(const unsigned char *d, Py_ssize_t *pos, Py_ssize_t limit,
                                int64_t *out) {
    if (LIKELY(*pos < limit && d[*pos] < 0x80)) {
        const unsigned b = d[(*pos)++];
        *out = (int64_t)(b >> 1) ^ -(int64_t)(b & 1);
        return 0;
    }
    int64_t bits;
    if (read_varint(d, pos, limit, MAX_VARINT64, &bits) < 0) return -1;
    uint64_t u = (uint64_t)bits;
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

static COLD PyObject *malformed(Py_ssize_t index, Py_ssize_t pos, const char *what) {
    PyErr_Format(MalformedRecords, "record %zd at byte %zd: %s", index, pos, what);
    return NULL;
}

/* One record's fields, found by the first pass over a batch. */
typedef struct {
    const unsigned char *key, *value;
    const unsigned char *headers; /* the first header, after the count (checked) */
    int64_t key_len, value_len, ts_delta, off_delta, n_headers;
    Py_hash_t key_hash;
} Parsed;

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

/* Room for count Parsed in *recs (of *cap): 0, or -1 with MemoryError. */
static int parsed_room(Parsed **recs, Py_ssize_t *cap, int32_t count) {
    if (count <= *cap) return 0;
    Parsed *more = PyMem_Realloc(*recs, (size_t)count * sizeof(Parsed));
    if (!more) {
        PyErr_NoMemory();
        return -1;
    }
    *recs = more;
    *cap = count;
    return 0;
}

/* The signed big-endian fields of entries and records (wire.h's loads). */
static inline int64_t be64(const unsigned char *p) { return (int64_t)load64(p); }
static inline int32_t be32(const unsigned char *p) { return (int32_t)load32(p); }
static inline int16_t be16(const unsigned char *p) { return (int16_t)load16(p); }

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

#endif /* SPECGEN_V2_RECORDS_H */
