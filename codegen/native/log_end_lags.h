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
 * once a command (step_index.h: log_end_index, a capsule of StepIndex), so a commit's step is
 * looked up in its bucket's few (key_log_ends) by each call of commit_log_ends.
 */

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

/* A log end's steps (x->times, and its ends e) and index asked for a line at a time, in one
   sweep, as commit_log_ends meets its first key (keys grouped by log end: index_grouped): its
   lines, read by the __consumer_offsets partition before and out of cache since, were met by
   that key's commits one lookup at a time, each a chain of misses (below, then times, then
   ends) waited on in turn; asked for at once, their misses overlap. lag with data partitions
   at 16 M records (96 log ends of 8 k steps, 192 KB each), two alternate runs: commit_log_ends
   and key_log_ends 224-232 -> 177-181 perf samples. */
static void steps_fetch(const StepIndex *x, const int64_t *e) {
    const char *parts[3] = {(const char *)x->times, (const char *)e, (const char *)x->below};
    const size_t bytes[3] = {(size_t)x->n * sizeof(int64_t), (size_t)x->n * sizeof(int64_t),
                             (size_t)(x->buckets + 1) * sizeof(Py_ssize_t)};
    for (int p = 0; p < 3; p++)
        for (size_t at = 0; at < bytes[p]; at += 64) __builtin_prefetch(parts[p] + at, 0, 2);
}

/* Whether `bounds` (count + 1 int64s) rise from 0 to at most `total`. */
static int bounds_valid(const int64_t *bounds, Py_ssize_t count, Py_ssize_t total) {
    if (bounds[0] < 0) return 0;
    for (Py_ssize_t i = 0; i < count; i++)
        if (bounds[i + 1] < bounds[i]) return 0;
    return bounds[count] <= total;
}

/* The keys 0 to keys - 1 ordered by their log end (key_steps[k], -1 to ends - 1; a counting
   sort, key order kept within a log end), NULL with an error set. A log end's steps and index
   (some 190 KB for 8,000 steps) are then read for all its keys while they stay in cache: in
   key order each key met another data partition's, and its commits' steps missed the cache
   (where all log ends' do not fit in it: index_grouped). */
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
    if (x->grouped && !(order = keys_by_log_end(key_steps, keys, ends))) goto done;
    for (Py_ssize_t at = 0; at < keys; at++) {
        const Py_ssize_t k = order ? order[at] : at;
        /* grouped: a log end's steps fetched as its first key is met (steps_fetch) */
        if (order && key_steps[k] >= 0 && (at == 0 || key_steps[order[at - 1]] != key_steps[k]))
            steps_fetch(&x->index[key_steps[k]], x->step_end[key_steps[k]]);
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
