/* test_ir.c — the IR: the printer's stable text form (exact lines), the verifier on graphs
 * broken through the internals, graph queries, dtype and status names, and the config
 * parsers shared with the context.
 *
 * The expected text is written out by hand from the format print.c documents: one op a
 * line, "  %<id> = <op>(<inputs>) <attrs> : <type>", and when the op has a location, a
 * comment "# <basename>:<line>" starting at column 54 (at least one space before it). */
#include "test.h"

#include "base/base.h"
#include "ir/ir.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

static kiln_context *ctx;

/* One expected line: two spaces, the op text, and the location comment if line > 0. */
static void expect_line(char *buf, size_t size, const char *text, const char *file, int line) {
    if (line <= 0) {
        snprintf(buf, size, "  %s\n", text);
        return;
    }
    size_t w = strlen(text);
    snprintf(buf, size, "  %s%*s# %s:%d\n", text, w < 52 ? (int)(52 - w) : 1, "", file, line);
}

/* Checks that `text` consists of exactly the given lines (NULL-terminated pairs of text and
 * location line; the header and the closing lines are given with line -1). */
static void check_text(int at, const char *text, const char *const *lines, const int *locs) {
    char want[8192] = "";
    size_t k = 0;
    for (int i = 0; lines[i]; i++) {
        char one[512];
        if (locs[i] < 0)
            snprintf(one, sizeof one, "%s\n", lines[i]);
        else
            expect_line(one, sizeof one, lines[i], "test_ir.c", locs[i]);
        k += (size_t)snprintf(want + k, sizeof want - k, "%s", one);
    }
    if (text && strcmp(text, want) == 0) {
        test_passed++;
        return;
    }
    test_failed++;
    fprintf(stderr, "test_ir.c:%d: printed text differs.\n--- got:\n%s--- want:\n%s---\n", at,
            text ? text : "(null)", want);
}

/* ----------------------------------------------------------------- printer ---- */

static void test_print_small_graph(void) {
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "small", &g));
    const int l1 = __LINE__ + 1;
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, DIMS(2, 3));
    const int l2 = __LINE__ + 1;
    kiln_value w = kiln_parameter(g, "w", KILN_DTYPE_F32, 2, DIMS(3, 4));
    const int l3 = __LINE__ + 1;
    kiln_value y = kiln_matmul(g, x, w);
    const int l4 = __LINE__ + 1; /* the nested scalar and the broadcast get this line too */
    kiln_value h = kiln_add(g, y, kiln_scalar(g, KILN_DTYPE_F32, 0.5));
    const int l5 = __LINE__ + 1;
    kiln_value s = kiln_reduce_sum(g, h, 1, (const int[]){1}, false);
    CHECK_OK(ctx, kiln_graph_finish(g, 2, (kiln_value[]){s, h}));
    CHECK(kiln_graph_num_nodes(g) == 7);
    CHECK(kiln_graph_num_parameters(g) == 2);
    CHECK(kiln_graph_num_outputs(g) == 2);

    char *text = kiln_graph_to_string(g);
    static const char *const lines[] = {
        "graph small(%1: f32[2,3] \"x\", %2: f32[3,4] \"w\") {",
        "%1 = parameter 0 \"x\" : f32[2,3]",
        "%2 = parameter 1 \"w\" : f32[3,4]",
        "%3 = dot_general(%1, %2) lhs_contract=[1] rhs_contract=[0] : f32[2,4]",
        "%4 = constant 0.5 : f32[]",
        "%5 = broadcast_in_dim(%4) dims=[] : f32[2,4]",
        "%6 = add(%3, %5) : f32[2,4]",
        "%7 = reduce_sum(%6) axes=[1] : f32[2]",
        "  return (%7, %6)",
        "}",
        NULL,
    };
    const int locs[] = {-1, l1, l2, l3, l4, l4, l4, l5, -1, -1};
    check_text(__LINE__, text, lines, locs);

    /* kiln_graph_print writes the same text */
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (f) {
        CHECK_OK(ctx, kiln_graph_print(g, f));
        char buf[8192] = "";
        rewind(f);
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = 0;
        CHECK(text && strcmp(buf, text) == 0);
        fclose(f);
    }
    kiln_string_free(ctx, text);
    kiln_graph_destroy(g);
}

