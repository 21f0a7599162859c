// Tensors to and from NumPy arrays (see numpy_tensor.h).
#include "python/bindings/numpy_tensor.h"

#include <cstring>

#include "deep/error.h"

namespace py = pybind11;

namespace deep500::python {
namespace {

// The element types NumPy has; their names (deep/dtype.h's name_of) are
// NumPy's too.
constexpr DataType kNumpyTypes[] = {DataType::Float,  DataType::Double, DataType::Float16,
                                    DataType::Int8,   DataType::Int16,  DataType::Int32,
                                    DataType::Int64,  DataType::UInt8,  DataType::UInt16,
                                    DataType::UInt32, DataType::UInt64, DataType::Bool};

// NumPy's name of `t`; "" when NumPy lacks it.
std::string numpy_name(DataType t) {
  for (DataType n : kNumpyTypes)
    if (n == t) return std::string(name_of(t));
  return "";
}

DataType data_type_of(const py::dtype& d, const std::string& where) {
  for (DataType t : kNumpyTypes)
    if (d.is(py::dtype(numpy_name(t)))) return t;
  throw Error(cat(where, ": NumPy dtype ", d.attr("name").cast<std::string>(),
                  " has no deep500 element type (float16/32/64, int8-64, uint8-64, bool, str)"));
}

Shape shape_of(const py::array& a) {
  Shape s;
  for (py::ssize_t i = 0; i < a.ndim(); ++i) s.push_back(static_cast<int64_t>(a.shape(i)));
  return s;
}

py::object strings_to_numpy(const Tensor& t) {
  py::list items;
  const std::string* s = t.data<std::string>();
  for (int64_t i = 0; i < t.numel(); ++i) items.append(py::str(s[i]));
  py::module_ np = py::module_::import("numpy");
  py::tuple shape(t.shape().size());
  for (size_t i = 0; i < t.shape().size(); ++i) shape[i] = t.shape()[i];
  return np.attr("array")(items, py::arg("dtype") = "object").attr("reshape")(shape);
}

Tensor strings_from_numpy(const py::array& a, const std::string& where) {
  Tensor t(DataType::String, shape_of(a));
  std::string* out = t.data<std::string>();
  py::list flat = a.attr("ravel")().attr("tolist")();
  for (size_t i = 0; i < flat.size(); ++i) {
    DEEP500_CHECK(py::isinstance<py::str>(flat[i]), where, ": element ", i,
                  " of an object array is not a str");
    out[i] = flat[i].cast<std::string>();
  }
  return t;
}

}  // namespace

py::object to_numpy(const Tensor& t) {
  if (!t.defined()) return py::none();
  if (t.dtype() == DataType::String) return strings_to_numpy(t);
  if (t.dtype() == DataType::BFloat16) return to_numpy(t.cast(DataType::Float));
  const std::string name = numpy_name(t.dtype());
  DEEP500_CHECK(!name.empty(), "deep500 element type ", name_of(t.dtype()), " has no NumPy dtype");
  auto* kept = new Tensor(t.borrowed() ? t.clone() : t);
  py::capsule owner(kept, [](void* p) { delete static_cast<Tensor*>(p); });
  std::vector<py::ssize_t> shape, strides(t.shape().size());
  for (int64_t d : t.shape()) shape.push_back(static_cast<py::ssize_t>(d));
  py::ssize_t stride = static_cast<py::ssize_t>(size_of(t.dtype()));
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return py::array(py::dtype(name), shape, strides, kept->raw(), owner);
}

py::dict to_numpy(const std::map<std::string, Tensor>& tensors) {
  py::dict out;
  for (const auto& [name, t] : tensors) out[py::str(name)] = to_numpy(t);
  return out;
}

py::list to_numpy(const std::vector<Tensor>& tensors) {
  py::list out;
  for (const Tensor& t : tensors) out.append(to_numpy(t));
  return out;
}

Tensor Borrowed::add(const py::handle& value, const std::string& where) {
  if (value.is_none()) return {};
  py::array a = py::array::ensure(value);
  DEEP500_CHECK(a, where, ": expected a NumPy array (or a number or list), got ",
                std::string(py::str(py::type::of(value))));
  if (a.dtype().kind() == 'O' || a.dtype().kind() == 'U') {
    if (a.dtype().kind() == 'U') a = a.attr("astype")("object");
    return strings_from_numpy(a, where);
  }
  const DataType type = data_type_of(a.dtype(), where);
  if (!(a.flags() & py::array::c_style))
    a = py::module_::import("numpy").attr("ascontiguousarray")(a);
  owners.push_back(a);
  Tensor t = Tensor::borrow(type, shape_of(a), a.data());
  tensors.push_back(t);
  return t;
}

std::vector<Tensor> borrow_list(Borrowed& keep, const py::sequence& values,
                                const std::string& where) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < values.size(); ++i) out.push_back(keep.add(values[i], cat(where, " ", i)));
  return out;
}

std::map<std::string, Tensor> borrow_dict(Borrowed& keep, const py::dict& values,
                                          const std::string& where) {
  std::map<std::string, Tensor> out;
  for (auto [key, value] : values) {
    const std::string name = py::str(key);
    out[name] = keep.add(value, cat(where, " '", name, "'"));
  }
  return out;
}

}  // namespace deep500::python
