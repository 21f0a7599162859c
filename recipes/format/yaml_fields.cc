#include "recipes/format/yaml_fields.h"

#include <yaml-cpp/depthguard.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include "deep/error.h"
#include "deep/onnx_tensor.h"
#include "deep/text.h"

namespace deep500::recipes {

namespace {

constexpr uint64_t kMaxYamlBytes = 16u << 20;

// %.15g: 0.05 stays 0.05 in the resolved recipe.
std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

std::string describe(const YAML::Node& n) {
  if (n.IsScalar()) return "'" + n.Scalar() + "'";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a map";
  return "nothing";
}

// Error naming FILE:LINE:COLUMN at the first key a map repeats (yaml-cpp
// keeps both, and lookups take the first: `epochs: 1` then `epochs: 7` ran
// one epoch).
void check_unique_keys(const YAML::Node& n, const std::string& path, int depth = 0) {
  if (depth > 64) return;  // deeper than any recipe; the readers refuse such nesting
  if (n.IsSequence())
    for (const auto& item : n) check_unique_keys(item, path, depth + 1);
  if (!n.IsMap()) return;
  std::set<std::string> seen;
  for (const auto& kv : n) {
    if (kv.first.IsScalar() && !seen.insert(kv.first.Scalar()).second) {
      const YAML::Mark m = kv.first.Mark();
      throw Error(cat(path, ":", m.line + 1, ":", m.column + 1, ": key '", kv.first.Scalar(),
                      "' is given twice in this map"));
    }
    check_unique_keys(kv.second, path, depth + 1);
  }
}

// Error naming FILE:LINE at the first byte that is not UTF-8 (it used to
// reach the results' JSON writer: an internal error after the run).
void check_utf8(const std::string& text, const std::string& path) {
  size_t line = 1;
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const size_t n = c < 0x80           ? 1
                     : (c >> 5) == 0x6  ? 2
                     : (c >> 4) == 0xe  ? 3
                     : (c >> 3) == 0x1e ? 4
                                        : 0;
    bool ok = n > 0 && i + n <= text.size() && !(n == 2 && c < 0xc2);
    for (size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(text[i + k]) >> 6) == 0x2;
    if (!ok) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", c);
      throw Error(cat(path, ":", line, ": byte ", hex,
                      " is not UTF-8 (a recipe or manifest is UTF-8 text)"));
    }
    if (c == '\n') ++line;
    i += n;
  }
}

}  // namespace

YAML::Node load_yaml_file(const std::string& path) {
  const uint64_t size = regular_file_size(path);
  DEEP500_CHECK(size <= kMaxYamlBytes, path, ": ", size, " bytes; a recipe or manifest is at most ",
                kMaxYamlBytes, " bytes");
  const std::string text = read_file(path);
  check_utf8(text, path);
  try {
    YAML::Node root = YAML::Load(text);
    check_unique_keys(root, path);
    return root;
  } catch (const YAML::DeepRecursion& e) {  // yaml-cpp's own text for it is "bad file"
    throw Error(cat(path, ":", e.mark.line + 1, ":", e.mark.column + 1, ": YAML nested ", e.depth(),
                    " levels deep here; a recipe or manifest nests a few levels"));
  } catch (const YAML::Exception& e) {
    throw Error(
        cat(path, ":", e.mark.line + 1, ":", e.mark.column + 1, ": YAML syntax error: ", e.msg));
  }
}

Fields::Fields(YAML::Node in, std::string file, std::string path, YAML::Node resolved,
               const Overrides* overrides)
    : in_(std::move(in)),
      file_(std::move(file)),
      path_(std::move(path)),
      resolved_(std::move(resolved)),
      overrides_(overrides) {
  if (in_ && !in_.IsNull() && !in_.IsMap()) {
    const YAML::Mark m = in_.Mark();
    throw Error(cat(m.is_null() ? file_ : cat(file_, ":", m.line + 1, ":", m.column + 1), ": ",
                    path_.empty() ? "the document" : path_, ": expected a map of keys, got ",
                    describe(in_)));
  }
}

