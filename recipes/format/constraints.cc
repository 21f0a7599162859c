#include "recipes/format/constraints.h"

#include <cmath>

#include <cctype>
#include <vector>

#include "deep/error.h"
#include "deep/text.h"

namespace deep500::recipes {

namespace {

struct Comparison {
  std::string op;  // >= > <= < == !=
  std::string value;
};

bool parse_comparison(std::string text, Comparison& c) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.erase(0, 1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  c.op = ">=";
  for (const char* op : {">=", "<=", "==", "!=", ">", "<"}) {
    if (text.rfind(op, 0) == 0) {
      c.op = op;
      text = text.substr(std::string(op).size());
      break;
    }
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.erase(0, 1);
  c.value = text;
  return !text.empty();
}

std::vector<Comparison> comparisons(const std::string& constraint) {
  std::vector<Comparison> out;
  for (const auto& part : split(constraint, ',')) {
    Comparison c;
    if (!parse_comparison(part, c)) return {};
    out.push_back(c);
  }
  return out;
}

bool holds(int order, const std::string& op) {
  if (op == ">=") return order >= 0;
  if (op == ">") return order > 0;
  if (op == "<=") return order <= 0;
  if (op == "<") return order < 0;
  if (op == "==") return order == 0;
  return order != 0;
}

bool version_like(const std::string& v) {
  return !v.empty() && std::isdigit(static_cast<unsigned char>(v[0]));
}

}  // namespace

void check_constraint_syntax(const std::string& constraint, bool version, const std::string& what) {
  if (constraint.empty()) return;
  const auto cs = comparisons(constraint);
  bool ok = !cs.empty();
  for (const auto& c : cs) {
    double v = 0;
    ok = ok && (version ? version_like(c.value) : parse_float(c.value, v) && std::isfinite(v));
  }
  DEEP500_CHECK(ok, what.empty() ? "" : what + ": ", "expected ",
                version ? "a version" : "a number",
                " constraint such as '>=2.6' or '>=1,<2', got '", constraint, "'");
}

int compare_versions(const std::string& a, const std::string& b) {
  const auto pa = split(a, '.'), pb = split(b, '.');
  for (size_t i = 0; i < std::max(pa.size(), pb.size()); ++i) {
    auto lead = [](const std::vector<std::string>& p, size_t i) {
      long long v = 0;
      if (i < p.size())
        for (char ch : p[i]) {
          if (!std::isdigit(static_cast<unsigned char>(ch)) || v > 1e15) break;
          v = v * 10 + (ch - '0');
        }
      return v;
    };
    const long long x = lead(pa, i), y = lead(pb, i);
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

bool number_satisfies(double value, const std::string& constraint) {
  for (const auto& c : comparisons(constraint)) {
    double bound = 0;
    if (!parse_float(c.value, bound) || !std::isfinite(bound)) return false;
    if (!holds(value < bound ? -1 : value > bound ? 1 : 0, c.op)) return false;
  }
  return true;
}

bool version_satisfies(const std::string& version, const std::string& constraint) {
  if (!version_like(version)) return false;
  for (const auto& c : comparisons(constraint))
    if (!holds(compare_versions(version, c.value), c.op)) return false;
  return true;
}

bool is_semantic_version(const std::string& text) {
  const std::string core = text.substr(0, text.find('-'));
  const auto parts = split(core, '.');
  if (parts.size() != 3) return false;
  for (const auto& p : parts) {
    int64_t v = 0;
    if (!parse_int(p, v) || v < 0 || (p.size() > 1 && p[0] == '0')) return false;
  }
  return core.size() == text.size() || text.size() > core.size() + 1;
}

}  // namespace deep500::recipes
