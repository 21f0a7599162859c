// The results history: one SQLite database (default results/history.sqlite,
// --history PATH) holding every recipe run: recipe, status, times, results
// folder, revision, host, final metrics, each criterion's verdict and, for
// a seed ensemble (recipes/results/ensemble.h), its member runs.
//  * The schema is versioned (PRAGMA user_version) and migrated forward on
//    open; a database newer than this deep500 is refused, never changed.
//  * WAL mode and a busy timeout: several runs may record at once; each run
//    is recorded in one transaction, so a reader sees all of it or none.
//  * A file that is not a SQLite database, or holds a schema version this
//    deep500 did not write, is an Error naming it; it is never replaced.
//  * Readers (history, compare, scoreboard, Python) open it read-only: a
//    missing file is an Error (nothing is created), and a writer holding its
//    lock does not block them. A writer waits at most kLockSeconds for the
//    lock, then gives up with one line naming the file.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

struct sqlite3;

namespace deep500::recipes {

struct CriterionRecord {
  std::string text;
  bool passed = false;
  std::string detail;
};

struct RunRecord {
  int64_t id = 0;  // assigned by History::record
  std::string recipe, recipe_version, task;
  std::string status;                     // passed, failed, interrupted
  std::string started_utc, finished_utc;  // ISO 8601
  double seconds = 0;
  std::string results_dir, git_revision, hostname;
  std::string resolved_recipe;  // JSON
  // What tells the run from others of its recipe: `run --label`, a sweep
  // member's axes, or else its --set overrides ("" for none).
  std::string label;
  std::map<std::string, double> metrics;
  std::vector<CriterionRecord> criteria;
  std::vector<int64_t> members;  // a seed ensemble's member runs, in order (else empty)
};

class History {
 public:
  enum class Access { ReadWrite, ReadOnly };
  static constexpr int kLockSeconds = 10;
  // ReadWrite opens or creates the database (and its folder) and migrates
  // its schema; ReadOnly opens an existing one of the current schema.
  explicit History(const std::string& path, Access access = Access::ReadWrite);
  ~History();
  History(const History&) = delete;
  History& operator=(const History&) = delete;

  // Records one run in one transaction; returns its id.
  int64_t record(const RunRecord& run);
  // Runs, oldest first; `recipe` "" = all; `since` an ISO 8601 prefix-
  // comparable time ("" = all), e.g. 2026-11-24 or 2026-11-24T10:00:00Z;
  // anything else (a word such as "yesterday") is an Error naming it.
  std::vector<RunRecord> runs(const std::string& recipe = "", const std::string& since = "") const;
  // Error naming the id when there is no such run.
  RunRecord run(int64_t id) const;
  // Marks the change at run `run_id` accepted (history --accept): a series
  // is judged for regressions from its last accepted run on.
  void accept_change(int64_t run_id, const std::string& note);
  std::set<int64_t> accepted_changes() const;

  int schema_version() const;
  static int latest_schema_version();
  const std::string& path() const { return path_; }

 private:
  void exec(const std::string& sql) const;
  void migrate();
  // Error unless `version` is one this deep500 can read or migrate.
  void check_schema(int version) const;
  std::vector<RunRecord> select(const std::string& where,
                                const std::vector<std::string>& args) const;

  std::string path_;
  sqlite3* db_ = nullptr;
};

}  // namespace deep500::recipes
