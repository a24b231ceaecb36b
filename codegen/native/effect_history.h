/* EffectHistory: the rows that took effect in a CommitEffects pass (history mode, commit_effects.h),
 * in the order they did, and their scatter by key (keyed()).
 *
 * A column each (key and tombstone, record offset, committed offset, commit timestamp, leader
 * epoch), not a 40-byte row: keyed() tallies the keys from their column alone (4 of the 40
 * bytes a row), then puts one column at a time in its places, each write then among the keys'
 * next places in one output (~24 k lines of a 1 M-row partition, L2-resident), where a row
 * wrote four outputs' (~96 k lines, mostly out of L2).
 *
 * Not a block of rows a key written as the rows take effect, for keyed() to copy in runs: it
 * moves the scatter into the pass, where it costs more. Measured (8-row blocks of 32-byte rows
 * in 1 MiB chunks, each key's line staged and written whole past the caches; lag with data
 * partitions at 16 M records, two alternate runs): keyed() 414-428 -> 300-305 perf samples,
 * the pass 482-527 -> 652-719, as each row's write is to a line of its key's (1.5 k to 24 k of
 * them, out of L1) where the columns' are in sequence.
 */

#ifdef __linux__
#include <sys/mman.h>
#endif

#define HISTORY_MAX_KEY (UINT32_MAX >> 1) /* a key number beside its tombstone bit */
/* A row's place in keyed()'s outputs: a commit's below HISTORY_DELETION; a tombstone that
   deleted its key's offset HISTORY_DELETION + its place among the deletions (its record
   offset only is given), another HISTORY_NO_PLACE. */
#define HISTORY_DELETION 0x80000000u
#define HISTORY_NO_PLACE UINT32_MAX

typedef struct {
    uint32_t *keys; /* key number << 1 | tombstone */
    int64_t *rows;  /* record offset (add_records) or row number */
    int64_t *committed, *commit_times;
    int32_t *epochs;
    size_t len, cap;
} EffectHistory;

/* The capacity the last history freed reached, the first of a new history that takes no kept
   columns (history_spare, below): lag feeds a history per __consumer_offsets partition, each
   about as long as the one before, which grown by doubling from nothing had realloc copy its
   columns ~1x over (a 1 M-row partition's 32 MB; ~84 ms of memmove at 16 M records). Reached
   with the GIL held only. */
static size_t history_cap_hint;

/* The columns of the last history freed, kept (len 0) for the next history to take whole: lag
   reads its __consumer_offsets partitions in turn, each partition's history about as long as
   the last's, whose pages are then written already. Freed to the heap, the blocks were taken
   in part by the allocations between two histories, and the next history faulted fresh pages
   in (lag at 16 M records, alternate runs: page faults 70.3-70.9 k -> 66.7-67.3 k, peak
   memory 238-241 -> 224 MB). Freed when no history follows (history_release: lag after its
   last partition's), not held for the rest of the process. Reached with the GIL held only. */
static EffectHistory history_spare;

/* Whether a history freed keeps its columns (history_spare): not from history_release until the
   next history is made (history_made: CommitEffects(history=True)), so that a history still
   alive at the release (a caller holding lag's last partition's) is freed when it is, not
   kept for the rest of the process. Reached with the GIL held only. */
static int history_keeping = 1;

/* A history is made: the next history freed keeps its columns for one after it. */
static void history_made(void) { history_keeping = 1; }

/* Room for `need` rows: the columns kept (history_spare) where this history has none yet and
   they hold `need`, else grown, from the last history's capacity where it has none yet. */
static int history_grow_to(EffectHistory *h, size_t need) {
    if (h->cap == 0 && history_spare.cap >= need) {
        *h = history_spare;
        history_spare = (EffectHistory){0};
        return 0;
    }
    size_t cap = h->cap;
    if (cap == 0 && need < history_cap_hint) need = history_cap_hint;
    /* each column grown to the same capacity: cap is set by the last */
    size_t c1 = cap, c2 = cap, c3 = cap, c4 = cap, c5 = cap;
    if (grow_array((void **)&h->keys, &c1, need, sizeof(uint32_t)) < 0 ||
        grow_array((void **)&h->rows, &c2, need, sizeof(int64_t)) < 0 ||
        grow_array((void **)&h->committed, &c3, need, sizeof(int64_t)) < 0 ||
        grow_array((void **)&h->commit_times, &c4, need, sizeof(int64_t)) < 0 ||
        grow_array((void **)&h->epochs, &c5, need, sizeof(int32_t)) < 0)
        return -1;
    h->cap = c5;
    return 0;
}

static int history_grow(EffectHistory *h) { return history_grow_to(h, h->len + 1); }

/* Room for `rows` rows made before the first history's rows are noted (none freed yet: no
   history_cap_hint), the caller's estimate of its partition's rows: grown by doubling from
   nothing, realloc copied its columns ~1x over (lag with data partitions at 1 M records: memcpy
   111.6 -> 97.8 M instructions, the whole 2,893.9 -> 2,881.7 M). Later histories
   start at the capacity the last reached, as before: a capacity of each's own estimate had
   their blocks, of other sizes, not reuse the last's (lag at 16 M records, data partitions:
   +370 perf samples, clear_page_erms 32 -> 198). The capacity is the power of two doubling
   reaches, each column's size as before. -1 with an error set. */
static int history_reserve(EffectHistory *h, size_t rows) {
    return h->cap == 0 && history_cap_hint == 0 && rows ? history_grow_to(h, rows) : 0;
}

/* A row of key `key` (at most HISTORY_MAX_KEY: the caller's key table checks a key's number
   once, as it adds the key, not here each row) noted as it takes effect; -1 with an error set. */
