/* array.h — arrays: a dtype, a shape and storage in device memory.
 *
 * Storage comes from the array's device allocator (device 0, the CPU, by default), tagged
 * with what made it, so the allocator's stats and out-of-memory reports see every array.
 *
 * Invariants: data holds exactly nbytes, from device_alloc on ctx->devices[device] (NULL
 * when nbytes == 0 or the array is consumed); a consumed array (donated to a call) keeps
 * its dtype and shape but never gets storage back; consumed_by names the program. */
#ifndef KILN_ARRAY_H
#define KILN_ARRAY_H

#include "ir/ir.h"

struct kiln_array {
    kiln_context *ctx;
    kiln_dtype dtype;
    ir_shape shape;
    size_t nbytes;
    void *data;
    int device;
    bool consumed;
    char consumed_by[48]; /* "'mlp' (argument 0)": for the error message */
};

/* Makes an uninitialised array of the given type (for the interpreter and executables);
 * sets the context's message on failure, naming `what`. */
kiln_status array_new(kiln_context *ctx, const char *what, kiln_dtype dtype, const ir_shape *s,
                      kiln_array **out);
/* The same on context device `device` (checked by the caller). */
kiln_status array_new_on(kiln_context *ctx, const char *what, int device, kiln_dtype dtype,
                         const ir_shape *s, kiln_array **out);
/* kiln_array_create on context device `device` (an index the caller checked or that
 * device_get refuses with a message). Until the public placement API lands, tests and
 * bench/bench_cuda.c place arrays on a GPU with this. */
kiln_status array_create_on(kiln_context *ctx, int device, kiln_dtype dtype, int rank,
                            const int64_t *dims, const void *data, kiln_array **out);
/* Makes the handle only (data NULL): for an output that will take over a donated buffer. */
kiln_status array_new_empty(kiln_context *ctx, const char *what, kiln_dtype dtype,
                            const ir_shape *s, kiln_array **out);
/* Frees the storage (not the handle). */
void array_release(kiln_array *a);
/* KILN_STATUS_CONSUMED with a message naming `op` and argument `index` (-1: none) if a was
 * donated to an earlier call; else KILN_STATUS_OK. */
kiln_status array_check_live(const kiln_array *a, const char *op, int index);

#endif
