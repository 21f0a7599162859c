#include "deep/npy.h"

#include <bit>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <variant>

#include "deep/output_file.h"

namespace deep500 {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicLen = 6;

struct NpyType {
  const char* code;  // without the byte-order character
  DataType dtype;
};
constexpr NpyType kTypes[] = {
    {"f2", DataType::Float16}, {"f4", DataType::Float},  {"f8", DataType::Double},
    {"i1", DataType::Int8},    {"i2", DataType::Int16},  {"i4", DataType::Int32},
    {"i8", DataType::Int64},   {"u1", DataType::UInt8},  {"u2", DataType::UInt16},
    {"u4", DataType::UInt32},  {"u8", DataType::UInt64}, {"b1", DataType::Bool},
};

std::string shape_text(const Shape& shape) {
  if (shape.empty()) return "scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

// A value of the header's Python literal: the subset np.save writes.
struct PyValue {
  std::variant<std::string, bool, std::vector<int64_t>, int64_t> v;
  bool is_list = false;  // '[...]': a structured dtype descr
};

// Recursive-descent parser for "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }".
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& path) : s_(text), path_(path) {}

  std::map<std::string, PyValue> parse_dict() {
    std::map<std::string, PyValue> out;
    expect('{');
    while (true) {
      skip_ws();
      if (peek() == '}') break;
      std::string key = parse_string();
      expect(':');
      out[key] = parse_value();
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      skip_ws();
      if (peek() != '}') fail("',' or '}'");
    }
    ++pos_;
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(cat("read_npy: ", path_, ": malformed header: expected ", what, " at offset ", pos_,
                    " in \"", s_, "\""));
  }
  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void expect(char c) {
    skip_ws();
    if (peek() != c) fail(cat("'", c, "'"));
    ++pos_;
  }
  std::string parse_string() {
    skip_ws();
    char q = peek();
    if (q != '\'' && q != '"') fail("a quoted string");
    size_t end = s_.find(q, pos_ + 1);
    if (end == std::string_view::npos) fail("a closing quote");
    std::string out(s_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return out;
  }
  int64_t parse_int() {
    skip_ws();
    size_t start = pos_;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    if (pos_ == start) fail("a non-negative integer");
    if (pos_ < s_.size() && (s_[pos_] == 'L' || s_[pos_] == 'l')) ++pos_;  // Python 2 long
    std::string digits(s_.substr(start, pos_ - start));
    if (digits.size() > 18) fail("a dimension below 10^18");
    return std::stoll(digits);
  }
  PyValue parse_value() {
    skip_ws();
    char c = peek();
    if (c == '\'' || c == '"') return PyValue{parse_string()};
    if (s_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return PyValue{true};
    }
    if (s_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return PyValue{false};
    }
    if (c == '(' || c == '[') {
      char close = c == '(' ? ')' : ']';
      ++pos_;
      std::vector<int64_t> items;
      PyValue out;
      out.is_list = c == '[';
      while (true) {
        skip_ws();
        if (peek() == close) break;
        if (out.is_list) {  // structured descr: skip to the end, reported by the caller
          size_t end = s_.rfind(']');
          if (end == std::string_view::npos || end < pos_) fail("']'");
          pos_ = end;
          break;
        }
        items.push_back(parse_int());
        skip_ws();
        if (peek() == ',') {
          ++pos_;
        } else if (peek() != close) {
          fail(cat("',' or '", close, "'"));
        }
      }
      ++pos_;
      out.v = std::move(items);
      return out;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) return PyValue{parse_int()};
    fail("a string, True/False, an integer or a tuple");
  }

  std::string_view s_;
  const std::string& path_;
  size_t pos_ = 0;
};

uint64_t read_le(const unsigned char* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

void swap_bytes(unsigned char* data, std::size_t count, std::size_t width) {
  for (std::size_t i = 0; i < count; ++i) {
    unsigned char* e = data + i * width;
    for (std::size_t a = 0, b = width - 1; a < b; ++a, --b) std::swap(e[a], e[b]);
  }
}

// What the preamble and header say: element type, shape and where the data starts.
struct NpyLayout {
  DataType dtype = DataType::Undefined;
  Shape shape;
  uint64_t count = 0;       // elements
  uint64_t data_bytes = 0;  // count * element size
  uint64_t data_offset = 0;
  bool big_endian = false;
};

// Parses the preamble and header at the start of `head` (`head_size` bytes of a
// file of `file_size` bytes; `head` may stop right after the header) and checks
// that the file holds exactly the data the header promises. `path` names the
// file in errors.
NpyLayout parse_npy_layout(const unsigned char* head, uint64_t head_size, uint64_t file_size,
                           const std::string& path) {
  DEEP500_CHECK(head_size >= 8 && std::memcmp(head, kMagic, kMagicLen) == 0, "read_npy: ", path,
                ": not a .npy file (expected the magic \"\\x93NUMPY\" and a version; file has ",
                file_size, " bytes)");
  const int major = head[6], minor = head[7];
  DEEP500_CHECK(major >= 1 && major <= 3 && minor == 0, "read_npy: ", path,
                ": unsupported .npy format version ", major, ".", minor,
                " (expected 1.0, 2.0 or 3.0)");
  const int len_bytes = major == 1 ? 2 : 4;
  const uint64_t preamble = 8 + len_bytes;
  DEEP500_CHECK(head_size >= preamble && file_size >= preamble, "read_npy: ", path,
                ": truncated: the file ends inside the header length field (file has ", file_size,
                " bytes)");
  const uint64_t header_len = read_le(head + 8, len_bytes);
  DEEP500_CHECK(preamble + header_len <= file_size && preamble + header_len <= head_size,
                "read_npy: ", path, ": truncated: header length field says ", header_len,
                " bytes of header after byte ", preamble, ", file has ", file_size, " bytes");
  std::string header(reinterpret_cast<const char*>(head + preamble), header_len);

  auto dict = HeaderParser(header, path).parse_dict();
  auto field = [&](const char* key) -> const PyValue& {
    auto it = dict.find(key);
    DEEP500_CHECK(it != dict.end(), "read_npy: ", path, ": header has no '", key, "' entry: \"",
                  header, "\"");
    return it->second;
  };
  const PyValue& descr_v = field("descr");
  const PyValue& fortran_v = field("fortran_order");
  const PyValue& shape_v = field("shape");
  DEEP500_CHECK(!descr_v.is_list && std::holds_alternative<std::string>(descr_v.v),
                "read_npy: ", path,
                ": structured dtypes are not supported (expected a plain dtype like '<f4')");
  DEEP500_CHECK(std::holds_alternative<bool>(fortran_v.v), "read_npy: ", path,
                ": 'fortran_order' must be True or False");
  DEEP500_CHECK(!std::get<bool>(fortran_v.v), "read_npy: ", path,
                ": fortran_order is True; only C-order arrays are supported (save with "
                "np.ascontiguousarray)");
  DEEP500_CHECK(!shape_v.is_list && std::holds_alternative<std::vector<int64_t>>(shape_v.v),
                "read_npy: ", path, ": 'shape' must be a tuple of integers");

  NpyLayout out;
  const std::string& descr = std::get<std::string>(descr_v.v);
  if (descr.size() == 3) {
    const char order = descr[0];
    for (const NpyType& t : kTypes) {
      if (descr.compare(1, 2, t.code) != 0) continue;
      const bool single = size_of(t.dtype) == 1;
      if (order == '<' || order == '|' ||
          (order == '=' && std::endian::native == std::endian::little)) {
        out.dtype = t.dtype;
      } else if (order == '>') {
        out.dtype = t.dtype;
        out.big_endian = !single;
      }
    }
  }
  DEEP500_CHECK(out.dtype != DataType::Undefined, "read_npy: ", path, ": unsupported dtype '",
                descr, "' (expected one of <f2 <f4 <f8 <i1 <i2 <i4 <i8 <u1 <u2 <u4 <u8 |b1)");

  out.shape = std::get<std::vector<int64_t>>(shape_v.v);
  out.count = 1;
  for (int64_t d : out.shape) {
    DEEP500_CHECK(d == 0 || out.count <= std::numeric_limits<uint64_t>::max() / 16 / uint64_t(d),
                  "read_npy: ", path, ": shape ", shape_text(out.shape), " is too large");
    out.count *= static_cast<uint64_t>(d);
  }
  out.data_bytes = out.count * size_of(out.dtype);
  out.data_offset = preamble + header_len;
  const uint64_t have = file_size - out.data_offset;
  DEEP500_CHECK(have == out.data_bytes, "read_npy: ", path, ": ",
                have < out.data_bytes ? "truncated" : "trailing data", ": header says ",
                shape_text(out.shape), " ", name_of(out.dtype), " = ", out.data_bytes,
                " bytes of data, file has ", have, " (", file_size, " bytes in all)");
  return out;
}

// Byte order and bool normalisation after the raw data is in place.
void finish_npy(Tensor& t, const NpyLayout& l) {
  if (l.big_endian) swap_bytes(static_cast<unsigned char*>(t.raw()), l.count, size_of(l.dtype));
  if (l.dtype == DataType::Bool) {  // a byte other than 0/1 is not a valid bool
    auto* bytes = static_cast<unsigned char*>(t.raw());
    for (uint64_t i = 0; i < l.count; ++i) bytes[i] = bytes[i] != 0;
  }
}

}  // namespace

Tensor read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  DEEP500_CHECK(in, "read_npy: cannot open ", path, ": ", std::strerror(errno));
  std::error_code ec;
  const uint64_t file_size = std::filesystem::file_size(path, ec);
  DEEP500_CHECK(!ec, "read_npy: ", path, ": cannot get the file size: ", ec.message());

