/* KeyStore: the distinct keys (byte strings) of one log partition's offset commits, the one
 * key table of the views' one-pass parts (superseded_commits.h, commit_effects.h).
 *
 * Each key is numbered from 0 in the order first seen and has an entry of the caller's size: a
 * KeyEntry (its hash's low half, its bytes' size, where they are) and then the caller's fields,
 * all entries in one array, so `(T *)store.entries` is an array of the caller's struct T (whose
 * first member is a KeyEntry), starting at a cache line. A key's bytes are copied once, into
 * its entry at inline_at when they are at most inline_cap bytes (the caller's room for them;
 * none unless it sets these after key_store_init), else into an arena. Keys are found by
 * open addressing on commit_key_hash in a table of 8-byte slots (the hash's high 32 bits and
 * the key's number + 1; 0 a free slot), grown to stay at most a quarter full: a lookup reads a
 * slot, compares the key's bytes only where the high bits agree, and the caller's fields are in
 * the entry it read (half full, a quarter of the lookups met another key's slot first, a branch
 * mispredicted each time: some 0.3 a row of the committed-offset pass). Sized by the keys (tens
 * of thousands per log partition), not the rows.
 */

#include <stdlib.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#ifdef __linux__
#include <sys/mman.h>
#endif

/* 16 bytes, so that an entry of one line holds a commit key's bytes beside it: the hash's low
   half only (its high half is in the key's slot, which the table is grown from). */
typedef struct {
    uint32_t hash_low;
    int32_t size;
    uint64_t at; /* the key's bytes in the arena */
} KeyEntry;

_Static_assert(sizeof(KeyEntry) == 16, "a KeyEntry is 16 bytes");

typedef struct {
    uint64_t *slots;
    size_t mask, count;
    uint8_t *entries; /* count entries of entry_size bytes, each a KeyEntry first */
    size_t entry_size, entry_cap;
    void *entries_block; /* the allocation entries lie in, at its first cache line boundary */
    int entries_huge;    /* entries_block from key_store_huge_block (free(), not PyMem_Free) */
    size_t inline_at, inline_cap; /* a key of at most inline_cap bytes: in its entry, there */
    uint8_t *arena;
    size_t arena_len, arena_cap;
} KeyStore;

#define KEY_STORE_TAG 0xFFFFFFFF00000000ull
#define KEY_STORE_LINE 64 /* the entries start at a cache line, so one of 64 bytes is one line */
#define KEY_STORE_MAX_KEYS 0xFFFFFFFEull /* a key's number + 1 fits the slot's low 32 bits */

/* a * b as 128 bits, the two halves xor-ed (wyhash's "mum"): one multiply mixes every bit of
   both words into every bit of the answer. */
static HOT_INLINE uint64_t key_mum(uint64_t a, uint64_t b) {
#if defined(__GNUC__) && defined(__x86_64__)
    uint64_t high; /* mulq: rdx:rax = rax * b, where the 128-bit product in C went through
                      the stack (three instructions more a multiply) */
    __asm__("mulq %2" : "+a"(a), "=d"(high) : "rm"(b) : "cc");
    return a ^ high;
#else
    __uint128_t r = (__uint128_t)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
#endif
}

#define KEY_SEED0 0xA0761D6478BD642Full /* wyhash's constants */
#define KEY_SEED1 0xE7037ED1A0B428DBull

/* The hash of a key's bytes, wyhash's way: 16 bytes a multiply (the last 16 overlapping the
   ones before rather than copying a tail of a variable size; a key of 4 to 15 bytes read as
   two overlapping words), the size in the seed. A commit key (30 to 40 bytes) takes two or
   three multiplies, written out for keys of 17 to 48 bytes (the loop's steps, without its
   counting: some 15 instructions less a key). */
