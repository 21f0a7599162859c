#include "operators/einsum_equation.h"

#include <algorithm>
#include <cctype>

#include "deep/error.h"

namespace deep500::ops {

Shape EinsumLabels::output_shape() const {
  Shape s;
  for (int l : output) s.push_back(sizes.count(l) ? sizes.at(l) : 1);
  return s;
}

std::string einsum_label_name(int l) {
  return l >= kEllipsisLabel ? "...#" + std::to_string(l - kEllipsisLabel)
                             : std::string(1, static_cast<char>(l));
}

EinsumEquation::EinsumEquation(const std::string& equation, size_t operands,
                               const std::string& node)
    : node_(node) {
  for (char c : equation)
    if (c != ' ') equation_ += c;
  std::string lhs = equation_;
  if (auto arrow = equation_.find("->"); arrow != std::string::npos) {
    lhs = equation_.substr(0, arrow);
    rhs_ = equation_.substr(arrow + 2);
    explicit_ = true;
  }
  size_t start = 0;
  while (true) {
    size_t comma = lhs.find(',', start);
    terms_.push_back(lhs.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  DEEP500_CHECK(terms_.size() == operands, node_, ": equation '", equation, "' has ", terms_.size(),
                " operand terms but the node has ", operands, " inputs");
}

// Label ids of one term for an operand of `rank` dimensions, the ellipsis
// as one placeholder (-1); `ellipsis` receives its dimension count (-1:
// none).
std::vector<int> EinsumEquation::parse_term(const std::string& term, int64_t rank,
                                            const std::string& what, int64_t& ellipsis) const {
  std::vector<int> letters;
  ellipsis = -1;
  size_t at = 0;
  for (size_t i = 0; i < term.size(); ++i) {
    if (term.compare(i, 3, "...") == 0) {
      DEEP500_CHECK(ellipsis < 0, node_, ": ", what, " '", term, "' has more than one ellipsis");
      ellipsis = 0;
      at = letters.size();
      i += 2;
      continue;
    }
    DEEP500_CHECK(std::isalpha(static_cast<unsigned char>(term[i])), node_, ": ", what, " '", term,
                  "' contains '", term[i], "' (expected letters and '...')");
    letters.push_back(term[i]);
  }
  if (ellipsis < 0) return letters;
  ellipsis = rank - static_cast<int64_t>(letters.size());
  DEEP500_CHECK(ellipsis >= 0, node_, ": ", what, " '", term,
                "' names more dimensions than the operand's rank ", rank);
  std::vector<int> out(letters.begin(), letters.begin() + static_cast<std::ptrdiff_t>(at));
  out.push_back(-1);
  out.insert(out.end(), letters.begin() + static_cast<std::ptrdiff_t>(at), letters.end());
  return out;
}

EinsumLabels EinsumEquation::resolve(const std::vector<Shape>& shapes) const {
  const size_t n = shapes.size();
  std::vector<std::vector<int>> terms(n);
  std::vector<int64_t> ells(n);
  int64_t widest = 0;
  for (size_t k = 0; k < n; ++k) {
    terms[k] = parse_term(terms_[k], static_cast<int64_t>(shapes[k].size()),
                          "term #" + std::to_string(k), ells[k]);
    widest = std::max(widest, ells[k]);
  }
  // The placeholder as right-aligned ellipsis labels.
  auto expand = [&](const std::vector<int>& t, int64_t e) {
    std::vector<int> r;
    for (int l : t) {
      if (l != -1) {
        r.push_back(l);
        continue;
      }
      for (int64_t j = widest - e; j < widest; ++j) r.push_back(kEllipsisLabel + int(j));
    }
    return r;
  };
  EinsumLabels out;
  std::map<int, int> count;
  for (size_t k = 0; k < n; ++k) {
    terms[k] = expand(terms[k], ells[k]);
    DEEP500_CHECK(terms[k].size() == shapes[k].size(), node_, ": term '", terms_[k], "' has ",
                  terms[k].size(), " labels but input #", k, " has rank ", shapes[k].size());
    for (size_t d = 0; d < terms[k].size(); ++d) {
      const int l = terms[k][d];
      const int64_t size = shapes[k][d];
      ++count[l];
      auto it = out.sizes.find(l);
      if (it == out.sizes.end() || it->second == 1) {
        out.sizes[l] = size;
      } else {
        DEEP500_CHECK(size == 1 || size == it->second, node_, ": label '", einsum_label_name(l),
                      "' has size ", it->second, " and ", size, " in different operands");
      }
    }
  }
  if (explicit_) {
    int64_t e = 0, letters = 0;
    for (char ch : rhs_) letters += std::isalpha(static_cast<unsigned char>(ch)) ? 1 : 0;
    for (int l : expand(parse_term(rhs_, widest + letters, "output", e), widest)) {
      DEEP500_CHECK(l >= kEllipsisLabel || out.sizes.count(l), node_, ": output label '",
                    einsum_label_name(l), "' does not appear in any input term");
      DEEP500_CHECK(std::find(out.output.begin(), out.output.end(), l) == out.output.end(), node_,
                    ": output label '", einsum_label_name(l), "' appears twice");
      out.output.push_back(l);
    }
  } else {
    for (int64_t j = 0; j < widest; ++j) out.output.push_back(kEllipsisLabel + int(j));
    for (auto& [l, c] : count)
      if (l < kEllipsisLabel && c == 1) out.output.push_back(l);
  }
  out.terms = std::move(terms);
  return out;
}

}  // namespace deep500::ops
