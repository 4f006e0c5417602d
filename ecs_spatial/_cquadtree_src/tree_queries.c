/* tree_queries.c: queries: query, query_point, query_radius(_many), nodes, depth.
 *
 * The twin of ecs_spatial/_tree_queries.py.
 */

#include "tree_queries.h"
#include "constants.h"
#include "containers.h"
#include "geometry.h"
#include "records.h"
#include "snapshots.h"
#include "tree_storage.h"
#include "quadtree.h"
#include "wrap.h"

/* Every id whose box intersects q, each once (quadtree.query). */
static int
query_ids(const Tree *t, const double q[4], I64Buf *out)
{
    if (t->root == NO_NODE) {
        return 0;
    }
    NodeStack stack, covered;
    ns_init(&stack);
    ns_init(&covered);
    int r = ns_push(&stack, t->root);
    while (r == 0 && stack.n > 0) {
        const Node *nd = &t->nodes[stack.p[--stack.n]];
        for (int32_t s = nd->head; s != NO_SLOT && r == 0; s = t->next[s]) {
            if (overlaps(&t->box[4 * (size_t)s], q)) {
                r = i64_push(out, t->ids[s]);
            }
        }
        if (nd->kids[0] == NO_NODE) {
            continue;
        }
        for (int k = 0; k < 4 && r == 0; k++) {
            const Node *c = &t->nodes[nd->kids[k]];
            if (c->count > 0 && node_overlaps(c, q)) {
                /* a subtree wholly inside the box: every id, untested */
                int inside = q[0] <= c->x0 && c->x1 <= q[2] && q[1] <= c->y0 && c->y1 <= q[3];
                r = ns_push(inside ? &covered : &stack, nd->kids[k]);
            }
        }
    }
    while (r == 0 && covered.n > 0) {
        const Node *nd = &t->nodes[covered.p[--covered.n]];
        if (i64_reserve(out, nd->n) < 0) {
            r = -1;
            break;
        }
        for (int32_t s = nd->head; s != NO_SLOT; s = t->next[s]) {
            out->p[out->n++] = t->ids[s];
        }
        if (nd->kids[0] != NO_NODE) {
            for (int k = 0; k < 4 && r == 0; k++) {
                r = ns_push(&covered, nd->kids[k]);
            }
        }
    }
    ns_free(&stack);
    ns_free(&covered);
    return r;
}

/* The list of the ids in buf (freed), in ascending order: every answer that is a set of ids
 * (quadtree.query's docstring), or NULL if r < 0 (the error that r reports). New. */
QT_API PyObject *
ids_result(I64Buf *buf, int r)
{
    PyObject *list = r < 0 || sort_ids(buf->p, buf->n) < 0 ? NULL : id_list(buf->p, buf->n);
    PyMem_Free(buf->p);
    return list;
}

static const Params query_point_params = {"query_point", 2, 2, 2, {"x", "y"}};

static const Params query_radius_params = {"query_radius", 3, 3, 3, {"x", "y", "r"}};

/* The ids out holds from start on, sorted, each once. 0, or -1 and MemoryError. */
static int
unique_from(I64Buf *out, Py_ssize_t start)
{
    Py_ssize_t n = out->n - start;
    int r = sort_unique(out->p + start, &n);
    out->n = start + n;
    return r;
}

/* _tree_queries._wrapped_query: every id whose box meets the checked box q on the torus,
 * each once, ascending: each image of q (wrap.c's query_intervals, per axis) searched as a
 * plain box. Appended to out. */
QT_API int
wrapped_query(const Tree *t, const double q[4], I64Buf *out)
{
    Py_ssize_t start = out->n;
    double xs[3][2], ys[3][2];
    const double *p = t->period;
    int nx = query_intervals(q[0], q[2], p[0], p[2], p[4], xs);
    int ny = query_intervals(q[1], q[3], p[1], p[3], p[5], ys);
    for (int i = 0; i < nx; i++) {
        for (int j = 0; j < ny; j++) {
            const double image[4] = {xs[i][0], ys[j][0], xs[i][1], ys[j][1]};
            if (query_ids(t, image, out) < 0) {
                return -1;
            }
        }
    }
    return unique_from(out, start);
}

