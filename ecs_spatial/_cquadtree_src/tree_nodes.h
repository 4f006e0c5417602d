/* tree_nodes.h: nodes: place, sink, split, merge, relocate, rebuild, compact.
 *
 * The twin of ecs_spatial/_tree_nodes.py.
 */

#ifndef ECS_SPATIAL_CQUADTREE_TREE_NODES_H
#define ECS_SPATIAL_CQUADTREE_TREE_NODES_H

#include "tree.h"
#include "geometry.h"
#include "snapshots.h"

QT_API int new_root(Tree *t, const double b[4], int32_t level);
QT_API void clear_nodes(Tree *t);
QT_API int descend(Tree *t, int32_t node, int32_t head, int32_t len);
QT_API int place(Tree *t, int32_t s);
QT_API void merge(Tree *t, int32_t node);
QT_API void maybe_compact(Tree *t);
QT_API int rebuild(Tree *t, const double bounds[4], int32_t level);
QT_API QT_NOINLINE int relocate(Tree *t, int32_t s, const double b[4]);

static inline void
unlink_entry(Tree *t, int32_t s)
{
    snap_changed(t, t->node_of[s]);
    Node *nd = &t->nodes[t->node_of[s]];
    int32_t p = t->prev[s], q = t->next[s];
    if (p != NO_SLOT) {
        t->next[p] = q;
    }
    else {
        nd->head = q;
    }
    if (q != NO_SLOT) {
        t->prev[q] = p;
    }
    nd->n--;
}

/* The child of an internal node that the box lies strictly inside, or -1 if it touches a
 * split line (_tree_nodes._sink's and _descend's rule). */
static inline int
quadrant(const Node *nd, const double b[4])
{
    int q;
    if (b[2] < nd->cx) {
        q = 0;
    }
    else if (b[0] > nd->cx) {
        q = 1;
    }
    else {
        return -1;
    }
    if (b[3] < nd->cy) {
        return q;
    }
    if (b[1] > nd->cy) {
        return q + 2;
    }
    return -1;
}

/* quadtree.move for a valid box: in place while the box still belongs to its node (strictly
 * inside its fit bounds and, for an internal node, touching a split line), else relocate. */
static inline int
move_slot(Tree *t, int32_t s, const double b[4])
{
    const Node *nd = &t->nodes[t->node_of[s]];
    if (fits(nd, b)
        && (nd->kids[0] == NO_NODE
            || !((b[2] < nd->cx || b[0] > nd->cx) && (b[3] < nd->cy || b[1] > nd->cy)))) {
        if (nd->kids[0] != NO_NODE) {
            snap_changed(t, t->node_of[s]); /* a leaf's needs no mark: see SnapRef */
        }
        memcpy(&t->box[4 * (size_t)s], b, 4 * sizeof(double));
        return 0;
    }
    return relocate(t, s, b);
}

#endif
