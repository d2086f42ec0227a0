/* safetensors.c — arrays to and from files in the safetensors format: an 8-byte
 * little-endian header length N, N bytes of JSON ({"name": {"dtype", "shape",
 * "data_offsets": [begin, end]}, ..., "__metadata__": {string: string}}), then the data
 * section, which the byte ranges index from its first byte.
 *
 * Invariants. A kiln_safetensors that open returned has passed every check below, so the
 * getters never fail and read only has to fetch bytes: each tensor's dtype is one kiln has,
 * its rank <= KILN_MAX_RANK, its byte range holds exactly its shape's bytes, and the ranges,
 * in offset order, tile the data section exactly (no gap, no overlap, nothing after the
 * last) — the rules of the format's reference implementation, so a file kiln accepts is one
 * every other reader accepts. Saving writes files that obey the same rules, with the header
 * padded with spaces so the data section starts 8-byte aligned (as the Python package
 * does); reading never assumes that alignment (the bytes are copied, not cast), so files
 * from writers that do not pad read as well.
 *
 * cJSON and memory. cJSON allocates through cJSON_InitHooks, one setting for the whole
 * process. kiln never calls it: a library that changed it would route the host program's
 * own cJSON objects to another allocator (a tree made before the change and freed after it
 * goes to the wrong free), and one process-wide setting cannot pick between two contexts
 * with different host allocators used from different threads without a global of kiln's
 * own naming the "current" context. So cJSON's nodes come from whatever the process set
 * (malloc unless the program chose otherwise) and kiln bounds them instead: no tree outlives
 * the call that made it (parsed, copied into the context's memory, deleted; or built,
 * printed, deleted), and the header is at most KN_ST_HEADER_MAX bytes before it reaches
 * cJSON. Everything kiln keeps (the handle, names, metadata, buffers) comes from the
 * context's host allocator, which the fault-injection tests sweep. Parse errors are read
 * from cJSON_ParseWithLengthOpts' end pointer, never from cJSON_GetErrorPtr, whose global
 * another thread may overwrite. */
#include "base/base.h"

#include <cJSON.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c writes array bytes as they lie in memory: the format is little-endian"
#endif

/* The reference implementation refuses headers above 100 MB; so do we, before allocating. */
#define KN_ST_HEADER_MAX 100000000u
/* Offsets and dims travel as JSON numbers (doubles in cJSON). The largest allowed is
 * 2^53 - 1 (JavaScript's Number.MAX_SAFE_INTEGER), not 2^53: the text 9007199254740993
 * reads as the double 2^53, so a file holding 2^53 cannot be told from one holding 2^53+1. */
#define KN_ST_INT_MAX (((uint64_t)1 << 53) - 1)

typedef struct kn_st_tensor {
    char *name; /* host_strdup'd */
    kiln_dtype dtype;
    int rank;
    int64_t dims[KILN_MAX_RANK];
    uint64_t begin, end; /* in the data section */
} kn_st_tensor;

typedef struct kn_st_meta {
    char *key, *value; /* host_strdup'd */
} kn_st_meta;

struct kiln_safetensors {
    kiln_context *ctx;
    char *path; /* host_strdup'd, for messages */
    int fd;
    uint64_t data_start; /* 8 + header length */
    uint64_t data_size;
    int n;
    kn_st_tensor *t; /* n, in offset order */
    int *by_name;    /* n indices into t, sorted by name (for lookups) */
    int n_meta;
    kn_st_meta *meta; /* n_meta, sorted by key */
};

/* ----------------------------------------------------------------- dtypes ---- */

static const struct {
    const char *name;
    kiln_dtype dtype;
} kn_st_dtypes[] = {
    {"F32", KILN_DTYPE_F32}, {"F64", KILN_DTYPE_F64},   {"I32", KILN_DTYPE_I32},
    {"I64", KILN_DTYPE_I64}, {"BOOL", KILN_DTYPE_BOOL}, {"BF16", KILN_DTYPE_BF16},
    {"F16", KILN_DTYPE_F16},
};

/* Dtypes of the format that kiln has no array type for: named as such in the error. */
static const char *const kn_st_foreign[] = {"I8",  "U8",      "I16",     "U16", "U32",
                                            "U64", "F8_E5M2", "F8_E4M3", "C64"};

static const char *st_dtype_name(kiln_dtype d) {
    for (size_t i = 0; i < sizeof kn_st_dtypes / sizeof kn_st_dtypes[0]; i++)
        if (kn_st_dtypes[i].dtype == d) return kn_st_dtypes[i].name;
    return NULL;
}

static kiln_dtype st_dtype_parse(const char *s) {
    for (size_t i = 0; i < sizeof kn_st_dtypes / sizeof kn_st_dtypes[0]; i++)
        if (!strcmp(kn_st_dtypes[i].name, s)) return kn_st_dtypes[i].dtype;
    return KILN_DTYPE_INVALID;
}

static bool st_dtype_foreign(const char *s) {
    for (size_t i = 0; i < sizeof kn_st_foreign / sizeof kn_st_foreign[0]; i++)
        if (!strcmp(kn_st_foreign[i], s)) return true;
    return false;
}

/* ------------------------------------------------------------------ close ---- */

