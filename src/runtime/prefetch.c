/* prefetch.c — the double-buffered input pipeline (kiln_prefetch_* in kiln.h).
 *
 * `depth` slots, each a set of host staging buffers (one per array of a batch) and the
 * arrays of the batch last copied from them. Batch k lives in slot k % depth. Staging a
 * batch waits for the slot's previous copy to have read the buffers (its arrays' ready
 * events), fills them on the caller's thread, then enqueues one kiln_array_create_async
 * per array: the copies run on the device's copy queue while the compute queue runs the
 * steps the caller enqueued. The first kiln_prefetch_next stages batches 0 .. depth-1;
 * each call hands out batch k and stages batch k + depth in its place.
 *
 * Invariants: a slot's arrays are held by the pipeline until they are handed out (the
 * reference passes to the caller) after their copy has read the staging buffers, or until
 * the pipeline is destroyed (which waits for those copies), so the staging bytes are never
 * rewritten while a copy may still read them; a failed call hands nothing out; `end` is the first
 * step fill reported missing (INT64_MAX until then), and nothing at or past it is staged. */
#include "array.h"
#include "backend/device.h"

#include <string.h>

#define PREFETCH_MAX_ARRAYS 16
#define PREFETCH_MAX_DEPTH  8

typedef struct prefetch_slot {
    void *host[PREFETCH_MAX_ARRAYS];
    kiln_array *arrays[PREFETCH_MAX_ARRAYS]; /* the pipeline's references; NULL: empty */
} prefetch_slot;

struct kiln_prefetch {
    kiln_context *ctx;
    kiln_prefetch_options o;
    kiln_arg_spec specs[PREFETCH_MAX_ARRAYS];
    size_t sizes[PREFETCH_MAX_ARRAYS];
    prefetch_slot slots[PREFETCH_MAX_DEPTH];
    int64_t next; /* the batch the next call hands out */
    int64_t end;  /* the first batch that does not exist */
    bool primed;
};

static kiln_status check_options(kiln_context *ctx, const kiln_prefetch_options *o, size_t *sizes) {
    const char *op = "kiln_prefetch_create";
    if (!o || !o->fill || !o->specs)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "%s: opts, opts->fill and opts->specs are required", op);
    if (o->n_arrays < 1 || o->n_arrays > PREFETCH_MAX_ARRAYS)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "%s: n_arrays %d is outside [1, %d]",
                         op, o->n_arrays, PREFETCH_MAX_ARRAYS);
    if (o->depth < 0 || o->depth > PREFETCH_MAX_DEPTH)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "%s: depth %d is outside [0, %d] (0: 2)", op, o->depth,
                         PREFETCH_MAX_DEPTH);
    if (!device_get(ctx, o->device, "kiln_prefetch_create: opts->device"))
        return KILN_STATUS_INVALID_ARGUMENT;
    for (int i = 0; i < o->n_arrays; i++) {
        const kiln_arg_spec *sp = &o->specs[i];
        ir_shape s = {.rank = sp->rank};
        bool ok = ir_dtype_valid(sp->dtype) && sp->rank >= 0 && sp->rank <= KILN_MAX_RANK;
        for (int d = 0; ok && d < sp->rank; d++) ok = (s.dims[d] = sp->dims[d]) >= 0;
        if (!ok || !ir_shape_nbytes(&s, sp->dtype, &sizes[i]))
            return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                             "%s: specs[%d] is not a dtype and a shape of known sizes (rank %d)",
                             op, i, sp->rank);
    }
    return KILN_STATUS_OK;
}

kiln_status kiln_prefetch_create(kiln_context *ctx, const kiln_prefetch_options *opts,
                                 kiln_prefetch **out) {
    if (!ctx) return KILN_STATUS_INVALID_ARGUMENT;
    if (!out)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "kiln_prefetch_create: out is NULL");
    *out = NULL;
    size_t sizes[PREFETCH_MAX_ARRAYS];
    kiln_status s = check_options(ctx, opts, sizes);
    if (s) return s;
    kiln_prefetch *p = host_calloc(ctx, 1, sizeof *p);
    if (!p) return ctx_oom(ctx, "kiln_prefetch_create", sizeof *p);
    p->ctx = ctx;
    p->o = *opts;
    if (!p->o.depth) p->o.depth = 2;
    memcpy(p->specs, opts->specs, (size_t)opts->n_arrays * sizeof *p->specs);
    memcpy(p->sizes, sizes, sizeof sizes);
    p->o.specs = p->specs;
    p->end = INT64_MAX;
    for (int k = 0; k < p->o.depth; k++)
        for (int i = 0; i < p->o.n_arrays; i++)
            if (p->sizes[i] && !(p->slots[k].host[i] = host_alloc(ctx, p->sizes[i]))) {
                kiln_prefetch_destroy(p);
                return ctx_oom(ctx, "kiln_prefetch_create: staging buffer", sizes[i]);
            }
    *out = p;
    return KILN_STATUS_OK;
}

