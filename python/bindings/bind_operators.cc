// Level 0 from Python: one ONNX operator run, or checked against the
// reference backend, on a backend (recipes/tasks/operator_task.h builds the node
// exactly as `deep500 op` does; validation/forward_check.h runs it).
#include <pybind11/stl.h>

#include <chrono>
#include <sstream>

#include "metrics/json_reporter.h"
#include "python/bindings/bindings.h"
#include "python/bindings/numpy_tensor.h"
#include "recipes/tasks/interrupt.h"
#include "recipes/tasks/operator_check.h"
#include "recipes/tasks/operator_task.h"
#include "recipes/tasks/problems.h"
#include "validation/forward_check.h"
#include "validation/gradient_check.h"

namespace py = pybind11;

namespace deep500::python {
namespace {

// Error listing the registered backends when `backend` is not one of them
// (a typo is bad input, as on the command line, not a skipped check).
void check_backend_name(const std::string& backend) {
  ops::Registry::global().check_backend_names({backend}, "backend");
}

// The node `deep500 op` would build for these inputs (absent ones: None).
ops::NodeSpec node_for(const recipes::OperatorSpec& spec, const std::vector<Tensor>& inputs) {
  recipes::Problem p;
  p.label = "python inputs";
  for (size_t i = 0; i < inputs.size(); ++i)
    p.inputs.push_back({inputs[i].defined() ? cat("x", i) : "", inputs[i].desc()});
  return recipes::make_node(spec, recipes::find_definition(spec), p);
}

// The fields every check result has.
template <class Result>
py::dict check_fields(const Result& r) {
  py::dict d;
  d["backend"] = r.backend;
  d["status"] = validation::check_status_name(r.status);
  d["passed"] = r.status == validation::CheckStatus::Passed;
  d["message"] = r.message;
  d["implementation"] = r.implementation;
  return d;
}

py::dict check_json(const validation::ForwardCheckResult& r) {
  py::dict d = check_fields(r);
  d["max_abs_error"] = r.max_abs_error;
  d["max_rel_error"] = r.max_rel_error;
  return d;
}

py::dict gradient_json(const validation::GradientCheckResult& r) {
  py::dict d = check_fields(r);
  py::list inputs;
  for (const auto& in : r.inputs) {
    py::dict i;
    i["index"] = in.index;
    i["status"] = validation::gradient_status_name(in.status);
    i["max_abs_error"] = in.max_abs_error;
    i["max_rel_error"] = in.max_rel_error;
    i["checked_elements"] = in.checked_elements;
    i["directional_checked"] = in.directional_checked;
    i["directional_rel_error"] = in.directional_rel_error;
    i["message"] = in.message;
    inputs.append(i);
  }
  d["inputs"] = inputs;
  return d;
}

// judge_gradient's verdict: the finite-difference check's fields, or the
// comparison with the reference's backward and the reference's own check.
py::dict verdict_json(const validation::GradientVerdict& v) {
  if (!v.against_reference) {
    py::dict d = gradient_json(v.own);
    d["method"] = "finite differences";
    return d;
  }
  const auto& c = *v.against_reference;
  py::dict d;
  d["status"] = validation::check_status_name(v.status);
  d["passed"] = v.status == validation::CheckStatus::Passed;
  d["message"] = c.message;
  d["implementation"] = c.implementation;
  d["backend"] = v.own.backend;
  d["method"] = "reference backward";
  d["max_abs_error"] = c.max_abs_error;
  d["max_rel_error"] = c.max_rel_error;
  d["compared_inputs"] = c.compared_inputs;
  d["reference_check"] = gradient_json(v.reference);
  return d;
}

// A Python function on arrays as the forward check's reference (called with
// the GIL held: the check runs with it).
validation::ReferenceFunction python_reference(const py::object& fn) {
  return [fn](const std::vector<Tensor>& inputs) {
    py::list args;
    for (const Tensor& t : inputs) args.append(to_numpy(t));
    py::object result = fn(args);
    Borrowed keep;
    std::vector<Tensor> out;
    for (const Tensor& t : borrow_list(keep, result, "reference output")) out.push_back(t.clone());
    return out;
  };
}

// An operator created once for its inputs' types and shapes, run many
// times (Level 0's prepare -> execute life cycle).
class PreparedOperator {
 public:
  PreparedOperator(const recipes::OperatorSpec& spec, const std::vector<Tensor>& inputs,
                   const std::string& backend)
      : node_(node_for(spec, inputs)), descs_(descs_of(inputs)) {
    check_backend_name(backend);
    auto made = ops::Registry::global().create({node_, descs_}, {backend});
    DEEP500_CHECK(made.ok(), made.ok() ? "" : made.refusal().reason);
    created_ = std::move(made.value());
  }
  // The kernel was made for the inputs' types and shapes: others are an
  // Error (float64 arrays read as float32 gave garbage; too few inputs, a crash).
  std::vector<Tensor> forward(const std::vector<Tensor>& inputs) {
    DEEP500_CHECK(inputs.size() == descs_.size(), node_.describe(), ": forward takes ",
                  descs_.size(), " inputs (as the Operator was created), got ", inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      const TensorDesc got = inputs[i].defined() ? inputs[i].desc() : TensorDesc{};
      DEEP500_CHECK(got == descs_[i], node_.describe(), ": input ", i, " is ",
                    got.dtype == DataType::Undefined ? "None" : to_string(got),
                    ", but the Operator was created for ",
                    descs_[i].dtype == DataType::Undefined ? "None" : to_string(descs_[i]),
                    " (create one for these inputs)");
    }
    std::vector<Tensor> outputs(node_.outputs.size());
    created_.op->forward(inputs, outputs);
    return outputs;
  }
  // Seconds of `n` forward calls made from C++ (fresh outputs each call, as
  // forward() from Python): the baseline of the call-overhead benchmark.
  double time_forward(const std::vector<Tensor>& inputs, int64_t n) {
    const auto start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < n; ++i) forward(inputs);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  const std::string& implementation() const { return created_.implementation; }

