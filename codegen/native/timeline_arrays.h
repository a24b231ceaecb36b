/* timeline_arrays: the timelines of `groups --format jsonl`, a JSON array per group, printed in
 * one pass from a partition's deletion columns and its record events' rows (EventRow) (for
 * codegen.forensics.groups_json.timeline_texts; the reference is orjson of
 * [e.to_json() for e in Timelines.of(group)]). A group's events are its record events and its
 * deleted committed offsets, by offset, a record's events first at a tie and each lot in the
 * order given (a stable sort of the record events, then the deletions); a deletion prints as
 * {"offset":..,"timestamp":..,"kind":"offset-deleted","detail":{"topic":..,"partition":..}},
 * a record event as GroupEvent.to_json's dict, its detail as orjson prints it (None, bools,
 * exact ints and strs, lists, dicts of str keys; anything else, an integer past 64 bits or a
 * lone surrogate: NOT_HERE, and the caller prints the partition's timelines by the reference).
 * Included by jsontext.c after int64_text.h and json_values.h (Buf, escaped_text,
 * put_int, put_string).
 */

/* How deep a detail's lists and dicts may nest here (deeper: NOT_HERE). */
#define DETAIL_DEPTH 16

/* v as orjson prints it (compact, OPT_NON_STR_KEYS with str keys only): 0, NOT_HERE or -1. */
static int put_detail(Buf *b, PyObject *v, int depth) {
    if (v == Py_None) return PUT_LITERAL(b, "null");
    if (v == Py_True) return PUT_LITERAL(b, "true");
    if (v == Py_False) return PUT_LITERAL(b, "false");
    if (PyLong_CheckExact(v)) return put_int(b, v);
    if (PyUnicode_CheckExact(v)) return put_string(b, v);
    if (depth >= DETAIL_DEPTH) return NOT_HERE;
    if (PyList_CheckExact(v)) {
        if (PUT_LITERAL(b, "[") < 0) return -1;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); i++) {
            if (i && PUT_LITERAL(b, ",") < 0) return -1;
            int done = put_detail(b, PyList_GET_ITEM(v, i), depth + 1);
            if (done) return done;
        }
        return PUT_LITERAL(b, "]");
    }
    if (!PyDict_CheckExact(v)) return NOT_HERE;
    if (PUT_LITERAL(b, "{") < 0) return -1;
    Py_ssize_t pos = 0, i = 0;
    PyObject *k, *item;
    while (PyDict_Next(v, &pos, &k, &item)) {
        if (!PyUnicode_CheckExact(k)) return NOT_HERE;
        if (i++ && PUT_LITERAL(b, ",") < 0) return -1;
        int done = put_string(b, k);
        if (done) return done;
        /* the item borrowed from a dict the printer does not change (nothing here runs
           Python code) */
        if (PUT_LITERAL(b, ":") < 0) return -1;
        if ((done = put_detail(b, item, depth + 1))) return done;
    }
    return PUT_LITERAL(b, "}");
}

/* The key of item i: its offset (the record events first, then the deletions). Sorts
   idx[0:n] by key, stably, with tmp (room for n) as scratch: a run already in order is left
   as it is, two runs in order are merged once. */
static void stable_sort_by_key(int64_t *idx, int64_t *tmp, Py_ssize_t n, const int64_t *key) {
    if (n < 2) return;
    if (n <= 16) { /* insertion: stable, no scratch */
        for (Py_ssize_t i = 1; i < n; i++) {
            const int64_t v = idx[i];
            Py_ssize_t j = i;
            while (j > 0 && key[idx[j - 1]] > key[v]) {
                idx[j] = idx[j - 1];
                j--;
            }
            idx[j] = v;
        }
        return;
    }
    const Py_ssize_t half = n / 2;
    stable_sort_by_key(idx, tmp, half, key);
    stable_sort_by_key(idx + half, tmp, n - half, key);
    if (key[idx[half - 1]] <= key[idx[half]]) return; /* in order already */
    memcpy(tmp, idx, (size_t)half * sizeof *idx);
    Py_ssize_t a = 0, b = half, o = 0;
    while (a < half && b < n) idx[o++] = key[idx[b]] < key[tmp[a]] ? idx[b++] : tmp[a++];
    while (a < half) idx[o++] = tmp[a++];
}

