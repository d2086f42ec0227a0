/* run_control.c — a control step (while, scan, cond) during a call: the host drives the
 * loop or picks the branch and runs the sub-graphs' executables (executable.h,
 * "exec_control") over raw buffers: their parameters are the carries, the scanned arrays'
 * slices and the captures where they lie, their outputs the step's results (a stacked y's
 * slice in place), their arena the start of the step's planned scratch. Nothing is
 * allocated on the device during the step, so a call's measured peak is still its plan's.
 *
 * The step's buffers (steps.c): the node's inputs in its layout's order (ir.h), then its
 * results, then its scratch. A loop first copies its initial carries into its result
 * buffers; each iteration the body reads the current carries and writes the next ones:
 * over themselves where the body's plan allows (in_place), else into the other of two
 * buffers (the result's and a spare in the scratch), alternating; at the end a carry left
 * in its spare is copied into its result. A while loop's condition writes its flag into
 * the scratch and the host reads it (a one-byte copy from a GPU, which waits for the
 * device); a cond reads its index the same way. */
#include "executable.h"

#include <string.h>

typedef struct ctl_run {
    kiln_executable *e;
    const exec_control *c;
    void *const *in, *const *res;
    char *scratch;
    void **cur;     /* per carry: where its current value lies */
    void **args;    /* a sub-graph's arguments (the largest parameter list) */
    void **outs;    /* its outputs */
    exec_raw **raw; /* per sub-graph */
} ctl_run;

static kiln_status copy_in(ctl_run *t, void *dst, const void *src, uint64_t bytes) {
    if (!bytes || dst == src) return KILN_STATUS_OK;
    return device_copy(t->e->ctx, t->e->dev, dst, t->e->dev, src, bytes);
}

/* A scalar the host needs (a condition's flag, a branch index) from device memory. */
static kiln_status read_scalar(ctl_run *t, const void *src, void *dst, size_t bytes) {
    if (!t->e->dev->backend->copy_d2h) {
        memcpy(dst, src, bytes);
        return KILN_STATUS_OK;
    }
    return device_copy_d2h(t->e->dev, dst, src, bytes);
}

/* Sub-graph k's captures after its first n arguments. */
static void captures(ctl_run *t, uint32_t k, uint32_t n) {
    const kiln_executable *s = t->c->subs[k];
    for (uint32_t i = n; i < s->n_params; i++) t->args[i] = t->in[t->c->cap_base[k] + i - n];
}

/* The buffer carry j's next value goes to: its own where the body writes it in place, else
 * the one of its two it does not hold now. */
static void *next_of(const ctl_run *t, uint32_t j) {
    const exec_control *c = t->c;
    if (c->in_place[j] || !c->res_bytes[j]) return t->cur[j];
    void *spare = t->scratch + c->spare_at[j];
    return t->cur[j] == t->res[j] ? spare : t->res[j];
}

/* One run of the body (sub-graph k) over the current carries and `extra` further
 * arguments already in args; outputs past the carries go to outs as set by the caller. */
static kiln_status body_step(ctl_run *t, uint32_t k, uint32_t extra) {
    const exec_control *c = t->c;
    for (uint32_t j = 0; j < c->n_carry; j++) t->args[j] = t->cur[j], t->outs[j] = next_of(t, j);
    captures(t, k, c->n_carry + extra);
    kiln_status s = exec_raw_run(t->raw[k], t->args, t->outs, t->scratch);
    for (uint32_t j = 0; j < c->n_carry && !s; j++) t->cur[j] = t->outs[j];
    return s;
}

static kiln_status start_carries(ctl_run *t) {
    kiln_status s = KILN_STATUS_OK;
    for (uint32_t j = 0; j < t->c->n_carry && !s; j++) {
        t->cur[j] = t->res[j];
        s = copy_in(t, t->res[j], t->in[j], t->c->res_bytes[j]);
    }
    return s;
}

static kiln_status end_carries(ctl_run *t) {
    kiln_status s = KILN_STATUS_OK;
    for (uint32_t j = 0; j < t->c->n_carry && !s; j++)
        s = copy_in(t, t->res[j], t->cur[j], t->c->res_bytes[j]);
    return s;
}

