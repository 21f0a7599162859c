/* A plugin kernel for an ONNX operator (Relu in the default domain), for the
 * tests that such a kernel is compared with the reference like any backend:
 * its forward and backward are deliberately 1% off (y = 1.01 * max(x, 0)),
 * float32 only (held to the reference's backward), and its create()
 * declines inputs of rank 3 or more, which must be a refusal (the node is
 * valid ONNX), not bad input. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "operators/custom_op_abi.h"

static int64_t count(const deep500_tensor* t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t->rank; ++i) n *= t->shape[i];
  return n;
}

static void* create(const deep500_attribute* attrs, int32_t num_attrs, const deep500_tensor* inputs,
                    char* err, size_t err_len) {
  (void)attrs, (void)num_attrs;
  if (inputs[0].dtype != 1 || inputs[0].rank >= 3) { /* float32 */
    snprintf(err, err_len, "this Relu takes float32 inputs of rank 0 to 2");
    return NULL;
  }
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
  (void)self, (void)err, (void)err_len;
  const float* x = (const float*)in[0].data;
  float* y = (float*)out[0].data;
  for (int64_t i = 0; i < count(&in[0]); ++i) y[i] = x[i] > 0 ? 1.01f * x[i] : 0.0f;
  return 0;
}

/* Backward as 1% off as the forward: dx = 1.01 * dy where x > 0. */
static int backward(void* self, const deep500_tensor* gy, const deep500_tensor* in,
                    const deep500_tensor* y, deep500_tensor* gx, char* err, size_t err_len) {
  (void)self, (void)y, (void)err, (void)err_len;
  const float* x = (const float*)in[0].data;
  const float* dy = (const float*)gy[0].data;
  float* dx = (float*)gx[0].data;
  for (int64_t i = 0; i < count(&in[0]); ++i) dx[i] = x[i] > 0 ? 1.01f * dy[i] : 0.0f;
  return 0;
}

static void destroy(void* self) {
  free(self);
}

static const deep500_custom_op_def defs[] = {
    {DEEP500_CUSTOM_OP_ABI_VERSION, "", "Relu", 1, 1, create, infer, forward, backward, NULL, destroy}};

__attribute__((visibility("default"))) int32_t deep500_custom_ops(
    const deep500_custom_op_def** out) {
  *out = defs;
  return 1;
}
