/* picture.c — a memory plan as text, as JSON and as an SVG timeline.
 *
 * The SVG is the plan drawn the way XLA's buffer-assignment viewers draw it: x is the
 * schedule step, y the offset in the arena; each temporary is a box from the step that
 * writes it to the last step that reads it, labelled where it fits by the user's name for
 * it (a parameter's, a kiln_checkpoint_name's) or its op and source line (hover for the
 * details). The arena's extent is the dashed "arena" line; the curve is the bytes live at
 * each step, whose maximum — the lower bound no placement can beat — is the dotted line.
 * The buffers of donated arguments, when the plan uses them, are drawn as bands above the
 * arena at the same scale. Boxes are coloured by class (parameter, gradient, optimizer
 * state, activation saved for the backward pass, ...: classes.c). docs/memory.md explains
 * how to read it.
 *
 * Invariants of the picture (tests/test_picture.c checks each): it is well-formed XML
 * whatever the names hold; the legend has an entry for every fill and line drawn and for
 * nothing else; offset ticks are round (1, 2, 5 x 10^k of one unit); no two labels in a
 * margin overlap; a box too small to see is drawn at a minimum size and pale, never
 * silently bigger.
 *
 * Every string built here goes through a strbuf, so host OOM anywhere gives NULL, with the
 * context's message saying which string could not be made. */
#include "plan.h"
#include "ir/side.h"
#include "base/strbuf.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

/* The finished string, or NULL with a host-OOM message naming `what`. */
static char *take(strbuf *sb, const char *what) {
    size_t len = sb->len;
    char *s = sb_take(sb);
    if (!s) ctx_oom(sb->ctx, what, len);
    return s;
}

/* "1.50 MiB", "512 B" */
static const char *human(uint64_t v, char *buf, size_t n) {
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double x = (double)v;
    int u = 0;
    while (x >= 1024 && u < 4) x /= 1024, u++;
    if (u == 0)
        snprintf(buf, n, "%" PRIu64 " B", v);
    else
        snprintf(buf, n, "%.2f %s", x, units[u]);
    return buf;
}

static const char *kind_name(int k) {
    static const char *const names[] = {"argument", "constant", "output", "temp", "scratch"};
    return k >= 0 && k <= PLAN_K_SCRATCH ? names[k] : "?";
}

static const char *place_name(int p) {
    static const char *const names[] = {"argument", "constant", "output",
                                        "arena",    "donated",  "host"};
    return p >= 0 && p <= PLAN_P_HOST ? names[p] : "?";
}

static const char *param_name(const kiln_graph *g, uint32_t i) {
    const char *n = g->nodes[g->params[i]].name;
    return n ? n : "";
}

/* The name a buffer has in the user's program: a parameter's, or the kiln_checkpoint_name
 * given to the value; NULL if none. */
static const char *buffer_name(const kiln_graph *g, const plan_buffer *b) {
    const char *n = b->kind == PLAN_K_SCRATCH ? NULL : g->nodes[b->node].name;
    return n && *n ? n : NULL;
}

/* Why a donation was not used, or what it holds. */
static void donation_line(strbuf *sb, const kiln_graph *g, const mem_plan *p, uint32_t i) {
    const plan_buffer *b = &p->buffers[p->buffer_of[g->params[i]]];
    sb_printf(sb, "  argument %u (\"%s\", %" PRIu64 " bytes) donated: ", i, param_name(g, i),
              b->size);
    for (uint32_t j = 0; j < p->n_outputs; j++)
        if (p->output_donor[j] == (int32_t)i) {
            sb_printf(sb, "holds output %u (%%%u)\n", j, g->outputs[j]);
            return;
        }
    uint32_t temps = 0;
    for (uint32_t k = 0; k < p->n_buffers; k++)
        temps += p->buffers[k].place == PLAN_P_DONATED && p->buffers[k].place_index == i;
    if (temps)
        sb_printf(sb, "holds %u temporar%s after its last read\n", temps, temps == 1 ? "y" : "ies");
    else if (!b->size)
        sb_printf(sb, "NOT USED: it is empty\n");
    else
        sb_printf(sb,
                  "NOT USED: no output of %" PRIu64
                  " bytes is written after its last read (step %d) and no temporary fits\n",
                  b->size, b->last);
}

static void totals(strbuf *sb, const mem_plan *p, uint64_t code_bytes) {
    char h[32];
    sb_printf(sb, "  arguments      %14" PRIu64 " B  %s\n", p->argument_bytes,
              human(p->argument_bytes, h, sizeof h));
    sb_printf(sb, "  outputs        %14" PRIu64 " B  %s\n", p->output_bytes,
              human(p->output_bytes, h, sizeof h));
    sb_printf(sb, "  temp arena     %14" PRIu64 " B  %s", p->temp_bytes,
              human(p->temp_bytes, h, sizeof h));
    if (p->lower_bound)
        sb_printf(sb, " (lower bound %s: %.3fx)", human(p->lower_bound, h, sizeof h),
                  (double)p->arena / (double)p->lower_bound);
    sb_printf(sb, "\n  aliased        %14" PRIu64 " B  donated arguments reused\n", p->alias_bytes);
    sb_printf(sb, "  in place       %14" PRIu64 " B  written over inputs that die there\n",
              p->inplace_bytes);
    sb_printf(sb, "  constants      %14" PRIu64 " B  host memory held by the executable\n",
              p->constant_bytes);
    sb_printf(sb, "  generated code %14" PRIu64 " B\n", code_bytes);
    sb_printf(sb, "  planned peak   %14" PRIu64 " B  %s = arguments + outputs + temp arena\n",
              p->peak, human(p->peak, h, sizeof h));
    if (p->n_offloaded)
        sb_printf(sb,
                  "  host arena     %14" PRIu64 " B  %s of pinned_host memory, outside the peak: "
                  "%u values offloaded\n",
                  p->host_bytes, human(p->host_bytes, h, sizeof h), p->n_offloaded);
    uint64_t host_state = p->host_argument_bytes + p->host_output_bytes;
    if (host_state) { /* arguments and outputs of the pinned_host kind (ZeRO-Offload's) */
        char a[32], o[32], d[32];
        sb_printf(
            sb,
            "  host state     %14" PRIu64 " B  %s of pinned_host memory, outside the peak: "
            "arguments %s, new outputs %s (%s of arguments taken over by outputs)\n",
            host_state, human(host_state, h, sizeof h), human(p->host_argument_bytes, a, sizeof a),
            human(p->host_output_bytes, o, sizeof o), human(p->host_alias_bytes, d, sizeof d));
    }
}

