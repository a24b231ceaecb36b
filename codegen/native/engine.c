/* The _engine module: one table-driven decoder for every generated message.
 *
 * A layout table (built by codegen/native_tables.py) describes each struct of a message at
 * one version as a list of ops. reader(table, classes, unknown_tags) converts it once into C
 * structs and returns a callable with the pure reader's signature: reader(buf, offset) ->
 * (obj, next_offset); with rows=True the same table reads rows (a tuple per struct, in slot
 * order). Checks, their order and the errors (class, text, field path, byte offset) are those
 * of the pure reader in templates/read.py.j2 and codegen/runtime.
 *
 * One translation unit: the parts are included here, in this order, and share static helpers:
 *
 * - table_format.h: the numbers of the table format (generated from
 *   codegen/native/table_format.py; `python -m codegen check` keeps it current);
 * - wire.h: big-endian loads, the unsigned varint reader and the read limits (shared with the
 *   _records module);
 * - tables.h: the tables as C structs, the Reader that owns them, a read's context;
 * - interpreter.h: reading a message by its tables, and the errors it raises;
 * - table_loader.h: the Python tables into tables.h's structs;
 * - readers.h: Reader and PairReader, what Python calls;
 * - utf8_strict.h: Python's strict UTF-8 check (shared with the _records module);
 * - column_values.h, columns.h: columns(), many messages into Arrow buffers;
 * - commit_check.h: one offset commit checked as the generated readers check it (shared with
 *   the _records module);
 * - commit_columns.h: commit_columns(), the offset commits of __consumer_offsets rows.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#include "shared.h"
#include "table_format.h"
#include "wire.h"
#include "base64.h"

/* The module's state: the error classes it raises, the uuid type it makes, interned names. */
static PyObject *DecodeError, *BufferUnderflow, *InvalidLength, *UnexpectedNull, *InvalidUtf8,
    *InvalidTaggedField, *TrailingBytes;
static PyTypeObject *UuidType;
static PyObject *UuidSafeUnknown, *UuidCallable, *ObjectNew, *EmptyStr;
static Py_ssize_t UuidIntOffset = -1, UuidSafeOffset = -1;
static PyObject *S_tagged_fields, *S_field, *S_offset, *S_located, *S_unknown_tags, *S_int, *S_is_safe, *S_message, *S_version;

#include "tables.h"
#include "interpreter.h"
#include "table_loader.h"
#include "readers.h"
#include "utf8_strict.h"
#include "column_values.h"
#include "columns.h"
#include "commit_check.h"
#include "commit_columns.h"

