/* test_safetensors.c — kiln_safetensors_*: bit-exact round trips (every dtype, ranks 0..4,
 * metadata, no tensors, names with escapes and non-ASCII), a table of corrupt files each
 * refused with the right status and a message naming the fault, truncation at every byte,
 * atomic saves (a failed save leaves the old file and no temporary), arrays of another
 * context refused, save refusing what open would refuse (and everything it writes opening
 * with the same shape), host-allocation fault sweeps of save and of open+read, and, with
 * `--interop PYTHON`, files exchanged with the Python safetensors package (exit 77, a skip,
 * when that interpreter or package is absent). */
#include "fault.h"
#include "rng.h"
#include "test.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static kiln_context *ctx;
static char dir[64] = "/tmp/kiln-test-safetensors-XXXXXX";

static void path_in(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "%s/%s", dir, name);
}

static void write_bytes(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(p, 1, n, f) != n)) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(2);
    }
    fclose(f);
}

static unsigned char *read_bytes(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = malloc(len > 0 ? (size_t)len : 1);
    *n = len > 0 ? fread(p, 1, (size_t)len, f) : 0;
    fclose(f);
    return p;
}

/* A file made by hand: the header length, the header, the data. */
static void write_raw(const char *path, uint64_t hlen, const char *hdr, size_t hdr_n,
                      const void *data, size_t data_n) {
    size_t n = 8 + hdr_n + data_n;
    unsigned char *p = malloc(n);
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(hlen >> (8 * i));
    memcpy(p + 8, hdr, hdr_n);
    if (data_n) memcpy(p + 8 + hdr_n, data, data_n);
    write_bytes(path, p, n);
    free(p);
}

static void write_json(const char *path, const char *json, size_t data_n) {
    unsigned char *data = calloc(1, data_n + 1);
    write_raw(path, strlen(json), json, strlen(json), data, data_n);
    free(data);
}

/* Whether folder `dir` holds a file whose name starts with prefix. */
static bool dir_has(const char *d, const char *prefix) {
    DIR *dp = opendir(d);
    bool found = false;
    for (struct dirent *e; dp && (e = readdir(dp));)
        found |= !strncmp(e->d_name, prefix, strlen(prefix));
    if (dp) closedir(dp);
    return found;
}

/* ---------------------------------------------------------------- round trips ---- */

static const kiln_dtype all_dtypes[] = {KILN_DTYPE_F32, KILN_DTYPE_F64,  KILN_DTYPE_I32,
                                        KILN_DTYPE_I64, KILN_DTYPE_BOOL, KILN_DTYPE_BF16,
                                        KILN_DTYPE_F16};
#define N_DTYPES 7
#define N_RANKS  5
#define N_RT     (N_DTYPES * N_RANKS + 1)

/* Random bits (NaN payloads and all, for the float types; 0/1 for BOOL). */
static kiln_array *random_array(kiln_dtype t, int rank, const int64_t *dims, uint64_t *seed,
                                unsigned char **bytes, size_t *nbytes) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    *nbytes = (size_t)n * kiln_dtype_itemsize(t);
    *bytes = malloc(*nbytes ? *nbytes : 1);
    for (size_t i = 0; i < *nbytes; i++)
        (*bytes)[i] = (unsigned char)(t == KILN_DTYPE_BOOL ? test_rng_next(seed) & 1
                                                           : test_rng_next(seed) >> 56);
    kiln_array *a = NULL;
    CHECK_OK(ctx, kiln_array_create(ctx, t, rank, dims, *bytes, &a));
    return a;
}

static void check_same(kiln_safetensors *f, const char *name, kiln_dtype t, int rank,
                       const int64_t *dims, const unsigned char *bytes, size_t nbytes) {
    kiln_dtype dt = KILN_DTYPE_INVALID;
    int r = -1;
    int64_t d[KILN_MAX_RANK] = {0};
    CHECK_OK(ctx, kiln_safetensors_get_info(f, name, &dt, &r, d));
    CHECK_MSG(dt == t && r == rank, "%s: %s rank %d, want %s rank %d", name, kiln_dtype_name(dt), r,
              kiln_dtype_name(t), rank);
    for (int i = 0; i < rank && i < r; i++) CHECK(d[i] == dims[i]);
    kiln_array *a = NULL;
    CHECK_OK(ctx, kiln_safetensors_read(f, name, &a));
    if (!a) return;
    CHECK(kiln_array_dtype(a) == t && kiln_array_rank(a) == rank);
    CHECK(kiln_array_nbytes(a) == nbytes);
    unsigned char *got = malloc(nbytes ? nbytes : 1);
    if (kiln_array_nbytes(a) == nbytes) {
        CHECK_OK(ctx, kiln_array_copy_to_host(a, got, nbytes));
        CHECK_MSG(!memcmp(got, bytes, nbytes), "%s: bytes differ after the round trip", name);
    }
    free(got);
    kiln_array_destroy(a);
}

