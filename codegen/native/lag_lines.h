/* lag_write: the lines of `lag --format jsonl`, a group per line, printed here from the groups'
 * objects and their partitions' commit columns (codegen.forensics.lag_json.write_group_lines;
 * the reference is orjson of GroupLag.to_json, what lag_json.group_parts joins) and given to
 * the output's write a buffer at a time: each group's
 * {"group","status","now","partitions":[...]} (and "sharePartitions", its text given), each
 * partition's members as PartitionLag.to_json names them, its commits as object_arrays prints
 * them. A group with a value not printed here (a string with a lone surrogate, an integer past
 * 64 bits, a type the views do not make) has its line made by the reference, written in its
 * place. Included by jsontext.c after object_arrays (ObjectRows, put_object_rows).
 */

enum { LG_GROUP, LG_STATUS, LG_NOW, LG_PARTITIONS, N_GROUP_ATTRS };
static const char *const GROUP_ATTRS[N_GROUP_ATTRS] = {"group", "status", "now", "partitions"};

enum {
    LP_GROUP, LP_TOPIC, LP_PARTITION, LP_LIVE, LP_LOG_END_OFFSET, LP_LOG_END_SOURCE, LP_LAG,
    LP_STATUS, LP_REASON, LP_DELETED_AT, N_PARTITION_ATTRS,
};
static const char *const PARTITION_ATTRS[N_PARTITION_ATTRS] = {
    "group", "topic", "partition", "live", "log_end_offset", "log_end_source", "lag", "status",
    "reason", "deleted_at",
};
/* What comes before each partition member's value (PartitionLag.summary_json's keys), and
   its length (no strlen a member). */
#define PARTITION_KEY(text) {text, sizeof text - 1}
static const struct {
    const char *text;
    Py_ssize_t len;
} PARTITION_KEYS[N_PARTITION_ATTRS] = {
    PARTITION_KEY("{\"group\":"),        PARTITION_KEY(",\"topic\":"),
    PARTITION_KEY(",\"partition\":"),    PARTITION_KEY(",\"live\":"),
    PARTITION_KEY(",\"logEndOffset\":"), PARTITION_KEY(",\"logEndSource\":"),
    PARTITION_KEY(",\"lag\":"),          PARTITION_KEY(",\"status\":"),
    PARTITION_KEY(",\"reason\":"),       PARTITION_KEY(",\"deletedAt\":"),
};
#undef PARTITION_KEY

static PyObject *S_group_attrs[N_GROUP_ATTRS], *S_partition_attrs[N_PARTITION_ATTRS];

static int lag_names(void) {
    for (int i = 0; i < N_GROUP_ATTRS; i++)
        if (!S_group_attrs[i] && !(S_group_attrs[i] = PyUnicode_InternFromString(GROUP_ATTRS[i])))
            return -1;
    for (int i = 0; i < N_PARTITION_ATTRS; i++)
        if (!S_partition_attrs[i] &&
            !(S_partition_attrs[i] = PyUnicode_InternFromString(PARTITION_ATTRS[i])))
            return -1;
    return 0;
}

/* A member's value as orjson prints it: None, True, False, an exact int or str, or a list of
   exact ints; 0, NOT_HERE or -1. */
static int put_lag_value(Buf *b, PyObject *v) {
    if (v == Py_None) return PUT_LITERAL(b, "null");
    if (v == Py_True) return PUT_LITERAL(b, "true");
    if (v == Py_False) return PUT_LITERAL(b, "false");
    if (PyUnicode_CheckExact(v)) return put_string(b, v);
    if (PyLong_CheckExact(v)) return put_int(b, v);
    if (!PyList_CheckExact(v)) return NOT_HERE;
    if (PUT_LITERAL(b, "[") < 0) return -1;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); i++) {
        if (i && PUT_LITERAL(b, ",") < 0) return -1;
        int done = put_int(b, PyList_GET_ITEM(v, i));
        if (done) return done;
    }
    return PUT_LITERAL(b, "]");
}

/* obj.name printed after `key`: 0, NOT_HERE or -1. */
static int put_member(Buf *b, const char *key, PyObject *obj, PyObject *name) {
    if (buf_put(b, key, (Py_ssize_t)strlen(key)) < 0) return -1;
    PyObject *v = PyObject_GetAttr(obj, name);
    if (!v) return -1;
    int done = put_lag_value(b, v);
    Py_DECREF(v);
    return done;
}