void kiln_safetensors_close(kiln_safetensors *f) {
    if (!f) return;
    kiln_context *ctx = f->ctx;
    if (f->fd >= 0) close(f->fd);
    if (f->t) {
        for (int i = 0; i < f->n; i++)
            if (f->t[i].name) host_free(ctx, f->t[i].name, strlen(f->t[i].name) + 1);
        host_free(ctx, f->t, (size_t)f->n * sizeof *f->t);
    }
    if (f->by_name) host_free(ctx, f->by_name, (size_t)f->n * sizeof *f->by_name);
    if (f->meta) {
        for (int i = 0; i < f->n_meta; i++) {
            if (f->meta[i].key) host_free(ctx, f->meta[i].key, strlen(f->meta[i].key) + 1);
            if (f->meta[i].value) host_free(ctx, f->meta[i].value, strlen(f->meta[i].value) + 1);
        }
        host_free(ctx, f->meta, (size_t)f->n_meta * sizeof *f->meta);
    }
    if (f->path) host_free(ctx, f->path, strlen(f->path) + 1);
    host_free(ctx, f, sizeof *f);
}

/* ------------------------------------------------------------------- open ---- */

/* Reads exactly n bytes at off; false with errno set (0 for end of file) otherwise. */
static bool st_pread_all(int fd, void *buf, size_t n, uint64_t off) {
    char *p = buf;
    while (n) {
        ssize_t r = pread(fd, p, n, (off_t)off);
        if (r < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        if (r == 0) {
            errno = 0;
            return false;
        }
        p += r, n -= (size_t)r, off += (uint64_t)r;
    }
    return true;
}

/* The first byte offset at which s[0..n) is not well-formed UTF-8, or n. */
static size_t st_utf8_check(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t len;
        uint32_t cp, min;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            len = 2, cp = c & 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3, cp = c & 0x0F, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4, cp = c & 0x07, min = 0x10000;
        } else {
            return i;
        }
        if (n - i < len) return i;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return i;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
        i += len;
    }
    return n;
}

/* A JSON number that is an integer in [0, 2^53 - 1]: the only kind offsets and dims may be. */
static bool st_json_count(const cJSON *j, uint64_t *out) {
    if (!cJSON_IsNumber(j)) return false;
    double v = j->valuedouble;
    if (!(v >= 0.0) || v > (double)KN_ST_INT_MAX || floor(v) != v) return false;
    *out = (uint64_t)v;
    return true;
}

/* The byte size of a shape as the format's reference reader computes it: the element size
 * times each dimension in order, every product checked, so a zero after a product that
 * overflows does not save it. The axis where it overflows, or -1 with *nbytes set. */
static int st_overflow_axis(kiln_dtype t, int rank, const int64_t *dims, uint64_t *nbytes) {
    *nbytes = kiln_dtype_itemsize(t);
    for (int i = 0; i < rank; i++)
        if (__builtin_mul_overflow(*nbytes, (uint64_t)dims[i], nbytes)) return i;
    return -1;
}

/* "[2, 3]" for messages. */
static void st_shape_str(const kn_st_tensor *t, char *buf, size_t size) {
    size_t at = 0;
    at += (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < t->rank && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, "%s%lld", i ? ", " : "", (long long)t->dims[i]);
    if (at < size) snprintf(buf + at, size - at, "]");
}

/* Fills t from the header entry `name`: dtype, shape and range, each checked. */
static kiln_status st_parse_tensor(kiln_context *ctx, const char *path, const cJSON *e,
                                   kn_st_tensor *t) {
    const char *name = e->string;
    if (!cJSON_IsObject(e))
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "safetensors %s: tensor \"%s\": its header entry is not an object", path,
                         name);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsString(dt))
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "safetensors %s: tensor \"%s\": \"dtype\" is %s, not a string", path, name,
                         dt ? "of another type" : "missing");
    t->dtype = st_dtype_parse(dt->valuestring);
    if (t->dtype == KILN_DTYPE_INVALID)
        return ctx_error(
            ctx, KILN_STATUS_INVALID_ARGUMENT, "safetensors %s: tensor \"%s\": dtype \"%s\" %s",
            path, name, dt->valuestring,
            st_dtype_foreign(dt->valuestring)
                ? "has no kiln array type (kiln reads F32, F64, BF16, F16, I32, I64, BOOL)"
                : "is not a safetensors dtype");
    if (!cJSON_IsArray(sh))
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "safetensors %s: tensor \"%s\": \"shape\" is %s, not an array", path, name,
                         sh ? "of another type" : "missing");
    int rank = cJSON_GetArraySize(sh);
    if (rank > KILN_MAX_RANK)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "safetensors %s: tensor \"%s\": rank %d is above kiln's limit of %d", path,
                         name, rank, KILN_MAX_RANK);
    t->rank = rank;
    int axis = 0;
    for (const cJSON *d = sh->child; d; d = d->next, axis++) {
        uint64_t v;
        if (!st_json_count(d, &v))
            return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                             "safetensors %s: tensor \"%s\": dimension %d of \"shape\" is not a "
                             "non-negative integer (%s)",
                             path, name, axis,
                             cJSON_IsNumber(d) ? "negative, fractional or above 2^53 - 1"
                                               : "not a number");
        t->dims[axis] = (int64_t)v;
    }
    char shape[160];
    st_shape_str(t, shape, sizeof shape);
    uint64_t nbytes;
    if (st_overflow_axis(t->dtype, t->rank, t->dims, &nbytes) >= 0)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "safetensors %s: tensor \"%s\": the byte size of %s %s overflows", path,
                         name, dt->valuestring, shape);
    uint64_t b, en;
    if (!cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2 || !st_json_count(off->child, &b) ||
        !st_json_count(off->child->next, &en))
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "safetensors %s: tensor \"%s\": \"data_offsets\" is %s, not [begin, end] "
                         "with non-negative integers",
                         path, name, off ? "malformed" : "missing");
    if (en < b)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "safetensors %s: tensor \"%s\": \"data_offsets\" [%llu, %llu] ends before "
                         "it begins",
                         path, name, (unsigned long long)b, (unsigned long long)en);
    if (en - b != nbytes)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "safetensors %s: tensor \"%s\": %s %s needs %llu bytes but "
                         "\"data_offsets\" [%llu, %llu] hold %llu",
                         path, name, dt->valuestring, shape, (unsigned long long)nbytes,
                         (unsigned long long)b, (unsigned long long)en,
                         (unsigned long long)(en - b));
    t->begin = b, t->end = en;
    return KILN_STATUS_OK;
}

