/* plan.h — the compile-time memory planner (DESIGN §2.2): given a fused program, choose
 * the order its kernels run in and where every buffer lives, so that a call needs as
 * little device memory as possible and exactly as much as the plan says.
 *
 * The planner never touches a device. It sees the optimised graph, the fusion plan
 * (kernels, their roots and inputs) and, per kernel, how many scratch bytes the runtime
 * needs while that kernel runs; it produces:
 *
 *  - a schedule: a topological order of the kernels. Several strategies are tried
 *    (schedule.c), each one is planned in full, the one with the lowest peak is kept;
 *  - a buffer for every materialised value and every kernel's scratch, with its live
 *    interval in schedule steps and its place: the caller's argument, a constant held by
 *    the executable, a new output array, the temporary arena (one allocation per call)
 *    or the buffer of an argument the caller donated; a value in pinned_host memory (a
 *    memory_put there: host offload) lives in a host arena of its own, outside the peak;
 *  - in-place reuse: a kernel whose input dies there (or is a donated argument) writes a
 *    result over that input; a multi-output kernel may write each of its roots over a
 *    different input (inplace.c decides which inputs may be overwritten);
 *  - the figures of the memory analysis (kiln_memory_analysis in kiln.h).
 *
 * Live intervals are inclusive [def, last] in steps: a value is live from the step of
 * the kernel that writes it through the step of the last kernel that reads it (-1 is
 * "before the first step": parameters and constants; n_steps is "after the last": graph
 * outputs, which the caller keeps). Two buffers in the same place may overlap in bytes
 * only if their intervals are disjoint, or if one is written in place over the other at
 * the one step where both are live (plan_check proves this after every plan). A
 * collective that overlaps the kernels after it (plan_options.overlap_collectives) reads
 * its operand and writes its result until its wait step: both intervals reach that step,
 * so no kernel in between can take their bytes while the transfer is in flight.
 *
 * Sizes: every buffer has its exact byte size; offsets in the arena and in donated
 * buffers are multiples of PLAN_ALIGN. The analysis's argument, output and temp bytes are
 * rounded per allocation to the device allocator's granule, so that the planned peak is
 * what the allocator measures during a call. */
#ifndef KILN_PLAN_H
#define KILN_PLAN_H

#include "passes/fusion.h"

#define PLAN_ALIGN ((uint64_t)64) /* offsets in the arena: a cache line, AVX-512 loads */

/* What a buffer holds. */
typedef enum plan_kind {
    PLAN_K_PARAM,   /* a parameter: the caller's array */
    PLAN_K_CONST,   /* a non-scalar constant: the graph's data, held by the executable */
    PLAN_K_OUTPUT,  /* a graph output (first time it is listed) */
    PLAN_K_TEMP,    /* a value that lives only during the call */
    PLAN_K_SCRATCH, /* runtime scratch of one kernel (a dot's packed operands) */
} plan_kind;

/* Where it lives during a call. */
typedef enum plan_place {
    PLAN_P_ARG,     /* the caller's argument array place_index, offset 0 */
    PLAN_P_CONST,   /* the constant's own data in the graph */
    PLAN_P_OUTPUT,  /* the new output array place_index, offset 0 */
    PLAN_P_ARENA,   /* the temporary arena, at offset */
    PLAN_P_DONATED, /* the buffer of donated argument place_index, at offset */
    PLAN_P_HOST,    /* the host arena (a value in pinned_host memory), at offset */
} plan_place;

/* What a buffer is to a training step (kiln_memory_class mirrors it; classes.c says how
 * each is decided). The names are those of PyTorch's memory snapshot where they fit. */
typedef enum plan_class {
    PLAN_C_PARAMETER,  /* a value with the parameter role (weights, new weights) */
    PLAN_C_GRADIENT,   /* a value with the gradient role (kiln_grad's results) */
    PLAN_C_OPT_STATE,  /* optimiser state given to or returned by kiln_optim_* */
    PLAN_C_ACTIVATION, /* a forward value the backward pass reads (saved for it) */
    PLAN_C_INPUT,      /* any other argument (a batch, labels, a learning rate) */
    PLAN_C_OUTPUT,     /* any other output (a loss) */
    PLAN_C_TEMPORARY,  /* any other value, and kernels' scratch */
    PLAN_C_CONSTANT,   /* a constant (host memory: never in the device figures) */
    PLAN_NUM_CLASSES
} plan_class;

/* dtypes the plan counts bytes of (kiln_dtype values, 0 for scratch); room to grow */
enum { PLAN_NUM_DTYPES = 16 };

