// The recipe library: criteria, constraints, YAML reading errors (file,
// line, column, did-you-mean), SHA-256 and the SQLite history.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <nlohmann/json.hpp>

#include "deep/text.h"
#include "distributed/in_process.h"
#include "frameworks/register_all.h"
#include "recipes/format/constraints.h"
#include "recipes/format/recipe.h"
#include "recipes/format/sha256.h"
#include "recipes/judging/criteria.h"
#include "recipes/results/history.h"
#include "recipes/results/runner.h"
#include "tests/error_of.h"

using deep500::test::error_of;
using namespace deep500::recipes;
namespace distributed = deep500::distributed;
namespace frameworks = deep500::frameworks;
namespace fs = std::filesystem;

namespace {

class RecipeFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("deep500_recipe_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  // A valid recipe on synthetic data with the given training section and
  // criteria.
  std::string recipe(const std::string& training = "  epochs: 1\n",
                     const std::string& criteria = "  - test_accuracy >= 0.1\n") {
    return "name: tiny\nversion: 1.0.0\ndescription: a test\n"
           "dataset:\n  name: noise\n  version: 1.0.0\n  description: synthetic\n"
           "  format: synthetic\n  splits: {train: 64, test: 32}\n  shape: [1, 28, 28]\n"
           "  classes: 10\n"
           "model: {name: mlp, version: 1.0.0, description: built in, builtin: mlp}\n"
           "task: training\ntraining:\n" +
           training + "criteria:\n" + criteria;
  }
  fs::path dir_;
};

TEST(Criteria, ParsesComparisonsUnitsAndEpochs) {
  Criterion c = parse_criterion("test_accuracy >= 0.89 by epoch 5");
  EXPECT_EQ(c.metric, "test_accuracy");
  EXPECT_EQ(c.op, ">=");
  EXPECT_DOUBLE_EQ(c.bound, 0.89);
  EXPECT_EQ(c.by_epoch, 5);
  c = parse_criterion("time_to_accuracy(0.88) <= 120 ms");
  EXPECT_EQ(c.metric, "time_to_accuracy");
  EXPECT_DOUBLE_EQ(c.argument, 0.88);
  EXPECT_DOUBLE_EQ(c.bound, 0.12);
  EXPECT_DOUBLE_EQ(parse_criterion("test_accuracy >= 89%").bound, 0.89);
  c = parse_criterion("within 5% of the reference log");
  EXPECT_TRUE(c.against_reference);
  EXPECT_DOUBLE_EQ(c.percent, 5);
  EXPECT_DOUBLE_EQ(parse_criterion("within the reference log's tolerances").percent, -1);
  for (const char* bad :
       {"test_accuracy", "test_accuracy => 1", "test_accuracy >= x", "seconds <= 3 hours",
        "test_accuracy >= 0.5 by epoch 0", "within 5 of the reference log"})
    EXPECT_NE(error_of([&] { parse_criterion(bad); }).find(std::string("criterion '") + bad),
              std::string::npos)
        << bad;
}

TEST(Criteria, EvaluatesFinalValuesEpochsAndTimeToAccuracy) {
  Measurements m;
  m.final_values = {{"test_accuracy", 0.87}, {"seconds", 10}};
  m.per_epoch = {{"test_accuracy", {0.80, 0.90, 0.87}}, {"elapsed_seconds", {3, 6, 9}}};
  EXPECT_TRUE(evaluate(parse_criterion("test_accuracy >= 0.89 by epoch 2"), m, nullptr).passed);
  EXPECT_FALSE(evaluate(parse_criterion("test_accuracy >= 0.89 by epoch 1"), m, nullptr).passed);
  EXPECT_FALSE(evaluate(parse_criterion("test_accuracy >= 0.89"), m, nullptr).passed);
  const Verdict t = evaluate(parse_criterion("time_to_accuracy(0.85) <= 6 s"), m, nullptr);
  EXPECT_TRUE(t.passed);
  EXPECT_EQ(t.detail, "6 s");
  EXPECT_FALSE(evaluate(parse_criterion("time_to_accuracy(0.95) <= 60 s"), m, nullptr).passed);
  ReferenceLog ref;
  ref.metrics["test_accuracy"] = {.value = 0.9, .tolerance = 0.02};
  EXPECT_FALSE(evaluate(parse_criterion("within the reference log's tolerances"), m, &ref).passed);
  EXPECT_TRUE(evaluate(parse_criterion("within 4% of the reference log"), m, &ref).passed);
  EXPECT_NE(error_of([] {
              check_criterion(parse_criterion("test_acuracy >= 1"), {"test_accuracy"}, nullptr);
            }).find("unknown metric 'test_acuracy' (did you mean 'test_accuracy'?)"),
            std::string::npos);
}

// A bare number on a time was silently seconds (`latency.p90 <= 50` passed
// at 120 ms); the unit is required and the detail is shown in it.
TEST(Criteria, TimesNeedTheirUnitAndAreShownInIt) {
  for (const char* bare : {"latency.p90 <= 50", "seconds <= 3", "time_to_accuracy(0.9) <= 60",
                           "communication_seconds <= 1", "latency.p50 <= 5%"})
    EXPECT_NE(error_of([&] { parse_criterion(bare); }).find("is a time: give its unit"),
              std::string::npos)
        << bare;
  EXPECT_NO_THROW(parse_criterion("samples_per_second >= 10"));  // a rate, not a time
  Measurements m;
  m.final_values = {{"latency.p90", 0.12}};
  const Verdict v = evaluate(parse_criterion("latency.p90 <= 500 ms"), m, nullptr);
  EXPECT_TRUE(v.passed);
  EXPECT_EQ(v.detail, "120 ms");
}

TEST(Constraints, VersionsCompareNumericallyPartByPart) {
  EXPECT_EQ(compare_versions("2.10", "2.9"), 1);
  EXPECT_EQ(compare_versions("2.6", "2.6.0"), 0);
  EXPECT_TRUE(version_satisfies("2.6.3", ">=2.6"));
  EXPECT_FALSE(version_satisfies("2.6.3", ">=2.6,<2.6.3"));
  EXPECT_TRUE(number_satisfies(2, ">=2"));
  EXPECT_FALSE(number_satisfies(2, "4"));
  EXPECT_TRUE(is_semantic_version("1.0.0"));
  EXPECT_TRUE(is_semantic_version("1.2.3-rc1"));
  EXPECT_FALSE(is_semantic_version("1.0"));
  EXPECT_FALSE(is_semantic_version("01.0.0"));
  EXPECT_NE(error_of([] { check_constraint_syntax(">=", true, "onednn"); }).find("onednn"),
            std::string::npos);
  // NaN passed the syntax check and every comparison ("always met").
  for (const char* nan : {">=nan", "NaN", "<=inf"}) {
    EXPECT_NE(error_of([&] { check_constraint_syntax(nan, false, "cores"); }).find("cores"),
              std::string::npos)
        << nan;
    EXPECT_FALSE(number_satisfies(2, nan)) << nan;
  }
}

TEST(Text, ClosestNameSuggestsOnlyNearNames) {
  EXPECT_EQ(deep500::closest_name("epoch", {"epochs", "seed"}), "epochs");
  EXPECT_EQ(deep500::closest_name("zzzzzz", {"epochs", "seed"}), "");
}

TEST_F(RecipeFiles, ResolvedRecipeHasDefaultsAndOverrides) {
  Recipe r = load_recipe(write("r.yaml", recipe()), {"training.epochs=3"});
  EXPECT_EQ(r.training.epochs, 3);
  EXPECT_EQ(r.training.batch_size, 64);
  const std::string yaml = resolved_yaml(r);
  EXPECT_NE(yaml.find("epochs: 3"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("batch_size: 64"), std::string::npos) << yaml;
  // Reading the resolved recipe back gives the same recipe.
  Recipe again = load_recipe(write("resolved.yaml", yaml), {});
  EXPECT_EQ(resolved_yaml(again), yaml);
}

TEST_F(RecipeFiles, BadInputNamesFileLineColumnAndField) {
  const std::string syntax = write("syntax.yaml", "name: [unclosed\nversion: 1.0.0\n");
  std::string e = error_of([&] { load_recipe(syntax, {}); });
  EXPECT_NE(e.find(syntax + ":2:8: YAML syntax error: end of sequence flow not found"),
            std::string::npos)
      << e;

  // Nesting past yaml-cpp's depth limit: said as such (its own text is "bad file").
  const std::string deep =
      write("deep.yaml", "a: " + std::string(3000, '[') + std::string(3000, ']') + "\n");
  e = error_of([&] { load_recipe(deep, {}); });
  EXPECT_NE(e.find(": YAML nested 500 levels deep here"), std::string::npos) << e;

  const std::string typo = write("typo.yaml", recipe("  epochs: 1\n  bach_size: 8\n"));
  e = error_of([&] { load_recipe(typo, {}); });
  EXPECT_NE(e.find(typo + ":16:3: training.bach_size: unknown key (did you mean 'batch_size'?)"),
            std::string::npos)
      << e;

  const std::string type = write("type.yaml", recipe("  epochs: five\n"));
  e = error_of([&] { load_recipe(type, {}); });
  EXPECT_NE(
      e.find(type + ":15:11: training.epochs: expected an integer in [1, 1000000], got 'five'"),
      std::string::npos)
      << e;

  e = error_of([&] { load_recipe(write("set.yaml", recipe()), {"training.epochs=-1"}); });
  EXPECT_NE(e.find("--set training.epochs=-1: training.epochs: expected an integer"),
            std::string::npos)
      << e;
  // An optimizer from --set that does not exist: the --set is named, not the
  // file's hyper-parameters; a hyper-parameter it lacks names the file's line.
  const std::string hyper = write("hyper.yaml", recipe("  epochs: 1\n  hyper: {lr: 0.05}\n"));
  e = error_of([&] { load_recipe(hyper, {"training.optimizer=adamm"}); });
  EXPECT_EQ(e.rfind("--set training.optimizer=adamm: training.optimizer: unknown optimizer", 0), 0u)
      << e;
  e = error_of([&] { load_recipe(hyper, {"training.hyper.gamma=2"}); });
  EXPECT_EQ(e.rfind("--set training.hyper.gamma=2: training.hyper: ", 0), 0u) << e;
  e = error_of([&] { load_recipe(hyper, {"hardware.cores=abc"}); });
  EXPECT_NE(e.find("hardware.cores: expected a number constraint"), std::string::npos) << e;

  const std::string missing = write("missing.yaml", "reference_log: nowhere.yaml\n" + recipe());
  e = error_of([&] { load_recipe(missing, {}); });
  EXPECT_NE(e.find(missing + ":1:16: reference_log: manifest file not found: "), std::string::npos)
      << e;

  const std::string metric = write("metric.yaml", recipe("  epochs: 1\n", "  - accuracy >= 0.5\n"));
  e = error_of([&] { load_recipe(metric, {}); });
  EXPECT_NE(e.find("criteria: criterion 'accuracy >= 0.5': unknown metric 'accuracy'"),
            std::string::npos)
      << e;

  e = error_of([&] { load_recipe(write("v.yaml", recipe()), {"version=1.0"}); });
  EXPECT_NE(e.find("expected a semantic version"), std::string::npos) << e;
}

// training.distributed: typed like every other section; its metrics become
// known to the criteria; bad values name the field.
TEST_F(RecipeFiles, DistributedSectionIsChecked) {
  const std::string ok = write(
      "d.yaml", recipe("  epochs: 1\n  distributed: {ranks: 2, scheme: \"ssp:1\", timeout: 30}\n",
                       "  - max_clock_gap <= 1\n  - communication_bytes > 0\n"));
  const Recipe r = load_recipe(ok, {});
  EXPECT_EQ(r.training.ranks, 2);
  EXPECT_EQ(r.training.scheme, "ssp:1");
  EXPECT_EQ(r.training.shard, "replicated");
  EXPECT_DOUBLE_EQ(r.training.comm_timeout, 30);
  EXPECT_NE(resolved_yaml(r).find("scheme: ssp:1"), std::string::npos) << resolved_yaml(r);

  std::string e = error_of([&] { load_recipe(ok, {"training.distributed.scheme=ring"}); });
  EXPECT_NE(e.find("training.distributed.scheme: scheme: unknown scheme 'ring'"), std::string::npos)
      << e;
  e = error_of([&] { load_recipe(ok, {"training.distributed.ranks=0"}); });
  EXPECT_NE(e.find("training.distributed.ranks: expected an integer in [1, 4096]"),
            std::string::npos)
      << e;
  e = error_of([&] { load_recipe(ok, {"training.distributed.shard=striped"}); });
  EXPECT_NE(e.find("expected replicated or partitioned"), std::string::npos) << e;
  // One process: the distributed metrics are not known.
  e = error_of([&] { load_recipe(ok, {"training.distributed.ranks=1"}); });
  EXPECT_NE(e.find("unknown metric 'max_clock_gap'"), std::string::npos) << e;
}

// A 2-rank recipe run by the runner itself on in-process ranks: rank 0
// records one run with the distributed metrics, every rank waits for the
// others as long as training.distributed.timeout says; a job of the wrong
// size is an error naming both sizes.
TEST_F(RecipeFiles, DistributedRecipeRunsOnItsRanksAndRankZeroRecords) {
  frameworks::register_all();
  const Recipe r = load_recipe(
      write("d.yaml",
            recipe("  epochs: 1\n  batch_size: 8\n  distributed: {ranks: 2, timeout: 45}\n",
                   "  - communication_bytes > 0\n  - steps >= 4\n")),
      {});
  RunOptions o;
  o.recipe = "d.yaml";
  o.output_dir = (dir_ / "results").string();
  o.plots = false;
  o.progress = false;
  std::vector<RunSummary> summaries(2);
  std::vector<double> timeouts(2);
  distributed::run_ranks(2, [&](distributed::Communicator& c) {
    RunOptions mine = o;
    mine.communicator = &c;
    std::ostringstream out;
    summaries[static_cast<size_t>(c.rank())] = run_loaded_recipe(r, mine, out);
    timeouts[static_cast<size_t>(c.rank())] = c.timeout_seconds();
  });
  EXPECT_EQ(timeouts, (std::vector<double>{45, 45}));
  EXPECT_EQ(summaries[0].status, "passed");
  EXPECT_TRUE(summaries[1].results_dir.empty());  // rank 1 writes nothing
  EXPECT_EQ(summaries[1].status, "passed");       // rank 0's verdict
  // trace.json: the timeline, one track per rank.
  std::ifstream trace(fs::path(summaries[0].results_dir) / "trace.json");
  std::set<int64_t> pids;
  const auto trace_json = nlohmann::json::parse(trace);
  for (const auto& e : trace_json.at("traceEvents"))
    if (e.at("ph") == "X") pids.insert(e.at("pid").get<int64_t>());
  EXPECT_EQ(pids, (std::set<int64_t>{0, 1}));
  const auto runs = History((dir_ / "results" / "history.sqlite").string()).runs("", "");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_GT(runs[0].metrics.at("communication_bytes"), 0);
  EXPECT_EQ(runs[0].metrics.at("steps"), 4);  // 64 samples / (2 ranks x 8)

  const std::string e = error_of([&] {
    std::ostringstream out;
    run_loaded_recipe(r, o, out);
  });
  EXPECT_NE(e.find("training.distributed.ranks is 2, this job has 1"), std::string::npos) << e;
}

TEST(Sha256, DigestOfAKnownFile) {
  const fs::path p = fs::temp_directory_path() / ("deep500_sha_" + std::to_string(getpid()));
  std::ofstream(p) << "abc";
  EXPECT_EQ(sha256_of_file(p.string()),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  fs::remove(p);
  EXPECT_NE(error_of([] { sha256_of_file("/dev/zero"); }).find("/dev/zero"), std::string::npos);
}

RunRecord sample_run(const std::string& recipe, int i) {
  RunRecord r;
  r.recipe = recipe;
  r.recipe_version = "1.0.0";
  r.task = "training";
  r.status = i % 2 ? "failed" : "passed";
  r.started_utc = "2026-11-24T10:00:0" + std::to_string(i % 10) + "Z";
  r.finished_utc = r.started_utc;
  r.seconds = i;
  r.results_dir = "/r/" + std::to_string(i);
  r.git_revision = "abc";
  r.hostname = "h";
  r.resolved_recipe = "{}";
  r.metrics = {{"test_accuracy", 0.5 + i / 100.0}};
  r.criteria = {{"test_accuracy >= 0.5", i % 2 == 0, "detail"}};
  return r;
}

TEST_F(RecipeFiles, HistoryRecordsAndReadsRuns) {
  const std::string path = (dir_ / "sub" / "h.sqlite").string();
  {
    History h(path);
    EXPECT_EQ(h.schema_version(), History::latest_schema_version());
    RunRecord labelled = sample_run("a", 1);
    labelled.label = "scheme=ps, ranks=2";
    const int64_t id = h.record(labelled);
    h.record(sample_run("b", 2));
    const RunRecord back = h.run(id);
    EXPECT_EQ(back.recipe, "a");
    EXPECT_EQ(back.label, "scheme=ps, ranks=2");
    EXPECT_EQ(back.status, "failed");
    EXPECT_DOUBLE_EQ(back.metrics.at("test_accuracy"), 0.51);
    ASSERT_EQ(back.criteria.size(), 1u);
    EXPECT_FALSE(back.criteria[0].passed);
  }
  History h(path);  // reopened: nothing migrated twice
  EXPECT_EQ(h.runs().size(), 2u);
  EXPECT_EQ(h.runs("b").size(), 1u);
  EXPECT_EQ(h.runs("", "2026-11-24T10:00:02Z").size(), 1u);
  EXPECT_NE(error_of([&] { h.run(99); }).find("no run with id 99"), std::string::npos);
  RunRecord bad = sample_run("a", 3);
  bad.status = "maybe";  // the schema's CHECK refuses it, and nothing of it stays
  EXPECT_NE(error_of([&] { h.record(bad); }).find("CHECK constraint failed"), std::string::npos);
  EXPECT_EQ(h.runs().size(), 2u);
}

TEST_F(RecipeFiles, ConcurrentWritersAreAllRecorded) {
  const std::string path = (dir_ / "h.sqlite").string();
  auto writer = [&](const std::string& recipe) {
    History h(path);
    for (int i = 0; i < 20; ++i) h.record(sample_run(recipe, i));
  };
  std::thread a(writer, "a"), b(writer, "b");
  a.join();
  b.join();
  History h(path);
  EXPECT_EQ(h.runs("a").size(), 20u);
  EXPECT_EQ(h.runs("b").size(), 20u);
}

// Silent traps a new user fell into: a key given twice took the first value
// without a word; zero epochs trained nothing and passed.
TEST_F(RecipeFiles, RepeatedKeysAndZeroEpochsAreErrors) {
  const std::string twice = write("twice.yaml", recipe("  epochs: 1\n  epochs: 7\n"));
  const std::string e = error_of([&] { load_recipe(twice, {}); });
  EXPECT_NE(e.find(twice + ":"), std::string::npos) << e;
  EXPECT_NE(e.find("key 'epochs' is given twice"), std::string::npos) << e;
  const std::string nested =
      write("nested.yaml", recipe("  epochs: 1\n  hyper: {lr: 0.05, lr: 5}\n"));
  EXPECT_NE(error_of([&] { load_recipe(nested, {}); }).find("key 'lr' is given twice"),
            std::string::npos);
  const std::string latin1 = write("latin1.yaml", "# caf\xe9\n" + recipe());
  EXPECT_NE(error_of([&] { load_recipe(latin1, {}); }).find(latin1 + ":1: byte 0xe9 is not UTF-8"),
            std::string::npos);
  const std::string ok = write("ok.yaml", recipe());
  EXPECT_NE(error_of([&] { load_recipe(ok, {"training.epochs=0"}); }).find("training.epochs"),
            std::string::npos);
}

// A history written before labels (schema version 2) is migrated on open:
// its runs are kept, unlabelled, and new runs carry their labels.
TEST_F(RecipeFiles, HistoryMigratesAFileWithoutLabels) {
  const std::string path = (dir_ / "old.sqlite").string();
  { History(path).record(sample_run("a", 1)); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "ALTER TABLE runs DROP COLUMN label; DROP TABLE accepted_changes; "
                         "PRAGMA user_version = 2",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  History h(path);
  EXPECT_EQ(h.schema_version(), History::latest_schema_version());
  RunRecord labelled = sample_run("a", 2);
  labelled.label = "training.epochs=2";
  h.record(labelled);
  const auto runs = h.runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].label, "");
  EXPECT_EQ(runs[1].label, "training.epochs=2");
}

TEST_F(RecipeFiles, HistoryRefusesFilesItDoesNotOwn) {
  const std::string text = write("notes.txt", "my notes, not a database\n");
  EXPECT_NE(error_of([&] { History h(text); }).find(text), std::string::npos);
  std::ifstream in(text);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), {}), "my notes, not a database\n");
  // A database from a newer deep500 is refused, not changed.
  const std::string newer = (dir_ / "newer.sqlite").string();
  { History h(newer); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(newer.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version = 99", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  EXPECT_NE(error_of([&] { History h(newer); }).find("schema version 99 is newer"),
            std::string::npos);
}

