#include "training/data/npz.h"

#include <zlib.h>

#include <algorithm>
#include <limits>

#include "deep/error.h"
#include "deep/npy.h"
#include "deep/onnx_tensor.h"

namespace deep500::training {
namespace {

constexpr uint32_t kEndSig = 0x06054b50;       // end of central directory
constexpr uint32_t kZip64EndSig = 0x06064b50;  // ZIP64 end of central directory
constexpr uint32_t kZip64LocSig = 0x07064b50;  // ZIP64 end locator
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kLocalSig = 0x04034b50;

// Bounds-checked little-endian reads from the archive bytes.
class Reader {
 public:
  Reader(const std::string& b, const std::string& path) : b_(b), path_(path) {}
  uint64_t le(uint64_t at, int n, const char* what) const {
    DEEP500_CHECK(at <= b_.size() && static_cast<uint64_t>(n) <= b_.size() - at,
                  "read_npz: ", path_, ": truncated or corrupt zip archive: ", what, " at byte ",
                  at, " runs past the end of the file (", b_.size(), " bytes)");
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b_[at + i]);
    return v;
  }
  std::string str(uint64_t at, uint64_t n, const char* what) const {
    DEEP500_CHECK(at <= b_.size() && n <= b_.size() - at, "read_npz: ", path_,
                  ": truncated or corrupt zip archive: ", what, " at byte ", at,
                  " runs past the end of the file (", b_.size(), " bytes)");
    return b_.substr(at, n);
  }

