// `deep500 run`, `history` and `info` end to end, through the real command:
// a recipe that passes and is recorded, bad input that is one line, exit 2
// and recorded nowhere, a failed criterion, an interrupted run, two runs at
// once.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "deep/npy.h"
#include "deep/onnx_tensor.h"
#include "frameworks/register_all.h"
#include "recipes/format/machine.h"
#include "recipes/format/yaml_fields.h"
#include "recipes/results/history.h"
#include "tests/onnx_models.h"
#include "tests/recipes/cli/cli_runner.h"

using deep500::testing::run;
namespace fs = std::filesystem;

namespace {

const std::string kRecipes = std::string(DEEP500_SOURCE_DIR) + "/recipes";

class RunCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("deep500_run_cli_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // deep500 run RECIPE with results and history in the test's folder.
  std::string run_args(const std::string& recipe, const std::string& extra = "") const {
    return "run " + kRecipes + "/" + recipe + " --output-dir " + dir_.string() + " --no-progress " +
           extra;
  }
  // The file parsed (discarded when it is not JSON).
  static nlohmann::json read_json(const fs::path& file) {
    std::ifstream in(file);
    return nlohmann::json::parse(in, nullptr, false);
  }
  nlohmann::json history() const {
    auto r = run("history --json --output-dir " + dir_.string());
    EXPECT_EQ(r.rc, 0) << r.out;
    return nlohmann::json::parse(r.out, nullptr, false);
  }
  fs::path dir_;
};

TEST_F(RunCli, QuickRecipePassesWritesResultsAndIsRecorded) {
  auto r = run(run_args("fashion_mnist_mlp.yaml"));
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("PASS  test_accuracy >= 0.80 by epoch 1"), std::string::npos) << r.out;
  const auto runs = history();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0]["status"], "passed");
  const fs::path results = runs[0]["results_dir"].get<std::string>();
  const auto j = read_json(results / "results.json");
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["status"], "passed");
  EXPECT_EQ(j["criteria"].size(), 3u);
  EXPECT_EQ(j["resolved_recipe"]["training"]["batch_size"], 64);
  EXPECT_GE(j["metrics"]["test_accuracy"]["value"].get<double>(), 0.8);
  EXPECT_TRUE(fs::exists(results / "metrics.csv"));
  EXPECT_TRUE(fs::exists(results / "training_curves.png"));
  EXPECT_TRUE(fs::exists(results / "training_curves.svg"));
  EXPECT_EQ(j["label"], "");  // no --label, no --set
  EXPECT_GT(j["noise_audit"]["cores"].get<int>(), 0);
  EXPECT_GE(j["noise_audit"]["load_before"].get<double>(), 0);
  EXPECT_TRUE(j["noise_audit"]["warnings"].is_array());
  // A second run is a second row, labelled; --recipe filters.
  ASSERT_EQ(run(run_args("fashion_mnist_mlp.yaml", "--no-plots --label 'second try'")).rc, 0);
  ASSERT_EQ(history().size(), 2u);
  EXPECT_EQ(history()[1]["label"], "second try");
  auto listed = run("history --recipe fashion_mnist_mlp --output-dir " + dir_.string());
  EXPECT_NE(listed.out.find("2 runs in"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("[second try]"), std::string::npos) << listed.out;
  auto ranked = run("scoreboard --objectives test_accuracy:max --output-dir " + dir_.string());
  EXPECT_NE(ranked.out.find("[second try]"), std::string::npos) << ranked.out;
  auto compared = run("compare 1 2 --output-dir " + dir_.string());
  EXPECT_NE(compared.out.find("fashion_mnist_mlp 1.0.0 [second try], passed"), std::string::npos)
      << compared.out;
}

