/* run.c — running an executable by its memory plan (src/plan/plan.h).
 *
 * A call makes its output arrays, takes the whole temporary arena with one request to
 * the device allocator, points every value at its planned place (an argument, a constant,
 * an output array, the arena, or a donated argument's buffer), runs the kernels in the
 * planned order and frees the arena. So the device holds exactly arguments + outputs +
 * arena at the peak of a call, which is the plan's peak. Kernels run through the device's
 * backend table (launch for loop kernels, gemm/permute/scatter_add_rows for the rest).
 *
 * Collectives: an all-reduce whose plan waits for it later than its own step (mem_plan
 * .wait_step) is started at its step and completed before the kernel at its wait step, so
 * the kernels in between (the rest of the backward pass) run while it is in flight; the
 * plan keeps its operand and result live until then. Between kernels the oldest one in
 * flight may progress (MPI moves only inside MPI calls). Every started collective is
 * waited for before the call returns, also after a failure, since the transport may be
 * writing into the arena and the other replicas need this one's part.
 *
 * Failure: everything that can fail on the CPU (host bookkeeping, output arrays, the
 * arena, the backend's launch_prepare, which starts the thread pool) happens before the
 * first kernel runs, so a failed call has written nothing, and in particular has not
 * touched a donated argument, which stays usable. A backend that reports an error from a
 * kernel itself (none does yet) fails the call with its outputs freed; donated arguments
 * are then not consumed but their contents are unspecified.
 * Donated arguments are consumed only when the call succeeds: an output that the plan put
 * in a donated buffer takes that buffer over, the other donated buffers are freed.
 *
 * Asynchronous mode (docs/devices.md): the call checks its arguments, makes the output
 * arrays (handles and storage) and one host block for the task and its bookkeeping, marks
 * the donated arguments consumed (as JAX deletes them at dispatch) and enqueues the task
 * on the device's compute queue; all of its host allocations happen here, on the caller's
 * thread. The queue's thread waits for the arguments' events (and, for a donated argument,
 * for the last copy reading it), takes the arena, runs the kernels exactly as the
 * synchronous path does, frees the arena, and moves donated buffers into the outputs. A
 * failure there poisons the outputs (their event carries the message) and frees the
 * donated buffers, whose arrays are consumed already. */
#include "executable.h"
#include "comm/comm.h"

#include <string.h>

/* A collective of this call: its request, while in flight, and where the run waits. */
typedef struct run_coll {
    kn_comm_req req;
    int32_t wait_step;
} run_coll;

typedef struct run_state {
    kiln_executable *e;
    kiln_array *const *args;
    kiln_array **res;  /* this call's output arrays */
    void **buf;        /* per node: its bytes during the call */
    void **kbufs;      /* every loop kernel's buffer list, back to back */
    uint32_t *kbuf_at; /* kernel -> its list in kbufs */
    size_t n_kbufs;
    run_coll *coll; /* one per collective kernel, in the order they start */
    uint32_t n_coll, n_started;
    void *arena;
} run_state;

/* ------------------------------------------------------------- kernels ---- */

/* A dot operand may be a reshape with no buffer of its own (fusion's reshape_view): the
 * same bytes as the buffer it reshapes. */
static uint32_t view_base(const kiln_executable *e, uint32_t id) {
    while (!e->plan.materialised[id] && e->g->nodes[id].op == IR_RESHAPE)
        id = ir_in(&e->g->nodes[id])[0];
    return id;
}

static kiln_status run_loop(run_state *r, uint32_t ki) {
    const kiln_executable *e = r->e;
    if (!e->info[ki].items) return KILN_STATUS_OK;
    const fkernel *k = &e->plan.kernels[ki];
    return e->dev->backend->launch(e->dev->state, e->dev->index, e->kernels[ki],
                                   r->kbufs + r->kbuf_at[ki], (int)(k->n_inputs + k->n_roots),
                                   e->info[ki].items, e->info[ki].grain);
}

