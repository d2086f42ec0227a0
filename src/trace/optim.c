/* optim.c — optimisers as traced functions (SGD with momentum, Adam, AdamW, Lion,
 * Adafactor, clipping by global norm): each call appends the update to the graph being traced, so
 * the update compiles with the forward and backward passes as one program (docs/optimisers.md).
 *
 * Invariants:
 * - Every array entry is checked (dtype, shape, graph) before any node is added, so a
 *   mistake is reported against the optimiser and the index of the bad entry; after the
 *   checks only host OOM can fail, and on any failure every output is the invalid value.
 * - Hyperparameters are rank-0 values converted to f64; the scalar arithmetic on them
 *   (bias corrections, products of hyperparameters) stays rank 0 and f64, and only the
 *   finished coefficients are converted to a parameter's dtype. So the per-element work
 *   is a handful of multiply-adds in the parameter's dtype, and no full-size temporary
 *   exists that fusion could not inline: each parameter's update is elementwise in its
 *   parameter, gradient and state, which is what lets the planner write it in place over
 *   donated buffers.
 * - Outputs are written for index i only after every input of index i was read, so an
 *   output array may be the input array itself.
 * - On success every call records roles (ir.h) for the memory report: the parameters
 *   given (when they are graph parameters) and the new ones are parameters, the state
 *   given and returned is optimiser state, clipped gradients are gradients. */
#include "trace.h"

#include <math.h>
#include <stdio.h>

/* The range a hyperparameter's constant must lie in (checked when it is a constant: a
 * traced value is the user's to keep in range). */
typedef enum hp_range {
    HP_NONNEG,   /* >= 0: lr, eps, weight decay, momentum */
    HP_UNIT,     /* [0, 1): b1, b2 */
    HP_POSITIVE, /* > 0: max_norm */
    HP_STEP,     /* >= 1: the 1-based step */
} hp_range;

/* The value of a rank-0 constant node as a double. */
static double constant_value(const ir_node *n) {
    return ir_scalar_load(n->dtype, n->data, 0);
}

static bool in_range(double x, hp_range r, const char **want) {
    switch (r) {
    case HP_NONNEG: *want = ">= 0"; return x >= 0;
    case HP_UNIT: *want = "in [0, 1)"; return x >= 0 && x < 1;
    case HP_POSITIVE: *want = "> 0"; return x > 0;
    case HP_STEP: *want = ">= 1 (the 1-based number of this update)"; return x >= 1;
    }
    return false;
}

/* Hyperparameter `name` as a rank-0 f64 value: the constant `def` when v is unset (a NaN
 * def marks a required one), else v converted. Invalid value after recording an error. */
static kiln_value hparam(kiln_graph *g, const char *op, kiln_value v, const char *name, double def,
                         hp_range range) {
    if (!v.id) {
        if (isnan(def))
            return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                              "%s is unset: it is required (a rank-0 value: a parameter fed "
                              "each call, or kiln_scalar)",
                              name);
        return trace_scalar(g, op, KILN_DTYPE_F64, def);
    }
    char what[64];
    snprintf(what, sizeof what, "hyperparameter %s", name);
    const ir_node *n = trace_node(g, op, v, what);
    if (!n) return KN_NONE;
    if (n->shape.rank != 0 || !ir_dtype_accepts(IRT_NUMERIC, n->dtype)) {
        char have[IR_TYPE_STR_MAX];
        return trace_fail_on(g, &v.id, 1, n->shape.rank ? KILN_STATUS_SHAPE : KILN_STATUS_DTYPE, op,
                             "%s must be a rank-0 f32, f64, i32 or i64 value, not %s", name,
                             ir_type_str(n->dtype, &n->shape, have, sizeof have));
    }
    const char *want;
    if (n->op == IR_CONSTANT && !in_range(constant_value(n), range, &want))
        return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op, "%s = %g must be %s", name,
                          constant_value(n), want);
    return kiln_convert(g, v, KILN_DTYPE_F64);
}

/* One array argument of an optimiser: its name for messages and its entries. */
typedef struct optim_array {
    const char *name;
    const kiln_value *v;
} optim_array;

/* Checks n and that every array is given; then, per index, that arrays[0][i] (the
 * parameter or gradient the others follow) is a float value of g, and that every other
 * array's entry i has its dtype and shape. */
