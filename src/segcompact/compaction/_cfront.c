/*
 * The compiled twin of segcompact.compaction.front.PyFront: per key, the stack of records that
 * can still win (see front.py for why that is exact under any log start).
 *
 * An open-addressing hash table of keys (copied into one arena), each slot with its stack of
 * (r1, r2, offset, id) entries: the first inline (the common case: one entry), the rest in a
 * growable array. A record pops entries from the top of its key's stack while they rank no
 * higher than it ((r1, r2) <= its own: it is later, so the offset breaks a tie its way), then
 * joins. Stacks hold entries in offset order with strictly falling ranks. Every record added
 * gets the next id; a popped entry's id is marked dead, so whether a record is still on a front
 * is one byte away, without its key.
 *
 * Buffers are checked before use: lengths against the record count, each key's offsets against
 * the key data. A record that is not a candidate is skipped without reading its key.
 */
#define PY_SSIZE_T_CLEAN
/* The stable ABI of CPython 3.11+, as _crecords.c. */
#define Py_LIMITED_API 0x030B0000
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int64_t r1, r2, offset, id;
} Entry;

typedef struct {
    uint64_t hash; /* 0: an empty slot */
    size_t key;    /* where the key starts in the arena */
    uint32_t key_len;
    uint32_t count; /* entries on the stack */
    uint32_t cap;   /* room in `more` */
    Entry first;
    Entry *more; /* entries 1 .. count - 1 */
} Slot;

typedef struct {
    PyObject_HEAD
    Slot *slots;
    size_t mask; /* capacity - 1 (a power of two), or 0 before the first key */
    size_t keys;
    char *arena;
    size_t arena_len, arena_cap;
    size_t live;       /* entries on all stacks */
    int64_t last;      /* the last offset added (records come in offset order) */
    char *dead;        /* per id: popped from its front */
    size_t ids, dead_cap;
    size_t more_bytes; /* bytes of the `more` arrays */
} CFront;

static inline uint64_t
mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static uint64_t
hash_key(const unsigned char *p, size_t n)
{
    uint64_t h = mix64((uint64_t)n * 0x9e3779b97f4a7c15ULL);
    uint64_t k;
    while (n >= 8) {
        memcpy(&k, p, 8);
        h = mix64(h ^ k) * 0x9e3779b97f4a7c15ULL;
        p += 8;
        n -= 8;
    }
    k = 0;
    memcpy(&k, p, n);
    h = mix64(h ^ k ^ ((uint64_t)n << 59));
    return h ? h : 1;
}

/* How many records ahead front_add asks for a key's slot. */
#define PREFETCH_AHEAD 16

static inline Entry *
entry_at(Slot *s, uint32_t i)
{
    return i == 0 ? &s->first : &s->more[i - 1];
}

/* The slot of a key: its own, or the empty one where it would go. */
static Slot *
find(CFront *self, const char *key, uint32_t len, uint64_t hash)
{
    size_t i = hash & self->mask;
    for (;;) {
        Slot *s = &self->slots[i];
        if (s->hash == 0)
            return s;
        if (s->hash == hash && s->key_len == len && memcmp(self->arena + s->key, key, len) == 0)
            return s;
        i = (i + 1) & self->mask;
    }
}

