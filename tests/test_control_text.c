/* test_control_text.c — the text form of control flow (kiln_graph_parse, kiln_graph_save,
 * kiln_graph_load; src/trace/load.c, src/ir/print.c): a while, a fori_loop, a scan forward and
 * reversed, a map, a scan over no xs, a cond, a switch and a scan nested in a scan, each built
 * as tests/test_control.c builds it, then printed, parsed back, printed again (the same text,
 * the sub-graphs' locations included) and saved, loaded and saved again (the same text), both
 * copies run by the reference interpreter on the same arguments (the same bits). Then the
 * broken nested texts, each with the status and the message (file:line, what is wrong) it
 * must give; every prefix of a nested text; and nesting past the depth limit. Last, the
 * tracer's node pointers that fuzz_builder found kept across appends (growing_graphs). */
#include "test.h"
#include "compare.h"
#include "ir/ir.h"

#include <unistd.h>

static char tmpdir[] = "/tmp/kiln-test-control-text-XXXXXX";

/* ------------------------------------------------------------- bodies ---- */

typedef struct outer {
    kiln_value v[2];
} outer;

static int while_cond(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in;
    const outer *o = user;
    outs[0] = kiln_compare(g, in[0], kiln_capture(g, o->v[0]), KILN_CMP_LT);
    return 1;
}

static int while_body(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in, (void)user;
    kiln_value i = kiln_add(g, in[0], kiln_scalar(g, KILN_DTYPE_I32, 1));
    kiln_value f = kiln_convert(g, i, KILN_DTYPE_F64);
    outs[0] = i;
    outs[1] = kiln_add(g, in[1], kiln_mul(g, f, f));
    return 2;
}

static int fori_body(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in, (void)user;
    kiln_value i = kiln_convert(g, in[0], KILN_DTYPE_F64);
    outs[0] = kiln_add(g, kiln_mul(g, in[1], kiln_scalar(g, KILN_DTYPE_F64, 0.5)), i);
    return 1;
}

static int scan_body(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in;
    const outer *o = user;
    kiln_value c = kiln_add(g, kiln_mul(g, in[0], kiln_capture(g, o->v[0])), in[1]);
    outs[0] = c;
    outs[1] = kiln_mul(g, c, kiln_scalar(g, KILN_DTYPE_F64, 2));
    outs[2] = kiln_reduce_sum(g, in[1], 0, NULL, false);
    return 3;
}

static int square_body(kiln_graph *g, int n_in, const kiln_value *in, void *user,
                       kiln_value *outs) {
    (void)n_in, (void)user;
    outs[0] = kiln_mul(g, in[0], in[0]);
    return 1;
}

static int count_body(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in, (void)user;
    outs[0] = kiln_add(g, in[0], kiln_scalar(g, KILN_DTYPE_I32, 3));
    outs[1] = in[0];
    return 2;
}

static int br_add(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in;
    const outer *o = user;
    outs[0] = kiln_add(g, in[0], kiln_capture(g, o->v[0]));
    outs[1] = kiln_scalar(g, KILN_DTYPE_I32, 10);
    return 2;
}

static int br_mul(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in, (void)user;
    outs[0] = kiln_mul(g, in[0], in[0]);
    outs[1] = kiln_scalar(g, KILN_DTYPE_I32, 20);
    return 2;
}

static int br_neg(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in, (void)in;
    const outer *o = user;
    outs[0] = kiln_neg(g, kiln_capture(g, o->v[1]));
    outs[1] = kiln_scalar(g, KILN_DTYPE_I32, 30);
    return 2;
}

static int inner_body(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in;
    const outer *o = user;
    outs[0] = kiln_add(g, in[0], kiln_mul(g, in[1], kiln_capture(g, o->v[0])));
    return 1;
}

