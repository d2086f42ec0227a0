/* test_blas.c — every GEMM provider (KILN_BLAS: openblas, blis, onednn, kiln and the
 * default) gives the reference interpreter's products on random dot_generals: batch axes,
 * contracting and free axes in every order (so operands are read transposed, strided or
 * packed), sizes that straddle the blocking of kiln's own kernel (K over 128, N over 256,
 * rows not a multiple of 6), f32 and f64, and products large enough to be split across the
 * pool. BLIS and oneDNN are optional: where one is not installed, choosing it must fail
 * the first run with KILN_STATUS_CONFIG naming the library, and its cases are skipped. */
#include "test.h"

#include "compare.h"

#include "backend/cpu/blas.h"

#include <stdlib.h>

static const char *const names[] = {"default", "openblas", "blis", "onednn", "kiln"};

static kiln_context *provider_context(kiln_blas p, char *dir) {
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return NULL;
    }
    kiln_context_options o = {.ignore_environment = true, .cache_dir = dir, .blas = p};
    kiln_context *c = NULL;
    char err[512];
    if (kiln_context_create(&o, &c, err, sizeof err)) fprintf(stderr, "%s\n", err);
    return c;
}

/* A random dot_general: nb batch axes, 1-2 free axes per operand, 1-2 contracting axes,
 * each operand's axes in a random order. Returns the contracted size. */
static int64_t random_dot(kiln_context *ctx, uint64_t *rs, kiln_dtype t, bool big, kiln_graph **out,
                          kiln_array **args) {
    /* big: up to 140 x 300 x 300 per batch entry, one batch axis (the reference
     * interpreter computes each product too, so sizes stay modest) */
    int nb = (int)(test_rng_next(rs) % (big ? 2 : 3)), nm = 1 + (int)(test_rng_next(rs) % 2),
        nn = 1 + (int)(test_rng_next(rs) % 2), nk = 1 + (int)(test_rng_next(rs) % 2);
    int64_t bd[2], md[2], nd[2], kd[2];
    for (int i = 0; i < nb; i++) bd[i] = 1 + (int64_t)(test_rng_next(rs) % 3);
    /* one axis of each group carries the size; the second is small, or 1 when big */
    md[0] = 1 + (int64_t)(test_rng_next(rs) % (big ? 140 : 40));
    nd[0] = 1 + (int64_t)(test_rng_next(rs) % (big ? 300 : 40));
    kd[0] = 1 + (int64_t)(test_rng_next(rs) % (big ? 150 : 40));
    md[1] = big ? 1 : 1 + (int64_t)(test_rng_next(rs) % 3);
    nd[1] = big ? 1 : 1 + (int64_t)(test_rng_next(rs) % 2);
    kd[1] = 1 + (int64_t)(test_rng_next(rs) % 2);
    /* axis kinds of each operand: 0 batch, 1 free, 2 contract; shuffled */
    int lk[6], rk[6], li[6], ri[6], lr = 0, rr = 0;
    for (int i = 0; i < nb; i++) lk[lr] = 0, li[lr++] = i, rk[rr] = 0, ri[rr++] = i;
    for (int i = 0; i < nm; i++) lk[lr] = 1, li[lr++] = i;
    for (int i = 0; i < nn; i++) rk[rr] = 1, ri[rr++] = i;
    for (int i = 0; i < nk; i++) lk[lr] = 2, li[lr++] = i, rk[rr] = 2, ri[rr++] = i;
    for (int i = lr - 1; i > 0; i--) {
        int j = (int)(test_rng_next(rs) % (uint64_t)(i + 1)), tk = lk[i], ti = li[i];
        lk[i] = lk[j], li[i] = li[j], lk[j] = tk, li[j] = ti;
    }
    for (int i = rr - 1; i > 0; i--) {
        int j = (int)(test_rng_next(rs) % (uint64_t)(i + 1)), tk = rk[i], ti = ri[i];
        rk[i] = rk[j], ri[i] = ri[j], rk[j] = tk, ri[j] = ti;
    }
    int64_t ldims[6], rdims[6];
    kiln_dot_dims dd = {.n_contract = nk, .n_batch = nb};
    for (int a = 0; a < lr; a++) {
        ldims[a] = lk[a] == 0 ? bd[li[a]] : lk[a] == 1 ? md[li[a]] : kd[li[a]];
        if (lk[a] == 0) dd.lhs_batch[li[a]] = a;
        if (lk[a] == 2) dd.lhs_contract[li[a]] = a;
    }
    for (int a = 0; a < rr; a++) {
        rdims[a] = rk[a] == 0 ? bd[ri[a]] : rk[a] == 1 ? nd[ri[a]] : kd[ri[a]];
        if (rk[a] == 0) dd.rhs_batch[ri[a]] = a;
        if (rk[a] == 2) dd.rhs_contract[ri[a]] = a;
    }
    kiln_graph_create(ctx, "dot", out);
    kiln_value l = kiln_parameter(*out, "l", t, lr, ldims);
    kiln_value r = kiln_parameter(*out, "r", t, rr, rdims);
    kiln_value y = kiln_dot_general(*out, l, r, &dd);
    kiln_graph_finish(*out, 1, &y);
    args[0] = cmp_random_array(ctx, t, lr, ldims, rs);
    args[1] = cmp_random_array(ctx, t, rr, rdims, rs);
    return kd[0] * (nk > 1 ? kd[1] : 1);
}

