/* A custom operator built for custom-op ABI version 1 (test.v1 Negate:
 * y = -x, float32, with backward dx = -dy), declaring the version-1 tensor
 * layout itself as such a library was compiled: deep500 must still load it
 * and lay its tensors out without the version-2 device fields. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define V1_MAX_RANK 8

typedef struct {
  int32_t dtype;
  int32_t rank;
  int64_t shape[V1_MAX_RANK];
  void* data;
} v1_tensor;

typedef struct {
  const char* name;
  const char* value;
} v1_attribute;

typedef struct {
  uint32_t abi_version;
  const char* domain;
  const char* op_type;
  int32_t num_inputs;
  int32_t num_outputs;
  void* (*create)(const v1_attribute*, int32_t, const v1_tensor*, char*, size_t);
  int (*infer)(void*, const v1_tensor*, v1_tensor*, char*, size_t);
  int (*forward)(void*, const v1_tensor*, v1_tensor*, char*, size_t);
  int (*backward)(void*, const v1_tensor*, const v1_tensor*, const v1_tensor*, v1_tensor*, char*,
                  size_t);
  double (*flops)(void*, const v1_tensor*);
  void (*destroy)(void*);
} v1_def;

static int64_t count(const v1_tensor* t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t->rank; ++i) n *= t->shape[i];
  return n;
}

static void* create(const v1_attribute* attrs, int32_t num_attrs, const v1_tensor* inputs,
                    char* err, size_t err_len) {
  (void)attrs, (void)num_attrs, (void)err, (void)err_len;
  return inputs[0].dtype == 1 ? malloc(1) : NULL; /* float32 only */
}

static int infer(void* self, const v1_tensor* in, v1_tensor* out, char* err, size_t err_len) {
  (void)self, (void)err, (void)err_len;
  *out = in[0];
  out->data = NULL;
  return 0;
}

static void negate(const v1_tensor* from, v1_tensor* to) {
  const float* x = (const float*)from->data;
  float* y = (float*)to->data;
  for (int64_t i = 0; i < count(from); ++i) y[i] = -x[i];
}

static int forward(void* self, const v1_tensor* in, v1_tensor* out, char* err, size_t err_len) {
  (void)self, (void)err, (void)err_len;
  negate(&in[0], &out[0]);
  return 0;
}

static int backward(void* self, const v1_tensor* gy, const v1_tensor* in, const v1_tensor* y,
                    v1_tensor* gx, char* err, size_t err_len) {
  (void)self, (void)in, (void)y, (void)err, (void)err_len;
  negate(&gy[0], &gx[0]);
  return 0;
}

static void destroy(void* self) {
  free(self);
}

static const v1_def defs[] = {
    {1, "test.v1", "Negate", 1, 1, create, infer, forward, backward, NULL, destroy}};

__attribute__((visibility("default"))) int32_t deep500_custom_ops(const v1_def** out) {
  *out = defs;
  return 1;
}
