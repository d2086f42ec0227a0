/* gather_jax.h: expected values computed by JAX 0.10.2 (tests/gather_jax_values.py); generated, do not edit. */
#include <math.h>
#include <stdint.h>

static const int32_t rows_idx[4] = {1, 3, 0, 3};
static const double rows_want[12] = {-0.0409836173, -0.22131148, -0.401639342, -0.122950822, -0.303278685, -0.483606547, -0.5, 0.319672108, 0.139344275, -0.122950822, -0.303278685, -0.483606547};
static const int32_t rows_oob_idx[4] = {1, -1, 5, 4};
static const double rows_oob_want[12] = {-0.0409836173, -0.22131148, -0.401639342, NAN, NAN, NAN, NAN, NAN, NAN, 0.33606559, 0.155737698, -0.0245901644};
static const int32_t rows_clip_idx[4] = {1, -1, 5, 4};
static const double rows_clip_want[12] = {-0.0409836173, -0.22131148, -0.401639342, -0.5, 0.319672108, 0.139344275, 0.33606559, 0.155737698, -0.0245901644, 0.33606559, 0.155737698, -0.0245901644};
static const int32_t cols_idx[4] = {4, 0, 2, 2};
static const double cols_want[16] = {-0.22131148, -0.5, 0.139344275, 0.139344275, -0.122950822, -0.401639342, 0.237704933, 0.237704933, -0.0245901644, -0.303278685, 0.33606559, 0.33606559, 0.0737704635, -0.204918027, 0.434426248, 0.434426248};
static const int32_t window_idx[6] = {0, 1, 2, 3, 1, 0};
static const double window_want[18] = {0.319672108, 0.139344275, -0.0409836173, 0.418032765, 0.237704933, 0.0573770404, 0.33606559, 0.155737698, -0.0245901644, 0.434426248, 0.254098356, 0.0737704635, -0.401639342, 0.418032765, 0.237704933, -0.303278685, -0.483606547, 0.33606559};
static const int32_t window_fill_idx[8] = {0, 1, 2, 3, 1, 0, -1, 0};
static const double window_fill_want[24] = {0.319672108, 0.139344275, -0.0409836173, 0.418032765, 0.237704933, 0.0573770404, NAN, NAN, NAN, NAN, NAN, NAN, -0.401639342, 0.418032765, 0.237704933, -0.303278685, -0.483606547, 0.33606559, NAN, NAN, NAN, NAN, NAN, NAN};
static const int32_t points_idx[6] = {0, 1, 3, 4, 2, 0};
static const double points_want[3] = {-0.401639342, NAN, 0.139344275};
static const int32_t offset_first_idx[4] = {4, 0, 2, 1};
static const double offset_first_want[12] = {0.33606559, -0.5, 0.418032765, -0.0409836173, 0.155737698, 0.319672108, 0.237704933, -0.22131148, -0.0245901644, 0.139344275, 0.0573770404, -0.401639342};
static const int32_t take_along_idx[6] = {2, 3, 0, 0, 1, 3};
static const double take_along_want[6] = {0.139344275, -0.0409836173, -0.22131148, -0.22131148, -0.122950822, -0.483606547};
static const int32_t batched_window_idx[6] = {4, 0, 2, 1, 1, 3};
static const double batched_window_want[18] = {0.33606559, 0.155737698, -0.0245901644, -0.5, 0.319672108, 0.139344275, 0.418032765, 0.237704933, 0.0573770404, 0.254098356, 0.0737704635, -0.106557369, 0.254098356, 0.0737704635, -0.106557369, 0.172131121, -0.00819671154, -0.188524604};
static const int32_t batch_late_idx[6] = {3, 1, 0, 4, 2, 2};
static const double batch_late_want[6] = {0.418032765, -0.0409836173, -0.5, -0.122950822, -0.22131148, -0.401639342};
static const int32_t add_rows_idx[4] = {1, 3, 1, 7};
static const double add_rows_want[15] = {-0.5, 0.319672108, 0.139344275, 1.87704921, 2.33606577, 1.79508197, 0.418032765, 0.237704933, 0.0573770404, 0.836065531, 0.475409865, 0.114754111, 0.33606559, 0.155737698, -0.0245901644};
static const int32_t add_rows_clip_idx[4] = {1, 3, 1, 7};
static const double add_rows_clip_want[15] = {-0.5, 0.319672108, 0.139344275, 1.87704921, 2.33606577, 1.79508197, 0.418032765, 0.237704933, 0.0573770404, 0.836065531, 0.475409865, 0.114754111, 1.21311474, 0.852459013, 0.491803259};
static const int32_t set_rows_idx[3] = {4, 0, -2};
static const double set_rows_want[15] = {0.959016383, 0.77868855, 0.598360658, -0.0409836173, -0.22131148, -0.401639342, 0.418032765, 0.237704933, 0.0573770404, -0.122950822, -0.303278685, -0.483606547, 0.5, 1.31967211, 1.13934422};
static const int32_t mul_rows_idx[4] = {1, 3, 1, -1};
static const double mul_rows_want[15] = {-0.5, 0.319672108, 0.139344275, -0.029058056, -0.361482382, -0.483861536, 0.418032765, 0.237704933, 0.0573770404, -0.117911853, -0.236159638, -0.289371133, 0.33606559, 0.155737698, -0.0245901644};
static const int32_t min_rows_idx[4] = {1, 3, 1, 2};
static const double min_rows_want[15] = {-0.5, 0.319672108, 0.139344275, -0.0409836173, -0.22131148, -0.401639342, 0.418032765, 0.237704933, 0.0573770404, -0.122950822, -0.303278685, -0.483606547, 0.33606559, 0.155737698, -0.0245901644};
static const int32_t max_rows_idx[4] = {1, 3, 1, 9};
static const double max_rows_want[15] = {-0.5, 0.319672108, 0.139344275, 1.41803277, 1.31967211, 1.13934422, 0.418032765, 0.237704933, 0.0573770404, 0.959016383, 0.77868855, 0.598360658, 0.877049208, 0.696721315, 0.516393423};
static const int32_t add_points_idx[8] = {0, 1, 3, 4, 0, 1, 2, 7};
static const double add_points_want[20] = {-0.5, 1.95901632, 0.139344275, -0.0409836173, -0.22131148, -0.401639342, 0.418032765, 0.237704933, 0.0573770404, -0.122950822, -0.303278685, -0.483606547, 0.33606559, 0.155737698, -0.0245901644, -0.204918027, -0.385245919, 0.434426248, 0.254098356, 1.39344263};
static const int32_t add_window_idx[6] = {0, 1, 3, 3, 1, 1};
static const double add_window_want[20] = {-0.5, 0.819672108, 1.45901632, 1.09836054, -0.22131148, -0.401639342, 2.71311474, 2.17213106, 1.63114762, -0.122950822, -0.303278685, 0.311475426, 0.950819671, 1.59016395, -0.0245901644, -0.204918027, -0.385245919, 0.434426248, 0.254098356, 0.0737704635};
static const int32_t add_window_clip_idx[6] = {0, 1, 3, 3, 1, 1};
static const double add_window_clip_want[20] = {-0.5, 0.819672108, 1.45901632, 1.09836054, -0.22131148, -0.401639342, 2.71311474, 2.17213106, 1.63114762, -0.122950822, -0.303278685, 0.311475426, 2.36885262, 2.82786894, 1.03278697, -0.204918027, -0.385245919, 1.31147552, 0.950819671, 0.590163887};
static const int32_t max_window_idx[4] = {0, 1, 1, 2};
static const double max_window_want[20] = {-0.5, 0.5, 1.31967211, -0.0409836173, -0.22131148, -0.401639342, 1.13934422, 1.41803277, 1.23770499, -0.122950822, -0.303278685, 0.77868855, 1.0573771, 0.877049208, -0.0245901644, -0.204918027, -0.385245919, 0.696721315, 0.516393423, 0.0737704635};
static const int32_t add_batched_idx[6] = {4, 0, 4, 1, 1, 3};
static const double add_batched_want[10] = {0.819672108, 0.319672108, 0.139344275, -0.0409836173, 1.41803277, -0.401639342, 2.15573788, 0.237704933, 0.655737698, -0.122950822};
static const int32_t set_batched_idx[6] = {4, 0, 2, 1, 3, 9};
static const double set_batched_want[10] = {1.31967211, 0.319672108, 1.13934422, -0.0409836173, 0.5, -0.401639342, 0.959016383, 0.237704933, 0.77868855, -0.122950822};
static const int32_t at_add_idx[5] = {0, -1, 7, 2, 0};
static const double at_add_want[15] = {0.77868855, 0.319672108, 1.09836066, -0.0409836173, 1.09836066, 1.07377052, 0.418032765, 1.29508209, 0.0573770404, 1.29508197, 1.3688525, -0.483606547, 1.49180317, 0.155737698, 0.491803259};
static const int32_t at_add_clip_idx[5] = {0, -1, 7, 2, 0};
static const double at_add_clip_want[15] = {0.77868855, 0.319672108, 1.09836066, -0.0409836173, 2.23770475, 1.07377052, 0.418032765, 1.29508209, 0.0573770404, 2.53278685, 1.3688525, -0.483606547, 1.49180317, 0.155737698, 1.82786882};
static const int32_t at_set_idx[3] = {2, -1, 0};
static const double at_set_want[12] = {1.41803277, 1.23770499, 1.0573771, -0.0409836173, -0.22131148, -0.401639342, 0.5, 1.31967211, 1.13934422, 0.959016383, 0.77868855, 0.598360658};
static const int32_t at_mul_idx[5] = {0, -1, 7, 2, 0};
static const double at_mul_want[15] = {-0.194672137, 0.319672108, 0.13363345, -0.0409836173, -0.292058587, -0.210777014, 0.418032765, 0.251343757, 0.0573770404, -0.174348295, -0.206104815, -0.483606547, 0.388403654, 0.155737698, -0.0126981996};
static const int32_t at_min_idx[3] = {2, 0, 2};
static const double at_min_want[24] = {-0.5, 0.319672108, 0.139344275, -0.0409836173, -0.22131148, -0.401639342, 0.418032765, 0.237704933, 0.0573770404, -0.122950822, -0.303278685, -0.483606547, 0.33606559, 0.155737698, -0.0245901644, -0.204918027, -0.385245919, 0.434426248, 0.254098356, 0.0737704635, -0.106557369, -0.286885262, -0.467213124, 0.352459013};
static const int32_t at_max_idx[4] = {3, -4, 3, 5};
static const double at_max_want[24] = {1.31967211, 0.319672108, 0.139344275, 1.13934422, 0.598360658, -0.401639342, 0.418032765, 1.41803277, 0.877049208, -0.122950822, -0.303278685, 1.0573771, 1.15573764, 0.155737698, -0.0245901644, 1.33606553, 1.43442631, 0.434426248, 0.254098356, 1.25409842, 0.713114738, -0.286885262, -0.467213124, 0.893442631};
static const int32_t get_pairs_i[6] = {0, 3, -1, 5, 1, 2};
static const int32_t get_pairs_j[6] = {1, -2, 4, 0, 7, 2};
static const double get_pairs_want[18] = {-0.0409836173, -0.22131148, -0.401639342, -0.237704933, -0.418032795, 0.401639342, 0.22131145, 0.0409836173, -0.139344275, NAN, NAN, NAN, NAN, NAN, NAN, 0.00819671154, -0.172131151, -0.352459013};
static const int32_t get_pairs_clip_i[6] = {0, 3, -1, 5, 1, 2};
static const int32_t get_pairs_clip_j[6] = {1, -2, 4, 0, 7, 2};
static const double get_pairs_clip_want[18] = {-0.0409836173, -0.22131148, -0.401639342, -0.237704933, -0.418032795, 0.401639342, 0.22131145, 0.0409836173, -0.139344275, 0.385245919, 0.204918027, 0.0245901346, -0.368852466, 0.450819671, 0.270491779, 0.00819671154, -0.172131151, -0.352459013};
static const int32_t get_broadcast_i[2] = {3, -4};
static const int32_t get_broadcast_j[3] = {0, 4, -1};
static const double get_broadcast_want[6] = {-0.204918027, 0.0737704635, 0.0737704635, -0.5, -0.22131148, -0.22131148};

