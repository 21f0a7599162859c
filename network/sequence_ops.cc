#include "network/sequence_ops.h"

#include <set>

namespace deep500::network {

namespace {

using ops::NodeSpec;

// Copies `n` elements of any dtype (strings included) between buffers.
void copy_elements(const Tensor& src, int64_t src_off, Tensor& dst, int64_t dst_off, int64_t n) {
  dispatch_all(src.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* s = src.data<T>() + src_off;
    T* d = dst.data<T>() + dst_off;
    for (int64_t i = 0; i < n; ++i) d[i] = s[i];
  });
}

// Elements before / after `axis` of a shape.
int64_t outer_of(const Shape& s, int64_t axis) {
  int64_t n = 1;
  for (int64_t i = 0; i < axis; ++i) n *= s[i];
  return n;
}
int64_t inner_of(const Shape& s, int64_t axis) {
  int64_t n = 1;
  for (size_t i = static_cast<size_t>(axis) + 1; i < s.size(); ++i) n *= s[i];
  return n;
}

std::string input_name(const NodeSpec& node, size_t i) {
  return cat(node.describe(), " input ", i,
             i < node.inputs.size() ? " '" + node.inputs[i] + "'" : "");
}

bool present(const std::vector<Value>& in, size_t i) {
  return i < in.size() && !(in[i].is_tensor() && !in[i].tensor("").defined());
}

// A scalar (or one-element) integer position, checked against [lo, hi].
int64_t position(const NodeSpec& node, const std::vector<Value>& in, size_t i, int64_t lo,
                 int64_t hi) {
  const Tensor& t = in[i].tensor(input_name(node, i));
  DEEP500_CHECK(t.dtype() == DataType::Int64 || t.dtype() == DataType::Int32, node.describe(),
                ": position must be int32 or int64, got ", name_of(t.dtype()));
  DEEP500_CHECK(t.numel() == 1, node.describe(), ": position must be a scalar, got shape ",
                to_string(t.shape()));
  int64_t p = t.to_int64_vector()[0];
  DEEP500_CHECK(p >= lo && p <= hi, node.describe(), ": position ", p, " is out of range [", lo,
                ", ", hi, "]");
  return p;
}

void expect_inputs(const NodeSpec& node, const std::vector<Value>& in, size_t lo, size_t hi) {
  DEEP500_CHECK(in.size() >= lo && in.size() <= hi, node.describe(), ": expected ", lo,
                lo == hi ? "" : cat(" to ", hi), " inputs, got ", in.size());
}

Value sequence_construct(const NodeSpec& node, const std::vector<Value>& in) {
  DEEP500_CHECK(!in.empty(), node.describe(), ": expected at least one input tensor");
  std::vector<Tensor> elems;
  for (size_t i = 0; i < in.size(); ++i) {
    elems.push_back(in[i].tensor(input_name(node, i)));
    DEEP500_CHECK(elems.back().dtype() == elems[0].dtype(), node.describe(),
                  ": all inputs must share one element type; input 0 is ",
                  name_of(elems[0].dtype()), ", input ", i, " is ", name_of(elems.back().dtype()));
  }
  return Value::sequence(std::move(elems));
}

Value sequence_insert(const NodeSpec& node, const std::vector<Value>& in) {
  expect_inputs(node, in, 2, 3);
  std::vector<Tensor> seq = in[0].sequence(input_name(node, 0));
  DataType dt = in[0].sequence_elem_type(input_name(node, 0));
  const Tensor& t = in[1].tensor(input_name(node, 1));
  // An empty sequence takes the tensor's type (static types were checked by the checker).
  DEEP500_CHECK(seq.empty() || t.dtype() == dt, node.describe(), ": cannot insert a ",
                name_of(t.dtype()), " tensor into a sequence of ", name_of(dt), " tensors");
  const auto n = static_cast<int64_t>(seq.size());
  int64_t p = present(in, 2) ? position(node, in, 2, -n, n) : n;
  if (p < 0) p += n;
  seq.insert(seq.begin() + p, t);
  return Value::sequence(std::move(seq), t.dtype());
}

Value sequence_at(const NodeSpec& node, const std::vector<Value>& in) {
  expect_inputs(node, in, 2, 2);
  const auto& seq = in[0].sequence(input_name(node, 0));
  const auto n = static_cast<int64_t>(seq.size());
  int64_t p = position(node, in, 1, -n, n - 1);
  return seq[static_cast<size_t>(p < 0 ? p + n : p)];
}

Value sequence_erase(const NodeSpec& node, const std::vector<Value>& in) {
  expect_inputs(node, in, 1, 2);
  std::vector<Tensor> seq = in[0].sequence(input_name(node, 0));
  const auto n = static_cast<int64_t>(seq.size());
  DEEP500_CHECK(n > 0, node.describe(), ": cannot erase from an empty sequence");
  int64_t p = present(in, 1) ? position(node, in, 1, -n, n - 1) : n - 1;
  if (p < 0) p += n;
  seq.erase(seq.begin() + p);
  return Value::sequence(std::move(seq), in[0].sequence_elem_type(""));
}

Value split_to_sequence(const NodeSpec& node, const std::vector<Value>& in) {
  expect_inputs(node, in, 1, 2);
  const Tensor& x = in[0].tensor(input_name(node, 0));
  DEEP500_CHECK(x.rank() >= 1, node.describe(), ": input must have rank >= 1");
  const int64_t axis =
      normalize_axis(node.attributes.get_int("axis", 0), x.rank(), node.describe() + " axis");
  const bool keepdims = node.attributes.get_int("keepdims", 1) != 0;
  const int64_t len = x.dim(axis);
  std::vector<int64_t> sizes;
  bool squeeze = false;
  if (!present(in, 1)) {
    sizes.assign(static_cast<size_t>(len), 1);
    squeeze = !keepdims;
  } else {
    const Tensor& s = in[1].tensor(input_name(node, 1));
    DEEP500_CHECK(s.dtype() == DataType::Int64 || s.dtype() == DataType::Int32, node.describe(),
                  ": split must be int32 or int64, got ", name_of(s.dtype()));
    auto v = s.to_int64_vector();
    if (s.rank() == 0) {
      DEEP500_CHECK(v[0] > 0, node.describe(), ": scalar split must be positive, got ", v[0]);
      for (int64_t left = len; left > 0; left -= v[0]) sizes.push_back(std::min(left, v[0]));
    } else {
      DEEP500_CHECK(s.rank() == 1, node.describe(), ": split must be a scalar or 1-D");
      int64_t sum = 0;
      for (auto k : v) {
        DEEP500_CHECK(k >= 0, node.describe(), ": split sizes must be >= 0, got ", k);
        sum += k;
      }
      DEEP500_CHECK(sum == len, node.describe(), ": split sizes sum to ", sum,
                    " but the axis has length ", len);
      sizes = v;
    }
  }
  const int64_t outer = outer_of(x.shape(), axis), inner = inner_of(x.shape(), axis);
  std::vector<Tensor> parts;
  int64_t start = 0;
  for (int64_t k : sizes) {
    Shape s = x.shape();
    s[axis] = k;
    Tensor p(x.dtype(), s);
    for (int64_t o = 0; o < outer; ++o)
      copy_elements(x, (o * len + start) * inner, p, o * k * inner, k * inner);
    if (squeeze) s.erase(s.begin() + axis);
    parts.push_back(p.view(s));
    start += k;
  }
  return Value::sequence(std::move(parts), x.dtype());
}

Value optional_has_element(const NodeSpec& node, const std::vector<Value>& in) {
  expect_inputs(node, in, 0, 1);
  bool has = false;
  if (present(in, 0)) has = in[0].is_optional() ? in[0].has_element(input_name(node, 0)) : true;
  return Tensor::scalar<bool>(has);
}

Value optional_get_element(const NodeSpec& node, const std::vector<Value>& in) {
  expect_inputs(node, in, 1, 1);
  if (!in[0].is_optional()) return in[0];  // opset 18 allows plain values
  return in[0].element(input_name(node, 0));
}

Value optional(const NodeSpec& node, const std::vector<Value>& in) {
  expect_inputs(node, in, 0, 1);
  if (!present(in, 0)) return Value::empty_optional();
  DEEP500_CHECK(!in[0].is_optional(), node.describe(),
                ": input must be a tensor or a sequence, got ", in[0].describe());
  return Value::optional(in[0]);
}

const std::set<std::string>& value_op_types() {
  static const std::set<std::string> types = {
      "SequenceEmpty", "SequenceConstruct", "SequenceInsert",     "SequenceAt",
      "SequenceErase", "SequenceLength",    "ConcatFromSequence", "SplitToSequence",
      "SequenceMap",   "Optional",          "OptionalHasElement", "OptionalGetElement"};
  return types;
}

}  // namespace

