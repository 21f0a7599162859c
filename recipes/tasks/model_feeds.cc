#include "recipes/tasks/model_feeds.h"

#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <set>

#include "deep/npy.h"
#include "deep/output_file.h"
#include "operators/run_node.h"

namespace deep500::recipes {

namespace {

TensorDesc declared_desc(const onnx::ValueInfoProto& v) {
  TensorDesc d;
  if (v.type().has_tensor_type()) {
    const auto& tt = v.type().tensor_type();
    d.dtype = static_cast<DataType>(tt.elem_type());
    if (tt.has_shape())
      for (const auto& dim : tt.shape().dim())
        d.shape.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
  }
  return d;
}

}  // namespace

std::vector<std::pair<std::string, TensorDesc>> declared_inputs(const network::Model& model) {
  std::set<std::string> inits;
  for (const auto& i : model.graph().initializer()) inits.insert(i.name());
  std::vector<std::pair<std::string, TensorDesc>> out;
  for (const auto& in : model.graph().input())
    if (!inits.count(in.name())) out.emplace_back(in.name(), declared_desc(in));
  return out;
}

std::vector<std::pair<std::string, TensorDesc>> declared_outputs(const network::Model& model) {
  std::vector<std::pair<std::string, TensorDesc>> out;
  for (const auto& o : model.graph().output()) out.emplace_back(o.name(), declared_desc(o));
  return out;
}

namespace {

std::string names_of(const std::vector<std::pair<std::string, TensorDesc>>& inputs) {
  std::string s;
  for (const auto& [n, d] : inputs) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "none" : s;
}

bool fits(const TensorDesc& declared, const Tensor& t) {
  if (declared.dtype != DataType::Undefined && declared.dtype != t.dtype()) return false;
  if (declared.shape.size() != t.shape().size()) return false;
  for (size_t i = 0; i < declared.shape.size(); ++i)
    if (declared.shape[i] >= 0 && declared.shape[i] != t.shape()[i]) return false;
  return true;
}

std::string describe(const TensorDesc& d) {
  return d.dtype == DataType::Undefined ? "any " + to_string(d.shape) : to_string(d);
}

}  // namespace

std::map<std::string, Tensor> load_feeds(const network::Model& model,
                                         const std::vector<std::string>& specs, bool random_missing,
                                         uint64_t seed) {
  const auto inputs = declared_inputs(model);
  std::map<std::string, TensorDesc> declared(inputs.begin(), inputs.end());
  std::map<std::string, Tensor> feeds;
  for (const auto& spec : specs) {
    const auto eq = spec.find('=');
    DEEP500_CHECK(eq != std::string::npos && eq > 0 && eq + 1 < spec.size(), "--input '", spec,
                  "': expected NAME=FILE.npy");
    const std::string name = spec.substr(0, eq), file = spec.substr(eq + 1);
    auto it = declared.find(name);
    DEEP500_CHECK(it != declared.end(), "--input '", spec, "': ", model.path,
                  " has no input named '", name, "' (inputs: ", names_of(inputs), ")");
    DEEP500_CHECK(!feeds.count(name), "--input '", spec, "': input '", name, "' given twice");
    Tensor t = read_npy(file);
    DEEP500_CHECK(fits(it->second, t), "--input '", spec, "': ", file, " holds ",
                  to_string(t.desc()), " but input '", name, "' expects ", describe(it->second),
                  " (-1 = any)");
    feeds[name] = t;
  }
  uint64_t k = 0;
  for (const auto& [name, d] : inputs) {
    ++k;
    if (feeds.count(name)) continue;
    DEEP500_CHECK(random_missing, "input '", name, "' (", describe(d),
                  ") was not given: pass --input ", name, "=FILE.npy");
    bool dynamic = d.dtype == DataType::Undefined || d.dtype == DataType::String;
    for (auto v : d.shape) dynamic |= v < 0;
    DEEP500_CHECK(!dynamic, "input '", name, "' is declared ", describe(d),
                  " (-1 = any): random values need static shapes; pass --input ", name,
                  "=FILE.npy");
    feeds[name] = ops::random_inputs({d}, seed + k)[0];
  }
  return feeds;
}

std::string file_name_for(const std::string& value_name) {
  std::string s = value_name;
  for (auto& c : s)
    if (c == '/' || c == '\\') c = '_';
  if (s == "." || s == "..") s = "_" + s;
  return s;
}

void prepare_output_dir(const std::string& dir, const std::string& option) {
  DEEP500_CHECK(!dir.empty(), option, ": required");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  DEEP500_CHECK(!ec, option, " '", dir, "': cannot create the directory (", ec.message(), ")");
  check_output_path((std::filesystem::path(dir) / "output.npy").string(), option);
}

void write_outputs(const std::string& dir, const std::map<std::string, Tensor>& tensors) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  DEEP500_CHECK(!ec, "--output-dir '", dir, "': cannot create the directory (", ec.message(), ")");
  const fs::path staging = fs::path(dir) / cat(".deep500-staging-", ::getpid());
  fs::create_directory(staging, ec);
  DEEP500_CHECK(!ec, "--output-dir '", dir, "': cannot create '", staging.string(), "' (",
                ec.message(), ")");
  std::vector<std::pair<fs::path, const Tensor*>> written;
  try {
    for (const auto& [name, t] : tensors) {
      const fs::path file = staging / (file_name_for(name) + ".npy");
      write_npy(file.string(), t);
      written.emplace_back(file, &t);
    }
    for (const auto& [file, t] : written) {
      const fs::path target = fs::path(dir) / file.filename();
      install_output_file(file.string(), target.string(), "--output-dir");
      std::cout << "wrote " << target.string() << " " << to_string(t->desc()) << "\n";
    }
  } catch (...) {
    fs::remove_all(staging, ec);
    throw;
  }
  fs::remove(staging, ec);
}

}  // namespace deep500::recipes