static kiln_status run_while(ctl_run *t) {
    const exec_control *c = t->c;
    kiln_status s = start_carries(t);
    void *flag = t->scratch + c->flag_at;
    for (;;) {
        for (uint32_t j = 0; j < c->n_carry; j++) t->args[j] = t->cur[j];
        captures(t, 0, c->n_carry);
        t->outs[0] = flag;
        if (s || (s = exec_raw_run(t->raw[0], t->args, t->outs, t->scratch))) break;
        bool go = false;
        if ((s = read_scalar(t, flag, &go, 1)) || !go) break;
        if ((s = body_step(t, 1, 0))) break;
    }
    return s ? s : end_carries(t);
}

static kiln_status run_scan(ctl_run *t) {
    const exec_control *c = t->c;
    kiln_status s = start_carries(t);
    for (int64_t it = 0; it < c->length && !s; it++) {
        int64_t i = c->reverse ? c->length - 1 - it : it;
        for (uint32_t x = 0; x < c->n_xs; x++) {
            char *base = t->in[c->n_carry + x];
            t->args[c->n_carry + x] = base ? base + (size_t)i * c->x_bytes[x] : NULL;
        }
        for (uint32_t y = c->n_carry; y < c->n_res; y++) {
            char *base = t->res[y];
            t->outs[y] = base ? base + (size_t)i * c->res_bytes[y] : NULL;
        }
        s = body_step(t, 0, c->n_xs);
    }
    return s ? s : end_carries(t);
}

static kiln_status run_cond(ctl_run *t) {
    const exec_control *c = t->c;
    int32_t k = 0;
    kiln_status s = read_scalar(t, t->in[0], &k, sizeof k);
    if (s) return s;
    if (k < 0) k = 0; /* clamped, as lax.switch clamps */
    if ((uint32_t)k >= c->n_subs) k = (int32_t)c->n_subs - 1;
    for (uint32_t j = 0; j < c->n_carry; j++) t->args[j] = t->in[1 + j];
    captures(t, (uint32_t)k, c->n_carry);
    for (uint32_t j = 0; j < c->n_res; j++) t->outs[j] = t->res[j];
    return exec_raw_run(t->raw[k], t->args, t->outs, t->scratch);
}

static void ctl_free(ctl_run *t, size_t n_ptr) {
    kiln_context *ctx = t->e->ctx;
    for (uint32_t k = 0; t->raw && k < t->c->n_subs; k++) exec_raw_end(t->raw[k]);
    if (t->raw) host_free(ctx, t->raw, t->c->n_subs * sizeof *t->raw);
    if (t->cur) host_free(ctx, t->cur, 3 * n_ptr * sizeof *t->cur);
}

kiln_status exec_run_control(kiln_executable *e, const exec_step *st, void *const *bufs) {
    kiln_context *ctx = e->ctx;
    const exec_control *c = &e->ctls[st->ctl];
    ctl_run t = {.e = e, .c = c, .in = bufs, .res = bufs + c->n_in, .scratch = bufs[st->n - 1]};
    size_t n_ptr = c->n_res + c->n_carry + 1;
    for (uint32_t k = 0; k < c->n_subs; k++)
        if (c->subs[k]->n_params + 1 > n_ptr) n_ptr = c->subs[k]->n_params + 1;
    kiln_status s = KILN_STATUS_OK;
    t.cur = host_calloc(ctx, 3 * n_ptr, sizeof *t.cur);
    t.raw = host_calloc(ctx, c->n_subs, sizeof *t.raw);
    if (!t.cur || !t.raw) s = ctx_oom(ctx, "kiln_executable_run: a control step", n_ptr);
    t.args = t.cur ? t.cur + n_ptr : NULL;
    t.outs = t.cur ? t.cur + 2 * n_ptr : NULL;
    for (uint32_t k = 0; k < c->n_subs && !s; k++) s = exec_raw_begin(c->subs[k], &t.raw[k]);
    if (!s) {
        switch (c->op) {
        case IR_WHILE: s = run_while(&t); break;
        case IR_SCAN: s = run_scan(&t); break;
        default: s = run_cond(&t); break;
        }
    }
    ctl_free(&t, n_ptr);
    return s;
}
