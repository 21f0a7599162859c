"""The Python module under real mpirun (ctest python_mpi, 2 ranks): the
communicator's collectives, point to point messages and splits against
values worked out per rank, and
distributed training from Python matching one process at the global batch.

Usage: mpirun -np 2 /usr/bin/python3 distributed_test.py WORK_DIR
"""
import os
import sys

import numpy as np

import deep500

work = sys.argv[1]
assert deep500.launched_by_mpirun()
world = deep500.mpi_world()
r, p = world.rank, world.size
assert p == 2 and world.name == "mpi"

# Collectives: rank r contributes r + 1.
mine = np.full(3, r + 1, dtype=np.float32)
assert world.allreduce(mine).tolist() == [3.0] * 3
assert world.allreduce(mine, "max").tolist() == [2.0] * 3
assert world.allreduce(np.array([r + 1.0]), "mean").tolist() == [1.5]
assert world.broadcast(np.arange(4) * (r + 1), root=1).tolist() == [0, 2, 4, 6]
assert world.allgather(np.array([r, -r], dtype=np.int64)).tolist() == [[0, 0], [1, -1]]
assert world.reduce_scatter(np.arange(4.0) * (r + 1)).tolist() == [[0.0, 3.0], [6.0, 9.0]][r]
assert world.alltoall(np.array([10 * r, 10 * r + 1])).tolist() == [[0, 10], [1, 11]][r]
# Point to point: a ring, and a message from rank 1 to rank 0.
assert world.sendrecv(np.array([r], np.int32), 1 - r, np.zeros(1, np.int32), 1 - r,
                      tag=5).tolist() == [1 - r]
if r == 1:
    world.send(np.arange(3, dtype=np.float64) / 2, 0, tag=9)
else:
    assert world.recv(np.zeros(3), 1, tag=9).tolist() == [0.0, 0.5, 1.0]
# Split: each rank alone (colors differ), then both reversed (one color, key -rank).
alone = world.split(color=r)
assert (alone.size, alone.rank, alone.name) == (1, 0, "mpi")
reversed_ranks = world.split(color=0, key=-r)
assert (reversed_ranks.size, reversed_ranks.rank) == (2, 1 - r)
assert reversed_ranks.allgather(np.array([r])).tolist() == [[1], [0]]
world.barrier()
assert world.traffic["allreduce"]["calls"] == 3 and world.traffic["allreduce"]["bytes_sent"] > 0

# Distributed training: 2 ranks x batch 16 = 1 process x batch 32, written
# into a folder of this run's own (rank 0's pid).
work = os.path.join(work, str(int(world.broadcast(np.array([os.getpid()]))[0])))
common = dict(builtin="lenet5", dataset="fashion-mnist", subset=1024, test_subset=256,
              optimizer="momentum", hyper={"lr": 0.05, "momentum": 0.9}, threads=1,
              prefetch_threads=0, progress=False, executor="reference")
dist = deep500.train(batch_size=16, communicator=world, scheme="allreduce",
                     save_params=os.path.join(work, "dist"), **common)
assert dist["steps"] == 32, dist["summary"]
if r == 0:
    alone = deep500.train(batch_size=32, save_params=os.path.join(work, "alone"), **common)
    assert alone["steps"] == 32
    files = sorted(os.listdir(os.path.join(work, "alone")))
    assert len(files) == 10 and files == sorted(os.listdir(os.path.join(work, "dist")))
    worst = max(float(np.max(np.abs(np.load(os.path.join(work, "alone", f)) -
                                    np.load(os.path.join(work, "dist", f))))) for f in files)
    largest = max(float(np.max(np.abs(np.load(os.path.join(work, "alone", f))))) for f in files)
    # Equal in exact arithmetic; in float32 the weight gradients are summed in
    # another order (two 16-row GEMMs and an allreduce, or one 32-row GEMM,
    # whose blocking depends on the CPU's ISA), and 32 momentum steps carry
    # the rounding on: 1e-3 of the largest weight allows that, while a
    # missing or unaveraged rank's gradient differs by lr x gradient.
    verdict = worst <= 1e-3 * largest
    print(f"python under mpirun: collectives correct; 2 ranks x batch 16 = 1 x 32 within "
          f"{worst:.2e} (largest weight {largest:.3g})")
else:
    verdict, worst = False, 0.0
# Both ranks learn rank 0's verdict, so that neither waits for the other in vain.
assert bool(world.broadcast(np.array([int(verdict)]))[0]), \
    f"2 ranks x 16 differ from 1 x 32 by {worst}"
world.barrier()
