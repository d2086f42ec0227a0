/* steps.c — an executable's step list, built once from its IR when compiling, so that a
 * call (run.c) walks a flat array and never reads the graph, the fusion plan or the memory
 * plan.
 *
 * Each kernel in the planned order becomes its steps: a loop kernel a launch with its
 * buffers (inputs, then outputs), a product the permutes that pack its operands and the
 * gemm, a scatter, scan or attention one library call with its descriptor fully computed,
 * a collective its all-reduce. A kernel with nothing to do (no items, an empty product)
 * has no step. Every buffer is an exec_loc (an argument, a constant, an output, the arena,
 * with its offset), resolved once per call; a reshape that fusion left without a buffer
 * reads the buffer it reshapes (view_base).
 *
 * The same pass copies what a call checks and makes (the parameters' and outputs' types,
 * the graph's name, the donations, which outputs are copied after the steps) and the
 * constants read in place: into one host block on a device whose memory is the host's, a
 * device copy each on one with memory of its own, so the graph can go. */
#include "compile.h"
#include "comm/comm.h"

#include <string.h>

/* What the build works from: per node its buffer's place (NONE: none) and per constant
 * node its slot. */
typedef struct build {
    kiln_executable *e;
    exec_loc *of;       /* per node */
    uint32_t *const_of; /* per node: its constant slot + 1, or 0 */
    uint32_t n_steps, n_libs, n_locs;
} build;

static exec_loc loc_of_buffer(const build *b, const plan_buffer *pb) {
    if (!pb->size) return (exec_loc){EXEC_AT_NONE, 0, 0};
    switch (pb->place) {
    case PLAN_P_ARG: return (exec_loc){EXEC_AT_ARG, pb->place_index, 0};
    case PLAN_P_DONATED: return (exec_loc){EXEC_AT_ARG, pb->place_index, pb->offset};
    case PLAN_P_CONST: return (exec_loc){EXEC_AT_CONST, b->const_of[pb->node] - 1, 0};
    case PLAN_P_OUTPUT: return (exec_loc){EXEC_AT_OUTPUT, pb->place_index, 0};
    case PLAN_P_HOST: return (exec_loc){EXEC_AT_HOST, 0, pb->offset};
    default: return (exec_loc){EXEC_AT_ARENA, 0, pb->offset};
    }
}

/* A reshape fusion left without a buffer has the bytes of the buffer it reshapes. */
static uint32_t view_base(const kiln_executable *e, uint32_t id) {
    while (!e->plan.materialised[id] && e->g->nodes[id].op == IR_RESHAPE)
        id = ir_in(&e->g->nodes[id])[0];
    return id;
}

static exec_loc view_loc(const build *b, uint32_t id) {
    return b->of[view_base(b->e, id)];
}

/* Kernel ki's planned scratch (in the arena, or in a donated argument's free bytes) and
 * its size in *bytes, or NONE and 0 when it has none. */
static exec_loc scratch_loc(const build *b, uint32_t ki, uint64_t *bytes) {
    const kiln_executable *e = b->e;
    int32_t sb = e->mem.scratch_of[ki];
    *bytes = sb < 0 ? 0 : e->mem.buffers[sb].size;
    if (sb < 0) return (exec_loc){EXEC_AT_NONE, 0, 0};
    const plan_buffer *pb = &e->mem.buffers[sb];
    if (pb->place == PLAN_P_DONATED) return (exec_loc){EXEC_AT_ARG, pb->place_index, pb->offset};
    return (exec_loc){EXEC_AT_ARENA, 0, pb->offset};
}

/* Appends a step with its n buffers (the arrays were sized by count_steps). */
static void add_step(build *b, exec_step st, const exec_loc *bufs, uint32_t n) {
    st.at = b->n_locs, st.n = n;
    for (uint32_t i = 0; i < n; i++) b->e->locs[b->n_locs++] = bufs[i];
    b->e->steps[b->n_steps++] = st;
}