/* Where the memory goes by class, then the saved activations and the ops they come from. */
static void class_lines(strbuf *sb, const kiln_graph *g, const mem_plan *p) {
    char h[2][32];
    uint64_t at_peak = 0, n_saved = 0, saved_bytes = 0;
    sb_printf(sb, "  by class (at step %d, the most bytes in use; in total, as if none shared):\n",
              p->peak_step);
    for (int c = 0; c < PLAN_NUM_CLASSES; c++) {
        at_peak += p->class_peak[c];
        if (!p->class_total[c]) continue;
        sb_printf(sb, "    %-16s %14" PRIu64 " B %11s at peak %14" PRIu64 " B %11s in total\n",
                  plan_class_name(c), p->class_peak[c], human(p->class_peak[c], h[0], sizeof h[0]),
                  p->class_total[c], human(p->class_total[c], h[1], sizeof h[1]));
    }
    if (at_peak <= p->peak)
        sb_printf(sb, "    %-16s %14" PRIu64 " B %11s at peak (arena gaps, rounding)\n", "unused",
                  p->peak - at_peak, human(p->peak - at_peak, h[0], sizeof h[0]));
    sb_append(sb, "  by dtype (at the same step; in total):\n");
    for (int t = 0; t < PLAN_NUM_DTYPES; t++) {
        if (!p->dtype_total[t]) continue;
        sb_printf(sb, "    %-16s %14" PRIu64 " B %11s at peak %14" PRIu64 " B %11s in total\n",
                  t ? kiln_dtype_name((kiln_dtype)t) : "scratch", p->dtype_peak[t],
                  human(p->dtype_peak[t], h[0], sizeof h[0]), p->dtype_total[t],
                  human(p->dtype_total[t], h[1], sizeof h[1]));
    }
    for (uint32_t i = 0; i < p->n_buffers; i++)
        if (p->buffer_class[i] == PLAN_C_ACTIVATION) n_saved++, saved_bytes += p->buffers[i].size;
    if (!n_saved) return;
    sb_printf(sb, "  activations saved for the backward pass: %" PRIu64 " values, %s\n", n_saved,
              human(saved_bytes, h[0], sizeof h[0]));
    for (uint32_t i = 0; i < p->n_buffers; i++) {
        if (p->buffer_class[i] != PLAN_C_ACTIVATION) continue;
        const plan_buffer *b = &p->buffers[i];
        const ir_node *n = &g->nodes[b->node];
        char t[IR_TYPE_STR_MAX];
        sb_printf(sb, "    %%%-5u %-21s %-22s %12" PRIu64 " B  live [%d, %d] %s from ", b->node,
                  plan_buffer_op(g, b), ir_type_str(n->dtype, &n->shape, t, sizeof t), b->size,
                  b->def, b->last, b->place == PLAN_P_HOST ? "on the host," : "");
        if (n->file)
            sb_printf(sb, "%s:%d\n", kn_path_base(n->file), n->line);
        else
            sb_append(sb, "(no location)\n");
    }
}

char *plan_report(const kiln_graph *g, const fusion_plan *fp, const mem_plan *p,
                  uint64_t code_bytes) {
    strbuf sb;
    sb_init(&sb, g->ctx);
    char h[32];
    sb_append(&sb, "memory plan of '");
    ir_print_escaped(&sb, g->name);
    sb_printf(&sb, "': %u kernels, schedule \"%s\" (tried", p->n_kernels, p->strategy);
    for (int i = 0; i < p->n_tries; i++)
        sb_printf(&sb, "%s %s %s", i ? "," : "", p->tries[i].strategy,
                  human(p->tries[i].peak, h, sizeof h));
    sb_append(&sb, ")\n");
    totals(&sb, p, code_bytes);
    for (uint32_t i = 0; i < p->n_params; i++)
        if (p->donated[i]) donation_line(&sb, g, p, i);
    class_lines(&sb, g, p);
    sb_printf(&sb, "  %-6s %-21s %-22s %12s %-10s %12s %11s %-15s %s\n", "value", "op", "type",
              "bytes", "place", "offset", "live", "class", "in place over");
    for (uint32_t i = 0; i < p->n_buffers; i++) {
        const plan_buffer *b = &p->buffers[i];
        const ir_node *n = &g->nodes[b->node];
        char t[IR_TYPE_STR_MAX], pl[32], live[32];
        ir_type_str(n->dtype, &n->shape, t, sizeof t);
        if (b->kind == PLAN_K_SCRATCH) snprintf(t, sizeof t, "(k%u)", b->kernel);
        snprintf(pl, sizeof pl, "%s", place_name(b->place));
        if (b->place == PLAN_P_ARG || b->place == PLAN_P_OUTPUT || b->place == PLAN_P_DONATED)
            snprintf(pl, sizeof pl, "%s %u", place_name(b->place), b->place_index);
        snprintf(live, sizeof live, "[%d, %d]", b->def, b->last);
        sb_printf(&sb, "  %%%-5u %-21s %-22s %12" PRIu64 " %-10s %12" PRIu64 " %11s ", b->node,
                  plan_buffer_op(g, b), t, b->size, pl, b->offset, live);
        if (b->shares >= 0)
            sb_printf(&sb, "%-15s %%%u", plan_class_name(p->buffer_class[i]),
                      p->buffers[b->shares].node);
        else
            sb_append(&sb, plan_class_name(p->buffer_class[i]));
        sb_append(&sb, "\n");
    }
    (void)fp;
    return take(&sb, "kiln_executable_memory_report");
}

/* ------------------------------------------------------------- JSON ---- */

static void json_str(strbuf *sb, const char *s) {
    sb_append(sb, "\"");
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            sb_printf(sb, "\\%c", ch);
        else if (ch < 0x20)
            sb_printf(sb, "\\u%04x", ch);
        else
            sb_printf(sb, "%c", ch);
    }
    sb_append(sb, "\"");
}