  // Preamble (at most 12 bytes), then the header whose length it gives.
  std::string head(12, '\0');
  in.read(head.data(), 12);
  head.resize(static_cast<size_t>(in.gcount()));
  if (head.size() >= 12 && static_cast<unsigned char>(head[6]) >= 1) {
    const int len_bytes = head[6] == 1 ? 2 : 4;
    const uint64_t header_len =
        read_le(reinterpret_cast<const unsigned char*>(head.data()) + 8, len_bytes);
    const uint64_t preamble = 8 + len_bytes;
    if (preamble + header_len <= file_size) {
      head.resize(preamble + header_len);
      in.clear();
      in.seekg(12);
      if (preamble + header_len > 12) in.read(head.data() + 12, header_len + preamble - 12);
      DEEP500_CHECK(in, "read_npy: ", path, ": could not read the ", header_len, "-byte header");
    }
  }
  const NpyLayout l = parse_npy_layout(reinterpret_cast<const unsigned char*>(head.data()),
                                       head.size(), file_size, path);
  Tensor t(l.dtype, l.shape);
  in.clear();
  in.seekg(static_cast<std::streamoff>(l.data_offset));
  in.read(static_cast<char*>(t.raw()), static_cast<std::streamsize>(l.data_bytes));
  DEEP500_CHECK(in || l.data_bytes == 0, "read_npy: ", path, ": could not read ", l.data_bytes,
                " bytes of data");
  finish_npy(t, l);
  return t;
}

