/* jit.c — jax.jit for C: a trace function compiled once per input signature.
 *
 * The cache maps a signature key — the device, argument count, each argument's dtype and
 * shape, and the static_args bytes — to an executable. The device is that of the
 * arguments (all on one, or the call is an error naming each argument's), else the
 * compile options' for a call without arguments: a jit compiles once per device it is
 * called on, as jax.jit does. A hit runs the executable directly (no
 * tracing, no compiling); a miss traces the function into a fresh graph, compiles it
 * (which may still find the machine code in the on-disk cache) and keeps it. Lowering
 * (kiln_jit_lower, kiln_jit_lower_shapes) is the same lookup without the run: the
 * signature comes from arrays or from specs through one jit_sig, so a lowering and a
 * later call of the same signature meet in the same entry.
 *
 * Threads: the cache is guarded by a mutex (mu), held only to look up and publish, never
 * while tracing or compiling. A miss puts an entry in the cache at once, marked as being
 * built by its thread: later calls of that signature wait for it (on built), calls of any
 * other cached signature run on. Traces take a second mutex (trace_mu), one at a time per
 * jit as the trace function may not be reentrant; compiles run side by side. The thread
 * tracing is recorded, so that a trace function calling its own jit on a signature that
 * is not built yet is an error, not a deadlock (it never waits: the builder it would wait
 * for may be waiting for its trace); a cached signature it may call. Entries are
 * reference-counted so that kiln_jit_clear from one thread never frees an executable
 * another thread is running; an entry cleared while it is being built is handed to its
 * builder's call alone. The list is kept most recently used first, for max_entries. An
 * executable handed out by a lowering carries a reference of its own (the executable's
 * refcount, not the entry's), so it outlives the entry if the caller keeps it. */
#include "compile.h"

#include <pthread.h>
#include <string.h>

typedef struct jit_entry {
    struct jit_entry *next;
    uint64_t hash;
    size_t key_len;
    unsigned char *key;
    kiln_executable *exe; /* NULL while building */
    int refs;             /* the cache's own reference (once built) + calls holding it */
    bool in_cache;        /* in the list (kiln_jit_clear takes it out) */
} jit_entry;

struct kiln_jit {
    kiln_context *ctx;
    kiln_jit_options o;
    char *name;
    kiln_arg_spec *specs;
    int *donate;              /* a copy of o.compile.donate_argnums */
    pthread_mutex_t mu;       /* entries, stats, tracing, tracer */
    pthread_cond_t built;     /* an entry finished building (or failed) */
    pthread_mutex_t trace_mu; /* one trace at a time */
    bool tracing;             /* a trace function is running, on thread tracer */
    pthread_t tracer;
    jit_entry *entries;
    kiln_jit_stats stats;
};

/* kiln_jit_options.max_entries's default */
#define JIT_DEFAULT_MAX_ENTRIES 256

static uint64_t fnv1a(const unsigned char *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

kiln_status kiln_jit_create(kiln_context *ctx, const kiln_jit_options *opts, kiln_jit **out) {
    if (!ctx) return KILN_STATUS_INVALID_ARGUMENT;
    if (!out || !opts || !opts->fn)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "kiln_jit_create: out, opts and opts->fn are required");
    *out = NULL;
    if (opts->arg_specs && (opts->n_args < 0 || opts->n_args > 4096))
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "kiln_jit_create: n_args %d is out of range", opts->n_args);
    if (opts->max_entries < -1)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "kiln_jit_create: max_entries %d is not -1 (no limit), 0 (the default, "
                         "%d) or a count",
                         opts->max_entries, JIT_DEFAULT_MAX_ENTRIES);
    kiln_jit *j = host_calloc(ctx, 1, sizeof *j);
    if (!j) return ctx_oom(ctx, "kiln_jit_create", sizeof *j);
    j->ctx = ctx;
    j->o = *opts;
    j->name = host_strdup(ctx, opts->name ? opts->name : "jit");
    size_t sb = opts->arg_specs ? (size_t)opts->n_args * sizeof *j->specs : 0;
    if (sb && (j->specs = host_alloc(ctx, sb))) memcpy(j->specs, opts->arg_specs, sb);
    size_t db = opts->compile.n_donate > 0 && opts->compile.donate_argnums
                    ? (size_t)opts->compile.n_donate * sizeof *j->donate
                    : 0;
    if (db && (j->donate = host_alloc(ctx, db)))
        memcpy(j->donate, opts->compile.donate_argnums, db);
    if (!j->name || (sb && !j->specs) || (db && !j->donate)) {
        kiln_jit_destroy(j);
        return ctx_oom(ctx, "kiln_jit_create", sb + db);
    }
    j->o.arg_specs = j->specs;
    j->o.name = j->name;
    j->o.compile.donate_argnums = j->donate;
    if (!j->o.max_entries) j->o.max_entries = JIT_DEFAULT_MAX_ENTRIES;
    pthread_mutex_init(&j->mu, NULL);
    pthread_mutex_init(&j->trace_mu, NULL);
    pthread_cond_init(&j->built, NULL);
    *out = j;
    return KILN_STATUS_OK;
}

