/* The Writer: the jsonl lines of one file's records, a log batch per call, the part of a line
 * that repeats per key and version made once (as codegen/dumps/jsonl.py's JsonlLines does).
 * Part of the _jsontext module (jsontext.c).
 */
#ifndef SPECGEN_JSON_WRITER_H
#define SPECGEN_JSON_WRITER_H

/* The middles kept, by the identity of the record's key bytes (the record loop shares one
   bytes object per key), its kind and value version; the table holds references to what it
   is keyed by, so an address is never reused while kept. Cleared when full. */
#define MIDDLES_SIZE (1 << 16)
#define MIDDLES_SLOTS (MIDDLES_SIZE * 2)
/* Records whose middles are asked for at once. */
#define PREFETCH_AHEAD 32

typedef struct {
    PyObject *key_bytes, *kind, *middle; /* owned; key_bytes NULL: empty */
    long version;
} Middle;

/* The fields a user topic's record (UserRecord, a subclass of the record class) adds. */
enum { U_KEY_VERSION, U_KEY_MAPPED, U_VALUE_MAPPED, N_USER_FIELDS };
static const char *const USER_FIELDS[N_USER_FIELDS] = {"key_version", "key_mapped",
                                                       "value_mapped"};

typedef struct {
    PyObject_HEAD
    PyTypeObject *record_cls;
    Py_ssize_t offsets[N_RECORD_FIELDS];
    PyTypeObject *user_cls; /* a user topic's record class (put_user_record), or NULL */
    Py_ssize_t user_offsets[N_USER_FIELDS];
    PyObject *record_kind, *tombstone_kind;
    PyObject *noted_kinds; /* tuple: the kinds batch() notes (with newer_than_spec records) */
    Middle *middles;      /* MIDDLES_SLOTS entries, or NULL before the first */
    Py_ssize_t nmiddles;
    PyObject *middle;     /* middle(rec) -> bytes */
    PyObject *plans;      /* dict: value class -> tuple of Plan or None, by version (the last
                             also every later version's) */
    PyObject *make_plans; /* make_plans(cls) -> that tuple */
    PyObject *value_text; /* value_text(rec) -> bytes, or None: the line's reference */
    PyObject *line;       /* line(rec) -> bytes: the reference's whole line */
    int busy;             /* in batch(): its buffer is in use */
    Buf buf;              /* batch()'s lines, written straight into the bytes it returns */
    Py_ssize_t size_hint; /* the capacity the next batch's bytes start with */
} Writer;

static void middles_clear(Writer *w) {
    if (!w->middles) return;
    for (Py_ssize_t i = 0; i < MIDDLES_SLOTS; i++) {
        Middle *m = &w->middles[i];
        if (!m->key_bytes) continue;
        PyObject *key = m->key_bytes, *kind = m->kind, *middle = m->middle;
        m->key_bytes = m->kind = m->middle = NULL;
        Py_DECREF(key);
        Py_DECREF(kind);
        Py_DECREF(middle);
    }
    w->nmiddles = 0;
}

static int Writer_traverse(Writer *w, visitproc visit, void *arg) {
    Py_VISIT(w->record_cls);
    Py_VISIT(w->user_cls);
    Py_VISIT(w->record_kind);
    Py_VISIT(w->tombstone_kind);
    Py_VISIT(w->noted_kinds);
    Py_VISIT(w->middle);
    Py_VISIT(w->plans);
    Py_VISIT(w->make_plans);
    Py_VISIT(w->value_text);
    Py_VISIT(w->line);
    return 0;
}

static int Writer_clear(Writer *w) {
    Py_CLEAR(w->record_cls);
    Py_CLEAR(w->user_cls);
    Py_CLEAR(w->record_kind);
    Py_CLEAR(w->tombstone_kind);
    Py_CLEAR(w->noted_kinds);
    middles_clear(w);
    Py_CLEAR(w->middle);
    Py_CLEAR(w->plans);
    Py_CLEAR(w->make_plans);
    Py_CLEAR(w->value_text);
    Py_CLEAR(w->line);
    return 0;
}