/* query() and query_point() of a checked box: the plain search, or the wrapped one. */
static PyObject *
query_answer(const Tree *t, const double q[4])
{
    I64Buf out = {0};
    return ids_result(&out, t->wrapped ? wrapped_query(t, q, &out) : query_ids(t, q, &out));
}

QT_API PyObject *
Tree_query(Tree *t, PyObject *box)
{
    double q[4];
    if (guard(t, 0) < 0 || box_any(box, NULL, q) < 0) {
        return NULL;
    }
    return query_answer(t, q);
}

QT_API PyObject *
Tree_query_point(Tree *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    double q[4];
    PyObject *buf[MAX_PARAMS];
    PyObject *const *a = arguments(&query_point_params, args, nargs, kwnames, buf);
    if (a == NULL || guard(t, 0) < 0 || point_any(a[0], a[1], &q[0], &q[1]) < 0) {
        return NULL;
    }
    q[2] = q[0];
    q[3] = q[1];
    return query_answer(t, q);
}

/* Whether the box at b is within r of (x, y): Box.distance_to_point(x, y) <= r, the hypot
 * of the gaps, exactly. A box with a gap above r on either axis is farther than r (hypot is
 * never below its larger argument): that test is exact, and spares most hypots. */
static inline int
near_point(const double *b, double x, double y, double r)
{
    double dx = gap(x, b[0], b[2]), dy = gap(y, b[1], b[3]);
    return dx <= r && dy <= r && py_hypot(dx, dy) <= r;
}

/* Push the id of each entry of a snapshot's group (sorted on axis k, reach[] its prefix's
 * extent on k: see Snap in tree.h) that is within r of (x, y), reading only the window of
 * those that can meet q, the circle's box widened as geometry.reach widens it (every box
 * within r meets it). */
static int
snap_within(const Tree *t, const Snap *sn, int grp, const double q[4], double x, double y,
            double r, I64Buf *out)
{
    int k = grp == 0 ? 1 : 0;
    int32_t lo = grp == 0 ? 0 : sn->n_across, hi = grp == 0 ? sn->n_across : sn->n;
    int32_t end = hi;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (sn->reach[mid] < q[k]) {
            lo = mid + 1;
        }
        else {
            hi = mid;
        }
    }
    const int32_t *slot = snap_slots(sn);
    for (int32_t i = lo; i < end; i++) {
        const double *b = &t->box[4 * (size_t)slot[i]];
        if (b[k] > q[k + 2]) {
            break;
        }
        if (near_point(b, x, y, r) && i64_push(out, t->ids[slot[i]]) < 0) {
            return -1;
        }
    }
    return 0;
}

/* Every id whose box is within r of (x, y) (near_point()). Every box of a node whose own
 * gap is above r is farther than r (a node's gap is never above its entries': rounding is
 * monotonic). An internal node of SNAP_MIN own entries or more (the straddlers near the
 * root, hundreds in a large world) is read through its snapshot, as the reference reads it:
 * its two groups ruled out by their bounding boxes, else a bisected window of each. Builds
 * a stale snapshot (memory only, no Python). */
static int
radius_ids(Tree *t, double x, double y, double r, I64Buf *out)
{
    if (t->root == NO_NODE) {
        return 0;
    }
    double slack = (fabs(x) + fabs(y) + r) * 1e-12 + 1e-300; /* geometry.reach */
    const double q[4] = {x - r - slack, y - r - slack, x + r + slack, y + r + slack};
    NodeStack stack;
    ns_init(&stack);
    int err = ns_push(&stack, t->root);
    while (err == 0 && stack.n > 0) {
        int32_t node = stack.p[--stack.n];
        const Snap *sn = NULL;
        if (t->nodes[node].n >= SNAP_MIN && t->nodes[node].kids[0] != NO_NODE
            && (sn = snap_get(t, node)) == NULL && PyErr_Occurred()) {
            err = -1;
            break;
        }
        const Node *nd = &t->nodes[node];
        for (int grp = 0; grp < 2 && sn != NULL && err == 0; grp++) {
            if (overlaps(grp == 0 ? sn->across : sn->along, q)) {
                err = snap_within(t, sn, grp, q, x, y, r, out);
            }
        }
        int32_t first = sn != NULL ? NO_SLOT : nd->head; /* read one by one */
        for (int32_t s = first; s != NO_SLOT && err == 0; s = t->next[s]) {
            if (near_point(&t->box[4 * (size_t)s], x, y, r)) {
                err = i64_push(out, t->ids[s]);
            }
        }
        if (nd->kids[0] == NO_NODE) {
            continue;
        }
        for (int k = 0; k < 4 && err == 0; k++) {
            const Node *c = &t->nodes[nd->kids[k]];
            if (c->count > 0 && gap(x, c->x0, c->x1) <= r && gap(y, c->y0, c->y1) <= r) {
                err = ns_push(&stack, nd->kids[k]);
            }
        }
    }
    ns_free(&stack);
    return err;
}

