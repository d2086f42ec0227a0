/* kexec.c — the kernel description interpreter (kexec.h).
 *
 * A run walks the statements of each work item as the C printer would print them, but
 * executes them: a value is a vector of up to KX_LANES lanes in a slot of the run's
 * scratch, or one lane where it is the same for every lane (a uniform value: a literal,
 * anything computed outside the vectorised loop, a load at an index that does not depend
 * on the lane). An op's lanes are computed by one call into the generated op library
 * (tools/gen_oplib.c), a uniform operand of a lane-varying op broadcast first.
 *
 * Which loop gives the lanes:
 *   - the element loop (a LOOP of n < 0): its elements, KX_LANES at a time. Elements are
 *     independent (the CUDA dialect gives each a thread), so every statement inside runs
 *     for all of them at once; loops inside it (a reduction's) run one iteration at a
 *     time for all lanes, their variables uniform;
 *     A chunk of fewer than KX_FEW_LANES elements with a loop of KX_LONG_LOOP iterations
 *     or more inside (a sum over a long row to one value per row) runs its elements one
 *     at a time instead, as if outside the element loop;
 *   - outside it (a row value's prologue, the column form's loops over the reduced rows),
 *     an innermost loop with no loop inside and no assignment to a variable declared
 *     outside it runs across its iterations instead: its accumulation into an accumulator
 *     declared before it goes into one partial accumulator per lane, folded into it in
 *     lane order after the loop;
 *   - a column reduction over few columns (its innermost reduce loop holding the element
 *     loop alone) runs the loops interchanged: for one column at a time, the reduce
 *     loop's iterations are the lanes, through per-lane partials;
 *   - a kernel whose items are short whole rows runs KX_LANES rows at once as the lanes
 *     (kx_kernel.row_lanes: a softmax or a norm over few channels), every loop inside one
 *     iteration at a time;
 *   - any other loop runs one iteration at a time.
 * A split reduction (kd_kernel.parts) runs as the C dialect's does: each part the split
 * loop's slice, its accumulators saved, then a combining run that takes the parts in
 * order in the loop's place; a long sum in slices (kd_stmt.slices) runs slice by slice.
 * Float sums add in the compiled kernel's order, so that tier 1 gives tier 2's bits: an
 * f32 sum in the C dialect's blocks ("f32 blocks" below); partials per lane only where
 * each holds one value of a sum not in blocks (a loop across at most KX_LANES
 * iterations), else such a loop runs one iteration at a time; kx_replays refuses the
 * kernels whose order only the compiler knows.
 * A guard that differs between lanes becomes a mask: every statement of the branch is
 * computed for all lanes, but loads read, and stores, assignments and accumulations
 * write, only the lanes where it holds (a branch no lane takes is skipped).
 *
 * Index expressions evaluate to a uniform value, an affine one (base + stride * lane: a
 * load or store of stride 1 is one copy) or a vector of lanes, in index buffers taken by
 * depth of nesting.
 *
 * Invariants: a chunk of items runs in the scratch (kx_kernel.scratch bytes) launch_host
 * gives it, allocated before the launch on the calling thread; it writes nothing but its
 * outputs and that scratch; the description is read-only after kx_prepare, so chunks on
 * several threads share it. */
#include "kexec.h"
#include "printer.h"

#include <math.h>
#include <string.h>

/* the op library (generated: build/oplib/kx_oplib.c) */
typedef void (*kx_fn)(int64_t n, void *o, const void *a, const void *b, const void *c);
typedef void (*kx_half_fn)(int64_t n, void *o, const void *x);
kx_fn kx_oplib_find(int op, int in_t, int t, int variant);
kx_half_fn kx_oplib_half(int what, int f16); /* what: 0 load, 1 store, 2 round */
int kx_oplib_cloned(void);

bool kx_same_bits(void) {
    return kx_oplib_cloned() != 0;
}

/* Lanes of a vector: long enough that a library call's cost is spread over many elements,
 * short enough that a kernel's live values stay in the core's caches. */
enum { KX_LANES = 128, KX_FEW_LANES = 16, KX_LONG_LOOP = 64, KX_ROW_INNER = 32 };
/* rows_across: the least length of such a loop */
enum { KX_ROWS_ACROSS = 2 * KX_LANES };
#define KX_NONE UINT32_MAX

struct kx_kernel {
    kd_kernel kd;
    kx_fn *fn;          /* per statement: an OP's loop */
    kx_half_fn *rnd;    /* per statement: the rounding of a 16-bit OP, IOTA or RESULT */
    uint32_t *next;     /* LOOP: its END; IF, ELSE_IF, ELSE: the chain's next branch or END */
    uint32_t *acc_slot; /* ACC: its accumulator's number */
    /* LOOP run across its iterations (above): the accumulators declared before it that it
     * accumulates into, redir[redir_at[s] .. redir_at[s] + n_redir[s]) */
    bool *across;
    uint32_t *redir_at, *n_redir, *redir;
    /* element LOOP: a loop inside it runs at least KX_LONG_LOOP iterations, so a chunk of
     * fewer than KX_FEW_LANES elements runs them one at a time (run_loop) */
    bool *one_by_one;
    /* element LOOP whose long loops all run across and are long enough to fill the lanes
     * several times: one element at a time whatever the chunk, its loops' loads contiguous
     * (across the elements they were a gather at the row's stride) */
    bool *rows_across;
    /* LOOP of a column form's reduction whose body is the element loop alone, which has no
     * loop inside: with few elements, it runs its iterations as lanes for one element at a
     * time (the loops interchanged), its column accumulators through partials:
     * redir[redir_at[s] ..] */
    bool *interchange;
    /* the kernel's items are short whole rows (at most KX_ROW_INNER elements), or a tiled
     * kernel's few columns of a row (a transpose): KX_LANES rows run at once as lanes,
     * every loop inside one iteration at a time */
    bool row_lanes;
    /* kd->split > 1 (an interleave, a reshape's split of the last axis): the element loop's
     * lanes are the quotients q of its variable by the split, one pass per remainder, as
     * the C dialect's two nested loops; the remainder is then uniform (an interleave's
     * branch is taken or not for all lanes) and the quotient affine */
    bool split_lanes;
    /* f32 sums in blocks (kd_reduce.blocked), added as the C dialect adds them: per LOOP,
     * the scalar accumulator whose block it is (its .acc), or whether it is the column
     * form's blocked loop (every blocked column accumulator's block); per blocked ACC, its
     * loop (blocks below) */
    uint32_t *blk_acc;
    bool *col_blk;
    uint32_t *blk_loop;
    /* an interchanged column loop's blocked accumulators (one ACCUM each) are staged: a
     * chunk of rows runs for every column, then the rows' values add into the columns' f32
     * sums row by row, the columns side by side (run_loop) */
    bool stage_cols;
    /* every float sum and product adds in the compiled kernel's order (kx_replays), else
     * why not */
    const char *why_not;
    uint32_t n_redirs, n_accs, n_ixbufs, n_masks;
    int64_t acc_lanes;  /* lanes of an accumulator: the chunk for a column's, else KX_LANES */
    int64_t blk_floats; /* an accumulator's block state: 16 f32 lanes per lane, or a column's */
    int64_t items, grain;
    size_t scratch; /* bytes of one run's scratch */
};

/* ---------------------------------------------------------------- dtypes ---- */

static size_t csize(kiln_dtype t) {
    return kiln_dtype_itemsize(ir_dtype_compute(t));
}

static int64_t get_i64(kiln_dtype t, const void *p, int64_t i) {
    switch (t) {
    case KILN_DTYPE_I32: return ((const int32_t *)p)[i];
    case KILN_DTYPE_I64: return ((const int64_t *)p)[i];
    case KILN_DTYPE_BOOL: return ((const uint8_t *)p)[i];
    case KILN_DTYPE_F64: return (int64_t)((const double *)p)[i];
    default: return (int64_t)((const float *)p)[i];
    }
}

/* o[i] = (t)x[i] for the value of an iota: exact below 2^24 (f32) or 2^53 (f64) */
static void from_i64(kiln_dtype t, void *o, const int64_t *x, int64_t n) {
    switch (ir_dtype_compute(t)) {
    case KILN_DTYPE_F32:
        for (int64_t i = 0; i < n; i++) ((float *)o)[i] = (float)x[i];
        break;
    case KILN_DTYPE_F64:
        for (int64_t i = 0; i < n; i++) ((double *)o)[i] = (double)x[i];
        break;
    case KILN_DTYPE_I32:
        for (int64_t i = 0; i < n; i++) ((int32_t *)o)[i] = (int32_t)(uint32_t)(uint64_t)x[i];
        break;
    case KILN_DTYPE_I64: memcpy(o, x, (size_t)n * sizeof *x); break;
    default:
        for (int64_t i = 0; i < n; i++) ((uint8_t *)o)[i] = x[i] != 0;
        break;
    }
}

/* o[i] = x[i] as int64, x of dtype t (an index's value) */
static void to_i64(kiln_dtype t, int64_t *o, const void *x, int64_t n) {
    switch (t) {
    case KILN_DTYPE_I32:
        for (int64_t i = 0; i < n; i++) o[i] = ((const int32_t *)x)[i];
        break;
    case KILN_DTYPE_I64: memcpy(o, x, (size_t)n * sizeof *o); break;
    default:
        for (int64_t i = 0; i < n; i++) o[i] = get_i64(t, x, i);
        break;
    }
}

static void bcast(void *dst, const void *src, size_t size, int64_t n) {
    switch (size) {
    case 8: {
        uint64_t v, *d = dst;
        memcpy(&v, src, 8);
        for (int64_t i = 0; i < n; i++) d[i] = v;
        break;
    }
    case 4: {
        uint32_t v, *d = dst;
        memcpy(&v, src, 4);
        for (int64_t i = 0; i < n; i++) d[i] = v;
        break;
    }
    default: memset(dst, *(const uint8_t *)src, (size_t)n); break;
    }
}

/* ------------------------------------------------------------- run state ---- */

typedef struct ixr {
    int kind; /* 0 uniform (base), 1 affine (base + stride * lane), 2 vector (v) */
    int64_t base, stride;
    int64_t *v;
} ixr;