// A seed ensemble: three recorded member runs (seeds 1, 2, 3), then the
// ensemble's own run listing them, judged on the members' means (with the
// olympic rule, the median member); reproduce reruns a member, and the
// ensemble, bit for bit.
TEST_F(RunCli, SeedEnsembleRecordsItsMembersAndJudgesTheirMean) {
  auto r = run(run_args("fashion_mnist_mlp.yaml",
                        "--no-plots --set ensemble.repeat=3 --set ensemble.olympic=true "
                        "--set training.subset=6000 --set training.test_subset=1000 "
                        "--set 'criteria=[test_accuracy >= 0.5 by epoch 1]'"));
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("ensemble member 3 of 3, training.seed 3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("'test_accuracy >= 0.5 by epoch 1' reached by 3 of 3"), std::string::npos)
      << r.out;
  // Oldest first: the ensemble started with its first member.
  nlohmann::json runs;
  for (const auto& row : history()) runs[row["id"].get<int>() - 1] = row;
  ASSERT_EQ(runs.size(), 4u);
  EXPECT_EQ(runs[3]["members"], (nlohmann::json{1, 2, 3}));
  EXPECT_EQ(runs[3]["started_utc"], runs[0]["started_utc"]);
  std::vector<double> accuracies;
  for (int k = 0; k < 3; ++k) {
    const auto m = read_json(fs::path(runs[k]["results_dir"].get<std::string>()) / "results.json");
    EXPECT_EQ(m["resolved_recipe"]["training"]["seed"], k + 1);
    EXPECT_EQ(m["resolved_recipe"]["ensemble"]["repeat"], 1);
    EXPECT_TRUE(runs[k]["members"].empty());
    accuracies.push_back(m["metrics"]["test_accuracy"]["value"]);
  }
  const auto e = read_json(fs::path(runs[3]["results_dir"].get<std::string>()) / "results.json");
  ASSERT_FALSE(e.is_discarded());
  EXPECT_EQ(e["status"], "passed");
  EXPECT_EQ(e["ensemble"]["members"].size(), 3u);
  const auto& stats = e["ensemble"]["statistics"]["metrics"]["test_accuracy"];
  EXPECT_EQ(stats["values"], nlohmann::json(accuracies));
  EXPECT_EQ(stats["n"], 1);  // olympic: 3 members less the best and the worst
  std::sort(accuracies.begin(), accuracies.end());
  EXPECT_EQ(e["metrics"]["test_accuracy"]["value"], accuracies[1]);
  EXPECT_EQ(e["criteria"][0]["passed"], true);
  const std::string where = " --no-plots --no-progress --output-dir " + dir_.string();
  auto member = run("reproduce 2" + where);
  EXPECT_EQ(member.rc, 0) << member.out;
  EXPECT_NE(member.out.find("reproduced bit for bit"), std::string::npos) << member.out;
  auto ensemble = run("reproduce 4" + where);
  EXPECT_EQ(ensemble.rc, 0) << ensemble.out;
  EXPECT_NE(ensemble.out.find("reproduced bit for bit"), std::string::npos) << ensemble.out;
  auto listed = run("history --output-dir " + dir_.string());
  EXPECT_NE(listed.out.find("(ensemble of runs 1, 2, 3)"), std::string::npos) << listed.out;
}

// ensemble.processes: the members run at once, each a process of its own
// (the second starts before the first ends), and measure bit for bit what
// members run one after another in one process measure.
TEST_F(RunCli, EnsembleMembersRunAsProcessesOfTheirOwn) {
  const std::string quick =
      "--no-plots --set ensemble.repeat=2 --set training.subset=6000 "
      "--set training.test_subset=1000 --set 'criteria=[test_accuracy >= 0.5 by epoch 1]' ";
  auto r = run(run_args("fashion_mnist_mlp.yaml", quick + "--set ensemble.processes=2"));
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("2 ensemble members, 2 at a time"), std::string::npos) << r.out;
  const size_t second = r.out.find("member 2 of 2, training.seed 2: started");
  ASSERT_NE(second, std::string::npos) << r.out;
  EXPECT_LT(second, r.out.find(": ended, exit code 0")) << r.out;
  ASSERT_EQ(run(run_args("fashion_mnist_mlp.yaml", quick)).rc, 0);  // one after another
  nlohmann::json runs;
  for (const auto& row : history()) runs[row["id"].get<int>() - 1] = row;
  ASSERT_EQ(runs.size(), 6u);
  auto results = [&](int k) {
    return read_json(fs::path(runs[k]["results_dir"].get<std::string>()) / "results.json");
  };
  EXPECT_EQ(runs[2]["members"].size(), 2u);
  EXPECT_EQ(results(2)["ensemble"]["processes"], 2);
  EXPECT_EQ(results(5)["ensemble"]["processes"], 1);
  for (const int member : {0, 1}) {
    const auto parallel = results(runs[2]["members"][member].get<int>() - 1);
    const auto sequential = results(runs[5]["members"][member].get<int>() - 1);
    EXPECT_EQ(parallel["resolved_recipe"]["training"]["seed"], member + 1);
    EXPECT_NE(
        parallel["label"].get<std::string>().find("training.seed=" + std::to_string(member + 1)),
        std::string::npos);
    EXPECT_EQ(parallel["metrics"]["train_loss"], sequential["metrics"]["train_loss"]);
    EXPECT_EQ(parallel["metrics"]["test_accuracy"], sequential["metrics"]["test_accuracy"]);
  }
  EXPECT_EQ(results(2)["metrics"]["test_accuracy"], results(5)["metrics"]["test_accuracy"]);
}

// An interrupt reaches members running in processes of their own: each is
// recorded interrupted, and so is the ensemble.
TEST_F(RunCli, InterruptedEnsembleOfProcessesRecordsItsMembersInterrupted) {
  const int status = deep500::testing::signal_after(
      {"run", kRecipes + "/fashion_mnist_mlp.yaml", "--output-dir", dir_.string(), "--no-progress",
       "--no-plots", "--set", "ensemble.repeat=3", "--set", "ensemble.processes=2", "--set",
       "training.epochs=200"},
      (dir_ / "out.txt").string(), SIGINT, std::chrono::seconds(1),
      "member 2 of 3, training.seed 2: started");
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130) << deep500::read_file((dir_ / "out.txt").string());
  nlohmann::json runs;
  for (const auto& row : history()) runs[row["id"].get<int>() - 1] = row;
  ASSERT_EQ(runs.size(), 3u) << deep500::read_file((dir_ / "out.txt").string());
  for (const auto& row : runs) EXPECT_EQ(row["status"], "interrupted");
  EXPECT_EQ(runs[2]["members"].size(), 2u);  // the third never started
}

