"""A dataset's health sample: stratified draws of its negatives sent to validate_negative batches
(each batch records its design) and each drawn item's outcome from its validations.

Several health batches of one dataset make one sample: each draws, per category, at random from
the items no earlier health batch drew, so the union is a simple random sample per stratum and
every drawn item's inclusion probability is (items drawn in its stratum) / (items in it). An
active batch (`health next --strategy active`) draws instead with probabilities that grow with a
predictor's uncertainty, each recorded given the batches before (`analysis.active_sampling`); a
sample with one is estimated round by round (`rounds`).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import sqlite_utils

from foil_studio.analysis import health as h
from foil_studio.analysis.active_sampling import FLOOR_SHARE, active_inclusion, uncertainty
from foil_studio.analysis.results import load_run, run_family, source_format
from foil_studio.annotate.batches import BatchError, BatchSpec, create_batch
from foil_studio.annotate.consensus import dawid_skene, decisions
from foil_studio.annotate.task_types import negative_validation
from foil_studio.data import store
from foil_studio.data.item_kinds import CAPTION_PAIR_KINDS
from foil_studio.data.reading import whole_number_problem

VALIDATION = negative_validation()  # the task health batches ask, and the verdict each answer gives
TASK = VALIDATION.name
# One negative per item, so that an item's outcome is its negative's (a retrieval item's several
# negatives would each need a share of their own).
HEALTH_KINDS = CAPTION_PAIR_KINDS
DESIGN_KEY = "health"  # the batch setting that holds a health sample's design
TARGETS = ("share", "rank")
# How `health next` draws within a category: at random (the categories' sizes by Neyman allocation),
# or with probabilities that grow with a predictor's uncertainty (`analysis.active_sampling`).
STRATEGIES = ("neyman", "active")
# The shares the report estimates, by the outcomes each counts (the names `TruthKey.measures` uses),
# with the report's key and the words for it.
SHARES = {
    "invalid": ("invalid_share", "invalid"),
    "ambiguous": ("ambiguous_share", "ambiguous"),
    "invalid+ambiguous": ("invalid_or_ambiguous_share", "invalid or ambiguous"),
}


class HealthError(BatchError):
    """A health sample or report cannot be made as asked."""


@dataclass(frozen=True)
class SamplePlan:
    """The next draw: per category its size N_c, the items drawn before, and the new items."""

    dataset: str
    allocation: str
    target: str
    seed: int
    sizes: dict[str, int]
    before: dict[str, int]
    drawn: dict[str, list[int]]
    strategy: str = "neyman"
    predictions: str | None = None  # the prediction set an active draw followed
    inclusion: dict[int, float] | None = None  # an active draw's probabilities given the batches before
    expected: dict[str, int] | None = None  # an active draw's allocation: the items expected per category

    @property
    def item_ids(self) -> list[int]:
        """Every newly drawn item, category by category."""
        return [item for items in self.drawn.values() for item in items]

    def design(self) -> dict[str, Any]:
        """What the batch records: strata sizes, sample sizes before and now, each new item's
        category and inclusion probability (of the sample as it stands after this draw), the seed."""
        strata = {
            c: {
                "size": self.sizes[c],
                "before": self.before.get(c, 0),
                "drawn": len(self.drawn.get(c, [])),
                **({"expected": self.expected.get(c, 0)} if self.expected is not None else {}),
            }
            for c in self.sizes
        }
        active = {"strategy": "active", "predictions": self.predictions, "floor_share": FLOOR_SHARE}
        return {
            "allocation": self.allocation,
            "target": self.target,
            "seed": self.seed,
            **(active if self.strategy == "active" else {}),
            "strata": strata,
            "items": {
                str(item): {"category": c, "inclusion": self._inclusion(item, c, len(items))}
                for c, items in self.drawn.items()
                for item in items
            },
        }

    def _inclusion(self, item: int, category: str, drawn: int) -> float:
        """A random draw's: of the sample as it stands after it; an active draw's: given the batches before."""
        if self.inclusion is not None:
            return round(self.inclusion[item], 9)
        return round((self.before.get(category, 0) + drawn) / self.sizes[category], 6)


def sampling_frame(db: sqlite_utils.Database, dataset: str) -> dict[str, list[int]]:
    """Category -> the ids of the dataset's items a validate_negative batch can ask about."""
    frame: dict[str, list[int]] = {}
    kinds = HEALTH_KINDS
    for item, category in store.item_strata(db, store.get_dataset(db, dataset)["id"], kinds):
        frame.setdefault(category, []).append(item)
    if not frame:
        raise HealthError(f"{dataset} has no items with a negative to validate ({'/'.join(kinds)} items)")
    return frame


