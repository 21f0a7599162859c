#include "recipes/operator_check.h"

#include <iomanip>
#include <sstream>

#include "deep/error.h"
#include "deep/text.h"
#include "validation/forward_check.h"
#include "validation/gradient_check.h"

namespace deep500::recipes {
std::string check_row(const std::string& b, const std::string& check, const std::string& status,
                      const std::string& abs, const std::string& rel, const std::string& worst,
                      const std::string& tail) {
  std::ostringstream out;
  out << std::left << std::setw(12) << b << std::setw(16) << check << std::setw(20) << status
      << std::setw(12) << abs << std::setw(12) << rel << std::setw(14) << worst << tail;
  return out.str();
}

std::string check_backend_rows(const ops::NodeSpec& node, const std::vector<Tensor>& inputs,
                               const std::string& b, bool grad, bool custom) {
  std::string out;
  auto row = [&](auto&&... cells) { out += "row\t" + check_row(cells...) + "\n"; };
  auto tally = [&](validation::CheckStatus s) {
    out += s == validation::CheckStatus::Passed   ? "tally\tP\n"
           : s == validation::CheckStatus::Failed ? "tally\tF\n"
                                                  : "tally\tS\n";
  };
  auto f = custom ? validation::check_forward_self_consistent(node, inputs, b)
                  : validation::check_forward(node, inputs, b);
  std::string worst =
      f.worst_output >= 0 && f.worst_index >= 0 && f.max_abs_error > 0
          ? cat(node.outputs[static_cast<size_t>(f.worst_output)], "[", f.worst_index, "]")
          : "-";
  row(b, "forward", validation::check_status_name(f.status), short_number(f.max_abs_error, 3),
      short_number(f.max_rel_error, 3), worst, f.message.empty() ? f.implementation : f.message);
  tally(f.status);
  if (!grad) return out;
  auto g = validation::check_gradient(node, inputs, b);
  if (g.inputs.empty())
    row(b, "gradient", validation::check_status_name(g.status), "-", "-", "-", g.message);
  for (const auto& c : g.inputs) {
    const bool measured = c.checked_elements > 0;
    row(b, "gradient " + c.name, validation::gradient_status_name(c.status),
        measured ? short_number(c.max_abs_error, 3) : "-",
        measured ? short_number(c.max_rel_error, 3) : "-",
        c.worst_index >= 0 ? cat(c.name, "[", c.worst_index, "]") : "-",
        c.message.empty()
            ? cat(g.implementation, " in ", name_of(g.computed_in), ", ", c.checked_elements,
                  " elements",
                  c.directional_checked ? cat(" + 1 random direction (rel err ",
                                              short_number(c.directional_rel_error, 2), ")")
                                        : "")
            : c.message);
  }
  tally(g.status);
  return out;
}

std::string failed_check_rows(const std::string& backend, const std::string& failure) {
  return cat("row\t", check_row(backend, "forward", "FAILED", "-", "-", "-", failure),
             "\ntally\tF\n");
}

}  // namespace deep500::recipes
