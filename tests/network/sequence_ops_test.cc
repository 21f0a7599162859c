// Sequence and optional built-ins on small hand-made values (direct calls),
// and control flow carrying sequences through the executor (parsed models).
#include <gtest/gtest.h>

#include <onnx/defs/parser.h>

#include <set>

#include "frameworks/register_all.h"
#include "network/model.h"
#include "network/reference_executor.h"
#include "network/sequence_ops.h"
#include "tests/error_of.h"

using deep500::test::error_of;

using namespace deep500;
using network::Value;

namespace {

class NoGraphs : public network::ValueGraphRunner {
 public:
  std::vector<Value> run_graph(const onnx::GraphProto&, const std::vector<Value>&) override {
    throw Error("no subgraphs here");
  }
  int64_t max_loop_iterations() const override { return 1; }
};

ops::NodeSpec node(const std::string& op, size_t n_in, std::map<std::string, int64_t> ints = {}) {
  ops::NodeSpec s;
  s.name = "n";
  s.op_type = op;
  s.opset = 17;
  for (size_t i = 0; i < n_in; ++i) s.inputs.push_back("in" + std::to_string(i));
  s.outputs = {"out"};
  for (const auto& [k, v] : ints) {
    ops::Attribute a;
    a.kind = ops::Attribute::Kind::Int;
    a.i = v;
    s.attributes.set(k, a);
  }
  return s;
}

Value run(const std::string& op, std::vector<Value> in, std::map<std::string, int64_t> ints = {}) {
  NoGraphs g;
  auto out = network::run_value_op(node(op, in.size(), ints), in, g);
  EXPECT_EQ(out.size(), 1u);
  return out.at(0);
}

Tensor vec(std::vector<float> v) {
  const auto n = static_cast<int64_t>(v.size());
  return Tensor::from_vector<float>({n}, v);
}
Tensor i64(int64_t v) {
  return Tensor::scalar<int64_t>(v);
}
float first(const Value& v) {
  return v.tensor("").data<float>()[0];
}

Value abc() {
  return Value::sequence({vec({1}), vec({2}), vec({3})});
}

}  // namespace

TEST(SequenceOps, ConstructLengthAt) {
  Value s = run("SequenceConstruct", {vec({1}), vec({2, 2}), vec({3})});
  EXPECT_EQ(run("SequenceLength", {s}).tensor("").data<int64_t>()[0], 3);
  EXPECT_EQ(first(run("SequenceAt", {s, i64(-1)})), 3.0f);
  EXPECT_EQ(run("SequenceAt", {s, i64(1)}).tensor("").numel(), 2);
  auto msg = error_of([&] { run("SequenceAt", {s, i64(3)}); });
  EXPECT_NE(msg.find("position 3 is out of range [-3, 2]"), std::string::npos) << msg;
  msg = error_of([&] { run("SequenceConstruct", {vec({1}), i64(2)}); });
  EXPECT_NE(msg.find("share one element type"), std::string::npos) << msg;
}

TEST(SequenceOps, EmptyInsertErase) {
  Value e = run("SequenceEmpty", {}, {{"dtype", 11}});
  EXPECT_EQ(e.sequence("").size(), 0u);
  EXPECT_EQ(e.sequence_elem_type(""), DataType::Double);
  Value s = run("SequenceInsert", {abc(), vec({9})});           // at the back
  Value f = run("SequenceInsert", {abc(), vec({7}), i64(-3)});  // before element 0
  EXPECT_EQ(first(run("SequenceAt", {s, i64(3)})), 9.0f);
  EXPECT_EQ(first(run("SequenceAt", {f, i64(0)})), 7.0f);
  Value d = run("SequenceErase", {abc()});  // drops the last
  EXPECT_EQ(d.sequence("").size(), 2u);
  EXPECT_EQ(first(run("SequenceAt", {d, i64(-1)})), 2.0f);
  Value d0 = run("SequenceErase", {abc(), i64(0)});
  EXPECT_EQ(first(run("SequenceAt", {d0, i64(0)})), 2.0f);
  auto msg = error_of([&] { run("SequenceInsert", {abc(), i64(1)}); });
  EXPECT_NE(msg.find("cannot insert a int64 tensor into a sequence of float32"), std::string::npos)
      << msg;
  msg = error_of([&] { run("SequenceAt", {vec({1}), i64(0)}); });
  EXPECT_NE(msg.find("expected a sequence"), std::string::npos) << msg;
}

