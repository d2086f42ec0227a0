/* test_picture.c — the plan's SVG (kiln_executable_plan_svg) read back as a document: it
 * is well-formed XML (xmllint when the machine has it, and a structural check here either
 * way, names with markup and bytes that are not UTF-8 included); its legend has an entry
 * for every fill, outline and line drawn, in the colour drawn, and none for what is not;
 * boxes carry the user's names (parameters, kiln_checkpoint_name); the offset ticks are
 * round numbers (1, 2 or 5 x 10^k in one unit) evenly spaced; no two labels in a margin
 * overlap, when the arena is a thin band under a tall donated buffer too; the arena and
 * lower-bound labels never meet; buffers too small to see are drawn at a minimum size and
 * marked pale. Programs: an MLP training step with a checkpoint region (recomputation),
 * a thin arena under a 16 MiB donated buffer, and a forward program whose lower bound
 * equals its arena. KILN_PICTURE_DIR=DIR also writes the pictures there to look at. */
#include "test.h"

#include <unistd.h>

static kiln_context *ctx;

/* ------------------------------------------------------------ XML checks ---- */

static int utf8_seq(const unsigned char *s) {
    int n = s[0] < 0x80                    ? 1
            : s[0] >= 0xc2 && s[0] <= 0xdf ? 2
            : s[0] >= 0xe0 && s[0] <= 0xef ? 3
            : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4
                                           : 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80) return 0;
    return n;
}

/* Well-formed as far as this SVG needs: valid UTF-8 with no control characters, every
 * '&' an entity, attributes quoted, every element closed in order, one root. Returns NULL
 * or what is wrong (a static string) and where (*at). */
static const char *xml_structure(const char *doc, size_t *at) {
    const char *stack[64];
    size_t depth = 0, roots = 0;
    const char *p = doc;
    for (; *p;) {
        *at = (size_t)(p - doc);
        const unsigned char *u = (const unsigned char *)p;
        int n = utf8_seq(u);
        if (!n) return "a byte that is not UTF-8";
        if (n == 1 && *u < 0x20 && *u != '\n' && *u != '\t' && *u != '\r')
            return "a control character";
        if (*p == '&') {
            static const char *const ents[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
            bool ok = false;
            for (int i = 0; i < 5 && !ok; i++) ok = !strncmp(p, ents[i], strlen(ents[i]));
            if (!ok) return "an '&' that is not an entity";
            p++;
            continue;
        }
        if (*p != '<') {
            if (*p == '>') return "a '>' in text";
            p += n;
            continue;
        }
        bool close = p[1] == '/';
        const char *name = p + 1 + close;
        size_t len = strcspn(name, " \t\n/>");
        if (!len) return "an element with no name";
        const char *q = name + len;
        for (;;) { /* attributes */
            q += strspn(q, " \t\n");
            if (*q == '>' || (*q == '/' && q[1] == '>')) break;
            if (close) return "attributes on a closing tag";
            size_t an = strcspn(q, "= \t\n/>");
            if (!an || q[an] != '=' || q[an + 1] != '"') return "an attribute not in quotes";
            const char *end = strchr(q + an + 2, '"');
            if (!end) return "an unterminated attribute";
            for (const char *c = q + an + 2; c < end; c++)
                if (*c == '<') return "a '<' in an attribute";
            q = end + 1;
        }
        bool empty = *q == '/';
        if (close) {
            if (!depth || strncmp(stack[depth - 1], name, len) ||
                strcspn(stack[depth - 1], " \t\n/>") != len)
                return "a closing tag that does not match";
            depth--;
        } else if (!empty) {
            if (depth == 64) return "nesting deeper than 64";
            if (!depth) roots++;
            stack[depth++] = name;
        } else if (!depth) {
            roots++;
        }
        p = q + (empty ? 2 : 1);
    }
    if (depth) return "an element left open";
    if (roots != 1) return "not exactly one root element";
    return NULL;
}

static bool have_xmllint(void) {
    return system("command -v xmllint >/dev/null 2>&1") == 0;
}

static void check_xml(const char *svg, const char *what) {
    size_t at = 0;
    const char *bad = xml_structure(svg, &at);
    CHECK_MSG(!bad, "%s: %s at byte %zu: \"%.60s\"", what, bad, at, svg + at);
    if (!have_xmllint()) return;
    char path[] = "/tmp/kiln-test-picture-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return;
    FILE *f = fdopen(fd, "w");
    fputs(svg, f);
    fclose(f);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "xmllint --noout '%s'", path);
    CHECK_MSG(system(cmd) == 0, "%s: xmllint rejects the SVG", what);
    unlink(path);
}

