"""A dataset's health sample: stratified draws of its negatives sent to validate_negative batches
(each batch records its design) and each drawn item's verdict from its validations.

Several health batches of one dataset make one sample: each draws, per category, at random from
the items no earlier health batch drew, so the union is a simple random sample per stratum and
every drawn item's inclusion probability is (items drawn in its stratum) / (items in it). A draw
by prediction (`health next --strategy predicted`) cuts each category into bins of a predictor's
probability and draws at random within each bin, the bins becoming strata. An active batch, drawn
before such draws were retired (during 0.10.0) with probabilities that grow with a predictor's
uncertainty (each recorded given the batches before, `analysis.active_sampling`), is still estimated
round by round (`rounds`); new active draws are refused (`ACTIVE_RETIRED`).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import sqlite_utils

from foil_studio.analysis import health as h
from foil_studio.analysis.active_sampling import FLOOR_SHARE
from foil_studio.analysis.prediction_strata import (
    MAX_BINS,
    MIN_PER_BIN,
    PLAN_PSEUDO_ANSWERS,
    PLANNED_FLOOR,
    allocate_bins,
    bin_of,
    cut_points,
    ranks_better_than_chance,
)
from foil_studio.analysis.results import load_run, run_family, source_format
from foil_studio.annotate.batches import BatchError, BatchSpec, create_batch
from foil_studio.annotate.consensus import dawid_skene, decisions
from foil_studio.annotate.task_types import negative_validation
from foil_studio.data import store
from foil_studio.data.item_kinds import CAPTION_PAIR_KINDS
from foil_studio.data.reading import whole_number_problem

VALIDATION = negative_validation()  # the task health batches ask, and the verdict each answer gives
TASK = VALIDATION.name
# One negative per item, so that an item's verdict is its negative's (a retrieval item's several
# negatives would each need a share of their own).
HEALTH_KINDS = CAPTION_PAIR_KINDS
DESIGN_KEY = "health"  # the batch setting that holds a health sample's design
TARGETS = ("share", "rank")
# How `health next` draws within a category: at random (the categories' sizes by Neyman allocation),
# or at random within bins of a predictor's probability, the answers going where the invalid items are
# (`analysis.prediction_strata`).
STRATEGIES = ("neyman", "predicted")
STRATEGY_WORDS = {"neyman": "at random", "predicted": "by prediction"}  # the page's words
# Issue 52: active draws (more often where a predictor is unsure) made every interval wider than a
# random draw of the same budget, so new ones are refused; batches drawn so (`is_active`) stay readable.
ACTIVE_RETIRED = (
    "active draws are retired: in every case measured they made the intervals wider than a random draw "
    "of the same size (docs/statistics.md); draw by prediction instead (--strategy predicted --predictions "
    "NAME), which puts the answers where the predictions place the invalid items"
)
# The shares the report estimates, by the verdicts each counts (the names `TruthKey.measures` uses),
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
    predictions: str | None = None  # the prediction set the draw followed
    # An active draw's (retired during 0.10.0; what its batches record): its probabilities given the
    # batches before, and its allocation, the items expected per category.
    inclusion: dict[int, float] | None = None
    expected: dict[str, int] | None = None
    bins: dict[str, dict[str, Any]] | None = None  # a draw by prediction's bins: category -> cuts and sizes
    per_bin: dict[str, list[int]] | None = None  # a draw by prediction: category -> the new items each bin gave

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
        binned = {
            "strategy": "predicted",
            "predictions": self.predictions,
            "bins": self.bins,
            "per_bin": self.per_bin,
            "plan": {"rule": "neyman", "pseudo_answers": PLAN_PSEUDO_ANSWERS, "floor": PLANNED_FLOOR},
        }
        return {
            "allocation": self.allocation,
            "target": self.target,
            "seed": self.seed,
            **(active if self.strategy == "active" else binned if self.strategy == "predicted" else {}),
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
    frame = store.item_strata(db, store.get_dataset(db, dataset)["id"], HEALTH_KINDS)
    if not frame:
        raise nothing_to_validate(dataset)
    return frame


def nothing_to_validate(dataset: str) -> HealthError:
    """The refusal of a dataset with no item a health sample can draw."""
    return HealthError(f"{dataset} has no items with a negative to validate ({'/'.join(HEALTH_KINDS)} items)")


def health_batches(db: sqlite_utils.Database, dataset: str) -> list[store.BatchRow]:
    """The dataset's health sample batches, oldest first."""
    return store.batches_with_setting(db, store.get_dataset(db, dataset)["id"], DESIGN_KEY)


