/* The jsonl lines of `dump --format jsonl`, written as text from decoded records, in C.
 *
 * The decoding stays the record loop's (records.c, engine.c); this module only prints. A
 * Plan is the JSON form of one generated struct at one version, built by
 * codegen/dumps/json_text.py from the struct's layout table and its JSON names: a list of
 * fields, each (JSON key, slot, kind, nullable, tagged default, child plan), printed in the
 * order and under the conditions of the generated to_json, as orjson prints to_json's dict
 * (compact, non-ASCII raw, control characters escaped). A Writer prints the lines of one file:
 * Writer.batch(records, close) -> bytes, one call per log batch.
 *
 * A record the plans print exactly is printed here; any other record (another kind, a value
 * without a plan, a value they cannot print: a string with a lone surrogate, a type the decoder
 * does not make) is printed by the writer's `line(rec)` callable, the Python reference, so every
 * line is the reference's. Slots are read at the member offsets checked when a plan is made,
 * and only from objects of exactly the planned class.
 *
 * A user topic's lines are printed straight from the record bytes when every record of the
 * batch reads (json_wire.h: WirePlan; user_wire.h: user_lines, and user_dump_log and
 * user_table_cells for dump-log's lines and table's cells), with no object per record; the other batches go
 * through the record loop and the Writer.
 *
 * One translation unit: the parts are included here, in this order: json_values.h (the output
 * buffer and the JSON text of values), json_plans.h (Plan), json_writer.h (Writer),
 * json_wire.h (WirePlan, with the record parse of v2_records.h), user_wire.h (a user
 * topic's batches in jsonl, dump-log and table forms), table_text.h (a table's text from its
 * cells, for dump --format table), table_cells.h (the cells of a coordinator topic's records
 * in that table); the JSON
 * arrays of integer rows (int64_text.h, object_rows.h: object_arrays), lag's lines (lag_lines.h), the groups'
 * timelines (timeline_arrays.h) and the module follow.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#include "shared.h"

/* Field kinds (codegen/dumps/json_text.py: the same numbers). */
enum { K_INT = 1, K_BOOL, K_STRING, K_BYTES, K_RECORDS, K_UUID, K_STRUCT, K_ARRAY, K_LAST };

/* The record fields the writer reads (DecodedRecord's slots, by name). */
enum {
    R_OFFSET, R_TIMESTAMP, R_KIND, R_KEY_BYTES, R_VALUE, R_VALUE_VERSION, R_NEWER, R_NOTE,
    R_MEMBERS, R_RECORD_TYPE, R_NAME, R_KEY, R_VALUE_BYTES, N_RECORD_FIELDS,
};
static const char *const RECORD_FIELDS[N_RECORD_FIELDS] = {
    "offset", "timestamp", "kind", "key_bytes", "value", "value_version", "newer_than_spec",
    "note", "members", "record_type", "name", "key", "value_bytes",
};

static PyObject *S_bytes;

#include "json_values.h"
#include "json_plans.h"
#include "json_writer.h"
#include "json_wire.h"
#include "user_wire.h"
#include "table_text.h"
#include "table_cells.h"

#include "int64_text.h"
#include "object_rows.h"
#include "lag_lines.h"
#include "timeline_arrays.h"

static PyMethodDef module_methods[] = {
    {"lag_write", (PyCFunction)(void (*)(void))lag_write, METH_FASTCALL,
     "lag_write(write, reference, groups, shares, prefixes, columns, masks, bounds) -> int: "
     "lag's jsonl line of each group, with a newline, given to write a buffer at a time, the "
     "line of a group not printed here made by reference(group); their count (see "
     "lag_lines.h)."},
    {"object_arrays", (PyCFunction)(void (*)(void))object_arrays, METH_FASTCALL,
     "object_arrays(prefixes, columns, masks, bounds) -> list of bytes: JSON arrays of objects "
     "of int64 columns (null where a mask is 0), one per run of rows."},
    {"timeline_arrays", (PyCFunction)(void (*)(void))timeline_arrays, METH_FASTCALL,
     "timeline_arrays(names, code_of, group, at, timestamp, partition, topic_offsets, "
     "topic_data, events) -> list of bytes | None: each group's timeline as a JSON array, "
     "from its deletion columns and its record events, by offset (timeline_arrays.h)."},
    {"user_lines", (PyCFunction)(void (*)(void))user_lines, METH_FASTCALL,
     "user_lines(data, start, end, count, base_offset, base_timestamp, log_append, "
     "append_timestamp, close, heads, key_side, value_side) -> (bytes, newer) | None: a user "
     "topic's jsonl lines of one v2 data batch printed from the record bytes (json_wire.h), "
     "or None where the record loop and the Writer must print it."},
    {"user_dump_log", (PyCFunction)(void (*)(void))user_dump_log, METH_FASTCALL,
     "user_dump_log(data, start, end, count, base_offset, base_timestamp, log_append, "
     "append_timestamp, base_sequence, ts_name, key_side, value_side) -> (str, newer) | None: "
     "a user topic's dump-log record lines of one v2 data batch printed from the record bytes, "
     "or None where the reference must print them."},
    {"user_table_cells", (PyCFunction)(void (*)(void))user_table_cells, METH_FASTCALL,
     "user_table_cells(data, start, end, count, base_offset, base_timestamp, log_append, "
     "append_timestamp, key_side, value_side) -> (rows, newer) | None: a user topic's table "
     "cells (offset, timestamp, key, value) of one v2 data batch from the record bytes, or "
     "None where the reference must make them."},
    {"table_text", (PyCFunction)(void (*)(void))table_text, METH_FASTCALL,
     "table_text(header, columns, title, width, width_of, fit) -> str: the text of a table "
     "given column by column (codegen/dumps/text_table.py's columns_text), cells that are not "
     "one cell a character measured by width_of and fitted by fit."},
    {"record_cells", (PyCFunction)(void (*)(void))record_cells, METH_FASTCALL,
     "record_cells(writer, records, partition, file, columns, keys, times, time_text, row, "
     "tombstone) -> None: the records table's cells of a coordinator topic's records appended "
     "to its eight columns (table_cells.h); row(rec) makes the cells of a record the plans do "
     "not."},
    {NULL, NULL, 0, NULL},
};

