/* test_fault.c — fault injection: the whole sequence create context, build a graph,
 * finish it, make arguments, interpret, read back, free everything is run once for every
 * host allocation it makes, failing the 1st, then the 2nd, ... allocation, until a run no
 * longer reaches the failure. Each failing run must end in KILN_STATUS_HOST_OOM with a
 * message, never a crash, and leave nothing allocated (the sweep of fault.h; ASan/LSan in
 * the sanitizer build). The run that completes must give the same bytes as
 * a run without fault injection. */
#include "fault.h"

#include <stdint.h>

#define N_OUT 4

typedef struct outcome {
    kiln_status status;
    char msg[1024];
    float probs[4 * 8], colmax[8], loss, picked[3 * 5];
} outcome;

/* An MLP-ish program: dense + gelu, a constant layer, a concatenation of five values (so
 * the node keeps its inputs on the heap), layer_norm and softmax composites, reductions,
 * a cross-entropy loss, and an embedding lookup. */
static kiln_status build(kiln_graph *g, kiln_value *outs) {
    int64_t xd[] = {4, 3}, w1d[] = {3, 5}, b1d[] = {5}, w2d[] = {5, 2}, ld[] = {4}, td[] = {6, 5};
    int64_t id[] = {3};
    static const float w2[10] = {0.5f, -1, 0.25f, 2, -0.75f, 1, 0, 0.5f, 1.5f, -0.5f};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, xd);
    kiln_value w1 = kiln_parameter(g, "w1", KILN_DTYPE_F32, 2, w1d);
    kiln_value b1 = kiln_parameter(g, "b1", KILN_DTYPE_F32, 1, b1d);
    kiln_value labels = kiln_parameter(g, "labels", KILN_DTYPE_I32, 1, ld);
    kiln_value table = kiln_parameter(g, "table", KILN_DTYPE_F32, 2, td);
    kiln_value idx = kiln_parameter(g, "idx", KILN_DTYPE_I32, 1, id);
    kiln_value h = kiln_gelu(g, kiln_add(g, kiln_matmul(g, x, w1), b1), true);
    kiln_value logits = kiln_matmul(g, h, kiln_constant(g, KILN_DTYPE_F32, 2, w2d, w2));
    kiln_value parts[5] = {
        logits, kiln_mul(g, logits, kiln_scalar(g, KILN_DTYPE_F32, 2)), kiln_neg(g, logits),
        kiln_full(g, KILN_DTYPE_F32, 2, (int64_t[]){4, 1}, 0.5), kiln_exp(g, logits)};
    kiln_value cat = kiln_concatenate(g, 5, parts, 1); /* [4, 9] */
    kiln_value n = kiln_layer_norm(g, cat, (kiln_value){0, 0}, (kiln_value){0, 0}, 1e-5);
    int64_t lo[] = {0, 0}, hi[] = {0, -1};
    kiln_value probs =
        kiln_softmax(g, kiln_pad(g, n, kiln_scalar(g, KILN_DTYPE_F32, 0), lo, hi, NULL), -1);
    int ax0 = 0;
    outs[0] = probs;
    outs[1] = kiln_reduce_max(g, probs, 1, &ax0, false);
    outs[2] = kiln_mean(g, kiln_softmax_cross_entropy(g, logits, labels), 0, NULL, false);
    outs[3] = kiln_take_rows(g, table, idx);
    return kiln_graph_finish(g, N_OUT, outs);
}

static kiln_status make_args(kiln_context *ctx, kiln_array **args) {
    static float x[12], w1[15], b1[5], table[30];
    static const int32_t labels[4] = {0, 1, 1, 0}, idx[3] = {5, 0, 9};
    for (int i = 0; i < 12; i++) x[i] = (float)((i * 7) % 5 - 2) / 2;
    for (int i = 0; i < 15; i++) w1[i] = (float)((i * 3) % 7 - 3) / 4;
    for (int i = 0; i < 5; i++) b1[i] = 0.1f * (float)i;
    for (int i = 0; i < 30; i++) table[i] = (float)i;
    const struct {
        kiln_dtype t;
        int rank;
        int64_t dims[2];
        const void *data;
    } a[6] = {{KILN_DTYPE_F32, 2, {4, 3}, x},     {KILN_DTYPE_F32, 2, {3, 5}, w1},
              {KILN_DTYPE_F32, 1, {5}, b1},       {KILN_DTYPE_I32, 1, {4}, labels},
              {KILN_DTYPE_F32, 2, {6, 5}, table}, {KILN_DTYPE_I32, 1, {3}, idx}};
    for (int i = 0; i < 6; i++) {
        kiln_status s = kiln_array_create(ctx, a[i].t, a[i].rank, a[i].dims, a[i].data, &args[i]);
        if (s) return s;
    }
    return KILN_STATUS_OK;
}

