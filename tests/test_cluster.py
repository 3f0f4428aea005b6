"""Scoring on a Ray cluster (issue 54), on a local cluster the tests start: the same scores as one
process though an actor was killed mid-run, a driver killed mid-run resumes with only what is
missing, every image and caption encoded and stored once, and the refusals (`analysis.cluster`).
Slow (Ray's start, and each actor importing torch), so `make test-fast` leaves them out."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter

import numpy as np
import pytest
import ray

from foil_studio.analysis import models
from foil_studio.analysis.cluster import ClusterError, ClusterSpec, connect, open_clip_on_cluster
from foil_studio.analysis.model_spec import ModelSpec
from foil_studio.analysis.scoring import score_dataset, score_with_model
from foil_studio.data import store
from tests.conftest import FOIL_CLI, REPO

pytestmark = pytest.mark.slow

DATASET = "demo-sugarcrepe"
RANDOM_DEMO = ModelSpec(models.DEMO_ARCH, "none")  # random weights, the same in every process (seeded)
LIMIT = 60  # items scored: enough batches to kill something in the middle


@pytest.fixture(scope="module")
def local_cluster():
    """A Ray cluster of this machine for the module's in-process tests (each command-line test starts its own)."""
    assert connect(ray, ClusterSpec("local", actors=2))
    yield
    ray.shutdown()


def run_scores(db, run: str) -> dict[int, np.ndarray]:
    columns = store.run_columns(db, store.get_run(db, DATASET, run)["id"])
    assert columns.scores is not None
    return dict(zip(columns.item_ids.tolist(), columns.scores))


def scored_here(db, limit: int | None = LIMIT) -> dict[int, np.ndarray]:
    """The dataset (its first `limit` items) scored in this process, as the reference."""
    score_with_model(db, DATASET, RANDOM_DEMO, device="cpu", run="here", batch_size=8, limit=limit)
    return run_scores(db, "here")


def same_scores(got: dict[int, np.ndarray], expected: dict[int, np.ndarray]) -> None:
    """Item by item, to float rounding (fp32 on both sides)."""
    assert got.keys() == expected.keys() and expected
    for item, scores in expected.items():
        np.testing.assert_allclose(got[item], scores, atol=1e-5)


def count_stored(monkeypatch) -> Counter[str]:
    """How many times each embedding or pair score ("modality:key") is written to the store from now on."""
    stored: Counter[str] = Counter()
    put = store.put_embeddings

    def counted(db, model, modality, vectors):
        vectors = list(vectors)
        stored.update(f"{modality}:{key}" for key, _ in vectors)
        return put(db, model, modality, vectors)

    monkeypatch.setattr(store, "put_embeddings", counted)
    return stored


@pytest.mark.both_engines
def test_a_run_on_the_cluster_equals_the_run_in_one_process_though_an_actor_was_killed_mid_run(
    demo_db, fresh_db, local_cluster, monkeypatch
):
    store.copy_store(demo_db, fresh_db)
    expected = scored_here(fresh_db)
    stored = count_stored(monkeypatch)
    killed = []
    with open_clip_on_cluster(ClusterSpec("local", actors=2), RANDOM_DEMO, device="cpu") as encoder:

        def kill_once(stage: str, done: int, total: int) -> None:
            if not killed:
                killed.append(encoder.pool.actors[0])
                ray.kill(encoder.pool.actors[0])

        report = score_dataset(demo_db, DATASET, encoder, run="there", batch_size=4, limit=LIMIT, progress=kill_once)
        assert encoder.pool.actors[0] is not killed[0], "the dead actor was not replaced"
    assert report.n_images_encoded > 8 and report.cache_hits == 0
    meta = store.get_run(demo_db, DATASET, "there")["meta"]
    assert meta["actors"] == 2 and meta["model_identity"] == encoder.identity
    assert max(stored.values()) == 1, "an embedding was stored twice"
    assert len(stored) == report.n_images_encoded + report.n_texts_encoded
    same_scores(run_scores(demo_db, "there"), expected)


def test_a_batch_whose_actor_dies_more_often_than_allowed_is_refused_saying_what_to_do(demo_db, local_cluster):
    with open_clip_on_cluster(ClusterSpec("local", actors=1, retries=0), RANDOM_DEMO, device="cpu") as encoder:

        def kill(stage: str, done: int, total: int) -> None:
            ray.kill(encoder.pool.actors[0])

        with pytest.raises(ClusterError, match="run the command again to score the rest"):
            score_dataset(demo_db, DATASET, encoder, run="there", batch_size=4, limit=LIMIT, progress=kill)
    assert "there" not in store.run_names(demo_db, DATASET)


