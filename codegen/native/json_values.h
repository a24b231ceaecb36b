/* The JSON text of values, into a growing output buffer (Buf): integers, strings escaped as
 * orjson escapes them, bytes as base64, uuids as Kafka prints them. A value this printer
 * cannot print exactly is NOT_HERE: its record goes to the reference. Part of the _jsontext
 * module (jsontext.c).
 */
#ifndef SPECGEN_JSON_VALUES_H
#define SPECGEN_JSON_VALUES_H

#include "base64.h"

/* --------------------------------------------------------------------------- output buffer */

typedef struct {
    char *p;
    Py_ssize_t len, cap;
    PyObject *owner; /* a bytes object p points into (the batch's result), or NULL: PyMem */
    PyObject *sink;  /* a callable given the text when the buffer fills (buf_drain), or NULL */
} Buf;

/* b's text given to b->sink (the output's write, called with a memoryview of what is left,
   released after; an int it returns below that is a short write: the rest given again, None
   is all), b emptied: a printer whose output is megabytes reuses one buffer that stays in
   cache, where text written whole went to fresh memory, and out of cache, as it grew. */
static int buf_drain(Buf *b) {
    Py_ssize_t at = 0;
    while (at < b->len) {
        PyObject *view = PyMemoryView_FromMemory(b->p + at, b->len - at, PyBUF_READ);
        if (!view) return -1;
        PyObject *written = PyObject_CallOneArg(b->sink, view);
        /* the view released even after an error: nothing reads the buffer once it is reused */
        PyObject *type, *value, *trace;
        PyErr_Fetch(&type, &value, &trace);
        PyObject *released = PyObject_CallMethod(view, "release", NULL);
        Py_DECREF(view);
        if (type) {
            Py_XDECREF(released);
            PyErr_Restore(type, value, trace);
        }
        if (!written || !released) {
            Py_XDECREF(written);
            return -1;
        }
        Py_DECREF(released);
        Py_ssize_t n = b->len - at;
        if (written != Py_None) {
            n = PyLong_AsSsize_t(written);
            if (n == -1 && PyErr_Occurred()) {
                Py_DECREF(written);
                return -1;
            }
        }
        Py_DECREF(written);
        if (n <= 0 || n > b->len - at) {
            PyErr_Format(PyExc_OSError, "write took %zd of %zd bytes", n, b->len - at);
            return -1;
        }
        at += n;
    }
    b->len = 0;
    return 0;
}

/* Text s (n bytes, held by the caller) given to b->sink after b's own: copied into b where it
   fits, once drained if it must be, else given as it is (a line of megabytes neither copied
   nor growing b for the rest of the output). */
static int buf_put_through(Buf *b, const char *s, Py_ssize_t n) {
    if (b->cap - b->len < n && buf_drain(b) < 0) return -1;
    if (b->cap - b->len >= n) {
        memcpy(b->p + b->len, s, (size_t)n);
        b->len += n;
        return 0;
    }
    Buf whole = {(char *)s, n, n, NULL, b->sink};
    return buf_drain(&whole);
}

