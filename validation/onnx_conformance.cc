#include "validation/onnx_conformance.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <set>

#include <onnx/onnx-data_pb.h>

#include "deep/child_process.h"
#include "deep/onnx_tensor.h"
#include "network/model.h"
#include "network/reference_executor.h"
#include "validation/compare.h"

namespace fs = std::filesystem;

namespace deep500::validation {

const char* status_name(CaseStatus s) {
  switch (s) {
    case CaseStatus::Passed: return "passed";
    case CaseStatus::Failed: return "failed";
    case CaseStatus::Skipped: return "skipped";
  }
  return "?";
}

std::vector<std::string> find_cases(const std::string& root) {
  std::vector<std::string> out;
  DEEP500_CHECK(fs::is_directory(root), root, ": not a directory (expected an ONNX test folder)");
  if (fs::exists(fs::path(root) / "model.onnx")) return {root};
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file() && e.path().filename() == "model.onnx")
      out.push_back(e.path().parent_path().string());
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

std::vector<std::string> sorted_files(const fs::path& dir, const std::string& prefix) {
  std::vector<std::pair<int, std::string>> found;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string n = e.path().filename().string();
    if (n.rfind(prefix, 0) == 0 && n.size() > 3 && n.substr(n.size() - 3) == ".pb")
      found.push_back({std::atoi(n.c_str() + prefix.size()), e.path().string()});
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(f.second);
  return out;
}

// ONNX 1.12's test data stores bfloat16 tensors as uint16 bit patterns; read
// them as the type the graph declares.
Tensor as_declared(Tensor t, const onnx::ValueInfoProto& vi) {
  if (vi.type().tensor_type().elem_type() == static_cast<int>(DataType::BFloat16) &&
      t.dtype() == DataType::UInt16) {
    Tensor b(DataType::BFloat16, t.shape());
    std::memcpy(b.raw(), t.raw(), t.nbytes());
    return b;
  }
  return t;
}

// Reads input_*/output_*.pb as the kind of value the graph declares.
network::Value read_value(const std::string& file, const onnx::ValueInfoProto& vi) {
  const auto& type = vi.type();
  if (type.has_sequence_type()) {
    onnx::SequenceProto p;
    DEEP500_CHECK(p.ParseFromString(read_file(file)), file,
                  ": not a serialized onnx.SequenceProto (the graph declares '", vi.name(),
                  "' a sequence)");
    return network::value_from_onnx(p, file);
  }
  if (type.has_optional_type()) {
    onnx::OptionalProto p;
    DEEP500_CHECK(p.ParseFromString(read_file(file)), file,
                  ": not a serialized onnx.OptionalProto (the graph declares '", vi.name(),
                  "' an optional)");
    return network::value_from_onnx(p, file);
  }
  DEEP500_CHECK(!type.has_map_type() && !type.has_sparse_tensor_type(), file, ": '", vi.name(),
                "' is a map or sparse tensor (not supported)");
  return as_declared(from_onnx(read_tensor_proto(file), file), vi);
}

// Empty when equal; else what differs. Sequences compare length first,
// optionals presence first, then element by element.
std::string compare_values(const network::Value& actual, const network::Value& expected,
                           Tolerance tol) {
  using K = network::Value::Kind;
  if (actual.kind() != expected.kind())
    return cat("expected a ", network::kind_name(expected.kind()), " (", expected.describe(),
               "), got ", actual.describe());
  switch (expected.kind()) {
    case K::Tensor: {
      Comparison c = compare(actual.tensor(""), expected.tensor(""), tol);
      return c.ok ? "" : c.message;
    }
    case K::Sequence: {
      const auto& a = actual.sequence("");
      const auto& e = expected.sequence("");
      if (a.size() != e.size())
        return cat("sequence has ", a.size(), " elements, expected ", e.size());
      for (size_t i = 0; i < e.size(); ++i) {
        Comparison c = compare(a[i], e[i], tol);
        if (!c.ok) return cat("sequence element ", i, ": ", c.message);
      }
      return "";
    }
    case K::Optional: {
      bool has = actual.has_element(""), want = expected.has_element("");
      if (has != want)
        return cat("optional is ", has ? "present" : "empty", ", expected ",
                   want ? "present" : "empty");
      if (!want) return "";
      std::string m = compare_values(actual.element(""), expected.element(""), tol);
      return m.empty() ? "" : "optional's value: " + m;
    }
  }
  return "";
}

void run_case_body(const std::string& dir, const ConformanceOptions& opt, CaseResult& r) {
  auto model = network::load_model((fs::path(dir) / "model.onnx").string());
  std::set<std::string> types;
  for (const auto& n : model.graph().node()) types.insert(n.op_type());
  for (const auto& t : types) r.op_types += (r.op_types.empty() ? "" : ",") + t;

  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0)
      sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  DEEP500_CHECK(!sets.empty(), dir, ": no test_data_set_* folder");

