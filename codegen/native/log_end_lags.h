/* commit_log_ends: each commit's log end offset at its time and its lag, in one pass over the
 * commits of one log partition, key by key (codegen.forensics.lag.commit_lags; its numpy form is
 * the reference the tests hold this to).
 *
 * The log ends of the data partitions are steps: end e's are a pair of int64 arrays, its
 * times (sorted: running maxima) and its ends. Key k's commits are
 * rows bounds[k] to bounds[k + 1] of commit_times and committed (their offsets), its data
 * partition's log end is key_steps[k] (-1: none known over time). A commit's log end is the
 * end of the last step at or before its time (0 before the first step): LogEnd.at's
 * bisect_right; its lag the log end minus its offset, never below 0 (numpy's int64 difference:
 * wrapped past the int64 range, not undefined). Each log end's steps are indexed by time
 * once a command (log_end_index: StepIndex, held in a capsule), so a commit's step is looked up
 * in its bucket's few (key_log_ends) by each call of commit_log_ends.
 */

/* A log end's steps indexed by time, so a commit's step is found in the few steps of its
   bucket (a gallop and bisection over all of them took some 70 instructions and a few
   mispredicted branches a commit). Bucket b holds the times t0 + (b << shift) to
   t0 + ((b + 1) << shift) - 1, t0 the first step's time; below[b] is how many steps come before
   the bucket's first time, below[buckets] = n. shift is the least that makes the buckets at most
   n (2 when n is 1 and the steps span more than 2^63), so below needs at most n + 2 entries.
   crowded: whether a bucket holds more than BUCKET_WALK steps (else no commit's walk looks at
   its bucket's end). */
typedef struct {
    const int64_t *times;
    Py_ssize_t n, buckets;
    int shift, crowded;
    Py_ssize_t *below;
} StepIndex;

/* The steps of a bucket walked one by one (at most n buckets: a bucket mostly holds one step
   or two, where a bisection spent more); a bucket of more is halved down to these first. */
#define BUCKET_WALK 8

/* The index of times[0:n] (sorted) into below (room for n + 2). */
static void step_index(StepIndex *x, const int64_t *times, Py_ssize_t n, Py_ssize_t *below) {
    x->times = times;
    x->n = n;
    x->below = below;
    x->shift = 0;
    x->crowded = 0;
    x->buckets = 0;
    if (n == 0) return;
    /* the span as unsigned: the times may cover all of int64 */
    const uint64_t span = (uint64_t)times[n - 1] - (uint64_t)times[0];
    while (x->shift < 63 && (span >> x->shift) >= (uint64_t)n) x->shift++;
    x->buckets = (Py_ssize_t)(span >> x->shift) + 1;
    Py_ssize_t i = 0;
    for (Py_ssize_t bucket = 0; bucket < x->buckets; bucket++) {
        const uint64_t first = (uint64_t)bucket << x->shift; /* at most span: no overflow */
        while (i < n && (uint64_t)times[i] - (uint64_t)times[0] < first) i++;
        below[bucket] = i;
    }
    below[x->buckets] = n;
    for (Py_ssize_t bucket = 0; bucket < x->buckets; bucket++)
        x->crowded |= below[bucket + 1] - below[bucket] > BUCKET_WALK;
}

/* A crowded bucket's steps [lo, hi) (steps close in time) halved until at most BUCKET_WALK
   are left that may be at or before t; the first of them. */
