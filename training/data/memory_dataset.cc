#include "training/data/memory_dataset.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "deep/error.h"

namespace deep500::training {
namespace {

template <class F>
decltype(auto) dispatch_numeric_or_bool(DataType t, F&& f, std::string_view what) {
  if (t == DataType::Bool) return f(type_tag<bool>{});
  return dispatch_numeric(t, std::forward<F>(f), what);
}

// Value as double; Half/BFloat16 go through float.
template <class S>
double to_double(S s) {
  if constexpr (std::is_same_v<S, Half> || std::is_same_v<S, BFloat16>) {
    return static_cast<float>(s);
  } else {
    return static_cast<double>(s);
  }
}

template <class D>
D from_double(double v) {
  if constexpr (std::is_same_v<D, Half> || std::is_same_v<D, BFloat16>) {
    return D(static_cast<float>(v));
  } else {
    return static_cast<D>(v);
  }
}

}  // namespace

void convert_elements(const Tensor& src, int64_t src_at, Tensor& dst, int64_t dst_at, int64_t n,
                      double scale) {
  if (src.dtype() == DataType::String && dst.dtype() == DataType::String && scale == 1.0) {
    std::copy_n(src.data<std::string>() + src_at, n, dst.data<std::string>() + dst_at);
    return;
  }
  if (src.dtype() == dst.dtype() && scale == 1.0) {
    const size_t w = size_of(src.dtype());
    std::memcpy(static_cast<unsigned char*>(dst.raw()) + dst_at * w,
                static_cast<const unsigned char*>(src.raw()) + src_at * w, n * w);
    return;
  }
  dispatch_numeric_or_bool(
      src.dtype(),
      [&](auto stag) {
        using S = typename decltype(stag)::type;
        const S* s = static_cast<const S*>(src.raw()) + src_at;
        dispatch_numeric_or_bool(
            dst.dtype(),
            [&](auto dtag) {
              using D = typename decltype(dtag)::type;
              D* d = static_cast<D*>(dst.raw()) + dst_at;
              if constexpr (std::is_same_v<S, uint8_t> && std::is_same_v<D, float>) {
                const float f = static_cast<float>(scale);  // the hot path: pixels
                for (int64_t i = 0; i < n; ++i) d[i] = static_cast<float>(s[i]) * f;
              } else if constexpr (std::is_integral_v<S> && std::is_integral_v<D>) {
                if (scale == 1.0) {  // exact for 64-bit values
                  for (int64_t i = 0; i < n; ++i) d[i] = static_cast<D>(s[i]);
                } else {
                  for (int64_t i = 0; i < n; ++i) d[i] = from_double<D>(to_double(s[i]) * scale);
                }
              } else {
                for (int64_t i = 0; i < n; ++i) d[i] = from_double<D>(to_double(s[i]) * scale);
              }
            },
            "convert_elements (destination)");
      },
      "convert_elements (source)");
}

StoredField conventional_field(const std::string& name, Tensor data, const std::string& origin) {
  DEEP500_CHECK(data.defined() && data.rank() >= 1, origin, ": field '", name,
                "' must have a sample dimension (rank >= 1), got ",
                data.defined() ? to_string(data.desc()) : std::string("an undefined tensor"));
  const DataType t = data.dtype();
  DEEP500_CHECK(is_floating(t) || is_integer(t) || t == DataType::Bool, origin, ": field '", name,
                "' has element type ", name_of(t), " (expected a numeric or bool array)");
  StoredField f{name, std::move(data), t, 1.0};
  if (name == "input") {
    f.dtype = DataType::Float;
    if (t == DataType::UInt8) f.scale = 1.0 / 255.0;
  } else if (name == "label") {
    DEEP500_CHECK(is_integer(t) || t == DataType::Bool, origin,
                  ": field 'label' must hold integer class labels, got ", name_of(t));
    f.dtype = DataType::Int64;
  }
  return f;
}

int64_t max_label(const Tensor& labels) {
  int64_t m = -1;
  const Tensor l = labels.dtype() == DataType::Int64 ? labels : labels.cast(DataType::Int64);
  const int64_t* p = l.data<int64_t>();
  for (int64_t i = 0; i < l.numel(); ++i) m = std::max(m, p[i]);
  return m;
}

void check_labels(const Tensor& labels, int64_t num_classes, const std::string& what) {
  const Tensor l = labels.dtype() == DataType::Int64 ? labels : labels.cast(DataType::Int64);
  const int64_t* p = l.data<int64_t>();
  for (int64_t i = 0; i < l.numel(); ++i) {
    DEEP500_CHECK(p[i] >= 0 && p[i] < num_classes, what, ": label ", p[i], " of sample ", i,
                  " is outside [0, ", num_classes, ")");
  }
}

MemoryDataset::MemoryDataset(std::string description, std::vector<StoredField> fields,
                             int64_t num_classes)
    : description_(std::move(description)), fields_(std::move(fields)) {
  DEEP500_CHECK(!fields_.empty(), description_, ": a dataset needs at least one field");
  for (const StoredField& f : fields_) {
    DEEP500_CHECK(f.data.defined() && f.data.rank() >= 1, description_, ": field '", f.name,
                  "' needs a sample dimension");
    const StoredField& first = fields_.front();
    DEEP500_CHECK(f.data.dim(0) == first.data.dim(0), description_, ": fields '", first.name,
                  "' and '", f.name, "' have different lengths (", first.data.dim(0), " and ",
                  f.data.dim(0), " samples)");
  }
  size_ = fields_.front().data.dim(0);
  num_classes_ = num_classes;
  for (size_t i = 0; i < fields_.size(); ++i)
    if (fields_[i].name == "label") label_index_ = static_cast<int>(i);
  if (label_index_ >= 0) {
    const StoredField* lf = &fields_[label_index_];
    DEEP500_CHECK(lf->data.rank() == 1, description_,
                  ": field 'label' must hold one class per sample (shape [N]), got ",
                  to_string(lf->data.desc()));
    if (num_classes_ < 0) num_classes_ = max_label(lf->data) + 1;
    if (num_classes_ > 0) check_labels(lf->data, num_classes_, description_);
  } else if (num_classes_ < 0) {
    num_classes_ = 0;
  }
}

std::vector<FieldDesc> MemoryDataset::fields() const {
  std::vector<FieldDesc> out;
  for (const StoredField& f : fields_) {
    Shape s(f.data.shape().begin() + 1, f.data.shape().end());
    out.push_back({f.name, f.dtype, std::move(s)});
  }
  return out;
}

void MemoryDataset::fill(int64_t index, Batch& out, int64_t row) const {
  DEEP500_CHECK(index >= 0 && index < size_, description_, ": sample index ", index,
                " is outside [0, ", size_, ")");
  for (const StoredField& f : fields_) {
    auto it = out.find(f.name);
    DEEP500_CHECK(it != out.end(), description_, ": the batch has no field '", f.name, "'");
    Tensor& dst = it->second;
    const int64_t per = size_ == 0 ? 0 : f.data.numel() / size_;
    DEEP500_CHECK(dst.dtype() == f.dtype && dst.rank() >= 1 && row >= 0 && row < dst.dim(0) &&
                      dst.numel() == dst.dim(0) * per,
                  description_, ": batch field '", f.name, "' is ", to_string(dst.desc()),
                  ", cannot take row ", row, " of samples with ", per, " ", name_of(f.dtype),
                  " elements");
    convert_elements(f.data, index * per, dst, row * per, per, f.scale);
  }
}

int64_t MemoryDataset::label(int64_t index) const {
  DEEP500_CHECK(label_index_ >= 0, description_, ": has no 'label' field");
  DEEP500_CHECK(index >= 0 && index < size_, description_, ": sample index ", index,
                " is outside [0, ", size_, ")");
  Tensor one(DataType::Int64, {1});
  convert_elements(fields_[label_index_].data, index, one, 0, 1, 1.0);
  return one.data<int64_t>()[0];
}

namespace {

// TensorDataset's fields, checked: stored as given (rows copied unchanged).
std::vector<StoredField> tensor_fields(const std::map<std::string, Tensor>& fields,
                                       int64_t num_classes, const std::string& name) {
  DEEP500_CHECK(!fields.empty(), name, ": no fields");
  DEEP500_CHECK(num_classes >= 0, name, ": negative class count ", num_classes);
  std::vector<StoredField> out;
  for (const auto& [key, t] : fields) {
    DEEP500_CHECK(t.defined(), name, ": field '", key, "' is undefined");
    DEEP500_CHECK(t.rank() >= 1, name, ": field '", key,
                  "' is a scalar; expected dimension 0 to index the samples");
    out.push_back({key, t, t.dtype(), 1.0});
  }
  if (num_classes > 0) {
    auto it = fields.find("label");
    DEEP500_CHECK(it != fields.end(), name, ": ", num_classes,
                  " classes given but there is no 'label' field");
    DEEP500_CHECK(is_integer(it->second.dtype()) && it->second.rank() == 1, name,
                  ": field 'label' must be a vector of integers (got ",
                  to_string(it->second.desc()), ")");
  }
  return out;
}

}  // namespace

TensorDataset::TensorDataset(std::map<std::string, Tensor> fields, int64_t num_classes,
                             std::string name)
    : MemoryDataset(name, tensor_fields(fields, num_classes, name), num_classes) {}

const Tensor& MemoryDataset::stored(const std::string& field) const {
  for (const StoredField& f : fields_)
    if (f.name == field) return f.data;
  throw Error(cat(description_, ": has no field '", field, "'"));
}

}  // namespace deep500::training
