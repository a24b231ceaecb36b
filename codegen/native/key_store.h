/* KeyStore: the distinct keys (byte strings) of one log partition's offset commits, the one
 * key table of the views' one-pass parts (superseded_commits.h, commit_effects.h).
 *
 * Each key is numbered from 0 in the order first seen and has an entry of the caller's size: a
 * KeyEntry (its hash, where its bytes are, their size) and then the caller's fields, all
 * entries in one array, so `(T *)store.entries` is an array of the caller's struct T (whose
 * first member is a KeyEntry). A key's bytes are copied once into an arena. Keys are found by
 * open addressing on commit_key_hash in a table of 8-byte slots (the hash's high 32 bits and
 * the key's number + 1; 0 a free slot), grown to stay at most half full: a lookup reads a slot,
 * compares the key's bytes only where the high bits agree, and the caller's fields are in the
 * entry it read. Sized by the keys (tens of thousands per log partition), not the rows.
 */

typedef struct {
    uint64_t hash;
    size_t at; /* the key's bytes in the arena */
    int32_t size;
} KeyEntry;

typedef struct {
    uint64_t *slots;
    size_t mask, count;
    uint8_t *entries; /* count entries of entry_size bytes, each a KeyEntry first */
    size_t entry_size, entry_cap;
    uint8_t *arena;
    size_t arena_len, arena_cap;
} KeyStore;

#define KEY_STORE_TAG 0xFFFFFFFF00000000ull
#define KEY_STORE_MAX_KEYS 0xFFFFFFFEull /* a key's number + 1 fits the slot's low 32 bits */

/* The hash of a key's bytes (murmur3's mixing over 8-byte words; the last word overlaps the
   one before it rather than copying a tail of a variable size). */
static HOT_INLINE uint64_t commit_key_hash(const uint8_t *p, Py_ssize_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
    Py_ssize_t left = n;
    while (left > 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDull;
        h ^= h >> 29;
        p += 8;
        left -= 8;
    }
    uint64_t tail = 0;
    if (n >= 8) /* the last 8 bytes */
        memcpy(&tail, p + left - 8, 8);
    else
        for (Py_ssize_t i = 0; i < left; i++) tail |= (uint64_t)p[i] << (8 * i);
    h ^= tail; /* murmur3's finalizer: every input bit reaches the low bits a table indexes by */
    h = (h ^ (h >> 33)) * 0xFF51AFD7ED558CCDull;
    h = (h ^ (h >> 33)) * 0xC4CEB9FE1A85EC53ull;
    return h ^ (h >> 33);
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
    PyMem_Free(s->entries);
    PyMem_Free(s->arena);
    *s = (KeyStore){.entry_size = s->entry_size};
}

static HOT_INLINE KeyEntry *key_store_entry(const KeyStore *s, size_t k) {
    return (KeyEntry *)(s->entries + k * s->entry_size);
}

/* Fetch ahead the slot of a hash, and (prefetch_entry) the entry and bytes of the key in it. */
static HOT_INLINE void key_store_prefetch(const KeyStore *s, uint64_t h) {
    __builtin_prefetch(&s->slots[h & s->mask]);
}

static HOT_INLINE void key_store_prefetch_entry(const KeyStore *s, uint64_t h) {
    uint64_t slot = s->slots[h & s->mask];
    if (!slot) return;
    const KeyEntry *e = key_store_entry(s, (uint32_t)slot - 1);
    __builtin_prefetch(e);
    __builtin_prefetch(s->arena + e->at);
}

static int key_store_grow(KeyStore *s) {
    size_t size = (s->mask + 1) * 2;
    uint64_t *slots = PyMem_Calloc(size, sizeof(uint64_t));
    if (!slots) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t k = 0; k < s->count; k++) {
        uint64_t h = key_store_entry(s, k)->hash;
        size_t at = (size_t)h & (size - 1);
        while (slots[at]) at = (at + 1) & (size - 1);
        slots[at] = (h & KEY_STORE_TAG) | (uint64_t)(k + 1);
    }
    PyMem_Free(s->slots);
    s->slots = slots;
    s->mask = size - 1;
    return 0;
}

/* Whether n bytes at a and b are equal: 8 bytes at a time, the last word overlapping the one
   before it (keys are a few dozen bytes: a call to memcmp costs more than the compare). */
static HOT_INLINE int key_bytes_equal(const uint8_t *a, const uint8_t *b, size_t n) {
    uint64_t x, y;
    if (n < 8) {
        for (size_t i = 0; i < n; i++)
            if (a[i] != b[i]) return 0;
        return 1;
    }
    for (size_t i = 0; i + 8 < n; i += 8) {
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y) return 0;
    }
    memcpy(&x, a + n - 8, 8);
    memcpy(&y, b + n - 8, 8);
    return x == y;
}

/* Where the probe for a key of hash h ends: the slot holding the key of bytes[0:size], or the
   free slot where it would be added (*found 0). */
static HOT_INLINE size_t key_store_probe(const KeyStore *s, const uint8_t *bytes, int32_t size,
                                         uint64_t h, int *found) {
    uint64_t tag = h & KEY_STORE_TAG;
    for (size_t at = (size_t)h & s->mask;; at = (at + 1) & s->mask) {
        uint64_t slot = s->slots[at];
        if (!slot) {
            *found = 0;
            return at;
        }
        if ((slot & KEY_STORE_TAG) != tag) continue;
        const KeyEntry *e = key_store_entry(s, (uint32_t)slot - 1);
        if (e->size == size && key_bytes_equal(s->arena + e->at, bytes, (size_t)size)) {
            *found = 1;
            return at;
        }
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
        grow_array((void **)&s->entries, &s->entry_cap, s->count + 1, s->entry_size) < 0 ||
        grow_array((void **)&s->arena, &s->arena_cap, s->arena_len + (size_t)size, 1) < 0) {
        if (size < 0) PyErr_SetString(PyExc_ValueError, "a key of a negative size");
        return -1;
    }
    if (size) memcpy(s->arena + s->arena_len, bytes, (size_t)size);
    KeyEntry *e = key_store_entry(s, s->count);
    memset(e, 0, s->entry_size);
    *e = (KeyEntry){h, s->arena_len, size};
    s->arena_len += (size_t)size;
    s->slots[at] = (h & KEY_STORE_TAG) | (uint64_t)(s->count + 1);
    int64_t k = (int64_t)s->count++;
    if (s->count * 2 > s->mask && key_store_grow(s) < 0) return -1;
    return k;
}

/* The number of the key of bytes[0:size] (h: their commit_key_hash); a new key is added with
   its entry's caller fields zeroed and *added set. -1 with an error set (MemoryError, or
   OverflowError past KEY_STORE_MAX_KEYS keys). Entries may move when a key is added. Inline:
   a key seen before (nearly every row) costs a probe and a compare. */
static HOT_INLINE int64_t key_store_find_or_add(KeyStore *s, const uint8_t *bytes, int32_t size,
                                                uint64_t h, int *added) {
    int found;
    size_t at = key_store_probe(s, bytes, size, h, &found);
    *added = !found;
    if (LIKELY(found)) return (int64_t)(uint32_t)s->slots[at] - 1;
    return key_store_add(s, bytes, size, h, at);
}
