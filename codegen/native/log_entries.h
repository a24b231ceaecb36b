/* Log entries: the checks that let a loop read a v2 batch where it lies in a segment (the
 * segment reader's framing, _open_v2's header and count checks, the CRC), and the header pass
 * (batch_headers; header_at, the step batch_columns.h's pass shares). Part of the _records
 * module (records.c).
 */
#ifndef SPECGEN_LOG_ENTRIES_H
#define SPECGEN_LOG_ENTRIES_H

#include "v2_records.h"
#include "crc32c.h"

/* Whether the entry e of total bytes has the CRC-32C of e[21:total] it stores (crc32c.h). */
static inline int crc_matches(const unsigned char *e, Py_ssize_t total) {
    return crc32c_sum(e + 21, (size_t)(total - 21), 0) == (uint32_t)be32(e + 17);
}

/* The size of the entry at d[pos:n] (its 12-byte header included) when the segment reader's
   framing takes it and it is a v2 batch of 61 bytes or more; 0 otherwise. */
static Py_ssize_t v2_entry_size(const unsigned char *d, Py_ssize_t n, int64_t pos,
                                int64_t max_size) {
    const unsigned char *e = d + pos;
    const Py_ssize_t rem = n - (Py_ssize_t)pos;
    if (rem < 12) return 0;
    const int32_t size = be32(e + 8);
    if (size < 14 || size > rem - 12 || size > max_size) return 0; /* framing: the reader's */
    const Py_ssize_t total = 12 + (Py_ssize_t)size;
    return total < 61 || e[16] != 2 ? 0 : total;
}

/* The v2 batch at d[pos:n]: its size (the 12-byte entry header included) when the segment
   reader's framing and _check_v2's checks take it as it is (control or not), 0 when the caller
   must leave it to the reference (anything else: a framing error, a legacy entry, a bad count,
   a CRC that does not match while verify_crc, a compressed batch unless compressed_too), -1
   with an error set. crc_ok receives whether its CRC matches. A compressed batch's record
   count is checked against its decompressed bytes later (decompressed_records). */
static Py_ssize_t v2_size(const unsigned char *d, Py_ssize_t n, int64_t pos, int64_t max_size,
                          int64_t max_records, int verify_crc, int compressed_too,
                          int *crc_ok) {
    const unsigned char *e = d + pos;
    const Py_ssize_t total = v2_entry_size(d, n, pos, max_size);
    if (!total) return 0;
    const int codec = e[22] & 0x07;
    if (codec > 4 || (codec && !compressed_too)) return 0;
    const int32_t count = be32(e + 57);
    if (count < 0 || count > max_size / 7 || count > max_records) return 0;
    if (!codec && count > (total - 61) / 7) return 0;
    *crc_ok = crc_matches(e, total);
    return verify_crc && !*crc_ok ? 0 : total;
}

/* The records of the compressed batch of total bytes at pos in the segment, as _open_v2
   decompresses them: decompress(codec id, the bytes after the batch header, max_size) (the
   reader's own function) gives bytes that hold the batch's count of records at 7 bytes or
   more each. NULL with no error set when the reference must read the batch (decompress
   raises, or gives too few bytes: it says why), or NULL with an error. */
static PyObject *decompressed_records(PyObject *decompress, PyObject *bytes_view,
                                      const unsigned char *e, int64_t pos, Py_ssize_t total,
                                      int64_t max_size) {
    PyObject *payload = PySequence_GetSlice(bytes_view, pos + 61, pos + total);
    if (!payload) return NULL;
    PyObject *codec = PyLong_FromLong(e[22] & 0x07), *limit = PyLong_FromLongLong(max_size);
    PyObject *records = NULL;
    if (codec && limit) {
        PyObject *args[3] = {codec, payload, limit};
        records = PyObject_Vectorcall(decompress, args, 3, NULL);
    }
    Py_XDECREF(codec);
    Py_XDECREF(limit);
    Py_DECREF(payload);
    if (!records) {
        if (PyErr_ExceptionMatches(PyExc_Exception)) PyErr_Clear();
        return NULL;
    }
    if (!PyBytes_CheckExact(records) || be32(e + 57) > PyBytes_GET_SIZE(records) / 7) {
        Py_DECREF(records);
        return NULL;
    }
    return records;
}

/* Where the records of the v2 batch of total bytes at e (at pos in the segment) are: in the
   segment (e[61:total]) or, compressed, in the bytes decompressed_records gives (held: the
   caller releases it with Py_XDECREF when done with the records). */
typedef struct {
    const unsigned char *data;
    Py_ssize_t start, end;
    PyObject *held;
} BatchRecords;

/* 1 with *r filled, 0 when the reference must read the batch (no error set), -1 with an
   error. */
static int batch_records(BatchRecords *r, PyObject *decompress, PyObject *bytes_view,
                         const unsigned char *e, int64_t pos, Py_ssize_t total,
                         int64_t max_size) {
    r->data = e;
    r->start = 61;
    r->end = total;
    r->held = NULL;
    if (!(e[22] & 0x07)) return 1;
    r->held = decompressed_records(decompress, bytes_view, e, pos, total, max_size);
    if (!r->held) return PyErr_Occurred() ? -1 : 0;
    r->data = (const unsigned char *)PyBytes_AS_STRING(r->held);
    r->start = 0;
    r->end = PyBytes_GET_SIZE(r->held);
    return 1;
}