static bool check_arrays(kiln_graph *g, const char *op, int n, const optim_array *arrays,
                         int n_arrays) {
    if (n <= 0) {
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op, "n is %d: it needs at least one entry", n);
        return false;
    }
    for (int a = 0; a < n_arrays; a++)
        if (!arrays[a].v) {
            trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op, "%s is NULL for n = %d", arrays[a].name,
                       n);
            return false;
        }
    for (int i = 0; i < n; i++) {
        char what[64];
        snprintf(what, sizeof what, "%s[%d]", arrays[0].name, i);
        const ir_node *lead = trace_node(g, op, arrays[0].v[i], what);
        if (!lead) return false;
        kiln_dtype t = lead->dtype;
        ir_shape s = lead->shape;
        if (!ir_dtype_is_float(t)) {
            trace_fail_on(g, &arrays[0].v[i].id, 1, KILN_STATUS_DTYPE, op,
                          "%s is %s: optimisers update float values only", what,
                          kiln_dtype_name(t));
            return false;
        }
        for (int a = 1; a < n_arrays; a++) {
            char other[64];
            snprintf(other, sizeof other, "%s[%d]", arrays[a].name, i);
            const ir_node *x = trace_node(g, op, arrays[a].v[i], other);
            if (!x) return false;
            if (x->dtype != t || !ir_shape_eq(&x->shape, &s)) {
                char have[IR_TYPE_STR_MAX], want[IR_TYPE_STR_MAX];
                uint32_t in[2] = {arrays[0].v[i].id, arrays[a].v[i].id};
                trace_fail_on(g, in, 2, x->dtype != t ? KILN_STATUS_DTYPE : KILN_STATUS_SHAPE, op,
                              "%s is %s but %s is %s: they must have the same dtype and shape",
                              other, ir_type_str(x->dtype, &x->shape, have, sizeof have), what,
                              ir_type_str(t, &s, want, sizeof want));
                return false;
            }
        }
    }
    return true;
}

/* The common entry: g usable, outputs given. */
static bool start(kiln_graph *g, const char *op, int n, kiln_value *const *outs, int n_outs,
                  const char *const *out_names) {
    if (!trace_ready(g, op)) return false;
    for (int k = 0; k < n_outs; k++)
        if (!outs[k]) {
            trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op, "%s is NULL for n = %d", out_names[k],
                       n);
            return false;
        }
    return true;
}

/* Ends a call: on an error (this call's or an earlier one) every output entry is the
 * invalid value. Returns the graph's status (INVALID_ARGUMENT for a NULL or finished g). */
static kiln_status finish(kiln_graph *g, int n, kiln_value *const *outs, int n_outs) {
    kiln_status s = !g            ? KILN_STATUS_INVALID_ARGUMENT
                    : g->status   ? g->status
                    : g->finished ? KILN_STATUS_INVALID_ARGUMENT
                                  : KILN_STATUS_OK;
    if (s && n > 0)
        for (int k = 0; k < n_outs; k++)
            if (outs[k])
                for (int i = 0; i < n; i++) outs[k][i] = KN_NONE;
    return s;
}

/* Records role r on v[0..n) (NULL: none); only graph parameters when params_only. */
static void mark_roles(kiln_graph *g, const char *op, int n, const kiln_value *v, trace_role r,
                       bool params_only) {
    for (int i = 0; v && i < n && !g->status; i++)
        if (!params_only || (v[i].id < g->n_nodes && g->nodes[v[i].id].op == IR_PARAMETER))
            trace_set_role(g, op, v[i], r);
}

/* Rank-0 f64 arithmetic on hyperparameters. */
static kiln_value one_minus(kiln_graph *g, const char *op, kiln_value x) {
    return kiln_sub(g, trace_scalar(g, op, KILN_DTYPE_F64, 1), x);
}

/* Coefficients converted to one parameter dtype, made once per dtype a call meets. */
#define MAX_COEF 8
typedef struct coefs {
    kiln_value f64[MAX_COEF]; /* the rank-0 f64 values */
    int n;
    /* [t]: the same values converted to dtype t (made on first use): parameters of several
     * float dtypes (f32 masters beside bf16 ones) each get their own */
    kiln_value as[KILN_MAX_DTYPES][MAX_COEF];
    bool made[KILN_MAX_DTYPES];
} coefs;

