/* test_loss_scale.c — loss scaling (src/trace/loss_scale.c): the scale's growth and backoff
 * over a sequence of finite and overflowing steps against a table derived by hand from
 * torch.amp.GradScaler's rule (growth after growth_interval finite steps in a row, halving
 * and a counter reset on inf or NaN, no growth past f32's range), compiled and through the
 * reference interpreter; a static scale; a whole AdamW step computed in f16 whose scaled
 * backward pass overflows, skipped with every parameter and moment bit-identical and the
 * step count not advanced, then taken once the scale has backed off; builder errors. */
#include "compare.h"

#include <stdint.h>

static kiln_context *ctx;

static kiln_array *f32_arr(int rank, const int64_t *dims, const float *v) {
    kiln_array *a = NULL;
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, rank, dims, v, &a));
    return a;
}

static kiln_array *i32_scalar(int32_t v) {
    kiln_array *a = NULL;
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_I32, 0, NULL, &v, &a));
    return a;
}

static float read_f32(const kiln_array *a) {
    float f = NAN;
    kiln_array_copy_to_host(a, &f, sizeof f);
    return f;
}

static int32_t read_i32(const kiln_array *a) {
    int32_t v = -1;
    kiln_array_copy_to_host(a, &v, sizeof v);
    return v;
}

/* args: scale f32, good i32, grad f32[4]; outputs: unscaled, finite, new scale, new good */
static kiln_graph *unscale_graph(int64_t interval) {
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "unscale", &g));
    int64_t four = 4;
    kiln_value s = kiln_parameter(g, "scale", KILN_DTYPE_F32, 0, NULL);
    kiln_value c = kiln_parameter(g, "good", KILN_DTYPE_I32, 0, NULL);
    kiln_value gr = kiln_parameter(g, "grad", KILN_DTYPE_F32, 1, &four);
    kiln_loss_scale_options o = {.scale = s, .good_steps = c, .growth_interval = interval};
    kiln_value out[4];
    CHECK_OK(ctx, kiln_loss_scale_unscale(g, &o, 1, &gr, &out[0], &out[1], &out[2], &out[3]));
    CHECK_OK(ctx, kiln_graph_finish(g, 4, out));
    return g;
}

/* Growth interval 3, factors 2 and 0.5 (the defaults), from 1024. What each step's
 * gradient holds and the scale and counter GradScaler leaves after it:
 *   ok ok ok: the third finite step in a row doubles the scale and resets the counter;
 *   inf: halves it and resets; a NaN does the same; a growth from 2^127 would overflow f32:
 *   the scale stays and the counter resets, as _amp_update_scale_ does. */