Tensor take_slice(const Tensor& t, int64_t axis, int64_t index) {
  Shape s = t.shape();
  const int64_t outer = outer_of(s, axis), inner = inner_of(s, axis), n = s[axis];
  s.erase(s.begin() + axis);
  Tensor out(t.dtype(), s);
  for (int64_t o = 0; o < outer; ++o)
    copy_elements(t, (o * n + index) * inner, out, o * inner, inner);
  return out;
}

Tensor concat_tensors(const std::vector<Tensor>& parts, int64_t axis, bool new_axis,
                      const std::string& what) {
  DEEP500_CHECK(!parts.empty(), what, ": cannot concatenate an empty sequence");
  const Tensor& first = parts[0];
  const int64_t out_rank = first.rank() + (new_axis ? 1 : 0);
  DEEP500_CHECK(out_rank >= 1, what, ": cannot concatenate scalars without new_axis");
  axis = normalize_axis(axis, out_rank, what + " axis");
  // With new_axis every part is viewed with a 1 inserted at `axis`.
  int64_t total = 0;
  std::vector<Tensor> views;
  for (size_t i = 0; i < parts.size(); ++i) {
    Shape s = parts[i].shape();
    if (new_axis) s.insert(s.begin() + axis, 1);
    DEEP500_CHECK(parts[i].dtype() == first.dtype() && static_cast<int64_t>(s.size()) == out_rank,
                  what, ": element ", i, " (", to_string(parts[i].desc()),
                  ") does not match element 0 (", to_string(first.desc()), ")");
    views.push_back(parts[i].view(s));
    total += s[axis];
  }
  Shape out_shape = views[0].shape();
  out_shape[axis] = total;
  for (size_t i = 0; i < views.size(); ++i)
    for (int64_t d = 0; d < out_rank; ++d)
      DEEP500_CHECK(d == axis || views[i].dim(d) == out_shape[d], what, ": element ", i, " (",
                    to_string(parts[i].desc()), ") does not match element 0 (",
                    to_string(first.desc()), ") outside axis ", axis);
  Tensor out(first.dtype(), out_shape);
  const int64_t outer = outer_of(out_shape, axis), inner = inner_of(out_shape, axis);
  int64_t offset = 0;
  for (const auto& v : views) {
    const int64_t k = v.dim(axis);
    for (int64_t o = 0; o < outer; ++o)
      copy_elements(v, o * k * inner, out, (o * total + offset) * inner, k * inner);
    offset += k;
  }
  return out;
}

