/* tree_nodes.c: nodes: place, sink, split, merge, relocate, rebuild, compact.
 *
 * The twin of ecs_spatial/_tree_nodes.py.
 */

#include "tree_nodes.h"
#include "containers.h"
#include "geometry.h"
#include "snapshots.h"
#include "tree_storage.h"
#include "tree_updates.h"

/* Room for `more` new nodes without allocating, or -1 and MemoryError, nothing changed. */
static int
reserve_nodes(Tree *t, int32_t more)
{
    if (t->n_free + (t->cap_nodes - t->n_nodes) >= more) {
        return 0;
    }
    /* A quarter more each time: each node costs sizeof(Node) and four int32 of capacity
     * (free list, work), which doubling would leave idle by up to half (memory per entity is
     * a target: see docs/design.md#decisions). */
    int64_t cap = t->cap_nodes < 16 ? 16 : (int64_t)t->cap_nodes + t->cap_nodes / 4;
    while (cap - t->n_nodes + t->n_free < more) {
        cap += cap / 4;
    }
    if (cap > MAX_COUNT) {
        PyErr_SetString(PyExc_OverflowError, "a QuadTree has fewer than 2**30 nodes");
        return -1;
    }
    if (grow_array((void **)&t->nodes, (int32_t)cap, sizeof(Node)) < 0
        || grow_array((void **)&t->free_nodes, (int32_t)cap, sizeof(int32_t)) < 0
        || grow_array((void **)&t->work, (int32_t)cap + 1, sizeof(Work)) < 0) {
        return -1;
    }
    t->cap_nodes = (int32_t)cap;
    return 0;
}

/* A node with these bounds (room reserved by the caller). The split point is the midpoint,
 * which never overflows (geometry.midpoint). */
static int32_t
node_new(Tree *t, double x0, double y0, double x1, double y1,
         double fx0, double fy0, double fx1, double fy1, int32_t parent, int32_t level)
{
    int32_t i = t->n_free > 0 ? t->free_nodes[--t->n_free] : t->n_nodes++;
    Node *nd = &t->nodes[i];
    nd->x0 = x0;
    nd->y0 = y0;
    nd->x1 = x1;
    nd->y1 = y1;
    nd->cx = midpoint(x0, x1);
    nd->cy = midpoint(y0, y1);
    nd->fx0 = fx0;
    nd->fy0 = fy0;
    nd->fx1 = fx1;
    nd->fy1 = fy1;
    nd->parent = parent;
    nd->kids[0] = nd->kids[1] = nd->kids[2] = nd->kids[3] = NO_NODE;
    nd->level = level;
    nd->count = 0;
    nd->n = 0;
    nd->head = NO_SLOT;
    return i;
}

/* _tree_storage._new_root: a root whose fit bounds are its bounds, closed (one ulp outward). */
QT_API int
new_root(Tree *t, const double b[4], int32_t level)
{
    if (reserve_nodes(t, 1) < 0) {
        return -1;
    }
    t->root = node_new(t, b[0], b[1], b[2], b[3], nextafter(b[0], -INFINITY),
                       nextafter(b[1], -INFINITY), nextafter(b[2], INFINITY),
                       nextafter(b[3], INFINITY), NO_NODE, level);
    return 0;
}

/* Forget every node (their memory stays for the next ones). */
QT_API void
clear_nodes(Tree *t)
{
    snaps_drop(t);
    t->n_nodes = 0;
    t->n_free = 0;
    t->root = NO_NODE;
}

static inline void
link_entry(Tree *t, int32_t node, int32_t s)
{
    snap_changed(t, node);
    Node *nd = &t->nodes[node];
    int32_t h = nd->head;
    t->prev[s] = NO_SLOT;
    t->next[s] = h;
    if (h != NO_SLOT) {
        t->prev[h] = s;
    }
    nd->head = s;
    nd->n++;
    t->node_of[s] = node;
}

/* _tree_nodes._make_kids: four empty children (room reserved here, so all or nothing). */
static int
make_kids(Tree *t, int32_t node)
{
    if (reserve_nodes(t, 4) < 0) {
        return -1;
    }
    Node p = t->nodes[node]; /* a copy: node_new writes into the same array */
    int32_t level = p.level + 1;
    int32_t k0 = node_new(t, p.x0, p.y0, p.cx, p.cy, p.fx0, p.fy0, p.cx, p.cy, node, level);
    int32_t k1 = node_new(t, p.cx, p.y0, p.x1, p.cy, p.cx, p.fy0, p.fx1, p.cy, node, level);
    int32_t k2 = node_new(t, p.x0, p.cy, p.cx, p.y1, p.fx0, p.cy, p.cx, p.fy1, node, level);
    int32_t k3 = node_new(t, p.cx, p.cy, p.x1, p.y1, p.cx, p.cy, p.fx1, p.fy1, node, level);
    Node *nd = &t->nodes[node];
    nd->kids[0] = k0;
    nd->kids[1] = k1;
    nd->kids[2] = k2;
    nd->kids[3] = k3;
    return 0;
}

