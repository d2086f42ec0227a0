/* test_hashmap.c — the open-addressing hash map (src/base/hashmap.c): plain keys against a
 * reference array through random puts, gets and removes (removal's backward shift is the
 * subtle part), caller-hashed keys with full collisions, iteration, and host OOM during
 * growth leaving the map as it was. */
#include "fault.h"
#include "rng.h"
#include "base/hashmap.h"

#define N_KEYS 512

static void test_random_ops(void) {
    kiln_context *ctx = test_context();
    hm_map m;
    hm_init(&m, ctx);
    uint64_t ref[N_KEYS];
    bool present[N_KEYS] = {false};
    size_t count = 0;
    uint64_t seed = test_seed(0x1234567);
    for (int step = 0; step < 20000; step++) {
        /* keys k * 8 collide a lot in the low bits before mixing: good for probing */
        uint64_t k = test_rng_next(&seed) % N_KEYS, v = test_rng_next(&seed);
        int op = test_rng_int(&seed, 3);
        if (op == 0) {
            CHECK(hm_put(&m, k * 8, v));
            count += !present[k];
            present[k] = true, ref[k] = v;
        } else if (op == 1) {
            bool had = hm_remove(&m, k * 8);
            CHECK(had == present[k]);
            count -= present[k];
            present[k] = false;
        } else {
            uint64_t got = 0;
            bool found = hm_get(&m, k * 8, &got);
            CHECK(found == present[k]);
            if (found && present[k]) CHECK(got == ref[k]);
        }
        if (step % 997 == 0) { /* full consistency sweep */
            int bad = 0;
            for (int i = 0; i < N_KEYS; i++) {
                uint64_t got;
                bool found = hm_get(&m, (uint64_t)i * 8, &got);
                if (found != present[i] || (found && got != ref[i])) bad++;
            }
            CHECK_MSG(bad == 0, "%d keys disagree at step %d", bad, step);
        }
    }
    CHECK(m.count == count);
    size_t it = 0, seen = 0;
    uint64_t k, v;
    while (hm_next(&m, &it, &k, &v)) {
        seen++;
        CHECK(k % 8 == 0 && present[k / 8] && ref[k / 8] == v);
    }
    CHECK(seen == count);
    hm_free(&m);
    kiln_context_destroy(ctx);
}

/* Caller-hashed keys: every key has the same hash, so only eq tells them apart. */
typedef struct {
    const char *const *strings;
    const char *probe;
} str_ctx;

static bool str_eq(void *user, uint64_t key) {
    str_ctx *c = user;
    return !strcmp(c->strings[key], c->probe);
}

static void test_custom_hash(void) {
    kiln_context *ctx = test_context();
    static const char *const words[] = {"add", "mul", "neg", "exp", "log", "dot", "pad"};
    hm_map m;
    hm_init(&m, ctx);
    str_ctx c = {words, NULL};
    for (uint64_t i = 0; i < 7; i++) CHECK(hm_add(&m, 42, i, i * 10));
    for (uint64_t i = 0; i < 7; i++) {
        uint64_t key = 99, value = 99;
        c.probe = words[i];
        CHECK(hm_find(&m, 42, str_eq, &c, &key, &value));
        CHECK(key == i && value == i * 10);
    }
    c.probe = "sub";
    CHECK(!hm_find(&m, 42, str_eq, &c, NULL, NULL));
    c.probe = "add";
    CHECK(!hm_find(&m, 43, str_eq, &c, NULL, NULL)); /* another hash: not probed by eq */
    CHECK(hm_hash_bytes("a", 1, 0) != hm_hash_bytes("a\0", 2, 0));
    hm_free(&m);
    kiln_context_destroy(ctx);
}

/* Growth fails: the map keeps every entry and stays usable. */
static void test_oom(void) {
    test_alloc t = {0};
    kiln_host_allocator a = test_allocator(&t);
    kiln_context_options o = {.host_allocator = &a, .ignore_environment = true, .compile_tiers = 1};
    kiln_context *ctx;
    CHECK_OK(NULL, kiln_context_create(&o, &ctx, NULL, 0));
    long base = t.live; /* what the context itself holds */
    hm_map m;
    hm_init(&m, ctx);
    uint64_t i = 0;
    for (; i < 4; i++) CHECK(hm_put(&m, i, i)); /* fits the first table of 8 */
    t.fail_at = t.count + 1;
    int failures = 0;
    for (; i < 100; i++) {
        if (!hm_put(&m, i, i)) {
            failures++;
            t.fail_at = 0;
            CHECK(m.count == i);
            for (uint64_t j = 0; j < i; j++) {
                uint64_t v = 0;
                CHECK(hm_get(&m, j, &v) && v == j);
            }
            CHECK(hm_put(&m, i, i));
        }
    }
    CHECK(failures == 1);
    CHECK(!hm_reserve(&m, SIZE_MAX / 2));
    hm_free(&m);
    CHECK(t.live == base);
    kiln_context_destroy(ctx);
    CHECK(t.live == 0 && t.bad_size == 0);
}

int main(void) {
    RUN(test_random_ops);
    RUN(test_custom_hash);
    RUN(test_oom);
    return test_summary("test_hashmap");
}
