#include "recipes/cli/command_line.h"

#include <iostream>

#include <CLI/CLI.hpp>

#include "deep/error.h"
#include "deep/output_file.h"
#include "deep/sizes.h"
#include "deep/text.h"
#include "frameworks/register_all.h"
#include "operators/custom_op_loader.h"
#include "recipes/cli/commands.h"

namespace deep500::cli {

Command& Command::positional(const std::string& name, std::string& into, const std::string& help) {
  last_ = app_->add_option(name, into, help)->required();
  return *this;
}

Command& Command::optional_positional(const std::string& name, std::string& into,
                                      const std::string& help) {
  last_ = app_->add_option(name, into, help);
  return *this;
}

Command& Command::positionals(const std::string& name, std::vector<std::string>& into,
                              const std::string& help, int min, int max) {
  last_ = app_->add_option(name, into, help);
  if (max >= 0) last_->expected(min, max);
  if (min > 0) last_->required();
  return *this;
}

Command& Command::option(const std::string& flags, std::string& into, const std::string& help) {
  last_ = app_->add_option(flags, into, help);
  return *this;
}
Command& Command::option(const std::string& flags, int& into, const std::string& help) {
  last_ = app_->add_option(flags, into, help);
  return *this;
}
Command& Command::option(const std::string& flags, long& into, const std::string& help) {
  last_ = app_->add_option(flags, into, help);
  return *this;
}
Command& Command::option(const std::string& flags, long long& into, const std::string& help) {
  last_ = app_->add_option(flags, into, help);
  return *this;
}
Command& Command::option(const std::string& flags, unsigned long long& into,
                         const std::string& help) {
  last_ = app_->add_option(flags, into, help);
  return *this;
}
Command& Command::option(const std::string& flags, unsigned long& into, const std::string& help) {
  last_ = app_->add_option(flags, into, help);
  return *this;
}
Command& Command::option(const std::string& flags, double& into, const std::string& help) {
  last_ = app_->add_option(flags, into, help);
  return *this;
}
Command& Command::option(const std::string& flags, std::vector<std::string>& into,
                         const std::string& help) {
  last_ = app_->add_option(flags, into, help);
  return *this;
}

Command& Command::list(const std::string& flags, std::vector<std::string>& into,
                       const std::string& help) {
  last_ = app_->add_option(flags, into, help)->delimiter(',');
  return *this;
}
Command& Command::list(const std::string& flags, std::vector<int64_t>& into,
                       const std::string& help) {
  last_ = app_->add_option(flags, into, help)->delimiter(',');
  return *this;
}

Command& Command::pair(const std::string& flags, std::vector<double>& into,
                       const std::string& help) {
  last_ = app_->add_option(flags, into, help)->delimiter(',')->expected(2);
  return *this;
}

Command& Command::choice(const std::string& flags, std::string& into, const std::string& help,
                         const std::vector<std::string>& allowed) {
  last_ = app_->add_option(flags, into, help)->check(CLI::IsMember(allowed));
  return *this;
}

Command& Command::flag(const std::string& flags, bool& into, const std::string& help) {
  last_ = app_->add_flag(flags, into, help);
  return *this;
}

Command& Command::operator_options(std::vector<std::string>& settings) {
  app_->add_option("--setting", settings,
                   "NAME=VALUE, e.g. executor.buffer_reuse=false or onednn.direct_loops=false "
                   "(list: deep500 settings)");
  last_ = app_->add_option("--plugin", line_->plugins_,
                           "custom-operator library (operators/custom_op_abi.h) to load; "
                           "repeatable");
  return *this;
}

Command& Command::runner_options(metrics::RunnerSettings& r) {
  option("--warmup", r.warmup, "untimed repetitions (default 3)");
  option("--min-reps", r.min_repetitions, "minimum repetitions (default 10)");
  option("--max-reps", r.max_repetitions, "maximum repetitions (default 10000)");
  option("--min-time", r.min_time_seconds, "minimum seconds measured (default 0.2)");
  option("--max-time", r.max_time_seconds, "maximum seconds measured (default 10)");
  return choice("--cache", r.cache,
                "hot (default: samples back to back) or cold (the last level cache, a GPU's L2, "
                "flushed before each sample)",
                {"hot", "cold"});
}

Command& Command::required() {
  DEEP500_CHECK(last_ != nullptr, "Command::required: no option added yet");
  last_->required();
  return *this;
}

Command Command::subcommand(const std::string& name, const std::string& help) {
  app_->require_subcommand(1);
  return Command(app_->add_subcommand(name, help), line_);
}

Command& Command::runs(std::function<int()> action) {
  line_->actions_.emplace_back(app_, std::move(action));
  return *this;
}

CommandLine::CommandLine(const std::string& description, const std::string& footer)
    : app_(std::make_unique<CLI::App>(description)) {
  app_->footer(footer);
  app_->require_subcommand(1);
  app_->set_version_flag("--version", version_text,
                         "print version, git revision, build type and backends, and exit");
  // Test hook of tests/docs/check_docs.py: parse the command line (option
  // names, value types, required arguments) and exit 0 without running it.
  app_->add_flag("--parse-only", parse_only_)->group("");
}

CommandLine::~CommandLine() = default;

Command CommandLine::add(const std::string& name, const std::string& help) {
  return Command(app_->add_subcommand(name, help), this);
}

int CommandLine::run(int argc, char** argv) {
  try {
    app_->parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app_->exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app_->exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app_->exit(e);
  } catch (const CLI::ParseError& e) {
    print_stderr_line(cat("error: ", e.what(), " (see --help)"));
    return kBadInput;
  }
  if (parse_only_) return kSuccess;
  try {
    frameworks::register_all();
    for (const auto& path : plugins_) ops::load_custom_operators(path, ops::Registry::global());
    for (const auto& [app, action] : actions_)
      if (app->parsed()) return action();
  } catch (const Error& e) {
    print_stderr_line(cat("error: ", e.what()));
    return kBadInput;
  } catch (const std::bad_alloc&) {  // memory outside tensors' budget ran out
    print_stderr_line(
        cat("error: out of memory: the system refused an allocation (the memory "
            "budget is ",
            format_bytes(memory_budget()), " from ", memory_budget_source(),
            "; set memory.budget lower to stop sooner with a clearer message)"));
    return kBadInput;
  } catch (const std::exception& e) {
    print_stderr_line(cat("internal error: ", e.what()));
    return kInternalError;
  }
  return kSuccess;
}

}  // namespace deep500::cli
