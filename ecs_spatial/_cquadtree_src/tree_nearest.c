/* tree_nearest.c: nearest: a best-first walk of the nodes (its open list also serves the casts).
 *
 * The twin of ecs_spatial/_tree_nearest.py.
 */

#include "tree_nearest.h"
#include "constants.h"
#include "geometry.h"
#include "records.h"
#include "tree_storage.h"
#include "containers.h"
#include "wrap.h"

/* nearest(): a candidate, and the order of the answer: nearer first, ties by id. */
typedef struct {
    double d;
    int64_t id;
} Cand;

static inline int
cand_before(const Cand *a, const Cand *b)
{
    return a->d < b->d || (a->d == b->d && a->id < b->id);
}

static int
cmp_cand(const void *pa, const void *pb)
{
    const Cand *a = pa, *b = pb;
    return cand_before(a, b) ? -1 : (cand_before(b, a) ? 1 : 0);
}

/* Whether every entry of a node whose gaps give `lb` is farther than r. hypot is faithfully
 * rounded and the node's gaps never exceed its entries', so an entry's computed distance is
 * at least lb * (1 - 2**-40) here, subnormals included (their error is absolute, below
 * 2**-1060): a margin that can only open a node too many. */
static inline int
too_far(double lb, double r)
{
    return lb > r * (1.0 + 0x1p-40) + 0x1p-1060;
}

