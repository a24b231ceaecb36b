/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) of v2 batches, in C: the SSE 4.2
 * crc32 instruction where the CPU has it, else tables read 8 bytes a step. The same sums as
 * the crc32c package the pure loop calls, without a Python call per batch. Part of the
 * _records module (records.c).
 */
#ifndef SPECGEN_CRC32C_H
#define SPECGEN_CRC32C_H

#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <nmmintrin.h>
#define SPECGEN_CRC32C_X86 1
#endif

static uint32_t crc32c_tables[8][256];
static int crc32c_ready, crc32c_hardware;

static void crc32c_setup(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
        crc32c_tables[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc32c_tables[t][i] =
                (crc32c_tables[t - 1][i] >> 8) ^ crc32c_tables[0][crc32c_tables[t - 1][i] & 0xFF];
#ifdef SPECGEN_CRC32C_X86
    __builtin_cpu_init();
    crc32c_hardware = __builtin_cpu_supports("sse4.2");
#endif
    crc32c_ready = 1;
}

/* The running (inverted) sum crc over p[0:n], by the tables. */
static uint32_t crc32c_by_tables(uint32_t crc, const unsigned char *p, size_t n) {
    const uint32_t(*t)[256] = crc32c_tables;
    for (; n >= 8; n -= 8, p += 8) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + 4, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        lo = __builtin_bswap32(lo);
        hi = __builtin_bswap32(hi);
#endif
        lo ^= crc;
        crc = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^
              t[3][hi & 0xFF] ^ t[2][(hi >> 8) & 0xFF] ^ t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
    }
    while (n--) crc = (crc >> 8) ^ t[0][(crc ^ *p++) & 0xFF];
    return crc;
}

#ifdef SPECGEN_CRC32C_X86
__attribute__((target("sse4.2"))) static uint32_t crc32c_by_instruction(uint32_t crc,
                                                                        const unsigned char *p,
                                                                        size_t n) {
#if defined(__x86_64__)
    uint64_t c = crc;
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = _mm_crc32_u64(c, w);
    }
    crc = (uint32_t)c;
#endif
    for (; n >= 4; n -= 4, p += 4) {
        uint32_t w;
        memcpy(&w, p, 4);
        crc = _mm_crc32_u32(crc, w);
    }
    while (n--) crc = _mm_crc32_u8(crc, *p++);
    return crc;
}
#endif

/* CRC-32C of p[0:n]; by_tables forces the tables (the tests compare both ways). */
static uint32_t crc32c_sum(const unsigned char *p, size_t n, int by_tables) {
    if (UNLIKELY(!crc32c_ready)) crc32c_setup();
#ifdef SPECGEN_CRC32C_X86
    if (crc32c_hardware && !by_tables) return ~crc32c_by_instruction(0xFFFFFFFFu, p, n);
#endif
    return ~crc32c_by_tables(0xFFFFFFFFu, p, n);
}

/* crc32c(data, by_tables=False) -> int: the CRC-32C of a buffer, as the batches' CRC is
   checked (the tests compare it with the crc32c package). */
static PyObject *crc32c_function(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 1 || nargs > 2)
        return usage_error("crc32c(data, by_tables=False) takes 1 or 2 arguments");
    int by_tables = nargs == 2 ? PyObject_IsTrue(args[1]) : 0;
    if (by_tables < 0) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    uint32_t sum = crc32c_sum(view.buf, (size_t)view.len, by_tables);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(sum);
}

#endif /* SPECGEN_CRC32C_H */