static void json_analysis(strbuf *sb, const mem_plan *p, uint64_t code_bytes) {
    sb_printf(sb,
              "  \"analysis\": {\"argument_bytes\": %" PRIu64 ", \"output_bytes\": %" PRIu64
              ", \"temp_bytes\": %" PRIu64 ", \"arena_bytes\": %" PRIu64
              ", \"alias_bytes\": %" PRIu64 ", \"constant_bytes\": %" PRIu64
              ", \"generated_code_bytes\": %" PRIu64 ", \"peak_bytes\": %" PRIu64
              ", \"temp_lower_bound\": %" PRIu64 ", \"inplace_bytes\": %" PRIu64
              ", \"host_temp_bytes\": %" PRIu64 ", \"host_argument_bytes\": %" PRIu64
              ", \"host_output_bytes\": %" PRIu64 ", \"host_alias_bytes\": %" PRIu64 "},\n",
              p->argument_bytes, p->output_bytes, p->temp_bytes, p->arena, p->alias_bytes,
              p->constant_bytes, code_bytes, p->peak, p->lower_bound, p->inplace_bytes,
              p->host_bytes, p->host_argument_bytes, p->host_output_bytes, p->host_alias_bytes);
    sb_printf(sb, "  \"classes\": {\"peak_step\": %d, \"at_peak\": {", p->peak_step);
    for (int c = 0; c < PLAN_NUM_CLASSES; c++)
        sb_printf(sb, "%s\"%s\": %" PRIu64, c ? ", " : "", plan_class_name(c), p->class_peak[c]);
    sb_append(sb, "}, \"total\": {");
    for (int c = 0; c < PLAN_NUM_CLASSES; c++)
        sb_printf(sb, "%s\"%s\": %" PRIu64, c ? ", " : "", plan_class_name(c), p->class_total[c]);
    sb_append(sb, "}},\n");
    /* by dtype: only those with bytes ("scratch" for the kernels' raw scratch) */
    for (int pass = 0; pass < 2; pass++) {
        const uint64_t *v = pass ? p->dtype_total : p->dtype_peak;
        sb_append(sb, pass ? ", \"total\": {" : "  \"dtypes\": {\"at_peak\": {");
        for (int t = 0, k = 0; t < PLAN_NUM_DTYPES; t++)
            if (p->dtype_total[t])
                sb_printf(sb, "%s\"%s\": %" PRIu64, k++ ? ", " : "",
                          t ? kiln_dtype_name((kiln_dtype)t) : "scratch", v[t]);
        sb_append(sb, "}");
    }
    sb_append(sb, "},\n");
    sb_append(sb, "  \"schedules_tried\": [");
    for (int i = 0; i < p->n_tries; i++)
        sb_printf(sb,
                  "%s{\"strategy\": \"%s\", \"peak_bytes\": %" PRIu64 ", \"arena_bytes\": %" PRIu64
                  ", \"lower_bound\": %" PRIu64 "}",
                  i ? ", " : "", p->tries[i].strategy, p->tries[i].peak, p->tries[i].arena,
                  p->tries[i].lower_bound);
    sb_append(sb, "],\n");
}

static void json_buffer(strbuf *sb, const kiln_graph *g, const mem_plan *p, uint32_t i) {
    const plan_buffer *b = &p->buffers[i];
    const ir_node *n = &g->nodes[b->node];
    sb_printf(
        sb, "    {\"node\": %u, \"op\": \"%s\", \"kind\": \"%s\", \"dtype\": \"%s\", \"shape\": [",
        b->node, plan_buffer_op(g, b), kind_name(b->kind), kiln_dtype_name(n->dtype));
    for (int a = 0; a < n->shape.rank && b->kind != PLAN_K_SCRATCH; a++)
        sb_printf(sb, "%s%lld", a ? ", " : "", (long long)n->shape.dims[a]);
    sb_printf(sb,
              "], \"bytes\": %" PRIu64
              ", \"place\": \"%s\", \"place_index\": %u, \"offset\": %" PRIu64
              ", \"first_step\": %d, \"last_step\": %d, \"shares_with\": %u",
              b->size, place_name(b->place), b->place_index, b->offset, b->def, b->last,
              b->shares >= 0 ? p->buffers[b->shares].node : 0);
    if (b->kind == PLAN_K_SCRATCH) sb_printf(sb, ", \"kernel\": %u", b->kernel);
    sb_printf(sb, ", \"class\": \"%s\"", plan_class_name(p->buffer_class[i]));
    if (buffer_name(g, b)) {
        sb_append(sb, ", \"name\": ");
        json_str(sb, buffer_name(g, b));
    }
    if (n->file && b->kind != PLAN_K_SCRATCH) {
        sb_append(sb, ", \"file\": ");
        json_str(sb, n->file);
        sb_printf(sb, ", \"line\": %d", n->line);
    }
    sb_append(sb, "}");
}

char *plan_json(const kiln_graph *g, const fusion_plan *fp, const mem_plan *p,
                uint64_t code_bytes) {
    strbuf sb;
    sb_init(&sb, g->ctx);
    sb_append(&sb, "{\n  \"name\": ");
    json_str(&sb, g->name);
    sb_printf(&sb, ",\n  \"steps\": %u,\n  \"schedule\": {\"strategy\": \"%s\", \"kernels\": [",
              p->n_kernels, p->strategy);
    for (uint32_t s = 0; s < p->n_kernels; s++) sb_printf(&sb, "%s%u", s ? ", " : "", p->order[s]);
    sb_append(&sb, "], \"writes\": [");
    for (uint32_t s = 0; s < p->n_kernels; s++)
        sb_printf(&sb, "%s%u", s ? ", " : "", fp->kernels[p->order[s]].roots[0]);
    sb_append(&sb, "]},\n");
    json_analysis(&sb, p, code_bytes);
    sb_append(&sb, "  \"live_bytes\": [");
    for (uint32_t s = 0; s < p->n_kernels; s++)
        sb_printf(&sb, "%s%" PRIu64, s ? ", " : "", p->live_bytes[s]);
    sb_append(&sb, "],\n  \"bytes_in_use\": [");
    for (uint32_t s = 0; s < p->n_kernels; s++)
        sb_printf(&sb, "%s%" PRIu64, s ? ", " : "", p->in_use[s]);
    sb_append(&sb, "],\n  \"donations\": [");
    for (uint32_t i = 0, first = 1; i < p->n_params; i++) {
        if (!p->donated[i]) continue;
        sb_printf(&sb, "%s{\"argument\": %u, \"name\": ", first ? "" : ", ", i);
        json_str(&sb, param_name(g, i));
        sb_printf(&sb, ", \"used\": %s}", p->donation_used[i] ? "true" : "false");
        first = 0;
    }
    sb_append(&sb, "],\n  \"buffers\": [\n");
    for (uint32_t i = 0; i < p->n_buffers; i++) {
        json_buffer(&sb, g, p, i);
        sb_append(&sb, i + 1 < p->n_buffers ? ",\n" : "\n");
    }
    sb_append(&sb, "  ]\n}\n");
    return take(&sb, "kiln_executable_plan_json");
}