static const kiln_value *coefs_for(kiln_graph *g, coefs *c, kiln_dtype t) {
    int k = (unsigned)t < KILN_MAX_DTYPES ? (int)t : 0; /* float dtypes only reach here */
    if (!c->made[k]) {
        for (int i = 0; i < c->n; i++) /* an unused slot stays unset */
            c->as[k][i] = c->f64[i].id ? kiln_convert(g, c->f64[i], t) : KN_NONE;
        c->made[k] = true;
    }
    return c->as[k];
}

static kiln_dtype dtype_of(const kiln_graph *g, kiln_value v) {
    return g->nodes[v.id].dtype;
}

/* ------------------------------------------------------------------ SGD ---- */

enum { SGD_LR, SGD_MU, SGD_WD };

kiln_status kiln_optim_sgd(kiln_graph *g, const kiln_sgd_options *o, int n,
                           const kiln_value *params, const kiln_value *grads,
                           const kiln_value *momentum, kiln_value *new_params,
                           kiln_value *new_momentum) {
    const char *op = "kiln_optim_sgd";
    kiln_sgd_options none = {0};
    if (!o) o = &none;
    bool use_mu = o->momentum.id != 0, use_wd = o->weight_decay.id != 0;
    kiln_value *outs[2] = {new_params, use_mu ? new_momentum : NULL};
    static const char *const out_names[2] = {"new_params", "new_momentum"};
    if (!start(g, op, n, outs, use_mu ? 2 : 1, out_names)) return finish(g, n, outs, 2);
    if (o->nesterov && !use_mu)
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                   "nesterov needs momentum (o->momentum is unset)");
    else if (!use_mu && (momentum || new_momentum))
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                   "momentum buffers were given but o->momentum is unset (plain SGD keeps no "
                   "state: pass NULL, or set a momentum)");
    optim_array arrays[3] = {{"params", params}, {"grads", grads}, {"momentum", momentum}};
    if (g->status || !check_arrays(g, op, n, arrays, use_mu ? 3 : 2)) return finish(g, n, outs, 2);

    coefs c = {.n = 3};
    c.f64[SGD_LR] = hparam(g, op, o->lr, "lr", 1e-3, HP_NONNEG);
    if (use_mu) c.f64[SGD_MU] = hparam(g, op, o->momentum, "momentum", 0, HP_NONNEG);
    if (use_wd) c.f64[SGD_WD] = hparam(g, op, o->weight_decay, "weight_decay", 0, HP_NONNEG);
    for (int i = 0; i < n && !g->status; i++) {
        kiln_value p = params[i], d = grads[i], b = use_mu ? momentum[i] : KN_NONE;
        const kiln_value *k = coefs_for(g, &c, dtype_of(g, p));
        if (use_wd) d = kiln_add(g, d, kiln_mul(g, k[SGD_WD], p));
        if (use_mu) {
            kiln_value nb = kiln_add(g, kiln_mul(g, k[SGD_MU], b), d);
            d = o->nesterov ? kiln_add(g, d, kiln_mul(g, k[SGD_MU], nb)) : nb;
            new_momentum[i] = nb;
        }
        new_params[i] = kiln_sub(g, p, kiln_mul(g, k[SGD_LR], d));
    }
    mark_roles(g, op, n, params, TRACE_ROLE_PARAMETER, true);
    mark_roles(g, op, n, new_params, TRACE_ROLE_PARAMETER, false);
    if (use_mu) {
        mark_roles(g, op, n, momentum, TRACE_ROLE_OPT_STATE, false);
        mark_roles(g, op, n, new_momentum, TRACE_ROLE_OPT_STATE, false);
    }
    return finish(g, n, outs, 2);
}

/* ----------------------------------------------------------------- Adam ---- */

enum { AD_B1, AD_1MB1, AD_B2, AD_1MB2, AD_STEP_SIZE, AD_SQRT_BC2, AD_EPS, AD_WD };

/* Adam (decoupled false: weight decay, when set, is L2 added to the gradient) and AdamW
 * (decoupled: p decays by lr * wd with the step), so that the per-element work is two
 * fused multiply-adds for the moments and one division:
 *   p' = p - (lr / (1 - b1^t) * m' / (sqrt(v') / sqrt(1 - b2^t) + eps) + lr wd p).
 * The decay is added to the step and p takes one rounding, as in optax's adamw
 * (p + -lr (u + wd p)); torch's p (1 - lr wd) - step rounds p twice and rounds 1 - lr wd to
 * p's dtype, which for bf16 parameters quantises the decay to multiples of 2^-8 (none at
 * all below lr wd = 2^-9). */
