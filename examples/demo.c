/* demo.c — what `make demo` runs: traces a small two-layer network with a softmax head,
 * prints its IR, evaluates it with the reference interpreter and prints the result.
 * (Later milestones grow this into compiled training with a memory report.) */
#include "kiln.h"

#include <stdio.h>
#include <stdlib.h>

#define TRY(ctx, expr)                                                                            \
    do {                                                                                          \
        kiln_status s_ = (expr);                                                                  \
        if (s_ != KILN_OK) {                                                                      \
            fprintf(stderr, "demo: %s failed: %s\n", #expr, kiln_last_error(ctx));              \
            exit(1);                                                                              \
        }                                                                                         \
    } while (0)

/* x[4,3] -> dense(3->5) -> gelu -> dense(5->2) -> softmax over classes. */
static kiln_value trace_mlp(kiln_graph *g) {
    int64_t xd[] = {4, 3}, w1d[] = {3, 5}, b1d[] = {5}, w2d[] = {5, 2}, b2d[] = {2};
    kiln_value x = kiln_parameter(g, "x", KILN_F32, 2, xd);
    kiln_value w1 = kiln_parameter(g, "w1", KILN_F32, 2, w1d);
    kiln_value b1 = kiln_parameter(g, "b1", KILN_F32, 1, b1d);
    kiln_value w2 = kiln_parameter(g, "w2", KILN_F32, 2, w2d);
    kiln_value b2 = kiln_parameter(g, "b2", KILN_F32, 1, b2d);
    kiln_value h = kiln_gelu(g, kiln_add(g, kiln_matmul(g, x, w1), b1));
    kiln_value logits = kiln_add(g, kiln_matmul(g, h, w2), b2);
    return kiln_softmax(g, logits, -1);
}

static void fill(float *p, int n, float scale) {
    for (int i = 0; i < n; i++) p[i] = scale * (float)((i * 37 % 11) - 5) / 5.0f;
}

int main(void) {
    kiln_context *ctx;
    char err[512];
    if (kiln_context_create(NULL, &ctx, err, sizeof err) != KILN_OK) {
        fprintf(stderr, "demo: %s\n", err);
        return 1;
    }
    kiln_graph *g;
    TRY(ctx, kiln_graph_create(ctx, "mlp", &g));
    kiln_value probs = trace_mlp(g);
    TRY(ctx, kiln_graph_finish(g, 1, &probs));
    printf("== traced program (%d ops) ==\n", kiln_graph_num_nodes(g));
    TRY(ctx, kiln_graph_print(g, stdout));

    float x[12], w1[15], b1[5], w2[10], b2[2];
    fill(x, 12, 1.0f), fill(w1, 15, 0.5f), fill(b1, 5, 0.1f), fill(w2, 10, 0.5f), fill(b2, 2, 0.1f);
    const int64_t shapes[5][2] = {{4, 3}, {3, 5}, {5, 0}, {5, 2}, {2, 0}};
    const int ranks[5] = {2, 2, 1, 2, 1};
    const float *data[5] = {x, w1, b1, w2, b2};
    kiln_array *args[5], *out;
    for (int i = 0; i < 5; i++)
        TRY(ctx, kiln_array_create(ctx, KILN_F32, ranks[i], shapes[i], data[i], &args[i]));
    TRY(ctx, kiln_interpret(g, 5, args, 1, &out));

    float p[8];
    TRY(ctx, kiln_array_copy_to_host(out, p, sizeof p));
    printf("\n== result: class probabilities, f32[4,2] (reference interpreter) ==\n");
    for (int i = 0; i < 4; i++) printf("  row %d: %.6f %.6f  (sum %.6f)\n", i, p[2 * i], p[2 * i + 1],
                                       p[2 * i] + p[2 * i + 1]);

    /* A mistake is an error value with the op, the shapes and the line, never a crash. */
    kiln_graph *bad;
    TRY(ctx, kiln_graph_create(ctx, "bad", &bad));
    int64_t ad[] = {2, 3}, bd[] = {4};
    kiln_value a = kiln_parameter(bad, "a", KILN_F32, 2, ad);
    kiln_value b = kiln_parameter(bad, "b", KILN_F32, 1, bd);
    kiln_value c = kiln_add(bad, a, b);
    kiln_status s = kiln_graph_finish(bad, 1, &c);
    printf("\n== a traced mistake ==\n  %s: %s\n", kiln_status_name(s), kiln_last_error(ctx));
    kiln_graph_destroy(bad);

    kiln_array_free(out);
    for (int i = 0; i < 5; i++) kiln_array_free(args[i]);
    kiln_graph_destroy(g);
    kiln_context_destroy(ctx);
    return 0;
}
