/* Example custom operator: Swish(x) = x * sigmoid(beta * x), domain
 * com.example, float32 and float64, with backward. It includes nothing from
 * deep500 but the C ABI header. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "operators/custom_op_abi.h"

typedef struct {
  double beta;
  int32_t dtype;
} swish;

static int64_t count(const deep500_tensor* t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t->rank; ++i) n *= t->shape[i];
  return n;
}

static void* create(const deep500_attribute* attrs, int32_t num_attrs, const deep500_tensor* inputs,
                    char* err, size_t err_len) {
  if (inputs[0].dtype != 1 && inputs[0].dtype != 11) {
    snprintf(err, err_len, "input X has dtype code %d, expected float32 (1) or float64 (11)",
             inputs[0].dtype);
    return NULL;
  }
  swish* s = malloc(sizeof *s);
  s->beta = 1.0;
  s->dtype = inputs[0].dtype;
  for (int32_t i = 0; i < num_attrs; ++i) {
    char* end = NULL;
    if (attrs[i].name[0] == 'b' && attrs[i].name[1] == 'e') s->beta = strtod(attrs[i].value, &end);
    if (!end || *end) {
      snprintf(err, err_len, "unknown attribute '%s' or bad value '%s' (expected beta=<float>)",
               attrs[i].name, attrs[i].value);
      free(s);
      return NULL;
    }
  }
  return s;
}

static int infer(void* self, const deep500_tensor* in, deep500_tensor* out, char* err,
                 size_t err_len) {
  (void)self, (void)err, (void)err_len;
  *out = in[0];
  out->data = NULL;
  return 0;
}

#define SWISH_LOOP(T)                                                                \
  {                                                                                  \
    const T* x = in[0].data;                                                         \
    T* y = out[0].data;                                                              \
    for (int64_t i = 0; i < n; ++i) y[i] = (T)(x[i] / (1.0 + exp(-s->beta * x[i]))); \
  }

static int forward(void* self, const deep500_tensor* in, deep500_tensor* out, char* err,
                   size_t err_len) {
  (void)err, (void)err_len;
  const swish* s = self;
  int64_t n = count(&in[0]);
  if (s->dtype == 1) SWISH_LOOP(float) else SWISH_LOOP(double) return 0;
}

#define SWISH_GRAD(T)                                             \
  {                                                               \
    const T* x = in[0].data;                                      \
    const T* g = gy[0].data;                                      \
    T* d = gx[0].data;                                            \
    for (int64_t i = 0; i < n; ++i) {                             \
      double sg = 1.0 / (1.0 + exp(-s->beta * x[i]));             \
      d[i] = (T)(g[i] * (sg + s->beta * x[i] * sg * (1.0 - sg))); \
    }                                                             \
  }

static int backward(void* self, const deep500_tensor* gy, const deep500_tensor* in,
                    const deep500_tensor* out, deep500_tensor* gx, char* err, size_t err_len) {
  (void)out, (void)err, (void)err_len;
  const swish* s = self;
  int64_t n = count(&in[0]);
  if (s->dtype == 1) SWISH_GRAD(float) else SWISH_GRAD(double) return 0;
}

static double flops(void* self, const deep500_tensor* in) {
  (void)self;
  return 4.0 * (double)count(&in[0]);
}

static void destroy(void* self) {
  free(self);
}

static const deep500_custom_op_def defs[] = {{DEEP500_CUSTOM_OP_ABI_VERSION, "com.example", "Swish",
                                              1, 1, create, infer, forward, backward, flops,
                                              destroy}};

__attribute__((visibility("default"))) int32_t deep500_custom_ops(
    const deep500_custom_op_def** out) {
  *out = defs;
  return 1;
}
