/* test_vmap.c — kiln_vmap (src/autodiff/vmap.c, vmap_rules.c): for every op kind, vmap(f)
 * interpreted on a batch against f interpreted on each example and stacked (the reference
 * interpreter both ways: never numbers copied from kiln's output), in f32 and f64 (and bf16,
 * i32 where the op takes them), with in_axes and out_axes other than 0 and unbatched
 * arguments; the batched graphs compiled for the CPU against the interpreter; per-example
 * gradients (vmap of kiln_grad) against per-example runs and finite differences; kiln_grad
 * through a kiln_vmap; nested vmap; vmap inside a scan body and control flow inside vmap;
 * the errors, with their messages. */
#include "compare.h"
#include "autodiff/autodiff.h"

#include <stdint.h>

#define B      3 /* the batch size of every case */
#define MAX_IN 4
#define NONE   KILN_VMAP_NONE
#define F      KILN_DTYPE_F32 /* in a case: the float dtype the run asks for */

typedef struct vcase {
    const char *name;
    kiln_fn f;
    int n_in;
    kiln_dtype dt[MAX_IN]; /* F: the run's float dtype */
    int rank[MAX_IN];
    int64_t dims[MAX_IN][KILN_MAX_RANK]; /* per example */
    int in_axes[MAX_IN];
    int n_out;
    int out_axes[MAX_IN];
    bool no_half; /* not run in bf16 */
    bool seq;     /* an op takes the sequential path: a scan over the batch is expected */
} vcase;

/* ------------------------------------------------------------- helpers ---- */

static kiln_dtype dtype_of(kiln_graph *g, kiln_value x) {
    kiln_dtype t = KILN_DTYPE_F32;
    int r;
    int64_t d[KILN_MAX_RANK];
    kiln_value_type(g, x, &t, &r, d);
    return t;
}

static int64_t numel(int rank, const int64_t *dims) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    return n;
}

/* dims with B inserted at axis ax. */
static void with_batch(int rank, const int64_t *dims, int ax, int64_t *out) {
    for (int i = 0, j = 0; i <= rank; i++) out[i] = i == ax ? B : dims[j++];
}

/* Copies example b between a batched buffer (batch at axis ax of rank+1 dims full) and an
 * example's buffer; to_batch chooses the direction. */
static void move_example(unsigned char *batched, unsigned char *one, size_t item, int rank,
                         const int64_t *full, int ax, int b, bool to_batch) {
    int64_t outer = numel(ax, full), inner = numel(rank + 1 - ax - 1, full + ax + 1);
    size_t chunk = (size_t)inner * item;
    for (int64_t o = 0; o < outer; o++) {
        unsigned char *p = batched + ((size_t)(o * B + b)) * chunk, *q = one + (size_t)o * chunk;
        if (to_batch)
            memcpy(p, q, chunk);
        else
            memcpy(q, p, chunk);
    }
}

static kiln_dtype arg_dtype(const vcase *c, int i, kiln_dtype ft) {
    return c->dt[i] == F ? ft : c->dt[i];
}

static double tol_of(kiln_dtype t) {
    return t == KILN_DTYPE_F32 ? 2e-5 : t == KILN_DTYPE_F64 ? 1e-12 : cmp_half_tol(t);
}

static bool close_to(double got, double want, double tol) {
    if (isnan(want)) return isnan(got);
    if (isinf(want)) return got == want;
    return fabs(got - want) <= tol * (1 + fabs(want));
}

/* The loops (scan, while) at g's top level: a direct rule makes none. */
static int count_loops(const kiln_graph *g) {
    int n = 0;
    for (uint32_t id = 1; id < g->n_nodes; id++)
        n += g->nodes[id].op == IR_SCAN || g->nodes[id].op == IR_WHILE;
    return n;
}

/* ------------------------------------------------------------ the check ---- */

/* vmap(c->f) on the batch against c->f on each example, both interpreted; with `compiled`
 * the batched graph is compiled and held to the interpreter and its plan too. */
static void run_case(kiln_context *ctx, const vcase *c, kiln_dtype ft, bool compiled,
                     uint64_t *seed) {
    kiln_graph *g1 = NULL, *g2 = NULL;
    kiln_graph_create(ctx, c->name, &g1);
    kiln_graph_create(ctx, "one", &g2);
    kiln_value p1[MAX_IN], p2[MAX_IN], o1[MAX_IN], o2[MAX_IN];
    kiln_array *full[MAX_IN] = {0};
    unsigned char *host[MAX_IN] = {0};
    for (int i = 0; i < c->n_in; i++) {
        kiln_dtype t = arg_dtype(c, i, ft);
        int ax = c->in_axes[i], r = c->rank[i];
        int64_t fd[KILN_MAX_RANK + 1];
        if (ax == NONE)
            memcpy(fd, c->dims[i], sizeof c->dims[i]);
        else
            with_batch(r, c->dims[i], ax, fd), r++;
        p1[i] = kiln_parameter(g1, "x", t, r, fd);
        p2[i] = kiln_parameter(g2, "x", t, c->rank[i], c->dims[i]);
        full[i] = cmp_random_array(ctx, t, r, fd, seed);
        host[i] = malloc(kiln_array_nbytes(full[i]) + 1);
        kiln_array_copy_to_host(full[i], host[i], kiln_array_nbytes(full[i]));
    }
    kiln_status st = kiln_vmap(g1, c->f, NULL, c->n_in, p1, c->in_axes, c->n_out, c->out_axes, o1);
    CHECK_MSG(st == KILN_STATUS_OK, "%s %s: kiln_vmap: %s", c->name, kiln_dtype_name(ft),
              kiln_graph_error(g1));
    int n2 = c->f(g2, c->n_in, p2, NULL, o2);
    CHECK_MSG(n2 == c->n_out, "%s: f returned %d: %s", c->name, n2, kiln_graph_error(g2));
    if (st || n2 != c->n_out || kiln_graph_finish(g1, c->n_out, o1) ||
        kiln_graph_finish(g2, c->n_out, o2)) {
        CHECK_MSG(false, "%s: %s / %s", c->name, kiln_graph_error(g1), kiln_graph_error(g2));
        goto done;
    }
    CHECK_MSG(c->seq || count_loops(g1) == count_loops(g2),
              "%s: a direct rule made a loop (%d loops batched, %d per example)", c->name,
              count_loops(g1), count_loops(g2));
    kiln_array *got[MAX_IN] = {0};
    CHECK_OK(ctx, kiln_interpret(g1, c->n_in, full, c->n_out, got));
    unsigned char *want[MAX_IN] = {0};
    int orank[MAX_IN];
    int64_t odims[MAX_IN][KILN_MAX_RANK];
    kiln_dtype ot[MAX_IN];
    for (int j = 0; j < c->n_out; j++) {
        kiln_value_type(g2, o2[j], &ot[j], &orank[j], odims[j]);
        want[j] = malloc(numel(orank[j], odims[j]) * B * kiln_dtype_itemsize(ot[j]) + 1);
    }
    for (int b = 0; b < B; b++) {
        kiln_array *args[MAX_IN], *outs[MAX_IN] = {0};
        for (int i = 0; i < c->n_in; i++) {
            kiln_dtype t = arg_dtype(c, i, ft);
            size_t item = kiln_dtype_itemsize(t), n = (size_t)numel(c->rank[i], c->dims[i]) * item;
            unsigned char *one = malloc(n + 1);
            if (c->in_axes[i] == NONE) {
                memcpy(one, host[i], n);
            } else {
                int64_t fd[KILN_MAX_RANK + 1];
                with_batch(c->rank[i], c->dims[i], c->in_axes[i], fd);
                move_example(host[i], one, item, c->rank[i], fd, c->in_axes[i], b, false);
            }
            kiln_array_create(ctx, t, c->rank[i], c->dims[i], one, &args[i]);
            free(one);
        }
        CHECK_OK(ctx, kiln_interpret(g2, c->n_in, args, c->n_out, outs));
        for (int j = 0; j < c->n_out && outs[j]; j++) {
            size_t item = kiln_dtype_itemsize(ot[j]), n = kiln_array_nbytes(outs[j]);
            unsigned char *one = malloc(n + 1);
            kiln_array_copy_to_host(outs[j], one, n);
            int ax = c->out_axes[j];
            if (ax == NONE) {
                memcpy(want[j], one, n);
            } else {
                int64_t fd[KILN_MAX_RANK + 1];
                with_batch(orank[j], odims[j], ax, fd);
                move_example(want[j], one, item, orank[j], fd, ax, b, true);
            }
            free(one);
        }
        for (int i = 0; i < c->n_in; i++) kiln_array_destroy(args[i]);
        for (int j = 0; j < c->n_out; j++) kiln_array_destroy(outs[j]);
    }
    for (int j = 0; j < c->n_out && got[j]; j++) {
        int ax = c->out_axes[j], r = orank[j] + (ax != NONE);
        int64_t fd[KILN_MAX_RANK + 1];
        if (ax == NONE)
            memcpy(fd, odims[j], sizeof odims[j]);
        else
            with_batch(orank[j], odims[j], ax, fd);
        bool shape_ok = kiln_array_rank(got[j]) == r && kiln_array_dtype(got[j]) == ot[j];
        for (int d = 0; shape_ok && d < r; d++) shape_ok = kiln_array_dim(got[j], d) == fd[d];
        CHECK_MSG(shape_ok, "%s %s: output %d has the wrong type", c->name, kiln_dtype_name(ft), j);
        if (!shape_ok) continue;
        size_t n = kiln_array_nbytes(got[j]);
        unsigned char *gh = malloc(n + 1);
        kiln_array_copy_to_host(got[j], gh, n);
        int64_t count = numel(r, fd), bad = -1;
        double tol = tol_of(ot[j]);
        for (int64_t e = 0; e < count && bad < 0; e++)
            if (!close_to(cmp_elem(gh, ot[j], e), cmp_elem(want[j], ot[j], e), tol)) bad = e;
        CHECK_MSG(bad < 0, "%s %s: output %d element %lld is %.9g, per example %.9g", c->name,
                  kiln_dtype_name(ft), j, (long long)bad, bad < 0 ? 0 : cmp_elem(gh, ot[j], bad),
                  bad < 0 ? 0 : cmp_elem(want[j], ot[j], bad));
        free(gh);
    }
    if (compiled)
        CHECK_MSG(cmp_graph(ctx, g1, c->n_in, full, NULL, 1e-4, NULL), "%s %s compiled", c->name,
                  kiln_dtype_name(ft));
    for (int j = 0; j < c->n_out; j++) kiln_array_destroy(got[j]), free(want[j]);
done:
    for (int i = 0; i < c->n_in; i++) kiln_array_destroy(full[i]), free(host[i]);
    kiln_graph_destroy(g1);
    kiln_graph_destroy(g2);
}

