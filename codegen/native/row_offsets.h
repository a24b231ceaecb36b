/* Whether the offsets of a binary column's rows (Arrow's int32 offsets) lie in its data: what
 * every pass over a chunk's key and value bytes checks before it reads a row (commit_effects.h,
 * live_keys.h, record_kinds.h).
 */

#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* Whether the n + 1 int32 offsets of a binary column's rows rise (never fall) from 0 or more
   to at most `limit` (its data's bytes, at most INT32_MAX): every row's bytes then lie in its
   data. Four rows a step with SSE2 (a compare of each offset with the next, the falls or-ed):
   some 1.5 instructions a row, where a check of each row's start and end as it was read took
   some 8 (every arrow binary column's offsets rise; a column that breaks this is an error). */
static int offsets_rise(const int32_t *off, Py_ssize_t n, int32_t limit) {
    if (off[0] < 0 || off[n] > limit) return 0;
    Py_ssize_t i = 0;
#ifdef __SSE2__
    __m128i fall = _mm_setzero_si128();
    for (; i + 4 <= n; i += 4)
        fall = _mm_or_si128(fall, _mm_cmpgt_epi32(_mm_loadu_si128((const __m128i *)(off + i)),
                                                  _mm_loadu_si128((const __m128i *)(off + i + 1))));
    if (_mm_movemask_epi8(fall)) return 0;
#endif
    for (; i < n; i++)
        if (off[i] > off[i + 1]) return 0;
    return 1;
}


/* Whether offsets (n + 1 int32 in a buffer) bound rows of data of `len` bytes: they rise from
   0 or more to at most len (offsets_rise; int32 offsets never pass INT32_MAX). */
static int offsets_valid(const Py_buffer *offsets, Py_ssize_t n, Py_ssize_t len) {
    if (n < 0 || offsets->len != (n + 1) * (Py_ssize_t)sizeof(int32_t)) return 0;
    return offsets_rise(offsets->buf, n, (int32_t)(len < INT32_MAX ? len : INT32_MAX));
}
