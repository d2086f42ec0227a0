/* scope.c — the importer's named values: one scope per function body or region, a stack
 * of scopes for regions nested in each other.
 *
 * Invariants: a scope's entries and their values live in two arrays grown by doubling
 * through the context's allocator (freed by imp_scope_free); a name bound twice (MLIR's
 * regions may shadow) resolves to its latest binding; a value found in an enclosing scope
 * lives on another graph and is captured (kiln_capture) onto the scope's own, which is how
 * a while or case body reads an outer value. Lookups are linear from the newest entry:
 * JAX's operands are almost always among the last few values made. */
#include "import.h"

#include <string.h>

void imp_scope_free(imp_lex *L, imp_scope *s) {
    host_free(L->ctx, s->e, s->cap * sizeof *s->e);
    host_free(L->ctx, s->vals, s->cap_vals * sizeof *s->vals);
    s->e = NULL, s->vals = NULL;
    s->n = s->cap = s->n_vals = s->cap_vals = 0;
}

static bool grow(imp_lex *L, void **p, uint32_t *cap, uint32_t need, size_t elem) {
    if (need <= *cap) return true;
    uint32_t c = *cap ? *cap : 64;
    while (c < need) {
        if (c > UINT32_MAX / 2) return imp_oom(L, "kiln import (values)", SIZE_MAX);
        c *= 2;
    }
    void *q = host_realloc(L->ctx, *p, *cap * elem, c * elem);
    if (!q) return imp_oom(L, "kiln import (values)", c * elem);
    *p = q, *cap = c;
    return true;
}

imp_entry *imp_scope_bind(imp_lex *L, imp_scope *s, const char *name, size_t len, int n,
                          const kiln_value *vals) {
    if (L->status) return NULL;
    if (!grow(L, (void **)&s->e, &s->cap, s->n + 1, sizeof *s->e) ||
        !grow(L, (void **)&s->vals, &s->cap_vals, s->n_vals + (uint32_t)n, sizeof *s->vals))
        return NULL;
    imp_entry *e = &s->e[s->n++];
    *e = (imp_entry){.name = name, .name_len = len, .first = s->n_vals, .n = (uint32_t)n};
    for (int i = 0; i < n; i++) s->vals[s->n_vals++] = vals[i];
    return e;
}

static imp_entry *find_here(imp_scope *s, const char *name, size_t len) {
    for (uint32_t i = s->n; i-- > 0;)
        if (s->e[i].name_len == len && !memcmp(s->e[i].name, name, len)) return &s->e[i];
    return NULL;
}

const imp_entry *imp_scope_find(imp_lex *L, imp_scope *s, const char *name, size_t len, imp_loc at,
                                imp_scope **owner) {
    if (L->status) return NULL;
    for (imp_scope *t = s; t; t = t->parent) {
        imp_entry *e = find_here(t, name, len);
        if (e) {
            if (owner) *owner = t;
            return e;
        }
    }
    imp_fail_at(L, at, KILN_STATUS_INVALID_ARGUMENT, "%.*s is not defined before its use", (int)len,
                name);
    return NULL;
}

bool imp_scope_value(imp_lex *L, imp_scope *s, const char *name, size_t len, int index, imp_loc at,
                     kiln_value *out, const imp_entry **entry) {
    imp_scope *owner = NULL;
    const imp_entry *e = imp_scope_find(L, s, name, len, at, &owner);
    if (!e) return false;
    if (index < 0 || (uint32_t)index >= e->n)
        return imp_fail_at(L, at, KILN_STATUS_INVALID_ARGUMENT, "%.*s#%d: %.*s has %u value%s",
                           (int)len, name, index, (int)len, name, e->n, e->n == 1 ? "" : "s");
    if (entry) *entry = e;
    *out = owner->vals[e->first + (uint32_t)index];
    if (owner == s) return true;
    *out = kiln_capture(s->g, *out);
    return imp_check_graph(L, s->g, at, "a value of an enclosing region");
}
