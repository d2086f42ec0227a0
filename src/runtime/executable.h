/* executable.h — a compiled program (kiln_compile in kiln.h): the step list a call walks
 * (made by src/compile/, walked by run.c), its lifetime, and the IR part kept only under
 * kiln_compile_options.keep_ir for the reports of src/report/. */
#ifndef KILN_EXECUTABLE_H
#define KILN_EXECUTABLE_H

#include "backend/device.h"
#include "codegen/cgen.h"
#include "codegen/lower_dot.h"
#include "runtime/array.h"
#include "plan/plan.h"
#include "remat/remat.h"

/* Where one buffer of a step lies during a call: resolved once per call (run.c), since
 * arguments, outputs and the arena move from call to call; everything else is fixed. */
typedef enum exec_at {
    EXEC_AT_NONE,   /* no bytes (an empty value, an operand fusion left as zeros): NULL */
    EXEC_AT_ARG,    /* argument `index`'s data + offset (a donated argument's free bytes) */
    EXEC_AT_CONST,  /* constant `index` (consts) */
    EXEC_AT_OUTPUT, /* output array `index`'s data */
    EXEC_AT_ARENA,  /* the call's arena + offset */
    EXEC_AT_HOST,   /* the call's host arena (pinned_host memory) + offset */
} exec_at;

typedef struct exec_loc {
    uint8_t at; /* exec_at */
    uint32_t index;
    uint64_t offset;
} exec_loc;

typedef enum exec_step_kind {
    EXEC_STEP_LOOP,       /* a generated loop kernel: the backend's launch */
    EXEC_STEP_LIB,        /* a library op: the backend's lib_run over libs[lib] */
    EXEC_STEP_COLLECTIVE, /* an all-reduce over the communicator: buffers send, recv */
    EXEC_STEP_CONTROL,    /* a while, scan or cond (ctls[ctl]): buffers its node's inputs,
                           * its results, its scratch (run_control.c) */
    EXEC_STEP_COPY,       /* a memory_put: buffers src, dst (device_copy_kinds) */
} exec_step_kind;

/* One thing a call does, in order, with all it needs computed when compiling (steps.c). A
 * kernel is one step, or none (nothing to compute), or several (a product whose operands
 * are permuted first). */
typedef struct exec_step {
    uint8_t kind;    /* exec_step_kind */
    uint32_t kernel; /* the kernel it belongs to (k<i>: profiling) */
    uint32_t sched;  /* that kernel's place in the schedule: what collective waits count */
    uint32_t at, n;  /* its buffers: locs[at, at + n) */
    union {
        struct {
            void *fn; /* the backend's kernel handle */
            int64_t items, grain;
        } loop;
        uint32_t lib; /* its descriptor: libs[lib] */
        uint32_t ctl; /* a control step's compiled sub-graphs: ctls[ctl] */
        struct {
            int32_t wait; /* the schedule place before which it must have completed */
            uint32_t node;
            kiln_dtype dtype;
            kiln_reduce_kind kind;
            int64_t count; /* the whole buffer's elements (kn_coll): the larger of the two */
            uint8_t op;    /* kn_coll: all-reduce, reduce-scatter or all-gather */
        } coll;
        struct {
            uint64_t bytes;
            bool to_host; /* device -> pinned_host, else back */
            int32_t wait; /* the schedule place before which it must have completed (later
                           * than its own: it runs beside the kernels in between) */
        } copy;
    };
} exec_step;

/* A control node compiled (src/compile/control.c): its sub-graphs as executables for the
 * same device, run by the host from the node's step with raw buffers (run_control.c):
 * parameters where the loop's carries, slices and captures lie, outputs the loop's
 * results, arena a part of the step's planned scratch. The scratch holds, at these
 * offsets: the arena of whichever sub-graph runs (the largest), a spare buffer for each
 * carry the body cannot update in place (the two alternate), the condition's flag. */
typedef struct exec_control {
    uint8_t op; /* IR_WHILE, IR_SCAN, IR_COND */
    bool reverse;
    uint32_t n_subs;
    struct kiln_executable **subs; /* WHILE: cond, body; SCAN: body; COND: branches (owned) */
    uint32_t n_in, n_res, n_carry, n_xs;
    int64_t length;
    uint64_t *res_bytes;            /* per result: its bytes (a stacked y: one slice's) */
    uint64_t *x_bytes;              /* per scanned array: one slice's bytes */
    uint32_t *cap_base;             /* per sub-graph: its first capture among the node's inputs */
    uint8_t *in_place;              /* per carry: the body writes it over its own parameter */
    uint64_t *spare_at;             /* per carry not in place: its spare's offset in the scratch */
    uint64_t flag_at;               /* WHILE: the condition's bool, in the scratch */
    uint64_t scratch;               /* bytes of scratch the step needs */
    const struct ir_region *region; /* what it was compiled from (while compiling only) */
} exec_control;