std::string Fields::key_path(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

std::string Fields::where(const std::string& key) const {
  const std::string p = key_path(key);
  if (overrides_) {
    // The nearest --set that covers this key (it or a map above it).
    for (std::string q = p;; q = q.substr(0, q.rfind('.'))) {
      auto o = overrides_->find(q);
      if (o != overrides_->end()) return cat("--set ", o->first, "=", o->second, ": ", p);
      if (q.find('.') == std::string::npos) break;
    }
    // Else a --set inside this key's map (e.g. hyper.lr for hyper).
    auto inside = overrides_->lower_bound(p + ".");
    if (inside != overrides_->end() && inside->first.rfind(p + ".", 0) == 0)
      return cat("--set ", inside->first, "=", inside->second, ": ", p);
  }
  YAML::Mark m = has(key) ? in_[key].Mark() : in_ ? in_.Mark() : YAML::Mark::null_mark();
  if (m.is_null()) return cat(file_, ": ", p);
  return cat(file_, ":", m.line + 1, ":", m.column + 1, ": ", p);
}

void Fields::fail(const std::string& key, const std::string& problem) const {
  throw Error(cat(where(key), ": ", problem));
}

bool Fields::has(const std::string& key) const {
  return in_ && in_.IsMap() && in_[key] && !in_[key].IsNull();
}

std::optional<std::string> Fields::scalar(const std::string& key) {
  read_.push_back(key);
  if (!has(key)) return std::nullopt;
  const YAML::Node n = in_[key];
  if (!n.IsScalar()) fail(key, cat("expected a single value, got ", describe(n)));
  return n.Scalar();
}

std::string Fields::text(const std::string& key, const std::string& fallback) {
  const std::string v = scalar(key).value_or(fallback);
  resolved_[key] = v;
  return v;
}

std::string Fields::required_text(const std::string& key) {
  const auto v = scalar(key);
  if (!v || v->empty()) fail(key, "required, missing");
  resolved_[key] = *v;
  return *v;
}

int64_t Fields::integer(const std::string& key, int64_t fallback, int64_t min, int64_t max) {
  const auto text = scalar(key);
  int64_t v = fallback;
  if (text && (!parse_int(*text, v) || v < min || v > max))
    fail(key, cat("expected an integer in [", min, ", ", max, "], got '", *text, "'"));
  resolved_[key] = v;
  return v;
}

double Fields::number(const std::string& key, double fallback, double min, double max) {
  const auto text = scalar(key);
  double v = fallback;
  if (text && (!parse_float(*text, v) || !std::isfinite(v) || v < min || v > max))
    fail(key, cat("expected a number in [", min, ", ", max, "], got '", *text, "'"));
  resolved_[key] = number_text(v);
  return v;
}

bool Fields::flag(const std::string& key, bool fallback) {
  const auto text = scalar(key);
  bool v = fallback;
  if (text && !parse_bool(*text, v)) fail(key, cat("expected true or false, got '", *text, "'"));
  resolved_[key] = v;
  return v;
}

std::vector<std::string> Fields::texts(const std::string& key) {
  read_.push_back(key);
  std::vector<std::string> out;
  if (has(key)) {
    YAML::Node n = in_[key];
    if (n.IsScalar()) {
      out.push_back(n.Scalar());
    } else if (n.IsSequence()) {
      for (const auto& item : n) {
        if (!item.IsScalar()) fail(key, cat("expected a list of values, got ", describe(item)));
        out.push_back(item.Scalar());
      }
    } else {
      fail(key, cat("expected a list of values, got ", describe(n)));
    }
  }
  YAML::Node seq(YAML::NodeType::Sequence);
  for (const auto& v : out) seq.push_back(v);
  resolved_[key] = seq;
  return out;
}

std::map<std::string, std::string> Fields::text_map(const std::string& key) {
  read_.push_back(key);
  std::map<std::string, std::string> out;
  if (has(key)) {
    YAML::Node n = in_[key];
    if (!n.IsMap()) fail(key, cat("expected a map of NAME: VALUE, got ", describe(n)));
    for (const auto& kv : n) {
      if (!kv.second.IsScalar())
        fail(key,
             cat("'", kv.first.Scalar(), "': expected a single value, got ", describe(kv.second)));
      out[kv.first.Scalar()] = kv.second.Scalar();
    }
  }
  YAML::Node map(YAML::NodeType::Map);
  for (const auto& [k, v] : out) map[k] = v;
  resolved_[key] = map;
  return out;
}

std::map<std::string, double> Fields::number_map(const std::string& key) {
  std::map<std::string, double> out;
  for (const auto& [k, text] : text_map(key)) {
    double v = 0;
    if (!parse_float(text, v) || !std::isfinite(v))
      fail(key, cat("'", k, "': expected a number, got '", text, "'"));
    out[k] = v;
    resolved_[key][k] = number_text(v);
  }
  return out;
}

std::vector<std::vector<double>> Fields::number_rows(const std::string& key) {
  const YAML::Node rows = node(key);
  std::vector<std::vector<double>> out;
  if (!rows.IsDefined() || rows.IsNull()) return out;
  if (!rows.IsSequence())
    fail(key, cat("expected a list of lists of numbers, got ", describe(rows)));
  YAML::Node resolved(YAML::NodeType::Sequence);
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!rows[i].IsSequence())
      fail(key, cat("[", i, "]: expected a list of numbers, got ", describe(rows[i])));
    out.emplace_back();
    YAML::Node row(YAML::NodeType::Sequence);
    row.SetStyle(YAML::EmitterStyle::Flow);
    for (size_t j = 0; j < rows[i].size(); ++j) {
      double v = 0;
      if (!rows[i][j].IsScalar() || !parse_float(rows[i][j].Scalar(), v) || !std::isfinite(v))
        fail(key, cat("[", i, "][", j, "]: expected a number, got ", describe(rows[i][j])));
      out.back().push_back(v);
      row.push_back(number_text(v));
    }
    resolved.push_back(row);
  }
  resolved_[key] = resolved;
  return out;
}