/* One lax.gather / lax.scatter* case: kind -1 is a gather, else a kiln_scatter_kind;
 * mode a kiln_gather_mode (0 FILL, 1 CLIP); shape: the gather's result or the scatter's
 * updates; lists: {count, axes...} of offset_dims/update_window_dims, collapsed_slice_dims/
 * inserted_window_dims, start_index_map/scatter_dims_to_operand_dims,
 * operand_batching_dims, start_indices_batching_dims/scatter_indices_batching_dims. */
typedef struct gj_case {
    const char *name;
    int kind, mode;
    int xr;
    int64_t xd[4];
    int ir;
    int64_t id[4];
    const int32_t *idx;
    int sr;
    int64_t sd[4];
    int lists[5][9];
    int64_t sizes[4];
    const double *want;
} gj_case;
static const gj_case gj_cases[] = {
    {"rows", -1, 0, 2, {5, 3}, 2, {4, 1}, rows_idx, 2, {4, 3}, {{1, 1}, {1, 0}, {1, 0}, {0}, {0}}, {1, 3}, rows_want},
    {"rows_oob", -1, 0, 2, {5, 3}, 2, {4, 1}, rows_oob_idx, 2, {4, 3}, {{1, 1}, {1, 0}, {1, 0}, {0}, {0}}, {1, 3}, rows_oob_want},
    {"rows_clip", -1, 1, 2, {5, 3}, 2, {4, 1}, rows_clip_idx, 2, {4, 3}, {{1, 1}, {1, 0}, {1, 0}, {0}, {0}}, {1, 3}, rows_clip_want},
    {"cols", -1, 0, 2, {4, 5}, 3, {2, 2, 1}, cols_idx, 3, {4, 2, 2}, {{1, 0}, {1, 1}, {1, 1}, {0}, {0}}, {4, 1}, cols_want},
    {"window", -1, 1, 2, {4, 5}, 2, {3, 2}, window_idx, 3, {3, 2, 3}, {{2, 1, 2}, {0}, {2, 0, 1}, {0}, {0}}, {2, 3}, window_want},
    {"window_fill", -1, 0, 2, {4, 5}, 2, {4, 2}, window_fill_idx, 3, {4, 2, 3}, {{2, 1, 2}, {0}, {2, 0, 1}, {0}, {0}}, {2, 3}, window_fill_want},
    {"points", -1, 0, 2, {4, 5}, 2, {3, 2}, points_idx, 1, {3}, {{0}, {2, 0, 1}, {2, 1, 0}, {0}, {0}}, {1, 1}, points_want},
    {"offset_first", -1, 0, 2, {5, 3}, 2, {4, 1}, offset_first_idx, 2, {3, 4}, {{1, 0}, {1, 0}, {1, 0}, {0}, {0}}, {1, 3}, offset_first_want},
    {"take_along", -1, 0, 2, {3, 4}, 3, {3, 2, 1}, take_along_idx, 2, {3, 2}, {{0}, {1, 1}, {1, 1}, {1, 0}, {1, 0}}, {1, 1}, take_along_want},
    {"batched_window", -1, 0, 3, {2, 5, 3}, 3, {2, 3, 1}, batched_window_idx, 3, {2, 3, 3}, {{1, 2}, {1, 1}, {1, 1}, {1, 0}, {1, 0}}, {1, 1, 3}, batched_window_want},
    {"batch_late", -1, 1, 2, {5, 2}, 3, {3, 2, 1}, batch_late_idx, 2, {3, 2}, {{0}, {1, 0}, {1, 0}, {1, 1}, {1, 1}}, {1, 1}, batch_late_want},
    {"add_rows", 1, 0, 2, {5, 3}, 2, {4, 1}, add_rows_idx, 2, {4, 3}, {{1, 1}, {1, 0}, {1, 0}, {0}, {0}}, {0}, add_rows_want},
    {"add_rows_clip", 1, 1, 2, {5, 3}, 2, {4, 1}, add_rows_clip_idx, 2, {4, 3}, {{1, 1}, {1, 0}, {1, 0}, {0}, {0}}, {0}, add_rows_clip_want},
    {"set_rows", 0, 0, 2, {5, 3}, 2, {3, 1}, set_rows_idx, 2, {3, 3}, {{1, 1}, {1, 0}, {1, 0}, {0}, {0}}, {0}, set_rows_want},
    {"mul_rows", 2, 0, 2, {5, 3}, 2, {4, 1}, mul_rows_idx, 2, {4, 3}, {{1, 1}, {1, 0}, {1, 0}, {0}, {0}}, {0}, mul_rows_want},
    {"min_rows", 3, 0, 2, {5, 3}, 2, {4, 1}, min_rows_idx, 2, {4, 3}, {{1, 1}, {1, 0}, {1, 0}, {0}, {0}}, {0}, min_rows_want},
    {"max_rows", 4, 1, 2, {5, 3}, 2, {4, 1}, max_rows_idx, 2, {4, 3}, {{1, 1}, {1, 0}, {1, 0}, {0}, {0}}, {0}, max_rows_want},
    {"add_points", 1, 0, 2, {4, 5}, 2, {4, 2}, add_points_idx, 1, {4}, {{0}, {2, 0, 1}, {2, 0, 1}, {0}, {0}}, {0}, add_points_want},
    {"add_window", 1, 0, 2, {4, 5}, 2, {3, 2}, add_window_idx, 3, {3, 2, 3}, {{2, 1, 2}, {0}, {2, 0, 1}, {0}, {0}}, {0}, add_window_want},
    {"add_window_clip", 1, 1, 2, {4, 5}, 2, {3, 2}, add_window_clip_idx, 3, {3, 2, 3}, {{2, 1, 2}, {0}, {2, 0, 1}, {0}, {0}}, {0}, add_window_clip_want},
    {"max_window", 4, 0, 2, {4, 5}, 2, {2, 2}, max_window_idx, 3, {2, 3, 2}, {{2, 1, 2}, {0}, {2, 0, 1}, {0}, {0}}, {0}, max_window_want},
    {"add_batched", 1, 0, 2, {2, 5}, 3, {2, 3, 1}, add_batched_idx, 2, {2, 3}, {{0}, {1, 1}, {1, 1}, {1, 0}, {1, 0}}, {0}, add_batched_want},
    {"set_batched", 0, 0, 2, {2, 5}, 3, {2, 3, 1}, set_batched_idx, 2, {2, 3}, {{0}, {1, 1}, {1, 1}, {1, 0}, {1, 0}}, {0}, set_batched_want},
};

