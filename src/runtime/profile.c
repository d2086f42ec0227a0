/* profile.c — where a compiled program's time goes, kernel by kernel
 * (kiln_executable_set_profiling, KILN_PROFILE; docs/performance.md).
 *
 * While profiling is on, run.c times each kernel of every run (waiting for the device after
 * each one, so an asynchronous device reports its kernels' own time) and adds the time to
 * per-kernel totals here. The totals are atomics: several threads may run the same
 * executable at once, and the report reads them while runs go on. The counters are
 * allocated the first time profiling is turned on and live as long as the executable, so a
 * run that read the flag before it was turned off still has somewhere to add its time.
 *
 * The first profiled run is kept apart (its own counters): it pays one-time work that the
 * runs after it do not, chiefly a GEMM library's first call (oneDNN generates its kernels
 * then, for many times a LLaMA-style block's whole run: bench/RESULTS.md, "The lead was an
 * averaging artifact, not a slow product"), which averaged in made whichever product came
 * first look several times slower in every run.
 * Once another run has finished, the totals, the report's table and the getter count the
 * runs after the first; the report shows the first run's excess on a line of its own.
 * Exactly one run claims "first" (an atomic exchange), however many threads run at once;
 * kiln_executable_profile_reset leaves no first run to set apart (the runs after a reset
 * are warm by intent).
 *
 * What each kernel is (its kind, work and label) is described once when compiling
 * (exec_profile_describe), so the report reads no IR: the executable may have freed it. */
#include "runtime/executable.h"
#include "passes/passes.h"
#include "base/strbuf.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The per-kind totals' names (report_totals) list every fk_kind. */
_Static_assert(FK_NUM_KINDS == 11, "profile.c: a new fk_kind needs its plural name here");

struct exec_profile {
    atomic_uint_fast64_t runs;    /* runs that finished with profiling on, not the first */
    atomic_uint_fast64_t wall_ns; /* their time from the first kernel to the last one's end */
    atomic_uint_fast64_t *ns;     /* per kernel: its time summed over those runs; then, from
                                     ns[n_kernels], the first run's per kernel */
    atomic_bool first_claimed;    /* a run has been (or will never be) the first */
    atomic_bool first_done;       /* the first run finished: first_wall_ns is final */
    atomic_uint_fast64_t first_wall_ns;
    uint32_t n_kernels;
    atomic_uint_fast64_t tier_runs[2]; /* profiled runs per compile tier (1, 2), first included */
};

/* Counters: n_kernels for the runs after the first, n_kernels for the first, at least one. */
static size_t counter_count(uint32_t nk) {
    return nk ? 2 * (size_t)nk : 1;
}

uint64_t exec_profile_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

bool exec_profile_begin_run(kiln_executable *e) {
    return !atomic_exchange_explicit(&e->prof->first_claimed, true, memory_order_relaxed);
}

void exec_profile_add_kernel(kiln_executable *e, uint32_t ki, uint64_t ns, bool first) {
    atomic_fetch_add_explicit(&e->prof->ns[first ? e->prof->n_kernels + ki : ki], ns,
                              memory_order_relaxed);
}

void exec_profile_add_run(kiln_executable *e, uint64_t ns, bool first) {
    if (first) {
        atomic_store_explicit(&e->prof->first_wall_ns, ns, memory_order_relaxed);
        atomic_store_explicit(&e->prof->first_done, true, memory_order_release);
        return;
    }
    atomic_fetch_add_explicit(&e->prof->wall_ns, ns, memory_order_relaxed);
    atomic_fetch_add_explicit(&e->prof->runs, 1, memory_order_relaxed);
}

void exec_profile_add_tier(kiln_executable *e, int tier) {
    atomic_fetch_add_explicit(&e->prof->tier_runs[tier == 1 ? 0 : 1], 1, memory_order_relaxed);
}

/* Tiered compilation (src/runtime/tier.c): which tier the profiled runs ran, for an
 * executable that started on the first one. */
