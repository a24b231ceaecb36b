/* A user topic's records in the record loop (part of the _records module, records.c).
 *
 * RecordLoop(user_record_class, new_key, slow, record_kind, tombstone_kind, user) with
 * user = (name, key_side, value_side) reads the records of a topic a topic map names as
 * UserTopicDecoder.decode (codegen/dumps/user_topics.py, the reference) reads them. A side is
 * None (the map leaves it out: its bytes stay raw) or (prefix, version, readers, newer_readers):
 * the version written is the side's int16 prefix (prefix true) or the map's `version`;
 * readers[v] reads a version the spec has, newer_readers[v] one newer than the spec (the newest
 * flexible version's reader, KIP-915); None where the one version rule refuses v. Both tuples
 * have 256 entries.
 *
 * A record whose mapped sides each read exactly becomes a UserRecord here (a null value a
 * tombstone); anything else (a prefix too short or negative, a version no reader takes, bytes
 * the reader refuses or leaves over) goes to slow(key, value, offset, ts), the reference, which
 * says why. Keys are not cached, as a user topic's keys seldom repeat; new_key is not called.
 *
 * The UserRecord class must add exactly USER_FIELD_NAMES to the slotted DecodedRecord the
 * coordinator loop writes; every slot is written.
 */
#ifndef SPECGEN_USER_LOOP_H
#define SPECGEN_USER_LOOP_H

#include "loop_state.h"

/* UserRecord's own fields, in declaration order (its __slots__). */
enum { U_KEY_VERSION, U_KEY_MAPPED, U_VALUE_MAPPED, N_USER_FIELDS };
static const char *const USER_FIELD_NAMES[N_USER_FIELDS] = {
    "key_version", "key_mapped", "value_mapped",
};

/* READERS_SIZE readers per side: versions are read below 256, as the coordinator loop's. */
#define READERS_SIZE 256

typedef struct {
    PyObject *readers, *newer_readers; /* tuples of READERS_SIZE, owned; NULL: not mapped */
    int prefix;                        /* the version is the side's int16 prefix */
    long version;                      /* else the map's version */
} UserSide;

struct UserMode {
    PyObject *name; /* the map entry's name (recordName), owned */
    UserSide key, value;
    Py_ssize_t offsets[N_USER_FIELDS];
};

static void user_mode_free(UserMode *u) {
    if (!u) return;
    Py_CLEAR(u->name);
    Py_CLEAR(u->key.readers);
    Py_CLEAR(u->key.newer_readers);
    Py_CLEAR(u->value.readers);
    Py_CLEAR(u->value.newer_readers);
    PyMem_Free(u);
}

static int user_mode_traverse(UserMode *u, visitproc visit, void *arg) {
    if (!u) return 0;
    Py_VISIT(u->key.readers);
    Py_VISIT(u->key.newer_readers);
    Py_VISIT(u->value.readers);
    Py_VISIT(u->value.newer_readers);
    return 0;
}

static int user_side(PyObject *spec, UserSide *s, const char *which) {
    if (spec == Py_None) return 0;
    PyObject *prefix, *readers, *newer;
    if (!PyTuple_Check(spec) ||
        !PyArg_ParseTuple(spec, "OlO!O!", &prefix, &s->version, &PyTuple_Type, &readers,
                          &PyTuple_Type, &newer) ||
        PyTuple_GET_SIZE(readers) != READERS_SIZE || PyTuple_GET_SIZE(newer) != READERS_SIZE) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError,
                     "the %s side must be None or (prefix, version, readers, newer_readers) with "
                     "%d readers each",
                     which, READERS_SIZE);
        return -1;
    }
    if ((s->prefix = PyObject_IsTrue(prefix)) < 0) return -1;
    s->readers = Py_NewRef(readers);
    s->newer_readers = Py_NewRef(newer);
    return 0;
}

