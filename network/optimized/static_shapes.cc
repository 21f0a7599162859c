#include "network/optimized/static_shapes.h"

#include <algorithm>
#include <set>

namespace deep500::network {
namespace {

// Output shapes follow from the input shapes (and attributes) alone.
const std::set<std::string>& shape_from_shapes() {
  static const std::set<std::string> ops = {"Abs",
                                            "Acos",
                                            "Add",
                                            "And",
                                            "ArgMax",
                                            "ArgMin",
                                            "Asin",
                                            "Atan",
                                            "AveragePool",
                                            "BatchNormalization",
                                            "BitShift",
                                            "Cast",
                                            "CastLike",
                                            "Ceil",
                                            "Celu",
                                            "Clip",
                                            "Concat",
                                            "Conv",
                                            "Cos",
                                            "Cosh",
                                            "CumSum",
                                            "DepthToSpace",
                                            "Div",
                                            "Dropout",
                                            "Einsum",
                                            "Elu",
                                            "Equal",
                                            "Erf",
                                            "Exp",
                                            "EyeLike",
                                            "Flatten",
                                            "Floor",
                                            "Gather",
                                            "GatherElements",
                                            "GatherND",
                                            "Gelu",
                                            "Gemm",
                                            "GlobalAveragePool",
                                            "GlobalMaxPool",
                                            "Greater",
                                            "GreaterOrEqual",
                                            "HardSigmoid",
                                            "HardSwish",
                                            "Hardmax",
                                            "Identity",
                                            "InstanceNormalization",
                                            "IsInf",
                                            "IsNaN",
                                            "LRN",
                                            "LayerNormalization",
                                            "LeakyRelu",
                                            "Less",
                                            "LessOrEqual",
                                            "Log",
                                            "LogSoftmax",
                                            "MatMul",
                                            "Max",
                                            "MaxPool",
                                            "Mean",
                                            "Min",
                                            "Mish",
                                            "Mod",
                                            "Mul",
                                            "Neg",
                                            "Not",
                                            "Or",
                                            "PRelu",
                                            "Pow",
                                            "Reciprocal",
                                            "Relu",
                                            "Round",
                                            "ScatterElements",
                                            "ScatterND",
                                            "Selu",
                                            "Shrink",
                                            "Sigmoid",
                                            "Sign",
                                            "Sin",
                                            "Sinh",
                                            "Softmax",
                                            "Softplus",
                                            "Softsign",
                                            "SpaceToDepth",
                                            "Sqrt",
                                            "Sub",
                                            "Sum",
                                            "Tan",
                                            "Tanh",
                                            "ThresholdedRelu",
                                            "Transpose",
                                            "Trilu",
                                            "Where",
                                            "Xor"};
  return ops;
}

// Output shapes follow from input 0's shape and the values of the other
// inputs (shapes, axes, indices of a window), which must be constants.
const std::set<std::string>& shape_from_constant_operands() {
  static const std::set<std::string> ops = {"Expand",
                                            "OneHot",
                                            "Pad",
                                            "ReduceL1",
                                            "ReduceL2",
                                            "ReduceLogSum",
                                            "ReduceLogSumExp",
                                            "ReduceMax",
                                            "ReduceMean",
                                            "ReduceMin",
                                            "ReduceProd",
                                            "ReduceSum",
                                            "ReduceSumSquare",
                                            "Reshape",
                                            "Resize",
                                            "Slice",
                                            "Split",
                                            "Squeeze",
                                            "Tile",
                                            "TopK",
                                            "Unsqueeze",
                                            "Upsample"};
  return ops;
}

// Output shapes are the values of the inputs, which must all be constants.
const std::set<std::string>& shape_from_values() {
  static const std::set<std::string> ops = {"ConstantOfShape", "Range"};
  return ops;
}

}  // namespace

bool output_shapes_fixed(const std::string& op_type, const std::vector<bool>& shape_fixed,
                         const std::vector<bool>& constant) {
  if (!std::all_of(shape_fixed.begin(), shape_fixed.end(), [](bool b) { return b; })) return false;
  if (reads_only_shape(op_type) || shape_from_shapes().count(op_type)) return true;
  const auto all_constant_from = [&](size_t first) {
    return std::all_of(
        constant.begin() + static_cast<std::ptrdiff_t>(std::min(first, constant.size())),
        constant.end(), [](bool b) { return b; });
  };
  if (shape_from_constant_operands().count(op_type)) return all_constant_from(1);
  if (shape_from_values().count(op_type)) return all_constant_from(0);
  return false;
}

bool reads_only_shape(const std::string& op_type) {
  return op_type == "Shape" || op_type == "Size";
}

}  // namespace deep500::network
