/* commit_check(): one offset commit of __consumer_offsets checked as the generated readers
 * accept or refuse it, the one definition of the check: commit_columns() (commit_columns.h,
 * the _engine module) decodes each row with it, CommitEffects' pass (commit_effects.h, the
 * _records module) checks each commit with it as it reads the row. commit_key_parts() is the
 * one reading of a key's layout, its identity's size too (commit_effects.h commit_key_size).
 *
 * The layouts are the shipped specs' (message_specs/consumer_offsets): the keys of record
 * types 0 (LegacyOffsetCommitKey) and 1 (OffsetCommitKey), version 0: group and topic
 * (int16-length strings) and partition (int32); their values behind an int16 version:
 * LegacyOffsetCommitValue v0 (offset, metadata, commitTimestamp) and OffsetCommitValue v0-v4
 * (v0 and v2 as the legacy value, v1 adds expireTimestamp, v3 puts leaderEpoch after offset,
 * v4 is flexible: a compact metadata and a tagged section whose tag 0 is the 16-byte topicId;
 * a version above 4 is read as 4, KIP-915). Bytes after a key or a value are ignored. Every
 * length is checked before it is read: a string's against the bytes left, a tagged field's
 * size, a varint's bytes; strings are Python's strict UTF-8.
 */
#ifndef SPECGEN_COMMIT_CHECK_H
#define SPECGEN_COMMIT_CHECK_H

#include "wire.h"
#include "utf8_strict.h"

#define COMMIT_NEWEST_VALUE 4 /* OffsetCommitValue's newest version (flexible) */

/* Whether s[0:n] is ASCII, a word at a time (the last word may overlap). */
static HOT_INLINE int commit_ascii(const unsigned char *s, Py_ssize_t n) {
    uint64_t high = 0, w;
    if (n >= 8) {
        for (Py_ssize_t i = 0; i + 8 <= n; i += 8) { memcpy(&w, s + i, 8); high |= w; }
        memcpy(&w, s + n - 8, 8);
        high |= w;
    } else {
        for (Py_ssize_t i = 0; i < n; i++) high |= s[i];
    }
    return !(high & UINT64_C(0x8080808080808080));
}

/* Python's strict UTF-8 (utf8_strict.h's utf8_valid) with the usual case inline: the short
   ASCII names of groups and topics. */
static HOT_INLINE int commit_utf8(const unsigned char *s, Py_ssize_t n) {
    return LIKELY(commit_ascii(s, n)) || utf8_valid(s, n);
}

/* The length of the int16-length string at d[o:len] (its bytes follow the 2 of the length),
   -1 where the reader refuses it: too short for the length, negative, past len. Its bytes are
   not looked at: commit_utf8 checks them. */
static HOT_INLINE Py_ssize_t commit_string16_size(const unsigned char *d, Py_ssize_t len,
                                                  Py_ssize_t o) {
    if (len - o < 2) return -1;
    Py_ssize_t n = (int16_t)load16(d + o);
    return (size_t)n > (size_t)(len - o - 2) ? -1 : n; /* negative: the unsigned compare */
}

/* An int16-length string at d[*pos:len]: its start and length, 0; -1 where the reader refuses it
   (commit_string16_size's, or not UTF-8). */
static HOT_INLINE int commit_string16(const unsigned char *d, Py_ssize_t len, Py_ssize_t *pos,
                                      Py_ssize_t *start, Py_ssize_t *size) {
    Py_ssize_t o = *pos + 2, n = commit_string16_size(d, len, *pos);
    if (n < 0 || !commit_utf8(d + o, n)) return -1;
    *start = o;
    *size = n;
    *pos = o + n;
    return 0;
}

/* An offset commit key's bytes after its type, kb[0:kn]: the group and the topic (int16-length
   strings, commit_string16_size) and the partition (int32). 0 with the group's and topic's
   lengths in *group and *topic, -1 where the reader refuses them. */
static HOT_INLINE int commit_key_parts(const unsigned char *kb, Py_ssize_t kn, Py_ssize_t *group,
                                       Py_ssize_t *topic) {
    Py_ssize_t strings = kn - 4; /* the partition's 4 bytes end the key */
    Py_ssize_t gn = commit_string16_size(kb, strings, 0);
    if (gn < 0) return -1;
    Py_ssize_t tn = commit_string16_size(kb, strings, 2 + gn);
    if (tn < 0) return -1;
    *group = gn;
    *topic = tn;
    return 0;
}

/* The size of a key's bytes after its type up to its partition's end (its identity), of these
   group and topic lengths (commit_key_parts'). */
static HOT_INLINE Py_ssize_t commit_key_parts_size(Py_ssize_t group, Py_ssize_t topic) {
    return 2 + group + 2 + topic + 4;
}