Tensor read_npy_bytes(const void* data, std::size_t size, const std::string& name) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  const NpyLayout l = parse_npy_layout(bytes, size, size, name);
  Tensor t(l.dtype, l.shape);
  if (l.data_bytes > 0) std::memcpy(t.raw(), bytes + l.data_offset, l.data_bytes);
  finish_npy(t, l);
  return t;
}

void write_npy(const std::string& path, const Tensor& t) {
  DEEP500_CHECK(t.defined(), "write_npy: ", path, ": tensor is undefined");
  const char* code = nullptr;
  for (const NpyType& nt : kTypes)
    if (nt.dtype == t.dtype()) code = nt.code;
  DEEP500_CHECK(code != nullptr, "write_npy: ", path, ": cannot write ", name_of(t.dtype()),
                " tensors (expected float16/32/64, (u)int8..64 or bool)");
  static_assert(std::endian::native == std::endian::little, "write_npy assumes little-endian");

  // Python tuple syntax: "()", "(3,)", "(2, 3)".
  std::string shape = "(";
  for (size_t i = 0; i < t.shape().size(); ++i) {
    if (i > 0) shape += ", ";
    shape += std::to_string(t.shape()[i]);
  }
  shape += t.shape().size() == 1 ? ",)" : ")";
  const char order = size_of(t.dtype()) == 1 ? '|' : '<';
  std::string header =
      cat("{'descr': '", order, code, "', 'fortran_order': False, 'shape': ", shape, ", }");
  // Pad with spaces so the data starts on a 64-byte boundary; the header ends in '\n'.
  // Version 1.0 stores the header length in 2 bytes, 2.0 in 4.
  auto padded = [&](std::size_t preamble) {
    std::string h = header;
    h.append((64 - (preamble + h.size() + 1) % 64) % 64, ' ');
    return h + '\n';
  };
  int major = 1;
  std::size_t preamble = 10;
  header = padded(preamble);
  if (header.size() > 65535) {
    major = 2;
    preamble = 12;
    header = padded(preamble);
  }

  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(major);
  out += '\0';
  const uint64_t hl = header.size();
  for (std::size_t i = 0; i < preamble - 8; ++i) out += static_cast<char>((hl >> (8 * i)) & 0xff);
  out += header;

  write_output_file(
      path,
      {out, std::string_view(static_cast<const char*>(t.raw()), t.numel() > 0 ? t.nbytes() : 0)},
      "write_npy");
}

}  // namespace deep500
