/* gather_grad_cases.h — the gather/scatter cases test_autodiff.c (finite differences of
 * kiln_grad) and test_jvp.c (finite differences of kiln_jvp and <u, J v> against kiln_vjp)
 * share: windows, batching, both modes, duplicate indices and out-of-range ones, every
 * scatter kind (mul through its operand only: JAX and kiln refuse the updates' derivative).
 * Min and max take x[1] itself as updates: their rule compares the updates with the result,
 * and a 16-bit update recomputed in another compiled kernel (sin) may differ from the one
 * the result took by an ulp, which test_autodiff's compiled half check would see.
 * x[0] is the operand, x[1] the updates. GATHER_GRAD_ROWS(tail) lists the table rows, tail
 * the fields a table adds after the draw kind. */
#ifndef KILN_TEST_GATHER_GRAD_CASES_H
#define KILN_TEST_GATHER_GRAD_CASES_H

static kiln_value gg_idx(kiln_graph *g, int rank, const int64_t *dims, const int32_t *v) {
    return kiln_constant(g, KILN_DTYPE_I32, rank, dims, v);
}

/* [4,5] windows of 2x2, one negative and one past the end (FILL with 0, given) */
static kiln_value gg_gather_window(kiln_graph *g, const kiln_value *x) {
    kiln_gather_dims d = {.n_offset_dims = 2,
                          .offset_dims = {1, 2},
                          .n_start_index_map = 2,
                          .start_index_map = {0, 1}};
    double zero = 0;
    kiln_value i =
        gg_idx(g, 2, (const int64_t[]){4, 2}, (const int32_t[]){0, 1, 2, 3, -1, 0, 3, 4});
    return kiln_gather(g, kiln_tanh(g, x[0]), i, &d, (const int64_t[]){2, 2}, KILN_GATHER_FILL,
                       &zero);
}

/* take_along_axis through batching dims, clamped, with repeats */
static kiln_value gg_gather_batched(kiln_graph *g, const kiln_value *x) {
    kiln_gather_dims d = {.n_collapsed_slice_dims = 1,
                          .collapsed_slice_dims = {1},
                          .n_start_index_map = 1,
                          .start_index_map = {1},
                          .n_operand_batching_dims = 1};
    kiln_value i =
        gg_idx(g, 3, (const int64_t[]){3, 3, 1}, (const int32_t[]){2, 2, 9, 0, -3, 1, 3, 3, 0});
    return kiln_gather(g, x[0], i, &d, (const int64_t[]){1, 1}, KILN_GATHER_CLIP, NULL);
}

static const kiln_scatter_dims gg_rows = {.n_update_window_dims = 1,
                                          .update_window_dims = {1},
                                          .n_inserted_window_dims = 1,
                                          .n_scatter_dims_to_operand_dims = 1};

static kiln_value gg_scatter_rows(kiln_graph *g, const kiln_value *x, kiln_scatter_kind k,
                                  kiln_gather_mode m, const int32_t *rows) {
    kiln_value i = gg_idx(g, 2, (const int64_t[]){4, 1}, rows);
    kiln_value u = k == KILN_SCATTER_MIN || k == KILN_SCATTER_MAX ? x[1] : kiln_sin(g, x[1]);
    return kiln_scatter(g, k, x[0], i, u, &gg_rows, m);
}

static kiln_value gg_scatter_add(kiln_graph *g, const kiln_value *x) {
    return gg_scatter_rows(g, x, KILN_SCATTER_ADD, KILN_GATHER_FILL, (const int32_t[]){1, 3, 1, 7});
}
static kiln_value gg_scatter_set(kiln_graph *g, const kiln_value *x) {
    return gg_scatter_rows(g, x, KILN_SCATTER_SET, KILN_GATHER_FILL,
                           (const int32_t[]){1, 3, 1, -1});
}
static kiln_value gg_scatter_min(kiln_graph *g, const kiln_value *x) {
    return gg_scatter_rows(g, x, KILN_SCATTER_MIN, KILN_GATHER_FILL, (const int32_t[]){1, 3, 1, 2});
}
static kiln_value gg_scatter_max(kiln_graph *g, const kiln_value *x) {
    return gg_scatter_rows(g, x, KILN_SCATTER_MAX, KILN_GATHER_CLIP, (const int32_t[]){1, 3, 1, 9});
}