static void entry_free(kiln_context *ctx, jit_entry *en) {
    kiln_executable_destroy(en->exe);
    host_free(ctx, en->key, en->key_len);
    host_free(ctx, en, sizeof *en);
}

static void drop_all(kiln_jit *j) {
    for (jit_entry *en = j->entries, *next; en; en = next) {
        next = en->next;
        en->in_cache = false;
        if (en->exe && --en->refs == 0) entry_free(j->ctx, en); /* building: its builder's */
    }
    j->entries = NULL;
    j->stats.entries = j->stats.bytes = 0;
}

void kiln_jit_clear(kiln_jit *j) {
    if (!j) return;
    pthread_mutex_lock(&j->mu);
    drop_all(j);
    pthread_mutex_unlock(&j->mu);
}

void kiln_jit_destroy(kiln_jit *j) {
    if (!j) return;
    kiln_jit_clear(j);
    pthread_mutex_destroy(&j->mu);
    pthread_mutex_destroy(&j->trace_mu);
    pthread_cond_destroy(&j->built);
    if (j->name) host_free(j->ctx, j->name, strlen(j->name) + 1);
    if (j->specs) host_free(j->ctx, j->specs, (size_t)j->o.n_args * sizeof *j->specs);
    if (j->donate) host_free(j->ctx, j->donate, (size_t)j->o.compile.n_donate * sizeof *j->donate);
    host_free(j->ctx, j, sizeof *j);
}

void kiln_jit_get_stats(const kiln_jit *j, kiln_jit_stats *stats) {
    if (!j || !stats) return;
    pthread_mutex_lock((pthread_mutex_t *)&j->mu);
    *stats = j->stats;
    pthread_mutex_unlock((pthread_mutex_t *)&j->mu);
}

/* A signature being called or lowered: the arguments' dtypes and shapes come from arrays
 * (kiln_jit_call, kiln_jit_lower) or from specs (kiln_jit_lower_shapes), so that the
 * cache key and the trace are the same whichever way a signature arrives. */
typedef struct jit_sig {
    const char *op; /* the public call, for messages */
    int n;
    kiln_array *const *args;    /* or ... */
    const kiln_arg_spec *specs; /* ... when args is NULL */
    int device;
    const void *st;
    size_t st_size;
} jit_sig;

static kiln_dtype sig_dtype(const jit_sig *s, int i) {
    return s->args ? s->args[i]->dtype : s->specs[i].dtype;
}
static int sig_rank(const jit_sig *s, int i) {
    return s->args ? s->args[i]->shape.rank : s->specs[i].rank;
}
static const int64_t *sig_dims(const jit_sig *s, int i) {
    return s->args ? s->args[i]->shape.dims : s->specs[i].dims;
}
/* The memory kind of argument i: an array's own (a spec's is the device's). */
static int sig_kind(const jit_sig *s, int i) {
    return s->args ? s->args[i]->memory_kind : KILN_MEMORY_DEVICE;
}