static kiln_status adam(kiln_graph *g, const char *op, bool decoupled, const kiln_adam_options *o,
                        int n, const kiln_value *params, const kiln_value *grads,
                        const kiln_value *m, const kiln_value *v, kiln_value *new_params,
                        kiln_value *new_m, kiln_value *new_v) {
    kiln_adam_options none = {0};
    if (!o) o = &none;
    kiln_value *outs[3] = {new_params, new_m, new_v};
    static const char *const out_names[3] = {"new_params", "new_m", "new_v"};
    if (!start(g, op, n, outs, 3, out_names)) return finish(g, n, outs, 3);
    optim_array arrays[4] = {{"params", params}, {"grads", grads}, {"m", m}, {"v", v}};
    if (!check_arrays(g, op, n, arrays, 4)) return finish(g, n, outs, 3);

    bool use_wd = decoupled || o->weight_decay.id != 0;
    kiln_value lr = hparam(g, op, o->lr, "lr", 1e-3, HP_NONNEG);
    kiln_value b1 = hparam(g, op, o->b1, "b1", 0.9, HP_UNIT);
    kiln_value b2 = hparam(g, op, o->b2, "b2", 0.999, HP_UNIT);
    kiln_value eps = hparam(g, op, o->eps, "eps", 1e-8, HP_NONNEG);
    kiln_value wd =
        use_wd ? hparam(g, op, o->weight_decay, "weight_decay", 1e-2, HP_NONNEG) : KN_NONE;
    kiln_value t = hparam(g, op, o->step, "step", NAN, HP_STEP);
    if (g->status) return finish(g, n, outs, 3);

    coefs c = {.n = use_wd ? 8 : 7};
    c.f64[AD_B1] = b1;
    c.f64[AD_1MB1] = one_minus(g, op, b1);
    c.f64[AD_B2] = b2;
    c.f64[AD_1MB2] = one_minus(g, op, b2);
    c.f64[AD_STEP_SIZE] = kiln_div(g, lr, one_minus(g, op, kiln_pow(g, b1, t)));
    c.f64[AD_SQRT_BC2] = kiln_sqrt(g, one_minus(g, op, kiln_pow(g, b2, t)));
    c.f64[AD_EPS] = eps;
    if (use_wd) c.f64[AD_WD] = decoupled ? kiln_mul(g, lr, wd) : wd;
    for (int i = 0; i < n && !g->status; i++) {
        kiln_value p = params[i], d = grads[i];
        const kiln_value *k = coefs_for(g, &c, dtype_of(g, p));
        if (use_wd && !decoupled) d = kiln_add(g, d, kiln_mul(g, k[AD_WD], p));
        kiln_value nm = kiln_add(g, kiln_mul(g, k[AD_B1], m[i]), kiln_mul(g, k[AD_1MB1], d));
        kiln_value nv =
            kiln_add(g, kiln_mul(g, k[AD_B2], v[i]), kiln_mul(g, k[AD_1MB2], kiln_mul(g, d, d)));
        kiln_value denom = kiln_add(g, kiln_div(g, kiln_sqrt(g, nv), k[AD_SQRT_BC2]), k[AD_EPS]);
        kiln_value step = kiln_mul(g, k[AD_STEP_SIZE], kiln_div(g, nm, denom));
        if (use_wd && decoupled) step = kiln_add(g, step, kiln_mul(g, k[AD_WD], p));
        new_params[i] = kiln_sub(g, p, step);
        new_m[i] = nm;
        new_v[i] = nv;
    }
    mark_roles(g, op, n, params, TRACE_ROLE_PARAMETER, true);
    mark_roles(g, op, n, new_params, TRACE_ROLE_PARAMETER, false);
    mark_roles(g, op, n, m, TRACE_ROLE_OPT_STATE, false);
    mark_roles(g, op, n, v, TRACE_ROLE_OPT_STATE, false);
    mark_roles(g, op, n, new_m, TRACE_ROLE_OPT_STATE, false);
    mark_roles(g, op, n, new_v, TRACE_ROLE_OPT_STATE, false);
    return finish(g, n, outs, 3);
}

kiln_status kiln_optim_adam(kiln_graph *g, const kiln_adam_options *o, int n,
                            const kiln_value *params, const kiln_value *grads, const kiln_value *m,
                            const kiln_value *v, kiln_value *new_params, kiln_value *new_m,
                            kiln_value *new_v) {
    return adam(g, "kiln_optim_adam", false, o, n, params, grads, m, v, new_params, new_m, new_v);
}

