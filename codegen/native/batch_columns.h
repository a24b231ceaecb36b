/* The header pass into columns (batch_header_columns): what batch_headers reads (log_entries.h's
 * header_at, the same checks and the same stops), written as native-endian arrays rather than
 * a Python object per batch, for the Arrow batch rows (codegen.dumps.batch_rows). Part of the
 * _records module (records.c).
 */
#ifndef SPECGEN_BATCH_COLUMNS_H
#define SPECGEN_BATCH_COLUMNS_H

#include "log_entries.h"

/* The columns, in the order batch_header_columns returns them, and their item sizes. */
enum {
    HC_POSITION,
    HC_SIZE,
    HC_BASE_OFFSET,
    HC_LAST_OFFSET,
    HC_MAX_TIMESTAMP,
    HC_PRODUCER_ID,
    HC_PRODUCER_EPOCH,
    HC_ATTRIBUTES,
    HC_RECORD_COUNT,
    HC_CONTROL_BOUNDS,
    HC_CONTROL_OFFSET,
    HC_CONTROL_TYPE,
    HC_COLUMNS,
};
static const size_t header_column_width[HC_COLUMNS] = {8, 8, 8, 8, 8, 8, 2, 2, 4, 4, 8, 2};

/* A growing array of fixed-size items. */
typedef struct {
    char *data;
    Py_ssize_t len, cap; /* in items */
    size_t width;
} Column;

/* Room for more items past len: 0, or -1 with MemoryError (a size that would overflow
   included). Grows by doubling, from 256 items. */
static int column_room(Column *c, Py_ssize_t more) {
    if (more <= c->cap - c->len) return 0;
    Py_ssize_t want = c->cap ? c->cap : 256;
    while (want - c->len < more) {
        if (want > PY_SSIZE_T_MAX / 2 / (Py_ssize_t)c->width) {
            PyErr_NoMemory();
            return -1;
        }
        want *= 2;
    }
    char *grown = PyMem_Realloc(c->data, (size_t)want * c->width);
    if (!grown) {
        PyErr_NoMemory();
        return -1;
    }
    c->data = grown;
    c->cap = want;
    return 0;
}

#define COLUMN_PUT(c, type, value) (((type *)(c)->data)[(c)->len++] = (type)(value))

/* batch_header_columns(data, pos, verify_crc, max_size, max_records, expansion, limit)
   -> (columns, pos): the headers batch_headers gives with the same arguments (but its
   header_type), as a tuple of 12 bytes objects of native-endian arrays, one item per batch:
   position, size, baseOffset, lastOffset, maxTimestamp, producerId (int64), producerEpoch,
   attributes (int16), recordCount (int32); then the control records: bounds (int32, one more
   item than batches: the control records of batch i are items bounds[i]:bounds[i + 1]),
   their offsets (int64) and control types (int16). It stops where batch_headers stops. */
static PyObject *batch_header_columns(PyObject *module, PyObject *const *args,
                                      Py_ssize_t nargs) {
    if (!arity_ok(nargs, 7,
                  "batch_header_columns(data, pos, verify_crc, max_size, max_records, expansion, "
                  "limit) takes 7 arguments"))
        return NULL;
    HeaderPass hp;
    int64_t pos;
    if (header_pass_args(&hp, args, 6, &pos, "batch_header_columns") < 0) return NULL;
    Segment seg;
    if (segment_hold(&seg, args[0], pos, "batch_header_columns") < 0) return NULL;
    const unsigned char *d = seg.buf.buf;
    const Py_ssize_t n = seg.buf.len;
    Column cols[HC_COLUMNS];
    for (int i = 0; i < HC_COLUMNS; i++)
        cols[i] = (Column){NULL, 0, 0, header_column_width[i]};
    Parsed *recs = NULL;
    Py_ssize_t cap = 0, rows = 0;
    PyObject *out = NULL, *arrays = NULL;
    if (column_room(&cols[HC_CONTROL_BOUNDS], 1) < 0) goto done;
    COLUMN_PUT(&cols[HC_CONTROL_BOUNDS], int32_t, 0);
    while (pos < n && rows < hp.limit) {
        HeaderRead h;
        const int taken = header_at(&seg, pos, &hp, &recs, &cap, &h);
        if (taken < 0) goto done;
        if (!taken) break;
        const unsigned char *e = d + pos;
        const int32_t controls = (h.attrs & 0x20) ? h.count : 0;
        /* the control records so far and these fit the int32 bounds (Arrow's list offsets) */
        if (cols[HC_CONTROL_OFFSET].len > INT32_MAX - controls) break;
        for (int i = 0; i < HC_CONTROL_OFFSET; i++)
            if (column_room(&cols[i], 1) < 0) goto done;
        if (column_room(&cols[HC_CONTROL_OFFSET], controls) < 0 ||
            column_room(&cols[HC_CONTROL_TYPE], controls) < 0)
            goto done;
        COLUMN_PUT(&cols[HC_POSITION], int64_t, pos);
        COLUMN_PUT(&cols[HC_SIZE], int64_t, h.total);
        COLUMN_PUT(&cols[HC_BASE_OFFSET], int64_t, h.base_offset);
        COLUMN_PUT(&cols[HC_LAST_OFFSET], int64_t, h.last_offset);
        COLUMN_PUT(&cols[HC_MAX_TIMESTAMP], int64_t, be64(e + 35));
        COLUMN_PUT(&cols[HC_PRODUCER_ID], int64_t, be64(e + 43));
        COLUMN_PUT(&cols[HC_PRODUCER_EPOCH], int16_t, be16(e + 51));
        COLUMN_PUT(&cols[HC_ATTRIBUTES], int16_t, h.attrs);
        COLUMN_PUT(&cols[HC_RECORD_COUNT], int32_t, h.count);
        for (int32_t i = 0; i < controls; i++) {
            COLUMN_PUT(&cols[HC_CONTROL_OFFSET], int64_t, h.base_offset + recs[i].off_delta);
            COLUMN_PUT(&cols[HC_CONTROL_TYPE], int16_t, be16(recs[i].key + 2));
        }
        COLUMN_PUT(&cols[HC_CONTROL_BOUNDS], int32_t, cols[HC_CONTROL_OFFSET].len);
        rows++;
        pos += h.total;
    }
    arrays = PyTuple_New(HC_COLUMNS);
    if (!arrays) goto done;
    for (int i = 0; i < HC_COLUMNS; i++) {
        PyObject *b = PyBytes_FromStringAndSize(cols[i].data ? cols[i].data : "",
                                                cols[i].len * (Py_ssize_t)cols[i].width);
        if (!b) goto done;
        PyTuple_SET_ITEM(arrays, i, b);
    }
    out = Py_BuildValue("(OL)", arrays, (long long)pos);
done:
    Py_XDECREF(arrays);
    for (int i = 0; i < HC_COLUMNS; i++) PyMem_Free(cols[i].data);
    PyMem_Free(recs);
    segment_release(&seg);
    return out;
}

#endif /* SPECGEN_BATCH_COLUMNS_H */