static void test_grad_scaler_sequence(void) {
    static const struct {
        float bad;    /* 0: a finite gradient, else the value put in element 2 */
        float scale;  /* the scale fed to this step (the last step's new scale) */
        float want;   /* the new scale */
        int32_t good; /* the counter after it */
        bool finite;
    } seq[] = {
        {0, 1024, 1024, 1, true},         {0, 1024, 1024, 2, true}, {0, 1024, 2048, 0, true},
        {INFINITY, 2048, 1024, 0, false}, {0, 1024, 1024, 1, true}, {NAN, 1024, 512, 0, false},
        {0, 512, 512, 1, true},           {0, 512, 512, 2, true},   {0, 512, 1024, 0, true},
        {-INFINITY, 1024, 512, 0, false}, {0, 512, 512, 1, true},   {0, 512, 512, 2, true},
        {0, 0x1p127f, 0x1p127f, 0, true}, /* counter 2 -> 3 = growth, which would overflow */
    };
    kiln_graph *g = unscale_graph(3);
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, NULL, &e));
    int32_t good = 0;
    for (size_t k = 0; k < sizeof seq / sizeof seq[0] && e; k++) {
        float gv[4] = {0.75f * seq[k].scale, -0.5f * seq[k].scale, 0.25f * seq[k].scale, 0};
        if (seq[k].bad != 0) gv[2] = seq[k].bad;
        int64_t four = 4;
        kiln_array *args[3] = {f32_arr(0, NULL, &seq[k].scale), i32_scalar(good),
                               f32_arr(1, &four, gv)};
        for (int path = 0; path < 2; path++) {
            kiln_array *outs[4] = {0};
            if (path == 0)
                CHECK_OK(ctx, kiln_executable_run(e, 3, args, 4, outs));
            else
                CHECK_OK(ctx, kiln_interpret(g, 3, args, 4, outs));
            if (!outs[3]) continue;
            bool fin = false;
            kiln_array_copy_to_host(outs[1], &fin, 1);
            CHECK_MSG(fin == seq[k].finite, "step %zu (%s): finite %d", k + 1,
                      path ? "interpreted" : "compiled", fin);
            CHECK_MSG(read_f32(outs[2]) == seq[k].want, "step %zu (%s): scale %g, want %g", k + 1,
                      path ? "interpreted" : "compiled", read_f32(outs[2]), seq[k].want);
            CHECK_MSG(read_i32(outs[3]) == seq[k].good, "step %zu (%s): good %d, want %d", k + 1,
                      path ? "interpreted" : "compiled", read_i32(outs[3]), seq[k].good);
            if (seq[k].finite) { /* the scale is a power of two: unscaling is exact */
                float u[4];
                kiln_array_copy_to_host(outs[0], u, sizeof u);
                CHECK(u[0] == 0.75f && u[1] == -0.5f && u[2] == 0.25f && u[3] == 0);
            }
            for (int i = 0; i < 4; i++) kiln_array_destroy(outs[i]);
        }
        good = seq[k].good;
        for (int i = 0; i < 3; i++) kiln_array_destroy(args[i]);
    }
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* The default interval is 2000: 1999 finite steps keep the scale, the 2000th doubles it. */
static void test_default_interval(void) {
    kiln_graph *g = unscale_graph(0);
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, NULL, &e));
    for (int32_t before = 1998; before <= 1999 && e; before++) {
        float s = 65536, gv[4] = {1, 2, 3, 4};
        int64_t four = 4;
        kiln_array *args[3] = {f32_arr(0, NULL, &s), i32_scalar(before), f32_arr(1, &four, gv)};
        kiln_array *outs[4] = {0};
        CHECK_OK(ctx, kiln_executable_run(e, 3, args, 4, outs));
        if (outs[3]) {
            CHECK(read_f32(outs[2]) == (before == 1999 ? 131072.0f : 65536.0f));
            CHECK(read_i32(outs[3]) == (before == 1999 ? 0 : 1999));
        }
        for (int i = 0; i < 4; i++) kiln_array_destroy(outs[i]);
        for (int i = 0; i < 3; i++) kiln_array_destroy(args[i]);
    }
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* good_steps unset: the scale never moves, the test still says whether to skip. */
static void test_static_scale(void) {
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "static", &g));
    int64_t two = 2;
    kiln_value gr = kiln_parameter(g, "grad", KILN_DTYPE_F32, 1, &two);
    kiln_loss_scale_options o = {.scale = kiln_scalar(g, KILN_DTYPE_F32, 128)};
    kiln_value out[3], ng = {1, 1};
    CHECK_OK(ctx, kiln_loss_scale_unscale(g, &o, 1, &gr, &out[0], &out[1], &out[2], &ng));
    CHECK(ng.id == 0);
    CHECK_OK(ctx, kiln_graph_finish(g, 3, out));
    float bad[2] = {1, INFINITY}, ok[2] = {256, -64};
    for (int k = 0; k < 2; k++) {
        kiln_array *arg = f32_arr(1, &two, k ? ok : bad), *outs[3] = {0};
        CHECK_OK(ctx, kiln_interpret(g, 1, &arg, 3, outs));
        if (outs[2]) {
            bool fin = !k;
            kiln_array_copy_to_host(outs[1], &fin, 1);
            CHECK(fin == (k == 1));
            CHECK(read_f32(outs[2]) == 128);
            float u[2];
            kiln_array_copy_to_host(outs[0], u, sizeof u);
            if (k) CHECK(u[0] == 2 && u[1] == -0.5f);
        }
        for (int i = 0; i < 3; i++) kiln_array_destroy(outs[i]);
        kiln_array_destroy(arg);
    }
    kiln_graph_destroy(g);
}