/* Kernel ki's planned scratch (in the arena, or in a donated argument's free bytes) and
 * its size in *bytes (may be NULL), or NULL and 0 when it has none. */
static void *kernel_scratch(const run_state *r, uint32_t ki, uint64_t *bytes) {
    const kiln_executable *e = r->e;
    int32_t sb = e->mem.scratch_of[ki];
    if (bytes) *bytes = sb < 0 ? 0 : e->mem.buffers[sb].size;
    if (sb < 0) return NULL;
    const plan_buffer *b = &e->mem.buffers[sb];
    if (b->place == PLAN_P_DONATED) return (char *)r->args[b->place_index]->data + b->offset;
    return (char *)r->arena + b->offset;
}

/* A dot kernel: operands the gemm cannot read as they are were planned a scratch buffer
 * (lower_dot.h) and are permuted into it first. An empty product touches no buffer (an
 * empty one is NULL, and its scratch too: no offset may be taken from either): with an
 * empty output there is nothing to do, and with K = 0 the gemm writes zeros into the
 * output without reading its operands, so they are not packed. */
static kiln_status run_dot(run_state *r, uint32_t ki) {
    const kiln_executable *e = r->e;
    const kn_backend *b = e->dev->backend;
    uint32_t id = e->plan.kernels[ki].roots[0];
    const ir_node *n = &e->g->nodes[id];
    const lower_dot *d = &e->dots[ki];
    if (!d->gemm.batch || !d->gemm.m || !d->gemm.n) return KILN_STATUS_OK;
    const void *ops[2] = {r->buf[view_base(e, ir_in(n)[0])], r->buf[view_base(e, ir_in(n)[1])]};
    char *scratch = kernel_scratch(r, ki, NULL);
    kiln_status s = KILN_STATUS_OK;
    for (int i = 0; i < 2 && !s && d->gemm.k; i++) {
        if (!(i ? d->pack_b : d->pack_a)) continue;
        const ir_node *x = &e->g->nodes[ir_in(n)[i]];
        void *dst = scratch + (i ? d->rhs_offset : 0);
        s = b->permute(e->dev->state, e->dev->index, x->dtype, ops[i], x->shape.rank, x->shape.dims,
                       i ? d->perm_b : d->perm_a, dst);
        ops[i] = dst;
    }
    if (!s)
        s = b->gemm(e->dev->state, e->dev->index, n->dtype, &d->gemm, ops[0], ops[1], r->buf[id]);
    return s;
}

/* Scatter: when the plan put the result over the operand, the backend skips the copy and
 * adds the rows in place; an operand fusion left without a buffer is zeros (fusion.c,
 * scatter_into_zeros), which the backend fills in itself. */
static kiln_status run_scatter(run_state *r, uint32_t ki) {
    const kiln_executable *e = r->e;
    const kiln_graph *g = e->g;
    uint32_t id = r->e->plan.kernels[ki].roots[0];
    const ir_node *n = &g->nodes[id];
    const uint32_t *in = ir_in(n);
    const ir_node *op = &g->nodes[in[0]], *idx = &g->nodes[in[1]];
    int64_t rows = op->shape.dims[0], total = 0, n_idx = 0;
    ir_shape_numel(&op->shape, &total);
    ir_shape_numel(&idx->shape, &n_idx);
    const void *operand = e->plan.materialised[in[0]] ? r->buf[in[0]] : NULL;
    return e->dev->backend->scatter_add_rows(e->dev->state, e->dev->index, n->dtype, idx->dtype,
                                             operand, rows, rows ? total / rows : 0, r->buf[in[1]],
                                             n_idx, r->buf[in[2]], r->buf[id]);
}

/* Cumsum: x as [outer, n, inner] around the summed axis; the plan may have put the result
 * over x (the backend scans in place then). */
