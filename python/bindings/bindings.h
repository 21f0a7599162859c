// The pieces of the extension deep500._core, one per file of
// python/bindings/; module.cc calls them in order. Every function they
// expose is a C++ function of the library, tested in C++ too: the bindings
// convert arguments and results (numpy_tensor.h), release the GIL while C++
// computes, and turn deep500::Error into deep500.Error.
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "deep/error.h"

namespace deep500::python {

void bind_core(pybind11::module_& m);               // Error, version, backends, tensors
void bind_operators(pybind11::module_& m);          // Level 0: run and check one operator
void bind_network(pybind11::module_& m);            // Level 1: models and executors
void bind_distributed(pybind11::module_& m);        // Level 3: the MPI communicator
void bind_results(pybind11::module_& m);            // history, results, comparisons
void bind_tasks(pybind11::module_& m);              // Level 2 training, recipes
void bind_python_operators(pybind11::module_& m);   // operators written in Python
void bind_python_optimizers(pybind11::module_& m);  // update rules written in Python

// A JSON value as Python objects (dict, list, str, float, ...).
pybind11::object to_python(const nlohmann::json& j);

// Runs `call` (Python code, with the GIL held); a Python exception becomes
// the Error "`what` raised TYPE: message", one line without the traceback,
// and a Python value of the wrong type the Error "`what`: ..." (both while
// the GIL is held: a Python error must not outlive it).
template <class Call>
std::invoke_result_t<Call> calling_python(const std::string& what, Call call) {
  try {
    return call();
  } catch (pybind11::error_already_set& e) {
    throw Error(cat(what, " raised ", pybind11::str(e.type().attr("__name__")).cast<std::string>(),
                    ": ", pybind11::str(e.value()).cast<std::string>()));
  } catch (const pybind11::cast_error& e) {
    throw Error(cat(what, ": a value of the wrong type (", e.what(), ")"));
  }
}

}  // namespace deep500::python
