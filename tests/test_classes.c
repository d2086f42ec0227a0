/* test_classes.c — the memory classes of a training step (kiln_memory_class): a 2-layer
 * MLP step whose parameter, gradient, optimiser-state and saved-activation bytes are
 * known from its shapes; the classes with and without the passes and fusion; CSE of a
 * forward and a backward duplicate; the text, JSON and SVG forms; a forward program has
 * no saved activations. */
#include "test.h"
#include "ir/ir.h"
#include "passes/passes.h"
#include "trace/role.h"

#include <stdlib.h>

static kiln_context *ctx;

/* The step: x [B, I], y [B, O]; z = relu(x w1 + b1) w2 + b2; loss = mean((z - y)^2);
 * kiln_grad w.r.t. the 4 weights; AdamW. Arguments: x, y, step, w1, b1, w2, b2, then m
 * and v of each weight (3 + 12); outputs: the loss, 4 new weights, 4 m, 4 v. */
enum { B = 32, I = 16, H = 24, O = 5, N_W = 4, N_ARGS = 3 + 3 * N_W, N_OUT = 1 + 3 * N_W };
#define P_BYTES ((uint64_t)4 * (I * H + H + H * O + O)) /* the weights, f32 */

static int mlp_step_line; /* the line of the forward pass's first op (for the report) */

static kiln_graph *mlp_step(void) {
    kiln_graph *g = NULL;
    if (kiln_graph_create(ctx, "mlp_step", &g)) return NULL;
    int64_t xi[2] = {B, I}, yo[2] = {B, O}, shapes[N_W][2] = {{I, H}, {H, 0}, {H, O}, {O, 0}};
    int ranks[N_W] = {2, 1, 2, 1};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, xi);
    kiln_value y = kiln_parameter(g, "y", KILN_DTYPE_F32, 2, yo);
    kiln_value step = kiln_parameter(g, "step", KILN_DTYPE_F32, 0, NULL);
    kiln_value w[N_W], m[N_W], v[N_W], grads[N_W], outs[N_OUT];
    for (int i = 0; i < N_W; i++)
        w[i] = kiln_parameter(g, "w", KILN_DTYPE_F32, ranks[i], shapes[i]);
    for (int i = 0; i < N_W; i++)
        m[i] = kiln_parameter(g, "m", KILN_DTYPE_F32, ranks[i], shapes[i]);
    for (int i = 0; i < N_W; i++)
        v[i] = kiln_parameter(g, "v", KILN_DTYPE_F32, ranks[i], shapes[i]);
    mlp_step_line = __LINE__ + 1;
    kiln_value h = kiln_relu(g, kiln_add(g, kiln_matmul(g, x, w[0]), w[1]));
    kiln_value z = kiln_add(g, kiln_matmul(g, h, w[2]), w[3]);
    kiln_value d = kiln_sub(g, z, y);
    outs[0] = kiln_mean(g, kiln_mul(g, d, d), 0, NULL, false);
    kiln_grad(g, outs[0], N_W, w, grads);
    kiln_adamw_options o = {.step = step};
    kiln_optim_adamw(g, &o, N_W, w, grads, m, v, outs + 1, outs + 1 + N_W, outs + 1 + 2 * N_W);
    if (kiln_graph_finish(g, N_OUT, outs)) {
        fprintf(stderr, "mlp_step: %s\n", kiln_last_error(ctx));
        kiln_graph_destroy(g);
        return NULL;
    }
    return g;
}

static kiln_executable *compile(kiln_graph *g, bool passes, bool fusion) {
    int donate[3 * N_W];
    for (int i = 0; i < 3 * N_W; i++) donate[i] = 3 + i;
    kiln_compile_options co = {.keep_ir = true,
                               .disable_passes = !passes,
                               .disable_fusion = !fusion,
                               .n_donate = 3 * N_W,
                               .donate_argnums = donate};
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, &co, &e));
    return e;
}

/* Bytes by dtype: the buffers' own sizes summed by their dtype (scratch under index 0),
 * at the peak step and in total, and the same sums as the classes'. */
