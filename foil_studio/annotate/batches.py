"""Batches: what the admin asks for (`BatchSpec`), choosing items, assigning them to annotators
and storing the batch (`create_batch`), more overlap where annotators disagree, and the links.

Assignment scheme (``plan_assignments``): every unit (an item, or one question of it) goes to
exactly ``overlap`` distinct annotators. Units are dealt one at a time; each takes the annotators
with the fewest units so far, ties broken first by how few units the candidate already shares
with the annotators chosen for this unit, then by a seeded random draw. Loads therefore differ
by at most one, and the shared units spread roughly evenly over annotator pairs (each pair within
about 30% of its even share), so with overlap 2 and A annotators every pair shares about
``2 * n_units / (A * (A - 1))`` units for its Cohen's kappa.
Gold units (known answers) go to every annotator, so each one's gold accuracy rests on all of them.
Each annotator's queue is shuffled with the seed: no two see items in the same order.
Serving the queues is `annotate.queues`, crowd studies `annotate.crowd_studies`, what the admin reads
off a batch `annotate.batch_reports`, BiVLC construction `annotate.construction`, simulated
annotators `annotate.simulation`.
"""

from __future__ import annotations

import json
import math
import random
import secrets
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

import sqlite_utils

from foil_studio.annotate.gold import GOLD_PASS
from foil_studio.annotate.links import annotator_link, crowd_link
from foil_studio.annotate.task_types import TASK_TYPES, expected_answer, parts_for, task_type
from foil_studio.data import store

Unit = tuple[int, int]  # (item id, part)
PROLIFIC_ID_PATTERN = r"[0-9a-f]{24}"  # Prolific participant ids are 24 lower-case hex characters
DEFAULT_CONSENT = (
    "This study asks you to judge images and captions. Your answers are stored with your participant id and "
    "used for research on vision-language benchmarks. You may stop at any time."
)
PROLIFIC_COMPLETION_URL = "https://app.prolific.com/submissions/complete?cc={code}"  # Prolific's completion link
MIN_SECONDS = 0.5  # an answer sooner than this after the whole item was on screen is refused (a held or doubled key)


class BatchError(store.StoreError):
    """A batch cannot be created or answered as asked."""


def _pair(a: int, b: int) -> tuple[int, int]:
    """Two annotators as an unordered pair (the key of how many units they share)."""
    return (a, b) if a <= b else (b, a)


def check_overlap(overlap: int, n_annotators: int) -> None:
    """Each unit goes to `overlap` different annotators: from 1 to as many as there are."""
    if overlap < 1 or overlap > n_annotators:
        raise BatchError(f"overlap {overlap} with {n_annotators} annotators; expected from 1 to {n_annotators}")


def plan_assignments(n_units: int, annotators: list[int], overlap: int, seed: int | str) -> list[list[int]]:
    """For each unit, the `overlap` distinct annotators who get it (see the module docstring)."""
    check_overlap(overlap, len(annotators))
    rng = random.Random(f"assign:{seed}")
    load = Counter({a: 0 for a in annotators})
    shared: Counter[tuple[int, int]] = Counter()
    plan = []
    for _ in range(n_units):
        chosen: list[int] = []
        for _ in range(overlap):
            candidates = [a for a in annotators if a not in chosen]
            best = min(candidates, key=lambda a: (load[a], sum(shared[_pair(a, c)] for c in chosen), rng.random()))
            chosen.append(best)
        for a in chosen:
            load[a] += 1
        for i, a in enumerate(chosen):
            for b in chosen[i + 1 :]:
                shared[_pair(a, b)] += 1
        plan.append(chosen)
    return plan


@dataclass(frozen=True)
class BatchSpec:
    """What the admin asks for when creating a batch."""

    dataset: str
    task_type: str
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
    gold_pass: float = (
        GOLD_PASS  # gold accuracy (%) which an annotator must not fall below with 95% confidence (annotate.gold)
    )
    max_participants: int | None = None  # crowd mode: cap on participants holding work (default: just enough)
    joins_per_minute: int = 20  # crowd mode: participants who take their place (first units) per minute
    # crowd mode: the no-show time: a participant idle this long returns their unopened units, and
    # every unit (the opened one too) when they answered nothing
    idle_minutes: float = 5
    worker_id_pattern: str = PROLIFIC_ID_PATTERN  # crowd mode: what a plausible participant id looks like
    window: int = 2  # crowd mode: units a participant holds unanswered at most; more are dealt as they answer
    consent: str = DEFAULT_CONSENT  # crowd mode: what a participant agrees to before the first item
    completion_url: str = PROLIFIC_COMPLETION_URL  # crowd mode: where a finished participant goes, {code} filled in
    health: dict[str, Any] | None = None  # a benchmark-health sample's design (`annotate.health`)


