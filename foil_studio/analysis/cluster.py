"""Scoring on a Ray cluster (`foil score --cluster ADDRESS`): what a run still lacks (the cache knows
which: an open_clip model's images and captions, a cross-encoder family's (image, caption) pairs, a
few images' pairs at a time) goes in batches to Ray actors, each of which loads the model once on its
own CPU or GPU slot; the driver stores each batch's vectors or scores as it comes back.

So a run stopped anywhere resumes with only what is missing: the driver killed (what it stored
stays), an actor killed (its batches run again on a fresh actor, up to `ClusterSpec.retries`
times), the cluster gone (run the command again). Nothing is written twice: a batch is stored once,
when its vectors arrive. The actors import this package, so every node needs foil-studio installed
(the same version as the driver) and the dataset's image root at the same path.

Ray is an optional extra (`pip install 'foil-studio[cluster]'`), imported only here.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from foil_studio.analysis.model_spec import ModelSpec

if TYPE_CHECKING:  # the CLI imports this module for its error: torch loads only in the actors and the driver's run
    import numpy as np
    import sqlite_utils

    from foil_studio.analysis.scorers.pairwise import PairChunk
    from foil_studio.analysis.scoring import Encoded, ImageSource, Progress

CLUSTER_INSTALL = "pip install 'foil-studio[cluster]'"
LOCAL = "local"  # a cluster of this machine, started for the run and stopped after it
MAX_ACTORS = 1024
MAX_RETRIES = 100


class ClusterError(RuntimeError):
    """Scoring on a cluster cannot start or cannot finish as asked (one line: what and the way out)."""


@dataclass(frozen=True)
class ClusterSpec:
    """Where and on what to score: Ray's `address` ("local", "auto" for the cluster this machine
    belongs to, "ray://HEAD:10001" for a remote one), how many actors, and each one's CPUs and GPUs."""

    address: str
    actors: int = 1
    cpus: float = 1
    gpus: float = 0
    retries: int = 3  # how many times one batch may be sent again after its actor died
    in_flight: int = 2  # batches waiting on each actor: the next is ready when one comes back

    def __post_init__(self) -> None:
        if not self.address.strip():
            raise ClusterError("the cluster's address is empty; give local, auto or ray://HEAD:10001")
        if not 1 <= self.actors <= MAX_ACTORS:
            raise ClusterError(f"actors must be from 1 to {MAX_ACTORS}, not {self.actors}")
        if not (0 < self.cpus <= 256 and 0 <= self.gpus <= 16):
            raise ClusterError(
                f"each actor needs more than 0 and at most 256 CPUs and 0 to 16 GPUs, not {self.cpus} and {self.gpus}"
            )
        if not 0 <= self.retries <= MAX_RETRIES or self.in_flight < 1:
            raise ClusterError(f"retries must be from 0 to {MAX_RETRIES} and in_flight at least 1")


def ray_module() -> Any:
    """Ray, or a one-line refusal that says how to install it."""
    try:
        import ray
    except ImportError:
        raise ClusterError(f"scoring on a cluster needs Ray, which is not installed: {CLUSTER_INSTALL}") from None
    return ray


class OpenClipWorker:
    """What each actor runs: one open_clip model loaded once, encoding the batches it is sent."""

    def __init__(self, spec: ModelSpec, device: str, cache_dir: str | None, threads: int) -> None:
        import torch

        from foil_studio.analysis.models import load_model

        torch.set_num_threads(max(1, threads))
        self.loaded = load_model(spec, device=device, cache_dir=cache_dir)

    def describe(self) -> dict[str, Any]:
        """What the driver records of the model: its identity (the cache's key), precision, spec and stamp."""
        loaded = self.loaded
        return {
            "identity": loaded.identity,
            "precision": loaded.spec.precision,
            "spec": loaded.spec,
            "stamp": loaded.stamp(),
            "reason": loaded.precision_reason,
        }

    def images(self, root: str | None, sources: list[ImageSource]) -> np.ndarray:
        from foil_studio.analysis.models import encode_images, preprocess_images
        from foil_studio.analysis.scoring import load_image

        images = [load_image(Path(root) if root else None, *source) for source in sources]
        return encode_images(self.loaded, preprocess_images(self.loaded, images))

    def texts(self, captions: list[str]) -> np.ndarray:
        from foil_studio.analysis.models import encode_texts

        return encode_texts(self.loaded, captions)

    def token_lengths(self, captions: list[str]) -> list[int]:
        from foil_studio.analysis.models import token_lengths

        return token_lengths(self.loaded, captions)