/* _tree_storage._descend: place a batch (slots chained through next[], counted nowhere yet, each
 * inside the node's closed bounds unless the node is the root) at or below `node`. A leaf
 * takes its batch unless that overflows it below max_depth; then it becomes internal and its
 * own entries join the batch. Only the root keeps boxes beyond its fit bounds.
 * -1 only if memory runs out for new nodes: the tree is then broken (the batch half placed). */
QT_API int
descend(Tree *t, int32_t node, int32_t head, int32_t len)
{
    int32_t sp = 0;
    t->work[sp++].frame = (Frame){node, head, len};
    while (sp > 0) {
        Frame f = t->work[--sp].frame;
        Node *nd = &t->nodes[f.node];
        int32_t s, nxt;
        nd->count += f.len;
        if (nd->kids[0] == NO_NODE) {
            if ((int64_t)nd->n + f.len <= t->threshold || nd->level >= t->max_depth) {
                for (s = f.head; s != NO_SLOT; s = nxt) {
                    nxt = t->next[s];
                    link_entry(t, f.node, s);
                }
                continue;
            }
            if (make_kids(t, f.node) < 0) {
                t->broken = 1;
                return -1;
            }
            snap_changed(t, f.node); /* a leaf turns internal (see SnapRef) */
            nd = &t->nodes[f.node];
            for (s = nd->head; s != NO_SLOT; s = nxt) {
                nxt = t->next[s];
                t->next[s] = f.head;
                f.head = s;
                f.len++;
            }
            nd->head = NO_SLOT;
            nd->n = 0;
        }
        int is_root = f.node == t->root;
        int32_t part[4] = {NO_SLOT, NO_SLOT, NO_SLOT, NO_SLOT};
        int32_t part_len[4] = {0, 0, 0, 0};
        for (s = f.head; s != NO_SLOT; s = nxt) {
            nxt = t->next[s];
            const double *b = &t->box[4 * (size_t)s];
            int q = (is_root && !fits(nd, b)) ? -1 : quadrant(nd, b);
            if (q < 0) {
                link_entry(t, f.node, s);
            }
            else {
                t->next[s] = part[q];
                part[q] = s;
                part_len[q]++;
            }
        }
        for (int q = 0; q < 4; q++) {
            if (part_len[q] > 0) {
                t->work[sp++].frame = (Frame){nd->kids[q], part[q], part_len[q]};
            }
        }
    }
    return 0;
}

/* _tree_nodes._split: an overflowing leaf's entries go down as one batch. */
static int
split(Tree *t, int32_t node)
{
    /* (a leaf turns internal: the link that overflowed it marked its snapshot, see SnapRef) */
    Node *nd = &t->nodes[node];
    int32_t head = NO_SLOT, len = 0, s, nxt;
    for (s = nd->head; s != NO_SLOT; s = nxt) {
        nxt = t->next[s];
        t->next[s] = head;
        head = s;
        len++;
    }
    nd->head = NO_SLOT;
    nd->n = 0;
    nd->count -= len;
    return descend(t, node, head, len);
}

/* _tree_nodes._sink: place slot s at or below `node` (whose count already includes it). */
static int
sink(Tree *t, int32_t s, int32_t node)
{
    const double *b = &t->box[4 * (size_t)s];
    Node *nd = &t->nodes[node];
    while (nd->kids[0] != NO_NODE) {
        int q = quadrant(nd, b);
        if (q < 0) {
            break;
        }
        node = nd->kids[q];
        nd = &t->nodes[node];
        nd->count++;
    }
    link_entry(t, node, s);
    if (nd->kids[0] == NO_NODE && nd->n > t->threshold && nd->level < t->max_depth) {
        return split(t, node);
    }
    return 0;
}

/* _tree_storage._place: add slot s under the root. */
QT_API int
place(Tree *t, int32_t s)
{
    Node *r = &t->nodes[t->root];
    r->count++;
    if (fits(r, &t->box[4 * (size_t)s])) {
        return sink(t, s, t->root);
    }
    link_entry(t, t->root, s);
    if (r->kids[0] == NO_NODE && r->n > t->threshold && r->level < t->max_depth) {
        return split(t, t->root);
    }
    return 0;
}

/* _tree_storage._merge: collapse the subtree under `node` into `node`, freeing its nodes. */
QT_API void
merge(Tree *t, int32_t node)
{
    Node *nd = &t->nodes[node];
    int32_t sp = 0;
    for (int q = 0; q < 4; q++) {
        t->work[sp++].node = nd->kids[q];
        nd->kids[q] = NO_NODE;
    }
    while (sp > 0) {
        int32_t c = t->work[--sp].node;
        Node *cn = &t->nodes[c];
        int32_t s, nxt;
        for (s = cn->head; s != NO_SLOT; s = nxt) {
            nxt = t->next[s];
            link_entry(t, node, s);
        }
        if (cn->kids[0] != NO_NODE) {
            for (int q = 0; q < 4; q++) {
                t->work[sp++].node = cn->kids[q];
            }
        }
        snap_changed(t, c); /* freed: its index will name another node */
        cn->head = NO_SLOT;
        cn->n = 0;
        cn->count = 0;
        cn->kids[0] = cn->kids[1] = cn->kids[2] = cn->kids[3] = NO_NODE;
        t->free_nodes[t->n_free++] = c;
    }
}