/* overlapping 2x3 windows, clamped */
static kiln_value gg_scatter_window(kiln_graph *g, const kiln_value *x) {
    kiln_scatter_dims d = {.n_update_window_dims = 2,
                           .update_window_dims = {1, 2},
                           .n_scatter_dims_to_operand_dims = 2,
                           .scatter_dims_to_operand_dims = {0, 1}};
    kiln_value i = gg_idx(g, 2, (const int64_t[]){3, 2}, (const int32_t[]){0, 1, 3, 3, 1, 1});
    return kiln_scatter(g, KILN_SCATTER_ADD, kiln_exp(g, x[0]), i, x[1], &d, KILN_GATHER_CLIP);
}

/* the updates a constant (x's dtype): the operand's derivative only */
static kiln_value gg_scatter_mul(kiln_graph *g, const kiln_value *x) {
    kiln_dtype t = KILN_DTYPE_F64;
    int r;
    int64_t d[KILN_MAX_RANK];
    kiln_value_type(g, x[0], &t, &r, d);
    kiln_value u =
        kiln_constant(g, KILN_DTYPE_F64, 2, (const int64_t[]){4, 3},
                      (const double[]){1.5, -2, 0.5, 3, 1, -1, 0.25, 2, -0.5, 1.25, -3, 4});
    kiln_value i = gg_idx(g, 2, (const int64_t[]){4, 1}, (const int32_t[]){1, 3, 1, -1});
    return kiln_scatter(g, KILN_SCATTER_MUL, x[0], i, kiln_convert(g, u, t), &gg_rows,
                        KILN_GATHER_FILL);
}

static kiln_value gg_index_add(kiln_graph *g, const kiln_value *x) {
    kiln_value i = gg_idx(g, 1, (const int64_t[]){5}, (const int32_t[]){0, -1, 7, 2, 0});
    return kiln_index_add(g, x[0], 1, i, kiln_mul(g, x[1], x[1]), KILN_GATHER_FILL);
}

#define GATHER_GRAD_ROWS(...)                                                                      \
    {"gather, windows, fill", gg_gather_window, 1, {2}, {{4, 5}}, ANY __VA_ARGS__},                \
        {"gather, batched, clip", gg_gather_batched, 1, {2}, {{3, 4}}, ANY __VA_ARGS__},           \
        {"scatter add, duplicates, drop",                                                          \
         gg_scatter_add,                                                                           \
         2,                                                                                        \
         {2, 2},                                                                                   \
         {{5, 3}, {4, 3}},                                                                         \
         ANY __VA_ARGS__},                                                                         \
        {"scatter set, duplicates", gg_scatter_set, 2, {2, 2}, {{5, 3}, {4, 3}}, ANY __VA_ARGS__}, \
        {"scatter min", gg_scatter_min, 2, {2, 2}, {{5, 3}, {4, 3}}, DISTINCT __VA_ARGS__},        \
        {"scatter max, clip", gg_scatter_max, 2, {2, 2}, {{5, 3}, {4, 3}}, DISTINCT __VA_ARGS__},  \
        {"scatter add, windows", gg_scatter_window, 2, {2, 3},                                     \
         {{4, 5}, {3, 2, 3}},    ANY __VA_ARGS__},                                                 \
        {"scatter mul, operand", gg_scatter_mul, 1, {2}, {{5, 3}}, ANY __VA_ARGS__},               \
        {"index_add", gg_index_add, 2, {2, 2}, {{3, 5}, {3, 5}}, ANY __VA_ARGS__},

#endif
