/* tree_check.h: check(): every invariant of tree.h and of the reference's module docstring.
 *
 * The twin of ecs_spatial/_tree_check.py.
 */

#ifndef ECS_SPATIAL_CQUADTREE_TREE_CHECK_H
#define ECS_SPATIAL_CQUADTREE_TREE_CHECK_H

#include "tree.h"

QT_API PyObject *Tree_check(Tree *t, PyObject *Py_UNUSED(ignored));

#endif
