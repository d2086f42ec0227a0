/* pack.c — placing temporaries: decreasing-size best fit over live intervals, the way
 * XLA's heap simulator (GlobalDecreasingSizeBestFitHeap) packs a program's buffers.
 *
 * A "unit" is what needs bytes of its own: a temporary together with the results written
 * in place over it (they share its bytes, so the unit lives from the first one's
 * definition to the last one's last read), or one kernel's scratch. Units are placed one
 * at a time; for each, the already placed blocks whose intervals overlap its own are
 * swept in offset order, and the unit goes into the smallest gap that holds it (best
 * fit), or on top of them when no gap does, which is what grows the arena.
 *
 * Where the caller donated arguments, their buffers are bins too: a donated buffer is
 * occupied by the argument until its last read (and by whatever in-place chain or output
 * the planner already put there); a unit that fits into a gap of a donated buffer goes
 * there first, since those bytes cost nothing.
 *
 * The order units are placed in matters and no order is best everywhere, so four are
 * tried — largest first, longest-lived first, largest size x lifetime first, earliest
 * first — and the one with the smallest arena is kept (ties: the earlier order). Every
 * order is deterministic: ties fall back to the unit's buffer index. Gaps and offsets are
 * multiples of PLAN_ALIGN; a unit occupies its size rounded up to PLAN_ALIGN.
 *
 * Values in pinned_host memory (host offload) are packed the same way in a second pass,
 * into the host arena: no donated buffer is a bin there, and no device unit is seen. */
#include "plan_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct unit {
    int32_t leader, def, last;
    uint32_t bin;   /* fixed units: their bin; else set by the packer */
    bool fixed;     /* already placed (an in-place chain in a donated buffer, an output) */
    uint64_t size;  /* exact bytes (what must fit) */
    uint64_t rsize; /* bytes occupied: size rounded up to PLAN_ALIGN */
    uint64_t off;
} unit;

typedef struct packer {
    const plan_ctx *c;
    plan_cand *cand;
    unit *u;         /* units then fixed blocks */
    uint32_t nu, nf; /* movable units, fixed blocks after them */
    uint32_t *bins;  /* bin -> parameter index + 1 for donated bins (bin 0 is the arena) */
    uint64_t *cap;   /* bin -> capacity (UINT64_MAX for the arena) */
    uint32_t nbins;
    const unit **tmp; /* overlapping blocks of the unit being placed */
    uint32_t *placed; /* indices of units placed so far, then fixed */
    uint32_t n_placed;
    bool host; /* packing the host arena: only host temporaries, no donated bins */
} packer;

static int by_size(const void *a, const void *b) {
    const unit *x = a, *y = b;
    if (x->rsize != y->rsize) return x->rsize > y->rsize ? -1 : 1;
    if (x->def != y->def) return x->def < y->def ? -1 : 1;
    return x->leader < y->leader ? -1 : x->leader > y->leader;
}
static int by_length(const void *a, const void *b) {
    const unit *x = a, *y = b;
    int32_t lx = x->last - x->def, ly = y->last - y->def;
    if (lx != ly) return lx > ly ? -1 : 1;
    return by_size(a, b);
}
static int by_area(const void *a, const void *b) {
    const unit *x = a, *y = b;
    unsigned __int128 ax = (unsigned __int128)x->rsize * (uint64_t)(x->last - x->def + 1);
    unsigned __int128 ay = (unsigned __int128)y->rsize * (uint64_t)(y->last - y->def + 1);
    if (ax != ay) return ax > ay ? -1 : 1;
    return by_size(a, b);
}
static int by_start(const void *a, const void *b) {
    const unit *x = a, *y = b;
    if (x->def != y->def) return x->def < y->def ? -1 : 1;
    return by_size(a, b);
}
static int by_bin_offset(const void *a, const void *b) {
    const unit *x = *(const unit *const *)a, *y = *(const unit *const *)b;
    if (x->bin != y->bin) return x->bin < y->bin ? -1 : 1;
    return x->off < y->off ? -1 : x->off > y->off;
}

typedef struct fit {
    uint32_t bin;
    uint64_t off, gap; /* gap: the free bytes around the chosen spot (best fit: smallest) */
    bool found;
} fit;

/* Sweeps bin `bin`'s blocks (tmp[lo..hi), in offset order) for the best gap holding u. */
static void sweep(const packer *p, uint32_t bin, uint32_t lo, uint32_t hi, const unit *u,
                  uint64_t top, fit *best) {
    uint64_t pos = 0, cap = p->cap[bin];
    for (uint32_t i = lo; i <= hi; i++) {
        uint64_t start = plan_round(pos, PLAN_ALIGN);
        uint64_t end = i < hi ? p->tmp[i]->off : bin == 0 ? top : cap;
        if (end > start && end - start >= u->size && (!best->found || end - start < best->gap)) {
            /* the arena's gap above every block is only a gap up to its current extent */
            *best = (fit){bin, start, end - start, true};
        }
        if (i < hi && p->tmp[i]->off + p->tmp[i]->rsize > pos)
            pos = p->tmp[i]->off + p->tmp[i]->rsize;
    }
    if (bin == 0 && !best->found) *best = (fit){0, plan_round(pos, PLAN_ALIGN), 0, false};
}

