// Level 3 from Python: the job's MPI communicator under mpirun, or ranks as
// threads of this process (in_process_ranks); their collectives, point to
// point messages and splits on NumPy arrays, and their traffic counts.
// Distributed training goes through run_training with task.scheme and a
// communicator (bind_tasks.cc).
#include <pybind11/stl.h>

#include "distributed/communicator.h"
#include "distributed/in_process.h"
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

// Runs `call` without the GIL: it waits for the other ranks, which may be
// threads of this process that need the GIL (in_process_ranks).
template <class Call>
void released(Call call) {
  py::gil_scoped_release release;
  call();
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
  using distributed::parse_reduce_op;
  // Held by shared_ptr: a communicator Python keeps outlives the call that
  // made it (in_process_ranks), and then fails at once, never dangles.
  py::class_<Communicator, std::shared_ptr<Communicator>>(
      m, "Communicator",
      "Ranks talking to each other (distributed/communicator.h): every rank "
      "calls each collective in the same order. Arrays go in as copies and "
      "results come back as new arrays.")
      .def_property_readonly("rank", &Communicator::rank)
      .def_property_readonly("size", &Communicator::size)
      .def_property_readonly("name", &Communicator::name)
      .def_property("timeout_seconds", &Communicator::timeout_seconds,
                    &Communicator::set_timeout_seconds)
      .def(
          "allreduce",
          [](Communicator& c, const py::object& value, const std::string& op) {
            Tensor t = owned_copy(value, "allreduce");
            const auto reduce = parse_reduce_op(op);
            released([&] { c.allreduce(t, reduce); });
            return to_numpy(t);
          },
          py::arg("value"), py::arg("op") = "sum",
          "The reduction (sum, mean, min, max) of every rank's array.")
      .def(
          "reduce",
          [](Communicator& c, const py::object& value, const std::string& op, int root) {
            Tensor t = owned_copy(value, "reduce");
            const auto reduce = parse_reduce_op(op);
            released([&] { c.reduce(t, reduce, root); });
            return to_numpy(t);
          },
          py::arg("value"), py::arg("op") = "sum", py::arg("root") = 0,
          "On `root`, the reduction of every rank's array; elsewhere the array as given.")
      .def(
          "broadcast",
          [](Communicator& c, const py::object& value, int root) {
            Tensor t = owned_copy(value, "broadcast");
            released([&] { c.broadcast(t, root); });
            return to_numpy(t);
          },
          py::arg("value"), py::arg("root") = 0, "`root`'s array, on every rank.")
      .def(
          "allgather",
          [](Communicator& c, const py::object& value) {
            const Tensor t = owned_copy(value, "allgather");
            Tensor out;
            released([&] { c.allgather(t, out); });
            return to_numpy(out);
          },
          py::arg("value"), "Every rank's array, stacked in rank order ([size, ...]).")
      .def(
          "reduce_scatter",
          [](Communicator& c, const py::object& value, const std::string& op) {
            const Tensor t = owned_copy(value, "reduce_scatter");
            const auto reduce = parse_reduce_op(op);
            Tensor out;
            released([&] { c.reduce_scatter(t, out, reduce); });
            return to_numpy(out);
          },
          py::arg("value"), py::arg("op") = "sum",
          "`value` holds size equal blocks; rank r gets the reduction of every rank's block r "
          "(flat).")
      .def(
          "alltoall",
          [](Communicator& c, const py::object& value) {
            const Tensor t = owned_copy(value, "alltoall");
            Tensor out;
            released([&] { c.alltoall(t, out); });
            return to_numpy(out);
          },
          py::arg("value"),
          "`value` holds size equal blocks; block j goes to rank j, and block i of the result "
          "is what rank i sent here.")
      .def(
          "send",
          [](Communicator& c, const py::object& value, int dest, int tag) {
            const Tensor t = owned_copy(value, "send");
            released([&] { c.send(t, dest, tag); });
          },
          py::arg("value"), py::arg("dest"), py::arg("tag") = 0, "Sends the array to `dest`.")
      .def(
          "recv",
          [](Communicator& c, const py::object& like, int source, int tag) {
            Tensor t = owned_copy(like, "recv");
            released([&] { c.recv(t, source, tag); });
            return to_numpy(t);
          },
          py::arg("like"), py::arg("source"), py::arg("tag") = 0,
          "The array `source` sent with `tag`; `like` gives its dtype and shape (the sent "
          "element type and count).")
      .def(
          "sendrecv",
          [](Communicator& c, const py::object& value, int dest, const py::object& like, int source,
             int tag) {
            const Tensor out = owned_copy(value, "sendrecv");
            Tensor in = owned_copy(like, "sendrecv");
            released([&] { c.sendrecv(out, dest, in, source, tag); });
            return to_numpy(in);
          },
          py::arg("value"), py::arg("dest"), py::arg("like"), py::arg("source"), py::arg("tag") = 0,
          "Sends `value` to `dest` while receiving from `source` (no deadlock on a ring); "
          "returns what was received, shaped like `like`.")
      .def(
          "split",
          [](Communicator& c, int color, int key) {
            std::unique_ptr<Communicator> part;
            released([&] { part = c.split(color, key); });
            return std::shared_ptr<Communicator>(std::move(part));
          },
          py::arg("color"), py::arg("key") = 0,
          "A new communicator of the ranks passing the same color, ranked by (key, rank). "
          "Collective.")
      .def("barrier", [](Communicator& c) { released([&] { c.barrier(); }); })
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
  m.def(
      "in_process_ranks",
      [](int size, const py::object& body, double timeout_seconds) {
        std::vector<std::shared_ptr<Communicator>> comms;
        for (auto& c : distributed::InProcessCommunicator::create(size)) {
          c->set_timeout_seconds(timeout_seconds);
          comms.emplace_back(std::move(c));
        }
        std::vector<py::object> results(comms.size());
        // Ends the group when the call ends: a communicator the body kept
        // fails at once with this message.
        struct EndGroup {
          std::vector<std::shared_ptr<Communicator>>& comms;
          ~EndGroup() {
            for (auto& c : comms)
              static_cast<distributed::InProcessCommunicator&>(*c).fail(
                  "the in-process group ended when in_process_ranks returned");
          }
        } end{comms};
        released([&] {
          distributed::run_ranks(comms, [&](Communicator& c) {
            py::gil_scoped_acquire gil;
            calling_python(cat("rank ", c.rank()),
                           [&] { results[c.rank()] = body(py::cast(comms[c.rank()])); });
          });
        });
        py::list out;
        for (auto& r : results) out.append(r ? r : py::none());
        return out;
      },
      py::arg("size"), py::arg("body"), py::arg("timeout_seconds") = 60.0,
      "Runs body(communicator) on `size` threads, one per rank of a new in-process group "
      "(distributed/in_process.h), and returns their results in rank order. The communicator "
      "is valid during the call. When a rank raises, the others fail at their next call and "
      "the first error is raised here.");
}

}  // namespace deep500::python
