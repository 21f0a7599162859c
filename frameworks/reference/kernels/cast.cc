// Element type conversion: Cast, CastLike (+ backward between float types).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/families.h"

namespace deep500::reference {
namespace {

// Shortest decimal text that reads back as the same value of type T (as
// NumPy prints float32/float64); NaN and infinities as ONNX writes them.
template <class T>
std::string number_to_string(T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "1" : "0";
  } else if constexpr (std::is_integral_v<T>) {
    return std::to_string(v);
  } else {
    const double d = static_cast<double>(v);
    if (std::isnan(d)) return "NaN";
    if (std::isinf(d)) return d > 0 ? "INF" : "-INF";
    char buf[64];
    for (int p = 1; p <= 17; ++p) {
      std::snprintf(buf, sizeof buf, "%.*g", p, d);
      if constexpr (std::is_same_v<T, double>) {
        if (std::strtod(buf, nullptr) == d) break;
      } else {
        if (static_cast<double>(T(std::strtof(buf, nullptr))) == d) break;
      }
    }
    return buf;
  }
}

// Parses text as T; strtod accepts "NaN", "INF", "+INF", "-inf", exponents.
template <class T>
T string_to_number(const std::string& s, const std::string& node) {
  const char* b = s.c_str();
  char* e = nullptr;
  T v;
  if constexpr (std::is_same_v<T, bool>) {
    v = !(s.empty() || s == "0" || s == "false" || s == "False" || s == "FALSE");
    e = const_cast<char*>(b) + s.size();
  } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    v = static_cast<T>(std::strtoll(b, &e, 10));
  } else if constexpr (std::is_integral_v<T>) {
    v = static_cast<T>(std::strtoull(b, &e, 10));
  } else if constexpr (std::is_same_v<T, double>) {
    v = std::strtod(b, &e);
  } else {
    v = T(std::strtof(b, &e));
  }
  DEEP500_CHECK(e != b || s.empty(), node, ": cannot convert string \"", s, "\" to a number");
  return v;
}

// Numeric -> numeric goes through Tensor::cast; string conversions are done
// here so that doubles keep full precision and text matches NumPy's.
Tensor convert(const Tensor& x, DataType to, const std::string& node) {
  if (x.dtype() == to) return x.clone();
  if (x.dtype() != DataType::String && to != DataType::String) {
    if (x.dtype() == DataType::Double && to == DataType::Float16) {
      // Round once, straight from double: an inexact double->float step rounds
      // to odd, which makes the following float->half rounding exact.
      Tensor y(to, x.shape());
      const double* px = x.data<double>();
      Half* py = y.data<Half>();
      for (int64_t i = 0; i < x.numel(); ++i) {
        float f = static_cast<float>(px[i]);
        if (std::isfinite(f) && static_cast<double>(f) != px[i]) {
          if (std::fabs(static_cast<double>(f)) > std::fabs(px[i])) f = std::nextafter(f, 0.0f);
          uint32_t u;
          std::memcpy(&u, &f, 4);
          u |= 1u;
          std::memcpy(&f, &u, 4);
        }
        py[i] = Half(f);
      }
      return y;
    }
    return x.cast(to);
  }
  Tensor y(to, x.shape());
  if (x.dtype() == DataType::String) {
    const std::string* px = x.data<std::string>();
    dispatch_all(
        to,
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          if constexpr (!std::is_same_v<T, std::string>) {
            T* py = y.data<T>();
            for (int64_t i = 0; i < x.numel(); ++i) py[i] = string_to_number<T>(px[i], node);
          }
        },
        node);
  } else {
    std::string* py = y.data<std::string>();
    dispatch_all(
        x.dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          if constexpr (!std::is_same_v<T, std::string>) {
            const T* px = x.data<T>();
            for (int64_t i = 0; i < x.numel(); ++i) py[i] = number_to_string<T>(px[i]);
          }
        },
        node);
  }
  return y;
}

class CastOp final : public Operator {
 public:
  CastOp(const OpContext& ctx, bool like) : node_(ctx.node.describe()) {
    const size_t want = like ? 2 : 1;
    DEEP500_CHECK(ctx.num_inputs() == want && ctx.has_input(0), node_, ": expected ", want,
                  " input(s), got ", ctx.num_inputs());
    if (like) {
      to_ = ctx.inputs[1].dtype;
    } else if (ctx.node.opset < 6 && ctx.node.attributes.has("to") &&
               ctx.node.attributes.all().at("to").kind == ops::Attribute::Kind::String) {
      to_ = parse_dtype(ctx.node.attributes.get_string("to"), node_ + ": attribute 'to'");
    } else {
      to_ = static_cast<DataType>(ctx.node.attributes.get_int("to"));
    }
    DEEP500_CHECK(to_ != DataType::Undefined && (to_ == DataType::String || size_of(to_) > 0),
                  node_, ": unsupported target type ", static_cast<int>(to_));
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Tensor y = convert(in[0], to_, node_);
    if (out[0].defined() && out[0].desc() == y.desc())
      out[0].copy_from(y);
    else
      out[0] = y;
  }
  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    std::vector<bool> d(n, false);
    d[0] = true;
    return d;
  }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    DEEP500_CHECK(is_floating(in[0].dtype()) && is_floating(to_), node_,
                  ": gradient is defined only between floating-point types, got ",
                  name_of(in[0].dtype()), " -> ", name_of(to_));
    gx[0] = gy[0].defined() ? gy[0].cast(in[0].dtype()) : Tensor(in[0].dtype(), in[0].shape());
  }

 private:
  std::string node_;
  DataType to_ = DataType::Undefined;
};

}  // namespace

void register_cast(Registry& r) {
  r.add({"", "Cast", 1, INT_MAX, "reference", "reference:Cast", ops::make_factory<CastOp>(false)});
  r.add({"", "CastLike", 15, INT_MAX, "reference", "reference:CastLike",
         ops::make_factory<CastOp>(true)});
}

}  // namespace deep500::reference