static int outer_body(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in;
    kiln_value zero = kiln_scalar(g, KILN_DTYPE_F64, 0), r;
    int n = 0;
    if (kiln_scan(g, inner_body, user, 1, &zero, 1, &in[1], NULL, &n, &r)) return -1;
    outs[0] = kiln_add(g, in[0], r);
    outs[1] = r;
    return 2;
}

/* ------------------------------------------------------------- graphs ---- */

enum { G_WHILE, G_FORI, G_SCAN, G_SCAN_REV, G_MAP, G_COUNT, G_COND, G_SWITCH, G_NESTED, G_COUNT_ };
static const char *const names[G_COUNT_] = {"while", "fori", "scan",   "scan reverse", "map",
                                            "count", "cond", "switch", "nested"};

/* Graph `which`, finished, as test_control.c builds it. */
static kiln_graph *build(kiln_context *ctx, int which) {
    int64_t xd[2] = {5, 3}, cd[1] = {3}, md[2] = {3, 4}, mapd[3] = {4, 2, 3};
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, names[which], &g);
    kiln_value outs[3], x, k;
    outer o;
    int n = 0, n_out = 0;
    kiln_scan_options opt = {.reverse = which == G_SCAN_REV,
                             .checkpoint_body = which == G_SCAN_REV};
    switch (which) {
    case G_WHILE: {
        kiln_value nn = kiln_parameter(g, "n", KILN_DTYPE_I32, 0, NULL);
        kiln_value init[2] = {kiln_scalar(g, KILN_DTYPE_I32, 0),
                              kiln_parameter(g, "acc", KILN_DTYPE_F64, 0, NULL)};
        o = (outer){{nn}};
        CHECK_OK(ctx, kiln_while_loop(g, while_cond, while_body, &o, 2, init, outs));
        n_out = 2;
        break;
    }
    case G_FORI:
        x = kiln_parameter(g, "x", KILN_DTYPE_F64, 0, NULL);
        CHECK_OK(ctx, kiln_fori_loop(g, -4, 3, fori_body, NULL, 1, &x, outs));
        n_out = 1;
        break;
    case G_SCAN:
    case G_SCAN_REV: {
        kiln_value c0 = kiln_parameter(g, "c", KILN_DTYPE_F64, 1, cd);
        kiln_value xs = kiln_parameter(g, "xs", KILN_DTYPE_F64, 2, xd);
        o = (outer){{kiln_parameter(g, "w", KILN_DTYPE_F64, 1, cd)}};
        CHECK_OK(ctx, kiln_scan(g, scan_body, &o, 1, &c0, 1, &xs, &opt, &n_out, outs));
        break;
    }
    case G_MAP:
        x = kiln_parameter(g, "xs", KILN_DTYPE_F64, 3, mapd);
        CHECK_OK(ctx, kiln_scan(g, square_body, NULL, 0, NULL, 1, &x, NULL, &n_out, outs));
        break;
    case G_COUNT: {
        kiln_value c0 = kiln_scalar(g, KILN_DTYPE_I32, 1);
        kiln_scan_options len = {.length = 6};
        CHECK_OK(ctx, kiln_scan(g, count_body, NULL, 1, &c0, 0, NULL, &len, &n_out, outs));
        break;
    }
    case G_COND:
    case G_SWITCH: {
        kiln_value p = which == G_COND ? kiln_parameter(g, "p", KILN_DTYPE_BOOL, 0, NULL)
                                       : kiln_parameter(g, "i", KILN_DTYPE_I64, 0, NULL);
        x = kiln_parameter(g, "x", KILN_DTYPE_F64, 0, NULL);
        k = kiln_parameter(g, "k", KILN_DTYPE_F64, 0, NULL);
        o = (outer){{k, x}};
        kiln_fn fns[3] = {br_add, br_mul, br_neg};
        if (which == G_COND)
            CHECK_OK(ctx, kiln_cond(g, p, br_add, br_mul, &o, 1, &x, &n_out, outs));
        else
            CHECK_OK(ctx, kiln_switch(g, p, 3, fns, &o, 1, &x, &n_out, outs));
        break;
    }
    case G_NESTED: {
        kiln_value m = kiln_parameter(g, "m", KILN_DTYPE_F64, 2, md);
        o = (outer){{kiln_parameter(g, "s", KILN_DTYPE_F64, 0, NULL)}};
        kiln_value c0 = kiln_scalar(g, KILN_DTYPE_F64, 0);
        CHECK_OK(ctx, kiln_scan(g, outer_body, &o, 1, &c0, 1, &m, NULL, &n_out, outs));
        break;
    }
    }
    (void)n;
    CHECK_OK(ctx, kiln_graph_finish(g, n_out, outs));
    return g;
}

