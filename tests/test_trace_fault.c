/* test_trace_fault.c — fault injection for building: a test host allocator fails the 1st,
 * 2nd, ... Nth allocation of a whole context-create, build, finish, print and destroy. Each
 * run must end in a clean KILN_STATUS_HOST_OOM with a message (or succeed once N passes the
 * number of allocations), and leave nothing allocated, with every size given back right. */
#include "fault.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

/* Where the sweep's failures landed. */
typedef struct oom_places {
    int create, builder, printer;
} oom_places;

/* Builds a graph that exercises every way the builder allocates: named parameters,
 * constants (their data), concatenations with spilled inputs (> 3) and with more operands
 * than the builder keeps on its stack (> 16), implicit broadcasts, composites, and enough
 * nodes to grow the node array several times. */
static kiln_value build(kiln_graph *g) {
    kiln_value x = kiln_parameter(g, "tokens_embedded", KILN_DTYPE_F32, 3, DIMS(2, 4, 8));
    kiln_value w = kiln_parameter(g, "w", KILN_DTYPE_F32, 2, DIMS(8, 8));
    kiln_value scale = kiln_parameter(g, "scale", KILN_DTYPE_F32, 1, DIMS(8));
    kiln_value bias = kiln_parameter(g, NULL, KILN_DTYPE_F32, 1, DIMS(8));
    kiln_value labels = kiln_parameter(g, "labels", KILN_DTYPE_I32, 2, DIMS(2, 4));
    float cdata[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    kiln_value c = kiln_constant(g, KILN_DTYPE_F32, 1, DIMS(8), cdata);
    kiln_value h = kiln_add(g, kiln_matmul(g, x, w), c);
    h = kiln_layer_norm(g, kiln_gelu(g, h, true), scale, bias, 1e-5);
    h = kiln_rms_norm(g, kiln_silu(g, kiln_gelu(g, h, false)), scale, -1, 1e-6);
    h = kiln_clip(g, kiln_where(g, kiln_reshape(g, labels, 3, DIMS(2, 4, 1)), h, kiln_sin(g, h)),
                  kiln_neg(g, scale), scale);
    kiln_value parts[20];
    for (int i = 0; i < 20; i++) parts[i] = i % 3 ? h : kiln_relu(g, h);
    kiln_value wide = kiln_concatenate(g, 5, parts, 2);  /* 5 inputs: spilled to the heap */
    kiln_value tall = kiln_concatenate(g, 20, parts, 1); /* > 16: a heap operand list */
    kiln_value tw = kiln_transpose(g, tall, (const int[]){0, 2, 1});
    kiln_value part = kiln_slice(g, tw, DIMS(0, 0, 0), DIMS(2, 8, 80), DIMS(1, 2, 3));
    kiln_value padded = kiln_pad(g, part, kiln_scalar(g, KILN_DTYPE_F32, 0), DIMS(0, 1, -1),
                                 DIMS(0, 1, 2), DIMS(0, 0, 1));
    kiln_value m = kiln_mean(g, padded, 1, (const int[]){-1}, true);
    kiln_value sm = kiln_softmax(g, wide, -1);
    kiln_value logits =
        kiln_reduce_sum(g, kiln_reshape(g, sm, 4, DIMS(2, 4, 5, 8)), 1, (const int[]){3}, false);
    kiln_value loss = kiln_mean(g, kiln_softmax_cross_entropy(g, logits, labels), 0, NULL, false);
    kiln_value rows = kiln_take_rows(g, w, kiln_iota(g, KILN_DTYPE_I32, 1, DIMS(3), 0));
    kiln_value back =
        kiln_scatter_add_rows(g, w, kiln_iota(g, KILN_DTYPE_I64, 1, DIMS(3), 0), rows);
    kiln_value lse = kiln_logsumexp(g, back, 1, (const int[]){0}, false);
    kiln_value pick =
        kiln_select(g, kiln_compare(g, lse, kiln_scalar(g, KILN_DTYPE_F32, 0), KILN_CMP_GT), lse,
                    kiln_full(g, KILN_DTYPE_F32, 1, DIMS(8), 1));
    kiln_value total = kiln_add(g, kiln_add(g, loss, kiln_reduce_max(g, m, 0, NULL, false)),
                                kiln_reduce_min(g, pick, 0, NULL, false));
    return kiln_convert(g, total, KILN_DTYPE_F64);
}

/* One run: create, build, finish, print, destroy. */
static kiln_status run(fault_run *r) {
    oom_places *at = (oom_places *)r->user;
    kiln_context *ctx = NULL;
    kiln_status s = fault_context(r, NULL, &ctx);
    if (s) {
        CHECK(ctx == NULL);
        if (s == KILN_STATUS_HOST_OOM && r->message[0]) at->create++;
        return s;
    }
    kiln_graph *g = NULL;
    s = fault_note(r, ctx, kiln_graph_create(ctx, "fault", &g));
    if (s) {
        CHECK(g == NULL);
    } else {
        kiln_value out = build(g);
        kiln_value outs[2] = {out, out};
        s = fault_note(r, ctx, kiln_graph_finish(g, 2, outs));
        if (s) {
            /* the graph's own message is the same first error */
            CHECK(kiln_graph_status(g) == s);
            CHECK(strcmp(kiln_graph_error(g), r->message) == 0);
        } else {
            char *text = kiln_graph_to_string(g);
            if (!text) {
                s = fault_note(r, ctx, KILN_STATUS_HOST_OOM);
            } else {
                CHECK_MSG(strstr(text, "graph fault(") && strstr(text, "\"tokens_embedded\"") &&
                              strstr(text, "concatenate(") && strstr(text, "  return ("),
                          "the run without a failure printed:\n%s", text);
                kiln_string_free(ctx, text);
            }
        }
        kiln_graph_destroy(g);
    }
    if (s == KILN_STATUS_HOST_OOM && r->message[0]) {
        if (strstr(r->message, "kiln_graph_to_string"))
            at->printer++;
        else
            at->builder++;
    }
    kiln_context_destroy(ctx);
    return s;
}

static void test_every_allocation_fails_once(void) {
    oom_places at = {0, 0, 0};
    fault_sweep sw = {.name = "test_trace_fault", .run = run, .user = &at, .max_runs = 100000};
    long total = fault_sweep_run(&sw);
    CHECK_MSG(total > 20, "only %ld host allocations in a whole build", total);
    /* each part had its turn to fail */
    CHECK(at.create > 0 && at.builder > 0 && at.printer > 0);
    printf("test_trace_fault: %ld allocations, each failed once (context %d, builder %d, "
           "printer %d)\n",
           total, at.create, at.builder, at.printer);
}

/* After an out-of-memory error the graph keeps its first error for kiln_graph_finish even
 * when the context's message has been replaced in between. */
static void test_oom_error_survives(void) {
    test_alloc t;
    memset(&t, 0, sizeof t);
    kiln_host_allocator a = test_allocator(&t);
    kiln_context_options o;
    memset(&o, 0, sizeof o);
    o.ignore_environment = true;
    o.host_allocator = &a;
    o.compile_tiers = 1; /* fault.h: no background build */
    kiln_context *ctx = NULL;
    CHECK_STATUS(kiln_context_create(&o, &ctx, NULL, 0), KILN_STATUS_OK);
    if (!ctx) return;
    kiln_graph *g = NULL, *h = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "g", &g));
    CHECK_OK(ctx, kiln_graph_create(ctx, "h", &h));
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, DIMS(4));
    t.fail_at = t.count + 1; /* the next allocation: the name of the next parameter */
    kiln_value y = kiln_parameter(g, "a_name", KILN_DTYPE_F32, 1, DIMS(4));
    CHECK(!kiln_value_ok(y));
    t.fail_at = 0;
    CHECK_STATUS(kiln_graph_status(g), KILN_STATUS_HOST_OOM);
    CHECK_CONTAINS(kiln_graph_error(g), "kiln_parameter");
    CHECK_CONTAINS(kiln_graph_error(g), "host allocation");
    kiln_reshape(h, kiln_parameter(h, NULL, KILN_DTYPE_F32, 1, DIMS(2)), 1, DIMS(3)); /* replaces */
    CHECK_STATUS(kiln_graph_finish(g, 1, &x), KILN_STATUS_HOST_OOM);
    CHECK_CONTAINS(kiln_last_error(ctx), "kiln_parameter");
    CHECK(kiln_graph_num_parameters(g) == 1);
    kiln_graph_destroy(g);
    kiln_graph_destroy(h);
    kiln_context_destroy(ctx);
    CHECK(t.live == 0 && t.bad_size == 0);
}

int main(void) {
    RUN(test_every_allocation_fails_once);
    RUN(test_oom_error_survives);
    return test_summary("test_trace_fault");
}