def sample_overlap(db: sqlite_utils.Database, dataset: str) -> int | None:
    """Annotators per item in the dataset's latest health batch: what the next batch asks for unless
    told otherwise (None before the first sample)."""
    batches = health_batches(db, dataset)
    return int(batches[-1]["config"]["overlap"]) if batches else None


def drawn_items(db: sqlite_utils.Database, dataset: str) -> dict[int, str]:
    """Item -> category of every item a health batch of the dataset drew."""
    return _drawn(db, health_batches(db, dataset))


def batch_design(db: sqlite_utils.Database, batch_name: str) -> dict[str, Any]:
    """A health batch's design as recorded: allocation, target, seed, strata and, per drawn item
    (`store.health_items`), its category and inclusion probability."""
    batch = store.get_batch(db, batch_name)
    items = {str(i): {"category": c, "inclusion": p} for _, i, c, p in store.health_items(db, [batch["id"]])}
    return {**batch["config"][DESIGN_KEY], "items": items}


def item_verdicts(db: sqlite_utils.Database, dataset: str) -> dict[int, str]:
    """Item -> valid / invalid / ambiguous for every drawn item its validations decide: the
    majority answer (annotators screened out by gold left out), an admin's decision where one was
    made, a tie or a majority of "Unsure" counting as ambiguous. Undecided items are absent."""
    return _decided_verdicts(db, health_batches(db, dataset))


def _drawn(db: sqlite_utils.Database, batches: Sequence[store.BatchRow]) -> dict[int, str]:
    return {item: category for _, item, category, _ in _draws(db, batches)}


def _draws(db: sqlite_utils.Database, batches: Sequence[store.BatchRow]) -> list[tuple[int, int, str, float]]:
    return store.health_items(db, [b["id"] for b in batches])


def is_active(batch: store.BatchRow) -> bool:
    """Whether a health batch drew with a predictor's uncertainty (active draws were retired during 0.10.0)."""
    return batch["config"][DESIGN_KEY].get("strategy") == "active"


def is_binned(batch: store.BatchRow) -> bool:
    """Whether a health batch drew within bins of a prediction (`health next --strategy predicted`)."""
    return batch["config"][DESIGN_KEY].get("strategy") == "predicted"


# How an item's validations become its verdict: the majority answer, or the answer Dawid and Skene's
# model gives it from every annotator's estimated confusion (crowd-kit); an admin's decision wins in both.
CONSENSUS = ("majority", "dawid-skene")


