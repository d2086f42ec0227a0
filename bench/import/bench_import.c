/* bench_import.c — programs exported from JAX (bench/import/export.py) run through kiln's
 * importer: for each NAME and each form (NAME.mlir, NAME.hlo), import, compile, run, and
 * print the largest difference from the outputs JAX computed (NAME.io), kiln's planned peak
 * with JAX's donations (NAME.json "donate_leaves") beside XLA's memory_analysis() peak, and the
 * median time per call beside JAX's (the call without donation, so inputs are reused).
 * With --gpt-steps N it also trains gpt_step for N steps from its inputs, feeding the
 * parameters and moments back, and compares each step's loss with gpt_losses.txt.
 * Figures only: nothing here fails on time.
 *
 * With --time-only it prints only "NAME MS" per program (the StableHLO form's median ms per
 * call), for run.sh to alternate with export.py --time-only.
 *
 * Usage: bench_import DIR [--gpt-steps N | --time-only] NAME...   (bench/import/run.sh) */
#include "../bench_util.h"

#include <math.h>
#include <string.h>

#define MAX_ARRAYS 512

typedef struct io {
    int n_in, n_out;
    kiln_dtype t[2][MAX_ARRAYS];
    int rank[2][MAX_ARRAYS];
    int64_t dims[2][MAX_ARRAYS][KILN_MAX_RANK], n[2][MAX_ARRAYS];
    double *v[2][MAX_ARRAYS];
} io;

static void must(kiln_context *ctx, kiln_status s, const char *what) {
    if (!s) return;
    fprintf(stderr, "%s: %s\n", what, kiln_last_error(ctx));
    exit(1);
}

static kiln_dtype dtype_named(const char *s) {
    return !strcmp(s, "f32")    ? KILN_DTYPE_F32
           : !strcmp(s, "f64")  ? KILN_DTYPE_F64
           : !strcmp(s, "i32")  ? KILN_DTYPE_I32
           : !strcmp(s, "i64")  ? KILN_DTYPE_I64
           : !strcmp(s, "bool") ? KILN_DTYPE_BOOL
                                : KILN_DTYPE_INVALID;
}

static char *slurp(const char *dir, const char *name, const char *ext, size_t *len) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s%s", dir, name, ext);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (!s || fread(s, 1, (size_t)n, f) != (size_t)n) exit(1);
    s[n] = 0;
    fclose(f);
    if (len) *len = (size_t)n;
    return s;
}

static bool read_io(const char *dir, const char *name, io *x) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.io", dir, name);
    FILE *f = fopen(path, "r");
    if (!f) return false;
    memset(x, 0, sizeof *x);
    char kind[8], dt[8];
    int rank;
    while (fscanf(f, "%7s %7s %d", kind, dt, &rank) == 3) {
        int w = strcmp(kind, "in") != 0, k = w ? x->n_out++ : x->n_in++;
        if (k >= MAX_ARRAYS) exit(1);
        int64_t n = 1;
        for (int i = 0; i < rank; i++) {
            long long d;
            if (fscanf(f, "%lld", &d) != 1) exit(1);
            x->dims[w][k][i] = d, n *= d;
        }
        x->v[w][k] = malloc((size_t)(n ? n : 1) * sizeof(double));
        for (int64_t i = 0; i < n; i++)
            if (fscanf(f, "%lf", &x->v[w][k][i]) != 1) exit(1);
        x->t[w][k] = dtype_named(dt), x->rank[w][k] = rank, x->n[w][k] = n;
    }
    fclose(f);
    return true;
}

static kiln_array *make_array(kiln_context *ctx, const io *x, int k) {
    size_t size = kiln_dtype_itemsize(x->t[0][k]) * (size_t)(x->n[0][k] ? x->n[0][k] : 1);
    void *d = malloc(size);
    kiln_convert_host(ctx, KILN_DTYPE_F64, x->v[0][k], x->t[0][k], d, x->n[0][k]);
    kiln_array *a = NULL;
    must(ctx, kiln_array_create(ctx, x->t[0][k], x->rank[0][k], x->dims[0][k], d, &a), "array");
    free(d);
    return a;
}

