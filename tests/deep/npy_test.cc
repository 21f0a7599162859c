// .npy read/write against bytes NumPy 1.24 writes with np.save (the format
// spec: magic, version, little-endian header length, a dict padded with
// spaces to a 64-byte boundary and ending in '\n', then C-order data).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "deep/npy.h"

using namespace deep500;
namespace fs = std::filesystem;

namespace {

// np.save's bytes for an array whose header dict is `dict` and data `data`.
std::string numpy_bytes(const std::string& dict, const std::string& data) {
  std::string header = dict;
  header.append(128 - 10 - dict.size() - 1, ' ');
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size());
  out += '\0';
  return out + header + data;
}

class Npy : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("deep500_npy_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string file(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
    return (dir_ / name).string();
  }
  std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  fs::path dir_;
};

const std::string kFloatDict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
const std::string kFloatData("\x00\x00\xc0?\x00\x00\x00\xc0\x00\x00\x80>\x00\x00\x80@\x00\x00\xa0@"
                             "\x00\x00\xc0@",
                             24);

}  // namespace

TEST_F(Npy, ReadsWhatNumpyWrites) {
  Tensor f = read_npy(file("f.npy", numpy_bytes(kFloatDict, kFloatData)));
  EXPECT_EQ(f.desc(), (TensorDesc{DataType::Float, {2, 3}}));
  EXPECT_EQ(f.to_double_vector(), (std::vector<double>{1.5, -2, 0.25, 4, 5, 6}));

  Tensor b = read_npy(file("b.npy", numpy_bytes("{'descr': '|b1', 'fortran_order': False, "
                                                "'shape': (3,), }",
                                                std::string("\x01\x00\x01", 3))));
  EXPECT_EQ(b.desc(), (TensorDesc{DataType::Bool, {3}}));
  EXPECT_EQ(b.to_double_vector(), (std::vector<double>{1, 0, 1}));

  Tensor s = read_npy(file("s.npy", numpy_bytes("{'descr': '<i8', 'fortran_order': False, "
                                                "'shape': (), }",
                                                std::string("\x07\0\0\0\0\0\0\0", 8))));
  EXPECT_EQ(s.desc(), (TensorDesc{DataType::Int64, {}}));
  EXPECT_EQ(s.data<int64_t>()[0], 7);
}

TEST_F(Npy, WritesTheBytesNumpyWrites) {
  const std::string path = (dir_ / "w.npy").string();
  write_npy(path, Tensor::from_vector<float>({2, 3}, {1.5f, -2, 0.25f, 4, 5, 6}));
  EXPECT_EQ(slurp(path), numpy_bytes(kFloatDict, kFloatData));
  write_npy(path, Tensor::from_vector<bool>({3}, {true, false, true}));
  EXPECT_EQ(slurp(path), numpy_bytes("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
                                     std::string("\x01\x00\x01", 3)));
}

TEST_F(Npy, RoundTripsEveryNumericType) {
  const std::string path = (dir_ / "r.npy").string();
  for (DataType t : {DataType::Double, DataType::Float16, DataType::Int8, DataType::UInt16,
                     DataType::Int32, DataType::UInt64}) {
    Tensor x = Tensor::from_vector<double>({2, 2, 1}, {1, 2, 3, 4}).cast(t);
    write_npy(path, x);
    Tensor y = read_npy(path);
    EXPECT_EQ(y.desc(), x.desc()) << name_of(t);
    EXPECT_EQ(y.to_double_vector(), x.to_double_vector()) << name_of(t);
  }
}

TEST_F(Npy, BadFilesAreNamedErrors) {
  auto msg = [](const std::string& path) {
    try {
      read_npy(path);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string missing = (dir_ / "missing.npy").string();
  EXPECT_NE(msg(missing).find(missing), std::string::npos);
  EXPECT_NE(msg(file("text.npy", "hello world")).find("bad magic"), std::string::npos);
  std::string full = numpy_bytes(kFloatDict, kFloatData);
  EXPECT_NE(msg(file("short.npy", full.substr(0, full.size() - 4))).find("truncated"),
            std::string::npos);
  std::string fortran = kFloatDict;
  fortran.replace(fortran.find("False"), 5, "True ");
  EXPECT_NE(msg(file("f.npy", numpy_bytes(fortran, kFloatData))).find("Fortran"),
            std::string::npos);
  std::string big = kFloatDict;
  big[big.find("<f4")] = '>';
  EXPECT_NE(msg(file("big.npy", numpy_bytes(big, kFloatData))).find("big-endian"),
            std::string::npos);
  EXPECT_THROW(write_npy((dir_ / "s.npy").string(), Tensor::scalar<std::string>("x")), Error);
}