static int st_cmp_offset(const void *pa, const void *pb) {
    const kn_st_tensor *a = pa, *b = pb;
    if (a->begin != b->begin) return a->begin < b->begin ? -1 : 1;
    if (a->end != b->end) return a->end < b->end ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* qsort has no user pointer: the names are compared through a table of (name, index). */
typedef struct {
    const char *name;
    int index;
} kn_st_named;

static int st_cmp_named(const void *pa, const void *pb) {
    return strcmp(((const kn_st_named *)pa)->name, ((const kn_st_named *)pb)->name);
}

/* The name index and its duplicate check (JSON objects may repeat a key; cJSON keeps both). */
static kiln_status st_index_names(kiln_safetensors *f) {
    kiln_context *ctx = f->ctx;
    if (f->n == 0) return KILN_STATUS_OK;
    size_t sz = (size_t)f->n * sizeof(kn_st_named);
    kn_st_named *tab = host_alloc(ctx, sz);
    if (!tab) return ctx_oom(ctx, "safetensors open: name index", sz);
    f->by_name = host_alloc(ctx, (size_t)f->n * sizeof *f->by_name);
    if (!f->by_name) {
        host_free(ctx, tab, sz);
        return ctx_oom(ctx, "safetensors open: name index", (size_t)f->n * sizeof *f->by_name);
    }
    for (int i = 0; i < f->n; i++) tab[i] = (kn_st_named){f->t[i].name, i};
    qsort(tab, (size_t)f->n, sizeof *tab, st_cmp_named);
    kiln_status s = KILN_STATUS_OK;
    for (int i = 0; i < f->n; i++) {
        f->by_name[i] = tab[i].index;
        if (i && !strcmp(tab[i].name, tab[i - 1].name) && !s)
            s = ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                          "safetensors %s: tensor \"%s\" appears twice in the header", f->path,
                          tab[i].name);
    }
    host_free(ctx, tab, sz);
    return s;
}

/* The ranges, in offset order, must tile [0, data_size): the reference reader's rule. */
static kiln_status st_check_ranges(kiln_safetensors *f) {
    kiln_context *ctx = f->ctx;
    uint64_t at = 0;
    for (int i = 0; i < f->n; i++) {
        const kn_st_tensor *t = &f->t[i];
        if (t->end > f->data_size) {
            char shape[160];
            st_shape_str(t, shape, sizeof shape);
            return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                             "safetensors %s: tensor \"%s\" (%s %s, %llu bytes) ends at byte %llu "
                             "of the data section, which holds only %llu bytes (truncated file?)",
                             f->path, t->name, st_dtype_name(t->dtype), shape,
                             (unsigned long long)(t->end - t->begin), (unsigned long long)t->end,
                             (unsigned long long)f->data_size);
        }
        if (t->begin < at)
            return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                             "safetensors %s: tensor \"%s\" [%llu, %llu] overlaps tensor \"%s\" "
                             "(which ends at %llu)",
                             f->path, t->name, (unsigned long long)t->begin,
                             (unsigned long long)t->end, f->t[i - 1].name, (unsigned long long)at);
        if (t->begin > at)
            return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                             "safetensors %s: tensor \"%s\" begins at byte %llu of the data "
                             "section, leaving bytes [%llu, %llu) that no tensor holds",
                             f->path, t->name, (unsigned long long)t->begin, (unsigned long long)at,
                             (unsigned long long)t->begin);
        at = t->end;
    }
    if (at != f->data_size)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "safetensors %s: %llu bytes follow the last tensor's data (the data "
                         "section holds %llu, the tensors %llu)",
                         f->path, (unsigned long long)(f->data_size - at),
                         (unsigned long long)f->data_size, (unsigned long long)at);
    return KILN_STATUS_OK;
}

static int st_cmp_meta(const void *pa, const void *pb) {
    return strcmp(((const kn_st_meta *)pa)->key, ((const kn_st_meta *)pb)->key);
}

