// Text the command line takes from the user (recipes/tasks/problems.h,
// operators/attribute_text.h, network/settings.h): the first byte picks the
// parser, the rest is the text: a benchdnn-style shape file for Conv, Gemm,
// MatMul or Add (with and without --batch), an --input spec, an --attr
// value typed by an ONNX schema, a --setting entry. Any input is a value or
// an Error.
#include <onnx/defs/schema.h>

#include "network/settings.h"
#include "operators/attribute_text.h"
#include "recipes/tasks/problems.h"
#include "tests/fuzz/fuzz_common.h"

using namespace deep500;

namespace {

void parse(uint8_t parser, const std::string& text) {
  static const char* kOps[] = {"Conv", "Gemm", "MatMul", "Add", "Resize", "Pad"};
  const std::string op = kOps[(parser / 8) % 6];
  switch (parser % 8) {
    case 0:
      (void)recipes::parse_shape_file(text, "fuzz.shapes", op, DataType::Float, {}, {});
      break;
    case 1:
      (void)recipes::parse_shape_file(text, "fuzz.shapes", op, DataType::Float, {1, 3}, {"A", "B"});
      break;
    case 2: (void)recipes::parse_input(text, recipes::kNoBatch); break;
    case 3: (void)recipes::parse_input(text, 2); break;
    case 4:
    case 5: {
      const auto* schema = onnx::OpSchemaRegistry::Schema(op, 17, "");
      if (schema) (void)ops::parse_attribute(text, *schema, "--attr");
      break;
    }
    default: {
      network::ExecutorOptions options;
      network::apply_settings({text}, &options);
      (void)network::resolved(options);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::init();
  if (size == 0) return 0;
  try {
    parse(data[0], std::string(reinterpret_cast<const char*>(data + 1), size - 1));
  } catch (const Error&) {
  }
  return 0;
}
