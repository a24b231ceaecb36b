/* The newest time of many segment files' batches with records, in one call (newest_batches):
 * what codegen.forensics.lag.newest_batches and codegen.dumps.views.cut.newest_batch_time give
 * of a segment's batch rows, without the rows. Each file's chain of v2 batch headers is walked
 * as header_at takes it (log_entries.h: the same checks and stops) without checksums, keeping
 * only the newest maxTimestamp of the batches with records and where the batches of that time
 * lie; then those are checked with their CRC, as the reference reads them again. The files'
 * chains are walked in turn, a header of each, the next header of each asked for ahead
 * (prefetched): one header per 1 KB or so is a cache miss, and the misses of the files overlap.
 * A mapped file's pages behind the walk are given back as it goes (NEWEST_WALK_HELD), those
 * ahead of it mapped and read ahead (NEWEST_WALK_AHEAD).
 *
 * Why every page of a file is read, measured on the 16 M-record dump: the newest time is the
 * largest maxTimestamp of any whole batch with records, in no order along the file, and a
 * header gives only the next one's place; a __consumer_offsets partition's 60.8 MB segment
 * holds 49,069 batches of 78-3,018 bytes (1,240 on average), so every 4 KiB page holds a
 * header and there is no page to skip. The 15 files the lag walks (1 GB): mapped
 * (MADV_POPULATE_READ) and given back, 0.06 s of system time; read into a reused buffer
 * (pread, 32 KB to 1 MB at a time), 0.17-0.19 s. What the walk costs over the pages' mapping
 * (lag with data partitions, 16 M, perf samples of 0.5 ms over the floor): this function 58
 * and header_at 23, the kernel's next_uptodate_folio +77-93 and unmap_page_range +49-56 (the
 * files are mapped again as they are read: kept mapped from the walk on, the process would
 * hold the 1 GB of pages).
 * Part of the _records module (records.c).
 */
#ifndef SPECGEN_NEWEST_BATCHES_H
#define SPECGEN_NEWEST_BATCHES_H

#include "batch_columns.h"
#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#endif

/* The most bytes of a mapped file (an mmap.mmap) the walk holds mapped in the process's memory
   behind its header: past them the pages walked are given back (MADV_DONTNEED: the file's pages
   stay in the page cache; a page read again is mapped again), so the walk holds few bytes of
   each file and many files can be walked in one call, their headers' cache misses overlapping
   (one or two files a call, as a byte budget over whole files allowed, waited on each miss).
   codegen.dumps.header_ends reads it as NEWEST_WALK_HELD. */
#define NEWEST_WALK_HELD ((int64_t)2 << 20)

/* The bytes of a mapped file ahead of the walk's header that it maps in one call
   (MADV_POPULATE_READ, not a fault each 16 pages) and reads a byte a page of, out of
   NEWEST_WALK_HELD: those loads do not wait on one another, so the pages' address
   translations overlap, where each load of the header chain waits on the one before. At 16 M
   (15 files walked, 5 walks): the walk's own perf samples 454-487 -> 311-380, the process's
   2462-2683 -> 2314-2498. */
#define NEWEST_WALK_AHEAD ((int64_t)256 << 10)

/* One file's walk. */
typedef struct {
    Segment seg;
    int held;       /* seg is held (released at the end) */
    int64_t pos;    /* the next header */
    int walking;    /* pos is still to read */
    int whole;      /* every entry read (pos reached the end) */
    int found;      /* a batch with records was read */
    int64_t newest; /* the newest maxTimestamp of the batches with records */
    Column at;      /* the positions of the batches of time newest (int64) */
    uintptr_t kept; /* a mapped file: its pages from this address on are still mapped; else 0 */
    int64_t ahead;  /* a mapped file: its pages before this position were read ahead */
} NewestWalk;

#if defined(__linux__) && defined(MADV_DONTNEED)
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14 on; older headers */
#endif
/* Where w's pages are kept from, when its buffer is a read-only mmap.mmap's own (mmap_type's
   exactly, not a subclass or a view: memory the walk may give back; read-only: a copy-on-write
   map's pages written to would be lost, read again from the file), 0 otherwise: the first page
   boundary of the buffer. */
static uintptr_t walk_kept(PyObject *data, PyObject *mmap_type, const Py_buffer *buf) {
    if (!mmap_type || (PyObject *)Py_TYPE(data) != mmap_type || !buf->readonly) return 0;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    return ((uintptr_t)buf->buf + page - 1) & ~(page - 1);
}

/* The whole pages of w's mapped file before its header at w->pos given back once more than
   NEWEST_WALK_HELD bytes, those read ahead counted, are held (advice: a failure only holds
   them longer). */