// A damaged or foreign schema version (a negative one crashed history,
// compare, scoreboard and run) is one error, and the file stays as it was.
TEST_F(RecipeFiles, HistoryRefusesSchemaVersionsItDidNotWrite) {
  const std::string path = (dir_ / "h.sqlite").string();
  { History h(path); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version = -3", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  for (auto access : {History::Access::ReadWrite, History::Access::ReadOnly})
    EXPECT_NE(error_of([&] { History h(path, access); }).find("schema version -3 is not one"),
              std::string::npos);
}

// Readers open read-only: a missing file is an error and is not created; a
// bad --since is an error, not an empty list; a writer holding the lock
// does not block a reader, and a second writer gives up after kLockSeconds
// with one line naming the file.
TEST_F(RecipeFiles, HistoryReadersCreateNothingAndWaitForNoWriter) {
  const fs::path missing = dir_ / "typo" / "history.sqlite";
  const std::string e = error_of([&] { History h(missing.string(), History::Access::ReadOnly); });
  EXPECT_NE(e.find("no such file"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(missing.parent_path()));
  const std::string path = (dir_ / "h.sqlite").string();
  {
    History h(path);
    h.record(sample_run("a", 1));
  }
  History reader(path, History::Access::ReadOnly);
  EXPECT_NE(error_of([&] { reader.runs("", "yesterday"); }).find("--since 'yesterday'"),
            std::string::npos);
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(History(path, History::Access::ReadOnly).runs().size(), 1u);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
  const std::string locked = error_of([&] {
    History writer(path);
    writer.record(sample_run("b", 2));
  });
  EXPECT_NE(locked.find("locked by another process for more than"), std::string::npos) << locked;
  EXPECT_NE(locked.find(path), std::string::npos) << locked;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
            History::kLockSeconds * 3.0);
  sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(holder);
}

// fuzz_recipe: a manifest path longer than the file system allows made
// std::filesystem throw (an internal error); it is a file not found.
TEST_F(RecipeFiles, OverlongManifestPathIsNotFound) {
  const std::string path = write("long.yaml", "hardware: " + std::string(5000, 'x') + "\n");
  EXPECT_NE(error_of([&] { load_recipe(path, {}); }).find("hardware: manifest file not found"),
            std::string::npos);
}

// task: inference: scenarios, files and the model are checked before
// anything runs.
TEST_F(RecipeFiles, InferenceSectionIsChecked) {
  const std::string model = write("m.onnx", "not read before the run");
  const std::string query = write("x.npy", "");
  auto recipe_with = [&](const std::string& inference) {
    return write("inference.yaml",
                 "name: inf\nversion: 1.0.0\ndescription: d\n"
                 "model: {name: m, version: 1.0.0, description: d, file: {path: m.onnx}}\n"
                 "task: inference\ninference:\n" +
                     inference + "criteria: [latency.p90 <= 30 ms]\n");
  };
  const Recipe r = load_recipe(recipe_with("  inputs: {x: x.npy}\n"), {});
  EXPECT_EQ(r.inference.scenarios, (std::vector<std::string>{"SingleStream", "Offline"}));
  EXPECT_EQ(r.inference.inputs, std::vector<std::string>{"x=" + query});
  EXPECT_EQ(r.criteria[0].bound, 0.03);
  EXPECT_NE(
      error_of([&] {
        load_recipe(recipe_with("  inputs: {x: x.npy}\n  scenarios: [Server]\n"), {});
      }).find("inference.scenarios: unknown scenario 'Server' (known: SingleStream, Offline)"),
      std::string::npos);
  EXPECT_NE(error_of([&] {
              load_recipe(recipe_with("  inputs: {x: y.npy}\n"), {});
            }).find("inference.inputs: x: file not found"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              load_recipe(recipe_with("  inputs: {}\n"), {});
            }).find("inference.inputs: expected NAME: FILE.npy"),
            std::string::npos);
  (void)model;
}

