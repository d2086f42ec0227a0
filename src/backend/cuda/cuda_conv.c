/* cuda_conv.c — convolutions on the GPU (the backend's conv library op, backend_impl.h's
 * kn_conv_desc): the forward convolution and both of its gradients as implicit GEMM, the
 * im2col patch matrix never written to device memory.
 *
 * Each kind is, per feature group g, a product C = A B whose operands are read in place:
 *   FORWARD      rows (n, q...)  columns o  reduction (k..., i)  A = x at the read, B = w
 *   INPUT_GRAD   rows (n, e...)  columns i  reduction (k..., o)  A = ct at the q reading e
 *   FILTER_GRAD  rows (k..., i)  columns o  reduction (n, q...)  A = x at the read, B = ct
 * The host (conv_plan) says so once, in a form the one kernel reads whatever the kind: the
 * row and reduction indices are mixed-radix numbers whose digits each add a multiple to
 * A's offset (and B's, the result's) and, for a spatial digit, an affine term t_d to the
 * spatial position; A's element on axis d is then t_d / div_d when that is whole and in
 * [0, lim_d) (x's element (p - lo) / ld of the forward read; in INPUT_GRAD the output
 * position (e ld + lo - k rd) / stride), else 0. So nothing is divided per element but
 * by div_d where it is not 1: the row digits are taken apart once per tile, the
 * reduction's once per step of 16, into shared-memory tables of offsets and positions.
 *
 * A block (256 threads) computes a 64 x 64 tile of C (4 x 4 a thread, in registers) in
 * steps of 16 along the reduction, staging both operands' slices in shared memory, widened
 * to the accumulation type; consecutive threads load along whichever index of an operand
 * its layout makes contiguous (NCHW's rows, NHWC's features), and own the rows or the
 * columns of the result by the same rule. Blocks walk the tiles with a grid-stride loop
 * along x; the groups are the grid's y. f32, bf16 and f16 accumulate in f32, f64 in f64;
 * each result is rounded once, to nearest even (cuda_half.h).
 *
 * A filter gradient's reduction (the batch and every output position) is long and its
 * result small, so it is cut into chunks, each tile of each chunk a block of its own,
 * their partial sums written to the scratch and added by a second kernel in chunk order.
 * How many chunks is a function of the descriptor alone (conv_plan: enough blocks for
 * CONV_SPLIT_BLOCKS, at most CU_CONV_SPLIT, each at least CONV_MIN_STEPS steps), never of
 * the device, and no atomics are used: every kind's bits are the same on any GPU and grid.
 * The source is plain CUDA C++ without tensor-core instructions, so that
 * tests/test_cuda_emulate.c runs this very code on the CPU. */
#include "cuda_backend.h"
#include "cuda_program.h"
#include "cuda_half.h"

#include <limits.h>

#define CONV_BM 64 /* a tile's rows, columns and reduction step: the source's */
#define CONV_BN 64
#define CONV_BK 16
/* The blocks a split aims for across all groups: several per SM of any current GPU. */
#define CONV_SPLIT_BLOCKS 512
/* The fewest reduction steps worth a chunk (its partial sums cost a write and a read). */
#define CONV_MIN_STEPS 4

_Static_assert(sizeof(cu_conv_params) == 74 * sizeof(int64_t),
               "cu_conv_params: the 74 int64 fields of the source's conv_params, in its order");

