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