static void test_round_trip(void) {
    uint64_t seed = test_seed(0x5afe);
    static const int64_t shape[N_RANKS - 1] = {3, 1, 4, 2};
    char names[N_RT][32];
    const char *np[N_RT];
    kiln_array *arrays[N_RT];
    unsigned char *bytes[N_RT];
    size_t nbytes[N_RT];
    int64_t dims[N_RT][KILN_MAX_RANK];
    int ranks[N_RT];
    kiln_dtype types[N_RT];
    int k = 0;
    for (int t = 0; t < N_DTYPES; t++)
        for (int r = 0; r < N_RANKS; r++, k++) {
            types[k] = all_dtypes[t];
            ranks[k] = r;
            memcpy(dims[k], shape, sizeof shape);
            snprintf(names[k], sizeof names[k], "%s.rank%d", kiln_dtype_name(types[k]), r);
        }
    /* and an empty one: a zero dimension holds no bytes */
    types[k] = KILN_DTYPE_F32, ranks[k] = 3, dims[k][0] = 2, dims[k][1] = 0, dims[k][2] = 5;
    snprintf(names[k], sizeof names[k], "empty");
    for (k = 0; k < N_RT; k++) {
        np[k] = names[k];
        arrays[k] = random_array(types[k], ranks[k], dims[k], &seed, &bytes[k], &nbytes[k]);
    }
    const char *meta[] = {"format", "kiln-test", "step", "42", "empty", ""};
    char path[128];
    path_in(path, sizeof path, "rt.safetensors");
    CHECK_OK(ctx, kiln_safetensors_save(ctx, path, N_RT, np, arrays, 3, meta));
    kiln_safetensors *f = NULL;
    CHECK_OK(ctx, kiln_safetensors_open(ctx, path, &f));
    if (f) {
        CHECK(kiln_safetensors_count(f) == N_RT);
        /* offset order is the order saved, but the empty tensor lies at the end at offset
         * == end, which ties with nothing */
        for (k = 0; k < N_RT; k++)
            CHECK_MSG(kiln_safetensors_name(f, k) && !strcmp(kiln_safetensors_name(f, k), names[k]),
                      "tensor %d is \"%s\", want \"%s\"", k, kiln_safetensors_name(f, k), names[k]);
        CHECK(kiln_safetensors_name(f, N_RT) == NULL && kiln_safetensors_name(f, -1) == NULL);
        for (k = 0; k < N_RT; k++)
            check_same(f, names[k], types[k], ranks[k], dims[k], bytes[k], nbytes[k]);
        CHECK_CONTAINS(kiln_safetensors_get_metadata(f, "format"), "kiln-test");
        CHECK_CONTAINS(kiln_safetensors_get_metadata(f, "step"), "42");
        CHECK(kiln_safetensors_get_metadata(f, "empty") &&
              !*kiln_safetensors_get_metadata(f, "empty"));
        CHECK(kiln_safetensors_get_metadata(f, "absent") == NULL);
        /* a name it does not hold: the file and the name in the message */
        kiln_array *a = NULL;
        CHECK_STATUS(kiln_safetensors_read(f, "nope", &a), KILN_STATUS_INVALID_ARGUMENT);
        CHECK_CONTAINS(kiln_last_error(ctx), "\"nope\"");
        CHECK_CONTAINS(kiln_last_error(ctx), path);
        CHECK_STATUS(kiln_safetensors_get_info(f, "nope", NULL, NULL, NULL),
                     KILN_STATUS_INVALID_ARGUMENT);
        kiln_safetensors_close(f);
    }
    /* the format's conventions: a little-endian length, '{', the data 8-byte aligned */
    size_t n;
    unsigned char *raw = read_bytes(path, &n);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | raw[i];
    CHECK((8 + hlen) % 8 == 0 && raw[8] == '{');
    free(raw);
    for (k = 0; k < N_RT; k++) {
        kiln_array_destroy(arrays[k]);
        free(bytes[k]);
    }
}

static void test_empty_and_names(void) {
    char path[128];
    path_in(path, sizeof path, "empty.safetensors");
    CHECK_OK(ctx, kiln_safetensors_save(ctx, path, 0, NULL, NULL, 0, NULL));
    kiln_safetensors *f = NULL;
    CHECK_OK(ctx, kiln_safetensors_open(ctx, path, &f));
    CHECK(f && kiln_safetensors_count(f) == 0 && !kiln_safetensors_get_metadata(f, "x"));
    kiln_safetensors_close(f);

    /* escapes and non-ASCII survive, as names and as metadata */
    const char *names[] = {"h\xc3\xa9llo",
                           "quote\"back\\slash",
                           "tab\tnew\nline\x01",
                           "\xe6\x97\xa5\xe6\x9c\xac",
                           "emoji \xf0\x9f\x98\x80",
                           "a/b.c[0]",
                           "a\\u0000b"}; /* an escaped backslash, then u0000: no NUL */
    int n = (int)(sizeof names / sizeof names[0]);
    kiln_array *arrays[7];
    float vals[7];
    for (int i = 0; i < n; i++) {
        vals[i] = (float)i + 0.25f;
        CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 0, NULL, &vals[i], &arrays[i]));
    }
    const char *meta[] = {"k\"\\\n\xc3\xa9", "v\xf0\x9f\x98\x80\t"};
    path_in(path, sizeof path, "names.safetensors");
    CHECK_OK(ctx, kiln_safetensors_save(ctx, path, n, names, arrays, 1, meta));
    CHECK_OK(ctx, kiln_safetensors_open(ctx, path, &f));
    for (int i = 0; f && i < n; i++)
        check_same(f, names[i], KILN_DTYPE_F32, 0, NULL, (const unsigned char *)&vals[i], 4);
    if (f)
        CHECK(kiln_safetensors_get_metadata(f, meta[0]) &&
              !strcmp(kiln_safetensors_get_metadata(f, meta[0]), meta[1]));
    kiln_safetensors_close(f);
    for (int i = 0; i < n; i++) kiln_array_destroy(arrays[i]);
}

/* ------------------------------------------------------------ bad arguments ---- */

