/* tree_check.c: check(): every invariant of tree.h and of the reference's module docstring.
 *
 * The twin of ecs_spatial/_tree_check.py.
 */

#include "tree_check.h"
#include "wrap.h"
#include "containers.h"
#include "geometry.h"
#include "growth.h"
#include "snapshots.h"
#include "tree_storage.h"
#include "tree_nodes.h"

#define CHECK(cond, ...)                                        \
    do {                                                        \
        if (!(cond)) {                                          \
            PyErr_Format(PyExc_AssertionError, __VA_ARGS__);    \
            goto fail;                                          \
        }                                                       \
    } while (0)

/* check()'s look at the entries of node `node`, each marked in slot_seen: their number, or
 * -1 with AssertionError. */
static int32_t
check_entries(Tree *t, int32_t node, unsigned char *slot_seen)
{
    const Node *nd = &t->nodes[node];
    int32_t held = 0, prev = NO_SLOT;
    for (int32_t s = nd->head; s != NO_SLOT; s = t->next[s]) {
        CHECK(0 <= s && s < t->n, "node %d lists slot %d", node, s);
        CHECK(!slot_seen[s], "slot %d held twice", s);
        slot_seen[s] = 1;
        held++;
        CHECK(t->prev[s] == prev, "slot %d list links", s);
        CHECK(t->node_of[s] == node, "slot %d names node %d, is in node %d", s, t->node_of[s],
              node);
        CHECK(find_slot(t, t->ids[s]) == s, "map disagrees for entity %lld",
              (long long)t->ids[s]);
        const double *b = &t->box[4 * (size_t)s];
        CHECK(valid_box(b), "entity %lld holds an invalid box", (long long)t->ids[s]);
        int inside = fits(nd, b);
        if (inside) {
            CHECK(nd->x0 <= b[0] && b[2] <= nd->x1 && nd->y0 <= b[1] && b[3] <= nd->y1,
                  "node %d fit bounds exceed its bounds", node);
        }
        else {
            CHECK(node == t->root && !can_grow_toward(t, b),
                  "entity %lld box outside node %d bounds", (long long)t->ids[s], node);
        }
        if (nd->kids[0] != NO_NODE && inside) {
            CHECK(quadrant(nd, b) < 0, "entity %lld at internal node %d fits into a child",
                  (long long)t->ids[s], node);
        }
        prev = s;
    }
    return held;
fail:
    return -1;
}

/* check()'s look at the children of internal node `node`, each pushed on stack and its count
 * added to *subtree: 0, or -1 with AssertionError or MemoryError. */
static int
check_kids(Tree *t, int32_t node, NodeStack *stack, int64_t *subtree)
{
    const Node *nd = &t->nodes[node];
    const double quads[4][8] = {
        {nd->x0, nd->y0, nd->cx, nd->cy, nd->fx0, nd->fy0, nd->cx, nd->cy},
        {nd->cx, nd->y0, nd->x1, nd->cy, nd->cx, nd->fy0, nd->fx1, nd->cy},
        {nd->x0, nd->cy, nd->cx, nd->y1, nd->fx0, nd->cy, nd->cx, nd->fy1},
        {nd->cx, nd->cy, nd->x1, nd->y1, nd->cx, nd->cy, nd->fx1, nd->fy1},
    };
    for (int q = 0; q < 4; q++) {
        int32_t c = nd->kids[q];
        CHECK(0 <= c && c < t->n_nodes, "node %d has child %d", node, c);
        const Node *cn = &t->nodes[c];
        CHECK(cn->parent == node, "node %d parent pointer", c);
        CHECK(cn->level == nd->level + 1, "node %d level", c);
        CHECK(cn->x0 == quads[q][0] && cn->y0 == quads[q][1] && cn->x1 == quads[q][2]
              && cn->y1 == quads[q][3], "node %d bounds", c);
        CHECK(cn->fx0 == quads[q][4] && cn->fy0 == quads[q][5] && cn->fx1 == quads[q][6]
              && cn->fy1 == quads[q][7], "node %d fit bounds", c);
        *subtree += cn->count;
        if (ns_push(stack, c) < 0) {
            goto fail;
        }
    }
    CHECK(nd->count > t->threshold, "internal node %d holds only %d entries", node,
          nd->count);
    CHECK(nd->level < t->max_depth, "node %d split below max_depth", node);
    return 0;
fail:
    return -1;
}

/* check()'s look at the snapshot table (node_seen: 1 for each node in the tree): 0, or -1
 * with AssertionError or MemoryError. */
static int
check_snapshots(Tree *t, const unsigned char *node_seen)
{
    /* quadtree.py's invariant 7: a fresh snapshot is exactly what its node's entries give. */
    for (int32_t i = 0; i < t->snaps_size; i++) {
        const SnapRef *r = &t->snaps[i];
        if (r->node == NO_NODE || !r->fresh) {
            continue;
        }
        CHECK(0 <= r->node && r->node < t->n_nodes && node_seen[r->node] == 1,
              "a fresh snapshot names node %d, which is not in the tree", r->node);
        CHECK(snap_find(t, r->node) == r, "snapshot of node %d listed twice", r->node);
        if (t->nodes[r->node].kids[0] == NO_NODE) {
            continue; /* a leaf's is marked when it turns internal */
        }
        Snap *now = NULL;
        if (snap_fill(t, r->node, &now) < 0) {
            PyMem_Free(now);
            PyErr_NoMemory();
            goto fail;
        }
        const Snap *sn = r->snap;
        int same = sn->n == now->n && sn->n_across == now->n_across
                   && memcmp(sn->across, now->across, sizeof(sn->across)) == 0
                   && memcmp(sn->along, now->along, sizeof(sn->along)) == 0
                   && memcmp(sn->reach, now->reach, (size_t)sn->n * sizeof(double)) == 0
                   && memcmp(snap_slots(sn), snap_slots(now),
                             (size_t)sn->n * sizeof(int32_t)) == 0;
        PyMem_Free(now);
        CHECK(same, "node %d snapshot is stale", r->node);
    }
    return 0;
fail:
    return -1;
}

