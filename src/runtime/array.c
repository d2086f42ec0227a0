/* array.c — array objects (see array.h): handles in host memory, bytes in device memory;
 * placing them on devices, copying between devices and to the host, and waiting for them.
 *
 * A copy in asynchronous mode is a task on a copy queue: from the host, on the destination
 * device's queue; between devices, on the source device's, so that every task that reads
 * an array runs on one of its own device's two queues and a run that donates it has only
 * the last copy of that queue (last_read) to wait for. The destination's memory is taken
 * when the copy is enqueued, so its OOM is reported by the call that asks. */
#include "array.h"
#include "backend/device.h"

#include <string.h>

/* Checks the type and makes the handle, without storage. The shape obeys the builder's
 * rules (ir_check_shape: extent at most 2^62, zeros counted as 1), so an array can always
 * be passed for a parameter of its type, and no shape exists only as an array. */
static kiln_status new_handle(kiln_context *ctx, const char *what, kiln_dtype dtype,
                              const ir_shape *s, kiln_array **out) {
    *out = NULL;
    char t[IR_TYPE_STR_MAX], why[160];
    if (!ir_dtype_valid(dtype))
        return ctx_error(ctx, KILN_STATUS_DTYPE, "%s: dtype %d is not a kiln_dtype", what, dtype);
    if (s->rank < 0 || s->rank > KILN_MAX_RANK)
        return ctx_error(ctx, KILN_STATUS_SHAPE, "%s: rank %d is outside [0, %d]", what, s->rank,
                         KILN_MAX_RANK);
    kiln_status st = ir_check_shape(s, dtype, why, sizeof why);
    if (st) return ctx_error(ctx, st, "%s: %s: %s", what, ir_type_str(dtype, s, t, sizeof t), why);
    size_t bytes;
    ir_shape_nbytes(s, dtype, &bytes);
    kiln_array *a = host_calloc(ctx, 1, sizeof *a);
    if (!a) return ctx_oom(ctx, what, sizeof *a);
    a->ctx = ctx;
    atomic_init(&a->refs, 1);
    a->dtype = dtype;
    a->shape = *s;
    a->nbytes = bytes;
    *out = a;
    return KILN_STATUS_OK;
}

kiln_status array_new_empty(kiln_context *ctx, const char *what, int device, int kind,
                            kiln_dtype dtype, const ir_shape *s, kiln_array **out) {
    kiln_status st = new_handle(ctx, what, dtype, s, out);
    if (!st) (*out)->device = device, (*out)->memory_kind = kind;
    return st;
}

/* As array_new_in, its storage tagged `tag` (the user's name for it) rather than `what`. */
static kiln_status new_tagged(kiln_context *ctx, const char *what, const char *tag, int device,
                              int kind, kiln_dtype dtype, const ir_shape *s, kiln_array **out) {
    kiln_array *a;
    kiln_status st = new_handle(ctx, what, dtype, s, &a);
    if (st) return st;
    a->device = device;
    a->memory_kind = kind;
    kn_device *d = &ctx->devices[device];
    /* the allocator keeps the first 23 bytes of the tag: it names the maker or the array */
    if (a->nbytes &&
        (st = kind == KILN_MEMORY_PINNED_HOST ? device_host_alloc(ctx, d, a->nbytes, tag, &a->data)
                                              : device_alloc(d, a->nbytes, tag, &a->data))) {
        host_free(ctx, a, sizeof *a);
        return st;
    }
    *out = a;
    return KILN_STATUS_OK;
}

kiln_status array_new_in(kiln_context *ctx, const char *what, int device, int kind,
                         kiln_dtype dtype, const ir_shape *s, kiln_array **out) {
    return new_tagged(ctx, what, what, device, kind, dtype, s, out);
}

kiln_status array_new_on(kiln_context *ctx, const char *what, int device, kiln_dtype dtype,
                         const ir_shape *s, kiln_array **out) {
    return new_tagged(ctx, what, what, device, KILN_MEMORY_DEVICE, dtype, s, out);
}

bool array_host_addressable(const kiln_array *a) {
    return a->memory_kind == KILN_MEMORY_PINNED_HOST ||
           !a->ctx->devices[a->device].backend->copy_h2d;
}

kiln_status array_new(kiln_context *ctx, const char *what, kiln_dtype dtype, const ir_shape *s,
                      kiln_array **out) {
    return array_new_on(ctx, what, 0, dtype, s, out);
}

void array_release(kiln_array *a) {
    kn_device *d = &a->ctx->devices[a->device];
    if (a->data && a->memory_kind == KILN_MEMORY_PINNED_HOST)
        device_host_free(d, a->data);
    else if (a->data)
        device_free(d, a->data);
    a->data = NULL;
}