/* Attributes of every kind of op, constants of every dtype, names that need escaping and
 * nodes without a location (kiln_graph_at(g, NULL, 0) clears it). */
static void test_print_attributes(void) {
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "attrs", &g));
    /* (fn)(...) calls the function without the location macro; the location was cleared */
    kiln_graph_at(g, NULL, 0);
    kiln_value a = (kiln_parameter)(g, "a\"b\\c\n", KILN_DTYPE_F32, 2, DIMS(2, 3));
    kiln_value p = (kiln_parameter)(g, NULL, KILN_DTYPE_BOOL, 0, NULL);
    (kiln_constant)(g, KILN_DTYPE_F32, 1, DIMS(3), (const float[]){1, 2.5f, -3});
    (kiln_constant)(g, KILN_DTYPE_F64, 0, NULL, (const double[]){0.1});
    (kiln_constant)(g, KILN_DTYPE_I64, 1, DIMS(2), (const int64_t[]){9007199254740993ll, -1});
    (kiln_constant)(g, KILN_DTYPE_I32, 0, NULL, (const int32_t[]){-7});
    (kiln_constant)(g, KILN_DTYPE_BOOL, 1, DIMS(3), (const uint8_t[]){1, 0, 5});
    (kiln_constant)(g, KILN_DTYPE_F32, 2, DIMS(3, 3), (const float[9]){0});
    (kiln_constant)(g, KILN_DTYPE_F32, 1, DIMS(0), NULL);
    (kiln_transpose)(g, a, (const int[]){1, 0});
    (kiln_slice)(g, a, DIMS(0, 1), DIMS(2, 3), DIMS(1, 2));
    (kiln_pad)(g, a, (kiln_scalar)(g, KILN_DTYPE_F32, 0), DIMS(1, -1), DIMS(0, 2), DIMS(0, 1));
    (kiln_iota)(g, KILN_DTYPE_I32, 2, DIMS(2, 3), 1);
    (kiln_concatenate)(g, 4, (kiln_value[]){a, a, a, a}, 0);
    (kiln_compare)(g, a, a, KILN_CMP_LE);
    (kiln_select)(g, p, a, a);
    (kiln_convert)(g, a, KILN_DTYPE_I64);
    (kiln_reduce_max)(g, a, 0, NULL, false);
    kiln_value b = (kiln_parameter)(g, "b", KILN_DTYPE_F32, 3, DIMS(5, 3, 4));
    kiln_dot_dims dd = {.n_contract = 1, .lhs_contract = {2}, .rhs_contract = {1}, .n_batch = 1};
    (kiln_dot_general)(g, (kiln_broadcast_to)(g, a, 3, DIMS(5, 2, 3)), b, &dd);
    kiln_value t = (kiln_iota)(g, KILN_DTYPE_I64, 1, DIMS(2), 0);
    (kiln_take_rows)(g, a, t);
    /* a location given as a path prints as the file's name */
    kiln_graph_at(g, "/some/dir/model.c", 42);
    (kiln_neg)(g, a);
    kiln_graph_at(g, "plain.c", 7);
    (kiln_abs)(g, a);
    char *text = kiln_graph_to_string(g);
    static const char *const lines[] = {
        "graph attrs(%1: f32[2,3] \"a\\\"b\\\\c\\x0a\", %2: bool[], %21: f32[5,3,4] \"b\") {",
        "%1 = parameter 0 \"a\\\"b\\\\c\\x0a\" : f32[2,3]",
        "%2 = parameter 1 : bool[]",
        "%3 = constant {1, 2.5, -3} : f32[3]",
        "%4 = constant 0.10000000000000001 : f64[]",
        "%5 = constant {9007199254740993, -1} : i64[2]",
        "%6 = constant -7 : i32[]",
        "%7 = constant {true, false, true} : bool[3]",
        "%8 = constant {9 values} : f32[3,3]",
        "%9 = constant {} : f32[0]",
        "%10 = transpose(%1) perm=[1,0] : f32[3,2]",
        "%11 = slice(%1) start=[0,1] limit=[2,3] stride=[1,2] : f32[2,1]",
        "%12 = constant 0 : f32[]",
        "%13 = pad(%1, %12) lo=[1,-1] hi=[0,2] interior=[0,1] : f32[3,6]",
        "%14 = iota axis=1 : i32[2,3]",
        "%15 = concatenate(%1, %1, %1, %1) axis=0 : f32[8,3]",
        "%16 = compare(%1, %1) le : bool[2,3]",
        "%17 = broadcast_in_dim(%2) dims=[] : bool[2,3]",
        "%18 = select(%17, %1, %1) : f32[2,3]",
        "%19 = convert(%1) : i64[2,3]",
        "%20 = reduce_max(%1) axes=[0,1] : f32[]",
        "%21 = parameter 2 \"b\" : f32[5,3,4]",
        "%22 = broadcast_in_dim(%1) dims=[1,2] : f32[5,2,3]",
        "%23 = dot_general(%22, %21) lhs_batch=[0] rhs_batch=[0] lhs_contract=[2] "
        "rhs_contract=[1] : f32[5,2,4]",
        "%24 = iota axis=0 : i64[2]",
        "%25 = take_rows(%1, %24) : f32[2,3]",
        NULL, /* the two located lines are checked below */
    };
    int locs[64];
    for (int i = 0; i < 64; i++) locs[i] = 0;
    locs[0] = -1;
    /* Compare everything up to the located lines, then those lines on their own. */
    char head[8192] = "";
    if (text) {
        const char *cut = strstr(text, "  %26 = ");
        size_t n = cut ? (size_t)(cut - text) : strlen(text);
        memcpy(head, text, n < sizeof head - 1 ? n : sizeof head - 1);
    }
    check_text(__LINE__, head, lines, locs);
    char want[256];
    expect_line(want, sizeof want, "%26 = neg(%1) : f32[2,3]", "model.c", 42);
    CHECK_CONTAINS(text, want);
    expect_line(want, sizeof want, "%27 = abs(%1) : f32[2,3]", "plain.c", 7);
    CHECK_CONTAINS(text, want);
    CHECK_CONTAINS(text, "  return ()\n}\n"); /* not finished: no outputs yet */
    CHECK(text && !strstr(text, "/some/dir"));
    kiln_string_free(ctx, text);
    kiln_graph_destroy(g);
}