/* _tree_queries._wrapped_radius_ids: the ids within r of one of the nine images of the
 * wrapped point (x, y), point and radius checked, appended to out, ascending, each once.
 * 0, or -1 and the error (a point with no image: wrap.c's wrap_point). */
static int
wrapped_radius_ids(Tree *t, double x, double y, double r, I64Buf *out)
{
    Py_ssize_t start = out->n;
    if (wrap_point(t->period, &x, &y) < 0) {
        return -1;
    }
    const double sx[3] = {0.0, t->period[2], -t->period[2]};
    const double sy[3] = {0.0, t->period[3], -t->period[3]};
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) {
            if (radius_ids(t, x + sx[i], y + sy[j], r, out) < 0) {
                return -1;
            }
        }
    }
    return unique_from(out, start);
}

QT_API PyObject *
Tree_query_radius(Tree *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    double x, y, r;
    PyObject *buf[MAX_PARAMS];
    PyObject *const *a = arguments(&query_radius_params, args, nargs, kwnames, buf);
    if (a == NULL || guard(t, 0) < 0 || point_any(a[0], a[1], &x, &y) < 0
        || float_arg(a[2], "radius", &r) < 0) {
        return NULL;
    }
    if (!(0.0 <= r && r < INFINITY)) {
        PyErr_Format(PyExc_ValueError, MSG_BAD_RADIUS, a[2]);
        return NULL;
    }
    I64Buf out = {0};
    if (!t->wrapped) {
        return ids_result(&out, radius_ids(t, x, y, r, &out));
    }
    if (check_wrapped_radius(t->period, r, -1) < 0) {
        return NULL;
    }
    return ids_result(&out, wrapped_radius_ids(t, x, y, r, &out));
}

/* query_radius_many: its arguments are read into C memory first, in full (an iterator, a
 * __float__ and the reference's helpers for the uncommon items are Python: see "Python inside
 * the core" in tree.h), then the tree is read with no Python, then the two arrays are made.
 * Items that are not plain finite floats go through _tree_queries.many_point and many_radius,
 * so that every refusal has the reference's text. */
static const Params query_radius_many_params = {"query_radius_many", 2, 2, 2, {"points", "radius"}};

/* Point i as two finite floats into out: a tuple or a list (numpy's tolist() gives lists)
 * of two finite floats here, any other item through _tree_queries.many_point (its pair, or
 * its error). 0, or -1. */
static int
many_point_item(PyObject *item, Py_ssize_t i, double out[2])
{
    PyObject *x = NULL, *y = NULL; /* borrowed */
    if (PyTuple_CheckExact(item) && PyTuple_GET_SIZE(item) == 2) {
        x = PyTuple_GET_ITEM(item, 0);
        y = PyTuple_GET_ITEM(item, 1);
    }
    else if (PyList_CheckExact(item) && PyList_GET_SIZE(item) == 2) {
        x = PyList_GET_ITEM(item, 0);
        y = PyList_GET_ITEM(item, 1);
    }
    if (x != NULL && PyFloat_CheckExact(x) && PyFloat_CheckExact(y)) {
        out[0] = PyFloat_AS_DOUBLE(x);
        out[1] = PyFloat_AS_DOUBLE(y);
        if (isfinite(out[0]) && isfinite(out[1])) {
            return 0;
        }
    }
    PyObject *pair = PyObject_CallFunction(ref_many_point, "On", item, i); /* new */
    if (pair == NULL) {
        return -1;
    }
    int r = -1;
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
        PyErr_SetString(PyExc_SystemError, "_tree_queries.many_point returned no pair");
    }
    else {
        out[0] = PyFloat_AsDouble(PyTuple_GET_ITEM(pair, 0));
        out[1] = PyFloat_AsDouble(PyTuple_GET_ITEM(pair, 1));
        r = PyErr_Occurred() ? -1 : 0;
    }
    Py_DECREF(pair);
    return r;
}