static inline Py_ssize_t halved(const int64_t *times, Py_ssize_t lo, Py_ssize_t hi, int64_t t) {
    while (hi - lo > BUCKET_WALK) {
        const Py_ssize_t mid = lo + (hi - lo) / 2;
        if (times[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* A commit's lag: its log end minus its offset, never below 0, the difference wrapped as
   numpy wraps it (unsigned, then back: no overflow). */
static HOT_INLINE int64_t lag_of(int64_t log_end, int64_t committed) {
    const int64_t d = (int64_t)((uint64_t)log_end - (uint64_t)committed);
    return d > 0 ? d : 0;
}

/* Rows [from, to) of no known log end: log end 0, lag from it, unknown. */
static void unknown_rows(int64_t *log_end, int64_t *lag, uint8_t *known, const int64_t *committed,
                         int64_t from, int64_t to) {
    for (int64_t r = from; r < to; r++) {
        log_end[r] = 0;
        lag[r] = lag_of(0, committed[r]);
        known[r] = 0;
    }
}

/* The `count` rows of a key whose log end's steps are x (their ends e, at least one step),
   the outputs and inputs given from its first row: each row's log end at its time and its
   lag. The steps at or before a time t (bisect_right of the times): none before the first, all
   from the last on, else those before t's bucket and its steps at or before t (the answer lies
   between the steps before the bucket and those before the next). A time inside the steps'
   span, t0 <= t < the last time, is told from the others by one unsigned comparison of t - t0
   with the span (a time before t0 wraps past it); there the first step is at or before t, so
   its end is e[at - 1], and the last is after t, so the walk stops at a step after t without
   a bound. `crowded` (x->crowded, a constant where this is inlined): whether a bucket may hold
   more than BUCKET_WALK steps; without (nearly always) the bucket's end is not read, some 5
   instructions of about 33 a commit. */
static HOT_INLINE void steps_at(const StepIndex *x, const int64_t *e, const int64_t *commit_time,
                                const int64_t *committed, int64_t count, int64_t *log_end,
                                int64_t *lag, const int crowded) {
    const int64_t *times = x->times;
    const Py_ssize_t *below = x->below;
    const int shift = x->shift;
    const Py_ssize_t n = x->n;
    const int64_t t0 = times[0], last = e[n - 1];
    const uint64_t span = (uint64_t)times[n - 1] - (uint64_t)t0;
    for (int64_t r = 0; r < count; r++) {
        const int64_t t = commit_time[r];
        const uint64_t d = (uint64_t)t - (uint64_t)t0;
        int64_t end;
        if (LIKELY(d < span)) {
            const uint64_t bucket = d >> shift; /* below span >> shift: one of the buckets */
            Py_ssize_t lo = below[bucket];
            if (crowded) {
                const Py_ssize_t hi = below[bucket + 1];
                if (UNLIKELY(hi - lo > BUCKET_WALK)) lo = halved(times, lo, hi, t);
            }
            /* no lo < hi: the step at hi (past the answer) is after t, and so is the last.
               A bucket mostly holds one step or two: its steps at or before t counted without
               a branch, whose taken or not was as good as random (a mispredicted branch a
               commit); the walk then mostly stops at once, a branch well predicted. */
            lo += times[lo] <= t;
            lo += times[lo] <= t;
            while (times[lo] <= t) lo++;
            end = e[lo - 1]; /* lo >= 1: times[0] <= t */
        } else {
            end = t < t0 ? 0 : last; /* before the first step, or from the last on */
        }
        log_end[r] = end;
        lag[r] = lag_of(end, committed[r]);
    }
}

/* steps_at of a key's rows, known set: not inlined, the index read into locals and the rows
   counted from 0, known set by one memset, so the loop's values fit in registers (inlined into
   commit_log_ends, the output pointers were read from the stack a row). */
static NOINLINE void key_log_ends(const StepIndex *x, const int64_t *e, const int64_t *commit_time,
                                  const int64_t *committed, int64_t count, int64_t *log_end,
                                  int64_t *lag, uint8_t *known) {
    memset(known, 1, (size_t)count);
    if (x->n == 0) { /* no step: log end 0 at any time */
        for (int64_t r = 0; r < count; r++) {
            log_end[r] = 0;
            lag[r] = lag_of(0, committed[r]);
        }
    } else if (x->crowded) {
        steps_at(x, e, commit_time, committed, count, log_end, lag, 1);
    } else {
        steps_at(x, e, commit_time, committed, count, log_end, lag, 0);
    }
}

/* Whether `bounds` (count + 1 int64s) rise from 0 to at most `total`. */
static int bounds_valid(const int64_t *bounds, Py_ssize_t count, Py_ssize_t total) {
    if (bounds[0] < 0) return 0;
    for (Py_ssize_t i = 0; i < count; i++)
        if (bounds[i + 1] < bounds[i]) return 0;
    return bounds[count] <= total;
}

/* The log ends' steps and their index, made once a command (log_end_index) and read by each
   call of commit_log_ends: each end's times and ends read where they are (its two buffers
   held, not copied: at 16 M records the 96 data partitions' 768 k steps took 12 MB a copy,
   and 12 MB more concatenated for it), each end's StepIndex into below. */
typedef struct {
    Py_ssize_t ends, held;
    Py_buffer *buffers; /* 2 an end: times, ends */
    const int64_t **step_end;
    Py_ssize_t *below;
    StepIndex *index;
} LogEndIndex;

static const char LOG_END_INDEX[] = "codegen.native._records.LogEndIndex";

static void log_end_index_free(LogEndIndex *x) {
    if (!x) return;
    for (Py_ssize_t i = 0; i < x->held; i++) PyBuffer_Release(&x->buffers[i]);
    PyMem_Free(x->buffers);
    PyMem_Free(x->step_end);
    PyMem_Free(x->below);
    PyMem_Free(x->index);
    PyMem_Free(x);
}

static void log_end_index_release(PyObject *capsule) {
    log_end_index_free(PyCapsule_GetPointer(capsule, LOG_END_INDEX));
}

/* End `end`'s (times, ends) pair of `steps` held in x->buffers (2 * end on: its times, then
   its ends), 0 with an error set. */
static int hold_steps(LogEndIndex *x, PyObject *pair, Py_ssize_t end) {
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
        PyErr_SetString(PyExc_TypeError, "log_end_index: each log end's steps are a (times, "
                                         "ends) pair");
        return 0;
    }
    for (int i = 0; i < 2; i++, x->held++)
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(pair, i), &x->buffers[2 * end + i],
                               PyBUF_SIMPLE) < 0)
            return 0;
    const Py_buffer *b = &x->buffers[2 * end];
    if (b[0].len % 8 || b[1].len != b[0].len) {
        PyErr_SetString(PyExc_ValueError, "log_end_index: a log end's times and ends are "
                                          "int64 buffers of one length");
        return 0;
    }
    return 1;
}

/* log_end_index(steps) -> capsule: the steps of the log ends (a sequence of (times, ends)
   pairs of int64 buffers as above, held by the capsule: not to be changed while it lives),
   each end's indexed by time, for commit_log_ends (the ends numbered in the order given). */
static PyObject *log_end_index(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (!arity_ok(nargs, 1, "log_end_index(steps)")) return NULL;
    PyObject *steps = PySequence_Fast(args[0], "log_end_index: steps must be a sequence");
    if (!steps) return NULL;
    PyObject *result = NULL;
    LogEndIndex *x = PyMem_Calloc(1, sizeof *x);
    const Py_ssize_t ends = PySequence_Fast_GET_SIZE(steps);
    if (!x || !(x->buffers = PyMem_Calloc((size_t)ends * 2 + 1, sizeof(Py_buffer))) ||
        !(x->step_end = PyMem_Calloc((size_t)ends + 1, sizeof(int64_t *))) ||
        !(x->index = PyMem_Calloc((size_t)ends + 1, sizeof(StepIndex)))) {
        PyErr_NoMemory();
        goto done;
    }
    x->ends = ends;
    Py_ssize_t total = 0; /* each end's index: n + 2 entries of below */
    for (Py_ssize_t end = 0; end < ends; end++) {
        if (!hold_steps(x, PySequence_Fast_GET_ITEM(steps, end), end)) goto done;
        total += x->buffers[2 * end].len / 8 + 2; /* at most a buffer's bytes: no overflow */
    }
    if (!(x->below = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(total + 1)))) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t at = 0;
    for (Py_ssize_t end = 0; end < ends; end++) {
        const Py_buffer *b = &x->buffers[2 * end];
        x->step_end[end] = b[1].buf;
        step_index(&x->index[end], b[0].buf, b[0].len / 8, x->below + at);
        at += b[0].len / 8 + 2;
    }
    if ((result = PyCapsule_New(x, LOG_END_INDEX, log_end_index_release))) x = NULL;
done:
    log_end_index_free(x);
    Py_DECREF(steps);
    return result;
}