static const char conv_source[] =
    "/* kiln's implicit-GEMM convolution (src/backend/cuda/cuda_conv.c) */\n"
    "typedef int int32_t; typedef unsigned int uint32_t; typedef long long int64_t;\n"
    "typedef unsigned short uint16_t;\n"
    "#define CONV_THREADS 256\n"
    "#define CONV_BM 64\n"
    "#define CONV_BN 64\n"
    "#define CONV_BK 16\n"
    "struct conv_params { int64_t ns, groups, m, cols, red, chunks, clen, nr, nk;\n"
    "    int64_t rdim[4], ra[4], ro[4], rsp[4], rmul[4], radd[4];\n"
    "    int64_t kdim[4], ka[4], kb[4], ksp[4], kmul[4], kadd[4];\n"
    "    int64_t div[3], lim[3], ss[3], cb, co, ga, gb, go, ak, bc, rf; };\n"
    /* bf16 and f16 (cuda_half.h): integer arithmetic here, so the emulator runs this code */
    CU_HALF_CONVERSIONS
    "__device__ __forceinline__ int64_t cmin(int64_t a, int64_t b) { return a < b ? a : b; }\n"
    /* T: storage; A: accumulation. C's tile at (m0, n0) of group g over reduction indices
     * [k0, k1): one chunk's partial sums into part, or (one chunk) the results into out */
    "template <typename T, typename A>\n"
    "__device__ void conv(const T *a, const T *b, T *out, A *part, const conv_params &p) {\n"
    "    __shared__ A sa[CONV_BK][CONV_BM + 4];\n"
    "    __shared__ A sb[CONV_BK][CONV_BN + 4];\n"
    "    __shared__ int64_t row_a[CONV_BM], row_o[CONV_BM], row_t[3][CONV_BM];\n"
    "    __shared__ int64_t red_a[CONV_BK], red_b[CONV_BK], red_t[3][CONV_BK], "
    "red_dig[4][CONV_BK];\n"
    "    __shared__ int row_ok[CONV_BM], red_ok[CONV_BK];\n"
    "    const int tid = threadIdx.x;\n"
    /* the thread's 4 rows and 4 columns of the tile: along the result's contiguous index,
     * consecutive threads take consecutive elements */
    "    const int rt = p.rf ? tid % 16 : tid / 16, ct = p.rf ? tid / 16 : tid % 16;\n"
    "    const int64_t mt = (p.m + CONV_BM - 1) / CONV_BM, nt = (p.cols + CONV_BN - 1) / "
    "CONV_BN;\n"
    "    const int64_t tiles = mt * nt, items = tiles * p.chunks;\n"
    "    for (int64_t g = blockIdx.y; g < p.groups; g += gridDim.y) {\n"
    "        const T *ag = a + g * p.ga, *bg = b + g * p.gb;\n"
    "        for (int64_t it = blockIdx.x; it < items; it += gridDim.x) {\n"
    "            const int64_t chunk = it / tiles, m0 = it % tiles / nt * CONV_BM;\n"
    "            const int64_t n0 = it % nt * CONV_BN, k0 = chunk * p.clen;\n"
    "            const int64_t k1 = cmin(p.red, k0 + p.clen);\n"
    "            __syncthreads(); /* the last tile's readers of the row table are done */\n"
    "            if (tid < CONV_BM) { /* the tile's rows taken apart, once */\n"
    "                int64_t m = m0 + tid, r = m, oa = 0, oo = 0;\n"
    "                for (int d = 0; d < 3; d++) row_t[d][tid] = 0;\n"
    "                for (int j = (int)p.nr - 1; j >= 0; j--) {\n"
    "                    const int64_t c = r % p.rdim[j];\n"
    "                    r /= p.rdim[j];\n"
    "                    oa += c * p.ra[j];\n"
    "                    oo += c * p.ro[j];\n"
    "                    if (p.rsp[j] >= 0) row_t[p.rsp[j]][tid] = c * p.rmul[j] + p.radd[j];\n"
    "                }\n"
    "                row_ok[tid] = m < p.m;\n"
    "                row_a[tid] = oa;\n"
    "                row_o[tid] = oo;\n"
    "            }\n"
    "            __syncthreads();\n"
    "            A acc[4][4];\n"
    "#pragma unroll\n"
    "            for (int i = 0; i < 4; i++)\n"
    "#pragma unroll\n"
    "                for (int j = 0; j < 4; j++) acc[i][j] = 0;\n"
    /* the reduction index of table entry tid as mixed-radix digits (red_dig, the last
     * digit the fastest): taken apart once per tile, then advanced by CONV_BK a step by
     * subtraction (a digit of at least CONV_BK values carries at most once), so no step
     * waits on 64-bit divisions */
    "            if (tid < CONV_BK && k0 < k1) {\n"
    "                int64_t q = k0 + tid;\n"
    "                for (int j = (int)p.nk - 1; j >= 0; j--) {\n"
    "                    red_dig[j][tid] = q % p.kdim[j];\n"
    "                    q /= p.kdim[j];\n"
    "                }\n"
    "            }\n"
    "            for (int64_t s0 = k0; s0 < k1; s0 += CONV_BK) {\n"
    "                if (tid < CONV_BK) { /* the step's reduction indices, from the digits */\n"
    "                    int64_t oa = 0, ob = 0;\n"
    "                    for (int d = 0; d < 3; d++) red_t[d][tid] = 0;\n"
    "                    for (int j = 0; j < (int)p.nk; j++) {\n"
    "                        const int64_t c = red_dig[j][tid];\n"
    "                        oa += c * p.ka[j];\n"
    "                        ob += c * p.kb[j];\n"
    "                        if (p.ksp[j] >= 0) red_t[p.ksp[j]][tid] = c * p.kmul[j] + "
    "p.kadd[j];\n"
    "                    }\n"
    "                    red_ok[tid] = s0 + tid < k1;\n"
    "                    red_a[tid] = oa;\n"
    "                    red_b[tid] = ob;\n"
    "                    int64_t carry = CONV_BK; /* the next step's digits */\n"
    "                    for (int j = (int)p.nk - 1; j > 0 && carry; j--) {\n"
    "                        int64_t v = red_dig[j][tid] + carry;\n"
    "                        for (carry = 0; v >= p.kdim[j]; carry++) v -= p.kdim[j];\n"
    "                        red_dig[j][tid] = v;\n"
    "                    }\n"
    "                    red_dig[0][tid] += carry; /* past the end: only where red_ok is false */\n"
    "                }\n"
    "                __syncthreads(); /* tables written; the last step's sa and sb read */\n"
    "#pragma unroll\n"
    "                for (int e = 0; e < 4; e++) { /* A's slice: 0 off the operand */\n"
    "                    const int mi = p.ak ? tid / CONV_BK + e * (CONV_THREADS / CONV_BK) "
    ": tid % CONV_BM;\n"
    "                    const int ki = p.ak ? tid % CONV_BK : tid / CONV_BM + e * "
    "(CONV_THREADS / CONV_BM);\n"
    "                    A v = 0;\n"
    "                    if (row_ok[mi] && red_ok[ki]) {\n"
    "                        int64_t at = row_a[mi] + red_a[ki];\n"
    "                        bool in = true;\n"
    "                        for (int d = 0; d < (int)p.ns; d++) {\n"
    "                            int64_t x = row_t[d][mi] + red_t[d][ki];\n"
    "                            in = in && x >= 0;\n"
    "                            if (p.div[d] != 1) {\n"
    "                                in = in && x % p.div[d] == 0;\n"
    "                                x /= p.div[d];\n"
    "                            }\n"
    "                            in = in && x < p.lim[d];\n"
    "                            at += x * p.ss[d];\n"
    "                        }\n"
    "                        if (in) v = wide(ag[at]);\n"
    "                    }\n"
    "                    sa[ki][mi] = v;\n"
    "                }\n"
    "#pragma unroll\n"
    "                for (int e = 0; e < 4; e++) { /* B's slice */\n"
    "                    const int ci = p.bc ? tid % CONV_BN : tid / CONV_BK + e * "
    "(CONV_THREADS / CONV_BK);\n"
    "                    const int ki = p.bc ? tid / CONV_BN + e * (CONV_THREADS / CONV_BN) : "
    "tid % CONV_BK;\n"
    "                    const int64_t c = n0 + ci;\n"
    "                    sb[ki][ci] = red_ok[ki] && c < p.cols ? (A)wide(bg[red_b[ki] + c * "
    "p.cb]) : (A)0;\n"
    "                }\n"
    "                __syncthreads();\n"
    "#pragma unroll 4\n"
    "                for (int kk = 0; kk < CONV_BK; kk++) { /* 16 products from 8 loads */\n"
    "                    A av[4], bv[4];\n"
    "#pragma unroll\n"
    "                    for (int i = 0; i < 4; i++) av[i] = sa[kk][rt * 4 + i];\n"
    "#pragma unroll\n"
    "                    for (int j = 0; j < 4; j++) bv[j] = sb[kk][ct * 4 + j];\n"
    "#pragma unroll\n"
    "                    for (int i = 0; i < 4; i++)\n"
    "#pragma unroll\n"
    "                        for (int j = 0; j < 4; j++) acc[i][j] += av[i] * bv[j];\n"
    "                }\n"
    "            }\n"
    "#pragma unroll\n"
    "            for (int i = 0; i < 4; i++) {\n"
    "                const int mi = rt * 4 + i;\n"
    "                if (!row_ok[mi]) continue;\n"
    "#pragma unroll\n"
    "                for (int j = 0; j < 4; j++) {\n"
    "                    const int64_t c = n0 + ct * 4 + j;\n"
    "                    if (c >= p.cols) continue;\n"
    "                    if (p.chunks > 1)\n"
    "                        part[((chunk * p.groups + g) * p.m + m0 + mi) * p.cols + c] = "
    "acc[i][j];\n"
    "                    else\n"
    "                        narrow(acc[i][j], out[g * p.go + row_o[mi] + c * p.co]);\n"
    "                }\n"
    "            }\n"
    "        }\n"
    "    }\n"
    "}\n"
    /* a split reduction's results: the chunks' partial sums of each element added in chunk
     * order (the same bits whatever the grid), rounded once */
    "template <typename T, typename A>\n"
    "__device__ void conv_sum(const A *part, T *out, const conv_params &p) {\n"
    "    const int64_t per = p.groups * p.m * p.cols;\n"
    "    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < per;\n"
    "         e += (int64_t)gridDim.x * blockDim.x) {\n"
    "        A s = 0;\n"
    "        for (int64_t c = 0; c < p.chunks; c++) s += part[c * per + e];\n"
    "        int64_t m = e / p.cols % p.m, at = e / p.cols / p.m * p.go + e % p.cols * p.co;\n"
    "        for (int j = (int)p.nr - 1; j >= 0; j--) {\n"
    "            at += m % p.rdim[j] * p.ro[j];\n"
    "            m /= p.rdim[j];\n"
    "        }\n"
    "        narrow(s, out[at]);\n"
    "    }\n"
    "}\n"
    /* MB blocks an SM (ptxas's register bound): 3 for the 4-byte accumulators, whose 4 x 4
     * tile then fits 80 registers without a spill; 2 for f64's twice as wide one */
    "#define CONV(name, T, A, MB) extern \"C\" __global__ void "
    "__launch_bounds__(CONV_THREADS, MB) "
    "kiln_conv_##name(const T *a, const T *b, T *out, A *part, conv_params p) { conv<T, A>(a, "
    "b, out, part, p); }\\\n"
    "    extern \"C\" __global__ void __launch_bounds__(CONV_THREADS) kiln_conv_sum_##name(const "
    "A *part, T *out, conv_params p) { conv_sum<T, A>(part, out, p); }\n"
    "CONV(f32, float, float, 3)\n"
    "CONV(f64, double, double, 2)\n"
    "CONV(bf16, bf16, float, 3)\n"
    "CONV(f16, f16, float, 3)\n";