static void Writer_dealloc(Writer *w) {
    PyObject_GC_UnTrack(w);
    Writer_clear(w);
    PyMem_Free(w->middles);
    PyMem_Free(w->buf.p);
    Py_TYPE(w)->tp_free((PyObject *)w);
}

/* The offsets of a user record class's own fields (USER_FIELDS) into w; -1 with an error
   set when it is not a subclass of the record class with exactly those slots. */
static int user_offsets(Writer *w, PyTypeObject *cls) {
    PyObject *slots = direct_slots(cls, N_USER_FIELDS);
    int ok = slots != NULL && cls->tp_base == w->record_cls;
    for (int i = 0; ok && i < N_USER_FIELDS; i++) {
        PyObject *name = PyUnicode_InternFromString(USER_FIELDS[i]);
        if (!name) return -1;
        w->user_offsets[i] = slot_offset(cls, slots, i, name);
        Py_DECREF(name);
        ok = w->user_offsets[i] >= 0;
    }
    if (PyErr_Occurred()) return -1;
    if (!ok) {
        PyErr_Format(PyExc_TypeError,
                     "%s is not a subclass of %s whose own slots are key_version, key_mapped, "
                     "value_mapped",
                     cls->tp_name, w->record_cls->tp_name);
        return -1;
    }
    return 0;
}

/* Writer(record_class, record_kind, tombstone_kind, noted_kinds, middle, make_plans,
   value_text, line, user_class=None). */
static PyObject *Writer_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyTypeObject *cls;
    PyObject *record_kind, *tombstone_kind, *noted_kinds, *middle, *make_plans, *value_text, *line;
    PyObject *user_cls = Py_None;
    if (kwargs && PyDict_GET_SIZE(kwargs)) {
        PyErr_SetString(PyExc_TypeError, "Writer takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O!UUO!OOOO|O:Writer", &PyType_Type, &cls, &record_kind,
                          &tombstone_kind, &PyTuple_Type, &noted_kinds, &middle, &make_plans,
                          &value_text, &line, &user_cls))
        return NULL;
    if (user_cls != Py_None && !PyType_Check(user_cls)) {
        PyErr_SetString(PyExc_TypeError, "user_class must be a class or None");
        return NULL;
    }
    if (!direct_slots(cls, -1)) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "%s's slots cannot be read directly", cls->tp_name);
        return NULL;
    }
    Writer *w = (Writer *)type->tp_alloc(type, 0);
    if (!w) return NULL;
    for (int i = 0; i < N_RECORD_FIELDS; i++) {
        PyObject *name = PyUnicode_InternFromString(RECORD_FIELDS[i]);
        if (!name) goto fail;
        w->offsets[i] = member_offset(cls, name);
        Py_DECREF(name);
        if (w->offsets[i] < 0) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError, "%s.%s is not a slot that can be read directly",
                             cls->tp_name, RECORD_FIELDS[i]);
            goto fail;
        }
    }
    w->record_cls = (PyTypeObject *)Py_NewRef(cls);
    if (user_cls != Py_None) {
        if (user_offsets(w, (PyTypeObject *)user_cls) < 0) goto fail;
        w->user_cls = (PyTypeObject *)Py_NewRef(user_cls);
    }
    w->record_kind = Py_NewRef(record_kind);
    w->tombstone_kind = Py_NewRef(tombstone_kind);
    w->noted_kinds = Py_NewRef(noted_kinds);
    w->middle = Py_NewRef(middle);
    w->make_plans = Py_NewRef(make_plans);
    w->value_text = Py_NewRef(value_text);
    w->line = Py_NewRef(line);
    if (!(w->plans = PyDict_New())) goto fail;
    return (PyObject *)w;
fail:
    Py_DECREF(w);
    return NULL;
}

static inline PyObject *slot(const Writer *w, PyObject *rec, int field) {
    return *(PyObject **)((char *)rec + w->offsets[field]);
}