/* ---------------------------------------------------------- SVG reading ---- */

/* The next element <tag ...> at or after p whose class attribute holds the word cls
 * (NULL: any class); NULL when there is none. */
static const char *next_elem(const char *p, const char *tag, const char *cls) {
    char open[64];
    snprintf(open, sizeof open, "<%s ", tag);
    for (p = strstr(p, open); p; p = strstr(p + 1, open)) {
        if (!cls) return p;
        const char *end = strchr(p, '>'), *c = strstr(p, " class=\"");
        if (!c || c > end) continue;
        c += 8;
        size_t len = strcspn(c, "\""), w = strlen(cls);
        for (const char *k = c; k + w <= c + len; k++)
            if (!strncmp(k, cls, w) && (k == c || k[-1] == ' ') &&
                (k + w == c + len || k[w] == ' '))
                return p;
    }
    return NULL;
}

/* Attribute `name` of the element at e (in its opening tag) into out; false if absent. */
static bool attr(const char *e, const char *name, char *out, size_t n) {
    char key[64];
    snprintf(key, sizeof key, " %s=\"", name);
    const char *end = strchr(e, '>'), *a = strstr(e, key);
    if (!a || a > end) return false;
    a += strlen(key);
    size_t len = strcspn(a, "\"");
    snprintf(out, n, "%.*s", (int)(len < n ? len : n - 1), a);
    return true;
}

static double attr_num(const char *e, const char *name) {
    char v[64] = "";
    return attr(e, name, v, sizeof v) ? atof(v) : NAN;
}

/* The element's own text: after its opening tag (and a <title> child), up to the next '<'. */
static void elem_text(const char *e, char *out, size_t n) {
    const char *t = strchr(e, '>') + 1;
    if (!strncmp(t, "<title>", 7)) t = strstr(t, "</title>") + 8;
    size_t len = strcspn(t, "<");
    snprintf(out, n, "%.*s", (int)(len < n ? len : n - 1), t);
}

/* --------------------------------------------------------- picture checks ---- */

#define MAX_KEYS 32
typedef struct legend_keys {
    char key[MAX_KEYS][32], fill[MAX_KEYS][16];
    int n;
} legend_keys;

static int legend_find(const legend_keys *l, const char *key) {
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->key[i], key)) return i;
    return -1;
}

/* Every fill, outline and line drawn has its legend entry (a class in the colour of its
 * boxes), and every class in the legend has a box. */
static void check_legend(const char *svg, const char *what) {
    legend_keys l = {.n = 0};
    for (const char *e = next_elem(svg, "g", "legend"); e && l.n < MAX_KEYS;
         e = next_elem(e + 1, "g", "legend")) {
        attr(e, "data-key", l.key[l.n], sizeof l.key[l.n]);
        const char *r = strstr(e, "<rect "), *end = strstr(e, "</g>");
        l.fill[l.n][0] = 0;
        if (r && r < end) attr(r, "fill", l.fill[l.n], sizeof l.fill[l.n]);
        l.n++;
    }
    CHECK_MSG(l.n > 0, "%s: no legend", what);
    bool class_drawn[MAX_KEYS] = {false};
    int boxes = 0;
    for (const char *e = next_elem(svg, "rect", "box"); e; e = next_elem(e + 1, "rect", "box")) {
        char cls[32] = "", fill[16] = "", classes[64] = "";
        attr(e, "data-class", cls, sizeof cls);
        attr(e, "fill", fill, sizeof fill);
        attr(e, "class", classes, sizeof classes);
        int k = legend_find(&l, cls);
        boxes++;
        CHECK_MSG(k >= 0 && !strcmp(l.fill[k], fill), "%s: a %s box (fill %s) has no legend entry",
                  what, cls, fill);
        if (k >= 0) class_drawn[k] = true;
        if (strstr(classes, "enlarged"))
            CHECK_MSG(legend_find(&l, "enlarged") >= 0, "%s: an enlarged box, no legend", what);
        if (strstr(classes, "recomputed"))
            CHECK_MSG(legend_find(&l, "recomputed") >= 0, "%s: a recomputed box, no legend", what);
    }
    CHECK_MSG(boxes > 0, "%s: no boxes", what);
    static const char *const lines[][3] = {{"polyline", "live", "live"},
                                           {"line", "arena", "arena"},
                                           {"line", "lower-bound", "lower-bound"},
                                           {"path", "recomputed", "recomputed"}};
    for (int i = 0; i < 4; i++) {
        bool drawn_here = next_elem(svg, lines[i][0], lines[i][1]) != NULL;
        CHECK_MSG(!drawn_here || legend_find(&l, lines[i][2]) >= 0,
                  "%s: a %s is drawn with no legend entry", what, lines[i][1]);
    }
    for (int k = 0; k < l.n; k++) { /* a class in the legend is a class drawn */
        bool is_class = false;
        for (int c = 0; c <= KILN_MEMORY_CLASS_CONSTANT; c++)
            is_class |= !strcmp(l.key[k], kiln_memory_class_name((kiln_memory_class)c));
        CHECK_MSG(!is_class || class_drawn[k], "%s: the legend lists %s, no box has it", what,
                  l.key[k]);
    }
}