/* Checks the arrays of a call or lowering: present, the jit's context's, not consumed. */
static kiln_status check_arrays(kiln_jit *j, const jit_sig *s) {
    if (s->n < 0 || (s->n && !s->args))
        return ctx_error(j->ctx, KILN_STATUS_INVALID_ARGUMENT, "%s '%s': bad args (%d)", s->op,
                         j->name, s->n);
    for (int i = 0; i < s->n; i++) {
        if (!s->args[i])
            return ctx_error(j->ctx, KILN_STATUS_INVALID_ARGUMENT, "%s '%s': argument %d is NULL",
                             s->op, j->name, i);
        kiln_status st = array_check_owner(s->args[i], j->ctx, s->op, i);
        if (st || (st = array_check_live(s->args[i], s->op, i))) return st;
    }
    return KILN_STATUS_OK;
}

/* Checks the specs of kiln_jit_lower_shapes: each a dtype and a concrete shape, as an
 * array of it could be made (a -1 is for declaring a signature, not for lowering one). */
static kiln_status check_specs(kiln_jit *j, const jit_sig *s) {
    if (s->n < 0 || s->n > 4096 || (s->n && !s->specs))
        return ctx_error(j->ctx, KILN_STATUS_INVALID_ARGUMENT, "%s '%s': %d argument specs%s",
                         s->op, j->name, s->n, s->n > 0 ? " at NULL" : "");
    for (int i = 0; i < s->n; i++) {
        const kiln_arg_spec *sp = &s->specs[i];
        if (!ir_dtype_valid(sp->dtype))
            return ctx_error(j->ctx, KILN_STATUS_DTYPE,
                             "%s '%s': argument %d has dtype %d, not a "
                             "kiln_dtype",
                             s->op, j->name, i, (int)sp->dtype);
        if (sp->rank < 0 || sp->rank > KILN_MAX_RANK)
            return ctx_error(j->ctx, KILN_STATUS_SHAPE, "%s '%s': argument %d has rank %d (0..%d)",
                             s->op, j->name, i, sp->rank, KILN_MAX_RANK);
        ir_shape sh = {.rank = sp->rank};
        for (int d = 0; d < sp->rank; d++) {
            if (sp->dims[d] < 0)
                return ctx_error(j->ctx, KILN_STATUS_SHAPE,
                                 "%s '%s': argument %d has dimension %d of %lld; lowering needs "
                                 "every size (-1 only declares a signature)",
                                 s->op, j->name, i, d, (long long)sp->dims[d]);
            sh.dims[d] = sp->dims[d];
        }
        char why[160];
        kiln_status st = ir_check_shape(&sh, sp->dtype, why, sizeof why);
        if (st)
            return ctx_error(j->ctx, st, "%s '%s': argument %d (%s): %s", s->op, j->name, i,
                             kiln_dtype_name(sp->dtype), why);
    }
    return KILN_STATUS_OK;
}

/* Checks the signature against the declared one, if there is one. */
static kiln_status check_declared(kiln_jit *j, const jit_sig *s) {
    if (!j->specs) return KILN_STATUS_OK;
    if (s->n != j->o.n_args)
        return ctx_error(j->ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "%s '%s': declared with %d arguments, called with %d", s->op, j->name,
                         j->o.n_args, s->n);
    for (int i = 0; i < s->n; i++) {
        const kiln_arg_spec *sp = &j->specs[i];
        kiln_dtype t = sig_dtype(s, i);
        int rank = sig_rank(s, i);
        const int64_t *dims = sig_dims(s, i);
        bool ok = t == sp->dtype && rank == sp->rank;
        for (int d = 0; ok && d < sp->rank; d++) ok = sp->dims[d] < 0 || sp->dims[d] == dims[d];
        if (!ok) {
            char want[IR_TYPE_STR_MAX] = "", got[IR_TYPE_STR_MAX];
            size_t k = (size_t)snprintf(want, sizeof want, "%s[", kiln_dtype_name(sp->dtype));
            for (int d = 0; d < sp->rank && d < KILN_MAX_RANK && k < sizeof want; d++)
                k += sp->dims[d] < 0
                         ? (size_t)snprintf(want + k, sizeof want - k, d ? ",?" : "?")
                         : (size_t)snprintf(want + k, sizeof want - k, d ? ",%lld" : "%lld",
                                            (long long)sp->dims[d]);
            if (k < sizeof want) snprintf(want + k, sizeof want - k, "]");
            ir_shape sh = {.rank = rank};
            memcpy(sh.dims, dims, sizeof(int64_t) * (size_t)rank);
            return ctx_error(j->ctx, t != sp->dtype ? KILN_STATUS_DTYPE : KILN_STATUS_SHAPE,
                             "%s '%s': argument %d is %s, declared %s", s->op, j->name, i,
                             ir_type_str(t, &sh, got, sizeof got), want);
        }
    }
    return KILN_STATUS_OK;
}