// The shipped scaling study, made small: 2 schemes x 1 and 2 MPI ranks,
// each point an ensemble of 2. Every member is recorded with its label,
// the study lists them, its table and CSV give each member's mean with its
// interval, the speedup against the baseline and the efficiency, and
// `deep500 study` shows the table again.
TEST_F(RunCli, ScalingStudyRecordsLabelledMembersAndTheirSpeedups) {
  auto r = run(run_args(
      "fashion_mnist_lenet_scaling.yaml",
      "--set 'sweep={training.distributed.scheme: [allreduce, \"local-sgd:4\"], "
      "training.distributed.ranks: [1, 2], baseline: {training.distributed.scheme: allreduce, "
      "training.distributed.ranks: 1}}' --set ensemble.repeat=2 --set training.subset=3000 "
      "--set training.test_subset=500 --set 'criteria=[test_accuracy >= 0.3 by epoch 1]'"));
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("a study of 4 members, 1 at a time"), std::string::npos) << r.out;
  nlohmann::json runs;
  for (const auto& row : history()) runs[row["id"].get<int>() - 1] = row;
  ASSERT_EQ(runs.size(), 13u);  // 4 x (2 members + their ensemble) + the study
  const auto& study_row = runs[12];
  EXPECT_EQ(study_row["members"], (nlohmann::json{3, 6, 9, 12}));
  EXPECT_EQ(runs[8]["label"], "scheme=local-sgd:4, ranks=1");
  EXPECT_EQ(runs[6]["label"], "scheme=local-sgd:4, ranks=1, training.seed=1");
  const fs::path dir = study_row["results_dir"].get<std::string>();
  const auto results = read_json(dir / "results.json");
  const auto& members = results["study"]["members"];
  ASSERT_EQ(members.size(), 4u);
  EXPECT_EQ(results["study"]["baseline"], "scheme=allreduce, ranks=1");
  EXPECT_EQ(members[0]["speedup"], 1.0);
  for (const auto& m : members) {
    const auto rate = read_json(fs::path(m["results_dir"].get<std::string>()) / "results.json");
    EXPECT_EQ(m["metrics"]["samples_per_second"]["value"],
              rate["metrics"]["samples_per_second"]["value"]);
    EXPECT_EQ(m["metrics"]["samples_per_second"]["n"], 2);
    EXPECT_LE(m["metrics"]["samples_per_second"]["ci_low"].get<double>(),
              m["metrics"]["samples_per_second"]["value"].get<double>());
    EXPECT_NEAR(m["speedup"].get<double>(),
                m["metrics"]["samples_per_second"]["value"].get<double>() /
                    members[0]["metrics"]["samples_per_second"]["value"].get<double>(),
                1e-12);
    EXPECT_NEAR(m["efficiency"].get<double>(),
                m["speedup"].get<double>() / m["ranks"].get<double>(), 1e-12);
  }
  const std::string csv = deep500::read_file((dir / "metrics.csv").string());
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 5) << csv;
  EXPECT_NE(csv.find("\"scheme=local-sgd:4, ranks=2\",local-sgd:4,2,2,passed,12,"),
            std::string::npos)
      << csv;
  EXPECT_TRUE(fs::exists(dir / "study.svg"));
  auto listed = run("history --output-dir " + dir_.string());
  EXPECT_NE(listed.out.find("(study of runs 3, 6, 9, 12)"), std::string::npos) << listed.out;
  auto again = run("study 13 --output-dir " + dir_.string());
  ASSERT_EQ(again.rc, 0) << again.out;
  EXPECT_NE(r.out.find(again.out.substr(0, again.out.find("table as CSV"))), std::string::npos)
      << again.out;
  auto not_study = run("study 1 --output-dir " + dir_.string());
  EXPECT_EQ(not_study.rc, 2);
  EXPECT_NE(not_study.out.find("not a study"), std::string::npos) << not_study.out;
}

// The hostfile trap: a hostfile giving this machine more slots than cores
// is a warning naming the fix, and with --strict an error before anything
// runs; the launcher's arguments reach mpirun.
TEST_F(RunCli, HostfilePromisingMoreSlotsThanCoresIsWarnedAndStrictRefusesIt) {
  const int cores = deep500::recipes::detect_machine().cores;
  const fs::path hosts = dir_ / "hosts.txt";
  std::ofstream(hosts) << "localhost slots=" << cores + 2 << "\n";
  const std::string quick =
      "--no-plots --set training.distributed.ranks=2 --set training.batch_size=16 "
      "--set training.epochs=1 --set training.subset=2000 --set training.test_subset=500 "
      "--set 'criteria=[test_accuracy >= 0.3 by epoch 1]' --set launcher.hostfile=" +
      hosts.string() + " ";
  auto strict = run(run_args("fashion_mnist_lenet_allreduce.yaml", quick + "--strict"));
  EXPECT_EQ(strict.rc, 2) << strict.out;
  EXPECT_NE(strict.out.find("gives this machine " + std::to_string(cores + 2) +
                            " slots but it has " + std::to_string(cores) + " cores"),
            std::string::npos)
      << strict.out;
  EXPECT_NE(strict.out.find("(an error with --strict)"), std::string::npos) << strict.out;
  EXPECT_FALSE(fs::exists(dir_ / "history.sqlite"));
  auto warned = run(run_args("fashion_mnist_lenet_allreduce.yaml", quick));
  ASSERT_EQ(warned.rc, 0) << warned.out;
  EXPECT_NE(warned.out.find("deep500 run: warning: launcher.hostfile"), std::string::npos)
      << warned.out;
  EXPECT_NE(warned.out.find("fix: slots=" + std::to_string(cores)), std::string::npos)
      << warned.out;
  EXPECT_NE(warned.out.find("--hostfile " + hosts.string()), std::string::npos) << warned.out;
  auto none = run(run_args("fashion_mnist_lenet_allreduce.yaml", "--set launcher.kind=none"));
  EXPECT_EQ(none.rc, 2) << none.out;
  EXPECT_NE(none.out.find("its launcher is none: start them yourself"), std::string::npos)
      << none.out;
}

