/* array.c — array objects (see array.h): handles in host memory, bytes in device memory. */
#include "array.h"
#include "backend/device.h"

#include <string.h>

/* Checks the type and makes the handle, without storage. */
static kiln_status new_handle(kiln_context *ctx, const char *what, kiln_dtype dtype,
                              const ir_shape *s, kiln_array **out) {
    *out = NULL;
    char t[IR_TYPE_STR_MAX];
    if (!ir_dtype_valid(dtype))
        return ctx_error(ctx, KILN_STATUS_DTYPE, "%s: dtype %d is not a kiln_dtype", what, dtype);
    if (s->rank < 0 || s->rank > KILN_MAX_RANK)
        return ctx_error(ctx, KILN_STATUS_SHAPE, "%s: rank %d is outside [0, %d]", what, s->rank,
                         KILN_MAX_RANK);
    for (int i = 0; i < s->rank; i++)
        if (s->dims[i] < 0)
            return ctx_error(ctx, KILN_STATUS_SHAPE, "%s: dimension %d of %s is negative", what, i,
                             ir_type_str(dtype, s, t, sizeof t));
    size_t bytes;
    if (!ir_shape_nbytes(s, dtype, &bytes))
        return ctx_error(ctx, KILN_STATUS_SHAPE, "%s: the byte size of %s overflows", what,
                         ir_type_str(dtype, s, t, sizeof t));
    kiln_array *a = host_calloc(ctx, 1, sizeof *a);
    if (!a) return ctx_oom(ctx, what, sizeof *a);
    a->ctx = ctx;
    a->dtype = dtype;
    a->shape = *s;
    a->nbytes = bytes;
    *out = a;
    return KILN_STATUS_OK;
}

kiln_status array_new_empty(kiln_context *ctx, const char *what, kiln_dtype dtype,
                            const ir_shape *s, kiln_array **out) {
    return new_handle(ctx, what, dtype, s, out);
}

kiln_status array_new_on(kiln_context *ctx, const char *what, int device, kiln_dtype dtype,
                         const ir_shape *s, kiln_array **out) {
    kiln_array *a;
    kiln_status st = new_handle(ctx, what, dtype, s, &a);
    if (st) return st;
    a->device = device;
    /* the allocator keeps the first 23 bytes of the tag: `what` names the maker */
    if (a->nbytes && (st = device_alloc(&ctx->devices[a->device], a->nbytes, what, &a->data))) {
        host_free(ctx, a, sizeof *a);
        return st;
    }
    *out = a;
    return KILN_STATUS_OK;
}

kiln_status array_new(kiln_context *ctx, const char *what, kiln_dtype dtype, const ir_shape *s,
                      kiln_array **out) {
    return array_new_on(ctx, what, 0, dtype, s, out);
}

void array_release(kiln_array *a) {
    if (a->data) device_free(&a->ctx->devices[a->device], a->data);
    a->data = NULL;
}

kiln_status array_check_live(const kiln_array *a, const char *op, int index) {
    if (!a->consumed) return KILN_STATUS_OK;
    char t[IR_TYPE_STR_MAX], at[32] = "";
    if (index >= 0) snprintf(at, sizeof at, " argument %d:", index);
    return ctx_error(a->ctx, KILN_STATUS_CONSUMED,
                     "%s:%s the array %s was donated to %s and is consumed; its buffer now "
                     "belongs to that call's results (use the outputs, or do not donate it)",
                     op, at, ir_type_str(a->dtype, &a->shape, t, sizeof t), a->consumed_by);
}

