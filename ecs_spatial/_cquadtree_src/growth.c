/* growth.c: the root's growth toward a box outside it.
 *
 * The twin of ecs_spatial/_growth.py.
 */

#include "growth.h"
#include "geometry.h"
#include "tree_nodes.h"
#include "constants.h"

/* _growth.within: the closed bounds contain the box. */
static inline int
within(const double bounds[4], const double b[4])
{
    return bounds[0] <= b[0] && b[2] <= bounds[2] && bounds[1] <= b[1] && b[3] <= bounds[3];
}

/* _growth.first_root: a square of side four times the box's larger side about its centre
 * (a few float steps about a point), clamped to the finite range. */
QT_API void
first_root(const double b[4], double out[4])
{
    double cx = midpoint(b[0], b[2]);
    double cy = midpoint(b[1], b[3]);
    double half = py_max(b[2] - b[0], b[3] - b[1]) * 2.0;
    if (half == 0.0) {
        half = py_max(py_max(1.0, py_ulp(cx)), py_ulp(cy));
    }
    out[0] = py_min(b[0], py_max(cx - half, -DBL_MAX));
    out[1] = py_min(b[1], py_max(cy - half, -DBL_MAX));
    out[2] = py_max(b[2], py_min(cx + half, DBL_MAX));
    out[3] = py_max(b[3], py_min(cy + half, DBL_MAX));
}

/* _growth.doubled_toward: 1 with `bounds` doubled toward the box, 0 if that changes
 * nothing (bounds untouched). */
static int
doubled_toward(double bounds[4], const double b[4])
{
    double x0 = bounds[0], y0 = bounds[1], x1 = bounds[2], y1 = bounds[3];
    double w = x1 - x0;
    if (w == 0.0) {
        w = py_max(1.0, py_ulp(x0));
    }
    double h = y1 - y0;
    if (h == 0.0) {
        h = py_max(1.0, py_ulp(y0));
    }
    if (b[0] < x0) {
        x0 = py_max(x0 - w, -DBL_MAX);
    }
    else {
        x1 = py_min(x1 + w, DBL_MAX);
    }
    if (b[1] < y0) {
        y0 = py_max(y0 - h, -DBL_MAX);
    }
    else {
        y1 = py_min(y1 + h, DBL_MAX);
    }
    if (x0 == bounds[0] && y0 == bounds[1] && x1 == bounds[2] && y1 == bounds[3]) {
        return 0;
    }
    bounds[0] = x0;
    bounds[1] = y0;
    bounds[2] = x1;
    bounds[3] = y1;
    return 1;
}

/* _growth.grown: double toward the box as often as it takes, or as often as allowed. */
static void
grown(double bounds[4], int32_t *level, const double b[4])
{
    while (*level > -MAX_GROWTH && !within(bounds, b)) {
        if (!doubled_toward(bounds, b)) {
            break;
        }
        *level -= 1;
    }
}

/* _growth.can_grow_toward */
QT_API int
can_grow_toward(const Tree *t, const double b[4])
{
    const Node *r = &t->nodes[t->root];
    double bounds[4] = {r->x0, r->y0, r->x1, r->y1};
    return r->level > -MAX_GROWTH && doubled_toward(bounds, b);
}

/* _tree_storage._grow_to: a root that contains the box if one can be had. */
QT_API int
grow_to(Tree *t, const double b[4])
{
    if (t->root == NO_NODE) {
        double bounds[4];
        first_root(b, bounds);
        return new_root(t, bounds, 0);
    }
    const Node *r = &t->nodes[t->root];
    double bounds[4] = {r->x0, r->y0, r->x1, r->y1};
    int32_t level = r->level;
    grown(bounds, &level, b);
    if (level != r->level) {
        return rebuild(t, bounds, level);
    }
    return 0;
}
