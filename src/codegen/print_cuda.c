/* print_cuda.c — the CUDA renderer (printer.h): what the GPU's dialect spells its own way.
 *
 * A kernel is `extern "C" __global__ void kiln_k<i>(in..., out..., int64_t items)` (cgen.h)
 * whose blocks of CGEN_CUDA_THREADS threads take work items in a grid-stride loop. The
 * schedule (kd_kernel.sched, schedule.c) gives the kernel its form and its own chunk of
 * the last axis (the description's index expressions do not depend on the chunk):
 * elementwise and column-reduction kernels give each thread one element of the chunk at
 * a time (consecutive threads, consecutive elements: coalesced); a kernel with a
 * reduction inside its element loop gives each element a warp (or, when there are few
 * elements, the whole block), whose lanes stride the reduction's innermost loop and
 * combine their accumulators with warp shuffles (and shared memory across warps) at the
 * result; everything else in the element is computed by every lane alike and stored by
 * lane 0. A kernel with row values (kd_kernel.prologue) gives each row a block: the whole
 * block strides the prologue's reductions and combines them as above, so that every
 * thread holds the row's values, and then each thread takes elements of the row as in an
 * elementwise kernel; the row's elements that two passes read, and the values it keeps
 * for the element loop, are held in __shared__ row caches (kiln_row<c>, each element one
 * lane's: schedule.c, row_cache_plan) so that the row is read from device memory once; the
 * passes take 16 bytes of the row a lane a trip where they can (print_row_pass). Rows
 * of at most KD_ROW_SHORT are several a block (kd_sched.row_group), each a group of whole
 * warps that plays the block's part for its row: its lanes stride the passes, a butterfly
 * of shuffles combines them, and a group of several warps passes its warps' results
 * through shared memory behind a barrier of its own (__barrier_sync_count, named by the
 * group), so that no row waits for another; each row has its own row of every cache. An
 * elementwise kernel over short rows gives a block several rows too, each a slice of its
 * threads. Combining happens in a fixed order, so a kernel's result
 * does not depend on scheduling. An elementwise kernel the schedule marks `vec` takes four or
 * eight elements per thread, its contiguous loads and stores as vector accesses (print_vec:
 * 16 bytes of f32 or i32, 8 or 16 of bf16 or f16). A split reduction (an element split of a kernel
 * with few values and long reductions, or a column split of a column reduction of few items) runs
 * as two kernels: kiln_k<i>_part gives each slice of the split loops a block, whose lanes combine
 * their accumulators and store one partial result, and kiln_k<i> combines the parts, lane l taking
 * parts l, l + 256, ... and the lanes then combining as above: a fixed order, so the result does
 * not depend on the grid either. The part kernel's items and the scratch's bytes are stated in the
 * program (kiln_k<i>_parts) for the backend, which runs the two kernels (cgen.h). Loops over the
 * lanes are unrolled (CU_UNROLL), so that each thread has several loads in flight. Every
 * shuffle, __syncthreads and group barrier is reached by all the lanes it names: the code
 * around it depends only on the item and the element, never on the lane (a group's item
 * is the same for all its threads, and only the whole group leaves past the last row). */
#include "prelude.h"
#include "printer.h"

#include <stdio.h>
#include <string.h>

typedef struct cupr {
    pr p;             /* first: a cupr is the pr the shared printer is given */
    int stripe_depth; /* depth of the lane-strided loop being printed (0: none) */
    bool in_elems;    /* KD_CUDA_ROW: printing the element loop (after the prologue) */
    int lane;         /* sched.vec: which of the elements is being printed (-1: none) */
    char row_c[24];   /* KD_CUDA_ROW, sched.vec: the printed pass' vector index (w c: its first) */
    uint8_t *striped; /* per ACC statement: its innermost loop was lane-strided */
} cupr;

#define CU(p) ((cupr *)(p))

static void cu_stmt(pr *p, uint32_t id);

/* The accumulator of ACC statement a: a column form's is this thread's element of the
 * chunk. */
static void cu_acc_name(const pr *p, uint32_t a, bool nan, char *out) {
    const kd_kernel *kd = p->kd;
    const kd_stmt *s = &kd->stmts[a];
    char v[PR_NAME_LEN];
    pr_var_name(kd, s->var, v);
    const char *suffix = nan ? "_nan" : "";
    if (s->column)
        snprintf(out, PR_ACC_LEN, "acc%u%s[(%s - jb) / %d]", a, suffix, v, CGEN_CUDA_THREADS);
    else
        snprintf(out, PR_ACC_LEN, "acc%u%s", a, suffix);
}

static void cu_acc(pr *p, uint32_t id) {
    const kd_stmt *s = &p->kd->stmts[id];
    const char *at = pr_acc_ctype(s);
    const char *init = pr_acc_init(s);
    if (s->column) {
        int64_t slots = (p->chunk + CGEN_CUDA_THREADS - 1) / CGEN_CUDA_THREADS;
        pr_line(p, "%s acc%u[%lld];", at, id, (long long)slots);
        if (s->red.nan_flag) pr_line(p, "uint8_t acc%u_nan[%lld];", id, (long long)slots);
        pr_line(p, "for (int s = 0; s < %lld; s++) acc%u[s] = %s;", (long long)slots, id, init);
        if (s->red.nan_flag)
            pr_line(p, "for (int s = 0; s < %lld; s++) acc%u_nan[s] = 0;", (long long)slots, id);
        return;
    }
    pr_line(p, "%s acc%u = %s;", at, id, init);
    if (s->red.nan_flag) pr_line(p, "uint8_t acc%u_nan = 0;", id);
}

/* CUDA: whether each thread computes elements of its own here: everywhere in KD_CUDA_THREADS,
 * and in KD_CUDA_ROW's element loop (the prologue before it is the whole row's). */
static bool thread_per_element(const pr *p) {
    return p->kd->sched.form == KD_CUDA_THREADS ||
           (p->kd->sched.form == KD_CUDA_ROW && CU(p)->in_elems);
}

/* The threads of a row: the block's, or with several rows a block (kd_sched.row_group)
 * its slice's, a power of two (whole warps in KD_CUDA_ROW). */