/* The device of a call or lowering with arrays: theirs (which must agree), else the
 * options'. */
static kiln_status call_device(kiln_jit *j, jit_sig *s) {
    s->device = s->n ? s->args[0]->device : j->o.compile.device;
    for (int i = 1; i < s->n; i++) {
        if (s->args[i]->device == s->device) continue;
        char all[1024];
        exec_devices_str(j->ctx, s->n, s->args, all, sizeof all);
        return ctx_error(j->ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "%s '%s': the arguments are on different devices (%s); a "
                         "call runs on the device of its arguments, so move them to one with "
                         "kiln_array_copy_to_device",
                         s->op, j->name, all);
    }
    return KILN_STATUS_OK;
}

/* The signature key: device, n_args, then (dtype, rank + memory kind, dims) per argument,
 * then static bytes. */
static unsigned char *make_key(kiln_jit *j, const jit_sig *s, size_t *len) {
    size_t per = sizeof(int32_t) * 2 + sizeof(int64_t) * KILN_MAX_RANK;
    size_t n = 2 * sizeof(int32_t) + (size_t)s->n * per + s->st_size;
    *len = n;
    unsigned char *k = host_calloc(j->ctx, 1, n);
    if (!k) return NULL;
    unsigned char *p = k;
    int32_t na = s->n, dev = s->device;
    memcpy(p, &dev, sizeof dev), p += sizeof dev;
    memcpy(p, &na, sizeof na), p += sizeof na;
    for (int i = 0; i < s->n; i++) {
        int32_t t = sig_dtype(s, i), r = sig_rank(s, i), rk = r | sig_kind(s, i) << 8;
        memcpy(p, &t, sizeof t), p += sizeof t;
        memcpy(p, &rk, sizeof rk), p += sizeof rk;
        memcpy(p, sig_dims(s, i), sizeof(int64_t) * (size_t)r);
        p += sizeof(int64_t) * KILN_MAX_RANK;
    }
    if (s->st_size) memcpy(p, s->st, s->st_size);
    return k;
}

/* Whether this thread is inside the jit's trace function (j->mu held). */
static bool tracing_here(const kiln_jit *j) {
    return j->tracing && pthread_equal(j->tracer, pthread_self());
}

static kiln_status reentered(kiln_jit *j, const jit_sig *sg) {
    return ctx_error(j->ctx, KILN_STATUS_INVALID_ARGUMENT,
                     "%s '%s': called from inside its own trace function on a signature it has "
                     "not compiled (or the one being traced): the trace would wait for itself. "
                     "Call the traced function directly, or use another kiln_jit",
                     sg->op, j->name);
}

/* Traces the function for signature sg into a new finished graph (*out, the caller's);
 * on failure *out is NULL and the graph is destroyed. Takes j->trace_mu: one trace at a
 * time per jit, as the trace function may not be reentrant; j->mu is not held. */
