/* What the native modules share: the hints of hot and cold paths, the checks that let them
 * write an object's slots directly, and the engine's C API that records.c calls.
 *
 * Writing a slot at its member offset skips the descriptor, so it is done only where these
 * checks pass at load time: the class makes its instances with tp_alloc and has no __dict__,
 * and each slot is an object member the class itself defines, writable, inside the
 * instance. Anything else goes through setattr (the engine) or is refused (records.c).
 */
#ifndef SPECGEN_NATIVE_SHARED_H
#define SPECGEN_NATIVE_SHARED_H

/* The SHA-256 of the C sources the module was built from (codegen/native/__init__.py's
   sources_digest; build.py defines it), its SOURCES_DIGEST: a package shipped to Spark's
   workers in a zip uses an installed engine only when the digests agree, and each module
   checks it against the sources beside it as it loads (check_build). */
#ifndef SPECGEN_SOURCES_DIGEST
#define SPECGEN_SOURCES_DIGEST ""
#endif

#include <Python.h>
#include <structmember.h>

/* The module `name` ("_records", ...) checked as it loads, first thing in its init:
   codegen.native._check_build(name, SPECGEN_SOURCES_DIGEST) raises EngineBuildMismatch, which
   names the fix (python -m codegen.native.build), where the C sources beside the module are
   not those it was built from (an engine left stale by a pull would give wrong answers, not
   an error); -1 with that error set. */
static int check_build(const char *name) {
    PyObject *package = PyImport_ImportModule("codegen.native");
    if (!package) return -1;
    PyObject *checked =
        PyObject_CallMethod(package, "_check_build", "ss", name, SPECGEN_SOURCES_DIGEST);
    Py_DECREF(package);
    if (!checked) return -1;
    Py_DECREF(checked);
    return 0;
}

#if defined(__GNUC__)
#define COLD __attribute__((cold, noinline))
#define HOT_INLINE inline __attribute__((always_inline))
#define NOINLINE __attribute__((noinline))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define COLD
#define HOT_INLINE inline
#define NOINLINE
#define LIKELY(x) (x)
#define UNLIKELY(x) (x)
#endif

/* An entry point's refusal of the arguments it was called with: a TypeError whose text is its
   usage (tests match it), and NULL to return. */
static COLD PyObject *usage_error(const char *usage) {
    PyErr_SetString(PyExc_TypeError, usage);
    return NULL;
}

/* Whether an entry point was called with its n positional arguments; when not, usage_error's
   TypeError is set (the caller returns NULL). */
static inline int arity_ok(Py_ssize_t nargs, Py_ssize_t n, const char *usage) {
    if (LIKELY(nargs == n)) return 1;
    usage_error(usage);
    return 0;
}

/* cls's own __slots__ (borrowed) when its instances can be written slot by slot: made by
   tp_alloc, no __dict__, a tuple of n names (any number when n < 0). NULL otherwise, with an
   error set only when the lookup itself failed. */
static inline PyObject *direct_slots(PyTypeObject *cls, Py_ssize_t n) {
    static PyObject *slots_name;
    if (!slots_name && !(slots_name = PyUnicode_InternFromString("__slots__"))) return NULL;
    PyObject *slots = PyDict_GetItemWithError(cls->tp_dict, slots_name);
    if (!slots || !PyTuple_Check(slots) || cls->tp_dictoffset != 0 || cls->tp_alloc == NULL)
        return NULL;
    if (n >= 0 && PyTuple_GET_SIZE(slots) != n) return NULL;
    return slots;
}

/* The byte offset of the object member `name` that cls itself defines, writable and inside
   the instance, or -1 (an error set only when the lookup failed). */
static inline Py_ssize_t member_offset(PyTypeObject *cls, PyObject *name) {
    PyObject *descr = PyDict_GetItemWithError(cls->tp_dict, name);
    if (!descr || Py_TYPE(descr) != &PyMemberDescr_Type) return -1;
    PyMemberDescrObject *m = (PyMemberDescrObject *)descr;
    if (m->d_common.d_type != cls || m->d_member->type != T_OBJECT_EX ||
        (m->d_member->flags & READONLY))
        return -1;
    if (m->d_member->offset < (Py_ssize_t)sizeof(PyObject) ||
        m->d_member->offset + (Py_ssize_t)sizeof(PyObject *) > cls->tp_basicsize)
        return -1;
    return m->d_member->offset;
}

/* The offset of slot i of cls (slots: its direct_slots) when that slot is named `name`, or
   -1 (an error set only when a lookup or the comparison failed). */
static inline Py_ssize_t slot_offset(PyTypeObject *cls, PyObject *slots, Py_ssize_t i,
                                     PyObject *name) {
    if (i < 0 || i >= PyTuple_GET_SIZE(slots)) return -1;
    PyObject *declared = PyTuple_GET_ITEM(slots, i);
    if (!PyUnicode_Check(declared) || !PyUnicode_Check(name)) return -1;
    int same = PyUnicode_Compare(declared, name);
    if (same != 0) return -1;
    return member_offset(cls, name);
}

/* The engine's C API (the capsule codegen.native._engine._C_API): read one message from raw
   memory without building the (obj, end) tuple; the same checks and errors as calling the
   reader. */
typedef struct {
    PyTypeObject *reader_type;
    PyObject *(*read)(PyObject *reader, const unsigned char *buf, Py_ssize_t len, Py_ssize_t *pos);
} EngineCAPI;

#endif