// history --regressions on a history of 20 runs whose throughput drops by
// 15% from run 11: exit 1 naming run 11 (text and markdown); accepted, the
// series starts again there and the exit is 0.
TEST_F(RunCli, HistoryRegressionsFindsAPlantedSlowdownUntilItIsAccepted) {
  const std::string path = (dir_ / "h.sqlite").string();
  {
    deep500::recipes::History h(path);
    for (int i = 1; i <= 20; ++i) {
      deep500::recipes::RunRecord r;
      r.recipe = "quick";
      r.recipe_version = "1.0.0";
      r.task = "training";
      r.status = "passed";
      r.started_utc = "2026-11-" + std::string(i < 10 ? "0" : "") + std::to_string(i) + "T10:00Z";
      r.finished_utc = r.started_utc;
      r.results_dir = (dir_ / "gone").string();
      r.git_revision = "abc";
      r.hostname = "h";
      r.resolved_recipe = "{}";
      r.metrics["samples_per_second"] = (i >= 11 ? 850 : 1000) + (i % 3);
      h.record(r);
    }
  }
  auto found = run("history --regressions --history " + path);
  EXPECT_EQ(found.rc, 1) << found.out;
  EXPECT_NE(found.out.find("samples_per_second 1001 -> 851"), std::string::npos) << found.out;
  EXPECT_NE(found.out.find("from run 11 (after run 10)"), std::string::npos) << found.out;
  EXPECT_NE(found.out.find("runs' values alone (no raw samples)"), std::string::npos) << found.out;
  auto md =
      run("history --regressions --markdown --metric samples_per_second:max --history " + path);
  EXPECT_NE(md.out.find("| quick | h | samples_per_second | 1001 | 851 | 11 |"), std::string::npos)
      << md.out;
  auto accepted = run("history --accept 11 --note 'smaller batches' --history " + path);
  ASSERT_EQ(accepted.rc, 0) << accepted.out;
  auto clear = run("history --regressions --history " + path);
  EXPECT_EQ(clear.rc, 0) << clear.out;
  EXPECT_NE(clear.out.find("0 open regressions in 1 series"), std::string::npos) << clear.out;
  EXPECT_EQ(run("history --accept 99 --history " + path).rc, 2);
}

// A sweep point whose recipe is bad is refused before any member runs.
TEST_F(RunCli, BadSweepPointIsRefusedBeforeAnythingRuns) {
  auto r =
      run(run_args("fashion_mnist_mlp.yaml", "--set 'sweep={training.optimizer: [sgd, sgdd]}'"));
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("sweep member optimizer=sgdd: "), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir_ / "history.sqlite"));
}

// --record-reference: a seed ensemble whose reference.yaml (every member's
// curves at the global batch) then judges runs through the reference-band
// criteria; a run at another batch size adds its ensemble to the same file.
TEST_F(RunCli, RecordedReferenceJudgesLaterRunsByItsBand) {
  const std::string tiny =
      "name: tiny\nversion: 1.0.0\ndescription: a test\n"
      "dataset: {name: noise, version: 1.0.0, description: synthetic, format: synthetic,\n"
      "          splits: {train: 256, test: 64}, shape: [1, 28, 28], classes: 10}\n"
      "model: {name: mlp, version: 1.0.0, description: built in, builtin: mlp}\n"
      "task: training\ntraining: {epochs: 3, batch_size: 64}\n";
  const fs::path plain = dir_ / "tiny.yaml";
  std::ofstream(plain) << tiny << "criteria: [train_loss < 100]\n";
  auto r = run("run " + plain.string() +
               " --no-plots --no-progress --record-reference 3 "
               "--output-dir " +
               (dir_ / "ref").string());
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("reference log of 3 members at global batch 64"), std::string::npos)
      << r.out;
  const auto runs = run("history --json --output-dir " + (dir_ / "ref").string());
  const auto listed = nlohmann::json::parse(runs.out, nullptr, false);
  ASSERT_EQ(listed.size(), 4u) << runs.out;
  fs::path reference;  // in the ensemble's folder (its start ties with its first member's)
  for (const auto& row : listed)
    if (!row["members"].empty()) reference = fs::path(row["results_dir"].get<std::string>());
  reference /= "reference.yaml";
  ASSERT_TRUE(fs::exists(reference)) << r.out;

  const fs::path judged = dir_ / "judged.yaml";
  std::ofstream(judged) << tiny << "reference_log: " << reference.string() << "\n"
                        << "criteria:\n  - train_loss curve within the reference band at 25%\n"
                        << "  - epochs_to(train_loss < 100) within the reference distribution\n";
  auto run_judged = [&](const std::string& extra) {
    return run("run " + judged.string() + " --output-dir " + dir_.string() +
               " --no-progress --no-plots " + extra);
  };
  r = run_judged("--set training.seed=2");
  EXPECT_EQ(r.rc, 0) << r.out;  // a member's own run: inside its band
  EXPECT_NE(r.out.find("PASS  train_loss curve within the reference band at 25%  (worst at epoch"),
            std::string::npos)
      << r.out;
  // Its results carry what the plot draws: the band around the run's curve.
  const std::string at = r.out.substr(r.out.rfind("results in ") + 11);
  const fs::path judged_dir = at.substr(0, at.find(';'));
  const auto figures = read_json(judged_dir / "results.json")["reference_figures"];
  ASSERT_EQ(figures.size(), 2u);
  EXPECT_EQ(figures[0]["kind"], "band");
  EXPECT_EQ(figures[0]["run"].size(), 3u);
  for (int e = 0; e < 3; ++e) {
    EXPECT_LE(figures[0]["low"][e].get<double>(), figures[0]["run"][e].get<double>());
    EXPECT_GE(figures[0]["high"][e].get<double>(), figures[0]["run"][e].get<double>());
  }
  EXPECT_EQ(figures[1]["reference"], (nlohmann::json{1, 1, 1}));
  auto plotted = run("plot " + judged_dir.string() + " --out " + (dir_ / "plots").string());
  EXPECT_EQ(plotted.rc, 0) << plotted.out;
  EXPECT_TRUE(fs::exists(dir_ / "plots" / "reference_band.png")) << plotted.out;
  r = run_judged("--set training.hyper.lr=0.5");
  EXPECT_EQ(r.rc, 1) << r.out;  // a learning rate far above the default leaves the band
  EXPECT_NE(r.out.find("FAIL  train_loss curve within the reference band at 25%"),
            std::string::npos)
      << r.out;
  // No ensemble at batch 16: refused before anything runs.
  r = run_judged("--set training.batch_size=16");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("no seed ensemble at global batch 16 or around it (recorded: 64)"),
            std::string::npos)
      << r.out;
  // No reference is recorded from a run with a planted bug.
  r = run_judged("--record-reference 2 --set 'training.planted_bugs=[labels-shuffled:0.1]'");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("plants bugs (training.planted_bugs: labels-shuffled:0.1); a reference is "
                       "measured on correct code"),
            std::string::npos)
      << r.out;
  // Recording at batch 32 keeps the batch-64 ensemble.
  r = run_judged(
      "--record-reference 2 --set training.batch_size=32 --set 'criteria=[train_loss < 100]'");
  ASSERT_EQ(r.rc, 0) << r.out;
  const std::string said = "reference log of 2 members at global batch 32 in ";
  ASSERT_NE(r.out.find(said), std::string::npos) << r.out;
  const std::string second = r.out.substr(r.out.find(said) + said.size());
  std::ifstream in(second.substr(0, second.find('\n')));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("batch_size: 32"), std::string::npos) << text;
  EXPECT_NE(text.find("batch_size: 64"), std::string::npos) << text;
  EXPECT_EQ(run(run_args("fashion_mnist_mlp.yaml", "--record-reference 1")).rc, 2);
}

