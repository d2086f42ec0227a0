/* compare.h — runs a finished graph through the reference interpreter and through
 * kiln_compile, and compares every output element within per-dtype tolerances. Every
 * compiled program is also held to its memory plan: plan_check proves the plan sound, and
 * the device allocator's measured peak during the run must equal the planned peak.
 * Shared by the compile, jit, plan and random-program tests.
 *
 * Every other device of the context (a GPU: "cuda:0", ...) runs the same graph too, on
 * copies of the arguments placed there, held to the same reference and tolerances: so
 * every test that compares through cmp_graph is a cross-backend test where a GPU is
 * present, and exactly what it was on a machine with only the CPU. */
#ifndef KILN_TEST_COMPARE_H
#define KILN_TEST_COMPARE_H

#include "runtime/executable.h"
#include "rng.h"

/* A new array of the given type and shape with ordinary random values (test_fill_uniform
 * of rng.h), drawn from *seed. */
static inline kiln_array *cmp_random_array(kiln_context *ctx, kiln_dtype t, int rank,
                                           const int64_t *dims, uint64_t *seed) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    unsigned char *buf = (unsigned char *)malloc((size_t)(n ? n : 1) * kiln_dtype_itemsize(t));
    test_fill_uniform(t, n, buf, seed);
    kiln_array *a = NULL;
    kiln_array_create(ctx, t, rank, dims, buf, &a);
    free(buf);
    return a;
}

static inline double cmp_elem(const void *p, kiln_dtype t, int64_t i) {
    switch (t) {
    case KILN_DTYPE_F32: return ((const float *)p)[i];
    case KILN_DTYPE_F64: return ((const double *)p)[i];
    case KILN_DTYPE_I32: return ((const int32_t *)p)[i];
    case KILN_DTYPE_I64: return (double)((const int64_t *)p)[i];
    case KILN_DTYPE_BF16: return kn_bf16_to_f32(((const uint16_t *)p)[i]);
    case KILN_DTYPE_F16: return kn_f16_to_f32(((const uint16_t *)p)[i]);
    default: return ((const unsigned char *)p)[i];
    }
}

/* The tolerance of a 16-bit dtype, in units of its rounding: one op is computed in f32
 * by a kernel and in f64 by the reference, then rounded to the dtype, so the two agree
 * but where the f32 value lands within an f32 ulp of a rounding boundary (a double
 * rounding), and then by one ulp of the dtype: 2^-7 relative for bf16, 2^-10 for f16. A
 * chain of ops can carry such a difference on, so the tolerance is a few ulps, scaled by
 * CMP_HALF_ULPS. */
#ifndef CMP_HALF_ULPS
#define CMP_HALF_ULPS 2
#endif
static inline double cmp_half_tol(kiln_dtype t) {
    return t == KILN_DTYPE_BF16 ? CMP_HALF_ULPS * 0x1p-7 : CMP_HALF_ULPS * 0x1p-10;
}

/* Compares two arrays: exact for ints and bools; for floats |a-b| <= tol * (1 + |b|)
 * (16-bit floats: cmp_half_tol, or the f32 tolerance if that is larger). */
static inline int cmp_arrays(const kiln_array *got, const kiln_array *want, double tol_f32,
                             double tol_f64, const char *what) {
    size_t n = kiln_array_nbytes(want);
    if (kiln_array_nbytes(got) != n || kiln_array_dtype(got) != kiln_array_dtype(want)) {
        fprintf(stderr, "%s: type differs\n", what);
        return 0;
    }
    kiln_dtype t = kiln_array_dtype(want);
    void *a = malloc(n ? n : 1), *b = malloc(n ? n : 1);
    kiln_array_copy_to_host(got, a, n);
    kiln_array_copy_to_host(want, b, n);
    double tol = t == KILN_DTYPE_F32   ? tol_f32
                 : t == KILN_DTYPE_F64 ? tol_f64
                 : t == KILN_DTYPE_BF16 || t == KILN_DTYPE_F16
                     ? (cmp_half_tol(t) > tol_f32 ? cmp_half_tol(t) : tol_f32)
                     : 0;
    int ok = 1;
    for (int64_t i = 0; i < kiln_array_size(want) && ok; i++) {
        double x = cmp_elem(a, t, i), y = cmp_elem(b, t, i);
        if (!test_close(x, y, tol, tol)) {
            fprintf(stderr, "%s: element %lld: got %.9g, want %.9g\n", what, (long long)i, x, y);
            ok = 0;
        }
    }
    free(a), free(b);
    return ok;
}

