/* deprecated_names.c — a program written against the old header still builds and behaves:
 * every name of kiln.h's "Deprecated names" section means its replacement. Enum aliases
 * have the replacement's value; the old functions give what the new ones give, are exported
 * by libkiln.so (this program links the shared library) and can be called through a
 * pointer. Compiled with -Wno-deprecated-declarations (and clang's -Wno-deprecated-pragma):
 * using them on purpose is the point; check_deprecated.cmake checks that a use warns. */
#undef KILN_NO_DEPRECATED /* the build hides the old names everywhere else */
#include "kiln.h"

#include <stdio.h>
#include <string.h>

static int failures;
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "deprecated_names.c:%d: %s\n", __LINE__, #cond);                       \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* Each old enum value is its replacement's, checked when this file compiles. */
#define SAME(old, new) _Static_assert((int)(old) == (int)(new), #old " is not " #new)
SAME(KILN_OK, KILN_STATUS_OK);
SAME(KILN_ERR_INVALID_ARGUMENT, KILN_STATUS_INVALID_ARGUMENT);
SAME(KILN_ERR_SHAPE, KILN_STATUS_SHAPE);
SAME(KILN_ERR_DTYPE, KILN_STATUS_DTYPE);
SAME(KILN_ERR_HOST_OOM, KILN_STATUS_HOST_OOM);
SAME(KILN_ERR_DEVICE_OOM, KILN_STATUS_DEVICE_OOM);
SAME(KILN_ERR_CONFIG, KILN_STATUS_CONFIG);
SAME(KILN_ERR_UNIMPLEMENTED, KILN_STATUS_UNIMPLEMENTED);
SAME(KILN_ERR_INTERNAL, KILN_STATUS_INTERNAL);
SAME(KILN_ERR_IO, KILN_STATUS_IO);
SAME(KILN_ERR_BACKEND, KILN_STATUS_BACKEND);
SAME(KILN_ERR_CONSUMED, KILN_STATUS_CONSUMED);
SAME(KILN_ALLOC_DEFAULT, KILN_ALLOC_MODE_DEFAULT);
SAME(KILN_ALLOC_GROW, KILN_ALLOC_MODE_GROW);
SAME(KILN_ALLOC_PREALLOCATE, KILN_ALLOC_MODE_PREALLOCATE);
SAME(KILN_ALLOC_PLATFORM, KILN_ALLOC_MODE_PLATFORM);
SAME(KILN_INVALID_DTYPE, KILN_DTYPE_INVALID);
SAME(KILN_F32, KILN_DTYPE_F32);
SAME(KILN_F64, KILN_DTYPE_F64);
SAME(KILN_I32, KILN_DTYPE_I32);
SAME(KILN_I64, KILN_DTYPE_I64);
SAME(KILN_BOOL, KILN_DTYPE_BOOL);
SAME(KILN_BUFFER_ARGUMENT, KILN_BUFFER_KIND_ARGUMENT);
SAME(KILN_BUFFER_CONSTANT, KILN_BUFFER_KIND_CONSTANT);
SAME(KILN_BUFFER_OUTPUT, KILN_BUFFER_KIND_OUTPUT);
SAME(KILN_BUFFER_TEMP, KILN_BUFFER_KIND_TEMP);
SAME(KILN_BUFFER_SCRATCH, KILN_BUFFER_KIND_SCRATCH);
SAME(KILN_PLACE_ARGUMENT, KILN_BUFFER_PLACE_ARGUMENT);
SAME(KILN_PLACE_CONSTANT, KILN_BUFFER_PLACE_CONSTANT);
SAME(KILN_PLACE_OUTPUT, KILN_BUFFER_PLACE_OUTPUT);
SAME(KILN_PLACE_ARENA, KILN_BUFFER_PLACE_ARENA);
SAME(KILN_PLACE_DONATED, KILN_BUFFER_PLACE_DONATED);
/* The old type name is the new type. */
_Static_assert(sizeof(kiln_compare_dir) == sizeof(kiln_cmp), "kiln_compare_dir is not kiln_cmp");

/* x < 2, traced with the old names as the old header's users wrote it. */
static kiln_graph *less_than_two(kiln_context *ctx) {
    kiln_graph *g;
    if (kiln_graph_create(ctx, "old_names", &g) != KILN_OK) return NULL;
    int64_t n = 4;
    kiln_value x = kiln_parameter(g, "x", KILN_F32, 1, &n);
    kiln_compare_dir dir = KILN_CMP_LT;
    kiln_value y = kiln_compare(g, kiln_exp(g, x), kiln_scalar(g, KILN_F32, 2.0), dir);
    kiln_value z = kiln_convert(g, y, KILN_F32);
    if (kiln_graph_finish(g, 1, &z) != KILN_OK) {
        fprintf(stderr, "%s\n", kiln_last_error(ctx));
        kiln_graph_destroy(g);
        return NULL;
    }
    return g;
}

