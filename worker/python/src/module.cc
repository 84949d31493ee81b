// Entry point of the taups._taups extension module. The pure-Python package
// around it (worker/python/taups/) adds torch tensor support and helpers.
// TAUPS_VERSION, the project version, is defined by CMake.
#include <pybind11/pybind11.h>

#include "worker/python/src/bindings.h"

PYBIND11_MODULE(_taups, m) {
  m.doc() = "tauPS worker client (C++ core of the taups package)";
  m.attr("__version__") = TAUPS_VERSION;
  taups::python::BindStatusErrors(m);
  taups::python::BindTableConfig(m);
  taups::python::BindResults(m);
  taups::python::BindCompression(m);
  taups::python::BindClientOptions(m);
  taups::python::BindClient(m);
  taups::python::BindCtrData(m);
  taups::python::BindDevice(m);
}
