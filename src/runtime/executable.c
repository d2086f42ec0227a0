/* executable.c — a compiled program's lifetime and the checks every call makes: references
 * (a run in flight holds the executable, the last reference frees it), the arguments
 * against the parameters, and the IR part freed after compiling unless
 * kiln_compile_options.keep_ir keeps it. Making an executable is src/compile/; a call
 * walks its steps in run.c. */
#include "executable.h"
#include "runtime/tier.h"
#include "passes/passes.h"

#include <stdio.h>
#include <string.h>

kiln_status exec_check_args(const kiln_executable *e, const char *op, int n_args,
                            kiln_array *const *args) {
    kiln_context *ctx = e->ctx;
    if (n_args != (int)e->n_params)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "%s: '%s' takes %u arguments, got %d",
                         op, e->name, e->n_params, n_args);
    if (n_args && !args)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "%s: args is NULL", op);
    for (int i = 0; i < n_args; i++) {
        const exec_value *p = &e->params[i];
        char want[IR_TYPE_STR_MAX], got[IR_TYPE_STR_MAX];
        if (!args[i])
            return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "%s: argument %d (\"%s\") is NULL",
                             op, i, p->name ? p->name : "");
        kiln_status s = array_check_owner(args[i], ctx, op, i);
        if (s || (s = array_check_live(args[i], op, i))) return s;
        if (args[i]->dtype != p->dtype || !ir_shape_eq(&args[i]->shape, &p->shape))
            return ctx_error(ctx,
                             args[i]->dtype != p->dtype ? KILN_STATUS_DTYPE : KILN_STATUS_SHAPE,
                             "%s: argument %d (\"%s\") is %s, the parameter is %s", op, i,
                             p->name ? p->name : "",
                             ir_type_str(args[i]->dtype, &args[i]->shape, got, sizeof got),
                             ir_type_str(p->dtype, &p->shape, want, sizeof want));
    }
    return KILN_STATUS_OK;
}

void exec_devices_str(kiln_context *ctx, int n_args, kiln_array *const *args, char *buf,
                      size_t size) {
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < n_args && k < size; i++)
        k += (size_t)snprintf(buf + k, size - k, "%sargument %d on %s", i ? ", " : "", i,
                              ctx->devices[args[i]->device].name);
}

void exec_ref(kiln_executable *e) {
    atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
}

void kiln_executable_destroy(kiln_executable *e) {
    if (!e) return;
    tier_cancel(e); /* a tier-2 build still queued is not needed any more */
    exec_unref(e);
}

void exec_ir_free(kiln_executable *e) {
    kiln_context *ctx = e->ctx;
    uint32_t nk = e->plan.n_kernels ? e->plan.n_kernels : 1;
    if (e->source) kiln_string_free(ctx, e->source);
    host_free(ctx, e->info, nk * sizeof *e->info);
    host_free(ctx, e->kernels, nk * sizeof *e->kernels);
    host_free(ctx, e->dots, nk * sizeof *e->dots);
    plan_free(&e->mem);
    fusion_plan_free(&e->plan);
    exec_controls_forget_regions(e);
    kiln_graph_destroy(e->g);
    e->source = NULL, e->info = NULL, e->kernels = NULL, e->dots = NULL, e->g = NULL;
    memset(&e->mem, 0, sizeof e->mem);
    memset(&e->plan, 0, sizeof e->plan);
}

kiln_status exec_need_ir(const kiln_executable *e, const char *op) {
    if (e->g) return KILN_STATUS_OK;
    return ctx_error(e->ctx, KILN_STATUS_INVALID_ARGUMENT,
                     "%s: '%s' was compiled without kiln_compile_options.keep_ir, and this "
                     "report reads the graph and plans that compiling frees otherwise",
                     op, e->name);
}

void exec_unref(kiln_executable *e) {
    if (atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) != 1) return;
    kiln_context *ctx = e->ctx;
    if (ctx->config.profile && e->prof) {
        char *rep = kiln_executable_profile_report(e);
        if (rep)
            fprintf(stderr, "kiln: KILN_PROFILE, executable %p (%u kernels):\n%s\n", (void *)e,
                    e->n_kernels, rep);
        kiln_string_free(ctx, rep);
    }
    exec_profile_free(e);
    if (e->prog) e->dev->backend->program_free(e->dev->state, e->prog);
    tier_code_free(e);
    tier_interp_free(e);
    exec_steps_free(e);
    exec_controls_free(e);
    exec_profile_forget(e);
    if (e->donated) host_free(ctx, e->donated, e->n_params + 1);
    exec_ir_free(e);
    host_free(ctx, e, sizeof *e);
}

void kiln_executable_get_info(const kiln_executable *e, kiln_executable_info *info) {
    if (!e || !info) return;
    *info = e->stats;
    info->compile_tier = tier_current(e);
}

void exec_steps_free(kiln_executable *e) {
    kiln_context *ctx = e->ctx;
    host_free(ctx, e->steps, (e->n_steps + 1) * sizeof *e->steps);
    host_free(ctx, e->libs, (e->n_libs + 1) * sizeof *e->libs);
    host_free(ctx, e->locs, (e->n_locs + 1) * sizeof *e->locs);
    for (uint32_t i = 0; e->consts && !e->const_block && i < e->n_consts; i++)
        if (e->consts[i]) device_free(e->dev, e->consts[i]);
    if (e->consts) host_free(ctx, e->consts, e->n_consts * sizeof *e->consts);
    host_free(ctx, e->const_block, e->const_block_size);
    if (e->name) kiln_string_free(ctx, e->name);
    host_free(ctx, e->params, (e->n_params + 1) * sizeof *e->params);
    host_free(ctx, e->outputs, (e->n_outputs + 1) * sizeof *e->outputs);
    host_free(ctx, e->names, e->names_size);
    host_free(ctx, e->output_donor, (e->n_outputs + 1) * sizeof *e->output_donor);
    host_free(ctx, e->output_copy, (e->n_outputs + 1) * sizeof *e->output_copy);
}

void exec_profile_forget(kiln_executable *e) {
    if (e->kernel_info)
        host_free(e->ctx, e->kernel_info, (e->n_kernels + 1) * sizeof *e->kernel_info);
    if (e->kernel_labels) host_free(e->ctx, e->kernel_labels, e->kernel_labels_size);
    e->kernel_info = NULL, e->kernel_labels = NULL;
}
