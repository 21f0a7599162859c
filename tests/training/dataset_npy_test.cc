// .npy / .npz datasets, with archives written by NumPy itself (np.savez and
// np.savez_compressed) holding arange-based arrays whose values are known.
#include <cstring>

#include "deep/npy.h"
#include "tests/training/dataset_test_util.h"
#include "training/data/npy_dataset.h"
#include "training/data/npz.h"

namespace deep500::training {
namespace {

namespace fs = std::filesystem;
using testing::expect_error;

class NpyDatasetTest : public testing::TempDirTest {
 protected:
  // x[k, i, j] = (4k + 2i + j) * 0.5 (float32, 6 samples of 2x2),
  // y[k] = k % 3 (int32), p[k, i] = (5k + i) % 256 (uint8, 6 samples of 5),
  // big = (arange(30000) % 7) as int16 (compressible).
  const char* kArrays =
      "x = (np.arange(24, dtype=np.float32) * 0.5).reshape(6, 2, 2)\n"
      "y = (np.arange(6) % 3).astype(np.int32)\n"
      "p = ((np.arange(30).reshape(6, 5) // 5 * 5 + np.arange(30).reshape(6, 5) % 5) % 256)"
      ".astype(np.uint8)\n"
      "big = (np.arange(30000) % 7).astype(np.int16)\n";