/* The keys 0 to keys - 1 ordered by their log end (key_steps[k], -1 to ends - 1; a counting
   sort, key order kept within a log end), NULL with an error set. A log end's steps and index
   (some 190 KB for 8,000 steps) are then read for all its keys while they stay in cache: in
   key order each key met another data partition's, and its commits' steps missed the cache. */
static Py_ssize_t *keys_by_log_end(const int64_t *key_steps, Py_ssize_t keys, Py_ssize_t ends) {
    Py_ssize_t *order = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(keys ? keys : 1));
    Py_ssize_t *first = PyMem_Calloc((size_t)ends + 2, sizeof(Py_ssize_t));
    if (!order || !first) {
        PyMem_Free(order);
        PyMem_Free(first);
        PyErr_NoMemory();
        return NULL;
    }
    /* first[s + 2]: how many keys have log end s (s = -1: none); then first[s + 1]: where the
       keys of log end s begin */
    for (Py_ssize_t k = 0; k < keys; k++) first[key_steps[k] + 2]++;
    for (Py_ssize_t s = 0; s <= ends; s++) first[s + 1] += first[s];
    for (Py_ssize_t k = 0; k < keys; k++) order[first[key_steps[k] + 1]++] = k;
    PyMem_Free(first);
    return order;
}

