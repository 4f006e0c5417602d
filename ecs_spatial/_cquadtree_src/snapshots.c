/* snapshots.c: straddler snapshots: an internal node's own entries, sorted for the per-entity
 * pair search (see Snap and SnapRef in tree.h).
 *
 * The twin of ecs_spatial/_snapshots.py.
 */

#include "snapshots.h"
#include "containers.h"
#include "geometry.h"

/* The snapshot table's hash of a node (Knuth's multiplicative hash: node indices are dense)
 * and its stop for probe(): the bucket of `node`, or an empty one (NO_NODE: an empty one). */
static inline size_t
snap_hash(int32_t node)
{
    return (uint32_t)node * 2654435761u;
}

static int
snap_stop(const void *table, size_t i, int64_t node)
{
    const SnapRef *r = &((const SnapRef *)table)[i];
    return r->node == node || r->node == NO_NODE;
}

/* The bucket of node's snapshot, or NULL. */
QT_API SnapRef *
snap_find(const Tree *t, int32_t node)
{
    SnapRef *r = &t->snaps[probe(t->snaps, (size_t)t->snaps_size, snap_hash(node), node,
                                 snap_stop)];
    return r->node == node ? r : NULL;
}

/* Node's own entries are about to change: its snapshot, if fresh, is no longer. Only a node
 * of SNAP_MIN entries or more can have a fresh one (see SnapRef), so the look-up is for the
 * few nodes near the root; any other change costs a comparison. */
QT_API void
snap_mark(Tree *t, int32_t node)
{
    SnapRef *r = snap_find(t, node);
    if (r != NULL) {
        r->fresh = 0;
    }
}

/* Every snapshot gone, with its memory: the nodes or the slots they name are renumbered. */
QT_API void
snaps_drop(Tree *t)
{
    for (int32_t i = 0; i < t->snaps_size; i++) {
        PyMem_Free(t->snaps[i].snap);
    }
    PyMem_Free(t->snaps);
    t->snaps = NULL;
    t->snaps_size = t->snaps_used = 0;
    t->snaps_bytes = 0;
}

static inline int
key_less(const KeySlot *x, const KeySlot *y)
{
    return x->key < y->key || (x->key == y->key && x->slot < y->slot);
}

static inline size_t
snap_size(int32_t cap)
{
    return sizeof(Snap) + (size_t)cap * (sizeof(double) + sizeof(int32_t));
}

DEFINE_SORT(sort_keys, KeySlot, key_less)

/* Fill *psn (reallocated if too small) with what node's own entries give now. 0, or -1 if
 * memory ran out (no exception set: a snapshot is an optimisation, the caller reads the
 * entries one by one instead; *psn is then still a valid block or NULL). */
QT_API int
snap_fill(const Tree *t, int32_t node, Snap **psn)
{
    const Node *nd = &t->nodes[node];
    int32_t n = nd->n;
    Snap *sn = *psn;
    if (sn == NULL || sn->cap < n) {
        int32_t cap = n + n / 8; /* room to grow a little before the next realloc */
        sn = PyMem_Realloc(sn, snap_size(cap));
        if (sn == NULL) {
            return -1;
        }
        sn->cap = cap;
        *psn = sn;
    }
    KeySlot *ks = PyMem_Malloc((size_t)n * sizeof(KeySlot));
    if (ks == NULL) {
        return -1;
    }
    double cx = nd->cx;
    int32_t a = 0, g = n;
    for (int32_t s = nd->head; s != NO_SLOT; s = t->next[s]) {
        const double *b = &t->box[4 * (size_t)s];
        if (b[0] <= cx && cx <= b[2]) {
            ks[a++] = (KeySlot){b[1], s};
        }
        else {
            ks[--g] = (KeySlot){b[0], s};
        }
    }
    /* a == g: each entry in one group */
    if (sort_keys(ks, a) < 0 || sort_keys(ks + a, n - a) < 0) {
        PyErr_Clear(); /* the MemoryError of a sort's buffer: read entry by entry instead */
        PyMem_Free(ks);
        return -1;
    }
    int32_t *slot = snap_slots(sn);
    sn->n = n;
    sn->n_across = a;
    for (int grp = 0; grp < 2; grp++) {
        int32_t lo = grp == 0 ? 0 : a, hi = grp == 0 ? a : n;
        int hi_axis = grp == 0 ? 3 : 2; /* the far edge along the sort key's axis */
        double *bb = grp == 0 ? sn->across : sn->along;
        bb[0] = bb[1] = INFINITY;
        bb[2] = bb[3] = -INFINITY;
        double reach = -INFINITY;
        for (int32_t i = lo; i < hi; i++) {
            const double *b = &t->box[4 * (size_t)ks[i].slot];
            slot[i] = ks[i].slot;
            reach = py_max(reach, b[hi_axis]);
            sn->reach[i] = reach;
            bb[0] = py_min(bb[0], b[0]);
            bb[1] = py_min(bb[1], b[1]);
            bb[2] = py_max(bb[2], b[2]);
            bb[3] = py_max(bb[3], b[3]);
        }
    }
    PyMem_Free(ks);
    return 0;
}