kiln_status kiln_optim_adamw(kiln_graph *g, const kiln_adamw_options *o, int n,
                             const kiln_value *params, const kiln_value *grads, const kiln_value *m,
                             const kiln_value *v, kiln_value *new_params, kiln_value *new_m,
                             kiln_value *new_v) {
    return adam(g, "kiln_optim_adamw", true, o, n, params, grads, m, v, new_params, new_m, new_v);
}

/* ----------------------------------------------------------------- Lion ---- */

enum { LI_B1, LI_1MB1, LI_B2, LI_1MB2, LI_LR, LI_LR_WD };

/* optax.lion: p' = p - (lr sign(b1 m + (1 - b1) g) + lr wd p), p rounded once; the sign of
 * a NaN is NaN, of 0 is 0 (jnp.sign's). */
kiln_status kiln_optim_lion(kiln_graph *g, const kiln_lion_options *o, int n,
                            const kiln_value *params, const kiln_value *grads, const kiln_value *m,
                            kiln_value *new_params, kiln_value *new_m) {
    const char *op = "kiln_optim_lion";
    kiln_lion_options none = {0};
    if (!o) o = &none;
    kiln_value *outs[2] = {new_params, new_m};
    static const char *const out_names[2] = {"new_params", "new_m"};
    if (!start(g, op, n, outs, 2, out_names)) return finish(g, n, outs, 2);
    optim_array arrays[3] = {{"params", params}, {"grads", grads}, {"m", m}};
    if (!check_arrays(g, op, n, arrays, 3)) return finish(g, n, outs, 2);
    kiln_value lr = hparam(g, op, o->lr, "lr", 1e-4, HP_NONNEG);
    kiln_value b1 = hparam(g, op, o->b1, "b1", 0.9, HP_UNIT);
    kiln_value b2 = hparam(g, op, o->b2, "b2", 0.99, HP_UNIT);
    kiln_value wd = hparam(g, op, o->weight_decay, "weight_decay", 1e-3, HP_NONNEG);
    if (g->status) return finish(g, n, outs, 2);
    coefs c = {.n = 6};
    c.f64[LI_B1] = b1, c.f64[LI_1MB1] = one_minus(g, op, b1);
    c.f64[LI_B2] = b2, c.f64[LI_1MB2] = one_minus(g, op, b2);
    c.f64[LI_LR] = lr, c.f64[LI_LR_WD] = kiln_mul(g, lr, wd);
    for (int i = 0; i < n && !g->status; i++) {
        kiln_value p = params[i], d = grads[i];
        const kiln_value *k = coefs_for(g, &c, dtype_of(g, p));
        kiln_value dir =
            kiln_sign(g, kiln_add(g, kiln_mul(g, k[LI_B1], m[i]), kiln_mul(g, k[LI_1MB1], d)));
        kiln_value step = kiln_add(g, kiln_mul(g, k[LI_LR], dir), kiln_mul(g, k[LI_LR_WD], p));
        new_params[i] = kiln_sub(g, p, step);
        new_m[i] = kiln_add(g, kiln_mul(g, k[LI_B2], m[i]), kiln_mul(g, k[LI_1MB2], d));
    }
    mark_roles(g, op, n, params, TRACE_ROLE_PARAMETER, true);
    mark_roles(g, op, n, new_params, TRACE_ROLE_PARAMETER, false);
    mark_roles(g, op, n, m, TRACE_ROLE_OPT_STATE, false);
    mark_roles(g, op, n, new_m, TRACE_ROLE_OPT_STATE, false);
    return finish(g, n, outs, 2);
}

/* ------------------------------------------------------------ Adafactor ---- */

/* The axes a parameter is factored over, as optax's _factored_dims: a0 the largest, a1 the
 * second largest (a stable sort of the sizes: of equal ones the later axis ranks higher);
 * false when it is not factored. */
static bool factored_axes(const kiln_adafactor_options *o, int rank, const int64_t *dims, int *a0,
                          int *a1) {
    int64_t min_size = o->min_dim_size_to_factor > 0 ? o->min_dim_size_to_factor : 128;
    if (o->unfactored || rank < 2) return false;
    int hi = 0, second = -1; /* the stable order's last two */
    for (int i = 1; i < rank; i++) {
        if (dims[i] >= dims[hi])
            second = hi, hi = i;
        else if (second < 0 || dims[i] >= dims[second])
            second = i;
    }
    if (dims[second] < min_size) return false;
    *a0 = hi, *a1 = second;
    return true;
}

