/* array.h — arrays: a dtype, a shape and storage. Storage is host memory from the
 * context's host allocator for now; when the device allocator lands it comes from the
 * array's device. Invariant: data holds exactly nbytes (NULL when nbytes == 0). */
#ifndef KILN_ARRAY_H
#define KILN_ARRAY_H

#include "ir/ir.h"

struct kiln_array {
    kiln_context *ctx;
    kiln_dtype dtype;
    ir_shape shape;
    size_t nbytes;
    void *data;
};

/* Makes an uninitialised array of the given type (for the interpreter and executables);
 * sets the context's message on failure, naming `what`. */
kiln_status array_new(kiln_context *ctx, const char *what, kiln_dtype dtype, const ir_shape *s,
                      kiln_array **out);

#endif
