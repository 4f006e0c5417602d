/* wrap.h: wrap-around (toroidal) worlds: the period of a wrapped tree and the arithmetic of
 * its canonical boxes, points and images (issue 28).
 *
 * The twin of ecs_spatial/_wrap.py. A period is kept in Tree.period as the reference keeps
 * it: (x0, y0, w, h, ex, ey), ex = x0 + w and ey = y0 + h as floats compute them. The
 * refusals go through the reference's own functions (_wrap.period_of, canonical,
 * wrap_point, cast_shifts), so that each has one text.
 */

#ifndef ECS_SPATIAL_CQUADTREE_WRAP_H
#define ECS_SPATIAL_CQUADTREE_WRAP_H

#include "tree.h"
#include "floats.h"
#include "geometry.h"
#include "records.h"

QT_API int period_of(PyObject *value, double period[6]);
QT_API PyObject *period_tuple(const double period[6]);
QT_API int raise_canonical(const double period[6], const double c[4], PyObject *entity,
                           int64_t id);
QT_API int wrap_point(const double period[6], double *x, double *y);
QT_API int query_intervals(double lo, double hi, double origin, double p, double end,
                           double out[3][2]);
QT_API int check_wrapped_radius(const double period[6], double r, Py_ssize_t point);
QT_API PyObject *cast_shifts(const double period[6], double ax, double ay, double bx,
                             double by, double bw, double bh);
QT_API int sort_unique(int64_t *ids, Py_ssize_t *n);

/* _wrap.canonical of a valid box c, in place: its min corner moved to its canonical image,
 * its size kept. 0, or -1 with the reference's ValueError naming the entity (entity, or
 * NULL for the int id) if it is too wide or has no image; c is then as given. */
static inline int
canonical(const double period[6], double c[4], PyObject *entity, int64_t id)
{
    if (canonical_box(period, c, c) < 0) {
        return raise_canonical(period, c, entity, id);
    }
    return 0;
}

/* Whether box c is valid and canonical as it is (canonical_box would give it back to the
 * bit): its min corner in [origin, end) on both axes (so finite), min <= max, and its size
 * (finite, so max is) at most half the period. A NaN fails a comparison: not as given. */
#if defined(__SSE2__)
static inline int
canonical_as_given(const double period[6], const double c[4])
{
    /* both axes at once: the same IEEE comparisons, differences and products */
    __m128d lo = _mm_loadu_pd(c), hi = _mm_loadu_pd(c + 2);
    __m128d half = _mm_mul_pd(_mm_loadu_pd(period + 2), _mm_set1_pd(0.5));
    __m128d ok = _mm_and_pd(_mm_cmple_pd(_mm_loadu_pd(period), lo),
                            _mm_cmplt_pd(lo, _mm_loadu_pd(period + 4)));
    ok = _mm_and_pd(ok, _mm_cmple_pd(lo, hi));
    ok = _mm_and_pd(ok, _mm_cmple_pd(_mm_sub_pd(hi, lo), half));
    return _mm_movemask_pd(ok) == 3;
}
#else
static inline int
canonical_as_given(const double period[6], const double c[4])
{
    return (period[0] <= c[0]) & (c[0] < period[4]) & (period[1] <= c[1]) & (c[1] < period[5])
           & (c[0] <= c[2]) & (c[1] <= c[3]) & (c[2] - c[0] <= period[2] * 0.5)
           & (c[3] - c[1] <= period[3] * 0.5);
}
#endif

/* move_many's step on a wrapped tree for a buffered box c: checked (the reference's error
 * naming id), then made canonical into w; w, or NULL with the error. */
static inline const double *
checked_canonical(const double period[6], const double *c, int64_t id, double w[4])
{
    if (!valid_box(c)) {
        raise_box_error(c, id);
        return NULL;
    }
    memcpy(w, c, 4 * sizeof(double));
    return canonical(period, w, NULL, id) < 0 ? NULL : w;
}

#endif