static int buf_grow(Buf *b, Py_ssize_t more) {
    if (b->sink) { /* its text written out first: grown only for more than it holds */
        if (buf_drain(b) < 0) return -1;
        if (b->cap - b->len >= more) return 0;
    }
    Py_ssize_t cap = b->cap ? b->cap : 1 << 16;
    while (cap - b->len < more) {
        if (cap > PY_SSIZE_T_MAX / 2) {
            PyErr_NoMemory();
            return -1;
        }
        cap *= 2;
    }
    if (b->owner) {
        if (_PyBytes_Resize(&b->owner, cap) < 0) { /* owner released and NULL */
            b->p = NULL;
            b->len = b->cap = 0;
            return -1;
        }
        b->p = PyBytes_AS_STRING(b->owner);
        b->cap = cap;
        return 0;
    }
    char *p = PyMem_Realloc(b->p, (size_t)cap);
    if (!p) {
        PyErr_NoMemory();
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

static inline int buf_reserve(Buf *b, Py_ssize_t more) {
    return LIKELY(b->cap - b->len >= more) ? 0 : buf_grow(b, more);
}

static inline int buf_put(Buf *b, const char *s, Py_ssize_t n) {
    if (buf_reserve(b, n) < 0) return -1;
    memcpy(b->p + b->len, s, (size_t)n);
    b->len += n;
    return 0;
}

#define PUT_LITERAL(b, s) buf_put((b), (s), (Py_ssize_t)(sizeof(s) - 1))

static const char DIGIT_PAIRS[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* A decimal integer, two digits per step (offsets and timestamps have 13 to 19). */
static int buf_int64(Buf *b, long long v) {
    char tmp[24];
    char *end = tmp + sizeof tmp, *o = end;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    while (u >= 100) {
        unsigned d = (unsigned)(u % 100) * 2;
        u /= 100;
        *--o = DIGIT_PAIRS[d + 1];
        *--o = DIGIT_PAIRS[d];
    }
    if (u >= 10) {
        *--o = DIGIT_PAIRS[u * 2 + 1];
        *--o = DIGIT_PAIRS[u * 2];
    } else {
        *--o = (char)('0' + u);
    }
    if (v < 0) *--o = '-';
    return buf_put(b, o, end - o);
}

/* --------------------------------------------------------------------------- values */

/* Results of printing one value: done, or the record must go to the reference (-2), or a
   real error (-1, with an exception set). */
#define NOT_HERE (-2)

static int put_int(Buf *b, PyObject *v) {
    if (!PyLong_CheckExact(v)) return NOT_HERE;
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow) return NOT_HERE; /* past 64 bits: the reference's encoder */
    if (x == -1 && PyErr_Occurred()) return -1;
    return buf_int64(b, x);
}

static const char HEX[] = "0123456789abcdef";

/* Whether one of the eight bytes of w needs an escape: one below 0x20, '"' or '\\'. Each
   test is exact for "any byte" (a borrow marks only bytes above one that matched). */
static HOT_INLINE int escape_in_word(uint64_t w) {
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    const uint64_t quote = w ^ (ones * '"'), backslash = w ^ (ones * '\\');
    return ((((w - ones * 0x20) & ~w) | ((quote - ones) & ~quote) |
             ((backslash - ones) & ~backslash)) &
            highs) != 0;
}

/* The byte c at o as escaped_text writes it; returns the end. */
static HOT_INLINE char *escaped_byte(char *o, unsigned char c) {
    if (LIKELY(c >= 0x20 && c != '"' && c != '\\')) {
        *o++ = (char)c;
        return o;
    }
    *o++ = '\\';
    switch (c) {
    case '"': *o++ = '"'; break;
    case '\\': *o++ = '\\'; break;
    case '\b': *o++ = 'b'; break;
    case '\t': *o++ = 't'; break;
    case '\n': *o++ = 'n'; break;
    case '\f': *o++ = 'f'; break;
    case '\r': *o++ = 'r'; break;
    default:
        *o++ = 'u';
        *o++ = '0';
        *o++ = '0';
        *o++ = HEX[c >> 4];
        *o++ = HEX[c & 15];
    }
    return o;
}

/* s[0:n] as a JSON string at o, as orjson writes it: '"' and '\\' escaped, the control
   characters below 0x20 as \b \t \n \f \r or \u00xx, everything else (non-ASCII too) as its
   UTF-8 bytes; at most 6 * n + 2 bytes. Returns the end. Eight bytes are copied at once where
   none needs an escape (a byte at a time took some eight instructions: a reason, a topic),
   the eight of a word with one escaped byte by byte. */
static char *escaped_text(char *o, const char *s, Py_ssize_t n) {
    *o++ = '"';
    Py_ssize_t i = 0;
    while (i < n) {
        Py_ssize_t stop = n; /* the bytes written one by one: the rest, under eight */
        if (n - i >= 8) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!escape_in_word(w)) {
                memcpy(o, &w, 8);
                o += 8;
                i += 8;
                continue;
            }
            stop = i + 8;
        }
        for (; i < stop; i++) o = escaped_byte(o, (unsigned char)s[i]);
    }
    *o++ = '"';
    return o;
}

