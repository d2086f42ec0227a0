/* gen_oplib.c — writes the interpreter's op library (a build step; CMakeLists.txt): one C
 * function per elementwise op, operand dtype and result dtype (and per compare direction,
 * and per what a RANDOM draws), each a loop over n elements of the op's kernel expression
 * from the registry, after the C dialect's prelude — the same text and the same helpers a
 * compiled kernel is printed with (src/codegen/optext.h). src/codegen/kexec.c runs kernel
 * descriptions with these, so that a program's first calls need no compiler at all
 * (docs/performance.md, "Compile tiers").
 *
 * Usage: gen_oplib OUT.c */
#include "codegen/optext.h"
#include "codegen/prelude.h"

#include <stdlib.h>

static FILE *out;

/* The prelude's text, gathered (prelude_put) and written with its one exported object, the
 * module runtime table, made hidden: in libkiln it is nobody's, and a module's own
 * (default visibility, found by dlsym) must stay the one that module's kernels see. */
static char *prelude_text;
static size_t prelude_len;

static void prelude_put(void *u, const char *s, size_t n) {
    (void)u;
    char *t = realloc(prelude_text, prelude_len + n + 1);
    if (!t) {
        perror("gen_oplib");
        exit(1);
    }
    memcpy(t + prelude_len, s, n);
    prelude_len += n;
    t[prelude_len] = 0;
    prelude_text = t;
}

static void write_prelude(void) {
    static const char exported[] = "visibility(\"default\")";
    const char *p = prelude_text;
    for (const char *at; (at = strstr(p, exported)); p = at + sizeof exported - 1) {
        fwrite(p, 1, (size_t)(at - p), out);
        fputs("visibility(\"hidden\")", out);
    }
    fputs(p, out);
    free(prelude_text);
}

/* the dtypes a kernel computes in (16-bit values are computed in f32) */
static const kiln_dtype compute[] = {KILN_DTYPE_F32, KILN_DTYPE_F64, KILN_DTYPE_I32, KILN_DTYPE_I64,
                                     KILN_DTYPE_BOOL};
enum { N_COMPUTE = sizeof compute / sizeof *compute };

static int n_fns;

/* One function: out[i] = expression of x0[i], x1[i], x2[i]; the operands' C types ct[]. */
static void emit(ir_op op, kiln_dtype in_t, kiln_dtype t, kiln_dtype stored, int cmp, int rng,
                 int variant, const char *const *ct) {
    static const char *const x[3] = {"x0[i]", "x1[i]", "x2[i]"};
    char ex[512];
    if (!ot_op_expr(op, t, in_t, stored, cmp, rng, x, ex, sizeof ex)) return;
    int arity = ir_ops[op].arity;
    fprintf(out,
            "KX_FN void kx_f%d(int64_t n, void *o_, const void *a_, const void *b_, "
            "const void *c_) {\n",
            n_fns);
    fprintf(out, "    %s *restrict o = (%s *)o_;\n", ot_ctype(t), ot_ctype(t));
    static const char *const param[3] = {"a_", "b_", "c_"};
    for (int k = 0; k < 3; k++) {
        if (k < arity)
            fprintf(out, "    const %s *restrict x%d = (const %s *)%s;\n", ct[k], k, ct[k],
                    param[k]);
        else
            fprintf(out, "    (void)%s;\n", param[k]);
    }
    if ((op == IR_SIN || op == IR_COS) && in_t == KILN_DTYPE_F32) {
        /* as the C dialect's fast-trig loop (src/codegen/schedule.c, fast_trig_loop): the
         * vectorised reduction for arguments below 2^21, then the exact one over the whole
         * loop if any argument is larger (the same bits either way) */
        const char *f = op == IR_SIN ? "sin" : "cos";
        fprintf(out,
                "    uint32_t big = 0;\n"
                "    for (int64_t i = 0; i < n; i++) {\n"
                "        o[i] = kiln_%s_fast_f32(x0[i]);\n"
                "        big |= kiln_trig_big_f32(x0[i]);\n"
                "    }\n"
                "    if (big)\n"
                "        for (int64_t i = 0; i < n; i++) o[i] = %s;\n}\n",
                f, ex);
    } else {
        fprintf(out, "    for (int64_t i = 0; i < n; i++) o[i] = %s;\n}\n", ex);
    }
    fprintf(out, "/* %s %s -> %s, variant %d */\n", ir_ops[op].name, ot_suffix(in_t), ot_suffix(t),
            variant);
    fprintf(out, "#define KX_ROW%d {%d, %d, %d, %d, kx_f%d},\n", n_fns, (int)op, (int)in_t, (int)t,
            variant, n_fns);
    n_fns++;
}

