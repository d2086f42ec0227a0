/* bench_plan.c — the memory planner's figures (issue 5): for each program of
 * examples/models.h, the plan with and without fusion, the arena against its lower bound,
 * the planned peak, and the device peak measured during one call. Prints "name key value"
 * lines; bench/run_plan.sh puts them next to JAX's memory_analysis() (bench/plan_jax.py).
 *
 * Two peaks are printed: kiln_peak counts every allocation as the device allocator does
 * (rounded up to 256 bytes), which is what a call measures; kiln_peak_exact counts exact
 * byte sizes (arguments + outputs + arena), as XLA's memory_analysis() does. */
#include "../examples/models.h"

#include <stdlib.h>

#define DIE(ctx, expr)                                                                             \
    do {                                                                                           \
        if ((expr) != KILN_STATUS_OK) {                                                            \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, kiln_last_error(ctx));              \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static kiln_context *ctx;

/* Exact bytes of the buffers of one kind in one place (arguments; outputs in new arrays). */
static uint64_t exact_bytes(kiln_executable *e, kiln_buffer_kind kind, kiln_buffer_place place) {
    kiln_memory_analysis a;
    kiln_executable_get_memory_analysis(e, &a);
    uint64_t sum = 0;
    for (int i = 0; i < a.num_buffers; i++) {
        kiln_buffer_info b;
        kiln_executable_get_buffer_info(e, i, &b);
        if (b.kind == kind && b.place == place) sum += b.bytes;
    }
    return sum;
}

/* Runs e once on fresh arguments; returns the device peak during the call. */
static uint64_t measure(kiln_executable *e, const model *m) {
    kiln_array *args[MODEL_MAX_PARAMS], *out[KILN_MAX_OUTPUTS];
    DIE(ctx, model_args(ctx, m, args));
    DIE(ctx, kiln_device_reset_peak(ctx, 0));
    int n_out = kiln_graph_num_outputs(m->g);
    DIE(ctx, kiln_executable_run(e, m->n_params, args, n_out, out));
    kiln_memory_stats st;
    kiln_device_get_memory_stats(ctx, 0, &st);
    for (int i = 0; i < n_out; i++) kiln_array_destroy(out[i]);
    for (int i = 0; i < m->n_params; i++) kiln_array_destroy(args[i]);
    return st.peak_bytes_in_use;
}

static void report(const char *name, const model_entry *me, int n_donate, const int *donate) {
    model m;
    DIE(ctx, model_build(ctx, me, &m));
    kiln_compile_options fused = {.n_donate = n_donate, .donate_argnums = donate, .keep_ir = true};
    kiln_compile_options unfused = fused;
    unfused.disable_fusion = true;
    kiln_executable *e, *u;
    DIE(ctx, kiln_compile(m.g, &fused, &e));
    DIE(ctx, kiln_compile(m.g, &unfused, &u));
    kiln_memory_analysis a, au;
    kiln_executable_info info, infou;
    kiln_executable_get_memory_analysis(e, &a), kiln_executable_get_memory_analysis(u, &au);
    kiln_executable_get_info(e, &info), kiln_executable_get_info(u, &infou);
    uint64_t args = exact_bytes(e, KILN_BUFFER_KIND_ARGUMENT, KILN_BUFFER_PLACE_ARGUMENT);
    uint64_t outs = exact_bytes(e, KILN_BUFFER_KIND_OUTPUT, KILN_BUFFER_PLACE_OUTPUT);
    uint64_t outs_u = exact_bytes(u, KILN_BUFFER_KIND_OUTPUT, KILN_BUFFER_PLACE_OUTPUT);
    printf("%s kiln_kernels %d\n%s kiln_kernels_unfused %d\n", name, info.num_kernels, name,
           infou.num_kernels);
    printf("%s kiln_schedule %s\n", name, a.schedule);
    printf("%s kiln_argument %llu\n", name, (unsigned long long)args);
    printf("%s kiln_output %llu\n", name, (unsigned long long)outs);
    printf("%s kiln_arena %llu\n", name, (unsigned long long)a.arena_bytes);
    printf("%s kiln_lower_bound %llu\n", name, (unsigned long long)a.temp_lower_bound);
    printf("%s kiln_alias %llu\n", name, (unsigned long long)a.alias_bytes);
    printf("%s kiln_peak_exact %llu\n", name, (unsigned long long)(args + outs + a.arena_bytes));
    printf("%s kiln_peak %llu\n", name, (unsigned long long)a.peak_bytes);
    printf("%s kiln_arena_unfused %llu\n", name, (unsigned long long)au.arena_bytes);
    printf("%s kiln_peak_exact_unfused %llu\n", name,
           (unsigned long long)(args + outs_u + au.arena_bytes));
    printf("%s kiln_measured_peak %llu\n", name, (unsigned long long)measure(e, &m));
    printf("%s kiln_code %llu\n", name, (unsigned long long)a.generated_code_bytes);
    fflush(stdout);
    kiln_executable_destroy(e), kiln_executable_destroy(u);
    kiln_graph_destroy(m.g);
}

int main(void) {
    char err[512];
    kiln_context_options co = {.compile_tiers = 1}; /* the -O3 build */
    if (kiln_context_create(&co, &ctx, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    for (int i = 0; i < N_MODELS; i++) report(models[i].name, &models[i], 0, NULL);
    report("chain_donate_x", model_find("chain"), 1, (int[]){0});
    report("adam_donated", model_find("adam"), 3, (int[]){0, 1, 2});
    kiln_context_destroy(ctx);
    return 0;
}