static void check_dtypes(kiln_executable *e, const char *what) {
    kiln_memory_analysis a;
    CHECK_OK(ctx, kiln_executable_get_memory_analysis(e, &a));
    uint64_t total[KILN_MAX_DTYPES] = {0}, cls = 0, cls_peak = 0, dt = 0, dt_peak = 0;
    for (int i = 0; i < a.num_buffers; i++) {
        kiln_buffer_info b;
        CHECK_OK(ctx, kiln_executable_get_buffer_info(e, i, &b));
        int t = b.kind == KILN_BUFFER_KIND_SCRATCH ? 0 : (int)b.dtype;
        CHECK(t >= 0 && t < KILN_MAX_DTYPES);
        if (t >= 0 && t < KILN_MAX_DTYPES) total[t] += b.bytes;
    }
    for (int t = 0; t < KILN_MAX_DTYPES; t++) {
        CHECK_MSG(a.dtype_bytes_total[t] == total[t], "%s: %s bytes %llu, the buffers' %llu", what,
                  t ? kiln_dtype_name((kiln_dtype)t) : "scratch",
                  (unsigned long long)a.dtype_bytes_total[t], (unsigned long long)total[t]);
        CHECK(a.dtype_bytes_at_peak[t] <= a.dtype_bytes_total[t]);
        dt += a.dtype_bytes_total[t], dt_peak += a.dtype_bytes_at_peak[t];
    }
    for (int c = 0; c < KILN_MAX_MEMORY_CLASSES; c++)
        cls += a.class_bytes_total[c], cls_peak += a.class_bytes_at_peak[c];
    CHECK_MSG(dt == cls && dt_peak == cls_peak,
              "%s: by dtype %llu (%llu at peak), by class %llu (%llu)", what,
              (unsigned long long)dt, (unsigned long long)dt_peak, (unsigned long long)cls,
              (unsigned long long)cls_peak);
}

/* The classes every configuration agrees on, by construction: the weights and the new
 * weights are parameters (2P in total), m, v, m' and v' optimiser state (4P), x, y and the
 * step inputs, the loss the one output; the gradients have the weights' bytes. */
static void check_common(kiln_executable *e, const char *what) {
    kiln_memory_analysis a;
    CHECK_OK(ctx, kiln_executable_get_memory_analysis(e, &a));
    const uint64_t *t = a.class_bytes_total;
    CHECK_MSG(t[KILN_MEMORY_CLASS_PARAMETER] == 2 * P_BYTES, "%s: parameter total %llu, want %llu",
              what, (unsigned long long)t[KILN_MEMORY_CLASS_PARAMETER],
              (unsigned long long)(2 * P_BYTES));
    CHECK_MSG(t[KILN_MEMORY_CLASS_OPTIMIZER_STATE] == 4 * P_BYTES, "%s: state total %llu", what,
              (unsigned long long)t[KILN_MEMORY_CLASS_OPTIMIZER_STATE]);
    CHECK_MSG(t[KILN_MEMORY_CLASS_GRADIENT] == P_BYTES, "%s: gradient total %llu, want %llu", what,
              (unsigned long long)t[KILN_MEMORY_CLASS_GRADIENT], (unsigned long long)P_BYTES);
    CHECK_MSG(t[KILN_MEMORY_CLASS_INPUT] == 4 * (B * I + B * O + 1), "%s: input total %llu", what,
              (unsigned long long)t[KILN_MEMORY_CLASS_INPUT]);
    CHECK_MSG(t[KILN_MEMORY_CLASS_OUTPUT] == 4, "%s: output total %llu", what,
              (unsigned long long)t[KILN_MEMORY_CLASS_OUTPUT]);
    CHECK_MSG(t[KILN_MEMORY_CLASS_ACTIVATION] > 0, "%s: no saved activation", what);
    uint64_t at_peak = 0;
    for (int c = 0; c < KILN_MAX_MEMORY_CLASSES; c++) at_peak += a.class_bytes_at_peak[c];
    CHECK_MSG(at_peak <= a.peak_bytes, "%s: %llu bytes by class at the peak > planned %llu", what,
              (unsigned long long)at_peak, (unsigned long long)a.peak_bytes);
    CHECK(a.class_bytes_at_peak[KILN_MEMORY_CLASS_CONSTANT] == 0); /* host memory */
    check_dtypes(e, what);
    CHECK(a.peak_step >= 0 && a.peak_step < a.num_steps);
    /* every activation is a forward value the passes kept, never an argument */
    for (int i = 0; i < a.num_buffers; i++) {
        kiln_buffer_info b;
        CHECK_OK(ctx, kiln_executable_get_buffer_info(e, i, &b));
        if (b.kind == KILN_BUFFER_KIND_ARGUMENT)
            CHECK_MSG(b.memory_class == KILN_MEMORY_CLASS_INPUT ||
                          b.memory_class == KILN_MEMORY_CLASS_PARAMETER ||
                          b.memory_class == KILN_MEMORY_CLASS_OPTIMIZER_STATE,
                      "%s: argument %%%d is %s", what, b.node,
                      kiln_memory_class_name(b.memory_class));
        if (b.memory_class == KILN_MEMORY_CLASS_ACTIVATION)
            CHECK_MSG(b.kind == KILN_BUFFER_KIND_TEMP && b.file && b.line > 0,
                      "%s: activation %%%d (%s) kind %d", what, b.node, b.op, b.kind);
    }
}