  static void check_x_y(const Dataset& d) {
    EXPECT_EQ(d.size(), 6);
    EXPECT_EQ(d.num_classes(), 3);
    Batch b = d.batch({5, 1});
    ASSERT_EQ(b["input"].shape(), (Shape{2, 2, 2}));
    ASSERT_EQ(b["input"].dtype(), DataType::Float);
    ASSERT_EQ(b["label"].dtype(), DataType::Int64);
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(b["input"].data<float>()[i], (20 + i) * 0.5f);
      EXPECT_EQ(b["input"].data<float>()[4 + i], (4 + i) * 0.5f);
    }
    EXPECT_EQ(b["label"].data<int64_t>()[0], 2);
    EXPECT_EQ(b["label"].data<int64_t>()[1], 1);
  }
};

TEST_F(NpyDatasetTest, OneNpyFilePerField) {
  ASSERT_EQ(python(cat(kArrays,
                       "np.save(d + '/x.npy', x)\nnp.save(d + '/y.npy', y)\n"
                       "np.save(d + '/p.npy', p)\n")),
            0);
  NpyDataset d({{"input", path("x.npy")}, {"label", path("y.npy")}});
  check_x_y(d);
  // uint8 "input" is scaled to [0, 1]; 10 classes declared.
  NpyDataset u({{"input", path("p.npy")}, {"label", path("y.npy")}}, 10);
  EXPECT_EQ(u.num_classes(), 10);
  Batch b = u.batch({4});
  for (int i = 0; i < 5; ++i) EXPECT_FLOAT_EQ(b["input"].data<float>()[i], (20 + i) / 255.0f);
}

TEST_F(NpyDatasetTest, StoredAndDeflatedNpz) {
  ASSERT_EQ(python(cat(kArrays,
                       "np.savez(d + '/s.npz', x=x, y=y, big=big)\n"
                       "np.savez_compressed(d + '/c.npz', x=x, y=y, big=big)\n")),
            0);
  // The compressed archive is much smaller than the stored one: deflate is used.
  EXPECT_LT(fs::file_size(path("c.npz")) * 3, fs::file_size(path("s.npz")));
  for (const char* f : {"s.npz", "c.npz"}) {
    SCOPED_TRACE(f);
    std::map<std::string, Tensor> a = read_npz(path(f));
    ASSERT_EQ(a.size(), 3u);
    ASSERT_EQ(a["big"].dtype(), DataType::Int16);
    ASSERT_EQ(a["big"].numel(), 30000);
    const int16_t* big = a["big"].data<int16_t>();
    for (int i = 0; i < 30000; ++i) ASSERT_EQ(big[i], i % 7) << i;
    check_x_y(NpyDataset::from_npz(path(f), {{"input", "x"}, {"label", "y"}}));
  }
  // With no map every array is a field: here of different lengths.
  expect_error([&] { NpyDataset::from_npz(path("s.npz")); },
               {path("s.npz"), "'big'", "30000", "6 samples"});
  expect_error(
      [&] {
        NpyDataset::from_npz(path("s.npz"), {{"input", "nope"}});
      },
      {path("s.npz"), "no array 'nope'", "big, x, y"});
}

TEST_F(NpyDatasetTest, FieldLengthMismatchNamesBoth) {
  ASSERT_EQ(python(cat(kArrays, "np.save(d + '/x.npy', x)\nnp.save(d + '/y5.npy', y[:5])\n")), 0);
  expect_error(
      [&] {
        NpyDataset({{"input", path("x.npy")}, {"label", path("y5.npy")}});
      },
      {"'input'", "'label'", "6 and 5"});
}

TEST_F(NpyDatasetTest, BadLabels) {
  ASSERT_EQ(python("np.save(d + '/x.npy', np.zeros((3, 2), np.float32))\n"
                   "np.save(d + '/neg.npy', np.array([0, -1, 2]))\n"
                   "np.save(d + '/f.npy', np.array([0.0, 1.0, 2.0]))\n"),
            0);
  expect_error(
      [&] {
        NpyDataset({{"input", path("x.npy")}, {"label", path("neg.npy")}});
      },
      {"label -1", "sample 1"});
  expect_error(
      [&] {
        NpyDataset({{"input", path("x.npy")}, {"label", path("neg.npy")}}, 2);
      },
      {"label -1"});
  expect_error(
      [&] {
        NpyDataset({{"input", path("x.npy")}, {"label", path("f.npy")}});
      },
      {path("f.npy"), "integer class labels", "float64"});
}

TEST_F(NpyDatasetTest, CorruptAndTruncatedNpz) {
  ASSERT_EQ(python(cat(kArrays,
                       "np.savez(d + '/s.npz', big=big)\n"
                       "np.savez_compressed(d + '/c.npz', big=big)\n")),
            0);
  std::ifstream in(path("s.npz"), std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string flipped = s;
  flipped[s.size() / 2] ^= 0x5a;  // inside big's data
  write("flip.npz", flipped);
  expect_error([&] { read_npz(path("flip.npz")); }, {path("flip.npz"), "big.npy", "CRC-32"});
  write("cut.npz", s.substr(0, s.size() - 30));
  expect_error([&] { read_npz(path("cut.npz")); }, {path("cut.npz")});
  write("cut2.npz", s.substr(0, s.size() / 2));
  expect_error([&] { read_npz(path("cut2.npz")); }, {path("cut2.npz"), "truncated"});

  std::ifstream cin(path("c.npz"), std::ios::binary);
  std::string c((std::istreambuf_iterator<char>(cin)), std::istreambuf_iterator<char>());
  c[c.size() / 3] ^= 0x33;  // inside the deflate stream
  write("flipc.npz", c);
  expect_error([&] { read_npz(path("flipc.npz")); }, {path("flipc.npz"), "big.npy"});
  write("notzip.npz", "hello, this is not an archive at all");
  expect_error([&] { read_npz(path("notzip.npz")); }, {path("notzip.npz"), "zip"});
}

// Every single-byte corruption of a small archive is either harmless or an
// Error (never a crash or another exception type).
TEST_F(NpyDatasetTest, ByteFlipsNeverCrash) {
  ASSERT_EQ(python("np.savez(d + '/s.npz', a=np.arange(6, dtype=np.int16))\n"
                   "np.savez_compressed(d + '/c.npz', a=np.arange(6, dtype=np.int16))\n"),
            0);
  for (const char* f : {"s.npz", "c.npz"}) {
    std::ifstream in(path(f), std::ios::binary);
    const std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    int errors = 0;
    for (size_t at = 0; at < s.size(); ++at) {
      std::string bad = s;
      bad[at] = static_cast<char>(bad[at] ^ 0xff);
      write("bad.npz", bad);
      try {
        read_npz(path("bad.npz"));
      } catch (const Error&) {
        ++errors;
      } catch (const std::exception& e) {
        ADD_FAILURE() << f << " byte " << at << ": " << e.what();
      }
    }
    EXPECT_GT(errors, static_cast<int>(s.size()) / 4) << f;
  }
}

TEST_F(NpyDatasetTest, ReadNpyBytesMatchesReadNpy) {
  ASSERT_EQ(python(cat(kArrays, "np.save(d + '/x.npy', x)\n")), 0);
  std::ifstream in(path("x.npy"), std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Tensor a = read_npy(path("x.npy"));
  Tensor b = read_npy_bytes(s.data(), s.size(), "mem");
  ASSERT_EQ(a.desc(), b.desc());
  EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0);
  EXPECT_EQ(b.data<float>()[23], 11.5f);
  expect_error([&] { read_npy_bytes(s.data(), s.size() - 4, "mem"); },
               {"mem", "truncated", "96 bytes of data"});
}

}  // namespace
}  // namespace deep500::training
