/* log_end_index: the log ends' steps indexed by time, once a command, for commit_log_ends
 * (log_end_lags.h), which looks each commit's step up in its bucket's few. A log end's steps
 * are a pair of int64 arrays, its times (sorted: running maxima) and its ends; the index holds
 * them where they are (a capsule of each end's StepIndex).
 */
#include <unistd.h>

/* A log end's steps indexed by time, so a commit's step is found in the few steps of its
   bucket (a gallop and bisection over all of them took some 70 instructions and a few
   mispredicted branches a commit; a gallop from the step of the key's commit before, whose
   times rise, took 3.7 times as long at 16 M records: some 13 steps apart). Bucket b holds the
   times t0 + (b << shift) to t0 + ((b + 1) << shift) - 1, t0 the first step's time; below[b]
   is how many steps come before the bucket's first time, below[buckets] = n. shift is the
   least that makes the buckets at most n (2 when n is 1 and the steps span more than 2^63), so
   below needs at most n + 2 entries.
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
    int grouped; /* keys read grouped by log end (index_grouped) */
} LogEndIndex;

/* The most bytes of steps and index read in the keys' own order: a core's L2 cache (as the
   C library tells it; 1 MiB if not), at least 256 KiB and at most 4 MiB. */
static size_t l2_budget(void) {
    long bytes = 0;
#ifdef _SC_LEVEL2_CACHE_SIZE
    bytes = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    if (bytes <= 0) bytes = 1L << 20;
    return bytes < (256L << 10) ? 256u << 10 : bytes > (4L << 20) ? 4u << 20 : (size_t)bytes;
}

/* Whether commit_log_ends reads the keys grouped by log end (keys_by_log_end), else in their
   own order: grouped, a log end's steps stay in cache for all its keys, where in key order
   each key met another log end's, which missed the cache when they all did not fit in it
   (16 M records, 96 log ends, 18 MB: 218-236 ms key order, 102-106 ms grouped). When they
   fit, the keys in their order read their rows in one sweep, where grouped each key's rows
   were met at random (1 M records, 1 MB: 8.1-9.5 ms grouped, 4.4-5.0 ms key order). */
static int index_grouped(const LogEndIndex *x) {
    size_t bytes = 0;
    for (Py_ssize_t end = 0; end < x->ends; end++)
        bytes += (size_t)x->index[end].n * 2 * sizeof(int64_t) +
                 (size_t)(x->index[end].buckets + 1) * sizeof(Py_ssize_t);
    return bytes > l2_budget();
}

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
    x->grouped = index_grouped(x);
    if ((result = PyCapsule_New(x, LOG_END_INDEX, log_end_index_release))) x = NULL;
done:
    log_end_index_free(x);
    Py_DECREF(steps);
    return result;
}
