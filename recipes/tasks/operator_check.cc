#include "recipes/tasks/operator_check.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "deep/error.h"
#include "deep/text.h"
#include "operators/run_node.h"
#include "recipes/tasks/kernel_worker.h"
#include "recipes/tasks/operator_task.h"
#include "validation/gradient_check.h"

namespace deep500::recipes {

namespace {

using validation::CheckStatus;

std::string worst_element(const std::string& name, int64_t index) {
  return index >= 0 ? cat(name, "[", index, "]") : "";
}

BackendCheck forward_check(const ops::NodeSpec& node, const std::vector<Tensor>& inputs,
                           const std::string& b, bool custom) {
  const auto f = custom ? validation::check_forward_self_consistent(node, inputs, b)
                        : validation::check_forward(node, inputs, b);
  CheckLine line{
      "forward", validation::check_status_name(f.status),         f.max_abs_error, f.max_rel_error,
      "",        f.message.empty() ? f.implementation : f.message};
  if (f.worst_output >= 0 && f.max_abs_error > 0)
    line.worst = worst_element(node.outputs[static_cast<size_t>(f.worst_output)], f.worst_index);
  return {b, "forward", f.status, {line}};
}

// The verdict judged against the reference's backward, with the reference's
// own float64 check in its detail.
CheckLine against_reference_line(const validation::GradientVerdict& v) {
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
      ref.status == CheckStatus::Passed
          ? cat("the reference's, itself checked in ", name_of(ref.computed_in), " (", elements,
                " elements", directions ? " + random directions" : "", ")")
          : cat("the reference's, whose own check did not pass: ",
                ref.message.empty() ? validation::check_status_name(ref.status) : ref.message);
  const bool measured = cmp.compared_inputs > 0;
  return {"gradient (ref)",
          validation::check_status_name(v.status),
          measured ? cmp.max_abs_error : -1,
          measured ? cmp.max_rel_error : -1,
          "",
          cmp.status == CheckStatus::Passed
              ? cat(cmp.implementation, " backward against ", reference, ", ", cmp.compared_inputs,
                    " gradient(s)")
              : cmp.message};
}

BackendCheck gradient_check(const ops::NodeSpec& node, const std::vector<Tensor>& inputs,
                            const std::string& b) {
  const validation::GradientVerdict v = validation::judge_gradient(node, inputs, b);
  if (v.against_reference) return {b, "gradient", v.status, {against_reference_line(v)}};
  const auto& g = v.own;
  BackendCheck out{b, "gradient", g.status, {}};
  if (g.inputs.empty())
    out.lines.push_back(
        {"gradient", validation::check_status_name(g.status), -1, -1, "", g.message});
  for (const auto& c : g.inputs) {
    const bool measured = c.checked_elements > 0;
    const std::string method = cat(
        g.implementation, " in ", name_of(g.computed_in), ", ", c.checked_elements, " elements",
        c.directional_checked
            ? cat(" + 1 random direction (rel err ", short_number(c.directional_rel_error, 2), ")")
            : "");
    out.lines.push_back({"gradient " + c.name, validation::gradient_status_name(c.status),
                         measured ? c.max_abs_error : -1, measured ? c.max_rel_error : -1,
                         worst_element(c.name, c.worst_index),
                         c.message.empty() ? method : c.message});
  }
  return out;
}

// A backend whose checks could not run (its kernel crashed): one failed
// forward check saying why.
std::vector<BackendCheck> failed_checks(const std::string& backend, const std::string& failure) {
  return {{backend, "forward", CheckStatus::Failed, {{"forward", "FAILED", -1, -1, "", failure}}}};
}

std::vector<BackendCheck> checks_of_backend(const KernelJob& job, bool isolate) {
  if (!isolate) return check_backend(job.node, job.inputs, job.backend, job.grad, job.custom);
  ChildResult child = run_kernel_job(job);
  if (child.threw_error) throw Error(child.failure);  // bad input, as without isolation
  if (!child.completed) return failed_checks(job.backend, "the kernel " + child.failure);
  return decode_backend_checks(child.output);
}

ProblemCheck check_problem(const OperatorCheck& task, const OpDefinition& def, const Problem& p) {
  KernelJob job;
  job.kind = KernelJob::Kind::Check;
  job.node = make_node(task.op, def, p);
  job.inputs = ops::random_inputs(descs(p), task.seed, task.low, task.high);
  job.grad = task.grad;
  job.custom = def.without_reference();
  ProblemCheck out{p.label, {}};
  for (const auto& backend : backend_list(task.backends, def)) {
    if (task.interrupt && task.interrupt->load()) break;
    job.backend = backend;
    for (auto& c : checks_of_backend(job, task.isolate)) out.checks.push_back(std::move(c));
  }
  return out;
}

// Errors are numbers (-1: not measured), or "inf"/"nan" text (JSON has no
// such numbers).
nlohmann::json error_json(double e) {
  return std::isfinite(e) ? nlohmann::json(e) : nlohmann::json(cat(e));
}

double error_from(const nlohmann::json& j) {
  return j.is_string() ? std::stod(j.get<std::string>()) : j.get<double>();
}

CheckStatus status_named(const std::string& name) {
  for (CheckStatus s : {CheckStatus::Passed, CheckStatus::Failed, CheckStatus::Skipped})
    if (name == validation::check_status_name(s)) return s;
  throw Error(cat("operator check reply: unknown status '", name, "'"));
}

}  // namespace

int OperatorCheckOutcome::count(CheckStatus s) const {
  int n = 0;
  for (const auto& p : problems)
    n += static_cast<int>(std::count_if(p.checks.begin(), p.checks.end(),
                                        [&](const BackendCheck& c) { return c.status == s; }));
  return n;
}

bool OperatorCheckOutcome::passed() const {
  return count(CheckStatus::Failed) == 0 && count(CheckStatus::Passed) > 0;
}

std::vector<BackendCheck> check_backend(const ops::NodeSpec& node,
                                        const std::vector<Tensor>& inputs,
                                        const std::string& backend, bool grad, bool custom) {
  std::vector<BackendCheck> out{forward_check(node, inputs, backend, custom)};
  if (grad) out.push_back(gradient_check(node, inputs, backend));
  return out;
}

OperatorCheckOutcome run_operator_check(const OperatorCheck& task) {
  const OpDefinition def = find_definition(task.op);
  OperatorCheckOutcome out;
  for (const auto& p : task.problems) {
    if (task.interrupt && task.interrupt->load()) {
      out.interrupted = true;
      break;
    }
    out.problems.push_back(check_problem(task, def, p));
    if (task.on_problem) task.on_problem(out.problems.back());
  }
  if (task.interrupt && task.interrupt->load()) out.interrupted = true;
  return out;
}

namespace {

nlohmann::json checks_json(const std::vector<BackendCheck>& checks) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& c : checks) {
    nlohmann::json lines = nlohmann::json::array();
    for (const auto& l : c.lines)
      lines.push_back({{"check", l.check},
                       {"status", l.status},
                       {"max_abs_error", error_json(l.max_abs_error)},
                       {"max_rel_error", error_json(l.max_rel_error)},
                       {"worst", l.worst},
                       {"detail", l.detail}});
    j.push_back({{"backend", c.backend},
                 {"kind", c.kind},
                 {"status", validation::check_status_name(c.status)},
                 {"lines", lines}});
  }
  return j;
}

}  // namespace