/* A first product on the context: false when the provider is not installed (an optional
 * one only, with the error it must give). */
static bool provider_present(kiln_context *ctx, kiln_blas p) {
    const int64_t d[2] = {3, 3};
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "probe", &g);
    kiln_value a = kiln_parameter(g, "a", KILN_DTYPE_F32, 2, d);
    kiln_value y = kiln_matmul(g, a, a);
    kiln_graph_finish(g, 1, &y);
    kiln_executable *e = NULL;
    kiln_array *x = NULL, *out = NULL;
    CHECK_OK(ctx, kiln_compile(g, NULL, &e));
    kiln_array_create(ctx, KILN_DTYPE_F32, 2, d, NULL, &x);
    kiln_status s = kiln_executable_run(e, 1, &x, 1, &out);
    bool ok = s == KILN_STATUS_OK;
    if (!ok) {
        CHECK_MSG(p == KILN_BLAS_BLIS || p == KILN_BLAS_ONEDNN, "KILN_BLAS=%s: %s", names[p],
                  kiln_last_error(ctx));
        CHECK_STATUS(s, KILN_STATUS_CONFIG);
        CHECK_CONTAINS(kiln_last_error(ctx), names[p]);
        CHECK_CONTAINS(kiln_last_error(ctx), "apt-get install");
        test_skip_case(names[p], "not installed here: %s", kiln_last_error(ctx));
    }
    kiln_array_destroy(out), kiln_array_destroy(x);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    return ok;
}

static void test_providers(void) {
    for (int p = KILN_BLAS_DEFAULT; p <= KILN_BLAS_KILN; p++) {
        char dir[] = "/tmp/kiln-test-blas-XXXXXX";
        kiln_context *ctx = provider_context((kiln_blas)p, dir);
        CHECK(ctx != NULL);
        if (!ctx) continue;
        if (provider_present(ctx, (kiln_blas)p)) {
            uint64_t rs = 1000; /* the same products for every provider: compiled once, cached */
            int cases = 0;
            for (int i = 0; i < 32; i++) {
                kiln_dtype t = i % 2 ? KILN_DTYPE_F64 : KILN_DTYPE_F32;
                kiln_graph *g = NULL;
                kiln_array *args[2];
                int64_t k = random_dot(ctx, &rs, t, i % 4 >= 2, &g, args);
                /* f32 sums of k products in any order: rounding grows with k (the
                 * reference sums in f64) */
                double tol = 2e-7 * (double)k > 2e-5 ? 2e-7 * (double)k : 2e-5;
                CHECK_MSG(cmp_graph(ctx, g, 2, args, NULL, tol, NULL), "KILN_BLAS=%s case %d",
                          names[p], i);
                kiln_array_destroy(args[0]), kiln_array_destroy(args[1]);
                kiln_graph_destroy(g);
                cases++;
            }
            printf("KILN_BLAS=%s: %d random products compared with the reference\n", names[p],
                   cases);
        }
        kiln_context_destroy(ctx);
        test_remove_dir(dir);
    }
}

/* OpenBLAS behind the CPU (blas.h): its generic cores on a CPU with AVX2 and FMA are, the
 * cores written for such CPUs are not, and on a CPU without them nothing is. */
static void test_openblas_behind(void) {
    static const char *const behind[] = {"Prescott", "Core2",     "Nehalem",  "Sandybridge",
                                         "Atom",     "Barcelona", "Bulldozer"};
    static const char *const current[] = {"Haswell",        "Zen",      "SkylakeX", "Cooperlake",
                                          "SapphireRapids", "Excavator"};
    for (size_t i = 0; i < sizeof behind / sizeof behind[0]; i++) {
        CHECK_MSG(cpu_blas_openblas_behind(behind[i], true), "%s", behind[i]);
        CHECK_MSG(!cpu_blas_openblas_behind(behind[i], false), "%s", behind[i]);
    }
    for (size_t i = 0; i < sizeof current / sizeof current[0]; i++)
        CHECK_MSG(!cpu_blas_openblas_behind(current[i], true), "%s", current[i]);
    CHECK(!cpu_blas_openblas_behind(NULL, true));
}

int main(void) {
    RUN(test_openblas_behind);
    RUN(test_providers);
    return test_summary("test_blas");
}