const char *cu_conv_source(size_t *len) {
    *len = sizeof conv_source - 1;
    return conv_source;
}

/* The bytes of one partial sum (the accumulation type). */
static size_t conv_acc_bytes(kiln_dtype t) {
    return t == KILN_DTYPE_F64 ? 8 : 4;
}

bool cu_conv_supports(const kn_conv_desc *c) {
    if (c->kind < KN_CONV_FORWARD || c->kind > KN_CONV_FILTER_GRAD) return false;
    if (c->ns < 1 || c->ns > KN_CONV_MAX_SPATIAL) return false;
    if (c->n < 0 || c->groups < 0 || c->i < 0 || c->og < 0) return false;
    for (int d = 0; d < c->ns; d++)
        if (c->in[d] < 0 || c->k[d] < 0 || c->out[d] < 0 || c->stride[d] < 1 || c->ld[d] < 1 ||
            c->rd[d] < 1)
            return false;
    return true;
}

/* Row digit j of p: dim values, each adding a to A's offset and o to the result's and,
 * on spatial axis sp (-1: none), mul * digit + add to the position t_sp. */
static void row_digit(cu_conv_params *p, int j, int64_t dim, int64_t a, int64_t o, int sp,
                      int64_t mul, int64_t add) {
    p->rdim[j] = dim, p->ra[j] = a, p->ro[j] = o, p->rsp[j] = sp, p->rmul[j] = mul;
    p->radd[j] = add;
}

