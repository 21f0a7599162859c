// Shapes, strides and broadcasting (NumPy / ONNX multidirectional rules).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace deep500 {

using Shape = std::vector<int64_t>;

int64_t numel(const Shape& s);
// Product of the dims s[from, to) (1 when empty): the outer or inner size
// around an axis.
int64_t dims_product(const Shape& s, int64_t from, int64_t to);
std::string to_string(const Shape& s);     // "[2,3,4]"
Shape contiguous_strides(const Shape& s);  // in elements, row-major
// Normalizes a possibly negative axis into [0, rank); throws naming `what`.
int64_t normalize_axis(int64_t axis, int64_t rank, const std::string& what = "axis");

// Multidirectional broadcast of two or more shapes; throws Error naming both
// shapes when they are incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b);
Shape broadcast_shapes(const std::vector<Shape>& shapes);

// The shape of tensors of `shapes` concatenated along `axis` (in [0, rank))
// into `out`; "" or why they cannot be (ranks, or a dim other than the
// axis, differ: "input I has shape S, incompatible with input 0 shape S0
// for concatenation along axis A").
std::string concat_shape(const std::vector<Shape>& shapes, int64_t axis, Shape& out);

// Strides (in elements) that read `from` as if it had shape `to` (0 on
// broadcast dimensions). `to` must be a broadcast of `from`.
Shape broadcast_strides(const Shape& from, const Shape& to);

// Iterates a row-major index over `shape`, keeping one linear offset per
// operand in step (for broadcasting element-wise loops).
class MultiIndex {
 public:
  MultiIndex(Shape shape, std::vector<Shape> operand_strides);
  bool done() const { return done_; }
  int64_t offset(size_t operand) const { return offsets_[operand]; }
  void next();

 private:
  Shape shape_;
  std::vector<Shape> strides_;
  Shape index_;
  std::vector<int64_t> offsets_;
  bool done_;
};

}  // namespace deep500
