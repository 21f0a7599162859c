// Fills the global operator registry with every backend this build has.
// Executables call it once at start-up; levels never include frameworks/.
#pragma once

#include <string>
#include <vector>

namespace deep500::frameworks {

void register_all();                        // idempotent, thread-safe
std::vector<std::string> built_backends();  // e.g. {"onednn", "reference"}

}  // namespace deep500::frameworks