static int row_threads(const kd_kernel *kd) {
    return kd->sched.row_group > 1 ? (int)(CGEN_CUDA_THREADS / kd->sched.row_group)
                                   : CGEN_CUDA_THREADS;
}

/* KD_CUDA_ROW over short rows: a barrier of the row's threads alone, named 1 + the row's
 * group (0 is __syncthreads'), so that a block's rows never wait for each other and a
 * group past the last row may leave. A group is at least a warp, and the hardware has 16
 * barriers a block. */
_Static_assert(CGEN_CUDA_THREADS / 32 + 1 <= 16, "a named barrier for every warp of a block");
static void print_row_barrier(pr *p, const char *why) {
    int t = row_threads(p->kd);
    pr_line(p, "__barrier_sync_count(1 + threadIdx.x / %d, %d);%s", t, t, why);
}

/* Before a loop strided over the lanes: its iterations unrolled, so that each lane has
 * several loads in flight. A loop taking one element a trip keeps one load of 2 or 4 bytes
 * in flight per thread, too few bytes to cover the device memory's latency: a block-per-row
 * softmax or layer norm ran at a third of the copy's bandwidth, and at bf16 at a sixth.
 * The strides are the block's size as a constant (every kernel is launched with
 * CGEN_CUDA_THREADS threads, cgen.h), so the compiler knows the trip counts. */
#define CU_UNROLL     "#pragma unroll 4"
#define CU_UNROLL_ROW "#pragma unroll 8" /* a row's passes: a short row's lane share in one */
/* (the passes that take w elements a lane a trip, print_row_pass, unroll by CU_UNROLL) */
_Static_assert(KD_ROW_LANE_ELEMS == 8, "a short row's lane share is one trip of CU_UNROLL_ROW");

/* A column split's columns a block (schedule.c, cuda_column_split): a warp's, each column
 * taken by CGEN_CUDA_COL_LANES threads, thread t lane t / CU_COL_CHUNK of column
 * t % CU_COL_CHUNK in the part kernel (so that a warp reads a row's consecutive columns)
 * and of column t / CGEN_CUDA_COL_LANES in the combining one (so that a column's lanes
 * are one warp's, for the shuffles). */
#define CU_COL_CHUNK (CGEN_CUDA_THREADS / CGEN_CUDA_COL_LANES)
_Static_assert(CU_COL_CHUNK == 32 && CU_COL_CHUNK <= CGEN_CUDA_THREADS,
               "a column split's chunk is a warp's columns, one accumulator slot a thread");

/* KD_CUDA_ROW: the element loop begins; in place, every thread's prologue reads of the row
 * come before any thread's stores. */
static void enter_elems(pr *p) {
    if (CU(p)->in_elems) return;
    CU(p)->in_elems = true;
    if (p->kd->in_place && p->kd->sched.row_group > 1)
        print_row_barrier(p, "");
    else if (p->kd->in_place)
        pr_line(p, "__syncthreads();");
}

/* CUDA's loops: the chunk's elements spread over the threads, warps or (one at a time) the
 * block, and a reduction's innermost loop strided over the lanes sharing an element (in
 * KD_CUDA_ROW, the row's threads: the block's or its group's). */
static void print_cuda_loop(pr *p, const kd_stmt *s, const char *v) {
    const kd_kernel *kd = p->kd;
    bool rows = kd->sched.form == KD_CUDA_ROW && kd->sched.row_group > 1;
    char lane[48] = "threadIdx.x";
    int group = kd->sched.form == KD_CUDA_WARP ? 32 : rows ? row_threads(kd) : CGEN_CUDA_THREADS;
    if (kd->sched.form == KD_CUDA_WARP)
        snprintf(lane, sizeof lane, "(threadIdx.x & 31)");
    else if (rows)
        snprintf(lane, sizeof lane, "(threadIdx.x %% %d)", group);
    if (s->n < 0 && kd->sched.form == KD_CUDA_ROW) enter_elems(p);
    if (s->n < 0 && thread_per_element(p) && kd->sched.row_group > 1) {
        long long t = row_threads(kd);
        if (rows) pr_line(p, CU_UNROLL_ROW);
        pr_line(p, "for (int64_t %s = jb + threadIdx.x %% %lld; %s < je; %s += %lld) {", v, t, v, v,
                t);
    } else if (s->n < 0 && thread_per_element(p) && p->kd->sched.form == KD_CUDA_THREADS &&
               p->chunk <= CGEN_CUDA_THREADS) {
        /* a chunk no wider than the block: a thread's one element, not a loop, so that the
         * loops around it (a column reduction's rows) can be unrolled; when every chunk is
         * the block's width, every thread has its element, and no test stands between the
         * unrolled loads */
        if (p->part_mode == 1 && kd->columns && kd->inner % CU_COL_CHUNK == 0) {
            pr_line(p, "{"); /* a column split's part kernel: every thread's column is there */
            p->depth++;
            pr_line(p, "const int64_t %s = jb + threadIdx.x %% %d;", v, CU_COL_CHUNK);
            p->depth--;
        } else if (p->part_mode == 1 && kd->columns)
            pr_line(p, "if (int64_t %s = jb + threadIdx.x %% %d; %s < je) {", v, CU_COL_CHUNK, v);
        else if (p->chunk == CGEN_CUDA_THREADS && p->kd->inner % CGEN_CUDA_THREADS == 0) {
            pr_line(p, "{");
            p->depth++;
            pr_line(p, "const int64_t %s = jb + threadIdx.x;", v);
            p->depth--;
        } else
            pr_line(p, "if (int64_t %s = jb + threadIdx.x; %s < je) {", v, v);
    } else if (s->n < 0 && thread_per_element(p)) {
        if (p->kd->sched.form == KD_CUDA_ROW) pr_line(p, CU_UNROLL_ROW);
        pr_line(p, "for (int64_t %s = jb + threadIdx.x; %s < je; %s += %d) {", v, v, v,
                CGEN_CUDA_THREADS);
    } else if (s->n < 0 && p->kd->sched.form == KD_CUDA_WARP)
        pr_line(p, "for (int64_t %s = jb + (threadIdx.x >> 5); %s < je; %s += %d) {", v, v, v,
                CGEN_CUDA_THREADS / 32);
    else if (s->n < 0)
        pr_line(p, "for (int64_t %s = jb; %s < je; %s++) {", v, v, v);
    else if (s->acc && !thread_per_element(p) && !CU(p)->stripe_depth) {
        CU(p)->stripe_depth = p->depth + 1;
        CU(p)->striped[s->acc] = 1;
        pr_line(p, p->kd->sched.form == KD_CUDA_ROW ? CU_UNROLL_ROW : CU_UNROLL);
        pr_line(p, "for (int64_t %s = %s; %s < %lld; %s += %d) {", v, lane, v, (long long)s->n, v,
                group);
    } else {
        if (s->acc && thread_per_element(p)) pr_line(p, CU_UNROLL);
        pr_line(p, "for (int64_t %s = 0; %s < %lld; %s++) {", v, v, (long long)s->n, v);
    }
    p->depth++;
}