/* ---------------------------------------------------------------- verifier ---- */

/* x, y: parameters f32[2,3]; %3 = add(x, y); %4 = constant f32[2]; outputs (%3). */
static kiln_graph *good_graph(void) {
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "v", &g));
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, DIMS(2, 3));
    kiln_value y = kiln_parameter(g, "y", KILN_DTYPE_F32, 2, DIMS(2, 3));
    kiln_value s = kiln_add(g, x, y);
    kiln_constant(g, KILN_DTYPE_F32, 1, DIMS(2), (const float[]){1, 2});
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &s));
    CHECK_OK(ctx, ir_verify(g));
    return g;
}

static void expect_verify(int at, kiln_graph *g, const char *a, const char *b) {
    kiln_status s = ir_verify(g);
    const char *m = kiln_last_error(ctx);
    if (s == KILN_STATUS_INTERNAL && strstr(m, "IR verifier: graph 'v'") && strstr(m, a) &&
        (!b || strstr(m, b))) {
        test_passed++;
        return;
    }
    test_failed++;
    fprintf(stderr, "test_ir.c:%d: ir_verify gave %s: \"%s\"; want \"%s\" and \"%s\"\n", at,
            kiln_status_name(s), m, a, b ? b : "");
}

/* The graph name the two cases below use: a newline, quotes and a backslash. */
static kiln_graph *awkward_name_graph(void) {
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "two\nlines \"q\" \\", &g));
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, DIMS(2));
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &x));
    return g;
}

