// Typed reading of YAML with errors that point at the text. Every value of a
// recipe or manifest is read through a Fields, which knows the file and the
// dotted path of its map, checks each value's type and range, records what
// it read (defaults included) into the resolved tree that `run --dry-run`
// prints and results.json keeps, and, when finished, refuses the keys it
// never read, with a did-you-mean. Errors are one line:
//   FILE:LINE:COLUMN: training.epochs: expected an integer in [0, 100000], got 'five'
// and for a value given by --set: "--set training.epochs=five: ...".
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "deep/error.h"

namespace deep500::recipes {

// Reads a YAML file (a regular file of at most 16 MiB): Error "FILE: ..."
// when it cannot be read, "FILE:LINE:COLUMN: YAML syntax error: ..." when
// it does not parse.
YAML::Node load_yaml_file(const std::string& path);

// Values given on the command line (--set PATH=VALUE): dotted path -> the
// option's text, for error messages.
using Overrides = std::map<std::string, std::string>;

class Fields {
 public:
  // `in`: a map (null or absent = empty); `file`: where it was read;
  // `path`: the dotted path of the map ("" at the top); `resolved`: the map
  // node that receives what is read; `overrides` may be null.
  Fields(YAML::Node in, std::string file, std::string path, YAML::Node resolved,
         const Overrides* overrides);

  bool has(const std::string& key) const;
  std::string text(const std::string& key, const std::string& fallback);
  std::string required_text(const std::string& key);
  int64_t integer(const std::string& key, int64_t fallback, int64_t min, int64_t max);
  double number(const std::string& key, double fallback, double min, double max);
  bool flag(const std::string& key, bool fallback);
  // A sequence of scalars (a single scalar is a sequence of one).
  std::vector<std::string> texts(const std::string& key);
  // A map of scalars, e.g. environment variables or version constraints.
  std::map<std::string, std::string> text_map(const std::string& key);
  std::map<std::string, double> number_map(const std::string& key);
  // A list of lists of finite numbers (absent = empty), e.g. one curve per
  // run; errors name the element as KEY[i][j].
  std::vector<std::vector<double>> number_rows(const std::string& key);
  // A nested map (absent = empty); finish() it too.
  Fields section(const std::string& key);
  // The raw node (e.g. a manifest given as a path or inline); marks the key read.
  YAML::Node node(const std::string& key);
  // Records `value` as what `key` resolved to (e.g. a path made absolute).
  void resolve(const std::string& key, const YAML::Node& value);
  // `path` relative to the folder of the file this map was read from.
  std::string absolute(const std::string& path) const;
  // A list of maps (absent = empty): `read` gets each element's Fields
  // (path KEY[i]) and must finish it; Error naming `expected` otherwise.
  void for_each_map(const std::string& key, const std::string& expected,
                    const std::function<void(Fields&)>& read);

  // "FILE:LINE:COLUMN: PATH.KEY" (or "--set PATH.KEY=VALUE") for messages.
  std::string where(const std::string& key) const;
  [[noreturn]] void fail(const std::string& key, const std::string& problem) const;
  // Runs `check` (a parser or validator of the key's value); an Error it
  // throws becomes fail(key, its message).
  template <class Check>
  void check(const std::string& key, Check&& check) const {
    try {
      check();
    } catch (const Error& e) {
      fail(key, e.what());
    }
  }
  // Error for the first key that was never read, naming the known keys and
  // the closest one.
  void finish() const;

  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }

 private:
  std::string key_path(const std::string& key) const;
  // The key's scalar text (nullopt when absent); Error when not a scalar.
  std::optional<std::string> scalar(const std::string& key);

  YAML::Node in_;
  std::string file_, path_;
  YAML::Node resolved_;
  const Overrides* overrides_;
  std::vector<std::string> read_;  // in reading order, for the hint
};

// Sets PATH (dotted, e.g. "training.epochs") of `root` to VALUE read as YAML
// (so "[a, b]" is a list and "2" a number; text that is not YAML, such as
// ">=2.6", is taken as text), creating maps on the way; Error
// naming the option when the text is not PATH=VALUE or a step is not a map.
void apply_override(YAML::Node root, const std::string& assignment, Overrides& overrides);

}  // namespace deep500::recipes