/* -------------------------------------------------------------- SVG ---- */

/* Layout, in pixels. The plot is SVG_PLOT high whatever it holds and the legend above it
 * takes the rows it needs. Text never lies over a box: the offset ticks and the names of
 * donated buffers go in the left margin, through one placer that drops a label rather
 * than overlap another; the labels of the arena and lower-bound lines go in the right
 * margin, the higher line's above it and the lower's below, so they cannot meet however
 * close the lines are. */
#define SVG_W          1100
#define SVG_LEFT       170
#define SVG_RIGHT      170
#define SVG_PLOT       440
#define SVG_GAP        18   /* between the bands of donated buffers, at most */
#define SVG_MIN_PX     3.0  /* boxes are drawn at least this high and wide (marked if enlarged) */
#define SVG_CHAR_PX    6.5  /* a character at font-size 11, generously */
#define SVG_TEXT_PX    12.0 /* the height a line of text needs */
#define SVG_TICK_PX    18.0 /* the least distance between offset ticks */
#define SVG_MARGIN_MAX 96

typedef struct svg {
    strbuf *sb;
    const kiln_graph *g;
    const fusion_plan *fp;
    const mem_plan *p;
    double sw, scale;                /* pixels per step, per byte */
    double min_px;                   /* the least height a box is drawn with */
    double top, bottom;              /* the plot's extent */
    double y0;                       /* the bottom of the band being drawn */
    double gap;                      /* between the bands of donated buffers */
    uint32_t bands;                  /* donated buffers drawn */
    double margin_y[SVG_MARGIN_MAX]; /* left-margin labels placed, by the y of their middle */
    int n_margin;
} svg;

/* A buffer written by a recomputation (rematerialisation: src/remat). */
static bool recomputed(const kiln_graph *g, const plan_buffer *b) {
    return ir_side_hints(g, b->node) & IR_HINT_RECOMPUTED;
}

/* Bytes of a valid UTF-8 sequence at s, 0 if none starts there. */
static int utf8_len(const unsigned char *s) {
    int n = s[0] < 0x80                    ? 1
            : s[0] >= 0xc2 && s[0] <= 0xdf ? 2
            : s[0] >= 0xe0 && s[0] <= 0xef ? 3
            : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4
                                           : 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80) return 0;
    return n;
}

/* Text for XML: markup characters escaped, control characters and bytes that are not
 * UTF-8 replaced by '?' (names come from users; the document must stay well-formed).
 * Characters [from, to) only (counted as UTF-8 characters). */
static void xml_chars(strbuf *sb, const char *s, int from, int to) {
    const unsigned char *u = (const unsigned char *)(s ? s : "");
    for (int i = 0; *u && i < to; i++) {
        int n = utf8_len(u);
        if (i < from)
            ;
        else if (n == 0 || (n == 1 && *u < 0x20) || *u == 0x7f)
            sb_append(sb, "?");
        else if (*u == '&')
            sb_append(sb, "&amp;");
        else if (*u == '<')
            sb_append(sb, "&lt;");
        else if (*u == '>')
            sb_append(sb, "&gt;");
        else if (*u == '"')
            sb_append(sb, "&quot;");
        else
            sb_printf(sb, "%.*s", n, (const char *)u);
        u += n ? n : 1;
    }
}

/* Characters of a string as xml_chars counts them. */
static int text_chars(const char *s) {
    int n = 0;
    for (const unsigned char *u = (const unsigned char *)(s ? s : ""); *u; n++)
        u += utf8_len(u) ? utf8_len(u) : 1;
    return n;
}

static void xml_text(strbuf *sb, const char *s) {
    xml_chars(sb, s, 0, INT32_MAX);
}

/* At most max characters: a longer text keeps its start and its end around an ellipsis,
 * which tells "h.0.attn.c_attn.weight" from "h.1.attn.c_attn.weight" where cutting the
 * end would not. */
static void xml_text_fit(strbuf *sb, const char *s, int max) {
    int n = text_chars(s);
    if (n <= max || max < 3) {
        xml_chars(sb, s, 0, n);
        return;
    }
    int head = (max - 1) / 2, tail = max - 1 - head;
    xml_chars(sb, s, 0, head);
    sb_append(sb, "\xe2\x80\xa6"); /* U+2026 */
    xml_chars(sb, s, n - tail, n);
}

/* A box's fill: its class (the legend above the plot names every class drawn). */
static const char *class_color(int c) {
    static const char *const colors[PLAN_NUM_CLASSES] = {
        "#5c8ee6", /* parameter */
        "#e57373", /* gradient */
        "#9575cd", /* optimizer_state */
        "#f0a04b", /* activation */
        "#b0bec5", /* input */
        "#66bb6a", /* output */
        "#4db6ac", /* temporary */
        "#9e9e9e", /* constant (never drawn: host memory) */
    };
    return c >= 0 && c < PLAN_NUM_CLASSES ? colors[c] : "#000";
}

#define SVG_RED         "#c62828"
#define SVG_RECOMPUTED  "#b71c1c"
#define SVG_PALE        "0.45" /* the fill opacity of a box drawn larger than it is */
#define SVG_DASH_ARENA  "6,3"
#define SVG_DASH_LOWER  "2,3"
#define SVG_DASH_RECOMP "4,2"

/* Does a later result take over b's bytes in place? (Its box then ends where that one's
 * starts, so the two do not overlap at the shared step.) */
static bool taken_over(const mem_plan *p, const plan_buffer *b) {
    for (uint32_t i = 0; i < p->n_buffers; i++)
        if (p->buffers[i].shares >= 0 && &p->buffers[p->buffers[i].shares] == b) return true;
    return false;
}

