/* classes.c — what each buffer of a plan is to a training step, and where a step's
 * memory goes by class (the categories of PyTorch's memory snapshot: parameter,
 * gradient, optimizer state, activation, input, output, temporary).
 *
 * The planner only reports here: the tracer, kiln_grad/kiln_vjp and the optimisers
 * recorded roles (trace/role.h) and backward flags on the nodes (ir.h), the passes carried them. A
 * buffer's class is decided in this order, the first that applies:
 *   scratch -> temporary; constant -> constant; a role -> that role; another parameter
 *   -> input; a saved activation -> activation; another output -> output; else temporary.
 * A saved activation is a materialised forward value that a backward kernel reads: read
 * by a backward node directly, or through forward nodes that fusion did not materialise
 * (those are recomputed inside the backward kernel from the buffers they read). A
 * gradient that fusion computes inline lives in the buffers it is computed from
 * (mark_nodes says which): those are gradients too.
 *
 * Bytes in use at a step: every argument and output array (a call makes its output
 * arrays first, and they are held to the end, see src/runtime/run.c), the temporaries and
 * scratch live there, each at its exact size. A donated argument's bytes are its own
 * until its last read; a buffer written in place over another has the bytes from the
 * step it is written, so no byte is counted twice. The difference to the planned peak is
 * the arena's gaps and the allocator's rounding. Constants are host memory: in the totals
 * only. */
#include "plan.h"
#include "trace/role.h"

#include <string.h>

const char *plan_class_name(int c) {
    static const char *const names[PLAN_NUM_CLASSES] = {"parameter",  "gradient", "optimizer_state",
                                                        "activation", "input",    "output",
                                                        "temporary",  "constant"};
    return c >= 0 && c < PLAN_NUM_CLASSES ? names[c] : "?";
}

enum { SAVED = 1, GRAD_STORE = 2 };

/* Per node (p->saved): SAVED for the forward values the backward kernels read, GRAD_STORE
 * for the buffers a gradient is computed from when fusion computes the gradient inline
 * (the dot whose transpose is a weight's gradient, the contributions a fused add sums):
 * that buffer is where the gradient lives in memory. One sweep down the ids (the graph is
 * topological, so every reader is visited before what it reads):
 * - a backward node marks its forward inputs SAVED; a SAVED forward value without a buffer
 *   is recomputed where it is read, so it marks its own forward inputs in turn;
 * - a gradient without a buffer (by role or inherited) marks GRAD_STORE on its backward
 *   inputs of its own element count that have no role. */
static void mark_nodes(const kiln_graph *g, const fusion_plan *fp, uint8_t *mark) {
    memset(mark, 0, g->n_nodes);
    for (uint32_t id = g->n_nodes - 1; id > 0; id--) {
        const ir_node *n = &g->nodes[id];
        const uint32_t *in = ir_in(n);
        bool inline_value = !fp->materialised[id];
        if (n->backward || ((mark[id] & SAVED) && inline_value))
            for (uint32_t k = 0; k < n->n_in; k++)
                if (!g->nodes[in[k]].backward) mark[in[k]] |= SAVED;
        if (!inline_value ||
            !(trace_role_of(g, id) == TRACE_ROLE_GRADIENT || (mark[id] & GRAD_STORE)))
            continue;
        int64_t numel = 0, numel_in = 0;
        ir_shape_numel(&n->shape, &numel);
        for (uint32_t k = 0; k < n->n_in; k++) {
            const ir_node *x = &g->nodes[in[k]];
            if (x->backward && !trace_role_of(g, in[k]) && ir_shape_numel(&x->shape, &numel_in) &&
                numel_in == numel)
                mark[in[k]] |= GRAD_STORE;
        }
    }
}

