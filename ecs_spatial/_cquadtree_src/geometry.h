/* geometry.h: the float rules: each function the C of one expression of the reference, in its
 * order of operations, so that each rounds as CPython rounds it.
 *
 * The twin of ecs_spatial/geometry.py.
 */

#ifndef ECS_SPATIAL_CQUADTREE_GEOMETRY_H
#define ECS_SPATIAL_CQUADTREE_GEOMETRY_H

#include "tree.h"
#include "floats.h"

#include <stddef.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

QT_API double py_ulp(double x);
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

/* fits(nd, b) && b[0] <= b[2] && b[1] <= b[3]: a box strictly inside the fit bounds and
 * not inverted, so valid (move_many's test of a box that stays in its node); on x86-64 both
 * axes at once, the same IEEE comparisons. */
#if defined(__SSE2__)
_Static_assert(offsetof(Node, fy0) == offsetof(Node, fx0) + sizeof(double)
                   && offsetof(Node, fx1) == offsetof(Node, fx0) + 2 * sizeof(double)
                   && offsetof(Node, fy1) == offsetof(Node, fx0) + 3 * sizeof(double),
               "fits_valid reads a node's fit bounds as two pairs");

static inline int
fits_valid(const Node *nd, const double b[4])
{
    __m128d lo = _mm_loadu_pd(b), hi = _mm_loadu_pd(b + 2);
    __m128d in = _mm_and_pd(_mm_cmplt_pd(_mm_loadu_pd(&nd->fx0), lo),
                            _mm_cmplt_pd(hi, _mm_loadu_pd(&nd->fx1)));
    return _mm_movemask_pd(_mm_and_pd(in, _mm_cmple_pd(lo, hi))) == 3;
}
#else
static inline int
fits_valid(const Node *nd, const double b[4])
{
    return fits(nd, b) && b[0] <= b[2] && b[1] <= b[3];
}
#endif

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
