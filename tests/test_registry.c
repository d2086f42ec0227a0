/* test_registry.c — the op registry (src/ir/ir.h) is complete: every op of IR_NUM_OPS has
 * every part each stage needs (reference evaluation, kernel expression, VJP rule or
 * NONDIFF), and the public header declares every plain op's builder; every builder, plain or
 * composite, has its location macro.
 *
 * It walks the registry rather than a hand-kept list, so a new row is checked (and its
 * kernel expression compiled against its reference evaluation on every dtype it accepts)
 * without touching this file. */
#include "compare.h"
#include "ewops.h"
#include "autodiff/autodiff.h"
#include "reference/reference.h"
#include "trace/trace.h"

#include <stdint.h>

static const kiln_dtype all_dtypes[] = {KILN_DTYPE_F32, KILN_DTYPE_F64,  KILN_DTYPE_I32,
                                        KILN_DTYPE_I64, KILN_DTYPE_BOOL, KILN_DTYPE_BF16,
                                        KILN_DTYPE_F16};
#define N_DTYPES 7

/* test_compiled_against_reference's context, its kernels cached in a private folder */
static kiln_context *compiled_ctx;

static bool accepts_class(const ir_op_info *o, bool fl) {
    for (int i = 0; i < N_DTYPES; i++)
        if (ir_dtype_is_float(all_dtypes[i]) == fl && ir_dtype_accepts(o->types, all_dtypes[i]))
            return true;
    return false;
}

/* Names, arity, cost and flags are consistent; every op has a reference evaluation. */
static void test_rows(void) {
    for (int op = 0; op < IR_NUM_OPS; op++) {
        const ir_op_info *o = &ir_ops[op];
        CHECK_MSG(o->name && *o->name, "op %d has no name", op);
        if (!o->name) continue;
        for (int q = 0; q < op; q++)
            CHECK_MSG(strcmp(o->name, ir_ops[q].name), "%s twice", o->name);
        int want = o->kind == IRK_SOURCE   ? 0
                   : o->kind == IRK_UNARY  ? 1
                   : o->kind == IRK_BINARY ? 2
                   : o->kind == IRK_SELECT ? 3
                                           : o->arity;
        CHECK_MSG(o->arity == want, "%s: arity %d for its kind", o->name, o->arity);
        CHECK_MSG(o->cost >= 0 && o->cost <= 16, "%s: cost %d", o->name, o->cost);
        CHECK_MSG(ref_op_eval((ir_op)op) != NULL, "%s has no reference evaluation", o->name);
        bool elementwise = o->flags & IRF_ELEMENTWISE;
        CHECK_MSG(elementwise ==
                      (o->kind == IRK_UNARY || o->kind == IRK_BINARY || o->kind == IRK_SELECT),
                  "%s: ELEMENTWISE flag disagrees with its kind", o->name);
        CHECK_MSG(!(o->flags & IRF_PLAIN) || elementwise, "%s: plain but not elementwise", o->name);
        /* Boolean-only ops have no derivative. */
        if (o->types == IRT_BOOL)
            CHECK_MSG(o->flags & IRF_NONDIFF, "%s takes bools only but is not NONDIFF", o->name);
    }
}

/* Every elementwise op has a kernel expression and scalar semantics for each class of
 * dtype it accepts; no other op has a kernel expression (the emitter handles them). */
static void test_kernel_expressions(void) {
    for (int op = 0; op < IR_NUM_OPS; op++) {
        const ir_op_info *o = &ir_ops[op];
        for (int cls = 0; cls < 2; cls++) {
            bool fl = cls == 0;
            if (!(o->flags & IRF_ELEMENTWISE)) {
                CHECK_MSG(!o->kexpr[cls], "%s is not elementwise but has a kernel expression",
                          o->name);
                continue;
            }
            if (!accepts_class(o, fl)) continue;
            CHECK_MSG(o->kexpr[cls] != NULL, "%s has no kernel expression for %s operands", o->name,
                      fl ? "float" : "integer/bool");
            if (o->flags & IRF_PLAIN)
                CHECK_MSG(ref_scalar_supports((ir_op)op, fl),
                          "%s has no reference semantics for %s operands", o->name,
                          fl ? "float" : "integer/bool");
            /* Every placeholder is one the printers know. */
            for (const char *t = o->kexpr[cls]; t && *t; t++)
                if (*t == '$') {
                    CHECK_MSG(t[1] && strchr("012TUSRFCDH", t[1]), "%s: bad placeholder $%c",
                              o->name, t[1]);
                    t++;
                }
        }
    }
}