TEST_F(RunCli, BadInputIsOneLineExitTwoAndRecordsNothing) {
  auto error_of = [&](const std::string& extra) {
    auto r = run(run_args("fashion_mnist_mlp.yaml", extra));
    EXPECT_EQ(r.rc, 2) << extra << "\n" << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
    return r.out;
  };
  std::string e = error_of("--set dataset.sources.train_labels.sha256=" + std::string(64, '0'));
  EXPECT_NE(e.find("source train_labels: /usr/share/datasets/fashion-mnist/"
                   "train-labels-idx1-ubyte.gz: SHA-256 mismatch: expected " +
                   std::string(64, '0') + ", actual 0ae29f65"),
            std::string::npos)
      << e;
  e = error_of("--set hardware.cores='>=4096'");
  EXPECT_NE(e.find("hardware 'cpu-x86-64': cores >=4096 required, found "), std::string::npos) << e;
  e = error_of("--set software.requires.onednn='>=99'");
  EXPECT_NE(e.find("onednn >=99 required, found 2."), std::string::npos) << e;
  e = error_of("--set training.epoch=2");
  EXPECT_NE(e.find("training.epoch: unknown key (did you mean 'epochs'?)"), std::string::npos) << e;
  e = error_of("--set training.epochs=two");
  EXPECT_NE(e.find("--set training.epochs=two: training.epochs: expected an integer"),
            std::string::npos)
      << e;
  e = error_of("--set dataset.sources.train_images.path=/nonexistent.gz");
  EXPECT_NE(e.find("source train_images: file not found: /nonexistent.gz"), std::string::npos) << e;
  // A model manifest naming an output the graph lacks: refused before training.
  e = error_of("--set 'model.outputs=[{name: logit, type: float32, shape: [N, 10]}]'");
  EXPECT_NE(e.find("the manifest declares 'logit', which the graph does not have as an output"),
            std::string::npos)
      << e;
  EXPECT_FALSE(fs::exists(dir_ / "fashion_mnist_mlp"));
  EXPECT_FALSE(fs::exists(dir_ / "history.sqlite"));
}

TEST_F(RunCli, FailedCriterionExitsOneAndIsRecordedFailed) {
  auto r = run(run_args("fashion_mnist_mlp.yaml",
                        "--no-plots --set 'criteria=[\"test_accuracy >= 0.99\"]'"));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("FAIL  test_accuracy >= 0.99"), std::string::npos) << r.out;
  const auto runs = history();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0]["status"], "failed");
  EXPECT_EQ(runs[0]["criteria"][0]["passed"], false);
}

TEST_F(RunCli, DryRunPrintsTheResolvedRecipeAndRunsNothing) {
  auto r = run(run_args("fashion_mnist_lenet.yaml", "--dry-run --set training.epochs=2"));
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("epochs: 2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sha256: b0564c3eedabfbf835052cff8503ea422014ce006caf5b757f851416ee8300c7"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(dir_ / "history.sqlite"));
}

TEST_F(RunCli, InterruptedRunIsRecordedInterrupted) {
  const int status = deep500::testing::signal_after(
      {"run", kRecipes + "/fashion_mnist_lenet.yaml", "--output-dir", dir_.string(),
       "--no-progress", "--set", "training.epochs=50"},
      (dir_ / "out.txt").string(), SIGINT, std::chrono::seconds(3));
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  const auto runs = history();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0]["status"], "interrupted");
  // No epoch ended: no empty training-curve figure (only the reference's
  // epochs-to-target histogram, the run marked as never there), and
  // matplotlib's notes stay out of the terminal.
  const std::string out = deep500::read_file((dir_ / "out.txt").string());
  EXPECT_NE(out.find("reference_band.png"), std::string::npos) << out;
  EXPECT_EQ(out.find("legend"), std::string::npos) << out;
  EXPECT_FALSE(
      fs::exists(fs::path(runs[0]["results_dir"].get<std::string>()) / "training_curves.png"));
}