typedef struct xs {
    const kx_kernel *k;
    const kd_kernel *kd;
    void *const *bufs;
    int64_t *var; /* per kd variable: its value where it is uniform */
    char *vals;   /* per statement: KX_LANES * 8 bytes */
    uint8_t *uni; /* per statement: its value is uniform (lane 0) */
    char *acc;    /* per accumulator: acc_lanes * 8 bytes, then its NaN flags */
    uint8_t *accnan;
    int64_t *acc_n;    /* per statement (ACC): lanes it was declared with (1: uniform) */
    uint8_t *redirect; /* per statement (ACC): accumulating into its lanes' partials */
    char *part;        /* per accumulator: KX_LANES partials, then their NaN flags */
    uint8_t *partnan;
    float *blk;        /* per accumulator: its f32 block's state (blk_floats) */
    uint8_t *blk_on;   /* per statement (ACC): its block is open */
    int64_t *blk_from; /* per statement (scalar ACC): the start of its loop's range */
    char *prev;        /* per accumulator: its lanes' value before a slice (kd_stmt.slices) */
    bool blk_stage;    /* an interchanged column loop's values go to the stage (stage_cols) */
    int64_t *ixb;      /* n_ixbufs index buffers of KX_LANES */
    char *tmp[3];      /* broadcast operands */
    uint16_t *h16;     /* 16-bit staging */
    uint8_t *masks;    /* n_masks pairs (mask, taken) of KX_LANES */
    int mdepth;
    /* a split reduction (kd->parts): 0 a whole run; 1 part `part_no` of the split loop,
     * its accumulators saved to part_out and the rest of the element skipped (stop); 2
     * the combining run, which takes the parts in order in place of the split loop */
    int part_mode;
    int64_t part_no;
    char *part_out;
    bool stop;
    /* rows as lanes (kx_kernel.row_lanes): the leading axes' variables, per lane */
    uint8_t *var_lanes;
    ixr *var_ix;
    int64_t *axis_buf; /* KILN_MAX_RANK buffers of KX_LANES */
    /* kx_kernel.split_lanes, in the element loop: its variable is q * split + split_r for
     * the lanes' q, one pass per remainder split_r (0: not so) */
    int64_t split, split_r;
    bool vec; /* lanes run a loop (else lanes == 1 and nothing is vectorised) */
    uint32_t lane_var;
    int64_t lane0, lanes, col_off, jb, je;
} xs;

static char *val(const xs *x, uint32_t s) {
    return x->vals + (size_t)s * KX_LANES * 8;
}

static int64_t *ixbuf(const xs *x, int depth) {
    return x->ixb + (size_t)depth * KX_LANES;
}

/* ---------------------------------------------------------------- indices ---- */

static ixr eval_ix(xs *x, uint32_t ix, int depth);

static void materialise(const xs *x, ixr *r, int64_t *buf) {
    if (r->kind == 2) {
        if (r->v != buf) memcpy(buf, r->v, (size_t)x->lanes * sizeof *buf);
    } else
        for (int64_t l = 0; l < x->lanes; l++) buf[l] = r->base + r->stride * l;
    r->kind = 2;
    r->v = buf;
}

static ixr eval_atom(xs *x, uint32_t atom, int depth) {
    const kd_atom *a = &x->kd->atoms[atom];
    switch (a->kind) {
    case KD_ATOM_VAR:
        if (x->split && a->arg == x->kd->last_var) /* q * split + r, the lanes the q */
            return (ixr){1, x->lane0 * x->split + x->split_r, x->split, NULL};
        if (a->arg == x->lane_var) return (ixr){1, x->lane0, 1, NULL};
        if (x->var_lanes && x->var_lanes[a->arg]) return x->var_ix[a->arg]; /* rows as lanes */
        return (ixr){0, x->var[a->arg], 0, NULL};
    case KD_ATOM_VAL: {
        const kd_stmt *s = &x->kd->stmts[a->arg];
        if (x->uni[a->arg]) return (ixr){0, get_i64(s->dtype, val(x, a->arg), 0), 0, NULL};
        int64_t *b = ixbuf(x, depth);
        to_i64(s->dtype, b, val(x, a->arg), x->lanes);
        return (ixr){2, 0, 0, b};
    }
    default: { /* DIV, MOD: C's truncating division, as the printed kernel divides */
        if (x->split && a->n % x->split == 0 && kd_ix_is_last(x->kd, a->arg)) {
            /* of the split variable q * k + r by m * k: q / m and (q % m) * k + r */
            int64_t m = a->n / x->split;
            if (m == 1)
                return a->kind == KD_ATOM_DIV ? (ixr){1, x->lane0, 1, NULL}
                                              : (ixr){0, x->split_r, 0, NULL};
            int64_t *b = ixbuf(x, depth);
            for (int64_t l = 0; l < x->lanes; l++)
                b[l] = a->kind == KD_ATOM_DIV ? (x->lane0 + l) / m
                                              : (x->lane0 + l) % m * x->split + x->split_r;
            return (ixr){2, 0, 0, b};
        }
        ixr r = eval_ix(x, a->arg, depth);
        int64_t n = a->n;
        bool div = a->kind == KD_ATOM_DIV;
        if (r.kind == 0 || (r.kind == 1 && r.stride == 0))
            return (ixr){0, div ? r.base / n : r.base % n, 0, NULL};
        materialise(x, &r, ixbuf(x, depth));
        for (int64_t l = 0; l < x->lanes; l++) r.v[l] = div ? r.v[l] / n : r.v[l] % n;
        return r;
    }
    }
}

/* c + sum coef * atom; a vector result is in buffer `depth`, the terms use deeper ones */
static ixr eval_ix(xs *x, uint32_t ix, int depth) {
    const kd_index *d = &x->kd->ixs[ix];
    ixr r = {0, d->c, 0, NULL};
    for (uint32_t i = 0; i < d->n; i++) {
        const kd_term *t = &x->kd->terms[d->first + i];
        ixr a = eval_atom(x, t->atom, depth + 1);
        if (a.kind < 2 && r.kind < 2) {
            r.kind = r.kind > a.kind ? r.kind : a.kind;
            r.base += t->coef * a.base;
            r.stride += t->coef * a.stride;
            continue;
        }
        int64_t *b = ixbuf(x, depth);
        if (r.kind < 2) materialise(x, &r, b);
        for (int64_t l = 0; l < x->lanes; l++)
            r.v[l] += t->coef * (a.kind == 2 ? a.v[l] : a.base + a.stride * l);
    }
    return r;
}

static int64_t lane_ix(const ixr *r, int64_t l) {
    return r->kind == 2 ? r->v[l] : r->base + r->stride * l;
}

/* ------------------------------------------------------ loads and stores ---- */

/* dst[l] = buf[ix(l)] for the n lanes mask holds (0 elsewhere), items of isz bytes */
static void gather(void *dst, const char *buf, size_t isz, const ixr *r, int64_t n,
                   const uint8_t *mask) {
#define KX_GATHER(T)                                                                               \
    do {                                                                                           \
        T *d = dst;                                                                                \
        const T *b = (const T *)buf;                                                               \
        if (r->kind == 2 && !mask)                                                                 \
            for (int64_t l = 0; l < n; l++) d[l] = b[r->v[l]];                                     \
        else                                                                                       \
            for (int64_t l = 0; l < n; l++) d[l] = mask && !mask[l] ? 0 : b[lane_ix(r, l)];        \
    } while (0)
    switch (isz) {
    case 8: KX_GATHER(uint64_t); break;
    case 4: KX_GATHER(uint32_t); break;
    case 2: KX_GATHER(uint16_t); break;
    default: KX_GATHER(uint8_t); break;
    }
#undef KX_GATHER
}

/* buf[ix(l)] = src[l] (src[0] for every lane when uni) for the lanes mask holds */
static void scatter(char *buf, const void *src, bool uni, size_t isz, const ixr *r, int64_t n,
                    const uint8_t *mask) {
#define KX_SCATTER(T)                                                                              \
    do {                                                                                           \
        const T *v = src;                                                                          \
        T *b = (T *)buf;                                                                           \
        for (int64_t l = 0; l < n; l++)                                                            \
            if (!mask || mask[l]) b[lane_ix(r, l)] = v[uni ? 0 : l];                               \
    } while (0)
    switch (isz) {
    case 8: KX_SCATTER(uint64_t); break;
    case 4: KX_SCATTER(uint32_t); break;
    case 2: KX_SCATTER(uint16_t); break;
    default: KX_SCATTER(uint8_t); break;
    }
#undef KX_SCATTER
}

/* in `slot` (or output `slot` for a kept value) at ix, for the lanes mask holds */
static void do_load(xs *x, uint32_t id, const uint8_t *mask) {
    const kd_kernel *kd = x->kd;
    const kd_stmt *s = &kd->stmts[id];
    kiln_dtype st = s->keep ? kd->out_type[s->slot] : kd->in_type[s->slot];
    const char *buf = x->bufs[s->keep ? kd->n_inputs + s->slot : s->slot];
    bool half = ir_dtype_is_half(st);
    size_t isz = kiln_dtype_itemsize(st);
    char *dst = val(x, id);
    ixr r = eval_ix(x, s->ix, 0);
    void *raw = half ? (void *)x->h16 : (void *)dst;
    int64_t n = x->lanes;
    if (r.kind == 0 || !x->vec) {
        memcpy(raw, buf + (size_t)r.base * isz, isz);
        n = 1;
    } else if (r.kind == 1 && r.stride == 1 && !mask) {
        memcpy(raw, buf + (size_t)r.base * isz, (size_t)n * isz);
    } else {
        gather(raw, buf, isz, &r, n, mask);
    }
    x->uni[id] = n == 1 && (r.kind == 0 || !x->vec);
    if (half) kx_oplib_half(0, st == KILN_DTYPE_F16)(n, dst, x->h16);
}

static void do_store(xs *x, uint32_t id, const uint8_t *mask) {
    const kd_kernel *kd = x->kd;
    const kd_stmt *s = &kd->stmts[id];
    kiln_dtype ot = kd->out_type[s->slot];
    char *buf = x->bufs[kd->n_inputs + s->slot];
    bool half = ir_dtype_is_half(ot);
    size_t isz = kiln_dtype_itemsize(ot);
    uint32_t v = s->args[0];
    bool vuni = x->uni[v];
    int64_t nv = vuni ? 1 : x->lanes;
    const char *src = val(x, v);
    if (half) {
        kx_oplib_half(1, ot == KILN_DTYPE_F16)(nv, x->h16, src);
        src = (const char *)x->h16;
    }
    ixr r = eval_ix(x, s->ix, 0);
    if (r.kind == 0 || !x->vec) { /* one element: the last lane the mask lets through (a
                                   * branch runs only where some lane takes it) */
        int64_t l = vuni ? 0 : x->lanes - 1;
        while (!vuni && mask && l > 0 && !mask[l]) l--;
        memcpy(buf + (size_t)r.base * isz, src + (size_t)l * isz, isz);
        return;
    }
    if (r.kind == 1 && r.stride == 1 && !mask && !vuni) {
        memcpy(buf + (size_t)r.base * isz, src, (size_t)x->lanes * isz);
        return;
    }
    scatter(buf, src, vuni, isz, &r, x->lanes, mask);
}

/* ------------------------------------------------------------ reductions ---- */

