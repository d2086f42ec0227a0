/* cpu_sort.c — the CPU's argsort library op (backend_impl.h, kn_sort_desc): the positions
 * that sort each row of x along one axis, stably, or only the first k of them.
 *
 * Every element becomes an unsigned key whose integer order is the order wanted: the IEEE
 * bits of a float with the sign bit flipped (and every other bit too for a negative one)
 * order floats as integers; jax.lax.sort's order first makes -0 into +0 and every NaN into
 * the one +NaN, lax.top_k's (total) keeps them; integers flip their sign bit; descending
 * complements the key. Sorting keys ascending with ties by position is then the op.
 *
 * Keys of at most 32 bits (f32, bf16, f16, i32, bool) are packed with the position below
 * them into one uint64: all packed words differ, so any sort of them is stable, and the
 * position comes back from the low half. A full sort is an LSD radix sort over the key's
 * bytes (a byte every element shares costs no pass); top_k's few (k <= n / 16) are, for
 * k <= 32, kept in order as the row is read (smallest_row), else a
 * quickselect of the k smallest words (over a prefix, then over the words below the
 * prefix's k-th: select_row), then a radix sort of those over all their bytes (the
 * selection leaves their positions out of order). The quickselect's pivot is a median of
 * three: an adversarial row could make it quadratic, never wrong. 64-bit keys (f64, i64)
 * are (key, position) pairs radix-sorted over the key's eight bytes: an LSD pass is
 * stable, and the positions start in order.
 *
 * Rows run on the pool: one task per thread, each with its own slot of the planned scratch
 * (cpu_sort_scratch), taking a contiguous run of rows; the result is the same whatever
 * the threads. */
#include "base/half.h"
#include "cpu_ops.h"

#include <string.h>

/* Sorts below this many words are insertion sorts (a radix pass costs 256 counters). */
#define SMALL_SORT 32
/* A top_k of at most this many of 32-bit keys keeps them in order as it reads the row
 * (smallest_row) instead of selecting and sorting. */
#define SMALL_TOPK 32
/* top_k selects rather than sorts when k <= n / PARTIAL_RATIO. */
#define PARTIAL_RATIO 16

static bool narrow_key(kiln_dtype t) {
    return kiln_dtype_itemsize(t) <= 4;
}

/* Bytes of one thread's slot: a row's words (or pairs) twice (a radix pass's two sides). */
static uint64_t slot_bytes(const kn_sort_desc *d, kiln_dtype t) {
    return (uint64_t)d->n * (narrow_key(t) ? 16u : 32u);
}

static int64_t sort_rows(const kn_sort_desc *d) {
    return d->outer * d->inner;
}

uint64_t cpu_sort_scratch(const kn_sort_desc *d, kiln_dtype t, int threads) {
    int64_t rows = sort_rows(d);
    if (!rows || !d->k || d->n < 2) return 0;
    int64_t slots = threads < rows ? threads : rows;
    return (uint64_t)(slots > 0 ? slots : 1) * slot_bytes(d, t);
}

/* A float's bits as an order-preserving unsigned key (sign-magnitude to offset binary). */
static uint32_t f32_key(uint32_t b, bool total) {
    if (!total) {
        if (!(b & 0x7fffffffu)) b = 0;                        /* -0 sorts as +0 */
        if ((b & 0x7fffffffu) > 0x7f800000u) b = 0x7fc00000u; /* every NaN the same, last */
    }
    return b & 0x80000000u ? ~b : b | 0x80000000u;
}

static uint64_t f64_key(uint64_t b, bool total) {
    const uint64_t sign = (uint64_t)1 << 63, inf = (uint64_t)0x7ff << 52;
    if (!total) {
        if (!(b & ~sign)) b = 0;
        if ((b & ~sign) > inf) b = inf | (uint64_t)1 << 51;
    }
    return b & sign ? ~b : b | sign;
}

/* The key of element at of x (narrow dtypes). */
static uint32_t key32(const void *x, kiln_dtype t, int64_t at, bool total) {
    uint32_t b;
    float f;
    switch (t) {
    case KILN_DTYPE_F32: memcpy(&b, (const float *)x + at, 4); return f32_key(b, total);
    case KILN_DTYPE_BF16: f = kn_bf16_to_f32(((const uint16_t *)x)[at]); break;
    case KILN_DTYPE_F16: f = kn_f16_to_f32(((const uint16_t *)x)[at]); break;
    case KILN_DTYPE_I32: return (uint32_t)((const int32_t *)x)[at] ^ 0x80000000u;
    default: return ((const uint8_t *)x)[at] != 0; /* bool */
    }
    memcpy(&b, &f, 4);
    return f32_key(b, total);
}

