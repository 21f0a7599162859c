// `launcher:` of a recipe: how `deep500 run` starts a distributed recipe's
// ranks, and the check of what it starts against this machine.
//
//   launcher:
//     kind: mpirun          # mpirun (default): deep500 starts `mpirun -np RANKS`;
//                           # none: the ranks are started by the user (mpirun, srun)
//     hostfile: hosts.txt   # --hostfile (relative to the recipe)
//     map_by: core          # --map-by
//     bind_to: core         # --bind-to
//     args: [--mca, btl, self,vader]   # more mpirun arguments, as given
#pragma once

#include <string>
#include <vector>

namespace deep500::recipes {

class Fields;

struct LauncherOptions {
  std::string kind = "mpirun";  // mpirun | none
  std::string hostfile;         // absolute ("" = none)
  std::string map_by, bind_to;  // "" = mpirun's default
  std::vector<std::string> args;
};

// Error naming the field for an unknown kind, or options given to `none`.
LauncherOptions read_launcher(Fields& top);

// The mpirun arguments the launcher adds after `-np RANKS`.
std::vector<std::string> launcher_arguments(const LauncherOptions& l);

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