class FamilyWorker:
    """What each actor runs for a cross-encoder family: its model loaded once, scoring the pairs of the
    chunks it is sent."""

    def __init__(self, family: str, ref: str, precision: str, device: str, threads: int) -> None:
        import torch

        from foil_studio.analysis.scorers import scorer_family
        from foil_studio.analysis.scorers.pairwise import load_family

        torch.set_num_threads(max(1, threads))
        self.loaded = load_family(scorer_family(family), ref, precision, device)

    def describe(self) -> dict[str, Any]:
        """What the driver records of the model: its identity (the cache's key), run name and stamp."""
        from foil_studio.analysis.scorers.pairwise import LocalPairs

        local = LocalPairs(self.loaded)
        return {
            "identity": local.identity,
            "precision": self.loaded.precision,
            "run_name": local.run_name,
            "model": local.model,
            "stamp": local.stamp(),
            "facts": local.facts(),
        }

    def score(self, root: str | None, chunk: PairChunk, batch_size: int) -> dict[str, float]:
        from foil_studio.analysis.scorers.pairwise import LocalPairs

        scored: dict[str, float] = {}
        for part in LocalPairs(self.loaded).scored_chunks(Path(root) if root else None, [chunk], batch_size):
            scored |= part
        return scored


class ActorPool:
    """`size` actors made by `make`; batches are spread over them with `in_flight` waiting on each,
    and a batch whose actor died runs again on a fresh one (at most `retries` times a batch)."""

    def __init__(self, ray: Any, make: Any, size: int, retries: int, in_flight: int) -> None:
        self.ray, self.make, self.retries, self.in_flight = ray, make, retries, in_flight
        self.actors = [make() for _ in range(size)]
        self.identity: str | None = None  # the model every actor must hold, once the first ones said it

    def call_first(self, method: str, *args: Any) -> Any:
        """`method(*args)` on one actor, waited for (with the same retries as a batch)."""
        return next(result for _, result in self.map(method, [args], actors=1))

    def describe(self, actors: list[Any]) -> list[dict[str, Any]]:
        """What each of `actors` loaded, waited for; refused in one line, with the reason an actor
        gave, when one could not load the model."""
        try:
            return list(self.ray.get([actor.describe.remote() for actor in actors]))
        except self.ray.exceptions.RayActorError as error:
            if not getattr(error, "actor_init_failed", False):
                raise
            raise ClusterError(f"the actors could not load the model: {_raised_in_actor(error)}") from None

    def map(
        self, method: str, calls: list[tuple[Any, ...]], actors: int | None = None
    ) -> Generator[tuple[int, Any], None, None]:
        """`method(*call)` for each call, yielded as (the call's place, its result) as each comes back."""
        ray, slots = self.ray, list(range(actors or len(self.actors)))
        waiting: dict[Any, tuple[int, int]] = {}  # the result's ref -> (call, slot)
        per_slot = [0] * len(self.actors)  # the calls waiting on each slot's actor
        tries = [0] * len(calls)
        queue: Iterator[int] = iter(range(len(calls)))
        again: list[int] = []

        def fill(slot: int) -> None:
            while per_slot[slot] < self.in_flight:
                call = again.pop() if again else next(queue, None)
                if call is None:
                    return
                waiting[getattr(self.actors[slot], method).remote(*calls[call])] = (call, slot)
                per_slot[slot] += 1

        for slot in slots:
            fill(slot)
        while waiting:
            [ref], _ = ray.wait(list(waiting), num_returns=1)
            call, slot = waiting.pop(ref)
            per_slot[slot] -= 1
            try:
                result = ray.get(ref)
            except ray.exceptions.RayActorError as error:
                tries[call] += 1
                if tries[call] > self.retries:
                    raise ClusterError(
                        f"a batch failed {tries[call]} times, its actor lost each time ({_first_line(error)}); "
                        "what was scored is stored: run the command again to score the rest"
                    ) from None
                self._replace_dead(slot)
                again.append(call)
            else:
                yield call, result
            fill(slot)

    def _replace_dead(self, slot: int) -> None:
        """A fresh actor in `slot`, unless one already replaced the dead one (its other batches fail too)."""
        try:
            self.ray.get(self.actors[slot].describe.remote())
        except self.ray.exceptions.RayActorError:
            fresh = self.make()
            [found] = [described["identity"] for described in self.describe([fresh])]
            if self.identity is not None and found != self.identity:  # another node, another `auto` precision
                raise ClusterError(
                    "a fresh actor loaded the model differently from the others (`auto` precision chose per "
                    "device); give --precision"
                ) from None
            self.actors[slot] = fresh

    def close(self) -> None:
        for actor in self.actors:
            self.ray.kill(actor)