static void cu_loop(pr *p, const kd_stmt *s) {
    char v[PR_NAME_LEN];
    pr_var_name(p->kd, s->var, v);
    if (p->part_mode == 1 && s->sched & KD_SCHED_SPLIT_LOOP) {
        /* this block's slice of the split loop, strided over the lanes when it is the
         * reduction's innermost loop */
        long long n = (long long)s->n;
        unsigned id = (unsigned)(s - p->kd->stmts); /* several split loops share a scope */
        int parts = (int)p->kd->sched.parts;
        pr_line(p,
                "const int64_t kiln_lo%u = kiln_q * %lld / %d, kiln_hi%u = (kiln_q + 1) * %lld / "
                "%d;",
                id, n, parts, id, n, parts);
        if (p->kd->columns) { /* a column's lanes take every CGEN_CUDA_COL_LANES-th row */
            pr_line(p, CU_UNROLL);
            pr_line(p,
                    "for (int64_t %s = kiln_lo%u + threadIdx.x / %d; %s < kiln_hi%u; %s += %d) {",
                    v, id, CU_COL_CHUNK, v, id, v, CGEN_CUDA_COL_LANES);
        } else if (s->acc && !CU(p)->stripe_depth) {
            CU(p)->stripe_depth = p->depth + 1;
            CU(p)->striped[s->acc] = 1;
            pr_line(p, CU_UNROLL);
            pr_line(p, "for (int64_t %s = kiln_lo%u + threadIdx.x; %s < kiln_hi%u; %s += %d) {", v,
                    id, v, id, v, CGEN_CUDA_THREADS);
        } else {
            if (s->acc && thread_per_element(p)) pr_line(p, CU_UNROLL);
            pr_line(p, "for (int64_t %s = kiln_lo%u; %s < kiln_hi%u; %s++) {", v, id, v, id, v);
        }
        p->depth++;
        return;
    }
    print_cuda_loop(p, s, v);
    if (s->n < 0) pr_split_names(p);
}

/* The item's indices: in a part kernel, items are (part, item). */
static void cu_item(pr *p) {
    const char *it = "it";
    if (p->part_mode == 1) {
        pr_line(p, "const int64_t kiln_q = it / %lld, kiln_it = it %% %lld;",
                (long long)p->kd->sched.base_items, (long long)p->kd->sched.base_items);
        it = "kiln_it";
    }
    pr_item(p, it, false);
}

/* CUDA: the lanes' partial accumulators of a lane-strided reduction, combined so that
 * every lane holds the whole: a butterfly of warp shuffles, then (a block per element)
 * the warps' results through shared memory, in warp order. */
/* A butterfly of warp shuffles over the lanes 0 .. 2 * from - 1 of each group: accumulator
 * a (and its NaN flag nan) of every lane of the group becomes the group's, combined in a
 * fixed order. */
static void print_butterfly(pr *p, const kd_stmt *acc, const char *a, const char *nan, int from) {
    pr_line(p, "for (int o = %d; o > 0; o >>= 1) {", from);
    p->depth++;
    pr_line(p, "const %s t = kiln_shfl(%s, o);", pr_acc_ctype(acc), a);
    pr_combine_line(p, acc, a, "t");
    if (acc->red.nan_flag) pr_line(p, "%s |= kiln_shfl(%s, o);", nan, nan);
    p->depth--;
    pr_line(p, "}");
}

/* A block per element or per row: the warps' results then go through shared memory, a
 * slot per warp, and every lane takes them in warp order. A short row's group of warps
 * (kd_sched.row_group) takes its own warps' slots behind barriers of its own; a group of
 * one warp is done with the butterfly. */
static void print_combine(pr *p, uint32_t a_id) {
    const kd_kernel *kd = p->kd;
    const kd_stmt *acc = &kd->stmts[a_id];
    const char *at = pr_acc_ctype(acc);
    char a[PR_ACC_LEN], nan[PR_ACC_LEN];
    p->acc_name(p, a_id, false, a);
    p->acc_name(p, a_id, true, nan);
    print_butterfly(p, acc, a, nan, 16);
    if (kd->sched.form != KD_CUDA_BLOCK && kd->sched.form != KD_CUDA_ROW) return;
    bool rows = kd->sched.form == KD_CUDA_ROW && kd->sched.row_group > 1;
    int slots = CGEN_CUDA_THREADS / 32, warps = rows ? row_threads(kd) / 32 : slots;
    if (warps == 1) return;
    char first[48] = "0", w[64] = "w"; /* the group's first warp's slot, and warp w's */
    if (rows) {
        snprintf(first, sizeof first, "threadIdx.x / %d * %d", row_threads(kd), warps);
        snprintf(w, sizeof w, "%s + w", first);
    }
    pr_line(p, "{");
    p->depth++;
    pr_line(p, "__shared__ %s sh%u[%d];", at, a_id, slots);
    if (acc->red.nan_flag) pr_line(p, "__shared__ uint8_t sh%u_nan[%d];", a_id, slots);
    pr_line(p, "if ((threadIdx.x & 31) == 0) {");
    pr_line(p, "    sh%u[threadIdx.x >> 5] = %s;", a_id, a);
    if (acc->red.nan_flag) pr_line(p, "    sh%u_nan[threadIdx.x >> 5] = %s;", a_id, nan);
    pr_line(p, "}");
    if (rows)
        print_row_barrier(p, "");
    else
        pr_line(p, "__syncthreads();");
    pr_line(p, "%s = sh%u[%s];", a, a_id, first);
    if (acc->red.nan_flag) pr_line(p, "%s = sh%u_nan[%s];", nan, a_id, first);
    pr_line(p, "for (int w = 1; w < %d; w++) {", warps);
    p->depth++;
    char t[96];
    snprintf(t, sizeof t, "sh%u[%s]", a_id, w);
    pr_combine_line(p, acc, a, t);
    if (acc->red.nan_flag) pr_line(p, "%s |= sh%u_nan[%s];", nan, a_id, w);
    p->depth--;
    pr_line(p, "}");
    char why[64];
    snprintf(why, sizeof why, " /* before the next %s writes sh%u */", rows ? "row" : "item", a_id);
    if (rows)
        print_row_barrier(p, why);
    else
        pr_line(p, "__syncthreads();%s", why);
    p->depth--;
    pr_line(p, "}");
}