static PyMethodDef module_methods[] = {
    {"columns", (PyCFunction)columns, METH_VARARGS,
     "columns(readers, kinds, data, starts, ends, index, trailing_ok)\n"
     "-> (validity, null_count, columns, failed)\n\n"
     "Rows data[starts[i]:ends[i]] read by readers[index[i]] (int64 starts and ends, int32 "
     "index; -1: a null row) into Arrow buffers, one column per (attribute, kind) of kinds "
     "(kind: object, tagged, int8, int16, int32, int64, float64, bool, string, binary). A "
     "column is (validity, null_count, values), (validity, null_count, offsets, data) or, for "
     "object and tagged columns, (list of objects, non-null count); failed lists the rows "
     "the reader refuses, whose errors the caller gets by decoding them again."},
    {"commit_columns", (PyCFunction)commit_columns, METH_VARARGS,
     "commit_columns(n, key, value, control, names, what=2) -> (buffers..., failed)\n\n"
     "The offset commits of n __consumer_offsets rows decoded in one pass into Arrow buffers "
     "(commit_columns.h; codegen.dumps.views.commits reads the tuple). what: 2 every buffer; "
     "1 the tombstone and newer-version bitmaps, failed, and the value's bitmaps, offsets, "
     "epochs and commit times; 0 the tombstone and newer-version bitmaps and failed; every "
     "other buffer empty."},
    {"pair_reader", (PyCFunction)(void (*)(void))make_pair_reader, METH_FASTCALL,
     "pair_reader(types, slow) -> PairReader\n\n"
     "types: record type -> (key reader, tuple of value readers or None by version, newest "
     "flexible value version or -1); slow: the pure pair reader, called with (key, value) for "
     "anything off the fast path. The PairReader is called as read_pair(key, value) -> "
     "(key, value or None)."},
    {"reader", (PyCFunction)(void (*)(void))make_reader, METH_VARARGS | METH_KEYWORDS,
     "reader(table, classes, unknown_tags, *, rows=False, no_tags=None) -> Reader\n\n"
     "table: a layout table from codegen.native_tables; classes: struct name -> generated "
     "class (with rows=True: struct name -> a callable making that struct's default row); "
     "unknown_tags: called with a list of (tag, bytes) pairs in wire order (empty when none, "
     "unless no_tags is given: then that value is used) to make each unknown_tags value.\n"
     "rows=True reads rows: a tuple per struct in slot order, as the generated row readers."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef engine_module = {
    PyModuleDef_HEAD_INIT, "_engine", "The table-driven native decoder.", -1, module_methods,
};

static int intern(PyObject **dst, const char *s) {
    *dst = PyUnicode_InternFromString(s);
    return *dst ? 0 : -1;
}

static PyObject *get_attr(PyObject *module, const char *name) {
    return PyObject_GetAttrString(module, name);
}

PyMODINIT_FUNC PyInit__engine(void) {
    if (check_build("_engine") < 0) return NULL;
    if (intern(&S_tagged_fields, "<tagged fields>") < 0 || intern(&S_field, "field") < 0 ||
        intern(&S_offset, "offset") < 0 || intern(&S_located, "located") < 0 ||
        intern(&S_unknown_tags, "unknown_tags") < 0 ||
        intern(&S_int, "int") < 0 || intern(&S_is_safe, "is_safe") < 0 ||
        intern(&S_message, "message") < 0 || intern(&S_version, "version") < 0)
        return NULL;
    PyObject *errors = PyImport_ImportModule("codegen.runtime.errors");
    if (!errors) return NULL;
    DecodeError = get_attr(errors, "DecodeError");
    BufferUnderflow = get_attr(errors, "BufferUnderflow");
    InvalidLength = get_attr(errors, "InvalidLength");
    UnexpectedNull = get_attr(errors, "UnexpectedNull");
    InvalidUtf8 = get_attr(errors, "InvalidUtf8");
    InvalidTaggedField = get_attr(errors, "InvalidTaggedField");
    TrailingBytes = get_attr(errors, "TrailingBytes");
    Py_DECREF(errors);
    if (!DecodeError || !BufferUnderflow || !InvalidLength || !UnexpectedNull || !InvalidUtf8 ||
        !InvalidTaggedField || !TrailingBytes)
        return NULL;
    PyObject *uuid = PyImport_ImportModule("uuid");
    if (!uuid) return NULL;
    UuidCallable = get_attr(uuid, "UUID");
    PyObject *safe = get_attr(uuid, "SafeUUID");
    UuidSafeUnknown = safe ? get_attr(safe, "unknown") : NULL;
    Py_XDECREF(safe);
    Py_DECREF(uuid);
    if (!UuidCallable || !UuidSafeUnknown || !PyType_Check(UuidCallable)) return NULL;
    UuidType = (PyTypeObject *)UuidCallable;
    /* uuid.UUID keeps int and is_safe in slots: write them directly when they are plain. */
    if (direct_slots(UuidType, -1)) {
        UuidIntOffset = member_offset(UuidType, S_int);
        UuidSafeOffset = UuidIntOffset < 0 ? -1 : member_offset(UuidType, S_is_safe);
        if (UuidSafeOffset < 0) UuidIntOffset = -1;
    }
    if (PyErr_Occurred()) return NULL;
    PyObject *builtins = PyImport_ImportModule("builtins");
    if (!builtins) return NULL;
    PyObject *object = get_attr(builtins, "object");
    Py_DECREF(builtins);
    ObjectNew = object ? get_attr(object, "__new__") : NULL;
    Py_XDECREF(object);
    if (!ObjectNew) return NULL;
    if (PyType_Ready(&ReaderType) < 0 || PyType_Ready(&PrototypeType) < 0 ||
        PyType_Ready(&PairReaderType) < 0)
        return NULL;
    EmptyStr = PyUnicode_FromStringAndSize(NULL, 0);
    if (!EmptyStr) return NULL;
    PyObject *m = PyModule_Create(&engine_module);
    if (!m) return NULL;
    Py_INCREF(&ReaderType);
    engine_capi.reader_type = &ReaderType;
    PyObject *capi = PyCapsule_New(&engine_capi, "codegen.native._engine._C_API", NULL);
    if (!capi || PyModule_AddObject(m, "_C_API", capi) < 0) {
        Py_XDECREF(capi);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&PairReaderType);
    if (PyModule_AddObject(m, "PairReader", (PyObject *)&PairReaderType) < 0) {
        Py_DECREF(&PairReaderType);
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddObject(m, "Reader", (PyObject *)&ReaderType) < 0 ||
        PyModule_AddIntConstant(m, "FORMAT_VERSION", FORMAT_VERSION) < 0 ||
        PyModule_AddIntConstant(m, "COMMIT_FLAGS", CO_FLAGS) < 0 ||
        PyModule_AddIntConstant(m, "COMMIT_ALL", CO_ALL) < 0 ||
        PyModule_AddStringConstant(m, "SOURCES_DIGEST", SPECGEN_SOURCES_DIGEST) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
