// Value: what a name in an ONNX graph can hold at Level 1. Level 0 kernels
// see tensors only; sequences and optionals live here, in the network layer.
//
//   tensor     a Tensor (undefined = absent optional input, "none")
//   sequence   an ordered list of tensors of one element type
//   optional   empty, or holding a tensor or a sequence
//
// Accessors throw deep500::Error naming what was expected and what was found,
// prefixed by the caller's `what` (e.g. "node 'n' (SequenceAt) input 0").
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "deep/tensor.h"

namespace onnx {
class SequenceProto;
class OptionalProto;
class TypeProto;
}  // namespace onnx

namespace deep500::network {

class Value {
 public:
  enum class Kind { Tensor, Sequence, Optional };

  Value() = default;                          // an undefined tensor
  Value(Tensor t) : tensor_(std::move(t)) {}  // NOLINT: tensors convert implicitly

  // A sequence; `elem_type` is needed when `elems` is empty (Undefined:
  // taken from the first element).
  static Value sequence(std::vector<Tensor> elems, DataType elem_type = DataType::Undefined);
  static Value empty_optional();
  static Value optional(Value element);  // element must be a tensor or a sequence

  Kind kind() const { return kind_; }
  bool is_tensor() const { return kind_ == Kind::Tensor; }
  bool is_sequence() const { return kind_ == Kind::Sequence; }
  bool is_optional() const { return kind_ == Kind::Optional; }

  const Tensor& tensor(const std::string& what) const;
  const std::vector<Tensor>& sequence(const std::string& what) const;
  DataType sequence_elem_type(const std::string& what) const;
  bool has_element(const std::string& what) const;      // optional only
  const Value& element(const std::string& what) const;  // optional holding a value

  // "tensor float32[2,3]", "sequence of 3 float32 tensors", "empty optional",
  // "optional holding tensor int64[4]".
  std::string describe() const;

 private:
  Kind kind_ = Kind::Tensor;
  Tensor tensor_;
  std::vector<Tensor> elems_;
  DataType elem_type_ = DataType::Undefined;
  std::shared_ptr<const Value> element_;  // optional's content; null = empty
};

const char* kind_name(Value::Kind k);

// Converts ONNX data protos (test data); `what` names the source.
Value value_from_onnx(const onnx::SequenceProto& proto, const std::string& what);
Value value_from_onnx(const onnx::OptionalProto& proto, const std::string& what);
// A TypeProto describing `v` (tensor/sequence/optional with element types and
// shapes where known), e.g. for building context-dependent function bodies.
onnx::TypeProto type_of(const Value& v);

}  // namespace deep500::network