static kiln_status st_parse_metadata(kiln_safetensors *f, const cJSON *m) {
    kiln_context *ctx = f->ctx;
    if (!cJSON_IsObject(m))
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "safetensors %s: \"__metadata__\" is not an object", f->path);
    int n = cJSON_GetArraySize(m);
    for (const cJSON *e = m->child; e; e = e->next)
        if (!cJSON_IsString(e))
            return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                             "safetensors %s: \"__metadata__\" value of \"%s\" is not a string",
                             f->path, e->string);
    if (n == 0) return KILN_STATUS_OK;
    f->meta = host_calloc(ctx, (size_t)n, sizeof *f->meta);
    if (!f->meta) return ctx_oom(ctx, "safetensors open: metadata", (size_t)n * sizeof *f->meta);
    f->n_meta = n;
    int i = 0;
    for (const cJSON *e = m->child; e; e = e->next, i++) {
        f->meta[i].key = host_strdup(ctx, e->string);
        if (!f->meta[i].key)
            return ctx_oom(ctx, "safetensors open: metadata key", strlen(e->string) + 1);
        f->meta[i].value = host_strdup(ctx, e->valuestring);
        if (!f->meta[i].value)
            return ctx_oom(ctx, "safetensors open: metadata value", strlen(e->valuestring) + 1);
    }
    qsort(f->meta, (size_t)n, sizeof *f->meta, st_cmp_meta);
    for (i = 1; i < n; i++)
        if (!strcmp(f->meta[i].key, f->meta[i - 1].key))
            return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                             "safetensors %s: \"__metadata__\" key \"%s\" appears twice", f->path,
                             f->meta[i].key);
    return KILN_STATUS_OK;
}

/* The offset of the first character a name or value must not hold inside a JSON string of
 * hdr, or len: a \u0000 escape or a raw NUL, where cJSON's decoded C string would end (a
 * name "a\u0000b" read as "a"), or any other raw control character, which JSON forbids
 * in a string (escaped, as \n or \u0001, they are fine). */
static size_t st_bad_char(const char *hdr, size_t len) {
    bool in = false;
    for (size_t i = 0; i < len; i++) {
        if (!in) {
            in = hdr[i] == '"';
        } else if (hdr[i] == '"') {
            in = false;
        } else if ((unsigned char)hdr[i] < 0x20) {
            return i;
        } else if (hdr[i] == '\\' && i + 1 < len) {
            if (hdr[i + 1] == 'u' && i + 5 < len && !strncmp(hdr + i + 2, "0000", 4)) return i;
            i++; /* the escaped character, a quote or backslash included */
        }
    }
    return len;
}

/* Everything after the header's bytes are in memory: JSON, entries, ranges. */
static kiln_status st_parse_header(kiln_safetensors *f, const char *hdr, size_t len) {
    kiln_context *ctx = f->ctx;
    size_t bad = st_utf8_check((const unsigned char *)hdr, len);
    if (bad != len)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "safetensors %s: the header is not UTF-8 (byte %zu of %zu)", f->path, bad,
                         len);
    if (len == 0 || hdr[0] != '{')
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "safetensors %s: the header does not begin with '{' (a JSON object)",
                         f->path);
    size_t ctl = st_bad_char(hdr, len);
    if (ctl != len)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "safetensors %s: the header holds %s at byte %zu of a string: names and "
                         "metadata must be free of NUL, and JSON escapes other control "
                         "characters",
                         f->path,
                         hdr[ctl] == '\\' ? "a NUL character (\\u0000)"
                         : hdr[ctl] == 0  ? "a NUL character"
                                          : "a raw control character",
                         ctl);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(hdr, len, &end, false);
    if (!root) {
        size_t at = end && end >= hdr && end <= hdr + len ? (size_t)(end - hdr) : 0;
        char near[25]; /* the bytes there, printable, for the message */
        size_t k = 0;
        for (; k + 1 < sizeof near && at + k < len; k++)
            near[k] = hdr[at + k] >= 0x20 && hdr[at + k] < 0x7f ? hdr[at + k] : '?';
        near[k] = 0;
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "safetensors %s: the header is not valid JSON (at byte %zu of %zu: "
                         "\"%s\")",
                         f->path, at, len, near);
    }
    kiln_status s = KILN_STATUS_OK;
    /* Only whitespace may follow the object (writers pad with spaces). */
    for (const char *p = end; p < hdr + len && !s; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
            s = ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                          "safetensors %s: the header has bytes after its JSON object (at byte "
                          "%zu)",
                          f->path, (size_t)(p - hdr));
    if (!s && !cJSON_IsObject(root))
        s = ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                      "safetensors %s: the header is not a JSON object", f->path);
    int n = 0;
    const cJSON *meta = NULL;
    for (const cJSON *e = s ? NULL : root->child; e; e = e->next) {
        if (!strcmp(e->string, "__metadata__")) {
            if (meta)
                s = ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                              "safetensors %s: \"__metadata__\" appears twice", f->path);
            meta = e;
        } else if (!e->string[0]) {
            s = ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                          "safetensors %s: a tensor has an empty name", f->path);
        } else {
            n++;
        }
        if (s) break;
    }
    if (!s && n > 0) {
        f->t = host_calloc(ctx, (size_t)n, sizeof *f->t);
        if (!f->t) s = ctx_oom(ctx, "safetensors open: tensor table", (size_t)n * sizeof *f->t);
    }
    if (!s) f->n = n;
    int i = 0;
    for (const cJSON *e = s ? NULL : root->child; e && !s; e = e->next) {
        if (e == meta) continue;
        kn_st_tensor *t = &f->t[i++];
        t->name = host_strdup(ctx, e->string);
        if (!t->name) {
            s = ctx_oom(ctx, "safetensors open: tensor name", strlen(e->string) + 1);
            break;
        }
        s = st_parse_tensor(ctx, f->path, e, t);
    }
    if (!s && meta) s = st_parse_metadata(f, meta);
    cJSON_Delete(root);
    if (s) return s;
    if (f->n) qsort(f->t, (size_t)f->n, sizeof *f->t, st_cmp_offset);
    s = st_index_names(f);
    if (s) return s;
    return st_check_ranges(f);
}

