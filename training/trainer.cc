#include "training/trainer.h"

#include <cmath>

#include <algorithm>
#include <optional>
#include <tuple>

#include "deep/error.h"
#include "network/reference_executor.h"
#include "training/checkpoint.h"

namespace deep500::training {

namespace {

std::string show(DataType t, const Shape& s) {
  std::string out = std::string(name_of(t)) + "[";
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? "," : "") + (s[i] < 0 ? std::string("?") : std::to_string(s[i]));
  return out + "]";
}

const onnx::ValueInfoProto* graph_input(const network::Network& net, const std::string& name) {
  for (const auto& in : net.proto().graph().input())
    if (in.name() == name) return &in;
  return nullptr;
}

}  // namespace

Trainer::Trainer(network::Network& net, network::GraphExecutor& executor, Optimizer& optimizer,
                 Sampler& sampler, const Dataset& train, const Dataset* test, TrainerConfig config)
    : net_(net),
      exec_(executor),
      opt_(optimizer),
      sampler_(sampler),
      train_(train),
      test_(test),
      cfg_(std::move(config)),
      rng_(cfg_.seed) {
  const std::string model = net_.model().path;
  DEEP500_CHECK(cfg_.epochs >= 0 && cfg_.test_batch_size > 0, model,
                ": trainer: epochs must be >= 0 and test_batch_size > 0");
  auto inputs = net_.inputs();
  for (const auto& in : inputs) {
    bool fed = false;
    for (const auto& [field, input] : cfg_.feeds) fed |= input == in;
    DEEP500_CHECK(fed, model, ": trainer: graph input '", in,
                  "' is fed by no dataset field (TrainerConfig::feeds)");
  }
  validate(train_);
  if (test_) validate(*test_);
  if (!cfg_.logits.empty()) {
    auto outs = net_.outputs();
    if (std::find(outs.begin(), outs.end(), cfg_.logits) == outs.end())
      net_.add_output(cfg_.logits);
    bool has_label = false;
    for (const auto& f : train_.fields()) has_label |= f.name == cfg_.label_field;
    DEEP500_CHECK(has_label, train_.describe(), ": has no field '", cfg_.label_field,
                  "' to compare with the logits '", cfg_.logits, "'");
  }
  if (cfg_.update_state) {
    state_updates_ = network::state_updates(net_.model());
    auto outs = net_.outputs();
    for (const auto& u : state_updates_)
      if (std::find(outs.begin(), outs.end(), u.output) == outs.end()) net_.add_output(u.output);
  }
  loader_ = std::make_unique<DataLoader>(train_, sampler_, cfg_.loader);
  for (const auto& name : net_.parameters()) params_[name] = net_.parameter(name);
  for (const auto& u : state_updates_)
    DEEP500_CHECK(params_.count(u.initializer), model, ": trainer: running statistic '",
                  u.initializer, "' of ", u.node, " is not a floating-point initializer");
  for (auto& [name, t] : params_) param_feeds_.emplace_back(&(feeds_[name] = t), &t);
  state_.epochs = cfg_.epochs;
  state_.has_accuracy = !cfg_.logits.empty();
  if (cfg_.metrics) events_.add(&metrics_);
  if (cfg_.progress) {
    progress_ = std::make_unique<ProgressBar>();
    events_.add(progress_.get());
  }
}

void Trainer::validate(const Dataset& d) const {
  const auto fields = d.fields();
  for (const auto& [field, input] : cfg_.feeds) {
    const std::string& wanted = field;  // clang 14 cannot capture a structured binding
    auto f = std::find_if(fields.begin(), fields.end(),
                          [&](const FieldDesc& x) { return x.name == wanted; });
    std::string known;
    for (const auto& x : fields) known += (known.empty() ? "" : ", ") + x.name;
    DEEP500_CHECK(f != fields.end(), d.describe(), ": has no field '", field, "' (fields: ", known,
                  ") to feed graph input '", input, "'");
    const auto* vi = graph_input(net_, input);
    DEEP500_CHECK(vi, net_.model().path, ": trainer: '", input, "' (fed from field '", field,
                  "') is not a graph input");
    if (!vi->type().has_tensor_type()) continue;
    const auto& tt = vi->type().tensor_type();
    auto want_type = static_cast<DataType>(tt.elem_type());
    Shape want;
    if (tt.has_shape())
      for (const auto& dim : tt.shape().dim())
        want.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
    Shape have{-1};
    have.insert(have.end(), f->shape.begin(), f->shape.end());
    bool ok = want_type == DataType::Undefined || want_type == f->dtype;
    if (tt.has_shape()) {
      ok = ok && want.size() == have.size();
      for (size_t i = 1; ok && i < want.size(); ++i) ok = want[i] < 0 || want[i] == have[i];
    }
    Shape sample(want.begin() + (want.empty() ? 0 : 1), want.end());
    DEEP500_CHECK(ok, d.describe(), ": field '", field, "' has samples ", show(f->dtype, f->shape),
                  " (batches ", show(f->dtype, have), "), but graph input '", input, "' of ",
                  net_.model().path, " expects ", show(want_type, want), " (samples ",
                  show(want_type, sample), ")");
  }
}

