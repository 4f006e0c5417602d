/* tree_casts.c: casts: raycast, cast_box and their _first forms.
 *
 * The twin of ecs_spatial/_tree_casts.py.
 */

#include "tree_casts.h"
#include "containers.h"
#include "geometry.h"
#include "snapshots.h"
#include "records.h"
#include "tree_storage.h"
#include "tree_nearest.h"
#include "constants.h"
#include "wrap.h"

/* A cast (_tree_casts._all_hits and _first_hit): a segment (raycast) or a box moving by
 * (dx, dy) (cast_box), and the one test both searches make of an entry's box or a node's
 * bounds. The test is monotonic: an entry inside a node's bounds gives a later or equal t
 * (each bound is one rounded subtraction and one rounded division, both monotonic), so a node
 * it misses holds nothing it hits, and the t of a node's bounds is a lower bound of its
 * subtree's. */
typedef struct {
    int moving_box; /* 1: a (box) moving by (dx, dy); 0: the segment (x0, y0) -> (x1, y1) */
    double a[4];    /* the moving box, or x0, y0, x1, y1 */
    double dx, dy;
} Cast;

static inline int
cast_hit(const Cast *c, const double b[4], double *t)
{
    if (c->moving_box) {
        return sweep_time(c->a, c->dx, c->dy, b, t);
    }
    return segment_entry(b[0], b[1], b[2], b[3], c->a[0], c->a[1], c->a[2], c->a[3], t);
}

static inline int
cast_hit_node(const Cast *c, const Node *nd, double *t)
{
    const double b[4] = {nd->x0, nd->y0, nd->x1, nd->y1};
    return cast_hit(c, b, t);
}

/* A hit, ordered by its fraction, then by id. */
typedef struct {
    double t;
    int64_t id;
    Py_ssize_t shift; /* a wrapped cast's: the index of its shift */
} Hit;

static int
cmp_hit(const void *pa, const void *pb)
{
    const Hit *a = pa, *b = pb;
    if (a->t != b->t) {
        return a->t < b->t ? -1 : 1;
    }
    return (a->id > b->id) - (a->id < b->id);
}

/* The tuple (id, t). New reference. */
static inline PyObject *
hit_tuple(Hit h)
{
    return Py_BuildValue("(Ld)", (long long)h.id, h.t);
}

/* Hits, growable: PyMem memory, freed by the owner. */
typedef struct {
    Hit *p;
    Py_ssize_t n, cap;
} HitBuf;

/* The list [(id, t)] of hits[0 .. n). New reference, or NULL. */
static PyObject *
hit_list(const Hit *hits, Py_ssize_t n)
{
    PyObject *result = PyList_New(n);
    for (Py_ssize_t i = 0; result != NULL && i < n; i++) {
        PyObject *pair = hit_tuple(hits[i]);
        if (pair == NULL) {
            Py_CLEAR(result);
            break;
        }
        PyList_SET_ITEM(result, i, pair); /* steals */
    }
    return result;
}

/* _tree_casts._all_hits: every entry the cast touches, appended to buf (unsorted); the
 * root always read (it may hold boxes beyond its bounds), a child's subtree only if the cast
 * touches its bounds. 0, or -1 and MemoryError. */
