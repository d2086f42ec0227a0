/* array.h — arrays: a dtype, a shape and storage in device memory.
 *
 * Storage comes from the array's device allocator, tagged with what made it, so the
 * allocator's stats and out-of-memory reports see every array.
 *
 * Invariants: data holds exactly nbytes, from device_alloc on ctx->devices[device] (its
 * device_host_alloc for an array of the pinned_host memory kind) (NULL
 * when nbytes == 0 or the array is consumed); a consumed array (donated to a call) keeps
 * its dtype and shape but never gets storage back; consumed_by names the program.
 *
 * Asynchronous mode (queue.h): the handle is reference-counted: the user's reference, plus
 * one per task in flight that reads or writes it, so destroying it with work in flight
 * only drops the user's; the last reference frees it, on whichever thread. `ready` is the
 * event of the task that writes its contents (NULL: written when it was made), set before
 * the handle is published and never changed, so a reader only waits for it. `last_read` is
 * the last copy enqueued that reads it (guarded by its device's copy queue): a run that
 * donates the array waits for it before writing over the bytes. data itself is written by
 * a task only for an output that takes over a donated buffer, before the task's event
 * completes; everyone else reads it after waiting for `ready`. */
#ifndef KILN_ARRAY_H
#define KILN_ARRAY_H

#include "backend/queue.h"
#include "ir/ir.h"

struct kiln_array {
    kiln_context *ctx;
    atomic_int refs;
    kn_event *ready;     /* owned reference; NULL: ready */
    kn_event *last_read; /* owned reference; NULL: no copy reads it */
    kiln_dtype dtype;
    ir_shape shape;
    size_t nbytes;
    void *data;
    int device;
    int memory_kind; /* kiln_memory_kind: the device's own memory, or its pinned_host pool */
    bool consumed;
    char consumed_by[48]; /* "'mlp' (argument 0)": for the error message */
    char name[32];        /* kiln_array_create_named's name, cut to fit; "" if none (a jit
                           * names the parameters it traces after their arrays) */
};

/* Makes an uninitialised array of the given type (for the interpreter and executables);
 * sets the context's message on failure, naming `what`. */
kiln_status array_new(kiln_context *ctx, const char *what, kiln_dtype dtype, const ir_shape *s,
                      kiln_array **out);
/* The same on context device `device` (checked by the caller). */
kiln_status array_new_on(kiln_context *ctx, const char *what, int device, kiln_dtype dtype,
                         const ir_shape *s, kiln_array **out);
/* The same in memory kind `kind` of that device (its pinned_host pool for
 * KILN_MEMORY_PINNED_HOST: KILN_STATUS_UNIMPLEMENTED with a message when it has none). */
kiln_status array_new_in(kiln_context *ctx, const char *what, int device, int kind,
                         kiln_dtype dtype, const ir_shape *s, kiln_array **out);
/* Makes the handle only (data NULL): for an output that will take over a donated buffer
 * (of memory kind `kind`). */
kiln_status array_new_empty(kiln_context *ctx, const char *what, int device, int kind,
                            kiln_dtype dtype, const ir_shape *s, kiln_array **out);
/* The array's bytes are host memory this thread may read and write (a host-memory device's,
 * or any device's pinned_host kind). */
bool array_host_addressable(const kiln_array *a);
/* Frees the storage (not the handle). */
void array_release(kiln_array *a);
/* One more reference (a task's), and dropping one: the last frees storage and handle. */
void array_ref(kiln_array *a);
void array_unref(kiln_array *a);
/* KILN_STATUS_CONSUMED with a message naming `op` and argument `index` (-1: none) if a was
 * donated to an earlier call; else KILN_STATUS_OK. */
kiln_status array_check_live(const kiln_array *a, const char *op, int index);
/* KILN_STATUS_INVALID_ARGUMENT with a message on ctx naming `op` and argument `index` if a
 * belongs to another context than ctx; else KILN_STATUS_OK. Every call that takes arrays
 * together with an object of a context (graph, executable, jit) checks this first: a
 * donated array of another context would hand that context's memory to this one's
 * outputs, and an array's device index means nothing in another context's table. */
kiln_status array_check_owner(const kiln_array *a, kiln_context *ctx, const char *op, int index);

#endif