static double to_double(kiln_context *ctx, kiln_array *a, int64_t i) {
    size_t size = kiln_array_nbytes(a);
    void *raw = malloc(size ? size : 1);
    double *v = malloc((size_t)(kiln_array_size(a) ? kiln_array_size(a) : 1) * sizeof *v);
    kiln_array_copy_to_host(a, raw, size);
    kiln_convert_host(ctx, kiln_array_dtype(a), raw, KILN_DTYPE_F64, v, kiln_array_size(a));
    double r = v[i];
    free(raw);
    free(v);
    return r;
}

/* The largest |kiln - JAX| / (1 + |JAX|) over every output. */
static double max_diff(kiln_context *ctx, const io *x, kiln_array **outs) {
    double worst = 0;
    for (int k = 0; k < x->n_out; k++) {
        if (kiln_array_size(outs[k]) != x->n[1][k]) return INFINITY;
        for (int64_t i = 0; i < x->n[1][k]; i++) {
            double d = fabs(to_double(ctx, outs[k], i) - x->v[1][k][i]) / (1 + fabs(x->v[1][k][i]));
            if (!(d <= worst)) worst = d;
            if (x->n[1][k] > 4096) i += x->n[1][k] / 4096; /* a sample of large outputs */
        }
    }
    return worst;
}

/* JAX's figures from NAME.json: "peak_bytes", "ms" and the "donate_leaves" list (JAX's
 * "donate" counts pytree arguments, a dict of 28 parameters being one; kiln's
 * donate_argnums count the imported graph's parameters, the flattened leaves). */
static double json_number(const char *j, const char *key) {
    char k[64];
    snprintf(k, sizeof k, "\"%s\": ", key);
    const char *p = j ? strstr(j, k) : NULL;
    return p ? strtod(p + strlen(k), NULL) : NAN;
}

static int json_donate(const char *j, int *d) {
    const char *key = "\"donate_leaves\": [", *p = j ? strstr(j, key) : NULL;
    int n = 0;
    for (p = p ? p + strlen(key) : NULL; p && *p && *p != ']' && n < MAX_ARRAYS;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p) break;
        d[n++] = (int)v;
        p = *end == ',' ? end + 2 : end;
    }
    return n;
}

static bool time_only;

static void one(kiln_context *ctx, const char *dir, const char *name, const char *ext, const io *x,
                const char *json) {
    if (time_only && strcmp(ext, ".mlir")) return;
    size_t len;
    char *text = slurp(dir, name, ext, &len);
    if (!text) return;
    kiln_graph *g = NULL;
    kiln_status s = !strcmp(ext, ".hlo") ? kiln_import_hlo(ctx, text, len, &g)
                                         : kiln_import_stablehlo(ctx, text, len, &g);
    free(text);
    if (s) {
        printf("| %-13s | %-4s | import failed: %s |\n", name, ext + 1, kiln_last_error(ctx));
        return;
    }
    int donate[MAX_ARRAYS];
    kiln_compile_options co = {.n_donate = json_donate(json, donate), .donate_argnums = donate};
    kiln_executable *ed = NULL, *e = NULL;
    must(ctx, kiln_compile(g, &co, &ed), "compile (donated)");
    must(ctx, kiln_compile(g, NULL, &e), "compile");
    kiln_memory_analysis ma;
    must(ctx, kiln_executable_get_memory_analysis(ed, &ma), "analysis");
    kiln_array *args[MAX_ARRAYS], *outs[MAX_ARRAYS];
    for (int k = 0; k < x->n_in; k++) args[k] = make_array(ctx, x, k);
    double t[20];
    for (int r = -1; r < 20; r++) {
        double t0 = now();
        must(ctx, kiln_executable_run(e, x->n_in, args, x->n_out, outs), "run");
        for (int k = 0; k < x->n_out; k++) kiln_array_block_until_ready(outs[k]);
        if (r >= 0) t[r] = now() - t0;
        if (r < 19)
            for (int k = 0; k < x->n_out; k++) kiln_array_destroy(outs[k]);
    }
    double diff = time_only ? 0 : max_diff(ctx, x, outs);
    if (time_only)
        printf("%s %.4f\n", name, median(t, 20) * 1e3);
    else
        printf("| %-13s | %-4s | %9.2e | %10llu | %10.0f | %8.3f | %8.3f |\n", name, ext + 1, diff,
               (unsigned long long)ma.peak_bytes, json_number(json, "peak_bytes"),
               median(t, 20) * 1e3, json_number(json, "ms"));
    for (int k = 0; k < x->n_out; k++) kiln_array_destroy(outs[k]);
    for (int k = 0; k < x->n_in; k++) kiln_array_destroy(args[k]);
    kiln_executable_destroy(e);
    kiln_executable_destroy(ed);
    kiln_graph_destroy(g);
}

