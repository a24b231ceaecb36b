/* The header pass over many segment files in one call (batch_header_ends): of each v2 batch
 * header_at takes (log_entries.h: the checks and stops of batch_headers), only what a log end
 * over time is made of, its newest timestamp and last offset, for codegen.dumps.header_ends.
 * Part of the _records module (records.c).
 */
#ifndef SPECGEN_HEADER_ENDS_H
#define SPECGEN_HEADER_ENDS_H

#include "batch_columns.h"

/* Read the v2 batches of one buffer from its start, as header_at takes them, into times and
   lasts (int64 columns); *stop receives where the pass stopped (the buffer's length when it
   read every entry). 0, or -1 with an error. */
static int header_ends_of(PyObject *data, const HeaderPass *hp, Parsed **recs, Py_ssize_t *cap,
                          Column *times, Column *lasts, int64_t *stop) {
    Segment seg;
    if (segment_hold(&seg, data, 0, "batch_header_ends") < 0) return -1;
    const unsigned char *d = seg.buf.buf;
    const Py_ssize_t n = seg.buf.len;
    int64_t pos = 0;
    int status = 0;
    while (pos < n) {
        HeaderRead h;
        const int taken = header_at(&seg, pos, hp, recs, cap, &h);
        if (taken <= 0) {
            status = taken;
            break;
        }
        if (column_room(times, 1) < 0 || column_room(lasts, 1) < 0) {
            status = -1;
            break;
        }
        COLUMN_PUT(times, int64_t, be64(d + pos + 35));
        COLUMN_PUT(lasts, int64_t, h.last_offset);
        pos += h.total;
    }
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
   read every entry). */
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
    Column cols[4] = {{NULL, 0, 0, 8}, {NULL, 0, 0, 8}, {NULL, 0, 0, 8}, {NULL, 0, 0, 8}};
    Column *times = &cols[0], *lasts = &cols[1], *counts = &cols[2], *stops = &cols[3];
    Parsed *recs = NULL;
    Py_ssize_t cap = 0;
    PyObject *out = NULL, *arrays = NULL;
    if (column_room(counts, files) < 0 || column_room(stops, files) < 0) goto done;
    for (Py_ssize_t f = 0; f < files; f++) {
        const Py_ssize_t before = times->len;
        int64_t stop;
        if (header_ends_of(PySequence_Fast_GET_ITEM(buffers, f), &hp, &recs, &cap, times, lasts,
                           &stop) < 0)
            goto done;
        COLUMN_PUT(counts, int64_t, times->len - before);
        COLUMN_PUT(stops, int64_t, stop);
    }
    arrays = PyTuple_New(4);
    if (!arrays) goto done;
    for (int i = 0; i < 4; i++) {
        PyObject *b = PyBytes_FromStringAndSize(cols[i].data ? cols[i].data : "",
                                                cols[i].len * (Py_ssize_t)cols[i].width);
        if (!b) goto done;
        PyTuple_SET_ITEM(arrays, i, b);
    }
    out = Py_NewRef(arrays);
done:
    Py_XDECREF(arrays);
    for (int i = 0; i < 4; i++) PyMem_Free(cols[i].data);
    PyMem_Free(recs);
    Py_DECREF(buffers);
    return out;
}

#endif /* SPECGEN_HEADER_ENDS_H */
