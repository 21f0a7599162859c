// Training events written in Python (see python_events.h).
#include "python/bindings/python_events.h"

#include "deep/error.h"
#include "python/bindings/bindings.h"

namespace py = pybind11;

namespace deep500::python {
namespace {

using training::TrainingState;

// What an event's listener gets: a copy of the state at the event (valid
// for as long as Python keeps it) and, during the call only, the live state
// that request_stop() stops (a kept TrainingState used to point to freed
// memory once train() returned).
struct StateAtEvent {
  TrainingState snapshot;
  TrainingState* live = nullptr;
  void request_stop(const std::string& reason) {
    DEEP500_CHECK(live,
                  "TrainingState.request_stop: the event has returned (it stops training "
                  "only while the event runs)");
    live->request_stop(reason);
    snapshot.request_stop(reason);
  }
};

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
    auto state = std::make_shared<StateAtEvent>();
    state->snapshot = s;
    state->live = &s;
    struct Detach {
      StateAtEvent& state;
      ~Detach() { state.live = nullptr; }
    } detach{*state};
    calling_python(cat("training events: Python ", kNames[method]),
                   [&] { listener_.attr(kNames[method])(py::cast(state)); });
  }

  py::object listener_;
  bool has_[kMethods] = {};
};

}  // namespace

std::unique_ptr<training::TrainingEvents> python_events(const py::object& listener) {
  return std::make_unique<PythonEvents>(listener);
}

void bind_training_state(py::module_& m) {
  py::class_<StateAtEvent, std::shared_ptr<StateAtEvent>> c(
      m, "TrainingState",
      "What the Trainer knew at an event (a snapshot: valid after the event too; request_stop "
      "works during the event only).");
  auto field = [&](const char* name, auto member) {
    c.def_property_readonly(name, [member](const StateAtEvent& s) { return s.snapshot.*member; });
  };
  field("epochs", &TrainingState::epochs);
  field("epoch", &TrainingState::epoch);
  field("batches_per_epoch", &TrainingState::batches_per_epoch);
  field("batch", &TrainingState::batch);
  field("step", &TrainingState::step);
  field("batch_loss", &TrainingState::batch_loss);
  field("test_accuracy", &TrainingState::test_accuracy);
  field("test_loss", &TrainingState::test_loss);
  field("seconds", &TrainingState::seconds);
  c.def_property_readonly("epoch_loss",
                          [](const StateAtEvent& s) { return s.snapshot.epoch_loss(); });
  c.def_property_readonly("epoch_accuracy",
                          [](const StateAtEvent& s) { return s.snapshot.epoch_accuracy(); });
  c.def("request_stop", &StateAtEvent::request_stop, py::arg("reason"),
        "Stops training after the current batch (or epoch), with this reason.");
}

}  // namespace deep500::python