/* dims without axis a, into out; its rank. */
static int drop_axis(int rank, const int64_t *dims, int a, int64_t *out) {
    int k = 0;
    for (int i = 0; i < rank; i++)
        if (i != a) out[k++] = dims[i];
    return k;
}

kiln_status kiln_optim_adafactor_state_shape(const kiln_adafactor_options *o, int rank,
                                             const int64_t *dims, kiln_adafactor_state_shape *out) {
    kiln_adafactor_options none = {0};
    if (!o) o = &none;
    if (!out || rank < 0 || rank > KILN_MAX_RANK || (rank && !dims) ||
        o->min_dim_size_to_factor < 0)
        return KILN_STATUS_INVALID_ARGUMENT;
    for (int i = 0; i < rank; i++)
        if (dims[i] < 0) return KILN_STATUS_SHAPE;
    *out = (kiln_adafactor_state_shape){0};
    int a0, a1;
    out->factored = factored_axes(o, rank, dims, &a0, &a1);
    if (out->factored) {
        out->v_row_rank = drop_axis(rank, dims, a0, out->v_row);
        out->v_col_rank = drop_axis(rank, dims, a1, out->v_col);
        out->v_rank = 1, out->v[0] = 1;
    } else {
        out->v_row_rank = out->v_col_rank = out->v_rank = 1;
        out->v_row[0] = out->v_col[0] = 1;
        out->v_rank = rank;
        for (int i = 0; i < rank; i++) out->v[i] = dims[i];
    }
    return KILN_STATUS_OK;
}

/* x (rank r - 1, missing axis a) broadcast back to the shape s of rank r. */
static kiln_value along(kiln_graph *g, kiln_value x, const ir_shape *s, int a) {
    int map[KILN_MAX_RANK], k = 0;
    for (int i = 0; i < s->rank; i++)
        if (i != a) map[k++] = i;
    return kiln_broadcast_in_dim(g, x, s->rank, s->dims, map);
}

/* Whether state array v's entry i has shape want (rank, dims), else an error naming it. */
static bool check_state(kiln_graph *g, const char *op, const char *name, int i, kiln_value v,
                        kiln_value p, int rank, const int64_t *dims) {
    const ir_node *x = &g->nodes[v.id], *pn = &g->nodes[p.id];
    ir_shape want = {.rank = rank};
    for (int k = 0; k < rank; k++) want.dims[k] = dims[k];
    if (x->dtype == pn->dtype && ir_shape_eq(&x->shape, &want)) return true;
    char have[IR_TYPE_STR_MAX], need[IR_TYPE_STR_MAX], ps[IR_TYPE_STR_MAX];
    uint32_t in[2] = {p.id, v.id};
    trace_fail_on(g, in, 2, x->dtype != pn->dtype ? KILN_STATUS_DTYPE : KILN_STATUS_SHAPE, op,
                  "%s[%d] is %s but params[%d] (%s) needs %s "
                  "(kiln_optim_adafactor_state_shape)",
                  name, i, ir_type_str(x->dtype, &x->shape, have, sizeof have), i,
                  ir_type_str(pn->dtype, &pn->shape, ps, sizeof ps),
                  ir_type_str(pn->dtype, &want, need, sizeof need));
    return false;
}

enum { AF_DECAY, AF_1MDECAY, AF_EPS, AF_CLIP, AF_LR, AF_WD, AF_ONE, AF_MIN_SCALE };

