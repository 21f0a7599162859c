#include "recipes/tasks/op_matrix.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "deep/error.h"
#include "deep/sizes.h"
#include "deep/text.h"
#include "metrics/arithmetic_peak.h"
#include "metrics/json_reporter.h"
#include "network/node_threads.h"
#include "operators/registry.h"
#include "operators/run_node.h"
#include "recipes/tasks/operator_task.h"
#include "validation/forward_check.h"
#include "validation/gradient_check.h"
#include "validation/op_specs.h"

namespace deep500::recipes {
namespace {

// One row of the matrix: a node, and its inputs made when the case runs
// (a shape file's problems are validated together, allocated one by one).
struct Case {
  std::string label;
  ops::NodeSpec node;
  std::function<std::vector<Tensor>()> make_inputs;
};

std::vector<Case> builtin_cases(const MatrixOptions& o) {
  std::vector<Case> cases;
  std::set<std::string> matched;
  for (const auto& spec : validation::op_specs()) {
    bool take = o.ops.empty();
    for (const auto& name : o.ops)
      if (name == spec.op_type || name == spec.label) {
        take = true;
        matched.insert(name);
      }
    if (take)
      cases.push_back(
          {spec.label, spec.node(), [&spec, seed = o.seed] { return spec.make_inputs(seed); }});
  }
  for (const auto& name : o.ops)
    DEEP500_CHECK(matched.count(name), "--ops '", name,
                  "': no built-in case has this op type or label (`deep500 op matrix --list` "
                  "lists them; other operators take their problems from --shapes)");
  return cases;
}

std::vector<Case> shape_file_cases(const MatrixOptions& o) {
  DEEP500_CHECK(o.ops.size() == 1, "--shapes: name the one op type of the file with --ops, got ",
                o.ops.size(), " names");
  OperatorSpec op;
  op.op_type = o.ops[0];
  const OpDefinition def = find_definition(op);
  std::vector<Case> cases;
  for (const auto& p : make_problems(op.op_type, {}, o.shapes_path, o.dtype, o.batch))
    cases.push_back({cat(op.op_type, " ", p.label), make_node(op, def, p),
                     [d = descs(p), seed = o.seed] { return ops::random_inputs(d, seed); }});
  return cases;
}

const char* status_of(validation::CheckStatus s) {
  return s == validation::CheckStatus::Passed   ? "passed"
         : s == validation::CheckStatus::Failed ? "FAILED"
                                                : "refused";
}

// The cell of a check's outcome (a ForwardCheckResult or a
// BackwardComparison); the reference's passing cells are the oracle.
template <class Check>
MatrixCell checked_cell(const Case& c, const std::string& backend, const char* pass,
                        const Check& r) {
  MatrixCell cell;
  cell.case_label = c.label;
  cell.op_type = c.node.op_type;
  cell.backend = backend;
  cell.pass = pass;
  cell.status = status_of(r.status);
  if (backend == "reference" && r.status == validation::CheckStatus::Passed) cell.status = "oracle";
  cell.detail = r.message;
  cell.implementation = r.implementation;
  cell.max_abs_error = r.max_abs_error;
  cell.max_rel_error = r.max_rel_error;
  return cell;
}

MatrixCell forward_cell(const Case& c, const std::vector<Tensor>& inputs,
                        const std::string& backend, const ops::Registry& registry) {
  return checked_cell(c, backend, "forward",
                      validation::check_forward(c.node, inputs, backend, {}, registry));
}

// Every backend's backward against the reference's. The reference's own is
// the oracle (the op sweep tests check it against float64 finite
// differences on the built-in cases; on a large shape that would take
// thousands of evaluations); refused when it has none.
MatrixCell backward_cell(const Case& c, const std::vector<Tensor>& inputs,
                         const std::string& backend, const ops::Registry& registry) {
  return checked_cell(
      c, backend, "backward",
      validation::compare_backward_with_reference(c.node, inputs, backend, {}, registry));
}

// Times every cell that passed its check (or is the reference), in
// o.rounds rounds of random order; a cell that crashes or throws while timed
// is FAILED.
void time_cells(OpMatrix& m, const std::vector<Case>& cases, const std::vector<size_t>& case_of,
                const MatrixOptions& o, std::ostream& info) {
  metrics::Runner runner(metrics::round_settings(o.runner, o.rounds));
  std::vector<std::vector<metrics::Result>> parts(m.cells.size());
  size_t held = cases.size();  // one case's inputs at a time
  std::vector<Tensor> inputs;
  auto stop = [&] { return o.interrupt && o.interrupt->load(); };
  for (int round = 0; round < o.rounds && !stop(); ++round) {
    if (o.rounds > 1) info << "op matrix: timing round " << round + 1 << " of " << o.rounds << "\n";
    for (size_t i : round_order(m.cells.size(), o.rounds, round, o.seed)) {
      MatrixCell& cell = m.cells[i];
      if (stop()) break;
      if (cell.status != "passed" && cell.status != "oracle") continue;
      const Case& c = cases[case_of[i]];
      if (held != case_of[i]) inputs = c.make_inputs(), held = case_of[i];
      KernelRun k{c.node,
                  inputs,
                  cell.backend,
                  cell.pass == "backward",
                  c.label,
                  o.seed,
                  o.isolate && round == 0,
                  o.threads};
      k.registry = o.registry;
      KernelMeasurement measured = measure_kernel(k, runner);
      if (!measured.error.empty()) {  // passed its check, then crashed or threw while timed
        cell.status = "FAILED";
        cell.detail = "while timed: " + measured.error;
      }
      if (measured.result) parts[i].push_back(std::move(*measured.result));
    }
  }
  for (size_t i = 0; i < m.cells.size(); ++i)
    if (!parts[i].empty() && m.cells[i].status != "FAILED")
      m.cells[i].timing = pool_rounds(parts[i], o.runner);
}

// Ratios to the fastest backend of each (case, pass), percents of the peak.
void relate(OpMatrix& m) {
  std::map<std::pair<std::string, std::string>, double> fastest;
  for (const auto& c : m.cells)
    if (c.timing) {
      auto& f = fastest[{c.case_label, c.pass}];
      const double t = c.timing->summary.median;
      if (f == 0 || t < f) f = t;
    }
  for (auto& c : m.cells) {
    if (!c.timing) continue;
    const double f = fastest[{c.case_label, c.pass}];
    if (f > 0) c.ratio_to_fastest = c.timing->summary.median / f;
    metrics::attach_peak(*c.timing, m.peaks);
    c.percent_of_peak = c.timing->percent_of_peak_flops;
    c.percent_of_peak_bandwidth = c.timing->percent_of_peak_bandwidth;
  }
}

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

std::string sci(double v) {
  std::ostringstream s;
  s << std::setprecision(2) << std::scientific << v;
  return s.str();
}

// What the table shows for a cell: "12.3 us 1.00x", "FAILED 3.1e-02" (the
// largest absolute error), "refused", ...
std::string table_entry(const MatrixCell& c) {
  if (c.timing) {
    const double t = c.timing->summary.median;
    std::ostringstream s;
    s << std::setprecision(3) << (t < 1e-3 ? t * 1e6 : t * 1e3) << (t < 1e-3 ? " us " : " ms ")
      << fixed(c.ratio_to_fastest, 2) << "x";
    return s.str();
  }
  if (c.status == "FAILED") return "FAILED " + sci(c.max_abs_error);
  return c.status;
}

}  // namespace

std::vector<std::string> matrix_backends(const MatrixOptions& o) {
  const ops::Registry& registry = o.registry ? *o.registry : ops::Registry::global();
  if (o.backends.empty() || (o.backends.size() == 1 && o.backends[0] == "all"))
    return registry.backends();
  registry.check_backend_names(o.backends, "--backend");
  return o.backends;
}

int OpMatrix::failed() const {
  return static_cast<int>(std::count_if(cells.begin(), cells.end(),
                                        [](const auto& c) { return c.status == "FAILED"; }));
}

OpMatrix run_op_matrix(const MatrixOptions& o, std::ostream& info) {
  check_thread_count(o.threads, "--threads");
  o.runner.validate();  // before any work
  check_rounds(o.rounds);
  const std::vector<Case> cases = o.shapes_path.empty() ? builtin_cases(o) : shape_file_cases(o);
  const ops::Registry& registry = o.registry ? *o.registry : ops::Registry::global();
  OpMatrix m;
  m.backends = matrix_backends(o);
  network::ThreadScope threads(o.threads);
  if (o.speed && o.measure_peak) {
    bool host = false;
    std::vector<Device> devices;
    for (const auto& b : m.backends) {
      const Device d = registry.capabilities(b).device;
      host = host || d.is_host();
      if (!d.is_host()) devices.push_back(d);
    }
    m.peaks = metrics::measure_peaks(host, o.threads, devices);
  }
  auto stop = [&] { return o.interrupt && o.interrupt->load(); };
  std::vector<size_t> case_of;  // per cell
  for (size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    const std::vector<Tensor> inputs = c.make_inputs();
    for (const auto& backend : m.backends) {
      if (stop()) break;
      m.cells.push_back(forward_cell(c, inputs, backend, registry));
      case_of.push_back(k);
      const bool forward_ok = m.cells.back().status != "FAILED";
      if (!o.backward || !forward_ok || m.cells.back().status == "refused") continue;
      m.cells.push_back(backward_cell(c, inputs, backend, registry));
      case_of.push_back(k);
    }
    info << "op matrix: " << c.label << " checked\n";
  }
  if (o.speed) time_cells(m, cases, case_of, o, info);
  m.interrupted = stop();
  relate(m);
  return m;
}

size_t count_matrix_cases(const MatrixOptions& o) {
  return (o.shapes_path.empty() ? builtin_cases(o) : shape_file_cases(o)).size();
}

std::vector<FastestBackend> fastest_backends(const OpMatrix& m) {
  // (op type, pass) -> case -> backend -> median
  std::map<std::pair<std::string, std::string>,
           std::map<std::string, std::map<std::string, double>>>
      medians;
  for (const auto& c : m.cells)
    if (c.timing) medians[{c.op_type, c.pass}][c.case_label][c.backend] = c.timing->summary.median;
  std::vector<FastestBackend> out;
  for (const auto& [key, cases] : medians) {
    std::map<std::string, std::pair<double, int>> log_speedup;  // backend -> (sum, count)
    for (const auto& [label, by_backend] : cases) {
      auto ref = by_backend.find("reference");
      if (ref == by_backend.end() || ref->second <= 0) continue;
      for (const auto& [backend, t] : by_backend)
        if (backend != "reference" && t > 0) {
          auto& [sum, n] = log_speedup[backend];
          sum += std::log(ref->second / t);
          ++n;
        }
    }
    FastestBackend f{key.first, key.second, "", 0, 0};
    for (const auto& [backend, sn] : log_speedup) {
      const double speedup = std::exp(sn.first / sn.second);
      if (speedup > f.speedup) f = {key.first, key.second, backend, speedup, sn.second};
    }
    out.push_back(f);
  }
  return out;
}

void write_matrix_json(const OpMatrix& m, const metrics::Context& context, std::ostream& out) {
  out << matrix_json(m, context).dump(2) << "\n";
}

nlohmann::json matrix_json(const OpMatrix& m, const metrics::Context& context) {
  nlohmann::json j = metrics::result_header(context);
  j["backends"] = m.backends;
  j["peak"] = {{"flops_per_second", m.peaks.cpu.flops_per_second},
               {"implementation", metrics::describe(m.peaks.cpu)}};
  for (const auto& [device, p] : m.peaks.devices)
    j["device_peaks"][device] = {{"flops_per_second", p.flops_per_second},
                                 {"bytes_per_second", p.bytes_per_second},
                                 {"implementation", p.implementation}};
  j["interrupted"] = m.interrupted;
  j["cells"] = nlohmann::json::array();
  for (const auto& c : m.cells) {
    nlohmann::json cell = {{"case", c.case_label},
                           {"op_type", c.op_type},
                           {"backend", c.backend},
                           {"pass", c.pass},
                           {"status", c.status},
                           {"detail", c.detail},
                           {"implementation", c.implementation},
                           {"max_abs_error", c.max_abs_error},
                           {"max_rel_error", c.max_rel_error},
                           {"percent_of_peak", c.percent_of_peak},
                           {"percent_of_peak_bandwidth", c.percent_of_peak_bandwidth},
                           {"ratio_to_fastest", c.ratio_to_fastest}};
    cell["timing"] = c.timing ? metrics::to_json(*c.timing) : nlohmann::json();
    j["cells"].push_back(cell);
  }
  j["fastest_backends"] = nlohmann::json::array();
  for (const auto& f : fastest_backends(m))
    j["fastest_backends"].push_back({{"op_type", f.op_type},
                                     {"pass", f.pass},
                                     {"backend", f.backend},
                                     {"speedup_over_reference", f.speedup},
                                     {"cases", f.cases}});
  return j;
}

void write_matrix_csv(const OpMatrix& m, std::ostream& out) {
  out << "case,op_type,backend,pass,status,max_abs_error,max_rel_error,median_s,ci_low_s,"
         "ci_high_s,gflops,percent_of_peak,ratio_to_fastest,implementation,detail\n";
  auto quoted = [](const std::string& s) {
    std::string q = "\"";
    for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return q + "\"";
  };
  for (const auto& c : m.cells) {
    const auto* s = c.timing ? &c.timing->summary : nullptr;
    out << quoted(c.case_label) << "," << c.op_type << "," << c.backend << "," << c.pass << ","
        << c.status << "," << c.max_abs_error << "," << c.max_rel_error << ","
        << (s ? cat(s->median) : "") << "," << (s ? cat(s->ci_low) : "") << ","
        << (s ? cat(s->ci_high) : "") << ","
        << (c.timing ? cat(c.timing->rates.flops_per_second * 1e-9) : "") << ","
        << (c.timing ? cat(c.percent_of_peak) : "") << ","
        << (c.timing ? cat(c.ratio_to_fastest) : "") << "," << quoted(c.implementation) << ","
        << quoted(c.detail) << "\n";
  }
}

void write_matrix_table(const OpMatrix& m, std::ostream& out) {
  constexpr int kCase = 40, kPass = 9, kCell = 22;
  out << std::left << std::setw(kCase) << "case" << std::setw(kPass) << "pass";
  for (const auto& b : m.backends) out << std::setw(kCell) << b;
  out << "\n";
  // Rows in the order cells were made: each (case, pass) once.
  std::vector<std::pair<std::string, std::string>> rows;
  std::map<std::tuple<std::string, std::string, std::string>, const MatrixCell*> at;
  for (const auto& c : m.cells) {
    std::pair<std::string, std::string> row{c.case_label, c.pass};
    if (std::find(rows.begin(), rows.end(), row) == rows.end()) rows.push_back(row);
    at[{c.case_label, c.pass, c.backend}] = &c;
  }
  for (const auto& [label, pass] : rows) {
    out << std::setw(kCase) << label.substr(0, kCase - 1) << std::setw(kPass) << pass;
    for (const auto& b : m.backends) {
      auto it = at.find({label, pass, b});
      out << std::setw(kCell) << (it == at.end() ? "-" : table_entry(*it->second));
    }
    out << "\n";
  }
  const auto fastest = fastest_backends(m);
  if (!fastest.empty())
    out << "fastest non-reference backend per op type (geometric mean of reference / its "
           "time):\n";
  for (const auto& f : fastest)
    out << "  " << std::setw(24) << f.op_type << std::setw(kPass) << f.pass
        << (f.backend.empty() ? std::string("reference only")
                              : cat(f.backend, " ", fixed(f.speedup, 2), "x over the reference (",
                                    f.cases, f.cases == 1 ? " case)" : " cases)"))
        << "\n";
  if (m.peaks.cpu.flops_per_second > 0 || !m.peaks.devices.empty())
    out << "peaks: " << metrics::describe(m.peaks) << "\n";
  out << "cells: " << m.cells.size() << ", FAILED: " << m.failed()
      << (m.interrupted ? " (interrupted)" : "") << "\n";
}

}  // namespace deep500::recipes