def health_batches(db: sqlite_utils.Database, dataset: str) -> list[store.BatchRow]:
    """The dataset's health sample batches, oldest first."""
    return store.batches_with_setting(db, store.get_dataset(db, dataset)["id"], DESIGN_KEY)


def drawn_items(db: sqlite_utils.Database, dataset: str) -> dict[int, str]:
    """Item -> category of every item a health batch of the dataset drew."""
    return _drawn(db, health_batches(db, dataset))


def batch_design(db: sqlite_utils.Database, batch_name: str) -> dict[str, Any]:
    """A health batch's design as recorded: allocation, target, seed, strata and, per drawn item
    (`store.health_items`), its category and inclusion probability."""
    batch = store.get_batch(db, batch_name)
    items = {str(i): {"category": c, "inclusion": p} for _, i, c, p in store.health_items(db, [batch["id"]])}
    return {**batch["config"][DESIGN_KEY], "items": items}


def item_outcomes(db: sqlite_utils.Database, dataset: str) -> dict[int, str]:
    """Item -> valid / invalid / ambiguous for every drawn item its validations decide: the
    majority answer (annotators screened out by gold left out), an admin's decision where one was
    made, a tie or a majority of "Unsure" counting as ambiguous. Undecided items are absent."""
    return _outcomes(db, health_batches(db, dataset))


def _drawn(db: sqlite_utils.Database, batches: Sequence[store.BatchRow]) -> dict[int, str]:
    return {item: category for _, item, category, _ in _draws(db, batches)}


def _draws(db: sqlite_utils.Database, batches: Sequence[store.BatchRow]) -> list[tuple[int, int, str, float]]:
    return store.health_items(db, [b["id"] for b in batches])


def is_active(batch: store.BatchRow) -> bool:
    """Whether a health batch drew with a predictor's uncertainty (`health next --strategy active`)."""
    return batch["config"][DESIGN_KEY].get("strategy") == "active"


# How an item's validations become its outcome: the majority answer, or the answer Dawid and Skene's
# model gives it from every annotator's estimated confusion (crowd-kit); an admin's decision wins in both.
CONSENSUS = ("majority", "dawid-skene")


def _outcomes(
    db: sqlite_utils.Database, batches: Sequence[store.BatchRow], consensus: str = "majority"
) -> dict[int, str]:
    if consensus not in CONSENSUS:
        raise HealthError(f"unknown consensus {consensus!r}; expected one of {list(CONSENSUS)}")
    result: dict[int, str] = {}
    for batch in batches:
        modelled = dawid_skene(db, batch["name"])["labels"] if consensus == "dawid-skene" else {}
        for decision in decisions(db, batch["name"]):
            if decision.part == 0 and decision.rule != "admin" and f"{decision.item}:0" in modelled:
                result[decision.item] = VALIDATION.verdict_of_answer[modelled[f"{decision.item}:0"]]
                continue
            if decision.part == 0 and decision.rule == "unresolved":
                result[decision.item] = "ambiguous"
            elif decision.part == 0 and decision.answer is not None:
                result[decision.item] = VALIDATION.verdict_of_answer[decision.answer]
    return result


@dataclass(frozen=True)
class HealthSample:
    """What the store holds of a dataset's health sample, read once: the sampling frame (category
    -> item ids), the health batches, the drawn items (item -> category) and their outcomes."""

    dataset: str
    frame: dict[str, list[int]]
    batches: list[store.BatchRow]
    drawn: dict[int, str]
    outcomes: dict[int, str]
    batch_of: dict[int, int]  # item -> the id of the batch that drew it
    inclusion: dict[int, float]  # item -> its recorded inclusion probability

    @property
    def answered(self) -> list[store.BatchRow]:
        """The batches with a decided item, oldest first: the estimates stand on these alone, so that a
        batch nobody has answered yet changes no interval of the answers already given."""
        decided = {self.batch_of[item] for item in self.outcomes}
        return [b for b in self.batches if b["id"] in decided]

    @property
    def active(self) -> bool:
        """Whether an answered batch of the sample drew with a predictor's uncertainty (unequal
        probabilities), which makes its estimates go round by round."""
        return any(is_active(b) for b in self.answered)

    @property
    def sizes(self) -> dict[str, int]:
        """Category -> its number of items (N_c)."""
        return {c: len(items) for c, items in self.frame.items()}

    def counts(self) -> dict[str, dict[str, int]]:
        """Category -> drawn, decided, valid, invalid and ambiguous items."""
        counts: dict[str, dict[str, int]] = {}
        for item, category in self.drawn.items():
            row = counts.setdefault(category, {"drawn": 0, "decided": 0, "valid": 0, "invalid": 0, "ambiguous": 0})
            row["drawn"] += 1
            if item in self.outcomes:
                row["decided"] += 1
                row[self.outcomes[item]] += 1
        return counts


