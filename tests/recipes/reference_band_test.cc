// Criteria against a reference log's seed ensembles
// (recipes/judging/reference_band.h) on hand-made reference curves: the
// band's prediction interval and p-value against Student's t table, the
// epochs-to-target distribution, RCP's "no faster" rule for one run and for
// an ensemble's mean, interpolation between batch sizes, and the refusals.
#include "recipes/judging/reference_band.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/error_of.h"

using deep500::test::error_of;
using namespace deep500::recipes;

namespace {

// n = 4 members at batch 32: epoch 1 mean 0.80 (sd sqrt(0.0008/3)), epoch 2
// mean 0.86 (sd sqrt(0.0002/3)); at batch 64 every value 0.10 lower.
ReferenceLog reference() {
  ReferenceLog r;
  r.header.name = "ref";
  ReferenceEnsemble b32{32, {1, 2, 3, 4}, {}};
  b32.curves["test_accuracy"] = {{0.80, 0.85}, {0.82, 0.87}, {0.78, 0.86}, {0.80, 0.86}};
  ReferenceEnsemble b64 = b32;
  b64.batch_size = 64;
  for (auto& curve : b64.curves["test_accuracy"])
    for (auto& x : curve) x -= 0.10;
  r.ensembles = {b32, b64};
  return r;
}

Measurements run(std::vector<double> accuracy) {
  Measurements m;
  m.per_epoch["test_accuracy"] = std::move(accuracy);
  return m;
}

}  // namespace

TEST(ReferenceBand, CriteriaParse) {
  Criterion c = parse_criterion("test_accuracy curve within the reference band at 1%");
  EXPECT_EQ(c.ensemble_test, "band");
  EXPECT_EQ(c.metric, "test_accuracy");
  EXPECT_DOUBLE_EQ(c.alpha, 0.01);
  c = parse_criterion("epochs_to(test_accuracy >= 0.81) no faster than the reference");
  EXPECT_EQ(c.ensemble_test, "no_faster");
  EXPECT_EQ(c.op, ">=");
  EXPECT_DOUBLE_EQ(c.bound, 0.81);
  EXPECT_DOUBLE_EQ(c.alpha, 0.05);
  c = parse_criterion("epochs_to(train_loss < 0.5) within the reference distribution");
  EXPECT_EQ(c.ensemble_test, "distribution");
  EXPECT_EQ(c.metric, "train_loss");
  EXPECT_NE(error_of([] {
              parse_criterion("test_accuracy curve within the band");
            }).find("expected 'METRIC curve within the reference band'"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_criterion("epochs_to(test_accuracy == 0.8) within x");
            }).find("expected epochs_to(METRIC OP NUMBER)"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_criterion("test_accuracy curve within the reference band at 70%");
            }).find("0 < A < 50"),
            std::string::npos);
}

TEST(ReferenceBand, BandIsTheBonferroniPredictionInterval) {
  const ReferenceLog ref = reference();
  const Criterion band = parse_criterion("test_accuracy curve within the reference band");
  // t(1 - 0.05 / 4, 3) = 4.1765 (two epochs, two-sided); sqrt(1 + 1/4).
  const double half2 = 4.1765 * std::sqrt(0.0002 / 3) * std::sqrt(1.25);
  Verdict v = judge_against_ensembles(band, run({0.80, 0.86}), ref, 32);
  EXPECT_TRUE(v.passed) << v.detail;
  EXPECT_NE(v.detail.find("p = 1 over 2 epochs (n 4, at 5%)"), std::string::npos) << v.detail;
  EXPECT_TRUE(judge_against_ensembles(band, run({0.80, 0.86 + 0.98 * half2}), ref, 32).passed);
  v = judge_against_ensembles(band, run({0.80, 0.86 + 1.02 * half2}), ref, 32);
  EXPECT_FALSE(v.passed) << v.detail;
  EXPECT_NE(v.detail.find("worst at epoch 2"), std::string::npos) << v.detail;
  // Just outside the band, the Bonferroni p-value is just under 5%.
  const auto p_at = [](const std::string& detail) {
    return std::stod(detail.substr(detail.find("p = ") + 4));
  };
  EXPECT_NEAR(p_at(v.detail), 0.05, 0.005) << v.detail;
  // A non-finite value, or no epoch at all, never passes.
  EXPECT_FALSE(judge_against_ensembles(band, run({0.80, NAN}), ref, 32).passed);
  EXPECT_FALSE(judge_against_ensembles(band, run({}), ref, 32).passed);
  // The mean of 4 runs is held to a band narrower by sqrt(1/4 + 1/4) / sqrt(1 + 1/4).
  Measurements ensemble = run({0.80, 0.86 + 0.8 * half2});
  ensemble.members = {run({0.8, 0.86}), run({0.8, 0.86}), run({0.8, 0.86}), run({0.8, 0.86})};
  EXPECT_FALSE(judge_against_ensembles(band, ensemble, ref, 32).passed);
}