/* Radius i into out: a finite float >= 0 here, any other value through
 * _tree_queries.many_radius (its float, or its error). 0, or -1. */
static int
many_radius_item(PyObject *value, Py_ssize_t i, double *out)
{
    if (PyFloat_CheckExact(value)) {
        *out = PyFloat_AS_DOUBLE(value);
        if (0.0 <= *out && *out < INFINITY) {
            return 0;
        }
    }
    PyObject *r = PyObject_CallFunction(ref_many_radius, "On", value, i); /* new */
    if (r == NULL) {
        return -1;
    }
    *out = PyFloat_AsDouble(r);
    Py_DECREF(r);
    return (*out == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

/* The points of a buffer of doubles (view, released here) into xy, each checked in turn. */
static int
points_of_buffer(Py_buffer *view, DBuf *xy)
{
    Py_ssize_t floats = view->len / 8;
    if (!((view->ndim <= 1 && floats % 2 == 0) || (view->ndim == 2 && view->shape[1] == 2))) {
        PyErr_Format(PyExc_ValueError, MSG_POINTS_SHAPE, floats, view->ndim);
        PyBuffer_Release(view);
        return -1;
    }
    if (dbuf_reserve(xy, floats) < 0) {
        PyBuffer_Release(view);
        return -1;
    }
    if (floats > 0) {
        memcpy(xy->p, view->buf, (size_t)floats * sizeof(double));
    }
    PyBuffer_Release(view);
    xy->n = floats;
    for (Py_ssize_t i = 0; i < floats / 2; i++) {
        double *p = &xy->p[2 * i];
        if (!(isfinite(p[0]) && isfinite(p[1]))) { /* its error, through the reference */
            PyObject *item = Py_BuildValue("(dd)", p[0], p[1]); /* new */
            if (item != NULL) {
                many_point_item(item, i, p);
                Py_DECREF(item);
            }
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_SystemError, "_tree_queries.many_point took a bad point");
            }
            return -1;
        }
    }
    return 0;
}

/* query_radius_many's points into xy (2 doubles each): a buffer of doubles (flat, or rows of
 * 2), or an iterable of pairs. 0, or -1 and the reference's error. */
static int
many_points(PyObject *points, DBuf *xy)
{
    Py_buffer view;
    if (typed_buffer(points, &view, 1) == 1) {
        return points_of_buffer(&view, xy);
    }
    PyObject *it = PyObject_GetIter(points); /* new */
    if (it == NULL) {
        return -1;
    }
    PyObject *item;
    int r = 0;
    for (Py_ssize_t i = 0; r == 0 && (item = PyIter_Next(it)) != NULL; i++) { /* new */
        r = dbuf_reserve(xy, 2) < 0 || many_point_item(item, i, &xy->p[xy->n]) < 0 ? -1 : 0;
        xy->n += r == 0 ? 2 : 0;
        Py_DECREF(item);
    }
    Py_DECREF(it);
    return r < 0 || PyErr_Occurred() ? -1 : 0;
}

/* query_radius_many's radii for n points: *per (n doubles, PyMem, the caller frees it) from
 * a flat buffer of doubles or an iterable, each checked in turn, then the length; or *per
 * NULL and *one, for one number (or a buffer of no dimension). 0, or -1 and the error. */