static uint64_t key64(const void *x, kiln_dtype t, int64_t at, bool total) {
    uint64_t b;
    if (t == KILN_DTYPE_F64) {
        memcpy(&b, (const double *)x + at, 8);
        return f64_key(b, total);
    }
    return (uint64_t)((const int64_t *)x)[at] ^ ((uint64_t)1 << 63);
}

/* ------------------------------------------------------------ 32-bit keys ---- */

static void insertion_u64(uint64_t *a, int64_t n) {
    for (int64_t i = 1; i < n; i++) {
        uint64_t v = a[i];
        int64_t j = i;
        for (; j > 0 && a[j - 1] > v; j--) a[j] = a[j - 1];
        a[j] = v;
    }
}

/* LSD radix sort of packed words by their bytes from `first` up, a into tmp and back:
 * stable, so from byte 4 (the key) words of one key keep the order of their low halves
 * (positions in order), and from byte 0 they are sorted whole; returns where the sorted
 * words are. */
static uint64_t *radix_u64(uint64_t *a, uint64_t *tmp, int64_t n, int first) {
    if (n <= SMALL_SORT) {
        insertion_u64(a, n);
        return a;
    }
    for (int byte = first; byte < 8; byte++) {
        int64_t count[256] = {0};
        int sh = 8 * byte;
        for (int64_t i = 0; i < n; i++) count[(a[i] >> sh) & 255]++;
        if (count[(a[0] >> sh) & 255] == n) continue; /* one value: the pass moves nothing */
        int64_t at = 0;
        for (int b = 0; b < 256; b++) {
            int64_t c = count[b];
            count[b] = at, at += c;
        }
        for (int64_t i = 0; i < n; i++) tmp[count[(a[i] >> sh) & 255]++] = a[i];
        uint64_t *s = a;
        a = tmp, tmp = s;
    }
    return a;
}

static void swap_u64(uint64_t *a, int64_t i, int64_t j) {
    uint64_t t = a[i];
    a[i] = a[j], a[j] = t;
}

/* Moves the k smallest of the distinct words a[0..n) to a[0..k) (in no order): a
 * quickselect with a median-of-three pivot (Hoare's partition of distinct words). */
static void select_u64(uint64_t *a, int64_t n, int64_t k) {
    int64_t lo = 0, hi = n - 1;
    while (hi - lo > SMALL_SORT) {
        int64_t mid = lo + (hi - lo) / 2;
        if (a[mid] < a[lo]) swap_u64(a, mid, lo);
        if (a[hi] < a[lo]) swap_u64(a, hi, lo);
        if (a[hi] < a[mid]) swap_u64(a, hi, mid);
        uint64_t p = a[mid];
        int64_t i = lo, j = hi;
        while (i <= j) {
            while (a[i] < p) i++;
            while (a[j] > p) j--;
            if (i <= j) swap_u64(a, i++, j--);
        }
        /* [lo, j] <= p <= [i, hi]; the k-th smallest (index k - 1) lies in one side */
        if (k - 1 <= j)
            hi = j;
        else if (k - 1 >= i)
            lo = i;
        else
            return;
    }
    insertion_u64(a + lo, hi - lo + 1);
}

/* The packed word of position j of the row at base. */
static uint64_t word_at(const void *x, kiln_dtype t, const kn_sort_desc *d, int64_t base, int64_t j,
                        uint32_t flip) {
    return (uint64_t)(key32(x, t, base + j * d->inner, d->total) ^ flip) << 32 | (uint64_t)j;
}

/* The k smallest words of the row into a[0..k) (in no order). The k-th smallest of a
 * prefix bounds the k-th smallest of the row from above, so past the prefix only words
 * below it are kept: on most rows few are, and the selection runs over those. */
static void select_row(const void *x, kiln_dtype t, const kn_sort_desc *d, int64_t base,
                       uint32_t flip, uint64_t *a) {
    int64_t n = d->n, k = d->k, m = 4 * k + 1024 < n ? 4 * k + 1024 : n, c = k;
    for (int64_t j = 0; j < m; j++) a[j] = word_at(x, t, d, base, j, flip);
    select_u64(a, m, k);
    uint64_t bound = 0;
    for (int64_t j = 0; j < k; j++) bound = a[j] > bound ? a[j] : bound;
    for (int64_t j = m; j < n; j++) {
        uint64_t w = word_at(x, t, d, base, j, flip);
        if (w < bound) a[c++] = w;
    }
    select_u64(a, c, k);
}

