/* cpu_memory.c — the CPU backend's memory: device memory is host RAM.
 *
 * Regions of 1 MiB or more are mapped with mmap, so that returning one (trim) really gives
 * the pages back to the operating system: a malloc'd block that size may stay in the C
 * library's heap. Smaller regions (platform mode makes one per allocation) come from
 * aligned_alloc, which keeps them visible to AddressSanitizer: platform mode under ASan is
 * then a bounds checker for device buffers. Several CPU devices (KILN_CPU_DEVICES) share
 * the machine's memory: each reports an equal part of it as its total and free memory, so
 * that preallocating a fraction on every device cannot ask for more than there is.
 *
 * A mapped region has a page of readable memory on each side (map_aligned says why), so
 * a vector load that reaches a little before or after a buffer never faults.
 *
 * Invariant: region_free receives the size region_alloc was asked for, which decides again
 * which of the two ways the region was made. */
#include "cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define CPU_MMAP_MIN ((size_t)1 << 20)

/* MemAvailable is what the kernel thinks can be had without swapping; the sysconf figure
 * (free pages) undercounts it badly on a machine with a large page cache. */
static uint64_t cpu_available(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    unsigned long long kib = 0;
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1) break;
        fclose(f);
    }
    if (kib) return (uint64_t)kib * 1024;
    long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}

kiln_status cpu_memory_info(void *state, int device, uint64_t *total, uint64_t *free_b) {
    (void)device;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t parts = (uint64_t)cpu_backend_device_count(state);
    *total = (pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0) / parts;
    *free_b = cpu_available() / parts;
    if (*free_b > *total) *free_b = *total;
    return KILN_STATUS_OK;
}

/* Maps [p - page, p + size + page) with p aligned to `align`, and returns p: a larger
 * alignment than a page is had by mapping more and unmapping the ends. The page on each
 * side stays mapped (untouched, so it costs no memory) because gcc's vectoriser may load a
 * whole vector around an access it if-converted: the concatenate kernel of a [22, 3]
 * operand read 12 bytes before the operand's first row (a masked blend of one unmasked
 * 32-byte load), which faulted when that operand began a region right after unmapped
 * memory. (Concatenate and pad kernels are no longer if-converted: print_c.c's
 * c_qualifiers marks them KILN_BRANCH_GUARD, src/codegen/prelude/c_head.h; but any other
 * loop gcc if-converts may load the same way.)
 * unmap_aligned undoes exactly this. */
static size_t page_size(void) {
    return (size_t)sysconf(_SC_PAGESIZE);
}

static void *map_aligned(size_t size, size_t align) {
    size_t page = page_size(), extra = align > page ? align : 0, total, body;
    size = (size + page - 1) & ~(page - 1); /* so the tail left to unmap starts on a page */
    if (size < page || !kn_add_size(size, 2 * page, &body) || !kn_add_size(body, extra, &total))
        return NULL;
    char *p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    if (!extra) return p + page;
    char *a = (char *)(((uintptr_t)p + page + align - 1) & ~(uintptr_t)(align - 1));
    size_t tail = (size_t)(p + total - (a + size + page));
    if (a - page > p) munmap(p, (size_t)(a - page - p));
    if (tail) munmap(a + size + page, tail);
    return a;
}

static void unmap_aligned(void *ptr, size_t size) {
    size_t page = page_size();
    size = (size + page - 1) & ~(page - 1);
    munmap((char *)ptr - page, size + 2 * page);
}

kiln_status cpu_region_alloc(void *state, int device, size_t size, size_t align, void **out) {
    (void)state, (void)device;
    *out = NULL;
    if (size >= CPU_MMAP_MIN) {
        *out = map_aligned(size, align);
        return *out ? KILN_STATUS_OK : KILN_STATUS_DEVICE_OOM;
    }
    size_t rounded = (size + align - 1) & ~(align - 1); /* aligned_alloc wants a multiple */
    if (rounded < size) return KILN_STATUS_DEVICE_OOM;
    void *p = aligned_alloc(align, rounded);
    if (!p) return KILN_STATUS_DEVICE_OOM;
    *out = p;
    return KILN_STATUS_OK;
}

void cpu_region_free(void *state, int device, void *ptr, size_t size) {
    (void)state, (void)device;
    if (!ptr) return;
    if (size >= CPU_MMAP_MIN)
        unmap_aligned(ptr, size);
    else
        free(ptr);
}
