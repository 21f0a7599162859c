// HDF5 helper (write/read named tensors, chunked, gzip, attributes, atomic
// write) and HDF5Dataset. Layout and foreign-written files are checked
// with the HDF5 C API directly, independent of the helper.
#include <H5Cpp.h>

#include <cstring>
#include <thread>

#include "tests/training/dataset_test_util.h"
#include "training/data/hdf5_dataset.h"
#include "training/data/hdf5_io.h"

namespace deep500::training {
namespace {

namespace fs = std::filesystem;
using testing::expect_error;

template <class T>
Tensor arange(Shape shape, double scale = 1.0) {
  Tensor t(dtype_v<T>, shape);
  T* d = t.data<T>();
  for (int64_t i = 0; i < t.numel(); ++i) d[i] = static_cast<T>(i * scale);
  return t;
}

void expect_same(const Tensor& a, const Tensor& b, const std::string& name) {
  ASSERT_TRUE(b.defined()) << name;
  EXPECT_EQ(a.desc(), b.desc()) << name;
  ASSERT_EQ(a.nbytes(), b.nbytes()) << name;
  EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0) << name;
}

// Layout of a dataset read with the C API: chunk dims (empty if not chunked)
// and whether the deflate filter is set.
std::pair<std::vector<hsize_t>, bool> c_api_layout(const std::string& file,
                                                   const std::string& name) {
  hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t d = H5Dopen2(f, name.c_str(), H5P_DEFAULT);
  hid_t p = H5Dget_create_plist(d);
  std::vector<hsize_t> chunk;
  if (H5Pget_layout(p) == H5D_CHUNKED) {
    chunk.resize(8);
    chunk.resize(H5Pget_chunk(p, 8, chunk.data()));
  }
  bool deflate = H5Pget_filter_by_id2(p, H5Z_FILTER_DEFLATE, nullptr, nullptr, nullptr, 0, nullptr,
                                      nullptr) >= 0;
  H5Pclose(p);
  H5Dclose(d);
  H5Fclose(f);
  return {chunk, deflate};
}

using Hdf5Test = testing::TempDirTest;

TEST_F(Hdf5Test, RoundTripWithGroupsAttributesAndChunks) {
  H5::Exception::dontPrint();
  std::map<std::string, Tensor> in{
      {"w", arange<float>({100, 3, 4}, 0.25)},
      {"opt/m/w1", arange<double>({7, 2}, -1.5)},
      {"opt/step", Tensor::scalar<int64_t>(12345678901234)},
      {"i32", arange<int32_t>({5})},
      {"u8", arange<uint8_t>({3, 50})},
      {"i8", arange<int8_t>({4}, -3)},
      {"u16", arange<uint16_t>({2, 2}, 1000)},
      {"empty", Tensor(DataType::Float, {0, 3})},
  };
  const std::map<std::string, std::string> attrs{{"format", "deep500-checkpoint"}, {"epoch", "3"}};
  Hdf5WriteOptions opt;
  opt.chunk_bytes = 480;  // 10 rows of w (48 bytes each)
  opt.gzip_level = 4;
  write_hdf5(path("a.h5"), in, attrs, opt);
  std::map<std::string, Tensor> out = read_hdf5(path("a.h5"));
  ASSERT_EQ(out.size(), in.size());
  for (const auto& [name, t] : in) expect_same(t, out[name], name);
  EXPECT_EQ(read_hdf5_attributes(path("a.h5")), attrs);
  expect_same(in["opt/m/w1"], read_hdf5_dataset(path("a.h5"), "opt/m/w1"), "one");

  auto [chunk, deflate] = c_api_layout(path("a.h5"), "w");
  EXPECT_EQ(chunk, (std::vector<hsize_t>{10, 3, 4}));
  EXPECT_TRUE(deflate);
  Hdf5Layout l = hdf5_layout(path("a.h5"), "w");
  EXPECT_EQ(l.chunk, (std::vector<int64_t>{10, 3, 4}));
  EXPECT_TRUE(l.gzip);
  auto [scalar_chunk, scalar_deflate] = c_api_layout(path("a.h5"), "opt/step");
  EXPECT_TRUE(scalar_chunk.empty());
  // Default options: chunked (whole tensor fits in 1 MiB), not compressed.
  write_hdf5(path("b.h5"), {{"w", in["w"]}});
  auto [chunk_b, deflate_b] = c_api_layout(path("b.h5"), "w");
  EXPECT_EQ(chunk_b, (std::vector<hsize_t>{100, 3, 4}));
  EXPECT_FALSE(deflate_b);
}

TEST_F(Hdf5Test, DatasetFromFileWrittenWithCApi) {
  // images u8 [6, 1, 2, 2] = arange % 256, labels i32 [6] = k % 4, written directly.
  const std::string p = path("c.h5");
  hid_t f = H5Fcreate(p.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t g = H5Gcreate2(f, "train", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  hsize_t idims[4] = {6, 1, 2, 2}, ldims[1] = {6};
  uint8_t img[24];
  int32_t lab[6];
  for (int i = 0; i < 24; ++i) img[i] = static_cast<uint8_t>(i * 10);
  for (int k = 0; k < 6; ++k) lab[k] = k % 4;
  hid_t s1 = H5Screate_simple(4, idims, nullptr), s2 = H5Screate_simple(1, ldims, nullptr);
  hid_t d1 = H5Dcreate2(g, "x", H5T_STD_U8LE, s1, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  hid_t d2 = H5Dcreate2(g, "y", H5T_STD_I32BE, s2, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(H5Dwrite(d1, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, img), 0);
  ASSERT_GE(H5Dwrite(d2, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, lab), 0);
  H5Dclose(d1), H5Dclose(d2), H5Sclose(s1), H5Sclose(s2), H5Gclose(g), H5Fclose(f);

  HDF5Dataset d(p, {{"input", "train/x"}, {"label", "train/y"}});
  EXPECT_EQ(d.size(), 6);
  EXPECT_EQ(d.num_classes(), 4);
  EXPECT_EQ(d.fields()[0].shape, (Shape{1, 2, 2}));
  Batch b = d.batch({5, 2});
  for (int i = 0; i < 4; ++i) {
    EXPECT_FLOAT_EQ(b["input"].data<float>()[i], (20 + i) * 10 / 255.0f);
    EXPECT_FLOAT_EQ(b["input"].data<float>()[4 + i], (8 + i) * 10 / 255.0f);
  }
  EXPECT_EQ(b["label"].data<int64_t>()[0], 1);
  EXPECT_EQ(b["label"].data<int64_t>()[1], 2);
  expect_error(
      [&] {
        HDF5Dataset(p, {{"input", "train/x"}, {"label", "train/y"}}, 3);
      },
      {"label 3", "[0, 3)"});
  expect_error([&] { HDF5Dataset(p, {{"input", "train/nope"}}); }, {p, "train/nope"});

  // Two threads reading the file at once (the helper serialises HDF5 calls).
  std::vector<Tensor> got(2);
  std::thread t1([&] {
    for (int i = 0; i < 20; ++i) got[0] = read_hdf5(p)["train/x"];
  });
  std::thread t2([&] {
    for (int i = 0; i < 20; ++i) got[1] = read_hdf5(p)["train/y"];
  });
  t1.join();
  t2.join();
  EXPECT_EQ(got[0].data<uint8_t>()[23], 230);
  EXPECT_EQ(got[1].data<int32_t>()[5], 1);
}

TEST_F(Hdf5Test, TruncatedAndForeignFilesAreErrorsNamingTheFile) {
  write_hdf5(path("a.h5"), {{"w", arange<float>({1000, 10})}});
  std::ifstream in(path("a.h5"), std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  write("cut.h5", s.substr(0, s.size() / 2));
  expect_error([&] { read_hdf5(path("cut.h5")); }, {path("cut.h5")});
  expect_error([&] { HDF5Dataset(path("cut.h5"), {{"input", "w"}}); }, {path("cut.h5")});
  write("text.h5", "not hdf5 at all");
  expect_error([&] { read_hdf5(path("text.h5")); }, {path("text.h5"), "not an HDF5 file"});
  expect_error([&] { read_hdf5(path("missing.h5")); }, {path("missing.h5"), "does not exist"});
  expect_error([&] { read_hdf5_dataset(path("a.h5"), "v"); }, {path("a.h5"), "'v'"});
}

TEST_F(Hdf5Test, FailedWriteLeavesOldFileIntact) {
  const Tensor old = arange<float>({4, 4});
  write_hdf5(path("ckpt.h5"), {{"w", old}}, {{"epoch", "1"}});
  // "a" is written first, then "b" (float16: unsupported) fails mid-way.
  expect_error(
      [&] {
        write_hdf5(path("ckpt.h5"),
                   {{"a", arange<float>({8})}, {"b", Tensor(DataType::Float16, {2})}},
                   {{"epoch", "2"}});
      },
      {path("ckpt.h5"), "'b'", "float16"});
  std::map<std::string, Tensor> got = read_hdf5(path("ckpt.h5"));
  ASSERT_EQ(got.size(), 1u);
  expect_same(old, got["w"], "w");
  EXPECT_EQ(read_hdf5_attributes(path("ckpt.h5")).at("epoch"), "1");
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir_)) files += e.path().filename() != "gen.py";
  EXPECT_EQ(files, 1);  // no temporary file left behind
  expect_error([&] { write_hdf5(path("x.h5"), {{"/abs", old}}); }, {"'/abs'"});
}

}  // namespace
}  // namespace deep500::training