/* Room in the snapshot table for one more bucket: when half full, rebuilt at three times the
 * fresh snapshots or more (a power of two, at least 16), the stale ones freed. 0, or -1 if
 * memory ran out. */
static int
snaps_reserve(Tree *t)
{
    if ((t->snaps_used + 1) * 2 <= t->snaps_size) {
        return 0;
    }
    int32_t fresh = 0;
    for (int32_t i = 0; i < t->snaps_size; i++) {
        fresh += t->snaps[i].node != NO_NODE && t->snaps[i].fresh;
    }
    int32_t size = 16;
    while (size < 3 * (fresh + 1)) {
        size *= 2;
    }
    SnapRef *table = PyMem_Malloc((size_t)size * sizeof(SnapRef));
    if (table == NULL) {
        return -1;
    }
    for (int32_t i = 0; i < size; i++) {
        table[i] = (SnapRef){NO_NODE, 0, NULL};
    }
    SnapRef *old = t->snaps;
    int32_t old_size = t->snaps_size;
    t->snaps = table;
    t->snaps_size = size;
    t->snaps_used = 0;
    t->snaps_bytes = (size_t)size * sizeof(SnapRef);
    for (int32_t i = 0; i < old_size; i++) {
        SnapRef r = old[i];
        if (r.node != NO_NODE && r.fresh) {
            table[probe(table, (size_t)size, snap_hash(r.node), NO_NODE, snap_stop)] = r;
            t->snaps_used++;
            t->snaps_bytes += snap_size(r.snap->cap);
        }
        else {
            PyMem_Free(r.snap);
        }
    }
    PyMem_Free(old);
    return 0;
}

/* The fresh snapshot of internal node `node` (SNAP_MIN own entries or more), built if it is
 * missing or stale; NULL if memory ran out (no exception: read the entries one by one). The
 * pointer holds until the next call: a call may move the table. */
QT_API const Snap *
snap_get(Tree *t, int32_t node)
{
    SnapRef *r = t->snaps_size > 0 ? snap_find(t, node) : NULL;
    if (r != NULL && r->fresh) {
        return r->snap;
    }
    if (r == NULL) {
        if (snaps_reserve(t) < 0) {
            return NULL;
        }
        r = &t->snaps[probe(t->snaps, (size_t)t->snaps_size, snap_hash(node), NO_NODE,
                            snap_stop)];
        *r = (SnapRef){node, 0, NULL};
        t->snaps_used++;
    }
    size_t before = r->snap == NULL ? 0 : snap_size(r->snap->cap);
    int filled = snap_fill(t, node, &r->snap);
    t->snaps_bytes += (r->snap == NULL ? 0 : snap_size(r->snap->cap)) - before;
    if (filled < 0) {
        return NULL;
    }
    r->fresh = 1;
    return r->snap;
}

/* own_partners() for an internal node of SNAP_MIN entries or more, through its snapshot: a
 * far node in a few comparisons, a near one in a bisected window. */
QT_API int
snap_partners(Tree *t, int32_t node, const double q[4], int32_t skip, I64Buf *out)
{
    const Snap *sn = snap_get(t, node);
    if (sn == NULL) {
        return own_partners(t, &t->nodes[node], q, skip, out);
    }
    const int32_t *slot = snap_slots(sn);
    for (int grp = 0; grp < 2; grp++) {
        if (!overlaps(grp == 0 ? sn->across : sn->along, q)) {
            continue; /* most ancestors of a small box: its straddlers hug their lines */
        }
        /* Sorted on axis k (min_y across the vertical line, min_x along it); reach says how
         * far each prefix extends on that axis, so the window starts at the first entry
         * whose prefix reaches q, and ends at the first that starts beyond it. */
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
        for (int32_t i = lo; i < end; i++) {
            int32_t o = slot[i];
            const double *b = &t->box[4 * (size_t)o];
            if (b[k] > q[k + 2]) {
                break;
            }
            if (o != skip && overlaps(b, q) && i64_push(out, t->ids[o]) < 0) {
                return -1;
            }
        }
    }
    return 0;
}