static void test_save_errors(void) {
    char path[128];
    path_in(path, sizeof path, "args.safetensors");
    float v = 1;
    kiln_array *a = NULL, *b = NULL;
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 0, NULL, &v, &a));
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 0, NULL, &v, &b));
    kiln_array *ab[] = {a, b};
    const char *dup[] = {"w", "w"}, *empty[] = {"w", ""}, *reserved[] = {"__metadata__", "w"};
    CHECK_STATUS(kiln_safetensors_save(ctx, path, 2, dup, ab, 0, NULL),
                 KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "\"w\" is given twice");
    CHECK_STATUS(kiln_safetensors_save(ctx, path, 2, empty, ab, 0, NULL),
                 KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "name 1 is empty");
    CHECK_STATUS(kiln_safetensors_save(ctx, path, 2, reserved, ab, 0, NULL),
                 KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "__metadata__");
    kiln_array *withnull[] = {a, NULL};
    const char *ok[] = {"w", "v"};
    CHECK_STATUS(kiln_safetensors_save(ctx, path, 2, ok, withnull, 0, NULL),
                 KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "array 1 (\"v\") is NULL");
    const char *meta[] = {"k", "1", "k", "2"};
    CHECK_STATUS(kiln_safetensors_save(ctx, path, 2, ok, ab, 2, meta),
                 KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "metadata key \"k\" given twice");
    const char *badutf[] = {"w", "\xff"};
    CHECK_STATUS(kiln_safetensors_save(ctx, path, 2, badutf, ab, 0, NULL),
                 KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "not UTF-8");
    kiln_context *other = test_context(); /* an array of another context */
    kiln_array *theirs = NULL;
    CHECK_OK(other, kiln_array_create(other, KILN_DTYPE_F32, 0, NULL, &v, &theirs));
    CHECK_STATUS(kiln_safetensors_save(ctx, path, 2, ok, (kiln_array *[]){a, theirs}, 0, NULL),
                 KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "array 1 (\"v\") belongs to another context");
    kiln_array_destroy(theirs);
    kiln_context_destroy(other);
    CHECK(access(path, F_OK) != 0); /* nothing was written */
    kiln_array_destroy(a);
    kiln_array_destroy(b);
}

/* What kiln_array_create, save and open should do with dims (f32): -1 refused by create
 * (extent, zeros counted as 1, above 2^62); else the dimension save names, with the start
 * of its message in want (one above 2^53 - 1, or where the byte size multiplied in order
 * overflows); else -2: saved and opened. Worked out here without the library's code. */
static int expect_of(const int64_t *dims, char *want, size_t n) {
    uint64_t extent = 1, bytes = 4;
    for (int d = 0; d < 3; d++)
        if (__builtin_mul_overflow(extent, dims[d] ? (uint64_t)dims[d] : 1, &extent) ||
            extent > (uint64_t)1 << 62)
            return -1;
    for (int d = 0; d < 3; d++) {
        if (dims[d] < (int64_t)1 << 53) continue;
        snprintf(want, n, "\"z\": dimension %d is %lld, above 2^53 - 1", d, (long long)dims[d]);
        return d;
    }
    for (int d = 0; d < 3; d++) {
        if (!__builtin_mul_overflow(bytes, (uint64_t)dims[d], &bytes)) continue;
        snprintf(want, n, "\"z\": the byte size overflows at dimension %d", d);
        return d;
    }
    return -2;
}

/* Save refuses what open refuses: a zero-size array may have dimensions up to 2^62 (the
 * builder's limit), a header number only up to 2^53 - 1 (cJSON, and most readers, parse
 * doubles, and 2^53 + 1 reads as 2^53), and readers multiply the dimensions in order, overflow
 * checked. Every rank-3 shape with a zero over dimensions around those limits is refused by
 * kiln_array_create, or refused by save naming the tensor and the dimension, or saved and opened
 * again with the very same shape. */
static void test_save_what_open_reads(void) {
    static const int64_t v[] = {0,
                                1,
                                3,
                                (int64_t)1 << 31,
                                ((int64_t)1 << 50) + 1,
                                ((int64_t)1 << 53) - 1,
                                (int64_t)1 << 53,
                                ((int64_t)1 << 53) + 1,
                                (int64_t)1 << 61,
                                (int64_t)1 << 62,
                                ((int64_t)1 << 62) + 1,
                                INT64_MAX};
    const int nv = (int)(sizeof v / sizeof *v);
    char path[128], want[96];
    path_in(path, sizeof path, "huge.safetensors");
    int count[3] = {0, 0, 0}; /* saved, refused by save, refused by create */
    for (int i = 0; i < nv * nv * nv; i++) {
        int64_t dims[3] = {v[i % nv], v[i / nv % nv], v[i / nv / nv]};
        if (dims[0] && dims[1] && dims[2]) continue; /* zero-size only: no memory */
        int expect = expect_of(dims, want, sizeof want);
        kiln_array *a = NULL;
        kiln_status s = kiln_array_create(ctx, KILN_DTYPE_F32, 3, dims, NULL, &a);
        char shape[80];
        snprintf(shape, sizeof shape, "[%lld, %lld, %lld]", (long long)dims[0], (long long)dims[1],
                 (long long)dims[2]);
        CHECK_MSG((s != KILN_STATUS_OK) == (expect == -1), "%s: %s", shape, kiln_status_name(s));
        if (s) {
            count[2]++;
            continue;
        }
        const char *name = "z";
        s = kiln_safetensors_save(ctx, path, 1, &name, &a, 0, NULL);
        kiln_array_destroy(a);
        if (expect >= 0) {
            CHECK_MSG(s == KILN_STATUS_INVALID_ARGUMENT, "%s: %s", shape, kiln_status_name(s));
            CHECK_CONTAINS(kiln_last_error(ctx), want);
            CHECK(access(path, F_OK) != 0);
            count[1]++;
            continue;
        }
        CHECK_OK(ctx, s);
        kiln_safetensors *f = NULL;
        CHECK_OK(ctx, kiln_safetensors_open(ctx, path, &f));
        int64_t got[KILN_MAX_RANK] = {0};
        int rank = 0;
        if (f) CHECK_OK(ctx, kiln_safetensors_get_info(f, "z", NULL, &rank, got));
        CHECK_MSG(rank == 3 && !memcmp(got, dims, sizeof dims),
                  "%s read back as [%lld, %lld, %lld]", shape, (long long)got[0], (long long)got[1],
                  (long long)got[2]);
        kiln_safetensors_close(f);
        unlink(path);
        count[0]++;
    }
    CHECK_MSG(count[0] > 20 && count[1] > 20 && count[2] > 20,
              "%d saved, %d refused by save, %d by kiln_array_create", count[0], count[1],
              count[2]);
}