/* Is b drawn? The arena's buffers, and those of donated arguments the plan uses (the
 * argument itself, then what the plan put in its buffer). */
static bool drawn(const mem_plan *p, const plan_buffer *b) {
    if (!b->size) return false;
    if (b->place == PLAN_P_ARENA || b->place == PLAN_P_DONATED) return true;
    return b->place == PLAN_P_ARG && b->place_index < p->n_params && p->donated[b->place_index] &&
           p->donation_used[b->place_index];
}

typedef struct svg_rect {
    double x, y, w, h;
    bool enlarged; /* drawn bigger than its bytes and steps: min_px high or SVG_MIN_PX wide */
} svg_rect;

/* Steps [def, last] (clipped to the schedule) by bytes [off, off + size) above y0. */
static svg_rect box_rect(const svg *v, const plan_buffer *b, uint64_t off) {
    int32_t n = (int32_t)v->p->n_kernels, d = b->def < 0 ? 0 : b->def,
            l = b->last >= n ? n - 1 : b->last;
    double steps = l - d + (taken_over(v->p, b) && l > d ? 0 : 1);
    svg_rect r = {SVG_LEFT + d * v->sw, 0, steps * v->sw, (double)b->size * v->scale, false};
    if (r.h < v->min_px) r.h = v->min_px, r.enlarged = true;
    if (r.w < SVG_MIN_PX) {
        r.w = SVG_MIN_PX, r.enlarged = true;
        if (r.x + r.w > SVG_W - SVG_RIGHT) r.x = SVG_W - SVG_RIGHT - r.w;
    }
    r.y = v->y0 - (double)off * v->scale - r.h;
    return r;
}

/* The longest of "name: op", "name" (named values) or "op file:line", "op" that fits. */
static void box_label(svg *v, const plan_buffer *b, svg_rect r) {
    if (r.h < SVG_TEXT_PX) return;
    const ir_node *nd = &v->g->nodes[b->node];
    const char *op = plan_buffer_op(v->g, b), *name = buffer_name(v->g, b);
    char c[2][160];
    if (name && b->kind == PLAN_K_PARAM) { /* "parameter" would say nothing more */
        snprintf(c[0], sizeof c[0], "%s", name);
        snprintf(c[1], sizeof c[1], "%s", name);
    } else if (name) {
        snprintf(c[0], sizeof c[0], "%s: %s", name, op);
        snprintf(c[1], sizeof c[1], "%s", name);
    } else {
        if (nd->file && b->kind != PLAN_K_SCRATCH)
            snprintf(c[0], sizeof c[0], "%s %s:%d", op, kn_path_base(nd->file), nd->line);
        else
            snprintf(c[0], sizeof c[0], "%s", op);
        snprintf(c[1], sizeof c[1], "%s", op);
    }
    for (int k = 0; k < 2; k++) {
        if (r.w < 6.0 * text_chars(c[k]) + 4) continue; /* font-size 10 */
        sb_printf(v->sb,
                  "<text class=\"name\" x=\"%.1f\" y=\"%.1f\" font-size=\"10\" "
                  "text-anchor=\"middle\" dominant-baseline=\"middle\">",
                  r.x + r.w / 2, r.y + r.h / 2);
        xml_text(v->sb, c[k]);
        sb_append(v->sb, "</text>");
        return;
    }
}

static void svg_box(svg *v, const plan_buffer *b, uint64_t off) {
    const mem_plan *p = v->p;
    svg_rect r = box_rect(v, b, off);
    int cls = p->buffer_class[b - p->buffers];
    const ir_node *nd = &v->g->nodes[b->node];
    char t[IR_TYPE_STR_MAX];
    ir_type_str(nd->dtype, &nd->shape, t, sizeof t);
    bool again = recomputed(v->g, b);
    sb_printf(v->sb,
              "<g><rect class=\"box%s%s\" data-class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
              "height=\"%.1f\" fill=\"%s\" %s%s/>",
              again ? " recomputed" : "", r.enlarged ? " enlarged" : "", plan_class_name(cls), r.x,
              r.y, r.w, r.h, class_color(cls),
              again ? "stroke=\"" SVG_RECOMPUTED "\" stroke-width=\"1.5\" "
                      "stroke-dasharray=\"" SVG_DASH_RECOMP "\" "
                    : "stroke=\"#fff\" stroke-width=\"0.5\" ",
              r.enlarged ? "fill-opacity=\"" SVG_PALE "\" " : "");
    sb_printf(v->sb, "<title>%%%u", b->node);
    const char *name = buffer_name(v->g, b);
    if (name) sb_append(v->sb, " \""), xml_text(v->sb, name), sb_append(v->sb, "\"");
    sb_printf(v->sb, " %s %s: %" PRIu64 " bytes at offset %" PRIu64 ", live steps %d..%d, %s",
              plan_buffer_op(v->g, b), b->kind == PLAN_K_SCRATCH ? "scratch" : t, b->size, off,
              b->def, b->last, plan_class_name(cls));
    if (nd->file && b->kind != PLAN_K_SCRATCH) {
        sb_append(v->sb, ", from ");
        xml_text(v->sb, kn_path_base(nd->file));
        sb_printf(v->sb, ":%d", nd->line);
    }
    if (b->shares >= 0) sb_printf(v->sb, ", in place over %%%u", p->buffers[b->shares].node);
    if (again) sb_append(v->sb, ", recomputed for the backward pass");
    if (r.enlarged) sb_append(v->sb, ", drawn larger than its size so that it shows");
    sb_append(v->sb, "</title>");
    box_label(v, b, r);
    sb_append(v->sb, "</g>\n");
}

/* Reserves room in the left margin for a label centred at y; false if it would overlap
 * one already there (earlier labels win: ticks are placed first). */
static bool margin_take(svg *v, double y) {
    for (int i = 0; i < v->n_margin; i++)
        if (fabs(v->margin_y[i] - y) < SVG_TEXT_PX) return false;
    if (v->n_margin == SVG_MARGIN_MAX) return false;
    v->margin_y[v->n_margin++] = y;
    return true;
}

