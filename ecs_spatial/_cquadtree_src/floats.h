/* floats.h: the float rules the index shares with the other compiled modules, each written
 * once: math.hypot as CPython computes it, Box's gap on one axis, geometry.midpoint,
 * _wrap.wrap_coord and _wrap.canonical's rule. Each is the C of the reference's expression,
 * in its order of operations, so that it rounds as CPython rounds it (every core is compiled
 * with -ffp-contract=off -fno-fast-math: setup.py).
 *
 * C-only and header-only: static inline functions with no Python in them, so that each
 * extension that includes this header (the index through geometry.h and wrap.h,
 * _cneighbours.c, _cmembers.c) compiles the same text, and a change here rebuilds each of
 * them (setup.py's DEPENDS).
 */

#ifndef ECS_SPATIAL_CQUADTREE_FLOATS_H
#define ECS_SPATIAL_CQUADTREE_FLOATS_H

#include <math.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* math.hypot(dx, dy): CPython 3.11's vector_norm() for two coordinates
 * (Modules/mathmodule.c), not libm's hypot, whose last bit can differ: lossless scaling by a
 * power of two, squares split exactly (Veltkamp-Dekker, no fma), compensated summation in
 * three accumulators and one differential correction of the square root. The statements are
 * CPython's, in its order; tests/test_native_quadtree.py compares millions of results. */
static inline double
vector_norm2(double vec[2], double max)
{
    const double T27 = 134217729.0; /* ldexp(1.0, 27) + 1.0 */
    double x, scale, oldcsum, csum = 1.0, frac1 = 0.0, frac2 = 0.0, frac3 = 0.0;
    double t, hi, lo, h;
    int max_e;

    /* vec holds |dx| and |dy|, max the larger; neither is NaN (the caller's floats are
     * finite, and a gap between two finite floats is finite or inf). */
    if (isinf(max) || max == 0.0) {
        return max;
    }
    frexp(max, &max_e);
    if (max_e < -1023) {
        /* ldexp(1.0, -max_e) would overflow: 3.11 divides by max instead of scaling. */
        for (int i = 0; i < 2; i++) {
            x = vec[i];
            x /= max;
            x = x * x;
            oldcsum = csum;
            csum += x;
            frac1 += (oldcsum - csum) + x;
        }
        return max * sqrt(csum - 1.0 + frac1);
    }
    scale = ldexp(1.0, -max_e);
    for (int i = 0; i < 2; i++) {
        x = vec[i];
        x *= scale;
        t = x * T27;
        hi = t - (t - x);
        lo = x - hi;

        x = hi * hi;
        oldcsum = csum;
        csum += x;
        frac1 += (oldcsum - csum) + x;

        x = 2.0 * hi * lo;
        oldcsum = csum;
        csum += x;
        frac2 += (oldcsum - csum) + x;

        frac3 += lo * lo;
    }
    h = sqrt(csum - 1.0 + (frac1 + frac2 + frac3));

    x = h;
    t = x * T27;
    hi = t - (t - x);
    lo = x - hi;

    x = -hi * hi;
    oldcsum = csum;
    csum += x;
    frac1 += (oldcsum - csum) + x;

    x = -2.0 * hi * lo;
    oldcsum = csum;
    csum += x;
    frac2 += (oldcsum - csum) + x;

    x = -lo * lo;
    oldcsum = csum;
    csum += x;
    frac3 += (oldcsum - csum) + x;

    x = csum - 1.0 + (frac1 + frac2 + frac3);
    return (h + x / (2.0 * h)) / scale;
}

/* math.hypot(dx, dy): its max found as math_hypot finds it, then vector_norm2. */
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

/* _wrap.wrap_coord: the canonical image of v in [origin, end), or NaN if v - origin is past
 * the float range. A canonical v is kept to the bit; else fmod (exact), plus p if
 * negative, and an image that rounds to end or past it is origin. */
static inline double
wrap_coord(double v, double origin, double p, double end)
{
    if (origin <= v && v < end) {
        return v;
    }
    double d = v - origin;
    if (!(-INFINITY < d && d < INFINITY)) {
        return NAN;
    }
    double r = fmod(d, p);
    if (r < 0.0) {
        r += p;
    }
    double c = origin + r;
    return c < end ? c : origin;
}

/* _wrap.canonical's rule for a valid box c (x0, y0, x1, y1) in period (x0, y0, w, h, ex,
 * ey): its min corner moved to its canonical image and its far corner by the same shift
 * (kept to the bit when the min corner is canonical already), into w (which may be c).
 * 0, or -1 with w untouched if the period refuses the box: its min corner has no image, or
 * the moved box is wider or higher than half the period. */
static inline int
canonical_box(const double period[6], const double c[4], double w[4])
{
    double cx = wrap_coord(c[0], period[0], period[2], period[4]);
    double cy = wrap_coord(c[1], period[1], period[3], period[5]);
    double nx1 = c[2], ny1 = c[3];
    if (cx != cx || cy != cy) {
        return -1;
    }
    if (!(cx == c[0] && cy == c[1])) {
        nx1 = cx + (c[2] - c[0]);
        ny1 = cy + (c[3] - c[1]);
    }
    if (!(nx1 - cx <= period[2] * 0.5 && ny1 - cy <= period[3] * 0.5)) {
        return -1;
    }
    w[0] = cx;
    w[1] = cy;
    w[2] = nx1;
    w[3] = ny1;
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

#endif