/* ------------------------------------------------------------ the cases ---- */

#define FN(name, ...)                                                                              \
    static int name(kiln_graph *g, int n, const kiln_value *x, void *user, kiln_value *o) {        \
        (void)n, (void)user;                                                                       \
        __VA_ARGS__;                                                                               \
    }

FN(f_unary, o[0] = kiln_add(g, kiln_mul(g, kiln_exp(g, kiln_sin(g, x[0])), kiln_abs(g, x[0])),
                            kiln_tanh(g, kiln_neg(g, x[0])));
   return 1)
FN(f_int, o[0] = kiln_add(g, kiln_mul(g, x[0], x[1]), kiln_neg(g, x[0]));
   o[1] = kiln_max(g, x[0], x[1]); return 2)
FN(f_binary, o[0] = kiln_add(g, kiln_mul(g, x[0], x[1]), kiln_sub(g, x[0], x[1]));
   o[1] = kiln_min(g, x[0],
                   kiln_div(g, x[1],
                            kiln_add(g, kiln_abs(g, x[0]), kiln_scalar(g, dtype_of(g, x[0]), 1))));
   return 2)
FN(f_select, o[0] = kiln_select(g, kiln_compare(g, x[0], x[1], KILN_CMP_GT),
                                kiln_mul(g, x[0], x[1]), kiln_exp(g, x[1]));
   return 1)
FN(f_convert,
   o[0] = kiln_convert(g,
                       kiln_convert(g, kiln_mul(g, x[0], kiln_scalar(g, dtype_of(g, x[0]), 3)),
                                    KILN_DTYPE_I32),
                       dtype_of(g, x[0]));
   o[1] = kiln_convert(g, kiln_compare(g, x[0], kiln_scalar(g, dtype_of(g, x[0]), 0), KILN_CMP_LT),
                       KILN_DTYPE_I32);
   return 2)
FN(f_bcast,
   o[0] = kiln_broadcast_in_dim(g, x[0], 3, (const int64_t[]){4, 2, 3}, (const int[]){1, 2});
   return 1)
FN(f_reshape, o[0] = kiln_reshape(g, x[0], 3, (const int64_t[]){3, 1, 2}); return 1)
FN(f_transpose, o[0] = kiln_transpose(g, x[0], (const int[]){2, 0, 1}); return 1)
FN(f_slice, o[0] = kiln_slice(g, x[0], (const int64_t[]){1, 0}, (const int64_t[]){4, 3},
                              (const int64_t[]){2, 2});
   return 1)
FN(f_concat, o[0] = kiln_concatenate(g, 3, (kiln_value[]){x[0], x[1], x[0]}, 1); return 1)
FN(f_pad, o[0] = kiln_pad(g, x[0], kiln_scalar(g, dtype_of(g, x[0]), 2), (const int64_t[]){1, -1},
                          (const int64_t[]){2, 1}, (const int64_t[]){1, 0});
   return 1)
FN(f_pad_batched, o[0] = kiln_pad(g, x[0], x[1], (const int64_t[]){1, 0}, (const int64_t[]){0, 2},
                                  (const int64_t[]){1, 1});
   return 1)
FN(f_rev, o[0] = kiln_rev(g, x[0], 2, (const int[]){0, 2}); return 1)
FN(f_reduce, o[0] = kiln_reduce_sum(g, x[0], 1, (const int[]){1}, false);
   o[1] = kiln_reduce_max(g, x[0], 0, NULL, false);
   o[2] = kiln_reduce_min(g, x[0], 1, (const int[]){0}, true);
   o[3] = kiln_reduce_prod(g, x[0], 1, (const int[]){1}, false); return 4)
FN(f_cumsum, o[0] = kiln_cumsum(g, x[0], 1, false); o[1] = kiln_cumsum(g, x[0], 0, true); return 2)
FN(f_sort, o[0] = kiln_argsort(g, x[0], 1, false); kiln_sort(g, 1, x, 0, 1, true, &o[1]); return 2)
FN(f_matmul, o[0] = kiln_matmul(g, x[0], x[1]); return 1)
FN(f_dot_batch, {
    kiln_dot_dims d;
    memset(&d, 0, sizeof d);
    d.n_contract = 1, d.lhs_contract[0] = 2, d.rhs_contract[0] = 1;
    d.n_batch = 1, d.lhs_batch[0] = 0, d.rhs_batch[0] = 0;
    o[0] = kiln_dot_general(g, x[0], x[1], &d);
    return 1;
})
FN(f_sources, {
    kiln_dtype t = dtype_of(g, x[0]);
    kiln_value io = kiln_iota(g, t, 2, (const int64_t[]){2, 3}, 1);
    kiln_value k = kiln_random_key(g, 5);
    kiln_value r = kiln_random_normal(g, k, t, 2, (const int64_t[]){2, 3});
    o[0] = kiln_add(g, kiln_mul(g, x[0], io), r);
    o[1] = kiln_add(g, io, r); /* no batched value reaches it: broadcast */
    return 2;
})
FN(f_random_batched, {
    kiln_value k = kiln_random_fold_in(g, kiln_random_key(g, 9), x[1]);
    o[0] = kiln_add(g, x[0],
                    kiln_random_uniform(g, k, dtype_of(g, x[0]), 2, (const int64_t[]){2, 3}, 0, 1));
    return 1;
})
FN(f_take, o[0] = kiln_take_rows(g, x[0], x[1]); return 1)
FN(f_scatter, o[0] = kiln_scatter_add_rows(g, x[0], x[1], x[2]); return 1)
/* a window gather ([5, 4] operand, [3, 1] starts on axis 0, windows of 2 along axis 1) and
 * .at[] updates along axis 0: batched by dimension numbers (vmap_rules.c) */
FN(f_gather, {
    kiln_gather_dims d = {.n_offset_dims = 1,
                          .offset_dims = {1},
                          .n_collapsed_slice_dims = 1,
                          .collapsed_slice_dims = {0},
                          .n_start_index_map = 1,
                          .start_index_map = {0}};
    o[0] = kiln_gather(g, x[0], x[1], &d, (const int64_t[]){1, 2}, KILN_GATHER_CLIP, NULL);
    return 1;
})
FN(f_index_add, o[0] = kiln_index_add(g, x[0], 0, x[1], x[2], KILN_GATHER_FILL); return 1)
FN(f_index_set_max, {
    o[0] = kiln_index_set(g, x[0], 0, x[1], x[2], KILN_GATHER_CLIP);
    o[1] = kiln_index_max(g, x[0], 0, x[1], x[2], KILN_GATHER_FILL);
    return 2;
})
FN(f_dslice, {
    kiln_value st[2] = {kiln_scalar(g, KILN_DTYPE_I32, 1), kiln_scalar(g, KILN_DTYPE_I64, 1)};
    o[0] = kiln_dynamic_slice(g, x[0], 2, st, (const int64_t[]){2, 2});
    o[1] = kiln_dynamic_update_slice(g, x[0], x[1], 2, st);
    return 2;
})
FN(f_dslice_batched, {
    kiln_value st[2] = {x[2], kiln_scalar(g, KILN_DTYPE_I32, 0)};
    o[0] = kiln_dynamic_slice(g, x[0], 2, st, (const int64_t[]){2, 2});
    o[1] = kiln_dynamic_update_slice(g, x[0], x[1], 2, st);
    return 2;
})
/* convolutions: NCHW with groups, stride, padding and dilation; and the two gradient kinds
 * (NHWC, lhs dilation) through kiln_vjp. Batched on the lhs alone (the batch joins N), on
 * the kernel, on both (it joins the feature groups). */
FN(f_conv, {
    kiln_conv_options co = {.window_strides = {2, 1},
                            .pad_lo = {1, 0},
                            .pad_hi = {0, 1},
                            .rhs_dilation = {1, 2},
                            .feature_group_count = 2};
    o[0] = kiln_conv_general_dilated(g, x[0], x[1], &co);
    return 1;
})
FN(f_conv_vjp, {
    kiln_conv_options co = {
        .layout = KILN_CONV_NHWC, .lhs_dilation = {2, 1}, .pad_lo = {1, 0}, .pad_hi = {1, 1}};
    kiln_value y = kiln_conv_general_dilated(g, x[0], x[1], &co);
    kiln_vjp(g, 1, &y, &x[2], 2, x, o);
    return 2;
})
FN(f_attention, {
    kiln_attention_options a = {0, true};
    o[0] = kiln_dot_product_attention(g, x[0], x[1], x[2], &a);
    return 1;
})
/* the gradient's kinds (lse, grad_q, grad_k, grad_v) and delta, batched as the forward is */
FN(f_attention_vjp, {
    kiln_attention_options a = {0, true};
    kiln_value y = kiln_dot_product_attention(g, x[0], x[1], x[2], &a);
    kiln_vjp(g, 1, &y, &x[3], 3, x, o);
    return 3;
})
FN(f_all_reduce, o[0] = kiln_all_reduce(g, kiln_exp(g, x[0]), KILN_REDUCE_SUM); return 1)
/* one replica: the identity, through the batch axis moved behind the leading one and back */
FN(f_shard,
   o[0] = kiln_all_gather(g, kiln_reduce_scatter(g, kiln_exp(g, x[0]), KILN_REDUCE_SUM, 1), 1);
   return 1)

