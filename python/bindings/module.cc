// deep500._core: the compiled part of the Python package `deep500`
// (python/deep500/__init__.py re-exports it).
#include "python/bindings/bindings.h"

PYBIND11_MODULE(_core, m) {
  m.doc() = "deep500's C++ library (use the package `deep500`)";
  deep500::python::bind_core(m);
  deep500::python::bind_operators(m);
  deep500::python::bind_network(m);
  deep500::python::bind_distributed(m);
  deep500::python::bind_tasks(m);
  deep500::python::bind_results(m);
  deep500::python::bind_python_operators(m);
  deep500::python::bind_python_optimizers(m);
}