/* Places unit u: the best gap in a donated buffer, else the best gap in the arena, else
 * on top of the arena blocks it overlaps. Returns the arena's new extent. */
static uint64_t place(packer *p, unit *u, uint64_t extent) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < p->n_placed; i++) {
        const unit *o = &p->u[p->placed[i]];
        if (o->def <= u->last && u->def <= o->last) p->tmp[n++] = o;
    }
    qsort(p->tmp, n, sizeof *p->tmp, by_bin_offset);
    fit best = {0};
    for (uint32_t b = 1, lo = 0; b < p->nbins; b++) {
        while (lo < n && p->tmp[lo]->bin < b) lo++;
        uint32_t hi = lo;
        while (hi < n && p->tmp[hi]->bin == b) hi++;
        sweep(p, b, lo, hi, u, 0, &best);
    }
    if (!best.found) {
        uint32_t hi = 0;
        while (hi < n && p->tmp[hi]->bin == 0) hi++;
        sweep(p, 0, 0, hi, u, extent, &best);
    }
    u->bin = best.bin;
    u->off = best.off;
    return u->bin == 0 && u->off + u->rsize > extent ? u->off + u->rsize : extent;
}

/* Places every movable unit in the order of `cmp`; returns the arena extent. */
static uint64_t pack_order(packer *p, unit *work, int (*cmp)(const void *, const void *)) {
    memcpy(work, p->u, (size_t)(p->nu + p->nf) * sizeof *work);
    qsort(work, p->nu, sizeof *work, cmp);
    unit *saved = p->u;
    p->u = work;
    p->n_placed = 0;
    for (uint32_t i = 0; i < p->nf; i++) p->placed[p->n_placed++] = p->nu + i;
    uint64_t extent = 0;
    for (uint32_t i = 0; i < p->nu; i++) {
        extent = place(p, &work[i], extent);
        p->placed[p->n_placed++] = i;
    }
    p->u = saved;
    return extent;
}

/* Does buffer x take part in this pass (device buffers, or host temporaries)? Arguments
 * and outputs in pinned_host memory take part in neither: they are the caller's. */
static bool in_pass(const plan_ctx *c, const plan_buffer *x, bool host) {
    return host ? plan_is_host(c, x) : !plan_in_host(c, x);
}

/* Donated parameter p's buffer is a bin of the device pass (a host one never is). */
static bool device_bin(const plan_ctx *c, const plan_cand *cd, uint32_t p) {
    return cd->donor_state[p] != DONOR_NONE && !plan_param_in_host(c, p);
}

/* Counts what the packer needs: movable units, fixed blocks, donated bins. */
static void count_units(const plan_ctx *c, const plan_cand *cd, bool host, uint32_t *nu,
                        uint32_t *nf, uint32_t *nbins) {
    *nu = *nf = 0;
    *nbins = 1;
    for (uint32_t p = 0; p < c->n_params && !host; p++) *nbins += device_bin(c, cd, p);
    for (uint32_t b = 0; b < c->nb; b++) {
        const plan_buffer *x = &cd->buf[b];
        if (!in_pass(c, x, host)) continue;
        bool temp = x->kind == PLAN_K_TEMP || x->kind == PLAN_K_SCRATCH;
        if (temp && x->size && cd->leader[b] == (int32_t)b) {
            if (x->place == PLAN_P_DONATED)
                (*nf)++;
            else
                (*nu)++;
        } else if (!temp && x->place == PLAN_P_DONATED && x->size) {
            (*nf)++;
        } else if (x->kind == PLAN_K_PARAM && x->size && device_bin(c, cd, x->place_index)) {
            (*nf)++;
        }
    }
}

static uint32_t bin_of_param(const packer *p, uint32_t param) {
    for (uint32_t b = 1; b < p->nbins; b++)
        if (p->bins[b] == param) return b;
    return 0;
}

/* Fills the units: movable ones first (leaders' intervals widened over their chains),
 * then the fixed blocks that already occupy donated buffers. */
