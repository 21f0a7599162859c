#include "recipes/format/sha256.h"

#include <openssl/evp.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

#include "deep/error.h"
#include "deep/onnx_tensor.h"

namespace deep500::recipes {

std::string sha256_of_file(const std::string& path) {
  regular_file_size(path);  // a regular file, not a device or a pipe
  std::ifstream in(path, std::ios::binary);
  DEEP500_CHECK(in, path, ": cannot open: ", std::strerror(errno));
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  DEEP500_CHECK(ctx && EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) == 1,
                "SHA-256: OpenSSL could not start a digest");
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    if (in.gcount() > 0)
      EVP_DigestUpdate(ctx.get(), buffer.data(), static_cast<size_t>(in.gcount()));
  }
  DEEP500_CHECK(in.eof(), path, ": read error");
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &length);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

}  // namespace deep500::recipes
