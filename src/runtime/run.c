/* run.c — running an executable by its memory plan (src/plan/plan.h).
 *
 * A call makes its output arrays, takes the whole temporary arena with one request to
 * the device allocator, points every value at its planned place (an argument, a constant,
 * an output array, the arena, or a donated argument's buffer), runs the kernels in the
 * planned order and frees the arena. So the device holds exactly arguments + outputs +
 * arena at the peak of a call, which is the plan's peak. A program that offloads values to
 * host memory also takes its host arena, from the device's pinned_host pool, the same way;
 * its copies are steps in the kernels' order (device_copy_kinds). The call walks the executable's
 * step list (steps.c), which was computed when compiling: it reads no IR. Steps run
 * through the device's backend table (launch for loop kernels, lib_run for the library
 * ops).
 *
 * Copies between memory kinds (host offload) on a device with a copy queue run the same
 * way as overlapped collectives, below: started at their step on the queue, waited for (by
 * the device, not the host) before the kernel at their wait step (run_copy).
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
#include "tier.h"
#include "codegen/kexec.h"
#include "comm/comm.h"

#include <string.h>

/* A collective or an overlapped copy of this call: its request (a collective's, while in
 * flight) or its token (a copy's, while in flight; -1 otherwise), and where the run waits. */
typedef struct run_coll {
    kn_comm_req req;
    int32_t wait_step;
    int token;
} run_coll;

/* The in-flight slots a call needs: one per collective and one per copy step. */
static uint32_t inflight_slots(const kiln_executable *e) {
    return e->n_coll + e->n_xfer;
}

typedef struct run_state {
    kiln_executable *e;
    kiln_array *const *args;
    kiln_array **res; /* this call's output arrays */
    /* a raw run (a control step's sub-graph, exec_raw_run): the arguments' and outputs'
     * bytes given as they are, instead of args and res */
    void *const *raw_args, *const *raw_outs;
    bool raw;
    void **bufs;    /* the steps' buffers during this call (e->locs resolved) */
    run_coll *coll; /* one per collective, in the order they start */
    uint32_t n_started;
    void *arena;
    void *host_arena; /* host offload's, from the device's pinned_host pool; a raw run's
                       * is made once by exec_raw_begin for all its runs */
} run_state;

/* ------------------------------------------------------------- steps ---- */

/* A collective: the communicator reduces the operand's buffer into the result's (out of
 * place). Every replica runs the same plan, so every replica starts its collectives in
 * the same order. One that overlaps (the plan's wait step is later than its own) is only
 * started here: the kernels up to its wait step run while it is in flight, and the plan
 * keeps both buffers live until then (plan.h). On a device whose memory the host cannot
 * address (a GPU) the communicator's device transport enqueues it on the device's stream
 * between the kernels instead (*on_device), and run_steps waits for it (comm_wait_on)
 * before the device is synchronised. */