# Every setting's default, in one place: the page, the CLI and the readers of stored batches use these.
SPEC_DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(BatchSpec)}


def setting(config: Mapping[str, Any], key: str) -> Any:
    """A stored batch's setting (`batch["config"]`), or BatchSpec's default where the batch was
    stored before the setting existed."""
    return config.get(key, SPEC_DEFAULTS[key])


def create_batch(db: sqlite_utils.Database, spec: BatchSpec) -> dict[str, Any]:
    """Choose items, assign them, store the batch; return the `batch create` JSON (README, Command line)."""
    if spec.task_type not in TASK_TYPES:
        raise BatchError(f"unknown task type {spec.task_type!r}; expected one of {TASK_TYPES}")
    if not spec.annotators and spec.crowd_items is None:
        raise BatchError("a batch needs at least one annotator (or crowd mode)")
    if spec.crowd_items is not None and (
        "{code}" not in spec.completion_url or spec.window < 1 or not spec.consent.strip()
    ):
        raise BatchError(
            "a crowd study needs a completion URL with {code} in it, a window of 1 or more units, and a consent text"
        )
    name = store.check_name("batch", spec.name or f"{spec.task_type}-{spec.dataset}-{secrets.token_hex(3)}")
    for annotator in spec.annotators:
        store.check_name("annotator", annotator)
    if spec.crowd_items is None:  # before any annotator is created: a refused batch stores nothing
        check_overlap(spec.overlap, len(spec.annotators))
    dataset = store.get_dataset(db, spec.dataset)
    candidates = _eligible_items(db, dataset["id"], spec)
    rng = random.Random(f"batch:{spec.seed}")
    chosen = candidates if spec.n is None else rng.sample(candidates, min(spec.n, len(candidates)))
    if not chosen:
        raise BatchError(
            f"no {'/'.join(task_type(spec.task_type).item_kinds)} items in {spec.dataset} match this batch"
        )
    gold_items = _pick_gold(chosen, spec, rng)
    annotators = [store.ensure_annotator(db, annotator) for annotator in spec.annotators]
    drawn = (spec.health or {}).get("items", {})  # a health design's items go to rows, not into the config
    config = {
        **{k: v for k, v in asdict(spec).items() if k not in ("name", "annotators", "item_ids", "health")},
        **({"health": {k: v for k, v in spec.health.items() if k != "items"}} if spec.health else {}),
        "instructions": spec.instructions or task_type(spec.task_type).instructions,
        "completion_code": secrets.token_hex(4).upper(),
        "n_items": len(chosen),
    }
    rows = _assignment_rows([a["id"] for a in annotators], chosen, gold_items, spec) if annotators else []
    if spec.crowd_items is not None:
        config.update(_crowd_config(chosen, gold_items, candidates, spec, rng))
    with store.transaction(db):
        batch_id = store.create_batch(db, name, dataset["id"], spec.task_type, config)
        store.add_assignments(db, batch_id, rows)
        store.add_health_items(db, batch_id, [(int(i), e["category"], e["inclusion"]) for i, e in drawn.items()])
        # Each batch hands out a link per annotator; links issued before stay valid.
        tokens = {a["id"]: a["token"] or store.issue_token(db, a["id"]) for a in annotators}
    counts = Counter(annotator for _, _, annotator, _, _ in rows)
    result = {
        "batch": name,
        "task_type": spec.task_type,
        "n_items": len(chosen),
        "overlap": spec.overlap,
        "annotators": [
            {
                "name": a["name"],
                "token": tokens[a["id"]],
                "url": annotator_link(None, tokens[a["id"]]),
                "n_assigned": counts[a["id"]],
            }
            for a in annotators
        ],
    }
    if spec.crowd_items is not None:
        result["crowd_url"] = crowd_link(None, config["crowd_token"])
    return result