kiln_status kiln_optim_adafactor(kiln_graph *g, const kiln_adafactor_options *o, int n,
                                 const kiln_value *params, const kiln_value *grads,
                                 const kiln_value *v_row, const kiln_value *v_col,
                                 const kiln_value *v, kiln_value *new_params, kiln_value *new_v_row,
                                 kiln_value *new_v_col, kiln_value *new_v) {
    const char *op = "kiln_optim_adafactor";
    kiln_adafactor_options none = {0};
    if (!o) o = &none;
    kiln_value *outs[4] = {new_params, new_v_row, new_v_col, new_v};
    static const char *const out_names[4] = {"new_params", "new_v_row", "new_v_col", "new_v"};
    if (!start(g, op, n, outs, 4, out_names)) return finish(g, n, outs, 4);
    if (o->min_dim_size_to_factor < 0) {
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                   "min_dim_size_to_factor is %d: it must be >= 0 (0: the default, 128)",
                   o->min_dim_size_to_factor);
        return finish(g, n, outs, 4);
    }
    optim_array arrays[2] = {{"params", params}, {"grads", grads}};
    if (!check_arrays(g, op, n, arrays, 2)) return finish(g, n, outs, 4);
    const kiln_value *state[3] = {v_row, v_col, v};
    static const char *const state_names[3] = {"v_row", "v_col", "v"};
    for (int k = 0; k < 3; k++)
        if (!state[k]) {
            trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op, "%s is NULL for n = %d", state_names[k],
                       n);
            return finish(g, n, outs, 4);
        }
    for (int i = 0; i < n; i++) {
        const ir_node *pn = &g->nodes[params[i].id];
        kiln_adafactor_state_shape sh;
        kiln_optim_adafactor_state_shape(o, pn->shape.rank, pn->shape.dims, &sh);
        const int ranks[3] = {sh.v_row_rank, sh.v_col_rank, sh.v_rank};
        const int64_t *dims[3] = {sh.v_row, sh.v_col, sh.v};
        for (int k = 0; k < 3; k++) {
            char what[32];
            snprintf(what, sizeof what, "%s[%d]", state_names[k], i);
            if (!trace_node(g, op, state[k][i], what) ||
                !check_state(g, op, state_names[k], i, state[k][i], params[i], ranks[k], dims[k]))
                return finish(g, n, outs, 4);
        }
    }
    bool use_wd = o->weight_decay.id != 0;
    kiln_value lr = hparam(g, op, o->lr, "lr", 1e-2, HP_NONNEG);
    kiln_value t = hparam(g, op, o->step, "step", NAN, HP_STEP);
    kiln_value rate = hparam(g, op, o->decay_rate, "decay_rate", 0.8, HP_NONNEG);
    kiln_value eps = hparam(g, op, o->eps, "eps", 1e-30, HP_NONNEG);
    kiln_value clip = o->no_clipping ? KN_NONE
                                     : hparam(g, op, o->clipping_threshold, "clipping_threshold",
                                              1.0, HP_POSITIVE);
    kiln_value wd = use_wd ? hparam(g, op, o->weight_decay, "weight_decay", 0, HP_NONNEG) : KN_NONE;
    if (g->status) return finish(g, n, outs, 4);
    /* d = 1 - t^-rate: 0 at the first step, so the first moments are the squares alone */
    kiln_value decay = one_minus(g, op, kiln_pow(g, t, kiln_neg(g, rate)));
    coefs c = {.n = 8};
    c.f64[AF_DECAY] = decay, c.f64[AF_1MDECAY] = one_minus(g, op, decay);
    c.f64[AF_EPS] = eps, c.f64[AF_CLIP] = clip, c.f64[AF_LR] = lr, c.f64[AF_WD] = wd;
    c.f64[AF_ONE] = trace_scalar(g, op, KILN_DTYPE_F64, 1);
    c.f64[AF_MIN_SCALE] = trace_scalar(g, op, KILN_DTYPE_F64, 1e-3);
    for (int i = 0; i < n && !g->status; i++) {
        kiln_value p = params[i], d = grads[i];
        const kiln_value *k = coefs_for(g, &c, dtype_of(g, p));
        ir_shape s = g->nodes[p.id].shape;
        int a0, a1;
        kiln_value sq = kiln_add(g, kiln_mul(g, d, d), k[AF_EPS]), u;
        if (factored_axes(o, s.rank, s.dims, &a0, &a1)) {
            kiln_value r = kiln_add(g, kiln_mul(g, k[AF_DECAY], v_row[i]),
                                    kiln_mul(g, k[AF_1MDECAY], kiln_mean(g, sq, 1, &a0, false)));
            kiln_value cl = kiln_add(g, kiln_mul(g, k[AF_DECAY], v_col[i]),
                                     kiln_mul(g, k[AF_1MDECAY], kiln_mean(g, sq, 1, &a1, false)));
            int r_axis = a1 > a0 ? a1 - 1 : a1; /* a1 in r, which lost a0 */
            kiln_value row_factor =
                kiln_rsqrt(g, kiln_div(g, r, kiln_mean(g, r, 1, &r_axis, true)));
            u = kiln_mul(g, kiln_mul(g, d, along(g, row_factor, &s, a0)),
                         along(g, kiln_rsqrt(g, cl), &s, a1));
            new_v_row[i] = r, new_v_col[i] = cl, new_v[i] = v[i];
        } else {
            kiln_value nv =
                kiln_add(g, kiln_mul(g, k[AF_DECAY], v[i]), kiln_mul(g, k[AF_1MDECAY], sq));
            u = kiln_mul(g, d, kiln_rsqrt(g, nv));
            new_v_row[i] = v_row[i], new_v_col[i] = v_col[i], new_v[i] = nv;
        }
        if (!o->no_clipping) { /* optax.clip_by_block_rms */
            kiln_value rms = kiln_sqrt(g, kiln_mean(g, kiln_mul(g, u, u), 0, NULL, false));
            u = kiln_div(g, u, kiln_max(g, k[AF_ONE], kiln_div(g, rms, k[AF_CLIP])));
        }
        u = kiln_mul(g, u, k[AF_LR]);
        if (!o->no_parameter_scale) { /* optax.scale_by_param_block_rms */
            kiln_value rms = kiln_sqrt(g, kiln_mean(g, kiln_mul(g, p, p), 0, NULL, false));
            u = kiln_mul(g, u, kiln_max(g, rms, k[AF_MIN_SCALE]));
        }
        if (use_wd) u = kiln_add(g, u, kiln_mul(g, k[AF_WD], p));
        new_params[i] = kiln_sub(g, p, u);
    }
    mark_roles(g, op, n, params, TRACE_ROLE_PARAMETER, true);
    mark_roles(g, op, n, new_params, TRACE_ROLE_PARAMETER, false);
    for (int k = 0; k < 3; k++) {
        mark_roles(g, op, n, state[k], TRACE_ROLE_OPT_STATE, false);
        mark_roles(g, op, n, outs[k + 1], TRACE_ROLE_OPT_STATE, false);
    }
    return finish(g, n, outs, 4);
}

