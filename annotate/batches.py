"""Batches: choosing items, assigning them to annotators, serving queues, recording answers.

Assignment scheme (``plan_assignments``): every unit (an item, or one question of it) goes to
exactly ``overlap`` distinct annotators. Units are dealt one at a time; each takes the annotators
with the fewest units so far, ties broken first by how few units the candidate already shares
with the annotators chosen for this unit, then by a seeded random draw. Loads therefore differ
by at most one, and the shared units spread roughly evenly over annotator pairs (each pair within
about 30% of its even share), so with overlap 2 and A annotators every pair shares about
``2 * n_units / (A * (A - 1))`` units for its Cohen's kappa.
Gold units (known answers) go to every annotator, so each one's gold accuracy rests on all of them.
Each annotator's queue is shuffled with the seed: no two see items in the same order.
"""

from __future__ import annotations

import csv
import io
import json
import math
import random
import re
import secrets
import statistics
from collections import Counter
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import sqlite_utils

from annotate.task_types import (
    TASK_TYPES,
    Task,
    build_task,
    check_answer,
    expected_answer,
    is_correct,
    parts_for,
    task_type,
)
from annotate.gold import GOLD_PASS, fails_gold
from annotate.links import annotator_link, crowd_link
from data import store
from data.images import existing_image, thumbnail
from data.paths import thumbnail_dir

Unit = tuple[int, int]  # (item id, part)
PROLIFIC_ID_PATTERN = r"[0-9a-f]{24}"  # Prolific participant ids are 24 lower-case hex characters
DEFAULT_CONSENT = ("This study asks you to judge images and captions. Your answers are stored with your participant id and "
                   "used for research on vision-language benchmarks. You may stop at any time.")
PROLIFIC_COMPLETION_URL = "https://app.prolific.com/submissions/complete?cc={code}"  # Prolific's completion link
AGREEMENT_BOOTSTRAP, AGREEMENT_SEED = 1000, 0  # behind every agreement interval, wherever it is shown
MIN_SECONDS = 0.5  # an answer sooner than this after the whole item was on screen is refused (a held or doubled key)


class BatchError(store.StoreError):
    """A batch cannot be created or answered as asked."""


def plan_assignments(n_units: int, annotators: list[int], overlap: int, seed: int | str) -> list[list[int]]:
    """For each unit, the `overlap` distinct annotators who get it (see the module docstring)."""
    if overlap < 1 or overlap > len(annotators):
        raise BatchError(f"overlap {overlap} needs between 1 and {len(annotators)} annotators")
    rng = random.Random(f"assign:{seed}")
    load = Counter({a: 0 for a in annotators})
    shared: Counter[tuple[int, int]] = Counter()
    plan = []
    for _ in range(n_units):
        chosen: list[int] = []
        for _ in range(overlap):
            candidates = [a for a in annotators if a not in chosen]
            best = min(candidates, key=lambda a: (load[a], sum(shared[tuple(sorted((a, c)))] for c in chosen), rng.random()))
            chosen.append(best)
        for a in chosen:
            load[a] += 1
        for i, a in enumerate(chosen):
            for b in chosen[i + 1:]:
                shared[tuple(sorted((a, b)))] += 1
        plan.append(chosen)
    return plan


@dataclass(frozen=True)
class BatchSpec:
    """What the admin asks for when creating a batch."""

    dataset: str
    task: str
    annotators: tuple[str, ...]
    overlap: int = 2
    n: int | None = None
    categories: tuple[str, ...] = ()
    item_ids: tuple[int, ...] = ()
    gold_share: float = 0.0
    seed: int = 0
    name: str | None = None
    instructions: str | None = None
    lease_minutes: float = 30  # an item drawn but not answered this long goes to someone else
    min_seconds: float = MIN_SECONDS
    crowd_items: int | None = None  # crowd mode: items per worker who joins through the study link
    practice: int = 2  # crowd mode: practice items with feedback before the real ones
    gold_pass: float = GOLD_PASS  # gold accuracy (%) which an annotator must not fall below with 95% confidence (annotate.gold)
    max_participants: int | None = None  # crowd mode: cap on participants holding work (default: just enough)
    joins_per_minute: int = 20  # crowd mode: new participants accepted per minute
    idle_minutes: float = 5  # crowd mode: the no-show time: a participant idle this long returns their unopened units
    worker_id_pattern: str = PROLIFIC_ID_PATTERN  # crowd mode: what a plausible participant id looks like
    window: int = 2  # crowd mode: units a participant holds unanswered at most; more are dealt as they answer
    consent: str = DEFAULT_CONSENT  # crowd mode: what a participant agrees to before the first item
    completion_url: str = PROLIFIC_COMPLETION_URL  # crowd mode: where a finished participant goes, {code} filled in