FN(f_dslice_batched2, {
    kiln_value st[2] = {x[2], kiln_neg(g, x[2])};
    o[0] = kiln_dynamic_slice(g, x[0], 2, st, (const int64_t[]){3, 1});
    o[1] = kiln_dynamic_update_slice(g, x[0], x[1], 2, st);
    return 2;
})

/* control flow inside fn */
static int scan_body(kiln_graph *g, int n, const kiln_value *x, void *user, kiln_value *o) {
    (void)n, (void)user;
    o[0] = kiln_add(g, kiln_mul(g, x[0], kiln_scalar(g, dtype_of(g, x[0]), 0.5)), x[1]);
    o[1] = kiln_tanh(g, o[0]);
    return 2;
}
FN(f_scan, {
    kiln_value init = kiln_mul(g, x[1], kiln_scalar(g, dtype_of(g, x[1]), 2));
    int no = 0;
    kiln_scan(g, scan_body, NULL, 1, &init, 1, &x[0], NULL, &no, o);
    return no;
})
static int br_true(kiln_graph *g, int n, const kiln_value *x, void *user, kiln_value *o) {
    (void)n, (void)user;
    o[0] = kiln_exp(g, x[0]);
    return 1;
}
static int br_false(kiln_graph *g, int n, const kiln_value *x, void *user, kiln_value *o) {
    (void)n, (void)user;
    o[0] = kiln_neg(g, x[0]);
    return 1;
}
FN(f_cond, {
    kiln_value p = kiln_compare(g, kiln_reduce_sum(g, x[0], 0, NULL, false),
                                kiln_scalar(g, dtype_of(g, x[0]), 0), KILN_CMP_GT);
    int no = 0;
    kiln_cond(g, p, br_true, br_false, NULL, 1, x, &no, o);
    return no;
})
/* conds in a row on batched predicates (test_cond_growth runs it at many lengths) */
static int cond_chain_len = 6;
FN(f_cond_chain, {
    kiln_value v = x[0];
    for (int k = 0; k < cond_chain_len; k++) {
        kiln_value p = kiln_compare(g, kiln_reduce_sum(g, v, 0, NULL, false),
                                    kiln_scalar(g, dtype_of(g, v), 0.5 * (k % 3)), KILN_CMP_GT);
        int no = 0;
        kiln_cond(g, p, br_false, br_true, NULL, 1, &v, &no, &v);
    }
    o[0] = v;
    return 1;
})
static int wh_cond(kiln_graph *g, int n, const kiln_value *x, void *user, kiln_value *o) {
    (void)n, (void)user;
    o[0] = kiln_compare(g, x[1], kiln_scalar(g, KILN_DTYPE_I32, 3), KILN_CMP_LT);
    return 1;
}
static int wh_body(kiln_graph *g, int n, const kiln_value *x, void *user, kiln_value *o) {
    (void)n, (void)user;
    o[0] = kiln_sin(g, kiln_add(g, x[0], x[0]));
    o[1] = kiln_add(g, x[1], kiln_scalar(g, KILN_DTYPE_I32, 1));
    return 2;
}
FN(f_while, {
    kiln_value init[2] = {x[0], kiln_scalar(g, KILN_DTYPE_I32, 0)}, out[2];
    kiln_while_loop(g, wh_cond, wh_body, NULL, 2, init, out);
    o[0] = out[0];
    return 1;
})

/* a scan whose carry starts unbatched (zeros) and picks up the batch from its xs; a
 * capture batched, the xs not */
static int scan_cap_body(kiln_graph *g, int n, const kiln_value *x, void *user, kiln_value *o) {
    (void)n;
    const kiln_value *outer = user;
    kiln_value c = kiln_capture(g, *outer);
    o[0] = kiln_add(g, kiln_mul(g, x[0], c), x[1]);
    o[1] = kiln_sin(g, x[1]); /* a y no batched value reaches */
    return 2;
}
FN(f_scan_fix, {
    kiln_value init = kiln_full(g, dtype_of(g, x[0]), 1, (const int64_t[]){3}, 0);
    int no = 0;
    kiln_value cap = x[1];
    kiln_scan(g, scan_cap_body, &cap, 1, &init, 1, &x[0], NULL, &no, o);
    return no;
})
/* a cond whose predicate is not batched (it reads the unbatched arg) */
FN(f_cond_shared, {
    kiln_value p = kiln_compare(g, kiln_reduce_sum(g, x[1], 0, NULL, false),
                                kiln_scalar(g, dtype_of(g, x[1]), 0), KILN_CMP_GT);
    int no = 0;
    kiln_cond(g, p, br_true, br_false, NULL, 1, x, &no, o);
    return no;
})
static int br_sq(kiln_graph *g, int n, const kiln_value *x, void *user, kiln_value *o) {
    (void)n, (void)user;
    o[0] = kiln_mul(g, x[0], x[0]);
    return 1;
}
/* a switch over three branches by a batched index (clamped: -5..5 reach every branch) */
FN(f_switch, {
    kiln_fn br[3] = {br_true, br_false, br_sq};
    int no = 0;
    kiln_switch(g, x[1], 3, br, NULL, 1, x, &no, o);
    return no;
})
/* a while loop whose trip count differs per example: double x until its sum passes 8 */
static int wb_cond(kiln_graph *g, int n, const kiln_value *x, void *user, kiln_value *o) {
    (void)n, (void)user;
    o[0] = kiln_compare(g, kiln_reduce_sum(g, kiln_abs(g, x[0]), 0, NULL, false),
                        kiln_scalar(g, dtype_of(g, x[0]), 8), KILN_CMP_LT);
    return 1;
}
static int wb_body(kiln_graph *g, int n, const kiln_value *x, void *user, kiln_value *o) {
    (void)n, (void)user;
    o[0] = kiln_add(g, kiln_mul(g, x[0], kiln_scalar(g, dtype_of(g, x[0]), 2)),
                    kiln_scalar(g, dtype_of(g, x[0]), 0.25));
    o[1] = kiln_add(g, x[1], kiln_scalar(g, KILN_DTYPE_I32, 1));
    return 2;
}
FN(f_while_batched, {
    kiln_value init[2] = {x[0], kiln_scalar(g, KILN_DTYPE_I32, 0)};
    kiln_while_loop(g, wb_cond, wb_body, NULL, 2, init, o);
    return 2;
})
/* per-example gradient through a scan: h = tanh(h * w + b) three times, w and b captured */
static int scan_w_body(kiln_graph *g, int n, const kiln_value *x, void *user, kiln_value *o) {
    (void)n;
    const kiln_value *wb = user;
    o[0] = kiln_tanh(
        g, kiln_add(g, kiln_mul(g, x[0], kiln_capture(g, wb[0])), kiln_capture(g, wb[1])));
    return 1;
}
FN(f_scan_grad, {
    kiln_value wb[2] = {x[0], x[2]}, h;
    int no = 0;
    kiln_scan(g, scan_w_body, wb, 1, &x[1], 0, NULL, &(kiln_scan_options){.length = 3}, &no, &h);
    kiln_value l = kiln_reduce_sum(g, kiln_square(g, h), 0, NULL, false);
    kiln_grad(g, l, 2, wb, o);
    return 2;
})

/* nested: the inner vmap over the rows of one example */
static int inner_row(kiln_graph *g, int n, const kiln_value *x, void *user, kiln_value *o) {
    (void)n, (void)user;
    o[0] = kiln_mul(g, kiln_reduce_sum(g, kiln_exp(g, x[0]), 0, NULL, false), x[1]);
    return 1;
}
FN(f_nested, kiln_vmap(g, inner_row, NULL, 2, x, (const int[]){0, NONE}, 1, (const int[]){0}, o);
   return 1)

/* per-example gradient of a logistic regression: w [4] shared, x [4], y scalar */
static kiln_value logistic_loss(kiln_graph *g, kiln_value w, kiln_value x, kiln_value y) {
    kiln_value z = kiln_reduce_sum(g, kiln_mul(g, w, x), 0, NULL, false);
    kiln_value p = kiln_logistic(g, z);
    kiln_value one = kiln_scalar(g, dtype_of(g, w), 1);
    return kiln_neg(g,
                    kiln_add(g, kiln_mul(g, y, kiln_log(g, p)),
                             kiln_mul(g, kiln_sub(g, one, y), kiln_log(g, kiln_sub(g, one, p)))));
}
FN(f_grad, {
    kiln_value l = logistic_loss(g, x[0], x[1], x[2]);
    kiln_grad(g, l, 1, &x[0], &o[0]);
    o[1] = l;
    return 2;
})
/* an MLP's per-example gradients: w1 [3,4], w2 [4,2], x [3], label (one-hot [2]) */
FN(f_mlp_grad, {
    kiln_value h = kiln_tanh(g, kiln_matmul(g, x[2], x[0]));
    kiln_value z = kiln_matmul(g, h, x[1]);
    kiln_value l = kiln_neg(
        g, kiln_reduce_sum(g, kiln_mul(g, kiln_log_softmax(g, z, -1), x[3]), 0, NULL, false));
    kiln_grad(g, l, 2, x, o);
    return 2;
})
/* per-example JVP */
FN(f_jvp, {
    kiln_value y = kiln_mul(g, kiln_sin(g, x[0]), x[0]);
    kiln_jvp(g, 1, &y, 1, &x[0], &x[1], &o[0]);
    return 1;
})

