// `deep500 run RECIPE --record-reference N`: the recipe runs as a seed
// ensemble of N members (recipes/results/ensemble.h), and the ensemble's
// results folder gets reference.yaml, a reference log (docs/recipes.md)
// holding every member's per-epoch curves at the run's global batch size,
// for the criteria of recipes/judging/reference_band.h. The ensembles of
// the recipe's current reference log at other batch sizes are kept, so that
// runs at batch 32, 64 and 128 build up one file; its `metrics` are kept as
// well (a recipe without a reference log gets the members' means, each with
// three standard deviations as its tolerance).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "recipes/format/recipe.h"

namespace deep500::recipes {

struct RecordedMember {
  int64_t seed = 0;
  const Measurements* measurements = nullptr;
};

// The reference log's YAML text; `note` goes into its leading comment
// (where and when it was measured).
std::string recorded_reference_yaml(const Recipe& r, const std::vector<RecordedMember>& members,
                                    const std::string& note);

}  // namespace deep500::recipes
