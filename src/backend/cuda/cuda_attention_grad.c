/* cuda_attention_grad.c — the gradient of dot_product_attention on the GPU (the backend's
 * attention_grad library op; ir.h, ir_attn_kind), after FlashAttention-2's backward pass:
 * no kernel writes a [T, S] array. bf16 and f16 on compute capability 8.0 and up, head
 * sizes multiples of 8 up to 128 (cu_attention_grad_supports); everything else is the
 * primitive form's products (kiln_compile expands the kinds: src/passes/expand.c).
 *
 * Every kernel has 8 warps a block, each taking 16 rows, and does its products as mma.sync
 * m16n8k16 steps (16-bit operands, f32 accumulators) whose accumulator fragments the
 * elementwise work reads in registers, as the forward kernel does (cuda_attention.c):
 *  - LSE: per (batch, head, tile of 128 queries), the scores q k^T per tile of keys, the
 *    online maximum and sum, log-sum-exp out (f32);
 *  - GRAD_Q: per (batch, head, tile of 128 queries), per tile of keys s = q k^T and
 *    dp = ct v^T, ds = p (dp - delta) with p = exp(scale s - lse), rounded to T as the A
 *    fragments of dq += ds k;
 *  - GRAD_K, GRAD_V: per (batch, key/value head, tile of 128 keys), over the group's query
 *    heads and the tiles of queries that see the keys, s^T = k q^T, p^T likewise, and
 *    dv += p^T ct, or dp^T = v ct^T, ds^T = p^T (dp^T - delta), dk += ds^T q.
 * Each output element is one block's, summed in a fixed order: the bits do not depend on
 * the grid. Keys a query does not see give 0 by a select, not by a product with 0, but
 * the products over a tile of keys that some rows see still multiply the others' zeros
 * by k (or ct): an infinite value there reaches them as NaN, as in the forward kernel.
 * The staging loads take 16 bytes where every operand is 16-byte aligned, else one value
 * at a time (the `vec` parameter); rows are multiples of 8 values, so alignment is the
 * pointers'. */
#include "cuda_backend.h"
#include "cuda_program.h"
#include "cuda_attention.h"

#include <math.h>

/* The kernels' parameter, the same layout on both sides (8-byte fields only). */
typedef struct attn_grad_params {
    int64_t batch, t, s, heads, kv_heads, h, hv, causal, vec;
    double scale;
} attn_grad_params;