/* 1 when equal, 0 when not, -1 on error. */
static inline int same(PyObject *a, PyObject *b) {
    return a == b ? 1 : PyObject_RichCompareBool(a, b, Py_EQ);
}

/* The Plan of a value's class at a version (borrowed), or NULL: none (no error) or an
   error (set). A version past the newest takes the past-newest plan (value_plans' last: the
   fields of open-ended versions, as to_json(version) prints them) when past_newest, else the
   newest version's (as to_json(version_of(...)) prints a user topic's message). */
static const Plan *plan_by(Writer *w, PyObject *value, PyObject *version, int past_newest) {
    PyObject *cls = (PyObject *)Py_TYPE(value);
    PyObject *plans = PyDict_GetItemWithError(w->plans, cls);
    if (!plans) {
        if (PyErr_Occurred()) return NULL;
        plans = PyObject_CallOneArg(w->make_plans, cls);
        if (!plans) return NULL;
        if (!PyTuple_CheckExact(plans)) {
            PyErr_Format(PyExc_TypeError, "make_plans must return a tuple, not %R", plans);
            Py_DECREF(plans);
            return NULL;
        }
        int rc = PyDict_SetItem(w->plans, cls, plans);
        Py_DECREF(plans); /* the dict holds it */
        if (rc < 0) return NULL;
    }
    if (!PyLong_CheckExact(version)) return NULL;
    Py_ssize_t v = PyLong_AsSsize_t(version);
    if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return NULL;
    }
    const Py_ssize_t size = PyTuple_GET_SIZE(plans);
    if (v < 0 || size < (past_newest ? 1 : 2)) return NULL;
    /* the last plan is also every later version's (value_plans: past the newest) */
    const Py_ssize_t last = past_newest ? size - 1 : size - 2;
    PyObject *plan = PyTuple_GET_ITEM(plans, v < last ? v : last);
    return Py_TYPE(plan) == &PlanType ? (const Plan *)plan : NULL;
}

static const Plan *plan_of(Writer *w, PyObject *value, PyObject *version) {
    return plan_by(w, value, version, 1);
}

/* Where the middle of (key_bytes, kind, version) is looked for first. */
static inline Py_ssize_t middle_slot(PyObject *key_bytes, PyObject *kind, long version) {
    size_t h = ((uintptr_t)key_bytes >> 4) * 0x9E3779B97F4A7C15ULL;
    h ^= ((uintptr_t)kind >> 4) + (size_t)version * 0x85EBCA6BULL;
    return (Py_ssize_t)((h ^ (h >> 29)) & (MIDDLES_SLOTS - 1));
}

/* The middle of a record printed here (JsonlLines._middle's text): a new bytes object, NULL
   with an error set, or NULL without one where the reference prints it. */
static PyObject *build_middle(Writer *w, PyObject *rec, int is_record, long version) {
    PyObject *record_type = slot(w, rec, R_RECORD_TYPE), *name = slot(w, rec, R_NAME);
    PyObject *key = slot(w, rec, R_KEY), *kind = slot(w, rec, R_KIND);
    if (!record_type || !name || !key || !kind || !PyLong_CheckExact(record_type))
        return NULL;
    PyObject *zero = PyLong_FromLong(0);
    if (!zero) return NULL;
    const Plan *key_plan = plan_of(w, key, zero);
    Py_DECREF(zero);
    if (!key_plan) return NULL;
    Buf b = {NULL, 0, 0};
    Py_INCREF(key);
    int rc = PUT_LITERAL(&b, "\"kind\":");
    if (rc >= 0) rc = put_string(&b, kind);
    if (rc >= 0) rc = PUT_LITERAL(&b, ",\"recordType\":");
    if (rc >= 0) rc = put_int(&b, record_type);
    if (rc >= 0) rc = PUT_LITERAL(&b, ",\"recordName\":");
    if (rc >= 0) rc = put_string(&b, name);
    if (rc >= 0) rc = PUT_LITERAL(&b, ",\"valueVersion\":");
    if (rc >= 0) rc = version >= 0 ? buf_int64(&b, version) : PUT_LITERAL(&b, "null");
    if (rc >= 0) rc = PUT_LITERAL(&b, ",\"key\":{\"type\":\"");
    if (rc >= 0) rc = put_int(&b, record_type);
    if (rc >= 0) rc = PUT_LITERAL(&b, "\",\"data\":");
    if (rc >= 0) rc = put_struct(&b, key_plan, key, 0);
    if (rc >= 0 && !is_record) rc = PUT_LITERAL(&b, "},\"value\":null");
    if (rc >= 0 && is_record) {
        rc = PUT_LITERAL(&b, "},\"value\":{\"version\":\"");
        if (rc >= 0) rc = buf_int64(&b, version);
        if (rc >= 0) rc = PUT_LITERAL(&b, "\",\"data\":");
    }
    Py_DECREF(key);
    PyObject *out = rc >= 0 ? PyBytes_FromStringAndSize(b.p, b.len) : NULL;
    PyMem_Free(b.p);
    return out;
}

