// Error, version, backends and the tensor round trip (numpy_tensor.h).
#include <pybind11/stl.h>

#include "deep/error.h"
#include "frameworks/register_all.h"
#include "metrics/context.h"
#include "metrics/statistics.h"
#include "operators/registry.h"
#include "python/bindings/bindings.h"
#include "python/bindings/numpy_tensor.h"

namespace py = pybind11;

namespace deep500::python {

py::object to_python(const nlohmann::json& j) {
  return py::module_::import("json").attr("loads")(
      j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void bind_core(py::module_& m) {
  static py::exception<Error> error(m, "Error", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      error(e.what());
    }
  });
  frameworks::register_all();
  m.def(
      "backends", [] { return ops::Registry::global().backends(); },
      "Names of the registered operator backends (reference, onednn, eigen, ...).");
  m.def("built_backends", &frameworks::built_backends, "The backends this build compiled in.");
  m.def(
      "devices",
      [] {
        py::list out;
        for (const auto& d : metrics::describe_devices(true)) {
          py::dict entry;
          for (const auto& [k, v] : d) entry[py::str(k)] = v;
          out.append(entry);
        }
        return out;
      },
      "The GPUs kernels can run on, as results record them (device 'cuda:N', name, SM count, "
      "memory, clocks, driver and library versions); empty without one. A result's 'device' "
      "says where its work ran.");
  m.def(
      "summarize",
      [](const std::vector<double>& samples) {
        const metrics::Summary s = metrics::summarize(samples);
        py::dict d;
        d["n"] = s.n;
        d["median"] = s.median;
        d["mean"] = s.mean;
        d["min"] = s.min;
        d["max"] = s.max;
        d["cv"] = s.cv;
        d["robust_cv"] = s.robust_cv;
        d["ci_low"] = s.ci_low;
        d["ci_high"] = s.ci_high;
        d["ci_valid"] = s.ci_valid;
        return d;
      },
      py::arg("samples"),
      "The benchmarks' statistics (metrics/statistics.h): median with its nonparametric 95% "
      "confidence interval (ci_valid False below 6 samples), mean, min, max, CV, robust CV.");
  m.def(
      "as_tensor",
      [](const py::object& value) {
        Borrowed keep;
        return to_numpy(keep.add(value, "as_tensor"));
      },
      py::arg("value"),
      "The array as a deep500 Tensor converted back to NumPy (dtypes and layout as the "
      "bindings pass them; a copy, since the tensor borrowed `value`).");
}

}  // namespace deep500::python