/* A segment's bytes held for a loop over its entries: its buffer, and a memoryview of its
   bytes (whatever the buffer's item format) for the slices decompress is given. */
typedef struct {
    Py_buffer buf;
    PyObject *bytes_view;
} Segment;

/* Hold data (any buffer) for a loop from pos: 0, or -1 with an error and nothing held (pos
   outside the bytes: a ValueError naming who). Release with segment_release. */
static int segment_hold(Segment *s, PyObject *data, int64_t pos, const char *who) {
    if (PyObject_GetBuffer(data, &s->buf, PyBUF_SIMPLE) < 0) return -1;
    if (pos < 0 || pos > s->buf.len) {
        PyErr_Format(PyExc_ValueError, "%s: position %lld outside %zd bytes", who,
                     (long long)pos, s->buf.len);
        PyBuffer_Release(&s->buf);
        return -1;
    }
    PyObject *whole = PyMemoryView_FromObject(data);
    s->bytes_view = whole ? PyObject_CallMethod(whole, "cast", "s", "B") : NULL;
    Py_XDECREF(whole);
    if (!s->bytes_view) {
        PyBuffer_Release(&s->buf);
        return -1;
    }
    return 0;
}

static void segment_release(Segment *s) {
    Py_DECREF(s->bytes_view);
    PyBuffer_Release(&s->buf);
}

/* Whether the records of an uncompressed control batch parse into recs and pass decode_entry's
   checks of control keys and ABORT/COMMIT markers with offsets that fit an int64: 1, 0 when
   the reference must read the batch (no error set), -1 with an error. */
static int control_parsed(const unsigned char *e, Py_ssize_t total, int32_t count,
                          int64_t base_offset, Parsed *recs) {
    if (parse(e, 61, total, count, recs, 0) < 0) {
        if (!PyErr_ExceptionMatches(MalformedRecords)) return -1;
        PyErr_Clear();
        return 0;
    }
    return control_records_ok(recs, count, base_offset);
}

/* The (offset, control type) pairs of the count control records control_parsed parsed into
   recs: a tuple, or NULL with an error. */
