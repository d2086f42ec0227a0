/* optext.h — the spelling the C printer and the interpreter's op library share: the C type
 * and suffix of a dtype, an op's kernel expression from the registry (src/ir/ir.h, kexpr)
 * expanded for its operands, and a prelude's text with its `@NAME@` marks filled in.
 *
 * Header-only, on purpose: print.c spells kernels with it at run time, and the build-time
 * generator tools/gen_oplib.c, which links no more of kiln than the registry
 * (src/ir/types.c) and the embedded preludes, spells the interpreter's precompiled op
 * library (src/codegen/kexec.c) with the same functions, so an op means the same C in a
 * compiled kernel and in the library. */
#ifndef KILN_CODEGEN_OPTEXT_H
#define KILN_CODEGEN_OPTEXT_H

#include "backend/c_runtime.h"
#include "ir/ir.h"

#include <stdio.h>
#include <string.h>

static inline const char *ot_ctype(kiln_dtype t) {
    switch (t) {
    case KILN_DTYPE_F32: return "float";
    case KILN_DTYPE_F64: return "double";
    case KILN_DTYPE_I32: return "int32_t";
    case KILN_DTYPE_I64: return "int64_t";
    case KILN_DTYPE_BF16:
    case KILN_DTYPE_F16: return "uint16_t"; /* a buffer's: the values are computed in f32 */
    default: return "uint8_t";
    }
}

static inline const char *ot_utype(kiln_dtype t) {
    return t == KILN_DTYPE_I32 ? "uint32_t" : "uint64_t";
}

static inline const char *ot_suffix(kiln_dtype t) {
    switch (t) {
    case KILN_DTYPE_F32: return "f32";
    case KILN_DTYPE_F64: return "f64";
    case KILN_DTYPE_I32: return "i32";
    case KILN_DTYPE_I64: return "i64";
    case KILN_DTYPE_BF16: return "bf16";
    case KILN_DTYPE_F16: return "f16";
    default: return "bool";
    }
}

/* The C expression of elementwise op `op` (result dtype t, data operand dtype in_t, the
 * 16-bit dtype the node stores or KILN_DTYPE_INVALID (kd_stmt.round), the compare
 * direction cmp and what a RANDOM draws, rng) applied to the operand expressions x[]: the
 * op's kernel expression from the registry expanded with C's type names. False when the op
 * has none for that operand class (a registry hole, which tests/test_registry.c keeps from
 * happening). */
static inline bool ot_op_expr(ir_op op, kiln_dtype t, kiln_dtype in_t, kiln_dtype stored, int cmp,
                              int rng, const char *const *x, char *ex, size_t m) {
    static const char *const cmps[] = {"==", "!=", "<", "<=", ">", ">="};
    const char *tmpl = ir_ops[op].kexpr[ir_dtype_is_float(in_t) ? 0 : 1];
    if (!tmpl) return false;
    size_t k = 0;
    for (; *tmpl && k + 1 < m; tmpl++) {
        if (*tmpl != '$' || !tmpl[1]) {
            ex[k++] = *tmpl;
            continue;
        }
        const char *r = "";
        char c = *++tmpl;
        if (c >= '0' && c <= '2')
            r = x[c - '0'] ? x[c - '0'] : "";
        else if (c == 'T')
            r = ot_ctype(t);
        else if (c == 'U')
            r = ot_utype(in_t);
        else if (c == 'S')
            r = ot_suffix(in_t);
        else if (c == 'R')
            r = ot_suffix(t);
        else if (c == 'H')
            r = ot_suffix(stored ? stored : t);
        else if (c == 'F')
            r = in_t == KILN_DTYPE_F32 ? "f" : "";
        else if (c == 'C')
            r = cmps[cmp];
        else if (c == 'D' && ir_rng_name(rng))
            r = ir_rng_name(rng);
        k += (size_t)snprintf(ex + k, m - k, "%s", r);
    }
    ex[k < m ? k : m - 1] = 0;
    return true;
}

/* Hands a prelude's text to put(u, text, n) piece by piece, its `@NAME@` marks replaced by
 * c_runtime.h's text: the runtime table's fields, and the Payne-Hanek steps
 * kiln_reduce_pio2_f32 inlines. */
static inline void ot_prelude(const char *text, void (*put)(void *u, const char *s, size_t n),
                              void *u) {
    static const struct {
        const char *name, *text;
    } marks[] = {
        {"KN_C_RUNTIME_FIELDS", KN_C_RUNTIME_STR(KN_C_RUNTIME_FIELDS)},
        {"KN_C_PIO2_BIG", KN_C_RUNTIME_STR(KN_C_PIO2_BIG(a, v.r, v.quadrant))},
    };
    for (const char *at; (at = strchr(text, '@'));) {
        const char *end = strchr(at + 1, '@');
        size_t n = end ? (size_t)(end - at - 1) : 0;
        size_t m = 0;
        while (m < sizeof marks / sizeof *marks &&
               (strlen(marks[m].name) != n || strncmp(marks[m].name, at + 1, n)))
            m++;
        put(u, text, (size_t)(at - text));
        if (m == sizeof marks / sizeof *marks) { /* not a mark: the text as it is */
            put(u, "@", 1);
            text = at + 1;
            continue;
        }
        put(u, marks[m].text, strlen(marks[m].text));
        text = end + 1;
    }
    put(u, text, strlen(text));
}

#endif