/* A graph name with a newline, quotes or a backslash is escaped, so the header stays on
 * its line (parameter names always were); a plain name prints bare. */
static void test_print_graph_name_escaped(void) {
    kiln_graph *g = awkward_name_graph();
    char *text = kiln_graph_to_string(g);
    CHECK(text &&
          strncmp(text, "graph \"two\\x0alines \\\"q\\\" \\\\\"(%1: f32[2] \"x\") {\n",
                  strlen("graph \"two\\x0alines \\\"q\\\" \\\\\"(%1: f32[2] \"x\") {\n")) == 0);
    int lines = 0;
    for (const char *c = text ? text : ""; *c; c++) lines += *c == '\n';
    CHECK(lines == 4); /* header, one op, return, closing brace */
    kiln_string_free(ctx, text);
    kiln_graph_destroy(g);
}

/* The memory report escapes the graph name the same way, keeping it on line one. */
static void test_report_graph_name_escaped(void) {
    kiln_graph *g = awkward_name_graph();
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, &(kiln_compile_options){.keep_ir = true}, &e));
    char *report = kiln_executable_memory_report(e);
    CHECK(report && strncmp(report, "memory plan of 'two\\x0alines \\\"q\\\" \\\\':",
                            strlen("memory plan of 'two\\x0alines \\\"q\\\" \\\\':")) == 0);
    if (report && !strchr(report, '\n'))
        CHECK(0);
    else if (report)
        CHECK(strchr(report, '\n') > strstr(report, "':")); /* name on line one */
    kiln_string_free(ctx, report);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

static void test_verifier(void) {
    kiln_graph *g = good_graph();
    ir_node *add = ir_node_at(g, 3);
    add->shape.dims[0] = 7;
    expect_verify(__LINE__, g,
                  "node %3: recorded type f32[7,3] differs from the inferred type "
                  "f32[2,3]",
                  "\n  %3 = add(%1, %2) : f32[7,3]");
    add->shape.dims[0] = 2;
    add->dtype = KILN_DTYPE_F64;
    expect_verify(__LINE__, g, "recorded type f64[2,3] differs from the inferred type f32[2,3]",
                  NULL);
    add->dtype = KILN_DTYPE_F32;
    CHECK_OK(ctx, ir_verify(g));

    /* inputs must precede the node: itself, a later node, node 0, past the end */
    add->in_inline[1] = 3;
    expect_verify(__LINE__, g, "node %3: input 1 (%3) does not precede the node", NULL);
    add->in_inline[1] = 4;
    expect_verify(__LINE__, g, "input 1 (%4) does not precede", NULL);
    add->in_inline[0] = 0;
    expect_verify(__LINE__, g, "input 0 (%0) does not precede", NULL);
    add->in_inline[0] = 1000;
    expect_verify(__LINE__, g, "input 0 (%1000) does not precede", NULL);
    add->in_inline[0] = 1, add->in_inline[1] = 2;
    CHECK_OK(ctx, ir_verify(g));

    /* a type rule broken by an input: the inference message is passed on */
    ir_node_at(g, 2)->dtype = KILN_DTYPE_I32;
    expect_verify(__LINE__, g, "node %3: operand dtypes differ (f32 vs i32)", NULL);
    ir_node_at(g, 2)->dtype = KILN_DTYPE_F32;
    ir_node_at(g, 2)->shape.dims[1] = 4;
    expect_verify(__LINE__, g, "node %3: operand shapes differ", NULL);
    ir_node_at(g, 2)->shape.dims[1] = 3;

    add->op = IR_NUM_OPS;
    expect_verify(__LINE__, g, "node %3: op is out of range", NULL);
    add->op = IR_ADD;
    add->n_in = 1;
    expect_verify(__LINE__, g, "node %3: add takes 2 operands, has 1", NULL);
    add->n_in = 2;

    /* parameters: index and list must agree */
    g->params[0] = 2, g->params[1] = 1;
    expect_verify(__LINE__, g, "node %1: parameter index does not match", NULL);
    g->params[0] = 1, g->params[1] = 2;
    g->params[2] = 3, g->n_params = 3;
    expect_verify(__LINE__, g, "the parameter list has 3 entries for 2 parameter nodes", NULL);
    g->n_params = 2;

    /* constants need their data */
    ir_node *c = ir_node_at(g, 4);
    void *data = c->data;
    c->data = NULL;
    expect_verify(__LINE__, g, "node %4: constant without data", NULL);
    c->data = data;

    g->outputs[0] = 9;
    expect_verify(__LINE__, g, "output 0 (%9) is not a node of the graph", NULL);
    g->outputs[0] = 3;
    CHECK_OK(ctx, ir_verify(g));
    kiln_graph_destroy(g);

    /* kiln_graph_finish runs the verifier and keeps its message as the graph's error */
    CHECK_OK(ctx, kiln_graph_create(ctx, "v", &g));
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, DIMS(4));
    kiln_value e = kiln_exp(g, x);
    ir_node_at(g, e.id)->shape.dims[0] = 5;
    CHECK_STATUS(kiln_graph_finish(g, 1, &e), KILN_STATUS_INTERNAL);
    CHECK_STATUS(kiln_graph_status(g), KILN_STATUS_INTERNAL);
    CHECK_CONTAINS(kiln_graph_error(g), "IR verifier: graph 'v', node %2: recorded type f32[5]");
    CHECK(strcmp(kiln_graph_error(g), kiln_last_error(ctx)) == 0);
    CHECK(!kiln_value_ok(kiln_neg(g, x))); /* the graph is dead */
    kiln_graph_destroy(g);
}

