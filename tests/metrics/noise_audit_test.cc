// The noise audit (metrics/noise_audit.h): its parsers on text copied from
// real /proc and cgroup files, its warnings on hand-made audits, and a real
// busy process seen by a real audit.
#include "metrics/noise_audit.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace deep500::metrics;

TEST(NoiseAudit, ParsesProcStatAndCpuMax) {
  const CpuTimes t = parse_proc_stat(
      "cpu  4705 356 584 3699176 23060 0 277 91 12 0\ncpu0 2352 178 292 1849588 11530 0 138 45\n");
  EXPECT_EQ(t.total, 4705u + 356 + 584 + 3699176 + 23060 + 0 + 277 + 91);
  EXPECT_EQ(t.steal, 91u);
  EXPECT_EQ(parse_proc_stat("nothing").total, 0u);
  EXPECT_DOUBLE_EQ(parse_cpu_max("150000 100000\n"), 1.5);
  EXPECT_EQ(parse_cpu_max("max 100000"), -1);
  EXPECT_EQ(parse_cpu_max(""), -1);
}

TEST(NoiseAudit, WarnsOfWhatCouldMoveTheTimes) {
  NoiseAudit quiet;
  quiet.cores = quiet.affinity_cpus = 4;
  quiet.load_before = 1.9;
  quiet.steal_share = 0.01;
  quiet.governor = "performance";
  EXPECT_TRUE(noise_warnings(quiet).empty());
  NoiseAudit loud = quiet;
  loud.load_before = 2.5;
  loud.steal_share = 0.08;
  loud.cpu_quota = 1.5;
  loud.governor = "powersave";
  loud.busy_before = {{4242, "stress", 0.97}};
  const auto w = noise_warnings(loud);
  ASSERT_EQ(w.size(), 4u);  // the load average is recorded, not judged
  EXPECT_EQ(w[0], "another process was busy before the run: stress (pid 4242, 97% of a CPU)");
  EXPECT_EQ(w[1], "8% of CPU time was stolen by the hypervisor during the run");
  EXPECT_NE(w[2].find("CPU quota is 1.5 CPUs of the 4"), std::string::npos);
  EXPECT_NE(w[3].find("powersave"), std::string::npos);
  EXPECT_EQ(to_json(loud)["warnings"].size(), 4u);
}

// Both spin: a child of this test (family: never listed) and a stranger (a
// grandchild re-parented away: listed, on a loaded machine within 20 audits).
TEST(NoiseAudit, SeesABusyProcessButNotItsOwnChildren) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t middle = fork();
  if (middle == 0) {
    const pid_t grandchild = fork();
    if (grandchild == 0) {
      alarm(20);
      for (volatile unsigned long i = 0;; ++i) {
      }
    }
    (void)!write(fds[1], &grandchild, sizeof grandchild);
    _exit(0);
  }
  pid_t stranger = 0;
  ASSERT_EQ(read(fds[0], &stranger, sizeof stranger), static_cast<ssize_t>(sizeof stranger));
  waitpid(middle, nullptr, 0);
  const pid_t child = fork();
  if (child == 0) {
    alarm(20);
    for (volatile unsigned long i = 0;; ++i) {
    }
  }
  bool saw_child = false, saw_stranger = false;
  NoiseAudit a;
  for (int attempt = 0; attempt < 20 && !saw_stranger; ++attempt) {  // a loaded machine
    a = start_noise_audit();
    finish_noise_audit(a);
    for (const auto& p : a.busy_before) {
      saw_child = saw_child || p.pid == child;
      saw_stranger = saw_stranger || p.pid == stranger;
    }
  }
  kill(child, SIGKILL);
  kill(stranger, SIGKILL);
  waitpid(child, nullptr, 0);
  close(fds[0]);
  close(fds[1]);
  EXPECT_FALSE(saw_child);
  EXPECT_TRUE(saw_stranger) << to_json(a).dump();
  EXPECT_GE(a.load_before, 0);
  EXPECT_GT(a.cores, 0);
}