TEST(ReferenceBand, InterpolatesBetweenBatchSizesAndRefusesOutside) {
  const ReferenceLog ref = reference();
  const ReferenceCurve at48 = reference_curve(ref, "test_accuracy", 48);
  ASSERT_EQ(at48.mean.size(), 2u);
  EXPECT_NEAR(at48.mean[0], 0.75, 1e-12);
  EXPECT_NEAR(at48.mean[1], 0.81, 1e-12);
  EXPECT_NEAR(at48.stddev[1], std::sqrt(0.0002 / 3), 1e-12);  // equal spreads
  EXPECT_EQ(at48.members, 4);
  const std::string e = error_of([&] { reference_curve(ref, "test_accuracy", 128); });
  EXPECT_NE(e.find("no seed ensemble at global batch 128 or around it (recorded: 32, 64)"),
            std::string::npos)
      << e;
  EXPECT_NE(error_of([&] {
              reference_curve(ref, "train_loss", 32);
            }).find("recorded no train_loss curves at batch 32"),
            std::string::npos);
}

TEST(ReferenceBand, EpochsToTargetDistributionAndNoFasterRule) {
  const ReferenceLog ref = reference();
  // Members first reach 0.81 at epochs 2, 1, 2, 2: mean 1.75, sd 0.5.
  const Criterion within =
      parse_criterion("epochs_to(test_accuracy >= 0.81) within the reference distribution");
  const ReferenceEpochs e = reference_epochs_to(ref, within, 32);
  EXPECT_DOUBLE_EQ(e.mean, 1.75);
  EXPECT_DOUBLE_EQ(e.stddev, 0.5);
  EXPECT_DOUBLE_EQ(e.min, 1);
  EXPECT_DOUBLE_EQ(e.max, 2);
  EXPECT_TRUE(judge_against_ensembles(within, run({0.82, 0.9}), ref, 32).passed);
  EXPECT_TRUE(judge_against_ensembles(within, run({0.5, 0.9}), ref, 32).passed);
  EXPECT_FALSE(judge_against_ensembles(within, run({0.5, 0.6, 0.9}), ref, 32).passed);
  const Verdict never = judge_against_ensembles(within, run({0.5, 0.6}), ref, 32);
  EXPECT_FALSE(never.passed);
  EXPECT_NE(never.detail.find("never met it"), std::string::npos) << never.detail;

  // One run at epoch 1: t = -0.75 / (0.5 sqrt(1 + 1/4)) = -1.34 >= -t(0.95, 3) = -2.353.
  const Criterion rcp =
      parse_criterion("epochs_to(test_accuracy >= 0.81) no faster than the reference");
  EXPECT_TRUE(judge_against_ensembles(rcp, run({0.82, 0.9}), ref, 32).passed);
  // Eight runs all at epoch 1: t = -0.75 / (0.5 sqrt(1/8 + 1/4)) = -2.449: faster.
  Measurements eight = run({0.82, 0.9});
  eight.members.assign(8, run({0.82, 0.9}));
  const Verdict fast = judge_against_ensembles(rcp, eight, ref, 32);
  EXPECT_FALSE(fast.passed) << fast.detail;
  EXPECT_NE(fast.detail.find("(mean)"), std::string::npos) << fast.detail;
  // A condition a reference member never met cannot judge anything.
  const Criterion high =
      parse_criterion("epochs_to(test_accuracy >= 0.865) within the reference distribution");
  EXPECT_NE(error_of([&] {
              check_reference_criterion(high, &ref, 32);
            }).find("member 1 (seed 1) at batch 32 never met test_accuracy >= 0.865"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              check_reference_criterion(rcp, nullptr, 32);
            }).find("the recipe has no reference_log"),
            std::string::npos);
}