// Two runs at once take turns under the measurement lock: both are
// recorded, the second says whom it waited for and for how long, and the
// members of each run under their parent's lock.
TEST_F(RunCli, TwoRunsAtOnceTakeTurnsUnderTheMeasurementLockAndAreBothRecorded) {
  const std::string lock = (dir_ / "measurement.lock").string();
  setenv("DEEP500_MEASUREMENT_LOCK", lock.c_str(), 1);
  deep500::testing::CliRun a, b;
  const std::string ensemble =
      "--no-plots --set ensemble.repeat=2 --set ensemble.processes=2 "
      "--set 'criteria=[test_accuracy >= 0.5 by epoch 1]'";
  std::thread ta([&] { a = run(run_args("fashion_mnist_mlp.yaml", ensemble)); });
  std::thread tb([&] { b = run(run_args("fashion_mnist_mlp.yaml", ensemble)); });
  ta.join();
  tb.join();
  unsetenv("DEEP500_MEASUREMENT_LOCK");
  EXPECT_EQ(a.rc, 0) << a.out;
  EXPECT_EQ(b.rc, 0) << b.out;
  const std::string waiting = "waiting for the measurement lock " + lock + ", held by pid ";
  EXPECT_EQ((a.out.find(waiting) != std::string::npos) + (b.out.find(waiting) != std::string::npos),
            1)
      << a.out << b.out;
  std::vector<nlohmann::json> ensembles, members;
  for (const auto& row : history()) {
    auto results = read_json(fs::path(row["results_dir"].get<std::string>()) / "results.json");
    (row["members"].empty() ? members : ensembles).push_back(results["measurement_lock"]);
  }
  ASSERT_EQ(ensembles.size(), 2u);
  ASSERT_EQ(members.size(), 4u);
  std::sort(ensembles.begin(), ensembles.end(), [](const auto& x, const auto& y) {
    return x["waited_seconds"].template get<double>() < y["waited_seconds"].template get<double>();
  });
  EXPECT_EQ(ensembles[0]["file"], lock);
  EXPECT_EQ(ensembles[0]["waited_for"], "");
  EXPECT_GT(ensembles[1]["waited_seconds"].get<double>(), 1.0);
  EXPECT_NE(ensembles[1]["waited_for"].get<std::string>().find("fashion_mnist_mlp.yaml"),
            std::string::npos)
      << ensembles[1];
  for (const auto& m : members) EXPECT_GT(m["held_by_process"].get<int64_t>(), 0) << m;
}

// `deep500 info` prints manifests this machine satisfies.
TEST(Info, DetectedManifestsHoldOnThisMachine) {
  deep500::frameworks::register_all();
  using namespace deep500::recipes;
  const DetectedMachine m = detect_machine();
  const YAML::Node yaml = YAML::Load(machine_manifests_yaml(m));
  YAML::Node sink(YAML::NodeType::Map);
  const auto hw = read_hardware(Fields(yaml["hardware"], "info", "hardware", sink, nullptr));
  const auto sw = read_software(Fields(yaml["software"], "info", "software", sink, nullptr));
  EXPECT_TRUE(unmet_constraints(hw, sw, m).empty());
  EXPECT_GE(m.cores, 1);
  EXPECT_GT(m.memory_gib, 0.1);
  EXPECT_EQ(m.software.at("deep500"), DEEP500_VERSION_TEXT);
}

}  // namespace