static void add_lib(build *b, exec_step st, const kn_lib_desc *d, const exec_loc *bufs) {
    st.kind = EXEC_STEP_LIB;
    st.lib = b->n_libs;
    b->e->libs[b->n_libs++] = *d;
    add_step(b, st, bufs, (uint32_t)kn_lib_op_buffers(d->op));
}

static void loop_steps(build *b, exec_step st, const fkernel *k) {
    kiln_executable *e = b->e;
    const cgen_kernel *ci = &e->info[st.kernel];
    if (!ci->items) return;
    st.kind = EXEC_STEP_LOOP;
    st.loop.fn = e->kernels[st.kernel], st.loop.items = ci->items, st.loop.grain = ci->grain;
    st.at = b->n_locs, st.n = k->n_inputs + k->n_roots;
    for (uint32_t i = 0; i < k->n_inputs; i++) e->locs[b->n_locs++] = b->of[k->inputs[i]];
    for (uint32_t i = 0; i < k->n_roots; i++) e->locs[b->n_locs++] = b->of[k->roots[i]];
    e->steps[b->n_steps++] = st;
}

/* A product: operands the gemm cannot read as they are were planned a scratch buffer
 * (lower_dot.h) and are permuted into it first. An empty product touches no buffer (an
 * empty one is NULL, and its scratch too): with an empty output there is nothing to do,
 * and with K = 0 the gemm writes zeros into the output without reading its operands, so
 * they are not packed. */
static void dot_steps(build *b, exec_step st, uint32_t id) {
    const kiln_executable *e = b->e;
    const ir_node *n = &e->g->nodes[id];
    const lower_dot *d = &e->dots[st.kernel];
    if (!d->gemm.batch || !d->gemm.m || !d->gemm.n) return;
    exec_loc ops[2] = {view_loc(b, ir_in(n)[0]), view_loc(b, ir_in(n)[1])};
    uint64_t bytes;
    exec_loc scratch = scratch_loc(b, st.kernel, &bytes);
    for (int i = 0; i < 2 && d->gemm.k; i++) {
        if (!(i ? d->pack_b : d->pack_a)) continue;
        const ir_node *x = &e->g->nodes[ir_in(n)[i]];
        kn_lib_desc pd = {.op = KN_LIB_PERMUTE, .dtype = x->dtype};
        pd.permute.rank = x->shape.rank;
        for (int a = 0; a < x->shape.rank; a++) {
            pd.permute.dims[a] = x->shape.dims[a];
            pd.permute.perm[a] = i ? d->perm_b[a] : d->perm_a[a];
        }
        exec_loc dst = scratch;
        dst.offset += i ? d->rhs_offset : 0;
        add_lib(b, st, &pd, (exec_loc[]){ops[i], dst});
        ops[i] = dst;
    }
    kn_lib_desc gd = {
        .op = KN_LIB_GEMM, .dtype = n->dtype, .scratch_bytes = d->gemm_scratch, .gemm = d->gemm};
    exec_loc gs = d->gemm_scratch ? scratch : (exec_loc){EXEC_AT_NONE, 0, 0};
    gs.offset += d->gemm_scratch ? d->gemm_offset : 0;
    add_lib(b, st, &gd, (exec_loc[]){ops[0], ops[1], b->of[id], gs});
}

/* Scatter: when the plan put the result over the operand, the backend skips the copy and
 * adds the rows in place; an operand fusion left without a buffer is zeros (fusion.c,
 * scatter_into_zeros), which the backend fills in itself. */
static void scatter_step(build *b, exec_step st, uint32_t id) {
    const uint32_t *in = ir_in(&b->e->g->nodes[id]);
    kn_lib_desc d;
    exec_scatter_desc(b->e->g, id, &d);
    exec_loc scratch = scratch_loc(b, st.kernel, &d.scratch_bytes);
    exec_loc operand = b->e->plan.materialised[in[0]] ? b->of[in[0]] : (exec_loc){0};
    add_lib(b, st, &d, (exec_loc[]){operand, b->of[in[1]], b->of[in[2]], b->of[id], scratch});
}

