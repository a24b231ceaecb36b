/* The header pass over many segment files in one call (batch_header_ends): of each v2 batch
 * header_at takes (log_entries.h: the checks and stops of batch_headers), only what a log end
 * over time is made of, its newest timestamp and last offset, for codegen.dumps.header_ends.
 * Part of the _records module (records.c).
 */
#ifndef SPECGEN_HEADER_ENDS_H
#define SPECGEN_HEADER_ENDS_H

#include "batch_columns.h"

/* The fewest bytes of an entry header_at takes: a v2 batch's header (log_entries.h). */
#define HEADER_ENDS_MIN_BATCH 61

/* Read the v2 batches of one buffer from its start, as header_at takes them, into times and
   lasts from item *len on (room for len / HEADER_ENDS_MIN_BATCH more of its buffer: each batch
   taken is at least that long), *len then past them; *stop receives where the pass stopped
   (the buffer's length when it read every entry). 0, or -1 with an error. */
static int header_ends_of(PyObject *data, const HeaderPass *hp, Parsed **recs, Py_ssize_t *cap,
                          int64_t *times, int64_t *lasts, Py_ssize_t *len, int64_t *stop) {
    Segment seg;
    if (segment_hold(&seg, data, 0, "batch_header_ends") < 0) return -1;
    const unsigned char *d = seg.buf.buf;
    const Py_ssize_t n = seg.buf.len;
    int64_t pos = 0;
    int status = 0;
    Py_ssize_t at = *len;
    while (pos < n) {
        HeaderRead h;
        const int taken = header_at(&seg, pos, hp, recs, cap, &h);
        if (taken <= 0) {
            status = taken;
            break;
        }
        times[at] = be64(d + pos + 35);
        lasts[at] = h.last_offset;
        at++;
        pos += h.total;
    }
    *len = at;
    *stop = pos;
    segment_release(&seg);
    return status;
}

/* batch_header_ends(buffers, verify_crc, max_size, max_records, expansion) -> (max_timestamp,
   last_offset, counts, stops): the v2 batches of every buffer of a sequence, each read from
   its start as batch_header_columns reads it with the same checks, up to the first entry the
   caller must read with the reference. Four bytes objects of native-endian int64 arrays: the
   maxTimestamp and lastOffset of every batch read, buffer after buffer in file order; per
   buffer, how many batches were read of it and where the pass stopped (its length when it
   read every entry).

   The batches' two columns are written into their bytes objects, made as long as the
   buffers' bytes allow batches (one per HEADER_ENDS_MIN_BATCH) and cut to the batches read:
   columns grown by doubling and then copied into bytes wrote each batch's three times, in
   fresh pages (lag with data partitions at 16 M records, 96 files of 552 KB, 768 k batches:
   the log ends' load 8.9 k -> 6.8 k page faults). */
static PyObject *batch_header_ends(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (!arity_ok(nargs, 5,
                  "batch_header_ends(buffers, verify_crc, max_size, max_records, expansion) "
                  "takes 5 arguments"))
        return NULL;
    HeaderPass hp = {0};
    if (header_checks(&hp, args + 1, "batch_header_ends") < 0) return NULL;
    PyObject *buffers = PySequence_Fast(args[0], "batch_header_ends: buffers must be a sequence");
    if (!buffers) return NULL;
    const Py_ssize_t files = PySequence_Fast_GET_SIZE(buffers);
    PyObject *out[4] = {NULL, NULL, NULL, NULL}, *arrays = NULL;
    Parsed *recs = NULL;
    Py_ssize_t cap = 0, room = 0, len = 0;
    for (Py_ssize_t f = 0; f < files; f++) {
        Py_buffer view;
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(buffers, f), &view, PyBUF_SIMPLE) < 0)
            goto done;
        room += view.len / HEADER_ENDS_MIN_BATCH; /* no overflow: bytes held at once */
        PyBuffer_Release(&view);
    }
    const Py_ssize_t sizes[4] = {room * 8, room * 8, files * 8, files * 8};
    for (int i = 0; i < 4; i++)
        if (!(out[i] = PyBytes_FromStringAndSize(NULL, sizes[i]))) goto done;
    int64_t *times = (int64_t *)PyBytes_AS_STRING(out[0]);
    int64_t *lasts = (int64_t *)PyBytes_AS_STRING(out[1]);
    int64_t *counts = (int64_t *)PyBytes_AS_STRING(out[2]);
    int64_t *stops = (int64_t *)PyBytes_AS_STRING(out[3]);
    for (Py_ssize_t f = 0; f < files; f++) {
        const Py_ssize_t before = len;
        if (header_ends_of(PySequence_Fast_GET_ITEM(buffers, f), &hp, &recs, &cap, times, lasts,
                           &len, &stops[f]) < 0)
            goto done;
        counts[f] = len - before;
    }
    /* cut in place (a block shrunk by the allocator is not copied) */
    if (_PyBytes_Resize(&out[0], len * 8) < 0 || _PyBytes_Resize(&out[1], len * 8) < 0) goto done;
    arrays = PyTuple_Pack(4, out[0], out[1], out[2], out[3]);
done:
    for (int i = 0; i < 4; i++) Py_XDECREF(out[i]);
    PyMem_Free(recs);
    Py_DECREF(buffers);
    return arrays;
}

#endif /* SPECGEN_HEADER_ENDS_H */