static kiln_status run_collective(run_state *r, const exec_step *st, bool *on_device) {
    const kiln_executable *e = r->e;
    char node[96];
    snprintf(node, sizeof node, "%%%u of '%.40s'", st->coll.node, e->name);
    const void *send = r->bufs[st->at];
    void *recv = r->bufs[st->at + 1];
    size_t count = (size_t)st->coll.count;
    if (e->dev->backend->copy_h2d) {
        *on_device = true;
        return comm_collective_on(e->ctx, e->comm, e->dev, (kn_coll)st->coll.op, st->coll.dtype,
                                  st->coll.kind, send, recv, count, node);
    }
    run_coll *c = &r->coll[r->n_started++];
    c->wait_step = st->coll.wait;
    c->token = -1;
    kiln_status s = comm_collective_start(e->comm, (kn_coll)st->coll.op, st->coll.dtype,
                                          st->coll.kind, send, recv, count, node, &c->req);
    return s || c->wait_step > (int32_t)st->sched ? s : comm_wait(&c->req);
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
 * one's part, and the transport may be writing into the arena until then). A copy in
 * flight is completed for the device: the kernels launched next wait for it. The first
 * error is kept. */
static kiln_status finish_collectives(run_state *r, int32_t step, kiln_status s) {
    for (uint32_t i = 0; i < r->n_started; i++) {
        run_coll *c = &r->coll[i];
        if ((!c->req.c && c->token < 0) || c->wait_step > step) continue;
        kiln_status w = c->req.c ? comm_wait(&c->req) : device_copy_kinds_wait(r->e->dev, c->token);
        c->token = -1;
        if (!s) s = w;
    }
    return s;
}

/* A copy between memory kinds: on a backend with a copy queue, one the plan waits for
 * later than its own step (mem_plan.wait_step) is only started here, and the kernels up to
 * its wait step run beside it (the plan keeps its operand and result live until then);
 * otherwise, and while profiling (each step timed on its own), in order. */
static kiln_status run_copy(run_state *r, const exec_step *st, void *const *bufs, bool profiling) {
    kn_device *dev = r->e->dev;
    if (profiling || st->copy.wait <= (int32_t)st->sched)
        return device_copy_kinds(dev, bufs[1], bufs[0], st->copy.bytes, st->copy.to_host);
    run_coll *c = &r->coll[r->n_started];
    *c = (run_coll){.wait_step = st->copy.wait, .token = -1};
    kiln_status s =
        device_copy_kinds_start(dev, bufs[1], bufs[0], st->copy.bytes, st->copy.to_host, &c->token);
    if (!s) r->n_started++;
    return s;
}

/* ------------------------------------------------------------ buffers ---- */

/* The bytes of a step's buffer during this call. */
static void *place_of(const run_state *r, exec_loc l) {
    switch (l.at) {
    case EXEC_AT_NONE: return NULL;
    case EXEC_AT_ARG:
        return (char *)(r->raw ? r->raw_args[l.index] : r->args[l.index]->data) + l.offset;
    case EXEC_AT_CONST: return r->e->consts[l.index];
    case EXEC_AT_OUTPUT: return r->raw ? r->raw_outs[l.index] : r->res[l.index]->data;
    case EXEC_AT_HOST: return (char *)r->host_arena + l.offset;
    default: return (char *)r->arena + l.offset;
    }
}

/* Gives every step's buffer its bytes for this call. */
static void bind_buffers(run_state *r) {
    const kiln_executable *e = r->e;
    for (uint32_t i = 0; i < e->n_locs; i++) r->bufs[i] = place_of(r, e->locs[i]);
}

/* Output arrays: new device memory, or (for an output the plan put in a donated buffer)
 * an empty handle that takes the buffer over when the call succeeds. */
static kiln_status make_outputs(run_state *r) {
    kiln_executable *e = r->e;
    const char *op = "kiln_executable_run";
    for (uint32_t j = 0; j < e->n_outputs; j++) {
        const exec_value *v = &e->outputs[j];
        kiln_status s = e->output_donor[j] >= 0
                            ? array_new_empty(e->ctx, op, e->dev->id, v->memory_kind, v->dtype,
                                              &v->shape, &r->res[j])
                            : array_new_in(e->ctx, op, e->dev->id, v->memory_kind, v->dtype,
                                           &v->shape, &r->res[j]);
        if (s) return s;
    }
    return KILN_STATUS_OK;
}

/* Host bookkeeping of one call, sized up front: the steps' buffers, the collectives. */
static kiln_status alloc_state(run_state *r) {
    kiln_executable *e = r->e;
    r->bufs = host_calloc(e->ctx, e->n_locs + 1, sizeof *r->bufs);
    uint32_t slots = inflight_slots(e);
    r->coll = slots ? host_calloc(e->ctx, slots, sizeof *r->coll) : NULL;
    if (!r->bufs || (slots && !r->coll))
        return ctx_oom(e->ctx, "kiln_executable_run", (e->n_locs + 1) * sizeof *r->bufs);
    return KILN_STATUS_OK;
}

static void free_state(run_state *r) {
    kiln_executable *e = r->e;
    host_free(e->ctx, r->bufs, (e->n_locs + 1) * sizeof *r->bufs);
    if (r->coll) host_free(e->ctx, r->coll, inflight_slots(e) * sizeof *r->coll);
}

/* ---------------------------------------------------------------- call ---- */

/* Copies outputs that are not computed into their own array: arguments and constants
 * returned as they are, and a value listed as an output more than once (the others'
 * output_copy is the output itself). */
static kiln_status finish_outputs(run_state *r) {
    const kiln_executable *e = r->e;
    kiln_status s = KILN_STATUS_OK;
    for (uint32_t j = 0; j < e->n_outputs && !s; j++) {
        const void *src = place_of(r, e->output_copy[j]);
        void *dst = r->raw ? r->raw_outs[j] : r->res[j]->data;
        size_t bytes = 0;
        ir_shape_nbytes(&e->outputs[j].shape, e->outputs[j].dtype, &bytes);
        if (!bytes || src == dst) continue;
        if (e->outputs[j].memory_kind == KILN_MEMORY_PINNED_HOST) /* a host argument returned */
            memcpy(dst, src, bytes);
        else
            s = device_copy(e->ctx, e->dev, dst, e->dev, src, bytes);
    }
    return s;
}

/* Outputs take over the donated buffers the plan gave them (when the call succeeded), the
 * other donated buffers are freed. */
static void take_donated_buffers(run_state *r, bool ok) {
    kiln_executable *e = r->e;
    for (uint32_t j = 0; j < e->n_outputs && ok; j++) {
        int32_t p = e->output_donor[j];
        if (p < 0) continue;
        r->res[j]->data = r->args[p]->data;
        r->args[p]->data = NULL;
    }
    for (uint32_t p = 0; p < e->n_params; p++)
        if (e->donated[p]) array_release(r->args[p]);
}

static void mark_consumed(const kiln_executable *e, kiln_array *const *args) {
    for (uint32_t p = 0; p < e->n_params; p++) {
        if (!e->donated[p]) continue;
        kiln_array *a = args[p];
        a->consumed = true;
        snprintf(a->consumed_by, sizeof a->consumed_by, "'%.20s' (argument %u)", e->name, p);
    }
}

/* The call succeeded: the donations are taken and every donated array is consumed. */
static void consume_donations(run_state *r) {
    take_donated_buffers(r, true);
    mark_consumed(r->e, r->args);
}

/* Every argument must live on the executable's device (JAX's committed-array rule), in
 * its parameter's memory kind: a run never moves data behind the caller's back. */
static kiln_status check_devices(const kiln_executable *e, const char *op,
                                 kiln_array *const *args) {
    for (uint32_t p = 0; p < e->n_params; p++) {
        int want = e->params[p].memory_kind, got = args[p]->memory_kind;
        if (args[p]->device == e->dev->id && got != want)
            return ctx_error(e->ctx, KILN_STATUS_INVALID_ARGUMENT,
                             "%s: argument %u of '%s'%s%s%s is in %s memory, "
                             "and its parameter in %s memory; make it there with "
                             "kiln_array_copy_to_memory",
                             op, p, e->name, e->params[p].name ? " ('" : "",
                             e->params[p].name ? e->params[p].name : "",
                             e->params[p].name ? "')" : "", ir_memory_kind_name(got),
                             ir_memory_kind_name(want));
        if (args[p]->device == e->dev->id) continue;
        char all[1024];
        exec_devices_str(e->ctx, (int)e->n_params, args, all, sizeof all);
        return ctx_error(e->ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "%s: '%s' was compiled for %s, but argument %u is on %s "
                         "(%s); move arrays with kiln_array_copy_to_device",
                         op, e->name, e->dev->name, p, e->ctx->devices[args[p]->device].name, all);
    }
    return KILN_STATUS_OK;
}

/* A donated array may not also be passed as another argument: its bytes would change
 * under the other parameter's reads. */
static kiln_status check_donations(const kiln_executable *e, const char *op,
                                   kiln_array *const *args) {
    for (uint32_t p = 0; p < e->n_params; p++) {
        if (!e->donated[p]) continue;
        for (uint32_t q = 0; q < e->n_params; q++)
            if (q != p && args[q] == args[p])
                return ctx_error(e->ctx, KILN_STATUS_INVALID_ARGUMENT,
                                 "%s: argument %u of '%s' is donated, and the same "
                                 "array is passed as argument %u too",
                                 op, p, e->name, q);
    }
    return KILN_STATUS_OK;
}

static kiln_status check_call(kiln_executable *e, const char *op, int n_args,
                              kiln_array *const *args, int n_outs, kiln_array **outs) {
    kiln_status s = exec_check_args(e, op, n_args, args);
    if (s || (s = check_devices(e, op, args))) return s;
    if (n_outs != (int)e->n_outputs || !outs)
        return ctx_error(e->ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "%s: '%s' has %u outputs, %d asked for%s", op, e->name, e->n_outputs,
                         n_outs, outs ? "" : " (outs is NULL)");
    return check_donations(e, op, args);
}

/* The call's arena, then the backend's launch preparation: the last steps that can fail
 * before the first kernel, for a call run now and one enqueued alike. */
static kiln_status take_arena(run_state *r) {
    const kiln_executable *e = r->e;
    kiln_status s = KILN_STATUS_OK;
    if (e->arena) {
        char tag[24];
        snprintf(tag, sizeof tag, "arena %s", e->name);
        s = device_alloc(e->dev, e->arena, tag, &r->arena);
    }
    if (!s && e->host_arena) {
        char tag[32];
        snprintf(tag, sizeof tag, "host arena %s", e->name);
        s = device_host_alloc(e->ctx, e->dev, e->host_arena, tag, &r->host_arena);
    }
    const kn_backend *b = e->dev->backend;
    if (!s && b->launch_prepare) s = b->launch_prepare(e->dev->state, e->dev->index);
    return s;
}

/* Everything that can fail, before any kernel runs. */
static kiln_status prepare(run_state *r) {
    kiln_status s = alloc_state(r);
    if (!s) s = make_outputs(r);
    if (!s) s = take_arena(r);
    return s;
}

/* The steps in order, then a wait for the device (a no-op on the CPU). */
static kiln_status run_steps(run_state *r, bool sync) {
    const kiln_executable *e = r->e;
    kiln_status s = KILN_STATUS_OK;
    const kn_backend *b = e->dev->backend;
    void *state = e->dev->state;
    int dev = e->dev->index;
    /* Profiling waits for the device after each step, so each kernel is timed on its own. */
    kiln_executable *pe =
        atomic_load_explicit(&e->profiling, memory_order_acquire) ? (kiln_executable *)e : NULL;
    bool first = pe && exec_profile_begin_run(pe); /* kept apart: it pays one-time work */
    uint64_t t_run = pe ? exec_profile_now_ns() : 0;
    bool collectives = false; /* enqueued on the device: waited for with the group's timeout */
    r->n_started = 0;
    /* Tiered compilation: the build this call runs, read once, so that the optimised
     * tier, swapped in meanwhile, is never mixed with the first (src/runtime/tier.c) */
    const exec_tier_code *tier2 = atomic_load_explicit(&e->tier_code, memory_order_acquire);
    if (pe) exec_profile_add_tier(pe, tier2 || e->tier != 1 ? 2 : 1);
    for (uint32_t i = 0; i < e->n_steps && !s; i++) {
        const exec_step *st = &e->steps[i];
        if (r->n_started && (s = finish_collectives(r, (int32_t)st->sched, s))) break;
        uint64_t t0 = pe ? exec_profile_now_ns() : 0;
        void *const *bufs = r->bufs + st->at;
        switch (st->kind) {
        case EXEC_STEP_LOOP:
            if (!tier2 && e->interp && e->interp[st->kernel]) {
                /* tier 1: the kernel run from its description (or compiled: st->loop.fn) */
                s = kx_launch(e->interp[st->kernel], b, state, dev, bufs);
                break;
            }
            s = b->launch(state, dev, tier2 ? exec_tier_kernel(tier2, i) : st->loop.fn, bufs,
                          (int)st->n, st->loop.items, st->loop.grain);
            break;
        case EXEC_STEP_LIB: s = b->lib_run(state, dev, &e->libs[st->lib], bufs); break;
        case EXEC_STEP_CONTROL: s = exec_run_control((kiln_executable *)e, st, bufs); break;
        case EXEC_STEP_COPY: s = run_copy(r, st, bufs, pe != NULL); break;
        default: s = run_collective(r, st, &collectives); break;
        }
        if (pe && !s && collectives) s = comm_wait_on(e->comm, e->dev, e->name);
        if (pe && !s && b->synchronize) s = b->synchronize(state, dev);
        if (pe) exec_profile_add_kernel(pe, st->kernel, exec_profile_now_ns() - t0, first);
        if (r->n_started) progress_collectives(r);
    }
    s = finish_collectives(r, INT32_MAX, s);
    if (!s && collectives) s = comm_wait_on(e->comm, e->dev, e->name);
    if (!s && sync && b->synchronize) s = b->synchronize(state, dev);
    if (pe && !s) exec_profile_add_run(pe, exec_profile_now_ns() - t_run, first);
    if (!tier2 && e->tier == 1) tier_note_run(e); /* its optimised build may start now */
    return s;
}

/* ---------------------------------------------------- asynchronous call ---- */

/* One enqueued call: this struct, then in the same host block its arguments, outputs,
 * the events each donated argument waits for, the steps' buffers and the collectives
 * (run_state points into the block). */
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
    for (uint32_t p = 0; p < e->n_params && !s; p++)
        if (r->args[p]->ready)
            s = event_depend(e->ctx, r->args[p]->ready,
                             "the run of '%s' on %s did not happen: its argument %u comes from "
                             "work that failed",
                             e->name, e->dev->name, p);
    for (uint32_t p = 0; p < e->n_params; p++)
        if (t->after[p]) event_wait(t->after[p]); /* a read: its own failure is not ours */
    if (!s) s = take_arena(r);
    if (!s) {
        bind_buffers(r);
        s = run_steps(r, true);
        if (!s) s = finish_outputs(r);
    }
    if (r->arena) device_free(e->dev, r->arena);
    if (r->host_arena) device_host_free(e->dev, r->host_arena);
    take_donated_buffers(r, !s);
    return s;
}

