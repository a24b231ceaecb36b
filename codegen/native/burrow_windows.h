/* window_rules: which of Burrow's rules judges each window of commits, in one pass over their
 * rows (codegen.forensics.burrow.window_judgements; its numpy form, burrow._numpy_rules, is the
 * reference the tests hold this to). Part of the _records module (records.c).
 *
 * Window k is rows starts[k] to stops[k] of the columns (commit_times, offsets, lags, known),
 * oldest first. Its rule is the first that holds, numbered as burrow's _NONE ... _SHRINKS:
 * no row or a lag unknown; fewer than min_commits rows; a lag of 0; idle (now minus the
 * newest commit's time) longer than the window spans (newest minus oldest time), exactly,
 * whatever int64 times; an offset below the one before it in the window (back: the row of
 * the last such step); the lag never shrank from a row to the next and the offset did not
 * move; the lag never shrank; else the lag shrinks. The numbers in the reasons are made by
 * the caller, of the few windows whose rule has them.
 */
#ifndef SPECGEN_BURROW_WINDOWS_H
#define SPECGEN_BURROW_WINDOWS_H

enum {
    RULE_NONE,
    RULE_INCOMPLETE,
    RULE_ZERO,
    RULE_IDLE,
    RULE_REWIND,
    RULE_STALL,
    RULE_WARN,
    RULE_SHRINKS,
};

/* Whether a - b > c - d, exactly (each difference of two int64s held as a sign and an unsigned
   magnitude: it may need 65 bits). */
static inline int difference_greater(int64_t a, int64_t b, int64_t c, int64_t d) {
    const int below1 = a < b, below2 = c < d;
    const uint64_t m1 = below1 ? (uint64_t)b - (uint64_t)a : (uint64_t)a - (uint64_t)b;
    const uint64_t m2 = below2 ? (uint64_t)d - (uint64_t)c : (uint64_t)c - (uint64_t)d;
    if (below1 != below2) return below2; /* one below 0, the other not */
    return below1 ? m1 < m2 : m1 > m2;
}

/* Rows [s, e) (e > s) of one window judged: its rule, and *back the row of its last step back
   (REWIND; left as it is otherwise). */
static HOT_INLINE uint8_t window_rule(const int64_t *time, const int64_t *offset,
                                      const int64_t *lag, const uint8_t *known, int64_t s,
                                      int64_t e, int64_t now, int64_t min_commits,
                                      int64_t *back) {
    int unknown = !known[s], zero = lag[s] == 0, shrank = 0;
    int64_t last_back = -1;
    for (int64_t r = s + 1; r < e; r++) {
        unknown |= !known[r];
        zero |= lag[r] == 0;
        shrank |= lag[r] < lag[r - 1];
        if (offset[r] < offset[r - 1]) last_back = r;
    }
    if (unknown) return RULE_NONE;
    if (e - s < min_commits) return RULE_INCOMPLETE;
    if (zero) return RULE_ZERO;
    if (difference_greater(now, time[e - 1], time[e - 1], time[s])) return RULE_IDLE;
    if (last_back >= 0) {
        *back = last_back;
        return RULE_REWIND;
    }
    if (e - s > 1 && !shrank) return offset[e - 1] == offset[s] ? RULE_STALL : RULE_WARN;
    return RULE_SHRINKS;
}

/* window_rules(commit_times, offsets, lags, known, starts, stops, now, min_commits) ->
   (rules, back): int64 buffers (known: a byte per row, 0 where the lag is unknown; starts and
   stops: one per window, 0 <= start <= stop <= rows), now and min_commits ints within int64.
   rules: a byte per window (its rule's number); back: int64 per window, the row of its last
   step back where the rule is REWIND, else 0. */
static PyObject *window_rules(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    enum { N_BUFFERS = 6, N_OUT = 2 };
    if (!arity_ok(nargs, N_BUFFERS + 2,
                  "window_rules(commit_times, offsets, lags, known, starts, stops, now, "
                  "min_commits)"))
        return NULL;
    const int64_t now = PyLong_AsLongLong(args[6]);
    if (now == -1 && PyErr_Occurred()) return NULL;
    const int64_t min_commits = PyLong_AsLongLong(args[7]);
    if (min_commits == -1 && PyErr_Occurred()) return NULL;
    Py_buffer b[N_BUFFERS];
    int held = 0;
    PyObject *out[N_OUT] = {NULL, NULL}, *result = NULL;
    for (; held < N_BUFFERS; held++)
        if (PyObject_GetBuffer(args[held], &b[held], PyBUF_SIMPLE) < 0) goto done;
    const Py_ssize_t rows = b[0].len / 8, windows = b[4].len / 8;
    if (b[0].len % 8 || b[1].len != b[0].len || b[2].len != b[0].len || b[3].len != rows ||
        b[4].len % 8 || b[5].len != b[4].len) {
        PyErr_SetString(PyExc_ValueError, "window_rules: int64 columns of one length, a byte "
                                          "per row of known, and as many stops as starts");
        goto done;
    }
    const int64_t *time = b[0].buf, *offset = b[1].buf, *lag = b[2].buf, *start = b[4].buf,
                  *stop = b[5].buf;
    const uint8_t *known = b[3].buf;
    for (Py_ssize_t k = 0; k < windows; k++)
        if (start[k] < 0 || start[k] > stop[k] || stop[k] > rows) {
            PyErr_SetString(PyExc_ValueError, "window_rules: a window's rows are not among the "
                                              "columns'");
            goto done;
        }
    if (!(out[0] = PyBytes_FromStringAndSize(NULL, windows)) ||
        !(out[1] = PyBytes_FromStringAndSize(NULL, windows * 8)))
        goto done;
    uint8_t *rule = (uint8_t *)PyBytes_AS_STRING(out[0]);
    int64_t *back = (int64_t *)PyBytes_AS_STRING(out[1]);
    for (Py_ssize_t k = 0; k < windows; k++) {
        back[k] = 0;
        rule[k] = start[k] == stop[k] ? RULE_NONE
                                      : window_rule(time, offset, lag, known, start[k], stop[k],
                                                    now, min_commits, &back[k]);
    }
    result = PyTuple_Pack(N_OUT, out[0], out[1]);
done:
    for (int i = 0; i < N_OUT; i++) Py_XDECREF(out[i]);
    for (int i = 0; i < held; i++) PyBuffer_Release(&b[i]);
    return result;
}

#endif /* SPECGEN_BURROW_WINDOWS_H */