double Trainer::elapsed() const {
  return base_seconds_ +
         std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

int64_t Trainer::correct(const Tensor& logits, const Batch& b) const {
  const Tensor& labels = b.at(cfg_.label_field);
  const int64_t n = labels.numel();
  DEEP500_CHECK(logits.rank() == 2 && logits.dim(0) == n, net_.model().path, ": logits '",
                cfg_.logits, "' ", to_string(logits.desc()), " do not match labels '",
                cfg_.label_field, "' ", to_string(labels.desc()), " (expected [N, classes])");
  const int64_t c = logits.dim(1);
  int64_t hits = 0;
  dispatch_float(logits.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = logits.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      const T* row = p + i * c;
      int64_t best =
          std::max_element(row, row + c,
                           [](T x, T y) { return static_cast<float>(x) < static_cast<float>(y); }) -
          row;
      hits += static_cast<int64_t>(labels.at_as_double(i)) == best;
    }
  });
  return hits;
}

namespace {

// Whether no element has an all-ones exponent (NaN or Inf): integer work the
// compiler vectorizes, a few microseconds per step for LeNet's gradients.
template <class Bits>
bool all_finite(const void* data, int64_t n, Bits exponent) {
  const Bits* p = static_cast<const Bits*>(data);
  Bits bad = 0;
  for (int64_t i = 0; i < n; ++i) bad |= static_cast<Bits>((p[i] & exponent) == exponent);
  return bad == 0;
}

// "... is NaN at [17] of float32[...]" for the first non-finite element of
// `t`, or "".
std::string first_non_finite(const Tensor& t, const std::string& what) {
  if (!t.defined() || !is_floating(t.dtype())) return "";
  if (t.dtype() == DataType::Float && all_finite<uint32_t>(t.raw(), t.numel(), 0x7f800000u))
    return "";
  if (t.dtype() == DataType::Double &&
      all_finite<uint64_t>(t.raw(), t.numel(), 0x7ff0000000000000ull))
    return "";
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = t.at_as_double(i);
    if (!std::isfinite(v))
      return cat(what, " is ",
                 std::isnan(v) ? "NaN"
                 : v > 0       ? "+Inf"
                               : "-Inf",
                 " at [", i, "] of ", to_string(t.desc()));
  }
  return "";
}

// Where the first NaN/Inf of a forward pass on `feeds` comes from: the
// forward pass again on the reference executor with every node output
// exposed, scanned in node order. When every forward value is finite, says
// so (the non-finite value then first appears in the backward pass).
std::string first_non_finite_node(const network::Model& model,
                                  const std::map<std::string, Tensor>& feeds) {
  try {
    const network::Model all = network::with_intermediate_outputs(model);
    auto values = network::ReferenceExecutor(all, {}).run(feeds);
    for (const auto& node : model.graph().node())
      for (const auto& o : node.output()) {
        auto it = values.find(o);
        if (it == values.end()) continue;
        std::string where = first_non_finite(it->second, cat("its output '", o, "'"));
        if (!where.empty())
          return cat("first produced by node '", node.name(), "' (", node.op_type(), "): ", where);
      }
  } catch (const Error& e) {
    return cat("(the forward pass could not be repeated to find the node: ", e.what(), ")");
  }
  return "every forward value is finite: it first appears in the backward pass";
}

}  // namespace

