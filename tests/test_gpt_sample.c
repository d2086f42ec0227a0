/* test_gpt_sample.c — `kiln sample`'s KV cache (models/gpt/decode.c) against the path that
 * recomputes the whole window for every byte (gpt_sample_options.no_kv_cache).
 *
 * Greedy output: for several random models and prompts, the cached path's bytes equal the
 * recomputing path's, or the two part where the recomputing path's two largest logits
 * were within a near-tie (TIE) of each other: the logits differ only by the rounding of
 * sums of another length, which can flip a near-tie and nothing else. The test reports
 * which happened. Runs go past the context, where both paths recompute over the sliding
 * window. The step program runs in place over its donated caches. Sampling: top-k 1 and a
 * tiny top-p are greedy, a seed reproduces its bytes, bad top-p values are refused. */
#include "test.h"
#include "gpt_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Logits of these models are of order 0.1 to 1, so f32 rounding moves them by about
 * 1e-7: a gap below TIE is a near-tie (a thousand times that), one above is not. */
#define TIE 1e-4

static const gpt_config model = {
    .vocab = 256, .context = 24, .layers = 2, .heads = 2, .channels = 32};

static void save_model(kiln_context *ctx, const char *path, uint64_t seed) {
    kiln_array *p[64];
    char err[GPT_ERR_SIZE];
    CHECK_OK(ctx, gpt_init_params(ctx, &model, KILN_DTYPE_F32, seed, p, err));
    CHECK_OK(ctx, gpt_checkpoint_save(ctx, path, &model, p, NULL, NULL, 0, NULL, err));
    for (int i = 0; i < gpt_num_params(&model); i++) kiln_array_destroy(p[i]);
}

/* Greedy bytes and margins of one path. */
static void sample(kiln_context *ctx, const char *path, const char *prompt, int length,
                   bool no_cache, unsigned char *out, double *margins) {
    char err[GPT_ERR_SIZE] = "";
    gpt_sample_options o = {.checkpoint = path,
                            .prompt = prompt,
                            .length = length,
                            .temperature = 0,
                            .seed = 1,
                            .no_kv_cache = no_cache,
                            .margins = margins};
    kiln_status st = gpt_sample(ctx, &o, out, err);
    CHECK_MSG(st == KILN_STATUS_OK, "%s", err);
}

static void test_greedy_equal(kiln_context *ctx, const char *dir) {
    static const char *const prompts[] = {"a", "The cat sat", "0123456789abcdefghijklmn"};
    int equal = 0, parted_at_tie = 0;
    for (uint64_t seed = 1; seed <= 4; seed++) {
        char path[600];
        snprintf(path, sizeof path, "%s/m%llu.safetensors", dir, (unsigned long long)seed);
        save_model(ctx, path, seed);
        for (size_t i = 0; i < sizeof prompts / sizeof *prompts; i++) {
            enum { N = 40 }; /* past the context of 24 from every prompt */
            unsigned char a[N], b[N];
            double ma[N], mb[N];
            sample(ctx, path, prompts[i], N, false, a, ma);
            sample(ctx, path, prompts[i], N, true, b, mb);
            int k = 0;
            while (k < N && a[k] == b[k]) k++;
            if (k == N) {
                equal++;
                continue;
            }
            CHECK_MSG(mb[k] < TIE,
                      "model %llu, prompt '%s': the paths part at byte %d, where the top two "
                      "logits are %g apart (not a near-tie)",
                      (unsigned long long)seed, prompts[i], k, mb[k]);
            parted_at_tie++;
        }
    }
    printf("greedy: %d runs equal, %d parted at a near-tie (top-two gap < %g)\n", equal,
           parted_at_tie, TIE);
}

/* The step writes its caches in place: the donated caches hold its updates, so a call
 * allocates no output but the logits. */