/* The user mode of `user` for records of cls (a subclass of the DecodedRecord whose offsets
   the loop holds), or NULL with an error set. */
static UserMode *user_mode(PyTypeObject *cls, PyObject *user) {
    PyObject *name, *key, *value;
    if (!PyTuple_Check(user) || !PyArg_ParseTuple(user, "UOO", &name, &key, &value)) {
        PyErr_Clear();
        PyErr_SetString(PyExc_TypeError, "user must be (name, key_side, value_side)");
        return NULL;
    }
    UserMode *u = PyMem_Calloc(1, sizeof(UserMode));
    if (!u) return (UserMode *)PyErr_NoMemory();
    u->name = Py_NewRef(name);
    if (user_side(key, &u->key, "key") < 0 || user_side(value, &u->value, "value") < 0) goto fail;
    PyObject *slots = direct_slots(cls, N_USER_FIELDS);
    int ok = slots != NULL;
    for (int i = 0; ok && i < N_USER_FIELDS; i++) {
        PyObject *field = PyUnicode_FromString(USER_FIELD_NAMES[i]);
        if (!field) goto fail;
        u->offsets[i] = slot_offset(cls, slots, i, field);
        Py_DECREF(field);
        ok = u->offsets[i] >= 0;
    }
    if (PyErr_Occurred()) goto fail;
    if (!ok) {
        PyErr_Format(PyExc_TypeError,
                     "%R is not the slotted UserRecord this loop was written for (its own "
                     "__slots__ must be %s, %s, %s): update codegen/native/user_loop.h with it",
                     cls, USER_FIELD_NAMES[0], USER_FIELD_NAMES[1], USER_FIELD_NAMES[2]);
        goto fail;
    }
    return u;
fail:
    user_mode_free(u);
    return NULL;
}

/* One side read by its rule: 1 (*obj, *version and *newer set, new references), 0 where the
   reference must say what it is (nothing set), -1 on another error. */
