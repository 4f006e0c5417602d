/* tree_nearest.h: nearest: a best-first walk of the nodes (its open list also serves the casts).
 *
 * The twin of ecs_spatial/_tree_nearest.py.
 */

#ifndef ECS_SPATIAL_CQUADTREE_TREE_NEAREST_H
#define ECS_SPATIAL_CQUADTREE_TREE_NEAREST_H

#include "tree.h"

/* A node waiting to be opened, with a lower bound of its entries' distances (nearest) or
 * fractions (cast_first). group is 0 for the node's subtree; cast_first also waits on the
 * two groups of a large node's own entries apart: 1 those across its vertical split line,
 * 2 the others (see Snap). */
typedef struct {
    double lb;
    int32_t node;
    int32_t group;
} Open;

QT_API int open_push(Open **heap, Py_ssize_t *n, Py_ssize_t *cap, Open item);
QT_API Open open_pop(Open *h, Py_ssize_t *n);
QT_API PyObject *Tree_nearest(Tree *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);

#endif
