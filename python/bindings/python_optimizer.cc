// Update rules written in Python (docs/python.md, "Optimizers in Python"):
// a training::UpdateRuleOptimizer whose update_rule() calls a Python
// object's method with NumPy views of the parameter, its gradient and its
// state slots, registered in the optimizer registry by name, so that
// `train(optimizer=NAME)`, recipes and checkpoints use it like a C++ one.
#include <pybind11/stl.h>

#include "python/bindings/bindings.h"
#include "python/bindings/numpy_tensor.h"
#include "training/optimizer_registry.h"

namespace py = pybind11;

namespace deep500::python {
namespace {

class PythonUpdateRule : public training::UpdateRuleOptimizer {
 public:
  PythonUpdateRule(std::string name, const py::object& cls) : name_(std::move(name)) {
    py::gil_scoped_acquire gil;
    self_ = cls();
    if (py::hasattr(self_, "hyper_parameters"))
      for (auto [k, v] : py::dict(self_.attr("hyper_parameters"))) {
        const std::string key = py::str(k);
        if (key == "lr")
          lr_ = v.cast<double>();
        else
          hyper_[key] = v.cast<double>();
      }
  }
  ~PythonUpdateRule() override {
    if (!Py_IsInitialized()) {
      self_.release();
      return;
    }
    py::gil_scoped_acquire gil;
    self_ = py::object();
  }
  std::string name() const override { return name_; }

 protected:
  void new_input() override {
    if (!has_new_input()) return;
    py::gil_scoped_acquire gil;
    call("new_input", [&] { self_.attr("new_input")(steps()); });
  }
  void update_rule(const std::string& param_name, Tensor& param, const Tensor& grad) override {
    py::gil_scoped_acquire gil;
    auto slot_of = [this, param_name, param](const std::string& s) {
      return to_numpy(slot(s, param_name, param));
    };
    py::dict hyper;
    for (const auto& [k, v] : hyper_parameters()) hyper[py::str(k)] = v;
    call("update_rule", [&] {
      self_.attr("update_rule")(steps(), param_name, to_numpy(param), to_numpy(grad),
                                py::cpp_function(slot_of), hyper);
    });
  }
  std::map<std::string, HyperField> hyper_fields() override {
    std::map<std::string, HyperField> f;
    for (auto& [k, v] : hyper_) f[k].number = &v;
    return f;
  }

 private:
  bool has_new_input() {
    py::gil_scoped_acquire gil;
    return py::hasattr(self_, "new_input");
  }
  template <class Call>
  void call(const char* method, Call c) {
    try {
      c();
    } catch (py::error_already_set& e) {
      throw Error(cat("optimizer '", name_, "': Python ", method, " raised ",
                      py::str(e.type().attr("__name__")).cast<std::string>(), ": ",
                      py::str(e.value()).cast<std::string>()));
    }
  }

  std::string name_;
  py::object self_;
  std::map<std::string, double> hyper_;
};

void register_optimizer(const std::string& name, const py::object& cls) {
  DEEP500_CHECK(!name.empty(), "register_optimizer: empty name");
  auto* held = new py::object(cls);  // never released: the registry outlives Python
  training::OptimizerRegistry::global().add(
      name, [name, held] { return std::make_unique<PythonUpdateRule>(name, *held); });
}

}  // namespace

void bind_python_optimizers(py::module_& m) {
  m.def("register_optimizer", &register_optimizer, py::arg("name"), py::arg("cls"),
        "Registers a Python update rule as optimizer `name`. cls() has "
        "update_rule(step, name, param, grad, slot, hyper): it updates `param` (a NumPy view "
        "of the parameter) in place from `grad`; slot(NAME) is a zero-initialised state array "
        "of the parameter's shape, kept (and checkpointed) between steps; hyper holds lr and "
        "the class's `hyper_parameters` dict (their defaults), settable like a C++ "
        "optimizer's. An optional new_input(step) runs once per step.");
  m.def(
      "optimizers", [] { return training::OptimizerRegistry::global().names(); },
      "Names of the registered optimizers.");
}

}  // namespace deep500::python