static void test_step_in_place(kiln_context *ctx) {
    kiln_executable *e = NULL;
    char err[GPT_ERR_SIZE];
    CHECK_MSG(gpt_decode_compile(ctx, &model, 1, &e, err) == KILN_STATUS_OK, "%s", err);
    if (!e) return;
    kiln_memory_analysis a;
    kiln_executable_get_memory_analysis(e, &a);
    uint64_t cache = 2ull * (uint64_t)model.layers * (uint64_t)model.context *
                     (uint64_t)model.channels * sizeof(float);
    CHECK_MSG(a.alias_bytes == cache && a.num_donations_unused == 0,
              "the caches (%llu bytes) are not updated in place: %llu bytes aliased, %d "
              "donations unused",
              (unsigned long long)cache, (unsigned long long)a.alias_bytes, a.num_donations_unused);
    kiln_executable_destroy(e);
}

/* Sampled bytes (temperature, top-k, top-p and seed as given). */
static kiln_status draw_bytes(kiln_context *ctx, const char *path, double temperature, int top_k,
                              double top_p, uint64_t seed, unsigned char *out, int n, char *err) {
    gpt_sample_options o = {.checkpoint = path,
                            .prompt = "The cat",
                            .length = n,
                            .temperature = temperature,
                            .top_k = top_k,
                            .top_p = top_p,
                            .seed = seed};
    return gpt_sample(ctx, &o, out, err);
}

/* top-k 1, and a nucleus too small for a second byte, are the greedy choice at any
 * temperature; a fixed seed gives the same bytes again; top-p 1 is top-p off; values
 * outside (0, 1] are refused naming top-p. */
static void test_top_k_top_p(kiln_context *ctx, const char *dir) {
    char path[600], err[GPT_ERR_SIZE] = "";
    snprintf(path, sizeof path, "%s/sampling.safetensors", dir);
    save_model(ctx, path, 7);
    enum { N = 30 };
    unsigned char greedy[N], a[N], b[N], c[N];
    CHECK_OK(ctx, draw_bytes(ctx, path, 0, 0, 0, 1, greedy, N, err));
    CHECK_OK(ctx, draw_bytes(ctx, path, 1.5, 1, 0, 5, a, N, err));
    CHECK_MSG(!memcmp(a, greedy, N), "top-k 1 is not the greedy choice");
    CHECK_OK(ctx, draw_bytes(ctx, path, 1.5, 0, 1e-6, 5, a, N, err));
    CHECK_MSG(!memcmp(a, greedy, N), "top-p 1e-6 keeps more than the likeliest byte");
    CHECK_OK(ctx, draw_bytes(ctx, path, 1.0, 40, 0.9, 11, a, N, err));
    CHECK_OK(ctx, draw_bytes(ctx, path, 1.0, 40, 0.9, 11, b, N, err));
    CHECK_MSG(!memcmp(a, b, N), "one seed, two different samples");
    CHECK_OK(ctx, draw_bytes(ctx, path, 1.0, 40, 1.0, 11, b, N, err));
    CHECK_OK(ctx, draw_bytes(ctx, path, 1.0, 40, 0, 11, c, N, err));
    CHECK_MSG(!memcmp(b, c, N), "top-p 1 differs from top-p off");
    /* random weights give nearly uniform bytes: a nucleus of 0.9 must change the draw */
    CHECK_MSG(memcmp(a, b, N), "top-p 0.9 changed no byte of %d", N);
    const double bad[] = {-0.1, 1.5, NAN};
    for (int i = 0; i < 3; i++) {
        err[0] = 0;
        CHECK_STATUS(draw_bytes(ctx, path, 1.0, 0, bad[i], 1, a, N, err),
                     KILN_STATUS_INVALID_ARGUMENT);
        CHECK_CONTAINS(err, "top-p");
    }
}

int main(void) {
    char dir[] = "/tmp/kiln-test-gpt-sample-XXXXXX";
    kiln_context *ctx = test_private_context(dir);
    if (!ctx) return 1;
    test_step_in_place(ctx);
    test_greedy_equal(ctx, dir);
    test_top_k_top_p(ctx, dir);
    kiln_context_destroy(ctx);
    test_remove_dir(dir);
    return test_summary("test_gpt_sample");
}
