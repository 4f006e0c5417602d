/* tree_state.h: state: pickles, copies, state_hash.
 *
 * The twin of ecs_spatial/_tree_state.py.
 */

#ifndef ECS_SPATIAL_CQUADTREE_TREE_STATE_H
#define ECS_SPATIAL_CQUADTREE_TREE_STATE_H

#include "tree.h"

QT_API PyObject *Tree_state_hash(Tree *t, PyObject *Py_UNUSED(ignored));
QT_API PyObject *Tree_getstate(Tree *t, PyObject *Py_UNUSED(ignored));
QT_API PyObject *Tree_reduce(Tree *t, PyObject *Py_UNUSED(ignored));
QT_API PyObject *Tree_setstate(Tree *t, PyObject *state);
QT_API PyObject *Tree_copy(Tree *t, PyObject *Py_UNUSED(ignored));
QT_API PyObject *Tree_deepcopy(Tree *t, PyObject *memo);

#endif