/* Runs e and checks the memory plan: sound (plan_check, exhaustive), and the allocator's
 * peak during the call equal to the planned one. The rise over what the device held
 * before is outputs + arena; when the arguments are all it held, the peak itself is the
 * planned peak (arguments + outputs + arena). Returns the run's status (an error, with *ok
 * 0, for a NULL e: what a failed kiln_compile leaves). */
static inline kiln_status cmp_run_planned(kiln_context *ctx, kiln_executable *e, int n_args,
                                          kiln_array **args, int n_out, kiln_array **got, int *ok) {
    if (!e) { /* a failed compile: the run refuses it with a message, no plan to check */
        *ok = 0;
        return kiln_executable_run(e, n_args, args, n_out, got);
    }
    kiln_memory_analysis a;
    kiln_memory_stats before, after;
    kiln_executable_get_memory_analysis(e, &a);
    if (!e->g) {
        fprintf(stderr, "plan_check: compile with keep_ir to check the plan\n");
        *ok = 0;
    } else if (plan_check(e->g, &e->plan, &e->mem) != KILN_STATUS_OK) {
        fprintf(stderr, "plan_check: %s\n", kiln_last_error(ctx));
        *ok = 0;
    }
    kiln_memory_stats host_before, host_after;
    kiln_device_get_memory_stats(ctx, 0, &before);
    kiln_device_get_memory_kind_stats(ctx, 0, KILN_MEMORY_PINNED_HOST, &host_before);
    kiln_device_reset_peak(ctx, 0);
    kiln_status s = kiln_executable_run(e, n_args, args, n_out, got);
    kiln_device_get_memory_stats(ctx, 0, &after);
    kiln_device_get_memory_kind_stats(ctx, 0, KILN_MEMORY_PINNED_HOST, &host_after);
    if (s) return s;
    /* host offload: the host arena and the outputs in pinned_host memory are a call's
     * only host-kind allocations */
    if (host_after.peak_bytes_in_use - host_before.bytes_in_use !=
        a.host_temp_bytes + a.host_output_bytes) {
        fprintf(stderr,
                "measured host peak %llu (held %llu before) != planned host arena %llu + host "
                "outputs %llu\n",
                (unsigned long long)host_after.peak_bytes_in_use,
                (unsigned long long)host_before.bytes_in_use, (unsigned long long)a.host_temp_bytes,
                (unsigned long long)a.host_output_bytes);
        *ok = 0;
    }
    uint64_t rise = after.peak_bytes_in_use - before.bytes_in_use;
    if (rise != a.peak_bytes - a.argument_bytes ||
        (before.bytes_in_use == a.argument_bytes && after.peak_bytes_in_use != a.peak_bytes)) {
        fprintf(stderr, "measured peak %llu (held %llu before) != planned %llu (arguments %llu)\n",
                (unsigned long long)after.peak_bytes_in_use,
                (unsigned long long)before.bytes_in_use, (unsigned long long)a.peak_bytes,
                (unsigned long long)a.argument_bytes);
        *ok = 0;
    }
    return s;
}

/* g compiled for context device `dev` and run on copies of args placed there; its outputs,
 * copied back, compared with the reference's `want`. Returns 1 when all agree. */