/* ------------------------------------------------------------- corrupt files ---- */

typedef struct bad_case {
    const char *json; /* the header */
    size_t data;      /* zero bytes of data after it */
    const char *want; /* in the message */
} bad_case;

static const bad_case bad_cases[] = {
    {"{\"a\": {\"dtype\": \"F32\"", 0, "not valid JSON"},
    {"{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4],}}", 4,
     "not valid JSON"},
    {"[1, 2]", 0, "does not begin with '{'"},
    {" {}", 0, "does not begin with '{'"},
    {"{} x", 0, "bytes after its JSON object"},
    {"{\"a\": 1}", 0, "\"a\": its header entry is not an object"},
    {"{\"a\": {\"dtype\": \"F17\", \"shape\": [1], \"data_offsets\": [0, 4]}}", 4,
     "dtype \"F17\" is not a safetensors dtype"},
    {"{\"a\": {\"dtype\": \"U16\", \"shape\": [2], \"data_offsets\": [0, 4]}}", 4,
     "dtype \"U16\" has no kiln array type"},
    {"{\"w\": {\"dtype\": \"BF16\", \"shape\": [2, 3], \"data_offsets\": [0, 10]}}", 10,
     "tensor \"w\": BF16 [2, 3] needs 12 bytes but \"data_offsets\" [0, 10] hold 10"},
    {"{\"h\": {\"dtype\": \"F16\", \"shape\": [3], \"data_offsets\": [0, 5]}}", 5,
     "tensor \"h\": F16 [3] needs 6 bytes but \"data_offsets\" [0, 5] hold 5"},
    {"{\"w\": {\"dtype\": \"BF16\", \"shape\": [4], \"data_offsets\": [0, 8]}}", 6,
     "tensor \"w\" (BF16 [4], 8 bytes) ends at byte 8 of the data section, which holds only 6"},
    {"{\"a\": {\"dtype\": 5, \"shape\": [1], \"data_offsets\": [0, 4]}}", 4,
     "\"dtype\" is of another type"},
    {"{\"a\": {\"shape\": [1], \"data_offsets\": [0, 4]}}", 4, "\"dtype\" is missing"},
    {"{\"a\": {\"dtype\": \"F32\", \"data_offsets\": [0, 4]}}", 4, "\"shape\" is missing"},
    {"{\"a\": {\"dtype\": \"F32\", \"shape\": [1]}}", 4, "\"data_offsets\" is missing"},
    {"{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4, 8]}}", 8,
     "\"data_offsets\" is malformed"},
    {"{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 0]}}", 4,
     "ends before it begins"},
    {"{\"a\": {\"dtype\": \"F32\", \"shape\": [2, 2], \"data_offsets\": [0, 12]}}", 12,
     "F32 [2, 2] needs 16 bytes but \"data_offsets\" [0, 12] hold 12"},
    {"{\"a\": {\"dtype\": \"F32\", \"shape\": [-1], \"data_offsets\": [0, 4]}}", 4,
     "dimension 0 of \"shape\" is not a non-negative integer"},
    {"{\"a\": {\"dtype\": \"F32\", \"shape\": [1.5], \"data_offsets\": [0, 4]}}", 4,
     "dimension 0 of \"shape\" is not a non-negative integer"},
    /* 2^53 + 1 reads as the double 2^53: both refused (an outside check found 2^53 + 1
     * opened as 2^53) */
    {"{\"a\": {\"dtype\": \"F32\", \"shape\": [9007199254740993, 0], \"data_offsets\": [0, "
     "0]}}",
     0, "dimension 0 of \"shape\" is not a non-negative integer"},
    {"{\"a\": {\"dtype\": \"F32\", \"shape\": [9007199254740992, 0], \"data_offsets\": [0, "
     "0]}}",
     0, "dimension 0 of \"shape\" is not a non-negative integer"},
    {"{\"a\": {\"dtype\": \"F32\", \"shape\": [\"1\"], \"data_offsets\": [0, 4]}}", 4,
     "not a number"},
    {"{\"a\": {\"dtype\": \"F64\", \"shape\": [4503599627370496, 4503599627370496], "
     "\"data_offsets\": [0, 8]}}",
     8, "overflows"},
    {"{\"a\": {\"dtype\": \"F32\", \"shape\": [1,1,1,1,1,1,1,1,1], \"data_offsets\": [0, 4]}}", 4,
     "rank 9 is above kiln's limit"},
    {"{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}, "
     "\"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}",
     12, "\"b\" [4, 12] overlaps tensor \"a\""},
    {"{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}", 8,
     "leaving bytes [0, 4) that no tensor holds"},
    {"{\"a\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]}}", 8,
     "\"a\" (F32 [4], 16 bytes) ends at byte 16 of the data section, which holds only 8 bytes"},
    {"{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}", 12,
     "8 bytes follow the last tensor"},
    {"{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}, "
     "\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}",
     8, "\"a\" appears twice"},
    {"{\"\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}", 4,
     "a tensor has an empty name"},
    {"{\"__metadata__\": {\"k\": 1}}", 0, "\"__metadata__\" value of \"k\" is not a string"},
    {"{\"__metadata__\": [\"k\"]}", 0, "\"__metadata__\" is not an object"},
    {"{\"__metadata__\": {\"k\": \"1\", \"k\": \"2\"}}", 0, "key \"k\" appears twice"},
    {"{\"__metadata__\": {}, \"__metadata__\": {}}", 0, "\"__metadata__\" appears twice"},
    /* a NUL would end the name where cJSON decodes it: "a\u0000b" read as "a" (an outside
     * report); an escaped backslash before "u0000" is a name like any other */
    {"{\"a\\u0000b\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}", 4,
     "holds a NUL character (\\u0000) at byte 3 of a string"},
    {"{\"__metadata__\": {\"k\": \"x\\u0000\"}}", 0, "holds a NUL character"},
    {"{\"a\x01b\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}", 4,
     "holds a raw control character at byte 3"},
    {"{\"a\xff\": {}}", 0, "not UTF-8 (byte 3"},
    {"{\"a\xed\xa0\x80\": {}}", 0, "not UTF-8 (byte 3"}, /* an encoded surrogate */
};

