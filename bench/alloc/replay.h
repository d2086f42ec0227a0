/* replay.h — an allocation trace as the replay program holds it: a flat array of events,
 * each naming a slot (a dense small integer standing for one allocation while it lives),
 * so that replaying costs one array index per event whatever allocator is measured. */
#ifndef KILN_BENCH_REPLAY_H
#define KILN_BENCH_REPLAY_H

#include <stddef.h>
#include <stdint.h>

typedef struct event {
    uint32_t slot;
    uint8_t is_alloc;
    size_t size; /* bytes asked for (alloc only) */
} event;

typedef struct trace {
    event *ev;
    size_t n, cap;
    uint32_t n_slots;   /* slots used: 0 .. n_slots-1 */
    uint32_t *free_ids; /* builder: slots free for reuse (a stack) */
    size_t n_free, free_cap;
    uint64_t live, peak_live; /* requested bytes live now and at most */
    size_t *slot_size;        /* builder: the size in each live slot */
    size_t slot_cap;
} trace;

/* Builder: records an allocation (returns its slot) or the free of a slot. */
uint32_t trace_alloc(trace *t, size_t size);
void trace_free(trace *t, uint32_t slot);
void trace_release(trace *t);

/* Synthetic traces (synth.c). name: uniform, pow2, training. false: unknown name. */
int synth_make(const char *name, uint64_t seed, trace *t);

#endif
