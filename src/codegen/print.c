/* print.c — the printer: kernel descriptions (kdesc.h) -> source in one of two dialects,
 * C for the CPU backend and CUDA C for the GPU backend (compiled by NVRTC).
 *
 * One translation unit holds every LOOP kernel of a program: the prelude of helpers (the
 * files of prelude/, embedded at build time: prelude.h), then per kernel a comment naming
 * the IR nodes it computes and its functions (see cgen.h). The description decides what is
 * computed and its schedule (kd_kernel.sched, schedule.c) how the dialect's target splits
 * the work; the printer only decides how it is spelled. This file holds what both dialects
 * spell alike, and the renderers (print_c.c, print_cuda.c) what differs (printer.h):
 *
 *  - per-op syntax lives in c_op_expr alone (with c_literal for constants);
 *  - numerics follow the reference interpreter: integer arithmetic wraps (through unsigned
 *    types), integer x/0 is -1 and INT_MIN/-1 is INT_MIN, float->int conversion saturates
 *    with NaN -> 0, max/min propagate NaN, float sums and products accumulate in double
 *    (f32 sums in the C dialect: f32 blocks added in double, kd_reduce.blocked), and a
 *    product is rounded where its op computes it, never fused into a reader's sum
 *    (KILN_ROUNDED in the C dialect: a value's bits do not depend on the kernel it is
 *    computed in);
 *  - speed: f32 exp, tanh, logistic, log, log1p and erf are inline polynomials (kiln_exp_f32,
 *    ..., prelude/math_f32.h) so loops that call them vectorise.
 *
 * Invariant: the text depends on the description, its schedule and the dialect alone
 * (never on the machine or the thread count), so it can key the kernel caches. */
#include "optext.h"
#include "prelude.h"
#include "printer.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

_Static_assert(KN_CUDA_PART_BYTES == KD_PART_BYTES, "one partial result's slot, both dialects");

const char *cgen_ctype(kiln_dtype t) {
    return ot_ctype(t);
}

/* ------------------------------------------------------ per-op syntax ---- */

/* A scalar constant, exact (floats in hex). */
static void c_literal(kiln_dtype t, int64_t i, double f, char *out, size_t m) {
    const char *ct = cgen_ctype(t);
    switch (t) {
    case KILN_DTYPE_I32: snprintf(out, m, "INT32_C(%d)", (int32_t)i); return;
    case KILN_DTYPE_I64:
        if (i == INT64_MIN)
            snprintf(out, m, "INT64_MIN");
        else
            snprintf(out, m, "INT64_C(%lld)", (long long)i);
        return;
    case KILN_DTYPE_BOOL: snprintf(out, m, "((uint8_t)%u)", (unsigned)i); return;
    default: break;
    }
    if (isnan(f))
        snprintf(out, m, "((%s)NAN)", ct);
    else if (isinf(f))
        snprintf(out, m, "(%s(%s)INFINITY)", f < 0 ? "-" : "", ct);
    else
        snprintf(out, m, "((%s)%a)", ct, f);
}

const char *pr_dtype_suffix(kiln_dtype t) {
    return ot_suffix(t);
}

/* The C expression of elementwise op `op` (optext.h, ot_op_expr) with the node's
 * attributes a. */
static bool c_op_expr(ir_op op, kiln_dtype t, kiln_dtype in_t, kiln_dtype stored, const ir_attrs *a,
                      const char *const *x, char *ex, size_t m) {
    int cmp = op == IR_COMPARE ? (int)a->cmp : 0, rng = op == IR_RANDOM ? a->rng : 0;
    return ot_op_expr(op, t, in_t, stored, cmp, rng, x, ex, m);
}

/* ------------------------------------------------------------ names ---- */

void pr_var_name(const kd_kernel *kd, uint32_t v, char *out) {
    const kd_var *x = &kd->vars[v];
    switch (x->kind) {
    case KD_VAR_ROW: snprintf(out, PR_NAME_LEN, "row"); break;
    case KD_VAR_AXIS: snprintf(out, PR_NAME_LEN, "i%d", x->axis); break;
    case KD_VAR_REDUCE: snprintf(out, PR_NAME_LEN, "r%u_%d", x->node, x->axis); break;
    }
}

