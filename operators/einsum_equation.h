// An ONNX Einsum equation ("bhqd,bhkd->bhqk", "...ij,...jk", "ii->i")
// resolved against its operands' shapes: which label each dimension of each
// operand carries, the output's labels, and every label's size. The one
// reader of equations for every backend's Einsum (the reference kernel's
// loop, the eigen backend's transposes plus batched GEMM).
//  * Terms are letters with at most one ellipsis ("..."); the ellipsis
//    stands for the operand's remaining dimensions, right-aligned across
//    operands (as NumPy broadcasts them).
//  * A letter repeated in one term is a diagonal; a dimension of size 1
//    whose label is larger elsewhere broadcasts.
//  * Without "->", the output is the ellipsis dimensions, then the letters
//    used once, in alphabetical order.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "deep/shape.h"

namespace deep500::ops {

// Label ids: a letter's character code; ellipsis dimension j (counted from
// the widest ellipsis' left) is kEllipsisLabel + j.
inline constexpr int kEllipsisLabel = 128;

struct EinsumLabels {
  std::vector<std::vector<int>> terms;  // per operand, the label of each dimension
  std::vector<int> output;              // the output's labels, in order
  std::map<int, int64_t> sizes;         // every label's size (the largest, broadcasting 1s)
  Shape output_shape() const;
};

class EinsumEquation {
 public:
  // Parses the equation of a node with `operands` inputs; Error naming
  // `node` when it is malformed or its term count differs.
  EinsumEquation(const std::string& equation, size_t operands, const std::string& node);

  // The labels of operands of these shapes; Error naming the node for a
  // term whose letters exceed its operand's rank, sizes that disagree (other
  // than 1), or an output label no input has.
  EinsumLabels resolve(const std::vector<Shape>& shapes) const;

  const std::vector<std::string>& terms() const { return terms_; }

 private:
  std::vector<int> parse_term(const std::string& term, int64_t rank, const std::string& what,
                              int64_t& ellipsis) const;

  std::string node_, equation_, rhs_;
  std::vector<std::string> terms_;
  bool explicit_ = false;
};

// "a" for a letter, "...#j" for an ellipsis dimension.
std::string einsum_label_name(int label);

}  // namespace deep500::ops