def create_batch(db: sqlite_utils.Database, spec: BatchSpec) -> dict[str, Any]:
    """Choose items, assign them, store the batch; return the `batch create` JSON of cli.md."""
    if spec.task not in TASK_TYPES:
        raise BatchError(f"unknown task {spec.task!r}; expected one of {TASK_TYPES}")
    if not spec.annotators and spec.crowd_items is None:
        raise BatchError("a batch needs at least one annotator (or crowd mode)")
    if spec.crowd_items is not None and ("{code}" not in spec.completion_url or spec.window < 1 or not spec.consent.strip()):
        raise BatchError("a crowd study needs a completion URL with {code} in it, a window of 1 or more units, and a consent text")
    name = store.check_name("batch", spec.name or f"{spec.task}-{spec.dataset}-{secrets.token_hex(3)}")
    for annotator in spec.annotators:
        store.check_name("annotator", annotator)
    dataset = store.get_dataset(db, spec.dataset)
    candidates = _eligible_items(db, dataset["id"], spec)
    rng = random.Random(f"batch:{spec.seed}")
    chosen = candidates if spec.n is None else rng.sample(candidates, min(spec.n, len(candidates)))
    if not chosen:
        raise BatchError(f"no {'/'.join(task_type(spec.task).item_kinds)} items in {spec.dataset} match this batch")
    gold_items = _pick_gold(chosen, spec, rng)
    annotators = [store.ensure_annotator(db, annotator) for annotator in spec.annotators]
    config = {
        **{k: v for k, v in asdict(spec).items() if k not in ("name", "annotators", "item_ids")},
        "instructions": spec.instructions or task_type(spec.task).instructions,
        "completion_code": secrets.token_hex(4).upper(), "n_items": len(chosen),
    }
    rows = _assignment_rows([a["id"] for a in annotators], chosen, gold_items, spec) if annotators else []
    if spec.crowd_items is not None:
        config.update(_crowd_config(chosen, gold_items, candidates, spec, rng))
    with store.transaction(db):
        batch_id = store.create_batch(db, name, dataset["id"], spec.task, config)
        store.add_assignments(db, batch_id, rows)
        # Each batch hands out a link per annotator; links issued before stay valid.
        tokens = {a["id"]: a["token"] or store.issue_token(db, a["id"]) for a in annotators}
    counts = Counter(annotator for _, _, annotator, _, _ in rows)
    result = {
        "batch": name, "task": spec.task, "n_items": len(chosen), "overlap": spec.overlap,
        "annotators": [{"name": a["name"], "token": tokens[a["id"]], "url": annotator_link(None, tokens[a["id"]]), "n_assigned": counts[a["id"]]}
                       for a in annotators],
    }
    if spec.crowd_items is not None:
        result["crowd_url"] = crowd_link(None, config["crowd_token"])
    return result


def _crowd_config(
    chosen: list[dict[str, Any]], gold: set[int], candidates: list[dict[str, Any]], spec: BatchSpec, rng: random.Random
) -> dict[str, Any]:
    """The unit pool crowd workers draw from, practice items outside the batch, the codes and the cap."""
    units = [[i["id"], part, i["id"] in gold] for i in chosen for part in parts_for(spec.task, i["kind"])]
    in_batch = {i["id"] for i in chosen}
    practice_pool = [i["id"] for i in candidates if i["id"] not in in_batch and expected_answer(spec.task, i) is not None]
    n_regular = sum(not is_gold for _, _, is_gold in units)
    needed = max(1, math.ceil(n_regular * spec.overlap / max(1, spec.crowd_items or 1)))
    return {
        "units": units, "crowd_token": secrets.token_urlsafe(12), "screen_out_code": secrets.token_hex(4).upper(),
        "practice_items": rng.sample(practice_pool, min(spec.practice, len(practice_pool))),
        "max_participants": spec.max_participants or needed,
    }  # window, idle_minutes (the no-show time), consent and completion_url come with the spec


def join_crowd(
    db: sqlite_utils.Database, crowd_token: str, external_id: str, *, now: datetime | None = None
) -> dict[str, Any]:
    """Register a crowd worker (e.g. a Prolific PID) and deal them their first units; safe to repeat.

    Units are dealt on demand: a participant holds at most the study's `window` unanswered units
    and gets more as they answer (`draw`), so made-up ids that join and leave hold little, and
    only until the no-show time (`idle_minutes`) returns it. Refused with a BatchError saying why
    when the link is wrong, the id implausible, the participant returned the study, or the study
    is closed or full, too many people joined in the last minute, or no work is left. A
    participant who holds open work, or finished, gets a new session and nothing more.
    """
    batch = store.batch_by_crowd_token(db, crowd_token)
    if batch is None:
        raise BatchError("This study link is not valid.")
    worker_id = external_id.strip()
    if not re.fullmatch(batch["config"].get("worker_id_pattern", PROLIFIC_ID_PATTERN), worker_id):
        raise BatchError("This link does not carry a valid participant id. Open the study from the recruiting site.")
    name = f"crowd-{worker_id}"
    with store.transaction(db, row_locks=True):  # one joiner at a time: the cap and the rate hold under concurrency
        store.lock_batch(db, batch["id"])
        known = store.annotator_by_name(db, name)
        if known is not None and store.has_returned(db, batch["id"], known["id"]):
            raise BatchError("You returned this study, so it cannot be taken up again.")
        if known is None or not _holds_or_finished(db, batch, known["id"]):
            _check_study_open(db, batch, now or datetime.now(timezone.utc))
            worker = store.ensure_annotator(db, name, external_id=worker_id)
            if not _deal(db, batch, worker["id"], worker_id):
                raise BatchError("Every item of this study is taken right now. Please try again later.")
        else:
            worker = {**known, "token": None}
    return {**worker, "token": worker["token"] or store.issue_token(db, worker["id"])}  # older sessions stay valid