static void test_corrupt_table(void) {
    char path[128];
    path_in(path, sizeof path, "bad.safetensors");
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        const bad_case *c = &bad_cases[i];
        write_json(path, c->json, c->data);
        kiln_safetensors *f = (kiln_safetensors *)&f; /* must come back NULL */
        kiln_status s = kiln_safetensors_open(ctx, path, &f);
        CHECK_MSG(s == KILN_STATUS_INVALID_ARGUMENT && f == NULL, "case %zu (%s): %s", i, c->json,
                  kiln_status_name(s));
        if (s == KILN_STATUS_OK) kiln_safetensors_close(f);
        CHECK_MSG(strstr(kiln_last_error(ctx), c->want) && strstr(kiln_last_error(ctx), path),
                  "case %zu: message \"%s\" lacks \"%s\" or the path", i, kiln_last_error(ctx),
                  c->want);
    }

    /* a raw NUL byte in a name (valid UTF-8, so only the string scan sees it): "a\0b" was
     * read as "a" */
    static const char raw_nul[] =
        "{\"a\0b\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}";
    static const float one = 1;
    write_raw(path, sizeof raw_nul - 1, raw_nul, sizeof raw_nul - 1, &one, sizeof one);
    CHECK_STATUS(kiln_safetensors_open(ctx, path, &(kiln_safetensors *){NULL}),
                 KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "holds a NUL character at byte 3");

    /* header lengths: far too long, longer than the file, shorter than the length itself */
    const char *j = "{}";
    write_raw(path, 200000000, j, 2, NULL, 0);
    CHECK_STATUS(kiln_safetensors_open(ctx, path, &(kiln_safetensors *){NULL}),
                 KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "header length 200000000 is above the limit");
    write_raw(path, 1000, j, 2, NULL, 0);
    CHECK_STATUS(kiln_safetensors_open(ctx, path, &(kiln_safetensors *){NULL}),
                 KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "truncated: the header length is 1000 bytes but only 2");
    write_raw(path, UINT64_MAX, j, 2, NULL, 0);
    CHECK_STATUS(kiln_safetensors_open(ctx, path, &(kiln_safetensors *){NULL}),
                 KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "above the limit");
    write_bytes(path, "\x02\0\0", 3);
    CHECK_STATUS(kiln_safetensors_open(ctx, path, &(kiln_safetensors *){NULL}),
                 KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "truncated: 3 bytes");

    /* a file that is not there, and a folder: IO with the system's reason */
    path_in(path, sizeof path, "missing.safetensors");
    CHECK_STATUS(kiln_safetensors_open(ctx, path, &(kiln_safetensors *){NULL}), KILN_STATUS_IO);
    CHECK_CONTAINS(kiln_last_error(ctx), strerror(ENOENT));
    CHECK_STATUS(kiln_safetensors_open(ctx, dir, &(kiln_safetensors *){NULL}), KILN_STATUS_IO);
    CHECK_CONTAINS(kiln_last_error(ctx), "not a regular file");

    /* BOOL bytes other than 0/1 open (the header is sound) but do not read */
    path_in(path, sizeof path, "bool.safetensors");
    const char *bj = "{\"b\": {\"dtype\": \"BOOL\", \"shape\": [3], \"data_offsets\": [0, 3]}}";
    write_raw(path, strlen(bj), bj, strlen(bj), "\x01\x00\x02", 3);
    kiln_safetensors *f = NULL;
    CHECK_OK(ctx, kiln_safetensors_open(ctx, path, &f));
    kiln_array *a = NULL;
    if (f) CHECK_STATUS(kiln_safetensors_read(f, "b", &a), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "BOOL element 2 is 2");
    CHECK(a == NULL);
    kiln_safetensors_close(f);

    /* a file cut short after it was opened: read says so */
    path_in(path, sizeof path, "shrink.safetensors");
    const char *sj = "{\"x\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]}}";
    write_raw(path, strlen(sj), sj, strlen(sj), "0123456789abcdef", 16);
    f = NULL;
    CHECK_OK(ctx, kiln_safetensors_open(ctx, path, &f));
    CHECK(truncate(path, 8 + (off_t)strlen(sj) + 5) == 0);
    if (f) CHECK_STATUS(kiln_safetensors_read(f, "x", &a), KILN_STATUS_IO);
    CHECK_CONTAINS(kiln_last_error(ctx), "truncated after it was opened");
    kiln_safetensors_close(f);

    /* a header with no padding puts the data at an odd offset: still read exactly */
    path_in(path, sizeof path, "odd.safetensors");
    const char *oj = "{\"x\": {\"dtype\": \"F64\", \"shape\": [2], \"data_offsets\": [0, 16]}}";
    double dv[2] = {1.0 / 3.0, -2.5e300};
    write_raw(path, strlen(oj), oj, strlen(oj), dv, sizeof dv);
    CHECK((8 + strlen(oj)) % 8 != 0);
    f = NULL;
    CHECK_OK(ctx, kiln_safetensors_open(ctx, path, &f));
    int64_t two = 2;
    if (f) check_same(f, "x", KILN_DTYPE_F64, 1, &two, (const unsigned char *)dv, sizeof dv);
    kiln_safetensors_close(f);
}