static kiln_status read_back(kiln_array **res, outcome *o) {
    kiln_status s;
    if ((s = kiln_array_copy_to_host(res[0], o->probs, sizeof o->probs)) ||
        (s = kiln_array_copy_to_host(res[1], o->colmax, sizeof o->colmax)) ||
        (s = kiln_array_copy_to_host(res[2], &o->loss, sizeof o->loss)) ||
        (s = kiln_array_copy_to_host(res[3], o->picked, sizeof o->picked)))
        return s;
    return KILN_STATUS_OK;
}

/* The whole sequence under the run's allocator; frees everything it made. */
static kiln_status sequence(fault_run *r) {
    outcome *o = (outcome *)r->user;
    memset(o, 0, sizeof *o);
    kiln_context *ctx = NULL;
    o->status = fault_context(r, NULL, &ctx);
    if (o->status) return o->status;
    kiln_graph *g = NULL;
    kiln_array *args[6] = {0}, *res[N_OUT] = {0};
    kiln_value outs[N_OUT];
    kiln_status s = kiln_graph_create(ctx, "fault", &g);
    if (!s) s = build(g, outs);
    if (!s) s = make_args(ctx, args);
    if (!s) {
        s = kiln_interpret(g, 6, args, N_OUT, res);
        for (int i = 0; s && i < N_OUT; i++) CHECK_MSG(res[i] == NULL, "output %d left behind", i);
    }
    if (!s) s = read_back(res, o);
    o->status = fault_note(r, ctx, s);
    for (int i = 0; i < N_OUT; i++) kiln_array_destroy(res[i]);
    for (int i = 0; i < 6; i++) kiln_array_destroy(args[i]);
    kiln_graph_destroy(g);
    kiln_context_destroy(ctx);
    return s;
}

/* The sequence once, with no allocation failing. */
static kiln_status sequence_clean(test_alloc *t, outcome *o) {
    fault_run r;
    memset(&r, 0, sizeof r);
    r.alloc = t;
    r.host = test_allocator(t);
    r.user = o;
    kiln_status s = sequence(&r);
    snprintf(o->msg, sizeof o->msg, "%s", r.message);
    return s;
}

static void test_every_allocation_fails_cleanly(void) {
    test_alloc clean = {0};
    outcome want, got;
    sequence_clean(&clean, &want);
    CHECK_MSG(want.status == KILN_STATUS_OK, "the unfailed run: %s: %s",
              kiln_status_name(want.status), want.msg);
    CHECK(clean.live == 0 && clean.bad_size == 0);
    CHECK(clean.count > 20);
    fault_sweep sw = {.name = "test_fault", .run = sequence, .user = &got, .max_runs = 100000};
    long total = fault_sweep_run(&sw);
    /* the last run was the complete one: the same bytes as without fault injection */
    CHECK(total >= 0 && memcmp(&got, &want, sizeof got) == 0);
    CHECK_MSG(total == clean.count, "completed after %ld allocations, the clean run made %ld",
              total, clean.count);
    printf("test_fault: failed each of %ld host allocations in turn\n", total);
}

/* A sanity check of the outcome itself, so the comparison above is not vacuous. */
static void test_outcome_values(void) {
    test_alloc t = {0};
    outcome o;
    sequence_clean(&t, &o);
    if (o.status) return;
    for (int r = 0; r < 4; r++) {
        double sum = 0;
        for (int j = 0; j < 8; j++) sum += o.probs[r * 8 + j];
        CHECK_NEAR(sum, 1.0, 1e-6);
    }
    CHECK(o.loss > 0 && isfinite(o.loss));
    /* take_rows clamps 9 to the last row (5): rows 5, 0, 5 of 0..29 */
    const float want[15] = {25, 26, 27, 28, 29, 0, 1, 2, 3, 4, 25, 26, 27, 28, 29};
    CHECK(memcmp(o.picked, want, sizeof want) == 0);
}

int main(void) {
    RUN(test_outcome_values);
    RUN(test_every_allocation_fails_cleanly);
    return test_summary("test_fault");
}
