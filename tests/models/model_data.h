// Where the real-network test data lives (scripts/make_models.py output,
// the ctest fixture make_models) and small helpers shared by its tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "deep/error.h"
#include "deep/tensor.h"

namespace deep500::testing {

inline std::filesystem::path models_dir() {
  const char* env = std::getenv("DEEP500_MODELS_DIR");
  return env ? std::filesystem::path(env) : std::filesystem::path("build/models");
}

inline const nlohmann::json& manifest() {
  static const nlohmann::json m = [] {
    std::filesystem::path p = models_dir() / "manifest.json";
    std::ifstream in(p);
    if (!in)
      throw Error(cat("cannot open ", p.string(),
                      "; run scripts/make_models.py (the ctest fixture make_models) first"));
    return nlohmann::json::parse(in);
  }();
  return m;
}

inline double max_abs(const Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.numel(); ++i) m = std::max(m, std::fabs(t.at_as_double(i)));
  return m;
}

}  // namespace deep500::testing
