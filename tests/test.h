/* test.h — the tiny harness every test file uses: CHECK macros that count and report
 * failures with file and line, RUN to call a test function, and a counting host allocator
 * that can fail its Nth allocation (fault injection) and reports leaks.
 * Each test file ends with `return test_summary("name");`. */
#ifndef KILN_TEST_H
#define KILN_TEST_H

#include "kiln.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test_passed, test_failed;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (cond)                                                                                  \
            test_passed++;                                                                         \
        else {                                                                                     \
            test_failed++;                                                                         \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

#define CHECK_MSG(cond, ...)                                                                       \
    do {                                                                                           \
        if (cond)                                                                                  \
            test_passed++;                                                                         \
        else {                                                                                     \
            test_failed++;                                                                         \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);               \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

#define CHECK_STATUS(expr, want)                                                                   \
    do {                                                                                           \
        kiln_status s_ = (expr);                                                                   \
        CHECK_MSG(s_ == (want), "%s returned %s, want %s", #expr, kiln_status_name(s_),            \
                  kiln_status_name(want));                                                         \
    } while (0)

#define CHECK_OK(ctx, expr)                                                                        \
    do {                                                                                           \
        kiln_status s_ = (expr);                                                                   \
        CHECK_MSG(s_ == KILN_OK, "%s returned %s: %s", #expr, kiln_status_name(s_),                \
                  kiln_last_error(ctx));                                                           \
    } while (0)

#define CHECK_CONTAINS(hay, needle)                                                                \
    do {                                                                                           \
        const char *h_ = (hay);                                                                    \
        CHECK_MSG(h_ &&strstr(h_, (needle)), "\"%s\" does not contain \"%s\"", h_ ? h_ : "(null)", \
                  (needle));                                                                       \
    } while (0)

/* |a-b| <= atol + rtol*|b|, with NaN == NaN and equal infinities. */
static inline int test_close(double a, double b, double rtol, double atol) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    if (isinf(a) || isinf(b)) return a == b;
    return fabs(a - b) <= atol + rtol * fabs(b);
}
#define CHECK_NEAR(a, b, tol)                                                                      \
    do {                                                                                           \
        double a_ = (a), b_ = (b);                                                                 \
        CHECK_MSG(test_close(a_, b_, (tol), (tol)), "%s = %.17g, want %.17g", #a, a_, b_);         \
    } while (0)

#define RUN(fn)                                                                                    \
    do {                                                                                           \
        int before_ = test_failed;                                                                 \
        fn();                                                                                      \
        if (test_failed != before_) fprintf(stderr, "  in %s\n", #fn);                             \
    } while (0)

static inline int test_summary(const char *name) {
    printf("%s: %d passed, %d failed\n", name, test_passed, test_failed);
    return test_failed ? 1 : 0;
}

/* ------------------------------------------------ counting/failing allocator ---- */

typedef struct test_alloc {
    long count;   /* allocations made (alloc + growing realloc) */
    long fail_at; /* fail the fail_at-th one (1-based); 0: never */
    long live;    /* allocations not yet freed */
    size_t bytes; /* bytes not yet freed */
    int bad_size; /* a free/realloc gave a size that differs from the allocation's */
} test_alloc;

/* Each block carries a header with its size so we can check the sizes kiln passes back. */
typedef struct {
    size_t size;
    size_t pad;
} test_hdr;

static void *test_alloc_fn(void *user, size_t size) {
    test_alloc *t = (test_alloc *)user;
    if (t->fail_at && ++t->count == t->fail_at) return NULL;
    if (!t->fail_at) t->count++;
    test_hdr *h = (test_hdr *)malloc(sizeof(test_hdr) + size);
    if (!h) return NULL;
    h->size = size;
    t->live++;
    t->bytes += size;
    return h + 1;
}
static void test_free_fn(void *user, void *p, size_t size) {
    test_alloc *t = (test_alloc *)user;
    if (!p) return;
    test_hdr *h = (test_hdr *)p - 1;
    if (h->size != size) t->bad_size++;
    t->live--;
    t->bytes -= h->size;
    free(h);
}
static void *test_realloc_fn(void *user, void *p, size_t old_size, size_t new_size) {
    test_alloc *t = (test_alloc *)user;
    test_hdr *h = (test_hdr *)p - 1;
    if (h->size != old_size) t->bad_size++;
    if (t->fail_at && ++t->count == t->fail_at) return NULL;
    if (!t->fail_at) t->count++;
    test_hdr *n = (test_hdr *)realloc(h, sizeof(test_hdr) + new_size);
    if (!n) return NULL;
    t->bytes += new_size - n->size;
    n->size = new_size;
    return n + 1;
}

static inline kiln_host_allocator test_allocator(test_alloc *t) {
    kiln_host_allocator a = {test_alloc_fn, test_realloc_fn, test_free_fn, t};
    return a;
}

/* A context with default options and no environment influence. */
static inline kiln_context *test_context(void) {
    kiln_context_options o;
    memset(&o, 0, sizeof o);
    o.ignore_environment = true;
    kiln_context *ctx = NULL;
    char err[512];
    if (kiln_context_create(&o, &ctx, err, sizeof err) != KILN_OK) {
        fprintf(stderr, "cannot create a context: %s\n", err);
        exit(2);
    }
    return ctx;
}

#endif
