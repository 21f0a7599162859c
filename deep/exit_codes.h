// The exit codes of every deep500 command and job (--help prints them).
#pragma once

namespace deep500 {

inline constexpr int kSuccess = 0;
inline constexpr int kCheckFailed = 1;    // a check, comparison or criterion failed
inline constexpr int kBadInput = 2;       // bad option, value, file or model (deep500::Error)
inline constexpr int kInternalError = 3;  // a bug of ours (DEEP500_ASSERT, any other exception)
inline constexpr int kInterrupted = 130;  // SIGINT/SIGTERM: stopped early, results written

}  // namespace deep500