typedef struct plan_buffer {
    uint32_t node;        /* the value (for scratch: the kernel's root) */
    uint32_t kernel;      /* the kernel that writes it; UINT32_MAX for params/constants */
    uint8_t kind;         /* plan_kind */
    uint8_t place;        /* plan_place */
    uint32_t place_index; /* argument or output number (PLAN_P_ARG/OUTPUT/DONATED) */
    uint64_t size;        /* exact bytes */
    uint64_t offset;      /* within its place */
    int32_t def, last;    /* live interval in steps, inclusive (see above) */
    int32_t shares;       /* in place: the buffer whose bytes it takes over, else -1 */
} plan_buffer;

typedef struct plan_options {
    const uint8_t *donated; /* per parameter index: 1 if the caller donates it; NULL: none */
    /* per parameter index: the only output a donated parameter's buffer may become, -1 any
     * (a loop body's carry becomes its own new value or nothing); NULL: any */
    const int32_t *donate_to;
    const uint64_t *scratch; /* per kernel: scratch bytes while it runs; NULL: none */
    uint64_t granule;        /* the device allocator's rounding (256); 0: 1 */
    /* Collectives overlap the kernels after them: an all-reduce is started at its step and
     * waited for at its wait step (mem_plan.wait_step), so its operand and result stay
     * live until then; the schedule starts each as soon as its operand exists and runs its
     * readers as late as their own readers allow (schedule.c). */
    bool overlap_collectives;
    /* Copies between memory kinds (memory_put: host offload's puts and fetches) overlap
     * the kernels after them the same way, on the device's copy queue: a fetch runs up to
     * PLAN_TRANSFER_WINDOW steps ahead of its first reader (schedule.c,
     * plan_prefetch_order) and is waited for before it, a put before its first reader or
     * PLAN_TRANSFER_WINDOW steps after its own, whichever comes first (its operand's device
     * bytes stay taken until then). For a backend with copy_kinds_start (the GPU's). */
    bool overlap_transfers;
} plan_options;

/* The steps a put to host memory, or a fetch from it, runs beside
 * (plan_options.overlap_transfers). */
#define PLAN_TRANSFER_WINDOW 8

/* One schedule strategy's outcome, kept for the report. */
typedef struct plan_try {
    const char *strategy;
    uint64_t peak, arena, lower_bound;
} plan_try;

#define PLAN_MAX_TRIES 8

typedef struct mem_plan {
    kiln_context *ctx;
    uint32_t n_nodes, n_kernels, n_params, n_outputs;
    const char *strategy; /* the schedule kept ("list", "dfs", ...) */
    uint32_t *order;      /* step -> kernel */
    uint32_t *step_of;    /* kernel -> step */
    plan_buffer *buffers; /* materialised values in node order, then scratch in kernel order */
    uint32_t n_buffers;
    int32_t *buffer_of;     /* node -> buffer, -1 for values without one (fused away) */
    int32_t *scratch_of;    /* kernel -> its scratch buffer, -1 if none */
    uint32_t *alias_of;     /* node -> 1 + the input slot (of the kernel whose root it is)
                             * whose buffer that root overwrites in place, 0 if none */
    int32_t *output_home;   /* output -> the buffer it is (first listing), -1: a copy at the end */
    int32_t *output_donor;  /* output -> the donated argument whose buffer it takes, -1 if none */
    uint8_t *donated;       /* per parameter: donated by the caller */
    uint8_t *donation_used; /* per parameter: the plan put something in its buffer */
    uint64_t *live_bytes;   /* per step: bytes of temporaries and scratch live there */
    /* per kernel: the step before whose kernel the run waits for it to complete. A
     * collective that overlaps waits before its first reader (the last step at the
     * latest); every other kernel, and a collective that does not, has its own step. */
    int32_t *wait_step;

    /* the analysis (bytes; argument/output/temp rounded per allocation to the granule) */
    uint64_t arena; /* exact extent of the arena */
    uint64_t argument_bytes, output_bytes, temp_bytes, alias_bytes, constant_bytes;
    uint64_t peak;          /* argument + output + temp: the device peak of a call */
    uint64_t lower_bound;   /* most temp + scratch bytes live at one step (exact sizes) */
    uint64_t inplace_bytes; /* bytes written over a dying input instead of fresh memory */
    /* host offload: the host arena (values in pinned_host memory, packed as the arena is
     * but never counted in `peak`), its size rounded to the granule, and what is copied
     * there per call */
    uint64_t host_arena, host_bytes, offload_bytes;
    /* arguments and outputs in pinned_host memory (kiln_parameter_in_memory), rounded as
     * the device's are, and the donated ones an output took over; never in `peak` */
    uint64_t host_argument_bytes, host_output_bytes, host_alias_bytes;
    uint32_t n_offloaded;
    plan_try tries[PLAN_MAX_TRIES];
    int n_tries;

    /* classes (classes.c): per buffer its plan_class; bytes per class at peak_step, the
     * step with the most device bytes in use (-1 when there is no kernel), and in total */
    uint8_t *buffer_class;
    uint8_t *saved;         /* per node: saved for the backward pass, gradient storage */
    int32_t *resident_last; /* per buffer: last step its bytes are its own (classes.c) */
    uint64_t *in_use;       /* per step: device bytes in use (arguments, outputs, temps) */
    int32_t peak_step;
    uint64_t class_peak[PLAN_NUM_CLASSES], class_total[PLAN_NUM_CLASSES];
    /* the same by the values' dtype (index: kiln_dtype; 0 holds scratch, raw bytes) */
    uint64_t dtype_peak[PLAN_NUM_DTYPES], dtype_total[PLAN_NUM_DTYPES];
    void *block; /* the one allocation behind the arrays above */
    size_t block_size;
} mem_plan;

