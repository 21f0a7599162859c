// Operators written in Python (docs/python.md, "Operators in Python"): an
// ops::Operator whose forward and backward call a Python object's methods
// with NumPy arrays, registered in the operator registry under a backend
// name like any kernel, so that checks, benchmarks and every executor use
// it. The GIL is taken for each call (executors run without it).
#include <pybind11/stl.h>

#include <climits>
#include <cstring>

#include "operators/custom_op_loader.h"
#include "operators/registry.h"
#include "python/bindings/bindings.h"
#include "python/bindings/numpy_tensor.h"

namespace py = pybind11;

namespace deep500::python {
namespace {

// Copies a Python result into slot `i` of `slots` as an owned tensor.
void store(const py::handle& value, std::span<Tensor> slots, size_t i, const std::string& where) {
  Borrowed keep;
  const Tensor t = keep.add(value, where);
  if (!t.defined()) return;
  Tensor& out = ops::ensure_output(slots, i, t.dtype(), t.shape());
  if (t.dtype() == DataType::String)
    out.copy_from(t);
  else if (t.nbytes() > 0)
    std::memcpy(out.raw(), t.raw(), t.nbytes());
}

py::list arrays(std::span<const Tensor> ts) {
  py::list out;
  for (const Tensor& t : ts) out.append(to_numpy(t));
  return out;
}

class PythonOperator : public ops::Operator {
 public:
  PythonOperator(py::object self, std::string node)
      : self_(std::move(self)), node_(std::move(node)) {
    has_backward_ = py::hasattr(self_, "backward");
  }
  ~PythonOperator() override {
    if (!Py_IsInitialized()) {
      self_.release();  // the interpreter is gone: nothing to decrement
      return;
    }
    py::gil_scoped_acquire gil;
    self_ = py::object();
  }

  void forward(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    py::gil_scoped_acquire gil;
    const py::object result = calling_python(cat(node_, ": Python forward"),
                                             [&] { return self_.attr("forward")(arrays(inputs)); });
    const py::sequence values = as_sequence(result, "forward", outputs.size());
    for (size_t i = 0; i < outputs.size(); ++i)
      store(values[i], outputs, i, cat(node_, ": forward output ", i));
  }
  bool has_backward() const override { return has_backward_; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, has_backward_);
  }
  void backward(std::span<const Tensor> grad_outputs, std::span<const Tensor> inputs,
                std::span<const Tensor> outputs, std::span<Tensor> grad_inputs) override {
    DEEP500_CHECK(has_backward_, node_, ": the Python operator has no backward()");
    py::gil_scoped_acquire gil;
    const py::object result = calling_python(cat(node_, ": Python backward"), [&] {
      return self_.attr("backward")(arrays(grad_outputs), arrays(inputs), arrays(outputs));
    });
    const py::sequence values = as_sequence(result, "backward", grad_inputs.size());
    for (size_t i = 0; i < grad_inputs.size(); ++i)
      store(values[i], grad_inputs, i, cat(node_, ": backward gradient ", i));
  }

 private:
  py::sequence as_sequence(const py::object& result, const char* method, size_t expected) const {
    DEEP500_CHECK(py::isinstance<py::sequence>(result) && !py::isinstance<py::str>(result), node_,
                  ": Python ", method, " must return a list of arrays, got ",
                  std::string(py::str(py::type::of(result).attr("__name__"))));
    const py::sequence values = result;
    DEEP500_CHECK(values.size() == expected, node_, ": Python ", method, " returned ",
                  values.size(), " arrays, expected ", expected);
    return values;
  }

  py::object self_;
  std::string node_;
  bool has_backward_ = false;
};

// The node's attributes as a dict of Python values (ints, floats, strings
// and their lists).
py::dict attribute_dict(const ops::Attributes& attributes) {
  py::dict d;
  for (const auto& [name, a] : attributes.all()) {
    switch (a.kind) {
      case ops::Attribute::Kind::Int: d[py::str(name)] = a.i; break;
      case ops::Attribute::Kind::Float: d[py::str(name)] = a.f; break;
      case ops::Attribute::Kind::String:
        d[py::str(name)] = py::bytes(a.s).attr("decode")("utf-8", "replace");
        break;
      case ops::Attribute::Kind::Ints: d[py::str(name)] = a.ints; break;
      case ops::Attribute::Kind::Floats: d[py::str(name)] = a.floats; break;
      case ops::Attribute::Kind::Strings: d[py::str(name)] = a.strings; break;
      default: break;  // tensors and graphs: not passed to Python operators
    }
  }
  return d;
}

void register_operator(const std::string& op_type, const py::object& cls, const std::string& domain,
                       const std::string& backend, int inputs, int outputs) {
  DEEP500_CHECK(!backend.empty() && backend != ops::kReferenceBackend, "register_operator ",
                op_type, ": backend must be a name of its own, not '", backend, "'");
  if (!domain.empty()) ops::declare_custom_operator(domain, op_type, {inputs, outputs});
  // Never released: the registry outlives the interpreter.
  auto* held = new py::object(cls);
  const std::string name = py::str(cls.attr("__name__"));
  ops::Registry::global().add(
      {domain, op_type, 1, INT_MAX, backend, cat("python:", name),
       [held](const ops::OpContext& ctx) -> Expected<std::unique_ptr<ops::Operator>> {
         py::gil_scoped_acquire gil;
         const std::string node = ctx.node.describe();
         py::object self = calling_python(cat(node, ": Python constructor"), [&] {
           return (*held)(**attribute_dict(ctx.node.attributes));
         });
         return std::unique_ptr<ops::Operator>(new PythonOperator(std::move(self), node));
       }});
}

}  // namespace

void bind_python_operators(py::module_& m) {
  m.def("register_operator", &register_operator, py::arg("op_type"), py::arg("cls"),
        py::arg("domain") = "", py::arg("backend") = "python", py::arg("inputs") = 1,
        py::arg("outputs") = 1,
        "Registers a Python operator class for op_type under `backend`. Each node creates "
        "cls(**attributes); forward(inputs) returns the outputs and the optional "
        "backward(grad_outputs, inputs, outputs) the input gradients (None: none), as lists "
        "of arrays. A domain of its own (not ONNX's) declares inputs and outputs counts.");
}

}  // namespace deep500::python