/* commit_log_ends(index, key_steps, bounds, commit_times, committed) -> (log_end, lag,
   known): the log ends' steps from log_end_index, the rest int64 buffers as above (bounds:
   keys + 1, committed: one per commit); log_end int64 per commit (0 where its key has no
   steps), lag int64 (max(log_end - committed, 0)), known uint8 (1 where the key has steps). */
static PyObject *commit_log_ends(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    enum { N_ARGS = 5, N_BUFFERS = 4, N_OUT = 3 };
    if (!arity_ok(nargs, N_ARGS,
                  "commit_log_ends(index, key_steps, bounds, commit_times, committed)"))
        return NULL;
    const LogEndIndex *x = PyCapsule_GetPointer(args[0], LOG_END_INDEX);
    if (!x) return NULL;
    Py_buffer b[N_BUFFERS];
    int held = 0;
    PyObject *out[N_OUT] = {NULL, NULL, NULL}, *result = NULL;
    Py_ssize_t *order = NULL;
    for (; held < N_BUFFERS; held++)
        if (PyObject_GetBuffer(args[held + 1], &b[held], PyBUF_SIMPLE) < 0) goto done;
    for (int i = 0; i < N_BUFFERS; i++)
        if (b[i].len % 8) {
            PyErr_SetString(PyExc_ValueError, "commit_log_ends: int64 buffers");
            goto done;
        }
    const Py_ssize_t ends = x->ends, keys = b[0].len / 8, rows = b[2].len / 8;
    const int64_t *key_steps = b[0].buf, *bounds = b[1].buf, *commit_time = b[2].buf,
                  *committed = b[3].buf;
    if (b[3].len != b[2].len || b[1].len != (keys + 1) * 8 || !bounds_valid(bounds, keys, rows)) {
        PyErr_SetString(PyExc_ValueError, "commit_log_ends: the commits' bounds do not fit "
                                          "their rows");
        goto done;
    }
    for (Py_ssize_t k = 0; k < keys; k++)
        if (key_steps[k] < -1 || key_steps[k] >= ends) {
            PyErr_SetString(PyExc_ValueError, "commit_log_ends: a key's steps are not among "
                                              "the log ends given");
            goto done;
        }
    if (!(out[0] = PyBytes_FromStringAndSize(NULL, rows * 8)) ||
        !(out[1] = PyBytes_FromStringAndSize(NULL, rows * 8)) ||
        !(out[2] = PyBytes_FromStringAndSize(NULL, rows)))
        goto done;
    int64_t *log_end = (int64_t *)PyBytes_AS_STRING(out[0]);
    int64_t *lag = (int64_t *)PyBytes_AS_STRING(out[1]);
    uint8_t *known = (uint8_t *)PyBytes_AS_STRING(out[2]);
    /* rows outside every key's (bounds[0] > 0 or bounds[keys] < rows): log end 0, unknown */
    unknown_rows(log_end, lag, known, committed, 0, bounds[0]);
    unknown_rows(log_end, lag, known, committed, bounds[keys], rows);
    if (!(order = keys_by_log_end(key_steps, keys, ends))) goto done;
    for (Py_ssize_t at = 0; at < keys; at++) {
        const Py_ssize_t k = order[at];
        if (key_steps[k] < 0) {
            unknown_rows(log_end, lag, known, committed, bounds[k], bounds[k + 1]);
            continue;
        }
        const int64_t from = bounds[k];
        key_log_ends(&x->index[key_steps[k]], x->step_end[key_steps[k]], commit_time + from,
                     committed + from, bounds[k + 1] - from, log_end + from, lag + from,
                     known + from);
    }
    result = PyTuple_Pack(N_OUT, out[0], out[1], out[2]);
done:
    PyMem_Free(order);
    for (int i = 0; i < N_OUT; i++) Py_XDECREF(out[i]);
    for (int i = 0; i < held; i++) PyBuffer_Release(&b[i]);
    return result;
}
