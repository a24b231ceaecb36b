/* A user topic's v2 data batches printed straight from their record bytes, in the three forms
 * dump prints: jsonl lines, dump-log record lines and table cells. Part of the _jsontext module
 * (jsontext.c), after json_wire.h, whose WirePlans print each mapped side.
 *
 * user_lines(data, start, end, count, base_offset, base_timestamp, log_append,
 *            append_timestamp, close, heads, key_side, value_side) -> (bytes, newer) | None
 * prints the records of one v2 data batch as put_user_record prints their UserRecords;
 * heads = (record_head, tombstone_head): the line from ',"kind":' up to '"valueVersion":';
 * a side is None (its bytes printed raw) or (prefix, version, plans, newer_plans) as
 * codegen/native/user_loop.h takes it, with WirePlans for readers. user_dump_log and
 * user_table_cells take the same sides. Each returns None for a batch it leaves to the
 * record loop (a record the engine would refuse, offsets or timestamps past int64, a record
 * with headers in dump-log). A record whose side these printers do not print (a version no
 * plan has, a float64, a present tagged struct, bytes a plan refuses) is made by the last
 * argument, fallback(i) -> the reference's text of the batch's record i (a row for
 * user_table_cells), or None: then the whole batch is the reference's too.
 */
#ifndef SPECGEN_USER_WIRE_H
#define SPECGEN_USER_WIRE_H

#include "json_wire.h"

/* ------------------------------------------------------------------------------- user lines */

/* fallback(i) for the batch's record i (a new reference): its text or row, Py_None (the whole
   batch is the reference's), or NULL with an error. */
static PyObject *wire_fallback(PyObject *fallback, Py_ssize_t i) {
    if (fallback == Py_None) return Py_NewRef(Py_None);
    PyObject *index = PyLong_FromSsize_t(i);
    if (!index) return NULL;
    PyObject *made = PyObject_CallOneArg(fallback, index);
    Py_DECREF(index);
    return made;
}

typedef struct {
    int mapped, prefix;
    long version;
    PyObject *plans, *newer; /* tuples of 256: WirePlan or None */
} WireSide;

static int wire_side(PyObject *spec, WireSide *s) {
    memset(s, 0, sizeof *s);
    if (spec == Py_None) return 0;
    if (!PyArg_ParseTuple(spec, "plO!O!:user_lines side", &s->prefix, &s->version,
                          &PyTuple_Type, &s->plans, &PyTuple_Type, &s->newer))
        return -1;
    if (PyTuple_GET_SIZE(s->plans) != 256 || PyTuple_GET_SIZE(s->newer) != 256) {
        PyErr_SetString(PyExc_ValueError, "user_lines: a side has 256 plans and 256 newer plans");
        return -1;
    }
    for (Py_ssize_t i = 0; i < 512; i++) {
        PyObject *p = PyTuple_GET_ITEM(i < 256 ? s->plans : s->newer, i % 256);
        if (p != Py_None && !PyObject_TypeCheck(p, &WirePlanType)) {
            PyErr_SetString(PyExc_TypeError, "user_lines: plans are WirePlan or None");
            return -1;
        }
    }
    s->mapped = 1;
    return 0;
}

/* A raw side: "<name>Base64" (null for null bytes) and, for valid UTF-8, "<name>Text". */
static int put_raw_bytes(Buf *b, const unsigned char *p, int64_t n, const char *base64_key,
                         const char *text_key) {
    if (buf_put(b, base64_key, (Py_ssize_t)strlen(base64_key)) < 0) return -1;
    if (n < 0) return PUT_LITERAL(b, "null");
    if (put_base64(b, p, (Py_ssize_t)n, B64, 1) < 0) return -1;
    const int ok = utf8_ok(p, (Py_ssize_t)n);
    if (ok <= 0) return ok;
    if (buf_put(b, text_key, (Py_ssize_t)strlen(text_key)) < 0) return -1;
    return put_text(b, (const char *)p, (Py_ssize_t)n);
}

/* A mapped side of n bytes at p (n < 0: null): ',"<name>Version":V,"<name>":{..}' parts are
   the caller's; here the version read (*version, -1: none) and the message's JSON into m. */
