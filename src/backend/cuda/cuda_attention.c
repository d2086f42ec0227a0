/* cuda_attention.c — dot_product_attention on the GPU as one fused kernel (the backend's
 * attention library op), after FlashAttention's forward pass: the [T, S] scores and
 * probabilities are never written to device memory.
 *
 * A block (ATTN_THREADS threads) takes one (batch, query head, tile of BQ query rows) at
 * a time, the tiles with the most keys (the last ones, when causal) first. L = 16
 * consecutive threads share RT query rows (4; 2 for f64): each holds, for each of them,
 * BK / L scores of a key tile and DV / L columns of the output accumulator in registers,
 * so that every value it loads from shared memory serves RT (or BK / L, DV / L) products
 * rather than one: the plain kernel is bound by shared-memory loads, not arithmetic.
 * Per tile of BK keys, the block stages the
 * keys (and the queries, in chunks of DK features when H > DK) in shared memory, widened
 * to the accumulation type; each row's scores are scaled, masked and reduced across its
 * L threads by warp shuffles into the running maximum m and sum l (the online softmax:
 * the accumulator and l are rescaled by exp(m_old - m_new) when the maximum grows); the
 * probabilities go to shared memory only, and the value tile staged in the keys' place
 * is multiplied into the accumulator. With a causal mask the key tiles right of the
 * query tile's diagonal are never loaded. Hv wider than DV runs the key loop once per
 * chunk of DV output columns (the scores recomputed: the accumulator stays on chip).
 *
 * Semantics are cpu_attention.c's: a row whose scores so far are all -inf has seen
 * nothing (its sum stays 0, its result 0/0 = NaN as the reference's); NaN propagates; a
 * finite fill (the score of a key j > i) is added at the end, all those keys sharing one
 * score, and skipped per row when exp(fill - m) is 0. f32, bf16 and f16 accumulate in
 * f32 (16-bit values widened on load, each output narrowed once, to nearest even), f64 in
 * f64.
 *
 * bf16 and f16 on compute capability 8.0 and up take the tensor-core kernels further down
 * (attn_tc, cu_attention_kernel chooses): the same semantics, the products as mma.sync
 * steps, the probabilities rounded to the dtype as the second product's operand. The
 * source is plain CUDA C++ but for that one mma helper, whose form without __CUDA_ARCH__
 * calls the emulator's (kiln_emu_mma: the warp's fragments exchanged as PTX lays them
 * out), so that tests/test_cuda_emulate.c runs this very code on the CPU. */
#include "cuda_backend.h"
#include "cuda_program.h"
#include "cuda_attention.h"

#include <math.h>

