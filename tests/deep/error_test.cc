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

// A broken invariant is an InternalError naming the source line, never an
// Error (which the command line reports as bad input, exit 2).
TEST(Error, AFailedAssertionIsAnInternalErrorNamingItsLine) {
  const int slots = 2;
  try {
    DEEP500_ASSERT(slots > 2, "slot ", slots, " of 2");
    FAIL() << "no exception";
  } catch (const Error&) {
    FAIL() << "an invariant is not the user's input";
  } catch (const InternalError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("error_test.cc:"), std::string::npos) << m;
    EXPECT_NE(m.find(": invariant failed: slots > 2: slot 2 of 2"), std::string::npos) << m;
  }
  EXPECT_NO_THROW(DEEP500_ASSERT(slots == 2, "unused"));
}

}  // namespace
}  // namespace deep500