static int
many_radii(PyObject *radius, Py_ssize_t n, double **per, double *one)
{
    Py_buffer view;
    PyObject *it = NULL; /* new */
    Py_ssize_t m = 0, i = 0;
    double *r = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    if (r == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *per = r;
    if (typed_buffer(radius, &view, 1) == 1) {
        int ndim = view.ndim;
        m = view.len / 8;
        if (ndim == 1 && m > 0) {
            memcpy(r, view.buf, (size_t)(m < n ? m : n) * sizeof(double));
        }
        PyBuffer_Release(&view);
        if (ndim > 1) {
            PyErr_SetString(PyExc_ValueError, MSG_FLAT_RADII);
            return -1;
        }
        for (i = 0; ndim == 1 && i < n && i < m; i++) {
            if (!(0.0 <= r[i] && r[i] < INFINITY)) { /* its error, through the reference */
                PyObject *value = PyFloat_FromDouble(r[i]); /* new */
                if (value != NULL) {
                    many_radius_item(value, i, &r[i]);
                    Py_DECREF(value);
                }
                if (!PyErr_Occurred()) {
                    PyErr_SetString(PyExc_SystemError,
                                    "_tree_queries.many_radius took a bad radius");
                }
                return -1;
            }
        }
        if (ndim == 1) {
            return m == n ? 0 : (PyErr_SetString(PyExc_ValueError, MSG_RADII_DIFFER), -1);
        }
    }
    else if ((it = PyObject_GetIter(radius)) == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) {
            return -1;
        }
        PyErr_Clear();
    }
    if (it == NULL) { /* one radius for all, as query_radius takes it */
        PyMem_Free(r);
        *per = NULL;
        if (float_arg(radius, "radius", one) < 0) {
            return -1;
        }
        if (!(0.0 <= *one && *one < INFINITY)) {
            PyErr_Format(PyExc_ValueError, MSG_BAD_RADIUS, radius);
            return -1;
        }
        return 0;
    }
    PyObject *item;
    int err = 0;
    for (i = 0; !err && (item = PyIter_Next(it)) != NULL; i++) { /* new */
        err = i == n ? (PyErr_SetString(PyExc_ValueError, MSG_RADII_DIFFER), -1)
                     : many_radius_item(item, i, &r[i]);
        Py_DECREF(item);
    }
    Py_DECREF(it);
    if (err || PyErr_Occurred()) {
        return -1;
    }
    return i == n ? 0 : (PyErr_SetString(PyExc_ValueError, MSG_RADII_DIFFER), -1);
}

/* v's 15 bits spread to the even bits of a 30-bit Z-order (Morton) code. */
static inline uint64_t
spread15(uint64_t v)
{
    v &= 0x7fff;
    v = (v | (v << 8)) & 0x00ff00ffu;
    v = (v | (v << 4)) & 0x0f0f0f0fu;
    v = (v | (v << 2)) & 0x33333333u;
    v = (v | (v << 1)) & 0x55555555u;
    return v;
}

/* Where v lies in [lo, hi], as 15 bits (halves: no difference overflows, and rounding is
 * monotonic, so the quotient stays in [0, 1]). */
static inline uint64_t
cell15(double v, double lo, double hi)
{
    double span = hi * 0.5 - lo * 0.5;
    return span > 0.0 ? (uint64_t)((v * 0.5 - lo * 0.5) / span * 32767.0) : 0;
}

/* The order in which to answer the points: along a Z-order curve over their bounding box
 * (the code above the index in each key, the keys sorted), so that points near each other
 * are answered one after another and find the nodes and boxes they share in the CPU's
 * cache; the answers do not depend on it. 1 if order holds it, 0 if the points are to be
 * answered as given (too many to key), -1 and MemoryError. */
static int
visit_order(const double *xy, Py_ssize_t n, int64_t *order)
{
    if (n > INT32_MAX) {
        return 0;
    }
    double lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
    for (Py_ssize_t i = 0; i < 2 * n; i++) {
        lo[i & 1] = xy[i] < lo[i & 1] ? xy[i] : lo[i & 1];
        hi[i & 1] = xy[i] > hi[i & 1] ? xy[i] : hi[i & 1];
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t z = spread15(cell15(xy[2 * i], lo[0], hi[0]))
                     | spread15(cell15(xy[2 * i + 1], lo[1], hi[1])) << 1;
        order[i] = (int64_t)(z << 32 | (uint64_t)i);
    }
    return sort_ids(order, n) < 0 ? -1 : 1;
}

/* The ids within r_i of each point i, appended to ids, each point's in ascending order, and
 * offsets (n + 1 of them, from 0) where each point's begin and end. The points are answered
 * in visit_order() into found, then copied out in their own order. Reads the tree, runs no
 * Python. 0, or -1 and MemoryError. */