/* The memory analysis and every buffer's entry, read the old way and the new. */
static void check_plan(kiln_executable *e) {
    kiln_memory_analysis old_a, new_a;
    memset(&old_a, 0, sizeof old_a);
    memset(&new_a, 0, sizeof new_a);
    CHECK(kiln_executable_memory_analysis(e, &old_a) == KILN_OK);
    CHECK(kiln_executable_get_memory_analysis(e, &new_a) == KILN_STATUS_OK);
    CHECK(old_a.peak_bytes == new_a.peak_bytes && old_a.num_buffers == new_a.num_buffers);
    CHECK(old_a.num_steps == new_a.num_steps && old_a.temp_bytes == new_a.temp_bytes);
    CHECK(old_a.num_buffers > 0);
    for (int i = 0; i < new_a.num_buffers; i++) {
        kiln_buffer_info ob, nb;
        CHECK(kiln_executable_buffer_info(e, i, &ob) == KILN_OK);
        CHECK(kiln_executable_get_buffer_info(e, i, &nb) == KILN_STATUS_OK);
        CHECK(ob.node == nb.node && ob.kind == nb.kind && ob.place == nb.place);
        CHECK(ob.bytes == nb.bytes && ob.offset == nb.offset && ob.dtype == nb.dtype);
        if (ob.kind == KILN_BUFFER_ARGUMENT) CHECK(ob.place == KILN_PLACE_ARGUMENT);
    }
    kiln_buffer_info bad;
    CHECK(kiln_executable_buffer_info(e, new_a.num_buffers, &bad) == KILN_ERR_INVALID_ARGUMENT);
}

/* The allocator's figures and report, read the old way and the new. */
static void check_device(kiln_context *ctx) {
    kiln_memory_stats os, ns;
    CHECK(kiln_device_memory_stats(ctx, 0, &os) == KILN_OK);
    CHECK(kiln_device_get_memory_stats(ctx, 0, &ns) == KILN_STATUS_OK);
    CHECK(os.bytes_in_use == ns.bytes_in_use && os.num_allocs == ns.num_allocs);
    CHECK(os.mode == ns.mode && os.mode == KILN_ALLOC_GROW);
    CHECK(kiln_device_memory_stats(ctx, 99, &os) == KILN_ERR_INVALID_ARGUMENT);
    char *old_r = kiln_device_memory_summary(ctx, 0), *new_r = kiln_device_memory_report(ctx, 0);
    CHECK(old_r && new_r && strcmp(old_r, new_r) == 0);
    kiln_string_free(ctx, old_r);
    kiln_string_free(ctx, new_r);
    CHECK(kiln_device_memory_summary(ctx, 99) == NULL);
}

int main(void) {
    kiln_context_options opts = {0};
    opts.ignore_environment = true;
    opts.alloc_mode = KILN_ALLOC_GROW;
    kiln_context *ctx;
    char err[256];
    if (kiln_context_create(&opts, &ctx, err, sizeof err) != KILN_OK) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    const kiln_dtype dtypes[] = {KILN_INVALID_DTYPE, KILN_F32, KILN_F64,
                                 KILN_I32,           KILN_I64, KILN_BOOL};
    for (int i = 0; i < 6; i++) CHECK(kiln_dtype_size(dtypes[i]) == kiln_dtype_itemsize(dtypes[i]));
    CHECK(kiln_dtype_size(KILN_F64) == 8 && kiln_dtype_size(KILN_INVALID_DTYPE) == 0);

    /* A shape error reads as the old status, and an old program's error path still works. */
    kiln_graph *bad;
    CHECK(kiln_graph_create(ctx, "bad", &bad) == KILN_OK);
    int64_t d2 = 2, d3 = 3;
    kiln_value a = kiln_parameter(bad, "a", KILN_F32, 1, &d2);
    kiln_value b = kiln_parameter(bad, "b", KILN_F32, 1, &d3);
    kiln_value c = kiln_add(bad, a, b);
    CHECK(kiln_graph_finish(bad, 1, &c) == KILN_ERR_SHAPE);
    kiln_graph_destroy(bad);

    kiln_graph *g = less_than_two(ctx);
    CHECK(g != NULL);
    kiln_executable *e = NULL;
    if (g && kiln_compile(g, &(kiln_compile_options){.keep_ir = true}, &e) != KILN_OK) {
        fprintf(stderr, "%s\n", kiln_last_error(ctx));
        failures++;
    }
    if (e) {
        check_plan(e);
        /* Run it, then free the arrays through a pointer to the old function, as a program
         * that registered it as a destructor does. */
        void (*free_array)(kiln_array *) = kiln_array_free;
        int64_t n = 4;
        const float in[4] = {-1, 0, 0.5f, 1};
        kiln_array *x = NULL, *y = NULL;
        CHECK(kiln_array_create(ctx, KILN_F32, 1, &n, in, &x) == KILN_OK);
        CHECK(kiln_executable_run(e, 1, &x, 1, &y) == KILN_OK);
        float out[4] = {0};
        CHECK(y && kiln_array_copy_to_host(y, out, sizeof out) == KILN_OK);
        CHECK(out[0] == 1 && out[1] == 1 && out[2] == 1 && out[3] == 0); /* e^1 > 2 */
        check_device(ctx);
        kiln_memory_stats before, after;
        kiln_device_get_memory_stats(ctx, 0, &before);
        free_array(y);
        kiln_array_free(x);
        kiln_device_get_memory_stats(ctx, 0, &after);
        CHECK(after.num_live_allocs + 2 == before.num_live_allocs);
        kiln_executable_destroy(e);
    }
    kiln_graph_destroy(g);
    kiln_context_destroy(ctx);
    printf("deprecated_names: %s\n", failures ? "FAILED" : "every old name means its new one");
    return failures ? 1 : 0;
}
