/* print.c — the IR's text form: one op a line, stable (tests compare it), e.g.
 *
 *   graph mlp(%1: f32[2,3] "x") {
 *     %1 = parameter 0 "x" : f32[2,3]                      # mlp.c:12
 *     %2 = constant 0.5 : f32[]
 *     %3 = broadcast_in_dim(%2) dims=[] : f32[2,3]
 *     %4 = mul(%1, %3) : f32[2,3]                          # mlp.c:13
 *     return (%4)
 *   }
 *
 * Locations print as the file's last path component so the text does not depend on
 * where the source was built. A control node's sub-graphs follow its line as graph blocks
 * of their own, indented one level more: as many as the op runs (while 2, scan 1, cond one
 * a branch), which src/trace/load.c reads back without a count, since only a block starts
 * with "graph". */
#include "ir.h"
#include "base/strbuf.h"

#include <string.h>

static double elem(const void *data, kiln_dtype t, int64_t i) {
    return ir_scalar_load(t, data, i);
}

/* Element i of a float constant's data as its bits (the dtype's width), and whether it is
 * a NaN other than the one `nan` or `-nan` reads back as (the quiet NaN with no payload):
 * such a NaN prints as `nan0x` and its bits, which keeps its payload. */
static bool payload_nan(const void *data, kiln_dtype t, int64_t i, uint64_t *bits) {
    size_t size = kiln_dtype_itemsize(t);
    const char *at = (const char *)data + size * (size_t)i;
    uint32_t u32;
    uint16_t u16;
    switch (size) {
    case 8: memcpy(bits, at, 8); break;
    case 4: memcpy(&u32, at, 4), *bits = u32; break;
    case 2: memcpy(&u16, at, 2), *bits = u16; break;
    default: return false;
    }
    bool plain = false;
    return ir_float_bits_nan(t, *bits, &plain) && !plain;
}

/* Constants of up to 8 elements print their values, exactly enough to read them back:
 * f32 (and bf16, f16) with 9 significant digits, f64 with 17, a NaN with a payload as
 * `nan0x` and its bits, integers in full, bools as true/false. */
static void print_constant(const ir_node *n, strbuf *sb, bool all_values) {
    int64_t numel = 0;
    ir_shape_numel(&n->shape, &numel);
    if ((numel > 8 && !all_values) ||
        (numel && !n->data)) { /* no data: the verifier prints broken nodes */
        sb_printf(sb, n->data ? " {%lld values}" : " {%lld values, no data}", (long long)numel);
        return;
    }
    sb_append(sb, n->shape.rank ? " {" : " ");
    for (int64_t i = 0; i < numel; i++) {
        const char *sep = i ? ", " : "";
        switch (n->dtype) {
        case KILN_DTYPE_I64:
            sb_printf(sb, "%s%lld", sep, (long long)((const int64_t *)n->data)[i]);
            break;
        case KILN_DTYPE_I32: sb_printf(sb, "%s%d", sep, (int)((const int32_t *)n->data)[i]); break;
        case KILN_DTYPE_BOOL:
            sb_printf(sb, "%s%s", sep, ((const uint8_t *)n->data)[i] ? "true" : "false");
            break;
        default: {
            uint64_t bits;
            if (payload_nan(n->data, n->dtype, i, &bits))
                sb_printf(sb, "%snan0x%llx", sep, (unsigned long long)bits);
            else
                sb_printf(sb, n->dtype == KILN_DTYPE_F64 ? "%s%.17g" : "%s%.9g", sep,
                          elem(n->data, n->dtype, i));
            break;
        }
        }
    }
    if (n->shape.rank) sb_append(sb, "}");
}

/* A name with backslashes, quotes and control characters escaped, so that any name keeps
 * the text one op a line. */
void ir_print_escaped(strbuf *sb, const char *s) {
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\' || c == '\'')
            sb_printf(sb, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            sb_printf(sb, "\\x%02x", c);
        else
            sb_printf(sb, "%c", c);
    }
}

static void print_quoted(strbuf *sb, const char *s) {
    sb_append(sb, "\"");
    ir_print_escaped(sb, s);
    sb_append(sb, "\"");
}

/* A graph's name: bare when it is a plain identifier (letters, digits, _ . - /), else in
 * double quotes with escapes. */
static void print_graph_name(strbuf *sb, const char *s) {
    bool bare = *s != 0;
    for (const char *c = s; *c && bare; c++)
        bare = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
               strchr("_.-/", *c);
    if (bare)
        sb_append(sb, s);
    else
        print_quoted(sb, s);
}

static void print_attrs(const kiln_graph *g, const ir_node *n, strbuf *sb) {
    /* guarded: the verifier prints broken nodes too */
    uint32_t in0 = n->n_in && (n->n_in <= IR_INLINE_INPUTS || n->in_heap) ? ir_in(n)[0] : 0;
    int in_rank = in0 && in0 < g->n_nodes ? g->nodes[in0].shape.rank : 0;
    if ((unsigned)n->op < IR_NUM_OPS) ir_attrs_print(n, in_rank, sb);
}