void array_ref(kiln_array *a) {
    atomic_fetch_add_explicit(&a->refs, 1, memory_order_relaxed);
}

void array_unref(kiln_array *a) {
    if (atomic_fetch_sub_explicit(&a->refs, 1, memory_order_acq_rel) != 1) return;
    array_release(a);
    event_unref(a->ready);
    event_unref(a->last_read);
    host_free(a->ctx, a, sizeof *a);
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

kiln_status array_check_owner(const kiln_array *a, kiln_context *ctx, const char *op, int index) {
    if (a->ctx == ctx) return KILN_STATUS_OK;
    return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                     "%s: argument %d belongs to another context (an array is used only with "
                     "the context that made it; to move data between contexts, copy it to the "
                     "host and create an array from it)",
                     op, index);
}

/* The checks every creation call makes, and the shape. */
static kiln_status check_create(kiln_context *ctx, const char *op, int device, int rank,
                                const int64_t *dims, kiln_array **out, ir_shape *s) {
    if (!out) return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "%s: out is NULL", op);
    *out = NULL;
    if (!device_get(ctx, device, op)) return KILN_STATUS_INVALID_ARGUMENT;
    if (rank < 0 || rank > KILN_MAX_RANK)
        return ctx_error(ctx, KILN_STATUS_SHAPE, "%s: rank %d is outside [0, %d]", op, rank,
                         KILN_MAX_RANK);
    if (rank && !dims)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "%s: dims is NULL for rank %d", op,
                         rank);
    *s = (ir_shape){.rank = rank};
    for (int i = 0; i < rank; i++) s->dims[i] = dims[i];
    return KILN_STATUS_OK;
}

/* Bools are stored 0/1 whatever the caller's bytes were. */
static void normalise_bools(kiln_array *a, const uint8_t *src) {
    uint8_t *tmp = a->data; /* host-addressable: only called for host-memory devices */
    for (size_t i = 0; i < a->nbytes; i++) tmp[i] = src[i] != 0;
}

/* The creation calls: name (NULL: none) tags the storage, so OOM reports and memory
 * summaries show it. */
static kiln_status create(kiln_context *ctx, const char *op, const char *name, int device, int kind,
                          kiln_dtype dtype, int rank, const int64_t *dims, const void *data,
                          kiln_array **out) {
    if (!ctx) return KILN_STATUS_INVALID_ARGUMENT;
    ir_shape s;
    kiln_status st = check_create(ctx, op, device, rank, dims, out, &s);
    if (st) return st;
    if (name && !*name)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "%s: the name is empty", op);
    if (!ir_memory_kind_name(kind))
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "%s: memory kind %d is not a kiln_memory_kind (KILN_MEMORY_DEVICE or "
                         "KILN_MEMORY_PINNED_HOST)",
                         op, kind);
    kiln_array *a;
    if ((st = new_tagged(ctx, op, name ? name : op, device, kind, dtype, &s, &a))) return st;
    if (name) snprintf(a->name, sizeof a->name, "%s", name);
    kn_device *d = &ctx->devices[device];
    if (a->nbytes && array_host_addressable(a)) {
        if (!data)
            memset(a->data, 0, a->nbytes);
        else if (dtype == KILN_DTYPE_BOOL)
            normalise_bools(a, data);
        else
            memcpy(a->data, data, a->nbytes);
    } else if (a->nbytes) { /* memory the host cannot address: stage the bytes */
        uint8_t *tmp = host_calloc(ctx, 1, a->nbytes);
        if (!tmp) st = ctx_oom(ctx, op, a->nbytes);
        for (size_t i = 0; tmp && data && i < a->nbytes; i++)
            tmp[i] = dtype == KILN_DTYPE_BOOL ? ((const uint8_t *)data)[i] != 0
                                              : ((const uint8_t *)data)[i];
        if (!st) st = device_copy_h2d(d, a->data, tmp, a->nbytes);
        if (tmp) host_free(ctx, tmp, a->nbytes);
        if (st) {
            array_unref(a);
            return st;
        }
    }
    *out = a;
    return KILN_STATUS_OK;
}

kiln_status kiln_array_create_on(kiln_context *ctx, int device, kiln_dtype dtype, int rank,
                                 const int64_t *dims, const void *data, kiln_array **out) {
    return create(ctx, device ? "kiln_array_create_on" : "kiln_array_create", NULL, device,
                  KILN_MEMORY_DEVICE, dtype, rank, dims, data, out);
}

