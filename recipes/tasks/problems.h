// The problems `deep500 op check|bench` run: inputs from --input specs
// ("x:float32:1x3x224x224") and benchdnn-style shape files (one problem a
// line: shapes per input "1x64x56x56:1x64x56x56", or Conv/Gemm/MatMul
// descriptors "mb1ic64ih56oc64oh56kh3ph1"; docs/benchmarking.md). Text from
// the user is untrusted: every size is checked, every error is one line
// naming the option or FILE:LINE (fuzzed by tests/fuzz/fuzz_cli_text.cc).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

#include "deep/tensor.h"

namespace deep500::recipes {

// A shape without a batch value (no --batch): "N" in it is an error.
inline constexpr int64_t kNoBatch = -1;

struct Input {
  std::string name;
  TensorDesc desc;
};

// One benchmark/check problem: named inputs plus attributes it implies.
struct Problem {
  std::string label;  // the shape-file line, or the --input list
  std::vector<Input> inputs;
  std::vector<onnx::AttributeProto> attrs;
};

// "1x3x224x224"; "" or "scalar" is rank 0. The dimension "N" takes `batch`
// (a --batch value); without one it is an error.
Shape parse_shape(const std::string& text, const std::string& where, int64_t batch = kNoBatch);
bool has_batch_dimension(const std::string& shape_text);
// NAME:dtype:shape; an element count or byte size that overflows is an error.
Input parse_input(const std::string& spec, int64_t batch);
// The --batch values (each >= 1), or one kNoBatch pass when none is given.
std::vector<int64_t> batch_values(const std::vector<int64_t>& batch);

// The problems of a shape file's text (`path` names it in errors), once per
// batch value; `names` name the inputs of shape lines with that many shapes
// (else x0, x1, ...). Descriptors are for Conv, Gemm and MatMul.
std::vector<Problem> parse_shape_file(const std::string& text, const std::string& path,
                                      const std::string& op_type, DataType dtype,
                                      const std::vector<int64_t>& batch,
                                      const std::vector<std::string>& names);

// The problems of `inputs` (NAME:dtype:shape, once per batch value) or,
// when `shapes_path` is given, of that shape file (inputs then only name
// the inputs). Errors name --input, --batch or --shapes.
std::vector<Problem> make_problems(const std::string& op_type,
                                   const std::vector<std::string>& inputs,
                                   const std::string& shapes_path, const std::string& dtype,
                                   const std::vector<int64_t>& batch);

}  // namespace deep500::recipes