/* A mixed-precision step: f32 masters p (two arrays), computed in f16, the loss in f32,
 * scaled, AdamW on the unscaled gradients, skipped unless they are all finite:
 *   args p0 f32[3,4], p1 f32[5], m0, m1, v0, v1, x f16[3,4], scale f32, good i32, step i32
 *   outs p0', p1', m0', m1', v0', v1', scale', good', step', loss */
enum { N_ARGS = 10, N_OUTS = 10 };
static kiln_graph *f16_step_graph(void) {
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "f16_step", &g));
    int64_t d0[2] = {3, 4}, d1 = 5;
    kiln_value a[N_ARGS];
    static const char *const names[6] = {"p0", "p1", "m0", "m1", "v0", "v1"};
    for (int i = 0; i < 6; i++)
        a[i] = kiln_parameter(g, names[i], KILN_DTYPE_F32, i % 2 ? 1 : 2, i % 2 ? &d1 : d0);
    a[6] = kiln_parameter(g, "x", KILN_DTYPE_F16, 2, d0);
    a[7] = kiln_parameter(g, "scale", KILN_DTYPE_F32, 0, NULL);
    a[8] = kiln_parameter(g, "good", KILN_DTYPE_I32, 0, NULL);
    a[9] = kiln_parameter(g, "step", KILN_DTYPE_I32, 0, NULL);
    /* loss = sum(f32(f16(p0) * x)) + sum(f32(f16(p1))^2): the parameters used in f16 */
    kiln_value y = kiln_mul(g, kiln_convert(g, a[0], KILN_DTYPE_F16), a[6]);
    kiln_value q = kiln_convert(g, kiln_convert(g, a[1], KILN_DTYPE_F16), KILN_DTYPE_F32);
    kiln_value loss =
        kiln_add(g, kiln_reduce_sum(g, kiln_convert(g, y, KILN_DTYPE_F32), 0, NULL, false),
                 kiln_reduce_sum(g, kiln_mul(g, q, q), 0, NULL, false));
    kiln_value grads[2], un[2], fin, ns, ngood, np[2], nm[2], nv[2], o[N_OUTS];
    CHECK_OK(ctx, kiln_grad(g, kiln_mul(g, loss, a[7]), 2, a, grads));
    kiln_loss_scale_options lo = {.scale = a[7], .good_steps = a[8]};
    CHECK_OK(ctx, kiln_loss_scale_unscale(g, &lo, 2, grads, un, &fin, &ns, &ngood));
    kiln_adamw_options ao = {.lr = kiln_scalar(g, KILN_DTYPE_F32, 0.1), .step = a[9]};
    CHECK_OK(ctx, kiln_optim_adamw(g, &ao, 2, a, un, a + 2, a + 4, np, nm, nv));
    CHECK_OK(ctx, kiln_select_each(g, fin, 2, np, a, o));
    CHECK_OK(ctx, kiln_select_each(g, fin, 2, nm, a + 2, o + 2));
    CHECK_OK(ctx, kiln_select_each(g, fin, 2, nv, a + 4, o + 4));
    o[6] = ns, o[7] = ngood;
    o[8] = kiln_add(g, a[9], kiln_convert(g, fin, KILN_DTYPE_I32));
    o[9] = loss;
    CHECK_OK(ctx, kiln_graph_finish(g, N_OUTS, o));
    return g;
}