/* What comes around a deletion's values. */
static const char DELETED_OFFSET[] = "{\"offset\":";
static const char DELETED_TIMESTAMP[] = ",\"timestamp\":";
static const char DELETED_TOPIC[] = ",\"kind\":\"offset-deleted\",\"detail\":{\"topic\":";
static const char DELETED_PARTITION[] = ",\"partition\":";

/* The room a deletion's text takes at most, its topic `n` bytes (below 2^31): a comma, the
   four prefixes, three integers, the topic escaped (escaped_text) and "}}". */
static inline Py_ssize_t deletion_room(Py_ssize_t n) {
    return 1 + (Py_ssize_t)(sizeof DELETED_OFFSET + sizeof DELETED_TIMESTAMP +
                            sizeof DELETED_TOPIC + sizeof DELETED_PARTITION) +
           3 * INT64_TEXT_MAX + 6 * n + 2 + 2;
}

/* The columns timeline_arrays reads, and its record events printed. */
typedef struct {
    Py_ssize_t rows, events;
    const int32_t *group; /* deletions: group code */
    const int64_t *at, *timestamp;
    const int32_t *partition;
    const int32_t *topic_offsets; /* rows + 1, into topic_data */
    const char *topic_data;
    const char *event_text; /* the record events' texts, one after another */
    const Py_ssize_t *event_end; /* where each ends in event_text (events + 1: 0 first) */
} TimelineColumns;

/* Item i's text (record event i for i < events, else deletion i - events) after a comma when
   `comma`: 0 or -1. */
static int put_timeline_item(Buf *b, const TimelineColumns *c, int64_t i, int comma) {
    if (i < c->events) {
        const Py_ssize_t from = c->event_end[i], n = c->event_end[i + 1] - from;
        if (buf_reserve(b, n + 1) < 0) return -1;
        char *o = b->p + b->len;
        if (comma) *o++ = ',';
        memcpy(o, c->event_text + from, (size_t)n);
        b->len = o + n - b->p;
        return 0;
    }
    const int64_t r = i - c->events;
    const int32_t from = c->topic_offsets[r], to = c->topic_offsets[r + 1];
    if (buf_reserve(b, deletion_room(to - from)) < 0) return -1;
    char *o = b->p + b->len;
    if (comma) *o++ = ',';
    memcpy(o, DELETED_OFFSET, sizeof DELETED_OFFSET - 1);
    o = int64_text(o + sizeof DELETED_OFFSET - 1, c->at[r]);
    memcpy(o, DELETED_TIMESTAMP, sizeof DELETED_TIMESTAMP - 1);
    o = int64_text(o + sizeof DELETED_TIMESTAMP - 1, c->timestamp[r]);
    memcpy(o, DELETED_TOPIC, sizeof DELETED_TOPIC - 1);
    o = escaped_text(o + sizeof DELETED_TOPIC - 1, c->topic_data + from, to - from);
    memcpy(o, DELETED_PARTITION, sizeof DELETED_PARTITION - 1);
    o = int64_text(o + sizeof DELETED_PARTITION - 1, c->partition[r]);
    memcpy(o, "}}", 2);
    b->len = o + 2 - b->p;
    return 0;
}

/* An int buffer of `count` items of `size` bytes, held in view: its data, or NULL with an
   error set (view released). */