static void make_units(packer *p, int32_t *unit_of) {
    const plan_ctx *c = p->c;
    plan_cand *cd = p->cand;
    uint32_t nu = 0, nf = 0;
    for (uint32_t b = 0, nb = 1; b < c->n_params && !p->host; b++)
        if (device_bin(c, cd, b)) {
            p->bins[nb] = b;
            p->cap[nb++] = 0;
        }
    p->cap[0] = UINT64_MAX;
    for (uint32_t b = 0; b < c->nb; b++) {
        const plan_buffer *x = &cd->buf[b];
        bool temp = x->kind == PLAN_K_TEMP || x->kind == PLAN_K_SCRATCH;
        unit_of[b] = -1;
        if (!in_pass(c, x, p->host)) continue;
        if (temp && (!x->size || cd->leader[b] != (int32_t)b)) continue;
        bool fixed = x->place == PLAN_P_DONATED ||
                     (x->kind == PLAN_K_PARAM && device_bin(c, cd, x->place_index));
        if (!x->size || (!temp && !fixed)) continue;
        uint32_t at = fixed ? p->nu + nf++ : nu++;
        unit *u = &p->u[at];
        *u = (unit){.leader = (int32_t)b,
                    .def = x->def,
                    .last = x->last,
                    .fixed = fixed,
                    .size = x->size,
                    .rsize = plan_round(x->size, PLAN_ALIGN),
                    .off = x->offset};
        if (fixed) u->bin = bin_of_param(p, x->place_index);
        if (x->kind == PLAN_K_PARAM) p->cap[u->bin] = x->size;
        unit_of[b] = (int32_t)at;
    }
    /* a chain of in-place results lives as long as its last member */
    for (uint32_t b = 0; b < c->nb; b++) {
        int32_t l = cd->leader[b];
        if (l < 0 || l == (int32_t)b || unit_of[l] < 0 || !cd->buf[b].size) continue;
        unit *u = &p->u[unit_of[l]];
        if (cd->buf[b].last > u->last) u->last = cd->buf[b].last;
    }
}

/* Writes the chosen places into the buffers: each member of a unit gets its leader's. */
static void apply(packer *p, const int32_t *unit_of, const unit *best) {
    const plan_ctx *c = p->c;
    plan_cand *cd = p->cand;
    for (uint32_t b = 0; b < c->nb; b++) {
        plan_buffer *x = &cd->buf[b];
        if ((x->kind != PLAN_K_TEMP && x->kind != PLAN_K_SCRATCH) || !in_pass(c, x, p->host))
            continue;
        int32_t l = cd->leader[b];
        plan_place arena = p->host ? PLAN_P_HOST : PLAN_P_ARENA;
        if (!x->size || unit_of[l] < 0) {
            x->place = arena, x->offset = 0;
            continue;
        }
        const unit *u = &best[unit_of[l]];
        x->place = u->bin ? PLAN_P_DONATED : arena;
        x->place_index = u->bin ? p->bins[u->bin] : 0;
        x->offset = u->off;
        uint8_t *st = u->bin ? &cd->donor_state[p->bins[u->bin]] : NULL;
        if (st && (*st == DONOR_FREE || *st == DONOR_UNMATCHED)) *st = DONOR_TEMPS;
    }
}

/* Puts each unit of `work` (sorted) back at its own index, so orders compare alike. */
static void unsort(const packer *p, const unit *work, unit *out, const int32_t *unit_of) {
    for (uint32_t i = 0; i < p->nu + p->nf; i++) out[unit_of[work[i].leader]] = work[i];
}

/* One pass of the packer: the device's buffers, or (host) the host temporaries; returns
 * the extent of its arena in *arena. */
static kiln_status pack_pass(const plan_ctx *c, plan_cand *cd, bool host, uint64_t *arena) {
    static int (*const orders[])(const void *, const void *) = {by_size, by_length, by_area,
                                                                by_start};
    packer p = {.c = c, .cand = cd, .host = host};
    uint32_t nu, nf, nbins;
    count_units(c, cd, host, &nu, &nf, &nbins);
    size_t nt = (size_t)nu + nf;
    unit *work = NULL, *best = NULL;
    int32_t *unit_of = NULL;
    plan_bump bp = {NULL, 0};
    for (int pass = 0; pass < 2; pass++) { /* measure, then carve */
        if (pass && !(bp.base = host_calloc(c->ctx, 1, bp.used)))
            return ctx_oom(c->ctx, "kiln_compile: buffer packing", bp.used);
        bp.used = 0;
        p.u = plan_take(&bp, nt, sizeof(unit));
        work = plan_take(&bp, nt, sizeof(unit));
        best = plan_take(&bp, nt, sizeof(unit));
        p.tmp = plan_take(&bp, nt, sizeof(unit *));
        p.placed = plan_take(&bp, nt, sizeof(uint32_t));
        p.cap = plan_take(&bp, nbins, sizeof(uint64_t));
        p.bins = plan_take(&bp, nbins, sizeof(uint32_t));
        unit_of = plan_take(&bp, c->nb + 1, sizeof(int32_t));
    }
    p.nu = nu, p.nf = nf, p.nbins = nbins;
    make_units(&p, unit_of);
    uint64_t best_extent = UINT64_MAX;
    for (size_t i = 0; i < sizeof orders / sizeof *orders; i++) {
        uint64_t extent = pack_order(&p, work, orders[i]);
        if (extent < best_extent) {
            best_extent = extent;
            unsort(&p, work, best, unit_of);
        }
    }
    if (nt == 0) best_extent = 0;
    apply(&p, unit_of, best);
    *arena = best_extent;
    host_free(c->ctx, bp.base, bp.used);
    return KILN_STATUS_OK;
}

kiln_status plan_pack(const plan_ctx *c, plan_cand *cd) {
    kiln_status s = pack_pass(c, cd, false, &cd->arena);
    return s ? s : pack_pass(c, cd, true, &cd->host_arena);
}