TEST(SequenceOps, ConcatFromSequence) {
  // Two [2,1] tensors along axis 1 -> [2,2]; stacked with new_axis -> [2,2,1].
  Tensor a = Tensor::from_vector<float>({2, 1}, {1, 2});
  Tensor b = Tensor::from_vector<float>({2, 1}, {3, 4});
  Value s = Value::sequence({a, b});
  Tensor c = run("ConcatFromSequence", {s}, {{"axis", 1}}).tensor("");
  EXPECT_EQ(c.shape(), (Shape{2, 2}));
  EXPECT_EQ(c.to_double_vector(), (std::vector<double>{1, 3, 2, 4}));
  Tensor n = run("ConcatFromSequence", {s}, {{"axis", 0}, {"new_axis", 1}}).tensor("");
  EXPECT_EQ(n.shape(), (Shape{2, 2, 1}));
  EXPECT_EQ(n.to_double_vector(), (std::vector<double>{1, 2, 3, 4}));
  Tensor last = run("ConcatFromSequence", {s}, {{"axis", -1}, {"new_axis", 1}}).tensor("");
  EXPECT_EQ(last.shape(), (Shape{2, 1, 2}));
  EXPECT_EQ(last.to_double_vector(), (std::vector<double>{1, 3, 2, 4}));
}

TEST(SequenceOps, SplitToSequence) {
  Tensor x = Tensor::from_vector<float>({2, 5}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  Value each = run("SplitToSequence", {x}, {{"axis", 1}, {"keepdims", 0}});
  ASSERT_EQ(each.sequence("").size(), 5u);
  EXPECT_EQ(each.sequence("")[3].shape(), (Shape{2}));
  EXPECT_EQ(each.sequence("")[3].to_double_vector(), (std::vector<double>{3, 8}));
  Value kept = run("SplitToSequence", {x}, {{"axis", 0}});
  EXPECT_EQ(kept.sequence("")[1].shape(), (Shape{1, 5}));
  Value chunks = run("SplitToSequence", {x, i64(2)}, {{"axis", 1}});  // 2, 2, 1
  ASSERT_EQ(chunks.sequence("").size(), 3u);
  EXPECT_EQ(chunks.sequence("")[2].shape(), (Shape{2, 1}));
  EXPECT_EQ(chunks.sequence("")[2].to_double_vector(), (std::vector<double>{4, 9}));
  Value sized =
      run("SplitToSequence", {x, Tensor::from_vector<int64_t>({2}, {1, 4})}, {{"axis", 1}});
  EXPECT_EQ(sized.sequence("")[1].to_double_vector(),
            (std::vector<double>{1, 2, 3, 4, 6, 7, 8, 9}));
  auto msg = error_of([&] {
    run("SplitToSequence", {x, Tensor::from_vector<int64_t>({2}, {1, 1})}, {{"axis", 1}});
  });
  EXPECT_NE(msg.find("sum to 2 but the axis has length 5"), std::string::npos) << msg;
}

TEST(SequenceOps, Optionals) {
  Value none = run("Optional", {Value()});
  EXPECT_FALSE(run("OptionalHasElement", {none}).tensor("").data<bool>()[0]);
  Value some = run("Optional", {abc()});
  EXPECT_TRUE(run("OptionalHasElement", {some}).tensor("").data<bool>()[0]);
  EXPECT_EQ(run("OptionalGetElement", {some}).sequence("").size(), 3u);
  auto msg = error_of([&] { run("OptionalGetElement", {none}); });
  EXPECT_NE(msg.find("OptionalGetElement"), std::string::npos) << msg;
  EXPECT_NE(msg.find("got empty optional"), std::string::npos) << msg;
  EXPECT_EQ(run("Identity", {some}).element("").sequence("").size(), 3u);
}

namespace {
// ONNX 1.12's text parser has no seq(...) types: graph inputs/outputs named
// in `seqs` (declared float in the text) become sequences of float tensors.
void make_sequences(onnx::GraphProto& g, const std::set<std::string>& seqs) {
  auto fix = [&](onnx::ValueInfoProto& vi) {
    if (!seqs.count(vi.name())) return;
    onnx::TypeProto t;
    t.mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(1);
    *vi.mutable_type() = t;
  };
  for (auto& vi : *g.mutable_input()) fix(vi);
  for (auto& vi : *g.mutable_output()) fix(vi);
  for (auto& n : *g.mutable_node())
    for (auto& a : *n.mutable_attribute())
      if (a.has_g()) make_sequences(*a.mutable_g(), seqs);
}

std::map<std::string, Value> run_model(const char* text, std::map<std::string, Value> feeds,
                                       const std::set<std::string>& seqs) {
  frameworks::register_all();
  onnx::ModelProto m;
  auto status = onnx::OnnxParser::Parse(m, text);
  EXPECT_TRUE(status.IsOK()) << status.ErrorMessage();
  make_sequences(*m.mutable_graph(), seqs);
  auto model = network::parse_model(m.SerializeAsString(), "test.onnx");
  network::ReferenceExecutor exec(model, {.backends = {"reference"}});
  return exec.run_values(feeds);
}
}  // namespace

TEST(SequenceOps, LoopCarriesASequence) {
  // Appends [i] for i = 0..2 to the carried sequence.
  auto out = run_model(R"(<ir_version: 8, opset_import: ["" : 17]>
g (int64 n) => (float s) {
  e = SequenceEmpty<dtype = 1>()
  s = Loop(n, , e) <body = b (int64 i, bool c, float acc) => (bool c2, float acc2) {
    c2 = Identity(c)
    f = Cast<to = 1>(i)
    acc2 = SequenceInsert(acc, f)
  }>
})",
                       {{"n", i64(3)}}, {"s", "acc", "acc2"});
  const auto& s = out.at("s").sequence("s");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[2].data<float>()[0], 2.0f);
}