/* ------------------------------------------------------- names and parsers ---- */

static void test_dtypes_and_statuses(void) {
    static const struct {
        kiln_dtype t;
        const char *name;
        size_t size;
    } dt[] = {{KILN_DTYPE_F32, "f32", 4},    {KILN_DTYPE_F64, "f64", 8},
              {KILN_DTYPE_I32, "i32", 4},    {KILN_DTYPE_I64, "i64", 8},
              {KILN_DTYPE_BOOL, "bool", 1},  {KILN_DTYPE_BF16, "bf16", 2},
              {KILN_DTYPE_F16, "f16", 2},    {KILN_DTYPE_INVALID, "invalid", 0},
              {(kiln_dtype)8, "invalid", 0}, {(kiln_dtype)-1, "invalid", 0}};
    for (size_t i = 0; i < sizeof dt / sizeof dt[0]; i++) {
        CHECK(strcmp(kiln_dtype_name(dt[i].t), dt[i].name) == 0);
        CHECK(kiln_dtype_itemsize(dt[i].t) == dt[i].size);
    }
    /* jnp.promote_types with the 16-bit floats: above every integer, below f32, and bf16
     * with f16 is f32 */
    static const kiln_dtype pr[][3] = {
        {KILN_DTYPE_BF16, KILN_DTYPE_I32, KILN_DTYPE_BF16},
        {KILN_DTYPE_I64, KILN_DTYPE_F16, KILN_DTYPE_F16},
        {KILN_DTYPE_BOOL, KILN_DTYPE_BF16, KILN_DTYPE_BF16},
        {KILN_DTYPE_BF16, KILN_DTYPE_F16, KILN_DTYPE_F32},
        {KILN_DTYPE_F16, KILN_DTYPE_BF16, KILN_DTYPE_F32},
        {KILN_DTYPE_BF16, KILN_DTYPE_F32, KILN_DTYPE_F32},
        {KILN_DTYPE_F64, KILN_DTYPE_F16, KILN_DTYPE_F64},
        {KILN_DTYPE_BF16, KILN_DTYPE_BF16, KILN_DTYPE_BF16},
        {KILN_DTYPE_F16, KILN_DTYPE_INVALID, KILN_DTYPE_INVALID},
    };
    for (size_t i = 0; i < sizeof pr / sizeof pr[0]; i++)
        CHECK_MSG(kiln_promote_types(pr[i][0], pr[i][1]) == pr[i][2], "promote(%s, %s)",
                  kiln_dtype_name(pr[i][0]), kiln_dtype_name(pr[i][1]));
    static const char *const names[] = {
        "KILN_STATUS_OK",      "KILN_STATUS_INVALID_ARGUMENT", "KILN_STATUS_SHAPE",
        "KILN_STATUS_DTYPE",   "KILN_STATUS_HOST_OOM",         "KILN_STATUS_DEVICE_OOM",
        "KILN_STATUS_CONFIG",  "KILN_STATUS_UNIMPLEMENTED",    "KILN_STATUS_INTERNAL",
        "KILN_STATUS_IO",      "KILN_STATUS_BACKEND",          "KILN_STATUS_CONSUMED",
        "KILN_STATUS_TIMEOUT",
    };
    for (int s = KILN_STATUS_OK; s <= KILN_STATUS_TIMEOUT; s++)
        CHECK(strcmp(kiln_status_name((kiln_status)s), names[s]) == 0);
    CHECK(strcmp(kiln_status_name((kiln_status)(KILN_STATUS_TIMEOUT + 1)), "KILN_STATUS_UNKNOWN") ==
          0);
    CHECK(strcmp(kiln_status_name((kiln_status)-1), "KILN_STATUS_UNKNOWN") == 0);
    /* the op table names every op and agrees with the kinds the verifier expects */
    for (int op = 0; op < IR_NUM_OPS; op++) {
        CHECK(ir_ops[op].name && ir_ops[op].name[0]);
        CHECK(ir_ops[op].arity >= -1 && ir_ops[op].arity <= 3);
    }
    CHECK(strcmp(ir_ops[IR_DOT].name, "dot_general") == 0 && ir_ops[IR_CONCAT].arity == -1);
}