/* Renumber the slots in tree order (depth first, each node's entries together), once the
 * entries placed since the last time outnumber half the tree. The pair search reads every
 * node's entries in turn: in slot order they come from one stretch of memory instead of
 * one cache miss each (see docs/design.md#decisions). Costs O(n) and
 * memory for a second copy of the slots; without that memory it does nothing. Call only
 * between operations: it moves every slot. */
QT_API void
maybe_compact(Tree *t)
{
    if (t->scattered <= t->n / 2 + 64 || t->root == NO_NODE || t->broken) {
        return;
    }
    size_t cap = (size_t)t->cap;
    int64_t *ids = PyMem_Malloc(cap * sizeof(int64_t));
    double *box = PyMem_Malloc(cap * 4 * sizeof(double));
    int32_t *node_of = PyMem_Malloc(cap * sizeof(int32_t));
    if (ids == NULL || box == NULL || node_of == NULL) {
        PyMem_Free(ids);
        PyMem_Free(box);
        PyMem_Free(node_of);
        return; /* an optimisation, not a promise */
    }
    int32_t k = 0, sp = 0;
    t->work[sp++].node = t->root;
    while (sp > 0) {
        int32_t node = t->work[--sp].node;
        Node *nd = &t->nodes[node];
        int32_t first = k;
        for (int32_t s = nd->head; s != NO_SLOT; s = t->next[s]) {
            ids[k] = t->ids[s];
            memcpy(&box[4 * (size_t)k], &t->box[4 * (size_t)s], 4 * sizeof(double));
            node_of[k] = node;
            t->prev[s] = k; /* old slot -> new, for the hints; prev is rewritten below */
            k++;
        }
        nd->head = k > first ? first : NO_SLOT;
        if (nd->kids[0] != NO_NODE) {
            for (int q = 3; q >= 0; q--) {
                t->work[sp++].node = nd->kids[q];
            }
        }
    }
    /* every slot was reached: k == n */
    for (Py_ssize_t i = 0; i < t->slot_hint_cap; i++) {
        uint32_t old = (uint32_t)t->slot_hint[i];
        t->slot_hint[i] = old < (uint32_t)k ? t->prev[old] : NO_SLOT;
    }
    for (int32_t s = 0; s < k; s++) {
        t->prev[s] = s > 0 && node_of[s - 1] == node_of[s] ? s - 1 : NO_SLOT;
        t->next[s] = s + 1 < k && node_of[s + 1] == node_of[s] ? s + 1 : NO_SLOT;
    }
    PyMem_Free(t->ids);
    PyMem_Free(t->box);
    PyMem_Free(t->node_of);
    t->ids = ids;
    t->box = box;
    t->node_of = node_of;
    for (size_t i = 0; i < t->table_size; i++) {
        t->table[i] = NO_SLOT;
    }
    for (int32_t s = 0; s < k; s++) {
        table_put(t, s);
    }
    snaps_drop(t); /* they name the old slots */
    t->scattered = 0;
}

/* _tree_storage._rebuild: every entry again, under a new root. */
QT_API int
rebuild(Tree *t, const double bounds[4], int32_t level)
{
    clear_nodes(t);
    if (new_root(t, bounds, level) < 0) { /* cannot fail: the pool kept its room */
        t->broken = 1;
        return -1;
    }
    if (t->n == 0) {
        return 0;
    }
    for (int32_t s = 0; s < t->n; s++) {
        t->next[s] = s + 1 < t->n ? s + 1 : NO_SLOT;
    }
    return descend(t, t->root, 0, t->n);
}

/* _tree_storage._relocate: climb to the first ancestor whose fit bounds hold the new box, sink
 * from there, merge the highest node the climb left at or under threshold. A box beyond the
 * root is removed and inserted afresh (which grows the root, or keeps it in the root).
 * move_slot's slow path: out of line (QT_NOINLINE), so that move_slot inlines. */
QT_API QT_NOINLINE int
relocate(Tree *t, int32_t s, const double b[4])
{
    int32_t node = t->node_of[s], n = node;
    while (!fits(&t->nodes[n], b)) {
        if (n == t->root) {
            int64_t id = t->ids[s];
            remove_slot(t, s);
            return insert_record(t, id, b);
        }
        n = t->nodes[n].parent;
    }
    unlink_entry(t, s);
    memcpy(&t->box[4 * (size_t)s], b, 4 * sizeof(double));
    t->scattered++;
    int32_t highest = NO_NODE;
    for (int32_t m = node; m != n; m = t->nodes[m].parent) {
        Node *mn = &t->nodes[m];
        mn->count--;
        if (mn->count <= t->threshold && mn->kids[0] != NO_NODE) {
            highest = m;
        }
    }
    if (sink(t, s, n) < 0) {
        return -1;
    }
    if (highest != NO_NODE) {
        merge(t, highest);
    }
    return 0;
}
