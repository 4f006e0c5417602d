/* tree_pairs.h: pairs: find_all_intersections(_array), find_intersections_for, query_entity.
 *
 * The twin of ecs_spatial/_tree_pairs.py.
 */

#ifndef ECS_SPATIAL_CQUADTREE_TREE_PAIRS_H
#define ECS_SPATIAL_CQUADTREE_TREE_PAIRS_H

#include "tree.h"

QT_API PyObject *Tree_query_entity(Tree *t, PyObject *entity);
QT_API PyObject *Tree_find_all_intersections(Tree *t, PyObject *Py_UNUSED(ignored));
QT_API PyObject *Tree_find_all_intersections_array(Tree *t, PyObject *Py_UNUSED(ignored));
QT_API PyObject *Tree_find_intersections_for(Tree *t, PyObject *entities);

#endif