static int
cast_hits(const Tree *t, const Cast *c, HitBuf *buf)
{
    if (t->root == NO_NODE) {
        return 0;
    }
    double frac;
    Hit *hits = buf->p;
    Py_ssize_t n_hits = buf->n, cap_hits = buf->cap;
    NodeStack stack;
    ns_init(&stack);
    int err = ns_push(&stack, t->root);
    while (err == 0 && stack.n > 0) {
        const Node *nd = &t->nodes[stack.p[--stack.n]];
        for (int32_t s = nd->head; s != NO_SLOT; s = t->next[s]) {
            if (!cast_hit(c, &t->box[4 * (size_t)s], &frac)) {
                continue;
            }
            if (n_hits == cap_hits) {
                Py_ssize_t cap = cap_hits < 16 ? 16 : cap_hits * 2;
                Hit *p = PyMem_Realloc(hits, (size_t)cap * sizeof(Hit));
                if (p == NULL) {
                    PyErr_NoMemory();
                    err = -1;
                    break;
                }
                hits = p;
                cap_hits = cap;
            }
            hits[n_hits++] = (Hit){frac, t->ids[s], 0};
        }
        if (err == 0 && nd->kids[0] != NO_NODE) {
            for (int q = 0; q < 4 && err == 0; q++) {
                const Node *child = &t->nodes[nd->kids[q]];
                if (child->count > 0 && cast_hit_node(c, child, &frac)) {
                    err = ns_push(&stack, nd->kids[q]);
                }
            }
        }
    }
    ns_free(&stack);
    *buf = (HitBuf){hits, n_hits, cap_hits};
    return err;
}

/* [(id, t)] for every entry the cast touches, sorted by t then id. New reference, or NULL. */
static PyObject *
cast_all(const Tree *t, const Cast *c)
{
    HitBuf buf = {NULL, 0, 0};
    PyObject *result = NULL;
    if (cast_hits(t, c, &buf) == 0) {
        if (buf.n > 1) {
            qsort(buf.p, (size_t)buf.n, sizeof(Hit), cmp_hit);
        }
        result = hit_list(buf.p, buf.n);
    }
    PyMem_Free(buf.p);
    return result;
}

/* A hit of a wrapped cast's shift: ordered by id, then t, then the shift (the first of
 * equal t's is the one _tree_casts._wrapped_hits keeps). */
static int
cmp_id_t(const void *pa, const void *pb)
{
    const Hit *a = pa, *b = pb;
    if (a->id != b->id) {
        return a->id < b->id ? -1 : 1;
    }
    if (a->t != b->t) {
        return a->t < b->t ? -1 : 1;
    }
    return (a->shift > b->shift) - (a->shift < b->shift);
}

/* _tree_casts._wrapped_hits: a cast on a wrapped tree, followed across the seams: the cast
 * shifted by each of _wrap.cast_shifts cast as a plain one, each entity at its least t,
 * sorted by t then id, into buf. 0, or -1 and the error (cast_shifts' refusal). */
static int
wrapped_hits(const Tree *t, const Cast *c, HitBuf *buf)
{
    const double *a = c->a;
    PyObject *shifts = c->moving_box
                           ? cast_shifts(t->period, a[0], a[1], a[0] + c->dx, a[1] + c->dy,
                                         a[2] - a[0], a[3] - a[1])
                           : cast_shifts(t->period, a[0], a[1], a[2], a[3], 0.0, 0.0); /* new */
    if (shifts == NULL) {
        return -1;
    }
    Py_ssize_t n = PyList_GET_SIZE(shifts);
    double *by = PyMem_Malloc((size_t)(n > 0 ? n : 1) * 2 * sizeof(double));
    int err = by == NULL ? (PyErr_NoMemory(), -1) : 0;
    for (Py_ssize_t i = 0; err == 0 && i < n; i++) {
        PyObject *pair = PyList_GET_ITEM(shifts, i); /* borrowed: a (sx, sy) tuple */
        by[2 * i] = PyFloat_AsDouble(PyTuple_GetItem(pair, 0));
        by[2 * i + 1] = PyFloat_AsDouble(PyTuple_GetItem(pair, 1));
        err = PyErr_Occurred() ? -1 : 0;
    }
    Py_DECREF(shifts);
    for (Py_ssize_t i = 0; err == 0 && i < n; i++) {
        Cast shifted = *c;
        double sx = by[2 * i], sy = by[2 * i + 1];
        shifted.a[0] = a[0] + sx;
        shifted.a[1] = a[1] + sy;
        shifted.a[2] = a[2] + sx;
        shifted.a[3] = a[3] + sy;
        Py_ssize_t start = buf->n;
        err = cast_hits(t, &shifted, buf);
        for (Py_ssize_t j = start; err == 0 && j < buf->n; j++) {
            buf->p[j].shift = i;
        }
    }
    PyMem_Free(by);
    if (err < 0) {
        return -1;
    }
    if (buf->n > 1) {
        qsort(buf->p, (size_t)buf->n, sizeof(Hit), cmp_id_t);
    }
    Py_ssize_t k = 0;
    for (Py_ssize_t j = 0; j < buf->n; j++) {
        if (k == 0 || buf->p[j].id != buf->p[k - 1].id) {
            buf->p[k++] = buf->p[j];
        }
    }
    buf->n = k;
    if (k > 1) {
        qsort(buf->p, (size_t)k, sizeof(Hit), cmp_hit);
    }
    return 0;
}