/* The middle bytes of a record (a new reference), or NULL with an error set. */
static PyObject *middle_of(Writer *w, PyObject *rec, PyObject *key_bytes, PyObject *kind,
                           int is_record, long version) {
    if (!w->middles && !(w->middles = PyMem_Calloc(MIDDLES_SLOTS, sizeof(Middle))))
        return PyErr_NoMemory();
    const Py_ssize_t first = middle_slot(key_bytes, kind, version);
    Py_ssize_t i = first;
    for (;; i = (i + 1) & (MIDDLES_SLOTS - 1)) {
        Middle *m = &w->middles[i];
        if (!m->key_bytes) break;
        if (m->key_bytes == key_bytes && m->kind == kind && m->version == version)
            return Py_NewRef(m->middle);
    }
    PyObject *middle = build_middle(w, rec, is_record, version);
    if (!middle && PyErr_Occurred()) return NULL;
    if (!middle && !(middle = PyObject_CallOneArg(w->middle, rec))) return NULL;
    if (!PyBytes_CheckExact(middle)) {
        PyErr_Format(PyExc_TypeError, "middle must return bytes, not %R", middle);
        Py_DECREF(middle);
        return NULL;
    }
    if (w->nmiddles >= MIDDLES_SIZE) middles_clear(w);
    /* The call may have run code: find the first free slot again. */
    i = first;
    while (w->middles[i].key_bytes) i = (i + 1) & (MIDDLES_SLOTS - 1);
    Middle *m = &w->middles[i];
    m->key_bytes = Py_NewRef(key_bytes);
    m->kind = Py_NewRef(kind);
    m->version = version;
    m->middle = Py_NewRef(middle);
    w->nmiddles++;
    return middle;
}

/* The value's text from the reference (value_text), appended: 0, NOT_HERE or -1. */
static int put_value_text(Writer *w, PyObject *rec) {
    PyObject *text = PyObject_CallOneArg(w->value_text, rec);
    if (!text) return -1;
    int rc = NOT_HERE;
    if (PyBytes_CheckExact(text))
        rc = buf_put(&w->buf, PyBytes_AS_STRING(text), PyBytes_GET_SIZE(text));
    else if (text != Py_None) {
        PyErr_Format(PyExc_TypeError, "value_text must return bytes or None, not %R", text);
        rc = -1;
    }
    Py_DECREF(text);
    return rc;
}

/* One record's line printed here: 0, NOT_HERE (nothing kept), or -1. The line of a record or
   tombstone of a known key: its position, the middle (kind, type, name, version, key, the
   value's opening), the value's data, then isNewerVersion and note where record_to_json adds
   them. */