static int put_side(Buf *m, const WireSide *s, const unsigned char *p, int64_t n, long *version,
                    int *newer) {
    *version = -1;
    if (n < 0) return PUT_LITERAL(m, "null");
    Py_ssize_t pos = 0;
    long v = s->version;
    if (s->prefix) {
        if (n < 2) return NOT_HERE;
        v = (int16_t)load16(p);
        pos = 2;
    }
    if (v < 0 || v >= 256) return NOT_HERE;
    PyObject *plan = PyTuple_GET_ITEM(s->plans, v);
    if (plan == Py_None) {
        plan = PyTuple_GET_ITEM(s->newer, v);
        if (plan == Py_None) return NOT_HERE;
        *newer = 1;
    }
    int rc = print_struct(m, (const WirePlan *)plan, p, (Py_ssize_t)n, &pos, 0);
    if (rc < 0) return rc;
    if (pos != n) return NOT_HERE;
    *version = v;
    return 0;
}

static int put_version(Buf *b, long version) {
    return version < 0 ? PUT_LITERAL(b, "null") : buf_int64(b, version);
}

/* One record's line: 0, NOT_HERE or -1. side holds its sides' JSON meanwhile. */
static int put_wire_record(Buf *b, Buf *side, const Parsed *r, int64_t offset, int64_t ts,
                           PyObject *close, PyObject *const *heads, const WireSide *key,
                           const WireSide *value, int *newer) {
    long key_version = -1, value_version = -1;
    Py_ssize_t key_len = 0;
    int rc;
    side->len = 0;
    *newer = 0;
    if (key->mapped) {
        if ((rc = put_side(side, key, r->key, r->key_len, &key_version, newer)) < 0) return rc;
        key_len = side->len;
    }
    if (value->mapped &&
        (rc = put_side(side, value, r->value, r->value_len, &value_version, newer)) < 0)
        return rc;
    PyObject *head = heads[r->value_len < 0];
    if (PUT_LITERAL(b, "{\"offset\":") < 0 || buf_int64(b, offset) < 0 ||
        PUT_LITERAL(b, ",\"timestamp\":") < 0 || buf_int64(b, ts) < 0 ||
        buf_put(b, PyBytes_AS_STRING(head), PyBytes_GET_SIZE(head)) < 0 ||
        put_version(b, value_version) < 0)
        return -1;
    if (key->mapped) {
        if (PUT_LITERAL(b, ",\"keyVersion\":") < 0 || put_version(b, key_version) < 0 ||
            PUT_LITERAL(b, ",\"key\":") < 0 || buf_put(b, side->p, key_len) < 0)
            return -1;
    } else if ((rc = put_raw_bytes(b, r->key, r->key_len, ",\"keyBase64\":", ",\"keyText\":")) <
               0) {
        return rc;
    }
    if (value->mapped) {
        if (PUT_LITERAL(b, ",\"value\":") < 0 || buf_put(b, side->p + key_len, side->len - key_len) < 0)
            return -1;
    } else if ((rc = put_raw_bytes(b, r->value, r->value_len, ",\"valueBase64\":",
                                   ",\"valueText\":")) < 0) {
        return rc;
    }
    if (*newer && PUT_LITERAL(b, ",\"isNewerVersion\":true") < 0) return -1;
    return buf_put(b, PyBytes_AS_STRING(close), PyBytes_GET_SIZE(close));
}

/* user_lines' buffers, kept between calls (a batch's lines are about the same size as the
   last one's): the lines, a record's sides, the parsed records. Only used with the GIL held;
   the only Python code that runs while they are in use is a fallback, and a printer it calls
   leaves its batch to the reference (wire_busy). */
static Buf wire_lines, wire_sides;
static Parsed *wire_recs;
static Py_ssize_t wire_recs_cap;
static int wire_busy;

/* One v2 data batch as the printers here take it, from their first eight arguments (data,
   start, end, count, base_offset, base_timestamp, log_append, append_timestamp): the data
   held and its records parsed into wire_recs. */
typedef struct {
    Py_buffer view;
    Py_ssize_t size, count; /* the batch's records' bytes, and how many records */
    int64_t base_offset, base_ts, append_ts;
    int log_append;
    Parsed *recs;
} WireBatch;

/* 1: the batch's records in w->recs (release w->view after); 0: a batch the reference prints
   (no v2 batch holds over INT32_MAX records; records the engine would refuse: the reference
   path says what is wrong); -1 with an exception. w->view is held only when 1. */
