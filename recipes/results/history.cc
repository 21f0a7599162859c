#include "recipes/results/history.h"

#include <sqlite3.h>

#include <cctype>
#include <chrono>
#include <filesystem>
#include <thread>

#include "deep/error.h"

namespace deep500::recipes {

namespace {

// Migration i takes the schema from version i to i + 1. Append only: a
// released step never changes.
const std::vector<const char*> kMigrations = {
    R"(CREATE TABLE runs (
         id INTEGER PRIMARY KEY AUTOINCREMENT,
         recipe TEXT NOT NULL,
         recipe_version TEXT NOT NULL,
         task TEXT NOT NULL,
         status TEXT NOT NULL CHECK (status IN ('passed', 'failed', 'interrupted')),
         started_utc TEXT NOT NULL,
         finished_utc TEXT NOT NULL,
         seconds REAL NOT NULL,
         results_dir TEXT NOT NULL,
         git_revision TEXT NOT NULL,
         hostname TEXT NOT NULL,
         resolved_recipe TEXT NOT NULL);
       CREATE INDEX runs_by_recipe ON runs (recipe, started_utc);
       CREATE TABLE metrics (
         run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
         name TEXT NOT NULL,
         value REAL,
         PRIMARY KEY (run_id, name));
       CREATE TABLE criteria (
         run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
         position INTEGER NOT NULL,
         text TEXT NOT NULL,
         passed INTEGER NOT NULL,
         detail TEXT NOT NULL,
         PRIMARY KEY (run_id, position));)",
    // Seed ensembles: an ensemble's run and, in order, its members' runs.
    R"(CREATE TABLE ensemble_members (
         ensemble_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
         position INTEGER NOT NULL,
         member_id INTEGER NOT NULL REFERENCES runs (id),
         PRIMARY KEY (ensemble_id, position));)",
    // Labels: what tells a run from others of its recipe.
    R"(ALTER TABLE runs ADD COLUMN label TEXT NOT NULL DEFAULT '';)",
    // Changes a user accepted: `history --regressions` judges a series from
    // its last accepted run on.
    R"(CREATE TABLE accepted_changes (
         run_id INTEGER PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
         note TEXT NOT NULL);)",
};

// A prepared statement, finalized on scope exit.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql, const std::string& path) : db_(db), path_(path) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr) != SQLITE_OK)
      throw Error(cat("history ", path, ": ", sqlite3_errmsg(db)));
  }
  ~Statement() { sqlite3_finalize(s_); }
  Statement& bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.c_str(), -1, SQLITE_TRANSIENT);
    return *this;
  }
  Statement& bind(int i, double v) {
    sqlite3_bind_double(s_, i, v);
    return *this;
  }
  Statement& bind(int i, int64_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  // true while rows come; Error on failure.
  bool step() {
    const int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw Error(cat("history ", path_, ": ", sqlite3_errmsg(db_)));
  }
  std::string text(int i) const {
    const unsigned char* t = sqlite3_column_text(s_, i);
    return t ? reinterpret_cast<const char*>(t) : "";
  }
  double real(int i) const { return sqlite3_column_double(s_, i); }
  int64_t integer(int i) const { return sqlite3_column_int64(s_, i); }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
  std::string path_;
};

}  // namespace

History::History(const std::string& path, Access access) : path_(path) {
  namespace fs = std::filesystem;
  const bool writes = access == Access::ReadWrite;
  const fs::path parent = fs::path(path).parent_path();
  std::error_code ec;
  if (writes && !parent.empty()) fs::create_directories(parent, ec);
  DEEP500_CHECK(!fs::is_directory(path, ec), "history ", path,
                ": is a folder, not a database file");
  DEEP500_CHECK(writes || fs::exists(path, ec), "history ", path,
                ": no such file (nothing has been recorded there; see --output-dir or --history)");
  const int flags = writes ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY;
  if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw Error(cat("history ", path, ": cannot open: ", why));
  }
  sqlite3_busy_timeout(db_, kLockSeconds * 1000);
  try {
    if (writes) {
      exec("PRAGMA journal_mode = WAL");
      exec("PRAGMA foreign_keys = ON");
      migrate();
    } else {
      check_schema(schema_version());
      DEEP500_CHECK(schema_version() == latest_schema_version(), "history ", path_,
                    ": schema version ", schema_version(), " (this deep500 reads version ",
                    latest_schema_version(), "; a `deep500 run` with it migrates the file)");
    }
  } catch (...) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