static HOT_INLINE uint64_t commit_key_hash(const uint8_t *p, Py_ssize_t n) {
    uint64_t h = KEY_SEED0 ^ (uint64_t)n, a, b;
    if (n > 16 && n <= 48) {
        memcpy(&a, p, 8);
        memcpy(&b, p + 8, 8);
        h = key_mum(a ^ KEY_SEED1, b ^ h);
        if (n > 32) {
            memcpy(&a, p + 16, 8);
            memcpy(&b, p + 24, 8);
            h = key_mum(a ^ KEY_SEED1, b ^ h);
        }
        memcpy(&a, p + n - 16, 8); /* the last 16 bytes */
        memcpy(&b, p + n - 8, 8);
    } else if (n >= 16) {
        Py_ssize_t left = n;
        while (left > 16) {
            memcpy(&a, p, 8);
            memcpy(&b, p + 8, 8);
            h = key_mum(a ^ KEY_SEED1, b ^ h);
            p += 16;
            left -= 16;
        }
        memcpy(&a, p + left - 16, 8); /* the last 16 bytes */
        memcpy(&b, p + left - 8, 8);
    } else if (n >= 8) {
        memcpy(&a, p, 8);
        memcpy(&b, p + n - 8, 8);
    } else if (n >= 4) {
        uint32_t x, y;
        memcpy(&x, p, 4);
        memcpy(&y, p + n - 4, 4);
        a = x, b = y;
    } else {
        a = n ? (uint64_t)p[0] << 16 | (uint64_t)p[n >> 1] << 8 | p[n - 1] : 0;
        b = 0;
    }
    return key_mum(a ^ KEY_SEED1, b ^ h);
}

/* *items grown to hold need items (of item_size bytes), doubling; -1 with MemoryError. */
static int grow_array(void **items, size_t *cap, size_t need, size_t item_size) {
    if (need <= *cap) return 0;
    size_t cap2 = *cap ? *cap : 256;
    while (cap2 < need) {
        if (cap2 > PY_SSIZE_T_MAX / 2 / item_size) {
            PyErr_NoMemory();
            return -1;
        }
        cap2 *= 2;
    }
    void *grown = PyMem_Realloc(*items, cap2 * item_size);
    if (!grown) {
        PyErr_NoMemory();
        return -1;
    }
    *items = grown;
    *cap = cap2;
    return 0;
}

#if defined(__linux__) && defined(MADV_HUGEPAGE)
#define KEY_STORE_HUGE ((size_t)2 << 20) /* an x86-64 / arm64 huge page */
/* A block of `bytes` (at least KEY_STORE_HUGE) at a huge page boundary, which the kernel is
   asked to back with huge pages (when transparent huge pages are on for madvise): a lookup's
   random entry then rarely misses the TLB as well as the cache. NULL if not to be had. */
static void *key_store_huge_block(size_t bytes) {
    void *block = NULL;
    if (posix_memalign(&block, KEY_STORE_HUGE, bytes)) return NULL;
    (void)madvise(block, bytes, MADV_HUGEPAGE); /* advice: without it, small pages */
    return block;
}
#else
#define KEY_STORE_HUGE ((size_t)-1)
static void *key_store_huge_block(size_t bytes) {
    (void)bytes;
    return NULL;
}
#endif

static void key_store_free_entries(KeyStore *s) {
    if (s->entries_huge)
        free(s->entries_block);
    else
        PyMem_Free(s->entries_block);
}

/* Room for need entries, doubling, in a block whose entries start at a cache line (the
   count entries copied); -1 with MemoryError. */
static int key_store_grow_entries(KeyStore *s, size_t need) {
    if (need <= s->entry_cap) return 0;
    size_t cap = s->entry_cap ? s->entry_cap : 256;
    while (cap < need) {
        if (cap > (PY_SSIZE_T_MAX - KEY_STORE_LINE) / 2 / s->entry_size) {
            PyErr_NoMemory();
            return -1;
        }
        cap *= 2;
    }
    size_t bytes = cap * s->entry_size + KEY_STORE_LINE - 1;
    void *block = bytes >= KEY_STORE_HUGE ? key_store_huge_block(bytes) : NULL;
    int huge = block != NULL;
    if (!block && !(block = PyMem_Malloc(bytes))) {
        PyErr_NoMemory();
        return -1;
    }
    uintptr_t at = ((uintptr_t)block + KEY_STORE_LINE - 1) & ~(uintptr_t)(KEY_STORE_LINE - 1);
    uint8_t *entries = (uint8_t *)block + (at - (uintptr_t)block);
    if (s->count) memcpy(entries, s->entries, s->count * s->entry_size);
    key_store_free_entries(s);
    s->entries_block = block;
    s->entries_huge = huge;
    s->entries = entries;
    s->entry_cap = cap;
    return 0;
}