static int wire_batch(PyObject *const *args, WireBatch *w) {
    if (wire_busy) return 0; /* called by a fallback: the buffers are in use */
    Py_ssize_t start = PyLong_AsSsize_t(args[1]);
    Py_ssize_t end = start == -1 && PyErr_Occurred() ? -1 : PyLong_AsSsize_t(args[2]);
    w->count = end == -1 && PyErr_Occurred() ? -1 : PyLong_AsSsize_t(args[3]);
    if (w->count == -1 && PyErr_Occurred()) return -1;
    if (as_int64(args[4], &w->base_offset) < 0 || as_int64(args[5], &w->base_ts) < 0 ||
        as_int64(args[7], &w->append_ts) < 0)
        return -1;
    if ((w->log_append = PyObject_IsTrue(args[6])) < 0) return -1;
    if (PyObject_GetBuffer(args[0], &w->view, PyBUF_SIMPLE) < 0) return -1;
    const Py_ssize_t count = w->count;
    int got = 1;
    if (start < 0 || end < start || end > w->view.len || count < 0 || count > end - start) {
        PyErr_Format(PyExc_ValueError, "bad bounds: start %zd, end %zd, count %zd for %zd bytes",
                     start, end, count, w->view.len);
        got = -1;
    } else if (count > INT32_MAX) {
        got = 0;
    } else if (parsed_room(&wire_recs, &wire_recs_cap, (int32_t)count) < 0) {
        got = -1;
    } else if (parse(w->view.buf, start, end, count, wire_recs, 0) < 0) {
        PyErr_Clear();
        got = 0;
    }
    w->recs = wire_recs;
    w->size = end - start;
    if (got < 1) PyBuffer_Release(&w->view);
    else wire_busy = 1;
    return got;
}

/* The batch's data released, the buffers free again. */
static void wire_release(WireBatch *w) {
    PyBuffer_Release(&w->view);
    wire_busy = 0;
}

/* Record r's offset and timestamp: 0, or NOT_HERE past int64 (the reference's ints). */
static int wire_position(const WireBatch *w, const Parsed *r, int64_t *offset, int64_t *ts) {
    *ts = w->append_ts;
    if (__builtin_add_overflow(w->base_offset, r->off_delta, offset) ||
        (!w->log_append && __builtin_add_overflow(w->base_ts, r->ts_delta, ts)))
        return NOT_HERE;
    return 0;
}

/* 1 when every record's offset and timestamp are int64s (wire_position), else 0: checked
   before any record is printed, so that a fallback is never asked for a record of a batch
   the reference then prints whole (it would note that record twice). */
static int wire_positions_ok(const WireBatch *w) {
    for (Py_ssize_t i = 0; i < w->count; i++) {
        int64_t offset, ts;
        if (wire_position(w, &w->recs[i], &offset, &ts) == NOT_HERE) return 0;
    }
    return 1;
}

static PyObject *user_lines(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 13 || !PyBytes_CheckExact(args[8]) || !PyTuple_Check(args[9]) ||
        PyTuple_GET_SIZE(args[9]) != 2 || !PyBytes_CheckExact(PyTuple_GET_ITEM(args[9], 0)) ||
        !PyBytes_CheckExact(PyTuple_GET_ITEM(args[9], 1)))
        return usage_error("user_lines(data, start, end, count, base_offset, base_timestamp, "
                           "log_append, append_timestamp, close: bytes, heads: (bytes, bytes), "
                           "key_side, value_side, fallback)");
    WireSide key, value;
    if (wire_side(args[10], &key) < 0 || wire_side(args[11], &value) < 0) return NULL;
    WireBatch w;
    const int got = wire_batch(args, &w);
    if (got < 1) return got < 0 ? NULL : Py_NewRef(Py_None);
    PyObject *out = NULL;
    Buf *b = &wire_lines, *side = &wire_sides;
    b->len = side->len = 0;
    int64_t newer_count = 0;
    const Py_ssize_t count = w.count;
    if (!wire_positions_ok(&w)) {
        out = Py_NewRef(Py_None);
        goto done;
    }
    if (buf_reserve(b, w.size * 2 + count * PyBytes_GET_SIZE(args[8])) < 0) goto done;
    for (Py_ssize_t i = 0; i < count; i++) {
        const Parsed *r = &w.recs[i];
        int64_t offset, ts;
        int newer = 0;
        if (wire_position(&w, r, &offset, &ts) == NOT_HERE) {
            out = Py_NewRef(Py_None);
            goto done;
        }
        const Py_ssize_t line_start = b->len;
        int rc = put_wire_record(b, side, r, offset, ts, args[8],
                                 &PyTuple_GET_ITEM(args[9], 0), &key, &value, &newer);
        if (rc == NOT_HERE) { /* the reference's line of this record */
            b->len = line_start;
            newer = 0;
            PyObject *line = wire_fallback(args[12], i);
            if (!line) goto done;
            if (line == Py_None) {
                out = line;
                goto done;
            }
            rc = PyBytes_CheckExact(line) ? buf_put(b, PyBytes_AS_STRING(line), PyBytes_GET_SIZE(line)) : -1;
            if (!PyBytes_CheckExact(line))
                PyErr_Format(PyExc_TypeError, "fallback must return bytes or None, not %R", line);
            Py_DECREF(line);
        }
        if (rc < 0) goto done;
        newer_count += newer;
    }
    out = Py_BuildValue("(y#L)", b->p, b->len, (long long)newer_count);