/* The attribute table (KN_ATTRS): an op's rows are adjacent (ir_op_attrs finds them by
 * walking), their names distinct, an IRA_FILL follows the flag it depends on, and the ops
 * of KN_AXES_OPS have the one axis set their generated builder fills. Elementwise ops have
 * none: their dtype says everything. */
static void test_attr_table(void) {
    static const ir_op order[] = {
#define KN_ATTR_OP(op, ...) IR_##op,
        KN_ATTRS(KN_ATTR_OP)
#undef KN_ATTR_OP
    };
    size_t n_rows = sizeof order / sizeof *order;
    for (size_t i = 1; i < n_rows; i++)
        for (size_t k = 0; k + 1 < i; k++)
            CHECK_MSG(order[k] != order[i] || order[i - 1] == order[i],
                      "%s: its attribute rows are not adjacent in KN_ATTRS", ir_ops[order[i]].name);
    for (int op = 0; op < IR_NUM_OPS; op++) {
        int n;
        const ir_attr_desc *d = ir_op_attrs((ir_op)op, &n);
        for (int i = 0; i < n; i++) {
            CHECK_MSG(d[i].op == (ir_op)op && d[i].name, "%s: a bad attribute row",
                      ir_ops[op].name);
            for (int k = 0; k < i; k++)
                CHECK_MSG(strcmp(d[i].name, d[k].name), "%s: attribute %s twice", ir_ops[op].name,
                          d[i].name);
            if (d[i].type == IRA_FILL)
                CHECK_MSG(i > 0 && d[i - 1].type == IRA_FLAG, "%s: %s follows no flag",
                          ir_ops[op].name, d[i].name);
            if (d[i].type == IRA_WORD)
                CHECK_MSG(d[i].words && d[i].words(0), "%s: no words", d[i].name);
        }
        if (ir_ops[op].flags & IRF_ELEMENTWISE && op != IR_COMPARE && op != IR_RANDOM)
            CHECK_MSG(n == 0, "%s is elementwise but has attributes", ir_ops[op].name);
    }
#define KN_AXES_CHECK(e, ...)                                                                      \
    {                                                                                              \
        int n;                                                                                     \
        const ir_attr_desc *d = ir_op_attrs(IR_##e, &n);                                           \
        CHECK_MSG(n == 1 && d[0].type == IRA_AXES, "%s: not one IRA_AXES attribute",               \
                  ir_ops[IR_##e].name);                                                            \
    }
    KN_AXES_OPS(KN_AXES_CHECK)
#undef KN_AXES_CHECK
}

/* ------------------------------------------------------- public header ---- */

/* Every plain op has a declaration kiln_<ident>(kiln_graph *g, kiln_value x[, b]) and a
 * location macro in kiln.h: the builders are generated from the registry, the header is
 * written by hand, and this keeps the two from drifting. */
static void test_header(void) {
    char *h = test_read_file(KILN_SOURCE_DIR "/include/kiln.h");
    CHECK_MSG(h != NULL, "cannot read %s/include/kiln.h", KILN_SOURCE_DIR);
    if (!h) return;
    char want[256];
#define KN_CHECK_UNARY(e, name, ident, ...)                                                        \
    snprintf(want, sizeof want, "KILN_API kiln_value kiln_%s(kiln_graph *g, kiln_value x);",       \
             #ident);                                                                              \
    CHECK_MSG(strstr(h, want), "kiln.h lacks: %s", want);                                          \
    snprintf(want, sizeof want, "#define kiln_%s(g, ...) ", #ident);                               \
    CHECK_MSG(strstr(h, want), "kiln.h lacks the location macro: %s", want);
#define KN_CHECK_BINARY(e, name, ident, ...)                                                       \
    snprintf(want, sizeof want,                                                                    \
             "KILN_API kiln_value kiln_%s(kiln_graph *g, kiln_value a, kiln_value b);", #ident);   \
    CHECK_MSG(strstr(h, want), "kiln.h lacks: %s", want);                                          \
    snprintf(want, sizeof want, "#define kiln_%s(g, ...) ", #ident);                               \
    CHECK_MSG(strstr(h, want), "kiln.h lacks the location macro: %s", want);
#define KN_CHECK_AXES(e, name, ident, ...)                                                         \
    snprintf(want, sizeof want,                                                                    \
             "KILN_API kiln_value kiln_%s(kiln_graph *g, kiln_value x, int n_axes, const int "     \
             "*axes);",                                                                            \
             #ident);                                                                              \
    CHECK_MSG(strstr(h, want), "kiln.h lacks: %s", want);                                          \
    snprintf(want, sizeof want, "#define kiln_%s(g, ...) ", #ident);                               \
    CHECK_MSG(strstr(h, want), "kiln.h lacks the location macro: %s", want);
    KN_UNARY_OPS(KN_CHECK_UNARY)
    KN_BINARY_OPS(KN_CHECK_BINARY)
    KN_AXES_OPS(KN_CHECK_AXES)
#undef KN_CHECK_UNARY
#undef KN_CHECK_BINARY
#undef KN_CHECK_AXES
    free(h);
}

/* Every builder, plain op or composite (kiln_layer_norm_axis, kiln_split, ...), has a
 * location macro: a declaration "KILN_API kiln_value|kiln_status kiln_X(kiln_graph *g, ..."
 * needs "#define kiln_X(g, ...)", or its errors would name kiln's line, not the caller's.
 * Composites are not rows of the registry, so test_header cannot see them. */
static void test_builder_macros(void) {
    static const char *const not_builders[] = {"kiln_compile", "kiln_interpret",
                                               "kiln_graph_pop_at", "kiln_graph_pop_at_status"};
    char *h = test_read_file(KILN_SOURCE_DIR "/include/kiln.h");
    if (!h) return;
    int builders = 0;
    for (const char *p = strstr(h, "KILN_API kiln_"); p; p = strstr(p + 1, "KILN_API kiln_")) {
        const char *name = p + strlen("KILN_API ");
        if (strncmp(name, "kiln_value ", 11) && strncmp(name, "kiln_status ", 12)) continue;
        name = strchr(name, ' ') + 1;
        size_t len = strcspn(name, "(");
        if (strncmp(name + len, "(kiln_graph *g,", 15) || len >= 64) continue;
        char fn[64], want[96];
        snprintf(fn, sizeof fn, "%.*s", (int)len, name);
        bool skip = false;
        for (size_t i = 0; i < sizeof not_builders / sizeof *not_builders; i++)
            skip |= !strcmp(fn, not_builders[i]);
        if (skip) continue;
        builders++;
        snprintf(want, sizeof want, "#define %s(g, ...)", fn);
        CHECK_MSG(strstr(h, want), "kiln.h lacks the location macro of %s: %s", fn, want);
    }
    CHECK_MSG(builders > 80, "only %d builders found in kiln.h", builders);
    free(h);
}

/* -------------------------------------- every elementwise op, compiled ---- */

#define N_ELEMS 40

/* Values that reach each op's edges: signed zeros, infinities, NaN, overflow and
 * underflow of exp, integer extremes (division by 0 and INT_MIN / -1), and ordinary ones. */
static kiln_array *edge_array(kiln_context *ctx, kiln_dtype t, int which) {
    static const double fv[] = {0.0,   -0.0,     1.0,       -1.0,  0.5,   -2.5,   3.0,
                                1e-30, -1e-30,   50.0,      -50.0, 100.0, -100.0, 1e30,
                                -1e30, INFINITY, -INFINITY, NAN,   0.25,  7.0};
    static const int64_t iv[] = {0,  1,  -1,  2,         -2,        3,         7,
                                 -7, 31, -31, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN,
                                 5,  -5, 100, 63,        64,        -64};
    unsigned char buf[N_ELEMS * 8];
    int64_t dims[1] = {N_ELEMS};
    for (int i = 0; i < N_ELEMS; i++) {
        int k = (i * (which ? 7 : 1) + which * 3) % 20; /* pair the values up differently */
        switch (t) {
        case KILN_DTYPE_F32: ((float *)buf)[i] = (float)fv[k]; break;
        case KILN_DTYPE_F64: ((double *)buf)[i] = fv[k]; break;
        case KILN_DTYPE_I32: ((int32_t *)buf)[i] = (int32_t)iv[k]; break;
        case KILN_DTYPE_I64: ((int64_t *)buf)[i] = iv[k]; break;
        case KILN_DTYPE_BF16: ((uint16_t *)buf)[i] = kn_f64_to_bf16(fv[k]); break;
        case KILN_DTYPE_F16: ((uint16_t *)buf)[i] = kn_f64_to_f16(fv[k]); break;
        default: buf[i] = (uint8_t)((i + which) % 3 == 0); break;
        }
    }
    kiln_array *a = NULL;
    kiln_array_create(ctx, t, 1, dims, buf, &a);
    return a;
}

/* One graph per data dtype whose outputs are every elementwise op the dtype accepts
 * (every compare direction, every conversion), compiled and checked against the
 * reference interpreter. */
static void test_compiled_against_reference(void) {
    kiln_context *ctx = compiled_ctx;
    for (int d = 0; d < N_DTYPES; d++) {
        kiln_dtype t = all_dtypes[d];
        kiln_graph *g = NULL;
        char name[32];
        snprintf(name, sizeof name, "ops_%s", kiln_dtype_name(t));
        kiln_graph_create(ctx, name, &g);
        int64_t dims[1] = {N_ELEMS};
        kiln_value a = kiln_parameter(g, "a", t, 1, dims);
        kiln_value b = kiln_parameter(g, "b", t, 1, dims);
        kiln_value p = kiln_parameter(g, "pred", KILN_DTYPE_BOOL, 1, dims);
        kiln_value outs[128];
        int n_out = 0, n_ops = 0;
        for (int op = 0; op < IR_NUM_OPS; op++) {
            const ir_op_info *o = &ir_ops[op];
            if (!(o->flags & IRF_ELEMENTWISE) || !ir_dtype_accepts(o->types, t)) continue;
            n_ops++;
            int variants = op == IR_COMPARE   ? 6
                           : op == IR_CONVERT ? N_DTYPES
                           : op == IR_RANDOM  ? 7
                                              : 1;
            for (int v = 0; v < variants; v++) {
                ir_node n = {.op = (ir_op)op};
                uint32_t in[3] = {a.id, b.id, 0};
                if (op == IR_COMPARE) n.a.cmp = (kiln_cmp)v;
                if (op == IR_RANDOM) ew_random_variant(&n, v);
                if (op == IR_CONVERT) {
                    if (all_dtypes[v] == t) continue;
                    n.dtype = all_dtypes[v];
                }
                if (op == IR_BITCAST && !(n.dtype = ew_bitcast_partner(t))) continue;
                if (op == IR_SELECT) in[0] = p.id, in[1] = a.id, in[2] = b.id;
                if (op != IR_SELECT && o->arity == 3) in[2] = a.id; /* random: (a, b, a) */
                kiln_value r = trace_emit(g, o->name, &n, in, (uint32_t)o->arity);
                CHECK_MSG(r.id != 0, "%s on %s: %s", o->name, kiln_dtype_name(t),
                          kiln_last_error(ctx));
                if (r.id && n_out < 128) outs[n_out++] = r;
            }
        }
        CHECK_MSG(n_ops > 0, "no elementwise op accepts %s", kiln_dtype_name(t));
        CHECK_STATUS(kiln_graph_finish(g, n_out, outs), KILN_STATUS_OK);
        kiln_array *args[3] = {edge_array(ctx, t, 0), edge_array(ctx, t, 1),
                               edge_array(ctx, KILN_DTYPE_BOOL, 0)};
        CHECK_MSG(cmp_graph(ctx, g, 3, args, NULL, 2e-5, NULL), "%s: compiled != reference", name);
        kiln_compile_options unfused = {.disable_fusion = true};
        CHECK_MSG(cmp_graph(ctx, g, 3, args, &unfused, 2e-5, NULL),
                  "%s unfused: compiled != reference", name);
        /* passes off: every node reaches codegen as traced (stop_gradient included) */
        kiln_compile_options raw = {.disable_passes = true};
        CHECK_MSG(cmp_graph(ctx, g, 3, args, &raw, 2e-5, NULL),
                  "%s without passes: compiled != "
                  "reference",
                  name);
        for (int i = 0; i < 3; i++) kiln_array_destroy(args[i]);
        kiln_graph_destroy(g);
    }
}

/* Every op has a VJP rule or is NONDIFF, never both. PARAMETER is the one exception: the
 * leaf gradients flow to, it needs no rule and must not be NONDIFF. */
static void test_vjp_rules(void) {
    for (int op = 0; op < IR_NUM_OPS; op++) {
        const ir_op_info *o = &ir_ops[op];
        bool rule = ad_rule_for((ir_op)op) != NULL, nondiff = (o->flags & IRF_NONDIFF) != 0;
        if (op == IR_PARAMETER) {
            CHECK_MSG(!rule && !nondiff, "parameter is the autodiff leaf: no rule, not NONDIFF");
            continue;
        }
        CHECK_MSG(rule != nondiff, "%s: %s", o->name,
                  rule ? "has a VJP rule but is marked NONDIFF"
                       : "has no VJP rule (src/autodiff/rules.c) and is not marked IRF_NONDIFF");
    }
}

/* Every op has a JVP rule (src/autodiff/jvp_rules.c) or is NONDIFF (a zero tangent),
 * never both; no op refuses forward mode. PARAMETER, the leaf, has neither. */
static void test_jvp_rules(void) {
    for (int op = 0; op < IR_NUM_OPS; op++) {
        const ir_op_info *o = &ir_ops[op];
        bool rule = ad_jvp_rule_for((ir_op)op) != NULL, nondiff = (o->flags & IRF_NONDIFF) != 0;
        if (op == IR_PARAMETER) {
            CHECK_MSG(!rule && !nondiff, "parameter is the forward-mode leaf: no JVP rule");
            continue;
        }
        CHECK_MSG(rule != nondiff, "%s: %s", o->name,
                  rule ? "has a JVP rule but is marked NONDIFF"
                       : "has no JVP rule (src/autodiff/jvp_rules.c) and is not marked "
                         "IRF_NONDIFF");
    }
}

/* reduce_scatter and all_gather over one replica (ranks = 1) are the identity in every
 * dtype they accept, compiled and interpreted alike; a leading axis that does not split
 * is refused naming both numbers. Over 2 and 4 replicas: test_comm. */
static void test_shard_collectives_one_replica(void) {
    kiln_context *ctx = compiled_ctx;
    for (int d = 0; d < N_DTYPES; d++) {
        kiln_dtype t = all_dtypes[d];
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, "shard_one", &g);
        int64_t dims[1] = {N_ELEMS};
        kiln_value a = kiln_parameter(g, "a", t, 1, dims);
        kiln_value outs[2];
        int n = 0;
        if (t != KILN_DTYPE_BOOL) outs[n++] = kiln_reduce_scatter(g, a, KILN_REDUCE_SUM, 1);
        outs[n++] = kiln_all_gather(g, a, 1);
        CHECK_STATUS(kiln_graph_finish(g, n, outs), KILN_STATUS_OK);
        kiln_array *args[1] = {edge_array(ctx, t, 0)};
        CHECK_MSG(cmp_graph(ctx, g, 1, args, NULL, 0, NULL), "shard collectives on %s",
                  kiln_dtype_name(t));
        kiln_array_destroy(args[0]);
        kiln_graph_destroy(g);
    }
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "shard_bad", &g);
    int64_t dims[2] = {6, 3};
    kiln_value a = kiln_parameter(g, "a", KILN_DTYPE_F32, 2, dims);
    kiln_value r = kiln_reduce_scatter(g, a, KILN_REDUCE_SUM, 4);
    CHECK(r.id == 0);
    CHECK_MSG(strstr(kiln_last_error(ctx), "(6)") && strstr(kiln_last_error(ctx), "into 4"), "%s",
              kiln_last_error(ctx));
    kiln_graph_destroy(g);
}

/* Every op has a batching rule (src/autodiff/vmap_rules.c) or a documented refusal, a
 * string kiln_vmap's error quotes; an entry with a rule says what kind it is (docs/ops.md). */
static void test_vmap_rules(void) {
    for (int op = 0; op < IR_NUM_OPS; op++) {
        const ad_vmap_entry *e = ad_vmap_entry_for((ir_op)op);
        CHECK_MSG(e->rule || (e->refusal && e->refusal[0]), "%s: %s", ir_ops[op].name,
                  "has no batching rule and no refusal (src/autodiff/vmap_rules.c)");
        CHECK_MSG(!e->rule || (e->kind && e->kind[0]), "%s: its batching rule has no kind",
                  ir_ops[op].name);
    }
}

int main(int argc, char **argv) {
    test_select_cases(argc, argv);
    char dir[] = "/tmp/kiln_test_registry_XXXXXX";
    kiln_context *ctx = compiled_ctx = test_private_context(dir);
    if (!ctx) return 1;
    RUN(test_rows);
    RUN(test_attr_table);
    RUN(test_vjp_rules);
    RUN(test_jvp_rules);
    RUN(test_vmap_rules);
    RUN(test_kernel_expressions);
    RUN(test_header);
    RUN(test_builder_macros);
    RUN_CC(test_compiled_against_reference);
    RUN_CC(test_shard_collectives_one_replica);
    kiln_context_destroy(ctx);
    test_remove_dir(dir);
    return test_summary("test_registry");
}
