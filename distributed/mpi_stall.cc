// Stall reports (see mpi_stall.h): one eager message per peer, then
// MPI_Iprobe polling for the grace period.
#include "distributed/mpi_stall.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "deep/error.h"
#include "deep/text.h"

namespace deep500::distributed {
namespace {

constexpr int kTag = 1;
constexpr int kMaxText = 240;     // bytes of one report, its terminating zero included
constexpr int kNamedPerList = 8;  // ranks named per list before "and N more"
constexpr double kGraceSeconds = 2.0;

MPI_Comm stall_comm = MPI_COMM_NULL;
std::mutex report_mutex;  // one report at a time per process

// The report's text, zero-terminated, never freed: the sends are released
// with MPI_Request_free and may still read it when the process ends.
const char* persistent_text(const std::string& at) {
  std::string* text = new std::string(at.substr(0, kMaxText - 1));
  return text->c_str();
}

void tell_everyone(const std::string& at, int me, int size) {
  const char* text = persistent_text(at);
  const int bytes = static_cast<int>(std::char_traits<char>::length(text)) + 1;
  for (int r = 0; r < size; ++r) {
    if (r == me) continue;
    MPI_Request request;
    if (MPI_Isend(text, bytes, MPI_CHAR, r, kTag, stall_comm, &request) == MPI_SUCCESS)
      MPI_Request_free(&request);
  }
}

// Each rank's latest report within `grace` seconds ("" = none).
std::vector<std::string> listen(int me, int size, double grace) {
  std::vector<std::string> heard(static_cast<size_t>(size));
  int missing = size - 1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace);
  while (missing > 0 && std::chrono::steady_clock::now() < deadline) {
    int flag = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kTag, stall_comm, &flag, &status) != MPI_SUCCESS) break;
    if (!flag) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    char text[kMaxText] = {};
    MPI_Recv(text, kMaxText, MPI_CHAR, status.MPI_SOURCE, kTag, stall_comm, MPI_STATUS_IGNORE);
    text[kMaxText - 1] = '\0';
    std::string& slot = heard[static_cast<size_t>(status.MPI_SOURCE)];
    if (slot.empty() && status.MPI_SOURCE != me) --missing;
    slot = text;
  }
  return heard;
}

// "1, 3, 4 and 2 more": the first kNamedPerList entries.
std::string named(const std::vector<std::string>& entries) {
  std::string out;
  const int shown = std::min<int>(kNamedPerList, static_cast<int>(entries.size()));
  for (int i = 0; i < shown; ++i) out += (i ? ", " : "") + entries[static_cast<size_t>(i)];
  if (static_cast<int>(entries.size()) > shown)
    out += cat(" and ", entries.size() - static_cast<size_t>(shown), " more");
  return out;
}

}  // namespace

void start_stall_reports(MPI_Comm world) {
  std::lock_guard<std::mutex> lock(report_mutex);
  if (stall_comm != MPI_COMM_NULL) return;
  if (MPI_Comm_dup(world, &stall_comm) != MPI_SUCCESS) stall_comm = MPI_COMM_NULL;
}

std::string stall_report(const std::string& at, double timeout) {
  std::lock_guard<std::mutex> lock(report_mutex);
  int me = 0, size = 1;
  if (stall_comm == MPI_COMM_NULL || MPI_Comm_rank(stall_comm, &me) != MPI_SUCCESS ||
      MPI_Comm_size(stall_comm, &size) != MPI_SUCCESS || size < 2)
    return "";
  const double grace = std::min(timeout, kGraceSeconds);
  tell_everyone(at, me, size);
  const std::vector<std::string> heard = listen(me, size, grace);
  std::vector<std::string> waiting, silent;
  for (int r = 0; r < size; ++r) {
    if (r == me) continue;
    const std::string& text = heard[static_cast<size_t>(r)];
    if (text.empty())
      silent.push_back(cat(r));
    else
      waiting.push_back(cat("rank ", r, " (", text, ")"));
  }
  std::string out;
  if (!waiting.empty()) out += "; waiting too: " + named(waiting);
  if (!silent.empty())
    out += cat("; no word from rank", silent.size() > 1 ? "s " : " ", named(silent), " within ",
               short_number(grace), " s (stopped, or not stuck in communication)");
  return out;
}

}  // namespace deep500::distributed