static int
grow_table(CFront *self)
{
    size_t cap = self->slots ? (self->mask + 1) * 2 : 1024;
    Slot *old = self->slots, *slots = calloc(cap, sizeof(Slot));
    size_t old_cap = old ? self->mask + 1 : 0, i;
    if (slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    self->slots = slots;
    self->mask = cap - 1;
    for (i = 0; i < old_cap; i++) {
        if (old[i].hash != 0) {
            size_t j = old[i].hash & self->mask;
            while (slots[j].hash != 0)
                j = (j + 1) & self->mask;
            slots[j] = old[i];
        }
    }
    free(old);
    return 0;
}

static int
store_key(CFront *self, Slot *s, const char *key, uint32_t len, uint64_t hash)
{
    if (self->arena_len + len > self->arena_cap) {
        size_t cap = self->arena_cap ? self->arena_cap : 4096;
        char *arena;
        while (cap < self->arena_len + len)
            cap *= 2;
        arena = realloc(self->arena, cap);
        if (arena == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        self->arena = arena;
        self->arena_cap = cap;
    }
    memcpy(self->arena + self->arena_len, key, len);
    s->hash = hash;
    s->key = self->arena_len;
    s->key_len = len;
    self->arena_len += len;
    self->keys++;
    return 0;
}

/* Push `e`, popping what it outranks: a popped entry's id is dead, and if it is one of this
 * call's records (ids from `base`), its flag in `alive` is cleared. */
static int
push(CFront *self, Slot *s, Entry e, int64_t base, char *alive)
{
    while (s->count > 0) {
        Entry *top = entry_at(s, s->count - 1);
        if (top->r1 > e.r1 || (top->r1 == e.r1 && top->r2 > e.r2))
            break;
        self->dead[top->id] = 1;
        if (top->id >= base)
            alive[top->id - base] = 0;
        s->count--;
        self->live--;
    }
    if (s->count > s->cap) { /* room for entry `count` in more[count - 1] */
        uint32_t cap = s->cap ? s->cap * 2 : 2;
        Entry *more = realloc(s->more, (size_t)cap * sizeof(Entry));
        if (more == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        self->more_bytes += (size_t)(cap - s->cap) * sizeof(Entry);
        s->more = more;
        s->cap = cap;
    }
    *entry_at(s, s->count) = e;
    s->count++;
    self->live++;
    return 0;
}

/* The i-th key of Arrow-style int32 offsets, checked against the data. */
static int
key_of(const Py_buffer *offsets, const Py_buffer *data, Py_ssize_t i, const char **key,
       uint32_t *len)
{
    int32_t start, end;
    memcpy(&start, (const char *)offsets->buf + 4 * i, 4);
    memcpy(&end, (const char *)offsets->buf + 4 * (i + 1), 4);
    if (start < 0 || end < start || end > data->len) {
        PyErr_Format(PyExc_ValueError, "key %zd: offsets %d..%d outside %zd bytes of keys", i,
                     (int)start, (int)end, data->len);
        return -1;
    }
    *key = (const char *)data->buf + start;
    *len = (uint32_t)(end - start);
    return 0;
}

static int
check_lengths(Py_ssize_t n, const Py_buffer *key_offsets, const Py_buffer *candidate,
              const Py_buffer *const *longs, int nlongs)
{
    int k;
    if (key_offsets->len != 4 * (n + 1) || candidate->len != n) {
        PyErr_Format(PyExc_ValueError,
                     "%zd records need %zd bytes of key offsets and %zd of candidate flags, "
                     "not %zd and %zd",
                     n, 4 * (n + 1), n, key_offsets->len, candidate->len);
        return -1;
    }
    for (k = 0; k < nlongs; k++) {
        if (longs[k]->len != 8 * n) {
            PyErr_Format(PyExc_ValueError, "%zd records need %zd bytes of each int64 column, not %zd",
                         n, 8 * n, longs[k]->len);
            return -1;
        }
    }
    return 0;
}

static PyObject *
front_add(CFront *self, PyObject *args)
{
    Py_buffer ko, kd, r1, r2, off, cand;
    const Py_buffer *longs[3] = {&r1, &r2, &off};
    PyObject *result = NULL;
    Py_ssize_t n, i;
    int64_t previous = INT64_MIN, base = (int64_t)self->ids;
    char *alive;
    uint64_t *hashes = NULL;

    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*:add", &ko, &kd, &r1, &r2, &off, &cand))
        return NULL;
    n = off.len / 8;
    if (check_lengths(n, &ko, &cand, longs, 3) < 0)
        goto done;
    for (i = 0; i < n; i++) {
        int64_t offset;
        memcpy(&offset, (const char *)off.buf + 8 * i, 8);
        if (offset <= previous || offset <= self->last) {
            PyErr_Format(PyExc_ValueError, "record %zd: offset %lld is not after the one before",
                         i, (long long)offset);
            goto done;
        }
        previous = offset;
    }
    if (self->ids + (size_t)n > self->dead_cap) {
        size_t cap = self->dead_cap ? self->dead_cap : 65536;
        char *dead;
        while (cap < self->ids + (size_t)n)
            cap *= 2;
        dead = realloc(self->dead, cap);
        if (dead == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        self->dead = dead;
        self->dead_cap = cap;
    }
    memset(self->dead + self->ids, 0, (size_t)n);
    result = PyBytes_FromStringAndSize(NULL, n);
    if (result == NULL)
        goto done;
    alive = PyBytes_AsString(result);
    memcpy(alive, cand.buf, (size_t)n);
    /* Keys are checked and hashed first, so that the loop below can ask for the slot of a key
     * a few records ahead: the table is larger than the caches, and waiting for each slot in
     * turn was most of the time. */
    hashes = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(uint64_t));
    if (hashes == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (i = 0; i < n; i++) {
        const char *key;
        uint32_t len;
        hashes[i] = 0;
        if (!((const unsigned char *)cand.buf)[i])
            continue;
        if (key_of(&ko, &kd, i, &key, &len) < 0)
            goto fail;
        hashes[i] = hash_key((const unsigned char *)key, len);
    }
    for (i = 0; i < n; i++) {
        const char *key;
        uint32_t len;
        uint64_t hash = hashes[i];
        Slot *s;
        Entry e;
        if (self->slots != NULL) {
            /* The slot of a key far ahead; then, its slot likely here by now, the stored key
             * of one nearer (compared by find). Only hints: nothing is read that may not be. */
            if (i + PREFETCH_AHEAD < n && hashes[i + PREFETCH_AHEAD] != 0)
                __builtin_prefetch(&self->slots[hashes[i + PREFETCH_AHEAD] & self->mask]);
            if (i + PREFETCH_AHEAD / 2 < n && hashes[i + PREFETCH_AHEAD / 2] != 0) {
                const Slot *ahead = &self->slots[hashes[i + PREFETCH_AHEAD / 2] & self->mask];
                if (ahead->hash == hashes[i + PREFETCH_AHEAD / 2])
                    __builtin_prefetch(self->arena + ahead->key);
            }
        }
        if (hash == 0)
            continue; /* not a candidate */
        key_of(&ko, &kd, i, &key, &len); /* checked above */
        if ((self->keys + 1) * 4 > (self->mask + 1) * 3 && grow_table(self) < 0)
            goto fail;
        s = find(self, key, len, hash);
        if (s->hash == 0 && store_key(self, s, key, len, hash) < 0)
            goto fail;
        memcpy(&e.r1, (const char *)r1.buf + 8 * i, 8);
        memcpy(&e.r2, (const char *)r2.buf + 8 * i, 8);
        memcpy(&e.offset, (const char *)off.buf + 8 * i, 8);
        e.id = base + i;
        if (push(self, s, e, base, alive) < 0)
            goto fail;
    }
    if (n > 0)
        self->last = previous;
    self->ids += (size_t)n;
    goto done;
fail:
    Py_CLEAR(result);
done:
    PyMem_Free(hashes);
    PyBuffer_Release(&ko);
    PyBuffer_Release(&kd);
    PyBuffer_Release(&r1);
    PyBuffer_Release(&r2);
    PyBuffer_Release(&off);
    PyBuffer_Release(&cand);
    return result;
}

static PyObject *
front_alive(CFront *self, PyObject *args)
{
    Py_buffer ids;
    PyObject *result = NULL;
    Py_ssize_t n, i;
    char *out;

    if (!PyArg_ParseTuple(args, "y*:alive", &ids))
        return NULL;
    n = ids.len / 8;
    result = PyBytes_FromStringAndSize(NULL, n);
    if (result == NULL)
        goto done;
    out = PyBytes_AsString(result);
    for (i = 0; i < n; i++) {
        int64_t id;
        memcpy(&id, (const char *)ids.buf + 8 * i, 8);
        if (id < 0 || (size_t)id >= self->ids) {
            PyErr_Format(PyExc_ValueError, "id %lld: only %zu records were added",
                         (long long)id, self->ids);
            Py_CLEAR(result);
            goto done;
        }
        out[i] = !self->dead[id];
    }
done:
    PyBuffer_Release(&ids);
    return result;
}

static PyObject *
front_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, ":CFront", kwlist))
        return NULL;
    allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
    CFront *self = (CFront *)alloc(type, 0); /* zeroed: no table yet */
    if (self != NULL)
        self->last = INT64_MIN;
    return (PyObject *)self;
}

static void
front_dealloc(CFront *self)
{
    PyTypeObject *type = Py_TYPE((PyObject *)self);
    freefunc release = (freefunc)PyType_GetSlot(type, Py_tp_free);
    size_t i;
    if (self->slots != NULL) {
        for (i = 0; i <= self->mask; i++)
            free(self->slots[i].more);
    }
    free(self->slots);
    free(self->arena);
    free(self->dead);
    release(self);
    Py_DECREF(type);
}

static Py_ssize_t
front_len(CFront *self)
{
    return (Py_ssize_t)self->live;
}

static size_t
table_bytes(CFront *self)
{
    return self->slots ? (self->mask + 1) * sizeof(Slot) : 0;
}

static size_t
nbytes(CFront *self)
{
    return table_bytes(self) + self->arena_cap + self->more_bytes + self->dead_cap;
}

static PyObject *
front_nbytes(CFront *self, void *closure)
{
    (void)closure;
    return PyLong_FromSize_t(nbytes(self));
}

/* The table grows when a key would fill more than 3/4 of it: a table twice as large, beside the
 * old one until the keys have moved. */
static PyObject *
front_peak_bytes(CFront *self, PyObject *args)
{
    Py_ssize_t n;
    size_t cap, keys, table, peak;
    if (!PyArg_ParseTuple(args, "n", &n))
        return NULL;
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "new_keys must not be negative");
        return NULL;
    }
    table = table_bytes(self);
    peak = table;
    cap = self->slots ? self->mask + 1 : 0;
    keys = self->keys + (size_t)n;
    if (cap == 0) {
        cap = 1024;
        peak = cap * sizeof(Slot);
    }
    while (keys * 4 > cap * 3) {
        peak = 3 * cap * sizeof(Slot);
        cap *= 2;
    }
    return PyLong_FromSize_t(nbytes(self) - table + peak);
}

