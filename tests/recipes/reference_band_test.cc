// Criteria against a reference log's seed ensembles
// (recipes/judging/reference_band.h) on hand-made reference curves: the
// band's rank test and its refusal below 19 members at 5%, the
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

TEST(ReferenceBand, BandIsTheRankTestOfTheWholeCurve) {
  const ReferenceLog ref = reference();
  // 4 members: one run ranks at best 1 of 5, p = 0.2; 5% is refused.
  const Criterion band = parse_criterion("test_accuracy curve within the reference band at 20%");
  check_reference_criterion(band, &ref, 32);
  const std::string refused = error_of([&] {
    check_reference_criterion(parse_criterion("test_accuracy curve within the reference band"),
                              &ref, 32);
  });
  EXPECT_NE(refused.find("the reference has 4 members, and its rank test needs at least 19 to "
                         "fail one run at 5%"),
            std::string::npos)
      << refused;
  Verdict v = judge_against_ensembles(band, run({0.80, 0.86}), ref, 32);
  EXPECT_TRUE(v.passed) << v.detail;
  EXPECT_NE(v.detail.find("rank test over 2 epochs against 4 reference curves: p = 1 at 20%"),
            std::string::npos)
      << v.detail;
  // 0.95 at epoch 2 lies 15.6 sd from the members there (mean 0.86, sd 0.00577).
  v = judge_against_ensembles(band, run({0.80, 0.95}), ref, 32);
  EXPECT_FALSE(v.passed) << v.detail;
  EXPECT_NE(v.detail.find("worst at epoch 2: 0.95 vs 0.86"), std::string::npos) << v.detail;
  EXPECT_NE(v.detail.find("p = 0.2 at 20%"), std::string::npos) << v.detail;
  // A non-finite value, or no epoch at all, never passes.
  v = judge_against_ensembles(band, run({0.80, NAN}), ref, 32);
  EXPECT_FALSE(v.passed);
  EXPECT_NE(v.detail.find("test_accuracy is not finite at epoch 2"), std::string::npos);
  EXPECT_FALSE(judge_against_ensembles(band, run({}), ref, 32).passed);
  // An ensemble's mean curve is ranked against every 4 of the 8 pooled
  // curves': 4 shifted runs, p = 1/70.
  Measurements ensemble = run({0.80, 0.95});
  ensemble.members = {run({0.80, 0.95}), run({0.81, 0.96}), run({0.79, 0.94}), run({0.80, 0.955})};
  v = judge_against_ensembles(band, ensemble, ref, 32);
  EXPECT_FALSE(v.passed) << v.detail;
  EXPECT_NE(v.detail.find("(the mean of 4 runs): p = 0.0143"), std::string::npos) << v.detail;
  ensemble.members = {run({0.81, 0.86}), run({0.79, NAN})};
  v = judge_against_ensembles(band, ensemble, ref, 32);
  EXPECT_NE(v.detail.find("not finite at epoch 2 (member 2)"), std::string::npos) << v.detail;
  // The figure: the reference's own threshold (its largest deviation at 20%)
  // around the mean, and each member's curve.
  const auto figure = reference_figure(band, ensemble, ref, 32);
  EXPECT_EQ(figure["members"].size(), 2u);
  EXPECT_LT(figure["low"][1].get<double>(), 0.86);
  EXPECT_GT(figure["high"][1].get<double>(), 0.86);
}

TEST(ReferenceBand, InterpolatesBetweenBatchSizesAndRefusesOutside) {
  const ReferenceLog ref = reference();
  const ReferenceCurves at48 = reference_curves(ref, "test_accuracy", 48);
  ASSERT_EQ(at48.mean.size(), 2u);
  EXPECT_NEAR(at48.mean[0], 0.75, 1e-12);
  EXPECT_NEAR(at48.mean[1], 0.81, 1e-12);
  // Both ensembles' members, moved to the interpolated mean and sd: each
  // curve twice, so the sd shrinks by sqrt(3/7).
  EXPECT_EQ(at48.members.size(), 8u);
  EXPECT_NEAR(at48.stddev[1], std::sqrt(0.0002 / 3) * std::sqrt(3.0 * 2 / 7), 1e-12);
  const std::string e = error_of([&] { reference_curves(ref, "test_accuracy", 128); });
  EXPECT_NE(e.find("no seed ensemble at global batch 128 or around it (recorded: 32, 64)"),
            std::string::npos)
      << e;
  EXPECT_NE(error_of([&] {
              reference_curves(ref, "train_loss", 32);
            }).find("recorded no train_loss curves at batch 32"),
            std::string::npos);
  ReferenceLog broken = ref;
  broken.ensembles[0].curves["test_accuracy"][2][1] = NAN;
  EXPECT_NE(error_of([&] { reference_curves(broken, "test_accuracy", 32); })
                .find("member 3 (seed 3) at batch 32 has a test_accuracy that is not finite at "
                      "epoch 2"),
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
