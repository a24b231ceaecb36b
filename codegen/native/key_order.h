/* key_order: the order of sorted(keys) for a list of commit keys, (group, topic, partition)
 * tuples of two str and an int, as lag puts its keys in order (codegen.forensics.commits.
 * keyed_effects): the strs compared by code point as Python compares them (by words and
 * memcmp where both are of one byte a character), then the partitions, equal keys in the order
 * given (a stable merge sort). A key of another shape (a None, an int past int64) gets None:
 * the caller sorts in Python. Included by records.c.
 */

/* A str as the sort reads it: its first 16 characters as two big-endian words (zero-padded)
   where it has one byte a character, so most comparisons end on a word; `wide` otherwise. */
typedef struct {
    uint64_t head[2];
    PyObject *str; /* borrowed: the keys list is held while sorting */
    Py_ssize_t len;
    int wide;
} SortedStr;

typedef struct {
    SortedStr group, topic;
    int64_t partition;
} OrderedKey;

/* A word loaded from memory as a big-endian number (its first byte highest). */
static inline uint64_t big_endian_word(uint64_t word) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return word;
#else
    return __builtin_bswap64(word);
#endif
}

static void sorted_str(SortedStr *s, PyObject *str) {
    s->str = str;
    s->len = PyUnicode_GET_LENGTH(str);
    s->wide = PyUnicode_KIND(str) != PyUnicode_1BYTE_KIND;
    s->head[0] = s->head[1] = 0;
    if (s->wide) return;
    uint8_t head[16] = {0};
    memcpy(head, PyUnicode_DATA(str), (size_t)(s->len < 16 ? s->len : 16));
    for (int w = 0; w < 2; w++) {
        uint64_t word;
        memcpy(&word, head + 8 * w, 8);
        s->head[w] = big_endian_word(word);
    }
}

/* Two str by code point: <0, 0 or >0. Equal heads of one-byte strs: the first 16 characters
   equal (a shorter str's padding is zeros, below any character but NUL, and a NUL past its end
   is found by the lengths: the shorter one is then a prefix of the other). */
static HOT_INLINE int sorted_str_compare(const SortedStr *a, const SortedStr *b) {
    if (a->wide | b->wide) return a->str == b->str ? 0 : PyUnicode_Compare(a->str, b->str);
    for (int w = 0; w < 2; w++)
        if (a->head[w] != b->head[w]) return a->head[w] < b->head[w] ? -1 : 1;
    const Py_ssize_t n = a->len < b->len ? a->len : b->len;
    if (n > 16) {
        const int c = memcmp((const uint8_t *)PyUnicode_DATA(a->str) + 16,
                             (const uint8_t *)PyUnicode_DATA(b->str) + 16, (size_t)(n - 16));
        if (c) return c;
    }
    return (a->len > b->len) - (a->len < b->len);
}

/* Whether key a sorts before key b (strictly). */
static HOT_INLINE int ordered_key_less(const OrderedKey *a, const OrderedKey *b) {
    int c = sorted_str_compare(&a->group, &b->group);
    if (!c) c = sorted_str_compare(&a->topic, &b->topic);
    return c ? c < 0 : a->partition < b->partition;
}

/* keys[i] read into *k: 1, 0 when it is not (str, str, int within int64), -1 on an error. */
static int ordered_key(PyObject *key, OrderedKey *k) {
    if (!PyTuple_CheckExact(key) || PyTuple_GET_SIZE(key) != 3) return 0;
    PyObject *group = PyTuple_GET_ITEM(key, 0), *topic = PyTuple_GET_ITEM(key, 1);
    PyObject *partition = PyTuple_GET_ITEM(key, 2);
    if (!PyUnicode_CheckExact(group) || !PyUnicode_CheckExact(topic) ||
        !PyLong_CheckExact(partition))
        return 0;
    if (PyUnicode_READY(group) < 0 || PyUnicode_READY(topic) < 0) return -1;
    int overflow = 0;
    const long long p = PyLong_AsLongLongAndOverflow(partition, &overflow);
    if (overflow) return 0;
    if (p == -1 && PyErr_Occurred()) return -1;
    sorted_str(&k->group, group);
    sorted_str(&k->topic, topic);
    k->partition = (int64_t)p;
    return 1;
}

/* order[0:n] (indices of keys) sorted stably by a bottom-up merge sort through tmp (n items):
   runs of 1, 2, 4... merged, a run's left item taken first on a tie. */
static void merge_sort_keys(int64_t *order, int64_t *tmp, size_t n, const OrderedKey *keys) {
    int64_t *from = order, *to = tmp;
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            const size_t mid = lo + width < n ? lo + width : n;
            const size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi)
                to[o++] = ordered_key_less(&keys[from[j]], &keys[from[i]]) ? from[j++] : from[i++];
            while (i < mid) to[o++] = from[i++];
            while (j < hi) to[o++] = from[j++];
        }
        int64_t *t = from;
        from = to;
        to = t;
    }
    if (from != order) memcpy(order, from, n * sizeof *order);
}

/* key_order(keys) -> bytes | None: int64 indices of keys (a list) in the order of
   sorted(keys), or None where a key is not a tuple of two str and an int within int64. */
static PyObject *key_order(PyObject *module, PyObject *keys) {
    if (!PyList_CheckExact(keys)) {
        PyErr_SetString(PyExc_TypeError, "key_order(keys): a list of (group, topic, partition)");
        return NULL;
    }
    const size_t n = (size_t)PyList_GET_SIZE(keys);
    if (n > PY_SSIZE_T_MAX / sizeof(OrderedKey)) return PyErr_NoMemory();
    OrderedKey *read = PyMem_Malloc((n ? n : 1) * sizeof(OrderedKey));
    int64_t *tmp = PyMem_Malloc((n ? n : 1) * sizeof(int64_t));
    PyObject *out = NULL;
    if (!read || !tmp) {
        PyErr_NoMemory();
        goto done;
    }
    /* the list is held: its tuples (and their strs) live while it does, and nothing here
       runs Python code that could change it */
    Py_INCREF(keys);
    for (size_t i = 0; i < n; i++) {
        const int got = ordered_key(PyList_GET_ITEM(keys, (Py_ssize_t)i), &read[i]);
        if (got < 0) goto release;
        if (!got) {
            out = Py_NewRef(Py_None);
            goto release;
        }
    }
    if (!(out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * sizeof(int64_t))))) goto release;
    int64_t *order = (int64_t *)PyBytes_AS_STRING(out);
    for (size_t i = 0; i < n; i++) order[i] = (int64_t)i;
    merge_sort_keys(order, tmp, n, read);
release:
    Py_DECREF(keys);
done:
    PyMem_Free(read);
    PyMem_Free(tmp);
    return out;
}