done:
    b->len = side->len = 0;
    wire_release(&w);
    return out;
}

/* ------------------------------------------------------------------------------- dump-log */

/* Jackson's form of the JSON text b->p[from:]: orjson's \u00xx escapes with upper-case hex
   (record_json.jackson_json). */
static void jackson_escapes(Buf *b, Py_ssize_t from) {
    char *p = b->p;
    for (Py_ssize_t i = from; i < b->len; i++) {
        if (p[i] != '\\') continue;
        if (i + 5 < b->len && p[i + 1] == 'u') {
            for (int k = 4; k <= 5; k++)
                if (p[i + k] >= 'a' && p[i + k] <= 'f') p[i + k] = (char)(p[i + k] - 'a' + 'A');
            i += 5;
        } else {
            i += 1; /* the escaped character */
        }
    }
}

/* 1 when p[0:n] is UTF-8 that dumplog_json.one_line leaves as it is (no control character
   but tab, no U+0085, U+2028 or U+2029), 0 when not (the reference prints it), -1 on error. */
static int plain_line_text(const unsigned char *p, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        const unsigned char c = p[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f) return 0;
        if (c == 0xC2 && i + 1 < n && p[i + 1] == 0x85) return 0;
        if (c == 0xE2 && i + 2 < n && p[i + 1] == 0x80 && (p[i + 2] == 0xA8 || p[i + 2] == 0xA9))
            return 0;
    }
    return utf8_ok(p, n);
}

/* " <label>: <text>" of one side of n bytes at p (nothing for null bytes): a mapped side's
   JSON as Jackson prints it, a raw side's UTF-8 text. 0, NOT_HERE or -1. */
static int put_dump_log_side(Buf *b, const char *label, const WireSide *s,
                             const unsigned char *p, int64_t n, int *newer) {
    if (n < 0) return 0;
    if (buf_put(b, label, (Py_ssize_t)strlen(label)) < 0) return -1;
    if (s->mapped) {
        const Py_ssize_t from = b->len;
        long version;
        const int rc = put_side(b, s, p, n, &version, newer);
        if (rc < 0) return rc;
        jackson_escapes(b, from);
        return 0;
    }
    const int ok = plain_line_text(p, (Py_ssize_t)n);
    if (ok <= 0) return ok < 0 ? -1 : NOT_HERE;
    return buf_put(b, (const char *)p, (Py_ssize_t)n);
}

/* Kafka's DefaultRecordBatch.incrementSequence. */
static int64_t next_sequence(int64_t sequence, int64_t increment) {
    if (sequence > INT32_MAX - increment) return increment - (INT32_MAX - sequence) - 1;
    return sequence + increment;
}

/* user_dump_log(data, start, end, count, base_offset, base_timestamp, log_append,
   append_timestamp, base_sequence, ts_name, key_side, value_side, fallback) -> (str, newer) |
   None: the
   `| offset: ...` lines of one v2 data batch of a user topic, as dumplog_json prints its
   records (key: and payload: as user_dump_log_texts gives them), joined by newlines; None
   where the reference prints them: a record with headers, offsets that do not follow each
   other, a record the engine would refuse, a raw side one_line would change. */