/* x.at[(slice(None),) * axis + (idx,)].<kind>(fill(shape) + 1, mode): mode 0 "drop", 1 "clip". */
typedef struct gj_at {
    const char *name;
    int kind, mode;
    int xr;
    int64_t xd[4];
    int axis;
    int ir;
    int64_t id[4];
    const int32_t *idx;
    const double *want;
} gj_at;
static const gj_at gj_ats[] = {
    {"at_add", 1, 0, 2, {3, 5}, 1, 1, {5}, at_add_idx, at_add_want},
    {"at_add_clip", 1, 1, 2, {3, 5}, 1, 1, {5}, at_add_clip_idx, at_add_clip_want},
    {"at_set", 0, 0, 2, {4, 3}, 0, 1, {3}, at_set_idx, at_set_want},
    {"at_mul", 2, 0, 2, {3, 5}, 1, 1, {5}, at_mul_idx, at_mul_want},
    {"at_min", 3, 0, 3, {2, 3, 4}, 1, 1, {3}, at_min_idx, at_min_want},
    {"at_max", 4, 0, 3, {2, 3, 4}, 2, 1, {4}, at_max_idx, at_max_want},
};

/* x.at[i, j].get(mode): mode 0 "fill", 1 "clip"; shape: the result's. */
typedef struct gj_get {
    const char *name;
    int mode;
    int xr;
    int64_t xd[4];
    int ir;
    int64_t id[4];
    const int32_t *i;
    int jr;
    int64_t jd[4];
    const int32_t *j;
    int yr;
    int64_t yd[4];
    const double *want;
} gj_get;
static const gj_get gj_gets[] = {
    {"get_pairs", 0, 3, {4, 5, 3}, 2, {2, 3}, get_pairs_i, 2, {2, 3}, get_pairs_j, 3, {2, 3, 3}, get_pairs_want},
    {"get_pairs_clip", 1, 3, {4, 5, 3}, 2, {2, 3}, get_pairs_clip_i, 2, {2, 3}, get_pairs_clip_j, 3, {2, 3, 3}, get_pairs_clip_want},
    {"get_broadcast", 0, 2, {4, 5}, 2, {2, 1}, get_broadcast_i, 1, {3}, get_broadcast_j, 2, {2, 3}, get_broadcast_want},
};