static const char grad_source[] =
    "/* kiln's fused attention gradient (src/backend/cuda/cuda_attention_grad.c) "
    "*/\n" CU_ATTN_PRELUDE "#define ATTN_TQ 128\n"
    "struct attn_grad_params { int64_t batch, t, s, heads, kv_heads, h, hv, causal, vec;\n"
    "    double scale; };\n"
    "#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800\n" CU_ATTN_MMA
    "/* 8 consecutive 16-bit values at p (zeros past n of them), one 16-byte load where p is\n"
    " * 16-byte aligned (vec), else one at a time */\n"
    "__device__ __forceinline__ uint4 ld8(const uint16_t *p, int n, bool vec) {\n"
    "    uint4 z = {0u, 0u, 0u, 0u};\n"
    "    if (n >= 8 && vec) return *(const uint4 *)p;\n"
    "    uint32_t u[4] = {0u, 0u, 0u, 0u};\n"
    "    for (int e = 0; e < 8 && e < n; e++) u[e / 2] |= (uint32_t)p[e] << (16 * (e % 2));\n"
    "    z.x = u[0], z.y = u[1], z.z = u[2], z.w = u[3];\n"
    "    return z;\n"
    "}\n"
    "/* two 16-bit values at p, the first in the low half, either alignment */\n"
    "__device__ __forceinline__ uint32_t ld2(const uint16_t *p, bool vec) {\n"
    "    return vec ? ld32(p) : (uint32_t)p[0] | (uint32_t)p[1] << 16;\n"
    "}\n"
    "/* rows [0, rows) of x (row stride ld, n16 16-bit values a row) into tile[r][c] (row\n"
    " * pitch P), the columns past n zero */\n"
    "__device__ __forceinline__ void stage(uint16_t *tile, int P, int R, int D, const uint16_t "
    "*x,\n"
    "                                      int64_t ld, int64_t rows, int64_t n, bool vec) {\n"
    "    for (int z = threadIdx.x; z < R * (D / 8); z += ATTN_THREADS) {\n"
    "        const int r = z / (D / 8), c = z % (D / 8) * 8;\n"
    "        uint4 u = {0u, 0u, 0u, 0u};\n"
    "        if (r < rows && c < n) u = ld8(x + r * ld + c, (int)lo(8, n - c), vec);\n"
    "        *(uint4 *)(tile + r * P + c) = u;\n"
    "    }\n"
    "}\n"
    "/* the same rows transposed: tile[c][r] (row pitch P) */\n"
    "__device__ __forceinline__ void stage_t(uint16_t *tile, int P, int R, int D, const uint16_t "
    "*x,\n"
    "                                        int64_t ld, int64_t rows, int64_t n, bool vec) {\n"
    "    for (int z = threadIdx.x; z < R * (D / 8); z += ATTN_THREADS) {\n"
    "        const int r = z % R, c = z / R * 8;\n"
    "        uint4 u = {0u, 0u, 0u, 0u};\n"
    "        if (r < rows && c < n) u = ld8(x + r * ld + c, (int)lo(8, n - c), vec);\n"
    "        const uint32_t w[4] = {u.x, u.y, u.z, u.w};\n"
    "#pragma unroll\n"
    "        for (int e = 0; e < 8; e++) tile[(c + e) * P + r] = (uint16_t)(w[e / 2] >> (16 * (e % "
    "2)));\n"
    "    }\n"
    "}\n"
    "/* A fragments of 16 rows of x (row r0 + g + 8 (i & 1), columns 16 ks + 2 t4 + 8 (i >> 1) "
    "and\n"
    " * the next) over D columns, zero past `rows` rows and n columns */\n"
    "template <int D>\n"
    "__device__ __forceinline__ void frags(uint32_t (*f)[4], const uint16_t *x, int64_t ld,\n"
    "                                      int64_t rows, int64_t n, bool vec) {\n"
    "    const int lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4;\n"
    "#pragma unroll\n"
    "    for (int ks = 0; ks < D / 16; ks++)\n"
    "#pragma unroll\n"
    "        for (int i = 0; i < 4; i++) {\n"
    "            const int r = g + 8 * (i & 1), c = ks * 16 + 2 * t4 + 8 * (i >> 1);\n"
    "            f[ks][i] = r < rows && c < n ? ld2(x + r * ld + c, vec) : 0u;\n"
    "        }\n"
    "}\n"
    "/* acc[nt] (16 rows x 8 columns a group, NT groups) += a (16 x D) times the rows of tile\n"
    " * (row pitch P, D columns) transposed: B fragments of rows 8 nt + g */\n"
    "template <typename T, int D, int NT>\n"
    "__device__ __forceinline__ void times_rows(float (*acc)[4], const uint32_t (*a)[4],\n"
    "                                           const uint16_t *tile, int P, int64_t skip) {\n"
    "    const int lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4;\n"
    "#pragma unroll\n"
    "    for (int nt = 0; nt < NT; nt++) {\n"
    "        acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0;\n"
    "        if (nt < skip) continue;\n"
    "#pragma unroll\n"
    "        for (int ks = 0; ks < D / 16; ks++) {\n"
    "            const uint16_t *bp = tile + (nt * 8 + g) * P + ks * 16 + 2 * t4;\n"
    "            const uint32_t bf[2] = {ld32(bp), ld32(bp + 8)};\n"
    "            mma(T(), acc[nt], a[ks], bf);\n"
    "        }\n"
    "    }\n"
    "}\n"
    "/* out[e] (16 rows x 8 columns, NO groups) += p (16 x 16 kk-groups of NK, rounded to T) "
    "times\n"
    " * tile (row pitch P: its row 8 e + g holds column 8 e + g of the product's right operand) "
    "*/\n"
    "template <typename T, int NK, int NO>\n"
    "__device__ __forceinline__ void times_cols(float (*out)[4], const float (*p)[4],\n"
    "                                           const uint16_t *tile, int P, int from) {\n"
    "    const int lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4;\n"
    "#pragma unroll\n"
    "    for (int kk = 0; kk < NK / 16; kk++) {\n"
    "        if (kk < from) continue;\n"
    "        const uint32_t pa[4] = {pack<T>(p[2 * kk][0], p[2 * kk][1]),\n"
    "                                pack<T>(p[2 * kk][2], p[2 * kk][3]),\n"
    "                                pack<T>(p[2 * kk + 1][0], p[2 * kk + 1][1]),\n"
    "                                pack<T>(p[2 * kk + 1][2], p[2 * kk + 1][3])};\n"
    "#pragma unroll\n"
    "        for (int e = 0; e < NO; e++) {\n"
    "            const uint16_t *bp = tile + (e * 8 + g) * P + kk * 16 + 2 * t4;\n"
    "            const uint32_t bf[2] = {ld32(bp), ld32(bp + 8)};\n"
    "            mma(T(), out[e], pa, bf);\n"
    "        }\n"
    "    }\n"
    "}\n"
    "/* A work item of LSE and GRAD_Q: (batch b, head n, tile of ATTN_TQ queries), the last\n"
    " * tiles (the most keys, when causal) first; the tile sees keys [0, reach), the warp's rows\n"
    " * [0, wreach), its row r0 + g + 8 r [0, seen[r]) (none past the end) */\n"
    "struct qtile { int64_t b, n, kh, r0, reach, wreach, seen[2]; };\n"
    "__device__ __forceinline__ int64_t qtiles(const attn_grad_params &p) {\n"
    "    return (p.t + ATTN_TQ - 1) / ATTN_TQ * p.batch * p.heads;\n"
    "}\n"
    "__device__ __forceinline__ qtile qtile_of(int64_t it, const attn_grad_params &p) {\n"
    "    const int64_t bn = p.batch * p.heads, qb = qtiles(p) / bn - 1 - it / bn;\n"
    "    const int64_t i0 = qb * ATTN_TQ, r0 = i0 + 16 * (threadIdx.x / 32), n = it % p.heads;\n"
    "    qtile u = {it % bn / p.heads, n, n / (p.heads / p.kv_heads), r0,\n"
    "               p.causal ? lo(lo(i0 + ATTN_TQ, p.t), p.s) : p.s,\n"
    "               r0 >= p.t ? 0 : p.causal ? lo(r0 + 16, p.s) : p.s, {0, 0}};\n"
    "#pragma unroll\n"
    "    for (int r = 0; r < 2; r++) {\n"
    "        const int64_t i = r0 + threadIdx.x % 32 / 4 + 8 * r;\n"
    "        u.seen[r] = i >= p.t ? 0 : p.causal ? lo(i + 1, p.s) : p.s;\n"
    "    }\n"
    "    return u;\n"
    "}\n"
    "/* LSE (kind 1): the rows' log-sum-exp, per (batch, head, tile of ATTN_TQ queries); each "
    "warp\n"
    " * 16 rows, the scores as the forward kernel's, the online maximum and sum in registers */\n"
    "template <typename T, int D>\n"
    "__device__ void attn_lse(const T *q, const T *k, float *lse, const attn_grad_params &p) {\n"
    "    const int BK = D <= 64 ? 64 : 32, KP = D + 8, NT = BK / 8;\n"
    "    __shared__ uint4 sk4[BK * KP / 8];\n"
    "    uint16_t *const sk = (uint16_t *)sk4;\n"
    "    const int lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4;\n"
    "    float ninf;\n"
    "    neg_inf(ninf);\n"
    "    const bool vec = p.vec;\n"
    "    const int64_t ldq = p.heads * p.h, ldk = p.kv_heads * p.h;\n"
    "    const float scale = (float)p.scale;\n"
    "    for (int64_t it = blockIdx.x; it < qtiles(p); it += gridDim.x) {\n"
    "        const qtile u = qtile_of(it, p);\n"
    "        const int64_t b = u.b, n = u.n, kh = u.kh, r0 = u.r0, reach = u.reach;\n"
    "        const int64_t wreach = u.wreach, *seen = u.seen;\n"
    "        const uint16_t *qh = (const uint16_t *)q + (b * p.t + r0) * ldq + n * p.h;\n"
    "        const uint16_t *kh16 = (const uint16_t *)k + b * p.s * ldk + kh * p.h;\n"
    "        uint32_t qf[D / 16][4];\n"
    "        frags<D>(qf, qh, ldq, p.t - r0, p.h, vec);\n"
    "        float m[2] = {ninf, ninf}, l[2] = {0, 0};\n"
    "        for (int64_t j0 = 0; j0 < reach; j0 += BK) {\n"
    "            __syncthreads();\n"
    "            stage(sk, KP, BK, D, kh16 + j0 * ldk, ldk, lo(BK, reach - j0), p.h, vec);\n"
    "            __syncthreads();\n"
    "            if (j0 >= wreach) continue;\n"
    "            float s[NT][4];\n"
    "            times_rows<T, D, NT>(s, qf, sk, KP, 0);\n"
    "            float alpha[2];\n"
    "            online_tile<NT>(s, j0, seen, scale, m, l, alpha);\n"
    "        }\n"
    "        /* (every score -inf: NaN, log_sum says) */\n"
    "#pragma unroll\n"
    "        for (int r = 0; r < 2; r++)\n"
    "            if (seen[r] && t4 == 0)\n"
    "                lse[((b * p.t + r0 + g + 8 * r) * p.heads + n)] =\n"
    "                    log_sum(m[r], l[r]);\n"
    "    }\n"
    "}\n"
    "/* GRAD_Q (kind 2): per (batch, head, tile of ATTN_TQ queries), each warp 16 rows; per tile\n"
    " * of BK keys, s = q k^T and dp = ct v^T as mma steps, ds = p (dp - delta) with\n"
    " * p = exp(scale s - lse) in registers, rounded to T as the A fragments of dq += ds k */\n"
    "template <typename T, int D>\n"
    "__device__ void attn_dq(const T *q, const T *k, const T *v, const T *ct, const float *lse,\n"
    "                        const float *dl, T *out, const attn_grad_params &p) {\n"
    "    const int BK = D <= 64 ? 64 : 32, KP = D + 8, VP = BK + 8, NT = BK / 8, NO = D / 8;\n"
    "    __shared__ uint4 sk4[BK * KP / 8], sv4[BK * KP / 8], skt4[D * VP / 8];\n"
    "    uint16_t *const sk = (uint16_t *)sk4;   /* keys, [key][feature] */\n"
    "    uint16_t *const sv = (uint16_t *)sv4;   /* values, [key][column] */\n"
    "    uint16_t *const skt = (uint16_t *)skt4; /* keys, [feature][key] */\n"
    "    const int lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4;\n"
    "    const bool vec = p.vec;\n"
    "    const int64_t ldq = p.heads * p.h, ldk = p.kv_heads * p.h, ldv = p.kv_heads * p.hv;\n"
    "    const int64_t ldc = p.heads * p.hv;\n"
    "    const float scale = (float)p.scale;\n"
    "    for (int64_t it = blockIdx.x; it < qtiles(p); it += gridDim.x) {\n"
    "        const qtile u = qtile_of(it, p);\n"
    "        const int64_t b = u.b, n = u.n, kh = u.kh, r0 = u.r0, reach = u.reach;\n"
    "        const int64_t wreach = u.wreach, *seen = u.seen;\n"
    "        float lr[2], dr[2];\n"
    "#pragma unroll\n"
    "        for (int r = 0; r < 2; r++) {\n"
    "            const int64_t i = r0 + g + 8 * r;\n"
    "            lr[r] = seen[r] ? lse[(b * p.t + i) * p.heads + n] : 0.0f;\n"
    "            dr[r] = seen[r] ? dl[(b * p.t + i) * p.heads + n] : 0.0f;\n"
    "        }\n"
    "        const uint16_t *qh = (const uint16_t *)q + (b * p.t + r0) * ldq + n * p.h;\n"
    "        const uint16_t *ch = (const uint16_t *)ct + (b * p.t + r0) * ldc + n * p.hv;\n"
    "        const uint16_t *kh16 = (const uint16_t *)k + b * p.s * ldk + kh * p.h;\n"
    "        const uint16_t *vh = (const uint16_t *)v + b * p.s * ldv + kh * p.hv;\n"
    "        uint32_t qf[D / 16][4], cf[D / 16][4];\n"
    "        frags<D>(qf, qh, ldq, p.t - r0, p.h, vec);\n"
    "        frags<D>(cf, ch, ldc, p.t - r0, p.hv, vec);\n"
    "        float dq[NO][4];\n"
    "#pragma unroll\n"
    "        for (int e = 0; e < NO; e++) dq[e][0] = dq[e][1] = dq[e][2] = dq[e][3] = 0;\n"
    "        for (int64_t j0 = 0; j0 < reach; j0 += BK) {\n"
    "            const int64_t kw = lo(BK, reach - j0);\n"
    "            __syncthreads();\n"
    "            stage(sk, KP, BK, D, kh16 + j0 * ldk, ldk, kw, p.h, vec);\n"
    "            stage(sv, KP, BK, D, vh + j0 * ldv, ldv, kw, p.hv, vec);\n"
    "            stage_t(skt, VP, BK, D, kh16 + j0 * ldk, ldk, kw, p.h, vec);\n"
    "            __syncthreads();\n"
    "            if (j0 >= wreach) continue;\n"
    "            /* groups of 8 keys from `past` on are past every row of the warp */\n"
    "            const int past = (int)lo(NT, (wreach - j0 + 7) / 8);\n"
    "            float s[NT][4], dp[NT][4];\n"
    "            times_rows<T, D, NT>(s, qf, sk, KP, 0);\n"
    "            times_rows<T, D, NT>(dp, cf, sv, KP, 0);\n"
    "#pragma unroll\n"
    "            for (int nt = 0; nt < NT; nt++)\n"
    "#pragma unroll\n"
    "                for (int x = 0; x < 4; x++) {\n"
    "                    const int r = x >> 1;\n"
    "                    const int64_t j = j0 + nt * 8 + 2 * t4 + (x & 1);\n"
    "                    /* a key the row does not see: 0, not a product with 0 (v may be inf) */\n"
    "                    s[nt][x] = nt < past && j < seen[r]\n"
    "                                   ? ex(s[nt][x] * scale - lr[r]) * (dp[nt][x] - dr[r])\n"
    "                                   : 0.0f;\n"
    "                }\n"
    "            times_cols<T, BK, NO>(dq, s, skt, VP, 0);\n"
    "        }\n"
    "#pragma unroll\n"
    "        for (int r = 0; r < 2; r++) {\n"
    "            if (!seen[r]) continue;\n"
    "            T *o = out + (b * p.t + r0 + g + 8 * r) * ldq + n * p.h;\n"
    "#pragma unroll\n"
    "            for (int e = 0; e < NO; e++) {\n"
    "                const int64_t col = e * 8 + 2 * t4;\n"
    "                if (col < p.h) {\n"
    "                    const uint32_t u = pack<T>(dq[e][2 * r] * scale, dq[e][2 * r + 1] * "
    "scale);\n"
    "                    if (vec)\n"
    "                        *(uint32_t *)((uint16_t *)o + col) = u;\n"
    "                    else\n"
    "                        ((uint16_t *)o)[col] = (uint16_t)u, ((uint16_t *)o)[col + 1] = u >> "
    "16;\n"
    "                }\n"
    "            }\n"
    "        }\n"
    "    }\n"
    "}\n"
    "/* GRAD_K (kind 3, K = true) and GRAD_V (kind 4): per (batch, key/value head, tile of\n"
    " * ATTN_TQ keys), each warp 16 keys; over the group's query heads and the tiles of BQ\n"
    " * queries that see the tile, s^T = k q^T as mma steps, p^T = exp(scale s^T - lse) in\n"
    " * registers; GRAD_V: dv += p^T ct; GRAD_K: dp^T = v ct^T, ds^T = p^T (dp^T - delta),\n"
    " * dk += ds^T q, each rounded to T as the A fragments */\n"
    "template <typename T, int D, bool K>\n"
    "__device__ void attn_dkv(const T *q, const T *k, const T *v, const T *ct, const float *lse,\n"
    "                         const float *dl, T *out, const attn_grad_params &p) {\n"
    "    const int BQ = D <= 64 ? 64 : 32, KP = D + 8, QP = BQ + 8, NT = BQ / 8, NO = D / 8;\n"
    "    __shared__ uint4 sq4[BQ * KP / 8], sx4[(K ? BQ * KP : 8) / 8], st4[D * QP / 8];\n"
    "    __shared__ float sl[BQ], sd[BQ];\n"
    "    uint16_t *const sq = (uint16_t *)sq4; /* queries, [query][feature] */\n"
    "    uint16_t *const sx = (uint16_t *)sx4; /* GRAD_K: ct, [query][column] */\n"
    "    uint16_t *const st = (uint16_t *)st4; /* GRAD_K: queries, GRAD_V: ct, [column][query] */\n"
    "    const int tid = threadIdx.x, w = tid / 32, lane = tid % 32, g = lane / 4, t4 = lane % 4;\n"
    "    const bool vec = p.vec;\n"
    "    const int64_t nkb = (p.s + ATTN_TQ - 1) / ATTN_TQ, bk = p.batch * p.kv_heads;\n"
    "    const int64_t items = nkb * bk, grp = p.heads / p.kv_heads;\n"
    "    const int64_t ldq = p.heads * p.h, ldk = p.kv_heads * p.h, ldv = p.kv_heads * p.hv;\n"
    "    const int64_t ldc = p.heads * p.hv, ldo = K ? ldk : ldv, wo = K ? p.h : p.hv;\n"
    "    const float scale = (float)p.scale;\n"
    "    for (int64_t it = blockIdx.x; it < items; it += gridDim.x) {\n"
    "        /* the first key tiles (the most queries, when causal) first */\n"
    "        const int64_t kb = it / bk, b = it % bk / p.kv_heads, kh = it % p.kv_heads;\n"
    "        const int64_t j0 = kb * ATTN_TQ, c0 = j0 + 16 * w; /* the warp's keys c0 + g + 8 r "
    "*/\n"
    "        const uint16_t *kh16 = (const uint16_t *)k + (b * p.s + c0) * ldk + kh * p.h;\n"
    "        const uint16_t *vh = (const uint16_t *)v + (b * p.s + c0) * ldv + kh * p.hv;\n"
    "        uint32_t kf[D / 16][4], vf[D / 16][4];\n"
    "        frags<D>(kf, kh16, ldk, p.s - c0, p.h, vec);\n"
    "        if (K) frags<D>(vf, vh, ldv, p.s - c0, p.hv, vec);\n"
    "        float acc[NO][4];\n"
    "#pragma unroll\n"
    "        for (int e = 0; e < NO; e++) acc[e][0] = acc[e][1] = acc[e][2] = acc[e][3] = 0;\n"
    "        /* queries i >= the tile's first key see some of it when causal */\n"
    "        const int64_t first = p.causal ? j0 / BQ * BQ : 0;\n"
    "        for (int64_t n = kh * grp; n < (kh + 1) * grp; n++)\n"
    "            for (int64_t i0 = first; i0 < p.t; i0 += BQ) {\n"
    "                const int64_t qw = lo(BQ, p.t - i0);\n"
    "                const uint16_t *qh = (const uint16_t *)q + (b * p.t + i0) * ldq + n * p.h;\n"
    "                const uint16_t *ch = (const uint16_t *)ct + (b * p.t + i0) * ldc + n * p.hv;\n"
    "                __syncthreads();\n"
    "                stage(sq, KP, BQ, D, qh, ldq, qw, p.h, vec);\n"
    "                if (K) {\n"
    "                    stage(sx, KP, BQ, D, ch, ldc, qw, p.hv, vec);\n"
    "                    stage_t(st, QP, BQ, D, qh, ldq, qw, p.h, vec);\n"
    "                } else {\n"
    "                    stage_t(st, QP, BQ, D, ch, ldc, qw, p.hv, vec);\n"
    "                }\n"
    "                for (int z = tid; z < BQ; z += ATTN_THREADS) {\n"
    "                    const int64_t x = (b * p.t + i0 + z) * p.heads + n;\n"
    "                    sl[z] = z < qw ? lse[x] : 0.0f;\n"
    "                    sd[z] = z < qw && K ? dl[x] : 0.0f;\n"
    "                }\n"
    "                __syncthreads();\n"
    "                if (c0 >= p.s) continue;\n"
    "                /* groups of 8 queries all before the warp's first key see none of its keys "
    "*/\n"
    "                const int from = p.causal ? (int)lo(NT, c0 > i0 ? (c0 - i0) / 8 : 0) : 0;\n"
    "                if (from >= NT) continue;\n"
    "                float s[NT][4], dp[NT][4];\n"
    "                times_rows<T, D, NT>(s, kf, sq, KP, from);\n"
    "                if (K) times_rows<T, D, NT>(dp, vf, sx, KP, from);\n"
    "#pragma unroll\n"
    "                for (int nt = 0; nt < NT; nt++)\n"
    "#pragma unroll\n"
    "                    for (int x = 0; x < 4; x++) {\n"
    "                        const int iq = nt * 8 + 2 * t4 + (x & 1); /* the query, in the tile "
    "*/\n"
    "                        const int64_t i = i0 + iq, j = c0 + g + 8 * (x >> 1);\n"
    "                        const bool sees = nt >= from && i < p.t && j < p.s && (!p.causal || j "
    "<= i);\n"
    "                        const float pr = sees ? ex(s[nt][x] * scale - sl[iq]) : 0.0f;\n"
    "                        s[nt][x] = !sees ? 0.0f : K ? pr * (dp[nt][x] - sd[iq]) : pr;\n"
    "                    }\n"
    "                times_cols<T, BQ, NO>(acc, s, st, QP, from / 2);\n"
    "            }\n"
    "#pragma unroll\n"
    "        for (int r = 0; r < 2; r++) {\n"
    "            const int64_t j = c0 + g + 8 * r;\n"
    "            if (j >= p.s) continue;\n"
    "            uint16_t *o = (uint16_t *)out + (b * p.s + j) * ldo + kh * wo;\n"
    "            const float f = K ? scale : 1.0f;\n"
    "#pragma unroll\n"
    "            for (int e = 0; e < NO; e++) {\n"
    "                const int64_t col = e * 8 + 2 * t4;\n"
    "                if (col < wo) {\n"
    "                    const uint32_t u = pack<T>(acc[e][2 * r] * f, acc[e][2 * r + 1] * f);\n"
    "                    if (vec)\n"
    "                        *(uint32_t *)(o + col) = u;\n"
    "                    else\n"
    "                        o[col] = (uint16_t)u, o[col + 1] = u >> 16;\n"
    "                }\n"
    "            }\n"
    "        }\n"
    "    }\n"
    "}\n"
    "#define GRAD(T, D, S)                                                                         "
    "    \\\n"
    "    extern \"C\" __global__ void __launch_bounds__(256, 1)                                    "
    "       \\\n"
    "        kiln_attn_lse_##S(const T *q, const T *k, const T *, const T *, const float *,        "
    "     \\\n"
    "                          const float *, float *out, attn_grad_params p) {                    "
    "     \\\n"
    "        attn_lse<T, D>(q, k, out, p);                                                         "
    "     \\\n"
    "    }                                                                                         "
    "     \\\n"
    "    extern \"C\" __global__ void __launch_bounds__(256, 1)                                    "
    "       \\\n"
    "        kiln_attn_dq_##S(const T *q, const T *k, const T *v, const T *ct, const float *lse,   "
    "     \\\n"
    "                         const float *dl, T *out, attn_grad_params p) {                       "
    "     \\\n"
    "        attn_dq<T, D>(q, k, v, ct, lse, dl, out, p);                                          "
    "     \\\n"
    "    }                                                                                         "
    "     \\\n"
    "    extern \"C\" __global__ void __launch_bounds__(256, 1)                                    "
    "       \\\n"
    "        kiln_attn_dk_##S(const T *q, const T *k, const T *v, const T *ct, const float *lse,   "
    "     \\\n"
    "                         const float *dl, T *out, attn_grad_params p) {                       "
    "     \\\n"
    "        attn_dkv<T, D, true>(q, k, v, ct, lse, dl, out, p);                                   "
    "     \\\n"
    "    }                                                                                         "
    "     \\\n"
    "    extern \"C\" __global__ void __launch_bounds__(256, 1)                                    "
    "       \\\n"
    "        kiln_attn_dv_##S(const T *q, const T *k, const T *v, const T *ct, const float *lse,   "
    "     \\\n"
    "                         const float *dl, T *out, attn_grad_params p) {                       "
    "     \\\n"
    "        attn_dkv<T, D, false>(q, k, v, ct, lse, dl, out, p);                                  "
    "     \\\n"
    "    }\n"
    "#else\n"
    "#define GRAD(T, D, S)                                                                         "
    "    \\\n"
    "    extern \"C\" __global__ void kiln_attn_lse_##S(const T *, const T *, const T *, const T "
    "*,      \\\n"
    "                                                 const float *, const float *, float *,       "
    "     \\\n"
    "                                                 attn_grad_params) {}                         "
    "     \\\n"
    "    extern \"C\" __global__ void kiln_attn_dq_##S(const T *, const T *, const T *, const T *, "
    "      \\\n"
    "                                                const float *, const float *, T *,            "
    "     \\\n"
    "                                                attn_grad_params) {}                          "
    "     \\\n"
    "    extern \"C\" __global__ void kiln_attn_dk_##S(const T *, const T *, const T *, const T *, "
    "      \\\n"
    "                                                const float *, const float *, T *,            "
    "     \\\n"
    "                                                attn_grad_params) {}                          "
    "     \\\n"
    "    extern \"C\" __global__ void kiln_attn_dv_##S(const T *, const T *, const T *, const T *, "
    "      \\\n"
    "                                                const float *, const float *, T *,            "
    "     \\\n"
    "                                                attn_grad_params) {}\n"
    "#endif\n"
    "GRAD(bf16, 64, bf16_64)\n"
    "GRAD(bf16, 128, bf16_128)\n"
    "GRAD(f16, 64, f16_64)\n"
    "GRAD(f16, 128, f16_128)\n";