/* The bytes of array a into a new buffer of *n bytes. */
static unsigned char *bytes_of(const kiln_array *a, size_t *n) {
    *n = kiln_array_nbytes(a);
    unsigned char *b = malloc(*n);
    kiln_array_copy_to_host(a, b, *n);
    return b;
}

/* Scale 2^16 (GradScaler's first): the loss's cotangent, the scale, is inf in f16 (whose
 * largest finite value is 65504), so every gradient is, and the step is skipped: the
 * donated state comes back bit for bit, the scale halves, the step count stays. At 2^15
 * the backward pass fits f16 and the update is taken. */
static void test_overflow_skips_step(void) {
    kiln_graph *g = f16_step_graph();
    int donate[6] = {0, 1, 2, 3, 4, 5};
    kiln_compile_options co = {.n_donate = 6, .donate_argnums = donate};
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, &co, &e));
    float p0[12], p1[5], m0[12], m1[5], v0[12], v1[5];
    for (int i = 0; i < 12; i++)
        p0[i] = 0.1f * (float)(i - 6), m0[i] = 0.01f * (float)i, v0[i] = 0.001f * (float)(i + 1);
    for (int i = 0; i < 5; i++)
        p1[i] = 0.3f * (float)(i - 2), m1[i] = -0.02f * (float)i, v1[i] = 0.002f * (float)(i + 1);
    uint16_t x[12];
    for (int i = 0; i < 12; i++) x[i] = 0x3c00u + (uint16_t)(i << 6); /* f16 in [1, 1.75] */
    int64_t d0[2] = {3, 4}, d1 = 5;
    kiln_array *state[6] = {f32_arr(2, d0, p0),  f32_arr(1, &d1, p1), f32_arr(2, d0, m0),
                            f32_arr(1, &d1, m1), f32_arr(2, d0, v0),  f32_arr(1, &d1, v1)};
    float scale = 0x1p16f; /* GradScaler's first scale */
    int32_t good = 7, step = 4;
    for (int round = 0; round < 2 && e; round++) {
        unsigned char *before[6];
        size_t nb[6];
        for (int i = 0; i < 6; i++) before[i] = bytes_of(state[i], &nb[i]);
        kiln_array *args[N_ARGS], *outs[N_OUTS] = {0};
        for (int i = 0; i < 6; i++) args[i] = state[i];
        CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F16, 2, d0, x, &args[6]));
        args[7] = f32_arr(0, NULL, &scale), args[8] = i32_scalar(good), args[9] = i32_scalar(step);
        CHECK_OK(ctx, kiln_executable_run(e, N_ARGS, args, N_OUTS, outs));
        for (int i = 6; i < N_ARGS; i++) kiln_array_destroy(args[i]);
        if (!outs[N_OUTS - 1]) break;
        bool same = true;
        for (int i = 0; i < 6; i++) {
            size_t n;
            unsigned char *after = bytes_of(outs[i], &n);
            same &= n == nb[i] && !memcmp(after, before[i], n);
            free(after), free(before[i]);
            kiln_array_destroy(state[i]); /* consumed by the call */
            state[i] = outs[i];
        }
        CHECK(isfinite(read_f32(outs[9]))); /* the loss itself is finite: f32 */
        if (round == 0) {
            CHECK_MSG(same, "a skipped step must leave parameters and moments bit-identical");
            CHECK(read_f32(outs[6]) == 0x1p15f && read_i32(outs[7]) == 0);
            CHECK(read_i32(outs[8]) == step);
        } else {
            CHECK_MSG(!same, "a finite step updates");
            CHECK(read_f32(outs[6]) == 0x1p15f && read_i32(outs[7]) == 1);
            CHECK(read_i32(outs[8]) == step + 1);
        }
        scale = read_f32(outs[6]), good = read_i32(outs[7]), step = read_i32(outs[8]);
        for (int i = 6; i < N_OUTS; i++) kiln_array_destroy(outs[i]);
    }
    for (int i = 0; i < 6; i++) kiln_array_destroy(state[i]);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