/* An empty store of entries of entry_size bytes (a KeyEntry first); -1 with MemoryError. */
static int key_store_init(KeyStore *s, size_t entry_size) {
    *s = (KeyStore){.mask = 4095, .entry_size = entry_size};
    if (!(s->slots = PyMem_Calloc(s->mask + 1, sizeof(uint64_t)))) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void key_store_free(KeyStore *s) {
    PyMem_Free(s->slots);
    key_store_free_entries(s);
    PyMem_Free(s->arena);
    *s = (KeyStore){.entry_size = s->entry_size};
}

/* A store's entry layout (entry_size, inline_at, inline_cap), given as constants by a caller
   that knows it: the probe then finds an entry and its key's bytes by a shift and an add, not
   by a multiply and a compare of what it loaded from the store (some 5 instructions a lookup). */
typedef struct {
    size_t entry_size, inline_at, inline_cap;
} KeyLayout;

static HOT_INLINE KeyLayout key_store_layout(const KeyStore *s) {
    return (KeyLayout){s->entry_size, s->inline_at, s->inline_cap};
}

/* Entry k of a store of layout `layout`. */
static HOT_INLINE KeyEntry *key_entry_in(const KeyStore *s, KeyLayout layout, size_t k) {
    return (KeyEntry *)(s->entries + k * layout.entry_size);
}

/* Where the bytes of the key of entry e are: in the entry, or (longer) in the arena. */
static HOT_INLINE const uint8_t *key_bytes_in(const KeyStore *s, KeyLayout layout,
                                              const KeyEntry *e) {
    return (size_t)e->size <= layout.inline_cap ? (const uint8_t *)e + layout.inline_at
                                                : s->arena + e->at;
}

static HOT_INLINE KeyEntry *key_store_entry(const KeyStore *s, size_t k) {
    return key_entry_in(s, key_store_layout(s), k);
}

static HOT_INLINE const uint8_t *key_store_bytes(const KeyStore *s, const KeyEntry *e) {
    return key_bytes_in(s, key_store_layout(s), e);
}

/* Fetch ahead the slot of a hash, and (prefetch_entry, in a store of layout `layout`) the entry
   of the key in it: its first line and, when its bytes start past it, the line they start at
   (not read to know where they are: a load of the entry would wait for it, and a key in the
   arena is rare). */
static HOT_INLINE void key_store_prefetch(const KeyStore *s, uint64_t h) {
    __builtin_prefetch(&s->slots[h & s->mask]);
}

static HOT_INLINE void key_store_prefetch_entry(const KeyStore *s, KeyLayout layout, uint64_t h) {
    uint64_t slot = s->slots[h & s->mask];
    if (!slot) return;
    const uint8_t *e = (const uint8_t *)key_entry_in(s, layout, (uint32_t)slot - 1);
    __builtin_prefetch(e);
    if (layout.inline_at >= KEY_STORE_LINE) __builtin_prefetch(e + layout.inline_at);
}

static int key_store_grow(KeyStore *s) {
    size_t size = (s->mask + 1) * 2;
    uint64_t *slots = PyMem_Calloc(size, sizeof(uint64_t));
    if (!slots) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t old = 0; old <= s->mask; old++) {
        uint64_t slot = s->slots[old]; /* the hash's high half and the key's number + 1 */
        if (!slot) continue;
        uint64_t h = (slot & KEY_STORE_TAG) | key_store_entry(s, (uint32_t)slot - 1)->hash_low;
        size_t at = (size_t)h & (size - 1);
        while (slots[at]) at = (at + 1) & (size - 1);
        slots[at] = slot;
    }
    PyMem_Free(s->slots);
    s->slots = slots;
    s->mask = size - 1;
    return 0;
}

/* Whether n bytes at a and b are equal: 16 bytes a step until 32 or fewer are left, then the
   first 16 and the last 16 of those (overlapping when fewer than 32); with SSE2, keys of 16 to
   48 bytes as three 16-byte vectors a side: keys are a few dozen bytes, and a call to memcmp
   costs more than the compare. */