/* The expression of value s: a literal, or the variable that holds it. */
void pr_val_name(const kd_kernel *kd, uint32_t s, char *out) {
    const kd_stmt *st = &kd->stmts[s];
    if (st->kind == KS_LIT)
        c_literal(st->dtype, st->lit.i, st->lit.f, out, PR_NAME_LEN);
    else
        snprintf(out, PR_NAME_LEN, "v%u", s);
}

/* ---------------------------------------------------------- indices ---- */

/* A compound index (several terms, or a term and a constant) needs parentheses as the
 * operand of *, / or %; a single term does not, since those share one precedence level
 * and associate left: `i0 / 4 % 8 * 16` is ((i0 / 4) % 8) * 16. */
static bool ix_compound(const kd_kernel *kd, uint32_t ix) {
    const kd_index *x = &kd->ixs[ix];
    return x->n > 1 || (x->n == 1 && x->c != 0);
}

void pr_operand(const kd_kernel *kd, strbuf *sb, uint32_t ix) {
    bool par = ix_compound(kd, ix);
    if (par) sb_append(sb, "(");
    pr_ix(kd, sb, ix);
    if (par) sb_append(sb, ")");
}

static void print_atom(const kd_kernel *kd, strbuf *sb, uint32_t atom) {
    const kd_atom *a = &kd->atoms[atom];
    char name[PR_NAME_LEN];
    switch (a->kind) {
    case KD_ATOM_VAR:
        pr_var_name(kd, a->arg, name);
        sb_append(sb, name);
        break;
    case KD_ATOM_VAL: sb_printf(sb, "v%u", a->arg); break;
    case KD_ATOM_DIV:
    case KD_ATOM_MOD:
        if (kd->split && a->n == kd->split && kd_ix_is_last(kd, a->arg)) {
            pr_var_name(kd, kd->last_var, name); /* the element loop defines these */
            sb_printf(sb, "%s%c", name, a->kind == KD_ATOM_DIV ? 'q' : 'r');
            break;
        }
        if (kd->split && a->n % kd->split == 0 && kd_ix_is_last(kd, a->arg)) {
            /* by a multiple m * split of it (kd_sched_split): i / (m * k) is iq / m, and
             * i % (m * k) is iq % m * k + ir, the variable being >= 0 */
            long long m = (long long)(a->n / kd->split);
            pr_var_name(kd, kd->last_var, name);
            if (a->kind == KD_ATOM_DIV)
                sb_printf(sb, "%sq / %lld", name, m);
            else
                sb_printf(sb, "(%sq %% %lld * %lld + %sr)", name, m, (long long)kd->split, name);
            break;
        }
        pr_operand(kd, sb, a->arg);
        sb_printf(sb, " %s %lld", a->kind == KD_ATOM_DIV ? "/" : "%", (long long)a->n);
        break;
    }
}

/* c + sum coef * atom, as `i0 * 4096 + i1 - 3`. */
void pr_ix(const kd_kernel *kd, strbuf *sb, uint32_t ix) {
    const kd_index *x = &kd->ixs[ix];
    for (uint32_t i = 0; i < x->n; i++) {
        const kd_term *t = &kd->terms[x->first + i];
        int64_t c = t->coef;
        if (i)
            sb_append(sb, c < 0 ? " - " : " + ");
        else if (c < 0)
            sb_append(sb, "-");
        print_atom(kd, sb, t->atom);
        if (c != 1 && c != -1) sb_printf(sb, " * %lld", c < 0 ? -(long long)c : (long long)c);
    }
    if (!x->n)
        sb_printf(sb, "%lld", (long long)x->c);
    else if (x->c)
        sb_printf(sb, " %s %lld", x->c < 0 ? "-" : "+",
                  x->c < 0 ? -(long long)x->c : (long long)x->c);
}

/* ------------------------------------------------------- statements ---- */

void pr_indent(pr *p) {
    sb_printf(p->sb, "%*s", 4 * (p->depth + 1), "");
}