def embeddings_stored(db_file) -> int:
    return store.open_db(db_file)["embeddings"].count


def test_a_driver_killed_mid_run_resumes_with_only_what_is_missing(demo_store, tmp_path, fresh_db):
    db_file = tmp_path / "killed.db"
    store.open_db(demo_store).conn.execute("VACUUM INTO ?", [str(db_file)])
    before = embeddings_stored(db_file)
    command = [*FOIL_CLI, "score", DATASET, "--model", models.DEMO_ARCH, "--pretrained", "none", "--device", "cpu"]
    command += ["--precision", "fp32"]  # as the reference: `auto` is bf16 on a CPU that computes it natively
    # every item, one image or caption a batch: a run of seconds, stopped after its first few batches
    command += ["--batch-size", "1", "--cluster", "local", "--actors", "1", "--db", str(db_file)]
    driver = subprocess.Popen(command, cwd=REPO, start_new_session=True, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while embeddings_stored(db_file) < before + 2 and driver.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert driver.poll() is None, driver.stderr.read()[-2000:] if driver.stderr else ""
    finally:
        os.killpg(driver.pid, signal.SIGKILL)  # the driver and the local cluster it started, at once
        driver.wait()
    partial = embeddings_stored(db_file) - before
    assert store.run_names(store.open_db(db_file), DATASET) == store.run_names(store.open_db(demo_store), DATASET)
    again = [*command[: command.index("--batch-size")], "--batch-size", "16", *command[command.index("--cluster") :]]
    resumed = subprocess.run([*again, "--json"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    report = json.loads(resumed.stdout)
    assert report["cache_hits"] >= partial > 0, (report, partial)
    assert (
        embeddings_stored(db_file) - before
        == report["cache_hits"] + report["n_images_encoded"] + report["n_texts_encoded"]
    )
    store.copy_store(store.open_db(demo_store), fresh_db)
    same_scores(run_scores(store.open_db(db_file), report["run"]), scored_here(fresh_db, limit=None))


def test_the_cluster_settings_are_refused_in_one_line_when_out_of_bounds():
    for settings, said in [
        ({"address": " "}, "address is empty"),
        ({"address": "local", "actors": 0}, "actors must be from 1"),
        ({"address": "local", "cpus": 0}, "more than 0 and at most 256 CPUs"),
        ({"address": "local", "gpus": 17}, "0 to 16 GPUs"),
        ({"address": "local", "retries": -1}, "retries must be from 0"),
    ]:
        with pytest.raises(ClusterError, match=said):
            ClusterSpec(**settings)


def test_the_python_api_scores_on_a_cluster_as_the_command_does(demo_db, local_cluster):
    from foil_studio import api

    studio = api.Studio(demo_db)
    report = studio.score(DATASET, RANDOM_DEMO, run="api", limit=8, cluster=ClusterSpec("local"))
    assert (report["cluster"], report["actors"], report["n_items"]) == ("local", 1, 8)


@pytest.fixture(scope="module")
def tiny_blip(tmp_path_factory) -> str:
    from foil_studio.analysis.scorers import blip_itm

    return str(blip_itm.tiny_model(tmp_path_factory.mktemp("blip")))


@pytest.mark.both_engines
def test_a_family_run_on_the_cluster_equals_the_run_in_one_process_though_an_actor_was_killed_mid_run(
    demo_db, fresh_db, local_cluster, tiny_blip, monkeypatch
):
    """A cross-encoder family through the same actors: a few images' pairs a call, each pair stored once."""
    from foil_studio.analysis.cluster import ClusterPairs, FamilyWorker, actors_on_cluster
    from foil_studio.analysis.scorers.pairwise import score_dataset_pairs, score_with_family

    store.copy_store(demo_db, fresh_db)
    here = score_with_family(
        fresh_db, DATASET, "blip-itm", tiny_blip, precision="fp32", device="cpu", run="here", limit=24
    )
    stored = count_stored(monkeypatch)
    killed = []
    cluster = ClusterSpec("local", actors=2)
    with actors_on_cluster(cluster, FamilyWorker, "blip-itm", tiny_blip, "fp32", "cpu") as (pool, described):
        runner = ClusterPairs(pool, described)

        def kill_once(stage: str, done: int, total: int) -> None:
            if not killed:
                killed.append(pool.actors[0])
                ray.kill(pool.actors[0])

        report = score_dataset_pairs(demo_db, DATASET, runner, run="there", batch_size=2, limit=24, progress=kill_once)
        assert pool.actors[0] is not killed[0], "the dead actor was not replaced"
        assert runner.facts() == {k: here[k] for k in ("family", "rule", "precision", "precision_reason")}
    assert report.n_items == here["n_items"] == 24 and report.cache_hits == 0
    assert max(stored.values()) == 1, "a pair was stored twice"
    meta = store.get_run(demo_db, DATASET, "there")["meta"]
    assert (
        meta["actors"] == 2
        and meta["model_identity"] == store.get_run(fresh_db, DATASET, "here")["meta"]["model_identity"]
    )
    same_scores(run_scores(demo_db, "there"), run_scores(fresh_db, "here"))
    with actors_on_cluster(ClusterSpec("local"), FamilyWorker, "blip-itm", tiny_blip, "fp32", "cpu") as found:
        again = score_dataset_pairs(demo_db, DATASET, ClusterPairs(*found), run="again", batch_size=2, limit=24)
    assert again.cache_hits == len(stored) and again.n_images_encoded == 0  # every pair stored, none scored twice


def test_the_python_api_and_the_command_score_a_family_on_a_cluster(demo_store, tmp_path, tiny_blip):
    """The API through `score_family_on_cluster`; the command line on a local cluster of its own, taking
    every pair the API stored from the cache."""
    from foil_studio import api

    db_file = tmp_path / "family.db"
    store.open_db(demo_store).conn.execute("VACUUM INTO ?", [str(db_file)])
    studio = api.Studio(store.open_db(db_file))
    model = f"blip-itm:{tiny_blip}"
    first = studio.score(
        DATASET, model, precision="fp32", device="cpu", run="api", limit=8, cluster=ClusterSpec("local")
    )
    assert (first["cluster"], first["actors"], first["family"], first["n_items"]) == ("local", 1, "blip-itm", 8)
    command = [*FOIL_CLI, "score", DATASET, "--model", model, "--precision", "fp32", "--device", "cpu", "--limit", "8"]
    command += ["--cluster", "local", "--run", "cli", "--db", str(db_file), "--json"]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    again = json.loads(done.stdout)
    assert first["cache_hits"] == 0 and again["cache_hits"] > 0 and again["n_images_encoded"] == 0
    db = store.open_db(db_file)
    same_scores(run_scores(db, "cli"), run_scores(db, "api"))


class PerProcessWorker:
    """An actor whose model differs from one process to the next, as `auto` precision does on different devices."""

    def __init__(self, threads: int) -> None:
        self.pid = os.getpid()

    def describe(self) -> dict[str, str]:
        return {"identity": str(self.pid), "precision": f"p{self.pid}"}


class UnloadableWorker:
    """An actor whose model does not load: Ray reports the error raised, its last line the message."""

    def __init__(self, threads: int) -> None:
        raise ValueError("no weights on this node")

    def describe(self) -> dict[str, str]:
        return {}


def test_actors_that_loaded_the_model_differently_or_not_at_all_are_refused_in_one_line(local_cluster):
    from foil_studio.analysis.cluster import actors_on_cluster

    differently = pytest.raises(ClusterError, match="the actors loaded the model differently .*give --precision")
    with differently, actors_on_cluster(ClusterSpec("local", actors=2), PerProcessWorker):
        pass
    unloaded = pytest.raises(ClusterError, match="the actors could not load the model: no weights on this node$")
    with unloaded, actors_on_cluster(ClusterSpec("local"), UnloadableWorker):
        pass


def test_a_family_on_a_cluster_from_a_folder_that_does_not_exist_is_refused_in_one_line(demo_store, tmp_path):
    """`foil score --model blip-itm:/no/such/folder --cluster local`: the actor's own reason, on one line,
    and no run or score stored (a bad input of `--cluster`, here because it starts Ray)."""
    db_file = tmp_path / "refused.db"
    store.open_db(demo_store).conn.execute("VACUUM INTO ?", [str(db_file)])
    before = (store.run_names(store.open_db(db_file), DATASET), embeddings_stored(db_file))
    command = [*FOIL_CLI, "score", DATASET, "--model", "blip-itm:/no/such/folder", "--cluster", "local"]
    done = subprocess.run([*command, "--device", "cpu", "--db", str(db_file)], cwd=REPO, capture_output=True, text=True)
    assert done.returncode != 0 and not done.stdout
    assert done.stderr == (
        "error: the actors could not load the model: model folder /no/such/folder does not exist\n"
    ), done.stderr[-2000:]
    assert (store.run_names(store.open_db(db_file), DATASET), embeddings_stored(db_file)) == before