static PyObject *user_dump_log(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 13 || !PyBytes_CheckExact(args[9]))
        return usage_error("user_dump_log(data, start, end, count, base_offset, base_timestamp, "
                           "log_append, append_timestamp, base_sequence, ts_name: bytes, "
                           "key_side, value_side, fallback)");
    int64_t base_seq;
    if (as_int64(args[8], &base_seq) < 0) return NULL;
    WireSide key, value;
    if (wire_side(args[10], &key) < 0 || wire_side(args[11], &value) < 0) return NULL;
    WireBatch w;
    const int got = wire_batch(args, &w);
    if (got < 1) return got < 0 ? NULL : Py_NewRef(Py_None);
    if (base_seq > INT32_MAX) {
        wire_release(&w);
        return Py_NewRef(Py_None);
    }
    PyObject *out = NULL, *ts_name = args[9];
    Buf *b = &wire_lines;
    b->len = 0;
    int64_t newer_count = 0;
    int whole = wire_positions_ok(&w);
    for (Py_ssize_t i = 0; whole && i < w.count; i++)
        whole = w.recs[i].off_delta == i && w.recs[i].n_headers == 0;
    if (!whole) {
        out = Py_NewRef(Py_None);
        goto done;
    }
    for (Py_ssize_t i = 0; i < w.count; i++) {
        const Parsed *r = &w.recs[i];
        int64_t offset, ts;
        int newer = 0, rc = 0;
        if (r->off_delta != i || r->n_headers != 0 ||
            wire_position(&w, r, &offset, &ts) == NOT_HERE) {
            out = Py_NewRef(Py_None);
            goto done;
        }
        if ((i && PUT_LITERAL(b, "\n") < 0) || PUT_LITERAL(b, "| offset: ") < 0 ||
            buf_int64(b, offset) < 0 || PUT_LITERAL(b, " ") < 0 ||
            buf_put(b, PyBytes_AS_STRING(ts_name), PyBytes_GET_SIZE(ts_name)) < 0 ||
            PUT_LITERAL(b, ": ") < 0 || buf_int64(b, ts) < 0 ||
            PUT_LITERAL(b, " keySize: ") < 0 || buf_int64(b, r->key_len < 0 ? -1 : r->key_len) < 0 ||
            PUT_LITERAL(b, " valueSize: ") < 0 ||
            buf_int64(b, r->value_len < 0 ? -1 : r->value_len) < 0 ||
            PUT_LITERAL(b, " sequence: ") < 0 ||
            buf_int64(b, base_seq < 0 ? -1 : next_sequence(base_seq, i)) < 0 ||
            PUT_LITERAL(b, " headerKeys: []") < 0)
            goto done;
        const Py_ssize_t data_start = b->len;
        rc = put_dump_log_side(b, " key: ", &key, r->key, r->key_len, &newer);
        if (rc >= 0) rc = put_dump_log_side(b, " payload: ", &value, r->value, r->value_len, &newer);
        if (rc == NOT_HERE) { /* the reference's key: and payload: texts of this record */
            b->len = data_start;
            newer = 0;
            PyObject *data = wire_fallback(args[12], i);
            if (!data) goto done;
            if (data == Py_None) {
                out = data;
                goto done;
            }
            /* its lone surrogates kept (the text is decoded with surrogatepass) */
            PyObject *utf8 = PyUnicode_Check(data)
                                 ? PyUnicode_AsEncodedString(data, "utf-8", "surrogatepass")
                                 : NULL;
            if (utf8) {
                rc = buf_put(b, PyBytes_AS_STRING(utf8), PyBytes_GET_SIZE(utf8));
                Py_DECREF(utf8);
            } else {
                if (!PyErr_Occurred())
                    PyErr_Format(PyExc_TypeError, "fallback must return a str or None, not %R",
                                 data);
                rc = -1;
            }
            Py_DECREF(data);
        }
        if (rc < 0) goto done;
        newer_count += newer;
    }
    PyObject *text = PyUnicode_DecodeUTF8(b->p, b->len, "surrogatepass");
    if (text) {
        out = Py_BuildValue("(NL)", text, (long long)newer_count);
    }
done:
    b->len = 0;
    wire_release(&w);
    return out;
}

/* ------------------------------------------------------------------------------- table */

/* A table cell of one side into *cell (a new str): a mapped side's JSON ("" for "{}" when
   empty_object_blank), a raw side's UTF-8 text; `absent` (borrowed) for null bytes. */