QT_API int
open_push(Open **heap, Py_ssize_t *n, Py_ssize_t *cap, Open item)
{
    if (*n == *cap) {
        Py_ssize_t c = *cap < 64 ? 64 : *cap * 2;
        Open *p = PyMem_Realloc(*heap, (size_t)c * sizeof(Open));
        if (p == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        *heap = p;
        *cap = c;
    }
    Open *h = *heap;
    Py_ssize_t i = (*n)++;
    while (i > 0 && h[(i - 1) / 2].lb > item.lb) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = item;
    return 0;
}

QT_API Open
open_pop(Open *h, Py_ssize_t *n)
{
    Open top = h[0], last = h[--*n];
    Py_ssize_t i = 0;
    for (;;) {
        Py_ssize_t c = 2 * i + 1;
        if (c >= *n) {
            break;
        }
        if (c + 1 < *n && h[c + 1].lb < h[c].lb) {
            c++;
        }
        if (!(h[c].lb < last.lb)) {
            break;
        }
        h[i] = h[c];
        i = c;
    }
    h[i] = last;
    return top;
}

/* The best k as a max-heap on (d, id): best[0] is the worst of them. */
static void
best_sift_down(Cand *best, Py_ssize_t m)
{
    Py_ssize_t i = 0;
    Cand item = best[0];
    for (;;) {
        Py_ssize_t c = 2 * i + 1;
        if (c >= m) {
            break;
        }
        if (c + 1 < m && cand_before(&best[c], &best[c + 1])) {
            c++;
        }
        if (!cand_before(&item, &best[c])) {
            break;
        }
        best[i] = best[c];
        i = c;
    }
    best[i] = item;
}

static void
best_push(Cand *best, Py_ssize_t *m, Cand item)
{
    Py_ssize_t i = (*m)++;
    while (i > 0 && cand_before(&best[(i - 1) / 2], &item)) {
        best[i] = best[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    best[i] = item;
}

/* The list of the ids of best[0 .. m), in order. New reference, or NULL. */
static PyObject *
cand_list(const Cand *best, Py_ssize_t m)
{
    PyObject *result = PyList_New(m);
    for (Py_ssize_t i = 0; result != NULL && i < m; i++) {
        PyObject *id = PyLong_FromLongLong(best[i].id);
        if (id == NULL) {
            Py_CLEAR(result);
            break;
        }
        PyList_SET_ITEM(result, i, id);
    }
    return result;
}

/* quadtree.nearest: best first from the root, by the distance of each node's box; an entry
 * gets in when it beats the k-th so far (nearer, or as near with a smaller id) and where(id)
 * holds. The best into best[0 .. *m) (room for k), in order: 0, or -1 with an error
 * (where's included). */
static int
nearest_cands(Tree *t, double x, double y, Py_ssize_t k, PyObject *where, double limit,
              Cand *best, Py_ssize_t *found)
{
    Open *heap = NULL;
    Py_ssize_t m = 0, n_open = 0, cap_open = 0;
    int err = -1;
    double r = limit;     /* an entry must be within r ... */
    int full = 0;         /* ... and, once there are k, beat the worst of them */
    if (open_push(&heap, &n_open, &cap_open, (Open){0.0, t->root, 0}) < 0) {
        goto done;
    }
    while (n_open > 0) {
        Open o = open_pop(heap, &n_open);
        if (too_far(o.lb, r)) {
            break; /* every node still waiting is as far or farther */
        }
        const Node *nd = &t->nodes[o.node];
        for (int32_t s = nd->head; s != NO_SLOT; s = t->next[s]) {
            const double *b = &t->box[4 * (size_t)s];
            double dx = gap(x, b[0], b[2]), dy = gap(y, b[1], b[3]);
            if (dx > r || dy > r) {
                continue;
            }
            Cand c = {py_hypot(dx, dy), t->ids[s]};
            if (full ? !cand_before(&c, &best[0]) : !(c.d <= r)) {
                continue;
            }
            if (where != NULL) {
                PyObject *id = PyLong_FromLongLong(c.id);
                PyObject *verdict = id == NULL ? NULL : PyObject_CallOneArg(where, id);
                Py_XDECREF(id);
                int yes = verdict == NULL ? -1 : PyObject_IsTrue(verdict);
                Py_XDECREF(verdict);
                if (yes < 0) {
                    goto done;
                }
                if (!yes) {
                    continue;
                }
            }
            if (!full) {
                best_push(best, &m, c);
                full = m == k;
            }
            else {
                best[0] = c;
                best_sift_down(best, m);
            }
            if (full) {
                r = best[0].d;
            }
        }
        if (nd->kids[0] == NO_NODE) {
            continue;
        }
        for (int q = 0; q < 4; q++) {
            const Node *c = &t->nodes[nd->kids[q]];
            if (c->count == 0) {
                continue;
            }
            double dx = gap(x, c->x0, c->x1), dy = gap(y, c->y0, c->y1);
            if (dx > r || dy > r) {
                continue;
            }
            double lb = py_hypot(dx, dy);
            if (!too_far(lb, r) && open_push(&heap, &n_open, &cap_open, (Open){lb, nd->kids[q], 0}) < 0) {
                goto done;
            }
        }
    }
    qsort(best, (size_t)m, sizeof(Cand), cmp_cand);
    *found = m;
    err = 0;
done:
    PyMem_Free(heap);
    return err;
}

/* nearest_cands() as the list of ids, or NULL with the error. */
static PyObject *
nearest_ids(Tree *t, double x, double y, Py_ssize_t k, PyObject *where, double limit)
{
    Cand *best = PyMem_Malloc((size_t)k * sizeof(Cand));
    Py_ssize_t m = 0;
    if (best == NULL) {
        return PyErr_NoMemory();
    }
    PyObject *result = nearest_cands(t, x, y, k, where, limit, best, &m) < 0 ? NULL
                                                                             : cand_list(best, m);
    PyMem_Free(best);
    return result;
}

/* _tree_nearest._wrapped_nearest: by the minimum-image distance, ties by id. The plain
 * searches of the nine images of the wrapped point (in _wrap.point_images' order) give the
 * candidates, each ranked by its least distance from an image. The ids, or NULL and the
 * error (a point with no image, where's). */
static PyObject *
wrapped_nearest(Tree *t, double x, double y, Py_ssize_t k, PyObject *where, double limit)
{
    if (wrap_point(t->period, &x, &y) < 0) {
        return NULL;
    }
    if (k == 0) { /* no entities */
        return PyList_New(0);
    }
    double px[9], py[9];
    for (int i = 0; i < 9; i++) {
        const double sx[3] = {0.0, t->period[2], -t->period[2]};
        const double sy[3] = {0.0, t->period[3], -t->period[3]};
        px[i] = x + sx[i / 3];
        py[i] = y + sy[i % 3];
    }
    Cand *best = PyMem_Malloc((size_t)k * sizeof(Cand));
    I64Buf ids = {0};
    PyObject *result = NULL;
    Py_ssize_t m = 0;
    if (best == NULL) {
        return PyErr_NoMemory();
    }
    for (int i = 0; i < 9; i++) {
        if (nearest_cands(t, px[i], py[i], k, where, limit, best, &m) < 0
            || i64_reserve(&ids, m) < 0) {
            goto done;
        }
        for (Py_ssize_t j = 0; j < m; j++) {
            ids.p[ids.n++] = best[j].id;
        }
    }
    PyMem_Free(best);
    best = NULL;
    if (sort_unique(ids.p, &ids.n) < 0
        || (best = PyMem_Malloc((size_t)(ids.n > 0 ? ids.n : 1) * sizeof(Cand))) == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t j = 0; j < ids.n; j++) {
        const double *b = &t->box[4 * (size_t)find_slot(t, ids.p[j])];
        double d = INFINITY;
        for (int i = 0; i < 9; i++) {
            double h = py_hypot(gap(px[i], b[0], b[2]), gap(py[i], b[1], b[3]));
            d = h < d ? h : d;
        }
        best[j] = (Cand){d, ids.p[j]};
    }
    qsort(best, (size_t)ids.n, sizeof(Cand), cmp_cand);
    result = cand_list(best, ids.n < k ? ids.n : k);
done:
    PyMem_Free(best);
    PyMem_Free(ids.p);
    return result;
}

static const Params nearest_params = {"nearest", 3, 2, 5, {"x", "y", "k", "where", "max_distance"}};

QT_API PyObject *
Tree_nearest(Tree *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    double x, y, limit = INFINITY;
    PyObject *buf[MAX_PARAMS];
    PyObject *const *a = arguments(&nearest_params, args, nargs, kwnames, buf);
    if (a == NULL || guard(t, 0) < 0 || point_any(a[0], a[1], &x, &y) < 0) {
        return NULL;
    }
    PyObject *pk = a[2], *where = a[3] == NULL ? Py_None : a[3], *pmax = a[4]; /* borrowed */
    Py_ssize_t k = 1;
    if (pk != NULL) {
        int ok = PyLong_Check(pk) && !PyBool_Check(pk);
        if (ok) {
            int overflow;
            long long v = PyLong_AsLongLongAndOverflow(pk, &overflow);
            if (v == -1 && PyErr_Occurred()) {
                return NULL;
            }
            ok = overflow > 0 || (overflow == 0 && v >= 1);
            k = overflow > 0 || v > PY_SSIZE_T_MAX ? PY_SSIZE_T_MAX : (Py_ssize_t)v;
        }
        if (!ok) {
            PyErr_Format(PyExc_ValueError, MSG_BAD_K, pk);
            return NULL;
        }
    }
    if (pmax != NULL && float_arg(pmax, "max_distance", &limit) < 0) {
        return NULL;
    }
    if (!(limit >= 0.0)) { /* NaN fails too */
        PyErr_Format(PyExc_ValueError, MSG_BAD_MAX_DISTANCE, pmax);
        return NULL;
    }
    if (t->root == NO_NODE || (t->n == 0 && !t->wrapped)) {
        return PyList_New(0);
    }
    if (k > t->n) {
        k = t->n;
    }
    int watch = where != Py_None; /* where= may read the tree, never change it under the search */
    if (watch && walk_begin(t) < 0) {
        return NULL;
    }
    PyObject *result = t->wrapped ? wrapped_nearest(t, x, y, k, watch ? where : NULL, limit)
                                  : nearest_ids(t, x, y, k, watch ? where : NULL, limit);
    if (watch) {
        busy_end(t);
    }
    return result;
}