kiln_status kiln_array_create_in_memory(kiln_context *ctx, int device, kiln_memory_kind kind,
                                        kiln_dtype dtype, int rank, const int64_t *dims,
                                        const void *data, kiln_array **out) {
    return create(ctx, "kiln_array_create_in_memory", NULL, device, (int)kind, dtype, rank, dims,
                  data, out);
}

kiln_status kiln_array_create(kiln_context *ctx, kiln_dtype dtype, int rank, const int64_t *dims,
                              const void *data, kiln_array **out) {
    return kiln_array_create_on(ctx, 0, dtype, rank, dims, data, out);
}

kiln_status kiln_array_create_named(kiln_context *ctx, const char *name, int device,
                                    kiln_dtype dtype, int rank, const int64_t *dims,
                                    const void *data, kiln_array **out) {
    if (ctx && !name)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "kiln_array_create_named: name is NULL");
    return create(ctx, "kiln_array_create_named", name, device, KILN_MEMORY_DEVICE, dtype, rank,
                  dims, data, out);
}

/* ----------------------------------------------------------- copies ---- */

/* A copy in flight: the bytes come from host memory (src_array NULL) or from an array. */
typedef struct copy_task {
    kn_task t;
    kiln_array *dst, *src_array; /* references */
    const void *src_host;
} copy_task;

static kiln_status copy_exec(kn_task *t) {
    copy_task *c = (copy_task *)t;
    kiln_array *dst = c->dst, *src = c->src_array;
    kiln_context *ctx = dst->ctx;
    kn_device *to = &ctx->devices[dst->device];
    if (!src) return device_copy_h2d(to, dst->data, c->src_host, dst->nbytes);
    kiln_status s = KILN_STATUS_OK;
    if (src->ready)
        s = event_depend(ctx, src->ready,
                         "the copy from %s to %s did not run: its source comes "
                         "from work that failed",
                         ctx->devices[src->device].name, to->name);
    if (!s && src->memory_kind == KILN_MEMORY_PINNED_HOST) /* host bytes to the device */
        s = device_copy_h2d(to, dst->data, src->data, dst->nbytes);
    else if (!s)
        s = device_copy(ctx, to, dst->data, &ctx->devices[src->device], src->data, dst->nbytes);
    return s;
}

static void copy_release(kn_task *t) {
    copy_task *c = (copy_task *)t;
    kiln_context *ctx = c->dst->ctx;
    array_unref(c->dst);
    if (c->src_array) array_unref(c->src_array);
    event_unref(t->ev);
    host_free(ctx, c, sizeof *c);
}

/* Enqueues the copy into dst (made, with its storage, and not yet published) on q. The
 * task holds references to both arrays; dst's ready event is the task's. On failure dst is
 * left to the caller. */
static kiln_status copy_enqueue(kn_queue *q, kiln_array *dst, kiln_array *src, const void *host) {
    kiln_context *ctx = dst->ctx;
    copy_task *c = host_calloc(ctx, 1, sizeof *c);
    if (!c) return ctx_oom(ctx, "enqueueing a copy", sizeof *c);
    kiln_status s = event_new(ctx, q, &c->t.ev);
    if (s) {
        host_free(ctx, c, sizeof *c);
        return s;
    }
    c->t.exec = copy_exec;
    c->t.release = copy_release;
    c->dst = dst;
    c->src_array = (kiln_array *)src;
    c->src_host = host;
    dst->ready = c->t.ev;
    event_ref(c->t.ev);
    array_ref(dst);
    if (src) array_ref(c->src_array);
    kn_event *ev = c->t.ev; /* dst's reference keeps it: the task may be gone after submit */
    if ((s = queue_submit(q, &c->t))) {
        dst->ready = NULL;
        event_unref(c->t.ev); /* dst's; copy_release drops the task's references */
        copy_release(&c->t);
        return s;
    }
    if (src) event_unref(queue_event_swap(q, &((kiln_array *)src)->last_read, ev));
    return KILN_STATUS_OK;
}

kiln_status kiln_array_create_async(kiln_context *ctx, int device, kiln_dtype dtype, int rank,
                                    const int64_t *dims, const void *data, kiln_array **out) {
    const char *op = "kiln_array_create_async";
    if (!ctx) return KILN_STATUS_INVALID_ARGUMENT;
    ir_shape s;
    kiln_status st = check_create(ctx, op, device, rank, dims, out, &s);
    if (st) return st;
    if (!data) return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "%s: data is NULL", op);
    kn_device *d = &ctx->devices[device];
    if (!d->copy || dtype == KILN_DTYPE_BOOL) /* bools are normalised on the way in */
        return kiln_array_create_on(ctx, device, dtype, rank, dims, data, out);
    kiln_array *a;
    if ((st = array_new_on(ctx, op, device, dtype, &s, &a))) return st;
    if (a->nbytes && (st = copy_enqueue(d->copy, a, NULL, data))) {
        array_unref(a);
        return st;
    }
    *out = a;
    return KILN_STATUS_OK;
}