/* The storage dtype of the buffer vector access s reads or writes. */
static kiln_dtype vec_stored(const kd_kernel *kd, const kd_stmt *s) {
    return s->kind == KS_STORE || s->keep ? kd->out_type[s->slot] : kd->in_type[s->slot];
}

/* The CUDA type of w elements of t (vec_plan: 4 of a 4-byte type, 4 or 8 of a 16-bit
 * one, whose halves sit in 32-bit words, the element of lower index in the low half). */
static const char *vec_type(kiln_dtype t, int w) {
    if (ir_dtype_is_half(t)) return w == 8 ? "uint4" : "uint2";
    return t == KILN_DTYPE_F32 ? "float4" : "int4";
}

/* The vector accesses (KD_SCHED_VLOAD, _VSTORE) among statements lo .. hi - 1, at w
 * elements, in a block where variable v is `first` (the first of the elements; split: the
 * last axis' split names too): the loads (into q<id>) or the stores (of st<id>). */
static void print_vec_moves(pr *p, uint32_t lo, uint32_t hi, int w, const char *v,
                            const char *first, bool split, bool load) {
    const kd_kernel *kd = p->kd;
    uint8_t mark = load ? KD_SCHED_VLOAD : KD_SCHED_VSTORE;
    uint32_t any = lo;
    while (any < hi && !(kd->stmts[any].sched & mark)) any++;
    if (any == hi) return;
    pr_line(p, "{");
    pr_line(p, "    const int64_t %s = %s;", v, first);
    p->depth++;
    if (split) pr_split_names(p);
    for (uint32_t s = lo; s < hi; s++) {
        const kd_stmt *st = &kd->stmts[s];
        if (!(st->sched & mark)) continue;
        const char *buf = load && !st->keep ? "in" : "out", *ty = vec_type(vec_stored(kd, st), w);
        pr_indent(p);
        if (load)
            sb_printf(p->sb, "q%u = *(const %s *)&%s%u[", s, ty, buf, st->slot);
        else
            sb_printf(p->sb, "*(%s *)&%s%u[", ty, buf, st->slot);
        pr_ix(kd, p->sb, st->ix);
        if (load)
            sb_append(p->sb, "];\n");
        else
            sb_printf(p->sb, "] = st%u;\n", s);
    }
    p->depth--;
    pr_line(p, "}");
}

/* One trip of a loop w elements a thread (or lane), statements lo .. hi - 1 its body: the
 * vector loads (at the first element, `first`), the elements one by one (each its own
 * block, where variable v names that element and a vector load's lane of it is its load),
 * the vector stores. */
static void print_vec_trip(pr *p, uint32_t lo, uint32_t hi, int w, const char *v, const char *first,
                           bool split) {
    const kd_kernel *kd = p->kd;
    for (uint32_t s = lo; s < hi; s++) {
        const kd_stmt *st = &kd->stmts[s];
        if (st->sched & KD_SCHED_VLOAD) pr_line(p, "%s q%u;", vec_type(vec_stored(kd, st), w), s);
        if (st->sched & KD_SCHED_VSTORE) pr_line(p, "%s st%u;", vec_type(vec_stored(kd, st), w), s);
    }
    print_vec_moves(p, lo, hi, w, v, first, split, true);
    for (int k = 0; k < w; k++) {
        CU(p)->lane = k;
        pr_line(p, "{");
        p->depth++;
        pr_line(p, "const int64_t %s = %s + %d;", v, first, k);
        if (split) pr_split_names(p);
        for (uint32_t s = lo; s < hi; s++) cu_stmt(p, s);
        p->depth--;
        pr_line(p, "}");
    }
    CU(p)->lane = -1;
    print_vec_moves(p, lo, hi, w, v, first, split, false);
}

/* The element loop w elements per thread (print_vec_trip). */
static void print_vec(pr *p) {
    const kd_kernel *kd = p->kd;
    int w = kd->sched.vec;
    char last[PR_NAME_LEN];
    pr_var_name(kd, kd->last_var, last);
    if (kd->sched.row_group > 1) {
        long long t = CGEN_CUDA_THREADS / kd->sched.row_group;
        pr_line(p,
                "for (int64_t kiln_j = jb + %d * (int64_t)(threadIdx.x %% %lld); kiln_j < je; "
                "kiln_j += %lld) {",
                w, t, w * t);
    } else
        pr_line(p,
                "for (int64_t kiln_j = jb + %d * (int64_t)threadIdx.x; kiln_j < je; kiln_j += %d "
                "* (int64_t)blockDim.x) {",
                w, w);
    p->depth++;
    print_vec_trip(p, 2, kd->n_stmts - 1, w, last, "kiln_j", true); /* the element's */
    p->depth--;
    pr_line(p, "}");
}