/* Reduction digit j: as row_digit, adding a to A's offset and b to B's. */
static void red_digit(cu_conv_params *p, int j, int64_t dim, int64_t a, int64_t b, int sp,
                      int64_t mul, int64_t add) {
    p->kdim[j] = dim, p->ka[j] = a, p->kb[j] = b, p->ksp[j] = sp, p->kmul[j] = mul;
    p->kadd[j] = add;
}

static int64_t mag(int64_t v) {
    return v < 0 ? -v : v;
}

/* How far apart, in A, two neighbours along the last digit of rows (or of the reduction)
 * lie: a spatial digit moves its position by mul, so the element by about ss * mul. */
static int64_t a_step(const cu_conv_params *p, bool red) {
    int j = (int)(red ? p->nk : p->nr) - 1;
    int sp = (int)(red ? p->ksp[j] : p->rsp[j]);
    if (sp >= 0) return mag(p->ss[sp] * (red ? p->kmul[j] : p->rmul[j]));
    return mag(red ? p->ka[j] : p->ra[j]);
}

/* The split of p's reduction into chunks of whole steps (p->chunks, p->clen): filter
 * gradients only, when the tiles alone make fewer than CONV_SPLIT_BLOCKS blocks; from the
 * descriptor's sizes alone, so that the sums' order never depends on the device. */
