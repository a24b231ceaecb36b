/* The _records module: the record loops of the dump decoders, in C, over the records of v2
 * batches (v2_records.h) where they lie in a segment (log_entries.h):
 *
 * - RecordLoop (record_loop.h): the coordinator dump decoder's records, as DecodedRecord
 *   objects, a batch or a run of batches per call; a user topic's as UserRecord objects, as
 *   its topic map says (user_loop.h); both on the loop's object and shared helpers
 *   (loop_state.h);
 * - ColumnBuilder (record_columns.h): the kafka-log raw columns as Arrow buffers;
 * - batch_headers (log_entries.h): the header pass, as objects; CRC-32C in C (crc32c.h);
 * - batch_header_columns (batch_columns.h): the header pass, as columns;
 * - batch_header_ends (header_ends.h): the header pass over many files in one call, what log
 *   ends are made of;
 * - newest_batches (newest_batches.h): the newest time of many files' batches with records,
 *   their header chains walked in turn;
 * - KeyStore (key_store.h): the key table superseded_commits and CommitEffects share
 *   (key_numbers: its numbering of keys whose hashes collide, for the tests);
 * - superseded_commits (superseded_commits.h): the plain offset commits a later one of the
 *   same key supersedes, on the key bytes of the columns;
 * - commit_check (commit_check.h, utf8_strict.h; shared with the _engine module): one offset
 *   commit checked as the generated readers check it, in CommitEffects' pass;
 * - commit_kind (commit_kinds.h): each row's kind for CommitEffects, from its key and flags;
 * - offsets_valid (row_offsets.h): a binary column's row offsets lie in its data;
 * - row_flags (row_flags.h): those flags, from the flag columns' bitmaps;
 * - EffectHistory (effect_history.h): CommitEffects' history mode's rows that took effect, a
 *   column each, and their scatter by key; history_release, the columns kept for the next
 *   history freed;
 * - RowsLeft (rows_left.h): the rows CommitEffects' checked pass leaves for Python, with what
 *   Python reads of them;
 * - CommitEffects (commit_effects.h): the committed offsets of a log partition, in one pass;
 * - LiveKeys (live_keys.h): the live records of a coordinator log partition, in one pass;
 * - record_kinds (record_kinds.h): a chunk's kinds of record (key type, value version), counted;
 * - log_end_index (step_index.h): the log ends' steps indexed by time once a command;
 * - commit_log_ends (log_end_lags.h): each commit's log end offset at its time, and lag;
 * - window_rules (burrow_windows.h): which of Burrow's rules judges each window of commits;
 * - key_order (key_order.h): the order of sorted() of lag's (group, topic, partition) keys;
 * - slot_objects (slot_objects.h): objects of a slots dataclass made from columns.
 *
 * One translation unit: the parts are included here, in that order, and share static helpers.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#include "shared.h"
#include "v2_records.h"
#include "log_entries.h"
#include "loop_state.h"
#include "user_loop.h"
#include "record_loop.h"
#include "record_columns.h"
#include "batch_columns.h"
#include "header_ends.h"
#include "newest_batches.h"
#include "key_store.h"
#include "superseded_commits.h"
#include "utf8_strict.h"
#include "commit_check.h"
#include "commit_kinds.h"
#include "row_offsets.h"
#include "row_flags.h"
#include "effect_history.h"
#include "rows_left.h"
#include "commit_effects.h"
#include "live_keys.h"
#include "record_kinds.h"
#include "step_index.h"
#include "log_end_lags.h"
#include "burrow_windows.h"
#include "key_order.h"
#include "slot_objects.h"

/* records_parse(data, start, end, count) -> bool: whether the count records of
   data[start:end] parse (v2_records.h's first pass), as the record loop needs them to. */