#define DIMS(...)                                                                                  \
    { __VA_ARGS__ }
// clang-format off
static const vcase cases[] = {
    /* name, f, n_in, dtypes, ranks, per-example dims, in_axes, n_out, out_axes, no_half, seq */
    {"unary", f_unary, 1, {F}, {2}, {DIMS(2, 3)}, {0}, 1, {0}, true, false},
    {"unary_axes", f_unary, 1, {F}, {2}, {DIMS(2, 3)}, {2}, 1, {1}, true, false},
    {"int", f_int, 2, {KILN_DTYPE_I32, KILN_DTYPE_I32}, {2, 2}, {DIMS(2, 3), DIMS(2, 3)},
     {1, NONE}, 2, {0, 2}, false, false},
    {"binary_unbatched", f_binary, 2, {F, F}, {2, 2}, {DIMS(2, 3), DIMS(2, 3)}, {1, NONE}, 2,
     {1, 0}, true, false},
    {"select", f_select, 2, {F, F}, {1, 1}, {DIMS(5), DIMS(5)}, {0, 0}, 1, {1}, true, false},
    {"convert", f_convert, 1, {F}, {1}, {DIMS(6)}, {0}, 2, {0, 1}, true, false},
    {"broadcast", f_bcast, 1, {F}, {2}, {DIMS(2, 3)}, {1}, 1, {2}, false, false},
    {"reshape", f_reshape, 1, {F}, {2}, {DIMS(2, 3)}, {0}, 1, {3}, false, false},
    {"transpose", f_transpose, 1, {F}, {3}, {DIMS(2, 3, 4)}, {2}, 1, {1}, false, false},
    {"slice", f_slice, 1, {F}, {2}, {DIMS(5, 4)}, {1}, 1, {0}, false, false},
    {"concat", f_concat, 2, {F, F}, {2, 2}, {DIMS(2, 3), DIMS(2, 1)}, {0, NONE}, 1, {2}, false,
     false},
    {"pad", f_pad, 1, {F}, {2}, {DIMS(3, 4)}, {1}, 1, {0}, false, false},
    {"pad_batched_value", f_pad_batched, 2, {F, F}, {2, 0}, {DIMS(2, 3), DIMS(0)}, {0, 0}, 1,
     {1}, false, false},
    {"pad_batched_value_only", f_pad_batched, 2, {F, F}, {2, 0}, {DIMS(2, 3), DIMS(0)}, {NONE, 0},
     1, {0}, false, false},
    {"rev", f_rev, 1, {F}, {3}, {DIMS(2, 3, 2)}, {0}, 1, {0}, false, false},
    {"reduce", f_reduce, 1, {F}, {2}, {DIMS(3, 4)}, {1}, 4, {0, 0, 2, 1}, false, false},
    {"cumsum", f_cumsum, 1, {F}, {2}, {DIMS(3, 4)}, {0}, 2, {1, 0}, false, false},
    {"sort", f_sort, 1, {F}, {2}, {DIMS(3, 5)}, {1}, 2, {0, 1}, false, false},
    {"matmul_both", f_matmul, 2, {F, F}, {2, 2}, {DIMS(2, 3), DIMS(3, 4)}, {0, 2}, 1, {1}, false,
     false},
    {"matmul_lhs", f_matmul, 2, {F, F}, {2, 2}, {DIMS(2, 3), DIMS(3, 4)}, {1, NONE}, 1, {0},
     false, false},
    {"matmul_rhs", f_matmul, 2, {F, F}, {2, 2}, {DIMS(2, 3), DIMS(3, 4)}, {NONE, 0}, 1, {2},
     false, false},
    {"dot_batch_lhs", f_dot_batch, 2, {F, F}, {3, 3}, {DIMS(2, 4, 3), DIMS(2, 3, 5)}, {0, NONE},
     1, {0}, false, false},
    {"dot_batch_rhs", f_dot_batch, 2, {F, F}, {3, 3}, {DIMS(2, 4, 3), DIMS(2, 3, 5)}, {NONE, 1},
     1, {3}, false, false},
    {"sources_random", f_sources, 1, {F}, {2}, {DIMS(2, 3)}, {0}, 2, {0, 1}, true, false},
    {"random_batched_key", f_random_batched, 2, {F, KILN_DTYPE_I32}, {2, 0},
     {DIMS(2, 3), DIMS(0)}, {NONE, 0}, 1, {0}, true, false},
    {"take_rows_idx", f_take, 2, {F, KILN_DTYPE_I32}, {2, 2}, {DIMS(4, 3), DIMS(2, 5)},
     {NONE, 0}, 1, {0}, false, false},
    {"take_rows_table", f_take, 2, {F, KILN_DTYPE_I32}, {2, 1}, {DIMS(6, 3), DIMS(5)},
     {1, NONE}, 1, {1}, false, false},
    {"take_rows_both", f_take, 2, {F, KILN_DTYPE_I64}, {2, 2}, {DIMS(6, 2), DIMS(2, 3)}, {0, 1},
     1, {2}, false, false},
    {"scatter_add_rows", f_scatter, 3, {F, KILN_DTYPE_I32, F}, {2, 1, 2},
     {DIMS(4, 3), DIMS(6), DIMS(6, 3)}, {0, 0, 0}, 1, {0}, false, false},
    {"scatter_add_rows_mixed", f_scatter, 3, {F, KILN_DTYPE_I32, F}, {2, 1, 2},
     {DIMS(4, 3), DIMS(6), DIMS(6, 3)}, {NONE, 0, 1}, 1, {1}, false, false},
    {"dynamic_slice", f_dslice, 2, {F, F}, {2, 2}, {DIMS(4, 5), DIMS(2, 2)}, {1, NONE}, 2,
     {0, 1}, false, false},
    {"dynamic_slice_batched_starts", f_dslice_batched, 3, {F, F, KILN_DTYPE_I32}, {2, 2, 0},
     {DIMS(4, 5), DIMS(2, 2), DIMS(0)}, {0, 0, 0}, 2, {0, 2}, false, false},
    {"dynamic_slice_batched_starts_only", f_dslice_batched2, 3, {F, F, KILN_DTYPE_I64},
     {2, 2, 0}, {DIMS(4, 5), DIMS(2, 3), DIMS(0)}, {NONE, NONE, 0}, 2, {1, 0}, false, false},
    {"conv_lhs", f_conv, 2, {F, F}, {4, 4}, {DIMS(2, 4, 5, 6), DIMS(6, 2, 2, 2)}, {0, NONE}, 1,
     {0}, false, false},
    {"conv_rhs", f_conv, 2, {F, F}, {4, 4}, {DIMS(2, 4, 5, 6), DIMS(6, 2, 2, 2)}, {NONE, 0}, 1,
     {1}, false, false},
    {"conv_both", f_conv, 2, {F, F}, {4, 4}, {DIMS(2, 4, 5, 6), DIMS(6, 2, 2, 2)}, {1, 0}, 1,
     {0}, false, false},
    /* x [2, 3, 4, 3] NHWC, w [2, 2, 3, 2] HWIO, ct [2, 6, 4, 2] */
    {"conv_vjp", f_conv_vjp, 3, {F, F, F}, {4, 4, 4},
     {DIMS(2, 3, 4, 3), DIMS(2, 2, 3, 2), DIMS(2, 6, 4, 2)}, {0, NONE, 0}, 2, {0, 0}, false, false},
    /* the lhs alone batched: the filter gradient folds it into the lhs's features; the
     * kernel alone: the input gradient folds it into the kernel's input features */
    {"conv_vjp_lhs", f_conv_vjp, 3, {F, F, F}, {4, 4, 4},
     {DIMS(2, 3, 4, 3), DIMS(2, 2, 3, 2), DIMS(2, 6, 4, 2)}, {2, NONE, NONE}, 2, {0, 1}, false,
     false},
    {"conv_vjp_kernel_only", f_conv_vjp, 3, {F, F, F}, {4, 4, 4},
     {DIMS(2, 3, 4, 3), DIMS(2, 2, 3, 2), DIMS(2, 6, 4, 2)}, {NONE, 1, NONE}, 2, {0, 4}, false,
     false},
    {"conv_vjp_kernel", f_conv_vjp, 3, {F, F, F}, {4, 4, 4},
     {DIMS(2, 3, 4, 3), DIMS(2, 2, 3, 2), DIMS(2, 6, 4, 2)}, {NONE, 0, 3}, 2, {2, 0}, false,
     false},
    {"attention3", f_attention, 3, {F, F, F}, {3, 3, 3},
     {DIMS(4, 2, 3), DIMS(4, 1, 3), DIMS(4, 1, 2)}, {0, 0, NONE}, 1, {0}, true, false},
    {"attention4", f_attention, 3, {F, F, F}, {4, 4, 4},
     {DIMS(2, 3, 2, 2), DIMS(2, 3, 2, 2), DIMS(2, 3, 2, 2)}, {2, NONE, 0}, 1, {1}, true, false},
    {"attention3_vjp", f_attention_vjp, 4, {F, F, F, F}, {3, 3, 3, 3},
     {DIMS(4, 2, 3), DIMS(5, 1, 3), DIMS(5, 1, 2), DIMS(4, 2, 2)}, {0, NONE, 1, 0}, 3, {0, 1, 0},
     true, false},
    {"attention4_vjp", f_attention_vjp, 4, {F, F, F, F}, {4, 4, 4, 4},
     {DIMS(2, 3, 2, 2), DIMS(2, 3, 1, 2), DIMS(2, 3, 1, 2), DIMS(2, 3, 2, 2)}, {1, 0, NONE, 2}, 3,
     {0, 2, 1}, true, false},
    {"gather_both", f_gather, 2, {F, KILN_DTYPE_I32}, {2, 2}, {DIMS(5, 4), DIMS(3, 1)}, {0, 1},
     1, {0}, false, false},
    {"gather_operand", f_gather, 2, {F, KILN_DTYPE_I32}, {2, 2}, {DIMS(5, 4), DIMS(3, 1)},
     {1, NONE}, 1, {1}, false, false},
    {"gather_indices", f_gather, 2, {F, KILN_DTYPE_I64}, {2, 2}, {DIMS(5, 4), DIMS(3, 1)},
     {NONE, 0}, 1, {2}, false, false},
    {"scatter_all", f_index_add, 3, {F, KILN_DTYPE_I32, F}, {2, 1, 2},
     {DIMS(5, 4), DIMS(3), DIMS(3, 4)}, {0, 0, 1}, 1, {0}, false, false},
    {"scatter_operand", f_index_add, 3, {F, KILN_DTYPE_I32, F}, {2, 1, 2},
     {DIMS(5, 4), DIMS(3), DIMS(3, 4)}, {1, NONE, NONE}, 1, {1}, false, false},
    {"scatter_updates", f_index_set_max, 3, {F, KILN_DTYPE_I32, F}, {2, 1, 2},
     {DIMS(5, 4), DIMS(3), DIMS(3, 4)}, {NONE, NONE, 0}, 2, {0, 2}, false, false},
    {"scatter_indices", f_index_set_max, 3, {F, KILN_DTYPE_I32, F}, {2, 1, 2},
     {DIMS(5, 4), DIMS(3), DIMS(3, 4)}, {NONE, 0, 0}, 2, {1, 0}, false, false},
    {"all_reduce", f_all_reduce, 1, {F}, {2}, {DIMS(2, 3)}, {1}, 1, {0}, true, false},
    {"reduce_scatter, all_gather", f_shard, 1, {F}, {2}, {DIMS(2, 3)}, {1}, 1, {0}, true, false},
    {"scan_inside", f_scan, 2, {F, F}, {2, 1}, {DIMS(4, 3), DIMS(3)}, {1, 0}, 2, {0, 1}, true,
     false},
    {"scan_carry_fixpoint", f_scan_fix, 2, {F, F}, {2, 1}, {DIMS(4, 3), DIMS(3)}, {NONE, 0}, 2,
     {0, 1}, true, false},
    {"cond_inside", f_cond, 1, {F}, {1}, {DIMS(4)}, {0}, 1, {1}, true, false},
    {"cond_chain", f_cond_chain, 1, {F}, {1}, {DIMS(4)}, {0}, 1, {1}, true, false},
    {"cond_shared_predicate", f_cond_shared, 2, {F, F}, {1, 1}, {DIMS(4), DIMS(4)}, {0, NONE}, 1,
     {0}, true, false},
    {"switch_batched_index", f_switch, 2, {F, KILN_DTYPE_I32}, {1, 0}, {DIMS(4), DIMS(0)}, {0, 0},
     1, {0}, true, false},
    {"while_inside", f_while, 1, {F}, {1}, {DIMS(4)}, {0}, 1, {0}, true, false},
    {"while_batched_predicate", f_while_batched, 1, {F}, {1}, {DIMS(3)}, {0}, 2, {0, 0}, true,
     false},
    {"scan_grad", f_scan_grad, 3, {F, F, F}, {1, 1, 1}, {DIMS(4), DIMS(4), DIMS(4)}, {NONE, 0, 0},
     2, {0, 0}, true, false},
    {"nested", f_nested, 2, {F, F}, {2, 0}, {DIMS(4, 3), DIMS(0)}, {1, 0}, 1, {1}, true, false},
    {"grad", f_grad, 3, {F, F, F}, {1, 1, 0}, {DIMS(4), DIMS(4), DIMS(0)}, {NONE, 0, 0}, 2,
     {0, 0}, true, false},
    {"mlp_grad", f_mlp_grad, 4, {F, F, F, F}, {2, 2, 1, 1},
     {DIMS(3, 4), DIMS(4, 2), DIMS(3), DIMS(2)}, {NONE, NONE, 0, 0}, 2, {0, 2}, true, false},
    {"jvp", f_jvp, 2, {F, F}, {1, 1}, {DIMS(5), DIMS(5)}, {0, NONE}, 1, {0}, true, false},
};
// clang-format on
#define N_CASES ((int)(sizeof cases / sizeof *cases))

