/* commit_kind: each __consumer_offsets row's kind for CommitEffects (commit_effects.h), from
 * its key bytes and its flags, read by add_records and add_checked EFFECTS_AHEAD rows before
 * their turn (the kinds they return: codegen.dumps.views.effects.RecordEffects.add), as
 * commit_rows reads the decoded rows (codegen.dumps.views.commit_rows: offset_commits and
 * compaction.end_markers):
 *
 * - a control record of a transactional batch whose key is int16 version, int16 type 0
 *   (ABORT) or 1 (COMMIT): 5 an ABORT marker, 6 a COMMIT marker;
 * - a record that is not a control record, read and decoded (flag DECODED), whose key's int16
 *   record type is 0 or 1 (LegacyOffsetCommitKey, OffsetCommitKey): 1 a plain commit, 2 a
 *   plain tombstone, 3 a transactional commit, 4 a transactional tombstone;
 * - any other row: 0.
 *
 * The flags of a row (uint8): CONTROL 1, TRANSACTIONAL 2, TOMBSTONE 4 (no value), DECODED 8
 * (the row was read and, for add_records, its offset commit, if it is one, decoded without an
 * error; add_checked checks the commit itself, commit_check.h).
 */

#define ROW_CONTROL 1
#define ROW_TRANSACTIONAL 2
#define ROW_TOMBSTONE 4
#define ROW_DECODED 8

/* A row that is not a control record, by its flags (ROW_TOMBSTONE, ROW_TRANSACTIONAL,
   ROW_DECODED), when its key's record type is 0 or 1: 0 unless decoded, else 1 to 4. */
static const uint8_t commit_kind_of_flags[16] = {
    0, 0, 0, 0, 0, 0, 0, 0, /* not decoded */
    1, 0, 3, 0, 2, 0, 4, 0, /* decoded: (control rows, the odd ones, are not read here) */
};

static HOT_INLINE uint8_t commit_kind(const uint8_t *key, int32_t size, uint8_t flags) {
    if (UNLIKELY(flags & ROW_CONTROL)) {
        if (!(flags & ROW_TRANSACTIONAL) || size < 4 || key[2] != 0 || key[3] > 1) return 0;
        return (uint8_t)(5 + key[3]);
    }
    if (size < 2 || (key[0] | (key[1] & 0xFE))) return 0; /* a record type other than 0, 1 */
    return commit_kind_of_flags[flags & 15];
}
