// Training events written in Python (see python_events.h).
#include "python/bindings/python_events.h"

#include "deep/error.h"
#include "python/bindings/bindings.h"

namespace py = pybind11;

namespace deep500::python {
namespace {

using training::TrainingState;

class PythonEvents : public training::TrainingEvents {
 public:
  explicit PythonEvents(py::object listener) : listener_(std::move(listener)) {
    for (int i = 0; i < kMethods; ++i) has_[i] = py::hasattr(listener_, kNames[i]);
  }
  ~PythonEvents() override {
    py::gil_scoped_acquire gil;
    listener_ = py::object();
  }
  void before_training(TrainingState& s) override { call(0, s); }
  void after_training(TrainingState& s) override { call(1, s); }
  void before_epoch(TrainingState& s) override { call(2, s); }
  void after_epoch(TrainingState& s) override { call(3, s); }
  void after_training_batch(TrainingState& s) override { call(4, s); }
  void after_test_set(TrainingState& s) override { call(5, s); }
  void after_optimizer_step(TrainingState& s, const training::TensorMap&) override { call(6, s); }

 private:
  static constexpr int kMethods = 7;
  static constexpr const char* kNames[kMethods] = {
      "before_training",      "after_training", "before_epoch",        "after_epoch",
      "after_training_batch", "after_test_set", "after_optimizer_step"};

  void call(int method, TrainingState& s) {
    if (!has_[method]) return;
    py::gil_scoped_acquire gil;
    calling_python(cat("training events: Python ", kNames[method]), [&] {
      listener_.attr(kNames[method])(py::cast(&s, py::return_value_policy::reference));
    });
  }

  py::object listener_;
  bool has_[kMethods] = {};
};

}  // namespace

std::unique_ptr<training::TrainingEvents> python_events(const py::object& listener) {
  return std::make_unique<PythonEvents>(listener);
}

void bind_training_state(py::module_& m) {
  py::class_<TrainingState>(m, "TrainingState",
                            "What the Trainer knows at an event (valid during the call only).")
      .def_readonly("epochs", &TrainingState::epochs)
      .def_readonly("epoch", &TrainingState::epoch)
      .def_readonly("batches_per_epoch", &TrainingState::batches_per_epoch)
      .def_readonly("batch", &TrainingState::batch)
      .def_readonly("step", &TrainingState::step)
      .def_readonly("batch_loss", &TrainingState::batch_loss)
      .def_readonly("test_accuracy", &TrainingState::test_accuracy)
      .def_readonly("test_loss", &TrainingState::test_loss)
      .def_readonly("seconds", &TrainingState::seconds)
      .def_property_readonly("epoch_loss", &TrainingState::epoch_loss)
      .def_property_readonly("epoch_accuracy", &TrainingState::epoch_accuracy)
      .def("request_stop", &TrainingState::request_stop, py::arg("reason"),
           "Stops training after the current batch (or epoch), with this reason.");
}

}  // namespace deep500::python
