// Datasets written in Python (see python_dataset.h).
#include "python/bindings/python_dataset.h"

#include <cstring>
#include <type_traits>

#include "deep/error.h"
#include "python/bindings/bindings.h"
#include "python/bindings/numpy_tensor.h"

namespace py = pybind11;

namespace deep500::python {
namespace {

class PythonDataset : public training::Dataset {
 public:
  static constexpr int64_t kMaxClasses = int64_t{1} << 24;
  PythonDataset(py::object source, const std::string& role) : source_(std::move(source)) {
    name_ = py::hasattr(source_, "describe")
                ? py::str(source_.attr("describe")()).cast<std::string>()
                : cat("Python dataset ",
                      py::str(py::type::of(source_).attr("__name__")).cast<std::string>(), " (",
                      role, ")");
    size_ = call([&] { return py::len(source_); });
    DEEP500_CHECK(size_ > 0, name_, ": has no samples");
    if (py::hasattr(source_, "num_classes")) {
      classes_ = call([&] { return source_.attr("num_classes").cast<int64_t>(); });
      DEEP500_CHECK(classes_ >= 0 && classes_ <= kMaxClasses, name_, ": num_classes is ", classes_,
                    ", expected 0..", kMaxClasses);
    }
    const py::dict first = sample(0);
    for (auto [key, value] : first) {
      Borrowed keep;
      const std::string field = py::str(key).cast<std::string>();
      const Tensor t = keep.add(value, cat(name_, ": sample 0 field ", field));
      // Copied into batches as bytes: text has none to copy (a str label
      // used to corrupt the heap).
      DEEP500_CHECK(t.dtype() != DataType::String, name_, ": sample 0 field '", field,
                    "' is text; fields are numbers or numeric arrays (a label is an integer)");
      fields_.push_back({field, t.dtype(), t.shape()});
    }
    DEEP500_CHECK(!fields_.empty(), name_, ": sample 0 has no fields");
  }
  ~PythonDataset() override {
    py::gil_scoped_acquire gil;
    source_ = py::object();
  }

  std::string describe() const override { return name_; }
  int64_t size() const override { return size_; }
  std::vector<training::FieldDesc> fields() const override { return fields_; }
  int64_t num_classes() const override { return classes_; }

  void fill(int64_t index, training::Batch& out, int64_t row) const override {
    py::gil_scoped_acquire gil;
    const py::dict s = sample(index);
    for (const auto& f : fields_) {
      DEEP500_CHECK(s.contains(f.name), name_, ": sample ", index, " lacks field '", f.name, "'");
      Borrowed keep;
      const std::string where = cat(name_, ": sample ", index, " field '", f.name, "'");
      const Tensor t = keep.add(s[py::str(f.name)], where);
      DEEP500_CHECK(t.dtype() == f.dtype && t.shape() == f.shape, where, ": ", to_string(t.desc()),
                    ", expected ", to_string(TensorDesc{f.dtype, f.shape}), " (as sample 0)");
      Tensor& dest = out.at(f.name);
      std::memcpy(static_cast<unsigned char*>(dest.raw()) + row * t.nbytes(), t.raw(), t.nbytes());
    }
  }

 private:
  template <class F>
  std::invoke_result_t<F> call(F f) const {
    return calling_python(name_ + ": Python", f);
  }
  py::dict sample(int64_t index) const {
    return call([&] {
      py::object s = source_.attr("__getitem__")(index);
      DEEP500_CHECK(py::isinstance<py::dict>(s), name_, ": sample ", index,
                    " is not a dict of fields");
      return py::dict(s);
    });
  }

  py::object source_;
  std::string name_;
  int64_t size_ = 0, classes_ = 0;
  std::vector<training::FieldDesc> fields_;
};

}  // namespace

std::unique_ptr<training::Dataset> python_dataset(const py::object& source,
                                                  const std::string& role) {
  return std::make_unique<PythonDataset>(source, role);
}

}  // namespace deep500::python
