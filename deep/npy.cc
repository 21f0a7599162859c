#include "deep/npy.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "deep/error.h"

namespace deep500 {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

struct Descr {
  const char* code;  // without the byte-order character
  DataType dtype;
};
constexpr Descr kDescrs[] = {
    {"f4", DataType::Float},  {"f8", DataType::Double}, {"f2", DataType::Float16},
    {"i1", DataType::Int8},   {"i2", DataType::Int16},  {"i4", DataType::Int32},
    {"i8", DataType::Int64},  {"u1", DataType::UInt8},  {"u2", DataType::UInt16},
    {"u4", DataType::UInt32}, {"u8", DataType::UInt64}, {"b1", DataType::Bool},
};

// The value text after 'key': in the header dict ("'<f4'", "False", "(2, 3)").
std::string field(const std::string& header, const std::string& key, const std::string& path) {
  auto k = header.find("'" + key + "'");
  DEEP500_CHECK(k != std::string::npos, path, ": .npy header has no '", key, "' field: ", header);
  auto colon = header.find(':', k);
  DEEP500_CHECK(colon != std::string::npos, path, ": malformed .npy header: ", header);
  size_t b = header.find_first_not_of(' ', colon + 1);
  DEEP500_CHECK(b != std::string::npos, path, ": malformed .npy header: ", header);
  size_t e;
  if (header[b] == '(') {
    e = header.find(')', b);
    DEEP500_CHECK(e != std::string::npos, path, ": malformed shape in .npy header: ", header);
    return header.substr(b, e - b + 1);
  }
  if (header[b] == '\'' || header[b] == '"') {
    e = header.find(header[b], b + 1);
    DEEP500_CHECK(e != std::string::npos, path, ": malformed .npy header: ", header);
    return header.substr(b + 1, e - b - 1);
  }
  e = header.find_first_of(",}", b);
  std::string v = header.substr(b, e == std::string::npos ? std::string::npos : e - b);
  while (!v.empty() && v.back() == ' ') v.pop_back();
  return v;
}

DataType dtype_from_descr(const std::string& descr, const std::string& path) {
  DEEP500_CHECK(descr.size() == 3, path, ": unsupported .npy dtype '", descr,
                "' (expected bool, int, uint or float arrays such as '<f4')");
  DEEP500_CHECK(descr[0] != '>', path, ": big-endian .npy data ('", descr,
                "') is not supported; save it little-endian");
  DEEP500_CHECK(descr[0] == '<' || descr[0] == '|' || descr[0] == '=', path,
                ": unsupported byte order in .npy dtype '", descr, "'");
  for (const auto& d : kDescrs)
    if (descr.compare(1, 2, d.code) == 0) return d.dtype;
  throw Error(cat(path, ": unsupported .npy dtype '", descr,
                  "' (expected bool, int, uint or float arrays such as '<f4')"));
}

Shape parse_shape(const std::string& text, const std::string& path) {
  Shape shape;
  std::string inner = text.substr(1, text.size() - 2);
  std::stringstream s(inner);
  std::string item;
  while (std::getline(s, item, ',')) {
    size_t b = item.find_first_not_of(' ');
    if (b == std::string::npos) continue;
    size_t e = item.find_last_not_of(" L");
    std::string num = item.substr(b, e - b + 1);
    DEEP500_CHECK(!num.empty() && num.find_first_not_of("0123456789") == std::string::npos, path,
                  ": malformed shape ", text, " in .npy header");
    shape.push_back(std::stoll(num));
  }
  return shape;
}

}  // namespace

Tensor read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  DEEP500_CHECK(in, path, ": cannot open the file (expected a NumPy .npy file)");
  char pre[8];
  in.read(pre, 8);
  DEEP500_CHECK(in.gcount() == 8 && std::memcmp(pre, kMagic, 6) == 0, path,
                ": not a NumPy .npy file (bad magic)");
  const int major = static_cast<unsigned char>(pre[6]);
  DEEP500_CHECK(major >= 1 && major <= 3, path, ": unsupported .npy format version ", major);
  uint32_t header_len = 0;
  unsigned char len[4] = {0, 0, 0, 0};
  const int len_bytes = major == 1 ? 2 : 4;
  in.read(reinterpret_cast<char*>(len), len_bytes);
  DEEP500_CHECK(in.gcount() == len_bytes, path, ": truncated .npy header");
  for (int i = len_bytes - 1; i >= 0; --i) header_len = header_len << 8 | len[i];
  std::string header(header_len, '\0');
  in.read(header.data(), header_len);
  DEEP500_CHECK(static_cast<uint32_t>(in.gcount()) == header_len, path, ": truncated .npy header");

  const DataType dtype = dtype_from_descr(field(header, "descr", path), path);
  DEEP500_CHECK(field(header, "fortran_order", path) == "False", path,
                ": Fortran-order .npy arrays are not supported (save with C order)");
  Tensor t(dtype, parse_shape(field(header, "shape", path), path));
  in.read(static_cast<char*>(t.raw()), static_cast<std::streamsize>(t.nbytes()));
  DEEP500_CHECK(static_cast<size_t>(in.gcount()) == t.nbytes(), path, ": truncated .npy data (",
                in.gcount(), " of ", t.nbytes(), " bytes for ", to_string(t.desc()), ")");
  return t;
}

void write_npy(const std::string& path, const Tensor& t) {
  DEEP500_CHECK(t.defined(), path, ": cannot write an undefined tensor as .npy");
  const char* code = nullptr;
  for (const auto& d : kDescrs)
    if (d.dtype == t.dtype()) code = d.code;
  DEEP500_CHECK(code, path, ": element type ", name_of(t.dtype()), " has no .npy form");
  std::string descr = std::string(t.dtype() == DataType::Bool || size_of(t.dtype()) == 1 ? "|" : "<") +
                      code;
  std::string shape = "(";
  for (auto d : t.shape()) shape += std::to_string(d) + ", ";
  if (t.rank() > 1) shape.resize(shape.size() - 2);
  if (t.rank() == 1) shape.resize(shape.size() - 1);  // "(3,)"
  shape += ")";
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces so the data starts on a 64-byte boundary; end with '\n'.
  const bool v2 = header.size() + 1 + 10 > 65535;
  const size_t prefix = v2 ? 12 : 10;
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header += '\n';

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  DEEP500_CHECK(out, path, ": cannot open for writing");
  out.write(kMagic, 6);
  const char version[2] = {static_cast<char>(v2 ? 2 : 1), 0};
  out.write(version, 2);
  const uint32_t n = static_cast<uint32_t>(header.size());
  for (size_t i = 0; i < (v2 ? 4u : 2u); ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
  out << header;
  out.write(static_cast<const char*>(t.raw()), static_cast<std::streamsize>(t.nbytes()));
  DEEP500_CHECK(out.good(), path, ": write failed");
}

}  // namespace deep500