const char *cu_attention_grad_source(size_t *len) {
    *len = sizeof grad_source - 1;
    return grad_source;
}

bool cu_attention_grad_supports(const kn_attention_desc *a, int cc_major) {
    bool half = a->dtype == KILN_DTYPE_BF16 || a->dtype == KILN_DTYPE_F16;
    return half && cc_major >= 8 && a->kind != KN_ATTN_FORWARD && a->fill == -INFINITY &&
           a->h % 8 == 0 && a->hv % 8 == 0 && a->h <= 128 && a->hv <= 128;
}

int cu_attention_grad_kernel(const kn_attention_desc *a) {
    return 4 * (2 * (a->dtype == KILN_DTYPE_F16) + (a->h > 64 || a->hv > 64)) + (int)a->kind -
           (int)KN_ATTN_LSE;
}

/* Compiles and loads the kernels at the device's first gradient call (their own program,
 * as the forward's). */
static kiln_status grad_ready(cu_state *st, int device) {
    static const char *const names[CU_ATTN_GRAD_KERNELS] = {
        "kiln_attn_lse_bf16_64", "kiln_attn_dq_bf16_64",   "kiln_attn_dk_bf16_64",
        "kiln_attn_dv_bf16_64",  "kiln_attn_lse_bf16_128", "kiln_attn_dq_bf16_128",
        "kiln_attn_dk_bf16_128", "kiln_attn_dv_bf16_128",  "kiln_attn_lse_f16_64",
        "kiln_attn_dq_f16_64",   "kiln_attn_dk_f16_64",    "kiln_attn_dv_f16_64",
        "kiln_attn_lse_f16_128", "kiln_attn_dq_f16_128",   "kiln_attn_dk_f16_128",
        "kiln_attn_dv_f16_128"};
    cu_libk *l = &st->devs[device].lib;
    return cu_lib_program(st, device, "kiln_executable_run: attention_grad", grad_source,
                          sizeof grad_source - 1, CU_ATTN_GRAD_KERNELS, names, &l->attn_grad_prog,
                          l->attn_grad);
}

