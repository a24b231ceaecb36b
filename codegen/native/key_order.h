/* key_order: the order of sorted(keys) for a list of commit keys, (group, topic, partition)
 * tuples of two str and an int, as lag puts its keys in order (codegen.forensics.commits.
 * keyed_effects): the strs compared by code point as Python compares them (by words and
 * memcmp where both are of one byte a character), then the partitions, equal keys in the order
 * given (a stable merge sort). The distinct groups and topics (found by a hash of their
 * characters) are sorted first, few (1,000 groups and 8 topics of 24 k keys at a 1 M-record
 * partition); the keys then by their ranks and partition, 16 bytes a key, where comparing
 * their strs read two tuples' strs out of cache and memcmp'd names alike in 16 characters. A
 * key of another shape (a None, an int past int64) gets None: the caller sorts in Python.
 * Included by records.c.
 */

/* A str as the sort reads it: its first 16 characters as two big-endian words (zero-padded)
   where it has one byte a character, so most comparisons end on a word; `wide` otherwise. */
typedef struct {
    uint64_t head[2];
    uint64_t hash; /* of its characters, to find equal strs */
    PyObject *str; /* borrowed: the keys list is held while sorting */
    Py_ssize_t len;
    int wide;
} SortedStr;

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
    /* the hash of its characters' bytes (key_store.h's): equal strs are of one kind (a str is
       stored at the narrowest that holds it), so their bytes are equal too */
    s->hash = commit_key_hash(PyUnicode_DATA(str), s->len * PyUnicode_KIND(str));
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

/* A key read into *group, *topic and *partition: 1, 0 when it is not (str, str, int within
   int64), -1 on an error. */
static int ordered_key(PyObject *key, SortedStr *group_str, SortedStr *topic_str,
                       int64_t *partition_number) {
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
    sorted_str(group_str, group);
    sorted_str(topic_str, topic);
    *partition_number = (int64_t)p;
    return 1;
}

/* A stable bottom-up merge sort of order[0:n] (indices of items) through tmp (n items): runs
   of 1, 2, 4... merged, a run's left item taken first on a tie. */
#define MERGE_SORT(name, Item, less)                                                           \
    static void name(int64_t *order, int64_t *tmp, size_t n, const Item *items) {              \
        int64_t *from = order, *to = tmp;                                                      \
        for (size_t width = 1; width < n; width *= 2) {                                        \
            for (size_t lo = 0; lo < n; lo += 2 * width) {                                     \
                const size_t mid = lo + width < n ? lo + width : n;                            \
                const size_t hi = lo + 2 * width < n ? lo + 2 * width : n;                     \
                size_t i = lo, j = mid, o = lo;                                                \
                while (i < mid && j < hi)                                                      \
                    to[o++] = less(&items[from[j]], &items[from[i]]) ? from[j++] : from[i++];  \
                while (i < mid) to[o++] = from[i++];                                           \
                while (j < hi) to[o++] = from[j++];                                            \
            }                                                                                  \
            int64_t *t = from;                                                                 \
            from = to;                                                                         \
            to = t;                                                                            \
        }                                                                                      \
        if (from != order) memcpy(order, from, n * sizeof *order);                             \
    }

static HOT_INLINE int sorted_str_less(const SortedStr *a, const SortedStr *b) {
    return sorted_str_compare(a, b) < 0;
}
MERGE_SORT(merge_sort_strs, SortedStr, sorted_str_less)

/* A key as the last sort reads it: its group's and topic's ranks, then its partition. */
typedef struct {
    uint64_t ranks; /* group rank << 32 | topic rank */
    int64_t partition;
} RankedKey;

static HOT_INLINE int ranked_key_less(const RankedKey *a, const RankedKey *b) {
    return a->ranks != b->ranks ? a->ranks < b->ranks : a->partition < b->partition;
}
MERGE_SORT(merge_sort_ranked, RankedKey, ranked_key_less)

/* order[0:n] sorted stably by values[order[i]] (each below range) through tmp (n items) and
   counts (range + 1 items): a counting sort, its branches all predictable where a merge's are
   not (the keys' ranks and partitions are few). */
static void counting_sort(int64_t *order, int64_t *tmp, size_t n, const uint32_t *values,
                          size_t *counts, size_t range) {
    memset(counts, 0, (range + 1) * sizeof *counts);
    for (size_t i = 0; i < n; i++) counts[values[i] + 1]++;
    for (size_t v = 0; v < range; v++) counts[v + 1] += counts[v];
    for (size_t i = 0; i < n; i++) tmp[counts[values[order[i]]]++] = order[i];
    memcpy(order, tmp, n * sizeof *order);
}

/* Each of strs[0:n]'s rank among the distinct ones, sorted (rank[i]; equal strs one rank),
   *distinct_count of them: the distinct ones found in a hash table (open addressing), then
   sorted. -1 on an error. */
