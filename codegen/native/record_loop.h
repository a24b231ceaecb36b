/* The record loop of the coordinator dump decoder (part of the _records module, records.c).
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
 *   of the count given, which loop checks against the bytes given, one per record:
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
 * batches(...) reads a run of v2 data batches (compressed ones decompressed by the reader's
 * own function) from a segment's bytes in one call, as SegmentReader.decoded_batches reads
 * them a batch at a time with this loop.
 *
 * rows(...) decodes records whose keys and values are slices of two buffers (the columns of
 * the compacted views' chunks: CoordinatorDecoder.decode_slices), record by record as above;
 * every slice is checked against its buffer before the first is decoded.
 *
 * DecodedRecord objects are allocated with tp_alloc and their slots written at the offsets of
 * their member descriptors, checked when the loop is built.
 */
#ifndef SPECGEN_RECORD_LOOP_H
#define SPECGEN_RECORD_LOOP_H

#include "loop_state.h"
#include "user_loop.h"

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

/* The records of d[pos:end], count of them: a list, or NULL with MalformedRecords (or another
   error) set. The whole batch is parsed before any reader runs. */
/* Item i of out: the record r at offset and ts, whose references this takes (either NULL after a
   failed allocation, with its exception set); -1 when the record could not be made. */
static inline int put_record(Loop *L, PyObject *out, Py_ssize_t i, const Parsed *r,
                             PyObject *offset, PyObject *ts) {
    PyObject *rec = !(offset && ts) ? NULL
                    : L->user       ? decode_user(L, r, offset, ts)
                                    : decode_one(L, r, offset, ts);
    Py_XDECREF(offset);
    Py_XDECREF(ts);
    if (!rec) return -1;
    PyList_SET_ITEM(out, i, rec);
    return 0;
}

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
        if (put_record(L, out, i, r, offset, ts) < 0) {
            Py_CLEAR(out);
            goto done;
        }
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
    if ((kwnames && PyTuple_GET_SIZE(kwnames)) || nargs != 8)
        return usage_error("loop(data, start, end, count, base_offset, base_timestamp, "
                           "log_append, append_timestamp) takes 8 positional arguments");
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

/* record_class must be the slotted DecodedRecord: exactly FIELD_NAMES as its __slots__ (for a
   user topic, as its base's: user_loop.h checks its own). */
static int check_record_class(Loop *L, PyObject *cls, int user) {
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "record_class must be a class");
        return -1;
    }
    PyTypeObject *type = user ? ((PyTypeObject *)cls)->tp_base : (PyTypeObject *)cls;
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
    return user_mode_traverse(L->user, visit, arg);
}

static int Loop_clear(Loop *L) {
    Py_CLEAR(L->record_cls);
    Py_CLEAR(L->new_key);
    Py_CLEAR(L->slow);
    Py_CLEAR(L->record_kind);
    Py_CLEAR(L->tombstone_kind);
    cache_clear(L);
    user_mode_free(L->user);
    L->user = NULL;
    return 0;
}

static void Loop_dealloc(Loop *L) {
    PyObject_GC_UnTrack(L);
    Loop_clear(L);
    PyObject_GC_Del(L);
}

