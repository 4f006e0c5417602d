/* containers.h: the core's containers, C-only (the reference uses builtins): I64Buf, DBuf, NodeStack,
 * IdSet, the keyed id hash (the merge and bucket sorts: sorts.h).
 */

#ifndef ECS_SPATIAL_CQUADTREE_CONTAINERS_H
#define ECS_SPATIAL_CQUADTREE_CONTAINERS_H

#include "tree.h"
#include "sorts.h"

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
