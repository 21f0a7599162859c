// Level 3 from Python, under mpirun: the job's MPI communicator (its
// collectives on NumPy arrays, its traffic counts); distributed training
// goes through run_training with task.scheme and a communicator
// (bind_tasks.cc).
#include <pybind11/stl.h>

#include "distributed/communicator.h"
#include "distributed/mpi_communicator.h"
#include "python/bindings/bindings.h"
#include "python/bindings/numpy_tensor.h"

namespace py = pybind11;

namespace deep500::python {
namespace {

using distributed::Communicator;

// An owned copy of `value` the communicator may write into.
Tensor owned_copy(const py::handle& value, const std::string& where) {
  Borrowed keep;
  const Tensor t = keep.add(value, where);
  DEEP500_CHECK(t.defined(), where, ": expected an array, got None");
  return t.clone();
}

py::dict traffic_dict(const Communicator& c) {
  py::dict d;
  for (const auto& [op, count] : c.traffic().by_operation) {
    py::dict one;
    one["calls"] = count.calls;
    one["bytes_sent"] = count.bytes_sent;
    one["bytes_received"] = count.bytes_received;
    d[py::str(op)] = one;
  }
  return d;
}

}  // namespace

void bind_distributed(py::module_& m) {
  py::class_<Communicator>(m, "Communicator",
                           "Ranks talking through MPI (distributed/communicator.h): every rank "
                           "calls each collective in the same order.")
      .def_property_readonly("rank", &Communicator::rank)
      .def_property_readonly("size", &Communicator::size)
      .def_property_readonly("name", &Communicator::name)
      .def_property("timeout_seconds", &Communicator::timeout_seconds,
                    &Communicator::set_timeout_seconds)
      .def(
          "allreduce",
          [](Communicator& c, const py::object& value, const std::string& op) {
            Tensor t = owned_copy(value, "allreduce");
            const distributed::ReduceOp reduce = distributed::parse_reduce_op(op);
            {
              py::gil_scoped_release release;
              c.allreduce(t, reduce);
            }
            return to_numpy(t);
          },
          py::arg("value"), py::arg("op") = "sum",
          "The reduction (sum, mean, min, max) of every rank's array.")
      .def(
          "broadcast",
          [](Communicator& c, const py::object& value, int root) {
            Tensor t = owned_copy(value, "broadcast");
            {
              py::gil_scoped_release release;
              c.broadcast(t, root);
            }
            return to_numpy(t);
          },
          py::arg("value"), py::arg("root") = 0, "`root`'s array, on every rank.")
      .def(
          "allgather",
          [](Communicator& c, const py::object& value) {
            const Tensor t = owned_copy(value, "allgather");
            Tensor out;
            {
              py::gil_scoped_release release;
              c.allgather(t, out);
            }
            return to_numpy(out);
          },
          py::arg("value"), "Every rank's array, stacked in rank order ([size, ...]).")
      .def("barrier",
           [](Communicator& c) {
             py::gil_scoped_release release;
             c.barrier();
           })
      .def_property_readonly("traffic", &traffic_dict,
                             "Calls and bytes sent and received per operation, counted here.");
  m.def(
      "mpi_world",
      [] { return static_cast<Communicator*>(&distributed::MpiCommunicator::world()); },
      py::return_value_policy::reference,
      "The job's communicator under mpirun (initialises MPI on first use; one rank without "
      "mpirun).");
  m.def("launched_by_mpirun", &distributed::launched_by_mpirun,
        "True when this process was started by mpirun (call before mpi_world()).");
}

}  // namespace deep500::python