def _decided_verdicts(
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
    -> item ids), the health batches, the drawn items (item -> category) and their verdicts."""

    dataset: str
    frame: dict[str, list[int]]
    batches: list[store.BatchRow]
    drawn: dict[int, str]
    verdicts: dict[int, str]
    batch_of: dict[int, int]  # item -> the id of the batch that drew it
    inclusion: dict[int, float]  # item -> its recorded inclusion probability
    bins: dict[int, int] = field(default_factory=dict)  # item -> its prediction bin, once a batch drew by them
    category_of: dict[str, str] | None = None  # stratum -> its category, in `by_strata`'s view with bins
    waiting: str | None = None  # in `by_strata`'s view: why some decided items wait outside the estimates

    @property
    def answered(self) -> list[store.BatchRow]:
        """The batches with a decided item, oldest first: the estimates stand on these alone, so that a
        batch nobody has answered yet changes no interval of the answers already given."""
        decided = {self.batch_of[item] for item in self.verdicts}
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
            if item in self.verdicts:
                row["decided"] += 1
                row[self.verdicts[item]] += 1
        return counts


def read_sample(db: sqlite_utils.Database, dataset: str, consensus: str = "majority") -> HealthSample:
    """The dataset's health sample as the store holds it now (empty before the first batch), each
    decided item's verdict by `consensus` (`CONSENSUS`), and each item's prediction bin once a
    batch drew by prediction."""
    batches = health_batches(db, dataset)
    verdicts = _decided_verdicts(db, batches, consensus)
    draws = _draws(db, batches)
    frame = sampling_frame(db, dataset)
    return HealthSample(
        dataset,
        frame,
        batches,
        {item: category for _, item, category, _ in draws},
        verdicts,
        {item: batch for batch, item, _, _ in draws},
        {item: p for _, item, _, p in draws},
        _item_bins(db, dataset, batches, frame),
    )


def recorded_bins(batches: Sequence[store.BatchRow]) -> tuple[str, str, dict[str, dict[str, Any]]] | None:
    """The first batch that drew by prediction: its name, its predictions' name and its bins (category
    -> cuts and sizes), which every later draw by prediction keeps; None before one."""
    for batch in batches:
        if is_binned(batch):
            design = batch["config"][DESIGN_KEY]
            return batch["name"], design["predictions"], design["bins"]
    return None


def _item_bins(
    db: sqlite_utils.Database, dataset: str, batches: Sequence[store.BatchRow], frame: dict[str, list[int]]
) -> dict[int, int]:
    """Item -> its bin (`recorded_bins`), from the predictions as stored now; refused where they no
    longer give the bins the batch recorded (re-imported under the same name since)."""
    recorded = recorded_bins(batches)
    if recorded is None:
        return {}
    batch, name, bins = recorded
    try:
        found = store.get_predictions(db, dataset, name)
    except store.NotFoundError:
        raise HealthError(
            f"batch {batch} drew within bins of the predictions {name!r}, which the store no longer holds: "
            "import them again under that name"
        ) from None
    placed: dict[int, int] = {}
    for category, items in frame.items():
        which = bin_of([found.get(i, np.nan) for i in items], bins[category]["cuts"])
        if np.bincount(which, minlength=len(bins[category]["sizes"])).tolist() != bins[category]["sizes"]:
            raise HealthError(
                f"the predictions {name!r} no longer give the bins batch {batch} drew within ({category}: "
                f"{bins[category]['sizes']} items): they were imported again since; import the ones it drew on "
                "under their old name"
            )
        placed.update(zip(items, which.tolist(), strict=True))
    return placed


def by_strata(sample: HealthSample) -> HealthSample:
    """The sample as the estimates take it: each category one stratum, or, once an answered batch drew
    by prediction, each of its bins one (given how many items each bin gave, the items drawn in it so
    far are a random sample of it, those of random batches included), keyed `stratum_name`. Until every
    bin of a category with a decided item has one of its own, the estimates stand on the batches drawn
    before the first draw by prediction (random ones), and `waiting` says why."""
    if not any(is_binned(b) for b in sample.answered):
        return sample
    recorded = recorded_bins(sample.batches)
    assert recorded is not None
    batch, _, bins = recorded
    strata: dict[str, list[int]] = {}
    category_of: dict[str, str] = {}
    for category, items in sample.frame.items():
        count = len(bins[category]["sizes"])
        for number in range(count):
            name = stratum_name(category, number, count)
            strata[name], category_of[name] = [i for i in items if sample.bins[i] == number], category
    drawn = {item: stratum_name(c, sample.bins[item], len(bins[c]["sizes"])) for item, c in sample.drawn.items()}
    sampled = {sample.drawn[item] for item in sample.verdicts}
    decided = {drawn[item] for item in sample.verdicts}
    empty = [name for name in strata if category_of[name] in sampled and name not in decided]
    if not empty:
        return replace(sample, frame=strata, drawn=drawn, category_of=category_of)
    first = next(number for number, b in enumerate(sample.batches) if is_binned(b))
    before = {b["id"] for b in sample.batches[:first]}
    waiting = (
        f"the answers of batch {batch} and after it enter the estimates once every prediction bin of a category "
        f"with a decided item has one ({empty[0]} has none yet)"
    )
    verdicts = {item: o for item, o in sample.verdicts.items() if sample.batch_of[item] in before}
    return replace(sample, verdicts=verdicts, waiting=waiting)


def stratum_name(category: str, bin_number: int, bins: int) -> str:
    """A stratum of the estimates: the category itself, or one of its `bins` prediction bins."""
    return category if bins == 1 else f"{category} (prediction bin {bin_number + 1} of {bins})"


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
    `strategy="predicted"` draws within bins of the prediction set `predictions` (`_predicted_plan`)."""
    if target not in TARGETS:
        raise HealthError(f"unknown target {target!r}; expected one of {list(TARGETS)}")
    if strategy == "active":
        raise HealthError(ACTIVE_RETIRED)
    if strategy not in STRATEGIES:
        raise HealthError(f"unknown strategy {strategy!r}; expected one of {list(STRATEGIES)}")
    if strategy != "neyman" and target == "rank":
        raise HealthError(
            f"a draw --strategy {strategy} sharpens the shares; a rank target draws at random (--strategy neyman)"
        )
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
    if any(is_active(b) for b in sample.batches):
        _check_earlier_decided(sample)  # an active batch, answered or not, shaped what is left to draw
    if strategy == "predicted":
        plan = SamplePlan(dataset, allocated, target, seed, sizes, before, {})
        return _predicted_plan(db, sample, wanted, predictions, rng, plan)
    drawn = {
        c: sorted(rng.sample([i for i in sample.frame[c] if i not in taken], n)) for c, n in wanted.items() if n > 0
    }
    if not drawn:
        raise HealthError(f"every item of {dataset} with a negative is in a health sample already")
    return SamplePlan(dataset, allocated, target, seed, sizes, before, drawn)