static int str_ranks(const SortedStr *strs, size_t n, uint32_t *rank, size_t *distinct_count) {
    size_t slots = 16;
    while (slots < 2 * n) slots *= 2;
    int64_t *table = PyMem_Malloc(slots * sizeof(int64_t)); /* a distinct str's number, or -1 */
    SortedStr *distinct = PyMem_Malloc((n ? n : 1) * sizeof(SortedStr));
    int64_t *order = PyMem_Malloc((n ? n : 1) * sizeof(int64_t));
    int64_t *tmp = PyMem_Malloc((n ? n : 1) * sizeof(int64_t));
    uint32_t *rank_of = PyMem_Malloc((n ? n : 1) * sizeof(uint32_t));
    int ok = table && distinct && order && tmp && rank_of;
    if (!ok) {
        PyErr_NoMemory();
        goto done;
    }
    memset(table, 0xff, slots * sizeof(int64_t));
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        size_t slot = (size_t)strs[i].hash & (slots - 1);
        int64_t d;
        while ((d = table[slot]) >= 0 && (distinct[d].hash != strs[i].hash ||
                                          sorted_str_compare(&distinct[d], &strs[i]) != 0))
            slot = (slot + 1) & (slots - 1);
        if (d < 0) {
            d = (int64_t)count++;
            table[slot] = d;
            distinct[d] = strs[i];
        }
        rank[i] = (uint32_t)d; /* its distinct str's number, made its rank below */
    }
    for (size_t d = 0; d < count; d++) order[d] = (int64_t)d;
    merge_sort_strs(order, tmp, count, distinct);
    for (size_t r = 0; r < count; r++) rank_of[order[r]] = (uint32_t)r;
    for (size_t i = 0; i < n; i++) rank[i] = rank_of[rank[i]];
    *distinct_count = count;
done:
    PyMem_Free(table);
    PyMem_Free(distinct);
    PyMem_Free(order);
    PyMem_Free(tmp);
    PyMem_Free(rank_of);
    return ok ? 0 : -1;
}

/* key_order(keys) -> bytes | None: int64 indices of keys (a list) in the order of
   sorted(keys), or None where a key is not a tuple of two str and an int within int64 (or
   past 512 M keys). */
static PyObject *key_order(PyObject *module, PyObject *keys) {
    if (!PyList_CheckExact(keys)) {
        PyErr_SetString(PyExc_TypeError, "key_order(keys): a list of (group, topic, partition)");
        return NULL;
    }
    const size_t n = (size_t)PyList_GET_SIZE(keys);
    if (n > UINT32_MAX / 8) return Py_NewRef(Py_None); /* ranks and counts of uint32 hold less */
    SortedStr *groups = PyMem_Malloc((n ? n : 1) * sizeof(SortedStr));
    SortedStr *topics = PyMem_Malloc((n ? n : 1) * sizeof(SortedStr));
    RankedKey *ranked = PyMem_Malloc((n ? n : 1) * sizeof(RankedKey));
    uint32_t *group_ranks = PyMem_Malloc((n ? n : 1) * sizeof(uint32_t));
    uint32_t *topic_ranks = PyMem_Malloc((n ? n : 1) * sizeof(uint32_t));
    int64_t *tmp = PyMem_Malloc((n ? n : 1) * sizeof(int64_t));
    PyObject *out = NULL;
    if (!groups || !topics || !ranked || !group_ranks || !topic_ranks || !tmp) {
        PyErr_NoMemory();
        goto done;
    }
    /* the list is held: its tuples (and their strs) live while it does, and nothing here
       runs Python code that could change it */
    Py_INCREF(keys);
    for (size_t i = 0; i < n; i++) {
        const int got = ordered_key(PyList_GET_ITEM(keys, (Py_ssize_t)i), &groups[i], &topics[i],
                                    &ranked[i].partition);
        if (got < 0) goto release;
        if (!got) {
            out = Py_NewRef(Py_None);
            goto release;
        }
    }
    size_t group_count = 0, topic_count = 0;
    if (str_ranks(groups, n, group_ranks, &group_count) < 0 ||
        str_ranks(topics, n, topic_ranks, &topic_count) < 0)
        goto release;
    int64_t low = 0, high = 0;
    for (size_t i = 0; i < n; i++) {
        ranked[i].ranks = (uint64_t)group_ranks[i] << 32 | topic_ranks[i];
        const int64_t p = ranked[i].partition;
        if (!i || p < low) low = p;
        if (!i || p > high) high = p;
    }
    if (!(out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * sizeof(int64_t))))) goto release;
    int64_t *order = (int64_t *)PyBytes_AS_STRING(out);
    for (size_t i = 0; i < n; i++) order[i] = (int64_t)i;
    /* by partition, then (stably) by group and topic, where both take counts of few values
       a key (1,000 groups of 8 topics at a 1 M-record partition); else a merge sort */
    const size_t few = 4 * n + 1024;
    const uint64_t partitions = (uint64_t)high - (uint64_t)low + 1; /* 0: all of int64 */
    if (!partitions || partitions > few ||
        group_count > few / (topic_count ? topic_count : 1)) {
        merge_sort_ranked(order, tmp, n, ranked);
        goto release;
    }
    const size_t pairs = group_count * topic_count;
    const size_t range = pairs > partitions ? pairs : (size_t)partitions;
    size_t *counts = PyMem_Malloc((range + 1) * sizeof(size_t));
    if (!counts) {
        PyErr_NoMemory();
        Py_CLEAR(out);
        goto release;
    }
    uint32_t *values = group_ranks; /* read into ranked above */
    for (size_t i = 0; i < n; i++)
        values[i] = (uint32_t)((uint64_t)ranked[i].partition - (uint64_t)low);
    counting_sort(order, tmp, n, values, counts, (size_t)partitions);
    for (size_t i = 0; i < n; i++)
        values[i] = (uint32_t)(ranked[i].ranks >> 32) * (uint32_t)topic_count + topic_ranks[i];
    counting_sort(order, tmp, n, values, counts, pairs);
    PyMem_Free(counts);
release:
    Py_DECREF(keys);
done:
    PyMem_Free(groups);
    PyMem_Free(topics);
    PyMem_Free(ranked);
    PyMem_Free(group_ranks);
    PyMem_Free(topic_ranks);
    PyMem_Free(tmp);
    return out;
}