 private:
  ops::NodeSpec node_;
  std::vector<TensorDesc> descs_;
  ops::CreatedOp created_;
};

}  // namespace

void bind_operators(py::module_& m) {
  py::class_<recipes::OperatorSpec>(m, "OperatorSpec",
                                    "An ONNX operator: type, domain, opset, output count and "
                                    "attributes as NAME=VALUE text (as `deep500 op --attr`).")
      .def(py::init<>())
      .def_readwrite("op_type", &recipes::OperatorSpec::op_type)
      .def_readwrite("domain", &recipes::OperatorSpec::domain)
      .def_readwrite("opset", &recipes::OperatorSpec::opset)
      .def_readwrite("outputs", &recipes::OperatorSpec::outputs)
      .def_readwrite("attrs", &recipes::OperatorSpec::attrs);
  m.def(
      "run_operator",
      [](const recipes::OperatorSpec& spec, const py::sequence& inputs,
         const std::string& backend) {
        Borrowed keep;
        check_backend_name(backend);
        const std::vector<Tensor> tensors = borrow_list(keep, inputs, spec.op_type + " input");
        const ops::NodeSpec node = node_for(spec, tensors);
        std::vector<Tensor> out;
        {
          py::gil_scoped_release release;
          out = ops::run_node(node, tensors, backend);
        }
        return to_numpy(out);
      },
      py::arg("spec"), py::arg("inputs"), py::arg("backend") = "reference",
      "Runs the operator once on `backend`; returns its outputs.");
  m.def(
      "check_operator",
      [](const recipes::OperatorSpec& spec, const py::sequence& inputs, const std::string& backend,
         const py::object& reference) {
        Borrowed keep;
        check_backend_name(backend);
        const std::vector<Tensor> tensors = borrow_list(keep, inputs, spec.op_type + " input");
        const ops::NodeSpec node = node_for(spec, tensors);
        validation::ForwardCheckResult r;
        if (reference.is_none()) {
          py::gil_scoped_release release;
          r = validation::check_forward(node, tensors, backend);
        } else {
          r = validation::check_forward(node, tensors, backend, python_reference(reference));
        }
        return check_json(r);
      },
      py::arg("spec"), py::arg("inputs"), py::arg("backend"), py::arg("reference") = py::none(),
      "Forward check of `backend` against the reference backend on these inputs, or against "
      "`reference(inputs) -> outputs` (a Python function on arrays) when given.");
  py::class_<PreparedOperator>(m, "Operator",
                               "An operator created once for these inputs' types and shapes "
                               "on `backend`, then run many times.")
      .def(py::init([](const recipes::OperatorSpec& spec, const py::sequence& inputs,
                       const std::string& backend) {
             Borrowed keep;
             return std::make_unique<PreparedOperator>(
                 spec, borrow_list(keep, inputs, spec.op_type + " input"), backend);
           }),
           py::arg("spec"), py::arg("inputs"), py::arg("backend") = "reference")
      .def_property_readonly("implementation", &PreparedOperator::implementation)
      .def(
          "forward",
          [](PreparedOperator& op, const py::sequence& inputs) {
            Borrowed keep;
            const std::vector<Tensor> tensors = borrow_list(keep, inputs, "input");
            std::vector<Tensor> out;
            {
              py::gil_scoped_release release;
              out = op.forward(tensors);
            }
            return to_numpy(out);
          },
          py::arg("inputs"), "Runs forward once; returns new output arrays.")
      .def(
          "_time_forward_from_cpp",
          [](PreparedOperator& op, const py::sequence& inputs, int64_t n) {
            Borrowed keep;
            const std::vector<Tensor> tensors = borrow_list(keep, inputs, "input");
            py::gil_scoped_release release;
            return op.time_forward(tensors, n);
          },
          py::arg("inputs"), py::arg("n"),
          "Seconds of n forward calls made by a C++ loop (benchmarks/python/overhead.py).");
  m.def(
      "op_check",
      [](const recipes::OperatorSpec& spec, const std::vector<std::string>& inputs,
         const std::vector<std::string>& backends, bool grad, uint64_t seed, bool isolate) {
        recipes::OperatorCheck c;
        c.op = spec;
        c.problems = recipes::make_problems(spec.op_type, inputs, "", "float32", {});
        c.backends = backends;
        c.grad = grad;
        c.seed = seed;
        c.isolate = isolate;
        recipes::OperatorCheckOutcome out;
        {
          recipes::InterruptScope interrupt;
          c.interrupt = &recipes::InterruptScope::requested();
          py::gil_scoped_release release;
          out = recipes::run_operator_check(c);
        }
        py::dict d = to_python(recipes::to_json(out));
        d["ok"] = out.passed();
        return d;
      },
      py::arg("spec"), py::arg("inputs"), py::arg("backends") = std::vector<std::string>{},
      py::arg("grad") = false, py::arg("seed") = 42, py::arg("isolate") = true,
      "Checks the operator as `deep500 op check` does: random inputs from NAME:dtype:shape "
      "(its --input) drawn with `seed`, each backend (empty: reference; \"all\") against the "
      "reference, with grad also its backward; returns per problem every backend's checks "
      "(status and lines with errors and the method), the counts passed / failed / skipped "
      "and ok (nothing failed and something passed).");
  m.def(
      "benchmark_operator",
      [](const recipes::OperatorSpec& spec, const std::vector<std::string>& inputs,
         const std::vector<std::string>& backends, bool backward, int threads, int min_reps,
         double min_time, const std::string& cache, bool include_transfers) {
        recipes::OperatorBenchmark b;
        b.op = spec;
        b.problems = recipes::make_problems(spec.op_type, inputs, "", "float32", {});
        b.backends = backends;
        b.backward = backward;
        b.threads = threads;
        b.include_transfers = include_transfers;
        if (min_reps > 0) b.runner.min_repetitions = min_reps;
        if (min_time > 0) b.runner.min_time_seconds = min_time;
        b.runner.cache = cache;
        b.runner.validate();
        std::ostringstream info;
        recipes::BenchmarkOutcome out;
        {
          recipes::InterruptScope interrupt;
          b.interrupt = &recipes::InterruptScope::requested();
          py::gil_scoped_release release;
          const metrics::Peaks peaks = recipes::measure_backend_peaks(
              recipes::backend_list(b.backends, recipes::find_definition(b.op)), threads);
          b.peaks = &peaks;
          out = recipes::run_operator_benchmark(b, info);
        }
        py::list results;
        for (const auto& r : out.results) results.append(to_python(metrics::to_json(r)));
        py::dict d;
        d["results"] = results;
        d["errors"] = out.errors;
        d["interrupted"] = out.interrupted;
        d["log"] = info.str();
        return d;
      },
      py::arg("spec"), py::arg("inputs"), py::arg("backends") = std::vector<std::string>{},
      py::arg("backward") = false, py::arg("threads") = 0, py::arg("min_reps") = 0,
      py::arg("min_time") = 0.0, py::arg("cache") = "hot", py::arg("include_transfers") = false,
      "Times the operator as `deep500 op bench` does: inputs as NAME:dtype:shape (its "
      "--input), backends as its --backend (empty: reference; \"all\"); returns every "
      "result (median, confidence interval, samples, FLOP/s, percent of the measured peak, "
      "the device it ran on and its timer, implementation) as the JSON reporter writes it. "
      "A GPU backend (cudnn) is timed on inputs already on the device with CUDA events; "
      "include_transfers also times it with the copies in and out. cache: hot or cold (caches "
      "flushed before each sample). min_reps / min_time: 0 = the runner's defaults.");
  m.def(
      "check_gradient",
      [](const recipes::OperatorSpec& spec, const py::sequence& inputs,
         const std::string& backend) {
        Borrowed keep;
        check_backend_name(backend);
        const std::vector<Tensor> tensors = borrow_list(keep, inputs, spec.op_type + " input");
        const ops::NodeSpec node = node_for(spec, tensors);
        validation::GradientVerdict v;
        {
          py::gil_scoped_release release;
          v = validation::judge_gradient(node, tensors, backend);
        }
        return verdict_json(v);
      },
      py::arg("spec"), py::arg("inputs"), py::arg("backend"),
      "Backward of `backend` against central finite differences of its forward in float64, as "
      "`deep500 op check --grad`; a backend that computes only in float32 (onednn, cudnn) "
      "against the reference's backward (method \"reference backward\"), the reference itself "
      "checked in float64 (reference_check).");
}

}  // namespace deep500::python