static void walk_release(NewestWalk *w) {
    const uintptr_t at = (uintptr_t)w->seg.buf.buf + (uintptr_t)w->pos;
    if (!w->kept || at - w->kept <= (uintptr_t)(NEWEST_WALK_HELD - NEWEST_WALK_AHEAD)) return;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), to = at & ~(page - 1);
    (void)madvise((void *)w->kept, to - w->kept, MADV_DONTNEED);
    w->kept = to;
}

/* The pages of w's mapped file up to NEWEST_WALK_AHEAD bytes past its header mapped and read,
   a byte a page, once the header is within a quarter of that of where they were read to. */
static void walk_ahead(NewestWalk *w) {
    const int64_t n = w->seg.buf.len;
    if (!w->kept || w->pos + NEWEST_WALK_AHEAD / 4 <= w->ahead || w->pos >= n) return;
    const volatile unsigned char *d = w->seg.buf.buf; /* loads the compiler keeps */
    const int64_t page = (int64_t)sysconf(_SC_PAGESIZE);
    const int64_t from = w->ahead > w->pos ? w->ahead : w->pos; /* none behind: given back */
    const int64_t to = n - from > NEWEST_WALK_AHEAD ? from + NEWEST_WALK_AHEAD : n;
    const uintptr_t first = ((uintptr_t)d + (uintptr_t)from) & ~(uintptr_t)(page - 1);
    const uintptr_t last = ((uintptr_t)d + (uintptr_t)to) & ~(uintptr_t)(page - 1);
    /* advice: refused (before Linux 5.14), the loads below fault the pages in */
    if (last > first) (void)madvise((void *)first, last - first, MADV_POPULATE_READ);
    for (int64_t at = from; at < to; at += page) (void)d[at];
    w->ahead = to;
}
#else
static uintptr_t walk_kept(PyObject *data, PyObject *mmap_type, const Py_buffer *buf) {
    (void)data, (void)mmap_type, (void)buf;
    return 0;
}
static void walk_release(NewestWalk *w) { (void)w; }
static void walk_ahead(NewestWalk *w) { (void)w; }
#endif

/* One step of walk w: the header at w->pos as header_at takes it (checks hp, no CRC), noted if
   it has records. 0, or -1 with an error. Ends the walk at the end of the buffer or at an entry
   the reference must read. */
static int newest_step(NewestWalk *w, const HeaderPass *hp, Parsed **recs, Py_ssize_t *cap) {
    const unsigned char *d = w->seg.buf.buf;
    const Py_ssize_t n = w->seg.buf.len;
    if (w->pos >= n) {
        w->walking = 0;
        w->whole = 1;
        return 0;
    }
    HeaderRead h;
    const int taken = header_at(&w->seg, w->pos, hp, recs, cap, &h);
    if (taken < 0) return -1;
    if (taken == 0) {
        w->walking = 0;
        return 0;
    }
    if (h.count > 0) {
        const int64_t t = be64(d + w->pos + 35);
        if (!w->found || t > w->newest) {
            w->found = 1;
            w->newest = t;
            w->at.len = 0;
        }
        if (t == w->newest) {
            if (column_room(&w->at, 1) < 0) return -1;
            COLUMN_PUT(&w->at, int64_t, w->pos);
        }
    }
    w->pos += h.total;
    walk_release(w);
    walk_ahead(w);
    if (w->pos < n) { /* the next header: its size (byte 8) and its count (byte 57 on) */
        __builtin_prefetch(d + w->pos);
        __builtin_prefetch(d + w->pos + 60);
    }
    return 0;
}

/* The time a walked file gives: -1 without a batch with records or when the newest time is
   below 0 (as the reference: no newest batches then), else the newest time when one of its
   batches passes header_at with its CRC checked (hp_checked); *whole receives 0 when none does
   (the reference then tries the next newest time) or when the walk stopped before the end. */
static int newest_of(NewestWalk *w, const HeaderPass *hp_checked, Parsed **recs,
                     Py_ssize_t *cap, int64_t *newest, int64_t *whole) {
    *newest = -1;
    *whole = w->whole;
    if (!w->whole || !w->found || w->newest < 0) return 0;
    for (Py_ssize_t i = 0; i < w->at.len; i++) {
        HeaderRead h;
        const int taken =
            header_at(&w->seg, ((const int64_t *)w->at.data)[i], hp_checked, recs, cap, &h);
        if (taken < 0) return -1;
        if (taken > 0) {
            *newest = w->newest;
            return 0;
        }
    }
    *whole = 0;
    return 0;
}

