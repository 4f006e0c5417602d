/* containers.h: the core's containers, C-only (the reference uses builtins): I64Buf, DBuf, NodeStack,
 * IdSet, the merge and bucket sorts, the keyed id hash.
 */

#ifndef ECS_SPATIAL_CQUADTREE_CONTAINERS_H
#define ECS_SPATIAL_CQUADTREE_CONTAINERS_H

#include "tree.h"

/* A growable array of int64 (ids, or pairs of them), in PyMem memory. */
typedef struct {
    int64_t *p;
    Py_ssize_t n, cap;
} I64Buf;

/* A growable array of doubles (query points, radii), in PyMem memory. */
typedef struct {
    double *p;
    Py_ssize_t n, cap;
} DBuf;

/* A stack of node indices for one traversal: its own memory, so that a traversal never
 * shares a buffer with another one that Python code (a finaliser run by the garbage
 * collector, a where= predicate) might start in the middle of it. */
typedef struct {
    int32_t *p;
    Py_ssize_t n, cap;
    int32_t small[64];
} NodeStack;

/* A set of int64 ids (open addressing), for "listed twice" in a batch. */
typedef struct {
    int64_t *keys;
    unsigned char *used;
    size_t size, n;
} IdSet;

/* A stable merge sort of n items of type T, ordered by LESS(const T *, const T *): runs of 16
 * by insertion, then merged bottom-up; O(n log n) whatever the input. A macro, so that the
 * comparisons are inlined, where libc's qsort calls through a function pointer (see docs/design.md#decisions).
 * 0, or -1 and MemoryError. */
#define DEFINE_SORT(NAME, T, LESS)                                                           \
    static int NAME(T *a, Py_ssize_t n)                                                      \
    {                                                                                        \
        const Py_ssize_t run = 16;                                                           \
        for (Py_ssize_t lo = 0; lo < n; lo += run) {                                         \
            Py_ssize_t hi = lo + run < n ? lo + run : n;                                     \
            for (Py_ssize_t i = lo + 1; i < hi; i++) {                                       \
                T item = a[i];                                                               \
                Py_ssize_t j = i;                                                            \
                while (j > lo && LESS(&item, &a[j - 1])) {                                   \
                    a[j] = a[j - 1];                                                         \
                    j--;                                                                     \
                }                                                                            \
                a[j] = item;                                                                 \
            }                                                                                \
        }                                                                                    \
        if (n <= run) {                                                                      \
            return 0;                                                                        \
        }                                                                                    \
        T *tmp = PyMem_Malloc((size_t)n * sizeof(T));                                        \
        if (tmp == NULL) {                                                                   \
            PyErr_NoMemory();                                                                \
            return -1;                                                                       \
        }                                                                                    \
        T *src = a, *dst = tmp;                                                              \
        for (Py_ssize_t width = run; width < n; width *= 2) {                                \
            for (Py_ssize_t lo = 0; lo < n; lo += 2 * width) {                               \
                Py_ssize_t mid = lo + width < n ? lo + width : n;                            \
                Py_ssize_t hi = lo + 2 * width < n ? lo + 2 * width : n;                     \
                Py_ssize_t i = lo, j = mid, k = lo;                                          \
                while (i < mid && j < hi) {                                                  \
                    dst[k++] = LESS(&src[j], &src[i]) ? src[j++] : src[i++];                 \
                }                                                                            \
                while (i < mid) {                                                            \
                    dst[k++] = src[i++];                                                     \
                }                                                                            \
                while (j < hi) {                                                             \
                    dst[k++] = src[j++];                                                     \
                }                                                                            \
            }                                                                                \
            T *swap = src;                                                                   \
            src = dst;                                                                       \
            dst = swap;                                                                      \
        }                                                                                    \
        if (src != a) {                                                                      \
            memcpy(a, src, (size_t)n * sizeof(T));                                           \
        }                                                                                    \
        PyMem_Free(tmp);                                                                     \
        return 0;                                                                            \
    }

/* A sort of n items of type T by LESS whose int64 KEY(item) orders them first (LESS breaks
 * its ties): dealt into about n/2 buckets by the high bits of the key (key - min key,
 * shifted), then each bucket sorted by insertion, or by the merge sort SMALL when one holds
 * more than 16 (and for n <= 64). Ids spread over the ids in use, so a bucket holds two or
 * three: O(n) where the merge sort alone is O(n log n) (see docs/design.md#decisions). The insertion reads the bucket from tmp and writes
 * a, so no copy back (callgrind counts a memcpy byte by byte). 0, or -1 and MemoryError. */
