// Constraints of hardware and software manifests: comparisons joined by
// commas, all of which must hold, e.g. ">=2.6", ">=1.0,<2", "==4". A bare
// value means ">=". Versions compare numerically part by part ("2.10" >
// "2.9"; missing parts are 0; text after a part's digits is ignored).
#pragma once

#include <string>

namespace deep500::recipes {

// Error naming `what` (unless empty: the caller names the key) when
// `constraint` is malformed ("" is no constraint).
void check_constraint_syntax(const std::string& constraint, bool version, const std::string& what);

bool number_satisfies(double value, const std::string& constraint);
bool version_satisfies(const std::string& version, const std::string& constraint);

// -1, 0 or 1.
int compare_versions(const std::string& a, const std::string& b);

// MAJOR.MINOR.PATCH with an optional -PRERELEASE (semver.org).
bool is_semantic_version(const std::string& text);

}  // namespace deep500::recipes
