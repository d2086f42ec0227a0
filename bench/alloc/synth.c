/* synth.c — synthetic allocation traces for bench/alloc, deterministic for a given seed.
 *
 *   uniform   random alloc/free over 4096 slots, sizes uniform in [256 B, 64 KiB]
 *   pow2      random alloc/free over 1024 slots, sizes 2^k for k uniform in [8, 20]
 *   training  a training loop over a small transformer (8 layers, batch 4 x 128 tokens,
 *             width 512): parameters made once, then 400 steps of forward (activations
 *             kept for the backward pass, small temporaries and workspaces freed at once),
 *             backward (activation gradients short-lived, weight gradients kept until the
 *             optimizer) and an optimizer step. Shapes are static, as they are under jit.
 *
 * The trace builder also keeps the peak of requested bytes, the denominator of every
 * fragmentation figure: what an ideal allocator would need. */
#include "replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

static void *grow_array(void *p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return p;
    size_t c = *cap ? *cap : 1024;
    while (c < need) c *= 2;
    void *q = realloc(p, c * elem);
    if (!q) {
        fprintf(stderr, "replay: out of host memory building a trace\n");
        exit(2);
    }
    *cap = c;
    return q;
}

uint32_t trace_alloc(trace *t, size_t size) {
    uint32_t slot = t->n_free ? t->free_ids[--t->n_free] : t->n_slots++;
    t->ev = grow_array(t->ev, &t->cap, t->n + 1, sizeof *t->ev);
    t->ev[t->n++] = (event){.slot = slot, .is_alloc = 1, .size = size};
    t->slot_size = grow_array(t->slot_size, &t->slot_cap, (size_t)slot + 1, sizeof(size_t));
    t->slot_size[slot] = size;
    t->live += size;
    if (t->live > t->peak_live) t->peak_live = t->live;
    return slot;
}

void trace_free(trace *t, uint32_t slot) {
    t->ev = grow_array(t->ev, &t->cap, t->n + 1, sizeof *t->ev);
    t->ev[t->n++] = (event){.slot = slot, .is_alloc = 0};
    t->free_ids = grow_array(t->free_ids, &t->free_cap, t->n_free + 1, sizeof(uint32_t));
    t->free_ids[t->n_free++] = slot;
    t->live -= t->slot_size[slot];
}

void trace_release(trace *t) {
    free(t->ev);
    free(t->free_ids);
    free(t->slot_size);
    memset(t, 0, sizeof *t);
}

static uint64_t rnd(uint64_t *s) {
    *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1Dull;
}

/* Random alloc/free over `slots` slots: half of them live on average. */
static void gen_random(trace *t, uint64_t *rng, int slots, size_t events, int pow2) {
    uint32_t *id = calloc((size_t)slots, sizeof *id);
    unsigned char *used = calloc((size_t)slots, 1);
    while (t->n < events) {
        int i = (int)(rnd(rng) % (uint64_t)slots);
        if (used[i]) {
            trace_free(t, id[i]);
            used[i] = 0;
            continue;
        }
        size_t size = pow2 ? (size_t)1 << (8 + rnd(rng) % 13) : 256 + rnd(rng) % (64 * KIB - 255);
        id[i] = trace_alloc(t, size);
        used[i] = 1;
    }
    for (int i = 0; i < slots; i++)
        if (used[i]) trace_free(t, id[i]);
    free(id);
    free(used);
}

/* ----------------------------------------------------------- training ---- */

enum { LAYERS = 8, BATCH = 4, SEQ = 128, WIDTH = 512, FF = 2048, HEADS = 8, VOCAB = 8192 };
#define F32 4

/* One op of the forward pass: its output (kept for backward or not), the small temporaries
 * it makes (reductions, masks) and the size of the weight whose gradient backward makes. */
typedef struct op {
    size_t out, weight;
    int temps, saved;
} op;