static void report_tiers(const kiln_executable *e, strbuf *sb) {
    if (e->tier != 1) return;
    uint64_t t1 = atomic_load_explicit(&e->prof->tier_runs[0], memory_order_relaxed),
             t2 = atomic_load_explicit(&e->prof->tier_runs[1], memory_order_relaxed);
    sb_printf(sb,
              "  compile tiers: %" PRIu64
              " profiled runs on the kernels' descriptions (tier 1), %" PRIu64
              " on the optimised build (tier 2)%s\n",
              t1, t2,
              atomic_load_explicit(&e->tier_failed, memory_order_relaxed)
                  ? "; the optimised build failed, the descriptions stay"
                  : "");
}

void exec_profile_free(kiln_executable *e) {
    exec_profile *p = e->prof;
    if (!p) return;
    host_free(e->ctx, p->ns, counter_count(p->n_kernels) * sizeof *p->ns);
    host_free(e->ctx, p, sizeof *p);
    e->prof = NULL;
}

kiln_status kiln_executable_set_profiling(kiln_executable *e, bool on) {
    if (!e) return exec_null_object("kiln_executable_set_profiling", "executable", 0, NULL);
    if (on && !e->prof) {
        uint32_t nk = e->n_kernels;
        exec_profile *p = host_calloc(e->ctx, 1, sizeof *p);
        atomic_uint_fast64_t *ns = p ? host_calloc(e->ctx, counter_count(nk), sizeof *ns) : NULL;
        if (!ns) {
            if (p) host_free(e->ctx, p, sizeof *p);
            return ctx_error(e->ctx, KILN_STATUS_HOST_OOM,
                             "kiln_executable_set_profiling: out of host memory for the "
                             "counters of %u kernels",
                             nk);
        }
        p->ns = ns, p->n_kernels = nk;
        e->prof = p;
    }
    atomic_store_explicit(&e->profiling, on, memory_order_release);
    return KILN_STATUS_OK;
}

void kiln_executable_profile_reset(kiln_executable *e) {
    if (!e || !e->prof) return;
    exec_profile *p = e->prof;
    atomic_store_explicit(&p->first_claimed, true, memory_order_relaxed);
    atomic_store_explicit(&p->first_done, false, memory_order_relaxed);
    for (size_t i = 0; i < counter_count(p->n_kernels); i++)
        atomic_store_explicit(&p->ns[i], 0, memory_order_relaxed);
    atomic_store_explicit(&p->first_wall_ns, 0, memory_order_relaxed);
    atomic_store_explicit(&p->wall_ns, 0, memory_order_relaxed);
    atomic_store_explicit(&p->runs, 0, memory_order_relaxed);
    atomic_store_explicit(&p->tier_runs[0], 0, memory_order_relaxed);
    atomic_store_explicit(&p->tier_runs[1], 0, memory_order_relaxed);
}

/* Which runs the figures count, read once so a report or getter is consistent while runs
 * go on: those after the first (first_apart: the first finished and is left out), or the
 * first alone while no other has finished (from_first). runs == 0: none yet. */
typedef struct prof_view {
    uint64_t runs;
    bool from_first, first_apart;
} prof_view;

static prof_view view_of(const exec_profile *p) {
    prof_view v = {.runs = atomic_load_explicit(&p->runs, memory_order_relaxed)};
    bool first = atomic_load_explicit(&p->first_done, memory_order_acquire);
    v.first_apart = first && v.runs;
    v.from_first = first && !v.runs;
    if (v.from_first) v.runs = 1;
    return v;
}

/* Kernel ki's time summed over the counted runs. */
static uint64_t counted_ns(const exec_profile *p, prof_view v, uint32_t ki) {
    return atomic_load_explicit(&p->ns[v.from_first ? p->n_kernels + ki : ki],
                                memory_order_relaxed);
}

typedef struct prof_row {
    uint32_t ki;
    uint64_t ns;         /* summed over the runs */
    double flops, bytes; /* per run (kernel_work) */
} prof_row;

