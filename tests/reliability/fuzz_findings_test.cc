// What the fuzz harnesses (tests/fuzz) found, each with its input: the
// input files live in tests/fuzz/regressions, or are ONNX test data.
//  * fuzz_model: ONNX's own DynamicQuantizeLinear test model on an all-zero
//    input computes scale 0, so 0/0 = NaN reached a float-to-uint8
//    conversion (undefined behaviour: UBSan stopped it) in Cast and
//    QuantizeLinear.
//  * fuzz_checkpoint: a damaged compact HDF5 dataset with no stored bytes
//    made libhdf5's H5Dread copy from a null pointer (SIGSEGV); another
//    damaged file crashed libhdf5 in H5A__close (reads of HDF5 files now
//    run first in a child process).
//  * fuzz_model: STFT on a 1-D signal crashed inside libonnx's shape
//    inference when the optimized executor costed the node; Split and Slice
//    of a scalar ended as internal errors (std::out_of_range); QLinearMatMul
//    read a b_scale of 2 values past its end for 3 columns (ASan:
//    heap-buffer-overflow); MaxUnpool with scalar indices crashed inside
//    libonnx's shape inference; an int32 ReduceLogSum of zeros converted
//    -inf to int (undefined behaviour); TfIdfVectorizer on rows of no
//    tokens took a reference into an empty vector (undefined behaviour),
//    sized its output from ngram_indexes before any budget check, and read
//    n-grams past the end of its pool when ngram_counts pointed beyond it
//    (ASan: heap-buffer-overflow); Reshape multiplied the requested
//    dimensions without an overflow check (0, 0, 2^63 - 2049 copied to
//    3 x 5 x ...: UBSan); Compress of a scalar, and Unique of a scalar with
//    an axis, indexed past their dims; LayerNormalization of a scalar
//    crashed inside libonnx's shape inference (optimized executor); Scan
//    over a scalar scan input read the dims of a rank-0 shape
//    (std::out_of_range).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "frameworks/register_all.h"
#include "network/model.h"
#include "network/optimized/optimized_executor.h"
#include "network/reference_executor.h"
#include "tests/error_of.h"
#include "tests/onnx_models.h"
#include "training/checkpoint.h"

using deep500::test::error_of;
using namespace deep500;