/* With the passes and fusion (what users get): the step's classes by hand. The backward
 * pass reads x w1 (relu's mask recomputes x w1 + b1 from it), relu's result (for w2's
 * gradient) and h w2 (the loss's derivative recomputes z - y from it): 2 B H + B O
 * floats. In place over the donated buffers, the peak holds m and v once each, and the
 * weights once (plus any new weight the plan put in a new array while the old is live). */
static void test_training_step(void) {
    kiln_graph *g = mlp_step();
    CHECK(g != NULL);
    if (!g) return;
    kiln_executable *e = compile(g, true, true);
    if (!e) {
        kiln_graph_destroy(g);
        return;
    }
    check_common(e, "passes + fusion");
    kiln_memory_analysis a;
    CHECK_OK(ctx, kiln_executable_get_memory_analysis(e, &a));
    CHECK(a.class_bytes_total[KILN_MEMORY_CLASS_ACTIVATION] == 4 * (2 * B * H + B * O));
    CHECK(a.class_bytes_at_peak[KILN_MEMORY_CLASS_OPTIMIZER_STATE] == 2 * P_BYTES);
    CHECK(a.class_bytes_at_peak[KILN_MEMORY_CLASS_INPUT] == 4 * (B * I + B * O + 1));
    int dots = 0, maxes = 0;
    uint64_t fresh = 0; /* new weights the plan put in new output arrays, not in place */
    for (int i = 0; i < a.num_buffers; i++) {
        kiln_buffer_info b;
        CHECK_OK(ctx, kiln_executable_get_buffer_info(e, i, &b));
        if (b.memory_class == KILN_MEMORY_CLASS_PARAMETER && b.place == KILN_BUFFER_PLACE_OUTPUT)
            fresh += b.bytes;
        if (b.memory_class != KILN_MEMORY_CLASS_ACTIVATION) continue;
        dots += !strcmp(b.op, "dot_general");
        maxes += !strcmp(b.op, "max");
        CHECK_MSG(b.file && !strcmp(b.file, __FILE__) &&
                      (b.line == mlp_step_line || b.line == mlp_step_line + 1),
                  "activation %%%d from %s:%d", b.node, b.file ? b.file : "?", b.line);
    }
    CHECK(dots == 2 && maxes == 1);
    /* the weights once, plus a new weight that did not go in place if its old one is live */
    CHECK(a.class_bytes_at_peak[KILN_MEMORY_CLASS_PARAMETER] >= P_BYTES &&
          a.class_bytes_at_peak[KILN_MEMORY_CLASS_PARAMETER] <= P_BYTES + fresh);
    char *report = kiln_executable_memory_report(e);
    CHECK_CONTAINS(report, "activations saved for the backward pass: 3 values");
    CHECK_CONTAINS(report, "optimizer_state");
    char where[512];
    /* the report names the file as the printed IR does: its last path component */
    const char *base = strrchr(__FILE__, '/');
    snprintf(where, sizeof where, "from %s:%d", base ? base + 1 : __FILE__, mlp_step_line);
    CHECK_CONTAINS(report, where);
    kiln_string_free(ctx, report);
    char *json = kiln_executable_plan_json(e);
    CHECK_CONTAINS(json, "\"class\": \"activation\"");
    CHECK_CONTAINS(json, "\"class\": \"gradient\"");
    CHECK_CONTAINS(json, "\"classes\": {\"peak_step\": ");
    snprintf(where, sizeof where, "\"activation\": %d", 4 * (2 * B * H + B * O));
    CHECK_CONTAINS(json, where);
    kiln_string_free(ctx, json);
    char *svg = kiln_executable_plan_svg(e);
    CHECK_CONTAINS(svg, "class=\"legend\"");
    CHECK_CONTAINS(svg, ">activation</text>");
    CHECK_CONTAINS(svg, ">optimizer_state</text>");
    CHECK_CONTAINS(svg, "fill=\"#f0a04b\""); /* an activation's box */
    kiln_string_free(ctx, svg);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* The roles survive every configuration: without the passes, without fusion, neither. */
static void test_configurations(void) {
    kiln_graph *g = mlp_step();
    CHECK(g != NULL);
    if (!g) return;
    static const struct {
        bool passes, fusion;
        const char *what;
    } cfg[] = {{false, true, "no passes"}, {true, false, "no fusion"}, {false, false, "neither"}};
    for (size_t i = 0; i < sizeof cfg / sizeof *cfg; i++) {
        kiln_executable *e = compile(g, cfg[i].passes, cfg[i].fusion);
        if (e) check_common(e, cfg[i].what);
        kiln_executable_destroy(e);
    }
    kiln_graph_destroy(g);
}

/* CSE of a forward value and its backward duplicate keeps one node, forward; the role
 * survives whichever of the two came first. */
static void test_cse_forward_backward(void) {
    for (int backward_first = 0; backward_first < 2; backward_first++) {
        kiln_graph *g = NULL, *out = NULL;
        CHECK_OK(ctx, kiln_graph_create(ctx, "cse", &g));
        int64_t n = 8;
        kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, &n);
        kiln_value a = kiln_tanh(g, x), b = kiln_tanh(g, x);
        g->nodes[(backward_first ? a : b).id].backward = true;
        trace_role_put(g, (backward_first ? b : a).id, TRACE_ROLE_GRADIENT);
        kiln_value outs[2] = {kiln_exp(g, a), kiln_exp(g, b)};
        CHECK_OK(ctx, kiln_graph_finish(g, 2, outs));
        pass_stats st = {0};
        CHECK_OK(ctx, pass_cse_run(g, &out, &st));
        CHECK(out != NULL && st.cse_merged >= 2);
        if (out) {
            uint32_t tanhs = 0;
            for (uint32_t id = 1; id < out->n_nodes; id++) {
                const ir_node *nd = &out->nodes[id];
                if (nd->op != IR_TANH) continue;
                tanhs++;
                CHECK_MSG(!nd->backward, "the merged tanh is backward (backward first: %d)",
                          backward_first);
                CHECK(trace_role_of(out, id) == TRACE_ROLE_GRADIENT);
            }
            CHECK(tanhs == 1);
        }
        kiln_graph_destroy(out);
        kiln_graph_destroy(g);
    }
}