@dataclass(frozen=True)
class CrowdFinish:
    """What a crowd participant with nothing left in their queue is told.

    `code` is set only when their work is complete: every unit dealt to them answered and either
    their quota reached or nothing left in the study for them. Otherwise `answered` of `quota`
    were, and `dealt` new units were dealt now (0: none is free for them at the moment).
    """

    code: str | None
    passed: bool
    answered: int
    quota: int
    dealt: int = 0
    completion_url: str | None = None

    def sentence(self) -> str:
        """The participant's message, in words."""
        if self.code is not None:
            return (f"All done, thank you. Your completion code: {self.code}" if self.passed
                    else f"Thank you. Some attention checks were missed; your code: {self.code}")
        so_far = f"You answered {self.answered} of your {self.quota} items."
        if self.dealt:
            return f"{so_far} Here {'is 1 more item' if self.dealt == 1 else f'are {self.dealt} more items'}."
        return (f"{so_far} No item is free for you right now (others hold them), so there is no completion code yet: "
                "please come back in a few minutes, or return the study.")


def finish_crowd(db: sqlite_utils.Database, batch_name: str, annotator_id: int) -> CrowdFinish:
    """For a participant whose queue is empty: their code if their work is complete; else new
    units in place of those that went back to the pool (as many as are free)."""
    batch = store.get_batch(db, batch_name)
    with store.transaction(db, row_locks=True):
        store.lock_batch(db, batch["id"])
        answered, quota = _answered_and_quota(db, batch, annotator_id)
        if answered >= quota or _nothing_left_for(batch, annotator_id, store.batch_assignments(db, batch["id"])):
            code, passed = final_code(db, batch, annotator_id)
            url = batch["config"].get("completion_url", PROLIFIC_COMPLETION_URL).replace("{code}", code) if passed else None
            return CrowdFinish(code, passed, answered, quota, completion_url=url)
        dealt = 0 if store.has_returned(db, batch["id"], annotator_id) else _deal(db, batch, annotator_id, None)
    return CrowdFinish(None, True, answered, quota, dealt)


def return_study(db: sqlite_utils.Database, batch_name: str, annotator_id: int) -> int:
    """A participant returns the study (Prolific's "return"): their unanswered units go back to the
    pool at once, they get no code and cannot take the study up again; return how many units went back."""
    batch = store.get_batch(db, batch_name)
    with store.transaction(db, row_locks=True):
        store.lock_batch(db, batch["id"])
        return store.return_study(db, batch["id"], annotator_id)


def top_up(db: sqlite_utils.Database, batch: store.BatchRow, annotator_id: int) -> int:
    """Deal a crowd participant units up to the study's window as they answer (called by `draw`);
    return how many were dealt. Reads two counts and returns when nothing is due."""
    unanswered, held = store.open_units(db, batch["id"], annotator_id)
    quota = store.crowd_quota(db, batch["id"], annotator_id)
    if quota is None or unanswered >= batch["config"].get("window", 2) or held >= quota:
        return 0
    with store.transaction(db, row_locks=True):
        store.lock_batch(db, batch["id"])
        if store.has_returned(db, batch["id"], annotator_id):
            return 0
        return _deal(db, batch, annotator_id, None)


def _answered_and_quota(db: sqlite_utils.Database, batch: store.BatchRow, annotator_id: int) -> tuple[int, int]:
    unanswered, held = store.open_units(db, batch["id"], annotator_id)
    return held - unanswered, store.crowd_quota(db, batch["id"], annotator_id) or held


def _holds_or_finished(db: sqlite_utils.Database, batch: store.BatchRow, annotator_id: int) -> bool:
    """A known participant who holds open units, or reached their quota, is dealt nothing on joining again."""
    unanswered, held = store.open_units(db, batch["id"], annotator_id)
    quota = store.crowd_quota(db, batch["id"], annotator_id)
    return unanswered > 0 or (quota is not None and held - unanswered >= quota)


def _nothing_left_for(batch: store.BatchRow, annotator_id: int, current: list[dict[str, Any]]) -> bool:
    """No unit the participant has not answered can ever be dealt to them: every regular one is
    answered by as many others as the overlap asks, and every gold one answered by them."""
    config = batch["config"]
    answered = Counter((a["item_id"], a["part"]) for a in current if a["done"])
    theirs = {(a["item_id"], a["part"]) for a in current if a["annotator_id"] == annotator_id and a["done"]}
    return all((i, p) in theirs or (not gold and answered[(i, p)] >= config["overlap"]) for i, p, gold in config["units"])


def _deal(db: sqlite_utils.Database, batch: store.BatchRow, annotator_id: int, external_id: str | None) -> int:
    """Inside the batch's lock: deal a participant units up to the window (regular units short of
    their overlap, and gold), record their quota on their first deal; return how many were dealt."""
    config = batch["config"]
    current = store.batch_assignments(db, batch["id"])
    share = _crowd_share(batch, annotator_id, current)
    store.add_assignments(db, batch["id"], share)
    if external_id is not None:
        n_regular = sum(not gold for *_, gold in config["units"])
        quota = min(config["crowd_items"], n_regular) + sum(bool(gold) for *_, gold in config["units"])
        store.record_join(db, batch["id"], annotator_id, external_id, quota)
    return len(share)


