// IDX (MNIST family / Fashion-MNIST), CIFAR and synthetic dataset readers.
#include <cmath>
#include <map>
#include <sstream>
#include <thread>

#include "tests/training/dataset_test_util.h"
#include "training/data/cifar_dataset.h"
#include "training/data/idx_dataset.h"
#include "training/data/synthetic_dataset.h"

namespace deep500::training {
namespace {

namespace fs = std::filesystem;
using testing::be32;
using testing::expect_error;

class IdxTest : public testing::TempDirTest {
 protected:
  // An IDX images file of n images rows x cols, pixel (k, i) = (k * 7 + i) % 256,
  // whose header claims `claimed` images.
  static std::string images(uint32_t n, uint32_t rows, uint32_t cols, uint32_t claimed) {
    std::string s = be32(0x803) + be32(claimed) + be32(rows) + be32(cols);
    for (uint32_t k = 0; k < n; ++k)
      for (uint32_t i = 0; i < rows * cols; ++i) s += static_cast<char>((k * 7 + i) % 256);
    return s;
  }
  static std::string labels(uint32_t n, uint32_t mod = 10) {
    std::string s = be32(0x801) + be32(n);
    for (uint32_t k = 0; k < n; ++k) s += static_cast<char>(k % mod);
    return s;
  }
};

TEST_F(IdxTest, ReadsGzipAndPlainFiles) {
  write_gz("img.gz", images(5, 3, 4, 5));
  write("lab", labels(5));
  IdxDataset d(path("img.gz"), path("lab"), "tiny");
  EXPECT_EQ(d.size(), 5);
  EXPECT_EQ(d.num_classes(), 10);
  ASSERT_EQ(d.fields().size(), 2u);
  EXPECT_EQ(d.fields()[0].name, "input");
  EXPECT_EQ(d.fields()[0].dtype, DataType::Float);
  EXPECT_EQ(d.fields()[0].shape, (Shape{1, 3, 4}));
  EXPECT_EQ(d.fields()[1].dtype, DataType::Int64);
  Batch b = d.batch({4, 2});
  ASSERT_EQ(b["input"].shape(), (Shape{2, 1, 3, 4}));
  const float* x = b["input"].data<float>();
  for (int i = 0; i < 12; ++i) {
    EXPECT_FLOAT_EQ(x[i], ((4 * 7 + i) % 256) / 255.0f);
    EXPECT_FLOAT_EQ(x[12 + i], ((2 * 7 + i) % 256) / 255.0f);
  }
  EXPECT_EQ(b["label"].data<int64_t>()[0], 4);
  EXPECT_EQ(b["label"].data<int64_t>()[1], 2);
  EXPECT_EQ(d.label(3), 3);
}

TEST_F(IdxTest, TruncatedPayloadNamesFileAndSizes) {
  // The header promises 10 images of 2x3, the compressed file holds 4.
  write_gz("img.gz", images(4, 2, 3, 10));
  write("lab", labels(10));
  expect_error([&] { IdxDataset(path("img.gz"), path("lab"), "t"); },
               {path("img.gz"), "truncated", "10 x 2 x 3 = 60 bytes", "file has 24"});
}

TEST_F(IdxTest, CutGzipStreamIsReported) {
  std::string full = images(50, 28, 28, 50);
  write_gz("whole.gz", full);
  std::ifstream in(path("whole.gz"), std::ios::binary);
  std::string gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  write("cut.gz", gz.substr(0, gz.size() / 2));
  write("lab", labels(50));
  expect_error([&] { IdxDataset(path("cut.gz"), path("lab"), "t"); },
               {path("cut.gz"), "truncated", "50 x 28 x 28 = 39200 bytes", "gzip"});
}

TEST_F(IdxTest, WrongMagic) {
  write("img", labels(3));  // a labels file where images are expected
  write("lab", labels(3));
  expect_error([&] { IdxDataset(path("img"), path("lab"), "t"); },
               {path("img"), "expected magic 0x00000803", "read 0x00000801"});
  write("short", std::string("\0\0", 2));
  expect_error([&] { read_idx_u8(path("short"), 1); }, {path("short"), "truncated", "2 bytes"});
}

TEST_F(IdxTest, CountMismatchNamesBothFiles) {
  write("img", images(4, 2, 2, 4));
  write("lab", labels(5));
  expect_error([&] { IdxDataset(path("img"), path("lab"), "t"); },
               {path("img"), path("lab"), "4 images", "5 labels"});
}

TEST_F(IdxTest, LabelOutOfRange) {
  write("img", images(12, 2, 2, 12));
  write("lab", labels(12, 12));  // labels 10 and 11 are not MNIST classes
  expect_error([&] { IdxDataset(path("img"), path("lab"), "t"); },
               {path("lab"), "label 10", "sample 10", "[0, 10)"});
}

TEST_F(IdxTest, MissingFashionMnistDirSaysWhatToInstall) {
  expect_error([&] { load_fashion_mnist(true, path("nope")); },
               {path("nope"), "dataset-fashion-mnist"});
}

// The real data set (Debian's dataset-fashion-mnist), checked against facts
// about Fashion-MNIST and an independent Python gzip/struct reader.
class FashionMnistTest : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    if (!fs::exists(std::string(kFashionMnistDir) + "/t10k-images-idx3-ubyte.gz"))
      GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
};

TEST_F(FashionMnistTest, SizesClassBalanceAndPixelsMatchIndependentReader) {
  auto train = load_fashion_mnist(true);
  auto test = load_fashion_mnist(false);
  EXPECT_EQ(train->size(), 60000);
  EXPECT_EQ(test->size(), 10000);
  EXPECT_EQ(train->num_classes(), 10);
  EXPECT_EQ(train->fields()[0].shape, (Shape{1, 28, 28}));
  EXPECT_NE(train->describe().find(kFashionMnistDir), std::string::npos);
  // Fashion-MNIST is balanced: 6000 per class in train, 1000 in test.
  std::map<int64_t, int64_t> train_counts, test_counts;
  for (int64_t i = 0; i < train->size(); ++i) ++train_counts[train->label(i)];
  for (int64_t i = 0; i < test->size(); ++i) ++test_counts[test->label(i)];
  ASSERT_EQ(train_counts.size(), 10u);
  ASSERT_EQ(test_counts.size(), 10u);
  for (int c = 0; c < 10; ++c) {
    EXPECT_EQ(train_counts[c], 6000) << c;
    EXPECT_EQ(test_counts[c], 1000) << c;
  }
  EXPECT_EQ(train->label(0), 9);  // the first training image is an ankle boot

  // Independent reader: Python's gzip module, header skipped by hand.
  std::istringstream py(python_output(
      cat("p = '", kFashionMnistDir, "'\n",
          "lab = gzip.open(p + '/train-labels-idx1-ubyte.gz').read()\n",
          "img = gzip.open(p + '/train-images-idx3-ubyte.gz').read()\n",
          "timg = gzip.open(p + '/t10k-images-idx3-ubyte.gz').read()\n",
          "print(lab[8], lab[8 + 59999], sum(img[16:16 + 784]), sum(img[16 + 784 * 59999:]),"
          " max(img[16:16 + 784]), sum(timg[16:]))\n")));
  int64_t first_label = -1, last_label = -1, first_sum = -1, last_sum = -1, first_max = -1,
          test_sum = -1;
  py >> first_label >> last_label >> first_sum >> last_sum >> first_max >> test_sum;
  ASSERT_TRUE(py) << "python reader failed";
  EXPECT_EQ(train->label(0), first_label);
  EXPECT_EQ(train->label(59999), last_label);
  Batch b = train->batch({0, 59999});
  const float* x = b["input"].data<float>();
  double s0 = 0, s1 = 0, m0 = 0;
  for (int i = 0; i < 784; ++i) {
    s0 += x[i] * 255.0;
    s1 += x[784 + i] * 255.0;
    m0 = std::max<double>(m0, x[i]);
  }
  EXPECT_NEAR(s0, first_sum, 1e-2);
  EXPECT_NEAR(s1, last_sum, 1e-2);
  EXPECT_FLOAT_EQ(m0, first_max / 255.0f);
  double ts = 0;
  std::vector<int64_t> all(test->size());
  for (int64_t i = 0; i < test->size(); ++i) all[i] = i;
  Batch tb = test->batch(all);
  const float* tx = tb["input"].data<float>();
  for (int64_t i = 0; i < tb["input"].numel(); ++i) ts += std::lround(tx[i] * 255.0f);
  EXPECT_EQ(static_cast<int64_t>(ts), test_sum);
}

class CifarTest : public testing::TempDirTest {
 protected:
  // n records; record k: labels (k % classes) [coarse k % 20 first for
  // CIFAR-100], pixel i = (k + i) % 251.
  static std::string records(int n, bool cifar100, int classes) {
    std::string s;
    for (int k = 0; k < n; ++k) {
      if (cifar100) s += static_cast<char>(k % 20);
      s += static_cast<char>(k % classes);
      for (int i = 0; i < 3072; ++i) s += static_cast<char>((k + i) % 251);
    }
    return s;
  }
};

TEST_F(CifarTest, Cifar10RoundTripOverSeveralFiles) {
  write("b1.bin", records(3, false, 10));
  write_gz("b2.bin.gz", records(2, false, 10));
  CifarDataset d({path("b1.bin"), path("b2.bin.gz")}, CifarKind::kCifar10, "CIFAR-10 test");
  EXPECT_EQ(d.size(), 5);
  EXPECT_EQ(d.num_classes(), 10);
  EXPECT_EQ(d.fields()[0].shape, (Shape{3, 32, 32}));
  Batch b = d.batch({1, 4});  // record 1 of file 1, record 1 of file 2
  const float* x = b["input"].data<float>();
  for (int i : {0, 1023, 1024, 2048, 3071}) {
    EXPECT_FLOAT_EQ(x[i], ((1 + i) % 251) / 255.0f) << i;
    EXPECT_FLOAT_EQ(x[3072 + i], ((1 + i) % 251) / 255.0f) << i;
  }
  EXPECT_EQ(b["label"].data<int64_t>()[0], 1);
  EXPECT_EQ(b["label"].data<int64_t>()[1], 1);
  EXPECT_EQ(d.label(2), 2);
}

TEST_F(CifarTest, Cifar100FineAndCoarseLabels) {
  write("train.bin", records(30, true, 100));
  CifarDataset d({path("train.bin")}, CifarKind::kCifar100, "CIFAR-100", true);
  EXPECT_EQ(d.size(), 30);
  EXPECT_EQ(d.num_classes(), 100);
  Batch b = d.batch({25});
  EXPECT_EQ(b["label"].data<int64_t>()[0], 25);
  EXPECT_EQ(b["coarse_label"].data<int64_t>()[0], 5);
  EXPECT_FLOAT_EQ(b["input"].data<float>()[7], (25 + 7) / 255.0f);
}

TEST_F(CifarTest, BadSizeAndBadLabel) {
  write("short.bin", records(2, false, 10).substr(0, 3073 + 100));
  expect_error([&] { CifarDataset({path("short.bin")}, CifarKind::kCifar10, "c"); },
               {path("short.bin"), "3173", "record size 3073"});
  write("bad.bin", records(12, false, 12));  // record 10 has label 10
  expect_error([&] { CifarDataset({path("bad.bin")}, CifarKind::kCifar10, "c"); },
               {path("bad.bin"), "record 10", "label 10", "[0, 10)"});
  write("c100.bin", records(2, false, 10));  // CIFAR-10 records read as CIFAR-100
  expect_error([&] { CifarDataset({path("c100.bin")}, CifarKind::kCifar100, "c"); },
               {path("c100.bin"), "record size 3074"});
}

TEST(SyntheticDataset, DeterministicPerIndexAndSeed) {
  SyntheticDataset a = SyntheticDataset::cifar(100, 7);
  SyntheticDataset b = SyntheticDataset::cifar(100, 7);
  SyntheticDataset c = SyntheticDataset::cifar(100, 8);
  Batch x = a.batch({5, 9, 5});
  Batch y = b.batch({9});
  Batch z = c.batch({5});
  const float* xa = x["input"].data<float>();
  const int64_t n = 3 * 32 * 32;
  int same_as_other_seed = 0;
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(xa[i], xa[2 * n + i]);                    // index 5 twice
    EXPECT_EQ(xa[n + i], y["input"].data<float>()[i]);  // index 9, other object
    same_as_other_seed += xa[i] == z["input"].data<float>()[i];
    EXPECT_GE(xa[i], 0.0f);
    EXPECT_LT(xa[i], 1.0f);
    sum += xa[i];
  }
  EXPECT_LT(same_as_other_seed, 10);
  EXPECT_NEAR(sum / n, 0.5, 0.02);  // uniform on [0, 1): mean 1/2, sd of mean ~0.005
  EXPECT_EQ(x["label"].data<int64_t>()[0], a.label(5));
  EXPECT_EQ(x["label"].data<int64_t>()[1], b.label(9));
  // Labels cover the classes.
  std::map<int64_t, int> counts;
  for (int64_t i = 0; i < 100; ++i) ++counts[a.label(i)];
  EXPECT_EQ(counts.size(), 10u);
  EXPECT_EQ(counts.begin()->first, 0);
  EXPECT_EQ(counts.rbegin()->first, 9);
  SyntheticDataset imagenet = SyntheticDataset::imagenet(10, 1);
  EXPECT_EQ(imagenet.fields()[0].shape, (Shape{3, 224, 224}));
  EXPECT_EQ(imagenet.num_classes(), 1000);
}