/* The partitions' strings whose texts repeat (a group's name in each of its partitions, a
   topic's in its keys', a log end's source in its keys', the few statuses): the text of each
   kept, by hash, while the call lasts. A reason is mostly new (its numbers): not kept. */
enum { KEPT_FIELDS = 4, KEPT_SLOTS = 64, KEPT_TEXT_MAX = 120 };
static const int KEPT_ATTRS[KEPT_FIELDS] = {LP_GROUP, LP_TOPIC, LP_LOG_END_SOURCE, LP_STATUS};

typedef struct {
    PyObject *str; /* held: an ASCII str, NULL for none */
    Py_ssize_t len;
    char text[KEPT_TEXT_MAX]; /* its JSON text, quotes and escapes */
} KeptText;

/* The longest reason text kept (a reason of the status rules is some 60 to 150 bytes). */
enum { REASON_TEXT_MAX = 256 };

/* How PartitionLag's members are read (their slots' offsets: no attribute lookup a member, a
   partition of another type looked up by name) and the texts kept. The last reason printed is
   kept by identity (the status rules give the keys of a partition one str where their reason
   is one, e.g. without log ends: some 400 instructions each to escape again), not by hash
   (a reason with numbers is mostly new: its hash would be taken for nothing). */
typedef struct {
    PyTypeObject *type;
    Py_ssize_t offset[N_PARTITION_ATTRS];
    int kept_of[N_PARTITION_ATTRS]; /* its KeptText table, or -1 */
    KeptText kept[KEPT_FIELDS][KEPT_SLOTS];
    KeptText *last[KEPT_FIELDS]; /* the field's text printed last, or NULL */
    PyObject *reason; /* held: the last reason printed, an exact str, or NULL */
    Py_ssize_t reason_len;
    char reason_text[REASON_TEXT_MAX];
} PartitionReader;

/* r for partitions of `type` (the first one's): offsets where every member is a slot that
   type defines and reads by the generic lookup, else none (every member looked up). */
static void partition_reader(PartitionReader *r, PyTypeObject *type) {
    memset(r, 0, sizeof *r);
    for (int i = 0; i < N_PARTITION_ATTRS; i++) r->kept_of[i] = -1;
    for (int f = 0; f < KEPT_FIELDS; f++) r->kept_of[KEPT_ATTRS[f]] = f;
    if (type->tp_getattro != PyObject_GenericGetAttr) return;
    for (int i = 0; i < N_PARTITION_ATTRS; i++) {
        r->offset[i] = member_offset(type, S_partition_attrs[i]);
        if (r->offset[i] < 0) {
            PyErr_Clear();
            return;
        }
    }
    r->type = type;
}

static void partition_reader_release(PartitionReader *r) {
    for (int f = 0; f < KEPT_FIELDS; f++)
        for (int s = 0; s < KEPT_SLOTS; s++) Py_CLEAR(r->kept[f][s].str);
    Py_CLEAR(r->reason);
}

/* A reason v printed: its kept text where v is the last one printed, else put_lag_value's
   (kept when it is an exact str's and fits); 0, NOT_HERE or -1. */
static int put_reason(Buf *b, PartitionReader *r, PyObject *v) {
    if (v == r->reason) return buf_put(b, r->reason_text, r->reason_len);
    const Py_ssize_t at = b->len;
    const int done = put_lag_value(b, v);
    if (done == 0 && PyUnicode_CheckExact(v) && b->len - at <= REASON_TEXT_MAX) {
        Py_XSETREF(r->reason, Py_NewRef(v));
        r->reason_len = b->len - at;
        memcpy(r->reason_text, b->p + at, (size_t)r->reason_len);
    }
    return done;
}

/* Whether the ASCII strs a and b are equal. */
static HOT_INLINE int same_ascii(PyObject *a, PyObject *b) {
    const Py_ssize_t n = PyUnicode_GET_LENGTH(a);
    return a == b || (n == PyUnicode_GET_LENGTH(b) &&
                      memcmp(PyUnicode_DATA(a), PyUnicode_DATA(b), (size_t)n) == 0);
}