void Trainer::train_batch(const Batch& b) {
  for (const auto& [field, input] : cfg_.feeds) feeds_[input] = b.at(field);
  for (auto& [slot, param] : param_feeds_) *slot = *param;
  state_.batch_samples = b.begin()->second.dim(0);
  events_.call(&TrainingEvents::before_training_batch, state_, b);
  network::BackpropResult r = exec_.inference_and_backprop(feeds_, cfg_.loss);
  state_.batch_loss = r.outputs.at(cfg_.loss).at_as_double(0);
  if (state_.has_accuracy) state_.batch_correct = correct(r.outputs.at(cfg_.logits), b);
  for (const auto& u : state_updates_) {
    r.gradients.erase(u.initializer);  // statistics are not trained
    params_.at(u.initializer).copy_from(r.outputs.at(u.output));
  }
  if (cfg_.stop_on_non_finite) {
    std::string where = first_non_finite(r.outputs.at(cfg_.loss), "the loss '" + cfg_.loss + "'");
    for (auto it = r.gradients.begin(); where.empty() && it != r.gradients.end(); ++it)
      where = first_non_finite(it->second, "the gradient of '" + it->first + "'");
    if (!where.empty()) {
      non_finite_ = true;
      state_.request_stop(cat("step ", state_.step + 1, " (epoch ", state_.epoch + 1, ", batch ",
                              state_.batch + 1, "): ", where, "; ",
                              first_non_finite_node(net_.model(), feeds_),
                              "; the parameters were not updated"));
      return;
    }
  }
  events_.call(&TrainingEvents::before_optimizer_step, state_, params_, r.gradients);
  opt_.step(params_, r.gradients);
  events_.call(&TrainingEvents::after_optimizer_step, state_, params_);
  ++state_.step;
  ++state_.batch;
  state_.epoch_loss_sum += state_.batch_loss * state_.batch_samples;
  state_.epoch_correct += state_.batch_correct;
  state_.epoch_samples += state_.batch_samples;
}

std::pair<double, double> Trainer::evaluate(const Dataset& d) {
  return evaluate_impl(d, false);
}

std::pair<double, double> Trainer::evaluate_impl(const Dataset& d, bool events) {
  auto outs = net_.outputs();
  bool has_loss = std::find(outs.begin(), outs.end(), cfg_.loss) != outs.end();
  int64_t hits = 0, seen = 0;
  double loss_sum = 0;
  std::vector<int64_t> idx;
  for (int64_t begin = 0; begin < d.size(); begin += cfg_.test_batch_size) {
    idx.clear();
    for (int64_t i = begin; i < std::min(d.size(), begin + cfg_.test_batch_size); ++i)
      idx.push_back(i);
    Batch b = d.batch(idx);
    for (const auto& [field, input] : cfg_.feeds) feeds_[input] = b.at(field);
    for (auto& [slot, param] : param_feeds_) *slot = *param;
    if (events) events_.call(&TrainingEvents::before_test_batch, state_, b);
    auto out = exec_.inference(feeds_);
    if (state_.has_accuracy) hits += correct(out.at(cfg_.logits), b);
    if (has_loss) loss_sum += out.at(cfg_.loss).at_as_double(0) * static_cast<double>(idx.size());
    seen += static_cast<int64_t>(idx.size());
    if (events) events_.call(&TrainingEvents::after_test_batch, state_);
  }
  double acc = state_.has_accuracy && seen ? double(hits) / seen : -1;
  return {acc, has_loss && seen ? loss_sum / seen : -1};
}

void Trainer::end_epoch() {
  if (test_ && cfg_.test_every_epoch) {
    events_.call(&TrainingEvents::before_test_set, state_);
    std::tie(state_.test_accuracy, state_.test_loss) = evaluate_impl(*test_, true);
    events_.call(&TrainingEvents::after_test_set, state_);
  }
  state_.seconds = elapsed();
  double acc = test_ && cfg_.test_every_epoch ? state_.test_accuracy : state_.epoch_accuracy();
  if (cfg_.target_accuracy > 0 && acc >= cfg_.target_accuracy) {
    if (state_.time_to_accuracy < 0) state_.time_to_accuracy = state_.seconds;
    if (cfg_.stop_at_target)
      state_.request_stop(cat("accuracy ", acc, " reached the target ", cfg_.target_accuracy,
                              " in epoch ", state_.epoch + 1));
  }
  events_.call(&TrainingEvents::after_epoch, state_);
  ++state_.epoch;
  state_.batch = 0;
  if (!cfg_.checkpoint_path.empty() && cfg_.checkpoint_every_epochs > 0 &&
      state_.epoch % cfg_.checkpoint_every_epochs == 0)
    save_checkpoint(cfg_.checkpoint_path);
}