/* KD_CUDA_ROW, a pass over the row marked KD_SCHED_VLOOP (schedule.c, row_vec_plan): lane l
 * of the row's t takes elements w c .. w c + w - 1 for c = l, l + t, ... (row_c), a trip
 * each (print_vec_trip). Returns the pass' END. */
static uint32_t print_row_pass(pr *p, uint32_t s) {
    const kd_kernel *kd = p->kd;
    const kd_stmt *st = &kd->stmts[s];
    const int w = kd->sched.vec;
    const uint32_t end = kd_loop_end(kd, s);
    const bool elems = st->n < 0;
    const long long t = row_threads(kd), n = (long long)(kd->inner / w);
    char v[PR_NAME_LEN], lane[48] = "threadIdx.x", first[64];
    pr_var_name(kd, st->var, v);
    if (kd->sched.row_group > 1) snprintf(lane, sizeof lane, "(threadIdx.x %% %lld)", t);
    if (elems)
        enter_elems(p);
    else {
        CU(p)->stripe_depth = p->depth + 1;
        CU(p)->striped[st->acc] = 1;
    }
    char *c = CU(p)->row_c;
    snprintf(c, sizeof CU(p)->row_c, "kiln_c%u", s);
    snprintf(first, sizeof first, "%s%d * %s", elems ? "jb + " : "", w, c);
    pr_line(p, CU_UNROLL);
    pr_line(p, "for (int64_t %s = %s; %s < %lld; %s += %lld) {", c, lane, c, n, c, t);
    p->depth++;
    print_vec_trip(p, s + 1, end, w, v, first, elems);
    p->depth--;
    pr_line(p, "}");
    if (!elems) CU(p)->stripe_depth = 0;
    return end;
}

/* Lane k's element of vector load `id` (q<id>), or its share of vector store `id`
 * (st<id> = value a): a 16-bit one is half of the 32-bit word k / 2, widened or narrowed
 * through half.h; the stores' even lanes come first and set the whole word. */
static void print_lane(pr *p, const kd_stmt *s, uint32_t id, const char *a) {
    int k = CU(p)->lane;
    kiln_dtype t = vec_stored(p->kd, s);
    if (!ir_dtype_is_half(t)) {
        if (s->kind == KS_LOAD)
            pr_line(p, "const %s v%u = q%u.%c;", cgen_ctype(s->dtype), id, id, "xyzw"[k]);
        else
            pr_line(p, "st%u.%c = %s;", id, "xyzw"[k], a);
        return;
    }
    const char *sfx = pr_dtype_suffix(t);
    char word = "xyzw"[k / 2];
    if (s->kind == KS_LOAD)
        pr_line(p, "const float v%u = kiln_ld_%s((uint16_t)(q%u.%c%s));", id, sfx, id, word,
                k % 2 ? " >> 16" : "");
    else if (k % 2 == 0)
        pr_line(p, "st%u.%c = (unsigned)kiln_st_%s(%s);", id, word, sfx, a);
    else
        pr_line(p, "st%u.%c |= (unsigned)kiln_st_%s(%s) << 16;", id, word, sfx, a);
}

/* CUDA: the opening of kiln_k<i>_part (a block per (part, item)) up to the item's names,
 * and its end, after which p prints kiln_k<i> (flags of the printing cleared but the split
 * marks). Shared by the element split and the column split. */
static void cuda_part_open(pr *p) {
    sb_printf(p->sb, "extern \"C\" __global__ void __launch_bounds__(%d) kiln_k%u_part(",
              CGEN_CUDA_THREADS, p->kd->index);
    pr_buffers(p, true, "__restrict__ ");
    sb_append(p->sb, "unsigned char *__restrict__ kiln_part, int64_t items) {\n");
    pr_line(p, "for (int64_t it = blockIdx.x; it < items; it += gridDim.x) {");
    p->depth++;
    p->part_mode = 1;
    cu_item(p);
}

static void cuda_part_close(pr *p) {
    p->depth--;
    pr_line(p, "}");
    sb_append(p->sb, "}\n");
    p->part_mode = 2;
    CU(p)->stripe_depth = 0;
    memset(CU(p)->striped, 0, p->kd->n_stmts + 1);
}

/* CUDA, split reductions (cuda_element_split): kiln_k<i>_part, a block per (part,
 * element): each split reduction's loops over the part's slice, the lanes' accumulators
 * combined, and lane 0 storing the element's partial results. Leaves p ready to print
 * kiln_k<i>. */
static void print_cuda_part_fn(pr *p) {
    const kd_kernel *kd = p->kd;
    char slot[PR_ACC_LEN + 96], a[PR_ACC_LEN], nan[PR_ACC_LEN];
    cuda_part_open(p);
    cu_stmt(p, 1); /* the element loop */
    for (uint32_t s = 2; s < kd->n_stmts; s++) {
        if (!(p->kd->stmts[s].sched & KD_SCHED_SPLIT)) continue;
        uint32_t last = kd_loop_end(kd, s + 1);
        for (uint32_t t = s; t <= last; t++) cu_stmt(p, t);
        s = last;
    }
    for (uint32_t s = 2; s < kd->n_stmts; s++) {
        const kd_stmt *acc = &kd->stmts[s];
        if (!(p->kd->stmts[s].sched & KD_SCHED_SPLIT)) continue;
        if (CU(p)->striped[s]) print_combine(p, s);
        pr_part_slot(p, (int)p->kd->stmts[s].split_k, "kiln_q", slot, sizeof slot);
        p->acc_name(p, s, false, a);
        p->acc_name(p, s, true, nan);
        pr_line(p, "if (threadIdx.x == 0) {");
        pr_line(p, "    *(%s *)(%s) = %s;", pr_acc_ctype(acc), slot, a);
        if (acc->red.nan_flag) pr_line(p, "    (%s)[8] = %s;", slot, nan);
        pr_line(p, "}");
    }
    p->depth--;
    pr_line(p, "}"); /* the element loop */
    cuda_part_close(p);
}

/* The column accumulators' count (a column split stores each). */
static int column_accs(const kd_kernel *kd) {
    int n = 0;
    for (uint32_t a = 1; a < kd->n_stmts; a++)
        n += kd->stmts[a].kind == KS_ACC && kd->stmts[a].column;
    return n;
}