static int table_cell(Buf *b, const WireSide *s, const unsigned char *p, int64_t n,
                      PyObject *absent, int empty_object_blank, int *newer, PyObject **cell) {
    if (n < 0) {
        *cell = Py_NewRef(absent);
        return 0;
    }
    if (s->mapped) {
        b->len = 0;
        long version;
        const int rc = put_side(b, s, p, n, &version, newer);
        if (rc < 0) return rc;
        if (empty_object_blank && b->len == 2 && b->p[0] == '{' && b->p[1] == '}') b->len = 0;
        *cell = PyUnicode_DecodeUTF8(b->p, b->len, NULL);
        return *cell ? 0 : -1;
    }
    const int ok = utf8_ok(p, (Py_ssize_t)n);
    if (ok <= 0) return ok < 0 ? -1 : NOT_HERE; /* decode("utf-8", "replace"): the reference */
    *cell = PyUnicode_DecodeUTF8((const char *)p, (Py_ssize_t)n, NULL);
    return *cell ? 0 : -1;
}

static PyObject *decimal(int64_t v) {
    char tmp[24];
    Buf b = {tmp, 0, sizeof tmp, NULL};
    buf_int64(&b, v); /* fits: no growth */
    return PyUnicode_FromStringAndSize(b.p, b.len);
}

/* user_table_cells(data, start, end, count, base_offset, base_timestamp, log_append,
   append_timestamp, key_side, value_side, fallback) -> (rows, newer) | None: a user topic's
   records table cells of one v2 data batch, (offset, timestamp, key, value) per record as
   table._user_cells makes them (the key "" when null or an empty object, the value
   "<tombstone>" when null), or what fallback(i) gives for a record they cannot be made of;
   None where the reference makes them all. */
static PyObject *user_table_cells(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (!arity_ok(nargs, 11,
                  "user_table_cells(data, start, end, count, base_offset, base_timestamp, "
                  "log_append, append_timestamp, key_side, value_side, fallback)"))
        return NULL;
    WireSide key, value;
    if (wire_side(args[8], &key) < 0 || wire_side(args[9], &value) < 0) return NULL;
    WireBatch w;
    const int got = wire_batch(args, &w);
    if (got < 1) return got < 0 ? NULL : Py_NewRef(Py_None);
    PyObject *out = NULL, *rows = NULL, *blank = NULL, *tombstone = NULL;
    Buf *b = &wire_sides;
    int64_t newer_count = 0;
    const Py_ssize_t count = w.count;
    if (!wire_positions_ok(&w)) {
        out = Py_NewRef(Py_None);
        goto done;
    }
    if (!(rows = PyList_New(count)) || !(blank = PyUnicode_FromString("")) ||
        !(tombstone = PyUnicode_FromString("<tombstone>")))
        goto done;
    for (Py_ssize_t i = 0; i < count; i++) {
        const Parsed *r = &w.recs[i];
        int64_t offset, ts;
        int newer = 0, rc;
        if (wire_position(&w, r, &offset, &ts) == NOT_HERE) {
            out = Py_NewRef(Py_None);
            goto done;
        }
        PyObject *cells[4] = {NULL, NULL, NULL, NULL};
        rc = table_cell(b, &key, r->key, r->key_len, blank, 1, &newer, &cells[2]);
        if (rc >= 0)
            rc = table_cell(b, &value, r->value, r->value_len, tombstone, 0, &newer, &cells[3]);
        if (rc >= 0 && (!(cells[0] = decimal(offset)) || !(cells[1] = decimal(ts)))) rc = -1;
        PyObject *row = rc >= 0 ? PyTuple_New(4) : NULL;
        if (!row) {
            for (int k = 0; k < 4; k++) Py_XDECREF(cells[k]);
            if (rc != NOT_HERE) goto done;
            /* the reference's row of this record */
            newer = 0;
            if (!(row = wire_fallback(args[10], i))) goto done;
            if (row == Py_None) {
                out = row;
                goto done;
            }
        } else {
            for (int k = 0; k < 4; k++) PyTuple_SET_ITEM(row, k, cells[k]);
        }
        PyList_SET_ITEM(rows, i, row);
        newer_count += newer;
    }
    out = Py_BuildValue("(OL)", rows, (long long)newer_count);
done:
    b->len = 0;
    Py_XDECREF(rows);
    Py_XDECREF(blank);
    Py_XDECREF(tombstone);
    wire_release(&w);
    return out;
}

#endif