static void test_cases_f32(void) {
    kiln_context *ctx = test_context();
    uint64_t seed = test_seed(1);
    for (int i = 0; i < N_CASES; i++) run_case(ctx, &cases[i], KILN_DTYPE_F32, false, &seed);
    kiln_context_destroy(ctx);
}

static void test_cases_f64(void) {
    kiln_context *ctx = test_context();
    uint64_t seed = test_seed(2);
    for (int i = 0; i < N_CASES; i++) run_case(ctx, &cases[i], KILN_DTYPE_F64, false, &seed);
    kiln_context_destroy(ctx);
}

static void test_cases_bf16(void) {
    kiln_context *ctx = test_context();
    uint64_t seed = test_seed(3);
    for (int i = 0; i < N_CASES; i++)
        if (!cases[i].no_half) run_case(ctx, &cases[i], KILN_DTYPE_BF16, false, &seed);
    kiln_context_destroy(ctx);
}

/* Every case's batched graph compiled for the CPU against the interpreter and its plan. */
static void test_cases_compiled(void) {
    kiln_context *ctx = test_context();
    uint64_t seed = test_seed(4);
    for (int i = 0; i < N_CASES; i++) run_case(ctx, &cases[i], KILN_DTYPE_F32, true, &seed);
    kiln_context_destroy(ctx);
}

/* ------------------------------------------------- derivatives composed ---- */

/* Interprets finished g (f64 parameters of the given shapes) on host values; returns output
 * `out` element e. */
static double eval_at(kiln_context *ctx, kiln_graph *g, int n, const int *rank,
                      int64_t (*dims)[KILN_MAX_RANK], double *const *vals, int out, int64_t e) {
    kiln_array *args[MAX_IN], *outs[MAX_IN] = {0};
    for (int i = 0; i < n; i++)
        kiln_array_create(ctx, KILN_DTYPE_F64, rank[i], dims[i], vals[i], &args[i]);
    int n_out = kiln_graph_num_outputs(g);
    double v = NAN;
    if (kiln_interpret(g, n, args, n_out, outs) == KILN_STATUS_OK) {
        size_t nb = kiln_array_nbytes(outs[out]);
        double *h = malloc(nb + 8);
        kiln_array_copy_to_host(outs[out], h, nb);
        v = h[e];
        free(h);
    }
    for (int i = 0; i < n; i++) kiln_array_destroy(args[i]);
    for (int j = 0; j < n_out; j++) kiln_array_destroy(outs[j]);
    return v;
}

/* vmap(grad(loss)): the per-example gradients against central finite differences of each
 * example's loss (the vmapped loss, output 1, at w +- h e_k), in f64. */
static void test_per_example_grad_fd(void) {
    kiln_context *ctx = test_context();
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "pe", &g);
    int rank[3] = {1, 2, 1};
    int64_t dims[3][KILN_MAX_RANK] = {{4}, {B, 4}, {B}};
    kiln_value p[3], o[2];
    for (int i = 0; i < 3; i++) p[i] = kiln_parameter(g, "p", KILN_DTYPE_F64, rank[i], dims[i]);
    CHECK_OK(ctx, kiln_vmap(g, f_grad, NULL, 3, p, (const int[]){NONE, 0, 0}, 2, NULL, o));
    CHECK_OK(ctx, kiln_graph_finish(g, 2, o));
    double w[4] = {0.3, -0.7, 0.2, 0.9}, x[B * 4], y[B] = {1, 0, 1};
    for (int i = 0; i < B * 4; i++) x[i] = sin(1.3 * i + 0.2);
    double *vals[3] = {w, x, y};
    double h = 1e-6;
    for (int b = 0; b < B; b++)
        for (int k = 0; k < 4; k++) {
            double got = eval_at(ctx, g, 3, rank, dims, vals, 0, b * 4 + k);
            w[k] += h;
            double up = eval_at(ctx, g, 3, rank, dims, vals, 1, b);
            w[k] -= 2 * h;
            double dn = eval_at(ctx, g, 3, rank, dims, vals, 1, b);
            w[k] += h;
            double fd = (up - dn) / (2 * h);
            CHECK_MSG(fabs(got - fd) <= 1e-7 * (1 + fabs(fd)), "example %d w[%d]: %.12g, fd %.12g",
                      b, k, got, fd);
        }
    kiln_graph_destroy(g);
    kiln_context_destroy(ctx);
}

/* sum over the batch of tanh(w . x_b): kiln_grad of a value kiln_vmap made, against finite
 * differences; the batched ops are ordinary ops of g. */
FN(f_tanh_dot, o[0] = kiln_tanh(g, kiln_reduce_sum(g, kiln_mul(g, x[0], x[1]), 0, NULL, false));
   return 1)
