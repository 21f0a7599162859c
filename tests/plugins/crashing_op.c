/* A custom operator that crashes (test.crash Crash: its forward dereferences
 * a null pointer), for the isolation tests of op check and op bench: the
 * crash must be a failed row, not a dead deep500 process. */
#include <stddef.h>
#include <stdlib.h>

#include "operators/custom_op_abi.h"

static void* create(const deep500_attribute* attrs, int32_t num_attrs, const deep500_tensor* inputs,
                    char* err, size_t err_len) {
  (void)attrs, (void)num_attrs, (void)inputs, (void)err, (void)err_len;
  return malloc(1);
}

static int infer(void* self, const deep500_tensor* in, deep500_tensor* out, char* err,
                 size_t err_len) {
  (void)self, (void)err, (void)err_len;
  *out = in[0];
  out->data = NULL;
  return 0;
}

static int forward(void* self, const deep500_tensor* in, deep500_tensor* out, char* err,
                   size_t err_len) {
  (void)self, (void)in, (void)out, (void)err, (void)err_len;
  volatile int* nowhere = NULL;
  return *nowhere;
}

static void destroy(void* self) {
  free(self);
}

static const deep500_custom_op_def defs[] = {{DEEP500_CUSTOM_OP_ABI_VERSION, "test.crash", "Crash",
                                              1, 1, create, infer, forward, NULL, NULL, destroy}};

__attribute__((visibility("default"))) int32_t deep500_custom_ops(
    const deep500_custom_op_def** out) {
  *out = defs;
  return 1;
}
