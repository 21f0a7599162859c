// The distributed timeline (Horovod's timeline): every rank's communicator
// calls (Communicator::start_timeline) gathered onto rank 0 as one Chrome
// trace with a process track per rank, so ui.perfetto.dev shows where ranks
// wait on each other (the gaps between calls are computation).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "distributed/communicator.h"

namespace deep500::distributed {

// Collective. On rank 0: the trace ({"traceEvents": [...]}: one complete
// event per call, pid = rank, args bytes), titled `title`; null elsewhere.
nlohmann::json gather_timeline(Communicator& comm, const std::string& title);

}  // namespace deep500::distributed