def read_sample(db: sqlite_utils.Database, dataset: str, consensus: str = "majority") -> HealthSample:
    """The dataset's health sample as the store holds it now (empty before the first batch), each
    decided item's outcome by `consensus` (`CONSENSUS`)."""
    batches = health_batches(db, dataset)
    outcomes = _outcomes(db, batches, consensus)
    draws = _draws(db, batches)
    return HealthSample(
        dataset,
        sampling_frame(db, dataset),
        batches,
        {item: category for _, item, category, _ in draws},
        outcomes,
        {item: batch for batch, item, _, _ in draws},
        {item: p for _, item, _, p in draws},
    )


def plan_sample(
    db: sqlite_utils.Database,
    dataset: str,
    budget: int | None = None,
    *,
    allocation: str = "proportional",
    per_category: int | None = None,
    target: str = "share",
    runs: Sequence[str] = (),
    seed: int = 0,
    strategy: str = "neyman",
    predictions: str | None = None,
) -> SamplePlan:
    """The next stratified draw from the items no health batch drew yet: `per_category` items from
    each category, or `budget` items allocated `equal`, `proportional` or `neyman` (from the current
    estimates, 0.5 where none). `target="rank"` with two `runs` allocates to shrink the interval of
    their accuracy difference on valid items (Neyman on the spread of the paired difference).
    `strategy="active"` draws each category's items (about as many as allocated) with
    probabilities that grow with the uncertainty of the prediction set `predictions`."""
    if target not in TARGETS:
        raise HealthError(f"unknown target {target!r}; expected one of {list(TARGETS)}")
    if strategy not in STRATEGIES:
        raise HealthError(f"unknown strategy {strategy!r}; expected one of {list(STRATEGIES)}")
    if strategy == "active" and target == "rank":
        raise HealthError("an active draw sharpens the shares; a rank target draws at random (--strategy neyman)")
    if (budget is None) == (per_category is None):
        raise HealthError("give a budget (items in all) or a number per category, not both")
    if target == "rank" and len(runs) != 2:
        raise HealthError("a rank target needs two runs, the pair whose order matters")
    _check_draw_sizes(budget, per_category)
    sample = read_sample(db, dataset)
    sizes, taken = sample.sizes, sample.drawn
    before = dict(Counter(taken.values()))
    _check_budget_left(dataset, budget, sum(sizes.values()) - len(taken))
    if per_category is not None:
        wanted = {c: min(per_category, sizes[c] - before.get(c, 0)) for c in sizes}
    else:
        assert budget is not None
        spreads = _difference_spreads(db, sample, runs) if target == "rank" else _share_spreads(sample)
        wanted = h.allocate(sizes, budget, "neyman" if target == "rank" else allocation, taken=before, spreads=spreads)
    rng = random.Random(f"health:{dataset}:{seed}:{len(sample.batches)}")
    allocated = "neyman" if target == "rank" else allocation
    if any(is_active(b) for b in sample.batches) and strategy != "active":
        _check_earlier_decided(sample)  # an active batch, answered or not, shaped what is left to draw
    if strategy == "active":
        plan = SamplePlan(dataset, allocated, target, seed, sizes, before, {})
        return _active_plan(db, sample, wanted, predictions, rng, plan)
    drawn = {
        c: sorted(rng.sample([i for i in sample.frame[c] if i not in taken], n)) for c, n in wanted.items() if n > 0
    }
    if not drawn:
        raise HealthError(f"every item of {dataset} with a negative is in a health sample already")
    return SamplePlan(dataset, allocated, target, seed, sizes, before, drawn)


def _check_earlier_decided(sample: HealthSample) -> None:
    """Refuse a draw that would follow an active batch, or be one, while earlier drawn items are
    undecided: each round's estimate counts the outcomes of the items drawn before it."""
    open_items = [item for item in sample.drawn if item not in sample.outcomes]
    if open_items:
        names = sorted({b["name"] for b in sample.batches if b["id"] in {sample.batch_of[i] for i in open_items}})
        raise HealthError(
            f"{len(open_items)} item(s) drawn earlier are not decided yet (batch {', '.join(names)}): an active draw, "
            "and any draw after one, builds on the outcomes of every item drawn before it; let those validations "
            "finish (or decide them on Annotation batches) first"
        )