kiln_status kiln_safetensors_open(kiln_context *ctx, const char *path, kiln_safetensors **out) {
    if (!ctx) return KILN_STATUS_INVALID_ARGUMENT;
    if (!out)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "kiln_safetensors_open: out is NULL");
    *out = NULL;
    if (!path)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "kiln_safetensors_open: path is NULL");
    kiln_safetensors *f = host_calloc(ctx, 1, sizeof *f);
    if (!f) return ctx_oom(ctx, "safetensors open", sizeof *f);
    f->ctx = ctx;
    f->fd = -1;
    kiln_status s = KILN_STATUS_OK;
    f->path = host_strdup(ctx, path);
    if (!f->path) s = ctx_oom(ctx, "safetensors open: path", strlen(path) + 1);
    struct stat sb;
    if (!s) {
        /* O_NONBLOCK: a FIFO in the file's place must be refused below, not wait for a
         * writer forever; on a regular file it changes nothing */
        f->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (f->fd < 0)
            s = ctx_error(ctx, KILN_STATUS_IO, "safetensors %s: cannot open: %s", path,
                          strerror(errno));
    }
    if (!s && fstat(f->fd, &sb))
        s = ctx_error(ctx, KILN_STATUS_IO, "safetensors %s: cannot stat: %s", path,
                      strerror(errno));
    if (!s && !S_ISREG(sb.st_mode))
        s = ctx_error(ctx, KILN_STATUS_IO, "safetensors %s: not a regular file (%s)", path,
                      S_ISFIFO(sb.st_mode)  ? "a FIFO"
                      : S_ISDIR(sb.st_mode) ? "a folder"
                      : S_ISCHR(sb.st_mode) ? "a character device"
                                            : "a device or socket");
    uint64_t size = s ? 0 : (uint64_t)sb.st_size, hlen = 0;
    unsigned char len8[8];
    if (!s && size < 8)
        s = ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                      "safetensors %s: truncated: %llu bytes, fewer than the 8 of the header "
                      "length",
                      path, (unsigned long long)size);
    if (!s && !st_pread_all(f->fd, len8, 8, 0))
        s = ctx_error(ctx, KILN_STATUS_IO, "safetensors %s: cannot read the header length: %s",
                      path, errno ? strerror(errno) : "the file shrank");
    if (!s) {
        for (int i = 7; i >= 0; i--) hlen = hlen << 8 | len8[i];
        if (hlen > KN_ST_HEADER_MAX)
            s = ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                          "safetensors %s: the header length %llu is above the limit of %u bytes",
                          path, (unsigned long long)hlen, KN_ST_HEADER_MAX);
        else if (hlen > size - 8)
            s = ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                          "safetensors %s: truncated: the header length is %llu bytes but only "
                          "%llu follow",
                          path, (unsigned long long)hlen, (unsigned long long)(size - 8));
    }
    char *hdr = NULL;
    if (!s) {
        f->data_start = 8 + hlen;
        f->data_size = size - f->data_start;
        hdr = host_alloc(ctx, (size_t)hlen + 1);
        if (!hdr) s = ctx_oom(ctx, "safetensors open: header", (size_t)hlen + 1);
    }
    if (!s && !st_pread_all(f->fd, hdr, (size_t)hlen, 8))
        s = ctx_error(ctx, KILN_STATUS_IO, "safetensors %s: cannot read the header: %s", path,
                      errno ? strerror(errno) : "the file shrank");
    if (!s) {
        hdr[hlen] = 0;
        s = st_parse_header(f, hdr, (size_t)hlen);
    }
    if (hdr) host_free(ctx, hdr, (size_t)hlen + 1);
    if (s) {
        kiln_safetensors_close(f);
        return s;
    }
    *out = f;
    return KILN_STATUS_OK;
}

/* ---------------------------------------------------------------- getters ---- */

int kiln_safetensors_count(const kiln_safetensors *f) {
    return f ? f->n : 0;
}

const char *kiln_safetensors_name(const kiln_safetensors *f, int i) {
    return f && i >= 0 && i < f->n ? f->t[i].name : NULL;
}