static PyObject *Loop_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"record_class", "new_key", "slow", "record_kind", "tombstone_kind",
                            "user", NULL};
    PyObject *cls, *new_key, *slow, *record_kind, *tombstone_kind, *user = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOUU|O:RecordLoop", names, &cls, &new_key,
                                     &slow, &record_kind, &tombstone_kind, &user))
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
    L->user = NULL;
    PyObject_GC_Track(L);
    if (check_record_class(L, cls, user != Py_None) < 0 ||
        (user != Py_None && !(L->user = user_mode((PyTypeObject *)cls, user)))) {
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

/* batches(data, pos, verify_crc, max_size, max_records, batch_class, file, codecs,
   timestamp_types, limit, decompress) -> (items, pos): the v2 data batches of data from pos
   on, each as (record_batch(...), the loop's records of it), read as
   SegmentReader.decoded_batches reads them with this loop, a batch at a time; compressed ones
   too when decompress (the reader's decompress function) is not None. It stops before the
   first entry that is anything else (see v2_size and decompressed_records; a control batch;
   records the loop refuses, for whatever Exception: the caller reads that one as before, and
   gets the same answer) and after the batch that brings the records to limit; it returns
   where it stopped. codecs are the Codec members by id, timestamp_types the two types by
   attribute bit 3. */
static PyObject *Loop_batches(Loop *L, PyObject *const *args, Py_ssize_t nargs) {
    if (!arity_ok(nargs, 11,
                  "batches(data, pos, verify_crc, max_size, max_records, batch_class, file, "
                  "codecs, timestamp_types, limit, decompress) takes 11 arguments"))
        return NULL;
    if (!L->slow) {
        PyErr_SetString(PyExc_RuntimeError, "this record loop has been cleared");
        return NULL;
    }
    int64_t pos, max_size, max_records, limit;
    if (as_int64(args[1], &pos) < 0 || as_int64(args[3], &max_size) < 0 ||
        as_int64(args[4], &max_records) < 0 || as_int64(args[9], &limit) < 0)
        return NULL;
    int verify_crc = PyObject_IsTrue(args[2]);
    if (verify_crc < 0) return NULL;
    PyObject *batch_class = args[5], *file = args[6], *codecs = args[7];
    PyObject *ts_types = args[8], *decompress = args[10];
    if (!PyTuple_Check(ts_types) || PyTuple_GET_SIZE(ts_types) != 2) {
        PyErr_SetString(PyExc_TypeError, "batches: timestamp_types must be a tuple of 2");
        return NULL;
    }
    if (!PyTuple_Check(codecs) || PyTuple_GET_SIZE(codecs) != 5) {
        PyErr_SetString(PyExc_TypeError, "batches: codecs must be a tuple of 5");
        return NULL;
    }
    const int compressed_too = decompress != Py_None;
    Segment seg;
    if (segment_hold(&seg, args[0], pos, "batches") < 0) return NULL;
    const unsigned char *d = seg.buf.buf;
    const Py_ssize_t n = seg.buf.len;
    PyObject *out = NULL, *items = PyList_New(0);
    int64_t records = 0;
    if (!items) goto done;
    while (pos < n && records < limit) {
        int crc_ok = 0;
        const Py_ssize_t total =
            v2_size(d, n, pos, max_size, max_records, verify_crc, compressed_too, &crc_ok);
        if (total < 0) goto done;
        const unsigned char *e = d + pos;
        if (total == 0 || (e[22] & 0x20)) break;
        const int codec = e[22] & 0x07;
        BatchRecords r;
        const int found = batch_records(&r, decompress, seg.bytes_view, e, pos, total, max_size);
        if (found < 0) goto done;
        if (!found) break;
        PyObject *batch = record_batch(batch_class, file, PyTuple_GET_ITEM(codecs, codec),
                                       ts_types, e, pos, total, crc_ok);
        if (!batch) {
            Py_XDECREF(r.held);
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
            recs = run(L, r.data, r.start, r.end, count, base_offset, base_offset_obj, base_ts,
                       base_ts_obj, append_ts_obj);
        }
        Py_XDECREF(r.held);
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
    segment_release(&seg);
    return out;
}

/* One int64 array argument of rows(): its buffer, checked to hold n values (n < 0: any count,
   set from this one). */
static int int64_rows(PyObject *o, Py_buffer *view, Py_ssize_t *n, const char *what) {
    if (PyObject_GetBuffer(o, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    const char *f = view->format ? view->format : "B";
    if (f[0] == '<' || f[0] == '=' || f[0] == '@') f++;
    if (view->itemsize != 8 || (f[0] != 'q' && f[0] != 'l') || f[1] != '\0' ||
        (*n >= 0 && view->len / 8 != *n)) {
        if (*n < 0)
            PyErr_Format(PyExc_ValueError, "rows: %s must be int64 values", what);
        else
            PyErr_Format(PyExc_ValueError, "rows: %s must be %zd int64 values", what, *n);
        PyBuffer_Release(view);
        return -1;
    }
    *n = view->len / 8;
    return 0;
}

/* Where row i's bytes are in data (size -1: null), or -1 with ValueError when they are not
   all inside it. */
static int row_bytes(const Py_buffer *data, const int64_t *starts, const int64_t *sizes,
                     Py_ssize_t i, const char *what, const unsigned char **at, int64_t *len) {
    const int64_t start = starts[i], size = sizes[i];
    *at = (const unsigned char *)data->buf;
    *len = size;
    if (size == -1) return 0;
    if (start < 0 || size < 0 || start > data->len || size > data->len - start) {
        PyErr_Format(PyExc_ValueError,
                     "rows: %s of row %zd (start %lld, size %lld) is outside its %zd bytes", what,
                     i, (long long)start, (long long)size, data->len);
        return -1;
    }
    if (start) *at += start; /* (an empty buffer's pointer may be NULL) */
    return 0;
}

/* rows(keys, key_starts, key_sizes, values, value_starts, value_sizes, offsets, timestamps):
   the records of rows whose keys and values are slices of two buffers (a size of -1: null),
   decoded as the loop decodes a batch's records, one per row in order (what
   CoordinatorDecoder.decode_raw gives of the same (offset, timestamp, key, value) rows). The
   six arrays are int64 and of one length; every slice is checked against its buffer first. */
static PyObject *Loop_rows(Loop *L, PyObject *const *args, Py_ssize_t nargs) {
    static const char usage[] =
        "rows(keys, key_starts, key_sizes, values, value_starts, value_sizes, offsets, "
        "timestamps) takes 8 arguments";
    static const char *names[] = {"key_starts", "key_sizes", "value_starts",
                                  "value_sizes", "offsets", "timestamps"};
    if (!arity_ok(nargs, 8, usage)) return NULL;
    if (!L->slow) {
        PyErr_SetString(PyExc_RuntimeError, "this record loop has been cleared");
        return NULL;
    }
    if (L->user) {
        PyErr_SetString(PyExc_TypeError, "rows reads coordinator records only");
        return NULL;
    }
    PyObject *const arrays[6] = {args[1], args[2], args[4], args[5], args[6], args[7]};
    Py_buffer keys, values, v[6];
    int held = 0, have_keys = 0, have_values = 0;
    PyObject *out = NULL;
    Py_ssize_t n = -1;
    for (; held < 6; held++)
        if (int64_rows(arrays[held], &v[held], &n, names[held]) < 0) goto done;
    if (PyObject_GetBuffer(args[0], &keys, PyBUF_SIMPLE) < 0) goto done;
    have_keys = 1;
    if (PyObject_GetBuffer(args[3], &values, PyBUF_SIMPLE) < 0) goto done;
    have_values = 1;
    const int64_t *key_starts = v[0].buf, *key_sizes = v[1].buf, *value_starts = v[2].buf,
                  *value_sizes = v[3].buf, *offsets = v[4].buf, *timestamps = v[5].buf;
    Parsed r;
    memset(&r, 0, sizeof r);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (row_bytes(&keys, key_starts, key_sizes, i, "the key", &r.key, &r.key_len) < 0 ||
            row_bytes(&values, value_starts, value_sizes, i, "the value", &r.value,
                      &r.value_len) < 0)
            goto done;
    }
    out = PyList_New(n);
    if (!out) goto done;
    if (L->used > KEY_CACHE_SIZE) cache_clear(L);
    for (Py_ssize_t i = 0; i < n; i++) {
        row_bytes(&keys, key_starts, key_sizes, i, "the key", &r.key, &r.key_len);
        row_bytes(&values, value_starts, value_sizes, i, "the value", &r.value, &r.value_len);
        if (r.key_len >= 0) r.key_hash = HASH_BYTES(r.key, (Py_ssize_t)r.key_len);
        PyObject *offset = PyLong_FromLongLong(offsets[i]);
        PyObject *ts = offset ? PyLong_FromLongLong(timestamps[i]) : NULL;
        if (put_record(L, out, i, &r, offset, ts) < 0) {
            Py_CLEAR(out);
            goto done;
        }
    }
done:
    if (have_values) PyBuffer_Release(&values);
    if (have_keys) PyBuffer_Release(&keys);
    while (held > 0) PyBuffer_Release(&v[--held]);
    return out;
}

static PyMethodDef Loop_methods[] = {
    {"clear_keys", (PyCFunction)Loop_clear_keys, METH_NOARGS, "Forget the decoded keys."},
    {"batches", (PyCFunction)(void (*)(void))Loop_batches, METH_FASTCALL,
     "batches(data, pos, verify_crc, max_size, max_records, batch_class, file, codecs, "
     "timestamp_types, limit, decompress) -> (items, pos): (batch, records) of the v2 data "
     "batches from pos on, up to the first entry the caller must read itself."},
    {"rows", (PyCFunction)(void (*)(void))Loop_rows, METH_FASTCALL,
     "rows(keys, key_starts, key_sizes, values, value_starts, value_sizes, offsets, "
     "timestamps) -> records: the records of rows whose keys and values are slices of two "
     "buffers (size -1: null), decoded as a batch's records are."},
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
    .tp_doc = "RecordLoop(record_class, new_key, slow, record_kind, tombstone_kind, user=None)\n\n"
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

#endif /* SPECGEN_RECORD_LOOP_H */
