// GraphExecutor: the Level 1 interface (Deep500's GraphExecutor). An
// executor runs one ONNX model for inference, or for inference plus
// backpropagation of a scalar output to every parameter.
//
// Contract:
//  * The Model passed at construction must outlive the executor.
//  * inference() takes graph inputs by name (initializers fill the rest) and
//    returns every graph output by name; bad feeds throw Error naming the
//    input and both shapes/types.
//  * inference_and_backprop() also returns d(loss)/d(parameter) for every
//    floating-point initializer the loss depends on (others get zeros), where
//    `loss` names any scalar (one-element) value of the graph. Gradients of
//    values used more than once are accumulated.
//  * Feeds may also name floating-point initializers (parameters): the fed
//    tensor replaces the initializer for that run. This is how a trainer runs
//    updated parameters without rewriting the model; an executor must not
//    keep anything derived from a fed parameter's values across runs.
//  * Listeners (ExecutorEvents) are called on the executing thread before
//    and after every node; they must not throw. One run at a time.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "deep/named_registry.h"
#include "deep/tensor.h"
#include "network/executor_options.h"
#include "network/model.h"

namespace deep500::network {

struct NodeEvent {
  const std::string& node;  // node name
  const std::string& op_type;
  const std::string& implementation;  // kernel that ran ("" in before_node)
  double seconds = 0;                 // wall time of the node (after_node only)
  bool backward = false;              // true during backpropagation
  // Input types and shapes (undefined dtype = absent input); null when unknown.
  const std::vector<TensorDesc>* input_descs = nullptr;
};

class ExecutorEvents {
 public:
  virtual ~ExecutorEvents() = default;
  virtual void before_node(const NodeEvent&) {}
  virtual void after_node(const NodeEvent&) {}
  // During inference_and_backprop(), as soon as no later backward node adds
  // to `parameter`'s gradient (what a distributed scheme needs to start its
  // communication while backprop goes on). `gradient` is valid during the
  // call only (copy what you keep); it equals what the result returns.
  // Executors that cannot tell never call it (the reference executor);
  // parameters the loss does not depend on get no call.
  virtual void gradient_ready(const std::string& parameter, const Tensor& gradient) {}
};

struct BackpropResult {
  std::map<std::string, Tensor> outputs;    // graph outputs (and the loss)
  std::map<std::string, Tensor> gradients;  // parameter name -> gradient
};

class GraphExecutor {
 public:
  virtual ~GraphExecutor() = default;
  virtual std::string name() const = 0;
  // The settings this executor runs with, as results record them (e.g.
  // settings_of(ExecutorOptions) after resolved()).
  virtual std::vector<std::pair<std::string, std::string>> settings() const = 0;
  virtual std::map<std::string, Tensor> inference(const std::map<std::string, Tensor>& inputs) = 0;
  virtual BackpropResult inference_and_backprop(const std::map<std::string, Tensor>& inputs,
                                                const std::string& loss) = 0;
  // Listeners are not owned; remove them before they die.
  void add_events(ExecutorEvents* e) { events_.push_back(e); }
  void remove_events(ExecutorEvents* e);

 protected:
  void notify_before(const NodeEvent& e) {
    for (auto* l : events_) l->before_node(e);
  }
  void notify_after(const NodeEvent& e) {
    for (auto* l : events_) l->after_node(e);
  }
  void notify_gradient_ready(const std::string& parameter, const Tensor& gradient) {
    for (auto* l : events_) l->gradient_ready(parameter, gradient);
  }
  bool has_events() const { return !events_.empty(); }

 private:
  std::vector<ExecutorEvents*> events_;
};

using ExecutorFactory =
    std::function<std::unique_ptr<GraphExecutor>(const Model&, const ExecutorOptions&)>;

// Executors by name ("reference", "optimized", and those frameworks add from
// frameworks/register_all.cc). Thread-safe (deep/named_registry.h).
class ExecutorRegistry : public NamedRegistry<ExecutorFactory> {
 public:
  static ExecutorRegistry& global();
  ExecutorRegistry();  // with the built-in executors
  // Throws Error listing the known executors when `name` is unknown.
  std::unique_ptr<GraphExecutor> create(const std::string& name, const Model& model,
                                        const ExecutorOptions& options = {}) const {
    return get(name)(model, options);
  }
};

// The executor `spec` names: a registered executor ("reference",
// "optimized", a framework's), or "backend:NAMES" for the reference
// executor with that kernel preference. Throws Error naming `spec` when it
// is neither (a kernel backend's bare name says how to ask for it).
std::unique_ptr<GraphExecutor> make_executor(const std::string& spec, const Model& model,
                                             ExecutorOptions options = {});

// Checks a feed against the graph input's declared element type and, when
// `check_shape`, its static dimensions; the Error names the model, the input
// and both shapes. Inputs not typed as tensors are not checked here.
void check_feed(const onnx::ValueInfoProto& input, const Tensor& t, const std::string& model,
                bool check_shape = true);
// Checks a computed graph output against its declared element type (a model
// that declares int64 and computes float32 is wrong, whichever is). Declared
// dims are not checked: they may hold only for some input values (a Loop's
// scan output, a dynamic batch).
void check_graph_output(const onnx::ValueInfoProto& output, const Tensor& t,
                        const std::string& model);

// Floating-point initializers: the parameters gradients are taken for.
std::vector<std::string> parameter_names(const Model& model);

}  // namespace deep500::network