/* The type mmap.mmap (a new reference), NULL with no error set where the module or the
   type is missing (no buffer is then given back), NULL with an error. */
static PyObject *mmap_type_of(void) {
    PyObject *module = PyImport_ImportModule("mmap");
    if (!module) {
        if (!PyErr_ExceptionMatches(PyExc_ImportError)) return NULL;
        PyErr_Clear();
        return NULL;
    }
    PyObject *type = PyObject_GetAttrString(module, "mmap");
    Py_DECREF(module);
    if (!type || !PyType_Check(type)) {
        PyErr_Clear();
        Py_XDECREF(type);
        return NULL;
    }
    return type;
}

/* newest_batches(buffers, verify_crc, max_size, max_records, expansion) -> (newest, whole): per
   buffer, the newest maxTimestamp of its v2 batches with records (-1 without one, or when it is
   below 0), and whether that is what the reference gives (1), or the caller must read the buffer
   with the reference (0: the walk stopped before its end, at an entry header_at leaves to the
   reference, or no batch of the newest time is whole). Two bytes objects of native-endian int64
   arrays. The walk reads without checksums; verify_crc says whether the newest batches' are
   checked (the reference's re-read: yes). An mmap.mmap's pages the walk has passed are given
   back (NEWEST_WALK_HELD); its bytes read the same. */
static PyObject *newest_batches(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (!arity_ok(nargs, 5,
                  "newest_batches(buffers, verify_crc, max_size, max_records, expansion) "
                  "takes 5 arguments"))
        return NULL;
    HeaderPass checked = {0};
    if (header_checks(&checked, args + 1, "newest_batches") < 0) return NULL;
    HeaderPass walk = checked;
    walk.verify_crc = 0;
    PyObject *buffers = PySequence_Fast(args[0], "newest_batches: buffers must be a sequence");
    if (!buffers) return NULL;
    const Py_ssize_t files = PySequence_Fast_GET_SIZE(buffers);
    PyObject *out = NULL, *newest_bytes = NULL, *whole_bytes = NULL;
    Parsed *recs = NULL;
    Py_ssize_t cap = 0;
    NewestWalk *walks = NULL;
    PyObject *mmap_type = mmap_type_of();
    if (!mmap_type && PyErr_Occurred()) goto done;
    if ((size_t)files > PY_SSIZE_T_MAX / sizeof(NewestWalk)) {
        PyErr_NoMemory();
        goto done;
    }
    walks = PyMem_Calloc(files ? (size_t)files : 1, sizeof(NewestWalk));
    newest_bytes = PyBytes_FromStringAndSize(NULL, files * 8);
    whole_bytes = PyBytes_FromStringAndSize(NULL, files * 8);
    if (!walks) PyErr_NoMemory();
    if (!walks || !newest_bytes || !whole_bytes) goto done;
    Py_ssize_t walking = 0;
    for (Py_ssize_t f = 0; f < files; f++) {
        NewestWalk *w = &walks[f];
        w->at.width = 8;
        PyObject *data = PySequence_Fast_GET_ITEM(buffers, f);
        if (segment_hold(&w->seg, data, 0, "newest_batches") < 0) goto done;
        w->held = 1;
        w->kept = walk_kept(data, mmap_type, &w->seg.buf);
        w->walking = 1;
        walking++;
    }
    while (walking) { /* a header of each file in turn */
        for (Py_ssize_t f = 0; f < files; f++) {
            NewestWalk *w = &walks[f];
            if (!w->walking) continue;
            if (newest_step(w, &walk, &recs, &cap) < 0) goto done;
            walking -= !w->walking;
        }
    }
    int64_t *newest = (int64_t *)PyBytes_AS_STRING(newest_bytes);
    int64_t *whole = (int64_t *)PyBytes_AS_STRING(whole_bytes);
    for (Py_ssize_t f = 0; f < files; f++)
        if (newest_of(&walks[f], &checked, &recs, &cap, &newest[f], &whole[f]) < 0) goto done;
    out = PyTuple_Pack(2, newest_bytes, whole_bytes);
done:
    if (walks) {
        for (Py_ssize_t f = 0; f < files; f++) {
            if (walks[f].held) segment_release(&walks[f].seg);
            PyMem_Free(walks[f].at.data);
        }
        PyMem_Free(walks);
    }
    Py_XDECREF(newest_bytes);
    Py_XDECREF(whole_bytes);
    Py_XDECREF(mmap_type);
    PyMem_Free(recs);
    Py_DECREF(buffers);
    return out;
}

#endif /* SPECGEN_NEWEST_BATCHES_H */
