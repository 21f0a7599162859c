#include "deep/npy.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#ifndef DEEP500_PYTHON
#define DEEP500_PYTHON "/usr/bin/python3"
#endif

using namespace deep500;
namespace fs = std::filesystem;

namespace {

class NpyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           cat("deep500_npy_", ::getpid(), "_",
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // Runs a numpy snippet with `d` bound to the temp directory; returns its exit status.
  int python(const std::string& code) const {
    std::string script = path("gen.py");
    std::ofstream(script) << "import numpy as np, os\nd = " << '"' << dir_.string() << '"' << "\n"
                          << code << "\n";
    return std::system(cat(DEEP500_PYTHON, " ", script).c_str());
  }

  fs::path dir_;
};

// Value i of the test pattern for a dtype, as numpy computes it below:
// (np.arange(n) * 3 - 7).astype(dtype) for numbers, arange(n) % 3 == 1 for bool.
double pattern(DataType t, int64_t i) {
  if (t == DataType::Bool) return i % 3 == 1;
  double v = i * 3.0 - 7;
  if (!is_signed(t) && !is_floating(t)) {  // numpy wraps negative values modulo 2^bits
    double mod = std::ldexp(1.0, 8 * static_cast<int>(size_of(t)));
    if (v < 0) v += mod;
  }
  return v;
}

Tensor make_pattern(DataType t, Shape shape) {
  Tensor out(t, shape);
  dispatch_all(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, std::string>) {
      FAIL();
    } else {
      T* d = out.data<T>();
      for (int64_t i = 0; i < out.numel(); ++i) {
        if constexpr (std::is_same_v<T, bool>) {
          d[i] = pattern(t, i) != 0;
        } else if constexpr (std::is_integral_v<T>) {
          d[i] = static_cast<T>(static_cast<int64_t>(i * 3 - 7));  // wraps like numpy
        } else {
          d[i] = T(static_cast<float>(pattern(t, i)));
        }
      }
    }
  });
  return out;
}

void expect_pattern(const Tensor& t, DataType dtype, const Shape& shape, const std::string& what) {
  ASSERT_EQ(t.dtype(), dtype) << what;
  ASSERT_EQ(t.shape(), shape) << what;
  for (int64_t i = 0; i < t.numel(); ++i)
    ASSERT_EQ(t.at_as_double(i), pattern(dtype, i)) << what << " element " << i;
}

const std::vector<std::pair<DataType, std::string>> kDtypes = {
    {DataType::Float16, "float16"}, {DataType::Float, "float32"}, {DataType::Double, "float64"},
    {DataType::Int8, "int8"},       {DataType::Int16, "int16"},   {DataType::Int32, "int32"},
    {DataType::Int64, "int64"},     {DataType::UInt8, "uint8"},   {DataType::UInt16, "uint16"},
    {DataType::UInt32, "uint32"},   {DataType::UInt64, "uint64"}, {DataType::Bool, "bool_"},
};

}  // namespace

TEST_F(NpyTest, RoundTripsEveryDtypeAndShape) {
  for (const auto& [dtype, name] : kDtypes) {
    for (const Shape& shape : {Shape{}, Shape{5}, Shape{2, 3}, Shape{0, 4}, Shape{2, 1, 3, 2}}) {
      Tensor t = make_pattern(dtype, shape);
      std::string file = path(name + ".npy");
      write_npy(file, t);
      Tensor back = read_npy(file);
      expect_pattern(back, dtype, shape, cat(name, to_string(shape)));
      // The data starts on a 64-byte boundary, as numpy lays it out.
      EXPECT_EQ((fs::file_size(file) - t.nbytes()) % 64, 0u) << name;
    }
  }
  // No temporary files are left behind by the atomic write.
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir_)) files += e.path().extension() == ".npy";
  EXPECT_EQ(files, static_cast<int>(std::distance(fs::directory_iterator(dir_), {})));
}

TEST_F(NpyTest, ReadsFilesWrittenByNumpy) {
  std::string code =
      "for name in ['float16','float32','float64','int8','int16','int32','int64','uint8',"
      "'uint16','uint32','uint64','bool_']:\n"
      "  dt = getattr(np, name)\n"
      "  a = (np.arange(24) % 3 == 1) if name == 'bool_' else "
      "(np.arange(24, dtype=np.int64) * 3 - 7).astype(dt)\n"
      "  np.save(os.path.join(d, name + '.npy'), a.reshape(2, 3, 4))\n"
      "  np.save(os.path.join(d, name + '_scalar.npy'), a[1])\n"
      "a = (np.arange(6) * 3 - 7).astype(np.float32).reshape(2, 3)\n"
      "for v in [(1, 0), (2, 0), (3, 0)]:\n"
      "  with open(os.path.join(d, 'v%d.npy' % v[0]), 'wb') as f:\n"
      "    np.lib.format.write_array(f, a, version=v)\n"
      "np.save(os.path.join(d, 'big_endian.npy'), a.astype('>f4'))\n"
      "np.save(os.path.join(d, 'big_endian_i8.npy'), a.astype('>i8'))\n"
      "np.save(os.path.join(d, 'fortran.npy'), np.asfortranarray(a))\n"
      "np.save(os.path.join(d, 'complex.npy'), np.zeros(3, np.complex64))\n"
      "np.save(os.path.join(d, 'empty.npy'), np.zeros((0, 3), np.float64))\n";
  ASSERT_EQ(python(code), 0) << "numpy (" << DEEP500_PYTHON << ") could not write the fixtures";

  for (const auto& [dtype, name] : kDtypes) {
    expect_pattern(read_npy(path(name + ".npy")), dtype, {2, 3, 4}, name);
    Tensor s = read_npy(path(name + "_scalar.npy"));
    ASSERT_EQ(s.shape(), Shape{}) << name;
    EXPECT_EQ(s.at_as_double(0), pattern(dtype, 1)) << name;
  }
  for (const char* f : {"v1.npy", "v2.npy", "v3.npy", "big_endian.npy"})
    expect_pattern(read_npy(path(f)), DataType::Float, {2, 3}, f);
  expect_pattern(read_npy(path("big_endian_i8.npy")), DataType::Int64, {2, 3}, "big_endian_i8");
  EXPECT_EQ(read_npy(path("empty.npy")).shape(), (Shape{0, 3}));

  try {
    read_npy(path("fortran.npy"));
    FAIL() << "fortran_order True was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fortran_order"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("fortran.npy"), std::string::npos) << e.what();
  }
  try {
    read_npy(path("complex.npy"));
    FAIL() << "complex64 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'<c8'"), std::string::npos) << e.what();
  }
}