/* CUDA, a column split: kiln_k<i>_part, a block per (part, item): the reduce loops over
 * the part's slice, each column's CGEN_CUDA_COL_LANES lanes taking every eighth row of it;
 * then each column's lanes combined through shared memory in lane order, and the column's
 * partial results (every column accumulator's) stored by its lane 0. */
static void print_cuda_col_part_fn(pr *p) {
    const kd_kernel *kd = p->kd;
    char v[PR_NAME_LEN], slot[PR_ACC_LEN + 96], a[PR_ACC_LEN], nan[PR_ACC_LEN];
    cuda_part_open(p);
    uint32_t last = kd_loop_end(kd, kd->sched.split_loop);
    for (uint32_t s = 1; s <= last; s++) cu_stmt(p, s);
    pr_var_name(kd, kd->last_var, v);
    pr_line(p, "{");
    p->depth++;
    for (uint32_t s = 1; s < kd->n_stmts; s++) {
        const kd_stmt *acc = &kd->stmts[s];
        if (acc->kind != KS_ACC || !acc->column) continue;
        pr_line(p, "__shared__ %s kiln_col%u[%d];", pr_acc_ctype(acc), s, CGEN_CUDA_THREADS);
        if (acc->red.nan_flag)
            pr_line(p, "__shared__ uint8_t kiln_col%u_nan[%d];", s, CGEN_CUDA_THREADS);
        /* the accumulator's one slot (cu_acc: a chunk of CU_COL_CHUNK <= the block's width) */
        pr_line(p, "kiln_col%u[threadIdx.x] = acc%u[0];", s, s);
        if (acc->red.nan_flag) pr_line(p, "kiln_col%u_nan[threadIdx.x] = acc%u_nan[0];", s, s);
    }
    pr_line(p, "__syncthreads();");
    pr_line(p, "if (int64_t %s = jb + threadIdx.x; threadIdx.x < %d && %s < je) {", v, CU_COL_CHUNK,
            v);
    p->depth++;
    int k = 0;
    for (uint32_t s = 1; s < kd->n_stmts; s++) {
        const kd_stmt *acc = &kd->stmts[s];
        if (acc->kind != KS_ACC || !acc->column) continue;
        const char *at = pr_acc_ctype(acc);
        snprintf(a, sizeof a, "kiln_c%u", s);
        snprintf(nan, sizeof nan, "kiln_c%u_nan", s);
        pr_line(p, "%s %s = kiln_col%u[threadIdx.x];", at, a, s);
        if (acc->red.nan_flag) pr_line(p, "uint8_t %s = kiln_col%u_nan[threadIdx.x];", nan, s);
        pr_line(p, "for (int l = 1; l < %d; l++) {", CGEN_CUDA_COL_LANES);
        p->depth++;
        pr_line(p, "const %s t = kiln_col%u[threadIdx.x + l * %d];", at, s, CU_COL_CHUNK);
        pr_combine_line(p, acc, a, "t");
        if (acc->red.nan_flag)
            pr_line(p, "%s |= kiln_col%u_nan[threadIdx.x + l * %d];", nan, s, CU_COL_CHUNK);
        p->depth--;
        pr_line(p, "}");
        pr_part_slot(p, k++, "kiln_q", slot, sizeof slot);
        pr_line(p, "*(%s *)(%s) = %s;", at, slot, a);
        if (acc->red.nan_flag) pr_line(p, "(%s)[8] = %s;", slot, nan);
    }
    p->depth--;
    pr_line(p, "}");
    pr_line(p, "__syncthreads(); /* before the next item writes its lanes' sums */");
    p->depth--;
    pr_line(p, "}");
    cuda_part_close(p);
}

/* CUDA, a column split: in kiln_k<i>, the columns' parts added up in place of the reduce
 * loops: each column's CGEN_CUDA_COL_LANES lanes (threads of one warp) take every eighth
 * part, several in flight, and combine by warp shuffles in a fixed order (a butterfly over
 * the lanes); the columns' totals go through shared memory to the thread that owns the
 * column in the rest of the kernel. */
static void print_col_combine(pr *p) {
    const kd_kernel *kd = p->kd;
    char v[PR_NAME_LEN], slot[PR_ACC_LEN + 96], a[PR_ACC_LEN], nan[PR_ACC_LEN];
    pr_var_name(kd, kd->last_var, v);
    const int lanes = CGEN_CUDA_COL_LANES;
    pr_line(p, "{");
    p->depth++;
    for (uint32_t s = 1; s < kd->n_stmts; s++) {
        const kd_stmt *acc = &kd->stmts[s];
        if (acc->kind != KS_ACC || !acc->column) continue;
        pr_line(p, "__shared__ %s kiln_col%u[%d];", pr_acc_ctype(acc), s, CU_COL_CHUNK);
        if (acc->red.nan_flag)
            pr_line(p, "__shared__ uint8_t kiln_col%u_nan[%d];", s, CU_COL_CHUNK);
    }
    pr_line(p, "{");
    p->depth++;
    pr_line(p, "const int64_t %s = jb + threadIdx.x / %d;", v, lanes);
    int k = 0;
    for (uint32_t s = 1; s < kd->n_stmts; s++) {
        const kd_stmt *acc = &kd->stmts[s];
        if (acc->kind != KS_ACC || !acc->column) continue;
        const char *at = pr_acc_ctype(acc);
        snprintf(a, sizeof a, "kiln_c%u", s);
        snprintf(nan, sizeof nan, "kiln_c%u_nan", s);
        pr_line(p, "%s %s = %s;", at, a, pr_acc_init(acc));
        if (acc->red.nan_flag) pr_line(p, "uint8_t %s = 0;", nan);
        pr_part_slot(p, k++, "kiln_q", slot, sizeof slot);
        pr_line(p, "if (%s < je) {", v);
        p->depth++;
        pr_line(p, CU_UNROLL);
        pr_line(p, "for (int64_t kiln_q = threadIdx.x %% %d; kiln_q < %lld; kiln_q += %d) {", lanes,
                (long long)kd->sched.parts, lanes);
        p->depth++;
        pr_line(p, "const %s t = *(const %s *)(%s);", at, at, slot);
        pr_combine_line(p, acc, a, "t");
        if (acc->red.nan_flag) pr_line(p, "%s |= (%s)[8];", nan, slot);
        p->depth--;
        pr_line(p, "}");
        p->depth--;
        pr_line(p, "}");
        print_butterfly(p, acc, a, nan, lanes / 2);
        pr_line(p, "if (threadIdx.x %% %d == 0) {", lanes);
        pr_line(p, "    kiln_col%u[threadIdx.x / %d] = %s;", s, lanes, a);
        if (acc->red.nan_flag)
            pr_line(p, "    kiln_col%u_nan[threadIdx.x / %d] = %s;", s, lanes, nan);
        pr_line(p, "}");
    }
    p->depth--;
    pr_line(p, "}");
    pr_line(p, "__syncthreads();");
    /* each thread's own column: its accumulators take the totals */
    pr_line(p, "if (int64_t %s = jb + threadIdx.x; threadIdx.x < %d && %s < je) {", v, CU_COL_CHUNK,
            v);
    p->depth++;
    for (uint32_t s = 1; s < kd->n_stmts; s++) {
        const kd_stmt *acc = &kd->stmts[s];
        if (acc->kind != KS_ACC || !acc->column) continue;
        p->acc_name(p, s, false, a);
        p->acc_name(p, s, true, nan);
        pr_line(p, "%s = kiln_col%u[threadIdx.x];", a, s);
        if (acc->red.nan_flag) pr_line(p, "%s = kiln_col%u_nan[threadIdx.x];", nan, s);
    }
    p->depth--;
    pr_line(p, "}");
    pr_line(p, "__syncthreads(); /* before the next item writes the totals */");
    p->depth--;
    pr_line(p, "}");
}

