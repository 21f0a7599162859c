// Tensor generators: Constant, ConstantOfShape, EyeLike, Range.
#include <cmath>

#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/families.h"

namespace deep500::reference {
namespace {

class ConstantOp final : public Operator {
 public:
  explicit ConstantOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() == 0, node_, ": expected no inputs, got ", ctx.num_inputs());
    const auto& a = ctx.node.attributes;
    int found = 0;
    for (const auto& [name, attr] : a.all()) {
      if (name == "value") {
        value_ = a.get_tensor(name);
      } else if (name == "value_float") {
        value_ = Tensor::scalar<float>(a.get_float(name));
      } else if (name == "value_floats") {
        auto v = a.get_floats(name, {});
        value_ = Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v);
      } else if (name == "value_int") {
        value_ = Tensor::scalar<int64_t>(a.get_int(name));
      } else if (name == "value_ints") {
        auto v = a.get_ints(name);
        value_ = Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
      } else if (name == "value_string") {
        value_ = Tensor::scalar<std::string>(a.get_string(name));
      } else if (name == "value_strings") {
        auto v = a.get_strings(name, {});
        value_ = Tensor::from_vector<std::string>({static_cast<int64_t>(v.size())}, v);
      } else if (name == "sparse_value") {
        throw Error(cat(node_, ": attribute 'sparse_value' (sparse tensors) is not supported"));
      } else {
        continue;
      }
      ++found;
    }
    DEEP500_CHECK(found == 1, node_,
                  ": expected exactly one of the attributes value, "
                  "value_float(s), value_int(s), value_string(s), got ",
                  found);
    DEEP500_CHECK(value_.defined(), node_, ": attribute 'value' holds no tensor");
  }
  void forward(std::span<const Tensor>, std::span<Tensor> out) override {
    ops::ensure_output(out, 0, value_.dtype(), value_.shape()).copy_from(value_);
  }

 private:
  std::string node_;
  Tensor value_;
};

// Reads a 1-D int64 shape input and checks that every dimension is >= 0.
Shape shape_input(const Tensor& t, const std::string& node) {
  DEEP500_CHECK(t.dtype() == DataType::Int64, node, ": input 'shape' must be int64, got ",
                name_of(t.dtype()));
  DEEP500_CHECK(t.rank() == 1, node, ": input 'shape' must be 1-D, got shape ",
                to_string(t.shape()));
  Shape s = t.to_int64_vector();
  for (int64_t d : s)
    DEEP500_CHECK(d >= 0, node, ": negative dimension ", d, " in shape ", to_string(s));
  return s;
}

class ConstantOfShapeOp final : public Operator {
 public:
  explicit ConstantOfShapeOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() == 1 && ctx.has_input(0), node_,
                  ": expected 1 input (shape), got ", ctx.num_inputs());
    if (ctx.node.attributes.has("value")) {
      value_ = ctx.node.attributes.get_tensor("value");
      DEEP500_CHECK(value_.numel() == 1, node_,
                    ": attribute 'value' must hold one element, got "
                    "shape ",
                    to_string(value_.shape()));
    } else {
      value_ = Tensor::scalar<float>(0.0f);
    }
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Tensor& y = ops::ensure_output(out, 0, value_.dtype(), shape_input(in[0], node_));
    dispatch_all(
        value_.dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T v = value_.data<T>()[0];
          T* p = y.data<T>();
          for (int64_t i = 0; i < y.numel(); ++i) p[i] = v;
        },
        node_);
  }

 private:
  std::string node_;
  Tensor value_;
};