static const char attn_source[] =
    "/* kiln's fused attention (src/backend/cuda/cuda_attention.c) */\n" CU_ATTN_PRELUDE
    "#define ATTN_BK 32\n" CU_ATTN_PARAMS
    /* T: storage; A: accumulation; L threads share RT rows (g + G i), each holding
     * BK / L scores and DV / L accumulator columns of every one; DK features and DV output
     * columns a chunk */
    "template <typename T, typename A, int L, int RT, int DK, int DV>\n"
    "__device__ void attn(const T *q, const T *k, const T *v, T *out, A *lse, const attn_params "
    "&p) "
    "{\n"
    "    const int G = ATTN_THREADS / L, BQ = G * RT, NS = ATTN_BK / L, NV = DV / L;\n"
    "    const int KW = DK + 1 > DV ? DK + 1 : DV; /* a staged row: keys padded, values not */\n"
    "    __shared__ A sq[BQ][DK + 1];\n"
    "    __shared__ A skv[ATTN_BK * KW];\n"
    "    __shared__ A sp[BQ][ATTN_BK + 1];\n"
    "    const int tid = threadIdx.x, g = tid / L, lane = tid % L; /* rows g + G i, i < RT */\n"
    "    A ninf;\n"
    "    neg_inf(ninf);\n"
    "    const int64_t nqb = (p.t + BQ - 1) / BQ, bn = p.batch * p.heads, items = nqb * bn;\n"
    "    const int64_t ldq = p.heads * p.h, ldk = p.kv_heads * p.h, ldv = p.kv_heads * p.hv;\n"
    "    const int64_t ldo = p.heads * p.hv, grp = p.heads / p.kv_heads;\n"
    "    const A scale = (A)p.scale;\n"
    "    for (int64_t it = blockIdx.x; it < items; it += gridDim.x) {\n"
    "        const int64_t qb = nqb - 1 - it / bn, b = it % bn / p.heads, n = it % p.heads;\n"
    "        const int64_t kh = n / grp, i0 = qb * BQ, rows = lo(BQ, p.t - i0);\n"
    "        /* keys [0, reach) of the tile, [0, seen[i]) of row g + G i (none past the end) */\n"
    "        const int64_t reach = p.causal ? lo(i0 + rows, p.s) : p.s;\n"
    "        int64_t seen[RT];\n"
    "#pragma unroll\n"
    "        for (int i = 0; i < RT; i++)\n"
    "            seen[i] = g + G * i >= rows ? 0 : p.causal ? lo(i0 + g + G * i + 1, p.s) : p.s;\n"
    "        const int64_t qo = (b * p.t + i0) * ldq + n * p.h, ko = b * p.s * ldk + kh * p.h;\n"
    "        const int64_t vo = b * p.s * ldv + kh * p.hv, oo = (b * p.t + i0) * ldo + n * p.hv;\n"
    "        const bool one = p.h <= DK; /* the queries staged once per chunk of columns */\n"
    "        for (int64_t c0 = 0; c0 < p.hv; c0 += DV) {\n"
    "            const int64_t cw = lo(DV, p.hv - c0);\n"
    "            A acc[RT][NV], m[RT], l[RT];\n"
    "#pragma unroll\n"
    "            for (int i = 0; i < RT; i++) {\n"
    "                m[i] = ninf, l[i] = 0;\n"
    "#pragma unroll\n"
    "                for (int e = 0; e < NV; e++) acc[i][e] = 0;\n"
    "            }\n"
    "            if (one) {\n"
    "                for (int x = tid; x < BQ * DK; x += ATTN_THREADS) {\n"
    "                    int rr = x / DK, e = x % DK;\n"
    "                    sq[rr][e] = rr < rows && e < p.h ? wide(q[qo + rr * ldq + e]) : (A)0;\n"
    "                }\n"
    "            }\n"
    "            for (int64_t j0 = 0; j0 < reach; j0 += ATTN_BK) {\n"
    "                const int64_t kw = lo(ATTN_BK, reach - j0);\n"
    "                A sc[RT][NS];\n"
    "#pragma unroll\n"
    "                for (int i = 0; i < RT; i++)\n"
    "#pragma unroll\n"
    "                    for (int c = 0; c < NS; c++) sc[i][c] = 0;\n"
    "                for (int64_t d0 = 0; d0 < p.h; d0 += DK) { /* scores, DK features at a time "
    "*/\n"
    "                    const int dw = (int)lo(DK, p.h - d0);\n"
    "                    __syncthreads(); /* the last readers of sq and skv are done */\n"
    "                    for (int x = tid; x < BQ * DK && !one; x += ATTN_THREADS) {\n"
    "                        int rr = x / DK, e = x % DK;\n"
    "                        sq[rr][e] = rr < rows && e < dw ? wide(q[qo + rr * ldq + d0 + e]) : "
    "(A)0;\n"
    "                    }\n"
    "                    for (int x = tid; x < ATTN_BK * DK; x += ATTN_THREADS) {\n"
    "                        int jj = x / DK, e = x % DK;\n"
    "                        skv[jj * (DK + 1) + e] =\n"
    "                            jj < kw && e < dw ? wide(k[ko + (j0 + jj) * ldk + d0 + e]) : "
    "(A)0;\n"
    "                    }\n"
    "                    __syncthreads();\n"
    "                    for (int e = 0; e < dw; e++) { /* RT x NS scores from RT + NS loads */\n"
    "                        A qv[RT], kv[NS];\n"
    "#pragma unroll\n"
    "                        for (int i = 0; i < RT; i++) qv[i] = sq[g + G * i][e];\n"
    "#pragma unroll\n"
    "                        for (int c = 0; c < NS; c++) kv[c] = skv[(lane + c * L) * (DK + 1) + "
    "e];\n"
    "#pragma unroll\n"
    "                        for (int i = 0; i < RT; i++)\n"
    "#pragma unroll\n"
    "                            for (int c = 0; c < NS; c++) sc[i][c] += qv[i] * kv[c];\n"
    "                    }\n"
    "                }\n"
    "                /* the online softmax: each row's maximum over its L threads, then exp */\n"
    "                A alpha[RT];\n"
    "#pragma unroll\n"
    "                for (int i = 0; i < RT; i++) {\n"
    "                    A tm = ninf;\n"
    "#pragma unroll\n"
    "                    for (int c = 0; c < NS; c++) {\n"
    "                        const int64_t j = j0 + lane + c * L;\n"
    "                        sc[i][c] = j < seen[i] ? sc[i][c] * scale : ninf; /* seen <= reach "
    "*/\n"
    "                        tm = nmax(sc[i][c], tm);\n"
    "                    }\n"
    "#pragma unroll\n"
    "                    for (int o = 1; o < L; o <<= 1)\n"
    "                        tm = nmax(__shfl_xor_sync(0xffffffffu, tm, o), tm);\n"
    "                    const A mn = nmax(tm, m[i]);\n"
    "                    A rs = 0;\n"
    "                    alpha[i] = 1;\n"
    "                    if (mn != ninf) { /* (all -inf so far: nothing seen, nothing changes) */\n"
    "                        alpha[i] = ex(m[i] - mn);\n"
    "#pragma unroll\n"
    "                        for (int c = 0; c < NS; c++) rs += sc[i][c] = ex(sc[i][c] - mn);\n"
    "                    } else {\n"
    "#pragma unroll\n"
    "                        for (int c = 0; c < NS; c++) sc[i][c] = 0;\n"
    "                    }\n"
    "#pragma unroll\n"
    "                    for (int o = 1; o < L; o <<= 1) rs += __shfl_xor_sync(0xffffffffu, rs, "
    "o);\n"
    "                    l[i] = l[i] * alpha[i] + rs;\n"
    "                    m[i] = mn;\n"
    "#pragma unroll\n"
    "                    for (int c = 0; c < NS; c++) sp[g + G * i][lane + c * L] = sc[i][c];\n"
    "                }\n"
    "                __syncthreads(); /* the keys are read: the values take their place */\n"
    "                for (int x = tid; x < ATTN_BK * DV; x += ATTN_THREADS) {\n"
    "                    int jj = x / DV, e = x % DV;\n"
    "                    skv[jj * DV + e] =\n"
    "                        jj < kw && e < cw ? wide(v[vo + (j0 + jj) * ldv + c0 + e]) : (A)0;\n"
    "                }\n"
    "                __syncthreads();\n"
    "                /* the block's keys of this tile: a row's probabilities past its own are 0 "
    "*/\n"
    "                int64_t jn = 0;\n"
    "#pragma unroll\n"
    "                for (int i = 0; i < RT; i++) jn = seen[i] - j0 > jn ? lo(kw, seen[i] - j0) : "
    "jn;\n"
    "#pragma unroll\n"
    "                for (int i = 0; i < RT; i++)\n"
    "#pragma unroll\n"
    "                    for (int e = 0; e < NV; e++) acc[i][e] *= alpha[i];\n"
    "                for (int jj = 0; jj < jn; jj++) { /* RT x NV products from RT + NV loads */\n"
    "                    A pv[RT], vv[NV];\n"
    "#pragma unroll\n"
    "                    for (int i = 0; i < RT; i++) pv[i] = sp[g + G * i][jj];\n"
    "#pragma unroll\n"
    "                    for (int e = 0; e < NV; e++) vv[e] = skv[jj * DV + lane + e * L];\n"
    "#pragma unroll\n"
    "                    for (int i = 0; i < RT; i++)\n"
    "#pragma unroll\n"
    "                        for (int e = 0; e < NV; e++) acc[i][e] += pv[i] * vv[e];\n"
    "                }\n"
    "            }\n"
    "            /* a finite fill: the keys j >= seen all score it (cpu_attention.c's rows_*_fill) "
    "*/\n"
    "#pragma unroll\n"
    "            for (int i = 0; i < RT; i++) {\n"
    "                if (p.causal && p.fill_finite && seen[i] && seen[i] < p.s && m[i] == m[i]) {\n"
    "                    const A f = (A)p.fill, top = m[i] > f ? m[i] : f, w = ex(f - top);\n"
    "                    if (w != 0) {\n"
    "                        const A a = ex(m[i] - top);\n"
    "                        l[i] = l[i] * a + (A)(p.s - seen[i]) * w, m[i] = top;\n"
    "#pragma unroll\n"
    "                        for (int e = 0; e < NV; e++) {\n"
    "                            const int64_t col = lane + e * L;\n"
    "                            A vs = 0;\n"
    "                            for (int64_t j = seen[i]; j < p.s && col < cw; j++)\n"
    "                                vs += wide(v[vo + j * ldv + c0 + col]);\n"
    "                            acc[i][e] = acc[i][e] * a + w * vs;\n"
    "                        }\n"
    "                    }\n"
    "                }\n"
    "                if (seen[i]) { /* a live row */\n"
    "                    if (lse && c0 == 0 && lane == 0)\n"
    "                        lse[(b * p.t + i0 + g + G * i) * p.heads + n] = log_sum(m[i], l[i]);\n"
    "                    const A inv = (A)1 / l[i];\n"
    "#pragma unroll\n"
    "                    for (int e = 0; e < NV; e++) {\n"
    "                        const int64_t col = lane + e * L;\n"
    "                        if (col < cw)\n"
    "                            narrow(acc[i][e] * inv, out[oo + (g + G * i) * ldo + c0 + col]);\n"
    "                    }\n"
    "                }\n"
    "            }\n"
    "        }\n"
    "    }\n"
    "}\n"
    /* two blocks an SM, 128 registers a thread (ptxas took over 220 without the bound,
     * leaving one block of 8 warps an SM to hide the shared-memory loads' latency) */
    "#define ATTN(name, T, A, L, RT, DK, DV) extern \"C\" __global__ void __launch_bounds__(256, "
    "2) "
    "name(const T *q, const T *k, const T *v, T *out, A *lse, attn_params p) { attn<T, A, L, RT, "
    "DK, DV>(q, k, v, out, lse, p); }\n"
    "ATTN(kiln_attn_f32, float, float, 16, 4, 64, 128)\n"
    "ATTN(kiln_attn_f64, double, double, 16, 2, 32, 64)\n"
    "ATTN(kiln_attn_bf16, bf16, float, 16, 4, 64, 128)\n"
    "ATTN(kiln_attn_f16, f16, float, 16, 4, 64, 128)\n"
    /* The tensor-core form for bf16 and f16 (compute capability 8.0 and up): each of the
     * block's 8 warps takes 16 query rows of a tile of ATTN_TQ, the scores of a tile of BK keys
     * and the output columns as mma.sync m16n8k16 steps (16-bit operands, f32 accumulators)
     * whose accumulator fragments the online softmax works on in registers, the probabilities
     * rounded to T once as the second product's operand (as FlashAttention-2 does). The keys
     * are staged [key][feature] and the values [column][key] in shared memory, rows padded by
     * 16 bytes, so each lane's fragment is 32-bit loads on distinct banks. D: the head sizes
     * H and Hv, multiples of 8, rounded up to 64 or 128 (the fragments past them zero). */
    "#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800\n"
    "#define ATTN_TQ 128\n" CU_ATTN_MMA "template <typename T, int D>\n"
    "__device__ void attn_tc(const T *q, const T *k, const T *v, T *out, float *lse,\n"
    "                        const attn_params &p) {\n"
    "    const int BK = D <= 64 ? 64 : 32, KP = D + 8, VP = BK + 8, NT = BK / 8, NO = D / 8;\n"
    /* 16-byte aligned, as the tiles' uint4 stores need: kept as uint4 and read as 16-bit */
    "    __shared__ uint4 sk4[BK * KP / 8], svt4[D * VP / 8];\n"
    "    uint16_t *const sk = (uint16_t *)sk4;  /* the key tile, [key][feature] */\n"
    "    uint16_t *const svt = (uint16_t *)svt4; /* the value tile, [column][key] */\n"
    "    const int tid = threadIdx.x, w = tid / 32, lane = tid % 32, g = lane / 4, t4 = lane % 4;\n"
    "    float ninf;\n"
    "    neg_inf(ninf);\n"
    "    const uint16_t *qh = (const uint16_t *)q, *kh16 = (const uint16_t *)k;\n"
    "    const uint16_t *vh = (const uint16_t *)v;\n"
    "    const int64_t nqb = (p.t + ATTN_TQ - 1) / ATTN_TQ, bn = p.batch * p.heads, items = nqb * "
    "bn;\n"
    "    const int64_t ldq = p.heads * p.h, ldk = p.kv_heads * p.h, ldv = p.kv_heads * p.hv;\n"
    "    const int64_t ldo = p.heads * p.hv, grp = p.heads / p.kv_heads;\n"
    "    const float scale = (float)p.scale;\n"
    "    for (int64_t it = blockIdx.x; it < items; it += gridDim.x) {\n"
    "        const int64_t qb = nqb - 1 - it / bn, b = it % bn / p.heads, n = it % p.heads;\n"
    "        const int64_t kh = n / grp, i0 = qb * ATTN_TQ, r0 = i0 + 16 * w;\n"
    "        const int64_t reach = p.causal ? lo(lo(i0 + ATTN_TQ, p.t), p.s) : p.s;\n"
    "        /* the warp's keys, and row r0 + g + 8 r's, [0, seen[r]) (none past the end) */\n"
    "        const int64_t wreach = r0 >= p.t ? 0 : p.causal ? lo(r0 + 16, p.s) : p.s;\n"
    "        int64_t seen[2];\n"
    "#pragma unroll\n"
    "        for (int r = 0; r < 2; r++) {\n"
    "            const int64_t i = r0 + g + 8 * r;\n"
    "            seen[r] = i >= p.t ? 0 : p.causal ? lo(i + 1, p.s) : p.s;\n"
    "        }\n"
    "        const int64_t qo = (b * p.t + r0) * ldq + n * p.h, ko = b * p.s * ldk + kh * p.h;\n"
    "        const int64_t vo = b * p.s * ldv + kh * p.hv, oo = (b * p.t + r0) * ldo + n * p.hv;\n"
    "        /* the warp's queries as A fragments: register x holds row g + 8 (x & 1), columns\n"
    "         * 2 t4 + 8 (x >> 1) and the next */\n"
    "        uint32_t qf[D / 16][4];\n"
    "#pragma unroll\n"
    "        for (int ks = 0; ks < D / 16; ks++)\n"
    "#pragma unroll\n"
    "            for (int x = 0; x < 4; x++) {\n"
    "                const int rr = g + 8 * (x & 1), c = ks * 16 + 2 * t4 + 8 * (x >> 1);\n"
    "                qf[ks][x] = r0 + rr < p.t && c < p.h ? ld32(qh + qo + rr * ldq + c) : 0u;\n"
    "            }\n"
    "        float o[NO][4], m[2] = {ninf, ninf}, l[2] = {0, 0};\n"
    "#pragma unroll\n"
    "        for (int e = 0; e < NO; e++)\n"
    "#pragma unroll\n"
    "            for (int x = 0; x < 4; x++) o[e][x] = 0;\n"
    "        for (int64_t j0 = 0; j0 < reach; j0 += BK) {\n"
    "            const int64_t kw = lo(BK, reach - j0);\n"
    "            __syncthreads(); /* the last tile's readers are done */\n"
    "            for (int x = tid; x < BK * (D / 8); x += ATTN_THREADS) {\n"
    "                const int jj = x / (D / 8), c = x % (D / 8) * 8;\n"
    "                uint4 z = {0u, 0u, 0u, 0u};\n"
    "                if (jj < kw && c < p.h) z = *(const uint4 *)(kh16 + ko + (j0 + jj) * ldk + "
    "c);\n"
    "                *(uint4 *)(sk + jj * KP + c) = z;\n"
    "            }\n"
    "            for (int x = tid; x < BK * (D / 8); x += ATTN_THREADS) {\n"
    "                const int jj = x % BK, c = x / BK * 8;\n"
    "                uint4 z = {0u, 0u, 0u, 0u};\n"
    "                if (jj < kw && c < p.hv) z = *(const uint4 *)(vh + vo + (j0 + jj) * ldv + "
    "c);\n"
    "                const uint32_t u[4] = {z.x, z.y, z.z, z.w};\n"
    "#pragma unroll\n"
    "                for (int e = 0; e < 8; e++)\n"
    "                    svt[(c + e) * VP + jj] = (uint16_t)(u[e / 2] >> (16 * (e % 2)));\n"
    "            }\n"
    "            __syncthreads();\n"
    "            if (j0 >= wreach) continue; /* the warp's rows see none of these keys */\n"
    "            /* scores: accumulator register x of key group nt is row g + 8 (x >> 1), key\n"
    "             * j0 + 8 nt + 2 t4 + (x & 1) */\n"
    "            float s[NT][4];\n"
    "#pragma unroll\n"
    "            for (int nt = 0; nt < NT; nt++) {\n"
    "                s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0;\n"
    /* a group of keys past the warp's rows is masked for all of them: no product */
    "                if (j0 + 8 * nt >= wreach) continue;\n"
    "#pragma unroll\n"
    "                for (int ks = 0; ks < D / 16; ks++) {\n"
    "                    const uint16_t *kp = sk + (nt * 8 + g) * KP + ks * 16 + 2 * t4;\n"
    "                    const uint32_t bf[2] = {ld32(kp), ld32(kp + 8)};\n"
    "                    mma(T(), s[nt], qf[ks], bf);\n"
    "                }\n"
    "            }\n"
    "            float alpha[2];\n"
    "            online_tile<NT>(s, j0, seen, scale, m, l, alpha);\n"
    "#pragma unroll\n"
    "            for (int e = 0; e < NO; e++)\n"
    "#pragma unroll\n"
    "                for (int x = 0; x < 4; x++) o[e][x] *= alpha[x >> 1];\n"
    "            /* the probabilities of 16 keys are the A fragment of two score groups */\n"
    "#pragma unroll\n"
    "            for (int kk = 0; kk < BK / 16; kk++) {\n"
    /* keys past the warp's rows have probability 0 in all of them: their values (which
     * may be infinite) are left out, not multiplied by 0 */
    "                if (j0 + 16 * kk >= wreach) break;\n"
    "                const uint32_t pa[4] = {pack<T>(s[2 * kk][0], s[2 * kk][1]),\n"
    "                                        pack<T>(s[2 * kk][2], s[2 * kk][3]),\n"
    "                                        pack<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]),\n"
    "                                        pack<T>(s[2 * kk + 1][2], s[2 * kk + 1][3])};\n"
    "#pragma unroll\n"
    "                for (int e = 0; e < NO; e++) {\n"
    "                    const uint16_t *vp = svt + (e * 8 + g) * VP + kk * 16 + 2 * t4;\n"
    "                    const uint32_t bf[2] = {ld32(vp), ld32(vp + 8)};\n"
    "                    mma(T(), o[e], pa, bf);\n"
    "                }\n"
    "            }\n"
    "        }\n"
    "        /* a finite fill: the keys j >= seen all score it (cpu_attention.c's rows_*_fill),\n"
    "         * then each live row's output, two columns a store */\n"
    "#pragma unroll\n"
    "        for (int r = 0; r < 2; r++) {\n"
    "            if (!seen[r]) continue;\n"
    "            if (p.causal && p.fill_finite && seen[r] < p.s && m[r] == m[r]) {\n"
    "                const float f = (float)p.fill, top = m[r] > f ? m[r] : f, wt = ex(f - top);\n"
    "                if (wt != 0) {\n"
    "                    const float a = ex(m[r] - top);\n"
    "                    l[r] = l[r] * a + (float)(p.s - seen[r]) * wt, m[r] = top;\n"
    /* one loop over the keys, the lane's columns unrolled inside it (not a loop over keys
     * per column: 2 NO copies of it) */
    "                    float vs[NO][2];\n"
    "#pragma unroll\n"
    "                    for (int e = 0; e < NO; e++) vs[e][0] = vs[e][1] = 0;\n"
    "                    for (int64_t j = seen[r]; j < p.s; j++)\n"
    "#pragma unroll\n"
    "                        for (int e = 0; e < NO; e++)\n"
    "#pragma unroll\n"
    "                            for (int c = 0; c < 2; c++) {\n"
    "                                const int64_t col = e * 8 + 2 * t4 + c;\n"
    "                                if (col < p.hv) vs[e][c] += wide(v[vo + j * ldv + col]);\n"
    "                            }\n"
    "#pragma unroll\n"
    "                    for (int e = 0; e < NO; e++)\n"
    "#pragma unroll\n"
    "                        for (int c = 0; c < 2; c++)\n"
    "                            o[e][2 * r + c] = o[e][2 * r + c] * a + wt * vs[e][c];\n"
    "                }\n"
    "            }\n"
    "            const float inv = 1.0f / l[r];\n"
    "#pragma unroll\n"
    "            for (int e = 0; e < NO; e++) {\n"
    "                const int64_t col = e * 8 + 2 * t4;\n"
    "                if (col < p.hv)\n"
    "                    *(uint32_t *)(out + oo + (g + 8 * r) * ldo + col) =\n"
    "                        pack<T>(o[e][2 * r] * inv, o[e][2 * r + 1] * inv);\n"
    "            }\n"
    "        }\n"
    /* after the outputs, whose accumulators no longer hold registers (written beside them,
     * the index math made the 128-wide kernels spill) */
    "        if (lse && t4 == 0)\n"
    "#pragma unroll\n"
    "            for (int r = 0; r < 2; r++)\n"
    "                if (seen[r]) lse[(b * p.t + r0 + g + 8 * r) * p.heads + n] = log_sum(m[r], "
    "l[r]);\n"
    "    }\n"
    "}\n"
    /* one block an SM: the fragments take ptxas past 128 registers a thread, and bound to
     * two blocks it spilled; below compute capability 8.0 (no bf16 mma) the kernels are empty
     * and cu_attention_kernel never chooses them */
    "#define ATTN_TC(name, T, D) extern \"C\" __global__ void __launch_bounds__(256, 1) name(const "
    "T *q, const T *k, const T *v, T *out, float *lse, attn_params p) { attn_tc<T, D>(q, k, v, "
    "out, "
    "lse, p); }\n"
    "#else\n"
    "#define ATTN_TC(name, T, D) extern \"C\" __global__ void name(const T *, const T *, const T "
    "*, T *, float *, attn_params) {}\n"
    "#endif\n"
    "ATTN_TC(kiln_attn_tc_bf16_64, bf16, 64)\n"
    "ATTN_TC(kiln_attn_tc_bf16_128, bf16, 128)\n"
    "ATTN_TC(kiln_attn_tc_f16_64, f16, 64)\n"
    "ATTN_TC(kiln_attn_tc_f16_128, f16, 128)\n";