/* Cumsum: x as [outer, n, inner] around the summed axis; the plan may have put the result
 * over x (the backend scans in place then). */
static void scan_step(build *b, exec_step st, uint32_t id) {
    const ir_node *n = &b->e->g->nodes[id];
    int ax = n->a.scan.axis;
    kn_lib_desc d = {.op = KN_LIB_CUMSUM, .dtype = n->dtype};
    d.cumsum = (kn_cumsum_desc){
        .outer = 1, .n = n->shape.dims[ax], .inner = 1, .reverse = n->a.scan.reverse};
    for (int i = 0; i < ax; i++) d.cumsum.outer *= n->shape.dims[i];
    for (int i = ax + 1; i < n->shape.rank; i++) d.cumsum.inner *= n->shape.dims[i];
    add_lib(b, st, &d, (exec_loc[]){b->of[ir_in(n)[0]], b->of[id]});
}

/* cholesky, triangular_solve: the matrices of the batch; the plan may have put the result
 * over a (cholesky) or b (the backend then factors or solves in place). */
static void linalg_step(build *b, exec_step st, uint32_t id) {
    const ir_node *n = &b->e->g->nodes[id];
    const uint32_t *in = ir_in(n);
    const ir_shape *s = &n->shape;
    kn_lib_desc d = {.op = n->op == IR_CHOLESKY ? KN_LIB_CHOLESKY : KN_LIB_TRIANGULAR_SOLVE,
                     .dtype = n->dtype};
    kn_linalg_desc *l = &d.linalg;
    *l = (kn_linalg_desc){.batch = 1, .rows = s->dims[s->rank - 2], .cols = s->dims[s->rank - 1]};
    for (int i = 0; i < s->rank - 2; i++) l->batch *= s->dims[i];
    const ir_shape *as = &b->e->g->nodes[in[0]].shape;
    l->m = as->dims[as->rank - 1];
    if (n->op == IR_CHOLESKY) {
        l->symmetrize = n->a.symmetrize;
        add_lib(b, st, &d, (exec_loc[]){b->of[in[0]], b->of[id]});
        return;
    }
    l->left_side = n->a.tri.left_side, l->lower = n->a.tri.lower;
    l->transpose_a = n->a.tri.transpose_a, l->unit_diagonal = n->a.tri.unit_diagonal;
    add_lib(b, st, &d, (exec_loc[]){b->of[in[0]], b->of[in[1]], b->of[id]});
}

/* argsort: x as [outer, n, inner] around the sorted axis, with the scratch the plan set
 * aside (sort_desc gives the compile's own request the same numbers). */
static void sort_step(build *b, exec_step st, uint32_t id) {
    const kiln_executable *e = b->e;
    kn_lib_desc d;
    exec_sort_desc(e->g, id, &d);
    exec_loc scratch = scratch_loc(b, st.kernel, &d.scratch_bytes);
    add_lib(b, st, &d, (exec_loc[]){view_loc(b, ir_in(&e->g->nodes[id])[0]), b->of[id], scratch});
}

/* convolution: the backend's kernel over its two operands where they lie (bufs in the
 * order kn_conv_desc gives per kind: the node's operands are already in it), with the
 * scratch the plan set aside. */
static void conv_step(build *b, exec_step st, uint32_t id) {
    const kiln_executable *e = b->e;
    const uint32_t *in = ir_in(&e->g->nodes[id]);
    kn_lib_desc d;
    exec_conv_desc(e->g, id, &d);
    exec_loc scratch = scratch_loc(b, st.kernel, &d.scratch_bytes);
    add_lib(b, st, &d, (exec_loc[]){view_loc(b, in[0]), view_loc(b, in[1]), b->of[id], scratch});
}

/* dot_product_attention: the backend's fused kernel over its operands where they lie,
 * with the scratch the plan set aside: q, k, v, out, lse (the kernel's second root, an LSE
 * node fusion gave the forward pass; else none), scratch; a gradient kind's buffers are q,
 * k, v, ct, lse, delta, out, scratch (LSE's v, ct, lse and delta none). */