static HOT_INLINE int history_note(EffectHistory *h, int64_t key, int64_t row,
                                   int64_t committed, int64_t commit_time, int32_t epoch,
                                   int tombstone) {
    if (h->len == h->cap && history_grow(h) < 0) return -1;
    size_t i = h->len++;
    h->keys[i] = (uint32_t)key << 1 | (uint32_t)(tombstone != 0);
    h->rows[i] = row;
    h->committed[i] = committed;
    h->commit_times[i] = commit_time;
    h->epochs[i] = epoch;
    return 0;
}

static void history_columns_free(EffectHistory *h) {
    PyMem_Free(h->keys);
    PyMem_Free(h->rows);
    PyMem_Free(h->committed);
    PyMem_Free(h->commit_times);
    PyMem_Free(h->epochs);
    *h = (EffectHistory){0};
}

/* h's columns kept for the next history where none are kept already and no release came
   since the last history was made (history_keeping), else freed. */
static void history_free(EffectHistory *h) {
    if (h->cap) history_cap_hint = h->cap;
    if (h->cap && history_keeping && !history_spare.cap) {
        history_spare = *h;
        history_spare.len = 0;
        *h = (EffectHistory){0};
        return;
    }
    history_columns_free(h);
}

/* history_release() -> None: the columns kept of the last history freed (history_spare),
   freed, and none kept until a history is made again (history_keeping): the caller's last
   history is done, or freed later. A history made after starts from the capacity the last
   reached (history_cap_hint), as before, and keeps again. */
static PyObject *history_release(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    history_columns_free(&history_spare);
    history_keeping = 0;
    Py_RETURN_NONE;
}

#if defined(__linux__) && defined(MADV_HUGEPAGE)
#define HISTORY_HUGE_PAGE ((uintptr_t)2 << 20) /* an x86-64 / arm64 huge page */
/* The kernel asked to back the whole huge pages within data[0:bytes] with huge pages (when
   transparent huge pages are on for madvise): keyed()'s outputs, megabytes written at random
   places, are fresh memory at the first partitions, a page fault each 4 KiB (~8.3 k in
   keyed() at a 1 M-row partition), and their random writes miss the TLB over 4 KiB pages. */
static void history_huge_pages(void *data, size_t bytes) {
    const uintptr_t start = (uintptr_t)data, huge = HISTORY_HUGE_PAGE;
    const uintptr_t from = (start + huge - 1) & ~(huge - 1), to = (start + bytes) & ~(huge - 1);
    if (to > from) (void)madvise((void *)from, to - from, MADV_HUGEPAGE); /* advice only */
}
#else
static void history_huge_pages(void *data, size_t bytes) {
    (void)data;
    (void)bytes;
}
#endif

/* Up to this many keys with a commit, history_scatter asks for each key's next output line
   ahead as it writes one: the ~1.5 k keys' runs of a partition of the 16 M-record dump leave
   their next lines (~210 KB a column) in L2 until written, where each store waited for its
   line from memory (keyed() at 1,668 keys: 18.5 -> 14.1 ms, median of 40 alternate calls). A
   partition of the 1 M-record dump's 24 k keys' lines (~3 MB a column) push each other out of
   L2 first (21.2 -> 21.6 ms): above this, no line is asked for ahead. */
#define HISTORY_AHEAD_KEYS 4096
#define HISTORY_AHEAD_ITEMS 8 /* a key's next line: 64 bytes of int64 on */

/* history_scatter's loops, inlined with `ahead` constant: one loop each way. A prefetch never
   faults, past the outputs' end too. */
static HOT_INLINE void history_scatter_columns(const EffectHistory *h,
                                               const uint32_t *restrict places,
                                               int64_t *restrict commit_times,
                                               int64_t *restrict committed,
                                               int64_t *restrict epochs, int ahead) {
    const size_t n = h->len;
    /* the history's epochs read into a restrict local: through h, it was read again a row (a
       store to an output might have changed h's fields, for all the compiler knew) */
    const int32_t *restrict from_epochs = h->epochs;
    const int64_t *from[2] = {h->commit_times, h->committed};
    int64_t *to[2] = {commit_times, committed};
    for (int c = 0; c < 2; c++) {
        const int64_t *restrict src = from[c];
        int64_t *restrict dst = to[c];
        for (size_t i = 0; i < n; i++) {
            uint32_t p = places[i];
            if (p >= HISTORY_DELETION) continue;
            if (ahead) __builtin_prefetch(&dst[p + HISTORY_AHEAD_ITEMS], 1, 3);
            dst[p] = src[i];
        }
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t p = places[i];
        if (p >= HISTORY_DELETION) continue;
        if (ahead) __builtin_prefetch(&epochs[p + HISTORY_AHEAD_ITEMS], 1, 3);
        epochs[p] = from_epochs[i];
    }
}

/* keyed()'s outputs of `commits` items asked for huge pages, before any is written. */
static void history_outputs_advise(int64_t *const outputs[4], size_t commits) {
    for (int o = 0; o < 4; o++) history_huge_pages(outputs[o], commits * sizeof(int64_t));
}

/* The history's commit times, committed offsets and epochs scattered to their places
   (places[i]) in outputs of keyed() (history_outputs_advise first); its record offsets and
   deletions are put as the places are found (keyed_places, commit_effects.h). keys: how many
   keys have a commit. */
static void history_scatter(const EffectHistory *h, const uint32_t *restrict places,
                            size_t keys, int64_t *restrict commit_times,
                            int64_t *restrict committed, int64_t *restrict epochs) {
    if (keys <= HISTORY_AHEAD_KEYS)
        history_scatter_columns(h, places, commit_times, committed, epochs, 1);
    else
        history_scatter_columns(h, places, commit_times, committed, epochs, 0);
}