static void acc_init(const kd_stmt *a, void *p, uint8_t *nan, int64_t n) {
    bool fl = ir_dtype_is_float(a->dtype);
    memset(nan, 0, (size_t)n);
    /* the initial value's bits, then n copies of it */
    char v[8];
    size_t sz = 8;
    if (a->red.acc_type == KILN_DTYPE_F64) {
        double d = a->red.init == KD_INIT_ONE       ? 1.0
                   : a->red.init == KD_INIT_LOWEST  ? -INFINITY
                   : a->red.init == KD_INIT_HIGHEST ? INFINITY
                                                    : 0.0;
        memcpy(v, &d, 8);
    } else if (a->red.arith) { /* wrapping 64-bit integer sum or product */
        uint64_t u = a->red.init == KD_INIT_ONE ? 1 : 0;
        memcpy(v, &u, 8);
    } else if (fl && csize(a->dtype) == 4) {
        float f = a->red.init == KD_INIT_LOWEST ? -INFINITY : INFINITY;
        memcpy(v, &f, sz = 4);
    } else if (fl) {
        double d = a->red.init == KD_INIT_LOWEST ? -INFINITY : INFINITY;
        memcpy(v, &d, 8);
    } else if (a->dtype == KILN_DTYPE_I32) {
        int32_t i = a->red.init == KD_INIT_LOWEST ? INT32_MIN : INT32_MAX;
        memcpy(v, &i, sz = 4);
    } else {
        int64_t i = a->red.init == KD_INIT_LOWEST ? INT64_MIN : INT64_MAX;
        memcpy(v, &i, 8);
    }
    bcast(p, v, sz, n);
}

/* the value's lane l into accumulator lane `to` (as pr_accum prints it) */
#define KX_COMBINE(T, A, X)                                                                        \
    do {                                                                                           \
        T x_ = (X);                                                                                \
        if (a->red.op == IR_REDUCE_MAX)                                                            \
            A = x_ > A ? x_ : A;                                                                   \
        else                                                                                       \
            A = x_ < A ? x_ : A;                                                                   \
    } while (0)

static void accum_one(const kd_stmt *a, kiln_dtype vt, char *A, uint8_t *nan, int64_t to,
                      const char *v, int64_t l) {
    if (a->red.acc_type == KILN_DTYPE_F64 && a->red.arith) {
        double y = vt == KILN_DTYPE_F64 ? ((const double *)v)[l] : ((const float *)v)[l];
        double *p = (double *)A + to;
        *p = a->red.op == IR_REDUCE_SUM ? *p + y : *p * y;
    } else if (a->red.arith) {
        uint64_t y = (uint64_t)get_i64(vt, v, l), *p = (uint64_t *)A + to;
        *p = a->red.op == IR_REDUCE_SUM ? *p + y : *p * y;
    } else if (vt == KILN_DTYPE_F32) {
        float y = ((const float *)v)[l];
        KX_COMBINE(float, ((float *)A)[to], y);
        nan[to] |= y != y;
    } else if (vt == KILN_DTYPE_F64) {
        double y = ((const double *)v)[l];
        KX_COMBINE(double, ((double *)A)[to], y);
        nan[to] |= y != y;
    } else if (vt == KILN_DTYPE_I32) {
        KX_COMBINE(int32_t, ((int32_t *)A)[to], ((const int32_t *)v)[l]);
    } else {
        KX_COMBINE(int64_t, ((int64_t *)A)[to], get_i64(vt, v, l));
    }
}

/* partial lane p of accumulator a into its lane `to` */
static void fold_one(const kd_stmt *a, char *A, uint8_t *nan, int64_t to, const char *P,
                     const uint8_t *pnan, int64_t p) {
    if (a->red.acc_type == KILN_DTYPE_F64 && a->red.arith) {
        double *d = (double *)A + to, y = ((const double *)P)[p];
        *d = a->red.op == IR_REDUCE_SUM ? *d + y : *d * y;
        return;
    }
    if (a->red.arith) {
        uint64_t *d = (uint64_t *)A + to, y = ((const uint64_t *)P)[p];
        *d = a->red.op == IR_REDUCE_SUM ? *d + y : *d * y;
        return;
    }
    accum_one(a, ir_dtype_compute(a->dtype), A, nan, to, P, p);
    nan[to] |= pnan[p];
}

static char *acc_mem(const xs *x, uint32_t a) {
    return x->acc + (size_t)x->k->acc_slot[a] * (size_t)x->k->acc_lanes * 8;
}
static uint8_t *acc_nan(const xs *x, uint32_t a) {
    return x->accnan + (size_t)x->k->acc_slot[a] * (size_t)x->k->acc_lanes;
}
static char *part_mem(const xs *x, uint32_t a) {
    return x->part + (size_t)x->k->acc_slot[a] * KX_LANES * 8;
}
static uint8_t *part_nan(const xs *x, uint32_t a) {
    return x->partnan + (size_t)x->k->acc_slot[a] * KX_LANES;
}
static float *blk_mem(const xs *x, uint32_t a) {
    return x->blk + (size_t)x->k->acc_slot[a] * (size_t)x->k->blk_floats;
}

/* ---------------------------------------------------------- f32 blocks ---- */

/* The C dialect adds an f32 sum (kd_reduce.blocked) in blocks of its loop's iterations,
 * KD_SUM_BLOCK of them counted from the start of the loop's range (a part's or a slice's),
 * KD_COL_BLOCK in the column form, and adds each block's f32 sum into the f64
 * accumulator (print_c.c, print_block_open). A scalar accumulator's block is staged and
 * added by the runtime's sum_f32 (src/backend/c_runtime.h): 16 f32 lanes, lane j taking
 * the block's values j, j + 16, ... in order, then the lanes pairwise. Here each lane of
 * the accumulator keeps those 16 f32 lanes (sum lane j of accumulator lane l at
 * j * KX_LANES + l, so that one iteration's values add in one vectorised loop), and the
 * value of the loop's iteration v goes into sum lane (v - start) % 16 as it comes; the iterations
 * of a block arrive in order whether the loop runs one at a time or across (its lanes are then its
 * iterations, taken in lane order), so every f32 addition is the compiled kernel's. A column's
 * block is one f32 sum per column, added row by row. Blocks are flushed into the f64 accumulators
 * at each block's end; a block no value reached adds +0, which changes no f64 sum (it never holds
 * -0: it starts at +0). */
_Static_assert(KD_SUM_BLOCK % KX_LANES == 0 && KD_COL_BLOCK % KX_LANES == 0,
               "a run across a loop takes whole chunks of a block");
enum { KX_SUM_LANES = 16 }; /* sum_f32's lanes */

/* The loop's blocks, cleared, from iteration `from` on. */
static void blk_open(xs *x, uint32_t loop, int64_t from) {
    const kx_kernel *k = x->k;
    const kd_kernel *kd = x->kd;
    if (k->col_blk[loop]) {
        for (uint32_t a = 1; a < kd->n_stmts; a++)
            if (kd->stmts[a].kind == KS_ACC && kd->stmts[a].column && k->blk_loop[a] == loop) {
                memset(blk_mem(x, a), 0, (size_t)(x->je - x->jb) * sizeof(float));
                x->blk_on[a] = 1;
            }
        return;
    }
    uint32_t a = k->blk_acc[loop];
    float *t = blk_mem(x, a);
    for (int j = 0; j < KX_SUM_LANES; j++)
        memset(t + j * KX_LANES, 0, (size_t)x->acc_n[a] * sizeof *t);
    x->blk_from[a] = from;
    x->blk_on[a] = 1;
}

/* The end of a block of the loop: its f32 sums into the f64 accumulators, cleared. */
static void blk_flush(xs *x, uint32_t loop) {
    const kx_kernel *k = x->k;
    const kd_kernel *kd = x->kd;
    if (k->col_blk[loop]) {
        for (uint32_t a = 1; a < kd->n_stmts; a++) {
            if (kd->stmts[a].kind != KS_ACC || !kd->stmts[a].column || k->blk_loop[a] != loop)
                continue;
            float *b = blk_mem(x, a);
            double *d = (double *)acc_mem(x, a);
            for (int64_t j = 0; j < x->je - x->jb; j++) d[j] += (double)b[j], b[j] = 0;
        }
        return;
    }
    uint32_t a = k->blk_acc[loop];
    double *d = (double *)acc_mem(x, a);
    float *t = blk_mem(x, a);
    int64_t n = x->acc_n[a];
    for (int w = KX_SUM_LANES / 2; w; w /= 2)
        for (int j = 0; j < w; j++)
            for (int64_t l = 0; l < n; l++) t[j * KX_LANES + l] += t[(j + w) * KX_LANES + l];
    for (int64_t l = 0; l < n; l++) d[l] += (double)t[l];
    for (int j = 0; j < KX_SUM_LANES; j++) memset(t + j * KX_LANES, 0, (size_t)n * sizeof *t);
}

/* stage_cols: the staged values of `lanes` rows into the columns' f32 sums, row by row (a
 * row a guard left out adds +0, which the sum never notices: it is never -0). */
static void blk_add_stage(xs *x, uint32_t loop, int64_t lanes) {
    const kx_kernel *k = x->k;
    int64_t nc = x->je - x->jb;
    for (uint32_t a = 1; a < x->kd->n_stmts; a++) {
        if (k->blk_loop[a] != loop) continue;
        float *sum = blk_mem(x, a);
        const float *st = sum + k->acc_lanes;
        for (int64_t l = 0; l < lanes; l++)
            for (int64_t j = 0; j < nc; j++) sum[j] += st[j * KX_LANES + l];
    }
}

static void blk_close(xs *x, uint32_t loop) {
    const kx_kernel *k = x->k;
    for (uint32_t a = 1; a < x->kd->n_stmts; a++)
        if (k->blk_loop[a] == loop) x->blk_on[a] = 0;
}

/* Whether an iteration that ends at `done` of a range starting at `from` and ending at
 * `to` ends one of the loop's blocks. */
static bool blk_ends(const xs *x, uint32_t loop, int64_t from, int64_t done, int64_t to) {
    int64_t bs = x->k->col_blk[loop] ? KD_COL_BLOCK : KD_SUM_BLOCK;
    return done >= to || (done - from) % bs == 0;
}

/* Value v's lanes added into blocked accumulator a's open block (do_accum). */
static void blk_accum(xs *x, uint32_t ai, const kd_stmt *a, const float *y, bool vuni,
                      const uint8_t *mask) {
    const kd_stmt *loop = &x->kd->stmts[x->k->blk_loop[ai]];
    float *b = blk_mem(x, ai);
    bool lanes_are_loop = x->vec && x->lane_var == loop->var; /* across it */
    int64_t n = vuni && !x->vec ? 1 : x->lanes;
    if (a->column && lanes_are_loop && x->blk_stage) { /* staged: added by blk_add_stage */
        float *st = b + x->k->acc_lanes + x->col_off * KX_LANES;
        for (int64_t l = 0; l < n; l++) st[l] = mask && !mask[l] ? 0.0f : y[vuni ? 0 : l];
    } else if (a->column && lanes_are_loop) { /* interchanged: one column, its rows as lanes */
        for (int64_t l = 0; l < n; l++)
            if (!mask || mask[l]) b[x->col_off] += y[vuni ? 0 : l];
    } else if (a->column && !mask && !vuni) { /* row by row, the columns as lanes */
        float *t = b + x->col_off;
        for (int64_t l = 0; l < n; l++) t[l] += y[l];
    } else if (a->column) {
        for (int64_t l = 0; l < n; l++)
            if (!mask || mask[l]) b[x->col_off + l] += y[vuni ? 0 : l];
    } else if (lanes_are_loop && !mask && !vuni &&
               (x->lane0 - x->blk_from[ai]) % KX_SUM_LANES == 0) {
        /* one accumulator lane, sum lane j at j * KX_LANES: 16 values at a time, in order */
        float t[KX_SUM_LANES];
        for (int j = 0; j < KX_SUM_LANES; j++) t[j] = b[j * KX_LANES];
        int64_t l = 0;
        for (; l + KX_SUM_LANES <= n; l += KX_SUM_LANES)
            for (int j = 0; j < KX_SUM_LANES; j++) t[j] += y[l + j];
        for (int j = 0; l + j < n; j++) t[j] += y[l + j];
        for (int j = 0; j < KX_SUM_LANES; j++) b[j * KX_LANES] = t[j];
    } else if (lanes_are_loop) {
        int64_t at = x->lane0 - x->blk_from[ai];
        for (int64_t l = 0; l < n; l++)
            if (!mask || mask[l]) b[(at + l) % KX_SUM_LANES * KX_LANES] += y[vuni ? 0 : l];
    } else {
        float *t = b + (x->var[loop->var] - x->blk_from[ai]) % KX_SUM_LANES * KX_LANES;
        int64_t lanes = x->acc_n[ai];
        if (!mask && !vuni)
            for (int64_t l = 0; l < lanes; l++) t[l] += y[l];
        else
            for (int64_t l = 0; l < lanes; l++)
                if (!mask || mask[l]) t[l] += y[vuni ? 0 : l];
    }
}