void pr_line(pr *p, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    pr_indent(p);
    sb_printf(p->sb, "%s\n", buf);
}

const char *pr_acc_ctype(const kd_stmt *acc) {
    if (acc->red.acc_type == KILN_DTYPE_F64) return "double";
    return acc->red.arith ? "uint64_t" : cgen_ctype(acc->dtype);
}

const char *pr_acc_init(const kd_stmt *s) {
    bool i32 = s->dtype == KILN_DTYPE_I32, fl = ir_dtype_is_float(s->dtype);
    return s->red.init == KD_INIT_ZERO  ? "0"
           : s->red.init == KD_INIT_ONE ? "1"
           : fl                         ? (s->red.init == KD_INIT_LOWEST ? "-INFINITY" : "INFINITY")
           : s->red.init == KD_INIT_LOWEST ? (i32 ? "INT32_MIN" : "INT64_MIN")
                                           : (i32 ? "INT32_MAX" : "INT64_MAX");
}

const char *pr_red_op(ir_op op) {
    return op == IR_REDUCE_SUM    ? "+"
           : op == IR_REDUCE_PROD ? "*"
           : op == IR_REDUCE_MAX  ? "max"
                                  : "min";
}

void pr_accum(pr *p, const kd_stmt *s) {
    const kd_stmt *acc = &p->kd->stmts[s->args[0]];
    char a[PR_ACC_LEN], nan[PR_ACC_LEN], x[PR_NAME_LEN];
    p->acc_name(p, s->args[0], false, a);
    p->acc_name(p, s->args[0], true, nan);
    pr_val_name(p->kd, s->args[1], x);
    if (acc->red.arith)
        pr_line(p, "%s %s= (%s)%s;", a, pr_red_op(acc->red.op), pr_acc_ctype(acc), x);
    else
        pr_line(p, "%s = %s %s %s ? %s : %s;", a, x, acc->red.op == IR_REDUCE_MAX ? ">" : "<", a, x,
                a);
    if (acc->red.nan_flag) pr_line(p, "%s |= %s != %s;", nan, x, x);
}

void pr_split_names(pr *p) {
    const kd_kernel *kd = p->kd;
    if (!kd->split) return;
    char v[PR_NAME_LEN];
    pr_var_name(kd, kd->last_var, v);
    pr_line(p, "const int64_t %sq = %s / %lld, %sr = %s %% %lld;", v, v, (long long)kd->split, v, v,
            (long long)kd->split);
}

void pr_guards(pr *p, const kd_stmt *s) {
    for (uint32_t i = 0; i < s->n_guards; i++) {
        const kd_guard *g = &p->kd->guards[s->guard + i];
        if (i) sb_append(p->sb, " && ");
        if (g->kind == KD_GUARD_DIVIDES) {
            pr_operand(p->kd, p->sb, g->ix);
            sb_printf(p->sb, " %% %lld == 0", (long long)g->n);
            continue;
        }
        pr_ix(p->kd, p->sb, g->ix);
        if (g->kind == KD_GUARD_GE0)
            sb_append(p->sb, " >= 0");
        else
            sb_printf(p->sb, " < %lld", (long long)g->n);
    }
}

void pr_combine_line(pr *p, const kd_stmt *acc, const char *a, const char *t) {
    if (acc->red.arith)
        pr_line(p, "%s %s= %s;", a, acc->red.op == IR_REDUCE_SUM ? "+" : "*", t);
    else
        pr_line(p, "%s = %s %s %s ? %s : %s;", a, t, acc->red.op == IR_REDUCE_MAX ? ">" : "<", a, t,
                a);
}

/* A product, kiln_exp_f64 (2^n applied by multiplying), a random float (bits scaled into
 * [0, 1)) and a reduce_prod's result may end in a multiplication, which gcc would fuse
 * into a sum reading it inline (prelude/c_head.h, KILN_ROUNDED). Every other op ends in
 * a sum, a quotient, a select or a call: nothing to fuse with. */