static kiln_status run_scan(run_state *r, uint32_t ki) {
    const kiln_executable *e = r->e;
    uint32_t id = e->plan.kernels[ki].roots[0];
    const ir_node *n = &e->g->nodes[id];
    int ax = n->a.scan.axis;
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < ax; i++) outer *= n->shape.dims[i];
    for (int i = ax + 1; i < n->shape.rank; i++) inner *= n->shape.dims[i];
    return e->dev->backend->cumsum(e->dev->state, e->dev->index, n->dtype, r->buf[ir_in(n)[0]],
                                   r->buf[id], outer, n->shape.dims[ax], inner, n->a.scan.reverse);
}

/* dot_product_attention: the backend's fused kernel over q, k, v where they lie (a
 * reshape view reads its buffer), with the scratch the plan set aside. */
static kiln_status run_attention(run_state *r, uint32_t ki) {
    const kiln_executable *e = r->e;
    uint32_t id = e->plan.kernels[ki].roots[0];
    const uint32_t *in = ir_in(&e->g->nodes[id]);
    kn_attention_desc d;
    exec_attention_desc(e->g, id, &d);
    uint64_t bytes;
    void *scratch = kernel_scratch(r, ki, &bytes);
    return e->dev->backend->attention(e->dev->state, e->dev->index, &d, r->buf[view_base(e, in[0])],
                                      r->buf[view_base(e, in[1])], r->buf[view_base(e, in[2])],
                                      r->buf[id], scratch, bytes);
}

/* A collective: the communicator reduces the operand's buffer into the result's (out of
 * place). Every replica runs the same plan, so every replica starts its collectives in
 * the same order. One that overlaps (the plan's wait step is later than its own) is only
 * started here: the kernels up to its wait step run while it is in flight, and the plan
 * keeps both buffers live until then (plan.h). On a device whose memory the host cannot
 * address (a GPU) the communicator's device transport enqueues it on the device's stream
 * between the kernels instead (*on_device), and run_kernels waits for it (comm_wait_on)
 * before the device is synchronised. */
static kiln_status run_collective(run_state *r, uint32_t ki, uint32_t step, bool *on_device) {
    const kiln_executable *e = r->e;
    uint32_t id = e->plan.kernels[ki].roots[0];
    const ir_node *n = &e->g->nodes[id];
    int64_t count = 0;
    ir_shape_numel(&n->shape, &count);
    char node[96];
    snprintf(node, sizeof node, "%%%u of '%.40s'", id, e->g->name);
    const void *send = r->buf[view_base(e, ir_in(n)[0])];
    kiln_reduce_kind k = (kiln_reduce_kind)n->a.reduce_kind;
    if (e->dev->backend->copy_h2d) {
        *on_device = true;
        return comm_all_reduce_on(e->ctx, e->comm, e->dev, n->dtype, k, send, r->buf[id],
                                  (size_t)count, node);
    }
    run_coll *c = &r->coll[r->n_started++];
    c->wait_step = e->mem.wait_step[ki];
    kiln_status s =
        comm_all_reduce_start(e->comm, n->dtype, k, send, r->buf[id], (size_t)count, node, &c->req);
    return s || c->wait_step > (int32_t)step ? s : comm_wait(&c->req);
}

/* Between kernels: the oldest collective in flight may progress (one MPI_Test moves all
 * of MPICH's). */
static void progress_collectives(run_state *r) {
    for (uint32_t i = 0; i < r->n_started; i++)
        if (r->coll[i].req.c) {
            comm_progress(&r->coll[i].req);
            return;
        }
}

/* Completes the collectives in flight that the kernel at `step` may need (every one, with
 * INT32_MAX), oldest first; after a failure still every one (the other replicas need this
 * one's part, and the transport may be writing into the arena until then). The first
 * error is kept. */
static kiln_status finish_collectives(run_state *r, int32_t step, kiln_status s) {
    for (uint32_t i = 0; i < r->n_started; i++) {
        run_coll *c = &r->coll[i];
        if (!c->req.c || c->wait_step > step) continue;
        kiln_status w = comm_wait(&c->req);
        if (!s) s = w;
    }
    return s;
}

/* ------------------------------------------------------------ buffers ---- */