/* gpt_step for `steps` steps: outputs 1..3P (parameters, then both moments) fed back as
 * inputs 0..3P-1; the tokens of step s from gpt_tokens.bin; lr 1e-3, t = s + 1. */
static void gpt_steps(kiln_context *ctx, const char *dir, const io *x, int steps) {
    size_t len;
    char *text = slurp(dir, "gpt_step", ".mlir", &len),
         *ref = slurp(dir, "gpt_losses", ".txt", NULL);
    char *tok = slurp(dir, "gpt_tokens", ".bin", &len);
    if (!text || !ref || !tok) return;
    kiln_graph *g = NULL;
    must(ctx, kiln_import_stablehlo(ctx, text, strlen(text), &g), "import gpt_step");
    int n3 = x->n_out - 1, donate[MAX_ARRAYS];
    for (int i = 0; i < n3; i++) donate[i] = i;
    kiln_compile_options co = {.n_donate = n3, .donate_argnums = donate};
    kiln_executable *e = NULL;
    must(ctx, kiln_compile(g, &co, &e), "compile gpt_step");
    kiln_array *args[MAX_ARRAYS], *outs[MAX_ARRAYS];
    for (int k = 0; k < x->n_in; k++) args[k] = make_array(ctx, x, k);
    int tk = n3, per = (int)(x->n[0][tk]);
    const char *r = ref;
    double worst = 0;
    for (int s = 0; s < steps && (size_t)(s + 1) * per * 4 <= len; s++) {
        kiln_array_destroy(args[tk]);
        kiln_array_destroy(args[tk + 2]);
        must(ctx,
             kiln_array_create(ctx, KILN_DTYPE_I32, x->rank[0][tk], x->dims[0][tk],
                               tok + (size_t)s * per * 4, &args[tk]),
             "tokens");
        float step = (float)(s + 1);
        must(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 0, NULL, &step, &args[tk + 2]), "t");
        must(ctx, kiln_executable_run(e, x->n_in, args, x->n_out, outs), "gpt step");
        double want = strtod(r, (char **)&r), got = to_double(ctx, outs[0], 0);
        if (fabs(got - want) > worst) worst = fabs(got - want);
        if (s % 25 == 0 || s == steps - 1) printf("step %3d: loss %.6f, JAX %.6f\n", s, got, want);
        kiln_array_destroy(outs[0]);
        for (int i = 0; i < n3; i++) {
            kiln_array_destroy(args[i]);
            args[i] = outs[i + 1];
        }
    }
    printf("gpt_step over %d steps: largest |loss - JAX's| = %.3g\n", steps, worst);
    for (int k = 0; k < x->n_in; k++) kiln_array_destroy(args[k]);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    free(text), free(ref), free(tok);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: bench_import DIR [--gpt-steps N | --time-only] NAME...\n");
        return 2;
    }
    kiln_context *ctx = NULL;
    char err[512];
    bench_one_tier();
    if (kiln_context_create(NULL, &ctx, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    int steps = 0, first = 2;
    if (!strcmp(argv[2], "--gpt-steps") && argc > 3) steps = atoi(argv[3]), first = 4;
    if (!strcmp(argv[2], "--time-only")) time_only = true, first = 3;
    if (!time_only)
        printf(
            "| program       | form | max diff  | kiln peak  | XLA peak   | kiln ms  | JAX ms   |\n"
            "|---------------|------|-----------|------------|------------|----------|----------|"
            "\n");
    static io x;
    for (int i = first; i < argc; i++) {
        if (!read_io(argv[1], argv[i], &x)) {
            fprintf(stderr, "no %s/%s.io\n", argv[1], argv[i]);
            continue;
        }
        char *json = slurp(argv[1], argv[i], ".json", NULL);
        one(ctx, argv[1], argv[i], ".mlir", &x, json);
        one(ctx, argv[1], argv[i], ".hlo", &x, json);
        if (steps && !strcmp(argv[i], "gpt_step")) gpt_steps(ctx, argv[1], &x, steps);
        free(json);
        for (int w = 0; w < 2; w++)
            for (int k = 0; k < (w ? x.n_out : x.n_in); k++) free(x.v[w][k]);
    }
    kiln_context_destroy(ctx);
    return 0;
}