static inline int cmp_on_device(kiln_context *ctx, kiln_graph *g, int n_args, kiln_array **args,
                                const kiln_compile_options *opts, int dev, double tol_f32,
                                kiln_array **want) {
    int n_out = kiln_graph_num_outputs(g), ok = 1;
    kiln_compile_options o = opts ? *opts : (kiln_compile_options){0};
    o.device = dev;
    o.keep_ir = true; /* the listing on a failure reads it */
    kiln_array **dargs = (kiln_array **)calloc((size_t)n_args + 1, sizeof *dargs);
    kiln_array **got = (kiln_array **)calloc((size_t)n_out + 1, sizeof *got);
    for (int i = 0; i < n_args && ok; i++) {
        size_t n = kiln_array_nbytes(args[i]);
        void *h = malloc(n ? n : 1);
        ok = kiln_array_copy_to_host(args[i], h, n) == KILN_STATUS_OK &&
             kiln_array_create_on(ctx, dev, args[i]->dtype, args[i]->shape.rank,
                                  args[i]->shape.dims, h, &dargs[i]) == KILN_STATUS_OK;
        free(h);
    }
    kiln_executable *e = NULL;
    const char *dn = kiln_device_name(ctx, dev);
    if (!ok)
        fprintf(stderr, "%s: placing the arguments: %s\n", dn, kiln_last_error(ctx));
    else if (kiln_compile(g, &o, &e) != KILN_STATUS_OK) {
        fprintf(stderr, "%s: compile: %s\n", dn, kiln_last_error(ctx));
        ok = 0;
    } else if (kiln_executable_run(e, n_args, dargs, n_out, got) != KILN_STATUS_OK) {
        fprintf(stderr, "%s: run: %s\n", dn, kiln_last_error(ctx));
        ok = 0;
    } else {
        for (int i = 0; i < n_out; i++) {
            char what[64];
            snprintf(what, sizeof what, "%s output %d", dn, i);
            ok &= cmp_arrays(got[i], want[i], tol_f32, 1e-9, what);
        }
    }
    if (!ok && e) {
        char *s = kiln_executable_to_string(e);
        fprintf(stderr, "%s\n", s ? s : "(no text)");
        kiln_string_free(ctx, s);
    }
    for (int i = 0; i < n_out; i++) kiln_array_destroy(got[i]);
    for (int i = 0; i < n_args; i++) kiln_array_destroy(dargs[i]);
    free(got), free(dargs);
    kiln_executable_destroy(e);
    return ok;
}

/* Every device but the CPU runs g against the reference (see the top of the file). */
static inline int cmp_other_devices(kiln_context *ctx, kiln_graph *g, int n_args, kiln_array **args,
                                    const kiln_compile_options *opts, double tol_f32) {
    if (kiln_device_count(ctx) < 2) return 1;
    int n_out = kiln_graph_num_outputs(g), ok = 1;
    kiln_array **want = (kiln_array **)calloc((size_t)n_out + 1, sizeof *want);
    if (kiln_interpret(g, n_args, args, n_out, want) != KILN_STATUS_OK) {
        fprintf(stderr, "interpret: %s\n", kiln_last_error(ctx));
        ok = 0;
    }
    for (int d = 1; ok && d < kiln_device_count(ctx); d++)
        ok &= cmp_on_device(ctx, g, n_args, args, opts, d, tol_f32, want);
    for (int i = 0; i < n_out; i++) kiln_array_destroy(want[i]);
    free(want);
    return ok;
}

/* KILN_TEST_TIER1=bits (test.h): e ran at tier 1 and gave `got`; the optimised build, let
 * compile and swapped in, must give the same bytes. Returns 1 when it does (or e is not at
 * tier 1). The tier thread is held again after. */