/* v (field f's) printed: its kept text where an equal str was printed before and kept, else
   put_lag_value's (kept when it fits); 0, NOT_HERE or -1. The text the field printed last
   (*last) is asked first: a group's partitions repeat its name, a group's keys of a topic the
   topic's, each key's its own str, whose hash was taken for it alone. */
static int put_kept(Buf *b, KeptText *kept, KeptText **last, PyObject *v) {
    if (!PyUnicode_CheckExact(v) || !PyUnicode_IS_COMPACT_ASCII(v)) return put_lag_value(b, v);
    if (*last && (*last)->str && same_ascii((*last)->str, v))
        return buf_put(b, (*last)->text, (*last)->len);
    const Py_hash_t h = PyObject_Hash(v);
    if (h == -1) return -1;
    KeptText *k = &kept[(size_t)h & (KEPT_SLOTS - 1)];
    *last = k;
    if (k->str && same_ascii(k->str, v)) return buf_put(b, k->text, k->len);
    const Py_ssize_t at = b->len;
    if (put_string(b, v) < 0) return -1;
    const Py_ssize_t len = b->len - at;
    if (len <= KEPT_TEXT_MAX) {
        Py_XSETREF(k->str, Py_NewRef(v));
        k->len = len;
        memcpy(k->text, b->p + at, (size_t)len);
    }
    return 0;
}

/* Member i of partition part printed after its key: 0, NOT_HERE or -1. */
static HOT_INLINE int put_partition_member(Buf *b, PartitionReader *r, PyObject *part, int i) {
    if (buf_put(b, PARTITION_KEYS[i].text, PARTITION_KEYS[i].len) < 0) return -1;
    PyObject *v = Py_TYPE(part) == r->type ? *(PyObject **)((char *)part + r->offset[i]) : NULL;
    if (!v) { /* another type, or a slot not set (the lookup raises) */
        if (!(v = PyObject_GetAttr(part, S_partition_attrs[i]))) return -1;
    } else {
        Py_INCREF(v);
    }
    const int f = r->kept_of[i];
    const int done = f >= 0           ? put_kept(b, r->kept[f], &r->last[f], v)
                     : i == LP_REASON ? put_reason(b, r, v)
                                      : put_lag_value(b, v);
    Py_DECREF(v);
    return done;
}

/* What lag_write prints from: the groups (a list of GroupLag) and their shares' texts, each
   list a copy held here, and the groups' partitions, group g's parts[starts[g]:starts[g + 1]],
   each held (write and reference run Python, which may change or drop the caller's lists and
   the objects only they hold); the commit rows and their bounds, the partitions' reader, and
   one group's skeleton: its line without its partitions' commits, the commits of partition p
   going at cut[p] (its text and cut reused from group to group). */
typedef struct {
    PyObject *groups, *shares;
    PyObject **parts;
    Py_ssize_t *starts, held_parts;
    ObjectRows rows;
    RowBuffers held;
    Py_buffer bounds;
    int held_bounds;
    PartitionReader *reader;
    Buf skeleton;
    Py_ssize_t *cut, cut_cap;
} LagPrint;

static void lag_print_close(LagPrint *lp) {
    if (lp->reader) partition_reader_release(lp->reader);
    PyMem_Free(lp->reader);
    PyMem_Free(lp->skeleton.p);
    PyMem_Free(lp->cut);
    if (lp->held_bounds) PyBuffer_Release(&lp->bounds);
    row_buffers_release(&lp->held);
    for (Py_ssize_t i = 0; i < lp->held_parts; i++) Py_DECREF(lp->parts[i]);
    PyMem_Free(lp->parts);
    PyMem_Free(lp->starts);
    Py_XDECREF(lp->shares);
    Py_XDECREF(lp->groups);
}

/* The partitions of list ps (a group's) added to lp's, each held (cap: the room made); 0, or -1
   with an error set. */
static int lag_parts_hold(LagPrint *lp, PyObject *ps, Py_ssize_t *cap) {
    if (!PyList_CheckExact(ps)) {
        PyErr_SetString(PyExc_TypeError, "lag_write: a group's partitions are a list");
        return -1;
    }
    const Py_ssize_t n = PyList_GET_SIZE(ps);
    if (lp->held_parts + n > *cap) {
        const Py_ssize_t want = Py_MAX(lp->held_parts + n, 2 * *cap);
        PyObject **parts = PyMem_Realloc(lp->parts, (size_t)want * sizeof *parts);
        if (!parts) {
            PyErr_NoMemory();
            return -1;
        }
        lp->parts = parts;
        *cap = want;
    }
    for (Py_ssize_t p = 0; p < n; p++)
        lp->parts[lp->held_parts++] = Py_NewRef(PyList_GET_ITEM(ps, p));
    return 0;
}

