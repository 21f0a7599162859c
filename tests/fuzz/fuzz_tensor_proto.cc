// Serialized onnx.TensorProto bytes (the .pb files of ONNX test data,
// initializers of models): parsed by protobuf, then read by from_onnx and
// view_onnx (deep/onnx_tensor.h). Any input is a Tensor or an Error.
#include "deep/onnx_tensor.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  deep500::fuzz::init();
  onnx::TensorProto proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size))) return 0;
  for (bool view : {false, true}) {
    try {
      deep500::Tensor t =
          view ? deep500::view_onnx(proto, "fuzz") : deep500::from_onnx(proto, "fuzz");
      if (t.dtype() != deep500::DataType::String)
        for (int64_t i = 0; i < t.numel(); ++i) (void)t.at_as_double(i);
    } catch (const deep500::Error&) {
    }
  }
  return 0;
}