/* The arguments of graph g for case c: random, but a while's bound small. */
static int make_args(kiln_context *ctx, const kiln_graph *g, int c, uint64_t *seed,
                     kiln_array **args) {
    int np = kiln_graph_num_parameters(g);
    for (int i = 0; i < np; i++) {
        const ir_node *p = &g->nodes[g->params[i]];
        int64_t dims[KILN_MAX_RANK];
        for (int d = 0; d < p->shape.rank; d++) dims[d] = p->shape.dims[d];
        if (p->dtype == KILN_DTYPE_I32 || p->dtype == KILN_DTYPE_I64) {
            int64_t v = (int64_t)(c * 3 % 7) - 2; /* a loop bound, a branch index */
            int32_t v32 = (int32_t)v;
            kiln_array_create(ctx, p->dtype, 0, NULL,
                              p->dtype == KILN_DTYPE_I32 ? (void *)&v32 : &v, &args[i]);
        } else {
            args[i] = cmp_random_array(ctx, p->dtype, p->shape.rank, dims, seed);
        }
    }
    return np;
}

/* g and h give the same bits on the same arguments. */
static void same_results(kiln_context *ctx, kiln_graph *g, kiln_graph *h, const char *what) {
    uint64_t seed = 7;
    for (int c = 0; c < 3; c++) {
        kiln_array *args[8] = {0}, *oa[8] = {0}, *ob[8] = {0};
        int np = make_args(ctx, g, c, &seed, args), no = kiln_graph_num_outputs(g);
        CHECK_OK(ctx, kiln_interpret(g, np, args, no, oa));
        CHECK_OK(ctx, kiln_interpret(h, np, args, no, ob));
        for (int i = 0; i < no; i++) {
            if (!oa[i] || !ob[i]) continue;
            size_t n = kiln_array_nbytes(oa[i]);
            char *x = malloc(n + 1), *y = malloc(n + 1);
            CHECK(kiln_array_nbytes(ob[i]) == n);
            kiln_array_copy_to_host(oa[i], x, n);
            kiln_array_copy_to_host(ob[i], y, n);
            CHECK_MSG(!memcmp(x, y, n), "%s: output %d differs after the round trip", what, i);
            free(x);
            free(y);
        }
        for (int i = 0; i < 8; i++)
            kiln_array_destroy(args[i]), kiln_array_destroy(oa[i]), kiln_array_destroy(ob[i]);
    }
}