void History::check_schema(int version) const {
  DEEP500_CHECK(version >= 0, "history ", path_, ": schema version ", version,
                " is not one deep500 writes (a damaged or foreign file)");
  DEEP500_CHECK(version <= latest_schema_version(), "history ", path_, ": schema version ", version,
                " is newer than this deep500 knows (", latest_schema_version(),
                "); use a newer deep500 or another --history file");
}

History::~History() {
  sqlite3_close(db_);
}

void History::exec(const std::string& sql) const {
  char* message = nullptr;
  // The busy handler is not called everywhere (switching a new database to
  // WAL while another process opens it): such statements are retried, for
  // kLockSeconds in all.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(kLockSeconds);
  int rc = SQLITE_OK;
  while (true) {
    rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message);
    if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || std::chrono::steady_clock::now() > give_up)
      break;
    sqlite3_free(message);
    message = nullptr;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (rc != SQLITE_OK) {
    const std::string why = message ? message : sqlite3_errmsg(db_);
    sqlite3_free(message);
    if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
      throw Error(cat("history ", path_, ": locked by another process for more than ", kLockSeconds,
                      " s (", why, "); try again when it has finished"));
    throw Error(cat("history ", path_, ": ", why));
  }
}

int History::latest_schema_version() {
  return static_cast<int>(kMigrations.size());
}

int History::schema_version() const {
  Statement s(db_, "PRAGMA user_version", path_);
  return s.step() ? static_cast<int>(s.integer(0)) : 0;
}

