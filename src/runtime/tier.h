/* tier.h — tiered compilation (docs/performance.md, "Compile tiers"): a new program runs
 * at once with its LOOP kernels run from their descriptions (tier 1: codegen/kexec.h, no
 * compiler) while the optimised build (tier 2) is compiled on a thread of the context,
 * then swapped in between two calls.
 *
 * kiln_compile asks for tier 2 in the disk cache first (a hit: one tier, nothing in the
 * background), else prepares tier 1 (the kernels the interpreter cannot run with tier 2's
 * bits compiled at once, kx_replays) and, once the executable is complete, queues tier 2
 * here.
 * The context's tier thread compiles the queued programs one after another, each once its
 * first call has finished (or TIER_FIRST_CALL_MS after it was queued), at a lower
 * priority, finds each kernel in the new build and publishes it (exec_tier_code) with one
 * atomic store; a call reads that pointer once, at its start, and runs every kernel from
 * the build it found. Neither build is freed while the executable lives, so a call that
 * started on tier 1 finishes on it. */
#ifndef KILN_RUNTIME_TIER_H
#define KILN_RUNTIME_TIER_H

#include "executable.h"

typedef struct tier_service tier_service;

/* The context's service (its queue; the thread starts with the first job). The message is
 * set on failure (host OOM). */
kiln_status tier_service_create(kiln_context *ctx);
/* Drops the jobs still queued, waits for the one compiling, joins the thread. Before the
 * backends close: the job in progress uses the compiler. NULL service: a no-op. */
void tier_service_destroy(kiln_context *ctx);

/* Whether kiln_compile builds e in tiers: the context's setting is 2 (or 0, the default,
 * and tier_same_bits), e is a whole program
 * (not a loop body or branch), and its backend runs host code (launch_host) and builds in
 * the background (program_compile_tier). */
bool tier_wanted(const kiln_executable *e);
/* Whether e's two tiers would give the same bits (kexec.h): the op library's loops are the
 * machine's clones (kx_same_bits) and e's backend compiles as the library was compiled
 * (tier_same_compiler). The default (compile_tiers 0) has two tiers only then. */
bool tier_same_bits(const kiln_executable *e);
/* Loads e's program: tier 2 from the cache if it is there (*prog), else prepares tier 1,
 * each LOOP kernel run from its description (e->interp), but where the tiers promise the
 * same bits (tier_same_bits) those kx_replays refuses, compiled now into *prog (NULL when
 * there are none; every one: a one-tier program). e->tier says which,
 * and whether tier 2 is still to come. In load_kernels' place of program_compile. */
kiln_status tier_program_compile(kiln_executable *e, kn_program **prog, kn_program_info *info);
/* Queues e's tier-2 build (its source is copied) when e runs tier 1; else nothing.
 * KILN_STATUS_HOST_OOM (message set) when the job cannot be allocated; when the thread
 * cannot start, tier 2 is built at once, on the caller's thread. */
kiln_status tier_schedule(kiln_executable *e, const char *source);
/* A call of e on tier 1 has finished: e's queued build may start (tier.c, TIER_FIRST_CALL_MS).
 * Cheap after the first time. */
void tier_note_run(const kiln_executable *e);
/* kiln_executable_destroy, before it drops the owner's reference: a job of e still queued
 * is dropped, one compiling is waited for (so no job outlives its executable). */
void tier_cancel(kiln_executable *e);
/* Waits until e has no tier-2 build queued or in progress (a test hook; benchmarks that
 * want the steady state). Returns e's tier afterwards: 2, or 1 when tier 2 failed. */
int tier_wait(kiln_executable *e);
/* A test hook: while held, the tier thread starts no job (one in progress finishes), so a
 * test can run calls on tier 1 for certain, then let the swap happen. */
void tier_hold(kiln_context *ctx, bool hold);
/* The tier a call starting now runs (1 or 2). */
int tier_current(const kiln_executable *e);
/* Frees e's tier-1 kernels (executable.c, when e goes). */
void tier_interp_free(kiln_executable *e);
/* Frees e's tier-2 build (executable.c, when e goes). */
void tier_code_free(kiln_executable *e);

#endif