static int where_holds(PyObject *where, int64_t id);

/* A cast on a wrapped tree: every hit as cast_all() gives it (first = 0), or the first that
 * where accepts (_tree_casts._first_accepted: the first hit without where, None for none),
 * the tree busy while where runs. New reference, or NULL. */
static PyObject *
wrapped_cast(Tree *t, const Cast *c, int first, PyObject *where)
{
    HitBuf buf = {NULL, 0, 0};
    PyObject *result = NULL;
    if (wrapped_hits(t, c, &buf) < 0) {
        goto done;
    }
    if (!first) {
        result = hit_list(buf.p, buf.n);
        goto done;
    }
    Py_ssize_t i = 0;
    int yes = 1;
    t->busy += where != NULL;
    for (i = 0; where != NULL && i < buf.n; i++) {
        if ((yes = where_holds(where, buf.p[i].id)) != 0) {
            break;
        }
    }
    if (where != NULL) {
        busy_end(t);
    }
    if (yes >= 0) {
        result = i < buf.n ? hit_tuple(buf.p[i]) : (Py_INCREF(Py_None), Py_None);
    }
done:
    PyMem_Free(buf.p);
    return result;
}

/* Whether where(id) holds: 1 or 0, or -1 with where's error (or a MemoryError) set. */
static int
where_holds(PyObject *where, int64_t id)
{
    PyObject *key = PyLong_FromLongLong(id);
    if (key == NULL) {
        return -1;
    }
    PyObject *verdict = PyObject_CallOneArg(where, key); /* new reference, or NULL */
    Py_DECREF(key);
    if (verdict == NULL) {
        return -1;
    }
    int yes = PyObject_IsTrue(verdict);
    Py_DECREF(verdict);
    return yes;
}

/* Fold the hits among slots[0 .. n) into best (the least (t, id)), each one that would
 * beat it first put to where(id) if where is not NULL (so where is asked only about what
 * would be the answer). 0, or -1 with where's error set (best then is what it was, or a
 * hit accepted before the error: the caller drops it). */
static inline int
first_among(const Tree *t, const Cast *c, const int32_t *slots, int32_t n, PyObject *where,
            Hit *best)
{
    double frac;
    for (int32_t i = 0; i < n; i++) {
        int32_t s = slots[i];
        if (cast_hit(c, &t->box[4 * (size_t)s], &frac)
            && (frac < best->t || (frac == best->t && t->ids[s] < best->id))) {
            if (where != NULL) {
                int yes = where_holds(where, t->ids[s]);
                if (yes <= 0) {
                    if (yes < 0) {
                        return -1;
                    }
                    continue;
                }
            }
            *best = (Hit){frac, t->ids[s], 0};
        }
    }
    return 0;
}