static void do_accum(xs *x, const kd_stmt *s, const uint8_t *mask) {
    uint32_t ai = s->args[0], v = s->args[1];
    const kd_stmt *a = &x->kd->stmts[ai];
    kiln_dtype vt = ir_dtype_compute(x->kd->stmts[v].dtype);
    bool vuni = x->uni[v];
    const char *vp = val(x, v);
    char *A;
    uint8_t *nan;
    int64_t off = 0;
    if (x->blk_on[ai]) {
        blk_accum(x, ai, a, (const float *)vp, vuni, mask);
        return;
    }
    if (x->redirect[ai]) {
        A = part_mem(x, ai), nan = part_nan(x, ai);
    } else {
        A = acc_mem(x, ai), nan = acc_nan(x, ai);
        if (a->column) off = x->col_off;
        if (x->acc_n[ai] == 1 && !a->column) { /* one accumulator for the lanes: in order */
            for (int64_t l = 0; l < (vuni ? 1 : x->lanes); l++)
                if (!mask || mask[l]) accum_one(a, vt, A, nan, 0, vp, l);
            return;
        }
    }
    int64_t n = x->lanes;
    if (!mask && !vuni && a->red.op == IR_REDUCE_SUM && a->red.acc_type == KILN_DTYPE_F64) {
        double *d = (double *)A + off; /* the common case, a float sum: one loop */
        if (vt == KILN_DTYPE_F32)
            for (int64_t l = 0; l < n; l++) d[l] += (double)((const float *)vp)[l];
        else
            for (int64_t l = 0; l < n; l++) d[l] += ((const double *)vp)[l];
        return;
    }
    if (!mask && !vuni && !a->red.arith && vt == KILN_DTYPE_F32) { /* a float max or min */
        float *d = (float *)A + off;
        const float *y = (const float *)vp;
        uint8_t *f = nan + off;
        if (a->red.op == IR_REDUCE_MAX)
            for (int64_t l = 0; l < n; l++) d[l] = y[l] > d[l] ? y[l] : d[l];
        else
            for (int64_t l = 0; l < n; l++) d[l] = y[l] < d[l] ? y[l] : d[l];
        for (int64_t l = 0; l < n; l++) f[l] |= y[l] != y[l];
        return;
    }
    for (int64_t l = 0; l < n; l++)
        if (!mask || mask[l]) accum_one(a, vt, A, nan, off + l, vp, vuni ? 0 : l);
}

static void do_result(xs *x, uint32_t id) {
    const kd_stmt *s = &x->kd->stmts[id], *a = &x->kd->stmts[s->args[0]];
    const char *A = acc_mem(x, s->args[0]);
    const uint8_t *nan = acc_nan(x, s->args[0]);
    kiln_dtype t = ir_dtype_compute(s->dtype);
    bool one = x->acc_n[s->args[0]] == 1 && !a->column;
    int64_t n = one ? 1 : x->lanes, off = a->column ? x->col_off : 0;
    char *o = val(x, id);
    if (a->red.acc_type == KILN_DTYPE_F64 && a->red.arith) {
        const double *d = (const double *)A + off;
        if (t == KILN_DTYPE_F32)
            for (int64_t l = 0; l < n; l++) ((float *)o)[l] = (float)d[l];
        else
            memcpy(o, d, (size_t)n * 8);
    } else if (a->red.arith) {
        const uint64_t *u = (const uint64_t *)A + off;
        if (t == KILN_DTYPE_I32)
            for (int64_t l = 0; l < n; l++) ((int32_t *)o)[l] = (int32_t)(uint32_t)u[l];
        else
            memcpy(o, u, (size_t)n * 8);
    } else {
        size_t sz = csize(t);
        memcpy(o, A + (size_t)off * sz, (size_t)n * sz);
        for (int64_t l = 0; a->red.nan_flag && l < n; l++) {
            if (!nan[off + l]) continue;
            if (t == KILN_DTYPE_F32)
                ((float *)o)[l] = NAN;
            else
                ((double *)o)[l] = NAN;
        }
    }
    x->uni[id] = one || !x->vec; /* a column's, one element at a time: one lane */
    if (x->k->rnd[id]) x->k->rnd[id](n, o, NULL);
}

/* -------------------------------------------------------------- statements ---- */

static void run_range(xs *x, uint32_t from, uint32_t to, const uint8_t *mask);

static void do_op(xs *x, uint32_t id) {
    const kd_stmt *s = &x->kd->stmts[id];
    bool vec = false;
    for (uint32_t i = 0; i < s->n_args; i++) vec |= !x->uni[s->args[i]];
    int64_t n = vec ? x->lanes : 1;
    const void *p[3] = {NULL, NULL, NULL};
    for (uint32_t i = 0; i < s->n_args; i++) {
        uint32_t a = s->args[i];
        p[i] = val(x, a);
        if (vec && x->uni[a]) {
            size_t sz = csize(x->kd->stmts[a].dtype);
            bcast(x->tmp[i], p[i], sz, n);
            p[i] = x->tmp[i];
        }
    }
    x->k->fn[id](n, val(x, id), p[0], p[1], p[2]);
    x->uni[id] = !vec;
    if (x->k->rnd[id]) x->k->rnd[id](n, val(x, id), NULL);
}

static void do_lit(xs *x, uint32_t id) {
    const kd_stmt *s = &x->kd->stmts[id];
    char *o = val(x, id);
    switch (ir_dtype_compute(s->dtype)) {
    case KILN_DTYPE_F32: *(float *)o = (float)s->lit.f; break;
    case KILN_DTYPE_F64: *(double *)o = s->lit.f; break;
    case KILN_DTYPE_I32: *(int32_t *)o = (int32_t)s->lit.i; break;
    case KILN_DTYPE_I64: *(int64_t *)o = s->lit.i; break;
    default: *(uint8_t *)o = (uint8_t)s->lit.i; break;
    }
    x->uni[id] = 1;
}

static void do_assign(xs *x, const kd_stmt *s, const uint8_t *mask) {
    uint32_t d = s->args[0], v = s->args[1];
    size_t sz = csize(x->kd->stmts[d].dtype);
    if (!mask || !x->vec) {
        memcpy(val(x, d), val(x, v), x->uni[v] ? sz : (size_t)x->lanes * sz);
        x->uni[d] = x->uni[v];
        return;
    }
    if (x->uni[d]) bcast(val(x, d) + sz, val(x, d), sz, x->lanes - 1);
    x->uni[d] = 0;
    for (int64_t l = 0; l < x->lanes; l++)
        if (mask[l]) memcpy(val(x, d) + (size_t)l * sz, val(x, v) + (x->uni[v] ? 0 : l * sz), sz);
}

/* whether every guard of s holds at lane l (r: the guards' evaluated indices) */
static bool guards_at(const xs *x, const kd_stmt *s, const ixr *r, int64_t l) {
    for (uint32_t g = 0; g < s->n_guards; g++) {
        const kd_guard *gd = &x->kd->guards[s->guard + g];
        int64_t v = lane_ix(&r[g], l);
        bool ok = gd->kind == KD_GUARD_GE0  ? v >= 0
                  : gd->kind == KD_GUARD_LT ? v < gd->n
                                            : v % gd->n == 0;
        if (!ok) return false;
    }
    return true;
}

/* Whether every guard of branch s holds at every lane (1), one of them at none (0), or
 * it varies (-1): an affine index is monotone in the lane, so its ends decide (a
 * concatenation's or a pad's border between two blocks of lanes). */
static int branch_all(xs *x, const kd_stmt *s) {
    int res = 1;
    for (uint32_t g = 0; g < s->n_guards; g++) {
        const kd_guard *gd = &x->kd->guards[s->guard + g];
        ixr r = eval_ix(x, gd->ix, 0);
        if (r.kind == 2 || (gd->kind == KD_GUARD_DIVIDES && r.kind != 0)) return -1;
        int64_t a = r.base, z = r.base + r.stride * (x->lanes - 1);
        int64_t lo = a < z ? a : z, hi = a < z ? z : a;
        int all, none;
        if (gd->kind == KD_GUARD_GE0)
            all = lo >= 0, none = hi < 0;
        else if (gd->kind == KD_GUARD_LT)
            all = hi < gd->n, none = lo >= gd->n;
        else
            all = r.base % gd->n == 0, none = !all;
        if (none) return 0;
        if (!all) res = -1;
    }
    return res;
}

/* The if / else-if / else chain opened at statement id; returns its END. */
static uint32_t run_chain(xs *x, uint32_t id, const uint8_t *mask) {
    const kx_kernel *k = x->k;
    uint32_t b = id, end = id;
    while (x->kd->stmts[end].kind != KS_END) end = k->next[end];
    if (!x->vec) {
        for (; b != end; b = k->next[b]) {
            const kd_stmt *s = &x->kd->stmts[b];
            bool take = true;
            for (uint32_t g = 0; g < s->n_guards && take; g++) {
                ixr r = eval_ix(x, x->kd->guards[s->guard + g].ix, 0);
                take = guards_at(x, &(kd_stmt){.guard = s->guard + g, .n_guards = 1}, &r, 0);
            }
            if (take) {
                run_range(x, b + 1, k->next[b], NULL);
                break;
            }
        }
        return end;
    }
    uint8_t *m = x->masks + (size_t)x->mdepth * 2 * KX_LANES, *taken = m + KX_LANES;
    x->mdepth++;
    memset(taken, 0, (size_t)x->lanes);
    bool none_taken = true;
    for (; b != end; b = k->next[b]) {
        const kd_stmt *s = &x->kd->stmts[b];
        if (none_taken && !mask) { /* a branch all lanes take, or none: no mask */
            int all = branch_all(x, s);
            if (all == 0) continue;
            if (all == 1) {
                run_range(x, b + 1, k->next[b], NULL);
                break;
            }
        }
        none_taken = false;
        for (int64_t l = 0; l < x->lanes; l++) m[l] = (!mask || mask[l]) && !taken[l];
        for (uint32_t g = 0; g < s->n_guards; g++) {
            ixr r = eval_ix(x, x->kd->guards[s->guard + g].ix, 0);
            kd_stmt one = {.guard = s->guard + g, .n_guards = 1};
            for (int64_t l = 0; l < x->lanes; l++)
                if (m[l]) m[l] = guards_at(x, &one, &r, l);
        }
        bool any = false;
        for (int64_t l = 0; l < x->lanes; l++) {
            any |= m[l];
            taken[l] |= m[l];
        }
        if (any) run_range(x, b + 1, k->next[b], m);
    }
    x->mdepth--;
    return end;
}

