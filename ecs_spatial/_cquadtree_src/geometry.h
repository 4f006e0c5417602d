/* geometry.h: the float rules: each function the C of one expression of the reference, in its
 * order of operations, so that each rounds as CPython rounds it.
 *
 * The twin of ecs_spatial/geometry.py.
 */

#ifndef ECS_SPATIAL_CQUADTREE_GEOMETRY_H
#define ECS_SPATIAL_CQUADTREE_GEOMETRY_H

#include "tree.h"

QT_API double py_ulp(double x);
QT_API double vector_norm2(double vec[2], double max);
QT_API int segment_entry(double min_x, double min_y, double max_x, double max_y, double x0,
                         double y0, double x1, double y1, double *t);
QT_API int sweep_time(const double a[4], double dx, double dy, const double b[4], double *t);
QT_API PyObject *mod_hypot(PyObject *Py_UNUSED(module), PyObject *args);
QT_API PyObject *mod_segment_entry(PyObject *Py_UNUSED(module), PyObject *args);
QT_API PyObject *mod_sweep_time(PyObject *Py_UNUSED(module), PyObject *args);
QT_API PyObject *mod_midpoint(PyObject *Py_UNUSED(module), PyObject *args);
QT_API PyObject *mod_ulp(PyObject *Py_UNUSED(module), PyObject *args);

/* Python's max(a, b) and min(a, b) for floats: the first argument unless the second is
 * strictly greater (smaller). fmax/fmin may pick either zero of -0.0 and 0.0. */
static inline double
py_max(double a, double b)
{
    return b > a ? b : a;
}

static inline double
py_min(double a, double b)
{
    return b < a ? b : a;
}

/* geometry.midpoint(a, b): (a + b) * 0.5 unless the sum overflows. */
static inline double
midpoint(double a, double b)
{
    double s = a + b;
    if (-INFINITY < s && s < INFINITY) {
        return s * 0.5;
    }
    return a * 0.5 + b * 0.5;
}

static inline double
py_hypot(double dx, double dy)
{
    double vec[2] = {fabs(dx), fabs(dy)};
    double max = 0.0;
    if (vec[0] > max) {
        max = vec[0];
    }
    if (vec[1] > max) {
        max = vec[1];
    }
    return vector_norm2(vec, max);
}

/* Box.distance_to_point's gap on one axis: lo - v left of the box, v - hi right of it. */
static inline double
gap(double v, double lo, double hi)
{
    return v < lo ? lo - v : (v > hi ? v - hi : 0.0);
}

static inline int
valid_box(const double c[4])
{
    /* Box's rule in one chain: NaN fails every comparison, and so do the infinities. */
    return -INFINITY < c[0] && c[0] <= c[2] && c[2] < INFINITY
           && -INFINITY < c[1] && c[1] <= c[3] && c[3] < INFINITY;
}

/* _tree_storage._contains: strictly inside the node's fit bounds. */
static inline int
fits(const Node *nd, const double b[4])
{
    return nd->fx0 < b[0] && b[2] < nd->fx1 && nd->fy0 < b[1] && b[3] < nd->fy1;
}

static inline int
overlaps(const double *b, const double q[4])
{
    /* Box.intersects, the one boundary rule: closed boxes, touching counts. */
    return b[0] <= q[2] && q[0] <= b[2] && b[1] <= q[3] && q[1] <= b[3];
}

static inline int
node_overlaps(const Node *nd, const double q[4])
{
    return nd->x0 <= q[2] && q[0] <= nd->x1 && nd->y0 <= q[3] && q[1] <= nd->y1;
}

#endif
