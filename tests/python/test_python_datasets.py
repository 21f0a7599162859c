"""Datasets written in Python: the trainer reads them like its own readers,
and trains on them as on the same data from a file."""
import numpy as np
import pytest

import deep500


class Blobs:
    """Two-class Gaussian blobs, 1x28x28 images: linearly separable."""
    num_classes = 2

    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        self.labels = rng.integers(0, 2, n)
        centers = np.stack([np.full((1, 28, 28), 0.2), np.full((1, 28, 28), 0.8)])
        noise = rng.normal(0, 0.1, (n, 1, 28, 28))
        self.images = (centers[self.labels] + noise).astype(np.float32)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return {"input": self.images[i], "label": np.int64(self.labels[i])}


def test_training_on_a_python_dataset_learns_it():
    out = deep500.train(builtin="mlp", dataset=Blobs(512, 0), test_dataset=Blobs(256, 1),
                        batch_size=32, epochs=3, progress=False, hyper={"lr": 0.1})
    assert out["steps"] == 48
    assert out["final_test_accuracy"] >= 0.99, out["summary"]
    assert out["metrics"]["config"]["dataset"] == "Python dataset Blobs (train)"


def test_a_python_dataset_trains_as_the_same_data_from_an_npz_file(tmp_path):
    train, test = Blobs(256, 2), Blobs(128, 3)
    np.savez(tmp_path / "train.npz", input=train.images, label=train.labels.astype(np.int64))
    np.savez(tmp_path / "test.npz", input=test.images, label=test.labels.astype(np.int64))
    common = dict(builtin="mlp", batch_size=32, epochs=1, progress=False, prefetch_threads=0)
    from_python = deep500.train(dataset=train, test_dataset=test, **common)
    from_file = deep500.train(dataset=f"npz:{tmp_path}/train.npz,{tmp_path}/test.npz", **common)
    assert from_python["final_train_loss"] == pytest.approx(from_file["final_train_loss"],
                                                             rel=1e-6)
    assert from_python["final_test_accuracy"] == from_file["final_test_accuracy"]


def test_a_sample_that_changes_shape_is_an_error_naming_it():
    class Ragged(Blobs):
        def __getitem__(self, i):
            s = super().__getitem__(i)
            if i == 5:
                s["input"] = s["input"][:, :27]
            return s
    with pytest.raises(deep500.Error, match=r"sample 5 field 'input': float32\[1,27,28\], "
                                            r"expected float32\[1,28,28\]"):
        deep500.train(builtin="mlp", dataset=Ragged(64, 0), batch_size=16, progress=False,
                      prefetch_threads=0)
