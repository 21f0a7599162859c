// Level 2 and recipes from Python: the training task (recipes/tasks/training_task.h,
// what `deep500 train` runs) and the recipe runner (recipes/results/runner.h, what
// `deep500 run` runs).
#include <pybind11/stl.h>

#include <sstream>

#include "distributed/job.h"
#include "python/bindings/bindings.h"
#include "python/bindings/python_dataset.h"
#include "python/bindings/python_events.h"
#include "recipes/results/runner.h"
#include "recipes/tasks/interrupt.h"
#include "recipes/tasks/training_task.h"
#include "training/data/dataset_spec.h"

namespace py = pybind11;

namespace deep500::python {
namespace {

using recipes::TrainingTask;

py::dict outcome_dict(const recipes::TrainingOutcome& o) {
  const training::TrainingReport& r = o.report;
  py::dict d;
  d["summary"] = o.summary;
  d["epochs_completed"] = r.epochs_completed;
  d["steps"] = r.steps;
  d["final_train_loss"] = r.final_train_loss;
  d["final_train_accuracy"] = r.final_train_accuracy;
  d["final_test_accuracy"] = r.final_test_accuracy;
  d["time_to_accuracy"] = r.time_to_accuracy;
  d["seconds"] = r.seconds;
  d["stopped_early"] = r.stopped_early;
  d["stop_reason"] = r.stop_reason;
  d["non_finite"] = r.non_finite;
  d["interrupted"] = r.interrupted;
  d["metrics"] = to_python(recipes::to_json(o));
  return d;
}

// After a run stopped by SIGINT/SIGTERM (its outputs written): what Python
// does on Ctrl-C.
[[noreturn]] void raise_keyboard_interrupt() {
  PyErr_SetNone(PyExc_KeyboardInterrupt);
  throw py::error_already_set();
}

}  // namespace

void bind_tasks(py::module_& m) {
  py::class_<TrainingTask>(m, "TrainingTask",
                           "What `deep500 train` runs; fields as its options (docs/training.md).")
      .def(py::init<>())
      .def_readwrite("model", &TrainingTask::model)
      .def_readwrite("builtin", &TrainingTask::builtin)
      .def_readwrite("logits", &TrainingTask::logits)
      .def_readwrite("loss", &TrainingTask::loss)
      .def_readwrite("input", &TrainingTask::input)
      .def_readwrite("labels", &TrainingTask::labels)
      .def_property(
          "dataset", [](const TrainingTask& t) { return t.dataset.kind; },
          [](TrainingTask& t, const std::string& spec) {
            t.dataset = training::parse_dataset_spec(spec, "dataset " + spec);
          },
          "set: a dataset spec, as `deep500 train --dataset`; get: its kind")
      .def_readwrite("optimizer", &TrainingTask::optimizer)
      .def_readwrite("hyper", &TrainingTask::hyper)
      .def_readwrite("lr_schedule", &TrainingTask::lr_schedule)
      .def_readwrite("epochs", &TrainingTask::epochs)
      .def_readwrite("batch_size", &TrainingTask::batch_size)
      .def_readwrite("seed", &TrainingTask::seed)
      .def_readwrite("threads", &TrainingTask::threads)
      .def_readwrite("executor", &TrainingTask::executor)
      .def_readwrite("settings", &TrainingTask::settings)
      .def_readwrite("checkpoint", &TrainingTask::checkpoint)
      .def_readwrite("resume", &TrainingTask::resume)
      .def_readwrite("target_accuracy", &TrainingTask::target_accuracy)
      .def_readwrite("stop_at_target", &TrainingTask::stop_at_target)
      .def_readwrite("time_limit", &TrainingTask::time_limit)
      .def_readwrite("subset", &TrainingTask::subset)
      .def_readwrite("test_subset", &TrainingTask::test_subset)
      .def_readwrite("prefetch_threads", &TrainingTask::prefetch_threads)
      .def_readwrite("augment", &TrainingTask::augment)
      .def_readwrite("progress", &TrainingTask::progress)
      .def_readwrite("metrics_json", &TrainingTask::metrics_json)
      .def_readwrite("save_params", &TrainingTask::save_params)
      .def_readwrite("save_model", &TrainingTask::save_model)
      .def_readwrite("scheme", &TrainingTask::scheme,
                     "distributed scheme (with a communicator), as `train --distributed`")
      .def_readwrite("shard", &TrainingTask::shard)
      .def_readwrite("comm_timeout", &TrainingTask::comm_timeout);
  bind_training_state(m);
  m.def(
      "run_training",
      [](TrainingTask task, const py::list& events, const py::object& train_data,
         const py::object& test_data, distributed::Communicator* communicator) {
        if (communicator) {
          task.communicator = communicator;
          communicator->set_timeout_seconds(task.comm_timeout);
        }
        std::unique_ptr<training::Dataset> train, test;
        if (!train_data.is_none())
          task.train_data = (train = python_dataset(train_data, "train")).get();
        if (!test_data.is_none()) task.test_data = (test = python_dataset(test_data, "test")).get();
        std::vector<std::unique_ptr<training::TrainingEvents>> listeners;
        for (const py::handle& e : events) {
          listeners.push_back(python_events(py::reinterpret_borrow<py::object>(e)));
          task.events.push_back(listeners.back().get());
        }
        recipes::TrainingOutcome out;
        {
          recipes::InterruptScope interrupt;
          if (!task.interrupt) task.interrupt = &recipes::InterruptScope::requested();
          py::gil_scoped_release release;
          // As `deep500 train`: an Error on one rank ends every rank (no rank
          // waits for it); one process raises it as usual.
          out = distributed::on_every_rank(task.communicator,
                                           [&] { return recipes::run_training(task); });
        }
        if (out.report.interrupted) raise_keyboard_interrupt();
        return outcome_dict(out);
      },
      py::arg("task"), py::arg("events") = py::list(), py::arg("train_data") = py::none(),
      py::arg("test_data") = py::none(), py::arg("communicator") = nullptr,
      "Trains as `deep500 train` does; returns the report and metrics. `events`: objects "
      "with TrainingEvents methods (after_epoch(state), ...). Ctrl-C (SIGINT) or SIGTERM stops "
      "after the current batch: the outputs are written as interrupted, then "
      "KeyboardInterrupt is raised. train_data / test_data: Python datasets (len() and "
      "[index] -> {field: array}) instead of task.dataset. communicator (mpi_world() under "
      "mpirun): every rank trains its share with task.scheme; rank 0 writes the outputs; an "
      "error on any rank ends the job.");
  m.def(
      "run_recipe",
      [](const std::string& recipe, const std::vector<std::string>& overrides,
         const std::string& output_dir, const std::string& history, bool plots, bool progress,
         int64_t record_reference, const std::string& label) {
        recipes::RunOptions o;
        o.recipe = recipe;
        o.label = label;
        o.sets = overrides;
        o.record_reference = record_reference;
        o.output_dir = output_dir;
        o.history = history;
        o.plots = plots;
        o.progress = progress;
        std::ostringstream log;
        recipes::RunSummary s;
        {
          recipes::InterruptScope interrupt;
          o.interrupt = &recipes::InterruptScope::requested();
          py::gil_scoped_release release;
          s = recipes::run_recipe(o, log);
        }
        if (s.status == "interrupted") raise_keyboard_interrupt();
        py::dict d;
        d["status"] = s.status;
        d["results_dir"] = s.results_dir;
        d["run_id"] = s.run_id;
        d["log"] = log.str();
        return d;
      },
      py::arg("recipe"), py::arg("overrides") = std::vector<std::string>{},
      py::arg("output_dir") = "results", py::arg("history") = "", py::arg("plots") = false,
      py::arg("progress") = false, py::arg("record_reference") = 0, py::arg("label") = "",
      "Runs a recipe as `deep500 run` does (overrides: PATH=VALUE, as --set; record_reference: "
      "N as --record-reference N; label as --label); returns its status (passed, failed), results "
      "folder, history "
      "run id and printed log. Ctrl-C stops it after the current batch, recorded as interrupted, "
      "then raises KeyboardInterrupt.");
}

}  // namespace deep500::python
