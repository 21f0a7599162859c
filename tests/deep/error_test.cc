// Error messages are one line, whatever names from files they carry: a NUL
// no longer cuts the message, a newline no longer splits it.
#include "deep/error.h"

#include <gtest/gtest.h>

namespace deep500 {
namespace {

TEST(Error, ControlCharactersFromNamesAreEscaped) {
  const std::string name = std::string("we\0ird", 6) + "\nname\t\x1b[31m";
  Error e(cat("node '", name, "' (Relu): bad input"));
  EXPECT_EQ(std::string(e.what()), "node 'we\\0ird\\nname\\t\\x1b[31m' (Relu): bad input");
  EXPECT_EQ(one_line("plain text, unchanged"), "plain text, unchanged");
  EXPECT_EQ(one_line("\r\x7f"), "\\r\\x7f");
  EXPECT_EQ(one_line("caf\xc3\xa9"), "caf\xc3\xa9");  // UTF-8 stays as it is
}

}  // namespace
}  // namespace deep500