def _active_plan(
    db: sqlite_utils.Database,
    sample: HealthSample,
    wanted: dict[str, int],
    predictions: str | None,
    rng: random.Random,
    plan: SamplePlan,
) -> SamplePlan:
    """Each category's remaining items drawn on their own coins with `active_inclusion` probabilities
    (about `wanted[c]` of them), from the predictions' uncertainty."""
    if predictions is None:
        raise HealthError(
            "an active draw needs predictions on every item (--predictions NAME): their uncertainty sets each "
            f"item's probability; import some with `./foil health predictions {sample.dataset} FILE --name NAME`"
        )
    if not any(n > 0 for n in wanted.values()):
        raise HealthError(f"every item of {sample.dataset} with a negative is in a health sample already")
    found = store.get_predictions(db, sample.dataset, predictions)
    if all(value in (0.0, 1.0) for value in found.values()):
        raise HealthError(
            f"the predictions {predictions!r} are 0/1 labels: every item is as certain as every other, so an active "
            "draw would draw at random; use --strategy neyman, or predictions that are probabilities"
        )
    _check_earlier_decided(sample)
    drawn: dict[str, list[int]] = {}
    inclusion: dict[int, float] = {}
    for category, n in wanted.items():
        rest = [i for i in sample.frame[category] if i not in sample.drawn]
        missing = [i for i in rest if i not in found]
        if missing:
            raise HealthError(
                f"the predictions {predictions!r} leave {len(missing)} item(s) of {category} without a prediction; "
                "import them again for every item"
            )
        if n <= 0:
            continue
        probabilities = active_inclusion(uncertainty(np.array([found[i] for i in rest])), n)
        picked = [(i, float(p)) for i, p in zip(rest, probabilities, strict=True) if rng.random() < p]
        if picked:
            drawn[category] = [i for i, _ in picked]
            inclusion.update(picked)
    if not drawn:
        raise HealthError(
            f"the active draw from {sample.dataset} drew no item (each is drawn on its own coin): draw again with "
            "another seed or a larger budget"
        )
    return replace(
        plan, drawn=drawn, strategy="active", predictions=predictions, inclusion=inclusion, expected=dict(wanted)
    )


def _check_draw_sizes(budget: int | None, per_category: int | None) -> None:
    """A budget or a number per category is a whole number of at least 1 (`reading`'s rule)."""
    for name, value in (("budget", budget), ("per_category", per_category)):
        problem = None if value is None else whole_number_problem(value, at_least=1)
        if problem:
            raise HealthError(f"{name} {problem}")


def _check_budget_left(dataset: str, budget: int | None, left: int) -> None:
    """Refuse a budget over the items left to draw: drawing fewer than asked without a word would
    leave the user's design other than they planned (a number per category is "at most" by nature)."""
    if budget is not None and 0 < left < budget:
        raise HealthError(
            f"a budget of {budget} items, but only {left} items of {dataset} with a negative are left to draw "
            f"(not yet in its health sample); give a budget of {left} or less"
        )


def _share_spreads(sample: HealthSample) -> dict[str, float]:
    """Per category sqrt(p (1 - p)) of the smoothed current invalid share (0.5 with no data)."""
    spreads = {}
    for c, row in sample.counts().items():
        share = h.smoothed_share(row["invalid"], row["decided"])
        spreads[c] = float(np.sqrt(share * (1 - share)))
    return spreads


def _difference_spreads(db: sqlite_utils.Database, sample: HealthSample, runs: Sequence[str]) -> dict[str, float]:
    """Per category the spread of two runs' paired credit difference on decided valid items (1, the
    largest a difference of credits in [0, 1] can have, where fewer than two are known)."""
    credit = [run_credits(db, sample.dataset, run) for run in runs]
    differences: dict[str, list[float]] = {}
    for item, outcome in sample.outcomes.items():
        if outcome == "valid" and all(item in c for c in credit):
            differences.setdefault(sample.drawn[item], []).append(credit[0][item] - credit[1][item])
    spread = {c: float(np.std(d, ddof=1)) for c, d in differences.items() if len(d) > 1}
    return {c: spread.get(c, 1.0) for c in sample.frame}


def create_sample_batch(
    db: sqlite_utils.Database,
    plan: SamplePlan,
    annotators: Sequence[str],
    *,
    overlap: int = 3,
    name: str | None = None,
    crowd_items: int | None = None,
) -> dict[str, Any]:
    """Store the plan's draw as a validate_negative batch recording its design; the `batch create`
    JSON plus the design."""
    design = plan.design()
    spec = BatchSpec(
        plan.dataset,
        TASK,
        tuple(annotators),
        overlap=overlap,
        item_ids=tuple(plan.item_ids),
        seed=plan.seed,
        name=name,
        crowd_items=crowd_items,
        health=design,
    )
    created = create_batch(db, spec)
    return {
        **created,
        "design": {key: value for key, value in design.items() if key != "items"},
        "drawn": len(plan.item_ids),
    }


def run_credits(db: sqlite_utils.Database, dataset: str, run: str, ties: str | None = None) -> dict[int, float]:
    """Each scored item's credit on the run's headline metric (ties by the benchmark's rule)."""
    loaded = load_run(db, dataset, run)
    rule = ties or source_format(db, dataset).ties
    credits = run_family(loaded).credits(loaded, rule)
    return dict(zip(loaded.item_ids.tolist(), credits.tolist()))