bool pr_product_valued(ir_op op, kiln_dtype t) {
    return ir_dtype_is_float(t) &&
           (op == IR_MUL || op == IR_EXP || op == IR_RANDOM || op == IR_REDUCE_PROD);
}

void pr_store(pr *p, const kd_stmt *s, const char *prefix) {
    char a[PR_NAME_LEN];
    pr_val_name(p->kd, s->args[0], a);
    pr_indent(p);
    sb_printf(p->sb, "%sout%u[", prefix, s->slot);
    pr_ix(p->kd, p->sb, s->ix);
    kiln_dtype t = p->kd->out_type[s->slot];
    if (ir_dtype_is_half(t))
        sb_printf(p->sb, "] = kiln_st_%s(%s);\n", pr_dtype_suffix(t), a);
    else
        sb_printf(p->sb, "] = %s;\n", a);
}

void pr_load_from(pr *p, kiln_dtype stored, const char *buf, uint32_t slot, uint32_t ix) {
    bool half = ir_dtype_is_half(stored);
    if (half) sb_printf(p->sb, "kiln_ld_%s(", pr_dtype_suffix(stored));
    sb_printf(p->sb, "%s%u[", buf, slot);
    pr_ix(p->kd, p->sb, ix);
    sb_append(p->sb, half ? "])" : "]");
}

kiln_dtype pr_made_round(const kd_kernel *kd, uint32_t id) {
    const kd_stmt *s = &kd->stmts[id];
    bool read = false;
    for (uint32_t t = id + 1; s->round && t < kd->n_stmts; t++) {
        const kd_stmt *r = &kd->stmts[t];
        for (uint32_t i = 0; i < r->n_args; i++) {
            if (r->args[i] != id) continue;
            if (r->kind != KS_STORE || kd->out_type[r->slot] != s->round) return s->round;
            read = true;
        }
    }
    return read ? KILN_DTYPE_INVALID : s->round;
}

/* `kiln_rnd_bf16(` where statement id rounds its f32 value to a 16-bit dtype; "" otherwise. */
static void round_open(pr *p, uint32_t id, char *buf, size_t n) {
    kiln_dtype r = pr_made_round(p->kd, id);
    if (r)
        snprintf(buf, n, "kiln_rnd_%s(", pr_dtype_suffix(r));
    else
        buf[0] = 0;
}

static void print_load(pr *p, uint32_t id) {
    const kd_kernel *kd = p->kd;
    const kd_stmt *s = &kd->stmts[id];
    const char *ct = cgen_ctype(s->dtype);
    pr_indent(p);
    if (s->kind == KS_LOAD) {
        sb_printf(p->sb, "const %s v%u = ", ct, id);
        pr_load_from(p, s->keep ? kd->out_type[s->slot] : kd->in_type[s->slot],
                     s->keep ? "out" : "in", s->slot, s->ix);
        sb_append(p->sb, ";\n");
        return;
    }
    /* a float iota of an axis shorter than 2^31 through int32: the same value, and only
     * AVX-512 converts int64 vectors (a loop over sin(iota) stayed scalar) */
    bool narrow = ir_dtype_is_float(s->dtype) && s->n > 0 && s->n <= INT32_MAX;
    char rnd[32];
    round_open(p, id, rnd, sizeof rnd);
    sb_printf(p->sb, "const %s v%u = %s(%s)%s", ct, id, rnd, ct, narrow ? "(int32_t)(" : "");
    pr_operand(kd, p->sb, s->ix);
    sb_printf(p->sb, "%s%s;\n", narrow ? ")" : "", rnd[0] ? ")" : "");
}