// The README's promise: a second run appears in the history, compare works
// on the two, reproduce on the first says it reproduced; a changed result
// is named.
TEST_F(RunCli, CompareScoreboardAndReproduceRecordedRuns) {
  ASSERT_EQ(run(run_args("fashion_mnist_mlp.yaml", "--no-plots")).rc, 0);
  ASSERT_EQ(run(run_args("fashion_mnist_mlp.yaml", "--no-plots --set training.batch_size=128")).rc,
            1);  // misses the reference log's train loss
  const std::string where = " --output-dir " + dir_.string();
  auto c = run("compare 1 2" + where);
  ASSERT_EQ(c.rc, 0) << c.out;
  EXPECT_NE(c.out.find("test_accuracy"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("proportions of 10000"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("recipe.training.batch_size: 64 -> 128"), std::string::npos) << c.out;
  // --fail-on-regression: exit 1 exactly when the table says B differs and is
  // worse; a metric the runs lack is bad input.
  const bool differs = c.out.find("proportions of 10000") != std::string::npos &&
                       c.out.substr(c.out.find("test_accuracy")).find("differs") <
                           c.out.substr(c.out.find("test_accuracy")).find('\n');
  auto higher = run("compare 1 2 --fail-on-regression test_accuracy:max" + where);
  auto lower = run("compare 1 2 --fail-on-regression test_accuracy:min" + where);
  EXPECT_EQ(higher.rc + lower.rc, differs ? 1 : 0) << higher.out << lower.out;
  EXPECT_EQ((higher.out + lower.out).find("regression: test_accuracy") != std::string::npos,
            differs);
  auto bogus = run("compare 1 2 --fail-on-regression no_such_metric:max" + where);
  EXPECT_EQ(bogus.rc, 2) << bogus.out;
  EXPECT_NE(bogus.out.find("no_such_metric was not measured by both runs"), std::string::npos)
      << bogus.out;

  auto s = run("scoreboard --objectives test_accuracy:max,seconds:min --plot " +
               (dir_ / "board").string() + where);
  ASSERT_EQ(s.rc, 0) << s.out;
  EXPECT_NE(s.out.find("2 runs ranked"), std::string::npos) << s.out;
  EXPECT_TRUE(fs::exists(dir_ / "board" / "scoreboard.png")) << s.out;
  std::ifstream board_in(dir_ / "board" / "scoreboard.json");
  const auto board = nlohmann::json::parse(board_in, nullptr, false);
  ASSERT_FALSE(board.is_discarded());
  EXPECT_EQ(board["entries"].size(), 2u);

  auto r = run("reproduce 1 --no-plots --no-progress" + where);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("reproduced bit for bit"), std::string::npos) << r.out;
  const auto runs = history();
  ASSERT_EQ(runs.size(), 3u);
  const auto third =
      read_json(fs::path(runs[2]["results_dir"].get<std::string>()) / "results.json");
  EXPECT_NE(third["reproduces"].get<std::string>().find("results.json"), std::string::npos);

  // A first run whose recorded accuracy was different does not reproduce.
  const fs::path first = fs::path(runs[0]["results_dir"].get<std::string>()) / "results.json";
  std::ifstream first_in(first);
  auto j = nlohmann::json::parse(first_in);
  const double recorded = j["metrics"]["test_accuracy"]["value"].get<double>();
  j["metrics"]["test_accuracy"]["value"] = 0.5;
  j["metrics"]["train_loss"]["value"] = 9.0;
  std::ofstream(first) << j.dump();
  auto changed = run("reproduce " + first.string() + " --no-plots --no-progress" + where);
  EXPECT_EQ(changed.rc, 1) << changed.out;
  // The rerun's accuracy is the one first recorded (whatever this CPU's kernels give).
  const std::string shown = "metric   test_accuracy: 0.5 -> ";
  const auto at = changed.out.find(shown);
  ASSERT_NE(at, std::string::npos) << changed.out;
  EXPECT_NEAR(std::stod(changed.out.substr(at + shown.size())), recorded, 1e-4) << changed.out;
  EXPECT_NE(changed.out.find("did not reproduce"), std::string::npos) << changed.out;

  // A recorded run's folder has no INCOMPLETE marker; a folder that has one
  // (deep500 run killed before recording it) is refused by its readers.
  const fs::path second = runs[1]["results_dir"].get<std::string>();
  EXPECT_FALSE(fs::exists(second / "INCOMPLETE"));
  std::ofstream(second / "INCOMPLETE") << "killed\n";
  auto incomplete = run("compare " + second.string() + " 1" + where);
  EXPECT_EQ(incomplete.rc, 2) << incomplete.out;
  EXPECT_NE(incomplete.out.find("an incomplete run (its folder holds INCOMPLETE"),
            std::string::npos)
      << incomplete.out;

  auto missing = run("reproduce 99" + where);
  EXPECT_EQ(missing.rc, 2) << missing.out;
  EXPECT_NE(missing.out.find("no run with id 99"), std::string::npos) << missing.out;
}

// task: conformance runs ONNX's backend tests through the same code as
// `deep500 onnx-test`, with counts per suite as metrics.
TEST_F(RunCli, ConformanceRecipeCountsCasesPerSuite) {
  auto r = run(run_args("onnx_conformance.yaml",
                        "--set conformance.filter=relu "
                        "'--set=criteria=[node.passed >= 9, pytorch-converted.passed >= 9]'"));
  ASSERT_EQ(r.rc, 0) << r.out;
  auto runs = history();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0]["task"], "conformance");
  const fs::path results = runs[0]["results_dir"].get<std::string>();
  const auto j = read_json(results / "results.json");
  ASSERT_FALSE(j.is_discarded());
  // The same filter through onnx-test: the same rows.
  auto direct =
      run("onnx-test /usr/share/libonnx-testdata/data/node "
          "/usr/share/libonnx-testdata/data/pytorch-converted --filter RELU");
  EXPECT_NE(direct.out.find("conformance: 18 passed, 0 failed"), std::string::npos) << direct.out;
  EXPECT_EQ(j["conformance"]["rows"].size(), 18u);
  EXPECT_EQ(j["metrics"]["node.passed"]["value"], 9);
  EXPECT_EQ(j["metrics"]["pytorch-converted.passed"]["value"], 9);
  EXPECT_EQ(j["metrics"]["pass_rate"]["trials"], 18);
  std::ifstream csv(results / "metrics.csv");
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header, "name,op_types,status,seconds,implementations,message");
  EXPECT_TRUE(fs::exists(results / "conformance.svg"));

  auto missing = run(run_args("onnx_conformance.yaml", "--set conformance.suites=[nowhere]"));
  EXPECT_EQ(missing.rc, 2) << missing.out;
  EXPECT_NE(missing.out.find("conformance.suites: folder not found"), std::string::npos)
      << missing.out;
  EXPECT_EQ(history().size(), 1u);
}

// task: operator_benchmark measures what `op bench` measures, through the
// same code: the same rows for the same problems and backends.
TEST_F(RunCli, OperatorBenchmarkRecipeMeasuresEveryProblemAndBackend) {
  const std::string quick =
      "--set operator_benchmark.warmup=0 --set operator_benchmark.min_repetitions=1 "
      "--set operator_benchmark.min_time=0 --set operator_benchmark.max_time=0.1 ";
  auto r = run(
      run_args("deepbench_conv_gemm.yaml", quick + "'--set=operator_benchmark.backends=[onednn]' "
                                                   "'--set=criteria=[errors == 0]'"));
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto runs = history();
  ASSERT_EQ(runs.size(), 1u);
  const fs::path results = runs[0]["results_dir"].get<std::string>();
  const auto j = read_json(results / "results.json");
  ASSERT_FALSE(j.is_discarded());
  const auto& rows = j["operator_benchmark"]["results"];
  EXPECT_EQ(rows.size(), 20u + 7u);  // 20 convolutions, 7 GEMMs
  EXPECT_GT(j["metrics"]["onednn.gflops"]["value"].get<double>(), 0);
  EXPECT_GT(j["metrics"]["Gemm.onednn.percent_of_peak"]["value"].get<double>(), 0);
  EXPECT_GT(j["operator_benchmark"]["peak"]["gflops"].get<double>(), 0);
  EXPECT_TRUE(fs::exists(results / "operator_benchmark.png"));

  auto direct = run("op bench Gemm --shapes " + kRecipes +
                    "/deepbench/training_gemm.txt --backend onednn --warmup 0 "
                    "--min-reps 1 --min-time 0 --max-time 0.1 --format json");
  ASSERT_EQ(direct.rc, 0) << direct.out;
  const auto bench = nlohmann::json::parse(direct.out, nullptr, false);
  ASSERT_FALSE(bench.is_discarded()) << direct.out;
  size_t gemm_rows = 0;
  for (const auto& row : rows) gemm_rows += row["name"] == "Gemm";
  EXPECT_EQ(bench["results"].size(), gemm_rows);
}