/* A compact (uvarint length + 1) non-null string, as the flexible versions write it. */
static HOT_INLINE int commit_compact_string(const unsigned char *d, Py_ssize_t len,
                                            Py_ssize_t *pos, Py_ssize_t *start,
                                            Py_ssize_t *size) {
    Py_ssize_t o = *pos;
    int64_t n;
    if (read_varint(d, &o, len, MAX_VARINT32, &n) < 0) return -1;
    n -= 1;
    if (n > MAX_STRING_LENGTH || n < 0 || n > len - o || !commit_utf8(d + o, (Py_ssize_t)n))
        return -1;
    *start = o;
    *size = (Py_ssize_t)n;
    *pos = o + (Py_ssize_t)n;
    return 0;
}

typedef struct {
    int64_t offset, commit_ts, expire_ts;
    int32_t epoch;
    Py_ssize_t meta_start, meta_size;
} CommitValue;

/* The value body d[0:len] at version v (0-4), into *out: 0, or -1 where the reader refuses it. */
static HOT_INLINE int commit_value(const unsigned char *d, Py_ssize_t len, int v,
                                   CommitValue *out) {
    Py_ssize_t o = 0;
    out->epoch = -1;
    out->expire_ts = -1;
    if (len < 8) return -1;
    out->offset = (int64_t)load64(d);
    o = 8;
    if (v >= 3) {
        if (len - o < 4) return -1;
        out->epoch = (int32_t)load32(d + o);
        o += 4;
    }
    int rc = v >= 4 ? commit_compact_string(d, len, &o, &out->meta_start, &out->meta_size)
                    : commit_string16(d, len, &o, &out->meta_start, &out->meta_size);
    if (rc < 0 || len - o < 8) return -1;
    out->commit_ts = (int64_t)load64(d + o);
    o += 8;
    if (v == 1) {
        if (len - o < 8) return -1;
        out->expire_ts = (int64_t)load64(d + o);
        o += 8;
    }
    if (v < 4) return 0;
    int64_t left;
    if (read_varint(d, &o, len, MAX_VARINT32, &left) < 0 || left > MAX_TAGGED_FIELDS) return -1;
    while (left-- > 0) {
        int64_t tag, size;
        if (read_varint(d, &o, len, MAX_VARINT32, &tag) < 0 ||
            read_varint(d, &o, len, MAX_VARINT32, &size) < 0 || size > len - o)
            return -1;
        if (tag == 0 ? size != 16 : tag > 0x7FFFFFFF) return -1; /* topicId: 16 bytes exactly */
        o += (Py_ssize_t)size;
    }
    return 0;
}

/* What commit_check() read of a commit, as far as it read: the key's group and topic (start and
   size in the key's bytes after its type), partition, and the size of those bytes up to the
   partition's end; the value's version as written (has_version: the value has one), whether
   it is newer than COMMIT_NEWEST_VALUE, and the value read as that version. */
typedef struct {
    Py_ssize_t group_start, group_size, topic_start, topic_size, key_size;
    int32_t partition;
    int16_t version;
    uint8_t has_version, newer;
    CommitValue value;
} CommitChecked;

/* The offset commit of record type t (0 or 1) whose key after its type is kb[0:kn] and whose
   value (has_value: not a tombstone) is vb[0:vn]: 1 accepted with its value read into
   out->value, 0 an accepted tombstone, -1 refused (a value without a version, a version the
   value never had, or a key or value the reader refuses). out->newer and out->version are set
   where the version is read, refused or not. The key's two strings are checked as UTF-8 by
   one ASCII test of the bytes from the group's first to the topic's last (the topic's length
   between them has no byte above 0x7F below 128 bytes), each on its own where that fails:
   one loop a key where there were two. */
static HOT_INLINE int commit_check(int t, const unsigned char *kb, Py_ssize_t kn, int has_value,
                                   const unsigned char *vb, Py_ssize_t vn, CommitChecked *out) {
    out->has_version = out->newer = 0;
    Py_ssize_t gn, tn;
    if (commit_key_parts(kb, kn, &gn, &tn) < 0) return -1;
    Py_ssize_t ts = 2 + gn + 2;
    if (!LIKELY(commit_ascii(kb + 2, gn + 2 + tn)) &&
        (!commit_utf8(kb + 2, gn) || !commit_utf8(kb + ts, tn)))
        return -1;
    out->group_start = 2;
    out->group_size = gn;
    out->topic_start = ts;
    out->topic_size = tn;
    out->key_size = commit_key_parts_size(gn, tn);
    out->partition = (int32_t)load32(kb + ts + tn);
    if (!has_value) {
        out->value = (CommitValue){0}; /* (never read: set for the compiler's sake) */
        return 0;
    }
    if (vn < 2) return -1;
    int v = (int16_t)load16(vb);
    out->version = (int16_t)v;
    out->has_version = 1;
    if (v < 0 || (t == 0 && v > 0)) return -1; /* a version the value never had */
    if (v > COMMIT_NEWEST_VALUE) {
        out->newer = 1;
        v = COMMIT_NEWEST_VALUE;
    }
    return commit_value(vb + 2, vn - 2, v, &out->value) < 0 ? -1 : 1;
}

#endif /* SPECGEN_COMMIT_CHECK_H */