/* The k smallest words of the row into a[0..k), in order, for a small k (SMALL_TOPK):
 * each word past the first k that is below the k-th kept is inserted in place, and on most
 * rows few are, so a top_k of 8 of 1024 is one compare a value, where the selection made
 * passes over the row (bench/RESULTS.md, "top_k of a few"). At worst (a row in the opposite order)
 * n * k moves. The words differ, so the order is the stable one. */
static void smallest_row(const void *x, kiln_dtype t, const kn_sort_desc *d, int64_t base,
                         uint32_t flip, uint64_t *a) {
    int64_t n = d->n, k = d->k, c = 0;
    for (int64_t j = 0; j < n; j++) {
        uint64_t w = word_at(x, t, d, base, j, flip);
        if (c == k && w >= a[k - 1]) continue;
        int64_t i = c < k ? c++ : k - 1;
        for (; i > 0 && a[i - 1] > w; i--) a[i] = a[i - 1];
        a[i] = w;
    }
}

static void sort_row32(const void *x, kiln_dtype t, const kn_sort_desc *d, int64_t row, void *ws,
                       int32_t *out) {
    int64_t o = row / d->inner, q = row % d->inner, n = d->n, k = d->k;
    int64_t base = o * n * d->inner + q;
    uint64_t *a = ws, *tmp = a + n;
    uint32_t flip = d->descending ? 0xffffffffu : 0;
    uint64_t *s;
    if (k && k <= SMALL_TOPK && k <= n / PARTIAL_RATIO) {
        smallest_row(x, t, d, base, flip, a); /* in order already */
        s = a;
    } else if (k <= n / PARTIAL_RATIO) {
        select_row(x, t, d, base, flip, a); /* positions out of order: sort the k whole */
        s = radix_u64(a, tmp, k, 0);
    } else {
        for (int64_t j = 0; j < n; j++) a[j] = word_at(x, t, d, base, j, flip);
        s = radix_u64(a, tmp, n, 4);
    }
    int32_t *dst = out + o * k * d->inner + q;
    for (int64_t j = 0; j < k; j++) dst[j * d->inner] = (int32_t)(uint32_t)s[j];
}

/* ------------------------------------------------------------ 64-bit keys ---- */

typedef struct key_pair {
    uint64_t key, pos;
} key_pair;

static key_pair *radix_pairs(key_pair *a, key_pair *tmp, int64_t n) {
    for (int byte = 0; byte < 8; byte++) {
        int64_t count[256] = {0};
        int sh = 8 * byte;
        for (int64_t i = 0; i < n; i++) count[(a[i].key >> sh) & 255]++;
        if (count[(a[0].key >> sh) & 255] == n) continue;
        int64_t at = 0;
        for (int b = 0; b < 256; b++) {
            int64_t c = count[b];
            count[b] = at, at += c;
        }
        for (int64_t i = 0; i < n; i++) tmp[count[(a[i].key >> sh) & 255]++] = a[i];
        key_pair *s = a;
        a = tmp, tmp = s;
    }
    return a;
}

static void sort_row64(const void *x, kiln_dtype t, const kn_sort_desc *d, int64_t row, void *ws,
                       int32_t *out) {
    int64_t o = row / d->inner, q = row % d->inner, n = d->n, k = d->k;
    int64_t base = o * n * d->inner + q;
    key_pair *a = ws, *tmp = a + n;
    uint64_t flip = d->descending ? ~(uint64_t)0 : 0;
    for (int64_t j = 0; j < n; j++)
        a[j] = (key_pair){key64(x, t, base + j * d->inner, d->total) ^ flip, (uint64_t)j};
    key_pair *s = radix_pairs(a, tmp, n);
    int32_t *dst = out + o * k * d->inner + q;
    for (int64_t j = 0; j < k; j++) dst[j * d->inner] = (int32_t)s[j].pos;
}

/* ------------------------------------------------------------------ rows ---- */

void cpu_sort_part(kiln_dtype t, const kn_sort_desc *d, const void *x, int32_t *out, void *slot,
                   int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; r++) {
        if (d->n < 2) { /* nothing to compare: position 0, if kept */
            int64_t o = r / d->inner, q = r % d->inner;
            if (d->k) out[o * d->inner + q] = 0;
            continue;
        }
        if (narrow_key(t))
            sort_row32(x, t, d, r, slot, out);
        else
            sort_row64(x, t, d, r, slot, out);
    }
}

uint64_t cpu_sort_slot_bytes(const kn_sort_desc *d, kiln_dtype t) {
    return slot_bytes(d, t);
}
