/* sorts.h: the merge and bucket sorts, as macros that define a sort for one item type, the
 * comparison inlined. Header-only and C-only, needing nothing of the tree, so that the other
 * compiled modules sort as the core does (_cpair_set.c's pairs).
 */

#ifndef ECS_SPATIAL_CQUADTREE_SORTS_H
#define ECS_SPATIAL_CQUADTREE_SORTS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

/* Items lo to hi of src sorted by LESS into the same places of dst, by insertion: stable,
 * and in place where dst is src (each item is read before any shift can reach it). The one
 * insertion sort of both sorts below: the merge sort's runs and the bucket sort's buckets. */
#define INSERTION_SORT_INTO(T, LESS, dst, src, lo, hi)                                       \
    do {                                                                                     \
        const Py_ssize_t lo_ = (lo), hi_ = (hi);                                             \
        for (Py_ssize_t i_ = lo_; i_ < hi_; i_++) {                                          \
            T item_ = (src)[i_];                                                             \
            Py_ssize_t j_ = i_;                                                              \
            while (j_ > lo_ && LESS(&item_, &(dst)[j_ - 1])) {                               \
                (dst)[j_] = (dst)[j_ - 1];                                                   \
                j_--;                                                                        \
            }                                                                                \
            (dst)[j_] = item_;                                                               \
        }                                                                                    \
    } while (0)

/* A stable merge sort of n items of type T, ordered by LESS(const T *, const T *): runs of 16
 * by insertion, then merged bottom-up; O(n log n) whatever the input. A macro, so that the
 * comparisons are inlined, where libc's qsort calls through a function pointer (see docs/design.md#decisions).
 * 0, or -1 and MemoryError. */
#define DEFINE_SORT(NAME, T, LESS)                                                           \
    static int NAME(T *a, Py_ssize_t n)                                                      \
    {                                                                                        \
        const Py_ssize_t run = 16;                                                           \
        for (Py_ssize_t lo = 0; lo < n; lo += run) {                                         \
            INSERTION_SORT_INTO(T, LESS, a, a, lo, lo + run < n ? lo + run : n);             \
        }                                                                                    \
        if (n <= run) {                                                                      \
            return 0;                                                                        \
        }                                                                                    \
        T *tmp = PyMem_Malloc((size_t)n * sizeof(T));                                        \
        if (tmp == NULL) {                                                                   \
            PyErr_NoMemory();                                                                \
            return -1;                                                                       \
        }                                                                                    \
        T *src = a, *dst = tmp;                                                              \
        for (Py_ssize_t width = run; width < n; width *= 2) {                                \
            for (Py_ssize_t lo = 0; lo < n; lo += 2 * width) {                               \
                Py_ssize_t mid = lo + width < n ? lo + width : n;                            \
                Py_ssize_t hi = lo + 2 * width < n ? lo + 2 * width : n;                     \
                Py_ssize_t i = lo, j = mid, k = lo;                                          \
                while (i < mid && j < hi) {                                                  \
                    dst[k++] = LESS(&src[j], &src[i]) ? src[j++] : src[i++];                 \
                }                                                                            \
                while (i < mid) {                                                            \
                    dst[k++] = src[i++];                                                     \
                }                                                                            \
                while (j < hi) {                                                             \
                    dst[k++] = src[j++];                                                     \
                }                                                                            \
            }                                                                                \
            T *swap = src;                                                                   \
            src = dst;                                                                       \
            dst = swap;                                                                      \
        }                                                                                    \
        if (src != a) {                                                                      \
            memcpy(a, src, (size_t)n * sizeof(T));                                           \
        }                                                                                    \
        PyMem_Free(tmp);                                                                     \
        return 0;                                                                            \
    }

/* A sort of n items of type T by LESS whose int64 KEY(item) orders them first (LESS breaks
 * its ties): dealt into about n/2 buckets by the high bits of the key (key - min key,
 * shifted), then each bucket sorted by insertion, or by the merge sort SMALL when one holds
 * more than 16 (and for n <= 64). Ids spread over the ids in use, so a bucket holds two or
 * three: O(n) where the merge sort alone is O(n log n) (see docs/design.md#decisions). The insertion reads the bucket from tmp and writes
 * a, so no copy back (callgrind counts a memcpy byte by byte). 0, or -1 and MemoryError. */
#define DEFINE_BUCKET_SORT(NAME, T, KEY, LESS, SMALL)                                        \
    static int NAME(T *a, Py_ssize_t n)                                                      \
    {                                                                                        \
        if (n <= 64) {                                                                       \
            return SMALL(a, n);                                                              \
        }                                                                                    \
        uint64_t lo = (uint64_t)KEY(a[0]) ^ ((uint64_t)1 << 63), hi = lo; /* unsigned */     \
        for (Py_ssize_t i = 1; i < n; i++) {                                                 \
            uint64_t key = (uint64_t)KEY(a[i]) ^ ((uint64_t)1 << 63);                        \
            lo = key < lo ? key : lo;                                                        \
            hi = key > hi ? key : hi;                                                        \
        }                                                                                    \
        uint64_t want = 1;                                                                   \
        while (want < (uint64_t)n / 2 && want < ((uint64_t)1 << 24)) {                       \
            want <<= 1;                                                                      \
        }                                                                                    \
        int shift = 0;                                                                       \
        while (((hi - lo) >> shift) >= want) {                                               \
            shift++;                                                                         \
        }                                                                                    \
        Py_ssize_t nb = (Py_ssize_t)((hi - lo) >> shift) + 1, i;                             \
        T *tmp = PyMem_Malloc((size_t)n * sizeof(T));                                        \
        Py_ssize_t *at = PyMem_Calloc((size_t)nb + 1, sizeof(Py_ssize_t));                   \
        if (tmp == NULL || at == NULL) {                                                     \
            PyMem_Free(tmp);                                                                 \
            PyMem_Free(at);                                                                  \
            PyErr_NoMemory();                                                                \
            return -1;                                                                       \
        }                                                                                    \
        for (i = 0; i < n; i++) {                                                            \
            at[(Py_ssize_t)((((uint64_t)KEY(a[i]) ^ ((uint64_t)1 << 63)) - lo) >> shift) + 1]++; \
        }                                                                                    \
        for (Py_ssize_t b = 1; b <= nb; b++) {                                               \
            at[b] += at[b - 1];                                                              \
        }                                                                                    \
        for (i = 0; i < n; i++) { /* at[b] ends as bucket b's end */                         \
            tmp[at[(Py_ssize_t)((((uint64_t)KEY(a[i]) ^ ((uint64_t)1 << 63)) - lo) >> shift)]++] \
                = a[i];                                                                      \
        }                                                                                    \
        int r = 0;                                                                           \
        for (Py_ssize_t b = 0, first = 0; b < nb && r == 0; first = at[b++]) {               \
            Py_ssize_t end = at[b];                                                          \
            if (end - first > 16) {                                                          \
                memcpy(a + first, tmp + first, (size_t)(end - first) * sizeof(T));           \
                r = SMALL(a + first, end - first);                                           \
                continue;                                                                    \
            }                                                                                \
            INSERTION_SORT_INTO(T, LESS, a, tmp, first, end);                                \
        }                                                                                    \
        PyMem_Free(tmp);                                                                     \
        PyMem_Free(at);                                                                      \
        return r;                                                                            \
    }

#endif
