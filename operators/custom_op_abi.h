/* deep500 custom-operator C ABI, version 2 (version 1 lacked the tensors'
 * device fields; deep500 still loads libraries built for it).
 *
 * A custom operator is compiled separately into a shared library that
 * includes only this header and exports one C function:
 *
 *   int32_t deep500_custom_ops(const deep500_custom_op_def** defs);
 *
 * It stores a pointer to an array of definitions in *defs and returns their
 * count. deep500 loads the library at run time (deep500 ... --plugin lib.so),
 * registers each definition under backend "custom", and validates and
 * benchmarks it like any built-in operator.
 *
 * Rules: no C++ exceptions cross this boundary. A function that fails returns
 * non-zero and writes a NUL-terminated message into err (capacity err_len).
 * Tensors are dense, row-major; dtype codes are ONNX TensorProto codes
 * (1 = float32, 11 = float64, 7 = int64, ...). Output buffers are allocated
 * by deep500 from the shapes infer() reports. One instance (the pointer
 * create() returns) is used by one thread at a time. Inputs of rank above
 * DEEP500_MAX_RANK are refused before create() (the registry tries the next
 * backend). A create() failure is bad input, reported as an error, for an
 * operator of the library's own; for an ONNX operator the library implements
 * (domain "" or another ONNX domain, e.g. a faster Relu) the node is valid,
 * so the failure is a refusal: the next backend runs it, checks mark the
 * case refused. Such a kernel is checked against the reference like any
 * backend. */
#ifndef DEEP500_CUSTOM_OP_ABI_H
#define DEEP500_CUSTOM_OP_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DEEP500_CUSTOM_OP_ABI_VERSION 2
#define DEEP500_MAX_RANK 8

/* Where a tensor's data lives (deep500_tensor.device_type). Custom operators
 * are host kernels: deep500 gives them host tensors only. */
#define DEEP500_DEVICE_HOST 0
#define DEEP500_DEVICE_CUDA 1

typedef struct {
  int32_t dtype; /* ONNX TensorProto data type code */
  int32_t rank;  /* <= DEEP500_MAX_RANK */
  int64_t shape[DEEP500_MAX_RANK];
  void* data;           /* NULL in descriptors and absent inputs */
  int32_t device_type;  /* DEEP500_DEVICE_HOST or DEEP500_DEVICE_CUDA (since version 2) */
  int32_t device_index; /* the CUDA device's number; 0 on the host (since version 2) */
} deep500_tensor;

typedef struct {
  const char* name;
  const char* value; /* text: "3", "0.5", "1,2,3", "abc" */
} deep500_attribute;

typedef struct {
  uint32_t abi_version; /* DEEP500_CUSTOM_OP_ABI_VERSION */
  const char* domain;   /* e.g. "com.example" */
  const char* op_type;  /* e.g. "Swish" */
  int32_t num_inputs;
  int32_t num_outputs;

  /* Validates attributes and input descriptors once; returns an instance or
   * NULL with err set. */
  void* (*create)(const deep500_attribute* attrs, int32_t num_attrs,
                  const deep500_tensor* input_descs, char* err, size_t err_len);
  /* Fills dtype/rank/shape of each output from the inputs. */
  int (*infer)(void* self, const deep500_tensor* inputs, deep500_tensor* outputs, char* err,
               size_t err_len);
  int (*forward)(void* self, const deep500_tensor* inputs, deep500_tensor* outputs, char* err,
                 size_t err_len);
  /* Optional (NULL if absent): one gradient per input, buffers shaped like
   * the inputs and zero-filled by deep500. */
  int (*backward)(void* self, const deep500_tensor* grad_outputs, const deep500_tensor* inputs,
                  const deep500_tensor* outputs, deep500_tensor* grad_inputs, char* err,
                  size_t err_len);
  /* Optional: floating-point operations of one forward call. The one
   * exception to deep500's cost model (operators/cost_model.h), which knows
   * no custom op: reported in its place as the operator's FLOPs. */
  double (*flops)(void* self, const deep500_tensor* inputs);
  void (*destroy)(void* self);
} deep500_custom_op_def;

typedef int32_t (*deep500_custom_ops_fn)(const deep500_custom_op_def** defs);

/* Optional second entry point: the plugin's build type (CMAKE_BUILD_TYPE),
 * which every result's context records beside deep500's own. Linking the
 * CMake target deep500::custom_op_abi defines DEEP500_PLUGIN_BUILD_TYPE, and
 * this weak definition (one copy however many files include the header)
 * exports it; a plugin built otherwise is recorded as "unknown". */
typedef const char* (*deep500_plugin_build_type_fn)(void);
#ifdef DEEP500_PLUGIN_BUILD_TYPE
__attribute__((weak, visibility("default"))) const char* deep500_plugin_build_type(void);
__attribute__((weak, visibility("default"))) const char* deep500_plugin_build_type(void) {
  return DEEP500_PLUGIN_BUILD_TYPE;
}
#endif

#ifdef __cplusplus
}
#endif

#endif /* DEEP500_CUSTOM_OP_ABI_H */
