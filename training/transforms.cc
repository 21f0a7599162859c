#include "training/transforms.h"

#include <algorithm>
#include <cmath>

#include "deep/error.h"
#include "deep/text.h"
#include "training/standard_samplers.h"

namespace deep500::training {

namespace {

struct Images {
  Tensor* t;
  int64_t n, c, h, w;
  float* at(int64_t i, int64_t ch) { return t->data<float>() + ((i * c + ch) * h) * w; }
};

// The "input" field as [N, C, H, W] (rank 3 is read as C = 1).
Images images(Batch& b, const std::string& who) {
  auto it = b.find("input");
  DEEP500_CHECK(it != b.end(), who, ": the batch has no 'input' field");
  Tensor& t = it->second;
  DEEP500_CHECK(t.dtype() == DataType::Float, who, ": 'input' must be float32 (got ",
                to_string(t.desc()), ")");
  DEEP500_CHECK(t.rank() == 3 || t.rank() == 4, who,
                ": 'input' must be images [N, C, H, W] or [N, H, W] (got ", to_string(t.desc()),
                ")");
  if (t.rank() == 3) return {&t, t.dim(0), 1, t.dim(1), t.dim(2)};
  return {&t, t.dim(0), t.dim(1), t.dim(2), t.dim(3)};
}

}  // namespace

// ---------------------------------------------------------------- RandomCrop

RandomCrop::RandomCrop(int64_t size, int64_t padding) : size_(size), padding_(padding) {
  DEEP500_CHECK(size >= 1 && padding >= 0, describe(), ": size must be >= 1 and padding >= 0");
}

std::string RandomCrop::describe() const {
  return cat("RandomCrop(size=", size_, ", padding=", padding_, ")");
}

void RandomCrop::apply(Batch& batch, Random& rng) const {
  Images in = images(batch, describe());
  const int64_t ph = in.h + 2 * padding_, pw = in.w + 2 * padding_;
  DEEP500_CHECK(ph >= size_ && pw >= size_, describe(), ": padded image ", ph, "x", pw,
                " is smaller than the crop");
  Shape shape = in.t->shape();
  shape[shape.size() - 2] = size_;
  shape[shape.size() - 1] = size_;
  Tensor out_t(DataType::Float, shape);  // zeros: the padding
  Images out{&out_t, in.n, in.c, size_, size_};
  for (int64_t i = 0; i < in.n; ++i) {
    // Window origin in padded coordinates, then shifted to input coordinates.
    const int64_t top =
        static_cast<int64_t>(uniform_index(rng, static_cast<uint64_t>(ph - size_ + 1))) - padding_;
    const int64_t left =
        static_cast<int64_t>(uniform_index(rng, static_cast<uint64_t>(pw - size_ + 1))) - padding_;
    for (int64_t ch = 0; ch < in.c; ++ch) {
      const float* src = in.at(i, ch);
      float* dst = out.at(i, ch);
      for (int64_t y = 0; y < size_; ++y) {
        const int64_t sy = top + y;
        if (sy < 0 || sy >= in.h) continue;
        for (int64_t x = 0; x < size_; ++x) {
          const int64_t sx = left + x;
          if (sx >= 0 && sx < in.w) dst[y * size_ + x] = src[sy * in.w + sx];
        }
      }
    }
  }
  *in.t = out_t;
}

// ------------------------------------------------------------ HorizontalFlip

HorizontalFlip::HorizontalFlip(double p) : p_(p) {
  DEEP500_CHECK(p >= 0 && p <= 1, describe(), ": p must be in [0, 1]");
}

std::string HorizontalFlip::describe() const {
  return cat("HorizontalFlip(p=", p_, ")");
}

void HorizontalFlip::apply(Batch& batch, Random& rng) const {
  Images im = images(batch, describe());
  for (int64_t i = 0; i < im.n; ++i) {
    if (!(rng.uniform() < p_)) continue;
    for (int64_t ch = 0; ch < im.c; ++ch) {
      float* p = im.at(i, ch);
      for (int64_t y = 0; y < im.h; ++y) std::reverse(p + y * im.w, p + (y + 1) * im.w);
    }
  }
}

// ----------------------------------------------------------------- Normalize

Normalize::Normalize(std::vector<float> mean, std::vector<float> std)
    : mean_(std::move(mean)), std_(std::move(std)) {
  DEEP500_CHECK(!mean_.empty() && mean_.size() == std_.size(),
                "Normalize: mean and std need one value per channel (got ", mean_.size(), " and ",
                std_.size(), ")");
  for (size_t c = 0; c < std_.size(); ++c) {
    DEEP500_CHECK(std::isfinite(std_[c]) && std_[c] > 0 && std::isfinite(mean_[c]),
                  "Normalize: channel ", c, " has mean ", mean_[c], " and std ", std_[c],
                  " (expected finite values, std > 0)");
  }
}

std::string Normalize::describe() const {
  return cat("Normalize(", mean_.size(), " channels)");
}

void Normalize::apply(Batch& batch, Random&) const {
  Images im = images(batch, describe());
  DEEP500_CHECK(im.c == static_cast<int64_t>(mean_.size()), describe(), ": 'input' has ", im.c,
                " channels (", to_string(im.t->desc()), "), expected ", mean_.size());
  for (int64_t i = 0; i < im.n; ++i) {
    for (int64_t ch = 0; ch < im.c; ++ch) {
      float* p = im.at(i, ch);
      const float m = mean_[static_cast<size_t>(ch)], s = std_[static_cast<size_t>(ch)];
      for (int64_t k = 0; k < im.h * im.w; ++k) p[k] = (p[k] - m) / s;
    }
  }
}

// -------------------------------------------------------------------- Cutout

Cutout::Cutout(int64_t size) : size_(size) {
  DEEP500_CHECK(size >= 1, describe(), ": size must be >= 1");
}

std::string Cutout::describe() const {
  return cat("Cutout(size=", size_, ")");
}

void Cutout::apply(Batch& batch, Random& rng) const {
  Images im = images(batch, describe());
  DEEP500_CHECK(size_ <= im.h && size_ <= im.w, describe(), ": images are ", im.h, "x", im.w,
                ", smaller than the cut-out square");
  for (int64_t i = 0; i < im.n; ++i) {
    const int64_t top =
        static_cast<int64_t>(uniform_index(rng, static_cast<uint64_t>(im.h - size_ + 1)));
    const int64_t left =
        static_cast<int64_t>(uniform_index(rng, static_cast<uint64_t>(im.w - size_ + 1)));
    for (int64_t ch = 0; ch < im.c; ++ch) {
      float* p = im.at(i, ch);
      for (int64_t y = top; y < top + size_; ++y) {
        std::fill(p + y * im.w + left, p + y * im.w + left + size_, 0.0f);
      }
    }
  }
}

std::vector<TransformPtr> parse_transforms(const std::vector<std::string>& texts,
                                           const std::string& what) {
  std::vector<TransformPtr> out;
  for (const auto& text : texts) {
    if (text.empty()) continue;
    const auto p = split(text, ':');
    auto number = [&](size_t i) {
      double v = 0;
      DEEP500_CHECK(parse_float(p.at(i), v), what, " ", text, ": expected a number, got '", p[i],
                    "'");
      return v;
    };
    if (p[0] == "flip" && p.size() <= 2) {
      out.push_back(std::make_shared<HorizontalFlip>(p.size() == 2 ? number(1) : 0.5));
    } else if (p[0] == "crop" && p.size() == 3) {
      out.push_back(std::make_shared<RandomCrop>(static_cast<int64_t>(number(1)),
                                                 static_cast<int64_t>(number(2))));
    } else if (p[0] == "cutout" && p.size() == 2) {
      out.push_back(std::make_shared<Cutout>(static_cast<int64_t>(number(1))));
    } else {
      throw Error(cat(what, " ", text, ": expected flip[:P], crop:SIZE:PAD or cutout:SIZE"));
    }
  }
  return out;
}

}  // namespace deep500::training