static void print_result(pr *p, uint32_t id) {
    const kd_stmt *s = &p->kd->stmts[id], *acc = &p->kd->stmts[s->args[0]];
    const char *ct = cgen_ctype(s->dtype);
    char v[PR_ACC_LEN], nan[PR_ACC_LEN];
    p->acc_name(p, s->args[0], false, v);
    p->acc_name(p, s->args[0], true, nan);
    if (pr_made_round(p->kd, id)) /* a 16-bit sum or product, rounded from its accumulator */
        pr_line(p, "const %s v%u = kiln_rnd_%s((%s)%s);", ct, id, pr_dtype_suffix(s->round), ct, v);
    else if (acc->red.nan_flag && !acc->column)
        pr_line(p, "const %s v%u = %s ? (%s)NAN : %s;", ct, id, nan, ct, v);
    else if (acc->red.nan_flag)
        pr_line(p, "const %s v%u = %s ? (%s)NAN : (%s)%s;", ct, id, nan, ct, ct, v);
    else if (p->rounded && pr_product_valued(acc->red.op, s->dtype))
        pr_line(p, "const %s v%u = KILN_ROUNDED_%s((%s)%s);", ct, id, pr_dtype_suffix(s->dtype), ct,
                v);
    else
        pr_line(p, "const %s v%u = (%s)%s;", ct, id, ct, v);
}

void pr_stmt(pr *p, uint32_t id) {
    const kd_kernel *kd = p->kd;
    const kd_stmt *s = &kd->stmts[id];
    const char *ct = cgen_ctype(s->dtype);
    char a[3][PR_NAME_LEN], ex[512];
    for (uint32_t i = 0; i < s->n_args && s->kind != KS_ACCUM && s->kind != KS_RESULT; i++)
        pr_val_name(kd, s->args[i], a[i]);
    switch (s->kind) {
    case KS_LIT: break; /* printed where it is used */
    case KS_LOAD:
    case KS_IOTA: print_load(p, id); break;
    case KS_OP: {
        const char *x[3] = {a[0], a[1], a[2]};
        if (!c_op_expr(s->op, s->dtype, s->in_dtype, s->round, s->attrs, x, ex, sizeof ex)) {
            p->hole = (int)s->op + 1;
            snprintf(ex, sizeof ex, "0");
        }
        if (pr_made_round(kd, id))
            pr_line(p, "const %s v%u = kiln_rnd_%s%s(%s);", ct, id, pr_dtype_suffix(s->round),
                    s->round_arith ? "_arith" : "", ex);
        else if (p->rounded && pr_product_valued(s->op, s->dtype))
            pr_line(p, "const %s v%u = KILN_ROUNDED_%s(%s);", ct, id, pr_dtype_suffix(s->dtype),
                    ex);
        else
            pr_line(p, "const %s v%u = %s;", ct, id, ex);
        break;
    }
    case KS_CLAMP:
        if (s->wrap) { /* a negative start counts from the end first */
            pr_line(p, "const int64_t w%u = (int64_t)%s < 0 ? (int64_t)%s + %lld : (int64_t)%s;",
                    id, a[0], a[0], (long long)s->wrap, a[0]);
            pr_line(p, "const int64_t v%u = w%u < 0 ? 0 : w%u > %lld ? %lld : w%u;", id, id, id,
                    (long long)s->n, (long long)s->n, id);
            break;
        }
        pr_line(p, "const int64_t v%u = %s < 0 ? 0 : %s > %lld ? %lld : (int64_t)%s;", id, a[0],
                a[0], (long long)s->n, (long long)s->n, a[0]);
        break;
    case KS_DECL:
        if (s->n_args)
            pr_line(p, "%s v%u = %s;", ct, id, a[0]);
        else
            pr_line(p, "%s v%u;", ct, id);
        break;
    case KS_ASSIGN: pr_line(p, "%s = %s;", a[0], a[1]); break;
    case KS_IF:
    case KS_ELSE_IF:
    case KS_ELSE:
        if (s->kind != KS_IF) p->depth--;
        pr_indent(p);
        sb_append(p->sb, s->kind == KS_IF        ? "if ("
                         : s->kind == KS_ELSE_IF ? "} else if ("
                                                 : "} else");
        if (s->kind != KS_ELSE) {
            pr_guards(p, s);
            sb_append(p->sb, ")");
        }
        sb_append(p->sb, " {\n");
        p->depth++;
        break;
    case KS_END:
        p->depth--;
        pr_line(p, "}");
        break;
    case KS_ACCUM: pr_accum(p, s); break;
    case KS_RESULT: print_result(p, id); break;
    case KS_STORE: pr_store(p, s, ""); break;
    case KS_LOOP:
    case KS_ACC: break; /* the renderer's */
    }
}