static void round_trips(kiln_context *ctx) {
    char path[512];
    snprintf(path, sizeof path, "%s/g.kir", tmpdir);
    for (int w = 0; w < G_COUNT_; w++) {
        kiln_graph *g = build(ctx, w), *h = NULL, *l = NULL;
        char *text = kiln_graph_to_string(g);
        CHECK(text != NULL);
        if (!text) continue;
        CHECK_OK(ctx, kiln_graph_parse(ctx, text, strlen(text), "printed.kir", &h));
        char *again = h ? kiln_graph_to_string(h) : NULL;
        CHECK_MSG(again && !strcmp(text, again), "%s: the parsed graph prints differently:\n%s\n%s",
                  names[w], text, again ? again : "(none)");
        /* a sub-graph's node keeps its location: "      %2 = ...  # test_control_text.c:N" */
        CHECK_CONTAINS(text, "    graph ");
        CHECK_MSG(strstr(text, "\n      %2 = ") &&
                      strstr(strstr(text, "\n      %2 = "), "# test_control_text.c:"),
                  "%s: no location inside a sub-graph:\n%s", names[w], text);
        CHECK_OK(ctx, kiln_graph_save(g, path));
        CHECK_OK(ctx, kiln_graph_load(ctx, path, &l));
        char *saved = test_read_file(path);
        if (l) CHECK_OK(ctx, kiln_graph_save(l, path));
        char *resaved = test_read_file(path);
        CHECK_MSG(saved && resaved && !strcmp(saved, resaved), "%s: save, load, save differs",
                  names[w]);
        if (h) same_results(ctx, g, h, names[w]);
        if (l) same_results(ctx, g, l, names[w]);
        free(saved);
        free(resaved);
        kiln_string_free(ctx, text);
        kiln_string_free(ctx, again);
        kiln_graph_destroy(h);
        kiln_graph_destroy(l);
        kiln_graph_destroy(g);
    }
}

/* ------------------------------------------------------------ errors ---- */

typedef struct bad_text {
    const char *text, *want;
    kiln_status status;
} bad_text;

/* A scan of a carry f32[] over xs f32[4]: c + x each step. */
#define SCAN_HEAD                                                                                  \
    "graph t(%1: f32[] \"c\", %2: f32[4] \"xs\") {\n"                                              \
    "  %1 = parameter 0 \"c\" : f32[]\n"                                                           \
    "  %2 = parameter 1 \"xs\" : f32[4]\n"
#define BODY(c, x)                                                                                 \
    "    graph body(%1: f32[" c "] \"carry0\", %2: f32[" x "] \"x0\") {\n"                         \
    "      %1 = parameter 0 \"carry0\" : f32[" c "]\n"                                             \
    "      %2 = parameter 1 \"x0\" : f32[" x "]\n"                                                 \
    "      %3 = add(%1, %1) : f32[" c "]\n"                                                        \
    "      return (%3)\n"                                                                          \
    "    }\n"
#define SCAN_LINE "  %3 = scan(%1, %2) carries=1 xs=1 length=4 : f32[]\n"
#define TAIL      "  return (%3)\n}\n"
/* A cond on a bool p between two branches of x */
#define COND_HEAD                                                                                  \
    "graph t(%1: i32[] \"i\", %2: f32[] \"x\") {\n"                                                \
    "  %1 = parameter 0 \"i\" : i32[]\n"                                                           \
    "  %2 = parameter 1 \"x\" : f32[]\n"
#define BRANCH(name, op)                                                                           \
    "    graph " name "(%1: f32[] \"operand0\") {\n"                                               \
    "      %1 = parameter 0 \"operand0\" : f32[]\n"                                                \
    "      %2 = " op "(%1) : f32[]\n"                                                              \
    "      return (%2)\n"                                                                          \
    "    }\n"

