#include "training/models.h"

#include <cmath>

#include "deep/error.h"
#include "deep/onnx_tensor.h"
#include "deep/random.h"

namespace deep500::training {

namespace {

struct Builder {
  onnx::ModelProto m;
  onnx::GraphProto* g;
  Random rng;

  explicit Builder(uint64_t seed) : rng(seed) {
    m.set_ir_version(8);
    m.set_producer_name("deep500");
    auto* op = m.add_opset_import();
    op->set_domain("");
    op->set_version(17);
    g = m.mutable_graph();
  }

  // An initializer drawn uniformly in +-bound.
  void param(const std::string& name, Shape shape, double bound) {
    Tensor t(DataType::Float, std::move(shape));
    rng.fill_uniform(t, -bound, bound);
    *g->add_initializer() = to_onnx(t, name);
  }

  void node(const std::string& op, std::vector<std::string> in, const std::string& out,
            const std::vector<std::pair<std::string, std::vector<int64_t>>>& ints = {}) {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(out);
    for (const auto& i : in) n->add_input(i);
    n->add_output(out);
    for (const auto& [key, values] : ints) {
      auto* a = n->add_attribute();
      a->set_name(key);
      if (values.size() == 1 && key != "kernel_shape" && key != "pads" && key != "strides") {
        a->set_type(onnx::AttributeProto::INT);
        a->set_i(values[0]);
      } else {
        a->set_type(onnx::AttributeProto::INTS);
        for (int64_t v : values) a->add_ints(v);
      }
    }
  }

  void value(onnx::ValueInfoProto* v, const std::string& name, const std::vector<int64_t>& dims) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(static_cast<int>(DataType::Float));
    auto* shape = t->mutable_shape();
    for (int64_t d : dims) {
      auto* dim = shape->add_dim();
      if (d < 0)
        dim->set_dim_param("N");
      else
        dim->set_dim_value(d);
    }
  }

  // Conv (weights [cout, cin, k, k]) with PyTorch's default bounds.
  void conv(const std::string& name, const std::string& in, int64_t cin, int64_t cout, int64_t k,
            int64_t pad) {
    const double bound = 1 / std::sqrt(static_cast<double>(cin * k * k));
    param(name + ".weight", {cout, cin, k, k}, bound);
    param(name + ".bias", {cout}, bound);
    node("Conv", {in, name + ".weight", name + ".bias"}, name,
         {{"kernel_shape", {k, k}}, {"pads", {pad, pad, pad, pad}}});
  }
  // Gemm with weights [out, in] (transB = 1), as torch.nn.Linear.
  void linear(const std::string& name, const std::string& in, int64_t fin, int64_t fout,
              const std::string& out = "") {
    const double bound = 1 / std::sqrt(static_cast<double>(fin));
    param(name + ".weight", {fout, fin}, bound);
    param(name + ".bias", {fout}, bound);
    node("Gemm", {in, name + ".weight", name + ".bias"}, out.empty() ? name : out,
         {{"transB", {1}}});
  }
};

}  // namespace

network::Network lenet5(uint64_t seed, int64_t classes) {
  DEEP500_CHECK(classes >= 2, "lenet5: classes must be >= 2, got ", classes);
  Builder b(seed);
  b.g->set_name("lenet5");
  b.value(b.g->add_input(), "input", {-1, 1, 28, 28});
  b.conv("conv1", "input", 1, 6, 5, 2);
  b.node("Relu", {"conv1"}, "relu1");
  b.node("MaxPool", {"relu1"}, "pool1", {{"kernel_shape", {2, 2}}, {"strides", {2, 2}}});
  b.conv("conv2", "pool1", 6, 16, 5, 0);
  b.node("Relu", {"conv2"}, "relu2");
  b.node("MaxPool", {"relu2"}, "pool2", {{"kernel_shape", {2, 2}}, {"strides", {2, 2}}});
  b.node("Flatten", {"pool2"}, "flat", {{"axis", {1}}});
  b.linear("fc1", "flat", 16 * 5 * 5, 120);
  b.node("Relu", {"fc1"}, "relu3");
  b.linear("fc2", "relu3", 120, 84);
  b.node("Relu", {"fc2"}, "relu4");
  b.linear("fc3", "relu4", 84, classes, "logits");
  b.value(b.g->add_output(), "logits", {-1, classes});
  return network::Network::from_proto(b.m, "lenet5 (built in)");
}

network::Network mlp(uint64_t seed, int64_t classes) {
  DEEP500_CHECK(classes >= 2, "mlp: classes must be >= 2, got ", classes);
  Builder b(seed);
  b.g->set_name("mlp");
  b.value(b.g->add_input(), "input", {-1, 1, 28, 28});
  b.node("Flatten", {"input"}, "flat", {{"axis", {1}}});
  b.linear("fc1", "flat", 28 * 28, 128);
  b.node("Relu", {"fc1"}, "relu1");
  b.linear("fc2", "relu1", 128, classes, "logits");
  b.value(b.g->add_output(), "logits", {-1, classes});
  return network::Network::from_proto(b.m, "mlp (built in)");
}

std::vector<std::string> builtin_models() {
  return {"lenet5", "mlp"};
}

network::Network make_builtin_model(const std::string& name, uint64_t seed) {
  if (name == "lenet5") return lenet5(seed);
  if (name == "mlp") return mlp(seed);
  std::string known;
  for (const auto& n : builtin_models()) known += (known.empty() ? "" : ", ") + n;
  throw Error(cat("--model: unknown built-in model '", name, "' (known: ", known,
                  "; or give an ONNX file with --logits)"));
}

}  // namespace deep500::training
