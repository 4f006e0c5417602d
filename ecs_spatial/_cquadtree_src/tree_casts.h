/* tree_casts.h: casts: raycast, cast_box and their _first forms.
 *
 * The twin of ecs_spatial/_tree_casts.py.
 */

#ifndef ECS_SPATIAL_CQUADTREE_TREE_CASTS_H
#define ECS_SPATIAL_CQUADTREE_TREE_CASTS_H

#include "tree.h"

QT_API PyObject *Tree_raycast(Tree *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
QT_API PyObject *Tree_raycast_first(Tree *t, PyObject *const *args, Py_ssize_t nargs,
                                    PyObject *kwnames);
QT_API PyObject *Tree_cast_box(Tree *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
QT_API PyObject *Tree_cast_box_first(Tree *t, PyObject *const *args, Py_ssize_t nargs,
                                     PyObject *kwnames);

#endif