/* The bytes of buffer b during this call. */
static void *place_of(const run_state *r, const plan_buffer *b) {
    const kiln_executable *e = r->e;
    switch (b->place) {
    case PLAN_P_ARG: return r->args[b->place_index]->data;
    case PLAN_P_CONST: return e->consts ? e->consts[b->node] : e->g->nodes[b->node].data;
    case PLAN_P_OUTPUT: return r->res[b->place_index]->data;
    case PLAN_P_DONATED: return (char *)r->args[b->place_index]->data + b->offset;
    default: return (char *)r->arena + b->offset;
    }
}

/* Gives every value its planned bytes and fills the loop kernels' buffer lists. */
static void bind_buffers(run_state *r) {
    const kiln_executable *e = r->e;
    for (uint32_t i = 0; i < e->mem.n_buffers; i++) {
        const plan_buffer *b = &e->mem.buffers[i];
        if (b->kind != PLAN_K_SCRATCH) r->buf[b->node] = b->size ? place_of(r, b) : NULL;
    }
    for (uint32_t ki = 0; ki < e->plan.n_kernels; ki++) {
        const fkernel *k = &e->plan.kernels[ki];
        if (k->kind != FK_LOOP) continue;
        void **bufs = r->kbufs + r->kbuf_at[ki];
        for (uint32_t i = 0; i < k->n_inputs; i++) bufs[i] = r->buf[k->inputs[i]];
        for (uint32_t i = 0; i < k->n_roots; i++) bufs[k->n_inputs + i] = r->buf[k->roots[i]];
    }
}

/* Output arrays: new device memory, or (for an output the plan put in a donated buffer)
 * an empty handle that takes the buffer over when the call succeeds. */
static kiln_status make_outputs(run_state *r) {
    kiln_executable *e = r->e;
    const char *op = "kiln_executable_run";
    for (uint32_t j = 0; j < e->g->n_outputs; j++) {
        const ir_node *n = &e->g->nodes[e->g->outputs[j]];
        kiln_status s =
            e->mem.output_donor[j] >= 0
                ? array_new_empty(e->ctx, op, e->dev->id, n->dtype, &n->shape, &r->res[j])
                : array_new_on(e->ctx, op, e->dev->id, n->dtype, &n->shape, &r->res[j]);
        if (s) return s;
    }
    return KILN_STATUS_OK;
}

static uint32_t count_collectives(const kiln_executable *e) {
    uint32_t n = 0;
    for (uint32_t ki = 0; ki < e->plan.n_kernels; ki++)
        n += e->plan.kernels[ki].kind == FK_COLLECTIVE;
    return n;
}

static size_t count_kbufs(const kiln_executable *e) {
    size_t n = 0;
    for (uint32_t ki = 0; ki < e->plan.n_kernels; ki++)
        if (e->plan.kernels[ki].kind == FK_LOOP)
            n += e->plan.kernels[ki].n_inputs + e->plan.kernels[ki].n_roots;
    return n;
}

static void fill_kbuf_at(const kiln_executable *e, uint32_t *kbuf_at) {
    for (uint32_t ki = 0, at = 0; ki < e->plan.n_kernels; ki++) {
        kbuf_at[ki] = at;
        if (e->plan.kernels[ki].kind == FK_LOOP)
            at += e->plan.kernels[ki].n_inputs + e->plan.kernels[ki].n_roots;
    }
}

/* Host bookkeeping of one call, sized up front: values' pointers, kernel buffer lists. */
static kiln_status alloc_state(run_state *r) {
    kiln_executable *e = r->e;
    const kiln_graph *g = e->g;
    uint32_t nk = e->plan.n_kernels;
    r->n_kbufs = count_kbufs(e);
    r->buf = host_calloc(e->ctx, g->n_nodes, sizeof *r->buf);
    r->kbufs = host_calloc(e->ctx, r->n_kbufs + 1, sizeof *r->kbufs);
    r->kbuf_at = host_calloc(e->ctx, nk + 1, sizeof *r->kbuf_at);
    r->n_coll = count_collectives(e);
    r->coll = r->n_coll ? host_calloc(e->ctx, r->n_coll, sizeof *r->coll) : NULL;
    if (!r->buf || !r->kbufs || !r->kbuf_at || (r->n_coll && !r->coll))
        return ctx_oom(e->ctx, "kiln_executable_run", g->n_nodes * sizeof *r->buf);
    fill_kbuf_at(e, r->kbuf_at);
    return KILN_STATUS_OK;
}