/* _tree_casts._first_hit: the least (t, id) the cast touches (among the ids where(id) accepts,
 * if where is not NULL), as (id, t), or None. Best first
 * by the t at which the cast enters a bounding box, a lower bound of every t inside it: the
 * subtrees by their node's bounds (the root at 0: it may hold boxes beyond them), and the own
 * entries of a node of SNAP_MIN or more as the two groups of its snapshot, by each group's
 * box (near the root they grow with the world's side and hug the split lines: read only if
 * the cast gets to them first; _tree_casts._first_hit has the counts). A box whose t is strictly greater than the best found is
 * never opened, and the search ends at the first the heap gives (an equal t is opened: a
 * smaller id may wait there). The order among boxes of equal t may differ from the
 * reference's heap; the answer, a minimum over every box that can hold it, does not (nor,
 * for a where that answers alike whenever asked, the accepted minimum: where is asked only
 * about an entry that beats the best accepted so far, so the bounds hold as they do without
 * it). The caller holds the tree through walk_begin() while where may run: where may read the tree (which may
 * build snapshots of other nodes, never free a fresh one) but not change it, so the node
 * pointers, the entry lists and the snapshot read here stay valid across its calls. New
 * reference, or NULL (where's error included). */
static PyObject *
cast_first(Tree *t, const Cast *c, PyObject *where)
{
    if (t->root == NO_NODE) {
        Py_RETURN_NONE;
    }
    double frac;
    Hit best = {INFINITY, 0, 0}; /* every t is in [0, 1]: the first hit beats it */
    Open *heap = NULL;
    Py_ssize_t n_heap = 0, cap_heap = 0;
    int err = open_push(&heap, &n_heap, &cap_heap, (Open){0.0, t->root, 0});
    while (err == 0 && n_heap > 0) {
        Open top = open_pop(heap, &n_heap);
        if (top.lb > best.t) {
            break; /* everything left is entered after the best hit */
        }
        const Node *nd = &t->nodes[top.node];
        if (top.group != 0) {
            /* Fresh since it was pushed (nothing changed the tree), so no allocation; were
             * it NULL, the node's own entries are read one by one, both groups alike. */
            const Snap *sn = snap_get(t, top.node);
            if (sn == NULL) {
                for (int32_t s = nd->head; s != NO_SLOT && err == 0; s = t->next[s]) {
                    err = first_among(t, c, &s, 1, where, &best);
                }
            }
            else if (top.group == 1) {
                err = first_among(t, c, snap_slots(sn), sn->n_across, where, &best);
            }
            else {
                err = first_among(t, c, snap_slots(sn) + sn->n_across, sn->n - sn->n_across,
                                  where, &best);
            }
            continue;
        }
        /* Only an internal node's snapshot is kept fresh (a leaf's moves mark nothing). */
        const Snap *sn = NULL;
        if (nd->n >= SNAP_MIN && nd->kids[0] != NO_NODE) {
            sn = snap_get(t, top.node);
        }
        if (sn == NULL) {
            for (int32_t s = nd->head; s != NO_SLOT && err == 0; s = t->next[s]) {
                err = first_among(t, c, &s, 1, where, &best);
            }
        }
        else {
            if (sn->n_across > 0 && cast_hit(c, sn->across, &frac) && frac <= best.t) {
                err = open_push(&heap, &n_heap, &cap_heap, (Open){frac, top.node, 1});
            }
            if (err == 0 && sn->n > sn->n_across && cast_hit(c, sn->along, &frac)
                && frac <= best.t) {
                err = open_push(&heap, &n_heap, &cap_heap, (Open){frac, top.node, 2});
            }
        }
        if (err == 0 && nd->kids[0] != NO_NODE) {
            for (int q = 0; q < 4 && err == 0; q++) {
                const Node *child = &t->nodes[nd->kids[q]];
                if (child->count > 0 && cast_hit_node(c, child, &frac) && frac <= best.t) {
                    err = open_push(&heap, &n_heap, &cap_heap, (Open){frac, nd->kids[q], 0});
                }
            }
        }
    }
    PyMem_Free(heap);
    if (err < 0) {
        return NULL;
    }
    if (best.t == INFINITY) {
        Py_RETURN_NONE;
    }
    return hit_tuple(best);
}

static const Params raycast_params = {"raycast", 4, 4, 4, {"x0", "y0", "x1", "y1"}};