static kiln_status trace_graph(kiln_jit *j, const jit_sig *sg, kiln_graph **out) {
    kiln_graph *g;
    *out = NULL;
    kiln_status s = kiln_graph_create(j->ctx, j->name, &g);
    if (s) return s;
    int n_args = sg->n;
    kiln_value params[64], *pv = params;
    /* the room the header promises (32 KiB: on the heap, not the caller's stack) */
    kiln_value *outs = host_calloc(j->ctx, KILN_JIT_MAX_OUTPUTS, sizeof *outs);
    if (!outs || (n_args > 64 && !(pv = host_calloc(j->ctx, (size_t)n_args, sizeof *pv)))) {
        host_free(j->ctx, outs, KILN_JIT_MAX_OUTPUTS * sizeof *outs);
        kiln_graph_destroy(g);
        return ctx_oom(j->ctx, sg->op,
                       outs ? (size_t)n_args * sizeof *pv : KILN_JIT_MAX_OUTPUTS * sizeof *outs);
    }
    for (int i = 0; i < n_args; i++) { /* named as the first call's arrays, else argN */
        char name[32];
        if (sg->args && sg->args[i]->name[0])
            snprintf(name, sizeof name, "%s", sg->args[i]->name);
        else
            snprintf(name, sizeof name, "arg%d", i);
        pv[i] = kiln_parameter_in_memory(g, name, sig_dtype(sg, i), sig_rank(sg, i),
                                         sig_dims(sg, i), (kiln_memory_kind)sig_kind(sg, i));
    }
    pthread_mutex_lock(&j->trace_mu);
    pthread_mutex_lock(&j->mu);
    j->stats.traces++;
    j->tracing = true, j->tracer = pthread_self();
    pthread_mutex_unlock(&j->mu);
    int n_outs = kiln_graph_status(g) ? 0 : j->o.fn(g, pv, n_args, sg->st, j->o.user, outs);
    pthread_mutex_lock(&j->mu);
    j->tracing = false;
    pthread_mutex_unlock(&j->mu);
    pthread_mutex_unlock(&j->trace_mu);
    if (pv != params) host_free(j->ctx, pv, (size_t)n_args * sizeof *pv);
    if (kiln_graph_status(g))
        s = kiln_graph_finish(g, 0, NULL); /* the builder's first error */
    else if (n_outs < 0)
        s = ctx_error(j->ctx, KILN_STATUS_INVALID_ARGUMENT,
                      "%s '%s': the trace function reported failure", sg->op, j->name);
    else if (n_outs == 0 || n_outs > KILN_JIT_MAX_OUTPUTS)
        s = ctx_error(j->ctx, KILN_STATUS_INVALID_ARGUMENT,
                      "%s '%s': the trace function returned %d outputs (1..%d)", sg->op, j->name,
                      n_outs, KILN_JIT_MAX_OUTPUTS);
    else
        s = kiln_graph_finish(g, n_outs, outs);
    host_free(j->ctx, outs, KILN_JIT_MAX_OUTPUTS * sizeof *outs);
    if (s)
        kiln_graph_destroy(g);
    else
        *out = g;
    return s;
}

static kiln_status trace_and_compile(kiln_jit *j, const jit_sig *sg, kiln_executable **exe) {
    kiln_graph *g;
    kiln_status s = trace_graph(j, sg, &g);
    if (s) return s;
    pthread_mutex_lock(&j->mu);
    j->stats.compiles++;
    pthread_mutex_unlock(&j->mu);
    kiln_compile_options co = j->o.compile;
    co.device = sg->device;
    s = kiln_compile(g, &co, exe);
    kiln_graph_destroy(g);
    return s;
}

static jit_entry *find(kiln_jit *j, uint64_t h, const unsigned char *key, size_t len) {
    for (jit_entry *en = j->entries; en; en = en->next)
        if (en->hash == h && en->key_len == len && !memcmp(en->key, key, len)) return en;
    return NULL;
}

static void unlink_entry(kiln_jit *j, jit_entry *en) {
    for (jit_entry **p = &j->entries; *p; p = &(*p)->next)
        if (*p == en) {
            *p = en->next;
            return;
        }
}

/* Puts en, in the list, first: the most recently used. */
static void to_front(kiln_jit *j, jit_entry *en) {
    if (j->entries == en) return;
    unlink_entry(j, en);
    en->next = j->entries, j->entries = en;
}

/* Past max_entries, the least recently used built entries leave the cache (the list is
 * kept most recent first); each is freed when its last running call releases it. */
static void evict_over(kiln_jit *j) {
    if (j->o.max_entries < 0 || j->stats.entries <= (uint64_t)j->o.max_entries) return;
    uint64_t keep = (uint64_t)j->o.max_entries, seen = 0;
    for (jit_entry **p = &j->entries; *p;) {
        jit_entry *en = *p;
        if (!en->exe || seen++ < keep) { /* building, or recent enough */
            p = &en->next;
            continue;
        }
        *p = en->next;
        en->in_cache = false;
        j->stats.entries--;
        j->stats.bytes -= en->exe->stats.code_bytes;
        j->stats.evictions++;
        if (--en->refs == 0) entry_free(j->ctx, en);
    }
}