kiln_status cu_attention_grad_run(cu_state *st, int device, const kn_attention_desc *a,
                                  void *const *b) {
    cu_dev *d = &st->devs[device];
    bool kv = a->kind == KN_ATTN_GRAD_K || a->kind == KN_ATTN_GRAD_V;
    if (!a->batch || !a->heads || (kv ? !a->s : !a->t)) return KILN_STATUS_OK; /* no rows */
    if (kv && !a->t) { /* no queries: the gradients of k or v are 0 */
        size_t n =
            (size_t)(a->batch * a->s * a->kv_heads * (a->kind == KN_ATTN_GRAD_K ? a->h : a->hv));
        CUresult e = st->drv.cuMemsetD8Async((CUdeviceptr)b[6], 0, 2 * n, d->compute);
        return e ? cu_fail(st, e, "cuMemsetD8Async", "zeroing an attention gradient")
                 : KILN_STATUS_OK;
    }
    kiln_status s = grad_ready(st, device);
    if (s) return s;
    uintptr_t align = 0;
    for (int i = 0; i < 7; i++) align |= (uintptr_t)b[i];
    attn_grad_params p = {.batch = a->batch,
                          .t = a->t,
                          .s = a->s,
                          .heads = a->heads,
                          .kv_heads = a->kv_heads,
                          .h = a->h,
                          .hv = a->hv,
                          .causal = a->causal,
                          .vec = align % 16 == 0,
                          .scale = a->scale};
    void *params[] = {(void *)&b[0], (void *)&b[1], (void *)&b[2], (void *)&b[3],
                      (void *)&b[4], (void *)&b[5], (void *)&b[6], &p};
    int64_t tiles = ((kv ? a->s : a->t) + CU_ATTN_THREADS / 2 - 1) / (CU_ATTN_THREADS / 2);
    unsigned grid = cu_grid(d, tiles * a->batch * (kv ? a->kv_heads : a->heads));
    CUresult e = st->drv.cuLaunchKernel(d->lib.attn_grad[cu_attention_grad_kernel(a)], grid, 1, 1,
                                        CU_ATTN_THREADS, 1, 1, 0, d->compute, params, NULL);
    if (e) return cu_fail(st, e, "cuLaunchKernel", "launching an attention gradient kernel");
    return KILN_STATUS_OK;
}