const char *cu_attention_source(size_t *len) {
    *len = sizeof attn_source - 1;
    return attn_source;
}

bool cu_attention_supports(const kn_attention_desc *a) {
    return cu_float_type(a->dtype) >= 0;
}

int cu_attention_kernel(const kn_attention_desc *a, int cc_major, uintptr_t align,
                        bool cuda_cores) {
    int t = cu_float_type(a->dtype);
    bool half = a->dtype == KILN_DTYPE_BF16 || a->dtype == KILN_DTYPE_F16;
    if (!half || cuda_cores || cc_major < 8 || align % 16 || a->h % 8 || a->hv % 8 || a->h > 128 ||
        a->hv > 128)
        return t;
    return CU_ATTN_TC + 2 * (a->dtype == KILN_DTYPE_F16) + (a->h > 64 || a->hv > 64);
}

int64_t cu_attention_block_rows(const kn_attention_desc *a, int kernel) {
    if (kernel >= CU_ATTN_TC) return CU_ATTN_THREADS / 2; /* 16 rows a warp */
    return a->dtype == KILN_DTYPE_F64 ? CU_ATTN_THREADS / 8 : CU_ATTN_THREADS / 4;
}

/* Compiles and loads the attention kernels at the device's first attention call (their own
 * program: most programs have none, and the library's compiles faster without them). */