/* A forward program: no activation is saved, nothing is a gradient or optimiser state. */
static void test_forward_only(void) {
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "forward", &g));
    int64_t xi[2] = {B, I}, ih[2] = {I, H};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, xi);
    kiln_value w = kiln_parameter(g, "w", KILN_DTYPE_F32, 2, ih);
    kiln_value out = kiln_tanh(g, kiln_relu(g, kiln_matmul(g, x, w)));
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &out));
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, &(kiln_compile_options){.keep_ir = true}, &e));
    if (e) {
        kiln_memory_analysis a;
        CHECK_OK(ctx, kiln_executable_get_memory_analysis(e, &a));
        CHECK(a.class_bytes_total[KILN_MEMORY_CLASS_ACTIVATION] == 0);
        CHECK(a.class_bytes_total[KILN_MEMORY_CLASS_GRADIENT] == 0);
        CHECK(a.class_bytes_total[KILN_MEMORY_CLASS_OPTIMIZER_STATE] == 0);
        CHECK(a.class_bytes_total[KILN_MEMORY_CLASS_PARAMETER] == 0);
        CHECK(a.class_bytes_total[KILN_MEMORY_CLASS_INPUT] == 4 * (B * I + I * H));
        CHECK(a.class_bytes_total[KILN_MEMORY_CLASS_OUTPUT] == 4 * B * H);
        char *report = kiln_executable_memory_report(e);
        CHECK(report && !strstr(report, "activations saved"));
        kiln_string_free(ctx, report);
    }
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* Differentiating w.r.t. an intermediate value gives it no parameter role. */
static void test_roles_recorded(void) {
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "roles", &g));
    int64_t n = 4;
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, &n);
    kiln_value s = kiln_tanh(g, x);
    kiln_value loss = kiln_reduce_sum(g, kiln_mul(g, s, s), 0, NULL, false);
    kiln_value wrt[2] = {x, s}, grads[2];
    uint32_t before = g->n_nodes;
    CHECK_OK(ctx, kiln_grad(g, loss, 2, wrt, grads));
    CHECK(trace_role_of(g, x.id) == TRACE_ROLE_PARAMETER);
    CHECK(trace_role_of(g, s.id) == TRACE_ROLE_NONE && !g->nodes[s.id].backward);
    CHECK(trace_role_of(g, grads[0].id) == TRACE_ROLE_GRADIENT);
    CHECK(trace_role_of(g, grads[1].id) == TRACE_ROLE_GRADIENT);
    for (uint32_t id = 1; id < g->n_nodes; id++)
        CHECK_MSG(g->nodes[id].backward == (id >= before), "%%%u backward %d", id,
                  g->nodes[id].backward);
    kiln_graph_destroy(g);
    CHECK(!strcmp(kiln_memory_class_name(KILN_MEMORY_CLASS_OPTIMIZER_STATE), "optimizer_state"));
    CHECK(!strcmp(kiln_memory_class_name(KILN_MEMORY_CLASS_ACTIVATION), "activation"));
    CHECK(!strcmp(kiln_memory_class_name((kiln_memory_class)99), "?"));
}