TEST(SequenceOps, SequenceMapAndIfReturningASequence) {
  auto out = run_model(R"(<ir_version: 8, opset_import: ["" : 17]>
g (bool c, float[2] x) => (float y) {
  s = If(c) <then_branch = t () => (float a) { a = SequenceConstruct(x, x) },
             else_branch = e () => (float b) { b = SequenceConstruct(x) }>
  y = SequenceMap(s, x) <body = m (float[2] u, float[2] v) => (float[2] w) { w = Mul(u, v) }>
})",
                       {{"c", Tensor::scalar<bool>(true)}, {"x", vec({2, 3})}}, {"y", "a", "b"});
  const auto& y = out.at("y").sequence("y");
  ASSERT_EQ(y.size(), 2u);
  EXPECT_EQ(y[1].to_double_vector(), (std::vector<double>{4, 9}));
}

TEST(SequenceOps, TensorKernelGivenASequenceSaysSo) {
  std::string msg;
  try {
    run_model(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[1] x) => (float[1] y) {
  s = SequenceConstruct(x)
  y = Add(s, x)
})",
              {{"x", vec({1})}}, {});
  } catch (const Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("(Add"), std::string::npos) << msg;
  EXPECT_NE(msg.find("input 's'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected a tensor, got sequence of 1 float32 tensors"), std::string::npos)
      << msg;
}

TEST(SequenceOps, ScanCarriesASequence) {
  // Collects the rows of X (scanned along axis 0) into a sequence and
  // doubles them as a scan output.
  auto out = run_model(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[3,2] X) => (float s, float[3,2] Y) {
  e = SequenceEmpty<dtype = 1>()
  s, Y = Scan<num_scan_inputs = 1, body = b (float acc, float[2] r) => (float acc2, float[2] y) {
    acc2 = SequenceInsert(acc, r)
    y = Add(r, r)
  }>(e, X)
})",
                       {{"X", Tensor::from_vector<float>({3, 2}, {1, 2, 3, 4, 5, 6})}},
                       {"s", "acc", "acc2"});
  const auto& s = out.at("s").sequence("s");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[1].to_double_vector(), (std::vector<double>{3, 4}));
  EXPECT_EQ(out.at("Y").tensor("Y").to_double_vector(), (std::vector<double>{2, 4, 6, 8, 10, 12}));
}

TEST(SequenceOps, Scan8ScansEachBatchRowUpToItsSequenceLength) {
  // Scan-8: batch axis 0, sequence_lens first. Row 0 sums all 3 steps, row 1
  // stops after 1; the running-sum scan output of row 1 is zero-padded.
  auto out = run_model(R"(<ir_version: 3, opset_import: ["" : 8]>
g (int32[2] lens, float[2,1] init, float[2,3,1] X) => (float[2,1] total, float[2,3,1] sums) {
  total, sums = Scan<num_scan_inputs = 1, body = b (float[1] acc, float[1] x) => (float[1] acc2, float[1] y) {
    acc2 = Add(acc, x)
    y = Identity(acc2)
  }>(lens, init, X)
})",
                       {{"lens", Tensor::from_vector<int32_t>({2}, {3, 1})},
                        {"init", Tensor::from_vector<float>({2, 1}, {0, 10})},
                        {"X", Tensor::from_vector<float>({2, 3, 1}, {1, 2, 3, 4, 5, 6})}},
                       {});
  EXPECT_EQ(out.at("total").tensor("total").to_double_vector(), (std::vector<double>{6, 14}));
  EXPECT_EQ(out.at("sums").tensor("sums").to_double_vector(),
            (std::vector<double>{1, 3, 6, 14, 0, 0}));
}
