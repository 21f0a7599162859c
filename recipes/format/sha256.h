// SHA-256 of a file (OpenSSL's libcrypto), read in chunks, for the
// checksums of a recipe's artifacts.
#pragma once

#include <string>

namespace deep500::recipes {

// Lower-case hex digest; Error naming the file when it is not a regular
// file or cannot be read.
std::string sha256_of_file(const std::string& path);

}  // namespace deep500::recipes
