/* record_kinds: the kinds of record of a chunk of a coordinator partition's rows (a key's
 * record type, the big-endian int16 its key starts with, by its value's version, the int16 its
 * value starts with), each with its first row and how many there are, in one pass over the key
 * and value columns: what codegen.forensics.loaded.LoadedPartition counts every record of a
 * partition by. The pure backend reads the same with numpy (codegen.columnar.decode.Rows
 * .int16_at, then numpy.unique): the reference the tests hold this to.
 */

/* A binary column as record_kinds reads it: int32 offsets (rows + 1 of them from the first
   row) into data, and an Arrow validity bitmap whose bit bit_offset + i is row i's (NULL: no
   null). */
typedef struct {
    const int32_t *off;
    const uint8_t *data, *bits;
    Py_ssize_t bit_offset;
} HeadColumn;

/* Row i's first two bytes as a big-endian int16; `null` where the row is null, `short_value`
   where it holds fewer than two bytes. */
static inline int32_t column_head(const HeadColumn *c, Py_ssize_t i, int32_t null,
                                  int32_t short_value) {
    Py_ssize_t bit = c->bit_offset + i;
    if (c->bits && !((c->bits[bit >> 3] >> (bit & 7)) & 1)) return null;
    if (c->off[i + 1] - c->off[i] < 2) return short_value;
    const uint8_t *b = c->data + c->off[i];
    return (int16_t)(uint16_t)(b[0] << 8 | b[1]);
}

/* The column of offsets and data (buffers checked: offsets_valid) and validity (None, or a
   buffer held in *validity_view) at bit_arg, for n rows; 0, or -1 with an exception. */
static int head_column(HeadColumn *c, const Py_buffer *offsets, const Py_buffer *data,
                       PyObject *validity, Py_buffer *validity_view, PyObject *bit_arg,
                       Py_ssize_t n) {
    if (!offsets_valid(offsets, n, data->len)) {
        PyErr_SetString(PyExc_ValueError, "record_kinds: a row's offsets are outside its data");
        return -1;
    }
    c->off = offsets->buf;
    c->data = data->buf;
    c->bits = NULL;
    c->bit_offset = PyLong_AsSsize_t(bit_arg);
    if (c->bit_offset == -1 && PyErr_Occurred()) return -1;
    if (validity == Py_None) return 0;
    if (PyObject_GetBuffer(validity, validity_view, PyBUF_SIMPLE) < 0) return -1;
    if (c->bit_offset < 0 || c->bit_offset > PY_SSIZE_T_MAX - n - 7 ||
        (c->bit_offset + n + 7) / 8 > validity_view->len) {
        PyErr_SetString(PyExc_ValueError, "record_kinds: a validity bitmap is too short");
        return -1;
    }
    c->bits = validity_view->buf;
    return 0;
}

/* One kind's tally: its code ((type + 32768) * 65536 + version + 32768), first row, count. */
typedef struct {
    uint32_t code, used;
    int64_t first, count;
} KindTally;

static int kind_tally_by_code(const void *a, const void *b) {
    uint32_t x = ((const KindTally *)a)->code, y = ((const KindTally *)b)->code;
    return (x > y) - (x < y);
}

static size_t kind_slot(uint32_t code, size_t mask) {
    return (size_t)(((uint64_t)code * 0x9E3779B97F4A7C15ull) >> 32) & mask;
}

/* The slot of `code` in a table of mask + 1 slots, taken if it was free (*count grows). */
static KindTally *kind_tally(KindTally *slots, size_t mask, uint32_t code, size_t *count) {
    for (size_t at = kind_slot(code, mask);; at = (at + 1) & mask) {
        KindTally *t = &slots[at];
        if (!t->used) {
            *t = (KindTally){.code = code, .used = 1, .first = -1};
            ++*count;
            return t;
        }
        if (t->code == code) return t;
    }
}

/* record_kinds(key_offsets, key_data, value_offsets, value_data, rows, key_validity,
   key_bit_offset, value_validity, value_bit_offset) -> [(code, first row, count)]: the kinds of
   the rows where rows (uint8, one a row) is not 0, by code. A row's type is its key's head
   (-1: a null key or one of fewer than two bytes), its version its value's head (-1: a null
   value, -2: one of fewer than two bytes). A chunk holds few kinds: the table starts small and
   a row of the last row's kind finds it without a lookup. */
static PyObject *record_kinds(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (!arity_ok(nargs, 9,
                  "record_kinds(key_offsets, key_data, value_offsets, value_data, rows, "
                  "key_validity, key_bit_offset, value_validity, value_bit_offset)"))
        return NULL;
    BufferSet b = {.count = 0};
    if (buffers_get(&b, args, 5) < 0) return NULL;
    Py_buffer key_validity = {.obj = NULL}, value_validity = {.obj = NULL};
    PyObject *out = NULL;
    KindTally *slots = NULL;
    Py_ssize_t n = b.views[4].len;
    HeadColumn key, value;
    if (head_column(&key, &b.views[0], &b.views[1], args[5], &key_validity, args[6], n) < 0 ||
        head_column(&value, &b.views[2], &b.views[3], args[7], &value_validity, args[8], n) < 0)
        goto done;
    size_t mask = 15, count = 0;
    if (!(slots = PyMem_Calloc(mask + 1, sizeof(KindTally)))) {
        PyErr_NoMemory();
        goto done;
    }
    const uint8_t *row = b.views[4].buf;
    KindTally *last = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!row[i]) continue;
        uint32_t code = (uint32_t)(column_head(&key, i, -1, -1) + 32768) * 65536u +
                        (uint32_t)(column_head(&value, i, -1, -2) + 32768);
        if (!last || last->code != code) {
            if (count * 2 >= mask) { /* at most half full: grow */
                size_t size = (mask + 1) * 2;
                KindTally *grown = PyMem_Calloc(size, sizeof(KindTally));
                if (!grown) {
                    PyErr_NoMemory();
                    goto done;
                }
                for (size_t s = 0; s <= mask; s++)
                    if (slots[s].used) {
                        size_t c = 0;
                        *kind_tally(grown, size - 1, slots[s].code, &c) = slots[s];
                    }
                PyMem_Free(slots);
                slots = grown;
                mask = size - 1;
            }
            last = kind_tally(slots, mask, code, &count);
            if (last->first < 0) last->first = i;
        }
        last->count++;
    }
    size_t at = 0; /* the used slots to the front, by code */
    for (size_t s = 0; s <= mask; s++)
        if (slots[s].used) slots[at++] = slots[s];
    qsort(slots, count, sizeof(KindTally), kind_tally_by_code);
    if (!(out = PyList_New((Py_ssize_t)count))) goto done;
    for (size_t k = 0; k < count; k++) {
        PyObject *item = Py_BuildValue("(kLL)", (unsigned long)slots[k].code,
                                       (long long)slots[k].first, (long long)slots[k].count);
        if (!item) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, (Py_ssize_t)k, item);
    }
done:
    PyMem_Free(slots);
    if (key_validity.obj) PyBuffer_Release(&key_validity);
    if (value_validity.obj) PyBuffer_Release(&value_validity);
    buffers_release(&b);
    return out;
}