/* ------------------------------------------------------------ kernel ---- */

#define PROV_MAX 480 /* characters of node list in a kernel's comment */

/* The file's last path component, with anything unprintable replaced: it goes into a
 * comment, and a basename cannot contain the slash that would close it. */
static void print_file(strbuf *sb, const char *file) {
    const char *b = strrchr(file, '/');
    char buf[128];
    size_t n = 0;
    for (const char *c = b ? b + 1 : file; *c && n + 1 < sizeof buf; c++)
        buf[n++] = *c >= 0x20 && *c < 0x7f ? *c : '?';
    buf[n] = 0;
    sb_append(sb, buf);
}

/* `/ * k3: %12 exp, %13 add (model.c:41), %14 reduce_sum (model.c:42) -> writes %14 * /`:
 * the nodes computed, grouped by user line, bounded in length for huge kernels. */
static void print_provenance(const kd_kernel *kd, strbuf *sb) {
    size_t start = sb->len;
    sb_printf(sb, "\n/* k%u:", kd->index);
    uint32_t i = 0;
    for (; i < kd->n_prov && sb->len - start < PROV_MAX; i++) {
        const kd_prov *v = &kd->prov[i], *next = i + 1 < kd->n_prov ? &kd->prov[i + 1] : NULL;
        sb_printf(sb, "%s %%%u %s", i ? "," : "", v->node, v->op);
        bool same =
            next && next->line == v->line &&
            (next->file == v->file || (next->file && v->file && !strcmp(next->file, v->file)));
        if (v->file && !same) {
            sb_append(sb, " (");
            print_file(sb, v->file);
            sb_printf(sb, ":%d)", v->line);
        }
    }
    if (i < kd->n_prov) sb_printf(sb, ", ... %u more", kd->n_prov - i);
    sb_append(sb, " -> writes");
    for (uint32_t o = 0; o < kd->n_outputs; o++)
        sb_printf(sb, "%s %%%u", o ? "," : "", kd->out_node[o]);
    sb_append(sb, " */\n");
}

void pr_buffers(pr *p, bool params, const char *restrict_kw) {
    const kd_kernel *kd = p->kd;
    uint32_t n = kd->n_inputs + kd->n_outputs;
    for (uint32_t i = 0; i < n; i++) {
        bool in = i < kd->n_inputs;
        uint32_t k = in ? i : i - kd->n_inputs;
        const char *t = cgen_ctype(in ? kd->in_type[k] : kd->out_type[k]);
        bool aliased = false;
        for (uint32_t o = 0; in && kd->alias && o < kd->n_outputs; o++)
            aliased |= kd->alias[o] == k + 1;
        if (!in) aliased = kd->alias && kd->alias[k];
        const char *q = aliased ? "" : restrict_kw;
        if (params)
            sb_printf(p->sb, "%s%s *%s%s%u, ", in ? "const " : "", t, q, in ? "in" : "out", k);
        else
            pr_line(p, "%s%s *%s%s%u = (%s%s *)b[%u];", in ? "const " : "", t, q, in ? "in" : "out",
                    k, in ? "const " : "", t, i);
    }
}

void pr_row_axes(pr *p) {
    const kd_kernel *kd = p->kd;
    for (int a = 0; a + 1 < kd->rank; a++) {
        if (kd->dims[a] == 1) continue; /* its index is the constant 0 */
        pr_indent(p);
        sb_printf(p->sb, "const int64_t i%d = ", a);
        pr_ix(kd, p->sb, kd->axis_def[a]);
        sb_append(p->sb, ";\n");
    }
}