/* Part x->part_no of a split reduction: each element's accumulator (KD_PART_BYTES: the
 * value, then its NaN flag) into its slot of part_out; the element's statements after
 * the split loop are skipped (they run in the combining run). */
static void save_part(xs *x) {
    const kd_kernel *kd = x->kd;
    uint32_t a = kd->part_acc;
    int64_t n = x->acc_n[a];
    for (int64_t l = 0; l < n; l++) {
        int64_t j = (x->vec ? x->lane0 : x->var[kd->last_var]) + l;
        char *slot =
            x->part_out + ((size_t)x->part_no * (size_t)kd->inner + (size_t)j) * KD_PART_BYTES;
        memcpy(slot, acc_mem(x, a) + (size_t)l * 8, 8);
        slot[8] = (char)acc_nan(x, a)[l];
    }
    x->stop = true;
}

/* The combining run: the parts' accumulators of each element, in order, into its own
 * (just declared, at its initial value) in place of the split loop; returns its END. */
static uint32_t combine_parts(xs *x, uint32_t loop) {
    const kd_kernel *kd = x->kd;
    uint32_t a = kd->part_acc;
    const kd_stmt *acc = &kd->stmts[a];
    int64_t n = x->acc_n[a];
    for (int64_t l = 0; l < n; l++) {
        int64_t j = (x->vec ? x->lane0 : x->var[kd->last_var]) + l;
        for (int64_t q = 0; q < kd->parts; q++) {
            const char *slot =
                x->part_out + ((size_t)q * (size_t)kd->inner + (size_t)j) * KD_PART_BYTES;
            uint8_t flag = (uint8_t)slot[8];
            fold_one(acc, acc_mem(x, a), acc_nan(x, a), l, slot, &flag, 0);
        }
    }
    return x->k->next[loop];
}

/* Loop id's accumulations into accumulators declared before it go into per-lane partials. */
static void start_partials(xs *x, uint32_t id) {
    const kx_kernel *k = x->k;
    const uint32_t *rd = k->redir + k->redir_at[id];
    for (uint32_t i = 0; i < k->n_redir[id]; i++) {
        acc_init(&x->kd->stmts[rd[i]], part_mem(x, rd[i]), part_nan(x, rd[i]), KX_LANES);
        x->redirect[rd[i]] = 1;
    }
}

/* ... and are folded in lane order into their accumulators after it (a column's: into the
 * element's, col_off) */
static void fold_partials(xs *x, uint32_t id) {
    const kx_kernel *k = x->k;
    const uint32_t *rd = k->redir + k->redir_at[id];
    for (uint32_t i = 0; i < k->n_redir[id]; i++) {
        const kd_stmt *a = &x->kd->stmts[rd[i]];
        x->redirect[rd[i]] = 0;
        int64_t to = a->column ? x->col_off : 0;
        if (!a->red.arith && ir_dtype_compute(a->dtype) == KILN_DTYPE_F32) {
            /* a float max or min: one loop (an exact fold, in lane order all the same) */
            float *d = (float *)acc_mem(x, rd[i]) + to, m = *d;
            const float *pp = (const float *)part_mem(x, rd[i]);
            const uint8_t *pn = part_nan(x, rd[i]);
            uint8_t flag = 0;
            if (a->red.op == IR_REDUCE_MAX)
                for (int64_t p = 0; p < KX_LANES; p++) m = pp[p] > m ? pp[p] : m;
            else
                for (int64_t p = 0; p < KX_LANES; p++) m = pp[p] < m ? pp[p] : m;
            for (int64_t p = 0; p < KX_LANES; p++) flag |= pn[p];
            *d = m;
            acc_nan(x, rd[i])[to] |= flag;
            continue;
        }
        for (int64_t p = 0; p < KX_LANES; p++)
            fold_one(a, acc_mem(x, rd[i]), acc_nan(x, rd[i]), to, part_mem(x, rd[i]),
                     part_nan(x, rd[i]), p);
    }
}

/* Runs statements [from, to) over lanes [lane0, lane0 + n) of variable var, at most
 * KX_LANES (KX_NONE: the split variable's quotients, x->split set by the caller); a part
 * that stopped the element (save_part) stops only this block. */
static void run_lanes(xs *x, uint32_t var, int64_t lane0, int64_t n, uint32_t from, uint32_t to) {
    x->vec = true, x->lane_var = var, x->lane0 = lane0;
    x->lanes = n < KX_LANES ? n : KX_LANES;
    run_range(x, from, to, NULL);
    x->stop = false;
}

/* Back to one uniform lane. */
static void leave_lanes(xs *x) {
    x->vec = false, x->lane_var = KX_NONE, x->lanes = 1, x->split = 0;
}

/* Iterations [lo, hi) of LOOP id (n >= 0), or the element loop's chunk: across them as
 * lanes where the loop may run so, else one at a time; its f32 blocks opened, flushed at
 * each block's end and closed. */
static void run_span(xs *x, uint32_t id, int64_t lo, int64_t hi, const uint8_t *mask) {
    const kx_kernel *k = x->k;
    const kd_stmt *s = &x->kd->stmts[id];
    uint32_t end = k->next[id];
    bool blocks = s->n >= 0 && (k->blk_acc[id] || k->col_blk[id]);
    if (blocks) blk_open(x, id, lo);
    if (s->n < 0 || (k->across[id] && !x->vec)) { /* lanes across the loop */
        bool elements = s->n < 0;
        int64_t from = elements ? x->jb : lo, to = elements ? x->je : hi;
        /* an element's column (one element at a time) outlives a loop across inside it */
        int64_t col = x->col_off;
        start_partials(x, id);
        for (int64_t b = from; b < to; b += KX_LANES) {
            if (elements) x->col_off = b - from;
            run_lanes(x, s->var, b, to - b, id + 1, end);
            int64_t done = b + KX_LANES < to ? b + KX_LANES : to;
            if (blocks && blk_ends(x, id, from, done, to)) blk_flush(x, id);
        }
        leave_lanes(x);
        x->col_off = elements ? 0 : col;
        fold_partials(x, id);
    } else {
        for (int64_t v = lo; v < hi; v++) {
            x->var[s->var] = v;
            run_range(x, id + 1, end, mask);
            if (blocks && blk_ends(x, id, lo, v + 1, hi)) blk_flush(x, id);
        }
    }
    if (blocks) blk_close(x, id);
}

/* LOOP id, the outermost loop of an accumulator added in slices (kd_stmt.slices): each
 * slice from the accumulator's initial value, its result then combined with the value
 * before it, as the C dialect's print_slice_open and print_slice_close. */
static void run_slices(xs *x, uint32_t id, const uint8_t *mask) {
    const kd_stmt *s = &x->kd->stmts[id];
    uint32_t a = s->slice_acc;
    const kd_stmt *acc = &x->kd->stmts[a];
    int64_t k = acc->slices, n = s->n, lanes = x->acc_n[a];
    double *d = (double *)acc_mem(x, a);
    double *prev = (double *)(x->prev + (size_t)x->k->acc_slot[a] * (size_t)x->k->acc_lanes * 8);
    for (int64_t q = 0; q < k; q++) {
        memcpy(prev, d, (size_t)lanes * sizeof *d);
        acc_init(acc, d, acc_nan(x, a), lanes);
        run_span(x, id, q * n / k, (q + 1) * n / k, mask);
        for (int64_t l = 0; l < lanes; l++)
            d[l] = acc->red.op == IR_REDUCE_SUM ? d[l] + prev[l] : d[l] * prev[l];
    }
}

/* A LOOP at statement id; returns its END. */
static uint32_t run_loop(xs *x, uint32_t id, const uint8_t *mask) {
    const kx_kernel *k = x->k;
    const kd_stmt *s = &x->kd->stmts[id];
    uint32_t end = k->next[id];
    if (s->n < 0 && x->vec) { /* rows as lanes: the elements one at a time */
        for (int64_t j = x->jb; j < x->je; j++) {
            x->var[s->var] = j;
            run_range(x, id + 1, end, mask);
        }
        return end;
    }
    if (k->interchange[id] && !x->vec && x->je - x->jb < 2 * KX_FEW_LANES && k->col_blk[id] &&
        k->stage_cols) {
        /* the same with f32 column sums: a chunk of rows for every column, staged, then
         * added row by row, the columns' sums side by side (one sum's additions are a chain
         * of dependent f32 additions) */
        uint32_t el = id + 1, el_end = k->next[el];
        blk_open(x, id, 0);
        x->blk_stage = true;
        for (int64_t b = 0; b < s->n; b += KX_LANES) {
            int64_t lanes = s->n - b < KX_LANES ? s->n - b : KX_LANES;
            for (int64_t j = x->jb; j < x->je; j++) {
                x->var[x->kd->stmts[el].var] = j;
                x->col_off = j - x->jb;
                start_partials(x, id);
                run_lanes(x, s->var, b, lanes, el + 1, el_end);
                leave_lanes(x);
                fold_partials(x, id); /* exact ones (max, min): per chunk is as good */
            }
            blk_add_stage(x, id, lanes);
            if (blk_ends(x, id, 0, b + lanes, s->n)) blk_flush(x, id);
        }
        x->blk_stage = false;
        blk_close(x, id);
        x->col_off = 0;
        return end;
    }
    if (k->interchange[id] && !x->vec && x->je - x->jb < 2 * KX_FEW_LANES) {
        /* a column reduction over few columns: each column's reduction across its rows */
        uint32_t el = id + 1, el_end = k->next[el];
        for (int64_t j = x->jb; j < x->je; j++) {
            x->var[x->kd->stmts[el].var] = j;
            x->col_off = j - x->jb;
            start_partials(x, id);
            if (k->col_blk[id]) blk_open(x, id, 0);
            for (int64_t b = 0; b < s->n; b += KX_LANES) {
                run_lanes(x, s->var, b, s->n - b, el + 1, el_end);
                int64_t done = b + KX_LANES < s->n ? b + KX_LANES : s->n;
                if (k->col_blk[id] && blk_ends(x, id, 0, done, s->n)) blk_flush(x, id);
            }
            leave_lanes(x);
            fold_partials(x, id); /* into column col_off */
            if (k->col_blk[id]) blk_close(x, id);
        }
        x->col_off = 0;
        return end;
    }
    if (s->n < 0 && k->one_by_one[id] && (x->je - x->jb < KX_FEW_LANES || k->rows_across[id])) {
        /* few elements, each with a long loop inside: one element at a time, uniform, so
         * that the loops inside run across their iterations (a sum over a long row to one
         * value per row) */
        for (int64_t j = x->jb; j < x->je; j++) {
            x->var[s->var] = j;
            x->col_off = j - x->jb;
            run_range(x, id + 1, end, NULL);
            x->stop = false;
        }
        x->col_off = 0;
        return end;
    }
    int64_t lo = 0, hi = s->n;
    if (x->part_mode && id == x->kd->part_loop) {
        if (x->part_mode == 2) return combine_parts(x, id);
        lo = x->part_no * s->n / x->kd->parts, hi = (x->part_no + 1) * s->n / x->kd->parts;
    } else if (s->slice_acc) {
        run_slices(x, id, mask);
        return end;
    }
    if (s->n < 0 && k->split_lanes && !x->vec && (x->je - x->jb) % x->kd->split == 0 &&
        x->jb % x->kd->split == 0) {
        int64_t sp = x->kd->split, from = x->jb / sp, to = x->je / sp;
        for (int64_t b = from; b < to; b += KX_LANES)
            for (int64_t r = 0; r < sp; r++) {
                x->split = sp, x->split_r = r;
                run_lanes(x, KX_NONE, b, to - b, id + 1, end);
            }
        leave_lanes(x);
        return end;
    }
    run_span(x, id, lo, hi, mask);
    if (x->part_mode == 1 && id == x->kd->part_loop) save_part(x);
    return end;
}

