// Small text helpers shared by every layer (command lines, attribute text,
// settings): the one place that splits and parses.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace deep500 {

// "a,b,,c" -> {"a", "b", "", "c"}; "" -> {""}.
std::vector<std::string> split(const std::string& s, char sep);

// {"a", "b"} -> "a,b" (with sep ",").
std::string join(const std::vector<std::string>& parts, const std::string& sep = ",");

// Whole-string parses; false (v unspecified) when `s` is not exactly one
// number. parse_bool takes 1/0, true/false, on/off, yes/no (any case).
bool parse_int(const std::string& s, int64_t& v);
bool parse_float(const std::string& s, double& v);
bool parse_bool(const std::string& s, bool& v);

// A number in at most `significant` digits ("%.6g"), for tables and messages.
std::string short_number(double v, int significant = 6);

// The name in `known` closest to `name` by edit distance, for "did you
// mean" hints; "" when none is close (more than a third of it differs).
std::string closest_name(const std::string& name, const std::vector<std::string>& known);

}  // namespace deep500