static int put_record(Writer *w, PyObject *rec, PyObject *close) {
    PyObject *kind = slot(w, rec, R_KIND), *key_bytes = slot(w, rec, R_KEY_BYTES);
    if (!kind || !key_bytes || key_bytes == Py_None) return NOT_HERE;
    int is_record = same(kind, w->record_kind);
    if (is_record < 0) return -1;
    if (!is_record) {
        int is_tombstone = same(kind, w->tombstone_kind);
        if (is_tombstone <= 0) return is_tombstone < 0 ? -1 : NOT_HERE;
    }
    PyObject *offset = slot(w, rec, R_OFFSET), *ts = slot(w, rec, R_TIMESTAMP);
    PyObject *newer = slot(w, rec, R_NEWER), *note = slot(w, rec, R_NOTE);
    PyObject *version = slot(w, rec, R_VALUE_VERSION);
    if (!offset || !ts || !newer || !note || !version || !PyLong_CheckExact(version))
        return NOT_HERE;
    int overflow = 0;
    long version_number = PyLong_AsLongAndOverflow(version, &overflow);
    if (overflow) return NOT_HERE;
    int is_newer = PyObject_IsTrue(newer);
    if (is_newer < 0) return -1;
    int has_note = PyObject_IsTrue(note);
    if (has_note < 0) return -1;
    if (has_note && !PyUnicode_CheckExact(note)) return NOT_HERE;
    const Plan *plan = NULL;
    PyObject *value = NULL;
    if (is_record) {
        /* A group's members: value_json decodes their payloads (value_text's job). */
        PyObject *members = slot(w, rec, R_MEMBERS);
        value = slot(w, rec, R_VALUE);
        if (!members || !value) return NOT_HERE;
        if (members == Py_None) {
            plan = plan_of(w, value, version);
            if (!plan && PyErr_Occurred()) return -1;
        }
    }
    Buf *b = &w->buf;
    const Py_ssize_t start = b->len;
    int rc = PUT_LITERAL(b, "{\"offset\":");
    if (rc >= 0) rc = put_int(b, offset);
    if (rc >= 0) rc = PUT_LITERAL(b, ",\"timestamp\":");
    if (rc >= 0) rc = put_int(b, ts);
    if (rc >= 0) rc = PUT_LITERAL(b, ",");
    if (rc < 0) goto undo;
    PyObject *middle = middle_of(w, rec, key_bytes, kind, is_record, version_number);
    if (!middle) {
        rc = -1;
        goto undo;
    }
    rc = buf_put(b, PyBytes_AS_STRING(middle), PyBytes_GET_SIZE(middle));
    Py_DECREF(middle);
    if (rc >= 0 && is_record) {
        if (plan) {
            Py_INCREF(value);
            rc = put_struct(b, plan, value, 0);
            Py_DECREF(value);
        } else {
            rc = put_value_text(w, rec);
        }
        if (rc >= 0) rc = PUT_LITERAL(b, "}");
    }
    if (rc >= 0 && is_newer) rc = PUT_LITERAL(b, ",\"isNewerVersion\":true");
    if (rc >= 0 && has_note) {
        rc = PUT_LITERAL(b, ",\"note\":");
        if (rc >= 0) rc = put_string(b, note);
    }
    if (rc >= 0) rc = buf_put(b, PyBytes_AS_STRING(close), PyBytes_GET_SIZE(close));
    if (rc >= 0) return 0;
undo:
    b->len = start;
    return rc;
}

/* A user topic's raw side: "<name>Base64" (null for null bytes) and, for valid UTF-8,
   "<name>Text" (plain_side_json's fields), each after a comma. 0 or -1. */