/* The left margin's labels (offset ticks, donated buffers' names): the ticks are 0 then
 * equal round steps (1, 2 or 5 x 10^k of one unit), and no two labels overlap. Returns
 * how many ticks there are. */
static int check_margins(const char *svg, const char *what) {
    double ys[256], vals[64];
    int ny = 0, nt = 0;
    char unit0[8] = "";
    for (const char *e = next_elem(svg, "text", "ytick"); e && nt < 64;
         e = next_elem(e + 1, "text", "ytick")) {
        char t[64], unit[8] = "";
        elem_text(e, t, sizeof t);
        double v = 0;
        int got = sscanf(t, "%lf %7s", &v, unit);
        CHECK_MSG(got == 2 || (got == 1 && v == 0), "%s: tick \"%s\"", what, t);
        if (got == 2 && !unit0[0]) snprintf(unit0, sizeof unit0, "%s", unit);
        CHECK_MSG(got == 1 || !strcmp(unit, unit0), "%s: ticks in %s and %s", what, unit0, unit);
        vals[nt++] = v;
        if (ny < 256) ys[ny++] = attr_num(e, "y");
    }
    CHECK_MSG(nt >= 1 && vals[0] == 0, "%s: %d ticks, the first not 0", what, nt);
    if (nt >= 2) {
        double step = vals[1], m = step / pow(10, floor(log10(step)));
        CHECK_MSG(fabs(m - 1) < 1e-9 || fabs(m - 2) < 1e-9 || fabs(m - 5) < 1e-9,
                  "%s: tick step %g %s is not 1, 2 or 5 x 10^k", what, step, unit0);
        for (int i = 2; i < nt; i++)
            CHECK_MSG(fabs(vals[i] - i * step) < 1e-9 * i * step, "%s: tick %d is %g, step %g",
                      what, i, vals[i], step);
    }
    for (const char *e = next_elem(svg, "text", "band"); e && ny < 256;
         e = next_elem(e + 1, "text", "band"))
        ys[ny++] = attr_num(e, "y");
    for (int i = 0; i < ny; i++)
        for (int j = i + 1; j < ny; j++)
            CHECK_MSG(fabs(ys[i] - ys[j]) >= 12 - 1e-6,
                      "%s: left-margin labels at y %.1f and %.1f overlap", what, ys[i], ys[j]);
    /* the right margin: the arena's and the lower bound's labels */
    double ry[8];
    int nr = 0;
    for (const char *e = next_elem(svg, "text", "line-label"); e && nr < 8;
         e = next_elem(e + 1, "text", "line-label"))
        ry[nr++] = attr_num(e, "y");
    CHECK_MSG(nr >= 1, "%s: no label on the arena line", what);
    for (int i = 0; i < nr; i++)
        for (int j = i + 1; j < nr; j++)
            CHECK_MSG(fabs(ry[i] - ry[j]) >= 12 - 1e-6,
                      "%s: the line labels at y %.1f and %.1f overlap", what, ry[i], ry[j]);
    return nt;
}

static void save_picture(const char *svg, const char *name) {
    const char *dir = getenv("KILN_PICTURE_DIR");
    if (!dir || !*dir) return;
    char path[512];
    snprintf(path, sizeof path, "%s/%s.svg", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) return;
    fputs(svg, f);
    fclose(f);
    printf("wrote %s\n", path);
}