class EyeLikeOp final : public Operator {
 public:
  explicit EyeLikeOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() == 1 && ctx.has_input(0), node_, ": expected 1 input, got ",
                  ctx.num_inputs());
    const auto& a = ctx.node.attributes;
    dtype_ = a.has("dtype") ? static_cast<DataType>(a.get_int("dtype")) : ctx.inputs[0].dtype;
    k_ = a.get_int("k", 0);
    DEEP500_CHECK(dtype_ != DataType::String && dtype_ != DataType::Undefined, node_,
                  ": unsupported output type ", name_of(dtype_));
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    DEEP500_CHECK(in[0].rank() == 2, node_, ": input must be 2-D, got shape ",
                  to_string(in[0].shape()));
    const int64_t rows = in[0].dim(0), cols = in[0].dim(1);
    Tensor& y = ops::ensure_output(out, 0, dtype_, in[0].shape());
    dispatch_all(
        dtype_,
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          if constexpr (!std::is_same_v<T, std::string>) {
            T* p = y.data<T>();
            for (int64_t i = 0; i < rows; ++i)
              for (int64_t j = 0; j < cols; ++j) p[i * cols + j] = T(j - i == k_ ? 1.0f : 0.0f);
          }
        },
        node_);
  }

 private:
  std::string node_;
  DataType dtype_;
  int64_t k_;
};

class RangeOp final : public Operator {
 public:
  // max(ceil((limit - start) / delta), 0): exact for integers over their
  // full range (128-bit), an Error when a float length is not finite or
  // beyond any tensor.
  template <typename T>
  int64_t range_length(T start, T limit, T delta) const {
    constexpr double kMaxLength = 9.0e18;  // below INT64_MAX, so the cast is defined
    if constexpr (std::is_integral_v<T>) {
      __int128 span = static_cast<__int128>(limit) - static_cast<__int128>(start);
      __int128 d = static_cast<__int128>(delta);
      __int128 n = span / d + ((span % d != 0 && ((span < 0) == (d < 0))) ? 1 : 0);
      DEEP500_CHECK(n <= static_cast<__int128>(kMaxLength), node_,
                    ": range of more than 9e18 elements");
      return static_cast<int64_t>(std::max<__int128>(n, 0));
    } else {
      double q = std::ceil((static_cast<double>(limit) - static_cast<double>(start)) /
                           static_cast<double>(delta));
      DEEP500_CHECK(std::isfinite(q), node_, ": range length is not finite");
      DEEP500_CHECK(q <= kMaxLength, node_, ": range of ", q, " elements");
      return static_cast<int64_t>(std::max(q, 0.0));
    }
  }

  explicit RangeOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() == 3, node_, ": expected 3 inputs (start, limit, delta), got ",
                  ctx.num_inputs());
    for (size_t i = 0; i < 3; ++i)
      DEEP500_CHECK(ctx.inputs[i].dtype == ctx.inputs[0].dtype, node_,
                    ": start, limit and delta must have the same type, got ",
                    name_of(ctx.inputs[0].dtype), ", ", name_of(ctx.inputs[1].dtype), ", ",
                    name_of(ctx.inputs[2].dtype));
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    for (size_t i = 0; i < 3; ++i)
      DEEP500_CHECK(in[i].numel() == 1, node_, ": input ", i, " must be a scalar, got shape ",
                    to_string(in[i].shape()));
    dispatch_numeric(
        in[0].dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T start = in[0].data<T>()[0], limit = in[1].data<T>()[0],
                  delta = in[2].data<T>()[0];
          DEEP500_CHECK(static_cast<double>(delta) != 0.0, node_, ": delta must not be zero");
          int64_t n = range_length(start, limit, delta);
          Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), {n});
          T* p = y.data<T>();
          for (int64_t i = 0; i < n; ++i) {
            if constexpr (std::is_integral_v<T>)  // exact; every value lies in [start, limit]
              p[i] =
                  static_cast<T>(static_cast<__int128>(start) + static_cast<__int128>(i) * delta);
            else
              p[i] = T(static_cast<double>(start) +
                       static_cast<double>(i) * static_cast<double>(delta));
          }
        },
        node_);
  }

 private:
  std::string node_;
};

}  // namespace

void register_constant(Registry& r) {
  add_kernel<ConstantOp>(r, "Constant");
  add_kernel<ConstantOfShapeOp>(r, "ConstantOfShape");
  add_kernel<EyeLikeOp>(r, "EyeLike");
  add_kernel<RangeOp>(r, "Range");
}

}  // namespace deep500::reference
