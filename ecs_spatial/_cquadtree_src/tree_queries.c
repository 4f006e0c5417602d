/* tree_queries.c: queries: query, query_point, query_radius, nodes, depth.
 *
 * The twin of ecs_spatial/_tree_queries.py.
 */

#include "tree_queries.h"
#include "constants.h"
#include "containers.h"
#include "geometry.h"
#include "records.h"
#include "tree_storage.h"
#include "quadtree.h"

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

QT_API PyObject *
Tree_query(Tree *t, PyObject *box)
{
    double q[4];
    if (guard(t, 0) < 0 || box_any(box, NULL, q) < 0) {
        return NULL;
    }
    I64Buf out = {0};
    return ids_result(&out, query_ids(t, q, &out));
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
    I64Buf out = {0};
    return ids_result(&out, query_ids(t, q, &out));
}

/* Every id whose box is within r of (x, y): Box.distance_to_point(x, y) <= r, the hypot of
 * the gaps, exactly. A box with a gap above r on either axis is farther than r (hypot is
 * never below its larger argument), and so is every box of a node whose own gap is above r
 * (a node's gap is never above its entries': rounding is monotonic): both tests are exact. */
static int
radius_ids(const Tree *t, double x, double y, double r, I64Buf *out)
{
    if (t->root == NO_NODE) {
        return 0;
    }
    NodeStack stack;
    ns_init(&stack);
    int err = ns_push(&stack, t->root);
    while (err == 0 && stack.n > 0) {
        const Node *nd = &t->nodes[stack.p[--stack.n]];
        for (int32_t s = nd->head; s != NO_SLOT && err == 0; s = t->next[s]) {
            const double *b = &t->box[4 * (size_t)s];
            double dx = gap(x, b[0], b[2]), dy = gap(y, b[1], b[3]);
            if (dx <= r && dy <= r && py_hypot(dx, dy) <= r) {
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
    return ids_result(&out, radius_ids(t, x, y, r, &out));
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