void History::migrate() {
  // Inside one write transaction: two processes opening a new database at
  // once migrate it once.
  exec("BEGIN IMMEDIATE");
  try {
    const int version = schema_version();
    check_schema(version);
    for (int v = version; v < latest_schema_version(); ++v) {
      exec(kMigrations[static_cast<size_t>(v)]);
      exec(cat("PRAGMA user_version = ", v + 1));
    }
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

int64_t History::record(const RunRecord& r) {
  exec("BEGIN IMMEDIATE");
  try {
    Statement run(db_,
                  "INSERT INTO runs (recipe, recipe_version, task, status, started_utc, "
                  "finished_utc, seconds, results_dir, git_revision, hostname, resolved_recipe, "
                  "label) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                  path_);
    run.bind(1, r.recipe).bind(2, r.recipe_version).bind(3, r.task).bind(4, r.status);
    run.bind(5, r.started_utc).bind(6, r.finished_utc).bind(7, r.seconds).bind(8, r.results_dir);
    run.bind(9, r.git_revision).bind(10, r.hostname).bind(11, r.resolved_recipe).bind(12, r.label);
    run.step();
    const int64_t id = sqlite3_last_insert_rowid(db_);
    for (const auto& [name, value] : r.metrics) {
      Statement m(db_, "INSERT INTO metrics (run_id, name, value) VALUES (?, ?, ?)", path_);
      m.bind(1, id).bind(2, name).bind(3, value).step();
    }
    for (size_t i = 0; i < r.criteria.size(); ++i) {
      Statement c(db_,
                  "INSERT INTO criteria (run_id, position, text, passed, detail) "
                  "VALUES (?, ?, ?, ?, ?)",
                  path_);
      c.bind(1, id).bind(2, static_cast<int64_t>(i)).bind(3, r.criteria[i].text);
      c.bind(4, static_cast<int64_t>(r.criteria[i].passed)).bind(5, r.criteria[i].detail).step();
    }
    for (size_t i = 0; i < r.members.size(); ++i) {
      Statement e(db_,
                  "INSERT INTO ensemble_members (ensemble_id, position, member_id) "
                  "VALUES (?, ?, ?)",
                  path_);
      e.bind(1, id).bind(2, static_cast<int64_t>(i)).bind(3, r.members[i]).step();
    }
    exec("COMMIT");
    return id;
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

std::vector<RunRecord> History::select(const std::string& where,
                                       const std::vector<std::string>& args) const {
  Statement s(db_,
              "SELECT id, recipe, recipe_version, task, status, started_utc, finished_utc, "
              "seconds, results_dir, git_revision, hostname, resolved_recipe, label FROM runs " +
                  where + " ORDER BY started_utc, id",
              path_);
  for (size_t i = 0; i < args.size(); ++i) s.bind(static_cast<int>(i + 1), args[i]);
  std::vector<RunRecord> out;
  while (s.step()) {
    RunRecord r;
    r.id = s.integer(0);
    r.recipe = s.text(1);
    r.recipe_version = s.text(2);
    r.task = s.text(3);
    r.status = s.text(4);
    r.started_utc = s.text(5);
    r.finished_utc = s.text(6);
    r.seconds = s.real(7);
    r.results_dir = s.text(8);
    r.git_revision = s.text(9);
    r.hostname = s.text(10);
    r.resolved_recipe = s.text(11);
    r.label = s.text(12);
    out.push_back(std::move(r));
  }
  for (auto& r : out) {
    Statement m(db_, "SELECT name, value FROM metrics WHERE run_id = ? ORDER BY name", path_);
    m.bind(1, r.id);
    while (m.step()) r.metrics[m.text(0)] = m.real(1);
    Statement c(db_, "SELECT text, passed, detail FROM criteria WHERE run_id = ? ORDER BY position",
                path_);
    c.bind(1, r.id);
    while (c.step()) r.criteria.push_back({c.text(0), c.integer(1) != 0, c.text(2)});
    Statement e(db_,
                "SELECT member_id FROM ensemble_members WHERE ensemble_id = ? ORDER BY position",
                path_);
    e.bind(1, r.id);
    while (e.step()) r.members.push_back(e.integer(0));
  }
  return out;
}

namespace {
// "2026-11-24", "2026-11-24T10", ... "2026-11-24T10:00:00Z": a prefix of an
// ISO 8601 UTC time, as started_utc is stored.
bool iso_time_prefix(const std::string& t) {
  static const std::string shape = "dddd-dd-ddTdd:dd:ddZ";
  if (t.size() < 10 || t.size() > shape.size()) return false;
  for (size_t i = 0; i < t.size(); ++i)
    if (shape[i] == 'd' ? !std::isdigit(static_cast<unsigned char>(t[i])) : t[i] != shape[i])
      return false;
  return true;
}
}  // namespace

std::vector<RunRecord> History::runs(const std::string& recipe, const std::string& since) const {
  DEEP500_CHECK(since.empty() || iso_time_prefix(since), "--since '", since,
                "': expected a UTC date or time such as 2026-11-24 or 2026-11-24T10:00:00Z");
  std::string where;
  std::vector<std::string> args;
  if (!recipe.empty()) where = "WHERE recipe = ?", args.push_back(recipe);
  if (!since.empty())
    where += (where.empty() ? "WHERE" : " AND") + std::string(" started_utc >= ?"),
        args.push_back(since);
  return select(where, args);
}

void History::accept_change(int64_t run_id, const std::string& note) {
  run(run_id);  // Error naming the id when there is no such run
  Statement s(db_, "INSERT OR REPLACE INTO accepted_changes (run_id, note) VALUES (?, ?)", path_);
  s.bind(1, run_id).bind(2, note).step();
}

std::set<int64_t> History::accepted_changes() const {
  std::set<int64_t> out;
  Statement s(db_, "SELECT run_id FROM accepted_changes", path_);
  while (s.step()) out.insert(s.integer(0));
  return out;
}

RunRecord History::run(int64_t id) const {
  auto rows = select("WHERE id = ?", {std::to_string(id)});
  DEEP500_CHECK(!rows.empty(), "history ", path_, ": no run with id ", id);
  return rows[0];
}

}  // namespace deep500::recipes