static PyMethodDef front_methods[] = {
    {"add", (PyCFunction)front_add, METH_VARARGS,
     "add(key_offsets, key_data, r1, r2, offsets, candidate)\n--\n\n"
     "Add the candidate records, which come after every record added before (offsets rise); "
     "return one byte per record, 1 where a candidate is on its key's front after them. "
     "Records get ids in the order added, from 0."},
    {"peak_bytes", (PyCFunction)front_peak_bytes, METH_VARARGS,
     "peak_bytes(new_keys)\n--\n\n"
     "The most memory the fronts could hold while taking new_keys more keys (a growing table "
     "is, for a moment, beside the one it replaces)."},
    {"alive", (PyCFunction)front_alive, METH_VARARGS,
     "alive(ids)\n--\n\n"
     "One byte per id (int64: the records added, counted from 0): 1 where that record, a "
     "candidate, is on its key's front now."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef front_getset[] = {
    {"nbytes", (getter)front_nbytes, NULL, "Memory the fronts hold.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot front_slots[] = {
    {Py_tp_dealloc, (void *)front_dealloc},
    {Py_sq_length, (void *)front_len},
    {Py_tp_doc, (void *)"CFront()\n--\n\nThe compiled front of every key."},
    {Py_tp_methods, front_methods},
    {Py_tp_getset, front_getset},
    {Py_tp_new, (void *)front_new},
    {0, NULL},
};

static PyType_Spec front_spec = {
    .name = "segcompact.compaction._cfront.CFront",
    .basicsize = sizeof(CFront),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = front_slots,
};

static struct PyModuleDef cfront_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "segcompact.compaction._cfront",
    .m_doc = "The compiled compaction front: CFront, twin of PyFront.",
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit__cfront(void)
{
    PyObject *m, *type;
    m = PyModule_Create(&cfront_module);
    if (m == NULL)
        return NULL;
    type = PyType_FromSpec(&front_spec);
    if (type == NULL || PyModule_AddObject(m, "CFront", type) < 0) {
        Py_XDECREF(type);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