/* Every proper prefix of a good file is refused as truncated. */
static void test_truncated_everywhere(void) {
    char path[128], cut[128];
    path_in(path, sizeof path, "whole.safetensors");
    path_in(cut, sizeof cut, "cut.safetensors");
    float v[3] = {1, 2, 3};
    int64_t d = 3;
    kiln_array *a = NULL, *b = NULL;
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 1, &d, v, &a));
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_BOOL, 0, NULL, "\x01", &b));
    const char *names[] = {"v", "flag"};
    kiln_array *ab[] = {a, b};
    const char *meta[] = {"format", "kiln-gpt"};
    CHECK_OK(ctx, kiln_safetensors_save(ctx, path, 2, names, ab, 1, meta));
    size_t n;
    unsigned char *whole = read_bytes(path, &n);
    int refused = 0;
    for (size_t k = 0; whole && k < n; k++) {
        write_bytes(cut, whole, k);
        kiln_safetensors *f = NULL;
        kiln_status s = kiln_safetensors_open(ctx, cut, &f);
        bool ok = s == KILN_STATUS_INVALID_ARGUMENT && strstr(kiln_last_error(ctx), "truncated");
        CHECK_MSG(ok, "cut at %zu of %zu: %s: %s", k, n, kiln_status_name(s),
                  s ? kiln_last_error(ctx) : "");
        refused += ok;
        kiln_safetensors_close(f);
    }
    CHECK(refused == (int)n && n > 100);
    free(whole);
    kiln_array_destroy(a);
    kiln_array_destroy(b);
}

/* ----------------------------------------------------------- atomic saving ---- */

static void test_unwritable(void) {
    float v[256] = {0};
    int64_t d = 256;
    kiln_array *a = NULL;
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 1, &d, v, &a));
    const char *names[] = {"w"};
    char path[192];

    /* a folder that does not exist, and one that is a file */
    path_in(path, sizeof path, "no-such-folder/x.safetensors");
    CHECK_STATUS(kiln_safetensors_save(ctx, path, 1, names, &a, 0, NULL), KILN_STATUS_IO);
    CHECK_CONTAINS(kiln_last_error(ctx), "cannot create a temporary file in its folder");
    CHECK_CONTAINS(kiln_last_error(ctx), strerror(ENOENT));
    char file[128];
    path_in(file, sizeof file, "plain-file");
    write_bytes(file, "x", 1);
    snprintf(path, sizeof path, "%s/x.safetensors", file);
    CHECK_STATUS(kiln_safetensors_save(ctx, path, 1, names, &a, 0, NULL), KILN_STATUS_IO);
    CHECK_CONTAINS(kiln_last_error(ctx), strerror(ENOTDIR));

    /* a folder without write permission (root may write anyway: then only the above) */
    char ro[128];
    path_in(ro, sizeof ro, "read-only");
    CHECK(mkdir(ro, 0500) == 0);
    if (geteuid() == 0) {
        test_skip_case("read-only folder", "root may write there");
    } else {
        snprintf(path, sizeof path, "%s/x.safetensors", ro);
        CHECK_STATUS(kiln_safetensors_save(ctx, path, 1, names, &a, 0, NULL), KILN_STATUS_IO);
        CHECK_CONTAINS(kiln_last_error(ctx), strerror(EACCES));
    }

    /* a write that fails half-way (the file size limit) leaves the old file whole and no
     * temporary behind */
    char sub[128];
    path_in(sub, sizeof sub, "atomic");
    CHECK(mkdir(sub, 0700) == 0);
    snprintf(path, sizeof path, "%s/ckpt.safetensors", sub);
    write_bytes(path, "old contents", 12);
    struct rlimit old;
    getrlimit(RLIMIT_FSIZE, &old);
    struct rlimit small = {600, old.rlim_max};
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    CHECK(setrlimit(RLIMIT_FSIZE, &small) == 0);
    kiln_status s = kiln_safetensors_save(ctx, path, 1, names, &a, 0, NULL);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, prev);
    CHECK_STATUS(s, KILN_STATUS_IO);
    CHECK_CONTAINS(kiln_last_error(ctx), strerror(EFBIG));
    size_t n;
    unsigned char *got = read_bytes(path, &n);
    CHECK(got && n == 12 && !memcmp(got, "old contents", 12));
    free(got);
    CHECK_MSG(!dir_has(sub, "ckpt.safetensors.tmp"), "a temporary file was left in %s", sub);
    /* and a good save replaces it, again leaving no temporary */
    CHECK_OK(ctx, kiln_safetensors_save(ctx, path, 1, names, &a, 0, NULL));
    CHECK(!dir_has(sub, "ckpt.safetensors.tmp"));
    kiln_safetensors *f = NULL;
    CHECK_OK(ctx, kiln_safetensors_open(ctx, path, &f));
    CHECK(f && kiln_safetensors_count(f) == 1);
    kiln_safetensors_close(f);
    kiln_array_destroy(a);
}