static HOT_INLINE int key_bytes_equal(const uint8_t *a, const uint8_t *b, size_t n) {
#ifdef __SSE2__
    if (n >= 16 && n <= 48) { /* a commit key: three 16-byte compares (the middle one at 16,
                                 or again the last when n is 32 or less), their differences
                                 or-ed: one test of the lot */
        size_t m = n > 32 ? 16 : n - 16;
        __m128i differ = _mm_or_si128(
            _mm_xor_si128(_mm_loadu_si128((const __m128i *)a), _mm_loadu_si128((const __m128i *)b)),
            _mm_xor_si128(_mm_loadu_si128((const __m128i *)(a + m)),
                          _mm_loadu_si128((const __m128i *)(b + m))));
        differ = _mm_or_si128(differ, _mm_xor_si128(_mm_loadu_si128((const __m128i *)(a + n - 16)),
                                                    _mm_loadu_si128((const __m128i *)(b + n - 16))));
        return _mm_movemask_epi8(_mm_cmpeq_epi8(differ, _mm_setzero_si128())) == 0xFFFF;
    }
#endif
    uint64_t x0, x1, x2, x3, y0, y1, y2, y3;
    if (n >= 16) {
        size_t i = 0;
        for (; i + 32 < n; i += 16) {
            memcpy(&x0, a + i, 8);
            memcpy(&x1, a + i + 8, 8);
            memcpy(&y0, b + i, 8);
            memcpy(&y1, b + i + 8, 8);
            if ((x0 ^ y0) | (x1 ^ y1)) return 0;
        }
        memcpy(&x0, a + i, 8);
        memcpy(&x1, a + i + 8, 8);
        memcpy(&x2, a + n - 16, 8);
        memcpy(&x3, a + n - 8, 8);
        memcpy(&y0, b + i, 8);
        memcpy(&y1, b + i + 8, 8);
        memcpy(&y2, b + n - 16, 8);
        memcpy(&y3, b + n - 8, 8);
        return !((x0 ^ y0) | (x1 ^ y1) | (x2 ^ y2) | (x3 ^ y3));
    }
    if (n >= 8) {
        memcpy(&x0, a, 8);
        memcpy(&x1, a + n - 8, 8);
        memcpy(&y0, b, 8);
        memcpy(&y1, b + n - 8, 8);
        return !((x0 ^ y0) | (x1 ^ y1));
    }
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

/* Whether slot (not free) holds the key of bytes[0:size] (tag: the key's hash's high half), in
   a store of layout `layout`. */
static HOT_INLINE int key_store_holds(const KeyStore *s, KeyLayout layout, uint64_t slot,
                                      uint64_t tag, const uint8_t *bytes, int32_t size) {
    if ((slot & KEY_STORE_TAG) != tag) return 0;
    const KeyEntry *e = key_entry_in(s, layout, (uint32_t)slot - 1);
    const uint8_t *stored = key_bytes_in(s, layout, e);
    return e->size == size && key_bytes_equal(stored, bytes, (size_t)size);
}

/* Where the probe for a key of hash h ends: the slot holding the key of bytes[0:size] (*slot_of
   its value), or the free slot where it would be added (*slot_of 0). The store's layout is
   `layout`. A key seen before is nearly always in its home slot or the next (a quarter full,
   some 10% of the lookups of a 1 M-row partition met another key's slot first): of those two,
   the one whose tag agrees is taken by masks, not by a branch, which mispredicted each time a
   key was in the next slot (callgrind's branch simulation: 72 k of the pass's 290 k
   mispredicts a 1 M-row partition); others (a new key, a longer probe) by the loop. Only where
   pick_next (a constant) is set: the history pass's (16 M records: 3-5% less time a
   partition), not the plain pass's, whose rows do more than a lookup (1.5% more instructions
   and some 3% more time there). */
static HOT_INLINE size_t key_store_probe_in(const KeyStore *s, KeyLayout layout,
                                            const uint8_t *bytes, int32_t size, uint64_t h,
                                            uint64_t *slot_of, const int pick_next) {
    uint64_t tag = h & KEY_STORE_TAG, slot;
    size_t home = (size_t)h & s->mask;
    if (pick_next) {
        size_t next = (home + 1) & s->mask;
        uint64_t first = s->slots[home], second = s->slots[next];
        uint64_t in_next = (uint64_t)0 - (uint64_t)((first & KEY_STORE_TAG) != tag); /* ones */
        slot = (second & in_next) | (first & ~in_next);
        if (LIKELY(slot && key_store_holds(s, layout, slot, tag, bytes, size))) {
            *slot_of = slot;
            return home ^ ((home ^ next) & (size_t)in_next);
        }
    }
    for (size_t at = home;; at = (at + 1) & s->mask) {
        slot = s->slots[at];
        *slot_of = slot;
        if (!slot || key_store_holds(s, layout, slot, tag, bytes, size)) return at;
    }
}

/* A new key of bytes[0:size] (hash h) in free slot `at`: its number, -1 with an error set. */
static int64_t key_store_add(KeyStore *s, const uint8_t *bytes, int32_t size, uint64_t h,
                             size_t at) {
    if (s->count >= KEY_STORE_MAX_KEYS) {
        PyErr_SetString(PyExc_OverflowError, "more distinct offset commit keys in one log "
                                             "partition than the key table numbers (2^32 - 2)");
        return -1;
    }
    if (size < 0 ||
        key_store_grow_entries(s, s->count + 1) < 0 ||
        ((size_t)size > s->inline_cap &&
         grow_array((void **)&s->arena, &s->arena_cap, s->arena_len + (size_t)size, 1) < 0)) {
        if (size < 0) PyErr_SetString(PyExc_ValueError, "a key of a negative size");
        return -1;
    }
    KeyEntry *e = key_store_entry(s, s->count);
    memset(e, 0, s->entry_size);
    if ((size_t)size <= s->inline_cap) {
        *e = (KeyEntry){(uint32_t)h, size, 0};
        if (size) memcpy((uint8_t *)e + s->inline_at, bytes, (size_t)size);
    } else {
        *e = (KeyEntry){(uint32_t)h, size, s->arena_len};
        memcpy(s->arena + s->arena_len, bytes, (size_t)size);
        s->arena_len += (size_t)size;
    }
    s->slots[at] = (h & KEY_STORE_TAG) | (uint64_t)(s->count + 1);
    int64_t k = (int64_t)s->count++;
    if (s->count * 4 > s->mask && key_store_grow(s) < 0) return -1;
    return k;
}

/* The number of the key of bytes[0:size] (h: their commit_key_hash) in a store of layout
   `layout`; a new key is added with its entry's caller fields zeroed and *added set. -1 with an
   error set (MemoryError, or OverflowError past KEY_STORE_MAX_KEYS keys). Entries may move when
   a key is added. Inline: a key seen before (nearly every row) costs a probe and a compare.
   pick_next: key_store_probe_in's. */
static HOT_INLINE int64_t key_store_find_or_add_in(KeyStore *s, KeyLayout layout,
                                                   const uint8_t *bytes, int32_t size, uint64_t h,
                                                   int *added, const int pick_next) {
    uint64_t slot;
    size_t at = key_store_probe_in(s, layout, bytes, size, h, &slot, pick_next);
    *added = !slot;
    if (LIKELY(slot)) return (int64_t)(uint32_t)slot - 1;
    return key_store_add(s, bytes, size, h, at);
}

/* key_store_find_or_add_in with the store's own layout. */
static HOT_INLINE int64_t key_store_find_or_add(KeyStore *s, const uint8_t *bytes, int32_t size,
                                                uint64_t h, int *added) {
    return key_store_find_or_add_in(s, key_store_layout(s), bytes, size, h, added, 0);
}

/* key_numbers(key_offsets, key_data, hash_mask) -> int64 bytes: each key's number in a KeyStore
   (binary column: int32 offsets, rows + 1 of them from the first row, and data), its
   commit_key_hash anded with hash_mask: the tests' way to make keys collide (mask 0: every
   key has one hash) and to read the table's numbering, not a step of any view. */
static PyObject *key_numbers(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    unsigned long long mask;
    if (nargs != 3 || !PyLong_Check(args[2]))
        return usage_error("key_numbers(key_offsets, key_data, hash_mask)");
    if ((mask = PyLong_AsUnsignedLongLong(args[2])) == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    Py_buffer offsets, data;
    if (PyObject_GetBuffer(args[0], &offsets, PyBUF_SIMPLE) < 0) return NULL;
    if (PyObject_GetBuffer(args[1], &data, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&offsets);
        return NULL;
    }
    PyObject *out = NULL;
    KeyStore store = {.slots = NULL};
    Py_ssize_t n = offsets.len / (Py_ssize_t)sizeof(int32_t) - 1;
    const int32_t *off = offsets.buf;
    if (n < 0 || offsets.len != (n + 1) * (Py_ssize_t)sizeof(int32_t)) {
        PyErr_SetString(PyExc_ValueError, "key_numbers: the offsets are not int32");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (off[i] < 0 || off[i + 1] < off[i] || off[i + 1] > data.len) {
            PyErr_SetString(PyExc_ValueError, "key_numbers: a key's offsets are outside its data");
            goto done;
        }
    if (key_store_init(&store, sizeof(KeyEntry)) < 0 ||
        !(out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t))))
        goto done;
    int64_t *number = (int64_t *)PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < n; i++) {
        const uint8_t *k = (const uint8_t *)data.buf + off[i];
        int32_t size = off[i + 1] - off[i];
        int added;
        uint64_t h = commit_key_hash(k, size) & (uint64_t)mask;
        /* by the history pass's probe (pick_next), the one with a step of its own */
        if ((number[i] = key_store_find_or_add_in(&store, key_store_layout(&store), k, size, h,
                                                  &added, 1)) < 0) {
            Py_CLEAR(out);
            goto done;
        }
    }
done:
    if (store.slots) key_store_free(&store);
    PyBuffer_Release(&data);
    PyBuffer_Release(&offsets);
    return out;
}