/* C, kd->parts: in kiln_k<i>, the parts' accumulators combined in order instead of the
 * split loop. */

/* An element split: in kiln_k<i>, the parts' accumulators combined instead of the split
 * loop, the lanes taking the parts in turn; the RESULT's combine adds up the lanes. */
static void print_part_combine(pr *p, uint32_t acc_id, int k) {
    const kd_stmt *acc = &p->kd->stmts[acc_id];
    char slot[PR_ACC_LEN + 96], a[PR_ACC_LEN];
    snprintf(a, sizeof a, "acc%u", acc_id);
    pr_line(p, CU_UNROLL);
    pr_line(p, "for (int64_t kiln_q = threadIdx.x; kiln_q < %lld; kiln_q += %d) {",
            (long long)p->kd->sched.parts, CGEN_CUDA_THREADS);
    CU(p)->striped[acc_id] = 1;
    p->depth++;
    pr_part_slot(p, k, "kiln_q", slot, sizeof slot);
    /* slots are 16-byte aligned */
    pr_line(p, "const %s t = *(const %s *)(%s);", pr_acc_ctype(acc), pr_acc_ctype(acc), slot);
    pr_combine_line(p, acc, a, "t");
    if (acc->red.nan_flag) pr_line(p, "acc%u_nan |= (%s)[8];", acc_id, slot);
    p->depth--;
    pr_line(p, "}");
}

/* KD_CUDA_ROW, a row cache (schedule.c, row_cache_plan): a LOAD read from it, or filled
 * by it, or a kept STORE into it instead of the output row (a 16-bit output's value as it
 * would come back from there). False: s is not served by a cache. */
static bool print_row_cache(pr *p, const kd_stmt *s, uint32_t id) {
    const kd_kernel *kd = p->kd;
    if (!(s->sched & (KD_SCHED_ROW_FILL | KD_SCHED_ROW_HIT))) return false;
    char v[PR_NAME_LEN], a[PR_NAME_LEN], row[PR_NAME_LEN + 64];
    pr_var_name(kd, s->row_var, v);
    /* passes w elements a lane: element j at (j mod w) (n / w) + j / w */
    if (kd->sched.vec && kd->sched.form == KD_CUDA_ROW)
        snprintf(v, sizeof v, "%lld + %s", (long long)(CU(p)->lane * (kd->inner / kd->sched.vec)),
                 CU(p)->row_c);
    if (kd->sched.row_group > 1) /* the row's own row of the cache */
        snprintf(row, sizeof row, "kiln_row%u[threadIdx.x / %d][%s]", s->row_cache, row_threads(kd),
                 v);
    else
        snprintf(row, sizeof row, "kiln_row%u[%s]", s->row_cache, v);
    if (s->kind == KS_LOAD && s->sched & KD_SCHED_ROW_HIT) {
        pr_line(p, "const %s v%u = %s;", cgen_ctype(s->dtype), id, row);
        return true;
    }
    if (s->kind == KS_LOAD) {
        if (s->sched & KD_SCHED_VLOAD)
            print_lane(p, s, id, NULL);
        else
            pr_stmt(p, id);
        pr_line(p, "%s = v%u;", row, id);
        return true;
    }
    pr_val_name(kd, s->args[0], a);
    kiln_dtype t = kd->out_type[s->slot];
    if (ir_dtype_is_half(t))
        pr_line(p, "%s = kiln_ld_%s(kiln_st_%s(%s));", row, pr_dtype_suffix(t), pr_dtype_suffix(t),
                a);
    else
        pr_line(p, "%s = %s;", row, a);
    return true;
}

/* The row caches, at the top of the kernel: shared by the block, reused by its items; a
 * row of each per row of the block. */
static void print_row_caches(pr *p) {
    const kd_kernel *kd = p->kd;
    char rows[32] = "";
    if (kd->sched.row_group > 1)
        snprintf(rows, sizeof rows, "[%lld]", (long long)kd->sched.row_group);
    for (uint32_t c = 0; c < kd->sched.n_row_cache; c++)
        for (uint32_t s = 1; s < kd->n_stmts; s++) {
            const kd_stmt *st = &kd->stmts[s];
            if (!(st->sched & KD_SCHED_ROW_FILL) || st->row_cache != c) continue;
            kiln_dtype t = st->kind == KS_STORE ? kd->stmts[st->args[0]].dtype : st->dtype;
            pr_line(p, "__shared__ %s kiln_row%u%s[%lld];", cgen_ctype(t), c, rows,
                    (long long)kd->inner);
            break;
        }
}

