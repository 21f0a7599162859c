// SubsetDataset: the first `n` samples of another dataset (`--subset N`, a
// recipe's `subset:`), for quick runs. The other dataset must outlive it.
#pragma once

#include <algorithm>

#include "deep/error.h"
#include "training/dataset.h"

namespace deep500::training {

class SubsetDataset : public Dataset {
 public:
  SubsetDataset(const Dataset& d, int64_t n) : d_(d), n_(std::min(n, d.size())) {}
  std::string describe() const override { return cat(d_.describe(), " (first ", n_, " samples)"); }
  int64_t size() const override { return n_; }
  std::vector<FieldDesc> fields() const override { return d_.fields(); }
  int64_t num_classes() const override { return d_.num_classes(); }
  void fill(int64_t index, Batch& out, int64_t row) const override { d_.fill(index, out, row); }
  int64_t label(int64_t index) const override { return d_.label(index); }

 private:
  const Dataset& d_;
  int64_t n_;
};

}  // namespace deep500::training