/* The least of 1, 2, 5 x 10^k that is >= x (> 0). */
static double nice_step(double x) {
    double p = pow(10, floor(log10(x)));
    for (int i = 0; i < 3; i++) {
        double m = (double[]){1, 2, 5}[i] * p;
        if (m >= x * (1 - 1e-12)) return m;
    }
    return 10 * p;
}

/* Offsets up the side of the arena at round values, 1, 2 or 5 x 10^k in the unit of the
 * arena's size (B, KiB, MiB, ...), no two closer than SVG_TICK_PX: a thin arena under
 * tall donated buffers gets 0 alone. */
static void svg_ticks(svg *v, uint64_t top) {
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    double unit = 1;
    while (u < 4 && (double)top >= unit * 1024) unit *= 1024, u++;
    double step = SVG_TICK_PX / (v->scale > 0 ? v->scale : 1) / unit;
    if (step < (double)top / unit / 8) step = (double)top / unit / 8;
    if (u == 0 && step < 1) step = 1;
    step = nice_step(step > 0 ? step : 1);
    for (int i = 0; i < 64 && i * step * unit <= (double)top * (1 + 1e-12); i++) {
        double y = v->y0 - i * step * unit * v->scale;
        if (!margin_take(v, y)) continue;
        char val[32];
        snprintf(val, sizeof val, "%.6g", i * step);
        sb_printf(v->sb,
                  "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#616161\"/>"
                  "<text class=\"ytick\" x=\"%d\" y=\"%.1f\" font-size=\"10\" "
                  "text-anchor=\"end\">%s%s%s</text>\n",
                  SVG_LEFT - 4, SVG_LEFT, y, y, SVG_LEFT - 6, y + 3.5, val, i ? " " : "",
                  i ? units[u] : "");
    }
}

/* A horizontal line across the plot with its label in the right margin, above or below it. */
static void svg_hline(svg *v, double y, const char *dash, const char *cls, bool above,
                      const char *label) {
    sb_printf(v->sb,
              "<line class=\"%s\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"" SVG_RED
              "\" stroke-dasharray=\"%s\"/>\n",
              cls, SVG_LEFT, SVG_W - SVG_RIGHT, y, y, dash);
    if (label)
        sb_printf(v->sb,
                  "<text class=\"line-label\" x=\"%d\" y=\"%.1f\" font-size=\"11\" fill=\"" SVG_RED
                  "\">%s</text>\n",
                  SVG_W - SVG_RIGHT + 6, above ? y - 3 : y + 11, label);
}

/* The arena band: boxes, the live-bytes curve, the arena extent and the lower bound. */
static void svg_arena(svg *v) {
    const mem_plan *p = v->p;
    char h1[32], lab[96];
    for (uint32_t i = 0; i < p->n_buffers; i++) {
        const plan_buffer *b = &p->buffers[i];
        if (b->place == PLAN_P_ARENA && b->size) svg_box(v, b, b->offset);
    }
    if (p->n_kernels) {
        sb_append(v->sb, "<polyline class=\"live\" fill=\"none\" stroke=\"#212121\" "
                         "stroke-width=\"1.2\" points=\"");
        for (uint32_t s = 0; s < p->n_kernels; s++) {
            double y = v->y0 - (double)p->live_bytes[s] * v->scale;
            sb_printf(v->sb, "%.1f,%.1f %.1f,%.1f ", SVG_LEFT + s * v->sw, y,
                      SVG_LEFT + (s + 1) * v->sw, y);
        }
        sb_append(v->sb, "\"/>\n");
    }
    double ya = v->y0 - (double)p->arena * v->scale, yl = v->y0 - (double)p->lower_bound * v->scale;
    snprintf(lab, sizeof lab, "arena %s (peak)", human(p->arena, h1, sizeof h1));
    bool arena_higher = p->arena >= p->lower_bound;
    svg_hline(v, ya, SVG_DASH_ARENA, "arena", arena_higher, lab);
    if (p->lower_bound == p->arena && p->lower_bound) {
        sb_printf(v->sb,
                  "<text class=\"line-label\" x=\"%d\" y=\"%.1f\" font-size=\"11\" fill=\"" SVG_RED
                  "\">= lower bound</text>\n",
                  SVG_W - SVG_RIGHT + 6, ya + 11);
    } else if (p->lower_bound) {
        snprintf(lab, sizeof lab, "lower bound %s", human(p->lower_bound, h1, sizeof h1));
        svg_hline(v, yl, SVG_DASH_LOWER, "lower-bound", !arena_higher, lab);
    }
    svg_ticks(v, p->arena > p->lower_bound ? p->arena : p->lower_bound);
}

/* The host arena (host offload), a band of its own above the device's: the values waiting
 * in pinned_host memory between the forward and backward passes, outside the peak. */
static void svg_host(svg *v) {
    const mem_plan *p = v->p;
    for (uint32_t i = 0; i < p->n_buffers; i++) {
        const plan_buffer *b = &p->buffers[i];
        if (b->place == PLAN_P_HOST && b->size) svg_box(v, b, b->offset);
    }
    double h = (double)p->host_arena * v->scale;
    double mid = v->y0 - (h < v->min_px ? v->min_px : h) / 2;
    if (!margin_take(v, mid)) return;
    char hb[32];
    sb_printf(v->sb,
              "<text class=\"band\" x=\"%d\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">"
              "<title>the host arena (pinned_host memory), %s, outside the device's peak</title>"
              "host</text>\n",
              SVG_LEFT - 6, mid + 3.5, human(p->host_arena, hb, sizeof hb));
}

/* The height a donated argument's band takes. */
static double band_px(const svg *v, uint64_t bytes) {
    double h = (double)bytes * v->scale;
    return h < v->min_px ? v->min_px : h;
}

/* A donated argument's buffer: the argument until its last read, then what the plan put
 * there; its name in the left margin where there is room. */
