#include "training/data/file_io.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "deep/error.h"
#include "deep/onnx_tensor.h"
#include "deep/sizes.h"

namespace deep500::training {

FileBytes read_maybe_gzip(
    const std::string& path,
    const std::function<std::optional<uint64_t>(const std::string& bytes)>& declared_size) {
  regular_file_size(path);  // not a device or pipe without end
  const uint64_t budget = memory_budget();
  gzFile f = gzopen(path.c_str(), "rb");
  DEEP500_CHECK(f != nullptr, "cannot open ", path, ": ", std::strerror(errno));
  FileBytes out;
  out.gzip = gzdirect(f) == 0;
  gzbuffer(f, 1 << 17);
  constexpr unsigned kChunk = 1u << 20;
  std::optional<uint64_t> declared;
  while (true) {
    if (!declared && declared_size) declared = declared_size(out.bytes);
    const size_t at = out.bytes.size();
    if (declared && at > *declared) {  // past what the header declares: that is enough
      out.bytes.resize(*declared + 1);
      out.stopped_past_declared = true;
      break;
    }
    unsigned chunk = kChunk;
    if (declared) chunk = static_cast<unsigned>(std::min<uint64_t>(kChunk, *declared + 1 - at));
    out.bytes.resize(at + chunk);
    const int n = gzread(f, out.bytes.data() + at, chunk);
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