static void run_release(kn_task *tk) {
    run_task *t = (run_task *)tk;
    kiln_executable *e = t->r.e;
    kiln_context *ctx = e->ctx;
    for (uint32_t p = 0; p < e->n_params; p++) {
        array_unref(t->r.args[p]);
        event_unref(t->after[p]);
    }
    for (uint32_t j = 0; j < e->n_outputs; j++)
        if (t->r.res[j]) array_unref(t->r.res[j]);
    event_unref(tk->ev);
    size_t bytes = t->bytes;
    exec_unref(e);
    host_free(ctx, t, bytes);
}

/* The task and its bookkeeping in one host block (a call's only host allocation besides its
 * event and output handles). */
static run_task *task_alloc(kiln_executable *e, kiln_array *const *args) {
    size_t ptrs = e->n_params + e->n_outputs + e->n_params + e->n_locs + 1;
    size_t bytes = sizeof(run_task) + ptrs * sizeof(void *) + inflight_slots(e) * sizeof(run_coll);
    run_task *t = host_calloc(e->ctx, 1, bytes);
    if (!t) return NULL;
    void **p = (void **)(t + 1);
    t->bytes = bytes;
    t->r = (run_state){.e = e};
    kiln_array **a = (kiln_array **)p;
    memcpy(a, args, e->n_params * sizeof *a);
    t->r.args = a;
    t->r.res = (kiln_array **)(p += e->n_params);
    t->after = (kn_event **)(p += e->n_outputs);
    t->r.bufs = (p += e->n_params);
    t->r.coll = (run_coll *)(p + e->n_locs + 1); /* pointer-aligned, as run_coll needs */
    return t;
}