def _check_earlier_decided(sample: HealthSample) -> None:
    """Refuse a draw that would follow an active batch while earlier drawn items are undecided: each
    round's estimate counts the verdicts of the items drawn before it."""
    open_items = [item for item in sample.drawn if item not in sample.verdicts]
    if open_items:
        names = sorted({b["name"] for b in sample.batches if b["id"] in {sample.batch_of[i] for i in open_items}})
        raise HealthError(
            f"{len(open_items)} item(s) drawn earlier are not decided yet (batch {', '.join(names)}): a draw "
            "after an active batch builds on the verdicts of every item drawn before it; let those validations "
            "finish (or decide them on Annotation batches) first"
        )


def _predicted_plan(
    db: sqlite_utils.Database,
    sample: HealthSample,
    wanted: dict[str, int],
    predictions: str | None,
    rng: random.Random,
    plan: SamplePlan,
) -> SamplePlan:
    """Each category's `wanted[c]` items drawn at random within bins of the predictions (`analysis.
    prediction_strata`): the bins the sample's first such draw cut, else cut now; each bin's share of
    the draw by Neyman's rule on its planned share (from its mean prediction, not its answers)."""
    if predictions is None:
        raise HealthError(
            "a draw by prediction needs predictions on every item (--predictions NAME): their bins set where the "
            f"answers go; import some with `./foil health predictions {sample.dataset} FILE --name NAME`"
        )
    if any(is_active(b) for b in sample.batches):
        raise HealthError(
            "this sample has an active batch, estimated round by round; a draw by prediction needs random draws "
            "before it (draw --strategy neyman, or start a sample of another dataset copy)"
        )
    if not any(n > 0 for n in wanted.values()):
        raise HealthError(f"every item of {sample.dataset} with a negative is in a health sample already")
    found = store.get_predictions(db, sample.dataset, predictions)
    missing = [i for items in sample.frame.values() for i in items if i not in found]
    if missing:
        raise HealthError(
            f"the predictions {predictions!r} leave {len(missing)} item(s) of {sample.dataset} without a prediction; "
            "import them again for every item"
        )
    recorded = recorded_bins(sample.batches)
    if recorded is not None and recorded[1] != predictions:
        raise HealthError(
            f"batch {recorded[0]} cut this sample's bins on the predictions {recorded[1]!r}: every later draw by "
            f"prediction keeps them (--predictions {recorded[1]})"
        )
    bins = recorded[2] if recorded is not None else _new_bins(sample, found, wanted)
    drawn: dict[str, list[int]] = {}
    per_bin: dict[str, list[int]] = {}
    inclusion: dict[int, float] = {}
    for category, n in wanted.items():
        if n > 0:
            picked, per_bin[category] = _draw_in_bins(
                sample, sample.frame[category], found, bins[category]["cuts"], n, rng
            )
            drawn[category] = sorted(picked)
            inclusion |= picked
    return replace(
        plan,
        drawn=drawn,
        strategy="predicted",
        predictions=predictions,
        bins=bins,
        per_bin=per_bin,
        inclusion=inclusion,
    )