static void free_state(run_state *r) {
    kiln_executable *e = r->e;
    host_free(e->ctx, r->buf, e->g->n_nodes * sizeof *r->buf);
    host_free(e->ctx, r->kbufs, (r->n_kbufs + 1) * sizeof *r->kbufs);
    host_free(e->ctx, r->kbuf_at, (e->plan.n_kernels + 1) * sizeof *r->kbuf_at);
    if (r->coll) host_free(e->ctx, r->coll, r->n_coll * sizeof *r->coll);
}

/* ---------------------------------------------------------------- call ---- */

/* Copies outputs that are not computed into their own array: arguments and constants
 * returned as they are, and a value listed as an output more than once. */
static kiln_status finish_outputs(run_state *r) {
    const kiln_executable *e = r->e;
    kiln_status s = KILN_STATUS_OK;
    for (uint32_t j = 0; j < e->g->n_outputs && !s; j++) {
        if (e->mem.output_home[j] >= 0 || e->mem.output_donor[j] >= 0) continue;
        const void *src = r->buf[e->g->outputs[j]];
        if (r->res[j]->nbytes && src != r->res[j]->data)
            s = device_copy(e->ctx, e->dev, r->res[j]->data, e->dev, src, r->res[j]->nbytes);
    }
    return s;
}

/* Outputs take over the donated buffers the plan gave them (when the call succeeded), the
 * other donated buffers are freed. */
static void take_donated_buffers(run_state *r, bool ok) {
    kiln_executable *e = r->e;
    for (uint32_t j = 0; j < e->g->n_outputs && ok; j++) {
        int32_t p = e->mem.output_donor[j];
        if (p < 0) continue;
        r->res[j]->data = r->args[p]->data;
        r->args[p]->data = NULL;
    }
    for (uint32_t p = 0; p < e->g->n_params; p++)
        if (e->donated[p]) array_release(r->args[p]);
}

static void mark_consumed(const kiln_executable *e, kiln_array *const *args) {
    for (uint32_t p = 0; p < e->g->n_params; p++) {
        if (!e->donated[p]) continue;
        kiln_array *a = args[p];
        a->consumed = true;
        snprintf(a->consumed_by, sizeof a->consumed_by, "'%.20s' (argument %u)", e->g->name, p);
    }
}

/* The call succeeded: the donations are taken and every donated array is consumed. */
static void consume_donations(run_state *r) {
    take_donated_buffers(r, true);
    mark_consumed(r->e, r->args);
}

/* Every argument must live on the executable's device (JAX's committed-array rule): a run
 * never moves data behind the caller's back. */
static kiln_status check_devices(const kiln_executable *e, kiln_array *const *args) {
    for (uint32_t p = 0; p < e->g->n_params; p++) {
        if (args[p]->device == e->dev->id) continue;
        char all[1024];
        exec_devices_str(e->ctx, (int)e->g->n_params, args, all, sizeof all);
        return ctx_error(e->ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "kiln_executable_run: '%s' was compiled for %s, but argument %u is on %s "
                         "(%s); move arrays with kiln_array_copy_to_device",
                         e->g->name, e->dev->name, p, e->ctx->devices[args[p]->device].name, all);
    }
    return KILN_STATUS_OK;
}

/* A donated array may not also be passed as another argument: its bytes would change
 * under the other parameter's reads. */