static const bad_text bad[] = {
    /* the well-formed ones first: a scan, a cond of three branches */
    {SCAN_HEAD SCAN_LINE BODY("", "") TAIL, NULL, KILN_STATUS_OK},
    {COND_HEAD "  %3 = cond(%1, %2) operands=1 : f32[]\n" BRANCH("branch0", "neg")
         BRANCH("branch1", "exp") BRANCH("branch2", "abs") TAIL,
     NULL, KILN_STATUS_OK},
    /* an unterminated block, at the end of the text and before the outer graph goes on */
    {SCAN_HEAD SCAN_LINE "    graph body(%1: f32[] \"carry0\", %2: f32[] \"x0\") {\n"
                         "      %1 = parameter 0 \"carry0\" : f32[]\n",
     "t.kir:7: expected a value (%N = ...) or \"return\", found the end of the text inside "
     "graph 'body' (line 5)",
     KILN_STATUS_INVALID_ARGUMENT},
    {SCAN_HEAD SCAN_LINE "    graph body(%1: f32[] \"carry0\", %2: f32[] \"x0\") {\n"
                         "      %1 = parameter 0 \"carry0\" : f32[]\n"
                         "      %2 = parameter 1 \"x0\" : f32[]\n"
                         "      return (%1)\n" TAIL,
     "t.kir:9: expected \"}\"", KILN_STATUS_INVALID_ARGUMENT},
    /* a sub-graph whose parameters do not match the node's inputs */
    {SCAN_HEAD SCAN_LINE BODY("2", "") TAIL,
     "t.kir:4: kiln_scan: 'body' takes its parameter 0 (a carry) as f32[2], but it is f32[]",
     KILN_STATUS_SHAPE},
    {SCAN_HEAD SCAN_LINE BODY("", "4") TAIL, "t.kir:4: kiln_scan: 'body' takes its parameter 1",
     KILN_STATUS_SHAPE},
    {SCAN_HEAD "  %3 = scan(%1, %2) carries=1 xs=1 length=5 : f32[]\n" BODY("", "") TAIL,
     "t.kir:4: kiln_scan: scanned array 0 must have a leading axis of the length 5",
     KILN_STATUS_SHAPE},
    {SCAN_HEAD "  %3 = scan(%1, %2, %2) carries=1 xs=1 length=4 : f32[]\n" BODY("", "") TAIL,
     "t.kir:4: scan has 3 operands, but its layout takes 2", KILN_STATUS_INVALID_ARGUMENT},
    {SCAN_HEAD "  %3 = scan(%1, %2) carries=2 xs=1 length=4 : f32[]\n" BODY("", "") TAIL,
     "t.kir:4: scan: its sub-graph 'body' has 2 parameters, fewer than the 3 the node passes it",
     KILN_STATUS_INVALID_ARGUMENT},
    {SCAN_HEAD "  %3 = scan(%1, %2) carries=1 xs=1 length=-4 : f32[]\n" BODY("", "") TAIL,
     "t.kir:4: scan: length=-4 is negative", KILN_STATUS_INVALID_ARGUMENT},
    {SCAN_HEAD "  %3 = scan(%1, %2) carries=1 length=4 : f32[]\n" BODY("", "") TAIL,
     "t.kir:4: scan needs xs=N", KILN_STATUS_INVALID_ARGUMENT},
    {SCAN_HEAD "  %3 = scan(%1, %2) carries=1 xs=1 length=4 sideways : f32[]\n" BODY("", "") TAIL,
     "t.kir:4: scan has no attribute \"sideways\"", KILN_STATUS_INVALID_ARGUMENT},
    {SCAN_HEAD "  %3 = scan(%1, %2) carries=1 xs=1 length=4 : f32[4]\n" BODY("", "") TAIL,
     "t.kir:4: %3: the text says f32[4], but the op gives f32[]", KILN_STATUS_INVALID_ARGUMENT},
    /* the number of blocks */
    {SCAN_HEAD SCAN_LINE TAIL,
     "t.kir:5: the scan at line 4 runs 1 sub-graph (its body), but 0 follow it",
     KILN_STATUS_INVALID_ARGUMENT},
    {SCAN_HEAD SCAN_LINE BODY("", "") BODY("", "") TAIL,
     "t.kir:11: the scan at line 4 runs 1 sub-graph (its body): this graph is one more",
     KILN_STATUS_INVALID_ARGUMENT},
    {SCAN_HEAD "  %3 = add(%1, %1) : f32[]\n" BODY("", "") TAIL,
     "t.kir:5: a graph block here follows no while, scan or cond line",
     KILN_STATUS_INVALID_ARGUMENT},
    {COND_HEAD "  %3 = cond(%1, %2) operands=1 : f32[]\n" TAIL,
     "t.kir:5: the cond at line 4 has no branches", KILN_STATUS_INVALID_ARGUMENT},
    {COND_HEAD "  %3 = cond(%2, %2) operands=1 : f32[]\n" BRANCH("branch0", "neg") TAIL,
     "t.kir:4: kiln_cond: the branch index must be an i32 scalar, not f32", KILN_STATUS_DTYPE},
    {COND_HEAD "  %3 = cond(%1, %2) operands=1 : f32[]\n" BRANCH(
         "branch0", "neg") "    graph branch1(%1: f32[] \"operand0\") {\n"
                           "      %1 = parameter 0 \"operand0\" : f32[]\n"
                           "      %2 = convert(%1) : f64[]\n"
                           "      return (%2)\n"
                           "    }\n" TAIL,
     "t.kir:4: kiln_cond: 'branch1' returns f64[] as its output 0, where branch 0's is f32[]",
     KILN_STATUS_SHAPE},
    /* results */
    {SCAN_HEAD SCAN_LINE BODY("", "") "  %4 = result(%3) index=1 : f32[]\n  return (%4)\n}\n",
     "t.kir:11: result index=1: the scan has one result, itself", KILN_STATUS_INVALID_ARGUMENT},
    {SCAN_HEAD "  %3 = result(%1) index=1 : f32[]\n  return (%3)\n}\n",
     "t.kir:4: result reads a parameter: only a while, scan or cond has results",
     KILN_STATUS_INVALID_ARGUMENT},
    {SCAN_HEAD "  %3 = scan(%1, %2) carries=1 xs=1 length=4 : f32[]\n"
               "    graph body(%1: f32[] \"carry0\", %2: f32[] \"x0\") {\n"
               "      %1 = parameter 0 \"carry0\" : f32[]\n"
               "      %2 = parameter 1 \"x0\" : f32[]\n"
               "      return (%1, %2)\n"
               "    }\n"
               "  %4 = result(%3) index=1 : f32[4]\n"
               "  %5 = result(%3) index=1 : f32[4]\n"
               "  return (%5)\n}\n",
     "t.kir:11: a second result index=1 of one scan", KILN_STATUS_INVALID_ARGUMENT},
    /* an error inside a sub-graph names its own line */
    {SCAN_HEAD SCAN_LINE "    graph body(%1: f32[] \"carry0\", %2: f32[] \"x0\") {\n"
                         "      %1 = parameter 0 \"carry0\" : f32[]\n"
                         "      %2 = parameter 1 \"x0\" : f32[]\n"
                         "      %3 = frobnicate(%1) : f32[]\n" TAIL,
     "t.kir:8: unknown op \"frobnicate\"", KILN_STATUS_INVALID_ARGUMENT},
    {SCAN_HEAD SCAN_LINE "    graph body(%1: f32[] \"carry0\", %2: f32[] \"x0\") {\n"
                         "      %1 = parameter 0 \"carry0\" : f32[]\n"
                         "      %2 = parameter 1 \"x0\" : f32[]\n"
                         "      %3 = add(%1, %9) : f32[]\n" TAIL,
     "t.kir:8: %9 is used before it is defined", KILN_STATUS_INVALID_ARGUMENT},
};

