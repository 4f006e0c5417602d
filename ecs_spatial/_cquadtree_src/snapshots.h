/* snapshots.h: straddler snapshots: an internal node's own entries, sorted for the per-entity
 * pair search (see Snap and SnapRef in tree.h).
 *
 * The twin of ecs_spatial/_snapshots.py.
 */

#ifndef ECS_SPATIAL_CQUADTREE_SNAPSHOTS_H
#define ECS_SPATIAL_CQUADTREE_SNAPSHOTS_H

#include "tree.h"
#include "containers.h"
#include "geometry.h"
#include "constants.h"

QT_API SnapRef *snap_find(const Tree *t, int32_t node);
QT_API void snap_mark(Tree *t, int32_t node);
QT_API void snaps_drop(Tree *t);
QT_API int snap_fill(const Tree *t, int32_t node, Snap **psn);
QT_API const Snap *snap_get(Tree *t, int32_t node);
QT_API int snap_partners(Tree *t, int32_t node, const double q[4], int32_t skip, I64Buf *out);

static inline void
snap_changed(Tree *t, int32_t node)
{
    if (t->snaps_used > 0 && t->nodes[node].n >= SNAP_MIN) {
        snap_mark(t, node);
    }
}

static inline int32_t *
snap_slots(const Snap *sn)
{
    return (int32_t *)(sn->reach + sn->cap);
}

/* Push the id of each of node's own entries whose box intersects q, slot `skip` aside,
 * reading them one by one. Inlined: most nodes a search reads hold a few entries. */
static inline int
own_partners(const Tree *t, const Node *nd, const double q[4], int32_t skip, I64Buf *out)
{
    for (int32_t o = nd->head; o != NO_SLOT; o = t->next[o]) {
        if (o != skip && overlaps(&t->box[4 * (size_t)o], q) && i64_push(out, t->ids[o]) < 0) {
            return -1;
        }
    }
    return 0;
}

#endif