/* Undoes a task that was never enqueued: outputs and references go. */
static void task_abandon(run_task *t) {
    const kiln_executable *e = t->r.e;
    for (uint32_t j = 0; j < e->n_outputs; j++) {
        kiln_array *o = t->r.res[j];
        if (!o) continue;
        if (o->ready) event_unref(o->ready), o->ready = NULL;
        array_unref(o); /* the caller's reference; run_release drops the task's */
    }
    run_release(&t->t);
}

static kiln_status run_enqueue(kiln_executable *e, kiln_array *const *args, kiln_array **outs) {
    kiln_context *ctx = e->ctx;
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
    for (uint32_t p = 0; p < e->n_params; p++) {
        array_ref(args[p]);
        if (e->donated[p]) t->after[p] = queue_event_get(e->dev->copy, &args[p]->last_read);
    }
    s = make_outputs(&t->r); /* handles made so far are taken by task_abandon on failure */
    for (uint32_t j = 0; j < e->n_outputs && !s; j++) {
        t->r.res[j]->ready = t->t.ev;
        event_ref(t->t.ev);
        array_ref(t->r.res[j]);
    }
    for (uint32_t j = 0; j < e->n_outputs && !s; j++) outs[j] = t->r.res[j];
    if (!s) s = queue_submit(e->dev->compute, &t->t); /* from here the task may be gone */
    if (s) {
        for (uint32_t j = 0; j < e->n_outputs; j++) {
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
    return exec_run(e, "kiln_executable_run", n_args, args, n_outs, outs);
}

kiln_status exec_run(kiln_executable *e, const char *op, int n_args, kiln_array *const *args,
                     int n_outs, kiln_array **outs) {
    kiln_context *ctx = e->ctx;
    uint32_t n_out = e->n_outputs;
    kiln_status s = check_call(e, op, n_args, args, n_outs, outs);
    if (s) return s;
    if (e->dev->compute) return run_enqueue(e, args, outs);
    kiln_array *made[KILN_MAX_OUTPUTS] = {0};
    run_state r = {.e = e, .args = args, .res = made};
    if (n_out > KILN_MAX_OUTPUTS && !(r.res = host_calloc(ctx, n_out, sizeof *r.res)))
        return ctx_oom(ctx, "kiln_executable_run", n_out * sizeof *r.res);
    if (!(s = prepare(&r))) {
        bind_buffers(&r);
        s = run_steps(&r, true);
        if (!s) s = finish_outputs(&r);
    }
    if (r.arena) device_free(e->dev, r.arena);
    if (r.host_arena) device_host_free(e->dev, r.host_arena);
    if (!s) consume_donations(&r);
    free_state(&r);
    for (uint32_t j = 0; j < n_out; j++) {
        if (s)
            kiln_array_destroy(r.res[j]);
        else
            outs[j] = r.res[j];
    }
    if (r.res != made) host_free(ctx, r.res, n_out * sizeof *r.res);
    return s;
}

/* ------------------------------------------------------------ raw runs ---- */

struct exec_raw {
    run_state r;
};

kiln_status exec_raw_begin(kiln_executable *e, exec_raw **out) {
    exec_raw *x = host_calloc(e->ctx, 1, sizeof *x);
    if (!x) return ctx_oom(e->ctx, "kiln_executable_run: a loop body's run", sizeof *x);
    x->r = (run_state){.e = e, .raw = true};
    kiln_status s = alloc_state(&x->r);
    if (!s && e->host_arena) { /* a body's host arena serves all its iterations */
        char tag[32];
        snprintf(tag, sizeof tag, "host arena %s", e->name);
        s = device_host_alloc(e->ctx, e->dev, e->host_arena, tag, &x->r.host_arena);
    }
    if (s) {
        free_state(&x->r);
        host_free(e->ctx, x, sizeof *x);
        return s;
    }
    *out = x;
    return KILN_STATUS_OK;
}

kiln_status exec_raw_run(exec_raw *x, void *const *args, void *const *outs, void *arena) {
    run_state *r = &x->r;
    r->raw_args = args, r->raw_outs = outs, r->arena = arena;
    bind_buffers(r);
    kiln_status s = run_steps(r, false);
    return s ? s : finish_outputs(r);
}

void exec_raw_end(exec_raw *x) {
    if (!x) return;
    kiln_context *ctx = x->r.e->ctx;
    if (x->r.host_arena) device_host_free(x->r.e->dev, x->r.host_arena);
    free_state(&x->r);
    host_free(ctx, x, sizeof *x);
}