static void attention_step(build *b, exec_step st, const fkernel *k) {
    uint32_t id = k->roots[0];
    const ir_node *n = &b->e->g->nodes[id];
    const uint32_t *in = ir_in(n);
    kn_lib_desc d = {.op = exec_attention_op(b->e->g, id)};
    exec_attention_desc(b->e->g, id, &d.attention);
    d.dtype = d.attention.dtype;
    exec_loc scratch = scratch_loc(b, st.kernel, &d.scratch_bytes);
    if (d.op == KN_LIB_ATTENTION) {
        exec_loc lse = k->n_roots > 1 ? b->of[k->roots[1]] : (exec_loc){EXEC_AT_NONE, 0, 0};
        add_lib(b, st, &d,
                (exec_loc[]){view_loc(b, in[0]), view_loc(b, in[1]), view_loc(b, in[2]), b->of[id],
                             lse, scratch});
        return;
    }
    exec_loc loc[8] = {view_loc(b, in[0]), view_loc(b, in[1])};
    for (uint32_t i = 2; i < n->n_in; i++) loc[i] = view_loc(b, in[i]);
    loc[6] = b->of[id], loc[7] = scratch;
    add_lib(b, st, &d, loc);
}

static void collective_step(build *b, exec_step st, uint32_t id) {
    const kiln_executable *e = b->e;
    const ir_node *n = &e->g->nodes[id];
    st.kind = EXEC_STEP_COLLECTIVE;
    st.coll.wait = e->mem.wait_step[st.kernel];
    st.coll.node = id;
    st.coll.dtype = n->dtype;
    st.coll.kind = (kiln_reduce_kind)n->a.reduce_kind;
    st.coll.count = 0;
    st.coll.op = KN_COLL_ALL_REDUCE;
    const ir_node *whole = n; /* the larger buffer: the operand of a reduce-scatter */
    if (n->op == IR_REDUCE_SCATTER) {
        st.coll.op = KN_COLL_REDUCE_SCATTER;
        st.coll.kind = (kiln_reduce_kind)n->a.shard.kind;
        whole = &e->g->nodes[ir_in(n)[0]];
    } else if (n->op == IR_ALL_GATHER) {
        st.coll.op = KN_COLL_ALL_GATHER;
        st.coll.kind = KILN_REDUCE_SUM;
    }
    ir_shape_numel(&whole->shape, &st.coll.count);
    add_step(b, st, (exec_loc[]){view_loc(b, ir_in(n)[0]), b->of[id]}, 2);
}

/* A memory_put: its operand's bytes copied into its own buffer, in the other memory kind. */
static void transfer_step(build *b, exec_step st, uint32_t id) {
    const ir_node *n = &b->e->g->nodes[id];
    size_t bytes = 0;
    ir_shape_nbytes(&n->shape, n->dtype, &bytes);
    st.kind = EXEC_STEP_COPY;
    st.copy.bytes = bytes;
    st.copy.to_host = n->a.memory_kind == KILN_MEMORY_PINNED_HOST;
    st.copy.wait = b->e->mem.wait_step[st.kernel];
    add_step(b, st, (exec_loc[]){view_loc(b, ir_in(n)[0]), b->of[id]}, 2);
}

/* A while, scan or cond: one step over the node's inputs (as its layout orders them), its
 * results (its kernel's roots) and its scratch; the sub-graphs' executables were compiled
 * before planning (control.c), since the scratch holds their arenas. */