static inline int cmp_tier2_bits(kiln_context *ctx, kiln_executable *e, int n_args,
                                 kiln_array **args, int n_out, kiln_array **got) {
    kiln_executable_info info;
    kiln_executable_get_info(e, &info);
    if (!test_tier1_bits() || info.compile_tier != 1 || !tier_same_bits || !tier_same_bits(e))
        return 1;
    tier_hold(ctx, false);
    int tier = tier_wait(e);
    tier_hold(ctx, true);
    if (tier != 2) {
        fprintf(stderr, "tier 2 did not come: %d\n", tier);
        return 0;
    }
    int ok = 1;
    kiln_array **again = (kiln_array **)calloc((size_t)n_out + 1, sizeof *again);
    if (kiln_executable_run(e, n_args, args, n_out, again) != KILN_STATUS_OK) {
        fprintf(stderr, "run at tier 2: %s\n", kiln_last_error(ctx));
        ok = 0;
    }
    for (int i = 0; i < n_out && ok; i++) {
        size_t n = kiln_array_nbytes(got[i]);
        char *a = (char *)malloc(n + 1), *b = (char *)malloc(n + 1);
        ok = kiln_array_copy_to_host(got[i], a, n) == KILN_STATUS_OK &&
             kiln_array_copy_to_host(again[i], b, n) == KILN_STATUS_OK;
        kiln_dtype t = got[i]->dtype;
        size_t isz = kiln_dtype_itemsize(t);
        for (size_t at = 0; ok && at < n; at += isz) {
            if (!memcmp(a + at, b + at, isz)) continue;
            /* a NaN's sign and payload are not promised: gcc folds 0 * inf to +NaN where
             * the machine computes -NaN */
            double x = cmp_elem(a, t, (int64_t)(at / isz)), y = cmp_elem(b, t, (int64_t)(at / isz));
            if (ir_dtype_is_float(t) && x != x && y != y) continue;
            fprintf(stderr, "output %d: tier 1 gives %.17g, tier 2 %.17g at element %zu (%s)\n", i,
                    x, y, at / isz, kiln_dtype_name(t));
            ok = 0;
        }
        free(a), free(b);
    }
    for (int i = 0; i < n_out; i++) kiln_array_destroy(again[i]);
    free(again);
    return ok;
}

/* Compiles and runs g (first, so that only the arguments are live on the device), then
 * interprets it and compares; returns 1 if every output agrees and the plan held.
 * opts may be NULL. *n_kernels (may be NULL) receives the executable's kernel count. */
static inline int cmp_graph(kiln_context *ctx, kiln_graph *g, int n_args, kiln_array **args,
                            const kiln_compile_options *opts, double tol_f32, int *n_kernels) {
    int n_out = kiln_graph_num_outputs(g),
        ok = cmp_other_devices(ctx, g, n_args, args, opts, tol_f32);
    kiln_array **want = (kiln_array **)calloc((size_t)n_out, sizeof *want);
    kiln_array **got = (kiln_array **)calloc((size_t)n_out, sizeof *got);
    kiln_executable *e = NULL;
    kiln_compile_options o = opts ? *opts : (kiln_compile_options){0};
    o.keep_ir = true; /* plan_check and the listing on a failure read it */
    if (kiln_compile(g, &o, &e) != KILN_STATUS_OK) {
        fprintf(stderr, "compile: %s\n", kiln_last_error(ctx));
        ok = 0;
    } else if (cmp_run_planned(ctx, e, n_args, args, n_out, got, &ok) != KILN_STATUS_OK) {
        fprintf(stderr, "run: %s\n", kiln_last_error(ctx));
        ok = 0;
    } else if (kiln_interpret(g, n_args, args, n_out, want) != KILN_STATUS_OK) {
        fprintf(stderr, "interpret: %s\n", kiln_last_error(ctx));
        ok = 0;
    } else {
        for (int i = 0; i < n_out; i++) {
            char what[32];
            snprintf(what, sizeof what, "output %d", i);
            ok &= cmp_arrays(got[i], want[i], tol_f32, 1e-9, what);
        }
        ok &= cmp_tier2_bits(ctx, e, n_args, args, n_out, got);
        if (n_kernels) {
            kiln_executable_info info;
            kiln_executable_get_info(e, &info);
            *n_kernels = info.num_kernels;
        }
    }
    if (!ok && e) {
        char *s = kiln_executable_to_string(e);
        fprintf(stderr, "%s\n", s ? s : "(no text)");
        kiln_string_free(ctx, s);
    }
    for (int i = 0; i < n_out; i++) kiln_array_destroy(want[i]), kiln_array_destroy(got[i]);
    free(want), free(got);
    kiln_executable_destroy(e);
    return ok;
}

#endif
