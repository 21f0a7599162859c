// `launcher:` of a recipe: how `deep500 run` starts a distributed recipe's
// ranks, and the check of what it starts against this machine.
//
//   launcher:
//     kind: mpirun          # mpirun (default): deep500 starts `mpirun -np RANKS`;
//                           # srun: `srun --ntasks RANKS` (SLURM, in or for an
//                           # allocation); none: the ranks are started by the
//                           # user (mpirun, srun)
//     hostfile: hosts.txt   # mpirun: --hostfile (relative to the recipe)
//     map_by: core          # mpirun: --map-by
//     bind_to: core         # mpirun: --bind-to
//     nodes: 2              # srun: --nodes
//     tasks_per_node: 4     # srun: --ntasks-per-node (nodes x tasks_per_node = ranks)
//     partition: batch      # srun: --partition
//     time: "00:30:00"      # srun: --time
//     args: [--mca, btl, self,vader]   # more arguments of the launcher, as given
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace deep500::recipes {

class Fields;

struct LauncherOptions {
  std::string kind = "mpirun";            // mpirun | srun | none
  std::string hostfile;                   // absolute ("" = none)
  std::string map_by, bind_to;            // "" = mpirun's default
  int64_t nodes = 0, tasks_per_node = 0;  // srun (0 = SLURM's default)
  std::string partition, time;            // srun ("" = SLURM's default)
  std::vector<std::string> args;
};

// Error naming the field for an unknown kind, or options of another kind
// (mpirun's to srun, srun's to mpirun, any to `none`).
LauncherOptions read_launcher(Fields& top);

// The mpirun arguments the launcher adds after `-np RANKS`.
std::vector<std::string> launcher_arguments(const LauncherOptions& l);

// The command that starts `ranks` ranks, up to the program: `mpirun -np
// RANKS --stdin none [launcher_arguments] [--oversubscribe when ranks >
// cores] [--allow-run-as-root for root]`, or `srun --ntasks RANKS [--nodes
// N] [--ntasks-per-node T] [--partition P] [--time T] [args]`. Error when
// nodes x tasks_per_node is not `ranks`.
std::vector<std::string> launch_prefix(int ranks, const LauncherOptions& l, unsigned cores,
                                       bool root);

// The slots a hostfile gives this machine (lines naming localhost,
// 127.0.0.1 or `hostname`, `slots=N`; 0 when none says); Error naming the
// file and line for a slots count that is not a number.
int hostfile_local_slots(const std::string& hostfile, const std::string& hostname);

// What the launch would do wrong on a machine with `cores`: more ranks x
// threads than cores (threads 0: the ranks share the cores), or a hostfile
// promising this machine more slots than it has cores (Open MPI then does
// not know the ranks share cores, and they busy-poll). Each one line with
// the fix; none when all is well.
std::vector<std::string> launch_warnings(int ranks, int threads, int cores, int hostfile_slots,
                                         const std::string& hostfile);

}  // namespace deep500::recipes