static void test_grad_of_vmap(void) {
    kiln_context *ctx = test_context();
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "gv", &g);
    int rank[2] = {1, 2};
    int64_t dims[2][KILN_MAX_RANK] = {{4}, {4, B}};
    kiln_value p[2], y, o[2];
    for (int i = 0; i < 2; i++) p[i] = kiln_parameter(g, "p", KILN_DTYPE_F64, rank[i], dims[i]);
    CHECK_OK(ctx, kiln_vmap(g, f_tanh_dot, NULL, 2, p, (const int[]){NONE, 1}, 1, NULL, &y));
    o[0] = kiln_reduce_sum(g, kiln_mul(g, y, y), 0, NULL, false);
    CHECK_OK(ctx, kiln_grad(g, o[0], 1, &p[0], &o[1]));
    CHECK_OK(ctx, kiln_graph_finish(g, 2, o));
    double w[4] = {0.4, -0.2, 0.6, 0.1}, x[4 * B];
    for (int i = 0; i < 4 * B; i++) x[i] = cos(0.7 * i);
    double *vals[2] = {w, x}, h = 1e-6;
    for (int k = 0; k < 4; k++) {
        double got = eval_at(ctx, g, 2, rank, dims, vals, 1, k);
        w[k] += h;
        double up = eval_at(ctx, g, 2, rank, dims, vals, 0, 0);
        w[k] -= 2 * h;
        double dn = eval_at(ctx, g, 2, rank, dims, vals, 0, 0);
        w[k] += h;
        double fd = (up - dn) / (2 * h);
        CHECK_MSG(fabs(got - fd) <= 1e-7 * (1 + fabs(fd)), "w[%d]: %.12g, fd %.12g", k, got, fd);
    }
    kiln_graph_destroy(g);
    kiln_context_destroy(ctx);
}

/* kiln_grad of sum(outs^2) over a kiln_vmap of f whose ops include control flow (the
 * batched scan's and cond's VJPs), for every arg, against central differences in f64. */
static void grad_fd_check(const char *name, kiln_fn f, int n, const int *rank,
                          int64_t (*dims)[KILN_MAX_RANK], const int *in_axes, int n_out) {
    kiln_context *ctx = test_context();
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, name, &g);
    kiln_value p[MAX_IN], y[MAX_IN], o[1 + MAX_IN];
    for (int i = 0; i < n; i++) p[i] = kiln_parameter(g, "p", KILN_DTYPE_F64, rank[i], dims[i]);
    CHECK_OK(ctx, kiln_vmap(g, f, NULL, n, p, in_axes, n_out, NULL, y));
    o[0] = kiln_reduce_sum(g, kiln_square(g, y[0]), 0, NULL, false);
    for (int j = 1; j < n_out; j++)
        o[0] = kiln_add(g, o[0], kiln_reduce_sum(g, kiln_square(g, y[j]), 0, NULL, false));
    CHECK_OK(ctx, kiln_grad(g, o[0], n, p, o + 1));
    CHECK_OK(ctx, kiln_graph_finish(g, 1 + n, o));
    double *vals[MAX_IN];
    for (int i = 0; i < n; i++) {
        int64_t m = numel(rank[i], dims[i]);
        vals[i] = malloc((size_t)m * sizeof(double));
        for (int64_t e = 0; e < m; e++) vals[i][e] = 0.8 * sin(1.7 * (double)e + i + 0.3);
    }
    double h = 1e-6;
    for (int i = 0; i < n; i++)
        for (int64_t e = 0; e < numel(rank[i], dims[i]); e++) {
            double got = eval_at(ctx, g, n, rank, dims, vals, 1 + i, e), v0 = vals[i][e];
            vals[i][e] = v0 + h;
            double up = eval_at(ctx, g, n, rank, dims, vals, 0, 0);
            vals[i][e] = v0 - h;
            double dn = eval_at(ctx, g, n, rank, dims, vals, 0, 0);
            vals[i][e] = v0;
            double fd = (up - dn) / (2 * h);
            CHECK_MSG(fabs(got - fd) <= 1e-6 * (1 + fabs(fd)),
                      "%s: d/d arg %d [%lld]: %.12g, fd %.12g", name, i, (long long)e, got, fd);
        }
    for (int i = 0; i < n; i++) free(vals[i]);
    kiln_graph_destroy(g);
    kiln_context_destroy(ctx);
}

static void test_grad_of_vmap_control(void) {
    int r2[2] = {2, 2};
    int64_t d2[2][KILN_MAX_RANK] = {{4, 3}, {B, 3}};
    grad_fd_check("scan", f_scan_fix, 2, r2, d2, (const int[]){NONE, 0}, 2);
    int r1[2] = {2, 1};
    int64_t d1[2][KILN_MAX_RANK] = {{B, 4}, {4}};
    grad_fd_check("cond", f_cond_shared, 2, r1, d1, (const int[]){0, NONE}, 1);
    int rs[1] = {2};
    int64_t ds[1][KILN_MAX_RANK] = {{4, B}};
    grad_fd_check("cond_batched", f_cond, 1, rs, ds, (const int[]){1}, 1);
}

/* ------------------------------------------------- captures and loops ---- */

typedef struct cap_user {
    kiln_value w; /* of the enclosing graph */
} cap_user;

static int f_capture(kiln_graph *g, int n, const kiln_value *x, void *user, kiln_value *o) {
    (void)n;
    cap_user *u = user;
    kiln_value w = kiln_capture(g, u->w);
    o[0] = kiln_tanh(g, kiln_matmul(g, x[0], w));
    return 1;
}

/* A scan body that calls kiln_vmap over the rows of its slice, reading the weight W of the
 * outermost graph through kiln_capture; against the same scan with the batched matmul
 * written out. */
static int scan_vmap_body(kiln_graph *g, int n, const kiln_value *x, void *user, kiln_value *o) {
    (void)n;
    cap_user *u = user;
    kiln_value y;
    if (kiln_vmap(g, f_capture, u, 1, &x[1], NULL, 1, NULL, &y)) return -1;
    o[0] = kiln_add(g, x[0], y);
    return 1;
}
static int scan_plain_body(kiln_graph *g, int n, const kiln_value *x, void *user, kiln_value *o) {
    (void)n;
    cap_user *u = user;
    o[0] = kiln_add(g, x[0], kiln_tanh(g, kiln_matmul(g, x[1], kiln_capture(g, u->w))));
    return 1;
}
static void test_vmap_in_scan(void) {
    kiln_context *ctx = test_context();
    uint64_t seed = test_seed(5);
    kiln_graph *g[2] = {0};
    kiln_value out[2];
    for (int k = 0; k < 2; k++) {
        kiln_graph_create(ctx, "scan", &g[k]);
        kiln_value w = kiln_parameter(g[k], "w", KILN_DTYPE_F32, 2, (const int64_t[]){4, 5});
        kiln_value xs = kiln_parameter(g[k], "xs", KILN_DTYPE_F32, 3, (const int64_t[]){2, B, 4});
        kiln_value c0 = kiln_full(g[k], KILN_DTYPE_F32, 2, (const int64_t[]){B, 5}, 0);
        cap_user u = {w};
        int no = 0;
        CHECK_OK(ctx, kiln_scan(g[k], k ? scan_plain_body : scan_vmap_body, &u, 1, &c0, 1, &xs,
                                NULL, &no, &out[k]));
        CHECK_OK(ctx, kiln_graph_finish(g[k], 1, &out[k]));
    }
    kiln_array *a[2] = {
        cmp_random_array(ctx, KILN_DTYPE_F32, 2, (const int64_t[]){4, 5}, &seed),
        cmp_random_array(ctx, KILN_DTYPE_F32, 3, (const int64_t[]){2, B, 4}, &seed)};
    kiln_array *r[2] = {0};
    CHECK_OK(ctx, kiln_interpret(g[0], 2, a, 1, &r[0]));
    CHECK_OK(ctx, kiln_interpret(g[1], 2, a, 1, &r[1]));
    if (r[0] && r[1]) CHECK(cmp_arrays(r[0], r[1], 1e-5, 1e-12, "vmap in scan"));
    CHECK(cmp_graph(ctx, g[0], 2, a, NULL, 1e-4, NULL));
    for (int k = 0; k < 2; k++)
        kiln_array_destroy(r[k]), kiln_array_destroy(a[k]), kiln_graph_destroy(g[k]);
    kiln_context_destroy(ctx);
}

/* ------------------------------------------------- the sequential path ---- */

static int f_twice(kiln_graph *g, int n, const kiln_value *x, void *user, kiln_value *o);
static int f_twice_neg(kiln_graph *g, int n, const kiln_value *x, void *user, kiln_value *o) {
    (void)n, (void)user;
    o[0] = kiln_neg(g, x[0]);
    o[1] = kiln_sin(g, x[0]);
    return 2;
}

/* ad_vmap_sequential (the fallback row for an op with no direct rule) on node `id` of s,
 * whose parameters are all batched, against the op's own rule: both emitted into one graph
 * and interpreted on the same random batch. */
static void check_sequential(kiln_context *ctx, kiln_graph *s, uint32_t id, uint64_t *seed) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "seq", &g);
    ad_vmap w = {.g = g, .s = s, .size = B};
    w.map = calloc(s->n_nodes, sizeof *w.map);
    w.batched = calloc(s->n_nodes, 1);
    kiln_array *args[MAX_IN] = {0};
    for (uint32_t p = 0; p < s->n_params; p++) {
        const ir_node *q = &s->nodes[s->params[p]];
        int64_t d[KILN_MAX_RANK + 1];
        with_batch(q->shape.rank, q->shape.dims, 0, d);
        w.map[s->params[p]] = kiln_parameter(g, "x", q->dtype, q->shape.rank + 1, d);
        w.batched[s->params[p]] = 1;
        args[p] = cmp_random_array(ctx, q->dtype, q->shape.rank + 1, d, seed);
    }
    const ir_node *n = &s->nodes[id];
    uint32_t count = ir_ops[n->op].kind == IRK_CONTROL ? ir_control_n_results(n) : 1;
    kiln_value a[KILN_MAX_OUTPUTS], b[KILN_MAX_OUTPUTS], o[2 * KILN_MAX_OUTPUTS];
    snprintf(w.op, sizeof w.op, "test");
    ad_vmap_sequential(&w, id, n, a);
    ad_vmap_entry_for(n->op)->rule(&w, id, n, b);
    for (uint32_t i = 0; i < count; i++) o[i] = a[i], o[count + i] = b[i];
    CHECK_OK(ctx, kiln_graph_finish(g, (int)(2 * count), o));
    int loops = count_loops(g);
    CHECK_MSG(loops >= 1, "%s: the sequential path made no scan", ir_ops[n->op].name);
    kiln_array *r[2 * KILN_MAX_OUTPUTS] = {0};
    CHECK_OK(ctx, kiln_interpret(g, (int)s->n_params, args, (int)(2 * count), r));
    for (uint32_t i = 0; i < count && r[i]; i++)
        CHECK_MSG(cmp_arrays(r[i], r[count + i], 1e-6, 1e-12, ir_ops[n->op].name),
                  "%s result %u: sequential and direct differ", ir_ops[n->op].name, i);
    for (uint32_t i = 0; i < 2 * count; i++) kiln_array_destroy(r[i]);
    for (uint32_t p = 0; p < s->n_params; p++) kiln_array_destroy(args[p]);
    free(w.map), free(w.batched);
    kiln_graph_destroy(g);
}