def _raised_in_actor(error: BaseException) -> str:
    """The message of the error an actor raised, from the last line of Ray's report ("Type: message")."""
    last = (str(error).strip().splitlines() or [type(error).__name__])[-1]
    return last.split(": ", 1)[-1]


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:200]


class OnActors:
    """What a run on the actors of `pool` records of the model the first actor described: its identity
    (the cache's key) and its stamp, with how many actors scored."""

    def __init__(self, pool: ActorPool, described: dict[str, Any]) -> None:
        self.pool = pool
        self.identity: str = described["identity"]
        self._stamp: dict[str, Any] = described["stamp"]

    def stamp(self) -> dict[str, Any]:
        return {**self._stamp, "actors": len(self.pool.actors)}


class ClusterEncoder(OnActors):
    """A `scoring.Encoder` whose batches run on the actors of `pool`."""

    def __init__(self, pool: ActorPool, described: dict[str, Any]) -> None:
        super().__init__(pool, described)
        self.spec: ModelSpec = described["spec"]
        self.precision_reason: str = described["reason"]

    def image_batches(self, root: Path | None, batches: list[list[ImageSource]]) -> Encoded:
        return self.pool.map("images", [(str(root) if root else None, batch) for batch in batches])

    def text_batches(self, batches: list[list[str]]) -> Encoded:
        return self.pool.map("texts", [(batch,) for batch in batches])

    def token_lengths(self, texts: list[str]) -> list[int]:
        return list(self.pool.call_first("token_lengths", texts))


class ClusterPairs(OnActors):
    """A `pairwise.PairRunner` whose chunks of pairs are scored on the actors of `pool`."""

    def __init__(self, pool: ActorPool, described: dict[str, Any]) -> None:
        super().__init__(pool, described)
        self.run_name: str = described["run_name"]
        self.model: str = described["model"]
        self._facts: dict[str, str] = described["facts"]

    def facts(self) -> dict[str, str]:
        return self._facts

    def scored_chunks(self, root: Path | None, chunks: list[PairChunk], batch_size: int) -> Iterator[dict[str, float]]:
        for _, scored in self.pool.map("score", [(str(root) if root else None, chunk, batch_size) for chunk in chunks]):
            yield scored


@contextmanager
def actors_on_cluster(
    cluster: ClusterSpec, worker: type, *arguments: Any
) -> Generator[tuple[ActorPool, dict[str, Any]], None, None]:
    """`cluster.actors` actors of `worker(*arguments, threads)`, each holding the model, for the time
    of the `with` block, and what the first one described; refused in one line when the actors
    loaded different models (`auto` precision on different devices)."""
    ray = ray_module()
    started = connect(ray, cluster)
    pool = None
    try:
        options: dict[str, Any] = {"num_cpus": cluster.cpus, "num_gpus": cluster.gpus, "max_restarts": 0}
        threads = max(1, int(cluster.cpus))  # torch's threads in each actor: the CPUs it holds, no more
        remote = ray.remote(worker).options(**options)
        pool = ActorPool(
            ray, lambda: remote.remote(*arguments, threads), cluster.actors, cluster.retries, cluster.in_flight
        )
        described = pool.describe(pool.actors)
        if len({d["identity"] for d in described}) > 1:
            precisions = sorted({d["precision"] for d in described})
            raise ClusterError(
                f"the actors loaded the model differently (precisions {', '.join(precisions)}: `auto` chose per "
                "device); give --precision"
            )
        pool.identity = described[0]["identity"]
        yield pool, described[0]
    finally:
        if pool is not None:
            pool.close()
        if started:
            ray.shutdown()


