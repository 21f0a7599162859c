// Update rules written in Python (docs/python.md, "Optimizers in Python"):
// a training::UpdateRuleOptimizer whose update_rule() calls a Python
// object's method with NumPy views of the parameter, its gradient and its
// state slots, registered in the optimizer registry by name, so that
// `train(optimizer=NAME)`, recipes and checkpoints use it like a C++ one.
#include <pybind11/stl.h>

#include <cmath>

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
    try {
      call("class", [&] {
        self_ = cls();
        update_ = self_.attr("update_rule");
        has_new_input_ = py::hasattr(self_, "new_input");
        if (py::hasattr(self_, "hyper_parameters"))
          read_hyper_parameters(self_.attr("hyper_parameters"));
      });
    } catch (...) {  // members are destroyed after `gil` is released: drop them now
      update_ = py::object();
      self_ = py::object();
      throw;
    }
  }
  ~PythonUpdateRule() override {
    if (!Py_IsInitialized()) {  // the interpreter is gone: nothing to decrement
      for (auto& [name, v] : views_) {
        v.param.release(), v.slot.release();
        for (auto& [s, a] : v.slots) a.array.release();
      }
      hyper_dict_.release();
      update_.release();
      self_.release();
      return;
    }
    py::gil_scoped_acquire gil;
    views_.clear();
    hyper_dict_ = py::object();
    update_ = py::object();
    self_ = py::object();
  }
  std::string name() const override { return name_; }

 protected:
  void new_input() override {
    if (!has_new_input_) return;
    py::gil_scoped_acquire gil;
    call("new_input", [&] { self_.attr("new_input")(steps()); });
  }
  void update_rule(const std::string& param_name, Tensor& param, const Tensor& grad) override {
    py::gil_scoped_acquire gil;
    if (hyper_step_ != steps()) {  // the hyper-parameters as of this step, once per step
      py::dict hyper;
      for (const auto& [k, v] : hyper_parameters()) hyper[py::str(k)] = v;
      hyper_dict_ = hyper;
      hyper_step_ = steps();
    }
    ParameterViews& views = views_of(param_name, param);
    call("update_rule", [&] {
      update_(steps(), param_name, views.param, to_numpy(grad), views.slot, hyper_dict_);
    });
  }
  std::map<std::string, HyperField> hyper_fields() override {
    std::map<std::string, HyperField> f;
    for (auto& [k, v] : hyper_) f[k].number = &v;
    return f;
  }

 private:
  // The class's defaults: a dict of numbers (anything else is an Error
  // naming the optimizer and the entry; it used to crash the interpreter).
  void read_hyper_parameters(const py::object& given) {
    DEEP500_CHECK(py::isinstance<py::dict>(given), "optimizer '", name_,
                  "': hyper_parameters must be a dict of numbers, got ",
                  py::str(py::type::of(given).attr("__name__")).cast<std::string>());
    for (auto [k, v] : py::reinterpret_borrow<py::dict>(given)) {
      const std::string key = py::str(k);
      DEEP500_CHECK(py::isinstance<py::float_>(v) || py::isinstance<py::int_>(v), "optimizer '",
                    name_, "': hyper_parameters['", key, "'] must be a number, got ",
                    py::str(py::type::of(v).attr("__name__")).cast<std::string>());
      const double x = v.cast<double>();
      DEEP500_CHECK(std::isfinite(x), "optimizer '", name_, "': hyper_parameters['", key,
                    "'] must be finite, got ", x);
      (key == "lr" ? lr_ : hyper_[key]) = x;
    }
  }

  template <class Call>
  void call(const char* method, Call c) {
    calling_python(cat("optimizer '", name_, "': Python ", method), c);
  }

  // What update_rule passes for a parameter, made once: its array (the
  // parameter keeps its storage, Optimizer's contract) and its slot function,
  // whose arrays are made again only when a slot's storage changes
  // (load_state() replaces it).
  struct SlotArray {
    const void* data = nullptr;
    py::object array;
  };
  struct ParameterViews {
    const void* data = nullptr;
    py::object param, slot;
    std::map<std::string, SlotArray> slots;
  };
  ParameterViews& views_of(const std::string& name, Tensor& param) {
    ParameterViews& v = views_[name];
    if (v.data == param.raw()) return v;
    v.data = param.raw();
    v.param = to_numpy(param);
    v.slots.clear();
    v.slot = py::cpp_function([this, name, param, &v](const std::string& s) {
      Tensor& t = slot(s, name, param);
      SlotArray& cached = v.slots[s];
      if (cached.data != t.raw()) cached = {t.raw(), to_numpy(t)};
      return cached.array;
    });
    return v;
  }

  std::string name_;
  py::object self_, update_;
  std::map<std::string, double> hyper_;
  int64_t hyper_step_ = -1;
  bool has_new_input_ = false;  // looked up once, with the GIL
  py::object hyper_dict_;  // a dict; null until the first update (members start without the GIL)
  std::map<std::string, ParameterViews> views_;
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