static void run_range(xs *x, uint32_t from, uint32_t to, const uint8_t *mask) {
    const kd_kernel *kd = x->kd;
    for (uint32_t id = from; id < to && !x->stop; id++) {
        const kd_stmt *s = &kd->stmts[id];
        switch (s->kind) {
        case KS_LIT: do_lit(x, id); break;
        case KS_LOAD: do_load(x, id, mask); break;
        case KS_IOTA: {
            ixr r = eval_ix(x, s->ix, 0);
            int64_t n = r.kind == 0 || !x->vec ? 1 : x->lanes;
            if (n > 1) materialise(x, &r, ixbuf(x, 0));
            from_i64(s->dtype, val(x, id), r.kind == 2 ? r.v : &r.base, n);
            x->uni[id] = n == 1;
            if (x->k->rnd[id]) x->k->rnd[id](n, val(x, id), NULL);
            break;
        }
        case KS_OP: do_op(x, id); break;
        case KS_CLAMP: {
            uint32_t a = s->args[0];
            int64_t n = x->uni[a] ? 1 : x->lanes, *o = (int64_t *)val(x, id);
            to_i64(kd->stmts[a].dtype, o, val(x, a), n);
            for (int64_t l = 0; l < n; l++) {
                int64_t v = o[l] < 0 ? o[l] + s->wrap : o[l];
                o[l] = v < 0 ? 0 : v > s->n ? s->n : v;
            }
            x->uni[id] = n == 1;
            break;
        }
        case KS_DECL:
            if (s->n_args) {
                uint32_t a = s->args[0];
                size_t sz = csize(s->dtype);
                memcpy(val(x, id), val(x, a), x->uni[a] ? sz : (size_t)x->lanes * sz);
                x->uni[id] = x->uni[a];
            } else {
                memset(val(x, id), 0, 8);
                x->uni[id] = 1;
            }
            break;
        case KS_ASSIGN: do_assign(x, s, mask); break;
        case KS_IF: id = run_chain(x, id, mask); break;
        case KS_LOOP: id = run_loop(x, id, mask); break;
        case KS_ACC: {
            int64_t n = s->column ? x->k->acc_lanes : x->lanes;
            acc_init(s, acc_mem(x, id), acc_nan(x, id), n);
            x->acc_n[id] = s->column ? n : (x->vec ? x->lanes : 1);
            x->redirect[id] = 0;
            x->blk_on[id] = 0;
            break;
        }
        case KS_ACCUM: do_accum(x, s, mask); break;
        case KS_RESULT: do_result(x, id); break;
        case KS_STORE: do_store(x, id, mask); break;
        case KS_ELSE_IF:
        case KS_ELSE:
        case KS_END: break; /* run_chain and run_loop step over these */
        }
    }
}

/* ------------------------------------------------------------------ runs ---- */

typedef struct kx_call {
    const kx_kernel *k;
    int part_mode; /* xs.part_mode: items are then the parts (1) or the one item (2) */
    char *part_out;
} kx_call;

static void run_call(const void *arg, void *const *bufs, int64_t begin, int64_t end,
                     void *scratch) {
    const kx_call *call = arg;
    const kx_kernel *k = call->k;
    const kd_kernel *kd = &k->kd;
    char *mem = scratch;
    size_t n = kd->n_stmts;
    xs x = {.k = k,
            .kd = kd,
            .bufs = bufs,
            .lane_var = KX_NONE,
            .lanes = 1,
            .part_mode = call->part_mode,
            .part_out = call->part_out};
    char *p = mem;
#define TAKE(field, bytes)                                                                         \
    do {                                                                                           \
        x.field = (void *)p;                                                                       \
        p += ((size_t)(bytes) + 63) & ~(size_t)63;                                                 \
    } while (0)
    TAKE(vals, n * KX_LANES * 8);
    TAKE(var, (size_t)kd->n_vars * 8);
    TAKE(uni, n);
    TAKE(acc_n, n * 8);
    TAKE(redirect, n);
    TAKE(acc, (size_t)k->n_accs * (size_t)k->acc_lanes * 8);
    TAKE(accnan, (size_t)k->n_accs * (size_t)k->acc_lanes);
    TAKE(part, (size_t)k->n_accs * KX_LANES * 8);
    TAKE(partnan, (size_t)k->n_accs * KX_LANES);
    TAKE(blk, (size_t)k->n_accs * (size_t)k->blk_floats * sizeof(float));
    TAKE(blk_on, n);
    TAKE(blk_from, n * 8);
    TAKE(prev, (size_t)k->n_accs * (size_t)k->acc_lanes * 8);
    TAKE(ixb, (size_t)k->n_ixbufs * KX_LANES * 8);
    TAKE(tmp[0], KX_LANES * 8);
    TAKE(tmp[1], KX_LANES * 8);
    TAKE(tmp[2], KX_LANES * 8);
    TAKE(h16, KX_LANES * 2);
    TAKE(var_lanes, kd->n_vars);
    TAKE(var_ix, (size_t)kd->n_vars * sizeof(ixr));
    TAKE(axis_buf, (size_t)KILN_MAX_RANK * KX_LANES * 8);
    TAKE(masks, (size_t)k->n_masks * 2 * KX_LANES);
#undef TAKE
    memset(x.redirect, 0, n);
    memset(x.blk_on, 0, n);
    memset(x.var_lanes, 0, kd->n_vars);
    if (k->row_lanes && !x.part_mode) {
        /* rows as lanes: an item is a row (one chunk), or a tiled kernel's items go down
         * the rows of one chunk (a block stops at the chunk's last row) */
        for (int64_t b = begin, lanes; b < end; b += lanes) {
            int64_t row = kd->tiled ? b % kd->rows : b, c = kd->tiled ? b / kd->rows : 0;
            lanes = end - b < KX_LANES ? end - b : KX_LANES;
            if (lanes > kd->rows - row) lanes = kd->rows - row;
            x.vec = true;
            x.lane_var = kd->row_var;
            x.lane0 = row;
            x.lanes = lanes;
            x.jb = c * kd->chunk;
            x.je = x.jb + kd->chunk < kd->inner ? x.jb + kd->chunk : kd->inner;
            for (int a = 0; a + 1 < kd->rank; a++) {
                ixr r = eval_ix(&x, kd->axis_def[a], 0);
                if (r.kind == 2) {
                    int64_t *buf = x.axis_buf + (size_t)a * KX_LANES;
                    memcpy(buf, r.v, (size_t)x.lanes * sizeof *buf);
                    r.v = buf;
                }
                x.var_ix[kd->axis_var[a]] = r;
                x.var_lanes[kd->axis_var[a]] = 1;
            }
            x.mdepth = 0;
            run_range(&x, 1, kd->n_stmts, NULL);
            memset(x.var_lanes, 0, kd->n_vars);
        }
        return;
    }
    for (int64_t i = begin; i < end; i++) {
        int64_t it = x.part_mode == 1 ? 0 : i; /* a part's item is the kernel's one */
        x.part_no = i;
        /* tiled (a transpose's few columns an item): down the rows first, as the C dialect */
        int64_t row = kd->tiled ? it % kd->rows : it / kd->chunks,
                c = kd->tiled ? it / kd->rows : it % kd->chunks;
        x.jb = c * kd->chunk;
        x.je = x.jb + kd->chunk < kd->inner ? x.jb + kd->chunk : kd->inner;
        x.var[kd->row_var] = row;
        for (int a = 0; a + 1 < kd->rank; a++) {
            ixr r = eval_ix(&x, kd->axis_def[a], 0);
            x.var[kd->axis_var[a]] = r.base;
        }
        x.mdepth = 0;
        run_range(&x, 1, kd->n_stmts, NULL);
        x.stop = false;
    }
}

kiln_status kx_launch(const kx_kernel *k, const kn_backend *b, void *state, int device,
                      void *const *bufs) {
    const kd_kernel *kd = &k->kd;
    if (kd->parts < 2) {
        kx_call call = {.k = k};
        return b->launch_host(state, device, run_call, &call, bufs, k->items, k->grain, k->scratch);
    }
    /* a split reduction: the parts on the pool, then the combining run, as the C
     * dialect's kiln_k<i>_part and kiln_k<i> (cgen.h) */
    size_t bytes = (size_t)kd->parts * (size_t)kd->inner * KD_PART_BYTES;
    char *out = host_alloc(kd->ctx, bytes);
    if (!out)
        return ctx_oom(kd->ctx, "a kernel run from its description: its split reduction's parts",
                       bytes);
    kx_call parts = {.k = k, .part_mode = 1, .part_out = out};
    kiln_status s = b->launch_host(state, device, run_call, &parts, bufs, kd->parts, 1, k->scratch);
    kx_call combine = {.k = k, .part_mode = 2, .part_out = out};
    if (!s) /* on this thread, in a scratch of its own */
        s = b->launch_host(state, device, run_call, &combine, bufs, 1, 1, k->scratch);
    host_free(kd->ctx, out, bytes);
    return s;
}

/* --------------------------------------------------------------- prepare ---- */

/* The deepest nesting of index buffers evaluating ix takes (eval_ix: one per level). */
static uint32_t ix_depth(const kd_kernel *kd, uint32_t ix) {
    const kd_index *d = &kd->ixs[ix];
    uint32_t most = 1;
    for (uint32_t i = 0; i < d->n; i++) {
        const kd_atom *a = &kd->atoms[kd->terms[d->first + i].atom];
        uint32_t t = 2;
        if (a->kind == KD_ATOM_DIV || a->kind == KD_ATOM_MOD) t = 1 + ix_depth(kd, a->arg);
        most = t > most ? t : most;
    }
    return most;
}