// task: operator_benchmark: operators, their problems and the backends
// are checked before anything is measured.
TEST_F(RecipeFiles, OperatorBenchmarkSectionIsChecked) {
  deep500::frameworks::register_all();
  write("gemm.txt", "m8n8k8\nm16n8k4\n");
  auto recipe_with = [&](const std::string& bench) {
    return write("bench.yaml",
                 "name: b\nversion: 1.0.0\ndescription: d\ntask: operator_benchmark\n"
                 "operator_benchmark:\n" +
                     bench + "criteria: [reference.gflops > 0]\n");
  };
  const Recipe r =
      load_recipe(recipe_with("  operators: [{op: Gemm, shapes: gemm.txt}, {op: Relu, inputs: "
                              "['x:float32:4x4']}]\n  backends: [reference]\n"),
                  {});
  ASSERT_EQ(r.operator_benchmark.operators.size(), 2u);
  EXPECT_EQ(r.operator_benchmark.operators[0].problems.size(), 2u);
  EXPECT_EQ(r.operator_benchmark.operators[1].problems[0].label, "x:float32[4,4]");
  EXPECT_NE(error_of([&] {
              load_recipe(recipe_with("  operators: [{op: Gemmm, shapes: gemm.txt}]\n"), {});
            }).find("unknown operator 'Gemmm'"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              load_recipe(recipe_with("  operators: [{op: Gemm, shapes: none.txt}]\n"), {});
            }).find("operator_benchmark.operators[0].shapes: --shapes"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              load_recipe(recipe_with("  operators: [{op: Gemm, shapes: gemm.txt}]\n"
                                      "  backends: [onedn]\n"),
                          {});
            }).find("operator_benchmark.backends"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              load_recipe(recipe_with("  operators: []\n"), {});
            }).find("expected at least one operator"),
            std::string::npos);
  write("bad.txt", "m8n8k8\nm8n8q8\n");
  EXPECT_NE(error_of([&] {
              load_recipe(recipe_with("  operators: [{op: Gemm, shapes: bad.txt}]\n"), {});
            }).find("bad.txt:2"),
            std::string::npos);
}

}  // namespace
