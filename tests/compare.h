/* compare.h — runs a finished graph through the reference interpreter and through
 * kiln_compile, and compares every output element within per-dtype tolerances.
 * Shared by the compile, jit and random-program tests. */
#ifndef KILN_TEST_COMPARE_H
#define KILN_TEST_COMPARE_H

#include "test.h"

/* Fills an array of the given type with deterministic pseudo-random values: floats in
 * [-2, 2], ints in [-5, 5], bools 0/1. */
static inline kiln_array *cmp_random_array(kiln_context *ctx, kiln_dtype t, int rank,
                                           const int64_t *dims, uint64_t *seed) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    size_t es = kiln_dtype_size(t);
    unsigned char *buf = (unsigned char *)malloc((size_t)(n ? n : 1) * es);
    for (int64_t i = 0; i < n; i++) {
        *seed ^= *seed << 13, *seed ^= *seed >> 7, *seed ^= *seed << 17;
        double u = (double)(*seed >> 11) / 9007199254740992.0; /* [0, 1) */
        switch (t) {
        case KILN_F32: ((float *)buf)[i] = (float)(4 * u - 2); break;
        case KILN_F64: ((double *)buf)[i] = 4 * u - 2; break;
        case KILN_I32: ((int32_t *)buf)[i] = (int32_t)(u * 11) - 5; break;
        case KILN_I64: ((int64_t *)buf)[i] = (int64_t)(u * 11) - 5; break;
        default: buf[i] = u < 0.5; break;
        }
    }
    kiln_array *a = NULL;
    kiln_array_create(ctx, t, rank, dims, buf, &a);
    free(buf);
    return a;
}

static inline double cmp_elem(const void *p, kiln_dtype t, int64_t i) {
    switch (t) {
    case KILN_F32: return ((const float *)p)[i];
    case KILN_F64: return ((const double *)p)[i];
    case KILN_I32: return ((const int32_t *)p)[i];
    case KILN_I64: return (double)((const int64_t *)p)[i];
    default: return ((const unsigned char *)p)[i];
    }
}

/* Compares two arrays: exact for ints and bools; for floats |a-b| <= tol * (1 + |b|). */
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
    double tol = t == KILN_F32 ? tol_f32 : t == KILN_F64 ? tol_f64 : 0;
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

/* Interprets and compiles g with the given args; returns 1 if every output agrees.
 * opts may be NULL. *n_kernels (may be NULL) receives the executable's kernel count. */
static inline int cmp_graph(kiln_context *ctx, kiln_graph *g, int n_args, kiln_array **args,
                            const kiln_compile_options *opts, double tol_f32, int *n_kernels) {
    int n_out = kiln_graph_num_outputs(g), ok = 1;
    kiln_array **want = (kiln_array **)calloc((size_t)n_out, sizeof *want);
    kiln_array **got = (kiln_array **)calloc((size_t)n_out, sizeof *got);
    kiln_executable *e = NULL;
    if (kiln_interpret(g, n_args, args, n_out, want) != KILN_OK) {
        fprintf(stderr, "interpret: %s\n", kiln_last_error(ctx));
        ok = 0;
    } else if (kiln_compile(g, opts, &e) != KILN_OK) {
        fprintf(stderr, "compile: %s\n", kiln_last_error(ctx));
        ok = 0;
    } else if (kiln_executable_run(e, n_args, args, n_out, got) != KILN_OK) {
        fprintf(stderr, "run: %s\n", kiln_last_error(ctx));
        ok = 0;
    } else {
        for (int i = 0; i < n_out; i++) {
            char what[32];
            snprintf(what, sizeof what, "output %d", i);
            ok &= cmp_arrays(got[i], want[i], tol_f32, 1e-9, what);
        }
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
    for (int i = 0; i < n_out; i++) kiln_array_free(want[i]), kiln_array_free(got[i]);
    free(want), free(got);
    kiln_executable_destroy(e);
    return ok;
}

#endif