/* A JSON string as orjson writes it (escaped_text). */
static int put_text(Buf *b, const char *s, Py_ssize_t n) {
    if (n > (PY_SSIZE_T_MAX - 2) / 6) {
        PyErr_NoMemory();
        return -1;
    }
    if (buf_reserve(b, 6 * n + 2) < 0) return -1;
    b->len = escaped_text(b->p + b->len, s, n) - b->p;
    return 0;
}

static int put_string(Buf *b, PyObject *v) {
    if (!PyUnicode_CheckExact(v)) return NOT_HERE;
    Py_ssize_t n;
    const char *s;
    if (PyUnicode_IS_COMPACT_ASCII(v)) {
        s = (const char *)PyUnicode_DATA(v);
        n = PyUnicode_GET_LENGTH(v);
    } else {
        s = PyUnicode_AsUTF8AndSize(v, &n);
        if (!s) {
            /* A lone surrogate: the reference's encoder says how it is printed. */
            if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) return -1;
            PyErr_Clear();
            return NOT_HERE;
        }
    }
    return put_text(b, s, n);
}

/* Base64 of p[0:n] in quotes: padded (bytes, base64.b64encode) or not (uuids, Kafka's
   Uuid.toString: url-safe, '=' stripped). */
static int put_base64(Buf *b, const unsigned char *p, Py_ssize_t n, const char *alphabet,
                      int pad) {
    if (n > (PY_SSIZE_T_MAX - 8) / 4 * 3) {
        PyErr_NoMemory();
        return -1;
    }
    if (buf_reserve(b, (n + 2) / 3 * 4 + 2) < 0) return -1;
    char *o = b->p + b->len;
    *o++ = '"';
    o = base64_text(o, p, n, alphabet, pad);
    *o++ = '"';
    b->len = o - b->p;
    return 0;
}

/* uuid.UUID, whose value is its `int` slot: read in C, not through its Python properties. */
static PyTypeObject *UuidType;
static PyObject *S_int;

/* The int of an exact uuid.UUID (new reference), or NULL: not one (no error) or an error. */
static PyObject *uuid_int(PyObject *v) {
    if (Py_TYPE(v) != UuidType) return NULL;
    PyObject *i = PyObject_GetAttr(v, S_int);
    if (!i && PyErr_ExceptionMatches(PyExc_AttributeError)) PyErr_Clear();
    if (i && !PyLong_CheckExact(i)) Py_CLEAR(i);
    return i;
}

/* An exact uuid.UUID's 16 bytes (UUID.bytes: its int big-endian), printed: 0, NOT_HERE (an
   int outside 0..2**128-1, where UUID.bytes raises) or -1. */
static int put_uuid_int(Buf *b, PyObject *i) {
    unsigned char raw[16];
#if PY_VERSION_HEX >= 0x030D0000
    Py_ssize_t need = PyLong_AsNativeBytes(
        i, raw, 16,
        Py_ASNATIVEBYTES_BIG_ENDIAN | Py_ASNATIVEBYTES_UNSIGNED_BUFFER |
            Py_ASNATIVEBYTES_REJECT_NEGATIVE);
    if (need < 0) {
        if (!PyErr_ExceptionMatches(PyExc_ValueError)) return -1;
        PyErr_Clear();
        return NOT_HERE;
    }
    if (need > 16) return NOT_HERE;
#else
    if (_PyLong_AsByteArray((PyLongObject *)i, raw, 16, 0, 0) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return -1;
        PyErr_Clear();
        return NOT_HERE;
    }
#endif
    return put_base64(b, raw, 16, B64URL, 0);
}

static int put_uuid(Buf *b, PyObject *v) {
    PyObject *i = uuid_int(v);
    if (i) {
        int rc = put_uuid_int(b, i);
        Py_DECREF(i);
        return rc;
    }
    if (PyErr_Occurred()) return -1;
    PyObject *raw = PyObject_GetAttr(v, S_bytes);
    if (!raw) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
        PyErr_Clear();
        return NOT_HERE;
    }
    int rc = NOT_HERE;
    if (PyBytes_CheckExact(raw) && PyBytes_GET_SIZE(raw) == 16)
        rc = put_base64(b, (const unsigned char *)PyBytes_AS_STRING(raw), 16, B64URL, 0);
    Py_DECREF(raw);
    return rc;
}

#endif /* SPECGEN_JSON_VALUES_H */