  // ONNX's own test data contains feeds that do not match the declared dims.
  network::ReferenceExecutor exec(model, {.backends = opt.backends, .strict_feed_shapes = false});
  for (const auto& set : sets) {
    auto in_files = sorted_files(set, "input_");
    auto out_files = sorted_files(set, "output_");
    std::map<std::string, network::Value> feeds;
    // Inputs bind to the graph inputs that are not initializers, in order.
    std::set<std::string> inits;
    for (const auto& i : model.graph().initializer()) inits.insert(i.name());
    std::vector<const onnx::ValueInfoProto*> names;
    for (const auto& vi : model.graph().input())
      if (!inits.count(vi.name())) names.push_back(&vi);
    DEEP500_CHECK(in_files.size() <= names.size(), set.string(), ": ", in_files.size(),
                  " input files for ", names.size(), " graph inputs");
    for (size_t i = 0; i < in_files.size(); ++i)
      feeds[names[i]->name()] = read_value(in_files[i], *names[i]);

    auto outputs = exec.run_values(feeds);
    std::set<std::string> impls;
    for (const auto& rec : exec.records()) impls.insert(rec.implementation);
    r.implementations.clear();
    for (const auto& s : impls) r.implementations += (r.implementations.empty() ? "" : ",") + s;

    DEEP500_CHECK(static_cast<int>(out_files.size()) == model.graph().output_size(), set.string(),
                  ": ", out_files.size(), " output files for ", model.graph().output_size(),
                  " graph outputs");
    for (size_t i = 0; i < out_files.size(); ++i) {
      const auto& vi = model.graph().output(static_cast<int>(i));
      const std::string& name = vi.name();
      network::Value expected = read_value(out_files[i], vi);
      std::string m = compare_values(outputs.at(name), expected, {opt.rtol, opt.atol});
      DEEP500_CHECK(m.empty(), "output '", name, "': ", m);
    }
  }
  r.status = CaseStatus::Passed;
}

}  // namespace

CaseResult run_case(const std::string& dir, const ConformanceOptions& opt) {
  CaseResult r;
  r.path = dir;
  r.name = fs::path(dir).filename().string();
  auto t0 = std::chrono::steady_clock::now();
  try {
    run_case_body(dir, opt, r);
  } catch (const std::exception& e) {
    r.status = CaseStatus::Failed;
    r.message = e.what();
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

namespace {
// Child -> parent wire format: status byte, then "op_types\0implementations\0message".
std::string encode(const CaseResult& r) {
  std::string s(1, static_cast<char>('0' + static_cast<int>(r.status)));
  s += r.op_types;
  s.push_back('\0');
  s += r.implementations;
  s.push_back('\0');
  s += r.message;
  return s;
}

void decode(const std::string& s, CaseResult& r) {
  r.status = static_cast<CaseStatus>(s[0] - '0');
  size_t a = s.find('\0', 1);
  size_t b = a == std::string::npos ? a : s.find('\0', a + 1);
  if (b == std::string::npos) {
    r.status = CaseStatus::Failed;
    r.message = "child process sent a malformed result";
    return;
  }
  r.op_types = s.substr(1, a - 1);
  r.implementations = s.substr(a + 1, b - a - 1);
  r.message = s.substr(b + 1);
}
}  // namespace

CaseResult run_case_isolated(const std::string& dir, const ConformanceOptions& opt) {
  if (!opt.isolate) return run_case(dir, opt);
  CaseResult r;
  r.path = dir;
  r.name = fs::path(dir).filename().string();
  auto t0 = std::chrono::steady_clock::now();
  ChildResult child = run_in_child([&] { return encode(run_case(dir, opt)); }, opt.timeout_seconds);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (child.completed) {
    decode(child.output, r);
  } else {
    r.status = CaseStatus::Failed;
    r.message = child.failure;
  }
  return r;
}

}  // namespace deep500::validation