TEST(SyntheticDataset, BatchIndexOutOfRange) {
  SyntheticDataset a = SyntheticDataset::cifar(4, 1);
  expect_error([&] { a.batch({0, 4}); }, {"synthetic", "sample index 4", "[0, 4)"});
  expect_error([&] { a.batch({-1}); }, {"sample index -1"});
}

TEST_F(IdxTest, BatchIndexOutOfRangeAndConcurrentFill) {
  write("img", images(64, 8, 8, 64));
  write("lab", labels(64));
  IdxDataset d(path("img"), path("lab"), "tiny");
  expect_error([&] { d.batch({64}); }, {"tiny", "sample index 64", "[0, 64)"});
  // Two threads fill disjoint rows of one batch and their own batches at once.
  Batch shared = allocate_batch(d, 64);
  Batch expected = allocate_batch(d, 64);
  for (int64_t i = 0; i < 64; ++i) d.fill(63 - i, expected, i);
  auto work = [&](int parity) {
    for (int rep = 0; rep < 200; ++rep)
      for (int64_t i = parity; i < 64; i += 2) d.fill(63 - i, shared, i);
  };
  std::thread t1(work, 0), t2(work, 1);
  t1.join();
  t2.join();
  for (const char* f : {"input", "label"}) {
    const Tensor& s = shared[f];
    const Tensor& e = expected[f];
    ASSERT_EQ(s.nbytes(), e.nbytes());
    EXPECT_EQ(std::memcmp(s.raw(), e.raw(), s.nbytes()), 0) << f;
  }
}

}  // namespace
}  // namespace deep500::training
