#include "training/data/synthetic_dataset.h"

#include "deep/error.h"
#include "deep/random.h"

namespace deep500::training {
namespace {

uint64_t mix64(uint64_t z) {  // splitmix64 finaliser
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::string shape_text(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

}  // namespace

SyntheticDataset::SyntheticDataset(int64_t size, Shape input_shape, int64_t num_classes,
                                   uint64_t seed)
    : size_(size), input_shape_(std::move(input_shape)), num_classes_(num_classes), seed_(seed) {
  DEEP500_CHECK(size_ >= 0, "SyntheticDataset: size must be >= 0, got ", size_);
  DEEP500_CHECK(num_classes_ >= 1, "SyntheticDataset: num_classes must be >= 1, got ",
                num_classes_);
  for (int64_t d : input_shape_) {
    DEEP500_CHECK(d >= 1, "SyntheticDataset: input shape ", shape_text(input_shape_),
                  " must have positive dimensions");
    input_numel_ *= d;
  }
}

std::string SyntheticDataset::describe() const {
  return cat("synthetic (", size_, " samples of float32", shape_text(input_shape_), ", ",
             num_classes_, " classes, seed ", seed_, ")");
}

std::vector<FieldDesc> SyntheticDataset::fields() const {
  return {{"input", DataType::Float, input_shape_}, {"label", DataType::Int64, {}}};
}

uint64_t SyntheticDataset::sample_seed(int64_t index) const {
  // Hash of (seed, index): neighbouring seeds/indices give unrelated streams.
  return mix64(mix64(seed_ + 0x9E3779B97F4A7C15ull) ^ static_cast<uint64_t>(index));
}

int64_t SyntheticDataset::label(int64_t index) const {
  DEEP500_CHECK(index >= 0 && index < size_, describe(), ": sample index ", index,
                " is outside [0, ", size_, ")");
  Random r(sample_seed(index));
  return static_cast<int64_t>(r.next_u64() % static_cast<uint64_t>(num_classes_));
}

void SyntheticDataset::fill(int64_t index, Batch& out, int64_t row) const {
  DEEP500_CHECK(index >= 0 && index < size_, describe(), ": sample index ", index,
                " is outside [0, ", size_, ")");
  auto in = out.find("input");
  auto lb = out.find("label");
  DEEP500_CHECK(in != out.end() && lb != out.end(), describe(),
                ": the batch needs fields 'input' and 'label'");
  DEEP500_CHECK(in->second.dtype() == DataType::Float && in->second.rank() >= 1 && row >= 0 &&
                    row < in->second.dim(0) &&
                    in->second.numel() == in->second.dim(0) * input_numel_,
                describe(), ": batch field 'input' is ", to_string(in->second.desc()),
                ", cannot take row ", row);
  DEEP500_CHECK(lb->second.dtype() == DataType::Int64 && lb->second.numel() > row, describe(),
                ": batch field 'label' is ", to_string(lb->second.desc()), ", cannot take row ",
                row);
  Random r(sample_seed(index));  // the label first: label() reads only that
  lb->second.data<int64_t>()[row] =
      static_cast<int64_t>(r.next_u64() % static_cast<uint64_t>(num_classes_));
  float* x = in->second.data<float>() + row * input_numel_;
  for (int64_t i = 0; i < input_numel_; ++i)
    x[i] = static_cast<float>(static_cast<double>(r.next_u64() >> 40) * 0x1.0p-24);
}

}  // namespace deep500::training