kiln_status kiln_array_copy_to_device(const kiln_array *a, int device, kiln_array **out) {
    const char *op = "kiln_array_copy_to_device";
    if (!a) return KILN_STATUS_INVALID_ARGUMENT;
    kiln_context *ctx = a->ctx;
    if (!out) return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "%s: out is NULL", op);
    *out = NULL;
    kn_device *to = device_get(ctx, device, op);
    if (!to) return KILN_STATUS_INVALID_ARGUMENT;
    kiln_status s = array_check_live(a, op, -1);
    if (s) return s;
    kiln_array *b;
    if ((s = array_new_on(ctx, op, device, a->dtype, &a->shape, &b))) return s;
    kn_device *from = &ctx->devices[a->device];
    if (!b->nbytes) {
        /* nothing to copy, nothing to wait for */
    } else if (from->copy) {
        s = copy_enqueue(from->copy, b, (kiln_array *)a, NULL);
    } else if (a->memory_kind == KILN_MEMORY_PINNED_HOST) {
        s = device_copy_h2d(to, b->data, a->data, b->nbytes);
    } else {
        s = device_copy(ctx, to, b->data, from, a->data, b->nbytes);
    }
    if (s) {
        array_unref(b);
        return s;
    }
    *out = b;
    return KILN_STATUS_OK;
}

/* Same device, the other memory kind (or the same: a copy), made now: the source is waited
 * for, and the device after the copy, so the new array is ready when this returns. */
kiln_status kiln_array_copy_to_memory(const kiln_array *a, kiln_memory_kind kind,
                                      kiln_array **out) {
    const char *op = "kiln_array_copy_to_memory";
    if (!a) return KILN_STATUS_INVALID_ARGUMENT;
    kiln_context *ctx = a->ctx;
    if (!out) return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "%s: out is NULL", op);
    *out = NULL;
    if (!ir_memory_kind_name((int)kind))
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "%s: memory kind %d is not a kiln_memory_kind (KILN_MEMORY_DEVICE or "
                         "KILN_MEMORY_PINNED_HOST)",
                         op, (int)kind);
    kiln_status s = array_check_live(a, op, -1);
    if (s || (a->ready && (s = event_deliver(ctx, a->ready, op)))) return s;
    kiln_array *b;
    if ((s = new_tagged(ctx, op, a->name[0] ? a->name : op, a->device, (int)kind, a->dtype,
                        &a->shape, &b)))
        return s;
    snprintf(b->name, sizeof b->name, "%s", a->name);
    kn_device *d = &ctx->devices[a->device];
    if (!b->nbytes) {
        /* nothing to copy */
    } else if (array_host_addressable(a) && array_host_addressable(b)) {
        memcpy(b->data, a->data, b->nbytes);
    } else if ((int)kind == a->memory_kind) {
        s = device_copy(ctx, d, b->data, d, a->data, b->nbytes);
    } else {
        s = device_copy_kinds(d, b->data, a->data, b->nbytes, kind == KILN_MEMORY_PINNED_HOST);
        if (!s && d->backend->synchronize) s = d->backend->synchronize(d->state, d->index);
    }
    if (s) {
        array_unref(b);
        return s;
    }
    *out = b;
    return KILN_STATUS_OK;
}

int kiln_array_memory_kind(const kiln_array *a) {
    return a ? a->memory_kind : -1;
}

int kiln_array_device(const kiln_array *a) {
    return a ? a->device : -1;
}

kiln_context *kiln_array_context(const kiln_array *a) {
    return a ? a->ctx : NULL;
}

kiln_status kiln_array_block_until_ready(const kiln_array *a) {
    if (!a) return KILN_STATUS_INVALID_ARGUMENT;
    kiln_status s = array_check_live(a, "kiln_array_block_until_ready", -1);
    if (s || !a->ready) return s;
    return event_deliver(a->ctx, a->ready, "kiln_array_block_until_ready");
}
void kiln_array_destroy(kiln_array *a) {
    if (a) array_unref(a);
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
    if (a->ready && (s = event_deliver(a->ctx, a->ready, "kiln_array_copy_to_host"))) return s;
    if (array_host_addressable(a)) {
        if (size) memcpy(dst, a->data, size);
        return KILN_STATUS_OK;
    }
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