static kiln_status check_donations(const kiln_executable *e, kiln_array *const *args) {
    for (uint32_t p = 0; p < e->g->n_params; p++) {
        if (!e->donated[p]) continue;
        for (uint32_t q = 0; q < e->g->n_params; q++)
            if (q != p && args[q] == args[p])
                return ctx_error(
                    e->ctx, KILN_STATUS_INVALID_ARGUMENT,
                    "kiln_executable_run: argument %u of '%s' is donated, and the same "
                    "array is passed as argument %u too",
                    p, e->g->name, q);
    }
    return KILN_STATUS_OK;
}

static kiln_status check_call(kiln_executable *e, int n_args, kiln_array *const *args, int n_outs,
                              kiln_array **outs) {
    const kiln_graph *g = e->g;
    const char *op = "kiln_executable_run";
    kiln_status s = exec_check_args(g, op, n_args, args);
    if (s || (s = check_devices(e, args))) return s;
    if (n_outs != (int)g->n_outputs || !outs)
        return ctx_error(e->ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "%s: '%s' has %u outputs, %d asked for%s", op, g->name, g->n_outputs,
                         n_outs, outs ? "" : " (outs is NULL)");
    return check_donations(e, args);
}

/* Everything that can fail, before any kernel runs. */
static kiln_status prepare(run_state *r) {
    kiln_executable *e = r->e;
    kiln_status s = alloc_state(r);
    if (!s) s = make_outputs(r);
    if (!s && e->mem.arena) {
        char tag[24];
        snprintf(tag, sizeof tag, "arena %s", e->g->name);
        s = device_alloc(e->dev, e->mem.arena, tag, &r->arena);
    }
    const kn_backend *b = e->dev->backend;
    if (!s && b->launch_prepare) s = b->launch_prepare(e->dev->state, e->dev->index);
    return s;
}

/* The kernels in the planned order, then a wait for the device (a no-op on the CPU). */
static kiln_status run_kernels(run_state *r) {
    const kiln_executable *e = r->e;
    kiln_status s = KILN_STATUS_OK;
    const kn_backend *b = e->dev->backend;
    /* Profiling waits for the device after each kernel, so each is timed on its own. */
    kiln_executable *pe =
        atomic_load_explicit(&e->profiling, memory_order_acquire) ? (kiln_executable *)e : NULL;
    bool first = pe && exec_profile_begin_run(pe); /* kept apart: it pays one-time work */
    uint64_t t_run = pe ? exec_profile_now_ns() : 0;
    bool collectives = false; /* enqueued on the device: waited for with the group's timeout */
    r->n_started = 0;
    for (uint32_t step = 0; step < e->mem.n_kernels && !s; step++) {
        uint32_t ki = e->mem.order[step];
        if (r->n_started && (s = finish_collectives(r, (int32_t)step, s))) break;
        uint64_t t0 = pe ? exec_profile_now_ns() : 0;
        switch (e->plan.kernels[ki].kind) {
        case FK_LOOP: s = run_loop(r, ki); break;
        case FK_DOT: s = run_dot(r, ki); break;
        case FK_SCATTER: s = run_scatter(r, ki); break;
        case FK_SCAN: s = run_scan(r, ki); break;
        case FK_ATTENTION: s = run_attention(r, ki); break;
        case FK_COLLECTIVE: s = run_collective(r, ki, step, &collectives); break;
        }
        if (pe && !s && collectives) s = comm_wait_on(e->comm, e->dev, e->g->name);
        if (pe && !s && b->synchronize) s = b->synchronize(e->dev->state, e->dev->index);
        if (pe) exec_profile_add_kernel(pe, ki, exec_profile_now_ns() - t0, first);
        if (r->n_started) progress_collectives(r);
    }
    s = finish_collectives(r, INT32_MAX, s);
    if (!s && collectives) s = comm_wait_on(e->comm, e->dev, e->g->name);
    if (!s && b->synchronize) s = b->synchronize(e->dev->state, e->dev->index);
    if (pe && !s) exec_profile_add_run(pe, exec_profile_now_ns() - t_run, first);
    return s;
}

/* ---------------------------------------------------- asynchronous call ---- */