/* A forward pass that stores its activations in bf16 and its loss in f32: the analysis,
 * the text report and the JSON count each dtype's bytes apart. */
static void test_bytes_by_dtype(void) {
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "mixed", &g));
    int64_t d[2] = {64, 96};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
    kiln_value h = kiln_tanh(g, kiln_convert(g, x, KILN_DTYPE_BF16));
    kiln_value y = kiln_exp(g, kiln_mul(g, h, h));
    kiln_value s = kiln_reduce_sum(g, kiln_convert(g, y, KILN_DTYPE_F32), 0, NULL, false);
    CHECK_OK(ctx, kiln_graph_finish(g, 2, (kiln_value[]){s, h}));
    kiln_compile_options co = {.keep_ir = true};
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, &co, &e));
    if (e) {
        kiln_memory_analysis a;
        CHECK_OK(ctx, kiln_executable_get_memory_analysis(e, &a));
        CHECK(a.dtype_bytes_total[KILN_DTYPE_BF16] >= 2 * 64 * 96); /* h, an output */
        CHECK(a.dtype_bytes_total[KILN_DTYPE_F32] >= 4 * 64 * 96 + 4);
        check_dtypes(e, "mixed");
        char *r = kiln_executable_memory_report(e);
        CHECK(r && strstr(r, "by dtype") && strstr(r, "bf16") && strstr(r, "f32"));
        kiln_string_free(ctx, r);
        kiln_executable_destroy(e);
    }
    kiln_graph_destroy(g);
}

int main(int argc, char **argv) {
    test_select_cases(argc, argv);
    char dir[] = "/tmp/kiln-test-classes-XXXXXX";
    if (!(ctx = test_private_context(dir))) return 2;
    RUN(test_roles_recorded);
    RUN(test_cse_forward_backward);
    RUN_CC(test_training_step);
    RUN_CC(test_configurations);
    RUN_CC(test_forward_only);
    RUN_CC(test_bytes_by_dtype);
    kiln_context_destroy(ctx);
    test_remove_dir(dir);
    return test_summary("test_classes");
}
