/* SPDX-License-Identifier: Apache-2.0 */
/* sets_search.cuh - the bound searches of the CUDA set methods (sets_merge.cu,
 * sets_range.cu) as templates on the key type K and the index type I: the lower and
 * upper bound by bisection (the rule of sets.inc's searches), and the same found by
 * galloping from the end where the answer is expected. Static: each .cu that includes
 * it compiles its own copy (the kernels are built without relocatable device code). */
#ifndef TSM_SETS_SEARCH_CUH
#define TSM_SETS_SEARCH_CUH

template <typename K, typename I>
static __host__ __device__ I d_lower(const K *x, I lo, I hi, K key) {
    while (lo < hi) {
        I m = lo + (hi - lo) / 2;
        if (x[m] < key)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

template <typename K, typename I>
static __host__ __device__ I d_upper(const K *x, I lo, I hi, K key) {
    while (lo < hi) {
        I m = lo + (hi - lo) / 2;
        if (x[m] <= key)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

/* The same bounds found by galloping from the end where the answer is expected: the
 * lower bound near hi (the start of a run that ends at a cut), the upper bound near lo
 * (its end after the cut). O(log distance) instead of O(log(hi - lo)): a run's length
 * rather than the tile's or the array's. A run that reaches the far end of the range
 * (all keys equal, a tile inside one long run) is answered by one probe there. With
 * far, one more probe at `reach` from the expected end tells a bound further than that
 * (a long run, left to balance_kernel: *far is set and the result is meaningless) from
 * one within reach, which the gallop then finds. */
template <typename K, typename I>
static __host__ __device__ I d_lower_back(const K *x, I lo, I hi, K key, I reach = ~(I)0,
                                          bool *far = nullptr) {
    if (hi > lo && !(x[lo] < key))
        return lo;
    if (far && hi - lo > reach) { /* one probe says whether the answer is within reach */
        if (!(x[hi - reach] < key)) {
            *far = true;
            return hi;
        }
        lo = hi - reach + 1;
    }
    for (I step = 1; hi > lo; step *= 2) { /* the answer is <= hi */
        I probe = hi - lo > step ? hi - step : lo;
        if (x[probe] < key) {
            lo = probe + 1;
            break;
        }
        hi = probe;
    }
    return d_lower(x, lo, hi, key);
}

template <typename K, typename I>
static __host__ __device__ I d_upper_fwd(const K *x, I lo, I hi, K key, I reach = ~(I)0,
                                         bool *far = nullptr) {
    if (lo < hi && !(key < x[hi - 1]))
        return hi;
    if (far && hi - lo > reach) { /* one probe says whether the answer is within reach */
        if (!(key < x[lo + reach - 1])) {
            *far = true;
            return lo;
        }
        hi = lo + reach - 1;
    }
    for (I step = 1; lo < hi; step *= 2) { /* the answer is >= lo */
        I probe = hi - lo > step ? lo + step - 1 : hi - 1;
        if (key < x[probe]) {
            hi = probe;
            break;
        }
        lo = probe + 1;
    }
    return d_upper(x, lo, hi, key);
}

#endif