static void broken_texts(kiln_context *ctx) {
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        kiln_graph *g = (kiln_graph *)1;
        kiln_status s = kiln_graph_parse(ctx, bad[i].text, strlen(bad[i].text), "t.kir", &g);
        CHECK_MSG(s == bad[i].status, "text %zu: status %s, wanted %s (%s)", i, kiln_status_name(s),
                  kiln_status_name(bad[i].status), kiln_last_error(ctx));
        if (bad[i].want) {
            CHECK_MSG(strstr(kiln_last_error(ctx), bad[i].want),
                      "text %zu: message \"%s\" lacks \"%s\"", i, kiln_last_error(ctx),
                      bad[i].want);
            CHECK(g == NULL);
        }
        kiln_graph_destroy(g);
    }
}

/* Every prefix of a nested text fails cleanly, or once complete loads, never reading past the
 * length it was given. */
static void prefixes(kiln_context *ctx) {
    kiln_graph *g = build(ctx, G_NESTED);
    char *good = kiln_graph_to_string(g);
    size_t len = good ? strlen(good) : 0;
    char *copy = malloc(len + 1);
    for (size_t n = 0; n <= len; n++) {
        memcpy(copy, good, n); /* not terminated: reading past n would be caught by ASan */
        kiln_graph *h = NULL;
        kiln_status s = kiln_graph_parse(ctx, copy, n, "t.kir", &h);
        CHECK_MSG(n + 1 < len ? s != KILN_STATUS_OK : s == KILN_STATUS_OK,
                  "prefix of %zu bytes: %s", n, kiln_last_error(ctx));
        CHECK_MSG(s == KILN_STATUS_OK || !strncmp(kiln_last_error(ctx), "t.kir:", 6),
                  "prefix of %zu bytes: \"%s\" does not start with the text's name", n,
                  kiln_last_error(ctx));
        kiln_graph_destroy(h);
    }
    free(copy);
    kiln_string_free(ctx, good);
    kiln_graph_destroy(g);
}