nlohmann::json to_json(const OperatorCheckOutcome& outcome) {
  nlohmann::json problems = nlohmann::json::array();
  for (const auto& p : outcome.problems)
    problems.push_back({{"problem", p.problem}, {"checks", checks_json(p.checks)}});
  return {{"problems", problems},
          {"passed", outcome.count(CheckStatus::Passed)},
          {"failed", outcome.count(CheckStatus::Failed)},
          {"skipped", outcome.count(CheckStatus::Skipped)},
          {"interrupted", outcome.interrupted}};
}

std::string encode_backend_checks(const std::vector<BackendCheck>& checks) {
  return checks_json(checks).dump();
}

std::vector<BackendCheck> decode_backend_checks(const std::string& text) {
  try {
    std::vector<BackendCheck> out;
    for (const auto& c : nlohmann::json::parse(text)) {
      BackendCheck b{c.at("backend"), c.at("kind"), status_named(c.at("status")), {}};
      for (const auto& l : c.at("lines"))
        b.lines.push_back({l.at("check"), l.at("status"), error_from(l.at("max_abs_error")),
                           error_from(l.at("max_rel_error")), l.at("worst"), l.at("detail")});
      out.push_back(std::move(b));
    }
    return out;
  } catch (const std::exception& e) {  // JSON's, or stod's
    throw Error(cat("operator check reply: expected the checks as JSON, got: ", e.what()));
  }
}

}  // namespace deep500::recipes