static int read_user_side(const UserSide *s, PyObject *bytes, PyObject **obj, PyObject **version,
                          int *newer) {
    const unsigned char *data = (const unsigned char *)PyBytes_AS_STRING(bytes);
    const Py_ssize_t len = PyBytes_GET_SIZE(bytes);
    Py_ssize_t start = 0;
    long v = s->version;
    if (s->prefix) {
        if (len < 2) return 0;
        v = (int16_t)(((unsigned)data[0] << 8) | data[1]);
        start = 2;
    }
    if (v < 0 || v >= READERS_SIZE) return 0;
    PyObject *reader = PyTuple_GET_ITEM(s->readers, v);
    *newer = 0;
    if (reader == Py_None) {
        reader = PyTuple_GET_ITEM(s->newer_readers, v);
        if (reader == Py_None) return 0;
        *newer = 1;
    }
    PyObject *decoded;
    Py_ssize_t end = start;
    if (Engine && Py_TYPE(reader) == Engine->reader_type) {
        decoded = Engine->read(reader, data, len, &end);
        if (!decoded) return caught() ? 0 : -1;
    } else {
        PyObject *at = PyLong_FromSsize_t(start);
        if (!at) return -1;
        PyObject *args[3] = {NULL, bytes, at};
        PyObject *result =
            PyObject_Vectorcall(reader, args + 1, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
        Py_DECREF(at);
        if (!result) return caught() ? 0 : -1;
        if (!PyTuple_CheckExact(result) || PyTuple_GET_SIZE(result) != 2 ||
            !PyLong_CheckExact(PyTuple_GET_ITEM(result, 1))) {
            Py_DECREF(result);
            return 0;
        }
        end = PyLong_AsSsize_t(PyTuple_GET_ITEM(result, 1));
        decoded = Py_NewRef(PyTuple_GET_ITEM(result, 0));
        Py_DECREF(result);
        if (end == -1 && PyErr_Occurred()) {
            Py_DECREF(decoded);
            return caught() ? 0 : -1;
        }
    }
    if (end != len) {
        Py_DECREF(decoded);
        return 0;
    }
    if (!(*version = PyLong_FromLong(v))) {
        Py_DECREF(decoded);
        return -1;
    }
    *obj = decoded;
    return 1;
}

/* The UserRecord of one parsed record (new reference), or NULL on error. */
static PyObject *decode_user(Loop *L, const Parsed *r, PyObject *offset, PyObject *ts) {
    const UserMode *u = L->user;
    PyObject *key_bytes = NULL, *value_bytes = NULL, *key_obj = NULL, *value_obj = NULL;
    PyObject *key_version = NULL, *value_version = NULL, *out = NULL;
    int key_newer = 0, value_newer = 0, rc;
    if (r->key_len >= 0 &&
        !(key_bytes = PyBytes_FromStringAndSize((const char *)r->key, (Py_ssize_t)r->key_len)))
        goto done;
    if (r->value_len >= 0 && !(value_bytes = PyBytes_FromStringAndSize(
                                   (const char *)r->value, (Py_ssize_t)r->value_len)))
        goto done;
    if (key_bytes && u->key.readers) {
        rc = read_user_side(&u->key, key_bytes, &key_obj, &key_version, &key_newer);
        if (rc < 0) goto done;
        if (rc == 0) goto slow;
    }
    if (value_bytes && u->value.readers) {
        rc = read_user_side(&u->value, value_bytes, &value_obj, &value_version, &value_newer);
        if (rc < 0) goto done;
        if (rc == 0) goto slow;
    }
    out = L->record_cls->tp_alloc(L->record_cls, 0);
    if (!out) goto done;
    const Py_ssize_t *o = L->offsets;
#define OR_NONE(x) ((x) ? Py_NewRef(x) : Py_NewRef(Py_None))
    set_slot(out, o[F_OFFSET], Py_NewRef(offset));
    set_slot(out, o[F_TIMESTAMP], Py_NewRef(ts));
    set_slot(out, o[F_KIND], Py_NewRef(value_bytes ? L->record_kind : L->tombstone_kind));
    set_slot(out, o[F_RECORD_TYPE], Py_NewRef(MinusOne)); /* as the reference: no type */
    set_slot(out, o[F_NAME], Py_NewRef(u->name));
    set_slot(out, o[F_KEY], OR_NONE(key_obj));
    set_slot(out, o[F_VALUE], OR_NONE(value_obj));
    set_slot(out, o[F_VALUE_VERSION], OR_NONE(value_version));
    set_slot(out, o[F_KEY_BYTES], OR_NONE(key_bytes));
    set_slot(out, o[F_VALUE_BYTES], OR_NONE(value_bytes));
    set_slot(out, o[F_NEWER_THAN_SPEC], Py_NewRef(key_newer || value_newer ? Py_True : Py_False));
    set_slot(out, o[F_ERROR], Py_NewRef(Py_None));
    set_slot(out, o[F_NOTE], Py_NewRef(Py_None));
    set_slot(out, o[F_MEMBERS], Py_NewRef(Py_None));
    set_slot(out, u->offsets[U_KEY_VERSION], OR_NONE(key_version));
    set_slot(out, u->offsets[U_KEY_MAPPED], Py_NewRef(u->key.readers ? Py_True : Py_False));
    set_slot(out, u->offsets[U_VALUE_MAPPED], Py_NewRef(u->value.readers ? Py_True : Py_False));
#undef OR_NONE
    goto done;
slow:
    out = call_slow(L, key_bytes, value_bytes, offset, ts);
done:
    Py_XDECREF(key_bytes);
    Py_XDECREF(value_bytes);
    Py_XDECREF(key_obj);
    Py_XDECREF(value_obj);
    Py_XDECREF(key_version);
    Py_XDECREF(value_version);
    return out;
}

#endif /* SPECGEN_USER_LOOP_H */
