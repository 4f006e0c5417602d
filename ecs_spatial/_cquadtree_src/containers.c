/* containers.c: the core's containers, C-only (the reference uses builtins): I64Buf, NodeStack,
 * IdSet, the merge and bucket sorts, the keyed id hash.
 */

#include "containers.h"

/* Grow *p (an array of `size`-byte items) to hold `cap` of them; the old block stays valid
 * if this fails. */
QT_API int
grow_array(void **p, int32_t cap, size_t size)
{
    void *q = PyMem_Realloc(*p, (size_t)cap * size);
    if (q == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *p = q;
    return 0;
}

/* The id table's key: the process's own hash secret, read once at the first import
 * (set_hash_key), so that PYTHONHASHSEED keeps its meaning here. Ids may come from outside
 * (a network game, a loaded save): unkeyed, the finaliser is a bijection anyone can invert,
 * choosing ids that all land in one bucket, and n of them cost O(n^2) to insert, move and
 * remove (see docs/design.md#decisions). Nothing the tree answers depends on the key. */
QT_API uint64_t hash_key;

/* Room for n + more items of `size` bytes in a growable buffer (*p, *cap): capacity doubled
 * from 16 until it fits. 0, or -1 with MemoryError (the buffer as it was). */
static int
buf_reserve(void **p, Py_ssize_t n, Py_ssize_t *cap, Py_ssize_t more, size_t size)
{
    if (n + more <= *cap) {
        return 0;
    }
    Py_ssize_t want = *cap < 16 ? 16 : *cap * 2;
    while (want < n + more) {
        want *= 2;
    }
    void *grown = PyMem_Realloc(*p, (size_t)want * size);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *p = grown;
    *cap = want;
    return 0;
}

QT_API int
i64_reserve(I64Buf *b, Py_ssize_t more)
{
    void *p = b->p;
    int r = buf_reserve(&p, b->n, &b->cap, more, sizeof(int64_t));
    b->p = p;
    return r;
}

QT_API int
dbuf_reserve(DBuf *b, Py_ssize_t more)
{
    void *p = b->p;
    int r = buf_reserve(&p, b->n, &b->cap, more, sizeof(double));
    b->p = p;
    return r;
}

QT_API int
ns_push(NodeStack *s, int32_t v)
{
    if (s->n == s->cap) {
        Py_ssize_t cap = s->cap * 2;
        int32_t *p = PyMem_Malloc((size_t)cap * sizeof(int32_t));
        if (p == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        memcpy(p, s->p, (size_t)s->n * sizeof(int32_t));
        if (s->p != s->small) {
            PyMem_Free(s->p);
        }
        s->p = p;
        s->cap = cap;
    }
    s->p[s->n++] = v;
    return 0;
}

/* IdSet's stops: a free bucket; the bucket of `id` or a free one. */
static int
idset_free_at(const void *set, size_t i, int64_t Py_UNUSED(id))
{
    return !((const IdSet *)set)->used[i];
}

static int
idset_stop(const void *table, size_t i, int64_t id)
{
    const IdSet *set = table;
    return !set->used[i] || set->keys[i] == id;
}

static int
idset_grow(IdSet *set)
{
    size_t size = set->size ? set->size * 2 : 64;
    int64_t *keys = PyMem_Malloc(size * sizeof(int64_t));
    unsigned char *used = PyMem_Calloc(size, 1);
    if (keys == NULL || used == NULL) {
        PyMem_Free(keys);
        PyMem_Free(used);
        PyErr_NoMemory();
        return -1;
    }
    const IdSet grown = {keys, used, size, set->n};
    for (size_t i = 0; i < set->size; i++) {
        if (set->used[i]) {
            size_t j = probe(&grown, size, hash_id(set->keys[i]), 0, idset_free_at);
            used[j] = 1;
            keys[j] = set->keys[i];
        }
    }
    PyMem_Free(set->keys);
    PyMem_Free(set->used);
    set->keys = keys;
    set->used = used;
    set->size = size;
    return 0;
}

/* 1 if id was in the set, 0 if it was added, -1 on MemoryError. */
QT_API int
idset_add(IdSet *set, int64_t id)
{
    if ((set->n + 1) * 2 > set->size && idset_grow(set) < 0) {
        return -1;
    }
    size_t i = probe(set, set->size, hash_id(id), id, idset_stop);
    if (set->used[i]) {
        return 1;
    }
    set->used[i] = 1;
    set->keys[i] = id;
    set->n++;
    return 0;
}

QT_API void
idset_free(IdSet *set)
{
    PyMem_Free(set->keys);
    PyMem_Free(set->used);
}

static inline int
id_less(const int64_t *x, const int64_t *y)
{
    return *x < *y;
}

/* Ids in ascending order (distinct: an answer's): the buckets of sort_pairs, with insertion
 * alone for up to 64 of them (most queries), which needs no memory. */
static int
insertion_sort_ids(int64_t *a, Py_ssize_t n)
{
    for (Py_ssize_t i = 1; i < n; i++) {
        int64_t item = a[i];
        Py_ssize_t j = i;
        while (j > 0 && item < a[j - 1]) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = item;
    }
    return 0;
}

DEFINE_SORT(merge_sort_ids, int64_t, id_less)

static int
small_sort_ids(int64_t *a, Py_ssize_t n)
{
    return n <= 64 ? insertion_sort_ids(a, n) : merge_sort_ids(a, n);
}

#define ID_KEY(id) (id)

DEFINE_BUCKET_SORT(bucket_sort_ids, int64_t, ID_KEY, id_less, small_sort_ids)

#if defined(__GNUC__) || defined(__clang__)
#define LOWEST_BIT(word) __builtin_ctzll(word)
#else
static inline int
lowest_bit(uint64_t word)
{
    int bit = 0;
    while (!((word >> bit) & 1)) {
        bit++;
    }
    return bit;
}
#define LOWEST_BIT(word) lowest_bit(word)
#endif

/* Distinct ids in ascending order (an answer's): by insertion up to 64 of them; as bits of a
 * bitmap when their span is under 64 per id (esper's ids are small and dense:
 * one pass to set, one to read back); else by bucket_sort_ids. 0, or -1 and MemoryError. */
QT_API int
sort_ids(int64_t *a, Py_ssize_t n)
{
    if (n <= 64) {
        return insertion_sort_ids(a, n);
    }
    int64_t lo = a[0], hi = a[0];
    for (Py_ssize_t i = 1; i < n; i++) {
        lo = a[i] < lo ? a[i] : lo;
        hi = a[i] > hi ? a[i] : hi;
    }
    uint64_t span = (uint64_t)hi - (uint64_t)lo; /* as unsigned: no overflow */
    if (span / 64 >= (uint64_t)n) {
        return bucket_sort_ids(a, n);
    }
    size_t words = (size_t)(span / 64) + 1;
    uint64_t *bits = PyMem_Calloc(words, sizeof(uint64_t));
    if (bits == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t at = (uint64_t)a[i] - (uint64_t)lo;
        bits[at / 64] |= (uint64_t)1 << (at % 64);
    }
    Py_ssize_t k = 0;
    for (size_t w = 0; w < words; w++) {
        for (uint64_t word = bits[w]; word != 0; word &= word - 1) {
            int bit = LOWEST_BIT(word);
            a[k++] = (int64_t)((uint64_t)lo + 64 * (uint64_t)w + (uint64_t)bit);
        }
    }
    PyMem_Free(bits);
    return 0;
}

/* Key the id table from the process's hash secret (hash() of two bytes objects: SipHash under
 * the secret that PYTHONHASHSEED sets or randomises), once: the tables of every tree, in
 * every interpreter of the process, are made with it. 0, or -1 with an error. */
QT_API int
set_hash_key(void)
{
    static int keyed = 0;
    if (keyed) {
        return 0;
    }
    const char *const salts[2] = {"ecs_spatial._cquadtree: the id table, low",
                                  "ecs_spatial._cquadtree: the id table, high"};
    uint64_t key = 0;
    for (int i = 0; i < 2; i++) {
        PyObject *salt = PyBytes_FromString(salts[i]); /* new */
        Py_hash_t h = salt == NULL ? -1 : PyObject_Hash(salt);
        Py_XDECREF(salt);
        if (h == -1) {
            return -1;
        }
        key ^= (uint64_t)h << (32 * i); /* 64 bits of secret where Py_hash_t has 32 */
    }
    hash_key = key;
    keyed = 1;
    return 0;
}