static void control_step(build *b, exec_step st, const fkernel *k) {
    kiln_executable *e = b->e;
    const ir_node *n = &e->g->nodes[k->roots[0]];
    st.kind = EXEC_STEP_CONTROL;
    exec_control_of(e, n->region, &st.ctl);
    st.at = b->n_locs, st.n = n->n_in + k->n_roots + 1;
    for (uint32_t i = 0; i < n->n_in; i++) e->locs[b->n_locs++] = view_loc(b, ir_in(n)[i]);
    for (uint32_t r = 0; r < k->n_roots; r++) e->locs[b->n_locs++] = b->of[k->roots[r]];
    uint64_t bytes;
    e->locs[b->n_locs++] = scratch_loc(b, st.kernel, &bytes);
    e->steps[b->n_steps++] = st;
}

static void kernel_steps(build *b, uint32_t sched) {
    const kiln_executable *e = b->e;
    uint32_t ki = e->mem.order[sched];
    const fkernel *k = &e->plan.kernels[ki];
    exec_step st = {.kernel = ki, .sched = sched};
    switch (k->kind) {
    case FK_LOOP: loop_steps(b, st, k); break;
    case FK_DOT: dot_steps(b, st, k->roots[0]); break;
    case FK_SCATTER: scatter_step(b, st, k->roots[0]); break;
    case FK_SCAN: scan_step(b, st, k->roots[0]); break;
    case FK_ATTENTION: attention_step(b, st, k); break;
    case FK_COLLECTIVE: collective_step(b, st, k->roots[0]); break;
    case FK_SORT: sort_step(b, st, k->roots[0]); break;
    case FK_CONTROL: control_step(b, st, k); break;
    case FK_TRANSFER: transfer_step(b, st, k->roots[0]); break;
    case FK_CONV: conv_step(b, st, k->roots[0]); break;
    case FK_LINALG: linalg_step(b, st, k->roots[0]); break;
    }
}

/* ------------------------------------------------------------ constants ---- */

/* Numbers the constants the plan reads in place (each node once) and gives each its
 * bytes: a device copy where the device has memory of its own, else a place in one host
 * block (64-byte aligned, as the graph's own copy was at least 16). */
static kiln_status take_constants(build *b) {
    kiln_executable *e = b->e;
    kiln_context *ctx = e->ctx;
    size_t block = 0;
    for (uint32_t i = 0; i < e->mem.n_buffers; i++) {
        const plan_buffer *pb = &e->mem.buffers[i];
        if (pb->place != PLAN_P_CONST || !pb->size || b->const_of[pb->node]) continue;
        b->const_of[pb->node] = ++e->n_consts;
        const ir_node *n = &e->g->nodes[pb->node];
        size_t bytes = 0;
        ir_shape_nbytes(&n->shape, n->dtype, &bytes);
        block += (bytes + 63) & ~(size_t)63;
    }
    if (!e->n_consts) return KILN_STATUS_OK;
    if (!(e->consts = host_calloc(ctx, e->n_consts, sizeof *e->consts)))
        return ctx_oom(ctx, "kiln_compile: constants", e->n_consts * sizeof *e->consts);
    bool host = !e->dev->backend->copy_h2d;
    if (host && block && !(e->const_block = host_alloc(ctx, block + 64)))
        return ctx_oom(ctx, "kiln_compile: constants", block);
    if (host) e->const_block_size = block + 64;
    char *at = e->const_block ? (char *)(((uintptr_t)e->const_block + 63) & ~(uintptr_t)63) : NULL;
    kiln_status s = KILN_STATUS_OK;
    for (uint32_t id = 1; id < e->g->n_nodes && !s; id++) {
        if (!b->const_of[id]) continue;
        const ir_node *n = &e->g->nodes[id];
        size_t bytes = 0;
        ir_shape_nbytes(&n->shape, n->dtype, &bytes);
        void **slot = &e->consts[b->const_of[id] - 1];
        if (!bytes) continue;
        if (host) {
            memcpy(at, n->data, bytes);
            *slot = at, at += (bytes + 63) & ~(size_t)63;
            continue;
        }
        s = device_alloc(e->dev, bytes, "constant", slot);
        if (!s) s = device_copy_h2d(e->dev, *slot, n->data, bytes);
    }
    return s;
}

/* ------------------------------------------------------------ the call ---- */