#define DEFINE_BUCKET_SORT(NAME, T, KEY, LESS, SMALL)                                        \
    static int NAME(T *a, Py_ssize_t n)                                                      \
    {                                                                                        \
        if (n <= 64) {                                                                       \
            return SMALL(a, n);                                                              \
        }                                                                                    \
        uint64_t lo = (uint64_t)KEY(a[0]) ^ ((uint64_t)1 << 63), hi = lo; /* unsigned */     \
        for (Py_ssize_t i = 1; i < n; i++) {                                                 \
            uint64_t key = (uint64_t)KEY(a[i]) ^ ((uint64_t)1 << 63);                        \
            lo = key < lo ? key : lo;                                                        \
            hi = key > hi ? key : hi;                                                        \
        }                                                                                    \
        uint64_t want = 1;                                                                   \
        while (want < (uint64_t)n / 2 && want < ((uint64_t)1 << 24)) {                       \
            want <<= 1;                                                                      \
        }                                                                                    \
        int shift = 0;                                                                       \
        while (((hi - lo) >> shift) >= want) {                                               \
            shift++;                                                                         \
        }                                                                                    \
        Py_ssize_t nb = (Py_ssize_t)((hi - lo) >> shift) + 1, i;                             \
        T *tmp = PyMem_Malloc((size_t)n * sizeof(T));                                        \
        Py_ssize_t *at = PyMem_Calloc((size_t)nb + 1, sizeof(Py_ssize_t));                   \
        if (tmp == NULL || at == NULL) {                                                     \
            PyMem_Free(tmp);                                                                 \
            PyMem_Free(at);                                                                  \
            PyErr_NoMemory();                                                                \
            return -1;                                                                       \
        }                                                                                    \
        for (i = 0; i < n; i++) {                                                            \
            at[(Py_ssize_t)((((uint64_t)KEY(a[i]) ^ ((uint64_t)1 << 63)) - lo) >> shift) + 1]++; \
        }                                                                                    \
        for (Py_ssize_t b = 1; b <= nb; b++) {                                               \
            at[b] += at[b - 1];                                                              \
        }                                                                                    \
        for (i = 0; i < n; i++) { /* at[b] ends as bucket b's end */                         \
            tmp[at[(Py_ssize_t)((((uint64_t)KEY(a[i]) ^ ((uint64_t)1 << 63)) - lo) >> shift)]++] \
                = a[i];                                                                      \
        }                                                                                    \
        int r = 0;                                                                           \
        for (Py_ssize_t b = 0, first = 0; b < nb && r == 0; first = at[b++]) {               \
            Py_ssize_t end = at[b];                                                          \
            if (end - first > 16) {                                                          \
                memcpy(a + first, tmp + first, (size_t)(end - first) * sizeof(T));           \
                r = SMALL(a + first, end - first);                                           \
                continue;                                                                    \
            }                                                                                \
            for (i = first; i < end; i++) { /* insertion from tmp back into a */             \
                T item = tmp[i];                                                             \
                Py_ssize_t j = i;                                                            \
                while (j > first && LESS(&item, &a[j - 1])) {                                \
                    a[j] = a[j - 1];                                                         \
                    j--;                                                                     \
                }                                                                            \
                a[j] = item;                                                                 \
            }                                                                                \
        }                                                                                    \
        PyMem_Free(tmp);                                                                     \
        PyMem_Free(at);                                                                      \
        return r;                                                                            \
    }

QT_API int grow_array(void **p, int32_t cap, size_t size);
QT_DATA uint64_t hash_key;
QT_API int i64_reserve(I64Buf *b, Py_ssize_t more);
QT_API int dbuf_reserve(DBuf *b, Py_ssize_t more);
QT_API int ns_push(NodeStack *s, int32_t v);
QT_API int idset_add(IdSet *set, int64_t id);
QT_API void idset_free(IdSet *set);
QT_API int sort_ids(int64_t *a, Py_ssize_t n);
QT_API int set_hash_key(void);

/* splitmix64's finaliser: the id table's hash (keyed: hash_id) and the state hash's mixer. */
static inline uint64_t
mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static inline size_t
hash_id(int64_t id)
{
    /* splitmix64's finaliser: consecutive ids (esper's) land far apart. */
    return (size_t)mix64((uint64_t)id ^ hash_key);
}

/* The one open-addressing probe of the core: linear probing over a table of `size` buckets
 * (a power of two), from the bucket `hash` names to the first at which stop(table, bucket,
 * key) holds (each table keeps a bucket empty, so there is one). The id table
 * (tree_storage), the snapshot table (snapshots) and IdSet use it, each with its own stop
 * (a constant: the call inlines to the loop each once wrote by hand); table_delete's
 * backward shift steps with probe_next. */
typedef int (*ProbeStop)(const void *table, size_t bucket, int64_t key);

/* Inlined before the inliner weighs its callers (find_slot is on every move's path), so that
 * the constant stop is a direct call by then, and the probe costs what the loop did. */
#if defined(__GNUC__) || defined(__clang__)
#define PROBE_INLINE inline __attribute__((always_inline))
#else
#define PROBE_INLINE inline
#endif

static inline size_t
probe_next(size_t bucket, size_t size)
{
    return (bucket + 1) & (size - 1);
}

static PROBE_INLINE size_t
probe(const void *table, size_t size, size_t hash, int64_t key, ProbeStop stop)
{
    size_t i = hash & (size - 1);
    while (!stop(table, i, key)) {
        i = probe_next(i, size);
    }
    return i;
}

static inline int
i64_push(I64Buf *b, int64_t v)
{
    if (b->n == b->cap && i64_reserve(b, 1) < 0) {
        return -1;
    }
    b->p[b->n++] = v;
    return 0;
}

static inline void
ns_init(NodeStack *s)
{
    s->p = s->small;
    s->n = 0;
    s->cap = 64;
}

static inline void
ns_free(NodeStack *s)
{
    if (s->p != s->small) {
        PyMem_Free(s->p);
    }
}

#endif