/* Scans nested `depth` deep, each body a scan of the next over no xs, the innermost
 * returning its carry (indented as printed, up to 40 columns: the reader ignores it). */
#define IND(d) (2 * ((d) < 20 ? (d) : 20))
static char *nested_text(int depth) {
    size_t cap = (size_t)depth * 400 + 1024, len = 0;
    char *t = malloc(cap);
    len += (size_t)snprintf(t + len, cap - len, "graph t(%%1: f32[] \"c\") {\n");
    for (int d = 0; d < depth; d++) {
        len += (size_t)snprintf(t + len, cap - len,
                                "%*s%%1 = parameter 0 \"c\" : f32[]\n"
                                "%*s%%2 = scan(%%1) carries=1 xs=0 length=1 : f32[]\n"
                                "%*sgraph body(%%1: f32[] \"c\") {\n",
                                IND(d) + 2, "", IND(d) + 2, "", IND(d + 1), "");
    }
    len += (size_t)snprintf(t + len, cap - len,
                            "%*s%%1 = parameter 0 \"c\" : f32[]\n%*sreturn (%%1)\n%*s}\n",
                            IND(depth) + 2, "", IND(depth) + 2, "", IND(depth), "");
    for (int d = depth - 1; d >= 0; d--)
        len += (size_t)snprintf(t + len, cap - len, "%*sreturn (%%2)\n%*s}\n", IND(d) + 2, "",
                                IND(d), "");
    return t;
}

static void depth_limit(kiln_context *ctx) {
    kiln_graph *g = NULL;
    char *t = nested_text(64);
    CHECK_OK(ctx, kiln_graph_parse(ctx, t, strlen(t), "deep.kir", &g));
    if (g) {
        kiln_array *c = NULL, *out = NULL;
        float one = 1.5f, got = 0;
        kiln_array_create(ctx, KILN_DTYPE_F32, 0, NULL, &one, &c);
        CHECK_OK(ctx, kiln_interpret(g, 1, &c, 1, &out));
        if (out) kiln_array_copy_to_host(out, &got, sizeof got);
        CHECK(got == 1.5f);
        kiln_array_destroy(c);
        kiln_array_destroy(out);
    }
    kiln_graph_destroy(g);
    free(t);
    t = nested_text(65);
    g = (kiln_graph *)1;
    CHECK_STATUS(kiln_graph_parse(ctx, t, strlen(t), "deep.kir", &g), KILN_STATUS_INVALID_ARGUMENT);
    CHECK(g == NULL);
    CHECK_CONTAINS(kiln_last_error(ctx), "sub-graphs nested more than 64 deep");
    CHECK_CONTAINS(kiln_last_error(ctx), "deep.kir:");
    free(t);
    /* a thousand levels: refused as quickly, the stack untouched */
    t = nested_text(1000);
    CHECK_STATUS(kiln_graph_parse(ctx, t, strlen(t), "deep.kir", &g), KILN_STATUS_INVALID_ARGUMENT);
    free(t);
}