static int put_raw_side(Buf *b, PyObject *data, const char *base64_key, const char *text_key) {
    if (buf_put(b, base64_key, (Py_ssize_t)strlen(base64_key)) < 0) return -1;
    if (data == Py_None) return PUT_LITERAL(b, "null");
    const char *p = PyBytes_AS_STRING(data);
    const Py_ssize_t n = PyBytes_GET_SIZE(data);
    if (put_base64(b, (const unsigned char *)p, n, B64, 1) < 0) return -1;
    int ascii = 1;
    for (Py_ssize_t i = 0; ascii && i < n; i++) ascii = (unsigned char)p[i] < 0x80;
    if (!ascii) { /* as bytes.decode("utf-8") decides */
        PyObject *text = PyUnicode_DecodeUTF8(p, n, NULL);
        if (!text) {
            if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) return -1;
            PyErr_Clear();
            return 0;
        }
        Py_DECREF(text);
    }
    if (buf_put(b, text_key, (Py_ssize_t)strlen(text_key)) < 0) return -1;
    return put_text(b, p, n);
}

/* A user topic's mapped side: its message at the version it was read with (a version past the
   newest at the newest, as version_of reads it), or null. 0, NOT_HERE or -1. */
static int put_user_message(Writer *w, Buf *b, PyObject *message, PyObject *version) {
    if (message == Py_None) return PUT_LITERAL(b, "null");
    if (!version || !PyLong_CheckExact(version)) return NOT_HERE;
    const Plan *plan = plan_by(w, message, version, 0);
    if (!plan) return PyErr_Occurred() ? -1 : NOT_HERE;
    Py_INCREF(message);
    int rc = put_struct(b, plan, message, 0);
    Py_DECREF(message);
    return rc;
}

/* One user topic's record or tombstone printed here (record_to_json's line of a UserRecord):
   0, NOT_HERE (nothing kept), or -1. */
static int put_user_record(Writer *w, PyObject *rec, PyObject *close) {
    PyObject *kind = slot(w, rec, R_KIND);
    if (!kind) return NOT_HERE;
    int is_record = same(kind, w->record_kind);
    if (is_record < 0) return -1;
    if (!is_record) {
        int is_tombstone = same(kind, w->tombstone_kind);
        if (is_tombstone <= 0) return is_tombstone < 0 ? -1 : NOT_HERE;
    }
    PyObject *offset = slot(w, rec, R_OFFSET), *ts = slot(w, rec, R_TIMESTAMP);
    PyObject *name = slot(w, rec, R_NAME), *newer = slot(w, rec, R_NEWER);
    PyObject *key = slot(w, rec, R_KEY), *value = slot(w, rec, R_VALUE);
    PyObject *key_bytes = slot(w, rec, R_KEY_BYTES);
    PyObject *value_bytes = slot(w, rec, R_VALUE_BYTES);
    PyObject *value_version = slot(w, rec, R_VALUE_VERSION);
    PyObject *key_version = *(PyObject **)((char *)rec + w->user_offsets[U_KEY_VERSION]);
    PyObject *key_mapped = *(PyObject **)((char *)rec + w->user_offsets[U_KEY_MAPPED]);
    PyObject *value_mapped = *(PyObject **)((char *)rec + w->user_offsets[U_VALUE_MAPPED]);
    if (!offset || !ts || !name || !newer || !key || !value || !key_bytes || !value_bytes ||
        !value_version || !key_version || !key_mapped || !value_mapped)
        return NOT_HERE;
    if ((key_bytes != Py_None && !PyBytes_CheckExact(key_bytes)) ||
        (value_bytes != Py_None && !PyBytes_CheckExact(value_bytes)) ||
        (value_version != Py_None && !PyLong_CheckExact(value_version)) ||
        (key_mapped != Py_True && key_mapped != Py_False) ||
        (value_mapped != Py_True && value_mapped != Py_False))
        return NOT_HERE;
    int is_newer = PyObject_IsTrue(newer);
    if (is_newer < 0) return -1;
    Buf *b = &w->buf;
    const Py_ssize_t start = b->len;
    int rc = PUT_LITERAL(b, "{\"offset\":");
    if (rc >= 0) rc = put_int(b, offset);
    if (rc >= 0) rc = PUT_LITERAL(b, ",\"timestamp\":");
    if (rc >= 0) rc = put_int(b, ts);
    if (rc >= 0) rc = PUT_LITERAL(b, ",\"kind\":");
    if (rc >= 0) rc = put_string(b, kind);
    if (rc >= 0) rc = PUT_LITERAL(b, ",\"recordType\":null,\"recordName\":");
    if (rc >= 0) rc = put_string(b, name);
    if (rc >= 0) rc = PUT_LITERAL(b, ",\"valueVersion\":");
    if (rc >= 0) rc = value_version == Py_None ? PUT_LITERAL(b, "null") : put_int(b, value_version);
    if (rc >= 0 && key_mapped == Py_True) {
        rc = PUT_LITERAL(b, ",\"keyVersion\":");
        if (rc >= 0)
            rc = key_version == Py_None ? PUT_LITERAL(b, "null") : put_int(b, key_version);
        if (rc >= 0) rc = PUT_LITERAL(b, ",\"key\":");
        if (rc >= 0) rc = put_user_message(w, b, key, key_version);
    } else if (rc >= 0) {
        rc = put_raw_side(b, key_bytes, ",\"keyBase64\":", ",\"keyText\":");
    }
    if (rc >= 0 && value_mapped == Py_True) {
        rc = PUT_LITERAL(b, ",\"value\":");
        if (rc >= 0) rc = put_user_message(w, b, value, value_version);
    } else if (rc >= 0) {
        rc = put_raw_side(b, value_bytes, ",\"valueBase64\":", ",\"valueText\":");
    }
    if (rc >= 0 && is_newer) rc = PUT_LITERAL(b, ",\"isNewerVersion\":true");
    if (rc >= 0) rc = buf_put(b, PyBytes_AS_STRING(close), PyBytes_GET_SIZE(close));
    if (rc >= 0) return 0;
    b->len = start;
    return rc;
}

