/* The columnar record loop (ColumnBuilder): records appended to growable Arrow buffers of
 * the kafka-log raw columns. Part of the _records module (records.c).
 */
#ifndef SPECGEN_RECORD_COLUMNS_H
#define SPECGEN_RECORD_COLUMNS_H

#include "log_entries.h"

/* ColumnBuilder(with_headers): the columnar record loop. It appends the records of v2 batches
 * (add_entries: where they lie in the segment, or decompressed; parsed by parse()) and rows
 * given by Python (add_rows: legacy entries and the batches add_entries leaves, decoded by the
 * reference) and error rows (add_error) to growable Arrow buffers of the
 * kafka-log raw columns; finish() hands the buffers over and starts again. Batch-level fields
 * are written per record here. codegen/dumps/arrow.py drives it and wraps the buffers. */

/* A growable buffer held in a bytes object of cap bytes (NULL until it grows), which
   finish() hands over as it is: no copy of the columns. */
typedef struct {
    PyObject *obj;
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
    PyObject *obj = PyBytes_FromStringAndSize(NULL, cap);
    if (!obj) return -1;
    char *p = PyBytes_AS_STRING(obj);
    if (b->len) memcpy(p, b->p, (size_t)b->len);
    Py_XSETREF(b->obj, obj);
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
    /* The newest maxTimestamp of the batches with records add_entries took in, -1 before one:
       lag's *now* of a file it read whole, without a second walk of its headers. */
    int64_t newest_time;
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
    unsigned char *p = (unsigned char *)b->p;
    Py_ssize_t i = start;
    while (i < end) {
        const int bit = (int)(i & 7);
        if (bit == 0 && end - i >= 8) { /* whole bytes */
            const Py_ssize_t whole = (end - i) >> 3;
            memset(p + (i >> 3), on ? 0xFF : 0, (size_t)whole);
            i += whole << 3;
            continue;
        }
        /* the bits of byte i >> 3 from bit on, up to end */
        const int upto = end - i < 8 - bit ? bit + (int)(end - i) : 8;
        const unsigned char mask = (unsigned char)(((1u << (upto - bit)) - 1u) << bit);
        if (on) p[i >> 3] |= mask;
        else p[i >> 3] &= (unsigned char)~mask;
        i += upto - bit;
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
    switch (size) { /* a constant size per loop: stores, not a memcpy call per value */
    case 8: {
        uint64_t x;
        memcpy(&x, v, 8);
        for (Py_ssize_t i = 0; i < n; i++) memcpy(out + 8 * i, &x, 8);
        break;
    }
    case 4: {
        uint32_t x;
        memcpy(&x, v, 4);
        for (Py_ssize_t i = 0; i < n; i++) memcpy(out + 4 * i, &x, 4);
        break;
    }
    case 2: {
        uint16_t x;
        memcpy(&x, v, 2);
        for (Py_ssize_t i = 0; i < n; i++) memcpy(out + 2 * i, &x, 2);
        break;
    }
    default:
        for (Py_ssize_t i = 0; i < n; i++) memcpy(out + i * (Py_ssize_t)size, v, size);
    }
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

/* put_v2 without headers, in room reserved for the whole batch (put_v2_room): the same
   columns, bits and errors, without a capacity check per value. */
static inline void bit_put_room(Buf *b, Py_ssize_t i, int on) {
    if ((i & 7) == 0) b->p[b->len++] = 0;
    if (on) b->p[i >> 3] |= (char)(1 << (i & 7));
    else b->p[i >> 3] &= (char)~(1 << (i & 7));
}

static inline void fixed_room(Col *c, Py_ssize_t row, int valid, const void *v, size_t size) {
    if (!valid) c->nulls++;
    bit_put_room(&c->valid, row, valid);
    memcpy(c->data.p + c->data.len, v, size);
    c->data.len += (Py_ssize_t)size;
}

static inline void var_room(Col *c, Py_ssize_t row, const unsigned char *v, int64_t len) {
    if (len < 0) c->nulls++;
    bit_put_room(&c->valid, row, len >= 0);
    if (len > 0) {
        memcpy(c->data.p + c->data.len, v, (size_t)len);
        c->data.len += (Py_ssize_t)len;
    }
    int32_t e = (int32_t)c->data.len;
    memcpy(c->offs.p + c->offs.len, &e, 4);
    c->offs.len += 4;
}

/* Room for count more rows of a batch without headers: 1, or 0 where an offset column would
   pass 2 GiB (put_v2's checked path raises then), -1 on a memory error. */
static int put_v2_room(Columns *C, const Parsed *recs, Py_ssize_t count) {
    int64_t keys = 0, values = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (recs[i].key_len > 0) keys += recs[i].key_len;
        if (recs[i].value_len > 0) values += recs[i].value_len;
    }
    Col *c = C->cols;
    if (c[C_KEY].data.len + keys > INT32_MAX || c[C_VALUE].data.len + values > INT32_MAX ||
        C->headers > INT32_MAX)
        return 0;
    const Py_ssize_t bits = count / 8 + 1;
    static const int fixed[][2] = {{C_OFFSET, 8}, {C_TIMESTAMP, 8}, {C_SEQUENCE, 4}};
    for (int k = 0; k < 3; k++) {
        Col *f = &c[fixed[k][0]];
        if (buf_reserve(&f->valid, bits) < 0 || buf_reserve(&f->data, count * fixed[k][1]) < 0)
            return -1;
    }
    if (buf_reserve(&c[C_KEY].valid, bits) < 0 || buf_reserve(&c[C_KEY].data, (Py_ssize_t)keys) < 0 ||
        buf_reserve(&c[C_KEY].offs, 4 * count) < 0 || buf_reserve(&c[C_VALUE].valid, bits) < 0 ||
        buf_reserve(&c[C_VALUE].data, (Py_ssize_t)values) < 0 ||
        buf_reserve(&c[C_VALUE].offs, 4 * count) < 0 ||
        buf_reserve(&c[C_HEADERS].valid, bits) < 0 || buf_reserve(&c[C_HEADERS].offs, 4 * count) < 0)
        return -1;
    return 1;
}

/* What a v2 batch header gives each of its records' coordinates. */
typedef struct {
    int64_t base_offset, base_ts, max_ts;
    int32_t base_seq;
    int log_append;
} V2Base;

static V2Base v2_base(const unsigned char *entry) {
    V2Base h = {be64(entry), be64(entry + 27), be64(entry + 35), be32(entry + 53),
                ((entry[21] << 8) | entry[22]) & 0x08};
    return h;
}

/* Record i's offset, timestamp (milliseconds to microseconds, wrapping as numpy's int64
   does) and increment_sequence's sequence (the base sequence plus the offset delta, wrapped
   past INT32_MAX; meaningful only with a base sequence); -1 with the error set. */
static inline int v2_coordinates(const V2Base *h, const Parsed *r, Py_ssize_t i,
                                 int64_t *offset, int64_t *us, int64_t *seq) {
    int64_t ts;
    if (__builtin_add_overflow(h->base_offset, r->off_delta, offset)) {
        out_of_range("offset", i);
        return -1;
    }
    if (h->log_append) ts = h->max_ts;
    else if (__builtin_add_overflow(h->base_ts, r->ts_delta, &ts)) {
        out_of_range("timestamp", i);
        return -1;
    }
    *us = (int64_t)((uint64_t)ts * 1000u);
    *seq = (int64_t)h->base_seq + r->off_delta;
    if (*seq > INT32_MAX) *seq -= 0x80000000LL;
    return 0;
}

static int put_v2_plain(Columns *C, const unsigned char *entry, const Parsed *recs,
                        Py_ssize_t count, const BatchFields *b) {
    const V2Base h = v2_base(entry);
    const int has_seq = h.base_seq >= 0;
    const int32_t headers = (int32_t)C->headers;
    Col *c = C->cols;
    for (Py_ssize_t i = 0; i < count; i++) {
        const Parsed *r = &recs[i];
        const Py_ssize_t row = C->rows;
        int64_t offset, us, seq;
        if (v2_coordinates(&h, r, i, &offset, &us, &seq) < 0) return -1;
        int32_t seq32 = has_seq ? (int32_t)seq : 0;
        fixed_room(&c[C_OFFSET], row, 1, &offset, 8);
        fixed_room(&c[C_TIMESTAMP], row, 1, &us, 8);
        var_room(&c[C_KEY], row, r->key, r->key_len);
        var_room(&c[C_VALUE], row, r->value, r->value_len);
        Col *list = &c[C_HEADERS]; /* a null list */
        list->nulls++;
        bit_put_room(&list->valid, row, 0);
        memcpy(list->offs.p + list->offs.len, &headers, 4);
        list->offs.len += 4;
        fixed_room(&c[C_SEQUENCE], row, has_seq, &seq32, 4);
        C->rows++;
    }
    return put_batch_fields(C, b, C->rows - count, count);
}

/* Append the parsed records of one v2 data batch whose header is entry[0:61]. */
static int put_v2(Columns *C, const unsigned char *entry, const Parsed *recs, Py_ssize_t count,
                  int64_t position) {
    const V2Base h = v2_base(entry);
    const int attrs = (entry[21] << 8) | entry[22];
    BatchFields b = {1, 1, (attrs & 0x10) != 0, (attrs & 0x20) != 0, (attrs >> 3) & 1,
                     be64(entry + 43), position, (int16_t)((entry[51] << 8) | entry[52])};
    Col *c = C->cols;
    if (!C->with_headers) {
        int fast = put_v2_room(C, recs, count);
        if (fast < 0) return -1;
        if (fast) return put_v2_plain(C, entry, recs, count, &b);
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        const Parsed *r = &recs[i];
        const Py_ssize_t row = C->rows;
        int64_t offset, us, seq;
        if (v2_coordinates(&h, r, i, &offset, &us, &seq) < 0) return -1;
        /* The sequence: Record.sequence (null when negative) with headers, else
           increment_sequence (null only without a base sequence). */
        int has_seq = h.base_seq >= 0;
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

static Py_ssize_t Columns_nbytes(const Columns *C) {
    Py_ssize_t n = 0;
    for (int i = 0; i < N_COLS; i++) n += C->cols[i].data.len;
    return n;
}

/* add_entries(data, pos, position_base, verify_crc, max_size, max_records, batch_rows,
   flush_bytes, decompress) -> pos: the v2 batches of data from pos on (compressed
   data batches too when decompress, the reader's decompress function, is not None), with the
   checks of the segment reader's framing and _open_v2 (and, for an uncompressed control
   batch, decode_entry's checks of its keys and markers). It stops before the first entry that
   is anything else (a framing error, a legacy entry, a compressed control batch, a bad count
   or CRC, records that do not decompress or parse, control records the checks refuse: the
   caller reads that one as the pure loop does), before an entry when flush_bytes of column
   data are held, and after the entry that brings the rows to batch_rows; it returns where it
   stopped. It keeps newest_time of the batches with records it takes in. */
static PyObject *Columns_add_entries(Columns *C, PyObject *const *args, Py_ssize_t nargs) {
    if (!arity_ok(nargs, 9,
                  "add_entries(data, pos, position_base, verify_crc, max_size, max_records, "
                  "batch_rows, flush_bytes, decompress) takes 9 arguments"))
        return NULL;
    int64_t pos, base, max_size, max_records, batch_rows, flush_bytes;
    if (as_int64(args[1], &pos) < 0 || as_int64(args[2], &base) < 0 ||
        as_int64(args[4], &max_size) < 0 || as_int64(args[5], &max_records) < 0 ||
        as_int64(args[6], &batch_rows) < 0 || as_int64(args[7], &flush_bytes) < 0)
        return NULL;
    int verify_crc = PyObject_IsTrue(args[3]);
    if (verify_crc < 0) return NULL;
    PyObject *decompress = args[8];
    Segment seg;
    if (segment_hold(&seg, args[0], pos, "add_entries") < 0) return NULL;
    const unsigned char *d = seg.buf.buf;
    const Py_ssize_t n = seg.buf.len;
    Parsed *recs = NULL;
    Py_ssize_t cap = 0;
    PyObject *out = NULL;
    while (pos < n && Columns_nbytes(C) <= flush_bytes && !Columns_full(C)) {
        int crc_ok = 0;
        const Py_ssize_t total = v2_size(d, n, pos, max_size, max_records, verify_crc,
                                         decompress != Py_None, &crc_ok);
        if (total < 0) goto done;
        if (total == 0) break;
        const unsigned char *e = d + pos;
        const int control = (e[22] & 0x20) != 0;
        if (control && (e[22] & 0x07)) break;
        const int32_t count = be32(e + 57);
        BatchRecords r;
        const int found = batch_records(&r, decompress, seg.bytes_view, e, pos, total, max_size);
        if (found < 0) goto done;
        if (!found) break;
        if (parsed_room(&recs, &cap, count) < 0) {
            Py_XDECREF(r.held);
            goto done;
        }
        if (parse(r.data, r.start, r.end, count, recs, 0) < 0) {
            Py_XDECREF(r.held);
            if (!PyErr_ExceptionMatches(MalformedRecords)) goto done;
            PyErr_Clear(); /* the caller's reference read says why */
            break;
        }
        if (control && !control_records_ok(recs, count, be64(e))) break;
        Mark m;
        mark_save(C, &m);
        const int put = put_v2(C, e, recs, count, base + pos);
        Py_XDECREF(r.held); /* the records' bytes are copied into the columns */
        if (put < 0) {
            mark_restore(C, &m);
            goto done;
        }
        if (count > 0 && be64(e + 35) > C->newest_time) C->newest_time = be64(e + 35);
        pos += total;
        if (C->rows >= batch_rows) break;
    }
    if (!PyErr_Occurred()) out = PyLong_FromLongLong(pos);
done:
    PyMem_Free(recs);
    segment_release(&seg);
    return out;
}

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
    if (nargs != 7 || !PyList_Check(args[0]))
        return usage_error("add_rows(rows: list, position, timestamp_type, producer_id, "
                           "producer_epoch, is_transactional, is_control) takes 7 arguments");
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
    if (!arity_ok(nargs, 2, "add_error(base_offset, position) takes 2 arguments")) return NULL;
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

/* The buffer's bytes (its bytes object, cut to them); the buffer starts again empty, in a new
   bytes object as large (the next Arrow batch needs as much). NULL with an error, the buffer
   emptied all the same. */
static PyObject *buf_take(Buf *b) {
    PyObject *out = b->obj;
    const Py_ssize_t len = b->len;
    b->len = 0;
    if (!out) return PyBytes_FromStringAndSize("", 0);
    b->obj = PyBytes_FromStringAndSize(NULL, b->cap);
    b->p = b->obj ? PyBytes_AS_STRING(b->obj) : NULL;
    if (!b->obj) {
        b->cap = 0;
        Py_DECREF(out);
        return NULL;
    }
    /* A view of its first len bytes: the bytes object is not cut, so when Arrow frees it the
       allocator keeps a block as large for the next one (no new pages to fault in). */
    PyObject *view = PyMemoryView_FromObject(out);
    Py_DECREF(out);
    if (!view) return NULL;
    PyObject *cut = PySequence_GetSlice(view, 0, len);
    Py_DECREF(view);
    return cut;
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
    Columns_reset(C); /* the buffers taken are gone: after an error too */
    return out;
}

static PyObject *Columns_get_rows(Columns *C, void *closure) { return PyLong_FromSsize_t(C->rows); }

static PyObject *Columns_get_nbytes(Columns *C, void *closure) {
    return PyLong_FromSsize_t(Columns_nbytes(C));
}

static PyObject *Columns_get_newest_time(Columns *C, void *closure) {
    return PyLong_FromLongLong(C->newest_time);
}

static PyObject *Columns_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"with_headers", NULL};
    int with_headers = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|p:ColumnBuilder", names, &with_headers))
        return NULL;
    Columns *C = (Columns *)type->tp_alloc(type, 0);
    if (!C) return NULL;
    C->with_headers = with_headers;
    C->newest_time = -1;
    Columns_reset(C);
    if (PyErr_Occurred()) {
        Py_DECREF(C);
        return NULL;
    }
    return (PyObject *)C;
}

static void Columns_dealloc(Columns *C) {
    for (int i = 0; i < N_COLS; i++) {
        Py_XDECREF(C->cols[i].valid.obj);
        Py_XDECREF(C->cols[i].data.obj);
        Py_XDECREF(C->cols[i].offs.obj);
    }
    Py_TYPE(C)->tp_free((PyObject *)C);
}

static PyMethodDef Columns_methods[] = {
    {"add_entries", (PyCFunction)(void (*)(void))Columns_add_entries, METH_FASTCALL,
     "add_entries(data, pos, position_base, verify_crc, max_size, max_records, batch_rows, "
     "flush_bytes, decompress) -> pos: the v2 batches from pos on, up to the first "
     "entry the caller must read, or until an Arrow batch is due."},
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
    {"newest_time", (getter)Columns_get_newest_time, NULL,
     "the newest maxTimestamp of the batches with records add_entries took in (-1: none), "
     "over every finish()",
     NULL},
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

#endif /* SPECGEN_RECORD_COLUMNS_H */