/* lp read from (groups, shares, prefixes, columns, masks, bounds), as lag_write takes them;
   0, or -1 with an error set (lp closed either way by lag_print_close). */
static int lag_print_open(LagPrint *lp, PyObject *const *args) {
    static const char name[] = "lag_write";
    memset(lp, 0, sizeof *lp);
    if (lag_names() < 0) return -1;
    const Py_ssize_t ng = PyList_GET_SIZE(args[0]);
    if (!(lp->groups = PyList_GetSlice(args[0], 0, ng)) ||
        !(lp->shares = PyList_GetSlice(args[1], 0, ng)))
        return -1;
    if (!(lp->starts = PyMem_Malloc((size_t)(ng + 1) * sizeof *lp->starts))) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t total = 0, cap = 0;
    for (Py_ssize_t g = 0; g < ng; g++) {
        lp->starts[g] = total;
        PyObject *share = PyList_GET_ITEM(lp->shares, g);
        if (share != Py_None && !PyBytes_Check(share)) {
            PyErr_Format(PyExc_TypeError, "%s: a group's shares are bytes or None", name);
            return -1;
        }
        PyObject *ps =
            PyObject_GetAttr(PyList_GET_ITEM(lp->groups, g), S_group_attrs[LG_PARTITIONS]);
        if (!ps) return -1;
        const int held = lag_parts_hold(lp, ps, &cap);
        Py_DECREF(ps);
        if (held < 0) return -1;
        total = lp->held_parts;
    }
    lp->starts[ng] = total;
    const Py_ssize_t n = object_rows(name, args[2], args[3], args[4], &lp->rows, &lp->held);
    const Py_ssize_t runs = n < 0 ? -1 : row_bounds(name, args[5], &lp->bounds, n);
    if (runs < 0) return -1;
    lp->held_bounds = 1;
    if (runs != total) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bounds' runs for %zd partitions", name, runs,
                     total);
        return -1;
    }
    if (!(lp->reader = PyMem_Malloc(sizeof *lp->reader))) {
        PyErr_NoMemory();
        return -1;
    }
    PyTypeObject *first = NULL;
    if (total) first = Py_TYPE(lp->parts[0]);
    partition_reader(lp->reader, first ? first : &PyBaseObject_Type);
    return 0;
}

/* Group g's skeleton into lp (its line without its commits, cut where they go): 0, NOT_HERE
   or -1. */
static int lag_skeleton(LagPrint *lp, Py_ssize_t g) {
    static const char *const keys[3] = {"{\"group\":", ",\"status\":", ",\"now\":"};
    PyObject *group = PyList_GET_ITEM(lp->groups, g), *share = PyList_GET_ITEM(lp->shares, g);
    PyObject *const *partitions = lp->parts + lp->starts[g];
    const Py_ssize_t n = lp->starts[g + 1] - lp->starts[g];
    Buf *b = &lp->skeleton;
    b->len = 0;
    if (n > lp->cut_cap) {
        Py_ssize_t *cut = PyMem_Realloc(lp->cut, (size_t)n * sizeof *cut);
        if (!cut) {
            PyErr_NoMemory();
            return -1;
        }
        lp->cut = cut;
        lp->cut_cap = n;
    }
    for (int i = 0; i < 3; i++) {
        int done = put_member(b, keys[i], group, S_group_attrs[i]);
        if (done) return done;
    }
    if (PUT_LITERAL(b, ",\"partitions\":[") < 0) return -1;
    for (Py_ssize_t p = 0; p < n; p++) {
        PyObject *part = partitions[p];
        if (p && PUT_LITERAL(b, ",") < 0) return -1;
        for (int i = 0; i < N_PARTITION_ATTRS; i++) {
            int done = put_partition_member(b, lp->reader, part, i);
            if (done) return done;
        }
        if (PUT_LITERAL(b, ",\"commits\":") < 0) return -1;
        lp->cut[p] = b->len;
        if (PUT_LITERAL(b, "}") < 0) return -1;
    }
    if (PUT_LITERAL(b, "]") < 0) return -1;
    if (share != Py_None && (PUT_LITERAL(b, ",\"sharePartitions\":") < 0 ||
                             buf_put(b, PyBytes_AS_STRING(share), PyBytes_GET_SIZE(share)) < 0))
        return -1;
    return PUT_LITERAL(b, "}");
}

