/* types.c — the op table, dtypes and shapes. */
#include "ir.h"
#include "base/half.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const ir_op_info ir_ops[IR_NUM_OPS] = {
#define KN_OP_INFO(e, name, ident, arity, kind, types, flags, cost, kf, ki)                        \
    {name, #ident, arity, kind, types, flags, cost, {kf, ki}},
    KN_OPS(KN_OP_INFO)
#undef KN_OP_INFO
};

const char *kiln_dtype_name(kiln_dtype t) {
    switch (t) {
    case KILN_DTYPE_F32: return "f32";
    case KILN_DTYPE_F64: return "f64";
    case KILN_DTYPE_I32: return "i32";
    case KILN_DTYPE_I64: return "i64";
    case KILN_DTYPE_BOOL: return "bool";
    case KILN_DTYPE_BF16: return "bf16";
    case KILN_DTYPE_F16: return "f16";
    default: return "invalid";
    }
}

size_t kiln_dtype_itemsize(kiln_dtype t) {
    switch (t) {
    case KILN_DTYPE_F32:
    case KILN_DTYPE_I32: return 4;
    case KILN_DTYPE_F64:
    case KILN_DTYPE_I64: return 8;
    case KILN_DTYPE_BOOL: return 1;
    case KILN_DTYPE_BF16:
    case KILN_DTYPE_F16: return 2;
    default: return 0;
    }
}

/* The rank of t on JAX's promotion lattice, 0 if invalid. It is a chain but for bf16 and
 * f16, which share a rank and join at f32. */
static int promote_rank(kiln_dtype t) {
    switch (t) {
    case KILN_DTYPE_BOOL: return 1;
    case KILN_DTYPE_I32: return 2;
    case KILN_DTYPE_I64: return 3;
    case KILN_DTYPE_BF16:
    case KILN_DTYPE_F16: return 4;
    case KILN_DTYPE_F32: return 5;
    case KILN_DTYPE_F64: return 6;
    default: return 0;
    }
}

kiln_dtype kiln_promote_types(kiln_dtype a, kiln_dtype b) {
    int ra = promote_rank(a), rb = promote_rank(b);
    if (!ra || !rb) return KILN_DTYPE_INVALID;
    if (ra == rb && a != b) return KILN_DTYPE_F32; /* bf16 with f16 */
    return ra >= rb ? a : b;
}

bool ir_dtype_valid(kiln_dtype t) {
    return kiln_dtype_itemsize(t) != 0;
}
bool ir_dtype_is_float(kiln_dtype t) {
    return t == KILN_DTYPE_F32 || t == KILN_DTYPE_F64 || ir_dtype_is_half(t);
}
bool ir_dtype_is_half(kiln_dtype t) {
    return t == KILN_DTYPE_BF16 || t == KILN_DTYPE_F16;
}
kiln_dtype ir_dtype_compute(kiln_dtype t) {
    return ir_dtype_is_half(t) ? KILN_DTYPE_F32 : t;
}
bool ir_dtype_is_int(kiln_dtype t) {
    return t == KILN_DTYPE_I32 || t == KILN_DTYPE_I64;
}

bool ir_dtype_accepts(int types, kiln_dtype t) {
    switch (types) {
    case IRT_NUMERIC: return ir_dtype_is_float(t) || ir_dtype_is_int(t);
    case IRT_FLOAT: return ir_dtype_is_float(t);
    case IRT_BOOL: return t == KILN_DTYPE_BOOL;
    case IRT_I32: return t == KILN_DTYPE_I32;
    case IRT_INTEGRAL: return ir_dtype_is_int(t) || t == KILN_DTYPE_BOOL;
    case IRT_INT: return ir_dtype_is_int(t);
    default: return ir_dtype_valid(t);
    }
}

bool ir_shape_numel(const ir_shape *s, int64_t *n) {
    int64_t total = 1;
    for (int i = 0; i < s->rank; i++)
        if (s->dims[i] < 0 || !kn_mul_i64(total, s->dims[i], &total)) return false;
    *n = total;
    return true;
}