def _check_study_open(db: sqlite_utils.Database, batch: store.BatchRow, moment: datetime) -> None:
    """Raise BatchError when a crowd study takes no new participant now (closed, full, or joined too fast)."""
    config = batch["config"]
    if batch.get("closed_at"):
        raise BatchError("This study is closed.")
    if store.participants_holding_work(db, batch["id"]) >= config.get("max_participants", 1 << 30):
        raise BatchError("This study is full right now. Places free up when others leave: please try again later.")
    recent = store.joins_since(db, batch["id"], store.timestamp(moment - timedelta(minutes=1)))
    if recent >= config.get("joins_per_minute", 20):
        raise BatchError("Too many people are joining this study at once. Please try again in a minute.")


def close_study(db: sqlite_utils.Database, batch_name: str, closed: bool = True) -> None:
    """Stop (or resume) taking new participants through a crowd study's link."""
    store.set_batch_closed(db, store.get_batch(db, batch_name)["id"], closed)


def study_joins(db: sqlite_utils.Database, batch_name: str) -> list[dict[str, Any]]:
    """Who joined a crowd study, when, and what they hold and answered (for the admin)."""
    return store.crowd_joins(db, store.get_batch(db, batch_name)["id"])


def _crowd_share(batch: store.BatchRow, worker_id: int, current: list[dict[str, Any]]) -> list[tuple[int, int, int, int, bool]]:
    """The next units of a participant, up to the window of unanswered ones: regular units short
    of their overlap that they never held, fewest holders first, while they are short of the
    items per participant, and gold units they never held, mixed in at seeded random places
    (each slot is gold with the share of gold among what they still lack)."""
    config = batch["config"]
    holders = Counter((a["item_id"], a["part"]) for a in current)
    mine = [a for a in current if a["annotator_id"] == worker_id]
    theirs = {(a["item_id"], a["part"]) for a in mine}
    room = config.get("window", 2) - sum(not a["done"] for a in mine)
    regular = sorted(((i, p) for i, p, gold in config["units"] if not gold and holders[(i, p)] < config["overlap"] and (i, p) not in theirs),
                     key=lambda unit: holders[unit])
    regular = regular[: max(0, config["crowd_items"] - sum(not a["is_gold"] for a in mine))]
    gold = [(i, p) for i, p, is_gold in config["units"] if is_gold and (i, p) not in theirs]
    rng = random.Random(f"queue:{config['seed']}:{worker_id}:{len(mine)}")
    rng.shuffle(gold)
    share = []
    while room > 0 and (regular or gold):
        pick_gold = bool(gold) and (not regular or rng.random() < len(gold) / (len(gold) + len(regular)))
        share.append((gold.pop(), True) if pick_gold else (regular.pop(0), False))
        room -= 1
    start = max((a["position"] for a in mine), default=-1) + 1
    return [(item, part, worker_id, start + n, is_gold) for n, ((item, part), is_gold) in enumerate(share)]


def practice_tasks(db: sqlite_utils.Database, batch: store.BatchRow, annotator_id: int) -> list[tuple[Task, store.ItemRow]]:
    """The crowd batch's practice questions (items outside the batch with known answers)."""
    items = store.items_by_id(db, batch["config"].get("practice_items", []))
    return [(build_task(batch["task"], items[i], 0, seed=f"practice:{annotator_id}"), items[i]) for i in batch["config"].get("practice_items", [])]


def final_code(db: sqlite_utils.Database, batch: store.BatchRow, annotator_id: int) -> tuple[str, bool]:
    """(code to show, passed): the completion code, or the screen-out code when gold checks fail.
    Only for complete work: `finish_crowd` calls it once every dealt unit is answered."""
    config = batch["config"]
    name = next(a["name"] for a in store.list_annotators(db) if a["id"] == annotator_id)
    row = next((r for r in batch_progress(db, batch["name"]) if r["annotator"] == name), None)
    failed = "screen_out_code" in config and row is not None and row["screened_out"]
    return (config["screen_out_code"], False) if failed else (config["completion_code"], True)


def _eligible_items(db: sqlite_utils.Database, dataset_id: int, spec: BatchSpec) -> list[store.ItemRow]:
    kinds = task_type(spec.task).item_kinds
    items = [i for i in store.list_items(db, dataset_id, limit=1 << 62) if i["kind"] in kinds]
    if spec.categories:
        items = [i for i in items if i["category"] in spec.categories]
    if spec.item_ids:
        wanted = set(spec.item_ids)
        items = [i for i in items if i["id"] in wanted]
    return items


def _pick_gold(items: list[store.ItemRow], spec: BatchSpec, rng: random.Random) -> set[int]:
    knowable = [i["id"] for i in items if expected_answer(spec.task, i) is not None]
    n_gold = min(len(knowable), round(spec.gold_share * len(items)))
    return set(rng.sample(knowable, n_gold))