/* One enqueued call: this struct, then in the same host block its arguments, outputs,
 * the events each donated argument waits for, the values' pointers and the loop kernels'
 * buffer lists (run_state points into the block). */
typedef struct run_task {
    kn_task t;
    run_state r;
    kn_event **after; /* per parameter: the last copy reading a donated argument, or NULL */
    size_t bytes;     /* of the block */
} run_task;

static kiln_status run_exec(kn_task *tk) {
    run_task *t = (run_task *)tk;
    run_state *r = &t->r;
    kiln_executable *e = r->e;
    kiln_status s = KILN_STATUS_OK;
    for (uint32_t p = 0; p < e->g->n_params && !s; p++)
        if (r->args[p]->ready)
            s = event_depend(e->ctx, r->args[p]->ready,
                             "the run of '%s' on %s did not happen: its argument %u comes from "
                             "work that failed",
                             e->g->name, e->dev->name, p);
    for (uint32_t p = 0; p < e->g->n_params; p++)
        if (t->after[p]) event_wait(t->after[p]); /* a read: its own failure is not ours */
    if (!s && e->mem.arena) {
        char tag[24];
        snprintf(tag, sizeof tag, "arena %s", e->g->name);
        s = device_alloc(e->dev, e->mem.arena, tag, &r->arena);
    }
    const kn_backend *b = e->dev->backend;
    if (!s && b->launch_prepare) s = b->launch_prepare(e->dev->state, e->dev->index);
    if (!s) {
        bind_buffers(r);
        s = run_kernels(r);
        if (!s) finish_outputs(r);
    }
    if (r->arena) device_free(e->dev, r->arena);
    take_donated_buffers(r, !s);
    return s;
}

static void run_release(kn_task *tk) {
    run_task *t = (run_task *)tk;
    kiln_executable *e = t->r.e;
    kiln_context *ctx = e->ctx;
    for (uint32_t p = 0; p < e->g->n_params; p++) {
        array_unref(t->r.args[p]);
        event_unref(t->after[p]);
    }
    for (uint32_t j = 0; j < e->g->n_outputs; j++)
        if (t->r.res[j]) array_unref(t->r.res[j]);
    event_unref(tk->ev);
    size_t bytes = t->bytes;
    exec_unref(e);
    host_free(ctx, t, bytes);
}

/* The task and its bookkeeping in one host block (a call's only host allocation besides its
 * event and output handles). */
static run_task *task_alloc(kiln_executable *e, kiln_array *const *args) {
    const kiln_graph *g = e->g;
    size_t nk = e->plan.n_kernels, n_kbufs = count_kbufs(e), n_coll = count_collectives(e);
    size_t ptrs = g->n_params + g->n_outputs + g->n_params + g->n_nodes + n_kbufs + 1;
    size_t bytes = sizeof(run_task) + ptrs * sizeof(void *) + n_coll * sizeof(run_coll) +
                   (nk + 1) * sizeof(uint32_t);
    run_task *t = host_calloc(e->ctx, 1, bytes);
    if (!t) return NULL;
    void **p = (void **)(t + 1);
    t->bytes = bytes;
    t->r = (run_state){.e = e, .n_kbufs = n_kbufs, .n_coll = (uint32_t)n_coll};
    kiln_array **a = (kiln_array **)p;
    memcpy(a, args, g->n_params * sizeof *a);
    t->r.args = a;
    t->r.res = (kiln_array **)(p += g->n_params);
    t->after = (kn_event **)(p += g->n_outputs);
    t->r.buf = (p += g->n_params);
    t->r.kbufs = (p += g->n_nodes);
    t->r.coll = (run_coll *)(p + n_kbufs + 1); /* pointer-aligned, as run_coll needs */
    t->r.kbuf_at = (uint32_t *)(t->r.coll + n_coll);
    fill_kbuf_at(e, t->r.kbuf_at);
    return t;
}

