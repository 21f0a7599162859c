#include "training/checkpoint.h"

#include <cstdio>
#include <map>
#include <string>

#include "deep/error.h"
#include "training/data/hdf5_io.h"

namespace deep500::training {

namespace {

constexpr const char* kFormat = "deep500-checkpoint";
constexpr const char* kVersion = "2";  // "1": no checksum, no run attributes

// 64-bit FNV-1a over everything a checkpoint holds, in name order.
class Checksum {
 public:
  void add(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) h_ = (h_ ^ p[i]) * 0x100000001b3ull;
  }
  void add(const std::string& s) {
    add(s.data(), s.size());
    add("\0", 1);
  }
  std::string hex() const {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h_));
    return buf;
  }

 private:
  uint64_t h_ = 0xcbf29ce484222325ull;
};

std::string checksum(const std::map<std::string, Tensor>& entries,
                     const std::map<std::string, std::string>& run) {
  Checksum c;
  for (const auto& [name, t] : entries) {
    c.add(name);
    c.add(to_string(t.desc()));
    if (t.dtype() != DataType::String && t.numel() > 0) c.add(t.raw(), t.nbytes());
  }
  for (const auto& [key, value] : run) c.add(key), c.add(value);
  return c.hex();
}

// Names may contain '/' (optimizer slots "m/W1"), which HDF5 reads as a group
// path: escaped so every entry is one dataset under its section.
std::string escape(const std::string& name) {
  std::string s;
  for (char c : name) s += c == '%' ? "%25" : c == '/' ? "%2F" : std::string(1, c);
  return s;
}

std::string unescape(const std::string& name) {
  std::string s;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '%' && name.compare(i, 3, "%2F") == 0) {
      s += '/';
      i += 2;
    } else if (name[i] == '%' && name.compare(i, 3, "%25") == 0) {
      s += '%';
      i += 2;
    } else {
      s += name[i];
    }
  }
  return s;
}

}  // namespace

// Layout: params/<name>, optimizer/<name>, trainer/<name> (float64 scalars)
// and counters/{step,sampler_epoch,sampler_batch,rng_state}; root attributes
// format and version. Written atomically by write_hdf5.
void save_checkpoint(const std::string& path, const Checkpoint& c) {
  std::map<std::string, Tensor> entries;
  for (const auto& [name, t] : c.params) entries["params/" + escape(name)] = t;
  for (const auto& [name, t] : c.optimizer) entries["optimizer/" + escape(name)] = t;
  for (const auto& [name, v] : c.values) entries["trainer/" + escape(name)] = Tensor::scalar(v);
  entries["counters/step"] = Tensor::scalar(c.step);
  entries["counters/sampler_epoch"] = Tensor::scalar(c.sampler.epoch);
  entries["counters/sampler_batch"] = Tensor::scalar(c.sampler.batch);
  entries["counters/rng_state"] = Tensor::scalar(c.rng_state);
  std::map<std::string, std::string> attributes = {
      {"format", kFormat}, {"version", kVersion}, {"checksum", checksum(entries, c.run)}};
  for (const auto& [key, value] : c.run) attributes["run." + key] = value;
  try {
    write_hdf5(path, entries, attributes);
  } catch (const Error& e) {
    throw Error(cat(path, ": writing the checkpoint failed (", e.what(), ")"));
  }
}

Checkpoint load_checkpoint(const std::string& path) {
  std::map<std::string, std::string> attrs;
  std::map<std::string, Tensor> entries;
  try {
    attrs = read_hdf5_attributes(path);
    DEEP500_CHECK(attrs["format"] == kFormat, path,
                  ": not a deep500 checkpoint (attribute format != '", kFormat, "')");
    DEEP500_CHECK(attrs["version"] == kVersion || attrs["version"] == "1", path,
                  ": checkpoint version ", attrs["version"], ", expected ", kVersion, " or 1");
    entries = read_hdf5(path);
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.find(path) != std::string::npos) throw;
    throw Error(cat(path, ": reading the checkpoint failed (", what, ")"));
  }
  Checkpoint c;
  for (const auto& [key, value] : attrs)
    if (key.rfind("run.", 0) == 0) c.run[key.substr(4)] = value;
  if (attrs["version"] != "1")
    DEEP500_CHECK(attrs["checksum"] == checksum(entries, c.run), path,
                  ": the checkpoint's checksum does not match its contents (the file was changed "
                  "or damaged after it was written); refusing to resume from it");
  auto counter = [&](const std::string& name) -> const Tensor& {
    auto it = entries.find("counters/" + name);
    DEEP500_CHECK(it != entries.end() && it->second.numel() == 1, path,
                  ": checkpoint has no counter '", name, "'");
    return it->second;
  };
  c.step = counter("step").data<int64_t>()[0];
  c.sampler.epoch = counter("sampler_epoch").data<int64_t>()[0];
  c.sampler.batch = counter("sampler_batch").data<int64_t>()[0];
  c.rng_state = counter("rng_state").data<uint64_t>()[0];
  DEEP500_CHECK(c.step >= 0 && c.sampler.epoch >= 0 && c.sampler.batch >= 0, path,
                ": checkpoint counters out of range (step ", c.step, ", epoch ", c.sampler.epoch,
                ", batch ", c.sampler.batch, ")");
  for (auto& [key, t] : entries) {
    const auto slash = key.find('/');
    const std::string section = key.substr(0, slash), name = unescape(key.substr(slash + 1));
    if (section == "params")
      c.params[name] = t;
    else if (section == "optimizer")
      c.optimizer[name] = t;
    else if (section == "trainer")
      c.values[name] = t.at_as_double(0);
  }
  return c;
}

void check_checkpoint_matches(const Checkpoint& c, const network::Network& net,
                              const std::string& path) {
  const std::string model = net.model().path;
  for (const auto& name : net.parameters()) {
    auto it = c.params.find(name);
    DEEP500_CHECK(it != c.params.end(), path, ": checkpoint of a different network: parameter '",
                  name, "' of ", model, " is missing");
    TensorDesc want = net.parameter(name).desc();
    DEEP500_CHECK(it->second.desc() == want, path,
                  ": checkpoint of a different network: parameter '", name, "' is ",
                  to_string(it->second.desc()), ", ", model, " has ", to_string(want));
  }
  auto params = net.parameters();
  for (const auto& [name, t] : c.params) {
    bool known = false;
    for (const auto& p : params) known |= p == name;
    DEEP500_CHECK(known, path, ": checkpoint of a different network: parameter '", name,
                  "' is not a parameter of ", model);
  }
}

void check_checkpoint_run(const Checkpoint& c, const std::map<std::string, std::string>& run,
                          const std::string& path) {
  for (const auto& [key, value] : run) {
    auto it = c.run.find(key);
    if (it == c.run.end()) continue;  // a version 1 checkpoint records none
    DEEP500_CHECK(it->second == value, path, ": the checkpoint was written by a run with ", key,
                  " ", it->second, "; this run has ", value,
                  " (resume with the same model, data, batch size and optimizer)");
  }
}

}  // namespace deep500::training