static int layer_ops(op *ops) {
    const size_t tok = (size_t)BATCH * SEQ, act = tok * WIDTH * F32;
    int n = 0;
    ops[n++] = (op){act, 2 * WIDTH * F32, 2, 1};                       /* layer norm 1 */
    ops[n++] = (op){3 * act, (size_t)WIDTH * 3 * WIDTH * F32, 0, 1};   /* qkv projection */
    ops[n++] = (op){(size_t)BATCH * HEADS * SEQ * SEQ * F32, 0, 3, 1}; /* scores, softmax */
    ops[n++] = (op){act, 0, 0, 1};                                     /* probs @ v */
    ops[n++] = (op){act, (size_t)WIDTH * WIDTH * F32, 0, 1};           /* out projection */
    ops[n++] = (op){act, 0, 0, 1};                                     /* residual add */
    ops[n++] = (op){act, 2 * WIDTH * F32, 2, 1};                       /* layer norm 2 */
    ops[n++] = (op){tok * FF * F32, (size_t)WIDTH * FF * F32, 0, 1};   /* mlp up */
    ops[n++] = (op){tok * FF * F32, 0, 1, 1};                          /* gelu */
    ops[n++] = (op){act, (size_t)FF * WIDTH * F32, 0, 1};              /* mlp down */
    ops[n++] = (op){act, 0, 0, 1};                                     /* residual add */
    return n;
}

/* Small temporaries: reductions and masks, a few bytes to 64 KiB, freed at once. */
static void temporaries(trace *t, uint64_t *rng, int n) {
    uint32_t s[8];
    for (int i = 0; i < n; i++) s[i] = trace_alloc(t, 64 + rnd(rng) % (64 * KIB));
    for (int i = n - 1; i >= 0; i--) trace_free(t, s[i]);
}

static void training_step(trace *t, uint64_t *rng) {
    op ops[16];
    int per = layer_ops(ops);
    uint32_t saved[LAYERS][16], wgrad[LAYERS][16];
    uint32_t tokens = trace_alloc(t, (size_t)BATCH * SEQ * 4);
    uint32_t x = trace_alloc(t, (size_t)BATCH * SEQ * WIDTH * F32); /* embedding */
    for (int l = 0; l < LAYERS; l++)
        for (int i = 0; i < per; i++) {
            temporaries(t, rng, ops[i].temps);
            if (i == 1 || i == 7) trace_free(t, trace_alloc(t, 256 * KIB)); /* gemm workspace */
            saved[l][i] = trace_alloc(t, ops[i].out);
        }
    uint32_t logits = trace_alloc(t, (size_t)BATCH * SEQ * VOCAB * F32);
    temporaries(t, rng, 3);                                            /* loss */
    uint32_t grad = trace_alloc(t, (size_t)BATCH * SEQ * VOCAB * F32); /* d logits */
    trace_free(t, logits);
    uint32_t g = trace_alloc(t, (size_t)BATCH * SEQ * WIDTH * F32);
    trace_free(t, grad);
    for (int l = LAYERS - 1; l >= 0; l--)
        for (int i = per - 1; i >= 0; i--) {
            wgrad[l][i] = ops[i].weight ? trace_alloc(t, ops[i].weight) : UINT32_MAX;
            temporaries(t, rng, ops[i].temps);
            uint32_t gin = trace_alloc(t, ops[i > 0 ? i - 1 : per - 1].out); /* d input */
            trace_free(t, g);
            trace_free(t, saved[l][i]);
            g = gin;
        }
    trace_free(t, g);
    trace_free(t, x);
    trace_free(t, tokens);
    for (int l = 0; l < LAYERS; l++) /* optimizer: update in place, drop the gradients */
        for (int i = 0; i < per; i++)
            if (wgrad[l][i] != UINT32_MAX) {
                temporaries(t, rng, 1);
                trace_free(t, wgrad[l][i]);
            }
}

static void gen_training(trace *t, uint64_t *rng, int steps) {
    op ops[16];
    int per = layer_ops(ops);
    uint32_t params[LAYERS * 16 + 1], n = 0;
    params[n++] = trace_alloc(t, (size_t)VOCAB * WIDTH * F32); /* embedding table */
    for (int l = 0; l < LAYERS; l++)
        for (int i = 0; i < per; i++)
            if (ops[i].weight) params[n++] = trace_alloc(t, ops[i].weight);
    for (int s = 0; s < steps; s++) training_step(t, rng);
    while (n) trace_free(t, params[--n]);
}

int synth_make(const char *name, uint64_t seed, trace *t) {
    memset(t, 0, sizeof *t);
    uint64_t rng = seed * 0x9E3779B97F4A7C15ull + 1;
    if (!strcmp(name, "uniform"))
        gen_random(t, &rng, 4096, 2000000, 0);
    else if (!strcmp(name, "pow2"))
        gen_random(t, &rng, 1024, 2000000, 1);
    else if (!strcmp(name, "training"))
        gen_training(t, &rng, 400);
    else
        return 0;
    return 1;
}