Fields Fields::section(const std::string& key) {
  read_.push_back(key);
  resolved_[key] = YAML::Node(YAML::NodeType::Map);
  return Fields(has(key) ? in_[key] : YAML::Node(), file_, key_path(key), resolved_[key],
                overrides_);
}

YAML::Node Fields::node(const std::string& key) {
  read_.push_back(key);
  return has(key) ? in_[key] : YAML::Node();
}

void Fields::for_each_map(const std::string& key, const std::string& expected,
                          const std::function<void(Fields&)>& read) {
  YAML::Node list = node(key);
  const bool given = list.IsDefined() && !list.IsNull();
  if (given && !list.IsSequence()) fail(key, cat("expected a list of ", expected));
  YAML::Node resolved_list(YAML::NodeType::Sequence);
  for (size_t i = 0; given && i < list.size(); ++i) {
    YAML::Node resolved(YAML::NodeType::Map);
    Fields item(list[i], file_, cat(path_.empty() ? "" : path_ + ".", key, "[", i, "]"), resolved,
                nullptr);
    read(item);
    resolved_list.push_back(resolved);
  }
  resolve(key, resolved_list);
}

std::string Fields::absolute(const std::string& path) const {
  namespace fs = std::filesystem;
  if (path.empty() || fs::path(path).is_absolute()) return path;
  return (fs::absolute(file_).parent_path() / path).lexically_normal().string();
}

void Fields::resolve(const std::string& key, const YAML::Node& value) {
  resolved_[key] = value;
}

void Fields::finish() const {
  if (!in_ || !in_.IsMap()) return;
  for (const auto& kv : in_) {
    const std::string key = kv.first.Scalar();
    if (std::find(read_.begin(), read_.end(), key) != read_.end()) continue;
    std::vector<std::string> known = read_;
    std::sort(known.begin(), known.end());
    known.erase(std::unique(known.begin(), known.end()), known.end());
    const std::string hint = closest_name(key, known);
    const YAML::Mark m = kv.first.Mark();
    const bool overridden = overrides_ && overrides_->count(key_path(key));
    throw Error(cat(overridden ? where(key)
                    : m.is_null()
                        ? cat(file_, ": ", key_path(key))
                        : cat(file_, ":", m.line + 1, ":", m.column + 1, ": ", key_path(key)),
                    ": unknown key", hint.empty() ? "" : cat(" (did you mean '", hint, "'?)"),
                    "; known here: ", join(known, ", ")));
  }
}

void apply_override(YAML::Node root, const std::string& assignment, Overrides& overrides) {
  const size_t eq = assignment.find('=');
  DEEP500_CHECK(eq != std::string::npos && eq > 0, "--set '", assignment,
                "': expected PATH=VALUE, e.g. training.epochs=1");
  const std::string path = assignment.substr(0, eq), text = assignment.substr(eq + 1);
  YAML::Node value;
  try {
    value = YAML::Load(text);
  } catch (const YAML::Exception&) {
    value = YAML::Node(text);  // e.g. ">=2.6": text, as a quoted YAML string
  }
  const auto steps = split(path, '.');
  std::vector<YAML::Node> chain{root};
  for (size_t i = 0; i + 1 < steps.size(); ++i) {
    DEEP500_CHECK(!steps[i].empty(), "--set ", assignment, ": empty step in '", path, "'");
    YAML::Node next = chain.back()[steps[i]];
    DEEP500_CHECK(!next || next.IsNull() || next.IsMap(), "--set ", assignment, ": '",
                  join(std::vector<std::string>(steps.begin(), steps.begin() + i + 1), "."),
                  "' is not a map");
    if (!next || next.IsNull()) chain.back()[steps[i]] = YAML::Node(YAML::NodeType::Map);
    chain.push_back(chain.back()[steps[i]]);
  }
  DEEP500_CHECK(!steps.back().empty(), "--set ", assignment, ": empty step in '", path, "'");
  chain.back()[steps.back()] = value.IsNull() ? YAML::Node(text) : value;
  overrides[path] = text;
}

}  // namespace deep500::recipes