/* Whether accumulator a's result depends on the order of its additions: a float sum or
 * product (max, min and integer arithmetic, which wraps, do not). */
static bool ordered(const kd_stmt *a) {
    return a->red.arith && a->red.acc_type == KILN_DTYPE_F64;
}

/* Whether the C dialect's target prints the pragma of a few-valued reduction
 * (kd_stmt.simd_narrow): without AVX-512 (KILN_ACROSS_ROWS 0 under -march=native). */
static bool narrow_pragma(void) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    return !__builtin_cpu_supports("avx512f");
#else
    return true;
#endif
}

/* Whether the C dialect prints an `omp simd` reduction on LOOP statement `loop` (a
 * reduction's innermost loop): its simd flag, or simd_narrow where the target has no
 * AVX-512; but a prologue taken row by row (kd->prologue_rows) sums a kept row in a loop of
 * its own (kd_kept_row_store) with simd_narrow alone, none on rows of at most
 * KD_TINY_REDUCE (print_c.c, print_prologue_rows). */
static bool reduction_pragma(const kd_kernel *kd, uint32_t loop) {
    const kd_stmt *l = &kd->stmts[loop];
    if (kd->prologue_rows > 1) {
        uint32_t e = 1; /* the element loop: the prologue is before it */
        while (e < kd->n_stmts && !(kd->stmts[e].kind == KS_LOOP && kd->stmts[e].n < 0)) e++;
        if (loop < e && kd_kept_row_store(kd, loop))
            return kd->inner > KD_TINY_REDUCE && narrow_pragma();
    }
    return l->simd || (l->simd_narrow && narrow_pragma());
}

/* Whether op computes a float value in more than one rounding (a polynomial with fused
 * multiply-adds, a libm call): on operands gcc sees as constants it folds the whole at
 * compile time, rounding each step apart, where the op library's loop fuses them. The
 * others are one IEEE operation (or exact), which folds to the machine's bits. */
static bool multi_rounding(ir_op op) {
    switch (op) {
    case IR_EXP:
    case IR_LOG:
    case IR_LOG1P:
    case IR_RSQRT:
    case IR_TANH:
    case IR_LOGISTIC:
    case IR_SIN:
    case IR_COS:
    case IR_ERF:
    case IR_POW:
    case IR_EXPM1:
    case IR_TAN:
    case IR_SINH:
    case IR_COSH:
    case IR_ASIN:
    case IR_ACOS:
    case IR_ATAN:
    case IR_ASINH:
    case IR_ACOSH:
    case IR_ATANH:
    case IR_ERFC:
    case IR_ERF_INV:
    case IR_LGAMMA:
    case IR_DIGAMMA:
    case IR_CBRT:
    case IR_ATAN2: return true;
    default: return false;
    }
}

/* Whether some float op of the kernel may have only compile-time constants for operands
 * in the compiled kernel: literals, an iota (a loop gcc unrolls makes its variable a
 * constant), and what ops compute from them, through declared variables; a product's
 * value is opaque (KILN_ROUNDED, print.c). Then gcc may fold a multi_rounding op's value,
 * and tier 1 cannot give its bits. Iterated to a fixpoint: a loop's assignment reaches
 * the statements before it in the next iteration. */
static bool folds_constants(const kd_kernel *kd, uint8_t *maybe) {
    uint32_t n = kd->n_stmts;
    memset(maybe, 0, n);
    for (bool changed = true; changed;) {
        changed = false;
        for (uint32_t i = 1; i < n; i++) {
            const kd_stmt *s = &kd->stmts[i];
            uint8_t m = 0;
            uint32_t to = i;
            switch (s->kind) {
            case KS_LIT:
            case KS_IOTA: m = 1; break;
            case KS_DECL: m = s->n_args && maybe[s->args[0]]; break;
            case KS_ASSIGN: to = s->args[0], m = maybe[s->args[1]]; break;
            case KS_OP: {
                m = s->n_args > 0;
                for (uint32_t a = 0; a < s->n_args; a++) m &= maybe[s->args[a]];
                if (m && ir_dtype_is_float(s->dtype) && multi_rounding(s->op)) return true;
                if (pr_product_valued(s->op, s->dtype) && !s->round) m = 0;
                break;
            }
            default: break;
            }
            if (m && !maybe[to]) maybe[to] = 1, changed = true;
        }
    }
    return false;
}

/* The loops that open f32 blocks, as print_c.c's c_loop and print_range_loop open them
 * (blk_acc, col_blk, blk_loop); and whether every float sum and product adds in the
 * order the compiled kernel does, and no op can be folded (why_not NULL), which is what
 * tier 1 promises (kx_replays). scratch: n_stmts bytes. */
static void find_blocks(kx_kernel *k, uint8_t *scratch) {
    kd_kernel *kd = &k->kd;
    uint32_t n = kd->n_stmts, col_accs = 0, loops = 0, slices = 0;
    for (uint32_t a = 1; a < n; a++)
        col_accs += kd->stmts[a].kind == KS_ACC && kd->stmts[a].column && kd->stmts[a].red.blocked;
    for (uint32_t i = 1; i < n; i++) {
        const kd_stmt *st = &kd->stmts[i];
        if (st->kind != KS_LOOP || st->n < 0) continue;
        slices += st->slice_acc != 0;
        if (st->col_block && col_accs) {
            k->col_blk[i] = true, loops++;
            for (uint32_t a = 1; a < n; a++)
                if (kd->stmts[a].kind == KS_ACC && kd->stmts[a].column && kd->stmts[a].red.blocked)
                    k->blk_loop[a] = i;
        } else if (st->acc && kd->stmts[st->acc].red.blocked && !kd->stmts[st->acc].column) {
            k->blk_acc[i] = st->acc, loops++;
            k->blk_loop[st->acc] = i;
        }
    }
    k->why_not = NULL;
    if (folds_constants(kd, scratch))
        k->why_not = "a float op on values the C compiler may fold at compile time";
    else if (loops >= KD_OPEN_BLOCKS || slices >= KD_OPEN_BLOCKS)
        k->why_not = "more f32 blocks or slices than the C dialect opens at once";
    for (uint32_t a = 1; a < n && !k->why_not; a++) {
        const kd_stmt *s = &kd->stmts[a];
        if (s->kind != KS_ACC || !ordered(s)) continue;
        if (s->red.blocked && !k->blk_loop[a])
            k->why_not = "an f32 sum outside a block";
        else if (s->red.blocked && !s->column && !kd_accum_once(kd, k->blk_loop[a], a))
            k->why_not = "an f32 sum that adds more than once an iteration";
        else if (s->red.blocked && kd->prologue_rows > 1)
            k->why_not = "an f32 sum in a prologue taken row by row";
        else if (s->column && s->slices > 1)
            k->why_not = "a column's sum in slices";
        for (uint32_t i = 1; i < n && !k->why_not && !s->red.blocked; i++) {
            const kd_stmt *l = &kd->stmts[i];
            if (l->kind == KS_LOOP && l->acc == a && reduction_pragma(kd, i))
                k->why_not = "a float sum or product the C compiler vectorises in an order of "
                             "its own (an `omp simd` reduction)";
        }
    }
}

static kiln_status prepare_fail(kx_kernel *k, kiln_status s) {
    kx_free(k);
    return s;
}

