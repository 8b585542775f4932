// Pins glibc malloc's mmap and trim thresholds (shared/node/small-heap.ts says why); elsewhere a no-op.
#include <node_api.h>
#include <stdbool.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

static napi_value pin_malloc_thresholds(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  int32_t mmap_threshold = 0, trim_threshold = 0;
  bool pinned = false;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) == napi_ok && argc == 2 &&
      napi_get_value_int32(env, argv[0], &mmap_threshold) == napi_ok &&
      napi_get_value_int32(env, argv[1], &trim_threshold) == napi_ok && mmap_threshold > 0 &&
      trim_threshold > 0) {
#if defined(__GLIBC__)
    // Setting either turns off the dynamic thresholds, which rise to the size of any large block freed.
    pinned = mallopt(M_MMAP_THRESHOLD, mmap_threshold) == 1 && mallopt(M_TRIM_THRESHOLD, trim_threshold) == 1;
#endif
  }
  napi_value result;
  napi_get_boolean(env, pinned, &result);
  return result;
}

NAPI_MODULE_INIT() {
  napi_value fn;
  napi_create_function(env, "pinMallocThresholds", NAPI_AUTO_LENGTH, pin_malloc_thresholds, NULL, &fn);
  napi_set_named_property(env, exports, "pinMallocThresholds", fn);
  return exports;
}
