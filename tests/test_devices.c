/* test_devices.c — several CPU devices per context (cpu_devices, KILN_CPU_DEVICES) and
 * placement, in synchronous mode (test_async.c covers the queues): enumeration, each
 * device's own allocator and thread share, arrays on a device and copies between devices,
 * executables compiled for a device, jit calls running where their arguments live, the
 * mixed-device error naming every argument's device, and OOM messages naming the device. */
#include "backend/cpu/cpu.h"
#include "backend/device.h"
#include "test.h"

static char dir[] = "/tmp/kiln-test-devices-XXXXXX";

static kiln_context *devices_context(int n, int threads, uint64_t limit) {
    kiln_context_options o;
    memset(&o, 0, sizeof o);
    o.ignore_environment = true;
    o.cache_dir = dir;
    o.cpu_devices = n;
    o.num_threads = threads;
    o.memory_limit = limit;
    kiln_context *c = NULL;
    char err[512];
    if (kiln_context_create(&o, &c, err, sizeof err)) fprintf(stderr, "%s\n", err);
    return c;
}

/* f(x, y) = x * 2 + y over f32[n] */
static kiln_executable *compile_axpy(kiln_context *c, int64_t n, int device) {
    kiln_graph *g;
    if (kiln_graph_create(c, "axpy", &g)) return NULL;
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, &n);
    kiln_value y = kiln_parameter(g, "y", KILN_DTYPE_F32, 1, &n);
    kiln_value r = kiln_add(g, kiln_mul(g, x, kiln_scalar(g, KILN_DTYPE_F32, 2)), y);
    kiln_executable *e = NULL;
    kiln_compile_options co = {.device = device};
    if (!kiln_graph_finish(g, 1, &r)) kiln_compile(g, &co, &e);
    kiln_graph_destroy(g);
    return e;
}

static int axpy_fn(kiln_graph *g, const kiln_value *a, int n, const void *st, void *user,
                   kiln_value *outs) {
    (void)n, (void)st, (void)user;
    outs[0] = kiln_add(g, kiln_mul(g, a[0], kiln_scalar(g, KILN_DTYPE_F32, 2)), a[1]);
    return 1;
}

static void test_enumerate(void) {
    kiln_context *c = devices_context(4, 4, 0);
    CHECK(c != NULL);
    if (!c) return;
    CHECK(kiln_device_count(c) == 4);
    for (int d = 0; d < 4; d++) {
        kiln_device_info info;
        char want[16];
        snprintf(want, sizeof want, "cpu:%d", d);
        CHECK_OK(c, kiln_device_get_info(c, d, &info));
        CHECK(!strcmp(info.platform, "cpu") && info.index == d && !strcmp(info.name, want));
        CHECK(!strcmp(kiln_device_name(c, d), want));
    }
    kiln_device_info info;
    CHECK_STATUS(kiln_device_get_info(c, 4, &info), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(c),
                   "device 4 does not exist (this context has 4: cpu:0, cpu:1, cpu:2, cpu:3)");
    kiln_context_destroy(c);

    /* the default is one device */
    c = devices_context(0, 1, 0);
    CHECK(c && kiln_device_count(c) == 1);
    kiln_context_destroy(c);
}

static void test_config(void) {
    kiln_context_options o;
    memset(&o, 0, sizeof o);
    o.cache_dir = dir;
    kiln_context *c = NULL;
    char err[512];
    setenv("KILN_CPU_DEVICES", "3", 1);
    CHECK_STATUS(kiln_context_create(&o, &c, err, sizeof err), KILN_STATUS_OK);
    CHECK(c && kiln_device_count(c) == 3);
    kiln_context_destroy(c);
    static const char *const bad[] = {"0", "65", "two", "-1"};
    for (int i = 0; i < 4; i++) {
        setenv("KILN_CPU_DEVICES", bad[i], 1);
        CHECK_STATUS(kiln_context_create(&o, &c, err, sizeof err), KILN_STATUS_CONFIG);
        CHECK_CONTAINS(err, "KILN_CPU_DEVICES");
        CHECK_CONTAINS(err, bad[i]);
    }
    unsetenv("KILN_CPU_DEVICES");
    setenv("KILN_ASYNC", "maybe", 1);
    CHECK_STATUS(kiln_context_create(&o, &c, err, sizeof err), KILN_STATUS_CONFIG);
    CHECK_CONTAINS(err, "KILN_ASYNC=\"maybe\"");
    unsetenv("KILN_ASYNC");
    o.cpu_devices = 65;
    CHECK_STATUS(kiln_context_create(&o, &c, err, sizeof err), KILN_STATUS_CONFIG);
    CHECK_CONTAINS(err, "cpu_devices");
}