def _new_bins(sample: HealthSample, found: Mapping[int, float], wanted: Mapping[str, int]) -> dict[str, dict[str, Any]]:
    """Each category's bins of the predictions, cut where they rank the decided items better than chance
    (`ranks_better_than_chance`; each category one bin where they do not), as many as this draw's items
    for the category give each its `MIN_PER_BIN` (`wanted`); how the ranking was judged with each."""
    decided = list(sample.verdicts)
    ranking = ranks_better_than_chance(
        [float(sample.verdicts[i] == "invalid") for i in decided], [found[i] for i in decided]
    )
    return {
        c: _cut(items, found, max(1, wanted.get(c, 0) // MIN_PER_BIN) if ranking.better else 1, ranking.reason)
        for c, items in sample.frame.items()
    }


def _cut(items: Sequence[int], found: Mapping[int, float], most: int, judged: str) -> dict[str, Any]:
    """A category's bins of the predictions, at most `most` (`prediction_strata.MAX_BINS` at most): the
    cuts, each bin's number of items and mean prediction, and how the ranking was judged."""
    values = np.array([found[i] for i in items])
    cuts = cut_points(values, min(most, MAX_BINS))
    which = bin_of(values, cuts)
    return {
        "cuts": cuts,
        "sizes": np.bincount(which, minlength=len(cuts) + 1).tolist(),
        "means": [round(float(values[which == b].mean()), 6) for b in range(len(cuts) + 1)],
        "ranking": judged,
    }


def _draw_in_bins(
    sample: HealthSample,
    items: Sequence[int],
    found: Mapping[int, float],
    cuts: Sequence[float],
    n: int,
    rng: random.Random,
) -> tuple[dict[int, float], list[int]]:
    """n of a category's undrawn items, allocated over its bins (`allocate_bins`) and drawn at random in
    each, with each one's inclusion probability in the sample as it stands after the draw (its bin's
    drawn items over its items); and how many each bin gave."""
    which = bin_of([found[i] for i in items], cuts)
    members = {b: [i for i, w in zip(items, which, strict=True) if w == b] for b in range(len(cuts) + 1)}
    taken = {b: sum(i in sample.drawn for i in m) for b, m in members.items()}
    means = {b: float(np.mean([found[i] for i in m])) for b, m in members.items()}
    counts = allocate_bins({b: len(m) for b, m in members.items()}, means, n, taken)
    picked: dict[int, float] = {}
    for b, k in counts.items():
        fraction = (taken[b] + k) / len(members[b]) if members[b] else 0.0
        picked |= dict.fromkeys(rng.sample([i for i in members[b] if i not in sample.drawn], k), fraction)
    return picked, [counts[b] for b in range(len(cuts) + 1)]


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
    for item, verdict in sample.verdicts.items():
        if verdict == "valid" and all(item in c for c in credit):
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
    ids, credits = run_credit_columns(db, dataset, run, ties)
    return dict(zip(ids.tolist(), credits.tolist()))


def run_credit_columns(
    db: sqlite_utils.Database, dataset: str, run: str, ties: str | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """`run_credits` as two arrays, the item ids ascending: a million items' credits without a
    dict of a million entries (0.4 s) where only a few are looked up (`credits_at`)."""
    loaded = load_run(db, dataset, run)
    rule = ties or source_format(db, dataset).ties
    return loaded.item_ids, np.asarray(run_family(loaded).credits(loaded, rule), dtype=float)


def credits_at(ids: np.ndarray, credits: np.ndarray, items: Sequence[int]) -> dict[int, float] | None:
    """Item -> credit for `items` out of `run_credit_columns`' arrays; None if the run scored not
    every one of them."""
    wanted = np.asarray(items, dtype=np.int64)
    at = np.minimum(np.searchsorted(ids, wanted), max(len(ids) - 1, 0))
    if len(wanted) and (not len(ids) or not bool(np.all(ids[at] == wanted))):
        return None
    return dict(zip(wanted.tolist(), credits[at].tolist())) if len(wanted) else {}
