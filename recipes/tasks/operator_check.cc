#include "recipes/tasks/operator_check.h"

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

namespace {

// The line the caller counts a check by.
std::string tally_line(validation::CheckStatus s) {
  return s == validation::CheckStatus::Passed   ? "tally\tP\n"
         : s == validation::CheckStatus::Failed ? "tally\tF\n"
                                                : "tally\tS\n";
}

// The "gradient (ref)" row of a verdict judged against the reference's
// backward, with the reference's own float64 check in it.
std::string backward_against_reference_row(const validation::GradientVerdict& v,
                                           const std::string& b) {
  const auto& ref = v.reference;
  const auto& cmp = *v.against_reference;
  int64_t elements = 0;
  bool directions = !ref.inputs.empty();
  for (const auto& c : ref.inputs)
    if (c.status == validation::GradientStatus::Passed) {
      elements += c.checked_elements;
      directions = directions && c.directional_checked;
    }
  const std::string reference =
      ref.status == validation::CheckStatus::Passed
          ? cat("the reference's, itself checked in ", name_of(ref.computed_in), " (", elements,
                " elements", directions ? " + random directions" : "", ")")
          : cat("the reference's, whose own check did not pass: ",
                ref.message.empty() ? validation::check_status_name(ref.status) : ref.message);
  const std::string tail = cmp.status == validation::CheckStatus::Passed
                               ? cat(cmp.implementation, " backward against ", reference, ", ",
                                     cmp.compared_inputs, " gradient(s)")
                               : cmp.message;
  const bool measured = cmp.compared_inputs > 0;
  return "row\t" +
         check_row(b, "gradient (ref)", validation::check_status_name(v.status),
                   measured ? short_number(cmp.max_abs_error, 3) : "-",
                   measured ? short_number(cmp.max_rel_error, 3) : "-", "-", tail) +
         "\n" + tally_line(v.status);
}

}  // namespace

std::string check_backend_rows(const ops::NodeSpec& node, const std::vector<Tensor>& inputs,
                               const std::string& b, bool grad, bool custom) {
  std::string out;
  auto row = [&](auto&&... cells) { out += "row\t" + check_row(cells...) + "\n"; };
  auto tally = [&](validation::CheckStatus s) { out += tally_line(s); };
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
  const validation::GradientVerdict v = validation::judge_gradient(node, inputs, b);
  if (v.against_reference) return out + backward_against_reference_row(v, b);
  const auto& g = v.own;
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