/* Each device: its own allocator and stats, and its own pool with a share of the threads. */
static void test_own_allocator_and_threads(void) {
    kiln_context *c = devices_context(3, 4, 0);
    if (!c) return;
    int64_t n = 1000;
    kiln_array *a = NULL;
    CHECK_OK(c, kiln_array_create_on(c, 2, KILN_DTYPE_F32, 1, &n, NULL, &a));
    CHECK(kiln_array_device(a) == 2);
    for (int d = 0; d < 3; d++) {
        kiln_memory_stats st;
        CHECK_OK(c, kiln_device_get_memory_stats(c, d, &st));
        CHECK_MSG(st.bytes_in_use == (d == 2 ? 4096u : 0u), "device %d: %llu in use", d,
                  (unsigned long long)st.bytes_in_use);
    }
    kiln_array_destroy(a);
    /* 4 threads over 3 devices: 2, 1, 1 */
    int want[] = {2, 1, 1};
    for (int d = 0; d < 3; d++) {
        kn_pool *p = NULL;
        CHECK_OK(c, cpu_backend_device_pool(c->devices[d].state, d, &p));
        CHECK_MSG(p && pool_num_threads(p) == want[d], "device %d: %d threads, want %d", d,
                  p ? pool_num_threads(p) : -1, want[d]);
    }
    kiln_context_destroy(c);
}

static void test_placement(void) {
    kiln_context *c = devices_context(3, 3, 0);
    if (!c) return;
    int64_t n = 5;
    float x[5] = {1, 2, 3, 4, 5}, y[5] = {10, 20, 30, 40, 50}, got[5];
    kiln_array *x0, *y1, *x1 = NULL, *r = NULL, *r0 = NULL;
    CHECK_OK(c, kiln_array_create(c, KILN_DTYPE_F32, 1, &n, x, &x0));
    CHECK_OK(c, kiln_array_create_on(c, 1, KILN_DTYPE_F32, 1, &n, y, &y1));
    CHECK(kiln_array_device(x0) == 0 && kiln_array_device(y1) == 1);
    CHECK_OK(c, kiln_array_copy_to_device(x0, 1, &x1));
    CHECK(kiln_array_device(x1) == 1);

    kiln_executable *e1 = compile_axpy(c, n, 1);
    CHECK(e1 != NULL);
    kiln_array *args[2] = {x1, y1};
    CHECK_OK(c, kiln_executable_run(e1, 2, args, 1, &r));
    CHECK(kiln_array_device(r) == 1);
    CHECK_OK(c, kiln_array_copy_to_device(r, 0, &r0));
    CHECK_OK(c, kiln_array_copy_to_host(r0, got, sizeof got));
    for (int i = 0; i < 5; i++) CHECK(got[i] == x[i] * 2 + y[i]);

    /* an argument on another device than the executable's is an error naming them all */
    kiln_array *mixed[2] = {x0, y1}, *o = NULL;
    CHECK_STATUS(kiln_executable_run(e1, 2, mixed, 1, &o), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(c), "compiled for cpu:1, but argument 0 is on cpu:0");
    CHECK_CONTAINS(kiln_last_error(c), "argument 0 on cpu:0, argument 1 on cpu:1");
    CHECK(o == NULL);

    kiln_executable *bad = NULL;
    kiln_graph *g;
    CHECK_OK(c, kiln_graph_create(c, "bad", &g));
    kiln_value p = kiln_parameter(g, "p", KILN_DTYPE_F32, 0, NULL);
    CHECK_OK(c, kiln_graph_finish(g, 1, &p));
    kiln_compile_options co = {.device = 7};
    CHECK_STATUS(kiln_compile(g, &co, &bad), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(c), "kiln_compile_options.device: device 7 does not exist");
    kiln_graph_destroy(g);

    kiln_executable_destroy(e1);
    kiln_array *all[] = {x0, y1, x1, r, r0};
    for (int i = 0; i < 5; i++) kiln_array_destroy(all[i]);
    kiln_context_destroy(c);
}

