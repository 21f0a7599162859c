"""Level 2 training and recipes from Python: the same task `deep500 train`
and `deep500 run` run."""
import json
import os

import pytest

import deep500


def test_train_lenet5_on_fashion_mnist_learns():
    out = deep500.train(builtin="lenet5", dataset="fashion-mnist", subset=8192, test_subset=1000,
                        epochs=1, batch_size=32, progress=False)
    assert out["epochs_completed"] == 1 and out["steps"] == 256
    assert out["final_test_accuracy"] > 0.5, out["summary"]  # 10 classes: chance is 0.1
    assert out["metrics"]["config"]["batch_size"] == 32
    assert out["summary"].startswith("deep500 train:")


def test_train_errors_name_the_field():
    with pytest.raises(deep500.Error, match="unknown field 'epoch'"):
        deep500.train(builtin="lenet5", dataset="fashion-mnist", epoch=1)
    with pytest.raises(deep500.Error, match="dataset nowhere:x"):
        deep500.train(builtin="lenet5", dataset="nowhere:x")


def test_run_recipe_runs_and_records_in_the_history(source_dir, tmp_path):
    r = deep500.run_recipe(str(source_dir / "recipes" / "fashion_mnist_mlp.yaml"),
                           ["training.seed=1"], output_dir=str(tmp_path))
    assert r["status"] == "passed", r["log"]
    assert r["run_id"] >= 1
    results = json.load(open(f"{r['results_dir']}/results.json"))
    assert results["status"] == "passed"


def test_run_recipe_from_python_starts_deep500_for_ensemble_members(source_dir, tmp_path):
    """Members in processes of their own are the deep500 executable, not this python."""
    r = deep500.run_recipe(str(source_dir / "recipes" / "fashion_mnist_mlp.yaml"),
                           ["ensemble.repeat=2", "ensemble.processes=2", "training.subset=3000",
                            "training.test_subset=500", "criteria=[test_accuracy >= 0.3 by epoch 1]"],
                           output_dir=str(tmp_path), label="from python")
    assert r["status"] == "passed", r["log"]
    assert "2 at a time, each a process of its own" in r["log"]
    runs = deep500.history(str(tmp_path / "history.sqlite"))
    # The members record themselves as they end (either may be first), the ensemble last.
    assert sorted(run["label"] for run in runs) == ["from python", "from python, training.seed=1",
                                                    "from python, training.seed=2"]
    assert max(runs, key=lambda run: run["id"])["label"] == "from python"


def test_a_recipe_override_with_a_typo_is_an_error(source_dir, tmp_path):
    with pytest.raises(deep500.Error, match="training.epoch"):
        deep500.run_recipe(str(source_dir / "recipes" / "fashion_mnist_mlp.yaml"),
                           ["training.epoch=2"], output_dir=str(tmp_path))


def test_history_results_and_comparison_of_recorded_runs(source_dir, tmp_path):
    recipe = str(source_dir / "recipes" / "fashion_mnist_mlp.yaml")
    history = str(tmp_path / "history.sqlite")
    a = deep500.run_recipe(recipe, ["training.seed=1"], output_dir=str(tmp_path))
    b = deep500.run_recipe(recipe, ["training.seed=1"], output_dir=str(tmp_path))
    runs = deep500.history(history, recipe="fashion_mnist_mlp")
    assert [r["id"] for r in runs] == [a["run_id"], b["run_id"]]
    assert runs[0]["status"] == "passed" and "test_accuracy" in runs[0]["metrics"]
    assert all(c["passed"] for c in runs[0]["criteria"])
    assert deep500.load_results(str(a["run_id"]), history)["status"] == "passed"
    c = deep500.compare_runs(str(a["run_id"]), str(b["run_id"]), history)
    accuracy = next(m for m in c["metrics"] if m["name"] == "test_accuracy")
    assert accuracy["a"] == accuracy["b"]  # same seed, same result
    assert "test_accuracy" in c["text"]
    with pytest.raises(deep500.Error, match="999"):
        deep500.load_results("999", history)


def test_a_recorded_reference_is_a_seed_ensemble_listing_its_members(source_dir, tmp_path):
    recipe = str(source_dir / "recipes" / "fashion_mnist_mlp.yaml")
    r = deep500.run_recipe(recipe, ["training.subset=3000", "training.test_subset=500",
                                    "criteria=[test_accuracy >= 0.3 by epoch 1]"],
                           output_dir=str(tmp_path), record_reference=2)
    assert r["status"] == "passed", r["log"]
    assert "batch_size: 64" in open(f"{r['results_dir']}/reference.yaml").read()
    runs = {x["id"]: x for x in deep500.history(str(tmp_path / "history.sqlite"))}
    assert [runs[i]["members"] for i in (1, 2, 3)] == [[], [], [1, 2]]
    assert r["run_id"] == 3
    accuracies = [runs[i]["metrics"]["test_accuracy"] for i in (1, 2)]
    assert runs[3]["metrics"]["test_accuracy"] == pytest.approx(sum(accuracies) / 2, abs=1e-12)


def test_scoreboard_and_plots_of_recorded_runs(source_dir, tmp_path):
    recipe = str(source_dir / "recipes" / "fashion_mnist_mlp.yaml")
    history = str(tmp_path / "history.sqlite")
    runs = [deep500.run_recipe(recipe, [f"training.batch_size={b}"], output_dir=str(tmp_path))
            for b in (32, 128)]
    board = deep500.scoreboard("test_accuracy:max,seconds:min", history,
                               plot_dir=str(tmp_path / "board"))
    assert [o["metric"] for o in board["objectives"]] == ["test_accuracy", "seconds"]
    assert sorted(e["run"] for e in board["entries"]) == sorted(r["run_id"] for r in runs)
    assert board["entries"][0]["front"] == 1 and board["left_out"] == []
    # Ranked within the front by test accuracy, and no run of a later front
    # beats a front-1 run on both objectives.
    values = {e["run"]: e["values"] for e in board["entries"]}
    for e in board["entries"]:
        if e["front"] > 1:
            assert any(v[0] >= e["values"][0] and v[1] <= e["values"][1]
                       for r, v in values.items() if r != e["run"])
    assert "Pareto front" in board["text"]
    assert (tmp_path / "board" / "scoreboard.png").stat().st_size > 0, board["plot"]
    assert json.load(open(tmp_path / "board" / "scoreboard.json"))["entries"] == board["entries"]
    note = deep500.plot([r["results_dir"] for r in runs], str(tmp_path / "plots"))
    assert (tmp_path / "plots" / "training_curves.png").stat().st_size > 0, note
    svg = (tmp_path / "plots" / "training_curves.svg").read_text()
    for r in runs:  # both runs overlaid: their legend entries
        assert os.path.basename(r["results_dir"]) in svg
    with pytest.raises(deep500.Error, match="no results folders"):
        deep500.plot([])
    # The A/B page of the two runs, and the history page.
    page = deep500.report([str(r["run_id"]) for r in runs], str(tmp_path / "ab.html"),
                          compare=True, history=history)
    text = open(page).read()
    assert text.startswith("<!DOCTYPE html>") and text.count('<section id="run-') == 2
    assert "<script" not in text and text.count("<svg") >= 1
    page = deep500.report(out=str(tmp_path / "history.html"), history_page=True, history=history)
    assert open(page).read().count("report</a>") == 2
    with pytest.raises(deep500.Error, match="expected two runs"):
        deep500.report(["1"], str(tmp_path / "x.html"), compare=True, history=history)
    with pytest.raises(deep500.Error, match="accuracy:maximum"):
        deep500.scoreboard("test_accuracy:maximum", history)