/* The parameters' and outputs' types and the parameters' names. */
static kiln_status take_signature(kiln_executable *e) {
    const kiln_graph *g = e->g;
    kiln_context *ctx = e->ctx;
    e->n_outputs = g->n_outputs;
    e->names_size = 1;
    for (uint32_t i = 0; i < g->n_params; i++) {
        const char *nm = g->nodes[g->params[i]].name;
        e->names_size += nm ? strlen(nm) + 1 : 0;
    }
    e->name = host_strdup(ctx, g->name);
    e->params = host_calloc(ctx, g->n_params + 1, sizeof *e->params);
    e->outputs = host_calloc(ctx, g->n_outputs + 1, sizeof *e->outputs);
    e->names = host_alloc(ctx, e->names_size);
    e->output_donor = host_calloc(ctx, g->n_outputs + 1, sizeof *e->output_donor);
    e->output_copy = host_calloc(ctx, g->n_outputs + 1, sizeof *e->output_copy);
    if (!e->name || !e->params || !e->outputs || !e->names || !e->output_donor || !e->output_copy)
        return ctx_oom(ctx, "kiln_compile: the call's signature", e->names_size);
    char *at = e->names;
    for (uint32_t i = 0; i < g->n_params; i++) {
        const ir_node *p = &g->nodes[g->params[i]];
        e->params[i] = (exec_value){p->dtype, p->shape, NULL, p->a.param_memory_kind};
        if (!p->name) continue;
        size_t len = strlen(p->name) + 1;
        memcpy(at, p->name, len);
        e->params[i].name = at, at += len;
    }
    for (uint32_t j = 0; j < g->n_outputs; j++) {
        const ir_node *n = &g->nodes[g->outputs[j]];
        e->outputs[j] = (exec_value){n->dtype, n->shape, NULL,
                                     ir_in_host(g, g->outputs[j]) ? KILN_MEMORY_PINNED_HOST
                                                                  : KILN_MEMORY_DEVICE};
    }
    return KILN_STATUS_OK;
}

/* Outputs that are not computed into their own array (arguments and constants returned
 * as they are, a value listed twice) are copied after the steps; the others name
 * themselves, which run.c's copy skips. */
static void take_outputs(build *b) {
    kiln_executable *e = b->e;
    for (uint32_t j = 0; j < e->n_outputs; j++) {
        e->output_donor[j] = e->mem.output_donor[j];
        bool copy = e->mem.output_home[j] < 0 && e->mem.output_donor[j] < 0;
        e->output_copy[j] = copy ? b->of[e->g->outputs[j]] : (exec_loc){EXEC_AT_OUTPUT, j, 0};
    }
    e->arena = e->mem.arena;
    e->host_arena = e->mem.host_arena;
}

/* The steps, library descriptors and buffers kernel ki makes (as kernel_steps will). */
static void count_steps(const kiln_executable *e, uint32_t ki, uint32_t *steps, uint32_t *libs,
                        uint32_t *locs) {
    const fkernel *k = &e->plan.kernels[ki];
    const lower_dot *d = &e->dots[ki];
    uint32_t n = 0, lib = 0, bufs = 0;
    switch (k->kind) {
    case FK_LOOP: n = e->info[ki].items ? 1 : 0, bufs = n * (k->n_inputs + k->n_roots); break;
    case FK_DOT:
        if (!d->gemm.batch || !d->gemm.m || !d->gemm.n) break;
        n = lib = 1 + (d->gemm.k ? d->pack_a + d->pack_b : 0);
        bufs = (uint32_t)(kn_lib_op_buffers(KN_LIB_GEMM) +
                          (int)(n - 1) * kn_lib_op_buffers(KN_LIB_PERMUTE));
        break;
    case FK_SCATTER:
        n = lib = 1, bufs = (uint32_t)kn_lib_op_buffers(KN_LIB_SCATTER_ADD_ROWS);
        break;
    case FK_SCAN: n = lib = 1, bufs = (uint32_t)kn_lib_op_buffers(KN_LIB_CUMSUM); break;
    case FK_ATTENTION:
        n = lib = 1, bufs = (uint32_t)kn_lib_op_buffers(exec_attention_op(e->g, k->roots[0]));
        break;
    case FK_COLLECTIVE: n = 1, bufs = 2; break;
    case FK_SORT: n = lib = 1, bufs = (uint32_t)kn_lib_op_buffers(KN_LIB_ARGSORT); break;
    case FK_CONTROL: n = 1, bufs = e->g->nodes[k->roots[0]].n_in + k->n_roots + 1; break;
    case FK_TRANSFER: n = 1, bufs = 2; break;
    case FK_CONV: n = lib = 1, bufs = (uint32_t)kn_lib_op_buffers(KN_LIB_CONV); break;
    case FK_LINALG:
        n = lib = 1;
        bufs = (uint32_t)kn_lib_op_buffers(
            e->g->nodes[k->roots[0]].op == IR_CHOLESKY ? KN_LIB_CHOLESKY : KN_LIB_TRIANGULAR_SOLVE);
        break;
    }
    *steps += n, *libs += lib, *locs += bufs;
}

