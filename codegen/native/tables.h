/* The layout tables as the engine holds them: each struct of a message at one version as a
 * list of ops (Op), the fields absent at that version (Absent) and its tagged fields (Tagged),
 * converted once from the Python tables (table_loader.h) and walked by the interpreter
 * (interpreter.h). A Reader owns the tables of one message and version; Ctx is one read of a
 * buffer, Path the place an error names. Part of the _engine module (engine.c).
 */
#ifndef SPECGEN_TABLES_H
#define SPECGEN_TABLES_H

struct STable;

typedef struct {
    int opcode, flags, element;
    Py_ssize_t slot;   /* the field's position in __slots__ (and in a row) */
    Py_ssize_t offset; /* slot byte offset, or -1: generic setattr */
    PyObject *attr;    /* borrowed from the table tuple */
    struct STable *child;
} Op;

typedef struct {
    int64_t tag;
    Op op;
    int def_kind;
    PyObject *def; /* owned: a value, a uuid, or a class */
} Tagged;

typedef struct {
    Py_ssize_t slot, offset;
    PyObject *attr;
    int def_kind;
    PyObject *def;
} Absent;

typedef struct STable {
    PyTypeObject *cls; /* owned; in row mode the default-row factory, maybe not a class */
    int direct;        /* slots written at their offsets */
    int rows;          /* build tuples, not objects */
    Py_ssize_t nslots;
    int flexible;
    Py_ssize_t nops, nabsent, ntagged, nelsewhere;
    Op *ops;
    Absent *absent;
    Tagged *tagged;
    int64_t *elsewhere;
    Py_ssize_t unknown_offset;
} STable;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *table, *classes, *unknown_factory, *message;
    PyObject *no_tags; /* the shared value for no unknown tags, or NULL: ask the factory */
    int version;
    int rows;
    int factory_is_dict;
    Py_ssize_t ntables;
    STable *tables;
} Reader;

typedef struct {
    const unsigned char *buf;
    Py_ssize_t len;
    Reader *r;
} Ctx;

/* A stack-allocated path segment: the error path is built only when an error is raised. */
typedef struct Path {
    const struct Path *parent;
    PyObject *name;
    Py_ssize_t index; /* array index, or -1 */
} Path;

#endif /* SPECGEN_TABLES_H */
