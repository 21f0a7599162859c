// Training events written in Python (docs/python.md, "Training events"): a
// training::TrainingEvents that calls the methods a Python object defines
// (before_training, after_training, before_epoch, after_epoch,
// after_training_batch, after_test_set, after_optimizer_step) with the
// TrainingState (deep500.TrainingState: read-only fields and
// request_stop(reason)). Methods it lacks cost nothing; each call takes the
// GIL. A Python exception becomes an Error naming the method.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>

#include "training/training_events.h"

namespace deep500::python {

std::unique_ptr<training::TrainingEvents> python_events(const pybind11::object& listener);
void bind_training_state(pybind11::module_& m);

}  // namespace deep500::python