// task: operator_check runs what `op check` runs: the same verdicts for the
// same operator, inputs, seed and backends; an unknown backend is refused
// before anything runs.
TEST_F(RunCli, OperatorCheckRecipeChecksWhatOpCheckChecks) {
  auto r =
      run(run_args("operator_check.yaml", "'--set=operator_check.backends=[reference,onednn]'"));
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto runs = history();
  ASSERT_EQ(runs.size(), 1u);
  const fs::path results = runs[0]["results_dir"].get<std::string>();
  const auto j = read_json(results / "results.json");
  ASSERT_FALSE(j.is_discarded());
  const auto& operators = j["operator_check"]["operators"];
  ASSERT_EQ(operators.size(), 5u);
  int passed = 0;
  for (const auto& o : operators) passed += o["passed"].get<int>();
  EXPECT_EQ(j["metrics"]["passed"]["value"].get<double>(), passed);
  EXPECT_EQ(j["metrics"]["failed"]["value"].get<double>(), 0);
  const auto& relu = operators[2];
  ASSERT_EQ(relu["op"], "Relu");
  EXPECT_EQ(relu["passed"], 4) << relu.dump();  // forward and gradient on both backends

  auto direct =
      run("op check Relu --input x:float32:4x33 --backend reference,onednn --grad --seed 1");
  ASSERT_EQ(direct.rc, 0) << direct.out;
  EXPECT_NE(direct.out.find("passed: 4 check(s)"), std::string::npos) << direct.out;
  const auto& line = relu["problems"][0]["checks"][1]["lines"][0];  // reference's gradient
  EXPECT_NE(direct.out.find(line["detail"].get<std::string>()), std::string::npos)
      << line.dump() << "\n"
      << direct.out;

  std::ifstream csv(results / "metrics.csv");
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header, "op,problem,backend,check,status");

  auto none =
      run(run_args("operator_check.yaml", "--no-plots '--set=operator_check.backends=[no_such]'"));
  EXPECT_EQ(none.rc, 2) << none.out;
  EXPECT_NE(none.out.find("operator_check.backends"), std::string::npos) << none.out;
  EXPECT_EQ(history().size(), 1u);
}

// task: inference with the model manifest's pre- and postprocessing: raw
// uint8 rows are normalized to float, the model's scores become argmax
// indices, and those are what the reference outputs are compared with.
TEST_F(RunCli, InferenceRecipeAppliesPreAndPostprocessing) {
  std::ofstream(dir_ / "scores.onnx", std::ios::binary) << deep500::test::serialize_model_text(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[N, 3] x) => (float[N, 3] y) { y = Identity(x) }
  )");
  deep500::write_npy((dir_ / "x.npy").string(),
                     deep500::Tensor::from_vector<uint8_t>({2, 3}, {10, 50, 30, 90, 20, 40}));
  deep500::write_npy((dir_ / "y.npy").string(), deep500::Tensor::from_vector<int64_t>({2}, {1, 0}));
  deep500::write_npy((dir_ / "wrong.npy").string(),
                     deep500::Tensor::from_vector<int64_t>({2}, {1, 1}));
  std::ofstream(dir_ / "inference.yaml")
      << "name: inf\nversion: 1.0.0\ndescription: d\n"
         "model:\n  name: m\n  version: 1.0.0\n  description: d\n  file: {path: scores.onnx}\n"
         "  preprocess: [{step: normalize, mean: [0, 0, 0], std: [1, 1, 1]}]\n"
         "  postprocess: [{step: argmax}]\n"
         "task: inference\ninference:\n  inputs: {x: x.npy}\n  expected_outputs: {y: y.npy}\n"
         "  scenarios: [SingleStream]\n  warmup: 0\n  min_repetitions: 2\n  min_time: 0\n"
         "criteria: [outputs_match == 1]\n";
  const std::string recipe = (dir_ / "inference.yaml").string();
  const std::string where = " --output-dir " + dir_.string() + " --no-progress --no-plots";
  auto r = run("run " + recipe + where);
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("outputs match"), std::string::npos) << r.out;
  const auto runs = history();
  ASSERT_EQ(runs.size(), 1u);
  std::ifstream trace_in(fs::path(runs[0]["results_dir"].get<std::string>()) / "trace.json");
  const auto trace = nlohmann::json::parse(trace_in, nullptr, false);
  ASSERT_FALSE(trace.is_discarded());
  EXPECT_NE(trace.dump().find("Identity"), std::string::npos);
  auto wrong = run("run " + recipe + where + " --set inference.expected_outputs.y=wrong.npy");
  EXPECT_EQ(wrong.rc, 1) << wrong.out;
  EXPECT_NE(wrong.out.find("outputs DIFFER"), std::string::npos) << wrong.out;
  auto typo = run("run " + recipe + where + " '--set=model.postprocess=[{step: softmax, k: 3}]'");
  EXPECT_EQ(typo.rc, 2) << typo.out;
  EXPECT_NE(typo.out.find("model.postprocess[0].k: unknown key"), std::string::npos) << typo.out;
}