static PyObject *records_parse(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (!arity_ok(nargs, 4, "records_parse(data, start, end, count)")) return NULL;
    Py_ssize_t start = PyLong_AsSsize_t(args[1]);
    Py_ssize_t end = start == -1 && PyErr_Occurred() ? -1 : PyLong_AsSsize_t(args[2]);
    Py_ssize_t count = end == -1 && PyErr_Occurred() ? -1 : PyLong_AsSsize_t(args[3]);
    if (count == -1 && PyErr_Occurred()) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *out = NULL;
    Parsed *recs = NULL;
    if (start < 0 || end < start || end > view.len || count < 0 || count > end - start) {
        out = Py_NewRef(Py_False);
    } else if (!(recs = PyMem_Malloc((size_t)(count ? count : 1) * sizeof(Parsed)))) {
        PyErr_NoMemory();
    } else if (parse(view.buf, start, end, count, recs, 0) < 0) {
        if (PyErr_ExceptionMatches(MalformedRecords)) {
            PyErr_Clear();
            out = Py_NewRef(Py_False);
        }
    } else {
        out = Py_NewRef(Py_True);
    }
    PyMem_Free(recs);
    PyBuffer_Release(&view);
    return out;
}

static PyMethodDef records_functions[] = {
    {"records_parse", (PyCFunction)(void (*)(void))records_parse, METH_FASTCALL,
     "records_parse(data, start, end, count) -> bool: whether the records of one v2 data "
     "batch parse as the record loop parses them (else the reference says what is wrong)."},
    {"batch_headers", (PyCFunction)(void (*)(void))batch_headers, METH_FASTCALL,
     "batch_headers(data, pos, verify_crc, max_size, max_records, expansion, header_type, "
     "limit) -> (headers, pos): the v2 batch headers from pos on, up to the first "
     "entry the caller must read with the reference, or limit headers."},
    {"batch_header_columns", (PyCFunction)(void (*)(void))batch_header_columns, METH_FASTCALL,
     "batch_header_columns(data, pos, verify_crc, max_size, max_records, expansion, limit) -> (columns, pos): batch_headers' headers as 12 native-endian arrays (bytes)."},
    {"batch_header_ends", (PyCFunction)(void (*)(void))batch_header_ends, METH_FASTCALL,
     "batch_header_ends(buffers, verify_crc, max_size, max_records, expansion) -> "
     "(max_timestamp, last_offset, counts, stops): the maxTimestamp and lastOffset of the v2 "
     "batches of every buffer, per buffer up to the first entry the caller must read with the "
     "reference (see header_ends.h)."},
    {"newest_batches", (PyCFunction)(void (*)(void))newest_batches, METH_FASTCALL,
     "newest_batches(buffers, verify_crc, max_size, max_records, expansion) -> (newest, whole): "
     "per buffer, the newest maxTimestamp of its v2 batches with records, and whether the "
     "reference gives the same (else it must read the buffer; see newest_batches.h)."},
    {"crc32c", (PyCFunction)(void (*)(void))crc32c_function, METH_FASTCALL,
     "crc32c(data, by_tables=False) -> int: the CRC-32C of a buffer, as the loops check a "
     "batch's (by_tables: without the CPU's crc32 instruction)."},
    {"key_numbers", (PyCFunction)(void (*)(void))key_numbers, METH_FASTCALL,
     "key_numbers(key_offsets, key_data, hash_mask) -> int64 bytes: each key's number in a "
     "key table whose hashes are anded with hash_mask (for the tests; see key_store.h)."},
    {"superseded_commits", (PyCFunction)superseded_commits, METH_O,
     "superseded_commits(chunks) -> bool | None: mark the plain offset commits a later plain "
     "commit of the same key supersedes (see superseded_commits.h)."},
    {"row_flags", (PyCFunction)(void (*)(void))row_flags, METH_FASTCALL,
     "row_flags(n, control, transactional, tombstone, error, decode_error) -> bytes: each "
     "row's flags for CommitEffects.add_records and add_checked, from bitmaps (see row_flags.h)."},
    {"record_kinds", (PyCFunction)(void (*)(void))record_kinds, METH_FASTCALL,
     "record_kinds(key_offsets, key_data, value_offsets, value_data, rows, key_validity, "
     "key_bit_offset, value_validity, value_bit_offset) -> [(code, first row, count)]: the "
     "kinds of record (key type by value version) of the rows, by code (see record_kinds.h)."},
    {"log_end_index", (PyCFunction)(void (*)(void))log_end_index, METH_FASTCALL,
     "log_end_index(steps) -> capsule: the log ends' steps ((times, ends) pairs, held) "
     "indexed by time once, for commit_log_ends (see step_index.h)."},
    {"commit_log_ends", (PyCFunction)(void (*)(void))commit_log_ends, METH_FASTCALL,
     "commit_log_ends(index, key_steps, bounds, commit_times, committed) -> (log_end, lag, "
     "known): each commit's log end offset at its time and its lag (see log_end_lags.h)."},
    {"window_rules", (PyCFunction)(void (*)(void))window_rules, METH_FASTCALL,
     "window_rules(commit_times, offsets, lags, known, starts, stops, now, min_commits) -> "
     "(rules, back): which of Burrow's rules judges each window of commits (see "
     "burrow_windows.h)."},
    {"key_order", (PyCFunction)key_order, METH_O,
     "key_order(keys) -> bytes | None: int64 indices of keys (a list of (group, topic, "
     "partition)) in the order of sorted(keys); None where a key is of another shape (see "
     "key_order.h)."},
    {"history_release", history_release, METH_NOARGS,
     "history_release() -> None: free the columns kept of the last CommitEffects history freed "
     "for the next one's, and keep none until a history is made (no history follows; see "
     "effect_history.h)."},
    {"slot_objects", (PyCFunction)(void (*)(void))slot_objects, METH_FASTCALL,
     "slot_objects(cls, names, columns) -> list: objects of a slots class, the i-th with slot "
     "names[j] set to columns[j][i], no __init__ run (see slot_objects.h)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef records_module = {
    PyModuleDef_HEAD_INIT, "_records",
    "The coordinator dump record loop, the columnar record loop and the batch header pass.", -1,
    records_functions,
};

PyMODINIT_FUNC PyInit__records(void) {
    if (check_build("_records") < 0) return NULL;
    Two = PyLong_FromLong(2);
    MinusOne = PyLong_FromLong(-1);
    if (!Two || !MinusOne) return NULL;
    MalformedRecords = PyErr_NewExceptionWithDoc(
        "codegen.native._records.MalformedRecords",
        "The records of a batch do not parse; the reference parser tells why.",
        PyExc_ValueError, NULL);
    if (!MalformedRecords) return NULL;
    PyObject *errors = PyImport_ImportModule("codegen.runtime.errors");
    if (!errors) return NULL;
    DecodeError = PyObject_GetAttrString(errors, "DecodeError");
    Py_DECREF(errors);
    if (!DecodeError) return NULL;
    Engine = PyCapsule_Import("codegen.native._engine._C_API", 0);
    if (!Engine) PyErr_Clear(); /* not built: readers are called */
    if (PyType_Ready(&LoopType) < 0 || PyType_Ready(&ColumnsType) < 0 ||
        PyType_Ready(&EffectsType) < 0 || PyType_Ready(&LiveKeysType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&records_module);
    if (!m) return NULL;
    Py_INCREF(&LoopType);
    Py_INCREF(MalformedRecords);
    Py_INCREF(&ColumnsType);
    Py_INCREF(&EffectsType);
    Py_INCREF(&LiveKeysType);
    if (PyModule_AddObject(m, "ColumnBuilder", (PyObject *)&ColumnsType) < 0 ||
        PyModule_AddObject(m, "CommitEffects", (PyObject *)&EffectsType) < 0 ||
        PyModule_AddObject(m, "LiveKeys", (PyObject *)&LiveKeysType) < 0 ||
        PyModule_AddObject(m, "RecordLoop", (PyObject *)&LoopType) < 0 ||
        PyModule_AddObject(m, "MalformedRecords", MalformedRecords) < 0 ||
        PyModule_AddStringConstant(m, "SOURCES_DIGEST", SPECGEN_SOURCES_DIGEST) < 0 ||
        PyModule_AddIntConstant(m, "NEWEST_WALK_HELD", (long)NEWEST_WALK_HELD) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