/* b's bytes are in pinned_host memory (a host temporary, or a parameter or output of that
 * memory kind): never part of the device's figures. */
static inline bool plan_buffer_in_host(const kiln_graph *g, const plan_buffer *b) {
    return (b->kind == PLAN_K_PARAM || b->kind == PLAN_K_OUTPUT || b->kind == PLAN_K_TEMP) &&
           ir_in_host(g, b->node);
}

/* Plans g's kernels. Fills *out (free with plan_free); sets ctx's message on failure. */
kiln_status plan_build(const kiln_graph *g, const fusion_plan *fp, const plan_options *o,
                       mem_plan *out);
void plan_free(mem_plan *p);

/* Proves the plan sound: every kernel's inputs are live when it runs, every buffer lies
 * within its place and is aligned, and no two buffers live at the same step overlap in
 * bytes unless one is written in place over the other there. Exhaustive (all pairs);
 * kiln_compile runs it after every plan in debug builds. KILN_STATUS_INTERNAL with the first
 * violation in ctx's message. */
kiln_status plan_check(const kiln_graph *g, const fusion_plan *fp, const mem_plan *p);

/* Which kernel inputs may be overwritten by the kernel's roots, element for element. out
 * has one entry per input of every kernel, kernels in order (the sum of n_inputs); an
 * entry is set when every read of that input inside the kernel, by any root, is at the
 * index being written, through elementwise ops only (inplace.c explains why that is the
 * rule). Which root may take which legal input (size, dtype, one root per input) is the
 * planner's choice. */
kiln_status plan_inplace_legal(const kiln_graph *g, const fusion_plan *fp, uint8_t *out);

/* Tells codegen which roots run in place: sets fp's kernels' alias arrays (fusion.h) from
 * p. KILN_STATUS_HOST_OOM leaves fp as it was. */
kiln_status plan_apply_aliases(const mem_plan *p, fusion_plan *fp);

/* Text, JSON and SVG forms of a plan (picture.c); NULL on host OOM. Free with
 * kiln_string_free. code_bytes is reported as the generated code size. */
char *plan_report(const kiln_graph *g, const fusion_plan *fp, const mem_plan *p,
                  uint64_t code_bytes);
char *plan_json(const kiln_graph *g, const fusion_plan *fp, const mem_plan *p, uint64_t code_bytes);
char *plan_svg(const kiln_graph *g, const fusion_plan *fp, const mem_plan *p);

/* Fills p's classes (the fields after `tries`) from g's roles and backward flags and fp's
 * materialisation; plan_build calls it on the plan it keeps. Cannot fail. */
void plan_classify(const kiln_graph *g, const fusion_plan *fp, mem_plan *p);
/* "parameter", "gradient", "optimizer_state", "activation", ... ; "?" out of range. */
const char *plan_class_name(int c);

/* The name of a buffer's defining op for reports ("dot_general", "scratch", a loop's
 * "scan body": its sub-graphs' arena and spares, ...). */
const char *plan_buffer_op(const kiln_graph *g, const plan_buffer *b);

/* Rounds x up to a multiple of a (a power of two or any positive number). */
static inline uint64_t plan_round(uint64_t x, uint64_t a) {
    return a > 1 ? (x + a - 1) / a * a : x;
}

#endif