kiln_status kx_prepare(const kiln_graph *g, const fusion_plan *p, uint32_t ki, kx_kernel **out) {
    kiln_context *ctx = g->ctx;
    *out = NULL;
    kx_kernel *k = host_calloc(ctx, 1, sizeof *k);
    if (!k) return ctx_oom(ctx, "kiln_compile: an interpreted kernel", sizeof *k);
    kiln_status s = kd_lower(g, p, ki, &k->kd);
    k->kd.ctx = ctx;
    if (s) return prepare_fail(k, s);
    kd_kernel *kd = &k->kd;
    uint32_t n = kd->n_stmts;
    k->fn = host_calloc(ctx, n, sizeof *k->fn);
    k->rnd = host_calloc(ctx, n, sizeof *k->rnd);
    k->next = host_calloc(ctx, n + 1, sizeof *k->next);
    k->acc_slot = host_calloc(ctx, n, sizeof *k->acc_slot);
    k->across = host_calloc(ctx, n, sizeof *k->across);
    k->one_by_one = host_calloc(ctx, n, sizeof *k->one_by_one);
    k->rows_across = host_calloc(ctx, n, sizeof *k->rows_across);
    k->interchange = host_calloc(ctx, n, sizeof *k->interchange);
    k->redir_at = host_calloc(ctx, n, sizeof *k->redir_at);
    k->n_redir = host_calloc(ctx, n, sizeof *k->n_redir);
    k->redir = host_calloc(ctx, n, sizeof *k->redir);
    k->blk_acc = host_calloc(ctx, n, sizeof *k->blk_acc);
    k->col_blk = host_calloc(ctx, n, sizeof *k->col_blk);
    k->blk_loop = host_calloc(ctx, n, sizeof *k->blk_loop);
    uint32_t *stack = host_calloc(ctx, n + 1, sizeof *stack);
    if (!k->fn || !k->rnd || !k->next || !k->acc_slot || !k->across || !k->one_by_one ||
        !k->rows_across || !k->interchange || !k->redir_at || !k->n_redir || !k->redir ||
        !k->blk_acc || !k->col_blk || !k->blk_loop || !stack) {
        host_free(ctx, stack, (n + 1) * sizeof *stack);
        return prepare_fail(k, ctx_oom(ctx, "kiln_compile: an interpreted kernel", n));
    }
    /* brackets: each LOOP's END, each branch's next branch; the depth of ifs (masks) */
    uint32_t sp = 0, ifs = 0, most_ifs = 0, depth_ix = 1;
    for (uint32_t i = 1; i < n; i++) {
        kd_stmt *st = &kd->stmts[i];
        switch (st->kind) {
        case KS_LOOP:
        case KS_IF:
            if (st->kind == KS_IF) most_ifs = ++ifs > most_ifs ? ifs : most_ifs;
            stack[sp++] = i;
            break;
        case KS_ELSE_IF:
        case KS_ELSE:
            if (sp) k->next[stack[sp - 1]] = i, stack[sp - 1] = i;
            break;
        case KS_END:
            if (sp) {
                uint32_t o = stack[--sp];
                k->next[o] = i;
                if (kd->stmts[o].kind != KS_LOOP) ifs--;
            }
            break;
        case KS_ACC: k->acc_slot[i] = k->n_accs++; break;
        case KS_OP: {
            int variant = 0;
            if (st->op == IR_COMPARE) variant = (int)st->attrs->cmp;
            if (st->op == IR_RANDOM) variant = st->attrs->rng * 16 + (int)st->round;
            k->fn[i] = kx_oplib_find((int)st->op, (int)st->in_dtype, (int)st->dtype, variant);
            if (!k->fn[i]) {
                host_free(ctx, stack, (n + 1) * sizeof *stack);
                return prepare_fail(
                    k, ctx_error(ctx, KILN_STATUS_INTERNAL,
                                 "kiln_compile: the interpreter's op library has no loop for %s "
                                 "of %s giving %s (kernel %u)",
                                 ir_ops[st->op].name, kiln_dtype_name(st->in_dtype),
                                 kiln_dtype_name(st->dtype), ki));
            }
            if (st->round) k->rnd[i] = kx_oplib_half(2, st->round == KILN_DTYPE_F16);
            break;
        }
        case KS_IOTA:
        case KS_RESULT:
            if (st->round) k->rnd[i] = kx_oplib_half(2, st->round == KILN_DTYPE_F16);
            break;
        default: break;
        }
        if (st->kind == KS_LOAD || st->kind == KS_STORE || st->kind == KS_IOTA) {
            uint32_t d = ix_depth(kd, st->ix);
            depth_ix = d > depth_ix ? d : depth_ix;
        }
        for (uint32_t gi = 0; (st->kind == KS_IF || st->kind == KS_ELSE_IF) && gi < st->n_guards;
             gi++) {
            uint32_t d = ix_depth(kd, kd->guards[st->guard + gi].ix);
            depth_ix = d > depth_ix ? d : depth_ix;
        }
    }
    for (int a = 0; a + 1 < kd->rank; a++) {
        uint32_t d = ix_depth(kd, kd->axis_def[a]);
        depth_ix = d > depth_ix ? d : depth_ix;
    }
    find_blocks(k, (uint8_t *)stack);
    /* loops that may run across their iterations (when not nested in a vectorised loop):
     * innermost, assigning no variable declared outside them; and what they accumulate
     * into from outside. Element loops with a long loop inside (one_by_one). */
    for (uint32_t i = 1; i < n; i++) {
        kd_stmt *st = &kd->stmts[i];
        if (st->kind != KS_LOOP) continue;
        uint32_t end = k->next[i];
        if (st->n < 0) {
            for (uint32_t j = i + 1; j < end; j++)
                if (kd->stmts[j].kind == KS_LOOP && kd->stmts[j].n >= KX_LONG_LOOP)
                    k->one_by_one[i] = true;
            continue;
        }
        if (kd->columns && st->n >= KX_LONG_LOOP && i + 1 < end &&
            kd->stmts[i + 1].kind == KS_LOOP && kd->stmts[i + 1].n < 0 &&
            k->next[i + 1] + 1 == end) {
            /* a column reduction's innermost loop around the element loop alone */
            bool ok = true;
            for (uint32_t j = i + 2; j < k->next[i + 1] && ok; j++) {
                const kd_stmt *b = &kd->stmts[j];
                ok = b->kind != KS_LOOP && !(b->kind == KS_ASSIGN && b->args[0] < i) &&
                     !(b->kind == KS_ACCUM && (b->args[0] > i || !kd->stmts[b->args[0]].column));
                /* a column's float sum outside a block adds row after row (above) */
                ok = ok && !(b->kind == KS_ACCUM && !k->blk_loop[b->args[0]] &&
                             ordered(&kd->stmts[b->args[0]]));
            }
            if (ok) {
                k->interchange[i] = true;
                k->redir_at[i] = k->n_redirs;
                for (uint32_t j = i + 2; j < k->next[i + 1]; j++) {
                    const kd_stmt *b = &kd->stmts[j];
                    if (b->kind != KS_ACCUM || k->blk_loop[b->args[0]] == i) continue;
                    bool seen = false;
                    for (uint32_t r = k->redir_at[i]; r < k->n_redirs; r++)
                        seen |= k->redir[r] == b->args[0];
                    if (!seen) k->redir[k->n_redirs++] = b->args[0], k->n_redir[i]++;
                }
                continue;
            }
        }
        bool ok = true;
        for (uint32_t j = i + 1; j < end && ok; j++) {
            const kd_stmt *b = &kd->stmts[j];
            if (b->kind == KS_LOOP) ok = false;
            if (b->kind == KS_ASSIGN && b->args[0] < i) ok = false;
            /* per-lane partials would add a long float sum in another order than the
             * compiled loop's, one iteration after another (of at most KX_LANES they do not:
             * each partial holds one value) */
            if (b->kind == KS_ACCUM && b->args[0] < i && !k->blk_loop[b->args[0]] &&
                ordered(&kd->stmts[b->args[0]]) && st->n > KX_LANES)
                ok = false;
        }
        if (!ok) continue;
        k->across[i] = true;
        k->redir_at[i] = k->n_redirs;
        for (uint32_t j = i + 1; j < end; j++) {
            const kd_stmt *b = &kd->stmts[j];
            if (b->kind != KS_ACCUM || b->args[0] > i || kd->stmts[b->args[0]].column ||
                k->blk_loop[b->args[0]] == i)
                continue;
            bool seen = false;
            for (uint32_t r = k->redir_at[i]; r < k->n_redirs; r++)
                seen |= k->redir[r] == b->args[0];
            if (!seen) k->redir[k->n_redirs++] = b->args[0], k->n_redir[i]++;
        }
    }
    for (uint32_t i = 1; i < n; i++) {
        if (!k->one_by_one[i]) continue;
        bool all = true;
        for (uint32_t j = i + 1; j < k->next[i]; j++) {
            const kd_stmt *l = &kd->stmts[j];
            if (l->kind == KS_LOOP && l->n >= KX_LONG_LOOP)
                all &= k->across[j] && l->n >= KX_ROWS_ACROSS;
        }
        k->rows_across[i] = all;
    }
    host_free(ctx, stack, (n + 1) * sizeof *stack);
    k->n_masks = most_ifs + 1;
    k->n_ixbufs = depth_ix + 2;
    k->acc_lanes = kd->chunk > KX_LANES ? kd->chunk : KX_LANES;
    /* stage_cols: an interchanged blocked column loop, each blocked column accumulator
     * added by one ACCUM (once a row) */
    k->stage_cols = false;
    for (uint32_t i = 1; i < n; i++) k->stage_cols |= k->interchange[i] && k->col_blk[i];
    for (uint32_t a = 1; a < n && k->stage_cols; a++) {
        if (kd->stmts[a].kind != KS_ACC || !kd->stmts[a].column || !k->blk_loop[a]) continue;
        int accums = 0;
        for (uint32_t u = 1; u < n; u++)
            accums += kd->stmts[u].kind == KS_ACCUM && kd->stmts[u].args[0] == a;
        k->stage_cols = accums == 1;
    }
    /* a block's state: a scalar's 16 sum lanes per lane, or a column's f32 sums and, when
     * staged, a chunk of rows for each of at most 2 * KX_FEW_LANES columns */
    k->blk_floats = k->acc_lanes + (k->stage_cols ? 2 * KX_FEW_LANES * KX_LANES : 0);
    if (k->blk_floats < KX_SUM_LANES * KX_LANES) k->blk_floats = KX_SUM_LANES * KX_LANES;
    k->row_lanes = !kd->columns && kd->parts < 2 && kd->rows >= KX_LANES &&
                   ((kd->chunks == 1 && kd->inner <= KX_ROW_INNER) ||
                    (kd->tiled && kd->chunk <= 2 * KX_ROW_INNER));
    k->split_lanes = kd->split > 1 && !kd->columns && kd->parts < 2 && !k->row_lanes;
    k->items = kd->inner && kd->rows ? kd->rows * kd->chunks : 0;
    k->grain = kd->grain > 0 ? kd->grain : 1;
    size_t b = 0;
#define ADD(bytes) (b += ((size_t)(bytes) + 63) & ~(size_t)63)
    ADD((size_t)n * KX_LANES * 8);
    ADD((size_t)kd->n_vars * 8);
    ADD(n);
    ADD((size_t)n * 8);
    ADD(n);
    ADD((size_t)k->n_accs * (size_t)k->acc_lanes * 8);
    ADD((size_t)k->n_accs * (size_t)k->acc_lanes);
    ADD((size_t)k->n_accs * KX_LANES * 8);
    ADD((size_t)k->n_accs * KX_LANES);
    ADD((size_t)k->n_accs * (size_t)k->blk_floats * sizeof(float));
    ADD(n);
    ADD((size_t)n * 8);
    ADD((size_t)k->n_accs * (size_t)k->acc_lanes * 8);
    ADD((size_t)k->n_ixbufs * KX_LANES * 8);
    ADD(3 * KX_LANES * 8);
    ADD(KX_LANES * 2);
    ADD(kd->n_vars);
    ADD((size_t)kd->n_vars * sizeof(ixr));
    ADD((size_t)KILN_MAX_RANK * KX_LANES * 8);
    ADD((size_t)k->n_masks * 2 * KX_LANES);
#undef ADD
    k->scratch = b;
    *out = k;
    return KILN_STATUS_OK;
}

void kx_free(kx_kernel *k) {
    if (!k) return;
    kiln_context *ctx = k->kd.ctx;
    uint32_t n = k->kd.n_stmts;
    host_free(ctx, k->fn, n * sizeof *k->fn);
    host_free(ctx, k->rnd, n * sizeof *k->rnd);
    host_free(ctx, k->next, (n + 1) * sizeof *k->next);
    host_free(ctx, k->acc_slot, n * sizeof *k->acc_slot);
    host_free(ctx, k->across, n * sizeof *k->across);
    host_free(ctx, k->one_by_one, n * sizeof *k->one_by_one);
    host_free(ctx, k->rows_across, n * sizeof *k->rows_across);
    host_free(ctx, k->interchange, n * sizeof *k->interchange);
    host_free(ctx, k->redir_at, n * sizeof *k->redir_at);
    host_free(ctx, k->n_redir, n * sizeof *k->n_redir);
    host_free(ctx, k->redir, n * sizeof *k->redir);
    host_free(ctx, k->blk_acc, n * sizeof *k->blk_acc);
    host_free(ctx, k->col_blk, n * sizeof *k->col_blk);
    host_free(ctx, k->blk_loop, n * sizeof *k->blk_loop);
    kd_free(&k->kd);
    host_free(ctx, k, sizeof *k);
}

unsigned kx_forms(const kx_kernel *k) {
    unsigned f = 0;
    for (uint32_t i = 1; i < k->kd.n_stmts; i++) {
        if (k->across[i]) f |= KX_FORM_ACROSS;
        if (k->one_by_one[i]) f |= KX_FORM_ONE_BY_ONE;
        if (k->interchange[i]) f |= KX_FORM_INTERCHANGE;
        if (k->blk_acc[i] || k->col_blk[i]) f |= KX_FORM_BLOCKS;
        if (k->kd.stmts[i].kind == KS_LOOP && k->kd.stmts[i].slice_acc) f |= KX_FORM_SLICES;
    }
    if (k->row_lanes) f |= KX_FORM_ROW_LANES;
    if (k->split_lanes) f |= KX_FORM_SPLIT_LANES;
    if (k->kd.parts > 1) f |= KX_FORM_PARTS;
    return f;
}

bool kx_replays(const kx_kernel *k, const char **why) {
    if (why) *why = k->why_not;
    return !k->why_not;
}