/* Finds or builds the entry for this signature and takes a reference on it. A signature
 * another thread is building is waited for; a new one is entered at once (building, this
 * thread its builder), traced and compiled without the lock, then published. */
static kiln_status acquire(kiln_jit *j, const jit_sig *sg, jit_entry **out) {
    size_t len = 0;
    unsigned char *key = make_key(j, sg, &len);
    if (!key) return ctx_oom(j->ctx, "kiln_jit: the signature key", len);
    uint64_t h = fnv1a(key, len);
    pthread_mutex_lock(&j->mu);
    jit_entry *en;
    /* inside its own trace function a call never waits: the entry's builder may be
     * waiting for this thread's trace to end (trace_mu) */
    while ((en = find(j, h, key, len)) && !en->exe && !tracing_here(j))
        pthread_cond_wait(&j->built, &j->mu);
    if (en && en->exe) {
        to_front(j, en);
        en->refs++;
        j->stats.hits++;
        pthread_mutex_unlock(&j->mu);
        host_free(j->ctx, key, len);
        *out = en;
        return KILN_STATUS_OK;
    }
    if (en || tracing_here(j)) {
        pthread_mutex_unlock(&j->mu);
        host_free(j->ctx, key, len);
        return reentered(j, sg);
    }
    en = host_calloc(j->ctx, 1, sizeof *en);
    if (!en) {
        pthread_mutex_unlock(&j->mu);
        host_free(j->ctx, key, len);
        return ctx_oom(j->ctx, "kiln_jit: a cache entry", sizeof *en);
    }
    *en = (jit_entry){j->entries, h, len, key, NULL, 1, true};
    j->entries = en;
    j->stats.misses++;
    pthread_mutex_unlock(&j->mu);

    kiln_executable *exe = NULL;
    kiln_status s = trace_and_compile(j, sg, &exe);

    pthread_mutex_lock(&j->mu);
    if (s) {
        if (en->in_cache) unlink_entry(j, en);
    } else {
        en->exe = exe;
        if (en->in_cache) {  /* not cleared meanwhile: the cache keeps a reference */
            to_front(j, en); /* the most recently used now, whatever was hit meanwhile */
            en->refs++;
            j->stats.entries++;
            j->stats.bytes += exe->stats.code_bytes;
            evict_over(j);
        }
    }
    pthread_cond_broadcast(&j->built);
    pthread_mutex_unlock(&j->mu);
    if (s) {
        entry_free(j->ctx, en);
        return s;
    }
    *out = en;
    return KILN_STATUS_OK;
}

static void release(kiln_jit *j, jit_entry *en) {
    pthread_mutex_lock(&j->mu);
    bool last = --en->refs == 0;
    pthread_mutex_unlock(&j->mu);
    if (last) entry_free(j->ctx, en);
}

static kiln_status check_static(kiln_jit *j, const jit_sig *s) {
    if (s->st_size && !s->st)
        return ctx_error(j->ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "%s '%s': static_args is NULL with static_size %zu", s->op, j->name,
                         s->st_size);
    return KILN_STATUS_OK;
}

kiln_status kiln_jit_call(kiln_jit *j, int n_args, kiln_array *const *args, const void *static_args,
                          size_t static_size, int n_outs, kiln_array **outs) {
    if (!j) return exec_null_object("kiln_jit_call", "the jit", n_args, args);
    jit_sig sg = {"kiln_jit_call", n_args, args, NULL, 0, static_args, static_size};
    kiln_status s;
    if ((s = check_arrays(j, &sg)) || (s = check_declared(j, &sg)) || (s = check_static(j, &sg)) ||
        (s = call_device(j, &sg)))
        return s;
    jit_entry *en = NULL;
    if ((s = acquire(j, &sg, &en))) return s;
    /* Checked here too so the message names the call the user made. */
    uint32_t n_out = en->exe->n_outputs;
    if (n_outs != (int)n_out || !outs)
        s = ctx_error(j->ctx, KILN_STATUS_INVALID_ARGUMENT,
                      "kiln_jit_call '%s': the traced function has %u output%s, %d asked for%s",
                      j->name, n_out, n_out == 1 ? "" : "s", n_outs, outs ? "" : " (outs is NULL)");
    else {
        char op[96]; /* the run's argument errors name the call the user made */
        snprintf(op, sizeof op, "kiln_jit_call '%.60s'", j->name);
        s = exec_run(en->exe, op, n_args, args, n_outs, outs);
    }
    release(j, en);
    return s;
}

