// The launcher section and the launch check (recipes/format/launcher.h):
// mpirun arguments, a hostfile's slots for this machine, and the
// oversubscription warnings with their fixes.
#include "recipes/format/launcher.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "recipes/format/recipe.h"
#include "tests/error_of.h"

using deep500::test::error_of;
using namespace deep500::recipes;
namespace fs = std::filesystem;

namespace {

const std::string kRecipes = std::string(DEEP500_SOURCE_DIR) + "/recipes";

std::string write_hostfile(const std::string& text) {
  const fs::path p = fs::temp_directory_path() / ("deep500_hosts_" + std::to_string(getpid()));
  std::ofstream(p) << text;
  return p.string();
}

}  // namespace

TEST(Launcher, SectionBecomesMpirunArguments) {
  const Recipe r = load_recipe(
      kRecipes + "/fashion_mnist_lenet_allreduce.yaml",
      {"launcher={hostfile: hosts.txt, map_by: core, bind_to: none, args: [--mca, btl, self]}"});
  EXPECT_EQ(r.launcher.kind, "mpirun");
  EXPECT_EQ(r.launcher.hostfile, kRecipes + "/hosts.txt");  // relative to the recipe
  EXPECT_EQ(launcher_arguments(r.launcher),
            (std::vector<std::string>{"--hostfile", kRecipes + "/hosts.txt", "--map-by", "core",
                                      "--bind-to", "none", "--mca", "btl", "self"}));
  const Recipe plain = load_recipe(kRecipes + "/fashion_mnist_lenet_allreduce.yaml", {});
  EXPECT_TRUE(launcher_arguments(plain.launcher).empty());
}

TEST(Launcher, BadSectionsAreRefused) {
  const std::string file = kRecipes + "/fashion_mnist_lenet_allreduce.yaml";
  EXPECT_NE(error_of([&] {
              load_recipe(file, {"launcher.kind=slurm"});
            }).find("launcher.kind: expected mpirun, srun or none, got 'slurm'"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              load_recipe(file, {"launcher={kind: none, map_by: core}"});
            }).find("none starts nothing"),
            std::string::npos);
  EXPECT_NE(error_of([&] { load_recipe(file, {"launcher.hostfle=h"}); }).find("hostfile"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              load_recipe(file, {"launcher={kind: mpirun, partition: batch}"});
            }).find("srun's: kind: srun"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              load_recipe(file, {"launcher={kind: srun, map_by: core}"});
            }).find("are mpirun's"),
            std::string::npos);
}

TEST(Launcher, MpirunAndSrunCommands) {
  const std::string file = kRecipes + "/fashion_mnist_lenet_allreduce.yaml";
  const Recipe srun = load_recipe(
      file, {"launcher={kind: srun, nodes: 2, tasks_per_node: 2, partition: batch, time: "
             "'00:30:00', args: [--exclusive]}"});
  EXPECT_EQ(
      launch_prefix(4, srun.launcher, 2, true),
      (std::vector<std::string>{"srun", "--ntasks", "4", "--nodes", "2", "--ntasks-per-node", "2",
                                "--partition", "batch", "--time", "00:30:00", "--exclusive"}));
  EXPECT_NE(error_of([&] {
              launch_prefix(3, srun.launcher, 2, true);
            }).find("nodes 2 x tasks_per_node 2 is 4 tasks, and the recipe trains on 3 ranks"),
            std::string::npos);
  const Recipe mpirun = load_recipe(file, {"launcher={map_by: core}"});
  EXPECT_EQ(launch_prefix(4, mpirun.launcher, 2, true),
            (std::vector<std::string>{"mpirun", "-np", "4", "--stdin", "none", "--map-by", "core",
                                      "--oversubscribe", "--allow-run-as-root"}));
  EXPECT_EQ(
      launch_prefix(2, mpirun.launcher, 2, false),
      (std::vector<std::string>{"mpirun", "-np", "2", "--stdin", "none", "--map-by", "core"}));
}

TEST(Launcher, HostfileSlotsCountOnlyThisMachine) {
  const std::string f = write_hostfile(
      "# the trap\nlocalhost slots=4\nnode7 slots=16\n127.0.0.1 slots=2 max_slots=8\n"
      "me.example.org slots=1\n\n");
  EXPECT_EQ(hostfile_local_slots(f, "me.example.org"), 7);
  EXPECT_EQ(hostfile_local_slots(f, "me"), 6);  // me.example.org is not `me`
  const std::string bad = write_hostfile("localhost slots=four\n");
  EXPECT_NE(error_of([&] {
              hostfile_local_slots(bad, "x");
            }).find(":1: expected slots=N with N a count, got 'slots=four'"),
            std::string::npos);
  fs::remove(bad);
  EXPECT_NE(error_of([&] { hostfile_local_slots(bad, "x"); }).find("cannot be read"),
            std::string::npos);
}

TEST(Launcher, OversubscriptionAndTheHostfileTrapAreWarnedWithTheFix) {
  EXPECT_TRUE(launch_warnings(2, 1, 2, 0, "").empty());
  EXPECT_TRUE(launch_warnings(4, 0, 2, 0, "").size() == 1);  // threads 0: 1 each at least
  const auto over = launch_warnings(4, 1, 2, 0, "");
  ASSERT_EQ(over.size(), 1u);
  EXPECT_NE(over[0].find("4 ranks x 1 threads need 4 cores and this machine has 2"),
            std::string::npos);
  EXPECT_NE(over[0].find("fix: at most 2 ranks x 1 threads here"), std::string::npos);
  const auto trap = launch_warnings(2, 1, 2, 4, "h.txt");
  ASSERT_EQ(trap.size(), 1u);
  EXPECT_NE(trap[0].find("launcher.hostfile h.txt gives this machine 4 slots but it has 2 cores"),
            std::string::npos);
  EXPECT_NE(trap[0].find("fix: slots=2 in the hostfile"), std::string::npos);
  EXPECT_EQ(launch_warnings(4, 2, 2, 4, "h.txt").size(), 2u);
}