static void svg_donated(svg *v, uint32_t param) {
    const mem_plan *p = v->p;
    const plan_buffer *a = &p->buffers[p->buffer_of[v->g->params[param]]];
    svg_box(v, a, 0);
    for (uint32_t i = 0; i < p->n_buffers; i++) {
        const plan_buffer *b = &p->buffers[i];
        if (b->place == PLAN_P_DONATED && b->place_index == param && b->size)
            svg_box(v, b, b->offset);
    }
    double mid = v->y0 - band_px(v, a->size) / 2;
    if (!margin_take(v, mid)) return;
    char h[32], num[24];
    const char *name = buffer_name(v->g, a);
    snprintf(num, sizeof num, "arg %u", param);
    sb_printf(v->sb,
              "<text class=\"band\" x=\"%d\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">"
              "<title>argument %u",
              SVG_LEFT - 6, mid + 3.5, param);
    if (name) sb_append(v->sb, " \""), xml_text(v->sb, name), sb_append(v->sb, "\"");
    sb_printf(v->sb, ", %s, donated</title>", human(a->size, h, sizeof h));
    xml_text_fit(v->sb, name ? name : num, (int)((SVG_LEFT - 30) / 6.0)); /* font-size 10 */
    sb_append(v->sb, "</text>\n");
}

static void svg_axes(svg *v) {
    uint32_t n = v->p->n_kernels;
    uint32_t every = n > 20 ? (uint32_t)nice_step(n / 20.0) : 1;
    sb_printf(v->sb, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#616161\"/>\n",
              SVG_LEFT, SVG_W - SVG_RIGHT, v->bottom, v->bottom);
    for (uint32_t s = 0; s < n; s += every)
        sb_printf(v->sb,
                  "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"middle\">%u</text>\n",
                  SVG_LEFT + (s + 0.5) * v->sw, v->bottom + 14, s);
    sb_printf(v->sb,
              "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">schedule step "
              "(kernel)</text>\n",
              (SVG_LEFT + SVG_W - SVG_RIGHT) / 2, v->bottom + 30);
    double mid = (v->top + v->bottom) / 2;
    sb_printf(v->sb,
              "<text x=\"14\" y=\"%.1f\" font-size=\"11\" transform=\"rotate(-90 14 %.1f)\" "
              "text-anchor=\"middle\">%s</text>\n",
              mid, mid,
              !v->bands          ? "offset in the arena"
              : v->p->host_arena ? "offset: the arena, donated buffers and the host arena above it"
                                 : "offset: the arena, donated buffers above it");
}

/* What the legend shows: every fill, outline and line the picture draws. */
typedef struct legend {
    bool cls[PLAN_NUM_CLASSES];
    bool recomputed, enlarged, live, lower;
} legend;

static legend legend_of(const svg *v) {
    const mem_plan *p = v->p;
    legend l = {.live = p->n_kernels > 0, .lower = p->lower_bound && p->lower_bound != p->arena};
    for (uint32_t i = 0; i < p->n_buffers; i++) {
        const plan_buffer *b = &p->buffers[i];
        if (!drawn(p, b)) continue;
        l.cls[p->buffer_class[i]] = true;
        l.recomputed |= recomputed(v->g, b);
        l.enlarged |= box_rect(v, b, 0).enlarged;
    }
    for (uint32_t k = 0; k < p->n_kernels && !l.recomputed; k++) { /* the step marks */
        const fkernel *kn = &v->fp->kernels[k];
        for (uint32_t r = 0; r < kn->n_roots; r++)
            l.recomputed |= (ir_side_hints(v->g, kn->roots[r]) & IR_HINT_RECOMPUTED) != 0;
    }
    return l;
}

/* A legend entry's sample: a 10x10 square (fill, outline, pale as an enlarged box is) or
 * a short line (stroke, dash). */
typedef struct swatch {
    bool line;
    const char *fill, *stroke, *dash;
    bool pale;
} swatch;

/* One legend entry at (*x, *y), wrapping to a new row at the right edge. Only moves x and
 * y when !emit (measuring the legend's height). */
static void legend_entry(svg *v, bool emit, double *x, double *y, const char *key, const char *text,
                         swatch w) {
    double width = 14 + SVG_CHAR_PX * text_chars(text) + 16;
    if (*x + width > SVG_W - 10 && *x > SVG_LEFT) *x = SVG_LEFT, *y += 16;
    if (emit) {
        sb_printf(v->sb, "<g class=\"legend\" data-key=\"%s\">", key);
        if (w.line)
            sb_printf(v->sb,
                      "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                      "stroke-width=\"1.5\" stroke-dasharray=\"%s\"/>",
                      *x, *x + 10, *y - 4, *y - 4, w.stroke, w.dash ? w.dash : "none");
        else
            sb_printf(v->sb,
                      "<rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"10\" fill=\"%s\" "
                      "%sstroke=\"%s\" stroke-width=\"%s\" stroke-dasharray=\"%s\"/>",
                      *x, *y - 9, w.fill, w.pale ? "fill-opacity=\"" SVG_PALE "\" " : "",
                      w.stroke ? w.stroke : "none", w.stroke ? "1.2" : "0",
                      w.dash ? w.dash : "none");
        sb_printf(v->sb, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">%s</text></g>\n", *x + 14,
                  *y, text);
    }
    *x += width;
}

/* The legend from y (the first row's baseline); returns the baseline of its last row.
 * Nothing is written when !emit. */
static double svg_legend(svg *v, const legend *l, double y, bool emit) {
    double x = SVG_LEFT;
    for (int c = 0; c < PLAN_NUM_CLASSES; c++)
        if (l->cls[c])
            legend_entry(v, emit, &x, &y, plan_class_name(c), plan_class_name(c),
                         (swatch){.fill = class_color(c)});
    if (l->recomputed)
        legend_entry(v, emit, &x, &y, "recomputed", "recomputed (a red mark under its step)",
                     (swatch){.fill = "#fff", .stroke = SVG_RECOMPUTED, .dash = SVG_DASH_RECOMP});
    if (l->enlarged)
        legend_entry(v, emit, &x, &y, "enlarged", "pale: smaller than drawn",
                     (swatch){.fill = "#78909c", .pale = true});
    if (l->live)
        legend_entry(v, emit, &x, &y, "live", "bytes live",
                     (swatch){.line = true, .stroke = "#212121"});
    legend_entry(v, emit, &x, &y, "arena", "arena extent (peak)",
                 (swatch){.line = true, .stroke = SVG_RED, .dash = SVG_DASH_ARENA});
    if (l->lower)
        legend_entry(v, emit, &x, &y, "lower-bound", "lower bound",
                     (swatch){.line = true, .stroke = SVG_RED, .dash = SVG_DASH_LOWER});
    return y;
}