/* Everything every picture must satisfy; returns the tick count. */
static int check_picture(const char *svg, const char *what) {
    CHECK_MSG(svg != NULL, "%s: no SVG", what);
    if (!svg) return 0;
    save_picture(svg, what);
    check_xml(svg, what);
    check_legend(svg, what);
    return check_margins(svg, what);
}

/* ----------------------------------------------------------------- programs ---- */

enum { B = 64, I = 128, H = 128, O = 16 };

/* One SGD-with-momentum step of x -> tanh(x w1)^2 w2, the hidden layer in a
 * nothing_saveable checkpoint region (so the backward pass recomputes it). Arguments:
 * x, y, w1, w2, mom_w1, mom_w2; the last four donated. */
static kiln_executable *training_step(void) {
    kiln_graph *g;
    if (kiln_graph_create(ctx, "picture_step", &g)) return NULL;
    int64_t xd[2] = {B, I}, yd[2] = {B, O}, w1d[2] = {I, H}, w2d[2] = {H, O};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, xd);
    kiln_value y = kiln_parameter(g, "y", KILN_DTYPE_F32, 2, yd);
    kiln_value w[2] = {kiln_parameter(g, "w1", KILN_DTYPE_F32, 2, w1d),
                       kiln_parameter(g, "w2", KILN_DTYPE_F32, 2, w2d)};
    kiln_value mom[2] = {kiln_parameter(g, "mom_w1", KILN_DTYPE_F32, 2, w1d),
                         kiln_parameter(g, "mom_w2", KILN_DTYPE_F32, 2, w2d)};
    kiln_checkpoint_begin(g, KILN_CHECKPOINT_POLICY_NOTHING_SAVEABLE, 0, NULL);
    kiln_value a = kiln_checkpoint_name(g, kiln_matmul(g, x, w[0]), "hidden");
    kiln_value t = kiln_tanh(g, a);
    kiln_value h = kiln_mul(g, t, t);
    kiln_checkpoint_end(g);
    kiln_value z = kiln_checkpoint_name(g, kiln_matmul(g, h, w[1]), "logits");
    kiln_value d = kiln_sub(g, z, y);
    kiln_value outs[5], grads[2];
    outs[0] = kiln_mean(g, kiln_mul(g, d, d), 0, NULL, false);
    kiln_grad(g, outs[0], 2, w, grads);
    kiln_sgd_options so = {.lr = kiln_scalar(g, KILN_DTYPE_F32, 0.1),
                           .momentum = kiln_scalar(g, KILN_DTYPE_F32, 0.9)};
    kiln_optim_sgd(g, &so, 2, w, grads, mom, outs + 1, outs + 3);
    kiln_executable *e = NULL;
    kiln_status s = kiln_graph_finish(g, 5, outs);
    int donate[4] = {2, 3, 4, 5};
    kiln_compile_options co = {.keep_ir = true, .n_donate = 4, .donate_argnums = donate};
    if (!s) s = kiln_compile(g, &co, &e);
    if (s) fprintf(stderr, "training_step: %s\n", kiln_last_error(ctx));
    kiln_graph_destroy(g);
    return e;
}

/* A thin arena under a tall band: big (16 MiB, donated) doubled in place, plus a scalar
 * from two 8x8 products of small (named with markup, a control character and a byte
 * that is not UTF-8, which the document must survive); and twelve 1 KiB arguments,
 * donated and tripled in place: bands a few pixels apart whose names cannot all fit. */