/* Group g's line from its skeleton (lag_skeleton) and its partitions' commits, rows at[p]:at[p
   + 1], all in one put_object_runs (its setup and each field's kept top digits once a group,
   not once a partition); 0 or -1. */
static int lag_line(Buf *b, const LagPrint *lp, Py_ssize_t g, const int64_t *at) {
    const Py_ssize_t n = lp->starts[g + 1] - lp->starts[g];
    const RowRuns runs = {at, n, lp->skeleton.p, lp->cut};
    if (put_object_runs(b, &lp->rows, &runs) < 0) return -1;
    const Py_ssize_t done = n ? lp->cut[n - 1] : 0;
    return buf_put(b, lp->skeleton.p + done, lp->skeleton.len - done);
}

/* The most text lag_write holds before it gives it to its write: room for a commit's row at
   least, and kept within the second-level cache (2 MiB a core here) with the columns read. */
#define LAG_WRITE_CHUNK (256 * 1024)

/* Group's line made by reference (bytes, its newline included) put through b: 0 or -1. */
static int put_reference_line(Buf *b, PyObject *reference, PyObject *group) {
    PyObject *line = PyObject_CallOneArg(reference, group);
    if (!line) return -1;
    int put = -1;
    if (PyBytes_Check(line))
        put = buf_put_through(b, PyBytes_AS_STRING(line), PyBytes_GET_SIZE(line));
    else
        PyErr_SetString(PyExc_TypeError, "lag_write: a reference line is bytes");
    Py_DECREF(line);
    return put;
}

/* lag_write(write, reference, groups, shares, prefixes, columns, masks, bounds) -> int: each
   group's line (groups: a list of GroupLag) with a newline, given to write (the output's:
   called with a memoryview of up to LAG_WRITE_CHUNK bytes, released after); the lines'
   count. shares: per group its "sharePartitions" text (bytes) or None. The commits of the
   p-th partition of the groups (counted in order) are rows bounds[p]:bounds[p + 1] of
   object_arrays' columns. A group whose line is not printed here is given to reference, which
   returns its line (bytes, its newline included), written in its place: what is read once for
   all the groups is not read again for it. Text of megabytes goes out through one buffer
   reused, not a bytes object a line. */
static PyObject *lag_write(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 8 || !PyCallable_Check(args[0]) || !PyCallable_Check(args[1]) ||
        !PyList_CheckExact(args[2]) || !PyList_CheckExact(args[3]) ||
        PyList_GET_SIZE(args[2]) != PyList_GET_SIZE(args[3]))
        return usage_error("lag_write(write, reference, groups, shares, prefixes, columns, "
                           "masks, bounds): two callables, two lists of one length, three "
                           "tuples and a buffer");
    LagPrint lp;
    Buf b = {NULL, 0, 0, NULL, args[0]};
    Py_ssize_t written = -1;
    if (lag_print_open(&lp, args + 2) < 0) goto done;
    if (!(b.p = PyMem_Malloc(LAG_WRITE_CHUNK))) {
        PyErr_NoMemory();
        goto done;
    }
    b.cap = LAG_WRITE_CHUNK;
    const Py_ssize_t ng = PyList_GET_SIZE(lp.groups);
    const int64_t *at = lp.bounds.buf;
    for (Py_ssize_t g = 0; g < ng; g++) {
        const int done = lag_skeleton(&lp, g);
        if (done == NOT_HERE) {
            PyErr_Clear(); /* the reference makes the line, and raises what it must */
            if (put_reference_line(&b, args[1], PyList_GET_ITEM(lp.groups, g)) < 0) goto done;
        } else if (done < 0 || lag_line(&b, &lp, g, at) < 0 || PUT_LITERAL(&b, "\n") < 0) {
            goto done;
        }
        at += lp.starts[g + 1] - lp.starts[g];
    }
    if (buf_drain(&b) == 0) written = ng;
done:
    PyMem_Free(b.p);
    lag_print_close(&lp);
    return written < 0 ? NULL : PyLong_FromSsize_t(written);
}
