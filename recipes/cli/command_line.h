// The deep500 command line as a table each command file fills in: a file
// registers its subcommand (name, positionals, options, the function that
// runs it) through Command, and CommandLine parses argv and runs the one
// chosen. Only command_line.cc sees CLI11, so the command files stay light
// to compile.
//
// Contract: every `into` reference must outlive CommandLine::run (the
// command files keep their options in a shared_ptr captured by the action).
// Flags are CLI11's: "-v,--verbose"; a leading "!" (e.g. "!--no-isolate")
// makes the flag store false.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "metrics/runner.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace deep500::cli {

class CommandLine;

class Command {
 public:
  // A required positional argument.
  Command& positional(const std::string& name, std::string& into, const std::string& help);
  // An optional positional argument.
  Command& optional_positional(const std::string& name, std::string& into, const std::string& help);
  // Between `min` and `max` positional arguments (max -1: no limit); min > 0: required.
  Command& positionals(const std::string& name, std::vector<std::string>& into,
                       const std::string& help, int min = 1, int max = -1);

  Command& option(const std::string& flags, std::string& into, const std::string& help);
  Command& option(const std::string& flags, int& into, const std::string& help);
  Command& option(const std::string& flags, long& into, const std::string& help);
  Command& option(const std::string& flags, long long& into, const std::string& help);
  Command& option(const std::string& flags, unsigned long long& into, const std::string& help);
  Command& option(const std::string& flags, unsigned long& into, const std::string& help);
  Command& option(const std::string& flags, double& into, const std::string& help);
  // Repeatable: each occurrence adds one value.
  Command& option(const std::string& flags, std::vector<std::string>& into,
                  const std::string& help);
  // Repeatable, and each value split at commas.
  Command& list(const std::string& flags, std::vector<std::string>& into, const std::string& help);
  Command& list(const std::string& flags, std::vector<int64_t>& into, const std::string& help);
  // Exactly two comma-separated numbers, e.g. LOW,HIGH.
  Command& pair(const std::string& flags, std::vector<double>& into, const std::string& help);
  // One of `allowed`.
  Command& choice(const std::string& flags, std::string& into, const std::string& help,
                  const std::vector<std::string>& allowed);
  Command& flag(const std::string& flags, bool& into, const std::string& help);
  // --setting NAME=VALUE (into `settings`) and --plugin LIB.so (loaded
  // before the command runs): the options of every command that runs
  // operators or networks.
  Command& operator_options(std::vector<std::string>& settings);
  // --warmup, --min-reps, --max-reps, --min-time, --max-time: the timing
  // loop of every command that benchmarks (metrics/runner.h).
  Command& runner_options(metrics::RunnerSettings& runner);
  // Marks the option or positional added last as required.
  Command& required();

  // A nested subcommand, e.g. `op check`; this command then needs one.
  Command subcommand(const std::string& name, const std::string& help);
  // What runs when this command is chosen; returns the exit code (commands.h).
  Command& runs(std::function<int()> action);

 private:
  friend class CommandLine;
  Command(CLI::App* app, CommandLine* line) : app_(app), line_(line) {}
  CLI::App* app_;
  CommandLine* line_;
  CLI::Option* last_ = nullptr;
};

class CommandLine {
 public:
  CommandLine(const std::string& description, const std::string& footer);
  ~CommandLine();
  Command add(const std::string& name, const std::string& help);
  // Parses argv, registers the backends, loads the --plugin libraries and
  // runs the chosen command. Returns its exit code; a parse error or an
  // Error is one line "deep500: error: ..." and kBadInput, any other
  // exception kInternalError.
  int run(int argc, char** argv);

 private:
  friend class Command;
  std::unique_ptr<CLI::App> app_;
  std::vector<std::pair<CLI::App*, std::function<int()>>> actions_;
  std::vector<std::string> plugins_;
  bool parse_only_ = false;
};

}  // namespace deep500::cli