static const void *held_column(PyObject *given, Py_buffer *view, Py_ssize_t size,
                               Py_ssize_t count, const char *what) {
    if (PyObject_GetBuffer(given, view, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    if (view->itemsize != size || view->len != size * count) {
        PyErr_Format(PyExc_ValueError, "timeline_arrays: %s: %zd items of %zd bytes", what,
                     count, size);
        PyBuffer_Release(view);
        return NULL;
    }
    return view->buf;
}

enum { TA_GROUP, TA_AT, TA_TIMESTAMP, TA_PARTITION, TA_TOPIC_OFFSETS, TA_TOPIC_DATA, N_TA_BUFFERS };

/* The deletion columns' buffers (args[2:8]: group, at, timestamp, partition, topic_offsets,
   topic_data) into c, held in views (held[k]: taken), checked: every code within
   [0, groups), the topic offsets rising within the data. 0, or -1 with an error set. */
static int deletion_columns(PyObject *const *args, Py_ssize_t groups, TimelineColumns *c,
                            Py_buffer *views, int *held) {
    if (PyObject_GetBuffer(args[2], &views[TA_GROUP], PyBUF_C_CONTIGUOUS) < 0) return -1;
    held[TA_GROUP] = 1;
    if (views[TA_GROUP].itemsize != 4 || views[TA_GROUP].len % 4) {
        PyErr_SetString(PyExc_ValueError, "timeline_arrays: group codes are int32");
        return -1;
    }
    const Py_ssize_t n = c->rows = views[TA_GROUP].len / 4;
    c->group = views[TA_GROUP].buf;
    struct {
        int slot;
        Py_ssize_t size, count;
        const char *what;
    } const spec[] = {
        {TA_AT, 8, n, "offsets"},
        {TA_TIMESTAMP, 8, n, "timestamps"},
        {TA_PARTITION, 4, n, "partitions"},
        {TA_TOPIC_OFFSETS, 4, n + 1, "topic offsets"},
    };
    const void *data[N_TA_BUFFERS];
    for (size_t k = 0; k < sizeof spec / sizeof spec[0]; k++) {
        const int slot = spec[k].slot;
        data[slot] = held_column(args[2 + slot], &views[slot], spec[k].size, spec[k].count,
                                 spec[k].what);
        if (!data[slot]) return -1;
        held[slot] = 1;
    }
    if (PyObject_GetBuffer(args[2 + TA_TOPIC_DATA], &views[TA_TOPIC_DATA], PyBUF_C_CONTIGUOUS) <
        0)
        return -1;
    held[TA_TOPIC_DATA] = 1;
    c->at = data[TA_AT];
    c->timestamp = data[TA_TIMESTAMP];
    c->partition = data[TA_PARTITION];
    c->topic_offsets = data[TA_TOPIC_OFFSETS];
    c->topic_data = views[TA_TOPIC_DATA].buf;
    for (Py_ssize_t r = 0; r < n; r++)
        if (c->group[r] < 0 || c->group[r] >= groups) {
            PyErr_SetString(PyExc_ValueError, "timeline_arrays: a group code out of range");
            return -1;
        }
    const int32_t *to = c->topic_offsets;
    for (Py_ssize_t r = 0; r < n; r++)
        if (to[r] < 0 || to[r + 1] < to[r] || to[r + 1] > views[TA_TOPIC_DATA].len) {
            PyErr_SetString(PyExc_ValueError, "timeline_arrays: topic offsets outside the data");
            return -1;
        }
    return 0;
}

/* A record event's row (codegen.forensics.group_timelines.EventRow): its items. */
enum { EV_OFFSET, EV_TIMESTAMP, EV_GROUP, EV_KIND, EV_DETAIL, N_EVENT_ITEMS };
/* What comes before each printed item's value (GroupEvent.to_json's keys; no group). */
static const char *const EVENT_KEYS[N_EVENT_ITEMS] = {
    "{\"offset\":", ",\"timestamp\":", NULL, ",\"kind\":", ",\"detail\":",
};

/* Record event row e printed into b (GroupEvent.to_json), its offset in *offset and its
   group's code in *code (a group not in code_of added to it and to names): 0, NOT_HERE (not
   a row of five, an offset not an int of 64 bits, a group not a str, a value not printed
   here) or -1. */
static int put_event(Buf *b, PyObject *e, PyObject *code_of, PyObject *names, int64_t *offset,
                     Py_ssize_t *code) {
    if (!PyTuple_CheckExact(e) || PyTuple_GET_SIZE(e) != N_EVENT_ITEMS) return NOT_HERE;
    PyObject *at = PyTuple_GET_ITEM(e, EV_OFFSET), *group = PyTuple_GET_ITEM(e, EV_GROUP);
    if (!PyLong_CheckExact(at) || !PyUnicode_CheckExact(group)) return NOT_HERE;
    int overflow = 0;
    *offset = PyLong_AsLongLongAndOverflow(at, &overflow);
    if (overflow) return NOT_HERE;
    if (*offset == -1 && PyErr_Occurred()) return -1;
    PyObject *found = PyDict_GetItemWithError(code_of, group);
    if (found) {
        if ((*code = PyLong_AsSsize_t(found)) == -1 && PyErr_Occurred()) return -1;
        if (*code < 0 || *code >= PyList_GET_SIZE(names)) {
            PyErr_SetString(PyExc_ValueError, "timeline_arrays: a group code out of range");
            return -1;
        }
    } else {
        if (PyErr_Occurred()) return -1;
        *code = PyList_GET_SIZE(names);
        PyObject *number = PyLong_FromSsize_t(*code);
        int failed = !number || PyDict_SetItem(code_of, group, number) < 0 ||
                     PyList_Append(names, group) < 0;
        Py_XDECREF(number);
        if (failed) return -1;
    }
    for (int a = 0; a < N_EVENT_ITEMS; a++) {
        if (a == EV_GROUP) continue;
        if (buf_put(b, EVENT_KEYS[a], (Py_ssize_t)strlen(EVENT_KEYS[a])) < 0) return -1;
        /* the offset, timestamp and kind scalars (no list or dict), the detail any value */
        int done = put_detail(b, PyTuple_GET_ITEM(e, a), a == EV_DETAIL ? 0 : DETAIL_DEPTH);
        if (done) return done;
    }
    return PUT_LITERAL(b, "}");
}

/* The record events (a list of rows) printed one after another into b, their ends into *ends
   (room for events + 1, 0 first), their offsets into key and group codes into code: 0,
   NOT_HERE or -1. */
static int put_events(Buf *b, PyObject *events, PyObject *code_of, PyObject *names,
                      Py_ssize_t *ends, int64_t *key, Py_ssize_t *code) {
    ends[0] = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(events); i++) {
        int done = put_event(b, PyList_GET_ITEM(events, i), code_of, names, &key[i], &code[i]);
        if (done) return done;
        ends[i + 1] = b->len;
    }
    return 0;
}

/* timeline_arrays(names, code_of, group, at, timestamp, partition, topic_offsets, topic_data,
   events) -> list of bytes | None: per group (names[k] the group of code k), the JSON array
   of its events; None where an event holds a value not printed here. The deletions: group
   (int32 codes), at (their record offsets, int64), timestamp (int64), partition (int32),
   their topics as an Arrow string column's offsets (int32, one more than the rows) and data
   (UTF-8); the record events: a list of rows (offset, timestamp, group, kind, detail:
   Timelines.event_rows), whose groups not in code_of (name -> code, names' index) are added to
   it and to names, in the order met. */
static PyObject *timeline_arrays(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    static const char usage[] =
        "timeline_arrays(names, code_of, group, at, timestamp, partition, topic_offsets, "
        "topic_data, events): a list of names, a dict of their codes, six buffers and a list "
        "of events";
    if (!arity_ok(nargs, 9, usage)) return NULL;
    PyObject *names = args[0], *code_of = args[1], *events = args[8];
    if (!PyList_CheckExact(names) || !PyDict_CheckExact(code_of) || !PyList_CheckExact(events))
        return usage_error(usage);
    TimelineColumns c;
    Py_buffer views[N_TA_BUFFERS];
    int held[N_TA_BUFFERS] = {0};
    int64_t *key = NULL, *idx = NULL, *tmp = NULL;
    Py_ssize_t *start = NULL, *ends = NULL, *code = NULL;
    PyObject *out = NULL;
    Buf b = {NULL, 0, 0, NULL}, ev = {NULL, 0, 0, NULL};
    if (deletion_columns(args, PyList_GET_SIZE(names), &c, views, held) < 0) goto done;
    const Py_ssize_t ne = c.events = PyList_GET_SIZE(events);
    const Py_ssize_t total = ne + c.rows; /* both held in memory: no overflow */
    key = PyMem_Malloc((size_t)(total + 1) * sizeof *key);
    idx = PyMem_Malloc((size_t)(total + 1) * sizeof *idx);
    tmp = PyMem_Malloc((size_t)(total / 2 + 1) * sizeof *tmp);
    ends = PyMem_Malloc((size_t)(ne + 1) * sizeof *ends);
    code = PyMem_Malloc((size_t)(ne + 1) * sizeof *code);
    if (!key || !idx || !tmp || !ends || !code) {
        PyErr_NoMemory();
        goto done;
    }
    const int printed = put_events(&ev, events, code_of, names, ends, key, code);
    if (printed == NOT_HERE) {
        if (PyErr_Occurred()) PyErr_Clear();
        out = Py_NewRef(Py_None);
        goto done;
    }
    if (printed < 0) goto done;
    c.event_text = ev.p;
    c.event_end = ends;
    /* the items by group (a counting sort: stable), then each group's by key */
    const Py_ssize_t groups = PyList_GET_SIZE(names);
    if (!(start = PyMem_Calloc((size_t)groups + 2, sizeof *start))) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < ne; i++) start[code[i] + 2]++;
    for (Py_ssize_t r = 0; r < c.rows; r++) {
        key[ne + r] = c.at[r];
        start[c.group[r] + 2]++;
    }
    for (Py_ssize_t k = 2; k < groups + 2; k++) start[k] += start[k - 1];
    /* start[k + 1]: where group k's items go next; once placed, start[k] is its first */
    for (Py_ssize_t i = 0; i < ne; i++) idx[start[code[i] + 1]++] = i;
    for (Py_ssize_t r = 0; r < c.rows; r++) idx[start[c.group[r] + 1]++] = ne + r;
    if (!(out = PyList_New(groups))) goto done;
    for (Py_ssize_t k = 0; k < groups; k++) {
        const Py_ssize_t from = start[k], to = start[k + 1];
        stable_sort_by_key(idx + from, tmp, to - from, key);
        /* written into its bytes object, sized for its text at most, cut to its length at the
           end: no copy */
        Py_ssize_t size = 2;
        for (Py_ssize_t j = from; j < to; j++) {
            const int64_t i = idx[j];
            size += i < ne ? ends[i + 1] - ends[i] + 1
                           : deletion_room(c.topic_offsets[i - ne + 1] - c.topic_offsets[i - ne]);
        }
        if (!(b.owner = PyBytes_FromStringAndSize(NULL, size))) goto failed;
        b.p = PyBytes_AS_STRING(b.owner);
        b.len = 0;
        b.cap = size;
        if (PUT_LITERAL(&b, "[") < 0) goto failed;
        for (Py_ssize_t j = from; j < to; j++)
            if (put_timeline_item(&b, &c, idx[j], j > from) < 0) goto failed;
        if (PUT_LITERAL(&b, "]") < 0 || _PyBytes_Resize(&b.owner, b.len) < 0) goto failed;
        PyList_SET_ITEM(out, k, b.owner);
        b.owner = NULL;
    }
    goto done;
failed:
    Py_CLEAR(out);
done:
    Py_XDECREF(b.owner);
    PyMem_Free(ev.p);
    for (int k = 0; k < N_TA_BUFFERS; k++)
        if (held[k]) PyBuffer_Release(&views[k]);
    PyMem_Free(key);
    PyMem_Free(idx);
    PyMem_Free(tmp);
    PyMem_Free(start);
    PyMem_Free(ends);
    PyMem_Free(code);
    return out;
}