/* A parameter or output as a call sees it (the checks, the output arrays, messages). */
typedef struct exec_value {
    kiln_dtype dtype;
    ir_shape shape;
    const char *name; /* a parameter's (in names), or NULL */
    int memory_kind;  /* kiln_memory_kind of its array */
} exec_value;

/* What the profile says of a kernel, computed when compiling (src/compile/describe.c). */
typedef struct exec_kernel_info {
    uint8_t kind; /* fk_kind */
    uint32_t n_members;
    uint32_t label; /* its description: kernel_labels + label */
    double flops, bytes;
} exec_kernel_info;

/* A compiled program. After kiln_compile it runs from the step list alone: the graph,
 * the fusion and memory plans and the source (the IR part below) are freed unless
 * kiln_compile_options.keep_ir asked for them, which the reports that print them need. */
struct kiln_executable {
    kiln_context *ctx;
    atomic_int refs;  /* the user's (or jit entry's) + one per run in flight */
    kn_device *dev;   /* where it runs: kiln_compile_options.device */
    kiln_comm *comm;  /* its collectives' replicas (borrowed); NULL: one replica */
    bool overlap;     /* all-reduces run beside later kernels (mem.wait_step; run.c) */
    kn_program *prog; /* the backend's compiled program (owned; opaque here) */
    kiln_executable_info stats;
    remat_info remat;              /* what rematerialisation did (src/remat) */
    kiln_memory_analysis analysis; /* computed when compiling (analysis.c) */

    /* ---- what a call needs (steps.c builds it, run.c walks it) ---- */
    char *name; /* the graph's */
    uint32_t n_params, n_outputs;
    exec_value *params, *outputs;
    char *names;           /* the parameters' names, back to back */
    size_t names_size;     /* bytes of names */
    uint8_t *donated;      /* per parameter (n_params + 1 bytes): consumed by every call */
    int32_t *output_donor; /* per output: the donated argument whose buffer it takes, or -1 */
    exec_loc *output_copy; /* per output: what to copy into it after the steps (NONE: no copy) */
    uint64_t arena;        /* bytes of the call's temporary arena */
    uint64_t host_arena;   /* bytes of its host arena (host offload), from the device's
                            * pinned_host pool (device_host_alloc) */
    exec_step *steps;
    uint32_t n_steps, n_coll; /* steps, of which collectives */
    uint32_t n_xfer;          /* copy steps (memory_put) */
    exec_loc *locs;           /* the steps' buffers, back to back */
    uint32_t n_locs;
    kn_lib_desc *libs; /* the library steps' descriptors */
    uint32_t n_libs;
    exec_control *ctls; /* the control steps' sub-graphs (owned) */
    uint32_t n_ctls, cap_ctls;
    /* Constants read in place: per one, its bytes on the device (a copy in device memory
     * on a device with memory of its own, else within const_block on the host). */
    void **consts;
    uint32_t n_consts;
    void *const_block;
    size_t const_block_size;
    uint32_t n_kernels;
    exec_kernel_info *kernel_info; /* per kernel */
    char *kernel_labels;
    size_t kernel_labels_size;
    /* Profiling (profile.c): run.c times each step while `profiling` is set; the counters
     * are made the first time it is turned on and freed with the executable. */
    atomic_bool profiling;
    struct exec_profile *prof;

    /* ---- the IR part: NULL after compiling unless kiln_compile_options.keep_ir ---- */
    kiln_graph *g; /* the optimised graph (owned) */
    fusion_plan plan;
    cgen_kernel *info;        /* per kernel */
    void **kernels;           /* per kernel: the backend's handle of a LOOP kernel, else NULL */
    lower_dot *dots;          /* per kernel; meaningful for DOT */
    char *source;             /* the generated source (owned) */
    mem_plan mem;             /* schedule, buffers, arena (src/plan) */
    const int32_t *donate_to; /* while compiling a loop body: plan_options.donate_to */
    bool sub_graph;           /* a loop body or branch (remat_planner.sub_graph) */

