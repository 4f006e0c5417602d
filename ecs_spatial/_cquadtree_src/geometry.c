/* geometry.c: the float rules: each function the C of one expression of the reference, in its
 * order of operations, so that each rounds as CPython rounds it.
 *
 * The twin of ecs_spatial/geometry.py; hypot, gap and midpoint, which other compiled
 * modules share, are in floats.h. Its mod_* functions expose the kernels to the tests that
 * hold them to CPython's (the module's _hypot, _midpoint, ...). Box's constructor in C is
 * _cgeometry's (ecs_spatial/_cgeometry.c), which geometry.py installs.
 */

#include "geometry.h"
#include "quadtree.h"

/* math.ulp(x), as Modules/mathmodule.c computes it. */
QT_API double
py_ulp(double x)
{
    if (isnan(x)) {
        return x;
    }
    x = fabs(x);
    if (isinf(x)) {
        return x;
    }
    double x2 = nextafter(x, INFINITY);
    if (isinf(x2)) {
        /* x is the largest finite float */
        x2 = nextafter(x, -INFINITY);
        return x - x2;
    }
    return x2 - x;
}

/* One axis of segment_entry's slab test: the segment from a0 to a1 against [lo, hi], which
 * narrows [*t_enter, *t_exit]; 0 when the segment misses the slab (or the interval closes). */
static inline int
slab(double lo, double hi, double a0, double a1, double *t_enter, double *t_exit)
{
    double ta, tb, swap;
    double d = a1 - a0;
    if (d == 0.0) {
        return !(a0 < lo || a0 > hi);
    }
    if (d == INFINITY || d == -INFINITY) {
        d = a1 * 0.5 - a0 * 0.5;
        ta = (lo * 0.5 - a0 * 0.5) / d;
        tb = (hi * 0.5 - a0 * 0.5) / d;
    }
    else {
        ta = (lo - a0) / d;
        tb = (hi - a0) / d;
    }
    if (ta > tb) {
        swap = ta;
        ta = tb;
        tb = swap;
    }
    if (ta > *t_enter) {
        *t_enter = ta;
    }
    if (tb < *t_exit) {
        *t_exit = tb;
    }
    return !(*t_enter > *t_exit);
}

/* geometry.segment_entry(box, x0, y0, x1, y1): 1 and *t the entry fraction if the segment
 * touches the closed box, else 0. The same slab test, the same halving where a segment spans
 * more than the float range, the same order of every operation. */
QT_API int
segment_entry(double min_x, double min_y, double max_x, double max_y,
              double x0, double y0, double x1, double y1, double *t)
{
    double t_enter = 0.0, t_exit = 1.0;
    if (!slab(min_x, max_x, x0, x1, &t_enter, &t_exit)
        || !slab(min_y, max_y, y0, y1, &t_enter, &t_exit)) {
        return 0;
    }
    *t = t_enter;
    return 1;
}

/* One axis of sweep_time: narrow [*t_enter, *t_exit] to the fractions at which the moving
 * interval [a_lo, a_hi] (by d) touches [lo, hi]. 0 when they never do in that span. */
static inline int
sweep_axis(double lo, double hi, double a_lo, double a_hi, double d, double *t_enter,
           double *t_exit)
{
    if (d == 0.0) {
        return lo <= a_hi && a_lo <= hi;
    }
    double ta = (lo - a_hi) / d, tb = (hi - a_lo) / d;
    if (ta > tb) {
        double swap = ta;
        ta = tb;
        tb = swap;
    }
    if (ta > *t_enter) {
        *t_enter = ta;
    }
    if (tb < *t_exit) {
        *t_exit = tb;
    }
    return *t_enter <= *t_exit;
}

/* geometry.floats_sweep_time(a, dx, dy, b): 1 and *t the first fraction of the motion (dx, dy)
 * at which the box a, moving, touches the closed box b, else 0. The same slab test, the same
 * order of every operation (the motion is finite: no halving, no NaN). */
QT_API int
sweep_time(const double a[4], double dx, double dy, const double b[4], double *t)
{
    double t_enter = 0.0, t_exit = 1.0;
    if (!sweep_axis(b[0], b[2], a[0], a[2], dx, &t_enter, &t_exit)
        || !sweep_axis(b[1], b[3], a[1], a[3], dy, &t_enter, &t_exit)) {
        return 0;
    }
    *t = t_enter;
    return 1;
}

QT_API PyObject *
mod_hypot(PyObject *Py_UNUSED(module), PyObject *args)
{
    double dx, dy;
    if (!PyArg_ParseTuple(args, "dd:_hypot", &dx, &dy)) {
        return NULL;
    }
    if (isnan(dx) || isnan(dy)) {
        PyErr_SetString(PyExc_ValueError, "_hypot: NaN is not a gap");
        return NULL;
    }
    return PyFloat_FromDouble(py_hypot(dx, dy));
}

QT_API PyObject *
mod_segment_entry(PyObject *Py_UNUSED(module), PyObject *args)
{
    double b[4], x0, y0, x1, y1, t;
    if (!PyArg_ParseTuple(args, "(dddd)dddd:_segment_entry", &b[0], &b[1], &b[2], &b[3],
                          &x0, &y0, &x1, &y1)) {
        return NULL;
    }
    if (!segment_entry(b[0], b[1], b[2], b[3], x0, y0, x1, y1, &t)) {
        Py_RETURN_NONE;
    }
    return PyFloat_FromDouble(t);
}

QT_API PyObject *
mod_sweep_time(PyObject *Py_UNUSED(module), PyObject *args)
{
    double a[4], b[4], dx, dy, t;
    if (!PyArg_ParseTuple(args, "(dddd)dd(dddd):_sweep_time", &a[0], &a[1], &a[2], &a[3], &dx,
                          &dy, &b[0], &b[1], &b[2], &b[3])) {
        return NULL;
    }
    if (!(isfinite(dx) && isfinite(dy))) {
        PyErr_SetString(PyExc_ValueError, "_sweep_time: the motion must be finite");
        return NULL;
    }
    if (!sweep_time(a, dx, dy, b, &t)) {
        Py_RETURN_NONE;
    }
    return PyFloat_FromDouble(t);
}

QT_API PyObject *
mod_midpoint(PyObject *Py_UNUSED(module), PyObject *args)
{
    double a, b;
    if (!PyArg_ParseTuple(args, "dd:_midpoint", &a, &b)) {
        return NULL;
    }
    return PyFloat_FromDouble(midpoint(a, b));
}

QT_API PyObject *
mod_ulp(PyObject *Py_UNUSED(module), PyObject *args)
{
    double x;
    if (!PyArg_ParseTuple(args, "d:_ulp", &x)) {
        return NULL;
    }
    return PyFloat_FromDouble(py_ulp(x));
}