/* Waits until the slot's copies have read the staging buffers, and lets go of its arrays.
 * A failed copy is not this pipeline's to report: the caller holds the array and hears of
 * it when it synchronises. */
static void slot_drain(kiln_prefetch *p, prefetch_slot *sl) {
    for (int i = 0; i < p->o.n_arrays; i++) {
        kiln_array *a = sl->arrays[i];
        if (!a) continue;
        if (a->ready) event_wait(a->ready);
        array_unref(a);
        sl->arrays[i] = NULL;
    }
}

/* Fills batch `step` into its slot and enqueues its copies. */
static kiln_status stage(kiln_prefetch *p, int64_t step) {
    if (step >= p->end) return KILN_STATUS_OK;
    prefetch_slot *sl = &p->slots[step % p->o.depth];
    slot_drain(p, sl);
    int rc = p->o.fill(p->o.user, step, sl->host, p->sizes);
    if (rc == 1) {
        p->end = step;
        return KILN_STATUS_OK;
    }
    if (rc != 0)
        return ctx_error(p->ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "kiln_prefetch_next: the fill function failed for batch %lld (it "
                         "returned %d)",
                         (long long)step, rc);
    for (int i = 0; i < p->o.n_arrays; i++) {
        const kiln_arg_spec *sp = &p->specs[i];
        static const char zero = 0; /* an empty array has no staging buffer */
        kiln_status s = kiln_array_create_async(p->ctx, p->o.device, sp->dtype, sp->rank, sp->dims,
                                                sl->host[i] ? sl->host[i] : &zero, &sl->arrays[i]);
        if (s) {
            slot_drain(p, sl);
            return s;
        }
    }
    return KILN_STATUS_OK;
}

kiln_status kiln_prefetch_next(kiln_prefetch *p, kiln_array **batch, bool *end) {
    if (!p) return KILN_STATUS_INVALID_ARGUMENT;
    if (!batch || !end)
        return ctx_error(p->ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "kiln_prefetch_next: batch and end are required");
    *end = false;
    kiln_status s = KILN_STATUS_OK;
    for (int64_t k = 0; !p->primed && k < p->o.depth && !s; k++) s = stage(p, k);
    if (s) return s;
    p->primed = true;
    if (p->next >= p->end) {
        *end = true;
        return KILN_STATUS_OK;
    }
    prefetch_slot *sl = &p->slots[p->next % p->o.depth];
    if (!sl->arrays[0]) /* an earlier call failed to stage it: try again */
        if ((s = stage(p, p->next))) return s;
    if (p->next >= p->end) {
        *end = true;
        return KILN_STATUS_OK;
    }
    /* Batch k leaves its slot once its copy has read the staging buffers, and the batch
     * depth steps ahead is staged there. When that fails, batch k goes back: nothing is
     * handed out, and the next call tries both again. */
    kiln_array *mine[PREFETCH_MAX_ARRAYS];
    int na = p->o.n_arrays;
    memcpy(mine, sl->arrays, (size_t)na * sizeof *mine);
    for (int i = 0; i < na; i++)
        if (mine[i]->ready) event_wait(mine[i]->ready);
    memset(sl->arrays, 0, (size_t)na * sizeof *mine);
    if ((s = stage(p, p->next + p->o.depth))) {
        memcpy(sl->arrays, mine, (size_t)na * sizeof *mine);
        return s;
    }
    memcpy(batch, mine, (size_t)na * sizeof *mine); /* the pipeline's references, now yours */
    p->next++;
    return KILN_STATUS_OK;
}

void kiln_prefetch_destroy(kiln_prefetch *p) {
    if (!p) return;
    for (int k = 0; k < p->o.depth; k++) {
        slot_drain(p, &p->slots[k]);
        for (int i = 0; i < p->o.n_arrays; i++)
            if (p->slots[k].host[i]) host_free(p->ctx, p->slots[k].host[i], p->sizes[i]);
    }
    host_free(p->ctx, p, sizeof *p);
}
