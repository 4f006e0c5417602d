/* tree_queries.h: queries: query, query_point, query_radius(_many), nodes, depth.
 *
 * The twin of ecs_spatial/_tree_queries.py.
 */

#ifndef ECS_SPATIAL_CQUADTREE_TREE_QUERIES_H
#define ECS_SPATIAL_CQUADTREE_TREE_QUERIES_H

#include "tree.h"
#include "containers.h"

QT_API PyObject *ids_result(I64Buf *buf, int r);
QT_API int wrapped_query(const Tree *t, const double q[4], I64Buf *out);
QT_API PyObject *Tree_query(Tree *t, PyObject *box);
QT_API PyObject *Tree_query_point(Tree *t, PyObject *const *args, Py_ssize_t nargs,
                                  PyObject *kwnames);
QT_API PyObject *Tree_query_radius(Tree *t, PyObject *const *args, Py_ssize_t nargs,
                                   PyObject *kwnames);
QT_API PyObject *Tree_query_radius_many(Tree *t, PyObject *const *args, Py_ssize_t nargs,
                                        PyObject *kwnames);
QT_API PyObject *Tree_nodes(Tree *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
QT_API PyObject *Tree_depth(Tree *t, PyObject *Py_UNUSED(ignored));

#endif