static int
many_answers(Tree *t, const double *xy, const double *per, double one, Py_ssize_t n,
             I64Buf *offsets, I64Buf *ids)
{
    I64Buf found = {0};
    /* the order of visit, then each point's start and length in found */
    int64_t *order = PyMem_Malloc((size_t)(n > 0 ? n : 1) * 3 * sizeof(int64_t));
    if (order == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int64_t *span = order + n;
    int ordered = visit_order(xy, n, order);
    int err = ordered < 0 ? -1 : 0;
    for (Py_ssize_t k = 0; err == 0 && k < n; k++) {
        Py_ssize_t i = ordered ? (Py_ssize_t)(order[k] & 0xffffffff) : k, start = found.n;
        double r = per != NULL ? per[i] : one;
        err = (t->wrapped ? wrapped_radius_ids(t, xy[2 * i], xy[2 * i + 1], r, &found)
                          : radius_ids(t, xy[2 * i], xy[2 * i + 1], r, &found)) < 0
              || sort_ids(found.p + start, found.n - start) < 0 ? -1 : 0;
        span[2 * i] = start;
        span[2 * i + 1] = found.n - start;
    }
    if (err == 0 && (i64_reserve(offsets, n + 1) < 0 || i64_reserve(ids, found.n) < 0)) {
        err = -1;
    }
    if (err == 0) {
        offsets->p[offsets->n++] = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            if (span[2 * i + 1] > 0) {
                memcpy(ids->p + ids->n, found.p + span[2 * i],
                       (size_t)span[2 * i + 1] * sizeof(int64_t));
            }
            ids->n += span[2 * i + 1];
            offsets->p[offsets->n++] = ids->n;
        }
    }
    PyMem_Free(order);
    PyMem_Free(found.p);
    return err;
}

/* query_radius_many's checks of a wrapped tree, in the reference's order: the radii (over
 * half the smaller period, by position), then each point's image, so that many_answers()
 * meets no refusal whatever order it answers the points in. 0, or -1 and the error. */
