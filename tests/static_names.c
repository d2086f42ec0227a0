/* static_names.c — a program that defines names kiln uses internally links with the public
 * libkiln.a, and kiln keeps calling its own: the archive's internal symbols are local.
 * Were they global, this file would not link (multiple definitions of sha256, ...).
 * Uses only the public header, as a user's program does. */
#include "kiln.h"

#include <stdio.h>
#include <string.h>

/* The user's own functions, with the names (and unrelated meanings) of kiln internals. */
static int user_calls;
void sha256(const char *who);
void *host_alloc(size_t n);
int array_new(int x);
int ctx_error(int code);
int config_resolve(void);
void sha256(const char *who) {
    (void)who;
    user_calls++;
}
void *host_alloc(size_t n) {
    (void)n;
    user_calls++;
    return NULL;
}
int array_new(int x) {
    user_calls++;
    return x;
}
int ctx_error(int code) {
    user_calls++;
    return code;
}
int config_resolve(void) {
    user_calls++;
    return 0;
}

static int failed;
#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) failed++, fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond);          \
    } while (0)

int main(void) {
    /* no disk cache: this test leaves nothing behind */
    kiln_context_options o = {.ignore_environment = true, .cache_max_bytes = -1};
    kiln_context *ctx = NULL;
    char err[512];
    if (kiln_context_create(&o, &ctx, err, sizeof err) != KILN_STATUS_OK) {
        fprintf(stderr, "static_names: %s\n", err);
        return 1;
    }
    /* kiln's array_new, host_alloc and ctx_error run here, not the ones above. */
    float data[6] = {1, 2, 3, 4, 5, 6}, back[6] = {0};
    int64_t dims[2] = {2, 3};
    kiln_array *a = NULL;
    EXPECT(kiln_array_create(ctx, KILN_DTYPE_F32, 2, dims, data, &a) == KILN_STATUS_OK);
    EXPECT(kiln_array_copy_to_host(a, back, sizeof back) == KILN_STATUS_OK);
    EXPECT(memcmp(data, back, sizeof data) == 0);
    kiln_array_destroy(a);
    EXPECT(kiln_array_create(ctx, KILN_DTYPE_F32, 99, dims, data, &a) == KILN_STATUS_SHAPE);
    EXPECT(strstr(kiln_last_error(ctx), "rank 99") != NULL);

    /* A graph through the reference interpreter, then compiled. */
    kiln_graph *g = NULL;
    EXPECT(kiln_graph_create(ctx, "names", &g) == KILN_STATUS_OK);
    if (g) {
        kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, dims);
        kiln_value y = kiln_reduce_sum(g, kiln_mul(g, x, x), 0, NULL, false);
        EXPECT(kiln_graph_finish(g, 1, &y) == KILN_STATUS_OK);
        EXPECT(kiln_array_create(ctx, KILN_DTYPE_F32, 2, dims, data, &a) == KILN_STATUS_OK);
        kiln_array *out = NULL;
        EXPECT(kiln_interpret(g, 1, &a, 1, &out) == KILN_STATUS_OK);
        float sum = 0;
        EXPECT(out && kiln_array_copy_to_host(out, &sum, sizeof sum) == KILN_STATUS_OK);
        EXPECT(sum == 91);
        kiln_array_destroy(out);
        /* Compiled: kiln hashes the generated source with its own sha256. */
        kiln_executable *e = NULL;
        EXPECT(kiln_compile(g, NULL, &e) == KILN_STATUS_OK);
        out = NULL, sum = 0;
        EXPECT(e && kiln_executable_run(e, 1, &a, 1, &out) == KILN_STATUS_OK);
        EXPECT(out && kiln_array_copy_to_host(out, &sum, sizeof sum) == KILN_STATUS_OK);
        EXPECT(sum == 91);
        kiln_array_destroy(out);
        kiln_executable_destroy(e);
        kiln_array_destroy(a);
        kiln_graph_destroy(g);
    }
    kiln_context_destroy(ctx);
    EXPECT(user_calls == 0);
    printf("static_names: %s\n", failed ? "FAILED" : "ok");
    return failed != 0;
}