/* ------------------------------------------------- fuzz_builder's findings ---- */

/* An outer scan body that makes `pad` nodes, then a scan whose body captures a value from two
 * levels out: the capture adds a parameter to the outer body while its builder holds its
 * carries' types, so they must not be pointers into its nodes. */
typedef struct grow {
    kiln_value s;
    int pad;
} grow;

static int grow_inner(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in;
    const grow *w = user;
    outs[0] = kiln_add(g, in[0], kiln_mul(g, in[1], kiln_capture(g, w->s)));
    return 1;
}

static int grow_outer(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in;
    const grow *w = user;
    kiln_value acc = in[0], r;
    for (int i = 0; i < w->pad; i++) acc = kiln_add(g, acc, kiln_scalar(g, KILN_DTYPE_F64, 0));
    int n = 0;
    if (kiln_scan(g, grow_inner, user, 1, &acc, 1, &in[1], NULL, &n, &r)) return -1;
    outs[0] = r;
    return 1;
}

/* Run under AddressSanitizer (make test-asan), these read freed node arrays before the fix:
 * kiln_switch held its index's node across the clamp it appends, and kiln_scan and
 * kiln_while_loop their carries' nodes across tracing the body. */
static void growing_graphs(kiln_context *ctx) {
    int64_t md[2] = {2, 3};
    for (int pad = 0; pad < 70; pad++) {
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, "grow", &g);
        for (int i = 0; i < pad; i++) kiln_scalar(g, KILN_DTYPE_F32, i);
        kiln_value ix = kiln_parameter(g, "i", KILN_DTYPE_I64, 0, NULL);
        kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F64, 0, NULL);
        kiln_value m = kiln_parameter(g, "m", KILN_DTYPE_F64, 2, md), outs[2];
        outer o = {{x, x}};
        kiln_fn fns[2] = {br_add, br_mul};
        int n = 0;
        CHECK_OK(ctx, kiln_switch(g, ix, 2, fns, &o, 1, &x, &n, outs));
        grow w = {x, pad};
        CHECK_OK(ctx, kiln_scan(g, grow_outer, &w, 1, &x, 1, &m, NULL, &n, &outs[1]));
        CHECK_OK(ctx, kiln_graph_finish(g, 2, outs));
        kiln_graph_destroy(g);
    }
}

/* The reference's cumsum over an empty axis between axes of 2^30 and 2^31: no work, at once
 * (it looped over every row around the empty axis). */
static void empty_cumsum(kiln_context *ctx) {
    int64_t d[3] = {(int64_t)1 << 30, 0, (int64_t)1 << 31};
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "cumsum", &g);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 3, d);
    kiln_value y = kiln_cumsum(g, x, 1, false);
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
    kiln_array *a = NULL, *r = NULL;
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 3, d, NULL, &a));
    CHECK_OK(ctx, kiln_interpret(g, 1, &a, 1, &r));
    kiln_array_destroy(a);
    kiln_array_destroy(r);
    kiln_graph_destroy(g);
}

int main(void) {
    if (!mkdtemp(tmpdir)) return perror("mkdtemp"), 2;
    kiln_context *ctx = test_context();
    if (!ctx) return 1;
    round_trips(ctx);
    broken_texts(ctx);
    prefixes(ctx);
    depth_limit(ctx);
    growing_graphs(ctx);
    empty_cumsum(ctx);
    kiln_context_destroy(ctx);
    test_remove_dir(tmpdir);
    return test_summary("test_control_text");
}
