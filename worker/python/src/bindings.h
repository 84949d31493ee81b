// The parts of the tauPS Python extension (taups._taups), one per file.
// module.cc calls each Bind* once, in this order, when Python imports the
// extension. Every function runs with the GIL held.
#ifndef TAUPS_WORKER_PYTHON_SRC_BINDINGS_H_
#define TAUPS_WORKER_PYTHON_SRC_BINDINGS_H_

#include <pybind11/pybind11.h>

namespace taups::python {

// StatusError and its subclasses (status_errors.cc).
void BindStatusErrors(pybind11::module_& m);
// Enums and table configuration structs (config_bindings.cc).
void BindTableConfig(pybind11::module_& m);
// PullInfo, PushResult and the stats structs (result_bindings.cc).
void BindResults(pybind11::module_& m);
// Codecs, CompressionConfig and TransferCounters (compression_bindings.cc).
void BindCompression(pybind11::module_& m);
// ClientOptions, how a client connects (client_options_bindings.cc).
void BindClientOptions(pybind11::module_& m);
// ClientCore, the connection to a cluster (client_bindings.cc).
void BindClient(pybind11::module_& m);
// CtrData, ps_worker's synthetic click logs (ctr_data_bindings.cc).
void BindCtrData(pybind11::module_& m);
// cuda_built, encode_block, SliceEncoder and (with CUDA) DeviceGradient
// (device_bindings.cc).
void BindDevice(pybind11::module_& m);

}  // namespace taups::python

#endif  // TAUPS_WORKER_PYTHON_SRC_BINDINGS_H_