static const kn_st_tensor *st_find(const kiln_safetensors *f, const char *name) {
    int lo = 0, hi = f->n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(f->t[f->by_name[mid]].name, name);
        if (c == 0) return &f->t[f->by_name[mid]];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static kiln_status st_lookup(const kiln_safetensors *f, const char *what, const char *name,
                             const kn_st_tensor **out) {
    if (!f) return KILN_STATUS_INVALID_ARGUMENT;
    if (!name) return ctx_error(f->ctx, KILN_STATUS_INVALID_ARGUMENT, "%s: name is NULL", what);
    *out = st_find(f, name);
    if (!*out)
        return ctx_error(f->ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "%s: %s holds no tensor named \"%s\"", what, f->path, name);
    return KILN_STATUS_OK;
}

kiln_status kiln_safetensors_get_info(const kiln_safetensors *f, const char *name,
                                      kiln_dtype *dtype, int *rank, int64_t *dims) {
    const kn_st_tensor *t;
    kiln_status s = st_lookup(f, "kiln_safetensors_get_info", name, &t);
    if (s) return s;
    if (dtype) *dtype = t->dtype;
    if (rank) *rank = t->rank;
    if (dims) memcpy(dims, t->dims, (size_t)t->rank * sizeof *dims);
    return KILN_STATUS_OK;
}

const char *kiln_safetensors_get_metadata(const kiln_safetensors *f, const char *key) {
    if (!f || !key || !f->n_meta) return NULL;
    kn_st_meta probe = {(char *)key, NULL};
    const kn_st_meta *m = bsearch(&probe, f->meta, (size_t)f->n_meta, sizeof *f->meta, st_cmp_meta);
    return m ? m->value : NULL;
}

kiln_status kiln_safetensors_read(kiln_safetensors *f, const char *name, kiln_array **out) {
    const kn_st_tensor *t;
    if (out) *out = NULL;
    kiln_status s = st_lookup(f, "kiln_safetensors_read", name, &t);
    if (s) return s;
    kiln_context *ctx = f->ctx;
    if (!out)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "kiln_safetensors_read: out is NULL");
    size_t n = (size_t)(t->end - t->begin);
    void *buf = NULL;
    if (n) {
        buf = host_alloc(ctx, n);
        if (!buf) return ctx_oom(ctx, "kiln_safetensors_read", n);
        if (!st_pread_all(f->fd, buf, n, f->data_start + t->begin))
            s = ctx_error(ctx, KILN_STATUS_IO, "safetensors %s: reading tensor \"%s\": %s", f->path,
                          t->name,
                          errno ? strerror(errno) : "the file was truncated after it was opened");
    }
    if (!s && t->dtype == KILN_DTYPE_BOOL)
        for (size_t i = 0; i < n && !s; i++)
            if (((unsigned char *)buf)[i] > 1)
                s = ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                              "safetensors %s: tensor \"%s\": BOOL element %zu is %u, not 0 or 1",
                              f->path, t->name, i, ((unsigned char *)buf)[i]);
    /* rank 0 has one element, so n == 0 means a zero dim and create's NULL data is right */
    if (!s) s = kiln_array_create(ctx, t->dtype, t->rank, t->dims, buf, out);
    if (buf) host_free(ctx, buf, n);
    return s;
}

/* ------------------------------------------------------------------- save ---- */

static bool st_write_all(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        p += w, n -= (size_t)w;
    }
    return true;
}

/* Checks the arguments before anything is built or written. */
static kiln_status st_save_check(kiln_context *ctx, const char *path, int n,
                                 const char *const *names, kiln_array *const *arrays, int n_meta,
                                 const char *const *meta_kv) {
    const char *w = "kiln_safetensors_save";
    if (!path) return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "%s: path is NULL", w);
    if (n < 0 || n_meta < 0)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "%s %s: n = %d, n_meta = %d", w, path,
                         n, n_meta);
    if (n > 0 && (!names || !arrays))
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "%s %s: names or arrays is NULL", w,
                         path);
    if (n_meta > 0 && !meta_kv)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "%s %s: meta_kv is NULL", w, path);
    for (int i = 0; i < n; i++) {
        if (!names[i] || !names[i][0])
            return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "%s %s: name %d is %s", w, path, i,
                             names[i] ? "empty" : "NULL");
        if (!strcmp(names[i], "__metadata__"))
            return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                             "%s %s: \"__metadata__\" is the header's metadata key, not a tensor "
                             "name",
                             w, path);
        if (!arrays[i])
            return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "%s %s: array %d (\"%s\") is NULL",
                             w, path, i, names[i]);
        if (kiln_array_context(arrays[i]) != ctx)
            return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                             "%s %s: array %d (\"%s\") belongs to another context", w, path, i,
                             names[i]);
        if (!st_dtype_name(kiln_array_dtype(arrays[i])))
            return ctx_error(ctx, KILN_STATUS_DTYPE,
                             "%s %s: \"%s\" has dtype %s, which has no "
                             "safetensors name here",
                             w, path, names[i], kiln_dtype_name(kiln_array_dtype(arrays[i])));
        if (kiln_array_is_consumed(arrays[i]))
            return ctx_error(ctx, KILN_STATUS_CONSUMED,
                             "%s %s: \"%s\" was donated to a call; its data is gone", w, path,
                             names[i]);
        size_t nlen = strlen(names[i]);
        if (st_utf8_check((const unsigned char *)names[i], nlen) != nlen)
            return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "%s %s: name %d is not UTF-8", w,
                             path, i);
    }
    for (int i = 0; i < 2 * n_meta; i++) {
        if (!meta_kv[i])
            return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "%s %s: metadata %s %d is NULL", w,
                             path, i % 2 ? "value" : "key", i / 2);
        size_t len = strlen(meta_kv[i]);
        if (st_utf8_check((const unsigned char *)meta_kv[i], len) != len)
            return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                             "%s %s: metadata %s %d is not UTF-8", w, path, i % 2 ? "value" : "key",
                             i / 2);
        if (i % 2 == 0)
            for (int j = 0; j < i; j += 2)
                if (!strcmp(meta_kv[i], meta_kv[j]))
                    return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                                     "%s %s: metadata key \"%s\" given twice", w, path, meta_kv[i]);
    }
    return KILN_STATUS_OK;
}

