/* SPDX-License-Identifier: Apache-2.0 */
/* dispatch.h - runtime choice of the instruction set for the hot CPU kernels
 * (internal: the CPU backends include it, the CUDA ones never do).
 *
 * A default build is portable: every file is compiled for the x86-64 baseline (or the
 * target's own baseline, e.g. arm64), so tsmine and tsmined run on any CPU of the
 * architecture. The few functions where the time goes carry TSMI_HOT: on x86-64 the
 * compiler then emits each of them several times and an ifunc resolver picks one
 * when the program loads, from CPUID (GCC/clang target_clones):
 *   GCC >= 12   x86-64-v4 (AVX-512), x86-64-v3 (AVX2 + FMA: Haswell and later), baseline
 *   older GCC,  avx512f, avx2, baseline (no FMA in the avx2 clone: these compilers cannot
 *   and clang  name a feature set, and clang 14 resolves arch=x86-64-vN by CPU model)
 * GCC clones the OpenMP regions inside a TSMI_HOT function with it; clang does not, so
 * a hot loop lives in a TSMI_HOT function called from the parallel region, never in
 * the region's own body. Static helpers are compiled for the clone's target only where
 * they are inlined into it: a hot callee that is not inlined carries TSMI_HOT itself.
 *
 * With TSMINE_NATIVE (-march=native: every file for the build machine only), on other
 * architectures, where ifunc is missing (non-glibc) and in clang's sanitizer builds
 * (below), TSMI_HOT is empty and the one build target is used throughout.
 *
 * The clones compute the same formulas. FMA contraction (v3, v4) and the vector width
 * of reductions change the rounding in the last bits, as -march=native always did; the
 * kernels' tests compare every variant with brute force to their stated tolerance. */
#ifndef TSM_DISPATCH_H
#define TSM_DISPATCH_H

#include <limits.h> /* __GLIBC__ */

/* clang 14 instruments the resolver for the sanitizers (and libFuzzer's coverage), whose
 * runtime has not started when the resolver runs (a crash at load time): no dispatch in
 * such builds. GCC leaves the resolver alone (its ASan builds dispatch). */
#if defined(__clang__) && defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||                         \
    __has_feature(memory_sanitizer) || __has_feature(coverage_sanitizer)
#define TSMI_SANITIZED_CLANG 1
#endif
#endif

/* TSMI_DISPATCH comes from CMake (kernels/CMakeLists.txt) when TSMINE_NATIVE is off. */
#if defined(TSMI_DISPATCH) && defined(__x86_64__) && defined(__ELF__) && defined(__GLIBC__) &&     \
    !defined(__AVX512F__) && !defined(TSMI_SANITIZED_CLANG) &&                                     \
    (defined(__clang__) || __GNUC__ >= 8)
#define TSMI_DISPATCH_X86 1
#if defined(__clang__) || __GNUC__ < 12
#define TSMI_HOT __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define TSMI_HOT __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
/* For a function written with AVX-512 intrinsics (mp.c's tile), called only where
 * tsmi_cpu_avx512() holds. */
#define TSMI_TARGET_AVX512 __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw,avx2,fma")))
#else
#define TSMI_DISPATCH_X86 0
#define TSMI_HOT
#define TSMI_TARGET_AVX512
#endif

/* Whether code written with AVX-512 intrinsics under TSMI_TARGET_AVX512 exists in this
 * build (compiled for the build machine, or under dispatch). */
#if defined(__AVX512F__) || TSMI_DISPATCH_X86
#define TSMI_HAVE_AVX512 1
#else
#define TSMI_HAVE_AVX512 0
#endif

/* Whether this CPU runs the TSMI_TARGET_AVX512 code (constant in a native build). O(1)
 * after the first call (the answer is cached by the compiler's runtime). */
static inline int tsmi_cpu_avx512(void) {
#if defined(__AVX512F__)
    return 1;
#elif TSMI_DISPATCH_X86
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return 0;
#endif
}

#endif
