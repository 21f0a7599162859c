// The command-line conventions the benchmark programs share (CLI11): an
// error is one line naming the program, exit 2; --help exits 0; settings by
// name through --setting NAME=VALUE (network/settings.h).
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace deep500::bench {

// `program: <what> (--help for usage)` on a parse error.
inline void one_line_errors(CLI::App& app, const std::string& program) {
  app.failure_message([program](const CLI::App*, const CLI::Error& e) {
    return program + ": " + e.what() + " (--help for usage)\n";
  });
}

// Parses argv; exits 0 after --help, 2 after an error.
inline void parse_or_exit(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e) == 0 ? 0 : 2);
  }
}

// The repeatable --setting NAME=VALUE option, one value per use.
inline void add_setting_option(CLI::App& app, std::vector<std::string>& into,
                               const std::string& example) {
  app.add_option("--setting", into,
                 "NAME=VALUE, repeatable, e.g. " + example + " (list: deep500 settings)")
      ->type_name("NAME=VALUE")
      ->allow_extra_args(false);
}

}  // namespace deep500::bench