static kiln_executable *thin_arena(void) {
    kiln_graph *g;
    if (kiln_graph_create(ctx, "thin <arena> & \"band\"", &g)) return NULL;
    int64_t bd[1] = {4 << 20}, sd[2] = {8, 8};
    kiln_value big = kiln_parameter(g, "big", KILN_DTYPE_F32, 1, bd);
    kiln_value small = kiln_parameter(g, "s<m>&\"all\"\x01\xff", KILN_DTYPE_F32, 2, sd);
    kiln_value p = kiln_tanh(g, kiln_matmul(g, small, small));
    kiln_value q = kiln_matmul(g, p, small);
    kiln_value r = kiln_reduce_sum(g, q, 0, NULL, false);
    kiln_value outs[13], tiny[12];
    outs[0] = kiln_add(g, kiln_mul(g, big, kiln_scalar(g, KILN_DTYPE_F32, 2)), r);
    int64_t td[1] = {256};
    int donate[13] = {0};
    for (int i = 0; i < 12; i++) {
        char name[16];
        snprintf(name, sizeof name, "tiny%d", i);
        tiny[i] = kiln_parameter(g, name, KILN_DTYPE_F32, 1, td);
        outs[1 + i] = kiln_mul(g, tiny[i], kiln_scalar(g, KILN_DTYPE_F32, 3));
        donate[1 + i] = 2 + i;
    }
    kiln_executable *e = NULL;
    kiln_status s = kiln_graph_finish(g, 13, outs);
    kiln_compile_options co = {.keep_ir = true, .n_donate = 13, .donate_argnums = donate};
    if (!s) s = kiln_compile(g, &co, &e);
    if (s) fprintf(stderr, "thin_arena: %s\n", kiln_last_error(ctx));
    kiln_graph_destroy(g);
    return e;
}

/* A chain of products whose temporaries never coexist: arena == lower bound. */
static kiln_executable *chain(void) {
    kiln_graph *g;
    if (kiln_graph_create(ctx, "chain", &g)) return NULL;
    int64_t d[2] = {256, 256};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
    kiln_value h = x;
    for (int i = 0; i < 4; i++) h = kiln_tanh(g, kiln_matmul(g, h, x));
    kiln_executable *e = NULL;
    kiln_status s = kiln_graph_finish(g, 1, &h);
    if (!s) s = kiln_compile(g, &(kiln_compile_options){.keep_ir = true}, &e);
    if (s) fprintf(stderr, "chain: %s\n", kiln_last_error(ctx));
    kiln_graph_destroy(g);
    return e;
}

/* ------------------------------------------------------------------- tests ---- */

static void test_training_step(void) {
    kiln_executable *e = training_step();
    CHECK(e != NULL);
    if (!e) return;
    char *svg = kiln_executable_plan_svg(e);
    int ticks = check_picture(svg, "training_step");
    CHECK_MSG(ticks >= 3, "%d ticks on a full-height arena", ticks);
    /* the classes of a training step each in the legend, and the recomputation */
    CHECK(next_elem(svg, "g", "legend") != NULL);
    CHECK_CONTAINS(svg, "data-key=\"parameter\"");
    CHECK_CONTAINS(svg, "data-key=\"optimizer_state\"");
    CHECK_CONTAINS(svg, "data-key=\"recomputed\"");
    CHECK(next_elem(svg, "rect", "recomputed") != NULL);
    /* names: the donated buffers' in the margin, the values' on boxes or in their titles */
    bool w1 = false, mom = false;
    for (const char *b = next_elem(svg, "text", "band"); b; b = next_elem(b + 1, "text", "band")) {
        char t[64];
        elem_text(b, t, sizeof t);
        w1 |= !strcmp(t, "w1"), mom |= !strcmp(t, "mom_w1");
    }
    CHECK_MSG(w1 && mom, "donated buffers named in the margin: w1 %d, mom_w1 %d", w1, mom);
    CHECK_CONTAINS(svg, "\"hidden\" dot_general");
    CHECK_CONTAINS(svg, "\"logits\" dot_general");
    bool labelled = false;
    for (const char *t = next_elem(svg, "text", "name"); t; t = next_elem(t + 1, "text", "name")) {
        char s[128];
        elem_text(t, s, sizeof s);
        labelled |= !strcmp(s, "w1") || !strncmp(s, "hidden", 6) || strstr(s, "test_picture.c:");
    }
    CHECK_MSG(labelled, "no box is labelled with a name or the user's line");
    /* the same names in the listing and the JSON */
    kiln_memory_analysis a;
    CHECK_OK(ctx, kiln_executable_get_memory_analysis(e, &a));
    int hidden = 0, w1_buf = 0;
    for (int i = 0; i < a.num_buffers; i++) {
        kiln_buffer_info b;
        kiln_executable_get_buffer_info(e, i, &b);
        hidden += b.name && !strcmp(b.name, "hidden") && !strcmp(b.op, "dot_general");
        w1_buf += b.name && !strcmp(b.name, "w1") && b.kind == KILN_BUFFER_KIND_ARGUMENT;
    }
    CHECK_MSG(hidden >= 1 && w1_buf == 1, "buffers named hidden %d, w1 %d", hidden, w1_buf);
    char *json = kiln_executable_plan_json(e);
    CHECK_CONTAINS(json, "\"name\": \"hidden\"");
    CHECK_CONTAINS(json, "\"name\": \"w1\"");
    kiln_string_free(ctx, json);
    kiln_string_free(ctx, svg);
    kiln_executable_destroy(e);
}