static void cu_stmt(pr *p, uint32_t id) {
    const kd_stmt *s = &p->kd->stmts[id];
    if ((s->kind == KS_LOAD || s->kind == KS_STORE) && print_row_cache(p, s, id)) return;
    char a[PR_NAME_LEN];
    bool lane = CU(p)->lane >= 0;
    switch (s->kind) {
    case KS_LOOP: cu_loop(p, s); return;
    case KS_ACC: cu_acc(p, id); return;
    case KS_END:
        if (CU(p)->stripe_depth && p->depth == CU(p)->stripe_depth) CU(p)->stripe_depth = 0;
        break;
    case KS_RESULT:
        if (CU(p)->striped[s->args[0]]) print_combine(p, s->args[0]);
        break;
    case KS_LOAD:
        if (!lane || !(s->sched & KD_SCHED_VLOAD)) break;
        print_lane(p, s, id, NULL);
        return;
    case KS_STORE:
        if (lane && s->sched & KD_SCHED_VSTORE) {
            pr_val_name(p->kd, s->args[0], a);
            print_lane(p, s, id, a);
        } else if (thread_per_element(p) || s->keep)
            pr_store(p, s, "");
        else { /* one lane writes what every lane computed: the element's or the row's first */
            char first[48] = "if (threadIdx.x == 0) ";
            if (p->kd->sched.form == KD_CUDA_WARP)
                snprintf(first, sizeof first, "if ((threadIdx.x & 31) == 0) ");
            else if (p->kd->sched.form == KD_CUDA_ROW && p->kd->sched.row_group > 1)
                snprintf(first, sizeof first, "if (threadIdx.x %% %d == 0) ", row_threads(p->kd));
            pr_store(p, s, first);
        }
        return;
    default: break;
    }
    pr_stmt(p, id);
}

/* The statements of kiln_k<i>: a split's parts combined in place of its loops. */
static void print_body(pr *p) {
    const kd_kernel *kd = p->kd;
    for (uint32_t s = 1; s < kd->n_stmts; s++) {
        if (p->part_mode == 2 && kd->stmts[s].sched & KD_SCHED_SPLIT_LOOP) {
            if (kd->columns)
                print_col_combine(p);
            else
                print_part_combine(p, s - 1, (int)kd->stmts[s - 1].split_k);
            s = kd_loop_end(kd, s);
            continue;
        }
        if (kd->stmts[s].sched & KD_SCHED_VLOOP) {
            s = print_row_pass(p, s);
            continue;
        }
        cu_stmt(p, s);
    }
}

/* kiln_k<i> (and kiln_k<i>_part and kiln_k<i>_parts for a split). */
static int cu_kernel(const kd_kernel *kd, strbuf *sb, cgen_kernel *info) {
    const kd_sched *sc = &kd->sched;
    cupr c = {.p = {.kd = kd,
                    .sb = sb,
                    .stmt = cu_stmt,
                    .acc_name = cu_acc_name,
                    .chunk = sc->chunk,
                    .chunks = sc->chunks},
              .lane = -1};
    pr *p = &c.p;
    if (!(c.striped = host_calloc(kd->ctx, kd->n_stmts + 1, 1))) return -1;
    if (sc->parts && kd->columns)
        print_cuda_col_part_fn(p);
    else if (sc->parts)
        print_cuda_part_fn(p);
    sb_printf(sb, "extern \"C\" __global__ void __launch_bounds__(%d) kiln_k%u(", CGEN_CUDA_THREADS,
              kd->index);
    pr_buffers(p, true, "__restrict__ ");
    if (sc->parts) sb_append(sb, "const unsigned char *__restrict__ kiln_part, ");
    sb_append(sb, "int64_t items) {\n");
    print_row_caches(p);
    if (sc->row_group > 1) { /* a group of rows per item, a row per slice of the block */
        long long g = (long long)sc->row_group, t = CGEN_CUDA_THREADS / g;
        pr_line(p, "for (int64_t kiln_g = blockIdx.x; kiln_g < items; kiln_g += gridDim.x) {");
        pr_line(p, "    const int64_t it = kiln_g * %lld + threadIdx.x / %lld;", g, t);
        pr_line(p, "    if (it >= %lld) break;", (long long)kd->rows);
    } else
        pr_line(p, "for (int64_t it = blockIdx.x; it < items; it += gridDim.x) {");
    p->depth++;
    cu_item(p);
    if (sc->vec && sc->form == KD_CUDA_THREADS)
        print_vec(p);
    else
        print_body(p);
    p->depth--;
    pr_line(p, "}");
    sb_append(sb, "}\n");
    if (p->part_mode) /* the part kernel's items and the scratch's bytes (cgen.h) */
        sb_printf(sb, "extern \"C\" __device__ const int64_t kiln_k%u_parts[2] = {%lld, %lld};\n",
                  kd->index, (long long)(sc->parts * sc->base_items),
                  (long long)(sc->parts * (kd->columns ? column_accs(kd) : (int)sc->n_split) *
                              kd->rows * kd->inner * KD_PART_BYTES));
    host_free(kd->ctx, c.striped, kd->n_stmts + 1);
    info->items = !kd->items          ? 0
                  : sc->row_group > 1 ? (kd->rows + sc->row_group - 1) / sc->row_group
                                      : kd->rows * p->chunks;
    info->grain = kd->grain;
    info->parts = sc->parts;
    return p->hole;
}

static const char *const cuda_prelude[] = {
    cgen_prelude_cuda_head, cgen_prelude_ops,      cgen_prelude_math_f32,
    cgen_prelude_cuda_math, cgen_prelude_math_f64, cgen_prelude_convert,
    cgen_prelude_half,      cgen_prelude_random,   NULL};

const pr_dialect pr_cuda_dialect = {cuda_prelude, cu_kernel};