/* 1 when the summary counts the record (a noted kind, or newer than the specs), 0 when not,
   -1 on error. */
static int noted(Writer *w, PyObject *rec) {
    PyObject *kind, *newer;
    int rc = 0;
    if (Py_TYPE(rec) == w->record_cls || (w->user_cls && Py_TYPE(rec) == w->user_cls)) {
        kind = Py_XNewRef(slot(w, rec, R_KIND));
        newer = Py_XNewRef(slot(w, rec, R_NEWER));
    } else {
        kind = PyObject_GetAttrString(rec, RECORD_FIELDS[R_KIND]);
        newer = kind ? PyObject_GetAttrString(rec, RECORD_FIELDS[R_NEWER]) : NULL;
    }
    if (!kind || !newer) {
        PyErr_Clear();
        rc = 1; /* the counting raises, as it does for any such record */
    }
    for (Py_ssize_t i = 0; !rc && i < PyTuple_GET_SIZE(w->noted_kinds); i++)
        rc = same(kind, PyTuple_GET_ITEM(w->noted_kinds, i));
    if (!rc) rc = PyObject_IsTrue(newer);
    Py_XDECREF(kind);
    Py_XDECREF(newer);
    return rc;
}

#if defined(__GNUC__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)0)
#endif

/* The cache lines of the middles of records[start:start+n] asked for ahead of their use: the
   table slots first, then the middles those slots hold (their loads then overlap). */
static void prefetch_middles(Writer *w, PyObject *records, Py_ssize_t start, Py_ssize_t n) {
    Py_ssize_t slots[PREFETCH_AHEAD];
    Py_ssize_t count = 0;
    for (Py_ssize_t i = start; i < start + n; i++) {
        PyObject *rec = PyList_GET_ITEM(records, i);
        if (Py_TYPE(rec) != w->record_cls) continue;
        PyObject *key_bytes = slot(w, rec, R_KEY_BYTES), *kind = slot(w, rec, R_KIND);
        PyObject *version = slot(w, rec, R_VALUE_VERSION);
        if (!key_bytes || !kind || !version || !PyLong_CheckExact(version)) continue;
        int overflow = 0;
        long v = PyLong_AsLongAndOverflow(version, &overflow);
        if (overflow) continue;
        slots[count] = middle_slot(key_bytes, kind, v);
        PREFETCH(&w->middles[slots[count]]);
        count++;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *middle = w->middles[slots[i]].middle;
        if (middle) PREFETCH(middle);
    }
}