def _crowd_config(
    chosen: list[store.ItemRow], gold: set[int], candidates: list[store.ItemRow], spec: BatchSpec, rng: random.Random
) -> dict[str, Any]:
    """The unit pool crowd workers draw from, practice items outside the batch, the codes and the cap."""
    units = [[i["id"], part, i["id"] in gold] for i in chosen for part in parts_for(spec.task_type, i)]
    in_batch = {i["id"] for i in chosen}
    practice_pool = [
        i["id"] for i in candidates if i["id"] not in in_batch and expected_answer(spec.task_type, i) is not None
    ]
    n_regular = sum(not is_gold for _, _, is_gold in units)
    needed = max(1, math.ceil(n_regular * spec.overlap / max(1, spec.crowd_items or 1)))
    return {
        "units": units,
        "crowd_token": secrets.token_urlsafe(12),
        "screen_out_code": secrets.token_hex(4).upper(),
        "practice_items": rng.sample(practice_pool, min(spec.practice, len(practice_pool))),
        "max_participants": spec.max_participants or needed,
    }  # window, idle_minutes (the no-show time), consent and completion_url come with the spec


def _eligible_items(db: sqlite_utils.Database, dataset_id: int, spec: BatchSpec) -> list[store.ItemRow]:
    kinds = task_type(spec.task_type).item_kinds
    if spec.item_ids:  # only these decoded (a health batch of 100 decoded a million items: 40 s)
        chosen = store.items_by_id(db, spec.item_ids, dataset_id=dataset_id)
        listed = [chosen[item_id] for item_id in sorted(chosen)]  # in import order, as list_items gives them
    else:
        listed = store.list_items(db, dataset_id, limit=1 << 62)
    items = [i for i in listed if i["kind"] in kinds]
    if spec.categories:
        items = [i for i in items if i["category"] in spec.categories]
    return items


def _pick_gold(items: list[store.ItemRow], spec: BatchSpec, rng: random.Random) -> set[int]:
    knowable = [i["id"] for i in items if expected_answer(spec.task_type, i) is not None]
    n_gold = min(len(knowable), round(spec.gold_share * len(items)))
    return set(rng.sample(knowable, n_gold))


def _assignment_rows(
    annotators: list[int], items: list[store.ItemRow], gold: set[int], spec: BatchSpec
) -> list[tuple[int, int, int, int, bool]]:
    units = [(item["id"], part) for item in items for part in parts_for(spec.task_type, item)]
    regular = [u for u in units if u[0] not in gold]
    plan = plan_assignments(len(regular), annotators, spec.overlap, spec.seed)
    queues: dict[int, list[tuple[Unit, bool]]] = {a: [] for a in annotators}
    for unit, holders in zip(regular, plan):
        for annotator in holders:
            queues[annotator].append((unit, False))
    for unit in (u for u in units if u[0] in gold):
        for annotator in annotators:
            queues[annotator].append((unit, True))
    rows: list[tuple[int, int, int, int, bool]] = []
    for annotator, queue in queues.items():
        random.Random(f"queue:{spec.seed}:{annotator}").shuffle(queue)
        rows.extend(
            (item, part, annotator, position, is_gold) for position, ((item, part), is_gold) in enumerate(queue)
        )
    return rows


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
    rows: list[tuple[int, int, int, int, bool]] = []
    for unit in disputed:
        holders = {a["annotator_id"] for a in current if (a["item_id"], a["part"]) == unit} | {
            r[2] for r in rows if (r[0], r[1]) == unit
        }
        free = [a for a in everyone if a not in holders]
        if not free:
            continue
        extra = min(free, key=lambda a: (load[a], a))
        load[extra] += 1
        position = (
            max((a["position"] for a in current if a["annotator_id"] == extra), default=-1)
            + 1
            + sum(r[2] == extra for r in rows)
        )
        rows.append((unit[0], unit[1], extra, position, False))
    with store.transaction(db):
        store.add_assignments(db, batch["id"], rows)
    return len(rows)


def issue_links(db: sqlite_utils.Database, batch_name: str) -> list[dict[str, str]]:
    """A new link token for every annotator of a batch (for the admin to share; earlier links
    stay valid). Tokens are stored only as hashes, so a link can be shown only when issued."""
    batch = store.get_batch(db, batch_name)
    holders = sorted({(a["annotator"], a["annotator_id"]) for a in store.batch_assignments(db, batch["id"])})
    return [{"name": name, "token": store.issue_token(db, annotator_id)} for name, annotator_id in holders]


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
