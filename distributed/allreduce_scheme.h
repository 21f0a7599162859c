// The allreduce scheme (consistent decentralized; distributed/schemes.h),
// internal to distributed/.
//
// Gradients are fused into buckets: in reverse name order (the order the
// backward pass of a graph built front to back produces them), a first
// bucket of first_bucket_mib, then bucket_mib each, one element type per
// bucket. Each bucket is allreduced (mean) with the blocking collective
// (MPI's fastest); the local optimizer then reads the averaged gradients as
// views of the buckets.
//
// With overlap, the scheme listens to the executor (executor_events()):
// each gradient the executor reports ready is copied into its bucket, and a
// full bucket goes to a communication thread that allreduces it on a
// communicator of its own (split at synchronize()) while backprop goes on.
// step() then allreduces what was not reported (other executors, the first
// step) and waits for the thread. Results are the same as without overlap
// (the same sums of the same buckets).
#pragma once

#include <memory>

#include "distributed/schemes.h"

namespace deep500::distributed {

std::unique_ptr<DistributedOptimizer> make_allreduce_scheme(Communicator& comm,
                                                            training::Optimizer& local,
                                                            const SchemeOptions& options);

}  // namespace deep500::distributed