/* --------------------------------------------------------------- fault sweeps ---- */

static char sweep_path[128];

static kiln_status sweep_save(kiln_context *c, int *bad) {
    (void)bad;
    float v[6] = {1, 2, 3, 4, 5, 6};
    int64_t d[2] = {2, 3};
    kiln_array *a = NULL, *b = NULL;
    kiln_status s = kiln_array_create(c, KILN_DTYPE_F32, 2, d, v, &a);
    if (!s) s = kiln_array_create(c, KILN_DTYPE_I64, 1, d, NULL, &b);
    const char *names[] = {"w", "idx"};
    kiln_array *ab[] = {a, b};
    const char *meta[] = {"format", "kiln-gpt", "step", "7"};
    if (!s) s = kiln_safetensors_save(c, sweep_path, 2, names, ab, 2, meta);
    kiln_array_destroy(a);
    kiln_array_destroy(b);
    return s;
}

static kiln_status sweep_read(kiln_context *c, int *bad) {
    kiln_safetensors *f = NULL;
    kiln_status s = kiln_safetensors_open(c, sweep_path, &f);
    for (int i = 0; !s && i < kiln_safetensors_count(f); i++) {
        kiln_array *a = NULL;
        s = kiln_safetensors_read(f, kiln_safetensors_name(f, i), &a);
        if (!s && !strcmp(kiln_safetensors_name(f, i), "w")) {
            float got[6];
            s = kiln_array_copy_to_host(a, got, sizeof got);
            *bad |= !s && got[5] != 6;
        }
        kiln_array_destroy(a);
    }
    if (!s) {
        const char *m = kiln_safetensors_get_metadata(f, "step");
        *bad |= !m || strcmp(m, "7");
    }
    kiln_safetensors_close(f);
    return s;
}

static void test_fault_sweeps(void) {
    path_in(sweep_path, sizeof sweep_path, "sweep.safetensors");
    fault_ctx_case save = {dir, sweep_save, "the save"};
    fault_sweep sw = {"safetensors save", fault_in_context, &save, 400, NULL};
    long n = fault_sweep_run(&sw);
    CHECK(n > 0);
    CHECK(!dir_has(dir, "sweep.safetensors.tmp"));
    fault_ctx_case rd = {dir, sweep_read, "the values read back"};
    fault_sweep sr = {"safetensors open+read", fault_in_context, &rd, 400, NULL};
    CHECK(fault_sweep_run(&sr) > 0);
}

/* ------------------------------------------------------ the Python-made fixture ---- */

/* tests/data/half.safetensors, written by tests/data/make_half_safetensors.py with the
 * safetensors package: edge values (0, -0, 1, -2.5, 1/3, NaN, inf, -inf, bf16's max, f16's
 * max, 1e-40, f16's least and largest subnormals, 1e6) converted from f64 by ml_dtypes to
 * bf16 and by NumPy to f16. The expected bits are the ones that script printed: ml_dtypes'
 * and NumPy's, not kiln's. */
static const uint16_t fixture_bf16[14] = {0x0000, 0x8000, 0x3f80, 0xc020, 0x3eab, 0x7fc0, 0x7f80,
                                          0xff80, 0x7f7f, 0x4780, 0x0001, 0x3380, 0x3880, 0x4974};
static const uint16_t fixture_f16[14] = {0x0000, 0x8000, 0x3c00, 0xc100, 0x3555, 0x7e00, 0x7c00,
                                         0xfc00, 0x7c00, 0x7bff, 0x0000, 0x0001, 0x03ff, 0x7c00};

static void test_half_fixture(void) {
    kiln_safetensors *f = NULL;
    CHECK_OK(ctx, kiln_safetensors_open(ctx, KILN_SOURCE_DIR "/tests/data/half.safetensors", &f));
    if (!f) return;
    CHECK(kiln_safetensors_count(f) == 3);
    int64_t d14 = 14, d27[2] = {2, 7};
    uint16_t scalar = 0xbfc0; /* -1.5 */
    check_same(f, "bf16", KILN_DTYPE_BF16, 1, &d14, (const unsigned char *)fixture_bf16, 28);
    check_same(f, "f16", KILN_DTYPE_F16, 2, d27, (const unsigned char *)fixture_f16, 28);
    check_same(f, "bf16_scalar", KILN_DTYPE_BF16, 0, NULL, (const unsigned char *)&scalar, 2);
    CHECK_CONTAINS(kiln_safetensors_get_metadata(f, "writer"), "make_half_safetensors.py");
    /* and what kiln reads, it writes back the same bytes */
    kiln_array *a[2] = {0};
    CHECK_OK(ctx, kiln_safetensors_read(f, "bf16", &a[0]));
    CHECK_OK(ctx, kiln_safetensors_read(f, "f16", &a[1]));
    kiln_safetensors_close(f);
    if (!a[0] || !a[1]) return;
    char path[128];
    path_in(path, sizeof path, "half-again.safetensors");
    const char *names[] = {"bf16", "f16"};
    CHECK_OK(ctx, kiln_safetensors_save(ctx, path, 2, names, a, 0, NULL));
    kiln_array_destroy(a[0]);
    kiln_array_destroy(a[1]);
    CHECK_OK(ctx, kiln_safetensors_open(ctx, path, &f));
    if (!f) return;
    check_same(f, "bf16", KILN_DTYPE_BF16, 1, &d14, (const unsigned char *)fixture_bf16, 28);
    check_same(f, "f16", KILN_DTYPE_F16, 2, d27, (const unsigned char *)fixture_f16, 28);
    kiln_safetensors_close(f);
}

/* ---------------------------------------------------- Python interoperability ---- */