TrainingReport Trainer::run() {
  start_ = std::chrono::steady_clock::now();
  base_seconds_ = state_.seconds;
  running_ = true;
  non_finite_ = false;
  interrupted_ = false;
  state_.stop = false;
  state_.stop_reason.clear();
  metrics_.clear();
  events_.call(&TrainingEvents::before_training, state_);
  while (state_.epoch < cfg_.epochs && !state_.stop) {
    SamplerState pos = loader_->state();
    if (pos.epoch != state_.epoch || pos.batch != state_.batch)
      loader_->restore({state_.epoch, state_.batch});
    state_.batches_per_epoch = loader_->batches_per_epoch();
    if (state_.batch == 0) {
      state_.epoch_loss_sum = 0;
      state_.epoch_correct = state_.epoch_samples = 0;
    }
    events_.call(&TrainingEvents::before_epoch, state_);
    events_.call(&TrainingEvents::before_training_set, state_);
    bool exhausted = false;
    while (state_.batch < state_.batches_per_epoch && !state_.stop) {
      events_.call(&TrainingEvents::before_sampling, state_);
      std::optional<Batch> b = loader_->next();
      if (!b) {  // the sampler ended the epoch early
        exhausted = true;
        break;
      }
      events_.call(&TrainingEvents::after_sampling, state_, loader_->last_indices());
      train_batch(*b);
      events_.call(&TrainingEvents::after_training_batch, state_);
      if (cfg_.interrupt && cfg_.interrupt->load()) {
        interrupted_ = true;
        state_.request_stop("interrupted by a signal");
      }
      if (cfg_.time_limit_seconds > 0 && elapsed() >= cfg_.time_limit_seconds)
        state_.request_stop(cat("time limit of ", cfg_.time_limit_seconds, " s reached"));
      if (!cfg_.checkpoint_path.empty() && cfg_.checkpoint_every_batches > 0 &&
          state_.step % cfg_.checkpoint_every_batches == 0)
        save_checkpoint(cfg_.checkpoint_path);
    }
    events_.call(&TrainingEvents::after_training_set, state_);
    // Take the loader's end-of-epoch mark, so it moves on to the next epoch
    // without discarding the batches it prefetches meanwhile.
    if (!exhausted && state_.batch >= state_.batches_per_epoch && !loader_->next())
      exhausted = true;
    if (exhausted || state_.batch >= state_.batches_per_epoch) end_epoch();
  }
  state_.seconds = elapsed();
  running_ = false;
  events_.call(&TrainingEvents::after_training, state_);
  for (const auto& [name, t] : params_) net_.set_parameter(name, t);
  if (!cfg_.checkpoint_path.empty()) save_checkpoint(cfg_.checkpoint_path);

  TrainingReport r;
  r.epochs_completed = state_.epoch;
  r.steps = state_.step;
  r.stopped_early = state_.stop;
  r.stop_reason = state_.stop_reason;
  r.non_finite = non_finite_;
  r.interrupted = interrupted_;
  r.final_train_loss = state_.epoch_loss();
  r.final_train_accuracy = state_.epoch_accuracy();
  r.final_test_accuracy = state_.test_accuracy;
  r.time_to_accuracy = state_.time_to_accuracy;
  r.seconds = state_.seconds;
  r.epochs = metrics_.epochs();
  return r;
}

std::map<std::string, std::string> Trainer::run_description() const {
  int64_t elements = 0;
  for (const auto& [name, t] : params_) elements += t.numel();
  return {{"batches_per_epoch", std::to_string(loader_->batches_per_epoch())},
          {"train_samples", std::to_string(train_.size())},
          {"optimizer", opt_.name()},
          {"parameters", cat(params_.size(), " tensors, ", elements, " elements")}};
}

void Trainer::save_checkpoint(const std::string& path) {
  Checkpoint c;
  c.params = params_;
  c.optimizer = opt_.state();
  c.sampler = {state_.epoch, state_.batch};
  c.step = state_.step;
  c.rng_state = rng_.state();
  c.run = run_description();
  c.values = {{"epoch_loss_sum", state_.epoch_loss_sum},
              {"epoch_correct", double(state_.epoch_correct)},
              {"epoch_samples", double(state_.epoch_samples)},
              {"test_accuracy", state_.test_accuracy},
              {"test_loss", state_.test_loss},
              {"seconds", running_ ? elapsed() : state_.seconds},
              {"time_to_accuracy", state_.time_to_accuracy}};
  training::save_checkpoint(path, c);
}

void Trainer::resume(const std::string& path) {
  Checkpoint c = load_checkpoint(path);
  check_checkpoint_matches(c, net_, path);
  check_checkpoint_run(c, run_description(), path);
  opt_.load_state(c.optimizer);
  for (auto& [name, t] : params_) t.copy_from(c.params.at(name));
  loader_->restore(c.sampler);
  state_.epoch = c.sampler.epoch;
  state_.batch = c.sampler.batch;
  state_.step = c.step;
  rng_.set_state(c.rng_state);
  auto value = [&](const char* name, double fallback) {
    auto it = c.values.find(name);
    return it == c.values.end() ? fallback : it->second;
  };
  state_.epoch_loss_sum = value("epoch_loss_sum", 0);
  state_.epoch_correct = static_cast<int64_t>(value("epoch_correct", 0));
  state_.epoch_samples = static_cast<int64_t>(value("epoch_samples", 0));
  state_.test_accuracy = value("test_accuracy", -1);
  state_.test_loss = value("test_loss", -1);
  state_.seconds = value("seconds", 0);
  state_.time_to_accuracy = value("time_to_accuracy", -1);
}

}  // namespace deep500::training
