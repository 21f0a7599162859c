// NcclCommunicator: the Communicator of distributed/communicator.h whose
// collectives run on NVIDIA NCCL, one GPU per rank. Compiled when CUDA with
// NCCL is found at configure time (nccl_available() says whether this build
// has it); this header needs no CUDA headers.
//
// Tensors live in host memory, as everywhere in deep500: each collective
// copies this rank's input to its GPU, runs the NCCL collective there on
// the communicator's CUDA stream, and copies the result back, so a
// collective costs two PCIe copies beside the NCCL traffic.
// Point to point (send, recv, recv_any, probe_any, sendrecv) and barrier
// run on the bootstrap communicator: NCCL's point to point has neither tags
// nor a wildcard receive. split() splits the bootstrap and starts NCCL on
// each part. iallreduce / ibroadcast complete before they return (the base
// class's default).
//
// No hang: NCCL runs non-blocking (ncclConfig_t::blocking = 0), and every
// wait (joining the NCCL communicator, a collective) polls the CUDA stream
// and ncclCommGetAsyncError; past timeout_seconds() the NCCL communicator
// is aborted (ncclCommAbort) and the call throws Error naming this rank, the
// operation and its sequence number. After that, or after any NCCL error,
// every collective is an Error: end the job (abort_job()).
#pragma once

#include <memory>
#include <string>

#include "distributed/communicator.h"

namespace deep500::distributed {

// True when this build has the NCCL communicator.
bool nccl_available();

// CUDA devices visible to this process; 0 with `reason` (CUDA's error
// text, or "built without CUDA") when there are none.
int cuda_device_count(std::string* reason = nullptr);

// The device a rank uses by default: its rank among the ranks on this host
// (host_placement(), else the bootstrap rank) modulo the devices.
int default_cuda_device(const Communicator& bootstrap);

// Collective over `bootstrap` (every rank calls it): starts an NCCL
// communicator of the same ranks on CUDA `device` (-1:
// default_cuda_device), using `bootstrap` to share NCCL's unique id and for
// point to point. `bootstrap` must outlive the result; its timeout is the
// result's initial timeout. Error when this build has no NCCL, there is no
// CUDA device, or NCCL fails to start within the timeout (e.g. two ranks
// given one GPU).
std::unique_ptr<Communicator> make_nccl_communicator(Communicator& bootstrap, int device = -1);

}  // namespace deep500::distributed
