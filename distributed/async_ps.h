// The inconsistent parameter server (schemes async-ps and ssp:S of
// distributed/schemes.h), internal to distributed/.
//
// Rank 0 runs the server on a thread of its own beside its worker. The
// server holds the parameters (rank 0's after synchronize()) and the
// optimizer state: it applies each pushed gradient at once with rank 0's
// local optimizer, then sends the pushing worker the current parameters.
// Clocks count each worker's pushes; under a staleness bound S a worker
// whose clock is more than S ahead of the slowest running worker's is
// answered only once that worker catches up (stale-synchronous parallel).
// Remote workers talk to the server over a communicator of their own
// (split from the scheme's); rank 0's worker calls it directly.
//
// No hang: a server that hears from no worker within the communicator's
// timeout while some still run fails, and rank 0's worker throws its Error
// (naming the silent ranks) at its next push; a remote worker's wait for
// its answer is bounded by the same timeout.
#pragma once

#include <memory>

#include "distributed/schemes.h"

namespace deep500::distributed {

// `bound` < 0: no bound (async-ps). Every parameter must be float32.
std::unique_ptr<DistributedOptimizer> make_async_ps(Communicator& comm, training::Optimizer& local,
                                                    int bound);

}  // namespace deep500::distributed