static int by_time_desc(const void *a, const void *b) {
    const prof_row *x = a, *y = b;
    if (x->ns != y->ns) return x->ns < y->ns ? 1 : -1;
    return x->ki < y->ki ? -1 : x->ki > y->ki;
}

kiln_status kiln_executable_get_kernel_profile(const kiln_executable *e, int i,
                                               kiln_kernel_profile *out) {
    if (!e) return exec_null_object("kiln_executable_get_kernel_profile", "executable", 0, NULL);
    if (!out || i < 0 || (uint32_t)i >= e->n_kernels)
        return ctx_error(e->ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "kiln_executable_get_kernel_profile: kernel %d of an executable with "
                         "%u kernels%s",
                         i, e->n_kernels, out ? "" : " (out is NULL)");
    memset(out, 0, sizeof *out);
    const exec_kernel_info *d = &e->kernel_info[i];
    out->kind = fusion_kind_name((fk_kind)d->kind);
    out->num_ops = (int)d->n_members;
    out->flops = d->flops, out->bytes = d->bytes;
    if (e->prof) {
        prof_view v = view_of(e->prof);
        out->runs = v.runs;
        out->seconds = (double)counted_ns(e->prof, v, (uint32_t)i) * 1e-9;
    }
    return KILN_STATUS_OK;
}

static char *profile_report(const kiln_executable *e);

/* The line on the first run, which the figures leave out: its time, how much more it took
 * than the mean of the others, and the (at most three) kernels that took most of that. rows
 * are the counted runs' totals, sorted or not; per_run turns them into ms per run. */
static void report_first_run(const kiln_executable *e, const prof_row *rows, uint32_t nk,
                             double per_run, strbuf *sb) {
    const exec_profile *p = e->prof;
    double first = (double)atomic_load_explicit(&p->first_wall_ns, memory_order_relaxed) * 1e-6;
    double mean = (double)atomic_load_explicit(&p->wall_ns, memory_order_relaxed) * per_run;
    sb_printf(sb,
              "  the first run, left out of these figures: %.3f ms (%+.3f ms against the "
              "others' mean",
              first, first - mean);
    uint32_t top[3];
    double extra[3];
    int n_top = 0;
    for (uint32_t j = 0; j < nk; j++) {
        uint32_t ki = rows[j].ki;
        double x = (double)atomic_load_explicit(&p->ns[nk + ki], memory_order_relaxed) * 1e-6 -
                   (double)rows[j].ns * per_run;
        if (x < 0.001) continue; /* ms: under a microsecond is noise */
        int at = n_top < 3 ? n_top++ : 3;
        while (at > 0 && extra[at - 1] < x) {
            if (at < 3) top[at] = top[at - 1], extra[at] = extra[at - 1];
            at--;
        }
        if (at < 3) top[at] = ki, extra[at] = x;
    }
    for (int i = 0; i < n_top; i++)
        sb_printf(sb, "%s k%u %+.3f ms", i ? "," : "; most in", top[i], extra[i]);
    sb_append(sb, "): one-time work such as a GEMM library's first call\n");
}

char *kiln_executable_profile_report(const kiln_executable *e) {
    if (!e) return NULL;
    char *r = profile_report(e);
    if (!r)
        ctx_error(e->ctx, KILN_STATUS_HOST_OOM,
                  "kiln_executable_profile_report: out of host memory for the report");
    return r;
}