/* What open would refuse in a header save is about to write, named: a dimension or an
 * offset above 2^53 - 1 (JSON numbers are doubles to most readers), or a byte size whose
 * product overflows on the way (the builder allows extents up to 2^62, zeros counted as 1,
 * so a zero-size array can have both). Rank and dtype are within open's limits for any
 * array. */
static kiln_status st_save_limits(kiln_context *ctx, const char *path, int n,
                                  const char *const *names, kiln_array *const *arrays) {
    const char *w = "kiln_safetensors_save";
    uint64_t end = 0, nbytes;
    for (int i = 0; i < n; i++) {
        int64_t dims[KILN_MAX_RANK];
        int rank = kiln_array_rank(arrays[i]);
        for (int d = 0; d < rank; d++) {
            dims[d] = kiln_array_dim(arrays[i], d);
            if ((uint64_t)dims[d] > KN_ST_INT_MAX)
                return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                                 "%s %s: \"%s\": dimension %d is %lld, above 2^53 - 1, the largest "
                                 "a safetensors header holds exactly",
                                 w, path, names[i], d, (long long)dims[d]);
        }
        int at = st_overflow_axis(kiln_array_dtype(arrays[i]), rank, dims, &nbytes);
        if (at >= 0)
            return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                             "%s %s: \"%s\": the byte size overflows at dimension %d (%lld), "
                             "multiplied in order as safetensors readers do (a zero after it "
                             "does not help)",
                             w, path, names[i], at, (long long)dims[at]);
        if ((end += nbytes) > KN_ST_INT_MAX)
            return ctx_error(
                ctx, KILN_STATUS_INVALID_ARGUMENT,
                "%s %s: \"%s\" would end at byte %llu of the data, above 2^53 - 1, the "
                "largest a safetensors header holds exactly",
                w, path, names[i], (unsigned long long)end);
    }
    return KILN_STATUS_OK;
}

/* Duplicate names, found by sorting a copy of the name pointers. */
static kiln_status st_save_unique(kiln_context *ctx, const char *path, int n,
                                  const char *const *names) {
    if (n < 2) return KILN_STATUS_OK;
    size_t sz = (size_t)n * sizeof(kn_st_named);
    kn_st_named *tab = host_alloc(ctx, sz);
    if (!tab) return ctx_oom(ctx, "kiln_safetensors_save: name check", sz);
    for (int i = 0; i < n; i++) tab[i] = (kn_st_named){names[i], i};
    qsort(tab, (size_t)n, sizeof *tab, st_cmp_named);
    kiln_status s = KILN_STATUS_OK;
    for (int i = 1; i < n && !s; i++)
        if (!strcmp(tab[i].name, tab[i - 1].name))
            s = ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                          "kiln_safetensors_save %s: name \"%s\" is given twice", path,
                          tab[i].name);
    host_free(ctx, tab, sz);
    return s;
}

/* A JSON integer written exactly: cJSON_CreateNumber prints a double with 15 significant
 * digits whenever that reads back within a relative DBL_EPSILON, which changes integers
 * above 10^15 (9007199254740991 became 9007199254740990). */
static cJSON *st_json_uint(uint64_t v) {
    char text[24];
    snprintf(text, sizeof text, "%llu", (unsigned long long)v);
    return cJSON_CreateRaw(text);
}

/* The header's JSON text (cJSON's allocation: free with cJSON_free), or NULL when cJSON
 * could not allocate. Tensors lie in the order given, back to back. */
static char *st_build_header(int n, const char *const *names, kiln_array *const *arrays, int n_meta,
                             const char *const *meta_kv) {
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    bool ok = true;
    if (n_meta > 0) {
        cJSON *m = cJSON_AddObjectToObject(root, "__metadata__");
        ok = m != NULL;
        for (int i = 0; i < n_meta && ok; i++)
            ok = cJSON_AddStringToObject(m, meta_kv[2 * i], meta_kv[2 * i + 1]) != NULL;
    }
    uint64_t at = 0;
    for (int i = 0; i < n && ok; i++) {
        const kiln_array *a = arrays[i];
        cJSON *e = cJSON_AddObjectToObject(root, names[i]);
        cJSON *shape = e ? cJSON_AddArrayToObject(e, "shape") : NULL;
        ok = e && cJSON_AddStringToObject(e, "dtype", st_dtype_name(kiln_array_dtype(a))) && shape;
        for (int d = 0; d < kiln_array_rank(a) && ok; d++) {
            cJSON *v = st_json_uint((uint64_t)kiln_array_dim(a, d));
            ok = v && cJSON_AddItemToArray(shape, v);
            if (!ok) cJSON_Delete(v);
        }
        uint64_t end = at + kiln_array_nbytes(a);
        cJSON *off = ok ? cJSON_AddArrayToObject(e, "data_offsets") : NULL;
        cJSON *b = off ? st_json_uint(at) : NULL;
        ok = b && cJSON_AddItemToArray(off, b);
        if (!ok) {
            cJSON_Delete(b);
            break;
        }
        cJSON *en = st_json_uint(end);
        ok = en && cJSON_AddItemToArray(off, en);
        if (!ok) cJSON_Delete(en);
        at = end;
    }
    char *text = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    return text;
}

