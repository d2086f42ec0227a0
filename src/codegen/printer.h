/* printer.h — the shared printer (print.c) and the two renderers it drives (print_c.c for
 * C, print_cuda.c for CUDA C). The printer walks a kernel description (kdesc.h) whose
 * schedule for the dialect is already decided (kd_kernel.sched, schedule.c) and spells it:
 * names, index expressions, the statements every dialect writes alike, the buffers, the
 * item's indices and the program around the kernels. A renderer spells what differs: its
 * loops and reductions, the kernel's frame, the split reductions' part kernels. Neither
 * decides anything about how the work is split.
 *
 * A renderer keeps its own state in a struct whose first member is a pr, and prints each
 * statement through pr.stmt (its own forms, and pr_stmt for the shared ones). */
#ifndef KILN_CODEGEN_PRINTER_H
#define KILN_CODEGEN_PRINTER_H

#include "kdesc.h"

#include <stdarg.h>

#define PR_NAME_LEN 64 /* a value's name or literal */
#define PR_ACC_LEN  (2 * PR_NAME_LEN)

typedef struct pr pr;
struct pr {
    const kd_kernel *kd;
    strbuf *sb;
    /* prints statement id: the renderer's forms, the shared ones by pr_stmt */
    void (*stmt)(pr *p, uint32_t id);
    /* the name of ACC statement a's accumulator (nan: its NaN flag) at this point */
    void (*acc_name)(const pr *p, uint32_t a, bool nan, char *out);
    bool rounded; /* products rounded where their node computes them (KILN_ROUNDED) */
    int depth;
    int hole; /* an op with no kernel expression for its operands (+1), or 0 */
    /* a split reduction (kd->sched.parts): 1 while printing kiln_k<i>_part, 2 while
     * printing kiln_k<i> */
    int part_mode;
    int64_t chunk, chunks; /* the last axis' split (kd->sched) */
};

/* A dialect: its prelude and how it prints one kernel (after the kernel's comment). */
typedef struct pr_dialect {
    const char *const *prelude; /* the prelude texts in order (prelude.h), NULL-terminated */
    /* Prints kd's functions and fills *info (the items, grain and parts in this dialect).
     * Returns the op (+1) that had no kernel expression, 0, or -1 on host OOM. */
    int (*kernel)(const kd_kernel *kd, strbuf *sb, cgen_kernel *info);
} pr_dialect;

extern const pr_dialect pr_c_dialect, pr_cuda_dialect;

/* ---- print.c ---- */

const char *pr_dtype_suffix(kiln_dtype t);
void pr_var_name(const kd_kernel *kd, uint32_t v, char *out);
void pr_val_name(const kd_kernel *kd, uint32_t s, char *out);
void pr_ix(const kd_kernel *kd, strbuf *sb, uint32_t ix);
/* ix, in parentheses when it is compound (as an operand of *, / or %) */
void pr_operand(const kd_kernel *kd, strbuf *sb, uint32_t ix);
void pr_indent(pr *p);
void pr_line(pr *p, const char *fmt, ...) KN_PRINTF(2, 3);
/* The C type of accumulator acc, its initial value, and `+`, `*`, `max` or `min`. */
const char *pr_acc_ctype(const kd_stmt *acc);
const char *pr_acc_init(const kd_stmt *acc);
const char *pr_red_op(ir_op op);
/* sum, product, max or min of accumulator a and another's t into a */
void pr_combine_line(pr *p, const kd_stmt *acc, const char *a, const char *t);
/* Whether a float value of op may end in a multiplication (KILN_ROUNDED). */
bool pr_product_valued(ir_op op, kiln_dtype t);
/* The 16-bit dtype statement id rounds its value to where it makes it (kd_stmt.round), or
 * none when only stores of that dtype read the value: a store rounds to nearest even
 * itself (kiln_st_<t>, kiln_st32_<t>), and a value rounded twice has the bits of one
 * rounding, so the kernel's results are the same (a converted or computed 16-bit output,
 * the last op of most 16-bit kernels, then costs one rounding, not two). */
kiln_dtype pr_made_round(const kd_kernel *kd, uint32_t id);
/* The shared forms of statement id (a LOOP or an ACC is the renderer's). */
void pr_stmt(pr *p, uint32_t id);
/* ACCUM s into its accumulator as it is (no f32 block). */
void pr_accum(pr *p, const kd_stmt *s);
/* The condition of IF or ELSE_IF s: its guards joined by &&. */
void pr_guards(pr *p, const kd_stmt *s);
/* STORE s: `prefix` (a guard, or "") then the store. */
void pr_store(pr *p, const kd_stmt *s, const char *prefix);
/* `in0[ix]` (buf "in" or "out", slot), widened to f32 when its dtype `stored` is 16-bit. */
void pr_load_from(pr *p, kiln_dtype stored, const char *buf, uint32_t slot, uint32_t ix);
/* kd->split: the last axis' variable's quotient and remainder, from the variable. */
void pr_split_names(pr *p);
/* The buffers: as parameters (params) or taken from the array b; `restrict_kw` on every
 * pointer but an input the planner overwrites in place and the output written over it. */
void pr_buffers(pr *p, bool params, const char *restrict_kw);
/* The leading axes' indices from the row. */
void pr_row_axes(pr *p);
/* row, the chunk [jb, je) of item `it` (tiled: its items go down the rows first) and the
 * leading axes' indices. */
void pr_item(pr *p, const char *it, bool tiled);
/* The scratch slot of part `part` for split accumulator number k at element (row, v). */
void pr_part_slot(pr *p, int k, const char *part, char *out, size_t n);

#endif
