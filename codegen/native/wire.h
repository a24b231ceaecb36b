/* Kafka's wire format as the native modules read it: big-endian loads, the one unsigned
 * varint reader (LEB128, as Kafka's ByteUtils reads it) and the read limits. The engine raises
 * on what it refuses (engine.c's read_uvarint); the columnar builder and the record loops take
 * the status.
 */
#ifndef SPECGEN_WIRE_H
#define SPECGEN_WIRE_H

#include <stdint.h>
#include <string.h>

#include "shared.h"

static inline uint16_t load16(const unsigned char *p) {
    uint16_t v; memcpy(&v, p, 2);
#if PY_LITTLE_ENDIAN
    v = __builtin_bswap16(v);
#endif
    return v;
}
static inline uint32_t load32(const unsigned char *p) {
    uint32_t v; memcpy(&v, p, 4);
#if PY_LITTLE_ENDIAN
    v = __builtin_bswap32(v);
#endif
    return v;
}
static inline uint64_t load64(const unsigned char *p) {
    uint64_t v; memcpy(&v, p, 8);
#if PY_LITTLE_ENDIAN
    v = __builtin_bswap64(v);
#endif
    return v;
}

#define MAX_VARINT32 5 /* Kafka's 32-bit varints take at most 5 bytes, its 64-bit ones 10 */
#define MAX_VARINT64 10
enum { VARINT_CUT = -1, VARINT_LONG = -2 };

#define MAX_STRING_LENGTH 0x7FFF
/* Kafka 4.4.0's read limits (runtime.wire.MAX_ARRAY_LENGTH, MAX_TAGGED_FIELDS), checked before
   anything is allocated; equal counts are read. */
#define MAX_ARRAY_LENGTH 1000000
#define MAX_TAGGED_FIELDS 10000

/* An unsigned varint of at most max_bytes bytes in d[*pos:limit] (its bits in *out): 0 with
   *out and *pos past it; VARINT_CUT when the bytes end inside it, VARINT_LONG when it takes more
   bytes (*pos and *out untouched then). */
static inline int read_varint(const unsigned char *d, Py_ssize_t *pos, Py_ssize_t limit,
                              int max_bytes, int64_t *out) {
    Py_ssize_t o = *pos;
    int64_t value = 0;
    int shift = 0;
    for (;;) {
        if (o >= limit) return VARINT_CUT;
        unsigned char b = d[o++];
        value |= (int64_t)((uint64_t)(b & 0x7F) << shift);
        if (b < 0x80) break;
        shift += 7;
        if (shift > 7 * (max_bytes - 1)) return VARINT_LONG;
    }
    *out = value;
    *pos = o;
    return 0;
}

#endif /* SPECGEN_WIRE_H */
