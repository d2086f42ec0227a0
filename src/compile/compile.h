/* compile.h — what the files of src/compile/ share while they make an executable: the
 * recomputation choice, fusion and the memory plan, the step list and the kernels'
 * descriptions. kiln_compile (compile.c) drives them in that order; the result is the
 * object of src/runtime/executable.h. */
#ifndef KILN_COMPILE_H
#define KILN_COMPILE_H

#include "runtime/executable.h"

/* Chooses and applies the recomputation (remat.c, through remat_choose): the checkpoint
 * regions of e->g and, under a budget, the cheapest extra choice whose planned peak fits.
 * On return e->g is the graph to fuse and plan, e->remat says what was done. */
kiln_status exec_remat(kiln_executable *e, const kiln_compile_options *o);
/* Fusion, dot layouts and the memory plan of e->g into e (compile.c). */
kiln_status exec_fuse_and_plan(kiln_executable *e, const kiln_compile_options *o);
/* The backend's description of attention node id of g. */
void exec_attention_desc(const kiln_graph *g, uint32_t id, kn_attention_desc *d);
/* The library op of attention node id: ATTENTION for the forward pass, ATTENTION_GRAD for
 * its gradient's kinds. */
kn_lib_op exec_attention_op(const kiln_graph *g, uint32_t id);
/* The library call of argsort node id (KN_LIB_ARGSORT, its dtype and kn_sort_desc; no
 * scratch yet). */
void exec_sort_desc(const kiln_graph *g, uint32_t id, kn_lib_desc *d);
/* The library call of convolution node id (KN_LIB_CONV, its dtype and kn_conv_desc; no
 * scratch yet). */
void exec_conv_desc(const kiln_graph *g, uint32_t id, kn_lib_desc *d);
/* The library call of scatter node id (KN_LIB_SCATTER_ADD_ROWS; no scratch yet). */
void exec_scatter_desc(const kiln_graph *g, uint32_t id, kn_lib_desc *d);
/* Frees what exec_fuse_and_plan made (a trial plan of the budget search). */
void exec_plan_release(kiln_executable *e);
/* The step list, constants and call signature of e from its IR (steps.c; freed with the
 * executable, exec_steps_free). */
kiln_status exec_steps_build(kiln_executable *e);
/* kiln_compile with the internal donation map of a loop body (control.c): donate_to[p]
 * is the only output donated parameter p's buffer may become (-1: any; NULL: no map);
 * sub_graph: g is a loop body or branch (its memory budget: remat_planner.sub_graph). */
kiln_status exec_compile(kiln_graph *g, const kiln_compile_options *o, const int32_t *donate_to,
                         bool sub_graph, kiln_executable **out);
/* Compiles every control node's sub-graphs of e->g (control.c), once per region. */
kiln_status exec_controls_compile(kiln_executable *e, const kiln_compile_options *o);
/* The compiled sub-graphs of region r (and their index in e->ctls), or NULL. */
const exec_control *exec_control_of(const kiln_executable *e, const ir_region *r, uint32_t *index);
/* The scratch bytes control node n's step needs (0 before exec_controls_compile). */
uint64_t exec_control_scratch(const kiln_executable *e, const ir_node *n);
/* What the profile says of each kernel (describe.c; freed by exec_profile_forget). */
kiln_status exec_profile_describe(kiln_executable *e);

#endif
