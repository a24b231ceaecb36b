/* Base64 text (RFC 4648) as the JSON forms print it: bytes values padded (base64.b64encode),
 * uuids URL-safe without padding (Kafka's Uuid.toString, runtime.json_values.uuid_json). One
 * encoder for the engine's uuid columns and the jsonl printer.
 */
#ifndef SPECGEN_BASE64_H
#define SPECGEN_BASE64_H

#include <stdint.h>

#include <Python.h>

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char B64URL[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* The base64 of p[0:n] at o, in alphabet, '=' padded or not: the end of what it wrote (at most
   (n + 2) / 3 * 4 characters). */
static inline char *base64_text(char *o, const unsigned char *p, Py_ssize_t n,
                                const char *alphabet, int pad) {
    Py_ssize_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t w = ((uint32_t)p[i] << 16) | ((uint32_t)p[i + 1] << 8) | p[i + 2];
        *o++ = alphabet[w >> 18];
        *o++ = alphabet[(w >> 12) & 63];
        *o++ = alphabet[(w >> 6) & 63];
        *o++ = alphabet[w & 63];
    }
    if (n - i == 1) {
        uint32_t w = (uint32_t)p[i] << 16;
        *o++ = alphabet[w >> 18];
        *o++ = alphabet[(w >> 12) & 63];
        if (pad) {
            *o++ = '=';
            *o++ = '=';
        }
    } else if (n - i == 2) {
        uint32_t w = ((uint32_t)p[i] << 16) | ((uint32_t)p[i + 1] << 8);
        *o++ = alphabet[w >> 18];
        *o++ = alphabet[(w >> 12) & 63];
        *o++ = alphabet[(w >> 6) & 63];
        if (pad) *o++ = '=';
    }
    return o;
}

#define UUID_TEXT_SIZE 22 /* a uuid's 16 bytes as URL-safe base64 without padding */

#endif /* SPECGEN_BASE64_H */