static void test_sequential_fallback(void) {
    kiln_context *ctx = test_context();
    uint64_t seed = test_seed(7);
    /* dynamic_slice with batched starts */
    kiln_graph *s = NULL;
    kiln_graph_create(ctx, "one", &s);
    kiln_value x = kiln_parameter(s, "x", KILN_DTYPE_F32, 2, (const int64_t[]){4, 5});
    kiln_value st[2] = {kiln_parameter(s, "s0", KILN_DTYPE_I32, 0, NULL),
                        kiln_parameter(s, "s1", KILN_DTYPE_I32, 0, NULL)};
    kiln_value y = kiln_dynamic_slice(s, x, 2, st, (const int64_t[]){2, 3});
    CHECK_OK(ctx, kiln_graph_finish(s, 1, &y));
    check_sequential(ctx, s, y.id, &seed);
    kiln_graph_destroy(s);
    /* a cond by a batched index, with two results (RESULT nodes in the scan's body) */
    kiln_graph_create(ctx, "one", &s);
    x = kiln_parameter(s, "x", KILN_DTYPE_F32, 1, (const int64_t[]){4});
    kiln_value i = kiln_parameter(s, "i", KILN_DTYPE_I32, 0, NULL);
    kiln_value o[2];
    int no = 0;
    kiln_fn br[3] = {f_twice, f_twice_neg, f_twice};
    CHECK_OK(ctx, kiln_switch(s, i, 3, br, NULL, 1, &x, &no, o));
    CHECK_OK(ctx, kiln_graph_finish(s, 2, o));
    check_sequential(ctx, s, o[0].id, &seed);
    kiln_graph_destroy(s);
    kiln_context_destroy(ctx);
}

/* ------------------------------------------------------------- errors ---- */

static int f_twice(kiln_graph *g, int n, const kiln_value *x, void *user, kiln_value *o) {
    (void)n, (void)user;
    o[0] = kiln_exp(g, x[0]);
    o[1] = x[0];
    return 2;
}
static int f_bad(kiln_graph *g, int n, const kiln_value *x, void *user, kiln_value *o) {
    (void)n, (void)user;
    o[0] =
        kiln_add(g, x[0], kiln_full(g, KILN_DTYPE_F32, 1, (const int64_t[]){5}, 1)); /* [2] + [5] */
    return 1;
}
static int f_const(kiln_graph *g, int n, const kiln_value *x, void *user, kiln_value *o) {
    (void)n, (void)x, (void)user;
    o[0] = kiln_scalar(g, KILN_DTYPE_F32, 2);
    return 1;
}
static int f_deep(kiln_graph *g, int n, const kiln_value *x, void *user, kiln_value *o) {
    (void)n, (void)user;
    int64_t d[KILN_MAX_RANK];
    int r[KILN_MAX_RANK];
    for (int i = 0; i < KILN_MAX_RANK; i++) d[i] = 1, r[i] = i;
    d[KILN_MAX_RANK - 1] = 2;
    (void)r;
    kiln_value y =
        kiln_broadcast_in_dim(g, x[0], KILN_MAX_RANK, d, (const int[]){KILN_MAX_RANK - 1});
    o[0] = kiln_exp(g, y);
    return 1;
}

/* kiln_custom_vjp inside fn (as jax.vmap of a custom_vjp function): y = floor(x * w) with a
 * straight-through backward (d/dx = ct w, d/dw = ct x; floor's own derivative is 0), x
 * batched and w not. The batched call keeps the user's rule: d sum(y) / dx[b] = w, and w's
 * cotangent is summed over the batch, sum_b x[b]. Interpreted and compiled. */
static int st_fwd(kiln_graph *g, int n, const kiln_value *x, void *user, kiln_value *o) {
    (void)n, (void)user;
    o[0] = kiln_floor(g, kiln_mul(g, x[0], x[1]));
    o[1] = x[0], o[2] = x[1]; /* residuals */
    return 3;
}
static int st_bwd(kiln_graph *g, int n, const kiln_value *x, void *user, kiln_value *o) {
    (void)n, (void)user; /* x: residuals x, w, then the cotangent */
    o[0] = kiln_mul(g, x[2], x[1]);
    o[1] = kiln_mul(g, x[2], x[0]);
    return 2;
}
static int f_straight(kiln_graph *g, int n, const kiln_value *x, void *user, kiln_value *o) {
    (void)user;
    return kiln_custom_vjp(g, st_fwd, st_bwd, NULL, n, x, 1, o) ? -1 : 1;
}

/* A fn that reads a value inside its custom_vjp call's fwd (not an output): the batched
 * call is whole, so kiln_vmap refuses it, naming the call's line. */
static int leak_fwd(kiln_graph *g, int n, const kiln_value *x, void *user, kiln_value *o) {
    (void)n;
    kiln_value *inner = user;
    *inner = kiln_exp(g, x[0]);
    o[0] = kiln_mul(g, *inner, x[0]);
    return 1;
}
static int f_leaks(kiln_graph *g, int n, const kiln_value *x, void *user, kiln_value *o) {
    kiln_value inner, y;
    if (kiln_custom_vjp(g, leak_fwd, st_bwd, &inner, n, x, 1, &y)) return -1;
    (void)user;
    o[0] = kiln_add(g, y, inner);
    return 1;
}

static void test_custom_vjp_in_vmap(void) {
    enum { NB = 4, D = 3 };
    kiln_context *ctx = test_context();
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "cvjp", &g);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F64, 2, (const int64_t[]){NB, D});
    kiln_value w = kiln_parameter(g, "w", KILN_DTYPE_F64, 1, (const int64_t[]){D});
    kiln_value y, d[2], outs[3];
    CHECK_OK(ctx, kiln_vmap(g, f_straight, NULL, 2, (kiln_value[]){x, w},
                            (const int[]){0, KILN_VMAP_NONE}, 1, NULL, &y));
    kiln_value loss = kiln_reduce_sum(g, y, 0, NULL, false);
    CHECK_OK(ctx, kiln_grad(g, loss, 2, (kiln_value[]){x, w}, d));
    outs[0] = y, outs[1] = d[0], outs[2] = d[1];
    CHECK_OK(ctx, kiln_graph_finish(g, 3, outs));
    double xv[NB * D], wv[D] = {1.5, -2.0, 0.75}, got[3][NB * D];
    for (int i = 0; i < NB * D; i++) xv[i] = 0.37 * i - 1.9;
    kiln_array *a[2] = {0}, *r[3] = {0};
    kiln_array_create(ctx, KILN_DTYPE_F64, 2, (const int64_t[]){NB, D}, xv, &a[0]);
    kiln_array_create(ctx, KILN_DTYPE_F64, 1, (const int64_t[]){D}, wv, &a[1]);
    CHECK_OK(ctx, kiln_interpret(g, 2, a, 3, r));
    for (int k = 0; k < 3; k++)
        if (r[k]) kiln_array_copy_to_host(r[k], got[k], kiln_array_nbytes(r[k]));
    int bad = 0;
    for (int b = 0; b < NB; b++)
        for (int j = 0; j < D; j++) {
            bad += got[0][b * D + j] != floor(xv[b * D + j] * wv[j]);
            bad += got[1][b * D + j] != wv[j];
        }
    for (int j = 0; j < D; j++) {
        double sx = 0;
        for (int b = 0; b < NB; b++) sx += xv[b * D + j];
        bad += fabs(got[2][j] - sx) > 1e-12;
    }
    CHECK_MSG(!bad, "custom_vjp inside kiln_vmap: %d values differ from the user's rule", bad);
    CHECK(cmp_graph(ctx, g, 2, a, NULL, 1e-12, NULL));
    for (int k = 0; k < 3; k++) kiln_array_destroy(r[k]);
    kiln_array_destroy(a[0]), kiln_array_destroy(a[1]);
    kiln_graph_destroy(g);

    kiln_graph_create(ctx, "cvjp_leak", &g);
    x = kiln_parameter(g, "x", KILN_DTYPE_F64, 2, (const int64_t[]){NB, D});
    CHECK_STATUS(kiln_vmap(g, f_leaks, NULL, 1, &x, NULL, 1, NULL, &y), KILN_STATUS_UNIMPLEMENTED);
    CHECK_CONTAINS(kiln_graph_error(g),
                   "a value inside the kiln_custom_vjp called at test_vmap.c:");
    CHECK_CONTAINS(kiln_graph_error(g), "none of its outputs or residuals");
    kiln_graph_destroy(g);
    kiln_context_destroy(ctx);
}