static int
wrapped_many_check(const Tree *t, const DBuf *xy, const double *per, double one)
{
    Py_ssize_t n = xy->n / 2;
    if (per == NULL && check_wrapped_radius(t->period, one, -1) < 0) {
        return -1;
    }
    for (Py_ssize_t i = 0; per != NULL && i < n; i++) {
        if (check_wrapped_radius(t->period, per[i], i) < 0) {
            return -1;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        double x = xy->p[2 * i], y = xy->p[2 * i + 1];
        if (wrap_point(t->period, &x, &y) < 0) {
            return -1;
        }
    }
    return 0;
}

QT_API PyObject *
Tree_query_radius_many(Tree *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *buf[MAX_PARAMS];
    PyObject *const *a = arguments(&query_radius_many_params, args, nargs, kwnames, buf);
    if (a == NULL || guard(t, 0) < 0) {
        return NULL;
    }
    DBuf xy = {0};
    double *per = NULL, one = 0.0;
    I64Buf offsets = {0}, ids = {0};
    PyObject *result = NULL;
    /* guard() again: the arguments' Python ran since (a tree broken meanwhile is not read) */
    if (many_points(a[0], &xy) == 0 && many_radii(a[1], xy.n / 2, &per, &one) == 0
        && guard(t, 0) == 0 && (!t->wrapped || wrapped_many_check(t, &xy, per, one) == 0)
        && many_answers(t, xy.p, per, one, xy.n / 2, &offsets, &ids) == 0) {
        PyObject *o = id_array(offsets.p, offsets.n);          /* new */
        PyObject *i = o == NULL ? NULL : id_array(ids.p, ids.n); /* new */
        result = i == NULL ? NULL : PyTuple_Pack(2, o, i);
        Py_XDECREF(o);
        Py_XDECREF(i);
    }
    PyMem_Free(xy.p);
    PyMem_Free(per);
    PyMem_Free(offsets.p);
    PyMem_Free(ids.p);
    return result;
}

/* A node as nodes() lists it: its box, its depth below the root, its own entries. */
typedef struct {
    double box[4];
    int32_t depth, n;
} NodeRow;

/* Whether node nd's closed bounds meet the closed box q (geometry's one rule). */
static inline int
node_meets(const Node *nd, const double q[4])
{
    return nd->x0 <= q[2] && q[0] <= nd->x1 && nd->y0 <= q[3] && q[1] <= nd->y1;
}

static const Params nodes_params = {"nodes", 1, 0, 1, {"box"}};

QT_API PyObject *
Tree_nodes(Tree *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *buf[MAX_PARAMS];
    PyObject *const *a = arguments(&nodes_params, args, nargs, kwnames, buf);
    PyObject *box = a == NULL || a[0] == NULL ? Py_None : a[0]; /* borrowed */
    double q[4];
    if (a == NULL || guard(t, 0) < 0 || (box != Py_None && box_any(box, NULL, q) < 0)) {
        return NULL;
    }
    int all = box == Py_None, err = 0;
    /* Root first, depth-first, children in order: the reference's order. Pairs (node,
     * depth) on one stack. With a box, only the nodes that meet it are pushed: a child lies
     * inside its parent, so a subtree whose root misses the box holds no node that meets it.
     * The walk copies each node's row; the NodeInfos are made from the copy afterwards (their
     * __new__ is Python code: see "Python inside the core" in tree.h). */
    NodeRow *rows = NULL;
    Py_ssize_t n_rows = 0, cap_rows = 0;
    if (t->root != NO_NODE && (all || node_meets(&t->nodes[t->root], q))) {
        NodeStack stack;
        ns_init(&stack);
        err = ns_push(&stack, t->root) < 0 || ns_push(&stack, 0) < 0;
        while (!err && stack.n > 0) {
            int32_t depth = stack.p[--stack.n];
            const Node *nd = &t->nodes[stack.p[--stack.n]];
            if (n_rows == cap_rows) {
                Py_ssize_t cap = cap_rows < 16 ? 16 : cap_rows * 2;
                NodeRow *p = PyMem_Realloc(rows, (size_t)cap * sizeof(NodeRow));
                if (p == NULL) {
                    PyErr_NoMemory();
                    err = 1;
                    break;
                }
                rows = p;
                cap_rows = cap;
            }
            rows[n_rows++] = (NodeRow){{nd->x0, nd->y0, nd->x1, nd->y1}, depth, nd->n};
            for (int k = 3; k >= 0 && !err && nd->kids[0] != NO_NODE; k--) {
                if (all || node_meets(&t->nodes[nd->kids[k]], q)) {
                    err = ns_push(&stack, nd->kids[k]) < 0 || ns_push(&stack, depth + 1) < 0;
                }
            }
        }
        ns_free(&stack);
    }
    PyObject *list = err ? NULL : PyList_New(0);
    for (Py_ssize_t i = 0; list != NULL && i < n_rows; i++) {
        const NodeRow *row = &rows[i];
        PyObject *nb = make_box(row->box[0], row->box[1], row->box[2], row->box[3]);
        PyObject *info = nb == NULL ? NULL
                         : PyObject_CallFunction(NodeInfoType, "Oii", nb, (int)row->depth,
                                                 (int)row->n);
        Py_XDECREF(nb);
        if (info == NULL || PyList_Append(list, info) < 0) {
            Py_CLEAR(list);
        }
        Py_XDECREF(info);
    }
    PyMem_Free(rows);
    if (list == NULL) {
        return NULL;
    }
    PyObject *it = PyObject_GetIter(list);
    Py_DECREF(list);
    return it;
}

QT_API PyObject *
Tree_depth(Tree *t, PyObject *Py_UNUSED(ignored))
{
    if (guard(t, 0) < 0) {
        return NULL;
    }
    int32_t deepest = 0;
    NodeStack stack;
    ns_init(&stack);
    int err = t->root == NO_NODE ? 0 : (ns_push(&stack, t->root) < 0 || ns_push(&stack, 0) < 0);
    while (!err && stack.n > 0) {
        int32_t depth = stack.p[--stack.n];
        const Node *nd = &t->nodes[stack.p[--stack.n]];
        if (depth > deepest) {
            deepest = depth;
        }
        for (int q = 0; q < 4 && !err && nd->kids[0] != NO_NODE; q++) {
            err = ns_push(&stack, nd->kids[q]) < 0 || ns_push(&stack, depth + 1) < 0;
        }
    }
    ns_free(&stack);
    return err ? NULL : PyLong_FromLong(deepest);
}