static PyObject *Writer_batch(Writer *w, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyList_CheckExact(args[0]) || !PyBytes_CheckExact(args[1]) ||
        !PyList_CheckExact(args[2]))
        return usage_error("batch(records: list, close: bytes, noted: list)");
    PyObject *records = args[0], *close = args[1], *noted_list = args[2];
    if (w->busy) {
        PyErr_SetString(PyExc_RuntimeError, "Writer.batch called again from its own callbacks");
        return NULL;
    }
    w->busy = 1;
    PyObject *out = NULL;
    Buf *b = &w->buf;
    PyMem_Free(b->p);
    b->len = 0;
    b->cap = Py_MAX(w->size_hint, 1 << 12);
    if (!(b->owner = PyBytes_FromStringAndSize(NULL, b->cap))) {
        b->p = NULL;
        b->cap = 0;
        w->busy = 0;
        return NULL;
    }
    b->p = PyBytes_AS_STRING(b->owner);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(records); i++) {
        if (w->middles && i % PREFETCH_AHEAD == 0)
            prefetch_middles(w, records, i, Py_MIN(PREFETCH_AHEAD, PyList_GET_SIZE(records) - i));
        PyObject *rec = PyList_GET_ITEM(records, i);
        Py_INCREF(rec);
        int rc = noted(w, rec);
        if (rc > 0) rc = PyList_Append(noted_list, rec);
        if (rc >= 0)
            rc = Py_TYPE(rec) == w->record_cls                 ? put_record(w, rec, close)
                 : w->user_cls && Py_TYPE(rec) == w->user_cls ? put_user_record(w, rec, close)
                                                               : NOT_HERE;
        if (rc == NOT_HERE) {
            PyObject *line = PyObject_CallOneArg(w->line, rec);
            if (line && !PyBytes_CheckExact(line)) {
                PyErr_Format(PyExc_TypeError, "line must return bytes, not %R", line);
                Py_CLEAR(line);
            }
            rc = line ? buf_put(b, PyBytes_AS_STRING(line), PyBytes_GET_SIZE(line)) : -1;
            Py_XDECREF(line);
        }
        Py_DECREF(rec);
        if (rc < 0) goto done;
    }
    /* The next batch starts with room for this one's lines and a quarter more (at most
       1 MiB: a huge batch's lines grow by doubling). */
    w->size_hint = Py_MIN(b->len + b->len / 4, (Py_ssize_t)1 << 20);
    if (_PyBytes_Resize(&b->owner, b->len) == 0) out = b->owner;
    b->owner = NULL; /* now out (or released) */
done:
    Py_CLEAR(b->owner);
    b->p = NULL;
    b->len = b->cap = 0;
    w->busy = 0;
    return out;
}

static PyMethodDef Writer_methods[] = {
    {"batch", (PyCFunction)(void (*)(void))Writer_batch, METH_FASTCALL,
     "batch(records, close, noted) -> bytes: the jsonl lines of one log batch's records; close "
     "ends each line (the file and batch fields, '}' and the newline). The records the summary "
     "counts (noted kinds, newer than the specs, any other class) are appended to noted."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject WriterType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "codegen.native._jsontext.Writer",
    .tp_basicsize = sizeof(Writer),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Writer(record_class, record_kind, tombstone_kind, noted_kinds, middle, "
              "make_plans, value_text, line, user_class=None): user_class's records (a user "
              "topic's) are printed whole, with no middle",
    .tp_new = Writer_new,
    .tp_dealloc = (destructor)Writer_dealloc,
    .tp_traverse = (traverseproc)Writer_traverse,
    .tp_clear = (inquiry)Writer_clear,
    .tp_methods = Writer_methods,
};

#endif /* SPECGEN_JSON_WRITER_H */
