/* picture.c — a memory plan as text, as JSON and as an SVG timeline.
 *
 * The SVG is the plan drawn the way XLA's buffer-assignment viewers draw it: x is the
 * schedule step, y the offset in the arena; each temporary is a box from the step that
 * writes it to the last step that reads it, labelled by its op (hover for the details).
 * The arena's extent is the dashed "arena" line; the curve is the bytes live at each
 * step, whose maximum — the lower bound no placement can beat — is the dotted line. The
 * buffers of donated arguments, when the plan uses them, are drawn as bands above the
 * arena at the same scale. Boxes are coloured by class (parameter, gradient, optimizer
 * state, activation saved for the backward pass, ...: classes.c), with a legend. docs/memory.md
 * explains how to read it.
 *
 * Every string built here goes through a strbuf, so host OOM anywhere gives NULL, with the
 * context's message saying which string could not be made. */
#include "plan.h"
#include "base/strbuf.h"

#include <inttypes.h>
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
    static const char *const names[] = {"argument", "constant", "output", "arena", "donated"};
    return p >= 0 && p <= PLAN_P_DONATED ? names[p] : "?";
}

static const char *param_name(const kiln_graph *g, uint32_t i) {
    const char *n = g->nodes[g->params[i]].name;
    return n ? n : "";
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
        sb_printf(sb, "    %%%-5u %-18s %-22s %12" PRIu64 " B  live [%d, %d]  from ", b->node,
                  plan_buffer_op(g, b), ir_type_str(n->dtype, &n->shape, t, sizeof t), b->size,
                  b->def, b->last);
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
    sb_printf(&sb, "  %-6s %-18s %-22s %12s %-10s %12s %11s %-15s %s\n", "value", "op", "type",
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
        sb_printf(&sb, "  %%%-5u %-18s %-22s %12" PRIu64 " %-10s %12" PRIu64 " %11s ", b->node,
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
              ", \"temp_lower_bound\": %" PRIu64 ", \"inplace_bytes\": %" PRIu64 "},\n",
              p->argument_bytes, p->output_bytes, p->temp_bytes, p->arena, p->alias_bytes,
              p->constant_bytes, code_bytes, p->peak, p->lower_bound, p->inplace_bytes);
    sb_printf(sb, "  \"classes\": {\"peak_step\": %d, \"at_peak\": {", p->peak_step);
    for (int c = 0; c < PLAN_NUM_CLASSES; c++)
        sb_printf(sb, "%s\"%s\": %" PRIu64, c ? ", " : "", plan_class_name(c), p->class_peak[c]);
    sb_append(sb, "}, \"total\": {");
    for (int c = 0; c < PLAN_NUM_CLASSES; c++)
        sb_printf(sb, "%s\"%s\": %" PRIu64, c ? ", " : "", plan_class_name(c), p->class_total[c]);
    sb_append(sb, "}},\n");
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

#define SVG_W     1000
#define SVG_LEFT  136
#define SVG_RIGHT 24
#define SVG_TOP   64
#define SVG_PLOT  440
#define SVG_GAP   18

typedef struct svg {
    strbuf *sb;
    const kiln_graph *g;
    const mem_plan *p;
    double sw, scale; /* pixels per step, per byte */
    double y0;        /* the bottom of the band being drawn */
    double gap;       /* pixels between the bands of donated buffers */
    const fusion_plan *fp;
} svg;

/* A buffer written by a recomputation (rematerialisation: src/passes/remat.c). */
static bool recomputed(const kiln_graph *g, const plan_buffer *b) {
    return g->nodes[b->node].remat == IR_REMAT_CLONE;
}

static void xml_text(strbuf *sb, const char *s) {
    for (; s && *s; s++) {
        switch (*s) {
        case '&': sb_append(sb, "&amp;"); break;
        case '<': sb_append(sb, "&lt;"); break;
        case '>': sb_append(sb, "&gt;"); break;
        case '"': sb_append(sb, "&quot;"); break;
        default: sb_printf(sb, "%c", *s);
        }
    }
}

/* A box's fill: its class (a legend above the plot names them). */
static const char *class_color(int c) {
    static const char *const colors[PLAN_NUM_CLASSES] = {
        "#5c8ee6", /* parameter */
        "#e57373", /* gradient */
        "#9575cd", /* optimizer_state */
        "#f0a04b", /* activation */
        "#cfd8dc", /* input */
        "#66bb6a", /* output */
        "#4db6ac", /* temporary */
        "#9e9e9e", /* constant (never drawn: host memory) */
    };
    return c >= 0 && c < PLAN_NUM_CLASSES ? colors[c] : "#000";
}

static const char *box_color(const mem_plan *p, const plan_buffer *b) {
    return class_color(p->buffer_class[b - p->buffers]);
}

/* One box: steps [def, last] (clipped to the schedule), bytes [off, off + size). */
/* Does a later result take over b's bytes in place? (Its box then ends where that one's
 * starts, so the two do not overlap at the shared step.) */
static bool taken_over(const mem_plan *p, const plan_buffer *b) {
    for (uint32_t i = 0; i < p->n_buffers; i++)
        if (p->buffers[i].shares >= 0 && &p->buffers[p->buffers[i].shares] == b) return true;
    return false;
}

static void svg_box(svg *v, const plan_buffer *b, uint64_t off, const char *fill) {
    int32_t n = (int32_t)v->p->n_kernels, d = b->def < 0 ? 0 : b->def,
            l = b->last >= n ? n - 1 : b->last;
    double steps = l - d + (taken_over(v->p, b) && l > d ? 0 : 1);
    double x = SVG_LEFT + d * v->sw, w = steps * v->sw;
    double h = (double)b->size * v->scale, y = v->y0 - (double)(off + b->size) * v->scale;
    if (h < 1) h = 1;
    const ir_node *nd = &v->g->nodes[b->node];
    char t[IR_TYPE_STR_MAX];
    ir_type_str(nd->dtype, &nd->shape, t, sizeof t);
    bool again = recomputed(v->g, b);
    sb_printf(v->sb,
              "<g><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" %s/>", x,
              y, w, h, fill,
              again ? "class=\"recomputed\" stroke=\"#b71c1c\" stroke-width=\"1.5\" "
                      "stroke-dasharray=\"4,2\""
                    : "stroke=\"#fff\" stroke-width=\"0.5\"");
    sb_printf(v->sb,
              "<title>%%%u %s %s: %" PRIu64 " bytes at offset %" PRIu64 ", live steps %d..%d, %s",
              b->node, plan_buffer_op(v->g, b), b->kind == PLAN_K_SCRATCH ? "scratch" : t, b->size,
              off, b->def, b->last, plan_class_name(v->p->buffer_class[b - v->p->buffers]));
    if (nd->file && b->kind != PLAN_K_SCRATCH) {
        sb_append(v->sb, ", from ");
        xml_text(v->sb, kn_path_base(nd->file));
        sb_printf(v->sb, ":%d", nd->line);
    }
    if (b->shares >= 0) sb_printf(v->sb, ", in place over %%%u", v->p->buffers[b->shares].node);
    if (again) sb_append(v->sb, ", recomputed for the backward pass");
    sb_append(v->sb, "</title>");
    if (w >= 6.0 * (double)strlen(plan_buffer_op(v->g, b)) + 4 && h >= 11) /* when it fits */
        sb_printf(v->sb,
                  "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"middle\" "
                  "dominant-baseline=\"middle\">%s</text>",
                  x + w / 2, y + h / 2, plan_buffer_op(v->g, b));
    sb_append(v->sb, "</g>\n");
}

static void svg_hline(svg *v, double y, const char *dash, const char *label) {
    sb_printf(v->sb,
              "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#c62828\" "
              "stroke-dasharray=\"%s\"/>\n",
              SVG_LEFT, SVG_W - SVG_RIGHT, y, y, dash);
    sb_printf(v->sb,
              "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\" "
              "fill=\"#c62828\">%s</text>\n",
              SVG_W - SVG_RIGHT, y - 3, label);
}

/* The arena band: boxes, the live-bytes curve, the arena extent and the lower bound. */
static void svg_arena(svg *v) {
    const mem_plan *p = v->p;
    char h1[32], h2[32], lab[96];
    for (uint32_t i = 0; i < p->n_buffers; i++) {
        const plan_buffer *b = &p->buffers[i];
        if (b->place == PLAN_P_ARENA && b->size) svg_box(v, b, b->offset, box_color(p, b));
    }
    sb_append(v->sb, "<polyline fill=\"none\" stroke=\"#212121\" stroke-width=\"1.2\" points=\"");
    for (uint32_t s = 0; s < p->n_kernels; s++) {
        double y = v->y0 - (double)p->live_bytes[s] * v->scale;
        sb_printf(v->sb, "%.1f,%.1f %.1f,%.1f ", SVG_LEFT + s * v->sw, y,
                  SVG_LEFT + (s + 1) * v->sw, y);
    }
    sb_append(v->sb, "\"/>\n");
    snprintf(lab, sizeof lab, "arena %s (peak)", human(p->arena, h1, sizeof h1));
    svg_hline(v, v->y0 - (double)p->arena * v->scale, "6,3", lab);
    snprintf(lab, sizeof lab, "lower bound %s", human(p->lower_bound, h2, sizeof h2));
    if (p->lower_bound != p->arena)
        svg_hline(v, v->y0 - (double)p->lower_bound * v->scale, "2,3", lab);
    uint64_t top = p->arena > p->lower_bound ? p->arena : p->lower_bound;
    for (int i = 0; i <= 4 && top; i++) { /* offsets up the side */
        double y = v->y0 - (double)top * i / 4 * v->scale;
        sb_printf(v->sb,
                  "<text x=\"%d\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%s</text>\n",
                  SVG_LEFT - 6, y + 3, human(top * (uint64_t)i / 4, h1, sizeof h1));
    }
    double mid = v->y0 - (double)top * v->scale / 2;
    sb_printf(v->sb,
              "<text x=\"14\" y=\"%.1f\" font-size=\"11\" transform=\"rotate(-90 14 %.1f)\" "
              "text-anchor=\"middle\">offset in the arena</text>\n",
              mid, mid);
}

/* A donated argument's buffer: the argument until its last read, then what the plan put there. */
static void svg_donated(svg *v, uint32_t param) {
    const mem_plan *p = v->p;
    const plan_buffer *a = &p->buffers[p->buffer_of[v->g->params[param]]];
    svg_box(v, a, 0, box_color(p, a));
    for (uint32_t i = 0; i < p->n_buffers; i++) {
        const plan_buffer *b = &p->buffers[i];
        if (b->place == PLAN_P_DONATED && b->place_index == param && b->size)
            svg_box(v, b, b->offset, box_color(p, b));
    }
    if ((double)a->size * v->scale + v->gap >= 10) /* a label only where it fits */
        sb_printf(v->sb,
                  "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">arg %u "
                  "(donated)</text>\n",
                  SVG_LEFT - 6, v->y0, param);
}

static void svg_axes(svg *v, double bottom) {
    uint32_t n = v->p->n_kernels, every = n > 20 ? (n + 19) / 20 : 1;
    sb_printf(v->sb, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#616161\"/>\n",
              SVG_LEFT, SVG_W - SVG_RIGHT, bottom, bottom);
    for (uint32_t s = 0; s < n; s += every)
        sb_printf(v->sb,
                  "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"middle\">%u</text>\n",
                  SVG_LEFT + (s + 0.5) * v->sw, bottom + 14, s);
    sb_printf(v->sb,
              "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">schedule step "
              "(kernel)</text>\n",
              (SVG_LEFT + SVG_W - SVG_RIGHT) / 2, bottom + 30);
}

/* One swatch per class that has a box in the picture, in a row above the plot. */
static void svg_legend(svg *v) {
    const mem_plan *p = v->p;
    bool drawn[PLAN_NUM_CLASSES] = {false};
    for (uint32_t i = 0; i < p->n_buffers; i++) {
        const plan_buffer *b = &p->buffers[i];
        bool donated_arg = b->place == PLAN_P_ARG && b->place_index < p->n_params &&
                           p->donated[b->place_index] && p->donation_used[b->place_index];
        if (b->size && (b->place == PLAN_P_ARENA || b->place == PLAN_P_DONATED || donated_arg))
            drawn[p->buffer_class[i]] = true;
    }
    double x = SVG_LEFT;
    for (int c = 0; c < PLAN_NUM_CLASSES; c++) {
        if (!drawn[c]) continue;
        sb_printf(v->sb,
                  "<rect class=\"legend\" x=\"%.1f\" y=\"48\" width=\"10\" height=\"10\" "
                  "fill=\"%s\"/><text x=\"%.1f\" y=\"57\" font-size=\"11\">%s</text>\n",
                  x, class_color(c), x + 14, plan_class_name(c));
        x += 14 + 7.0 * (double)strlen(plan_class_name(c)) + 16;
    }
    /* recomputed kernels: a dashed outline on their buffers, a mark under their step */
    bool any = false;
    for (uint32_t k = 0; k < p->n_kernels && !any; k++) {
        const fkernel *kn = &v->fp->kernels[k];
        for (uint32_t r = 0; r < kn->n_roots; r++)
            any |= v->g->nodes[kn->roots[r]].remat == IR_REMAT_CLONE;
    }
    if (any)
        sb_printf(v->sb,
                  "<rect x=\"%.1f\" y=\"48\" width=\"10\" height=\"10\" fill=\"#fff\" "
                  "stroke=\"#b71c1c\" stroke-width=\"1.5\" stroke-dasharray=\"4,2\"/><text "
                  "x=\"%.1f\" y=\"57\" font-size=\"11\">recomputed (a red mark under its "
                  "step)</text>\n",
                  x, x + 14);
}

/* A red triangle under the step of every kernel that recomputes a value. */
static void svg_recompute_marks(svg *v, double y) {
    const mem_plan *p = v->p;
    for (uint32_t s = 0; s < p->n_kernels; s++) {
        const fkernel *kn = &v->fp->kernels[p->order[s]];
        bool again = false;
        for (uint32_t r = 0; r < kn->n_roots; r++)
            again |= v->g->nodes[kn->roots[r]].remat == IR_REMAT_CLONE;
        if (!again) continue;
        double x = SVG_LEFT + (s + 0.5) * v->sw;
        sb_printf(
            v->sb,
            "<path class=\"recomputed\" d=\"M%.1f %.1f l-3 6 h6 z\" fill=\"#b71c1c\"><title>step "
            "%u: kernel k%u recomputes %%%u (%s)</title></path>\n",
            x, y + 1, s, p->order[s], kn->roots[0], ir_ops[v->g->nodes[kn->roots[0]].op].name);
    }
}

char *plan_svg(const kiln_graph *g, const fusion_plan *fp, const mem_plan *p) {
    strbuf sb;
    sb_init(&sb, g->ctx);
    uint64_t total = p->arena > p->lower_bound ? p->arena : p->lower_bound;
    uint32_t bands = 0;
    for (uint32_t i = 0; i < p->n_params; i++)
        if (p->donated[i] && p->donation_used[i]) {
            total += p->buffers[p->buffer_of[g->params[i]]].size;
            bands++;
        }
    /* Gaps between the bands take at most a quarter of the plot: a training step donates
     * every parameter and moment (156 bands at four layers), and full gaps would leave
     * no height (a negative scale) for the bytes. */
    double gap = bands && SVG_GAP * bands > SVG_PLOT / 4 ? SVG_PLOT / 4.0 / bands : SVG_GAP;
    double plot = SVG_PLOT - bands * gap, height = SVG_TOP + SVG_PLOT + 52;
    svg v = {&sb,
             g,
             p,
             (double)(SVG_W - SVG_LEFT - SVG_RIGHT) / (p->n_kernels ? p->n_kernels : 1),
             total ? plot / (double)total : 0,
             SVG_TOP + SVG_PLOT,
             gap,
             fp};
    char h[4][32];
    sb_printf(&sb,
              "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%.0f\" "
              "font-family=\"sans-serif\">\n",
              SVG_W, height);
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
    sb_append(&sb, "</text>\n");
    svg_legend(&v);
    svg_arena(&v);
    uint64_t arena_h = p->arena > p->lower_bound ? p->arena : p->lower_bound;
    double y = SVG_TOP + SVG_PLOT - (double)arena_h * v.scale - gap;
    for (uint32_t i = 0; i < p->n_params; i++) { /* donated buffers in use: bands above */
        if (!p->donated[i] || !p->donation_used[i]) continue;
        v.y0 = y;
        svg_donated(&v, i);
        y -= (double)p->buffers[p->buffer_of[g->params[i]]].size * v.scale + gap;
    }
    svg_axes(&v, SVG_TOP + SVG_PLOT);
    svg_recompute_marks(&v, SVG_TOP + SVG_PLOT);
    sb_append(&sb, "</svg>\n");
    return take(&sb, "kiln_executable_plan_svg");
}
