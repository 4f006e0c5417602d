/* tree_updates.h: updates: insert, insert_many, insert_records, move, move_many, move_records,
 * remove, discard, clear.
 *
 * The twin of ecs_spatial/_tree_updates.py.
 */

#ifndef ECS_SPATIAL_CQUADTREE_TREE_UPDATES_H
#define ECS_SPATIAL_CQUADTREE_TREE_UPDATES_H

#include "tree.h"

QT_API int insert_record(Tree *t, int64_t id, const double b[4]);
QT_API int insert_batch(Tree *t, const int64_t *ids, const double *boxes, int32_t k);
QT_API PyObject *Tree_insert(Tree *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
QT_API PyObject *Tree_move(Tree *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
QT_API PyObject *Tree_remove(Tree *t, PyObject *entity);
QT_API PyObject *Tree_discard(Tree *t, PyObject *entity);
QT_API PyObject *Tree_clear(Tree *t, PyObject *Py_UNUSED(ignored));
QT_API PyObject *Tree_insert_many(Tree *t, PyObject *const *args, Py_ssize_t nargs,
                                  PyObject *kwnames);
QT_API PyObject *Tree_move_many(Tree *t, PyObject *const *args, Py_ssize_t nargs,
                                PyObject *kwnames);
QT_API PyObject *Tree_move_records(Tree *t, PyObject *records);
QT_API PyObject *Tree_insert_records(Tree *t, PyObject *records);

#endif
