#include "training/data/file_io.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "deep/error.h"
#include "deep/onnx_tensor.h"
#include "deep/sizes.h"

namespace deep500::training {

FileBytes read_maybe_gzip(const std::string& path) {
  regular_file_size(path);  // not a device or pipe without end
  const uint64_t budget = memory_budget();
  gzFile f = gzopen(path.c_str(), "rb");
  DEEP500_CHECK(f != nullptr, "cannot open ", path, ": ", std::strerror(errno));
  FileBytes out;
  out.gzip = gzdirect(f) == 0;
  gzbuffer(f, 1 << 17);
  constexpr unsigned kChunk = 1u << 20;
  while (true) {
    const size_t at = out.bytes.size();
    out.bytes.resize(at + kChunk);
    const int n = gzread(f, out.bytes.data() + at, kChunk);
    if (n < 0) {
      out.bytes.resize(at);
      int code = 0;
      const char* msg = gzerror(f, &code);
      out.gz_problem = msg != nullptr ? msg : "read error";
      break;
    }
    out.bytes.resize(at + static_cast<size_t>(n));
    if (n == 0) break;
    if (out.bytes.size() > budget) {  // a gzip bomb ends here, not in an out-of-memory kill
      gzclose(f);
      throw Error(cat(path, ": decompresses to more than the memory budget (", format_bytes(budget),
                      "; setting memory.budget)"));
    }
  }
  if (out.gz_problem.empty()) {
    int code = 0;
    const char* msg = gzerror(f, &code);
    if (code != Z_OK && code != Z_STREAM_END) out.gz_problem = msg != nullptr ? msg : "read error";
  }
  gzclose(f);
  out.bytes.shrink_to_fit();
  return out;
}

}  // namespace deep500::training