static char *profile_report(const kiln_executable *e) {
    strbuf sb;
    sb_init(&sb, e->ctx);
    uint32_t nk = e->n_kernels;
    prof_view v = e->prof ? view_of(e->prof) : (prof_view){0};
    uint64_t runs = v.runs;
    if (!runs) {
        sb_printf(&sb,
                  "profile: no profiled run yet (%u kernels; turn profiling on with "
                  "kiln_executable_set_profiling or KILN_PROFILE=1, then run)\n",
                  nk);
        return sb_take(&sb);
    }
    prof_row *rows = host_calloc(e->ctx, nk ? nk : 1, sizeof *rows);
    if (!rows) {
        sb.oom = true;
        return sb_take(&sb);
    }
    uint64_t sum = 0, by_kind_ns[FK_NUM_KINDS] = {0};
    double by_kind_flops[FK_NUM_KINDS] = {0}, by_kind_bytes[FK_NUM_KINDS] = {0};
    for (uint32_t i = 0; i < nk; i++) {
        prof_row *r = &rows[i];
        r->ki = i;
        r->ns = counted_ns(e->prof, v, i);
        r->flops = e->kernel_info[i].flops, r->bytes = e->kernel_info[i].bytes;
        sum += r->ns;
        fk_kind kd = (fk_kind)e->kernel_info[i].kind;
        by_kind_ns[kd] += r->ns, by_kind_flops[kd] += r->flops, by_kind_bytes[kd] += r->bytes;
    }
    qsort(rows, nk, sizeof *rows, by_time_desc);
    double per_run = 1e-6 / (double)runs; /* ns summed over runs -> ms per run */
    double wall =
        (double)atomic_load_explicit(v.from_first ? &e->prof->first_wall_ns : &e->prof->wall_ns,
                                     memory_order_relaxed) *
        per_run;
    sb_printf(&sb,
              "profile: %" PRIu64 " runs%s, %.3f ms per run on %s (kernels %.3f ms; the rest is "
              "launch and bookkeeping)\n",
              runs, v.from_first ? " (the first: it may include one-time work)" : "", wall,
              e->dev->name, (double)sum * per_run);
    if (v.first_apart) report_first_run(e, rows, nk, per_run, &sb);
    report_tiers(e, &sb);
    static const char *const kind_names[FK_NUM_KINDS] = {
        "loops", "products",      "scatters",  "scans",        "attention",     "collectives",
        "sorts", "control steps", "transfers", "convolutions", "linear algebra"};
    for (int kd = 0; kd < FK_NUM_KINDS; kd++) {
        if (!by_kind_ns[kd]) continue;
        double ms = (double)by_kind_ns[kd] * per_run;
        sb_printf(&sb, "  %-11s %8.3f ms  %5.1f%%", kind_names[kd], ms,
                  sum ? 100.0 * (double)by_kind_ns[kd] / (double)sum : 0.0);
        if (kd == FK_DOT || kd == FK_ATTENTION || kd == FK_CONV || kd == FK_LINALG)
            sb_printf(&sb, "  %7.1f GFLOP/s", by_kind_flops[kd] / ms * 1e-6);
        else
            sb_printf(&sb, "  %7.1f GB/s", by_kind_bytes[kd] / ms * 1e-6);
        sb_append(&sb, "\n");
    }
    sb_append(&sb, "\n     ms/run   share  cumul.          rate  kernel\n");
    uint64_t cum = 0;
    for (uint32_t j = 0; j < nk; j++) {
        uint32_t i = rows[j].ki;
        double ms = (double)rows[j].ns * per_run, f = rows[j].flops, b = rows[j].bytes;
        cum += rows[j].ns;
        sb_printf(&sb, "  %9.3f  %5.1f%%  %5.1f%%", ms,
                  sum ? 100.0 * (double)rows[j].ns / (double)sum : 0.0,
                  sum ? 100.0 * (double)cum / (double)sum : 0.0);
        if (ms <= 0)
            sb_append(&sb, "              ");
        else if (e->kernel_info[i].kind == FK_DOT || e->kernel_info[i].kind == FK_ATTENTION ||
                 e->kernel_info[i].kind == FK_CONV || e->kernel_info[i].kind == FK_LINALG)
            sb_printf(&sb, "  %6.1f GFLOP/s", f / ms * 1e-6);
        else
            sb_printf(&sb, "  %6.1f GB/s   ", b / ms * 1e-6);
        sb_printf(&sb, "  %s\n", e->kernel_labels + e->kernel_info[i].label);
    }
    host_free(e->ctx, rows, (nk ? nk : 1) * sizeof *rows);
    return sb_take(&sb);
}