static void expect_error(kiln_graph *g, kiln_status got, kiln_status want, const char *needle) {
    CHECK_MSG(got == want, "got %s, want %s", kiln_status_name(got), kiln_status_name(want));
    CHECK_CONTAINS(kiln_graph_error(g), needle);
    kiln_graph_destroy(g);
}

static void test_errors(void) {
    int64_t two = 2;
    for (int c = 0; c < 7; c++) {
        kiln_graph *g = NULL;
        CHECK_OK(ctx, kiln_graph_create(ctx, "errors", &g));
        kiln_value gr = kiln_parameter(g, "grad", KILN_DTYPE_F32, 1, &two);
        kiln_value out = {0}, fin, ns, ng;
        kiln_loss_scale_options o = {.scale = kiln_scalar(g, KILN_DTYPE_F32, 8),
                                     .good_steps = kiln_scalar(g, KILN_DTYPE_I32, 0)};
        kiln_status st;
        switch (c) {
        case 0:
            o.scale = gr;
            st = kiln_loss_scale_unscale(g, &o, 1, &gr, &out, &fin, &ns, &ng);
            expect_error(g, st, KILN_STATUS_SHAPE,
                         "scale must be a rank-0 float value, not f32[2]");
            break;
        case 1:
            o.good_steps = kiln_scalar(g, KILN_DTYPE_F32, 0);
            st = kiln_loss_scale_unscale(g, &o, 1, &gr, &out, &fin, &ns, &ng);
            expect_error(g, st, KILN_STATUS_DTYPE, "good_steps must be a rank-0 i32 or i64");
            break;
        case 2:
            o.growth_factor = 0.5;
            st = kiln_loss_scale_unscale(g, &o, 1, &gr, &out, &fin, &ns, &ng);
            expect_error(g, st, KILN_STATUS_INVALID_ARGUMENT, "growth_factor = 0.5 must be > 1");
            break;
        case 3:
            o.backoff_factor = 2;
            st = kiln_loss_scale_unscale(g, &o, 1, &gr, &out, &fin, &ns, &ng);
            expect_error(g, st, KILN_STATUS_INVALID_ARGUMENT,
                         "backoff_factor = 2 must be in (0, 1)");
            break;
        case 4: {
            kiln_value i = kiln_parameter(g, "i", KILN_DTYPE_I32, 1, &two);
            st = kiln_loss_scale_unscale(g, &o, 1, &i, &out, &fin, &ns, &ng);
            expect_error(g, st, KILN_STATUS_DTYPE, "grads[0] is i32: gradients are float values");
            break;
        }
        case 5:
            st = kiln_select_each(g, gr, 1, &gr, &gr, &out);
            expect_error(g, st, KILN_STATUS_DTYPE, "pred must be a rank-0 bool value, not f32[2]");
            break;
        default: {
            kiln_value h = kiln_parameter(g, "h", KILN_DTYPE_F32, 0, NULL);
            st = kiln_select_each(g, kiln_scalar(g, KILN_DTYPE_BOOL, 1), 1, &gr, &h, &out);
            expect_error(g, st, KILN_STATUS_SHAPE, "on_true[0] is f32[2] but on_false[0] is f32[]");
            break;
        }
        }
        CHECK(out.id == 0);
    }
}

int main(void) {
    char dir[] = "/tmp/kiln-test-loss-scale-XXXXXX";
    if (!(ctx = test_private_context(dir))) return 2;
    RUN(test_grad_scaler_sequence);
    RUN(test_default_interval);
    RUN(test_static_scale);
    RUN(test_overflow_skips_step);
    RUN(test_errors);
    kiln_context_destroy(ctx);
    test_remove_dir(dir);
    return test_summary("test_loss_scale");
}