/* ------------------------------------------------------------- clipping ---- */

/* optax.clip_by_global_norm, element for element: where(norm < max_norm, g,
 * (g / norm) * max_norm). The comparison is on the f64 norm; the scaling in each
 * gradient's dtype, with the norm converted to it, as optax does. Each sum of squares is
 * a full reduction of one gradient (one kernel each); the scaling is elementwise and
 * fuses into whatever consumes the clipped gradient (the optimiser's update). */
kiln_status kiln_optim_clip_by_global_norm(kiln_graph *g, kiln_value max_norm, int n,
                                           const kiln_value *grads, kiln_value *clipped,
                                           kiln_value *global_norm) {
    const char *op = "kiln_optim_clip_by_global_norm";
    kiln_value *outs[1] = {clipped};
    static const char *const out_names[1] = {"clipped"};
    optim_array arrays[1] = {{"grads", grads}};
    if (!start(g, op, n, outs, 1, out_names) || !check_arrays(g, op, n, arrays, 1)) {
        kiln_status s = finish(g, n, outs, 1);
        if (global_norm) *global_norm = KN_NONE;
        return s;
    }
    kiln_value max64 = hparam(g, op, max_norm, "max_norm", NAN, HP_POSITIVE);
    kiln_dtype widest = KILN_DTYPE_F32;
    kiln_value sq = KN_NONE;
    for (int i = 0; i < n && !g->status; i++) {
        kiln_dtype t = dtype_of(g, grads[i]);
        if (t == KILN_DTYPE_F64) widest = t;
        kiln_value s = kiln_convert(
            g, kiln_reduce_sum(g, kiln_mul(g, grads[i], grads[i]), 0, NULL, false), KILN_DTYPE_F64);
        sq = i ? kiln_add(g, sq, s) : s;
    }
    kiln_value norm64 = kiln_sqrt(g, sq);
    kiln_value keep = kiln_compare(g, norm64, max64, KILN_CMP_LT);
    coefs c = {.n = 2, .f64 = {norm64, max64}};
    kiln_value norm = kiln_convert(g, norm64, widest);
    for (int i = 0; i < n && !g->status; i++) {
        const kiln_value *k = coefs_for(g, &c, dtype_of(g, grads[i]));
        kiln_value scaled = kiln_mul(g, kiln_div(g, grads[i], k[0]), k[1]);
        clipped[i] = kiln_select(g, keep, grads[i], scaled);
    }
    mark_roles(g, op, n, clipped, TRACE_ROLE_GRADIENT, false);
    kiln_status s = finish(g, n, outs, 1);
    if (global_norm) *global_norm = s ? KN_NONE : norm;
    return s;
}