/* Runs kiln_vmap on a fresh graph with a and b as arguments; returns the graph's error. */
static void expect_error(kiln_context *ctx, kiln_fn f, int n_args, const int *in_axes,
                         const int *out_axes, int n_out, const char *want1, const char *want2) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "err", &g);
    kiln_value a[3] = {kiln_parameter(g, "a", KILN_DTYPE_F32, 2, (const int64_t[]){3, 2}),
                       kiln_parameter(g, "b", KILN_DTYPE_F32, 2, (const int64_t[]){4, 2}),
                       kiln_parameter(g, "c", KILN_DTYPE_F32, 2, (const int64_t[]){3, 2})};
    kiln_value o[2] = {{1, 1}, {1, 1}};
    kiln_status st = kiln_vmap(g, f, NULL, n_args, a, in_axes, n_out, out_axes, o);
    CHECK_MSG(st != KILN_STATUS_OK, "kiln_vmap succeeded; wanted \"%s\"", want1);
    CHECK(o[0].id == 0);
    CHECK_CONTAINS(kiln_graph_error(g), "kiln_vmap");
    CHECK_CONTAINS(kiln_graph_error(g), want1);
    if (want2) CHECK_CONTAINS(kiln_graph_error(g), want2);
    kiln_graph_destroy(g);
}

static void test_errors(void) {
    kiln_context *ctx = test_context();
    expect_error(ctx, f_twice, 2, (const int[]){0, 0}, NULL, 2,
                 "batch sizes differ: args[0] f32[3,2] has 3 at axis 0, args[1] f32[4,2] has 4",
                 NULL);
    expect_error(ctx, f_twice, 2, (const int[]){NONE, NONE}, NULL, 2, "no argument is batched",
                 NULL);
    expect_error(ctx, f_twice, 1, (const int[]){2}, NULL, 2,
                 "in_axes[0] = 2 is out of range for args[0] f32[3,2]", NULL);
    expect_error(ctx, f_twice, 1, (const int[]){-2}, NULL, 2, "in_axes[0] = -2", "negative");
    expect_error(ctx, f_twice, 1, NULL, (const int[]){0, 2}, 2,
                 "out_axes[1] = 2 is out of range for output 1 (f32[2] per example)", NULL);
    expect_error(ctx, f_twice, 1, NULL, (const int[]){NONE, 0}, 2,
                 "out_axes[0] is KILN_VMAP_NONE but output 0", NULL);
    expect_error(ctx, f_twice, 1, NULL, NULL, 1, "fn returned 2 values; n_out is 1", NULL);
    expect_error(ctx, f_bad, 1, (const int[]){1}, NULL, 1, "in fn:", "test_vmap.c");
    expect_error(ctx, f_twice, 0, NULL, NULL, 2, "n is 0", NULL);
    expect_error(ctx, NULL, 1, NULL, NULL, 1, "fn is NULL", NULL);
    /* a rule that fails names the op it batches and fn's line */
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "deep", &g);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, (const int64_t[]){3});
    kiln_value o;
    CHECK(kiln_vmap(g, f_deep, NULL, 1, &x, NULL, 1, NULL, &o) != KILN_STATUS_OK);
    CHECK_CONTAINS(kiln_graph_error(g), "kiln_vmap (batching broadcast_in_dim)");
    CHECK_CONTAINS(kiln_graph_error(g), "test_vmap.c:");
    kiln_graph_destroy(g);
    /* an output no batched value reaches, returned unbatched with out_axes NONE, or broadcast */
    kiln_graph_create(ctx, "const", &g);
    x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, (const int64_t[]){3});
    kiln_value c[2];
    CHECK_OK(ctx, kiln_vmap(g, f_const, NULL, 1, &x, NULL, 1, (const int[]){NONE}, &c[0]));
    CHECK_OK(ctx, kiln_vmap(g, f_const, NULL, 1, &x, NULL, 1, NULL, &c[1]));
    kiln_dtype t;
    int r = -1;
    int64_t d[KILN_MAX_RANK];
    kiln_value_type(g, c[0], &t, &r, d);
    CHECK(r == 0);
    kiln_value_type(g, c[1], &t, &r, d);
    CHECK(r == 1 && d[0] == 3);
    kiln_graph_destroy(g);
    kiln_context_destroy(ctx);
}

/* The captured-weight form against the same weight passed as an unbatched argument. */
static int f_weight_arg(kiln_graph *g, int n, const kiln_value *x, void *user, kiln_value *o) {
    (void)n, (void)user;
    o[0] = kiln_tanh(g, kiln_matmul(g, x[0], x[1]));
    return 1;
}
/* The batched cond's rule appends nodes while it builds each example's pick, so the
 * graph's node array may grow under it: it once read a node's shape through a pointer the
 * growth had freed (an outside report; ASan's heap-use-after-free). A stale read finds the
 * old bytes in an ordinary build, so this checks something under ASan (the CI's second
 * pass), where graph.c moves a small graph's array at every append anyway. 0 to 39 pairs of nodes
 * traced first move the growth across every point of the rule. */
static void test_cond_growth(void) {
    kiln_context *ctx = test_context();
    cond_chain_len = 8;
    for (int pad = 0; pad < 40; pad++) {
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, "cond growth", &g);
        kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, (const int64_t[]){5, 7}), o;
        for (int k = 0; k < pad; k++) x = kiln_add(g, x, kiln_scalar(g, KILN_DTYPE_F32, 1));
        int len = pad;
        kiln_status st = kiln_vmap(g, f_cond_chain, NULL, 1, &x, NULL, 1, NULL, &o);
        CHECK_MSG(st == KILN_STATUS_OK, "after %d nodes: %s", len, kiln_graph_error(g));
        if (!st) CHECK_OK(ctx, kiln_graph_finish(g, 1, &o));
        kiln_graph_destroy(g);
    }
    cond_chain_len = 6;
    kiln_context_destroy(ctx);
}

/* An empty batch (B = 0) through a convolution and its gradients: every batching of it
 * gives empty results of the right types, as jax.vmap does. */
static void test_empty_batch(void) {
    static const int axes[3][3] = {{0, NONE, 0}, {NONE, 0, 0}, {0, 0, NONE}};
    kiln_context *ctx = test_context();
    for (int c = 0; c < 3; c++) {
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, "empty batch", &g);
        int64_t dx[5] = {2, 3, 4, 3}, dw[5] = {2, 2, 3, 2}, dc[5] = {2, 6, 4, 2}, b0[5];
        const int64_t *per[3] = {dx, dw, dc};
        kiln_value p[3], o[2];
        for (int i = 0; i < 3; i++) {
            if (axes[c][i] == NONE) {
                p[i] = kiln_parameter(g, "x", KILN_DTYPE_F32, 4, per[i]);
                continue;
            }
            b0[0] = 0;
            memcpy(b0 + 1, per[i], 4 * sizeof *b0);
            p[i] = kiln_parameter(g, "x", KILN_DTYPE_F32, 5, b0);
        }
        kiln_status st = kiln_vmap(g, f_conv_vjp, NULL, 3, p, axes[c], 2, (const int[]){0, 0}, o);
        CHECK_MSG(st == KILN_STATUS_OK, "empty batch %d: %s", c, kiln_graph_error(g));
        for (int j = 0; !st && j < 2; j++) {
            kiln_dtype t;
            int r;
            int64_t d[KILN_MAX_RANK];
            kiln_value_type(g, o[j], &t, &r, d);
            CHECK_MSG(r == 5 && d[0] == 0 && !memcmp(d + 1, per[j], 4 * sizeof *d),
                      "empty batch %d: output %d has rank %d, leading %lld", c, j, r,
                      (long long)d[0]);
        }
        if (!st) CHECK_OK(ctx, kiln_graph_finish(g, 2, o));
        kiln_graph_destroy(g);
    }
    kiln_context_destroy(ctx);
}

static void test_capture(void) {
    kiln_context *ctx = test_context();
    uint64_t seed = test_seed(6);
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "cap", &g);
    kiln_value w = kiln_parameter(g, "w", KILN_DTYPE_F32, 2, (const int64_t[]){4, 5});
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, (const int64_t[]){B, 4});
    cap_user u = {w};
    kiln_value o[2];
    CHECK_OK(ctx, kiln_vmap(g, f_capture, &u, 1, &x, NULL, 1, NULL, &o[0]));
    CHECK_OK(ctx, kiln_vmap(g, f_weight_arg, NULL, 2, (kiln_value[]){x, w}, (const int[]){0, NONE},
                            1, NULL, &o[1]));
    kiln_value d = kiln_reduce_max(g, kiln_abs(g, kiln_sub(g, o[0], o[1])), 0, NULL, false);
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &d));
    kiln_array *a[2] = {cmp_random_array(ctx, KILN_DTYPE_F32, 2, (const int64_t[]){4, 5}, &seed),
                        cmp_random_array(ctx, KILN_DTYPE_F32, 2, (const int64_t[]){B, 4}, &seed)};
    kiln_array *r = NULL;
    CHECK_OK(ctx, kiln_interpret(g, 2, a, 1, &r));
    float v = 1;
    if (r) kiln_array_copy_to_host(r, &v, sizeof v);
    CHECK(v == 0);
    kiln_array_destroy(r), kiln_array_destroy(a[0]), kiln_array_destroy(a[1]);
    kiln_graph_destroy(g);
    kiln_context_destroy(ctx);
}

int main(void) {
    RUN(test_cases_f32);
    RUN(test_cases_f64);
    RUN(test_cases_bf16);
    RUN(test_per_example_grad_fd);
    RUN(test_grad_of_vmap);
    RUN(test_grad_of_vmap_control);
    RUN(test_vmap_in_scan);
    RUN(test_capture);
    RUN(test_empty_batch);
    RUN(test_cond_growth);
    RUN(test_sequential_fallback);
    RUN(test_errors);
    RUN(test_custom_vjp_in_vmap);
    RUN(test_cases_compiled);
    return test_summary("test_vmap");
}