@contextmanager
def open_clip_on_cluster(
    cluster: ClusterSpec, spec: ModelSpec, device: str = "auto", cache_dir: str | None = None
) -> Generator[ClusterEncoder, None, None]:
    """A `scoring.Encoder` whose actors each hold `spec`'s open_clip model (`actors_on_cluster`)."""
    with actors_on_cluster(cluster, OpenClipWorker, spec, device, cache_dir) as (pool, described):
        yield ClusterEncoder(pool, described)


def connect(ray: Any, cluster: ClusterSpec) -> bool:
    """Join the cluster at `cluster.address` (or start one here for "local"); True when this call
    started Ray (and so stops it)."""
    if ray.is_initialized():
        return False
    quiet = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
    try:
        if cluster.address == LOCAL:
            # the actors are the run's work: Ray's default niceness for its workers (15) starves
            # them on a machine that is busy with anything else (imports alone took 3x as long)
            os.environ.setdefault("RAY_worker_niceness", "0")
            # Ray warns, before the command's own lines, that it enabled token authentication for the
            # cluster it starts (its default, which stays); that is no news for the user of one run
            logging.getLogger("ray._private.authentication.authentication_token_setup").setLevel(logging.ERROR)
            needed = cluster.actors * cluster.cpus
            ray.init(address="local", num_cpus=max(needed, os.cpu_count() or 1), **quiet)  # never one found here
        else:
            ray.init(address=cluster.address, **quiet)
    except (ConnectionError, RuntimeError, ValueError) as error:
        raise ClusterError(f"cannot reach the Ray cluster at {cluster.address}: {_first_line(error)}") from None
    return True


def score_on_cluster(
    db: sqlite_utils.Database,
    dataset: str,
    spec: ModelSpec,
    cluster: ClusterSpec,
    *,
    device: str = "auto",
    cache_dir: str | None = None,
    run: str | None = None,
    batch_size: int = 64,
    limit: int | None = None,
    progress: Progress | None = None,
    notify: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """`scoring.score_with_model` with the model loaded on the cluster's actors, which encode the
    batches: the report of `foil score --cluster ADDRESS --json`, with the cluster and its actors."""
    from foil_studio.analysis.scoring import say_skipped, scored_report

    say_skipped(db, dataset, limit, notify)
    with open_clip_on_cluster(cluster, spec, device, cache_dir) as encoder:
        report = scored_report(db, dataset, encoder, run=run, batch_size=batch_size, limit=limit, progress=progress)
        return {**report, "cluster": cluster.address, "actors": len(encoder.pool.actors)}


def score_family_on_cluster(
    db: sqlite_utils.Database,
    dataset: str,
    family: str,
    ref: str,
    cluster: ClusterSpec,
    *,
    precision: str = "auto",
    device: str = "auto",
    run: str | None = None,
    batch_size: int = 64,
    limit: int | None = None,
    progress: Progress | None = None,
    notify: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """`pairwise.score_with_family` with the model loaded on the cluster's actors, which score a few
    images' pairs at a time: the report of `foil score --model FAMILY:REF --cluster ADDRESS --json`."""
    from foil_studio.analysis.scorers.pairwise import check_family_run, score_dataset_pairs

    check_family_run(db, dataset, family, precision, limit, notify)
    with actors_on_cluster(cluster, FamilyWorker, family, ref, precision, device) as (pool, described):
        runner = ClusterPairs(pool, described)
        report = score_dataset_pairs(
            db, dataset, runner, run=run, batch_size=batch_size, limit=limit, progress=progress
        )
        return {**report.to_dict(), **runner.facts(), "cluster": cluster.address, "actors": len(pool.actors)}