static plan_class class_of(const kiln_graph *g, const mem_plan *p, const plan_buffer *b) {
    if (b->kind == PLAN_K_SCRATCH) return PLAN_C_TEMPORARY;
    if (b->kind == PLAN_K_CONST) return PLAN_C_CONSTANT;
    const ir_node *n = &g->nodes[b->node];
    switch (trace_role_of(g, b->node)) {
    case TRACE_ROLE_PARAMETER: return PLAN_C_PARAMETER;
    case TRACE_ROLE_GRADIENT: return PLAN_C_GRADIENT;
    case TRACE_ROLE_OPT_STATE: return PLAN_C_OPT_STATE;
    default: break;
    }
    if (b->kind == PLAN_K_PARAM) return PLAN_C_INPUT;
    if ((p->saved[b->node] & SAVED) && !n->backward) return PLAN_C_ACTIVATION;
    if (p->saved[b->node] & GRAD_STORE) return PLAN_C_GRADIENT;
    return b->kind == PLAN_K_OUTPUT ? PLAN_C_OUTPUT : PLAN_C_TEMPORARY;
}

/* The steps [first, last] at which b's bytes are in use and its own; last < first when
 * never (constants, and whatever lives in pinned_host memory). */
static void resident(const kiln_graph *g, const mem_plan *p, uint32_t i, int32_t *first,
                     int32_t *last) {
    const plan_buffer *b = &p->buffers[i];
    int32_t end = (int32_t)p->n_kernels;
    *first = 0, *last = -1;
    if (plan_buffer_in_host(g, b)) return; /* not device memory */
    switch (b->place) {
    case PLAN_P_CONST:
    case PLAN_P_HOST: return; /* not device memory */
    case PLAN_P_OUTPUT: *first = -1, *last = end; return;
    case PLAN_P_ARG: {
        uint32_t a = b->place_index;
        bool reused = a < p->n_params && p->donated[a] && p->donation_used[a];
        *first = -1, *last = reused ? b->last : end;
        break;
    }
    default: *first = b->def, *last = b->last; break;
    }
    /* written over in place: the result has the bytes from the step it is written */
    if (p->resident_last[i] < *last) *last = p->resident_last[i];
}

void plan_classify(const kiln_graph *g, const fusion_plan *fp, mem_plan *p) {
    mark_nodes(g, fp, p->saved);
    uint32_t nk = p->n_kernels;
    for (uint32_t i = 0; i < p->n_buffers; i++) {
        p->buffer_class[i] = (uint8_t)class_of(g, p, &p->buffers[i]);
        p->resident_last[i] = INT32_MAX;
    }
    for (uint32_t i = 0; i < p->n_buffers; i++) {
        int32_t s = p->buffers[i].shares;
        if (s >= 0 && p->buffers[i].def - 1 < p->resident_last[s])
            p->resident_last[s] = p->buffers[i].def - 1;
    }
    /* bytes in use per step: a difference array summed in place */
    int64_t *diff = (int64_t *)p->in_use;
    memset(p->in_use, 0, (nk + 1) * sizeof *p->in_use);
    for (uint32_t i = 0; i < p->n_buffers; i++) {
        int32_t first, last;
        resident(g, p, i, &first, &last);
        if (first < 0) first = 0;
        if (last >= (int32_t)nk) last = (int32_t)nk - 1;
        if (last < first) continue;
        diff[first] += (int64_t)p->buffers[i].size;
        diff[last + 1] -= (int64_t)p->buffers[i].size;
    }
    int64_t run = 0;
    p->peak_step = nk ? 0 : -1;
    for (uint32_t s = 0; s < nk; s++) {
        run += diff[s];
        p->in_use[s] = (uint64_t)run;
        if (p->in_use[s] > p->in_use[p->peak_step]) p->peak_step = (int32_t)s;
    }
    memset(p->class_peak, 0, sizeof p->class_peak);
    memset(p->class_total, 0, sizeof p->class_total);
    memset(p->dtype_peak, 0, sizeof p->dtype_peak);
    memset(p->dtype_total, 0, sizeof p->dtype_total);
    for (uint32_t i = 0; i < p->n_buffers; i++) {
        int32_t first, last;
        resident(g, p, i, &first, &last);
        const plan_buffer *b = &p->buffers[i];
        unsigned t = b->kind == PLAN_K_SCRATCH ? 0u : (unsigned)g->nodes[b->node].dtype;
        if (t >= PLAN_NUM_DTYPES) t = 0;
        p->class_total[p->buffer_class[i]] += b->size;
        p->dtype_total[t] += b->size;
        if (first <= p->peak_step && p->peak_step <= last) {
            p->class_peak[p->buffer_class[i]] += b->size;
            p->dtype_peak[t] += b->size;
        }
    }
}