/* QuadTree.check(): every invariant of the reference, and those of this layout. */
/* A wrapped tree's period finite and > 0, and every box canonical and within half of it
 * (_tree_check's last assertions). 0, or -1 and AssertionError. */
static int
check_period(const Tree *t)
{
    const double *p = t->period;
    if (!(0.0 < p[2] && p[2] < INFINITY && 0.0 < p[3] && p[3] < INFINITY)) {
        PyObject *period = period_tuple(p);
        if (period != NULL) {
            PyErr_Format(PyExc_AssertionError, "wrap period %R", period);
            Py_DECREF(period);
        }
        return -1;
    }
    for (int32_t s = 0; s < t->n; s++) {
        const double *b = &t->box[4 * (size_t)s];
        long long id = (long long)t->ids[s];
        if (!(p[0] <= b[0] && b[0] < p[4] && p[1] <= b[1] && b[1] < p[5])) {
            PyErr_Format(PyExc_AssertionError, "entity %lld: box not canonical", id);
            return -1;
        }
        if (!(b[2] - b[0] <= p[2] * 0.5 && b[3] - b[1] <= p[3] * 0.5)) {
            PyErr_Format(PyExc_AssertionError, "entity %lld: box wider than half the period", id);
            return -1;
        }
    }
    return 0;
}

QT_API PyObject *
Tree_check(Tree *t, PyObject *Py_UNUSED(ignored))
{
    if (guard(t, 0) < 0) {
        return NULL;
    }
    unsigned char *node_seen = NULL, *slot_seen = NULL;
    NodeStack stack;
    ns_init(&stack);
    if (t->root == NO_NODE) {
        CHECK(t->n == 0, "entities indexed but no root");
        goto ok;
    }
    node_seen = PyMem_Calloc((size_t)t->n_nodes + 1, 1);
    slot_seen = PyMem_Calloc((size_t)t->n + 1, 1);
    if (node_seen == NULL || slot_seen == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (int32_t i = 0; i < t->n_free; i++) {
        CHECK(0 <= t->free_nodes[i] && t->free_nodes[i] < t->n_nodes, "free list names node %d",
              t->free_nodes[i]);
        CHECK(!node_seen[t->free_nodes[i]], "node %d freed twice", t->free_nodes[i]);
        node_seen[t->free_nodes[i]] = 2;
    }
    CHECK(t->nodes[t->root].parent == NO_NODE, "root has a parent");
    int32_t live = 0;
    if (ns_push(&stack, t->root) < 0) {
        goto fail;
    }
    while (stack.n > 0) {
        int32_t node = stack.p[--stack.n];
        CHECK(node_seen[node] != 2, "live node %d is on the free list", node);
        CHECK(node_seen[node] == 0, "node %d reached twice", node);
        node_seen[node] = 1;
        live++;
        const Node *nd = &t->nodes[node];
        const double bounds[4] = {nd->x0, nd->y0, nd->x1, nd->y1};
        CHECK(valid_box(bounds), "node %d bounds", node);
        CHECK(nd->cx == midpoint(nd->x0, nd->x1) && nd->cy == midpoint(nd->y0, nd->y1),
              "node %d split point", node);
        if (node == t->root) {
            CHECK(nd->fx0 == nextafter(nd->x0, -INFINITY) && nd->fy0 == nextafter(nd->y0, -INFINITY)
                  && nd->fx1 == nextafter(nd->x1, INFINITY) && nd->fy1 == nextafter(nd->y1, INFINITY),
                  "root fit bounds");
        }
        int32_t held = check_entries(t, node, slot_seen);
        if (held < 0) {
            goto fail;
        }
        CHECK(held == nd->n, "node %d holds %d entries, says %d", node, held, nd->n);
        int64_t subtree = held;
        if (nd->kids[0] != NO_NODE) {
            if (check_kids(t, node, &stack, &subtree) < 0) {
                goto fail;
            }
        }
        else {
            CHECK(nd->n <= t->threshold || nd->level >= t->max_depth,
                  "leaf %d holds %d entries above max_depth", node, nd->n);
        }
        CHECK(nd->count == subtree, "node %d count %d", node, nd->count);
    }
    for (int32_t s = 0; s < t->n; s++) {
        CHECK(slot_seen[s], "entity %lld is in no node", (long long)t->ids[s]);
    }
    CHECK(t->nodes[t->root].count == t->n, "root count differs from len()");
    if (check_snapshots(t, node_seen) < 0) {
        goto fail;
    }
    CHECK(live == t->n_nodes - t->n_free, "%d node(s) leaked", t->n_nodes - t->n_free - live);
    {
        int64_t in_table = 0;
        for (size_t i = 0; i < t->table_size; i++) {
            in_table += t->table[i] != NO_SLOT;
        }
        CHECK(in_table == t->n, "the id map holds %lld ids for %d entities", (long long)in_table,
              t->n);
    }
ok:
    if (t->wrapped && check_period(t) < 0) {
        goto fail;
    }
    PyMem_Free(node_seen);
    PyMem_Free(slot_seen);
    ns_free(&stack);
    Py_RETURN_NONE;
fail:
    PyMem_Free(node_seen);
    PyMem_Free(slot_seen);
    ns_free(&stack);
    return NULL;
}