/* --------------------------------------------------------------------------- module */

static struct PyModuleDef jsontext_module = {
    PyModuleDef_HEAD_INIT, "_jsontext",
    "The jsonl lines of decoded records, printed from their slots (dump --format jsonl).", -1,
    module_methods,
};

PyMODINIT_FUNC PyInit__jsontext(void) {
    if (check_build("_jsontext") < 0) return NULL;
    if (PyType_Ready(&PlanType) < 0 || PyType_Ready(&WriterType) < 0 ||
        PyType_Ready(&WirePlanType) < 0)
        return NULL;
    /* v2_records.h's parse raises this; user_lines clears it (the reference says why). */
    MalformedRecords = PyExc_ValueError;
    (void)control_records_ok;
    (void)Two;
    (void)MinusOne;
    digit_quads();
    if (!S_bytes && !(S_bytes = PyUnicode_InternFromString("bytes"))) return NULL;
    if (!S_int && !(S_int = PyUnicode_InternFromString("int"))) return NULL;
    if (!UuidType) {
        PyObject *uuid = PyImport_ImportModule("uuid");
        PyObject *cls = uuid ? PyObject_GetAttrString(uuid, "UUID") : NULL;
        Py_XDECREF(uuid);
        if (!cls) return NULL;
        if (!PyType_Check(cls)) {
            Py_DECREF(cls);
            PyErr_SetString(PyExc_TypeError, "uuid.UUID is not a class");
            return NULL;
        }
        UuidType = (PyTypeObject *)cls; /* kept for the module's life */
    }
    PyObject *m = PyModule_Create(&jsontext_module);
    if (!m) return NULL;
    if (PyModule_AddObjectRef(m, "Plan", (PyObject *)&PlanType) < 0 ||
        PyModule_AddStringConstant(m, "SOURCES_DIGEST", SPECGEN_SOURCES_DIGEST) < 0 ||
        PyModule_AddObjectRef(m, "Writer", (PyObject *)&WriterType) < 0 ||
        PyModule_AddObjectRef(m, "WirePlan", (PyObject *)&WirePlanType) < 0 ||
        PyModule_AddIntConstant(m, "D_NONE", D_NONE) < 0 ||
        PyModule_AddIntConstant(m, "D_INT", D_INT) < 0 ||
        PyModule_AddIntConstant(m, "D_TEXT", D_TEXT) < 0 ||
        PyModule_AddIntConstant(m, "D_EMPTY_LIST", D_EMPTY_LIST) < 0 ||
        PyModule_AddIntConstant(m, "D_UUID", D_UUID) < 0 ||
        PyModule_AddIntConstant(m, "D_STRUCT", D_STRUCT) < 0 ||
        PyModule_AddIntConstant(m, "INT", K_INT) < 0 ||
        PyModule_AddIntConstant(m, "BOOL", K_BOOL) < 0 ||
        PyModule_AddIntConstant(m, "STRING", K_STRING) < 0 ||
        PyModule_AddIntConstant(m, "BYTES", K_BYTES) < 0 ||
        PyModule_AddIntConstant(m, "RECORDS", K_RECORDS) < 0 ||
        PyModule_AddIntConstant(m, "UUID", K_UUID) < 0 ||
        PyModule_AddIntConstant(m, "STRUCT", K_STRUCT) < 0 ||
        PyModule_AddIntConstant(m, "ARRAY", K_ARRAY) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
