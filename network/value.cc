#include "network/value.h"

#include <onnx/onnx-data_pb.h>
#include <onnx/onnx_pb.h>

#include "deep/onnx_tensor.h"

namespace deep500::network {

const char* kind_name(Value::Kind k) {
  switch (k) {
    case Value::Kind::Tensor: return "tensor";
    case Value::Kind::Sequence: return "sequence";
    case Value::Kind::Optional: return "optional";
  }
  return "?";
}

Value Value::sequence(std::vector<Tensor> elems, DataType elem_type) {
  Value v;
  v.kind_ = Kind::Sequence;
  if (elem_type == DataType::Undefined && !elems.empty()) elem_type = elems[0].dtype();
  for (size_t i = 0; i < elems.size(); ++i) {
    DEEP500_CHECK(elems[i].defined(), "sequence element ", i, " is an undefined tensor");
    DEEP500_CHECK(elems[i].dtype() == elem_type,
                  "sequence elements must share one element type: ", "element ", i, " is ",
                  name_of(elems[i].dtype()), ", the sequence holds ", name_of(elem_type));
  }
  v.elems_ = std::move(elems);
  v.elem_type_ = elem_type;
  return v;
}

Value Value::empty_optional() {
  Value v;
  v.kind_ = Kind::Optional;
  return v;
}

Value Value::optional(Value element) {
  DEEP500_CHECK(!element.is_optional(), "an optional cannot hold another optional");
  DEEP500_CHECK(!element.is_tensor() || element.tensor_.defined(),
                "an optional cannot hold an undefined tensor (use empty_optional())");
  Value v;
  v.kind_ = Kind::Optional;
  v.element_ = std::make_shared<const Value>(std::move(element));
  return v;
}

const Tensor& Value::tensor(const std::string& what) const {
  DEEP500_CHECK(is_tensor(), what, ": expected a tensor, got ", describe());
  return tensor_;
}

const std::vector<Tensor>& Value::sequence(const std::string& what) const {
  DEEP500_CHECK(is_sequence(), what, ": expected a sequence of tensors, got ", describe());
  return elems_;
}

DataType Value::sequence_elem_type(const std::string& what) const {
  sequence(what);
  return elem_type_;
}

bool Value::has_element(const std::string& what) const {
  DEEP500_CHECK(is_optional(), what, ": expected an optional, got ", describe());
  return element_ != nullptr;
}

const Value& Value::element(const std::string& what) const {
  DEEP500_CHECK(has_element(what), what, ": expected an optional holding a value, got ",
                describe());
  return *element_;
}

std::string Value::describe() const {
  switch (kind_) {
    case Kind::Tensor:
      return tensor_.defined() ? "tensor " + to_string(tensor_.desc()) : "an absent (none) tensor";
    case Kind::Sequence:
      return cat("sequence of ", elems_.size(), " ", name_of(elem_type_), " tensors");
    case Kind::Optional:
      return element_ ? "optional holding " + element_->describe() : "empty optional";
  }
  return "?";
}

Value value_from_onnx(const onnx::SequenceProto& proto, const std::string& what) {
  DEEP500_CHECK(
      proto.elem_type() == onnx::SequenceProto::TENSOR ||
          (proto.elem_type() == onnx::SequenceProto::UNDEFINED && proto.tensor_values_size() == 0),
      what, ": only sequences of dense tensors are supported (SequenceProto elem_type ",
      proto.elem_type(), ")");
  std::vector<Tensor> elems;
  for (int i = 0; i < proto.tensor_values_size(); ++i)
    elems.push_back(from_onnx(proto.tensor_values(i), cat(what, " element ", i)));
  return Value::sequence(std::move(elems));
}

Value value_from_onnx(const onnx::OptionalProto& proto, const std::string& what) {
  switch (proto.elem_type()) {
    case onnx::OptionalProto::UNDEFINED: return Value::empty_optional();
    case onnx::OptionalProto::TENSOR:
      return Value::optional(from_onnx(proto.tensor_value(), what + " (optional's tensor)"));
    case onnx::OptionalProto::SEQUENCE:
      return Value::optional(
          value_from_onnx(proto.sequence_value(), what + " (optional's sequence)"));
    default:
      throw Error(cat(what,
                      ": only optionals of tensors or sequences are supported "
                      "(OptionalProto elem_type ",
                      proto.elem_type(), ")"));
  }
}

namespace {
void set_tensor_type(onnx::TypeProto_Tensor* tt, const Tensor& t, bool with_shape) {
  tt->set_elem_type(static_cast<int>(t.dtype()));
  if (!with_shape) return;
  auto* shape = tt->mutable_shape();
  for (auto d : t.shape()) shape->add_dim()->set_dim_value(d);
}
}  // namespace

onnx::TypeProto type_of(const Value& v) {
  onnx::TypeProto tp;
  switch (v.kind()) {
    case Value::Kind::Tensor: {
      const Tensor& t = v.tensor("type_of");
      if (t.defined()) set_tensor_type(tp.mutable_tensor_type(), t, true);
      break;
    }
    case Value::Kind::Sequence: {
      auto* elem = tp.mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type();
      elem->set_elem_type(static_cast<int>(v.sequence_elem_type("type_of")));
      break;
    }
    case Value::Kind::Optional: {
      auto* opt = tp.mutable_optional_type();
      if (v.has_element("type_of")) *opt->mutable_elem_type() = type_of(v.element("type_of"));
      break;
    }
  }
  return tp;
}

}  // namespace deep500::network