def _assignment_rows(
    annotators: list[int], items: list[store.ItemRow], gold: set[int], spec: BatchSpec
) -> list[tuple[int, int, int, int, bool]]:
    units = [(item["id"], part) for item in items for part in parts_for(spec.task, item["kind"])]
    regular = [u for u in units if u[0] not in gold]
    plan = plan_assignments(len(regular), annotators, spec.overlap, spec.seed)
    queues: dict[int, list[tuple[Unit, bool]]] = {a: [] for a in annotators}
    for unit, holders in zip(regular, plan):
        for annotator in holders:
            queues[annotator].append((unit, False))
    for unit in (u for u in units if u[0] in gold):
        for annotator in annotators:
            queues[annotator].append((unit, True))
    rows = []
    for annotator, queue in queues.items():
        random.Random(f"queue:{spec.seed}:{annotator}").shuffle(queue)
        rows.extend((item, part, annotator, position, is_gold) for position, ((item, part), is_gold) in enumerate(queue))
    return rows


# --- serving a queue ---------------------------------------------------------------------------


@dataclass(frozen=True)
class QueueState:
    """Where an annotator stands in one batch: the next task (None when done) and progress.

    `started_at` is None until the item is drawn (`draw`): reading the queue starts no lease.
    """

    batch: store.BatchRow
    task: Task | None
    assignment_id: int | None
    started_at: str | None
    done: int
    assigned: int


def queue_state(db: sqlite_utils.Database, annotator_id: int, batch_name: str) -> QueueState:
    """The annotator's first unanswered item of the batch (a refresh resumes here). Reads only.

    An annotator whose every item went to others (leases ran out) holds nothing: 0 of 0.
    """
    return _queue_state(db, annotator_id, store.get_batch(db, batch_name))


def _queue_state(db: sqlite_utils.Database, annotator_id: int, batch: store.BatchRow) -> QueueState:
    # Scoped to this annotator's assignments (indexed), not the whole batch: this runs on every answer.
    mine = next((b for b in store.annotator_batches(db, annotator_id) if b["id"] == batch["id"]), None)
    if mine is None:
        return QueueState(batch, None, None, None, 0, 0)
    done, assigned = int(mine["done"]), int(mine["assigned"])
    upcoming = store.unanswered_assignments(db, annotator_id, batch["id"])
    if not upcoming:
        return QueueState(batch, None, None, None, done, assigned)
    nxt = upcoming[0]
    item = store.items_by_id(db, [nxt["item_id"]])[nxt["item_id"]]
    task = build_task(batch["task"], item, nxt["part"], seed=_task_seed(batch, annotator_id))
    return QueueState(batch, task, nxt["id"], nxt["opened_at"], done, assigned)


def draw(db: sqlite_utils.Database, annotator_id: int, batch_name: str) -> QueueState:
    """The annotator's next item as it is put on screen: its lease and timer start now (once).
    A crowd participant is first dealt units up to their window (`top_up`)."""
    batch = store.get_batch(db, batch_name)
    if "crowd_token" in batch["config"]:
        top_up(db, batch, annotator_id)
    state = _queue_state(db, annotator_id, batch)  # the batch read once per draw: this runs on every answer
    if state.assignment_id is None or state.started_at is not None:
        return state
    return replace(state, started_at=store.open_assignment(db, state.assignment_id))


def _task_seed(batch: store.BatchRow, annotator_id: int) -> str:
    return f"{batch['config']['seed']}:{annotator_id}"


def task_images(db: sqlite_utils.Database, batch: store.BatchRow, task: Task) -> list[tuple[str, Path | None]]:
    """The task's images as cached thumbnails of the files under the dataset's image root
    (None where a file is missing or unreadable)."""
    root_text = store.get_dataset(db, batch["dataset"])["image_root"]
    root = Path(root_text) if root_text else None
    where = store.location(db)
    cache = thumbnail_dir(where) if where else None
    files = [(label, existing_image(root, reference)) for label, reference in task.images]
    return [(label, thumbnail(path, cache) if path and cache else path) for label, path in files]


def submit_answer(
    db: sqlite_utils.Database, annotator_id: int, batch_name: str, task: Task, answer: dict[str, Any],
    *, flags: list[str] | None = None, comment: str = "", min_seconds: float = 0.0, require_shown: bool = False,
) -> bool:
    """Store one answer to the item `task` was built for; True if stored now, False if that item
    already had this annotator's answer (nothing is stored twice).

    Raises TaskError for an answer outside the task's options and store.LabelRefused when the
    item is not (or no longer) the annotator's, was never drawn for them, or was drawn less than
    `min_seconds` ago: nothing is stored then.
    """
    batch = store.get_batch(db, batch_name)
    clean = check_answer(task, answer)
    label = store.LabelWrite(
        batch["id"], task.item_id, task.part, annotator_id, task.type, clean, list(task.displayed_order),
        sorted(flags or []), comment.strip(),
    )
    return store.save_label(db, label, min_seconds=min_seconds, require_shown=require_shown)[1]


def mark_shown(db: sqlite_utils.Database, annotator_id: int, batch_name: str, item_id: int, part: int) -> bool:
    """The annotator's browser reports the whole item (every caption and image) on screen: the
    reading clock starts now (`submit_answer(..., require_shown=True)` counts from here)."""
    return store.mark_shown(db, store.get_batch(db, batch_name)["id"], item_id, part, annotator_id)