/* A jit call runs on its arguments' device, compiling once per device. */
static void test_jit_follows_arguments(void) {
    kiln_context *c = devices_context(3, 3, 0);
    if (!c) return;
    kiln_jit *j;
    kiln_jit_options jo = {.name = "axpy", .fn = axpy_fn};
    CHECK_OK(c, kiln_jit_create(c, &jo, &j));
    int64_t n = 3;
    float x[3] = {1, 2, 3}, y[3] = {4, 5, 6}, got[3];
    for (int d = 0; d < 3; d++) {
        kiln_array *a[2], *r = NULL;
        CHECK_OK(c, kiln_array_create_on(c, d, KILN_DTYPE_F32, 1, &n, x, &a[0]));
        CHECK_OK(c, kiln_array_create_on(c, d, KILN_DTYPE_F32, 1, &n, y, &a[1]));
        CHECK_OK(c, kiln_jit_call(j, 2, a, NULL, 0, 1, &r));
        CHECK(kiln_array_device(r) == d);
        CHECK_OK(c, kiln_array_copy_to_host(r, got, sizeof got));
        for (int i = 0; i < 3; i++) CHECK(got[i] == x[i] * 2 + y[i]);
        kiln_array_destroy(r);
        kiln_array_destroy(a[0]);
        kiln_array_destroy(a[1]);
    }
    kiln_jit_stats st;
    kiln_jit_get_stats(j, &st);
    CHECK(st.compiles == 3 && st.entries == 3);

    kiln_array *a[2], *r = NULL;
    CHECK_OK(c, kiln_array_create_on(c, 2, KILN_DTYPE_F32, 1, &n, x, &a[0]));
    CHECK_OK(c, kiln_array_create_on(c, 0, KILN_DTYPE_F32, 1, &n, y, &a[1]));
    CHECK_STATUS(kiln_jit_call(j, 2, a, NULL, 0, 1, &r), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(c), "kiln_jit_call 'axpy': the arguments are on different "
                                       "devices (argument 0 on cpu:2, argument 1 on cpu:0)");
    kiln_array_destroy(a[0]);
    kiln_array_destroy(a[1]);
    kiln_jit_destroy(j);
    kiln_context_destroy(c);
}

/* Out-of-memory names the device whose allocator refused. */
static void test_oom_names_device(void) {
    kiln_context *c = devices_context(4, 4, 1 << 20);
    if (!c) return;
    int64_t n = 1 << 19; /* 2 MiB of f32 > the 1 MiB limit */
    kiln_array *a = NULL;
    CHECK_STATUS(kiln_array_create_on(c, 3, KILN_DTYPE_F32, 1, &n, NULL, &a),
                 KILN_STATUS_DEVICE_OOM);
    CHECK_CONTAINS(kiln_last_error(c), "cpu:3: out of memory");
    CHECK(a == NULL);
    kiln_context_destroy(c);
}

int main(int argc, char **argv) {
    test_select_cases(argc, argv);
    if (!mkdtemp(dir)) return 2;
    RUN(test_enumerate);
    RUN(test_config);
    RUN(test_own_allocator_and_threads);
    RUN_CC(test_placement);
    RUN_CC(test_jit_follows_arguments);
    RUN(test_oom_names_device);
    test_remove_dir(dir);
    return test_summary("test_devices");
}
