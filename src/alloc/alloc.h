/* alloc.h — what the rest of kiln calls to get device memory: arrays, executables and the
 * memory planner's arenas ask a device for bytes with a tag naming the op or array, and
 * give them back. The device's allocator (bfc.h) does the work; errors set ctx's message. */
#ifndef KILN_ALLOC_H
#define KILN_ALLOC_H

#include "backend/device.h"

/* size bytes on dev, 256-byte aligned; tag names the owner in OOM messages and traces. */
static inline kiln_status alloc_alloc(kn_device *dev, size_t size, const char *tag, void **out) {
    return bfc_alloc(dev->alloc, size, tag, out);
}
static inline kiln_status alloc_free(kn_device *dev, void *ptr) {
    return bfc_free(dev->alloc, ptr);
}

#endif