bool ir_shape_nbytes(const ir_shape *s, kiln_dtype t, size_t *n) {
    int64_t numel;
    if (!ir_shape_numel(s, &numel) || (uint64_t)numel > SIZE_MAX) return false;
    return kn_mul_size((size_t)numel, kiln_dtype_itemsize(t), n);
}

bool ir_shape_eq(const ir_shape *a, const ir_shape *b) {
    if (a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}

char *ir_type_str(kiln_dtype t, const ir_shape *s, char *buf, size_t n) {
    if (s->rank < 0 || s->rank > KILN_MAX_RANK) { /* only a broken node has this */
        snprintf(buf, n, "%s[rank %d?]", kiln_dtype_name(t), s->rank);
        return buf;
    }
    size_t k = (size_t)snprintf(buf, n, "%s[", kiln_dtype_name(t));
    for (int i = 0; i < s->rank && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, i ? ",%lld" : "%lld", (long long)s->dims[i]);
    if (k < n) snprintf(buf + k, n - k, "]");
    return buf;
}

bool ir_scalar_store(kiln_dtype t, double v, void *out) {
    union {
        float f;
        double d;
        int32_t i;
        int64_t l;
        uint8_t b;
        uint16_t h;
    } u;
    switch (t) {
    case KILN_DTYPE_F32: u.f = (float)v; break;
    case KILN_DTYPE_BF16: u.h = kn_f64_to_bf16_once(v); break; /* as jnp.asarray */
    case KILN_DTYPE_F16: u.h = kn_f64_to_f16_once(v); break;
    case KILN_DTYPE_F64: u.d = v; break;
    case KILN_DTYPE_I32:
        u.i = isnan(v)             ? 0
              : v >= 2147483647.0  ? INT32_MAX
              : v <= -2147483648.0 ? INT32_MIN
                                   : (int32_t)v;
        break;
    case KILN_DTYPE_I64:
        u.l = isnan(v)                      ? 0
              : v >= 9.2233720368547758e18  ? INT64_MAX
              : v <= -9.2233720368547758e18 ? INT64_MIN
                                            : (int64_t)v;
        break;
    case KILN_DTYPE_BOOL: u.b = v != 0; break;
    default: return false;
    }
    memcpy(out, &u, kiln_dtype_itemsize(t)); /* out may be any buffer: no aliasing */
    return true;
}

bool ir_float_bits_nan(kiln_dtype t, uint64_t bits, bool *plain) {
    uint64_t quiet, inf, sign; /* the magnitude's bits, then the sign bit */
    switch (t) {
    case KILN_DTYPE_F64:
        quiet = 0x7ff8000000000000ull, inf = 0x7ff0000000000000ull, sign = 1ull << 63;
        break;
    case KILN_DTYPE_F32: quiet = 0x7fc00000u, inf = 0x7f800000u, sign = 1u << 31; break;
    case KILN_DTYPE_BF16: quiet = 0x7fc0u, inf = 0x7f80u, sign = 0x8000u; break;
    case KILN_DTYPE_F16: quiet = 0x7e00u, inf = 0x7c00u, sign = 0x8000u; break;
    default: return false;
    }
    uint64_t mag = bits & ~sign;
    *plain = mag == quiet;
    return mag > inf && mag < sign;
}

double ir_scalar_load(kiln_dtype t, const void *p, int64_t i) {
    switch (t) {
    case KILN_DTYPE_F32: return ((const float *)p)[i];
    case KILN_DTYPE_F64: return ((const double *)p)[i];
    case KILN_DTYPE_I32: return ((const int32_t *)p)[i];
    case KILN_DTYPE_I64: return (double)((const int64_t *)p)[i];
    case KILN_DTYPE_BOOL: return ((const uint8_t *)p)[i] != 0;
    case KILN_DTYPE_BF16: return kn_bf16_to_f32(((const uint16_t *)p)[i]);
    case KILN_DTYPE_F16: return kn_f16_to_f32(((const uint16_t *)p)[i]);
    default: return 0;
    }
}