void pr_item(pr *p, const char *it, bool tiled) {
    const kd_kernel *kd = p->kd;
    if (p->chunks > 1 && tiled) {
        pr_line(p, "const int64_t row = %s %% %lld, jb = (%s / %lld) * %lld;", it,
                (long long)kd->rows, it, (long long)kd->rows, (long long)p->chunk);
        pr_line(p, "const int64_t je = jb + %lld < %lld ? jb + %lld : %lld;", (long long)p->chunk,
                (long long)kd->inner, (long long)p->chunk, (long long)kd->inner);
    } else if (p->chunks > 1) {
        pr_line(p, "const int64_t row = %s / %lld, jb = (%s %% %lld) * %lld;", it,
                (long long)p->chunks, it, (long long)p->chunks, (long long)p->chunk);
        pr_line(p, "const int64_t je = jb + %lld < %lld ? jb + %lld : %lld;", (long long)p->chunk,
                (long long)kd->inner, (long long)p->chunk, (long long)kd->inner);
    } else
        pr_line(p, "const int64_t row = %s, jb = 0, je = %lld;", it, (long long)kd->inner);
    pr_row_axes(p);
}

/* Slot ((k * parts + part) * rows * inner + row * inner + v) of KD_PART_BYTES: the value,
 * then its NaN flag. */
void pr_part_slot(pr *p, int k, const char *part, char *out, size_t n) {
    const kd_kernel *kd = p->kd;
    char v[PR_NAME_LEN];
    pr_var_name(kd, kd->last_var, v);
    long long elems = (long long)(kd->rows * kd->inner);
    snprintf(out, n, "kiln_part + ((%lld + %s) * %lld + row * %lld + %s) * %d",
             (long long)k * (long long)kd->sched.parts, part, elems, (long long)kd->inner, v,
             KD_PART_BYTES);
}

/* ----------------------------------------------------------- program ---- */

bool cgen_dialect_named(const char *language, cgen_dialect *dialect) {
    if (!language || !strcmp(language, "c"))
        *dialect = CGEN_DIALECT_C;
    else if (!strcmp(language, "cuda"))
        *dialect = CGEN_DIALECT_CUDA;
    else
        return false;
    return true;
}

static void sb_put(void *u, const char *text, size_t n) {
    sb_printf(u, "%.*s", (int)n, text);
}

/* Appends a prelude's text with its `@NAME@` marks filled in (optext.h, ot_prelude). */
static void prelude_append(strbuf *sb, const char *text) {
    ot_prelude(text, sb_put, sb);
}

kiln_status cgen_program_kernels(const kiln_graph *g, const fusion_plan *p, cgen_dialect dialect,
                                 const bool *only, strbuf *sb, cgen_kernel *info) {
    const pr_dialect *d = dialect == CGEN_DIALECT_CUDA ? &pr_cuda_dialect : &pr_c_dialect;
    for (const char *const *t = d->prelude; *t; t++) prelude_append(sb, *t);
    for (uint32_t i = 0; i < p->n_kernels; i++) {
        info[i] = (cgen_kernel){0, 1, 0};
        if (p->kernels[i].kind != FK_LOOP || (only && !only[i])) continue;
        kd_kernel kd;
        kiln_status s = kd_lower(g, p, i, &kd);
        int hole = 0;
        if (!s) {
            kd_schedule(&kd, dialect);
            print_provenance(&kd, sb);
            hole = d->kernel(&kd, sb, &info[i]);
        }
        if (!s && hole < 0) s = ctx_oom(g->ctx, "codegen: kernel", kd.n_stmts + 1);
        if (!s && hole > 0)
            s = ctx_error(g->ctx, KILN_STATUS_INTERNAL,
                          "codegen: %s has no kernel expression for its operands (kernel %u)",
                          ir_ops[hole - 1].name, i);
        kd_free(&kd);
        if (s) return s;
    }
    if (sb->oom) return ctx_oom(g->ctx, "codegen: kernel source", sb->len);
    return KILN_STATUS_OK;
}

kiln_status cgen_program_dialect(const kiln_graph *g, const fusion_plan *p, cgen_dialect dialect,
                                 strbuf *sb, cgen_kernel *info) {
    return cgen_program_kernels(g, p, dialect, NULL, sb, info);
}

kiln_status cgen_program(const kiln_graph *g, const fusion_plan *p, strbuf *sb, cgen_kernel *info) {
    return cgen_program_dialect(g, p, CGEN_DIALECT_C, sb, info);
}