static void print_node(const kiln_graph *g, uint32_t id, strbuf *sb, bool all_values) {
    const ir_node *n = &g->nodes[id];
    size_t start = sb->len;
    char type[IR_TYPE_STR_MAX];
    sb_printf(sb, "%%%u = %s", id, (unsigned)n->op < IR_NUM_OPS ? ir_ops[n->op].name : "?");
    if (n->op == IR_PARAMETER) {
        sb_printf(sb, " %d", n->a.param_index);
        if (n->name) sb_append(sb, " "), print_quoted(sb, n->name);
        if (n->a.param_memory_kind != KILN_MEMORY_DEVICE) {
            const char *kind = ir_memory_kind_name(n->a.param_memory_kind);
            sb_printf(sb, " %s", kind ? kind : "?");
        }
    } else if (n->op == IR_CONSTANT) {
        print_constant(n, sb, all_values);
    } else if (n->n_in && (n->n_in <= IR_INLINE_INPUTS || n->in_heap)) {
        const uint32_t *in = ir_in(n);
        sb_append(sb, "(");
        for (uint32_t i = 0; i < n->n_in; i++) sb_printf(sb, i ? ", %%%u" : "%%%u", in[i]);
        sb_append(sb, ")");
    }
    print_attrs(g, n, sb);
    sb_printf(sb, " : %s", ir_type_str(n->dtype, &n->shape, type, sizeof type));
    if (n->file) {
        size_t width = sb->oom ? 0 : sb->len - start;
        sb_printf(sb, "%*s# %s:%d", width < 52 ? (int)(52 - width) : 1, "", kn_path_base(n->file),
                  n->line);
    }
}

void ir_print_node(const kiln_graph *g, uint32_t id, strbuf *sb) {
    print_node(g, id, sb, false);
}

/* A graph at `indent` spaces; a control node's sub-graphs follow its line, each a graph of
 * its own, indented one level more (ids restart at %1 in each). */
static void print_graph(const kiln_graph *g, strbuf *sb, bool all_values, int indent) {
    char type[IR_TYPE_STR_MAX];
    sb_printf(sb, "%*sgraph ", indent, "");
    print_graph_name(sb, g->name ? g->name : "");
    sb_append(sb, "(");
    for (uint32_t i = 0; i < g->n_params; i++) {
        const ir_node *p = &g->nodes[g->params[i]];
        sb_printf(sb, "%s%%%u: %s", i ? ", " : "", g->params[i],
                  ir_type_str(p->dtype, &p->shape, type, sizeof type));
        if (p->name) sb_append(sb, " "), print_quoted(sb, p->name);
    }
    sb_append(sb, ") {\n");
    for (uint32_t id = 1; id < g->n_nodes; id++) {
        const ir_node *n = &g->nodes[id];
        sb_printf(sb, "%*s", indent + 2, "");
        print_node(g, id, sb, all_values);
        sb_append(sb, "\n");
        if ((unsigned)n->op < IR_NUM_OPS && ir_ops[n->op].kind == IRK_CONTROL && n->region)
            for (uint32_t k = 0; k < n->region->n_graphs; k++)
                print_graph(n->region->graphs[k], sb, all_values, indent + 4);
    }
    sb_printf(sb, "%*s  return (", indent, "");
    for (uint32_t i = 0; i < g->n_outputs; i++) sb_printf(sb, i ? ", %%%u" : "%%%u", g->outputs[i]);
    sb_printf(sb, ")\n%*s}\n", indent, "");
}

void ir_print_ex(const kiln_graph *g, strbuf *sb, bool all_values) {
    print_graph(g, sb, all_values, 0);
}

void ir_print(const kiln_graph *g, strbuf *sb) {
    ir_print_ex(g, sb, false);
}

char *kiln_graph_to_string(const kiln_graph *g) {
    if (!g) return NULL;
    strbuf sb;
    sb_init(&sb, g->ctx);
    ir_print(g, &sb);
    char *s = sb_take(&sb);
    if (!s)
        ctx_error(g->ctx, KILN_STATUS_HOST_OOM,
                  "kiln_graph_to_string: host allocation failed while printing graph '%s' (%u "
                  "nodes)",
                  g->name, g->n_nodes - 1);
    return s;
}

kiln_status kiln_graph_print(const kiln_graph *g, FILE *f) {
    if (!g || !f) return KILN_STATUS_INVALID_ARGUMENT;
    char *s = kiln_graph_to_string(g);
    if (!s) return KILN_STATUS_HOST_OOM; /* the message is set */
    int rc = fputs(s, f);
    kiln_string_free(g->ctx, s);
    return rc < 0 ? ctx_error(g->ctx, KILN_STATUS_IO, "kiln_graph_print: write failed")
                  : KILN_STATUS_OK;
}