/* A fresh temporary file next to path, opened for writing; name receives its path. Its mode
 * is what open(2) gives 0666 under the umask, as a plain fopen would have. */
static kiln_status st_temp_open(kiln_context *ctx, const char *path, char *name, size_t cap,
                                int *fd) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    unsigned long long salt = (unsigned long long)ts.tv_nsec ^ (uintptr_t)name;
    for (int attempt = 0; attempt < 100; attempt++) {
        int w = snprintf(name, cap, "%s.tmp-%d-%llx", path, (int)getpid(),
                         salt + (unsigned long long)attempt * 0x9E3779B97F4A7C15ull);
        if (w < 0 || (size_t)w >= cap)
            return ctx_error(ctx, KILN_STATUS_IO, "kiln_safetensors_save %s: the path is too long",
                             path);
        *fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (*fd >= 0) return KILN_STATUS_OK;
        if (errno != EEXIST)
            return ctx_error(ctx, KILN_STATUS_IO,
                             "kiln_safetensors_save %s: cannot create a temporary file in its "
                             "folder: %s",
                             path, strerror(errno));
    }
    return ctx_error(ctx, KILN_STATUS_IO,
                     "kiln_safetensors_save %s: 100 temporary names next to it were all taken",
                     path);
}

/* Makes the rename itself durable; file systems that cannot fsync a folder are let be. */
static void st_sync_dir(const char *path) {
    const char *slash = strrchr(path, '/');
    char dir[PATH_MAX];
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else if ((size_t)(slash - path) < sizeof dir)
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    else
        return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    (void)fsync(fd);
    close(fd);
}

kiln_status kiln_safetensors_save(kiln_context *ctx, const char *path, int n,
                                  const char *const *names, kiln_array *const *arrays, int n_meta,
                                  const char *const *meta_kv) {
    if (!ctx) return KILN_STATUS_INVALID_ARGUMENT;
    kiln_status s = st_save_check(ctx, path, n, names, arrays, n_meta, meta_kv);
    if (!s) s = st_save_unique(ctx, path, n, names);
    if (!s) s = st_save_limits(ctx, path, n, names, arrays);
    if (s) return s;
    char *json = st_build_header(n, names, arrays, n_meta, meta_kv);
    if (!json)
        return ctx_error(ctx, KILN_STATUS_HOST_OOM,
                         "kiln_safetensors_save %s: cJSON could not allocate the header", path);
    size_t jlen = strlen(json);
    size_t hlen = jlen + (8 - (8 + jlen) % 8) % 8; /* data section 8-byte aligned */
    size_t tmp_cap = strlen(path) + 64, buf_cap = 8 + hlen;
    for (int i = 0; i < n; i++)
        if (kiln_array_nbytes(arrays[i]) > buf_cap) buf_cap = kiln_array_nbytes(arrays[i]);
    char *tmp = host_alloc(ctx, tmp_cap);
    unsigned char *buf = tmp ? host_alloc(ctx, buf_cap) : NULL;
    if (!tmp || !buf) {
        cJSON_free(json);
        if (tmp) host_free(ctx, tmp, tmp_cap);
        return ctx_oom(ctx, "kiln_safetensors_save", tmp ? buf_cap : tmp_cap);
    }
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
    memcpy(buf + 8, json, jlen);
    memset(buf + 8 + jlen, ' ', hlen - jlen);
    cJSON_free(json);
    if (hlen > KN_ST_HEADER_MAX) {
        host_free(ctx, buf, buf_cap);
        host_free(ctx, tmp, tmp_cap);
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "kiln_safetensors_save %s: the header would be %zu bytes, above the "
                         "format's limit of %u",
                         path, hlen, KN_ST_HEADER_MAX);
    }
    int fd = -1;
    s = st_temp_open(ctx, path, tmp, tmp_cap, &fd);
    if (!s && !st_write_all(fd, buf, 8 + hlen))
        s = ctx_error(ctx, KILN_STATUS_IO, "kiln_safetensors_save %s: writing %s: %s", path, tmp,
                      strerror(errno));
    for (int i = 0; i < n && !s; i++) {
        size_t nb = kiln_array_nbytes(arrays[i]);
        if (!nb) continue;
        s = kiln_array_copy_to_host(arrays[i], buf, nb);
        if (!s && !st_write_all(fd, buf, nb))
            s = ctx_error(ctx, KILN_STATUS_IO, "kiln_safetensors_save %s: writing %s: %s", path,
                          tmp, strerror(errno));
    }
    if (!s && fsync(fd))
        s = ctx_error(ctx, KILN_STATUS_IO, "kiln_safetensors_save %s: fsync of %s: %s", path, tmp,
                      strerror(errno));
    if (fd >= 0 && close(fd) && !s)
        s = ctx_error(ctx, KILN_STATUS_IO, "kiln_safetensors_save %s: closing %s: %s", path, tmp,
                      strerror(errno));
    if (!s && rename(tmp, path))
        s = ctx_error(ctx, KILN_STATUS_IO, "kiln_safetensors_save %s: renaming %s over it: %s",
                      path, tmp, strerror(errno));
    if (s && fd >= 0) unlink(tmp);
    if (!s) st_sync_dir(path);
    host_free(ctx, buf, buf_cap);
    host_free(ctx, tmp, tmp_cap);
    return s;
}