static void test_thin_arena(void) {
    kiln_executable *e = thin_arena();
    CHECK(e != NULL);
    if (!e) return;
    kiln_memory_analysis a;
    kiln_executable_get_memory_analysis(e, &a);
    CHECK_MSG(a.arena_bytes > 0 && a.arena_bytes < 4096 && a.alias_bytes == (16u << 20) + 12 * 1024,
              "arena %llu alias %llu", (unsigned long long)a.arena_bytes,
              (unsigned long long)a.alias_bytes);
    char *svg = kiln_executable_plan_svg(e);
    check_picture(svg, "thin_arena");
    /* the arena's boxes are far below a pixel: drawn at the minimum size, pale */
    const char *r = next_elem(svg, "rect", "enlarged");
    CHECK(r != NULL);
    if (r) {
        CHECK(attr_num(r, "height") >= 3 - 1e-9 && attr_num(r, "width") >= 3 - 1e-9);
        CHECK(!isnan(attr_num(r, "fill-opacity")) && attr_num(r, "fill-opacity") < 1);
    }
    CHECK_CONTAINS(svg, "data-key=\"enlarged\"");
    CHECK_CONTAINS(svg, "drawn larger than its size");
    CHECK_CONTAINS(svg, ">big</text>");
    int named = 0;
    for (const char *b = next_elem(svg, "text", "band"); b; b = next_elem(b + 1, "text", "band")) {
        char t[64];
        elem_text(b, t, sizeof t);
        named += !strncmp(t, "tiny", 4);
    }
    CHECK_MSG(named >= 2 && named < 12, "%d of the 12 tiny bands named: some, not all, fit", named);
    CHECK_CONTAINS(svg, "thin &lt;arena&gt; &amp; &quot;band&quot;");
    kiln_string_free(ctx, svg);
    kiln_executable_destroy(e);
}

static void test_equal_bounds(void) {
    kiln_executable *e = chain();
    CHECK(e != NULL);
    if (!e) return;
    kiln_memory_analysis a;
    kiln_executable_get_memory_analysis(e, &a);
    char *svg = kiln_executable_plan_svg(e);
    check_picture(svg, "chain");
    if (a.arena_bytes == a.temp_lower_bound) { /* one line, both labels, apart */
        CHECK(next_elem(svg, "line", "lower-bound") == NULL);
        CHECK_CONTAINS(svg, ">= lower bound</text>");
        CHECK(!strstr(svg, "data-key=\"lower-bound\""));
    } else {
        CHECK_MSG(0, "the chain's arena %llu differs from its lower bound %llu: pick another",
                  (unsigned long long)a.arena_bytes, (unsigned long long)a.temp_lower_bound);
    }
    kiln_string_free(ctx, svg);
    kiln_executable_destroy(e);
}

/* The checker itself: it must reject what it claims to reject. */
static void test_checker(void) {
    size_t at;
    CHECK(xml_structure("<svg><g/></svg>", &at) == NULL);
    CHECK(xml_structure("<svg><g></svg>", &at) != NULL);
    CHECK(xml_structure("<svg>a & b</svg>", &at) != NULL);
    CHECK(xml_structure("<svg x=1></svg>", &at) != NULL);
    CHECK(xml_structure("<svg>\xff</svg>", &at) != NULL);
    CHECK(xml_structure("<svg>\x01</svg>", &at) != NULL);
    CHECK(xml_structure("<a/><b/>", &at) != NULL);
}

int main(int argc, char **argv) {
    test_select_cases(argc, argv);
    char dir[] = "/tmp/kiln-test-picture-XXXXXX";
    ctx = test_private_context(dir);
    if (!ctx) return 2;
    RUN(test_checker);
    RUN_CC(test_training_step);
    RUN_CC(test_thin_arena);
    RUN_CC(test_equal_bounds);
    if (test_case_filter != 1 && !have_xmllint()) /* only the RUN_CC cases draw an SVG */
        test_skip_case("SVG schema check", "xmllint not found: the structural check alone");
    kiln_context_destroy(ctx);
    test_remove_dir(dir);
    return test_summary("test_picture");
}