/* Bool arrays hold 0 or 1: data's other nonzero bytes become 1 on the way in. */
static kiln_status fill(kiln_array *a, const void *data) {
    kiln_context *ctx = a->ctx;
    kn_device *dev = &ctx->devices[a->device];
    bool host = !dev->backend->copy_h2d;
    if (!a->nbytes) return KILN_STATUS_OK;
    if (host && data) memcpy(a->data, data, a->nbytes);
    if (host && !data) memset(a->data, 0, a->nbytes);
    if (host && a->dtype == KILN_DTYPE_BOOL)
        for (size_t i = 0; i < a->nbytes; i++)
            ((uint8_t *)a->data)[i] = ((uint8_t *)a->data)[i] != 0;
    if (host) return KILN_STATUS_OK;
    if (data && a->dtype != KILN_DTYPE_BOOL) return device_copy_h2d(dev, a->data, data, a->nbytes);
    uint8_t *tmp = host_calloc(ctx, a->nbytes, 1); /* zeros, or the normalised bools */
    if (!tmp) return ctx_oom(ctx, "kiln_array_create: staging", a->nbytes);
    for (size_t i = 0; data && i < a->nbytes; i++) tmp[i] = ((const uint8_t *)data)[i] != 0;
    kiln_status s = device_copy_h2d(dev, a->data, tmp, a->nbytes);
    host_free(ctx, tmp, a->nbytes);
    return s;
}

kiln_status array_create_on(kiln_context *ctx, int device, kiln_dtype dtype, int rank,
                            const int64_t *dims, const void *data, kiln_array **out) {
    const char *op = "kiln_array_create";
    if (!ctx) return KILN_STATUS_INVALID_ARGUMENT;
    if (!out) return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "%s: out is NULL", op);
    *out = NULL;
    if (!device_get(ctx, device, op)) return KILN_STATUS_INVALID_ARGUMENT;
    if (rank < 0 || rank > KILN_MAX_RANK)
        return ctx_error(ctx, KILN_STATUS_SHAPE, "%s: rank %d is outside [0, %d]", op, rank,
                         KILN_MAX_RANK);
    if (rank && !dims)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "%s: dims is NULL for rank %d", op,
                         rank);
    ir_shape s = {.rank = rank};
    for (int i = 0; i < rank; i++) s.dims[i] = dims[i];
    kiln_array *a;
    kiln_status st = array_new_on(ctx, op, device, dtype, &s, &a);
    if (st) return st;
    if ((st = fill(a, data))) {
        kiln_array_destroy(a);
        return st;
    }
    *out = a;
    return KILN_STATUS_OK;
}

kiln_status kiln_array_create(kiln_context *ctx, kiln_dtype dtype, int rank, const int64_t *dims,
                              const void *data, kiln_array **out) {
    return array_create_on(ctx, 0, dtype, rank, dims, data, out);
}

void kiln_array_destroy(kiln_array *a) {
    if (!a) return;
    array_release(a);
    host_free(a->ctx, a, sizeof *a);
}

kiln_status kiln_array_copy_to_host(const kiln_array *a, void *dst, size_t size) {
    if (!a) return KILN_STATUS_INVALID_ARGUMENT;
    kiln_status s = array_check_live(a, "kiln_array_copy_to_host", -1);
    if (s) return s;
    if (size != a->nbytes) {
        char t[IR_TYPE_STR_MAX];
        return ctx_error(a->ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "kiln_array_copy_to_host: the array %s holds %zu bytes, the buffer %zu",
                         ir_type_str(a->dtype, &a->shape, t, sizeof t), a->nbytes, size);
    }
    if (size && !dst)
        return ctx_error(a->ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "kiln_array_copy_to_host: dst is NULL");
    return device_copy_d2h(&a->ctx->devices[a->device], dst, a->data, size);
}

kiln_dtype kiln_array_dtype(const kiln_array *a) {
    return a ? a->dtype : KILN_DTYPE_INVALID;
}
int kiln_array_rank(const kiln_array *a) {
    return a ? a->shape.rank : -1;
}
int64_t kiln_array_dim(const kiln_array *a, int axis) {
    if (!a || axis < 0 || axis >= a->shape.rank) return -1;
    return a->shape.dims[axis];
}
int64_t kiln_array_size(const kiln_array *a) {
    int64_t n = 0;
    if (a) ir_shape_numel(&a->shape, &n);
    return n;
}
size_t kiln_array_nbytes(const kiln_array *a) {
    return a ? a->nbytes : 0;
}
bool kiln_array_is_consumed(const kiln_array *a) {
    return a && a->consumed;
}