static PyObject *control_pairs(int32_t count, int64_t base_offset, const Parsed *recs) {
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

/* The settings of a header pass (batch_headers, batch_header_columns). */
typedef struct {
    int verify_crc;
    int64_t max_size, max_records, limit, expansion[5];
} HeaderPass;

/* The checks of HeaderPass from checks[0:4], the arguments (verify_crc, max_size, max_records,
   expansion) every header pass takes: 0, or -1 with an error. */
static int header_checks(HeaderPass *hp, PyObject *const *checks, const char *who) {
    if (as_int64(checks[1], &hp->max_size) < 0 || as_int64(checks[2], &hp->max_records) < 0)
        return -1;
    hp->verify_crc = PyObject_IsTrue(checks[0]);
    if (hp->verify_crc < 0) return -1;
    if (!PyTuple_Check(checks[3]) || PyTuple_GET_SIZE(checks[3]) != 5) {
        PyErr_Format(PyExc_TypeError, "%s: expansion must be a tuple of 5 ints", who);
        return -1;
    }
    for (int i = 0; i < 5; i++)
        if (as_int64(PyTuple_GET_ITEM(checks[3], i), &hp->expansion[i]) < 0) return -1;
    return 0;
}

/* HeaderPass from the arguments (data, pos, verify_crc, max_size, max_records, expansion,
   ..., limit) both passes over one buffer take, the limit at args[limit_at]: 0, or -1 with an
   error. *pos receives args[1]. */
static int header_pass_args(HeaderPass *hp, PyObject *const *args, Py_ssize_t limit_at,
                            int64_t *pos, const char *who) {
    if (as_int64(args[1], pos) < 0 || as_int64(args[limit_at], &hp->limit) < 0) return -1;
    return header_checks(hp, args + 2, who);
}

/* What the header pass reads of one v2 batch. */
typedef struct {
    Py_ssize_t total; /* the entry's size, its 12-byte header included */
    int attrs;
    int32_t count;
    int64_t base_offset, last_offset;
} HeaderRead;

/* The v2 batch at pos in seg as the header pass takes it, with the checks of
   codegen.dumps.batches.read_batch_header: a data batch by its header and CRC, an uncompressed
   control batch with its records parsed into *recs (grown to *cap) and checked. 1 with *h
   filled, 0 when the reference must read the entry (anything else: a framing error, a legacy
   entry, a bad header, count or CRC, a compressed control batch or one the checks refuse), -1
   with an error. expansion[codec] bounds what a byte of that codec decompresses to (0: no
   bound). */
static int header_at(const Segment *seg, int64_t pos, const HeaderPass *hp, Parsed **recs,
                     Py_ssize_t *cap, HeaderRead *h) {
    const unsigned char *d = seg->buf.buf, *e = d + pos;
    const Py_ssize_t total = v2_entry_size(d, seg->buf.len, pos, hp->max_size);
    if (!total) return 0;
    const int attrs = be16(e + 21), codec = attrs & 0x07, control = (attrs & 0x20) != 0;
    const int32_t count = be32(e + 57);
    const int64_t stored = total - 61;
    if (codec > 4 || count < 0 || count > hp->max_size / 7 || count > hp->max_records) return 0;
    if (codec == 0 && count > stored / 7) return 0;
    const int64_t bound = hp->expansion[codec];
    if (codec != 0 && bound > 0 && (stored > INT64_MAX / bound || count > bound * stored / 7))
        return 0;
    if (control && codec != 0) return 0;
    if (hp->verify_crc) { /* unverified, the sum is never read: not computed */
        if (!crc_matches(e, total)) return 0;
    }
    h->total = total;
    h->attrs = attrs;
    h->count = count;
    h->base_offset = be64(e);
    if (__builtin_add_overflow(h->base_offset, (int64_t)be32(e + 23), &h->last_offset)) return 0;
    if (!control) return 1;
    if (parsed_room(recs, cap, count) < 0) return -1;
    return control_parsed(e, total, count, h->base_offset, *recs);
}

#define N_HEADER_FIELDS 13

/* batch_headers(data, pos, verify_crc, max_size, max_records, expansion, header_type, limit) -> (headers, pos): the headers of the v2 batches of data from pos on that header_at
   takes, as header_type (a tuple subclass of 13 fields: codegen.dumps.model.BatchHeader). It
   stops before the first entry the caller must read with the reference, and after limit
   headers. */
static PyObject *batch_headers(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (!arity_ok(nargs, 8,
                  "batch_headers(data, pos, verify_crc, max_size, max_records, expansion, "
                  "header_type, limit) takes 8 arguments"))
        return NULL;
    HeaderPass hp;
    int64_t pos;
    if (header_pass_args(&hp, args, 7, &pos, "batch_headers") < 0) return NULL;
    /* Its instances are filled here and left untracked by the cyclic collector: a tuple
       subclass without a __dict__ that could make a cycle. */
    if (!PyType_Check(args[6]) || !PyType_IsSubtype((PyTypeObject *)args[6], &PyTuple_Type) ||
        ((PyTypeObject *)args[6])->tp_dictoffset != 0) {
        PyErr_SetString(PyExc_TypeError,
                        "batch_headers: header_type must be a tuple subclass without a __dict__");
        return NULL;
    }
    PyTypeObject *header_type = (PyTypeObject *)args[6];
    Segment seg;
    if (segment_hold(&seg, args[0], pos, "batch_headers") < 0) return NULL;
    const unsigned char *d = seg.buf.buf;
    const Py_ssize_t n = seg.buf.len;
    Parsed *recs = NULL;
    Py_ssize_t cap = 0;
    PyObject *out = NULL, *headers = PyList_New(0), *empty = PyTuple_New(0);
    if (!headers || !empty) goto done;
    while (pos < n && PyList_GET_SIZE(headers) < hp.limit) {
        HeaderRead h;
        const int taken = header_at(&seg, pos, &hp, &recs, &cap, &h);
        if (taken < 0) goto done;
        if (!taken) break;
        const unsigned char *e = d + pos;
        PyObject *controls = empty;
        if (h.attrs & 0x20) {
            controls = control_pairs(h.count, h.base_offset, recs);
            if (!controls) goto done;
        } else {
            Py_INCREF(controls);
        }
        PyObject *item = header_type->tp_alloc(header_type, N_HEADER_FIELDS);
        if (!item) {
            Py_DECREF(controls);
            goto done;
        }
        PyObject *fields[N_HEADER_FIELDS] = {
            PyLong_FromLongLong(pos),
            PyLong_FromSsize_t(h.total),
            PyLong_FromLong(2),
            PyLong_FromLongLong(h.base_offset),
            PyLong_FromLongLong(h.last_offset),
            PyLong_FromLongLong(be64(e + 27)),
            PyLong_FromLongLong(be64(e + 35)),
            PyLong_FromLongLong(be64(e + 43)),
            PyLong_FromLong(be16(e + 51)),
            PyLong_FromLong(be32(e + 53)),
            PyLong_FromLong(h.attrs),
            PyLong_FromLong(h.count),
            controls,
        };
        int failed = 0;
        for (int i = 0; i < N_HEADER_FIELDS; i++) {
            if (!fields[i]) failed = 1;
            PyTuple_SET_ITEM(item, i, fields[i]);
        }
        if (failed) {
            Py_DECREF(item);
            goto done;
        }
        PyObject_GC_UnTrack(item); /* ints and untracked tuples only: never part of a cycle */
        int appended = PyList_Append(headers, item);
        Py_DECREF(item);
        if (appended < 0) goto done;
        pos += h.total;
    }
    out = Py_BuildValue("(OL)", headers, (long long)pos);
done:
    PyMem_Free(recs);
    Py_XDECREF(headers);
    Py_XDECREF(empty);
    segment_release(&seg);
    return out;
}

#endif /* SPECGEN_LOG_ENTRIES_H */