static void conv_split(cu_conv_params *p, int kind, kiln_dtype t, bool split) {
    int64_t steps = (p->red + CONV_BK - 1) / CONV_BK;
    int64_t tiles =
        p->groups * ((p->m + CONV_BM - 1) / CONV_BM) * ((p->cols + CONV_BN - 1) / CONV_BN);
    int64_t n = 1;
    if (split && kind == KN_CONV_FILTER_GRAD && tiles > 0) {
        n = (CONV_SPLIT_BLOCKS + tiles - 1) / tiles;
        if (n > CU_CONV_SPLIT) n = CU_CONV_SPLIT;
        if (n > steps / CONV_MIN_STEPS) n = steps / CONV_MIN_STEPS;
        /* the partial sums' bytes must be a size_t (n <= CU_CONV_SPLIT, tiles < 2^63) */
        double bytes = (double)n * (double)p->groups * (double)p->m * (double)p->cols *
                       (double)conv_acc_bytes(t);
        if (n < 1 || bytes > (double)(SIZE_MAX / 2)) n = 1;
    }
    int64_t per = n > 1 ? (steps + n - 1) / n : steps; /* steps a chunk */
    p->clen = per * CONV_BK;
    p->chunks = n > 1 ? (steps + per - 1) / per : 1;
}

void cu_conv_plan(const kn_conv_desc *c, kiln_dtype t, bool split, cu_conv_params *p) {
    int ns = c->ns;
    const int64_t *xs = c->xs, *ws = c->ws, *ys = c->ys;
    int64_t I = c->i, O = c->og, pk = 1, pin = 1, pout = 1;
    *p = (cu_conv_params){.ns = ns, .groups = c->groups, .nr = ns + 1, .nk = ns + 1};
    for (int d = 0; d < ns; d++) pk *= c->k[d], pin *= c->in[d], pout *= c->out[d];
    switch (c->kind) {
    case KN_CONV_FORWARD: /* rows (n, q...), columns o, reduction (k..., i) */
        p->m = c->n * pout, p->cols = O, p->red = pk * I;
        row_digit(p, 0, c->n, xs[0], ys[0], -1, 0, 0);
        for (int d = 0; d < ns; d++) {
            row_digit(p, 1 + d, c->out[d], 0, ys[2 + d], d, c->stride[d], -c->lo[d]);
            red_digit(p, d, c->k[d], 0, ws[2 + d], d, c->rd[d], 0);
            p->div[d] = c->ld[d], p->lim[d] = c->in[d], p->ss[d] = xs[2 + d];
        }
        red_digit(p, ns, I, xs[1], ws[1], -1, 0, 0);
        p->cb = ws[0], p->co = ys[1], p->ga = I * xs[1], p->gb = O * ws[0], p->go = O * ys[1];
        break;
    case KN_CONV_INPUT_GRAD: /* rows (n, e...), columns i, reduction (k..., o) */
        p->m = c->n * pin, p->cols = I, p->red = pk * O;
        row_digit(p, 0, c->n, ys[0], xs[0], -1, 0, 0);
        for (int d = 0; d < ns; d++) {
            row_digit(p, 1 + d, c->in[d], 0, xs[2 + d], d, c->ld[d], c->lo[d]);
            red_digit(p, d, c->k[d], 0, ws[2 + d], d, -c->rd[d], 0);
            p->div[d] = c->stride[d], p->lim[d] = c->out[d], p->ss[d] = ys[2 + d];
        }
        red_digit(p, ns, O, ys[1], ws[0], -1, 0, 0);
        p->cb = ws[1], p->co = xs[1], p->ga = O * ys[1], p->gb = O * ws[0], p->go = I * xs[1];
        break;
    default: /* FILTER_GRAD: rows (k..., i), columns o, reduction (n, q...) */
        p->m = pk * I, p->cols = O, p->red = c->n * pout;
        red_digit(p, 0, c->n, xs[0], ys[0], -1, 0, 0);
        for (int d = 0; d < ns; d++) {
            row_digit(p, d, c->k[d], 0, ws[2 + d], d, c->rd[d], 0);
            red_digit(p, 1 + d, c->out[d], 0, ys[2 + d], d, c->stride[d], -c->lo[d]);
            p->div[d] = c->ld[d], p->lim[d] = c->in[d], p->ss[d] = xs[2 + d];
        }
        row_digit(p, ns, I, xs[1], ws[1], -1, 0, 0);
        p->cb = ys[1], p->co = ws[0], p->ga = I * xs[1], p->gb = O * ys[1], p->go = O * ws[0];
        break;
    }
    for (int j = ns + 1; j < 4; j++) p->rsp[j] = p->ksp[j] = -1;
    /* which index consecutive threads walk: the one along which the operand (the result)
     * is the more nearly contiguous */
    p->ak = a_step(p, true) < a_step(p, false);
    p->bc = mag(p->cb) <= mag(p->kb[p->nk - 1]);
    p->rf = mag(p->ro[p->nr - 1]) < mag(p->co);
    conv_split(p, c->kind, t, split);
}

