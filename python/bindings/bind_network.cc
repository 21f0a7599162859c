// Level 1 from Python: ONNX models (network/model.h) and executors
// (network/executor.h's make_executor: a registered executor or
// backend:NAMES), inference and backprop.
#include <pybind11/stl.h>

#include <memory>
#include <set>

#include "network/executor.h"
#include "network/executor_options.h"
#include "network/model.h"
#include "python/bindings/bindings.h"
#include "python/bindings/numpy_tensor.h"

namespace py = pybind11;

namespace deep500::python {
namespace {

using network::GraphExecutor;
using network::Model;

// Graph inputs the caller feeds (not initializers).
std::vector<std::string> feed_names(const Model& m) {
  std::set<std::string> init;
  for (const auto& t : m.graph().initializer()) init.insert(t.name());
  std::vector<std::string> out;
  for (const auto& in : m.graph().input())
    if (!init.count(in.name())) out.push_back(in.name());
  return out;
}

std::vector<std::string> output_names(const Model& m) {
  std::vector<std::string> out;
  for (const auto& o : m.graph().output()) out.push_back(o.name());
  return out;
}

}  // namespace

void bind_network(py::module_& m) {
  py::class_<Model, std::shared_ptr<Model>>(m, "Model", "An ONNX model, loaded and checked.")
      .def(py::init([](const std::string& path) {
             return std::make_shared<Model>(network::load_model(path));
           }),
           py::arg("path"))
      .def_readonly("path", &Model::path)
      .def_readonly("opsets", &Model::opsets)
      .def_property_readonly("inputs", &feed_names, "graph inputs to feed (not initializers)")
      .def_property_readonly("outputs", &output_names)
      .def_property_readonly("parameters", &network::parameter_names,
                             "floating-point initializers: what backprop differentiates");

  py::class_<GraphExecutor>(m, "Executor", "Runs a model: inference and backprop.")
      .def(py::init([](const Model& model, const std::string& executor, int threads) {
             network::ExecutorOptions options;
             options.threads = threads;
             return network::make_executor(executor, model, options);
           }),
           py::arg("model"), py::arg("executor") = "optimized", py::arg("threads") = 0,
           py::keep_alive<1, 2>(),
           "executor: a registered executor (reference, optimized, libtorch) or "
           "backend:NAMES; threads: OpenMP threads per run (0: the library's default)")
      .def_property_readonly("name", &GraphExecutor::name)
      .def_property_readonly("settings", &GraphExecutor::settings)
      .def(
          "inference",
          [](GraphExecutor& e, const py::dict& inputs) {
            Borrowed keep;
            const auto feeds = borrow_dict(keep, inputs, "input");
            std::map<std::string, Tensor> out;
            {
              py::gil_scoped_release release;
              out = e.inference(feeds);
            }
            return to_numpy(out);
          },
          py::arg("inputs"), "Graph outputs for these inputs (name -> array).")
      .def(
          "backprop",
          [](GraphExecutor& e, const py::dict& inputs, const std::string& loss) {
            Borrowed keep;
            const auto feeds = borrow_dict(keep, inputs, "input");
            network::BackpropResult r;
            {
              py::gil_scoped_release release;
              r = e.inference_and_backprop(feeds, loss);
            }
            return py::make_tuple(to_numpy(r.outputs), to_numpy(r.gradients));
          },
          py::arg("inputs"), py::arg("loss"),
          "(outputs, gradients): the graph outputs and d loss / d parameter for every "
          "parameter.");
}

}  // namespace deep500::python