static kiln_status alloc_steps(kiln_executable *e) {
    uint32_t steps = 0, libs = 0, locs = 0;
    for (uint32_t ki = 0; ki < e->plan.n_kernels; ki++) {
        count_steps(e, ki, &steps, &libs, &locs);
        e->n_coll += e->plan.kernels[ki].kind == FK_COLLECTIVE;
        e->n_xfer += e->plan.kernels[ki].kind == FK_TRANSFER;
    }
    e->n_steps = steps, e->n_libs = libs, e->n_locs = locs;
    e->steps = host_calloc(e->ctx, steps + 1, sizeof *e->steps);
    e->libs = host_calloc(e->ctx, libs + 1, sizeof *e->libs);
    e->locs = host_calloc(e->ctx, locs + 1, sizeof *e->locs);
    if (!e->steps || !e->libs || !e->locs)
        return ctx_oom(e->ctx, "kiln_compile: steps", steps * sizeof *e->steps);
    return KILN_STATUS_OK;
}

/* Per node, where its buffer lies during a call. */
static void place_nodes(build *b) {
    const kiln_executable *e = b->e;
    for (uint32_t i = 0; i < e->mem.n_buffers; i++) {
        const plan_buffer *pb = &e->mem.buffers[i];
        if (pb->kind != PLAN_K_SCRATCH) b->of[pb->node] = loc_of_buffer(b, pb);
    }
}

kiln_status exec_steps_build(kiln_executable *e) {
    kiln_context *ctx = e->ctx;
    uint32_t nn = e->g->n_nodes;
    build b = {.e = e,
               .of = host_calloc(ctx, nn, sizeof *b.of),
               .const_of = host_calloc(ctx, nn, sizeof *b.const_of)};
    kiln_status s = !b.of || !b.const_of ? ctx_oom(ctx, "kiln_compile: steps", nn * sizeof *b.of)
                                         : KILN_STATUS_OK;
    if (!s) s = take_signature(e);
    if (!s) s = take_constants(&b);
    if (!s) s = alloc_steps(e);
    if (!s) {
        place_nodes(&b);
        take_outputs(&b);
        for (uint32_t sched = 0; sched < e->mem.n_kernels; sched++) kernel_steps(&b, sched);
        if (b.n_steps != e->n_steps || b.n_libs != e->n_libs || b.n_locs != e->n_locs)
            s = ctx_error(ctx, KILN_STATUS_INTERNAL,
                          "kiln_compile: '%s' made %u steps, %u library calls and %u step "
                          "buffers; %u, %u and %u were counted",
                          e->name, b.n_steps, b.n_libs, b.n_locs, e->n_steps, e->n_libs, e->n_locs);
    }
    host_free(ctx, b.of, nn * sizeof *b.of);
    host_free(ctx, b.const_of, nn * sizeof *b.const_of);
    return s;
}