static const Params raycast_first_params = {"raycast_first", 4, 4, 5,
                                            {"x0", "y0", "x1", "y1", "where"}};

static const Params cast_box_params = {"cast_box", 3, 3, 3, {"box", "dx", "dy"}};

static const Params cast_box_first_params = {"cast_box_first", 3, 3, 4, {"box", "dx", "dy", "where"}};

/* The arguments of raycast and raycast_first (bound by p): two points, as _records.point
 * reads them, and *where (borrowed; NULL for None or none given) for p's where=. 0, or -1
 * and the reference's error. */
static int
ray_args(Tree *t, const Params *p, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
         Cast *c, PyObject **where)
{
    PyObject *buf[MAX_PARAMS];
    PyObject *const *a = arguments(p, args, nargs, kwnames, buf);
    c->moving_box = 0;
    c->dx = c->dy = 0.0;
    if (a == NULL || guard(t, 0) < 0 || point_any(a[0], a[1], &c->a[0], &c->a[1]) < 0
        || point_any(a[2], a[3], &c->a[2], &c->a[3]) < 0) {
        return -1;
    }
    *where = p->n > 4 && a[4] != Py_None ? a[4] : NULL;
    return 0;
}

/* The arguments of cast_box and cast_box_first (bound by p): a box, as _records.coords
 * reads it, then the motion, as geometry.motion_floats reads it, and *where as ray_args
 * gives it. */
static int
box_cast_args(Tree *t, const Params *p, PyObject *const *args, Py_ssize_t nargs,
              PyObject *kwnames, Cast *c, PyObject **where)
{
    PyObject *buf[MAX_PARAMS];
    PyObject *const *a = arguments(p, args, nargs, kwnames, buf);
    c->moving_box = 1;
    if (a == NULL || guard(t, 0) < 0 || box_any(a[0], NULL, c->a) < 0
        || motion_any(a[1], a[2], &c->dx, &c->dy) < 0) {
        return -1;
    }
    *where = p->n > 3 && a[3] != Py_None ? a[3] : NULL;
    return 0;
}

QT_API PyObject *
Tree_raycast(Tree *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    Cast c;
    PyObject *where;
    if (ray_args(t, &raycast_params, args, nargs, kwnames, &c, &where) < 0) {
        return NULL;
    }
    return t->wrapped ? wrapped_cast(t, &c, 0, NULL) : cast_all(t, &c);
}

/* cast_first with where (if not NULL) allowed to run: busy up, so that it may read the tree
 * but not change it, as nearest's where. */
static PyObject *
cast_first_where(Tree *t, const Cast *c, PyObject *where)
{
    if (where == NULL) {
        return cast_first(t, c, NULL);
    }
    if (walk_begin(t) < 0) {
        return NULL;
    }
    PyObject *result = cast_first(t, c, where);
    busy_end(t);
    return result;
}

QT_API PyObject *
Tree_raycast_first(Tree *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    Cast c;
    PyObject *where;
    if (ray_args(t, &raycast_first_params, args, nargs, kwnames, &c, &where) < 0) {
        return NULL;
    }
    return t->wrapped ? wrapped_cast(t, &c, 1, where) : cast_first_where(t, &c, where);
}

QT_API PyObject *
Tree_cast_box(Tree *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    Cast c;
    PyObject *where;
    if (box_cast_args(t, &cast_box_params, args, nargs, kwnames, &c, &where) < 0) {
        return NULL;
    }
    return t->wrapped ? wrapped_cast(t, &c, 0, NULL) : cast_all(t, &c);
}

QT_API PyObject *
Tree_cast_box_first(Tree *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    Cast c;
    PyObject *where;
    if (box_cast_args(t, &cast_box_first_params, args, nargs, kwnames, &c, &where) < 0) {
        return NULL;
    }
    return t->wrapped ? wrapped_cast(t, &c, 1, where) : cast_first_where(t, &c, where);
}