/* A red triangle under the step of every kernel that recomputes a value. */
static void svg_recompute_marks(svg *v) {
    const mem_plan *p = v->p;
    for (uint32_t s = 0; s < p->n_kernels; s++) {
        const fkernel *kn = &v->fp->kernels[p->order[s]];
        bool again = false;
        for (uint32_t r = 0; r < kn->n_roots; r++)
            again |= (ir_side_hints(v->g, kn->roots[r]) & IR_HINT_RECOMPUTED) != 0;
        if (!again) continue;
        double x = SVG_LEFT + (s + 0.5) * v->sw;
        sb_printf(v->sb,
                  "<path class=\"recomputed\" d=\"M%.1f %.1f l-3 6 h6 z\" fill=\"" SVG_RECOMPUTED
                  "\"><title>step %u: kernel k%u recomputes %%%u (%s)</title></path>\n",
                  x, v->bottom + 1, s, p->order[s], kn->roots[0],
                  ir_ops[v->g->nodes[kn->roots[0]].op].name);
    }
}

/* The scale (pixels per byte) at which the arena and the bands, each band at least
 * min_px high, fill `avail` pixels. The height they need grows with the scale, so a
 * bisection finds it. */
static double fit_scale(const svg *v, uint64_t arena_h, double avail) {
    const mem_plan *p = v->p;
    uint64_t total = arena_h + p->host_arena;
    for (uint32_t i = 0; i < p->n_params; i++)
        if (p->donated[i] && p->donation_used[i])
            total += p->buffers[p->buffer_of[v->g->params[i]]].size;
    if (!total) return 0;
    double lo = 0, hi = avail / (double)total;
    for (int it = 0; it < 60; it++) {
        double s = (lo + hi) / 2, need = (double)arena_h * s;
        if (p->host_arena) {
            double h = (double)p->host_arena * s;
            need += h < v->min_px ? v->min_px : h;
        }
        for (uint32_t i = 0; i < p->n_params; i++)
            if (p->donated[i] && p->donation_used[i]) {
                double h = (double)p->buffers[p->buffer_of[v->g->params[i]]].size * s;
                need += h < v->min_px ? v->min_px : h;
            }
        if (need > avail)
            hi = s;
        else
            lo = s;
    }
    return lo;
}

char *plan_svg(const kiln_graph *g, const fusion_plan *fp, const mem_plan *p) {
    strbuf sb;
    sb_init(&sb, g->ctx);
    svg v = {.sb = &sb, .g = g, .fp = fp, .p = p, .min_px = SVG_MIN_PX};
    v.sw = (double)(SVG_W - SVG_LEFT - SVG_RIGHT) / (p->n_kernels ? p->n_kernels : 1);
    uint64_t arena_h = p->arena > p->lower_bound ? p->arena : p->lower_bound;
    for (uint32_t i = 0; i < p->n_params; i++) v.bands += p->donated[i] && p->donation_used[i];
    v.bands += p->host_arena > 0;
    /* Gaps between the bands take at most an eighth of the plot and the bands' least
     * height a quarter of it: a training step donates every parameter and moment (156
     * bands for the GPT demo), and full gaps and heights would leave the arena no room. */
    v.gap = v.bands && SVG_GAP * v.bands > SVG_PLOT / 8 ? SVG_PLOT / 8.0 / v.bands : SVG_GAP;
    if (v.bands && v.min_px * v.bands > SVG_PLOT / 4) v.min_px = SVG_PLOT / 4.0 / v.bands;
    v.scale = fit_scale(&v, arena_h, SVG_PLOT - v.bands * v.gap);
    legend l = legend_of(&v);
    char h[4][32];
    v.top = svg_legend(&v, &l, 62, false) + 20;
    v.bottom = v.top + SVG_PLOT;
    sb_printf(&sb,
              "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%.0f\" "
              "font-family=\"sans-serif\">\n",
              SVG_W, v.bottom + 52);
    sb_printf(&sb,
              "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n<text x=\"%d\" y=\"22\" "
              "font-size=\"15\">memory plan of '",
              SVG_LEFT);
    xml_text(&sb, g->name);
    sb_printf(&sb, "': %u kernels, schedule \"%s\"</text>\n", p->n_kernels, p->strategy);
    sb_printf(&sb,
              "<text x=\"%d\" y=\"42\" font-size=\"12\">planned peak %s = arguments %s + outputs "
              "%s + arena %s",
              SVG_LEFT, human(p->peak, h[0], sizeof h[0]),
              human(p->argument_bytes, h[1], sizeof h[1]),
              human(p->output_bytes, h[2], sizeof h[2]), human(p->temp_bytes, h[3], sizeof h[3]));
    if (p->lower_bound)
        sb_printf(&sb, "; arena / lower bound %.3f", (double)p->arena / (double)p->lower_bound);
    if (p->host_arena)
        sb_printf(&sb, "; host arena %s (pinned_host, outside the peak)",
                  human(p->host_arena, h[0], sizeof h[0]));
    int n_dtypes = 0; /* by dtype at the peak step, when there is more than one */
    for (int t = 1; t < PLAN_NUM_DTYPES; t++) n_dtypes += p->dtype_peak[t] != 0;
    for (int t = 1, k = 0; t < PLAN_NUM_DTYPES && n_dtypes > 1; t++)
        if (p->dtype_peak[t])
            sb_printf(&sb, "%s%s %s", k++ ? ", " : "; at peak ", kiln_dtype_name((kiln_dtype)t),
                      human(p->dtype_peak[t], h[0], sizeof h[0]));
    sb_append(&sb, "</text>\n");
    svg_legend(&v, &l, 62, true);
    v.y0 = v.bottom;
    svg_arena(&v);
    double y = v.bottom - (double)arena_h * v.scale - v.gap;
    for (uint32_t i = 0; i < p->n_params; i++) { /* donated buffers in use: bands above */
        if (!p->donated[i] || !p->donation_used[i]) continue;
        v.y0 = y;
        svg_donated(&v, i);
        y -= band_px(&v, p->buffers[p->buffer_of[g->params[i]]].size) + v.gap;
    }
    if (p->host_arena) { /* the host arena: the top band */
        v.y0 = y;
        svg_host(&v);
    }
    svg_axes(&v);
    svg_recompute_marks(&v);
    sb_append(&sb, "</svg>\n");
    return take(&sb, "kiln_executable_plan_svg");
}