bool is_value_op(const NodeSpec& node, const std::vector<Value>& inputs) {
  if (!node.domain.empty()) return false;
  if (value_op_types().count(node.op_type)) return true;
  bool non_tensor = false;
  for (const auto& v : inputs) non_tensor |= !v.is_tensor();
  if (node.op_type == "Identity") return non_tensor;
  return node.op_type == "If" || node.op_type == "Loop" || node.op_type == "Scan";
}

std::vector<Value> run_value_op(const NodeSpec& node, const std::vector<Value>& in,
                                ValueGraphRunner& runner) {
  const std::string& op = node.op_type;
  const std::string& me = node.describe();
  if (op == "If") return run_if(node, in, runner);
  if (op == "Loop") return run_loop(node, in, runner);
  if (op == "Scan") return run_scan(node, in, runner);
  if (op == "SequenceMap") return run_sequence_map(node, in, runner);
  if (op == "Identity") {
    expect_inputs(node, in, 1, 1);
    return {in[0]};
  }
  if (op == "SequenceEmpty") {
    auto dt = static_cast<DataType>(node.attributes.get_int("dtype", 1));
    return {Value::sequence({}, dt)};
  }
  if (op == "SequenceConstruct") return {sequence_construct(node, in)};
  if (op == "SequenceInsert") return {sequence_insert(node, in)};
  if (op == "SequenceAt") return {sequence_at(node, in)};
  if (op == "SequenceErase") return {sequence_erase(node, in)};
  if (op == "SequenceLength") {
    expect_inputs(node, in, 1, 1);
    return {
        Tensor::scalar<int64_t>(static_cast<int64_t>(in[0].sequence(input_name(node, 0)).size()))};
  }
  if (op == "ConcatFromSequence") {
    expect_inputs(node, in, 1, 1);
    return {concat_tensors(in[0].sequence(input_name(node, 0)), node.attributes.get_int("axis"),
                           node.attributes.get_int("new_axis", 0) != 0, me)};
  }
  if (op == "SplitToSequence") return {split_to_sequence(node, in)};
  if (op == "Optional") return {optional(node, in)};
  if (op == "OptionalHasElement") return {optional_has_element(node, in)};
  if (op == "OptionalGetElement") return {optional_get_element(node, in)};
  throw Error(cat(me, ": not a built-in value operator"));
}

}  // namespace deep500::network