/* Both lowerings: the entry's executable, with one more reference for the caller. The
 * reference (not the entry) is what the caller holds, so kiln_jit_clear or
 * kiln_jit_destroy, from any thread, never frees an executable handed out. */
static kiln_status lower(kiln_jit *j, const jit_sig *sg, kiln_executable **out) {
    jit_entry *en = NULL;
    kiln_status s = acquire(j, sg, &en);
    if (s) return s;
    exec_ref(en->exe);
    *out = en->exe;
    release(j, en);
    return KILN_STATUS_OK;
}

kiln_status kiln_jit_lower(kiln_jit *j, int n_args, kiln_array *const *args,
                           const void *static_args, size_t static_size, kiln_executable **out) {
    if (!j) return exec_null_object("kiln_jit_lower", "the jit", n_args, args);
    if (!out)
        return ctx_error(j->ctx, KILN_STATUS_INVALID_ARGUMENT, "kiln_jit_lower '%s': out is NULL",
                         j->name);
    *out = NULL;
    jit_sig sg = {"kiln_jit_lower", n_args, args, NULL, 0, static_args, static_size};
    kiln_status s;
    if ((s = check_arrays(j, &sg)) || (s = check_declared(j, &sg)) || (s = check_static(j, &sg)) ||
        (s = call_device(j, &sg)))
        return s;
    return lower(j, &sg, out);
}

kiln_status kiln_jit_lower_shapes(kiln_jit *j, int device, int n_args, const kiln_arg_spec *specs,
                                  const void *static_args, size_t static_size,
                                  kiln_executable **out) {
    if (!j) return KILN_STATUS_INVALID_ARGUMENT;
    if (!out)
        return ctx_error(j->ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "kiln_jit_lower_shapes '%s': out is NULL", j->name);
    *out = NULL;
    jit_sig sg = {"kiln_jit_lower_shapes", n_args, NULL, specs, device, static_args, static_size};
    kiln_status s;
    if ((s = check_specs(j, &sg)) || (s = check_declared(j, &sg)) || (s = check_static(j, &sg)))
        return s;
    char what[96];
    snprintf(what, sizeof what, "kiln_jit_lower_shapes '%s'", j->name);
    if (!device_get(j->ctx, device, what)) return KILN_STATUS_INVALID_ARGUMENT;
    return lower(j, &sg, out);
}

/* The graph a call would compile, traced anew (the cache keeps executables, not graphs,
 * and a trace is cheap next to a compile): the same checks and parameter names as
 * kiln_jit_call, the same trace (one at a time), no cache entry touched. */
kiln_status kiln_jit_trace(kiln_jit *j, int n_args, kiln_array *const *args,
                           const void *static_args, size_t static_size, kiln_graph **out) {
    if (!j) return exec_null_object("kiln_jit_trace", "the jit", n_args, args);
    if (!out)
        return ctx_error(j->ctx, KILN_STATUS_INVALID_ARGUMENT, "kiln_jit_trace '%s': out is NULL",
                         j->name);
    *out = NULL;
    jit_sig sg = {"kiln_jit_trace", n_args, args, NULL, 0, static_args, static_size};
    kiln_status s;
    if ((s = check_arrays(j, &sg)) || (s = check_declared(j, &sg)) || (s = check_static(j, &sg)))
        return s;
    pthread_mutex_lock(&j->mu);
    bool here = tracing_here(j);
    pthread_mutex_unlock(&j->mu);
    return here ? reentered(j, &sg) : trace_graph(j, &sg, out);
}