    /* ---- tiered compilation (src/runtime/tier.c) ---- */
    uint8_t tier; /* 1: the steps run tier 1 (interp) until tier 2 is swapped in; 2: prog */
    /* tier 1: per kernel, a LOOP kernel run from its description (codegen/kexec.h), else
     * NULL; NULL when the program was built at tier 2 */
    struct kx_kernel **interp;
    uint32_t n_interp;
    /* tier 1's LOOP kernels compiled instead (interp[k] NULL: those kx_replays refuses), in
     * prog, a program of their own until tier 2 comes */
    uint32_t tier1_compiled;
    bool tier_pending;       /* tier 2 is queued or compiling (under the tier service's mutex) */
    atomic_bool tier_ran;    /* a call has run on tier 1 (tier_note_run) */
    atomic_bool tier_failed; /* tier 2 failed: calls stay on tier 1 */
    _Atomic(struct exec_tier_code *) tier_code; /* tier 2 once built; NULL before */
};

/* Tiered compilation: the second tier's build (tier.c), which a call that finds it set
 * runs instead of the steps' own loop kernels. */
typedef struct exec_tier_code exec_tier_code;
/* Loop step i's kernel handle in tier 2's build (tier.c). */
void *exec_tier_kernel(const exec_tier_code *c, uint32_t i);

/* The error of a call whose own object (executable, jit) is NULL: the message goes to the
 * context of its first argument that is not NULL, so kiln_last_error reads this failure and
 * not an older one. KILN_STATUS_INVALID_ARGUMENT either way (with no argument there is no
 * context to hold a message). */
kiln_status exec_null_object(const char *op, const char *what, int n_args, kiln_array *const *args);
/* kiln_executable_run, its argument errors naming `op` (kiln_jit_call names its call). */
kiln_status exec_run(kiln_executable *e, const char *op, int n_args, kiln_array *const *args,
                     int n_outs, kiln_array **outs);
/* Checks that args match e's parameters; the message names `op`, the argument index,
 * the parameter's name and both types. */
kiln_status exec_check_args(const kiln_executable *e, const char *op, int n_args,
                            kiln_array *const *args);
/* Frees what exec_steps_build made (src/compile/steps.c). */
void exec_steps_free(kiln_executable *e);
/* Frees what exec_profile_describe made (src/compile/describe.c). */
void exec_profile_forget(kiln_executable *e);
/* Frees the IR part of e (what only compiling and the IR's reports read). */
void exec_ir_free(kiln_executable *e);
/* OK when e kept its IR; else INVALID_ARGUMENT saying that `op` needs keep_ir. */
kiln_status exec_need_ir(const kiln_executable *e, const char *op);
/* Writes "argument 0 on cpu:0, argument 1 on cpu:1" (for the mixed-device messages). */
void exec_devices_str(kiln_context *ctx, int n_args, kiln_array *const *args, char *buf,
                      size_t size);
/* A sub-executable run inside a control step (run.c): its steps over raw buffers, no
 * arena or output taken, no donation consumed, the device not synchronised. begin makes
 * the host bookkeeping once for many runs. */
typedef struct exec_raw exec_raw;
kiln_status exec_raw_begin(kiln_executable *e, exec_raw **out);
kiln_status exec_raw_run(exec_raw *r, void *const *args, void *const *outs, void *arena);
void exec_raw_end(exec_raw *r);
/* Runs control step st's sub-graphs over its buffers (run_control.c). */
kiln_status exec_run_control(kiln_executable *e, const exec_step *st, void *const *bufs);
/* Frees what exec_controls_compile made (src/compile/control.c); the second drops only
 * its references to the IR's regions (when the IR goes). */
void exec_controls_free(kiln_executable *e);
void exec_controls_forget_regions(kiln_executable *e);
/* Profiling counters (profile.c). */
typedef struct exec_profile exec_profile;
uint64_t exec_profile_now_ns(void);
/* True for exactly one run of a profiled executable, its first: that run's times go to
 * counters of their own (`first` below), since it pays one-time work. */
bool exec_profile_begin_run(kiln_executable *e);
void exec_profile_add_kernel(kiln_executable *e, uint32_t ki, uint64_t ns, bool first);
void exec_profile_add_run(kiln_executable *e, uint64_t ns, bool first);
/* Counts a profiled run of tier `tier` (1 or 2: tiered compilation, src/runtime/tier.c). */
void exec_profile_add_tier(kiln_executable *e, int tier);
void exec_profile_free(kiln_executable *e);

/* A run in flight holds the executable: the last reference frees it. */
void exec_ref(kiln_executable *e);
void exec_unref(kiln_executable *e);

#endif