uint64_t cu_conv_scratch(const kn_conv_desc *c, kiln_dtype t) {
    if (!cu_conv_supports(c) || cu_float_type(t) < 0) return 0;
    cu_conv_params p;
    cu_conv_plan(c, t, true, &p);
    if (p.chunks < 2) return 0;
    return (uint64_t)p.chunks * (uint64_t)p.groups * (uint64_t)p.m * (uint64_t)p.cols *
           conv_acc_bytes(t);
}

/* Compiles and loads the convolution kernels at the device's first convolution (their own
 * program, as attention's: most programs have none). */
static kiln_status conv_ready(cu_state *st, int device) {
    static const char *const names[8] = {
        "kiln_conv_f32",     "kiln_conv_f64",     "kiln_conv_bf16",     "kiln_conv_f16",
        "kiln_conv_sum_f32", "kiln_conv_sum_f64", "kiln_conv_sum_bf16", "kiln_conv_sum_f16"};
    cu_libk *l = &st->devs[device].lib;
    return cu_lib_program(st, device, "kiln_executable_run: convolution", conv_source,
                          sizeof conv_source - 1, 8, names, &l->conv_prog, &l->conv[0][0]);
}

kiln_status cu_conv_run(void *state, int device, kiln_dtype dtype, const kn_conv_desc *c,
                        const void *a, const void *b, void *out, void *scratch) {
    cu_state *st = state;
    cu_dev *d = &st->devs[device];
    int ty = cu_float_type(dtype);
    if (ty < 0 || !cu_conv_supports(c)) /* (refused by cu_lib_supports at compile time) */
        return ctx_error(st->ctx, KILN_STATUS_INTERNAL,
                         "cuda backend: no convolution kernel for %s", kiln_dtype_name(dtype));
    cu_conv_params p;
    /* without its scratch (a caller outside a compiled program) the reduction is not split */
    cu_conv_plan(c, dtype, scratch != NULL, &p);
    if (!p.groups || !p.m || !p.cols) return KILN_STATUS_OK; /* nothing to write */
    kiln_status s = conv_ready(st, device);
    if (s) return s;
    int64_t items = ((p.m + CONV_BM - 1) / CONV_BM) * ((p.cols + CONV_BN - 1) / CONV_BN) * p.chunks;
    unsigned gy = (unsigned)(p.groups < 65535 ? p.groups : 65535); /* the grid's y limit */
    void *params[] = {(void *)&a, (void *)&b, &out, &scratch, &p};
    CUresult e = st->drv.cuLaunchKernel(d->lib.conv[0][ty], cu_grid(d, items), gy, 1,
                                        CU_CONV_THREADS, 1, 1, 0, d->compute, params, NULL);
    if (e) return cu_fail(st, e, "cuLaunchKernel", "launching the convolution kernel");
    if (p.chunks < 2) return KILN_STATUS_OK;
    int64_t n = p.groups * p.m * p.cols;
    void *sum_params[] = {&scratch, &out, &p};
    e = st->drv.cuLaunchKernel(d->lib.conv[1][ty],
                               cu_grid(d, (n + CU_CONV_THREADS - 1) / CU_CONV_THREADS), 1, 1,
                               CU_CONV_THREADS, 1, 1, 0, d->compute, sum_params, NULL);
    if (e) return cu_fail(st, e, "cuLaunchKernel", "launching the convolution's sum kernel");
    return KILN_STATUS_OK;
}