static void test_config_parsers(void) {
    uint64_t b = 0;
    CHECK(config_parse_bytes("0", &b) && b == 0);
    CHECK(config_parse_bytes("4096", &b) && b == 4096);
    CHECK(config_parse_bytes("4K", &b) && b == 4096);
    CHECK(config_parse_bytes("4kb", &b) && b == 4096);
    CHECK(config_parse_bytes("3Ki", &b) && b == 3072);
    CHECK(config_parse_bytes("1m", &b) && b == 1048576);
    CHECK(config_parse_bytes("0.5G", &b) && b == 536870912);
    CHECK(config_parse_bytes("1T", &b) && b == 1099511627776ull);
    CHECK(config_parse_bytes("1TiB", &b) && b == 1099511627776ull);
    CHECK(config_parse_bytes("8 MiB", &b) && b == 8388608);
    CHECK(config_parse_bytes("100B", &b) && b == 100);
    CHECK(config_parse_bytes("15T", &b) && b == 15ull << 40);
    b = 77;
    static const char *const junk[] = {
        "",
        "abc",
        "-1",
        "-1K",
        "12Q",
        "1iB",
        "1KK",
        "1 K B",
        "1MiBx",
        "nan",
        "inf",
        "1e400",
        "18446744073709551616",
        "16777216T",
        "K",
        " ",
        "1,5M",
    };
    for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++)
        CHECK_MSG(!config_parse_bytes(junk[i], &b), "\"%s\" parsed as %llu", junk[i],
                  (unsigned long long)b);
    CHECK(b == 77); /* a failed parse leaves the output alone */

    long l = 0;
    CHECK(config_parse_int("42", &l) && l == 42);
    CHECK(config_parse_int("-3", &l) && l == -3);
    CHECK(config_parse_int(" 5 ", &l) && l == 5);
    CHECK(config_parse_int("0", &l) && l == 0);
    static const char *const bad_ints[] = {"",    "x", "5x", "1.5", "0x10", "99999999999999999999",
                                           "--1", " "};
    for (size_t i = 0; i < sizeof bad_ints / sizeof bad_ints[0]; i++)
        CHECK_MSG(!config_parse_int(bad_ints[i], &l), "\"%s\" parsed as %ld", bad_ints[i], l);

    double d = 0;
    CHECK(config_parse_double("0.5", &d) && d == 0.5);
    CHECK(config_parse_double("1e3", &d) && d == 1000);
    CHECK(config_parse_double("-2.25 ", &d) && d == -2.25);
    static const char *const bad_doubles[] = {"",    "abc",  "0.5x",  "nan",
                                              "inf", "-inf", "1e999", "1..2"};
    for (size_t i = 0; i < sizeof bad_doubles / sizeof bad_doubles[0]; i++)
        CHECK_MSG(!config_parse_double(bad_doubles[i], &d), "\"%s\" parsed as %g", bad_doubles[i],
                  d);

    bool v = false;
    static const char *const yes[] = {"1", "true", "TRUE", "Yes", "on", "ON"};
    static const char *const no[] = {"0", "false", "False", "no", "NO", "off"};
    for (size_t i = 0; i < 6; i++) {
        v = false;
        CHECK_MSG(config_parse_bool(yes[i], &v) && v, "\"%s\"", yes[i]);
        v = true;
        CHECK_MSG(config_parse_bool(no[i], &v) && !v, "\"%s\"", no[i]);
    }
    static const char *const bad_bools[] = {"", "2", "y", "n", "truthy", " true", "of", "-1"};
    for (size_t i = 0; i < sizeof bad_bools / sizeof bad_bools[0]; i++)
        CHECK_MSG(!config_parse_bool(bad_bools[i], &v), "\"%s\" parsed", bad_bools[i]);
}