def upcoming_images(db: sqlite_utils.Database, annotator_id: int, batch_name: str, ahead: int = 2) -> list[Path]:
    """The image files (thumbnails) of the annotator's next `ahead` items after the current one,
    for the browser to decode before they are needed."""
    batch = store.get_batch(db, batch_name)
    following = store.unanswered_assignments(db, annotator_id, batch["id"], limit=ahead + 1)[1:]
    items = store.items_by_id(db, [a["item_id"] for a in following])
    tasks = [build_task(batch["task"], items[a["item_id"]], a["part"], seed=_task_seed(batch, annotator_id)) for a in following]
    return [path for task in tasks for _, path in task_images(db, batch, task) if path is not None]


# --- admin views -------------------------------------------------------------------------------


def batch_progress(db: sqlite_utils.Database, batch_name: str) -> list[dict[str, Any]]:
    """Per annotator: done, remaining, median seconds per item (people's answers, not simulated
    ones), gold accuracy and whether the
    gold answers screen them out (`annotate.gold`'s rule)."""
    batch = store.get_batch(db, batch_name)
    assignments = store.batch_assignments(db, batch["id"])
    labels = store.batch_labels(db, batch["id"])
    items = store.items_by_id(db, {label["item"] for label in labels if label["is_gold"]})
    rows = []
    for name in sorted({a["annotator"] for a in assignments}):
        mine = [a for a in assignments if a["annotator"] == name]
        answered = [lab for lab in labels if lab["annotator"] == name]
        seconds = [lab["seconds"] for lab in answered if lab["seconds"] is not None and SIMULATED not in (lab["flags"] or [])]  # a person's time only
        gold = [is_correct(batch["task"], items[lab["item"]], lab["part"], lab["answer"]) for lab in answered if lab["is_gold"]]
        gold = [g for g in gold if g is not None]
        rows.append({
            "annotator": name, "done": len(answered), "remaining": len(mine) - len(answered),
            "median_seconds": statistics.median(seconds) if seconds else None,
            "gold_n": len(gold), "gold_accuracy": 100.0 * sum(gold) / len(gold) if gold else None,
            "screened_out": fails_gold(sum(gold), len(gold), float(batch["config"].get("gold_pass", GOLD_PASS))),
        })
    return rows


def reissue_link(db: sqlite_utils.Database, annotator_name: str, *, revoke_old: bool) -> str:
    """A new link token for an annotator whose link was lost; with `revoke_old`, their earlier
    links stop working (a link that leaked), else they stay valid. Shown once: only its hash is kept."""
    annotator = store.annotator_by_name(db, annotator_name)
    if annotator is None:
        raise BatchError(f"no annotator named {annotator_name!r}")
    with store.transaction(db):
        if revoke_old:
            store.revoke_tokens(db, annotator["id"])
        return store.issue_token(db, annotator["id"])


def issue_links(db: sqlite_utils.Database, batch_name: str) -> list[dict[str, str]]:
    """A new link token for every annotator of a batch (for the admin to share; earlier links
    stay valid). Tokens are stored only as hashes, so a link can be shown only when issued."""
    batch = store.get_batch(db, batch_name)
    holders = sorted({(a["annotator"], a["annotator_id"]) for a in store.batch_assignments(db, batch["id"])})
    return [{"name": name, "token": store.issue_token(db, annotator_id)} for name, annotator_id in holders]