/* Writes a file for Python to check, runs tests/safetensors_interop.py, which checks it and
 * writes one of its own, then checks that. 77 (skip) when the interpreter or its
 * safetensors/numpy packages are absent. Values: element i of each tensor is a formula of
 * i that both sides compute. */
#define N_INTEROP 9

static int interop(const char *python) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' -c 'import safetensors.numpy, numpy, ml_dtypes' 2>/dev/null",
             python);
    if (access(python, X_OK) != 0 || system(cmd) != 0) {
        return test_skip("%s cannot import safetensors, numpy and ml_dtypes", python);
    }
    char mine[128], theirs[128];
    path_in(mine, sizeof mine, "from-kiln.safetensors");
    path_in(theirs, sizeof theirs, "from-python.safetensors");
    float f32[6];
    double f64[3];
    int32_t i32[4];
    int64_t i64[2];
    unsigned char bl[5];
    for (int i = 0; i < 6; i++) f32[i] = (float)i * 0.5f - 1.25f;
    for (int i = 0; i < 3; i++) f64[i] = (double)i / 3.0;
    for (int i = 0; i < 4; i++) i32[i] = -7 * i;
    for (int i = 0; i < 2; i++) i64[i] = (int64_t)1 << (40 + i);
    for (int i = 0; i < 5; i++) bl[i] = (unsigned char)(i % 2);
    /* bf16 and f16: every one of the 65536 bit patterns, in order (NaN payloads and all),
     * so each side must keep the bits exactly; and a small f16 [2, 3] of -1.25 + 0.5 i, whose
     * bits NumPy gave (f16 holds those exactly) */
    static uint16_t every[65536];
    for (int i = 0; i < 65536; i++) every[i] = (uint16_t)i;
    static const uint16_t f16_small[6] = {0xbd00, 0xba00, 0xb400, 0x3400, 0x3a00, 0x3d00};
    int64_t d23[2] = {2, 3}, d3 = 3, d4 = 4, d2 = 2, d5 = 5, d_every = 65536;
    kiln_array *a[N_INTEROP] = {0};
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 2, d23, f32, &a[0]));
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F64, 1, &d3, f64, &a[1]));
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_I32, 1, &d4, i32, &a[2]));
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_I64, 1, &d2, i64, &a[3]));
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_BOOL, 1, &d5, bl, &a[4]));
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 0, NULL, f32 + 1, &a[5]));
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_BF16, 1, &d_every, every, &a[6]));
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F16, 1, &d_every, every, &a[7]));
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F16, 2, d23, f16_small, &a[8]));
    const char *names[N_INTEROP] = {
        "f32", "f64", "i32", "i64", "bool", "h.0.\xc3\xa9scalar", "bf16.every", "f16.every", "f16"};
    const char *meta[] = {"format", "kiln-gpt", "step", "12"};
    CHECK_OK(ctx, kiln_safetensors_save(ctx, mine, N_INTEROP, names, a, 2, meta));
    for (int i = 0; i < N_INTEROP; i++) kiln_array_destroy(a[i]);
    snprintf(cmd, sizeof cmd, "'%s' '%s/tests/safetensors_interop.py' '%s' '%s'", python,
             KILN_SOURCE_DIR, mine, theirs);
    int rc = system(cmd);
    CHECK_MSG(rc == 0, "%s exited with %d", cmd, rc);
    if (rc) return 1;
    kiln_safetensors *f = NULL;
    CHECK_OK(ctx, kiln_safetensors_open(ctx, theirs, &f));
    if (!f) return 1;
    CHECK(kiln_safetensors_count(f) == N_INTEROP);
    check_same(f, "f32", KILN_DTYPE_F32, 2, d23, (const unsigned char *)f32, sizeof f32);
    check_same(f, "f64", KILN_DTYPE_F64, 1, &d3, (const unsigned char *)f64, sizeof f64);
    check_same(f, "i32", KILN_DTYPE_I32, 1, &d4, (const unsigned char *)i32, sizeof i32);
    check_same(f, "i64", KILN_DTYPE_I64, 1, &d2, (const unsigned char *)i64, sizeof i64);
    check_same(f, "bool", KILN_DTYPE_BOOL, 1, &d5, bl, sizeof bl);
    check_same(f, "h.0.\xc3\xa9scalar", KILN_DTYPE_F32, 0, NULL, (const unsigned char *)(f32 + 1),
               4);
    check_same(f, "bf16.every", KILN_DTYPE_BF16, 1, &d_every, (const unsigned char *)every,
               sizeof every);
    check_same(f, "f16.every", KILN_DTYPE_F16, 1, &d_every, (const unsigned char *)every,
               sizeof every);
    check_same(f, "f16", KILN_DTYPE_F16, 2, d23, (const unsigned char *)f16_small,
               sizeof f16_small);
    CHECK_CONTAINS(kiln_safetensors_get_metadata(f, "writer"), "python safetensors");
    kiln_safetensors_close(f);
    return 0;
}

int main(int argc, char **argv) {
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    ctx = test_context();
    if (!ctx) return 1;
    int rc;
    if (argc == 3 && !strcmp(argv[1], "--interop")) {
        rc = interop(argv[2]);
        if (rc == 0) rc = test_summary("test_safetensors --interop");
    } else {
        RUN(test_round_trip);
        RUN(test_empty_and_names);
        RUN(test_save_errors);
        RUN(test_save_what_open_reads);
        RUN(test_corrupt_table);
        RUN(test_half_fixture);
        RUN(test_truncated_everywhere);
        RUN(test_unwritable);
        RUN(test_fault_sweeps);
        rc = test_summary("test_safetensors");
    }
    kiln_context_destroy(ctx);
    chmod(dir, 0700);
    test_remove_dir(dir);
    return rc;
}