 private:
  const std::string& b_;
  const std::string& path_;
};

struct Entry {
  std::string name;
  uint16_t flags = 0, method = 0;
  uint32_t crc = 0;
  uint64_t csize = 0, usize = 0, local_offset = 0;
};

std::vector<Entry> central_directory(const std::string& b, const std::string& path) {
  const Reader r(b, path);
  // The end record is in the last 22 + 65535 (comment) bytes.
  DEEP500_CHECK(b.size() >= 22, "read_npz: ", path, ": not a zip archive (", b.size(),
                " bytes, an .npz needs at least 22)");
  int64_t end = -1;
  const int64_t lowest = std::max<int64_t>(0, static_cast<int64_t>(b.size()) - 22 - 65535);
  for (int64_t at = static_cast<int64_t>(b.size()) - 22; at >= lowest; --at) {
    if (r.le(at, 4, "signature") == kEndSig) {
      end = at;
      break;
    }
  }
  DEEP500_CHECK(end >= 0, "read_npz: ", path,
                ": not a zip archive or truncated (no end-of-central-directory record)");
  uint64_t count = r.le(end + 10, 2, "entry count");
  uint64_t cd_size = r.le(end + 12, 4, "directory size");
  uint64_t cd_offset = r.le(end + 16, 4, "directory offset");
  if (count == 0xffff || cd_offset == 0xffffffff || cd_size == 0xffffffff) {
    DEEP500_CHECK(end >= 20 && r.le(end - 20, 4, "ZIP64 locator") == kZip64LocSig,
                  "read_npz: ", path,
                  ": corrupt zip archive: ZIP64 values without a ZIP64 locator");
    const uint64_t z = r.le(end - 20 + 8, 8, "ZIP64 end offset");
    DEEP500_CHECK(r.le(z, 4, "ZIP64 end record") == kZip64EndSig, "read_npz: ", path,
                  ": corrupt zip archive: no ZIP64 end record at byte ", z);
    count = r.le(z + 32, 8, "entry count");
    cd_size = r.le(z + 40, 8, "directory size");
    cd_offset = r.le(z + 48, 8, "directory offset");
  }
  DEEP500_CHECK(cd_offset <= b.size() && cd_size <= b.size() - cd_offset, "read_npz: ", path,
                ": truncated zip archive: the central directory (", cd_size, " bytes at ",
                cd_offset, ") runs past the end of the file (", b.size(), " bytes)");
  std::vector<Entry> out;
  uint64_t at = cd_offset;
  for (uint64_t i = 0; i < count; ++i) {
    DEEP500_CHECK(r.le(at, 4, "directory entry") == kCentralSig, "read_npz: ", path,
                  ": corrupt zip archive: central directory entry ", i, " has a bad signature");
    Entry e;
    e.flags = static_cast<uint16_t>(r.le(at + 8, 2, "flags"));
    e.method = static_cast<uint16_t>(r.le(at + 10, 2, "method"));
    e.crc = static_cast<uint32_t>(r.le(at + 16, 4, "crc"));
    e.csize = r.le(at + 20, 4, "size");
    e.usize = r.le(at + 24, 4, "size");
    const uint64_t name_len = r.le(at + 28, 2, "name length");
    const uint64_t extra_len = r.le(at + 30, 2, "extra length");
    const uint64_t comment_len = r.le(at + 32, 2, "comment length");
    e.local_offset = r.le(at + 42, 4, "offset");
    e.name = r.str(at + 46, name_len, "name");
    // ZIP64 extra field (id 1): the 0xffffffff values, in this order.
    for (uint64_t x = at + 46 + name_len; x + 4 <= at + 46 + name_len + extra_len;) {
      const uint64_t id = r.le(x, 2, "extra id"), len = r.le(x + 2, 2, "extra length");
      if (id == 1) {
        uint64_t p = x + 4;
        if (e.usize == 0xffffffff) e.usize = r.le(p, 8, "ZIP64 size"), p += 8;
        if (e.csize == 0xffffffff) e.csize = r.le(p, 8, "ZIP64 size"), p += 8;
        if (e.local_offset == 0xffffffff) e.local_offset = r.le(p, 8, "ZIP64 offset");
      }
      x += 4 + len;
    }
    out.push_back(std::move(e));
    at += 46 + name_len + extra_len + comment_len;
  }
  return out;
}

std::string entry_bytes(const std::string& b, const Entry& e, const std::string& path) {
  const Reader r(b, path);
  const std::string where = cat("read_npz: ", path, ": entry '", e.name, "'");
  DEEP500_CHECK((e.flags & 1) == 0, where, " is encrypted (not supported)");
  DEEP500_CHECK(r.le(e.local_offset, 4, "local header") == kLocalSig, where,
                ": corrupt zip archive: no local file header at byte ", e.local_offset);
  const uint64_t data = e.local_offset + 30 + r.le(e.local_offset + 26, 2, "name length") +
                        r.le(e.local_offset + 28, 2, "extra length");
  DEEP500_CHECK(data <= b.size() && e.csize <= b.size() - data, where, ": truncated: ", e.csize,
                " bytes of data at byte ", data, " run past the end of the file (", b.size(),
                " bytes)");
  std::string out;
  if (e.method == 0) {
    DEEP500_CHECK(e.csize == e.usize, where, ": stored entry with compressed size ", e.csize,
                  " != size ", e.usize);
    out = b.substr(data, e.csize);
  } else if (e.method == 8) {
    // Deflate expands at most ~1032:1; a larger claim is a corrupt directory.
    DEEP500_CHECK(e.usize / 1032 <= e.csize, where, ": corrupt zip directory: ", e.csize,
                  " compressed bytes cannot inflate to the ", e.usize, " bytes it claims");
    out.resize(e.usize);
    z_stream z{};
    DEEP500_CHECK(inflateInit2(&z, -15) == Z_OK, where, ": inflateInit2 failed");
    uint64_t in_done = 0, out_done = 0;
    int rc = Z_OK;
    constexpr uint64_t kMax = std::numeric_limits<uInt>::max();
    while (rc == Z_OK) {  // uInt-sized pieces, for entries over 4 GiB
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(b.data() + data + in_done));
      z.avail_in = static_cast<uInt>(std::min(kMax, e.csize - in_done));
      z.next_out = reinterpret_cast<Bytef*>(out.data() + out_done);
      z.avail_out = static_cast<uInt>(std::min(kMax, e.usize - out_done));
      const uInt in0 = z.avail_in, out0 = z.avail_out;
      rc = inflate(&z, Z_NO_FLUSH);
      in_done += in0 - z.avail_in;
      out_done += out0 - z.avail_out;
      if (rc == Z_OK && in0 == z.avail_in && out0 == z.avail_out) rc = Z_BUF_ERROR;
    }
    const std::string msg = z.msg != nullptr ? z.msg : "";
    inflateEnd(&z);
    DEEP500_CHECK(rc == Z_STREAM_END && out_done == e.usize, where,
                  ": corrupt deflate data (zlib: ", msg.empty() ? std::to_string(rc) : msg,
                  "; inflated ", out_done, " of ", e.usize, " bytes)");
  } else {
    throw Error(cat(where, ": compression method ", e.method,
                    " is not supported (expected 0 = stored or 8 = deflate)"));
  }
  uLong crc = crc32(0L, Z_NULL, 0);
  for (uint64_t at = 0; at < out.size();) {
    const uInt n = static_cast<uInt>(std::min<uint64_t>(out.size() - at, 1u << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(out.data() + at), n);
    at += n;
  }
  DEEP500_CHECK(crc == e.crc, where, ": CRC-32 mismatch (directory says ", e.crc, ", data has ",
                crc, "): the archive is corrupt");
  return out;
}

}  // namespace

std::map<std::string, Tensor> read_npz(const std::string& path) {
  const std::string b = deep500::read_file(path);
  std::map<std::string, Tensor> out;
  for (const Entry& e : central_directory(b, path)) {
    if (!e.name.empty() && e.name.back() == '/') continue;  // a directory
    const std::string bytes = entry_bytes(b, e, path);
    std::string key = e.name;
    if (key.size() > 4 && key.compare(key.size() - 4, 4, ".npy") == 0) key.resize(key.size() - 4);
    out[key] = read_npy_bytes(bytes.data(), bytes.size(), cat(path, ":", e.name));
  }
  return out;
}

}  // namespace deep500::training