def export_labels(db: sqlite_utils.Database, batch_name: str, fmt: str) -> str:
    """All labels of a batch as JSONL or CSV text (answers and orders as JSON strings in CSV)."""
    rows = store.batch_labels(db, store.get_batch(db, batch_name)["id"])
    if fmt == "jsonl":
        return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    if fmt != "csv":
        raise BatchError(f"unknown label format {fmt!r}; expected jsonl or csv")
    buffer = io.StringIO()
    columns = ["annotator", "item", "source_id", "category", "part", "task", "answer", "displayed_order",
               "flags", "comment", "started_at", "submitted_at", "seconds", "is_gold"]
    writer = csv.DictWriter(buffer, columns, extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow({**row, **{k: json.dumps(row[k]) for k in ("answer", "displayed_order", "flags")}})
    return buffer.getvalue()


def reassign_stale(db: sqlite_utils.Database, batch_name: str, *, now: datetime | None = None) -> int:
    """Free the work annotators walked away from; return how many assignments moved.

    An item drawn longer than the lease ago and still unanswered goes to the annotator with the
    fewest open items among those who still have an open queue and lack that unit (or stays put
    when nobody has). In a crowd batch it returns to the pool instead, and so do the unopened
    units of a participant idle for ``idle_minutes``. One write transaction re-reads what is stale,
    so an answer stored a moment ago is never moved.
    """
    batch = store.get_batch(db, batch_name)
    moment = now or datetime.now(timezone.utc)
    config, crowd = batch["config"], "crowd_token" in batch["config"]
    opened_before = store.timestamp(moment - timedelta(minutes=config.get("lease_minutes", 30)))
    idle_before = store.timestamp(moment - timedelta(minutes=config.get("idle_minutes", 15))) if crowd else None
    if not store.stale_assignments(db, batch["id"], opened_before, idle_before):  # the common case: no lock taken
        return 0
    moved = 0
    # Labels are written under row locks (`store.save_label`): an answer stored while this runs
    # keeps its assignment, which then neither moves nor counts.
    with store.transaction(db, row_locks=True):
        store.lock_batch(db, batch["id"])
        for assignment in store.stale_assignments(db, batch["id"], opened_before, idle_before):
            if crowd:
                moved += store.delete_assignment(db, assignment["id"])
            elif (target := _reassignment_target(store.batch_assignments(db, batch["id"]), assignment)) is not None:
                moved += store.move_assignment(db, assignment["id"], *target)
    return moved


def _reassignment_target(current: list[dict[str, Any]], assignment: dict[str, Any]) -> tuple[int, int] | None:
    """(annotator, queue position) to take over a stale assignment: someone still working who
    lacks the unit, fewest open items first; None when nobody qualifies."""
    unit = (assignment["item_id"], assignment["part"])
    holders = {a["annotator_id"] for a in current if (a["item_id"], a["part"]) == unit}
    open_items = Counter(a["annotator_id"] for a in current if not a["done"])
    working = [a for a in open_items if a not in holders]
    if not working:
        return None
    target = min(working, key=lambda a: (open_items[a], a))
    last = max(a["position"] for a in current if a["annotator_id"] == target)
    return target, last + 1


# --- BiVLC construction: pick_image survivors become an ambiguity batch ---------------------------

# The task types whose batches' chosen images are built into a next step's batch (`TaskType.next_step`).
STEP_TASKS = tuple(name for name in TASK_TYPES if task_type(name).next_step)


def majority_choice(answers: list[str]) -> str | None:
    """The construction decision of one candidate set from its annotators' picks.

    Tie policy: any "none" among tied top answers drops the item (conservative, as BiVLC drops
    instances a human rejects); a tie between two images keeps the lower candidate index.

    >>> majority_choice(["2", "2", "none"]), majority_choice(["1", "none"]), majority_choice(["3", "1"])
    ('2', None, '1')
    """
    counts = Counter(answers)
    top = max(counts.values())
    tied = sorted(a for a, n in counts.items() if n == top)
    if "none" in tied:
        return None
    return tied[0]


def pick_image_survivors(db: sqlite_utils.Database, batch_name: str) -> list[tuple[dict[str, Any], int]]:
    """(candidate item, chosen candidate index) for every item the batch keeps: a batch of a task
    type with a next step (`TaskType.next_step`: pick_image)."""
    batch = store.get_batch(db, batch_name)
    if task_type(batch["task"]).next_step is None:
        raise BatchError(f"{batch_name} is a {batch['task']} batch, not {' or '.join(STEP_TASKS)}")
    answers: dict[int, list[str]] = {}
    for label in store.batch_labels(db, batch["id"]):
        if not label["is_gold"]:
            answers.setdefault(label["item"], []).append(label["answer"]["answer"])
    items = store.items_by_id(db, answers)
    chosen = {item_id: majority_choice(picks) for item_id, picks in answers.items()}
    return [(items[i], int(c)) for i, c in sorted(chosen.items()) if c is not None]


def create_ambiguity_batch(
    db: sqlite_utils.Database, pick_batch: str, *, annotators: tuple[str, ...], overlap: int = 2, seed: int = 0, name: str | None = None
) -> dict[str, Any]:
    """Turn the survivors of a pick_image batch into BiVLC groups and an ambiguity batch over them.

    The chosen candidate becomes each group's negative image I1; the source image and positive
    caption are I0 and C0. The groups form a new dataset `<candidates dataset>-constructed`.
    """
    from data.formats import Parsed
    from data.formats.made_here import CONSTRUCTION
    from data.items import Item
    from data.loading import store_parsed

    survivors = pick_image_survivors(db, pick_batch)
    if not survivors:
        raise BatchError(f"no item of {pick_batch} has a chosen image yet")
    source = store.get_dataset(db, store.get_batch(db, pick_batch)["dataset"])
    target = f"{source['name']}-constructed"
    parsed = Parsed(CONSTRUCTION.name, target)
    for item, choice in survivors:
        group = Item(
            kind="group", category=item["category"], source_id=f"{item['source_id']}#{choice}",
            captions=(item["meta"]["positive_caption"], item["captions"][0]),
            images=(item["meta"]["source_image"], item["images"][choice]),
            truth=_constructed_truth(item, choice),
            meta={"from_batch": pick_batch, "candidate_item": item["id"], "chosen": choice},
        )
        parsed.add(group, f"batch:{pick_batch}", item["id"])
    root = Path(source["image_root"]) if source["image_root"] else None
    store_parsed(db, parsed, kind=CONSTRUCTION.name, path=f"batch:{pick_batch}", images=root, name=target)
    ids = tuple(i["id"] for i in store.list_items(db, store.get_dataset(db, target)["id"], limit=1 << 62) if i["meta"].get("from_batch") == pick_batch)
    follow = task_type(store.get_batch(db, pick_batch)["task"]).next_step or ""  # ambiguity
    return create_batch(db, BatchSpec(target, follow, annotators, overlap, item_ids=ids, seed=seed, name=name))


def _constructed_truth(item: store.ItemRow, choice: int) -> dict[str, Any]:
    """Ground truth carried over from a candidate set, where the source knows it (the demo)."""
    truth = item.get("truth") or {}
    known = {"valid_choice": truth["valid"][choice]} if "valid" in truth else {}
    ambiguous = (truth.get("ambiguous_candidates") or {}).get(str(choice))
    return {**known, "ambiguous": ambiguous} if ambiguous is not None else known


# --- agreement and simulation -----------------------------------------------------------------------


def batch_agreement(db: sqlite_utils.Database, batch_name: str) -> dict[str, Any]:
    """The `cli.py agreement` report of a batch (gold items excluded: they test, not measure).

    Its intervals come from `AGREEMENT_BOOTSTRAP` resamples of items with seed 0, the one setting
    of the page, the CLI, the protocol paragraph and the exports, so a coefficient has one
    interval wherever it is shown (`bootstrap` in the report says which).
    """
    from annotate.agreement import task_agreement

    batch = store.get_batch(db, batch_name)
    labels = [label for label in store.batch_labels(db, batch["id"]) if not label["is_gold"]]
    report = task_agreement(labels, batch["task"], n_boot=AGREEMENT_BOOTSTRAP, seed=AGREEMENT_SEED)
    return {"batch": batch_name, **report, "bootstrap": {"resamples": AGREEMENT_BOOTSTRAP, "seed": AGREEMENT_SEED}}


SIMULATED = "simulated"  # the flag on every label `simulate` writes: no person's answer, no person's time


def simulate(
    db: sqlite_utils.Database, batch_name: str, *, accuracies: dict[str, float] | float = 0.9, n_annotators: int | None = None, seed: int = 0
) -> dict[str, Any]:
    """Answer a batch from ground truth with per-annotator noise, through the UI's write path.

    An annotator with accuracy p gives the known answer with probability p, else another option
    at random; where no truth is known, any option at random.
    """
    batch = store.get_batch(db, batch_name)
    names = sorted({a["annotator"] for a in store.batch_assignments(db, batch["id"])})[:n_annotators]
    written = Counter[str]()
    for name in names:
        annotator = store.ensure_annotator(db, name)
        accuracy = accuracies if isinstance(accuracies, float) else accuracies.get(name, 0.9)
        rng = random.Random(f"simulate:{seed}:{name}")
        while (state := draw(db, annotator["id"], batch_name)).task is not None:
            item = store.items_by_id(db, [state.task.item_id])[state.task.item_id]
            answer = _simulated_answer(state.task, item, accuracy, rng)
            written[name] += submit_answer(db, annotator["id"], batch_name, state.task, answer, flags=[SIMULATED])
    return {"batch": batch_name, "labels_written": dict(written)}


def _simulated_answer(task: Task, item: store.ItemRow, accuracy: float, rng: random.Random) -> dict[str, str]:
    values = [o.value for o in task.options]
    right = expected_answer(task.type, item, task.part)
    if right is None or rng.random() >= accuracy:
        wrong = {q: rng.choice([v for v in values if right is None or v != right.get(q)] or values) for q in task.questions}
        return wrong
    return right


def extend_disagreements(db: sqlite_utils.Database, batch_name: str) -> int:
    """Adaptive overlap: each question whose annotators disagree gets one more annotator.

    The extra annotator is the least loaded one of the batch who does not hold that question;
    unanimous questions are left alone (accepted without review). Returns how many were added.
    """
    batch = store.get_batch(db, batch_name)
    current = store.batch_assignments(db, batch["id"])
    answers: dict[Unit, set[str]] = {}
    for label in store.batch_labels(db, batch["id"]):
        if not label["is_gold"]:
            answers.setdefault((label["item"], label["part"]), set()).add(json.dumps(label["answer"], sort_keys=True))
    disputed = [unit for unit, seen in answers.items() if len(seen) > 1]
    load = Counter(a["annotator_id"] for a in current if not a["done"])
    everyone = sorted({a["annotator_id"] for a in current})
    rows = []
    for unit in disputed:
        holders = {a["annotator_id"] for a in current if (a["item_id"], a["part"]) == unit} | {r[2] for r in rows if (r[0], r[1]) == unit}
        free = [a for a in everyone if a not in holders]
        if not free:
            continue
        extra = min(free, key=lambda a: (load[a], a))
        load[extra] += 1
        position = max((a["position"] for a in current if a["annotator_id"] == extra), default=-1) + 1 + sum(r[2] == extra for r in rows)
        rows.append((unit[0], unit[1], extra, position, False))
    with store.transaction(db):
        store.add_assignments(db, batch["id"], rows)
    return len(rows)


def agreement_by_category(db: sqlite_utils.Database, batch_name: str) -> list[dict[str, Any]]:
    """Percent agreement, mean Cohen's kappa and Krippendorff's alpha per item category."""
    from annotate.agreement import task_agreement

    batch = store.get_batch(db, batch_name)
    labels = [label for label in store.batch_labels(db, batch["id"]) if not label["is_gold"]]
    rows = []
    for category in sorted({label["category"] for label in labels}):
        report = task_agreement([x for x in labels if x["category"] == category], batch["task"], n_boot=0)
        rows.append({"category": category, "n_items": report["n_items"], "percent_agreement": report["percent_agreement"],
                     "cohen_mean": report["cohen_mean"], "krippendorff_alpha": report["krippendorff_alpha"], "gwet_ac1": report["gwet_ac1"]})
    return rows