namespace {

TEST(FuzzFindings, FloatToIntegerCastsOfNaNAndOutOfRangeValuesAreDefined) {
  const float inf = std::numeric_limits<float>::infinity();
  Tensor x = Tensor::from_vector<float>({6}, {std::nanf(""), -inf, inf, 1e10f, -1e10f, 7.9f});
  EXPECT_EQ(x.cast(DataType::UInt8).to_double_vector(),
            (std::vector<double>{0, 0, 255, 255, 0, 7}));
  EXPECT_EQ(x.cast(DataType::Int32).to_double_vector(),
            (std::vector<double>{0, -2147483648.0, 2147483647.0, 2147483647.0, -2147483648.0, 7}));
  Tensor big = Tensor::from_vector<double>({2}, {1e300, -1e300});
  auto i64 = big.cast(DataType::Int64);
  EXPECT_EQ(i64.data<int64_t>()[0], std::numeric_limits<int64_t>::max());
  EXPECT_EQ(i64.data<int64_t>()[1], std::numeric_limits<int64_t>::min());
}

TEST(FuzzFindings, DynamicQuantizeLinearOfZerosIsZero) {
  frameworks::register_all();
  auto model = network::load_model(std::string(DEEP500_ONNX_TESTDATA) +
                                   "/node/test_dynamicquantizelinear_expanded/model.onnx");
  network::ReferenceExecutor ex(model, {.backends = {"reference"}});
  auto out = ex.run({{"x", Tensor(DataType::Float, {6})}});
  EXPECT_EQ(out.at("y").to_double_vector(), std::vector<double>(6, 0.0));
  EXPECT_EQ(out.at("y_zero_point").to_double_vector(), std::vector<double>{0.0});
}

TEST(FuzzFindings, DamagedCompactDatasetInACheckpointIsRefused) {
  const std::string path =
      std::string(DEEP500_FUZZ_REGRESSIONS) + "/checkpoint-compact-dataset-without-data.h5";
  EXPECT_NE(error_of([&] { (void)training::load_checkpoint(path); })
                .find("dataset 'counters/step': damaged: compact storage of 0 bytes for 8 bytes "
                      "of data"),
            std::string::npos)
      << error_of([&] { (void)training::load_checkpoint(path); });
}

TEST(FuzzFindings, ACheckpointThatCrashesLibhdf5IsAnError) {
  const std::string path = std::string(DEEP500_FUZZ_REGRESSIONS) + "/checkpoint-h5a-close-crash.h5";
  const std::string e = error_of([&] { (void)training::load_checkpoint(path); });
  EXPECT_NE(e.find(path), std::string::npos) << e;
  // Whether libhdf5 crashes on it (in the probe's child process: "damaged")
  // or fails cleanly depends on its heap; either way this process goes on.
  EXPECT_TRUE(e.find("damaged") != std::string::npos || e.find("failed") != std::string::npos) << e;
}

TEST(FuzzFindings, StftOnAOneDimensionalSignalIsAnError) {
  frameworks::register_all();
  auto model =
      network::load_model(std::string(DEEP500_FUZZ_REGRESSIONS) + "/model-stft-1d-signal.onnx");
  network::OptimizedExecutor ex(model, {.backends = {"reference"}, .strict_feed_shapes = false});
  const std::string e = error_of([&] {
    ex.inference({{"signal", Tensor(DataType::Float, {76})},
                  {"frame_step", Tensor::scalar<int64_t>(8)},
                  {"frame_length", Tensor::scalar<int64_t>(16)}});
  });
  EXPECT_NE(e.find("signal 'signal' has rank 1 (shape [76]), expected rank 3"), std::string::npos)
      << e;
}

// Split and Slice of a scalar: found one after the other.
TEST(FuzzFindings, SplitAndSliceOfAScalarAreBadInput) {
  frameworks::register_all();
  const std::string dir = DEEP500_FUZZ_REGRESSIONS;
  auto split = network::load_model(dir + "/model-split-scalar.onnx");
  auto slice = network::load_model(dir + "/model-slice-scalar.onnx");
  const Tensor zeros2 = Tensor(DataType::Int64, {2});
  const std::map<std::string, Tensor> slice_feeds = {{"x", Tensor::scalar<float>(1)},
                                                     {"starts", zeros2},
                                                     {"ends", zeros2},
                                                     {"axes", zeros2},
                                                     {"steps", zeros2}};
  for (bool optimized : {false, true}) {
    for (auto* model : {&split, &slice}) {
      network::ExecutorOptions o{.backends = {"reference"}, .strict_feed_shapes = false};
      std::unique_ptr<network::GraphExecutor> ex;
      if (optimized)
        ex = std::make_unique<network::OptimizedExecutor>(*model, o);
      else
        ex = std::make_unique<network::ReferenceExecutor>(*model, o);
      const std::string e = error_of([&] {
        ex->inference(model == &split
                          ? std::map<std::string, Tensor>{{"input", Tensor::scalar<float>(1)}}
                          : slice_feeds);
      });
      EXPECT_NE(e.find("has rank 0 (shape []), expected rank >= 1"), std::string::npos) << e;
    }
  }
}

TEST(FuzzFindings, QLinearMatMulScalesMustMatchRowsOrColumns) {
  frameworks::register_all();
  auto model = network::load_model(std::string(DEEP500_FUZZ_REGRESSIONS) +
                                   "/model-qlinearmatmul-b-scale-2-for-3-columns.onnx");
  network::ReferenceExecutor ex(model, {.backends = {"reference"}});
  auto u8 = [](Shape s) { return Tensor(DataType::UInt8, std::move(s)); };
  const std::string e = error_of([&] {
    ex.run({{"a", u8({2, 2, 4})},
            {"a_scale", Tensor::from_vector<float>({1}, {1})},
            {"a_zero_point", u8({1})},
            {"b", u8({2, 4, 3})},
            {"b_scale", Tensor::from_vector<float>({2}, {1, 1})},
            {"b_zero_point", u8({1})},
            {"y_scale", Tensor::from_vector<float>({1}, {1})},
            {"y_zero_point", u8({1})}});
  });
  EXPECT_NE(e.find("b_scale has 2 elements, expected 1 or N = 3"), std::string::npos) << e;
}

TEST(FuzzFindings, MaxUnpoolWithScalarIndicesIsBadInput) {
  frameworks::register_all();
  auto model = network::load_model(std::string(DEEP500_FUZZ_REGRESSIONS) +
                                   "/model-maxunpool-scalar-indices.onnx");
  network::OptimizedExecutor ex(model, {.backends = {"reference"}});
  const std::string e = error_of([&] {
    ex.inference(
        {{"xT", Tensor(DataType::Float, {1, 1, 2, 18})}, {"xI", Tensor::scalar<int64_t>(0)}});
  });
  EXPECT_NE(e.find("I 'xI' has rank 0 (shape []), expected rank >= 3"), std::string::npos) << e;
}

// log(0) = -inf converted to int32 was undefined behaviour; it saturates.
TEST(FuzzFindings, Int32ReduceLogSumOfZerosSaturates) {
  frameworks::register_all();
  auto model = network::load_model(std::string(DEEP500_FUZZ_REGRESSIONS) +
                                   "/model-reducelogsum-int32-zeros.onnx");
  // The fuzzed file declares its output float32; ReduceLogSum keeps int32.
  model.proto.mutable_graph()
      ->mutable_output(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->set_elem_type(onnx::TensorProto::INT32);
  network::ReferenceExecutor ex(model, {.backends = {"reference"}, .strict_feed_shapes = false});
  auto out = ex.run({{"data", Tensor(DataType::Int32, {3, 4, 5})}});
  ASSERT_EQ(out.size(), 1u);
  const Tensor& y = out.begin()->second;
  ASSERT_EQ(y.dtype(), DataType::Int32);
  for (int64_t i = 0; i < y.numel(); ++i)
    EXPECT_EQ(y.data<int32_t>()[i], std::numeric_limits<int32_t>::min());
}

// Rows of no tokens count nothing: the output is all zeros, [2, max index + 1].
TEST(FuzzFindings, TfIdfVectorizerOfEmptyRowsIsZero) {
  frameworks::register_all();
  auto model = network::load_model(std::string(DEEP500_FUZZ_REGRESSIONS) +
                                   "/model-tfidfvectorizer-empty-rows.onnx");
  network::ReferenceExecutor ex(model, {.backends = {"reference"}});
  auto out = ex.run({{"X", Tensor(DataType::Int32, {2, 0})}});
  const Tensor& y = out.at("Y");
  EXPECT_EQ(y.shape(), (Shape{2, 7}));
  EXPECT_EQ(y.to_double_vector(), std::vector<double>(14, 0.0));
}

TEST(FuzzFindings, TfIdfVectorizerOutputSizeIsCheckedBeforeCounting) {
  frameworks::register_all();
  auto model = network::parse_model(test::serialize_model_text(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (int64[1, 3] x) => (float[1, 1] y) {
      y = TfIdfVectorizer<max_gram_length = 1, max_skip_count = 0, min_gram_length = 1,
                          mode = "TF", ngram_counts = [0], ngram_indexes = [1099511627776],
                          pool_int64s = [5]>(x)
    }
  )"),
                                    "tfidf.onnx");
  network::ReferenceExecutor ex(model, {.backends = {"reference"}, .strict_feed_shapes = false});
  const std::string e = error_of([&] {
    ex.run({{"x", Tensor::from_vector<int64_t>({1, 3}, {5, 5, 1})}});
  });
  EXPECT_NE(e.find("TfIdfVectorizer"), std::string::npos) << e;
  EXPECT_NE(e.find("budget"), std::string::npos) << e;
}

TEST(FuzzFindings, TfIdfVectorizerCountsPastThePoolAreBadInput) {
  frameworks::register_all();
  const std::string e = error_of([] {
    auto model = network::load_model(std::string(DEEP500_FUZZ_REGRESSIONS) +
                                     "/model-tfidfvectorizer-counts-past-pool.onnx");
    network::ReferenceExecutor ex(model, {.backends = {"reference"}});
    ex.run({{"X", Tensor(DataType::Int32, {12})}});
  });
  EXPECT_NE(e.find("ngram_counts do not split the pool of 4 items"), std::string::npos) << e;
}

TEST(FuzzFindings, ReshapeToAnOverflowingShapeIsBadInput) {
  frameworks::register_all();
  auto model = network::load_model(std::string(DEEP500_FUZZ_REGRESSIONS) +
                                   "/model-reshape-shape-overflows.onnx");
  network::ReferenceExecutor ex(model, {.backends = {"reference"}});
  const std::string e = error_of([&] {
    ex.run({{"x", Tensor(DataType::Float, {3, 5, 6, 6, 5})},
            {"y", Tensor(DataType::Int64, {3, 6, 6, 5})}});
  });
  EXPECT_NE(e.find("Reshape"), std::string::npos) << e;
  EXPECT_NE(e.find("overflows a 64-bit size"), std::string::npos) << e;
}

TEST(FuzzFindings, CompressOfAScalarIsBadInput) {
  frameworks::register_all();
  auto model =
      network::load_model(std::string(DEEP500_FUZZ_REGRESSIONS) + "/model-compress-scalar.onnx");
  network::ReferenceExecutor ex(model, {.backends = {"reference"}});
  const std::string e = error_of([&] {
    ex.run({{"input", Tensor::scalar<int8_t>(1)},
            {"condition", Tensor::from_vector<bool>({2}, {true, false})}});
  });
  EXPECT_NE(e.find("input 'input' has rank 0 (shape []), expected rank >= 1"), std::string::npos)
      << e;
}

TEST(FuzzFindings, UniqueOfAScalarWithAnAxisIsBadInput) {
  frameworks::register_all();
  auto model = network::load_model(std::string(DEEP500_FUZZ_REGRESSIONS) +
                                   "/model-unique-scalar-with-axis.onnx");
  network::ReferenceExecutor ex(model, {.backends = {"reference"}, .strict_feed_shapes = false});
  const std::string e = error_of([&] { ex.run({{"X", Tensor::scalar<float>(1)}}); });
  EXPECT_NE(e.find("attribute 'axis' given for a scalar input"), std::string::npos) << e;
}

TEST(FuzzFindings, LayerNormalizationOfAScalarIsBadInput) {
  frameworks::register_all();
  auto model = network::load_model(std::string(DEEP500_FUZZ_REGRESSIONS) +
                                   "/model-layernormalization-scalar.onnx");
  network::OptimizedExecutor ex(model, {.backends = {"reference"}});
  const std::string e = error_of([&] {
    ex.inference({{"data", Tensor(DataType::UInt16, {3, 2, 2})},
                  {"X", Tensor::scalar<float>(1)},
                  {"W", Tensor(DataType::Float, {5})},
                  {"B", Tensor(DataType::Float, {5})}});
  });
  EXPECT_NE(e.find("X 'X' has rank 0 (shape []), expected rank >= 1"), std::string::npos) << e;
}

TEST(FuzzFindings, ScanOverAScalarIsBadInput) {
  frameworks::register_all();
  auto model =
      network::load_model(std::string(DEEP500_FUZZ_REGRESSIONS) + "/model-scan-scalar-input.onnx");
  network::ReferenceExecutor ex(model, {.backends = {"reference"}, .strict_feed_shapes = false});
  const std::string e = error_of([&] {
    ex.run({{"initial", Tensor(DataType::Float, {2})}, {"x", Tensor::scalar<float>(1)}});
  });
  EXPECT_NE(e.find("scan input 0 is a scalar"), std::string::npos) << e;
}

// A Slice reading one constant as both `ends` and `axes`: the planner's
// pattern matchers took "read twice" for two readers and indexed past the
// one reader there was (ASan: heap-buffer-overflow in match_gelu).
TEST(FuzzFindings, ANodeReadingAValueTwiceIsNoTwoReaders) {
  frameworks::register_all();
  auto model = network::load_model(std::string(DEEP500_FUZZ_REGRESSIONS) +
                                   "/model-slice-reads-a-constant-twice.onnx");
  Tensor input = Tensor(DataType::Float, {3, 5, 6, 6, 5, 3, 4});
  for (int64_t i = 0; i < input.numel(); ++i) input.data<float>()[i] = 0.01f * (i % 97);
  const std::map<std::string, Tensor> feeds = {
      {"input", input}, {"target", Tensor(DataType::Int64, {3, 6, 6, 5, 3, 4})}};
  const network::ExecutorOptions options{.backends = {"reference"}, .strict_feed_shapes = false};
  const Tensor expected = network::ReferenceExecutor(model, options).run(feeds).at("loss");
  const Tensor got = network::OptimizedExecutor(model, options).inference(feeds).at("loss");
  ASSERT_EQ(got.shape(), expected.shape());
  EXPECT_EQ(got.to_double_vector(), expected.to_double_vector());
}

// ConvInteger with a 4-D W on a 3-D X and no kernel_shape: libonnx's shape
// inference (the plan's shapes) read kernel dims past X's (SEGV).
TEST(FuzzFindings, ConvWeightOfAnotherRankThanXIsBadInput) {
  frameworks::register_all();
  auto model = network::load_model(std::string(DEEP500_FUZZ_REGRESSIONS) +
                                   "/model-convinteger-w-rank-above-x.onnx");
  network::OptimizedExecutor ex(model, {.backends = {"reference"}, .strict_feed_shapes = false});
  const std::string e = error_of([&] {
    ex.inference({{"x", Tensor(DataType::UInt8, {1, 0, 3})},
                  {"w", Tensor(DataType::UInt8, {1, 1, 2, 2})},
                  {"x_zero_point", Tensor(DataType::UInt8, {})}});
  });
  EXPECT_NE(e.find("has shape [1,1,2,2], expected rank 3 as X [1,0,3]"), std::string::npos) << e;
}

}  // namespace