TEST_F(NpyTest, NumpyReadsOurFiles) {
  for (const auto& [dtype, name] : kDtypes)
    write_npy(path(name + ".npy"), make_pattern(dtype, {3, 4}));
  write_npy(path("scalar.npy"), Tensor::scalar<double>(2.5));
  write_npy(path("vector.npy"), Tensor::from_vector<int32_t>({3}, {4, 5, 6}));
  // numpy checks dtype, shape and every value; a mismatch exits non-zero.
  std::string code =
      "for name in ['float16','float32','float64','int8','int16','int32','int64','uint8',"
      "'uint16','uint32','uint64','bool_']:\n"
      "  dt = getattr(np, name)\n"
      "  want = (np.arange(12) % 3 == 1) if name == 'bool_' else "
      "(np.arange(12, dtype=np.int64) * 3 - 7).astype(dt)\n"
      "  got = np.load(os.path.join(d, name + '.npy'))\n"
      "  assert got.dtype == dt and got.shape == (3, 4), (name, got.dtype, got.shape)\n"
      "  assert (got == want.reshape(3, 4)).all(), name\n"
      "s = np.load(os.path.join(d, 'scalar.npy'))\n"
      "assert s.shape == () and s == 2.5 and s.dtype == np.float64\n"
      "v = np.load(os.path.join(d, 'vector.npy'))\n"
      "assert v.shape == (3,) and v.dtype == np.int32 and list(v) == [4, 5, 6]\n";
  EXPECT_EQ(python(code), 0);
}

TEST_F(NpyTest, TruncatedFileNamesFileAndSizes) {
  write_npy(path("x.npy"), Tensor(DataType::Float, {1, 3, 224, 224}));
  const auto full = fs::file_size(path("x.npy"));
  fs::resize_file(path("x.npy"), 128 + 1000);  // the header is 128 bytes for this shape
  try {
    read_npy(path("x.npy"));
    FAIL() << "truncated file was accepted";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(path("x.npy")), std::string::npos) << m;
    EXPECT_NE(m.find("1x3x224x224 float32 = 602112 bytes"), std::string::npos) << m;
    EXPECT_NE(m.find("file has 1000"), std::string::npos) << m;
  }
  EXPECT_EQ(full, 128u + 602112u);

  // Cut inside the header, inside the magic, and a file that is not .npy at all.
  fs::resize_file(path("x.npy"), 40);
  EXPECT_THROW(read_npy(path("x.npy")), Error);
  fs::resize_file(path("x.npy"), 5);
  EXPECT_THROW(read_npy(path("x.npy")), Error);
  std::ofstream(path("text.npy")) << "hello, this is not numpy";
  try {
    read_npy(path("text.npy"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a .npy file"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_npy(path("missing.npy")), Error);
}

TEST_F(NpyTest, CorruptHeaderIsAnError) {
  // A hand-made v1.0 file whose header dict is cut short.
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, ";
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(header.size());
  bytes += '\0';
  bytes += header;
  std::ofstream(path("bad.npy"), std::ios::binary) << bytes;
  try {
    read_npy(path("bad.npy"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("malformed header"), std::string::npos) << e.what();
  }
}

TEST_F(NpyTest, WriteIsAtomicAndRejectsUnsupportedTypes) {
  write_npy(path("a.npy"), Tensor::from_vector<float>({2}, {1, 2}));
  write_npy(path("a.npy"), Tensor::from_vector<float>({3}, {4, 5, 6}));  // replaces
  EXPECT_EQ(read_npy(path("a.npy")).to_double_vector(), (std::vector<double>{4, 5, 6}));
  EXPECT_THROW(write_npy(path("s.npy"), Tensor::scalar<std::string>("x")), Error);
  EXPECT_THROW(write_npy(path("b.npy"), Tensor(DataType::BFloat16, {2})), Error);
  EXPECT_FALSE(fs::exists(path("s.npy")));
  // A directory that does not exist: an Error, no stray file.
  EXPECT_THROW(write_npy(path("nodir/a.npy"), Tensor(DataType::Float, {1})), Error);
  int entries = static_cast<int>(std::distance(fs::directory_iterator(dir_), {}));
  EXPECT_EQ(entries, 1);
}
