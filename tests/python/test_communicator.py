"""Level 3 from Python without mpirun: ranks as threads of this process
(deep500.in_process_ranks), their collectives, point to point messages and
splits against values worked out per rank, and distributed training on them
matching one process at the global batch. Under real mpirun:
tests/python_mpi."""
import numpy as np
import pytest

import deep500


def test_collectives_on_four_in_process_ranks():
    def body(c):
        mine = np.full(4, c.rank + 1, dtype=np.float32)  # rank r contributes r + 1
        blocks = np.arange(4, dtype=np.int64) + 10 * c.rank  # block j for rank j
        return {"sum": c.allreduce(mine), "max": c.allreduce(mine, "max"),
                "mean": c.allreduce(np.array([c.rank + 1.0]), "mean"),
                "reduce": c.reduce(mine, "sum", root=2),
                "broadcast": c.broadcast(np.arange(3) * (c.rank + 1), root=1),
                "allgather": c.allgather(np.array([c.rank, -c.rank], dtype=np.int32)),
                "reduce_scatter": c.reduce_scatter(np.arange(8, dtype=np.float64) * (c.rank + 1)),
                "alltoall": c.alltoall(blocks), "traffic": c.traffic, "name": c.name,
                "size": c.size}

    ranks = deep500.in_process_ranks(4, body)
    for r, got in enumerate(ranks):
        assert got["name"] == "in-process" and got["size"] == 4
        assert got["sum"].tolist() == [10.0] * 4
        assert got["max"].tolist() == [4.0] * 4
        assert got["mean"].tolist() == [2.5]
        assert got["reduce"].tolist() == ([10.0] * 4 if r == 2 else [r + 1.0] * 4)
        assert got["broadcast"].tolist() == [0, 2, 4]
        assert got["allgather"].tolist() == [[0, 0], [1, -1], [2, -2], [3, -3]]
        # Block r of arange(8) * (k + 1), summed over k = 0..3: 10 * [2r, 2r + 1].
        assert got["reduce_scatter"].tolist() == [20.0 * r, 20.0 * r + 10]
        assert got["alltoall"].tolist() == [r, 10 + r, 20 + r, 30 + r]
        assert got["traffic"]["allreduce"]["calls"] == 3
        assert got["traffic"]["allreduce"]["bytes_sent"] > 0


def test_point_to_point_and_split():
    def body(c):
        right, left = (c.rank + 1) % c.size, (c.rank - 1) % c.size
        ring = c.sendrecv(np.array([c.rank * 1.5]), right, np.zeros(1), left, tag=7)
        if c.rank == 0:
            c.send(np.arange(5, dtype=np.int16), 2, tag=4)
        got = c.recv(np.zeros(5, np.int16), 0, tag=4) if c.rank == 2 else None
        half = c.split(color=c.rank % 2, key=-c.rank)  # odd and even ranks, reversed
        return ring, got, (half.size, half.rank, half.allreduce(np.array([c.rank])).tolist())

    ranks = deep500.in_process_ranks(4, body)
    assert [ring.tolist() for ring, _, _ in ranks] == [[4.5], [0.0], [1.5], [3.0]]
    assert ranks[2][1].dtype == np.int16 and ranks[2][1].tolist() == [0, 1, 2, 3, 4]
    # Evens {0, 2} and odds {1, 3}, ranked by key = -rank.
    assert [split for _, _, split in ranks] == [(2, 1, [2]), (2, 1, [4]), (2, 0, [2]), (2, 0, [4])]


def test_a_failing_rank_fails_the_group_with_its_error():
    def body(c):
        if c.rank == 1:
            raise ValueError("rank one gives up")
        c.barrier()  # rank 0 would wait for ever without the group failing

    with pytest.raises(deep500.Error, match="rank 1 raised ValueError: rank one gives up"):
        deep500.in_process_ranks(2, body, timeout_seconds=30)
    with pytest.raises(deep500.Error, match="dest 5"):
        deep500.in_process_ranks(2, lambda c: c.send(np.zeros(1), 5))
    with pytest.raises(deep500.Error, match="out of range"):
        deep500.in_process_ranks(0, lambda c: None)


def test_training_on_in_process_ranks_matches_one_process(tmp_path):
    common = dict(builtin="lenet5", dataset="fashion-mnist", subset=512, test_subset=128,
                  optimizer="momentum", hyper={"lr": 0.05, "momentum": 0.9}, threads=1,
                  prefetch_threads=0, progress=False, executor="reference")

    def rank(c):
        return deep500.train(batch_size=16, communicator=c, scheme="allreduce",
                             save_params=str(tmp_path / "dist"), **common)["steps"]

    assert deep500.in_process_ranks(2, rank) == [16, 16]
    assert deep500.train(batch_size=32, save_params=str(tmp_path / "alone"), **common)["steps"] == 16
    files = sorted(p.name for p in (tmp_path / "alone").iterdir())
    assert len(files) == 10
    assert files == sorted(p.name for p in (tmp_path / "dist").iterdir())  # rank 0 writes
    worst = max(float(np.max(np.abs(np.load(tmp_path / "dist" / f) -
                                    np.load(tmp_path / "alone" / f)))) for f in files)
    assert worst <= 1e-5, f"2 ranks x 16 differ from 1 x 32 by {worst}"