static kiln_status attn_ready(cu_state *st, int device) {
    static const char *const names[CU_ATTN_KERNELS] = {
        "kiln_attn_f32",       "kiln_attn_f64",        "kiln_attn_bf16",
        "kiln_attn_f16",       "kiln_attn_tc_bf16_64", "kiln_attn_tc_bf16_128",
        "kiln_attn_tc_f16_64", "kiln_attn_tc_f16_128"};
    cu_libk *l = &st->devs[device].lib;
    return cu_lib_program(st, device, "kiln_executable_run: attention", attn_source,
                          sizeof attn_source - 1, CU_ATTN_KERNELS, names, &l->attn_prog, l->attn);
}

attn_params cu_attn_params(const kn_attention_desc *a, bool vec) {
    return (attn_params){.batch = a->batch,
                         .t = a->t,
                         .s = a->s,
                         .heads = a->heads,
                         .kv_heads = a->kv_heads,
                         .h = a->h,
                         .hv = a->hv,
                         .causal = a->causal,
                         .fill_finite = isfinite(a->fill),
                         .vec = vec,
                         .scale = a->scale,
                         .fill = a->fill};
}

kiln_status cu_attention_run(cu_state *st, int device, const kn_attention_desc *a, const void *q,
                             const void *k, const void *v, void *out, void *lse) {
    cu_dev *d = &st->devs[device];
    if (!a->batch || !a->t || !a->heads || !a->hv) return KILN_STATUS_OK; /* nothing to write */
    kiln_status s = attn_ready(st, device);
    if (s) return s;
    attn_params p = cu_attn_params(a, false);
    void *params[] = {(void *)&q, (void *)&k, (void *)&v, &out, &lse, &p};
    uintptr_t align = (uintptr_t)q | (uintptr_t)k | (uintptr_t)v | (uintptr_t)out;
    int kernel = cu_attention_kernel(a, d->cc_major, align, st->opt.attention_cuda_cores);
    int64_t rows = cu_attention_block_rows(a, kernel);
    unsigned grid = cu_grid(d, a->batch * a->heads * ((a->t + rows - 1) / rows));
    CUresult e = st->drv.cuLaunchKernel(d->lib.attn[kernel], grid, 1, 1, CU_ATTN_THREADS, 1, 1, 0,
                                        d->compute, params, NULL);
    if (e) return cu_fail(st, e, "cuLaunchKernel", "launching the attention kernel");
    return KILN_STATUS_OK;
}