/* Overflow-checked size helpers the rest of kiln relies on. */
static void test_sizes(void) {
    size_t z;
    int64_t n;
    CHECK(kn_mul_size(1u << 20, 1u << 20, &z) && z == (size_t)1 << 40);
    CHECK(!kn_mul_size(SIZE_MAX / 2 + 1, 2, &z));
    CHECK(kn_add_size(SIZE_MAX - 1, 1, &z) && z == SIZE_MAX);
    CHECK(!kn_add_size(SIZE_MAX, 1, &z));
    CHECK(!kn_mul_i64(INT64_MAX / 2 + 1, 2, &n));
    ir_shape s = {2, {3, 4}};
    CHECK(ir_shape_numel(&s, &n) && n == 12);
    CHECK(ir_shape_nbytes(&s, KILN_DTYPE_F64, &z) && z == 96);
    ir_shape big = {3, {1ll << 30, 1ll << 30, 1ll << 10}};
    CHECK(!ir_shape_numel(&big, &n));
    ir_shape bytes = {2, {1ll << 31, 1ll << 31}};
    CHECK(ir_shape_numel(&bytes, &n) && !ir_shape_nbytes(&bytes, KILN_DTYPE_F32, &z));
    ir_shape neg = {1, {-1}};
    CHECK(!ir_shape_numel(&neg, &n));
    ir_shape scalar = {0, {0}};
    CHECK(ir_shape_numel(&scalar, &n) && n == 1);
    char buf[IR_TYPE_STR_MAX];
    CHECK(strcmp(ir_type_str(KILN_DTYPE_BOOL, &scalar, buf, sizeof buf), "bool[]") == 0);
    CHECK(strcmp(ir_type_str(KILN_DTYPE_I64, &s, buf, sizeof buf), "i64[3,4]") == 0);
    CHECK(strcmp(ir_type_str(KILN_DTYPE_I64, &s, buf, 6), "i64[3") ==
          0); /* truncated, terminated */
}

int main(int argc, char **argv) {
    test_select_cases(argc, argv);
    ctx = test_context();
    RUN(test_print_small_graph);
    RUN(test_print_attributes);
    RUN(test_print_graph_name_escaped);
    RUN_CC(test_report_graph_name_escaped);
    RUN(test_verifier);
    RUN(test_dtypes_and_statuses);
    RUN(test_config_parsers);
    RUN(test_sizes);
    kiln_context_destroy(ctx);
    return test_summary("test_ir");
}
