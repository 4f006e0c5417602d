/* tree_storage.h: slots, the id table, the container protocol, the tree's lifetime (new, init,
 * dealloc, busy), its properties, repr and size.
 *
 * The twin of ecs_spatial/_tree_storage.py.
 */

#ifndef ECS_SPATIAL_CQUADTREE_TREE_STORAGE_H
#define ECS_SPATIAL_CQUADTREE_TREE_STORAGE_H

#include "tree.h"
#include "containers.h"

QT_API int reserve_slots(Tree *t, int64_t need);
QT_API int reserve_table(Tree *t, int64_t need);
QT_API void remove_slot(Tree *t, int32_t s);
QT_API void drop_hints(Tree *t);
QT_API int grow_call_hints(Tree *t);
QT_API int reset(Tree *t);
QT_API void apply_pending(Tree *t);
QT_API int guard(Tree *t, int mutating);
QT_API int walk_begin(Tree *t);
QT_API PyObject *Tree_new(PyTypeObject *type, PyObject *Py_UNUSED(args), PyObject *Py_UNUSED(kwds));
QT_API void Tree_dealloc(Tree *t);
QT_API int configure(Tree *t, PyObject *bounds, PyObject *threshold, PyObject *max_depth,
                     const double *period);
QT_API int Tree_init(Tree *t, PyObject *args, PyObject *kwds);
QT_API Py_ssize_t Tree_len(Tree *t);
QT_API int Tree_contains(Tree *t, PyObject *entity);
QT_API PyObject *Tree_getitem(Tree *t, PyObject *entity);
QT_API PyObject *Tree_get(Tree *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
QT_API PyObject *Tree_iter(Tree *t);
QT_API PyObject *Tree_repr(Tree *t);
QT_API PyObject *Tree_get_bounds(Tree *t, void *Py_UNUSED(closure));
QT_API PyObject *Tree_get_wrap(Tree *t, void *Py_UNUSED(closure));
QT_API PyObject *Tree_get_threshold(Tree *t, void *Py_UNUSED(closure));
QT_API PyObject *Tree_get_max_depth(Tree *t, void *Py_UNUSED(closure));
QT_API PyObject *Tree_sizeof(Tree *t, PyObject *Py_UNUSED(ignored));

/* The id table's stops (probe()): the bucket of `id` or a free one; a free bucket. */
static inline int
id_stop(const void *tree, size_t i, int64_t id)
{
    const Tree *t = tree;
    int32_t s = t->table[i];
    return s == NO_SLOT || t->ids[s] == id;
}

static inline int
id_free_at(const void *tree, size_t i, int64_t Py_UNUSED(id))
{
    return ((const Tree *)tree)->table[i] == NO_SLOT;
}

/* The slot of `id`, or NO_SLOT. */
static inline int32_t
find_slot(const Tree *t, int64_t id)
{
    if (t->table == NULL) {
        return NO_SLOT;
    }
    return t->table[probe(t, t->table_size, hash_id(id), id, id_stop)];
}

static inline void
table_put(Tree *t, int32_t s)
{
    t->table[probe(t, t->table_size, hash_id(t->ids[s]), 0, id_free_at)] = s;
}

#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(address) __builtin_prefetch(address)
#else
#define PREFETCH(address) ((void)(address))
#endif

/* Record that the move() now of slot s (id's) follows the last one, and ask for the memory
 * of the move that followed s's last time (see Tree.call_hint): a loop of move() runs about
 * a thousand instructions of Python between two moves, which hides the memory's latency
 * that each move would otherwise wait for. Nothing if the hints have no memory. */
static inline void
prefetch_call(Tree *t, int32_t s, int64_t id)
{
    if (s >= t->call_cap && grow_call_hints(t) < 0) {
        return;
    }
    CallHint *h = t->call_hint;
    size_t mask = t->table_size - 1;
    if ((uint32_t)t->call_last < (uint32_t)t->call_cap) {
        h[t->call_last].next = s;
        h[t->call_last].bucket = (uint32_t)(hash_id(id) & mask);
    }
    t->call_last = s;
    int32_t p = h[s].next;
    if ((uint32_t)p < (uint32_t)t->n) {
        PREFETCH(&t->table[h[s].bucket & mask]);
        PREFETCH(&t->ids[p]);
        PREFETCH(&t->node_of[p]);
        PREFETCH(&t->box[4 * (size_t)p]);
    }
}

/* Ask for the memory the moves of ids[i + 16], [i + 32] and [i + 64] will read, one step of
 * the chain each: the node, the slot's box and node index, the hash bucket. With a large
 * tree each is a cache miss, and a move is otherwise a chain of them waiting on one another;
 * the distances are those that measured fastest (see docs/design.md#decisions). */
static inline void
prefetch_move(const Tree *t, const int64_t *ids, const int32_t *hint, Py_ssize_t i, Py_ssize_t k)
{
    size_t mask = t->table_size - 1;
    uint32_t n = (uint32_t)t->n;
    if (t->table == NULL) {
        return;
    }
    /* A slot hint in range stands for the hash (right or not, it names memory we own). */
    if (i + 64 < k && (hint == NULL || (uint32_t)hint[i + 64] >= n)) {
        PREFETCH(&t->table[hash_id(ids[i + 64]) & mask]);
    }
    if (i + 32 < k) {
        int32_t s = hint != NULL && (uint32_t)hint[i + 32] < n
                        ? hint[i + 32]
                        : t->table[hash_id(ids[i + 32]) & mask]; /* its bucket, or a neighbour's */
        if (s != NO_SLOT) {
            PREFETCH(&t->ids[s]);
            PREFETCH(&t->box[4 * (size_t)s]);
            PREFETCH(&t->node_of[s]);
        }
    }
    if (i + 16 < k) {
        int32_t s = hint != NULL && (uint32_t)hint[i + 16] < n ? hint[i + 16]
                                                                : t->table[hash_id(ids[i + 16]) & mask];
        if (s != NO_SLOT) {
            PREFETCH(&t->nodes[t->node_of[s]]);
        }
    }
}

/* The end of a busy section: the outermost one applies the discard()s deferred meanwhile
 * (see "Python inside the core" in tree.h). Runs no Python and allocates nothing. Inline, so
 * that the common end (nothing deferred) costs a decrement and a test in every method. */
static inline void
busy_end(Tree *t)
{
    if (--t->busy <= 0 && t->n_pending != 0) {
        apply_pending(t);
    }
}

/* The busy section of a change: it starts only when guard(t, 1) passed, so nothing else is in
 * flight (see "Threads" in tree.h). */
static inline void
change_begin(Tree *t)
{
    t->busy++;
    t->changing = 1;
    t->changer = PyThread_get_thread_ident();
}

static inline void
change_end(Tree *t)
{
    t->changing = 0;
    busy_end(t);
}

#endif