/* Undoes a task that was never enqueued: outputs and references go. */
static void task_abandon(run_task *t) {
    const kiln_executable *e = t->r.e;
    for (uint32_t j = 0; j < e->g->n_outputs; j++) {
        kiln_array *o = t->r.res[j];
        if (!o) continue;
        if (o->ready) event_unref(o->ready), o->ready = NULL;
        array_unref(o); /* the caller's reference; run_release drops the task's */
    }
    run_release(&t->t);
}

static kiln_status run_enqueue(kiln_executable *e, kiln_array *const *args, kiln_array **outs) {
    kiln_context *ctx = e->ctx;
    const kiln_graph *g = e->g;
    run_task *t = task_alloc(e, args);
    if (!t) return ctx_oom(ctx, "kiln_executable_run: enqueueing", sizeof *t);
    kiln_status s = event_new(ctx, e->dev->compute, &t->t.ev);
    if (s) {
        host_free(ctx, t, t->bytes);
        return s;
    }
    t->t.exec = run_exec;
    t->t.release = run_release;
    exec_ref(e);
    for (uint32_t p = 0; p < g->n_params; p++) {
        array_ref(args[p]);
        if (e->donated[p]) t->after[p] = queue_event_get(e->dev->copy, &args[p]->last_read);
    }
    s = make_outputs(&t->r); /* handles made so far are taken by task_abandon on failure */
    for (uint32_t j = 0; j < g->n_outputs && !s; j++) {
        t->r.res[j]->ready = t->t.ev;
        event_ref(t->t.ev);
        array_ref(t->r.res[j]);
    }
    for (uint32_t j = 0; j < g->n_outputs && !s; j++) outs[j] = t->r.res[j];
    if (!s) s = queue_submit(e->dev->compute, &t->t); /* from here the task may be gone */
    if (s) {
        for (uint32_t j = 0; j < g->n_outputs; j++) {
            outs[j] = NULL;
            if (t->r.res[j] && !t->r.res[j]->ready)
                kiln_array_destroy(t->r.res[j]), t->r.res[j] = 0;
        }
        task_abandon(t);
        return s;
    }
    mark_consumed(e, args);
    return KILN_STATUS_OK;
}

/* --------------------------------------------------------- the public call ---- */

kiln_status exec_null_object(const char *op, const char *what, int n_args,
                             kiln_array *const *args) {
    for (int i = 0; args && i < n_args; i++)
        if (args[i])
            return ctx_error(args[i]->ctx, KILN_STATUS_INVALID_ARGUMENT, "%s: %s is NULL", op,
                             what);
    return KILN_STATUS_INVALID_ARGUMENT;
}

kiln_status kiln_executable_run(kiln_executable *e, int n_args, kiln_array *const *args, int n_outs,
                                kiln_array **outs) {
    if (!e) return exec_null_object("kiln_executable_run", "the executable", n_args, args);
    kiln_context *ctx = e->ctx;
    const kiln_graph *g = e->g;
    kiln_status s = check_call(e, n_args, args, n_outs, outs);
    if (s) return s;
    if (e->dev->compute) return run_enqueue(e, args, outs);
    kiln_array *made[KILN_MAX_OUTPUTS] = {0};
    run_state r = {.e = e, .args = args, .res = made};
    if (g->n_outputs > KILN_MAX_OUTPUTS && !(r.res = host_calloc(ctx, g->n_outputs, sizeof *r.res)))
        return ctx_oom(ctx, "kiln_executable_run", g->n_outputs * sizeof *r.res);
    if (!(s = prepare(&r))) {
        bind_buffers(&r);
        s = run_kernels(&r);
        if (!s) s = finish_outputs(&r);
    }
    if (r.arena) device_free(e->dev, r.arena);
    if (!s) consume_donations(&r);
    free_state(&r);
    for (uint32_t j = 0; j < g->n_outputs; j++) {
        if (s)
            kiln_array_destroy(r.res[j]);
        else
            outs[j] = r.res[j];
    }
    if (r.res != made) host_free(ctx, r.res, g->n_outputs * sizeof *r.res);
    return s;
}