static void emit_op(ir_op op) {
    const ir_op_info *info = &ir_ops[op];
    if (!info->kexpr[0] && !info->kexpr[1]) return;
    if (op == IR_RANDOM) {
        const char *ct[3] = {"int32_t", "int32_t", "int32_t"};
        for (int rng = 0; rng < IR_RNG_COUNT; rng++) {
            if (rng <= IR_RNG_WORD1) {
                emit(op, KILN_DTYPE_I32, KILN_DTYPE_I32, 0, 0, rng, rng * 16, ct);
                continue;
            }
            emit(op, KILN_DTYPE_I32, KILN_DTYPE_F32, 0, 0, rng, rng * 16, ct);
            emit(op, KILN_DTYPE_I32, KILN_DTYPE_F64, 0, 0, rng, rng * 16, ct);
            emit(op, KILN_DTYPE_I32, KILN_DTYPE_F32, KILN_DTYPE_BF16, 0, rng,
                 rng * 16 + KILN_DTYPE_BF16, ct);
            emit(op, KILN_DTYPE_I32, KILN_DTYPE_F32, KILN_DTYPE_F16, 0, rng,
                 rng * 16 + KILN_DTYPE_F16, ct);
        }
        return;
    }
    for (int i = 0; i < N_COMPUTE; i++) {
        kiln_dtype in_t = compute[i];
        if (!ir_dtype_accepts(info->types, in_t) || !info->kexpr[ir_dtype_is_float(in_t) ? 0 : 1])
            continue;
        const char *v = ot_ctype(in_t);
        if (op == IR_CONVERT) {
            const char *ct[3] = {v, v, v};
            for (int j = 0; j < N_COMPUTE; j++) emit(op, in_t, compute[j], 0, 0, 0, 0, ct);
        } else if (op == IR_BITCAST) { /* f32 <-> i32, f64 <-> i64 */
            const char *ct[3] = {v, v, v};
            kiln_dtype to = in_t == KILN_DTYPE_F32   ? KILN_DTYPE_I32
                            : in_t == KILN_DTYPE_I32 ? KILN_DTYPE_F32
                            : in_t == KILN_DTYPE_F64 ? KILN_DTYPE_I64
                            : in_t == KILN_DTYPE_I64 ? KILN_DTYPE_F64
                                                     : KILN_DTYPE_INVALID;
            if (to) emit(op, in_t, to, 0, 0, 0, 0, ct);
        } else if (op == IR_COMPARE) {
            const char *ct[3] = {v, v, v};
            for (int c = 0; c < 6; c++) emit(op, in_t, KILN_DTYPE_BOOL, 0, c, 0, c, ct);
        } else if (op == IR_SELECT) {
            const char *ct[3] = {"uint8_t", v, v};
            emit(op, in_t, in_t, 0, 0, 0, 0, ct);
        } else {
            const char *ct[3] = {v, v, v};
            emit(op, in_t, in_t, 0, 0, 0, 0, ct);
        }
    }
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: gen_oplib OUT.c\n");
        return 2;
    }
    out = fopen(argv[1], "w");
    if (!out) {
        perror(argv[1]);
        return 1;
    }
    fputs("/* The interpreter's op library (src/codegen/kexec.c), written by tools/gen_oplib.c "
          "from the op\n * registry and the C dialect's prelude: do not edit. */\n"
          "/* the prelude's runtime table, renamed and hidden (below): a module's own must stay "
          "the one\n * its kernels see */\n#define kiln_module_runtime kx_oplib_module_runtime\n",
          out);
    const char *const prelude[] = {
        cgen_prelude_c_head, cgen_prelude_ops,      cgen_prelude_math_f32,
        cgen_prelude_c_math, cgen_prelude_math_f64, cgen_prelude_convert,
        cgen_prelude_half,   cgen_prelude_random,   NULL};
    for (const char *const *p = prelude; *p; p++) ot_prelude(*p, prelude_put, NULL);
    write_prelude();
    /* each loop three times, for AVX-512, AVX2 and the baseline, chosen at load (as
     * src/backend/cpu/clones.h does for the library's own hot loops); flattened, so that
     * every prelude helper it calls is compiled into it for its vector unit: a helper gcc
     * left out of line (kiln_exp_f32 inside kiln_erf_f32, too big to inline) was built for
     * the baseline alone, without FMA, and tier 1's erf differed from the compiled
     * kernel's in the last bit (an outside check) */
    fputs(
        "\n#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && "
        "!defined(__SANITIZE_THREAD__)\n"
        "#define KX_FN __attribute__((target_clones(\"arch=x86-64-v4\", \"arch=x86-64-v3\", "
        "\"default\"), flatten)) static\n#define KX_CLONED 1\n#else\n#define KX_FN static\n"
        "#define KX_CLONED 0\n#endif\n"
        "/* whether the loops are built for the machine's vector unit (its FMA) */\n"
        "__attribute__((visibility(\"hidden\"))) int kx_oplib_cloned(void) { return KX_CLONED; }\n"
        "typedef void (*kx_fn)(int64_t, void *, const void *, const void *, const void *);\n",
        out);
    for (int op = 0; op < IR_NUM_OPS; op++) emit_op((ir_op)op);
    /* the 16-bit loads, stores and roundings, as a kernel spells them */
    const char *halves[2] = {"bf16", "f16"};
    for (int h = 0; h < 2; h++) {
        fprintf(out,
                "KX_FN void kx_ld_%s(int64_t n, void *o_, const void *x_) {\n"
                "    float *restrict o = (float *)o_;\n"
                "    const uint16_t *restrict x = (const uint16_t *)x_;\n"
                "    for (int64_t i = 0; i < n; i++) o[i] = kiln_ld_%s(x[i]);\n}\n",
                halves[h], halves[h]);
        fprintf(out,
                "KX_FN void kx_st_%s(int64_t n, void *o_, const void *x_) {\n"
                "    uint16_t *restrict o = (uint16_t *)o_;\n"
                "    const float *restrict x = (const float *)x_;\n"
                "    for (int64_t i = 0; i < n; i++) o[i] = kiln_st_%s(x[i]);\n}\n",
                halves[h], halves[h]);
        fprintf(out,
                "KX_FN void kx_rnd_%s(int64_t n, void *o_, const void *x_) {\n"
                "    float *o = (float *)o_;\n    (void)x_;\n"
                "    for (int64_t i = 0; i < n; i++) o[i] = kiln_rnd_%s(o[i]);\n}\n",
                halves[h], halves[h]);
    }
    fputs("static const struct {\n    int op, in_t, t, variant;\n    kx_fn fn;\n} kx_rows[] = {\n",
          out);
    for (int i = 0; i < n_fns; i++) fprintf(out, "    KX_ROW%d\n", i);
    fputs("};\n\n"
          "__attribute__((visibility(\"hidden\"))) kx_fn kx_oplib_find(int op, int in_t, int t, "
          "int variant) {\n"
          "    for (unsigned i = 0; i < sizeof kx_rows / sizeof *kx_rows; i++)\n"
          "        if (kx_rows[i].op == op && kx_rows[i].in_t == in_t && kx_rows[i].t == t &&\n"
          "            kx_rows[i].variant == variant)\n"
          "            return kx_rows[i].fn;\n"
          "    return 0;\n}\n",
          out);
    fprintf(out,
            "typedef void (*kx_half_fn)(int64_t, void *, const void *);\n"
            "__attribute__((visibility(\"hidden\"))) kx_half_fn kx_oplib_half(int what, int f16) "
            "{\n"
            "    static const kx_half_fn fns[3][2] = {{kx_ld_bf16, kx_ld_f16},\n"
            "                                         {kx_st_bf16, kx_st_f16},\n"
            "                                         {kx_rnd_bf16, kx_rnd_f16}};\n"
            "    return fns[what][f16 != 0];\n}\n");
    if (fclose(out)) {
        perror(argv[1]);
        return 1;
    }
    return 0;
}
