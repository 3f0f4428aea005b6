"""Benchmark health over the store: stratified samples of a dataset's negatives sent to
validate_negative batches (each batch records its design), each drawn item's outcome from its
validations, and the report that joins them with the runs (`analysis.health` has the statistics
and their definitions).

Several health batches of one dataset make one sample: each draws, per category, at random from
the items no earlier health batch drew, so the union is a simple random sample per stratum and
every drawn item's inclusion probability is (items drawn in its stratum) / (items in it).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sqlite_utils

from foil_studio.analysis import health as h
from foil_studio.analysis.audit import audit, stored_audit
from foil_studio.analysis.results import BOOTSTRAP, UnsupportedRunError, load_run, run_family, source_format
from foil_studio.annotate.agreement import COEFFICIENT_NAMES, COEFFICIENTS
from foil_studio.annotate.baselines import dataset_baseline
from foil_studio.annotate.batch_reports import batch_agreement
from foil_studio.annotate.batches import BatchError, BatchSpec, create_batch
from foil_studio.annotate.consensus import decisions
from foil_studio.data import store
from foil_studio.data.item_kinds import CAPTION_PAIR_KINDS, VERDICT_KEYS, TruthKey
from foil_studio.data.plain_text import figure, interval_text
from foil_studio.data.reading import whole_number_problem

TASK = "validate_negative"
# One negative per item, so that an item's outcome is its negative's (a retrieval item's several
# negatives would each need a share of their own).
HEALTH_KINDS = CAPTION_PAIR_KINDS
DESIGN_KEY = "health"  # the batch setting that holds a health sample's design
OUTCOME_OF_ANSWER = {"negative_false": "valid", "negative_true": "invalid", "unsure": "ambiguous"}
TARGETS = ("share", "rank")
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

    @property
    def item_ids(self) -> list[int]:
        """Every newly drawn item, category by category."""
        return [item for items in self.drawn.values() for item in items]

    def design(self) -> dict[str, Any]:
        """What the batch records: strata sizes, sample sizes before and now, each new item's
        category and inclusion probability (of the sample as it stands after this draw), the seed."""
        strata = {
            c: {"size": self.sizes[c], "before": self.before.get(c, 0), "drawn": len(self.drawn.get(c, []))}
            for c in self.sizes
        }
        return {
            "allocation": self.allocation,
            "target": self.target,
            "seed": self.seed,
            "strata": strata,
            "items": {
                str(item): {"category": c, "inclusion": round((self.before.get(c, 0) + len(items)) / self.sizes[c], 6)}
                for c, items in self.drawn.items()
                for item in items
            },
        }


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
    return {item: category for _, item, category, _ in store.health_items(db, [b["id"] for b in batches])}


def _outcomes(db: sqlite_utils.Database, batches: Sequence[store.BatchRow]) -> dict[int, str]:
    result: dict[int, str] = {}
    for batch in batches:
        for decision in decisions(db, batch["name"]):
            if decision.part == 0 and decision.rule == "unresolved":
                result[decision.item] = "ambiguous"
            elif decision.part == 0 and decision.answer is not None:
                result[decision.item] = OUTCOME_OF_ANSWER[decision.answer]
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


def read_sample(db: sqlite_utils.Database, dataset: str) -> HealthSample:
    """The dataset's health sample as the store holds it now (empty before the first batch)."""
    batches = health_batches(db, dataset)
    return HealthSample(dataset, sampling_frame(db, dataset), batches, _drawn(db, batches), _outcomes(db, batches))


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
) -> SamplePlan:
    """The next stratified draw from the items no health batch drew yet: `per_category` items from
    each category, or `budget` items allocated `equal`, `proportional` or `neyman` (from the current
    estimates, 0.5 where none). `target="rank"` with two `runs` allocates to shrink the interval of
    their accuracy difference on valid items (Neyman on the spread of the paired difference)."""
    if target not in TARGETS:
        raise HealthError(f"unknown target {target!r}; expected one of {list(TARGETS)}")
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
    drawn = {
        c: sorted(rng.sample([i for i in sample.frame[c] if i not in taken], n)) for c, n in wanted.items() if n > 0
    }
    if not drawn:
        raise HealthError(f"every item of {dataset} with a negative is in a health sample already")
    return SamplePlan(dataset, "neyman" if target == "rank" else allocation, target, seed, sizes, before, drawn)


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
    credit = [_credits_by_item(db, sample.dataset, run) for run in runs]
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


def _credits_by_item(db: sqlite_utils.Database, dataset: str, run: str, ties: str | None = None) -> dict[int, float]:
    """Each scored item's credit on the run's headline metric (ties by the benchmark's rule)."""
    loaded = load_run(db, dataset, run)
    rule = ties or source_format(db, dataset).ties
    credits = run_family(loaded).credits(loaded, rule)
    return dict(zip(loaded.item_ids.tolist(), credits.tolist()))


def own_shares(db: sqlite_utils.Database, dataset: str) -> dict[str, Any] | None:
    """The shares the dataset's own verdicts give over all its items (VALSE's crowd rule, the demo's
    known flaws), for what they measure (`TruthKey.measures`: which outcomes they count, in whose
    words); None when its items carry no such verdict, or verdicts that measure different things."""
    verdicts: dict[str, Counter[str]] = {}
    keys: set[TruthKey] = set()
    for category, truth in store.item_truths(db, store.get_dataset(db, dataset)["id"], HEALTH_KINDS):
        judged = _own_verdict(truth)
        if judged is None:
            return None
        keys.add(judged[0])
        verdicts.setdefault(category, Counter())[judged[1]] += 1
    if len({key.measures for key in keys}) != 1:
        return None
    measures = next(iter(keys)).measures
    return {
        "measures": [{"outcomes": outcomes, "definition": words} for outcomes, words in measures],
        "by_category": {c: _own_counts(n, measures) for c, n in sorted(verdicts.items())},
    }


def _own_verdict(truth: Mapping[str, Any]) -> tuple[TruthKey, str] | None:
    """The truth key that judges the item's negative (the first present, as `source_verdict` reads
    it) and its verdict; None where none does, or it says nothing of what it measures."""
    key = next((k for k in VERDICT_KEYS if k.name in truth), None)
    if key is None or key.verdict is None or not key.measures:
        return None
    verdict = key.verdict(truth[key.name])
    return None if verdict is None else (key, verdict)


def _own_counts(verdicts: Counter[str], measures: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """A category's items and, per measured share, how many of them its verdicts count."""
    return {
        "items": sum(verdicts.values()),
        "counts": {outcomes: sum(verdicts[o] for o in outcomes.split("+")) for outcomes, _ in measures},
    }


def _own_figures(own: Mapping[str, Any], categories: Sequence[str]) -> dict[str, float]:
    """Per measured share, the dataset's own figure over all items of `categories`."""
    rows = [own["by_category"][c] for c in categories if c in own["by_category"]]
    items = sum(row["items"] for row in rows)
    return {
        m["outcomes"]: round(sum(row["counts"][m["outcomes"]] for row in rows) / items, 4)
        for m in own["measures"]
        if items
    }


def health_report(
    db: sqlite_utils.Database,
    dataset: str,
    runs: Sequence[str] | None = None,
    *,
    ties: str | None = None,
    n_boot: int = BOOTSTRAP,
    seed: int = 0,
) -> dict[str, Any]:
    """The benchmark card's figures (`./foil health report`, the Benchmark health page): the sample's
    design, the validations' agreement, the invalid, ambiguous and invalid-or-ambiguous shares per
    category and overall with 95% intervals (each share the dataset's own verdicts measure beside
    their figure, `own`, where it carries them), and each run's
    accuracy on all items (published) and on valid items, with paired differences."""
    sample = read_sample(db, dataset)
    batches, drawn, outcomes, sizes, counts = (
        sample.batches,
        sample.drawn,
        sample.outcomes,
        sample.sizes,
        sample.counts(),
    )
    if not batches:
        raise HealthError(f"{dataset} has no health sample yet; draw one with `./foil health sample {dataset}`")
    own = own_shares(db, dataset)
    strata = [_stratum_row(c, sizes[c], counts.get(c), own) for c in sorted(sizes)]
    decided = [c for c in sorted(sizes) if counts.get(c, {}).get("decided", 0) > 0]
    report: dict[str, Any] = {
        "dataset": dataset,
        "design": _design_summary(batches, sizes, counts),
        "agreement": [_agreement_row(db, b["name"]) for b in batches],
        "own_verdicts": None if own is None else own["measures"],
        "strata": strata,
        "overall": _overall(decided, sizes, counts, own),
        "hackability": hackability(db, dataset),
        "human_baseline": _human_baseline(db, dataset),
        "leaderboard": None,
    }
    if decided:
        report["leaderboard"] = _leaderboard(db, dataset, runs, decided, drawn, outcomes, sizes, ties, n_boot, seed)
    report["methods"] = methods_paragraph(report)
    return report


def _human_baseline(db: sqlite_utils.Database, dataset: str) -> dict[str, Any] | None:
    """The dataset's human baseline (its baseline batches, as Model scores draws it), or None."""
    found = dataset_baseline(db, dataset)
    if found is None:
        return None
    return {
        "batches": found["batches"],
        "n": found["n"],
        "metrics": [
            {"metric": key, "value": round(value, 2), "interval": [round(x, 2) for x in found["intervals"][key]]}
            for key, value in found["metrics"].items()
            if found["intervals"].get(key)
        ],
    }


BLIND_SCORERS = ("stats", "ngram")  # the blind scorers of the card: fitted in seconds, no model to download


def hackability(db: sqlite_utils.Database, dataset: str) -> dict[str, Any]:
    """Blind text-only accuracy (percent, a tie counted half) overall and per category, from the
    stored audit with the card's scorers, else fitted now (and stored)."""
    result = stored_audit(db, dataset, scorers=BLIND_SCORERS) or audit(db, dataset, scorers=BLIND_SCORERS)
    return {
        "scorers": list(BLIND_SCORERS),
        "ties": "half",
        "overall": {s: round(result["blind"][s], 2) for s in BLIND_SCORERS},
        "by_category": {
            c: {s: round(v["blind"][s], 2) for s in BLIND_SCORERS} for c, v in sorted(result["by_category"].items())
        },
    }


def _stratum_row(
    category: str, size: int, counts: Mapping[str, int] | None, own: Mapping[str, Any] | None
) -> dict[str, Any]:
    counts = counts or {"drawn": 0, "decided": 0, "valid": 0, "invalid": 0, "ambiguous": 0}
    row: dict[str, Any] = {"category": category, "size": size, **counts, **{key: None for key, _ in SHARES.values()}}
    if counts["decided"]:
        for outcomes, (key, _) in SHARES.items():
            found = sum(counts[o] for o in outcomes.split("+"))
            row[key] = h.stratum_share(found, counts["decided"], size).as_dict()
    if own is not None:
        row["own"] = _own_figures(own, [category])
    return row


def _overall(
    decided: list[str], sizes: Mapping[str, int], counts: Mapping[str, Mapping[str, int]], own: Any
) -> dict[str, Any]:
    """The stratified shares over the categories with a decided item (`covers`: their items)."""
    overall: dict[str, Any] = {"covers": 0, "size": sum(sizes.values()), **{key: None for key, _ in SHARES.values()}}
    if not decided:
        return overall
    n = [counts[c]["decided"] for c in decided]
    size = [sizes[c] for c in decided]
    overall |= {"covers": sum(size), "categories_without_decided_items": sorted(set(sizes) - set(decided))}
    for outcomes, (key, _) in SHARES.items():
        found = [sum(counts[c][o] for o in outcomes.split("+")) for c in decided]
        overall[key] = h.stratified_share(found, n, size).as_dict()
    if own is not None:
        overall["own"] = _own_figures(own, decided)
    return overall


def _design_summary(
    batches: list[store.BatchRow], sizes: Mapping[str, int], counts: Mapping[str, Mapping[str, int]]
) -> dict[str, Any]:
    designs = [b["config"][DESIGN_KEY] for b in batches]
    return {
        "batches": [
            {
                "batch": b["name"],
                "allocation": d["allocation"],
                "target": d["target"],
                "seed": d["seed"],
                "drawn": sum(s["drawn"] for s in d["strata"].values()),
                "overlap": b["config"].get("overlap"),
            }
            for b, d in zip(batches, designs)
        ],
        "items": sum(sizes.values()),
        "categories": len(sizes),
        "drawn": sum(c["drawn"] for c in counts.values()),
        "decided": sum(c["decided"] for c in counts.values()),
    }


def _agreement_row(db: sqlite_utils.Database, batch: str) -> dict[str, Any]:
    """The coefficients the Annotation batches page shows for a batch, with their intervals."""
    report = batch_agreement(db, batch)
    return {
        "batch": batch,
        "n_items": report["n_items"],
        **{key: report[key] for key in COEFFICIENTS},
        "intervals": report["intervals"],
    }


NO_VALID_ITEM = "no decided item is valid yet, so no run has an accuracy on valid items"


def _leaderboard(
    db: sqlite_utils.Database,
    dataset: str,
    runs: Sequence[str] | None,
    decided: list[str],
    drawn: Mapping[int, str],
    outcomes: Mapping[int, str],
    sizes: Mapping[str, int],
    ties: str | None,
    n_boot: int,
    seed: int,
) -> dict[str, Any] | None:
    """Published (all items) against valid-item accuracy per run, with paired differences."""
    names = list(runs) if runs else [r["run"] for r in store.list_runs(db, dataset)]
    credit: dict[str, dict[int, float]] = {}
    skipped: dict[str, str] = {}
    for name in names:
        try:
            credit[name] = _credits_by_item(db, dataset, name, ties)
        except (UnsupportedRunError, store.NotFoundError) as error:
            if runs:
                raise
            skipped[name] = str(error)
    items = sorted(i for i in outcomes if drawn[i] in decided)
    scored = [name for name in credit if all(i in credit[name] for i in items)]
    skipped.update({n: "did not score every drawn item" for n in credit if n not in scored})
    if not scored:
        return {"runs": [], "skipped": skipped}
    if not any(outcomes[i] == "valid" for i in items):  # 0 of 0: no accuracy on valid items, not nan
        return {"runs": [], "skipped": skipped, "undefined": NO_VALID_ITEM}
    published = [float(np.mean(list(credit[name].values()))) for name in scored]  # the all-items accuracy
    board = h.valid_accuracy(
        [drawn[i] for i in items],
        np.array([outcomes[i] == "valid" for i in items]),
        np.array([[credit[name][i] for name in scored] for i in items]),
        {c: sizes[c] for c in decided},
        scored,
        published=published,
        n_boot=n_boot,
        seed=seed,
    )
    rows = [
        {
            "run": name,
            "published": round(100 * published[r], 2),
            "valid": round(100 * float(board.estimate[r]), 2),
            "valid_interval": [round(100 * float(board.low[r]), 2), round(100 * float(board.high[r]), 2)],
        }
        for r, name in enumerate(scored)
    ]
    pairs = [
        {
            "a": a,
            "b": b,
            "difference": round(100 * d, 2),
            "interval": [round(100 * lo, 2), round(100 * hi, 2)],
            "order_differs": round(board.order_flip.get((a, b), 0.0), 4),
        }
        for (a, b), (d, lo, hi) in board.difference.items()
    ]
    tie_rule = ties or source_format(db, dataset).ties
    return {
        "runs": rows,
        "pairs": pairs,
        "ties": tie_rule,
        "bootstrap": {"resamples": n_boot, "seed": seed},
        "skipped": skipped,
    }


def _percent(share: Mapping[str, Any]) -> str:
    low, high = share["interval"]
    return f"{100 * share['estimate']:.1f}% (95% CI {100 * low:.1f} to {100 * high:.1f})"


def methods_paragraph(report: Mapping[str, Any]) -> str:
    """The report's methods paragraph: every number in it is a figure of the report's tables."""
    design, overall = report["design"], report["overall"]
    allocations = list(dict.fromkeys(b["allocation"] for b in design["batches"]))
    overlaps = sorted({b["overlap"] for b in design["batches"] if b["overlap"]})
    sentences = [
        f"We drew a stratified random sample without replacement of {design['drawn']} of the {design['items']} "
        f"items of {report['dataset']} with a negative caption (strata: its {design['categories']} categories; "
        f"{' then '.join(allocations)} allocation; {len(design['batches'])} "
        f"batch{'es' if len(design['batches']) != 1 else ''}).",
        f"Each drawn item was validated by {' or '.join(map(str, overlaps))} annotators, who judged whether the "
        "altered caption is wrong for the image; an item's outcome is the majority answer, a tie or a majority "
        f"of Unsure counting as ambiguous. {design['decided']} of the {design['drawn']} drawn items are decided.",
    ]
    if overall["invalid_share"] is not None:
        covers = (
            ""
            if overall["covers"] == overall["size"]
            else f" (over the {overall['covers']} items of categories with a decided item)"
        )
        sentences.append(
            f"We estimate that {_percent(overall['invalid_share'])} of the negatives are invalid and "
            f"{_percent(overall['ambiguous_share'])} ambiguous{covers} (stratified estimator; per category, exact "
            "intervals for sampling without replacement, from the hypergeometric distribution; overall, Korn and "
            "Graubard's exact interval on the design-based effective sample size, where a category that showed no "
            "invalid item, or only invalid ones, enters the variance as if one more of each had been drawn)."
        )
        sentences += _own_sentences(report)
    blind = report.get("hackability")
    if blind:
        figures = " and ".join(f"{blind['overall'][s]:.2f}% ({s})" for s in blind["scorers"])
        sentences.append(
            f"Blind text-only scorers that never see the image choose the positive caption on {figures} of all "
            "items (a tie counted half; 50% is chance)."
        )
    humans = report.get("human_baseline")
    if humans and humans["metrics"]:
        first = humans["metrics"][0]
        sentences.append(
            f"Humans answering the models' own question ({', '.join(humans['batches'])}, {humans['n']} items) reach "
            f"{first['metric']} {first['value']:.2f} (95% CI {first['interval'][0]:.2f} to {first['interval'][1]:.2f})."
        )
    board = report.get("leaderboard") or {}
    if board.get("undefined"):
        sentences.append(f"Accuracy on valid items: not yet defined ({board['undefined']}).")
    if board.get("runs"):
        parts = [
            f"{row['run']} {row['published']:.2f}% on all items and {row['valid']:.2f}% "
            f"(95% CI {row['valid_interval'][0]:.2f} to {row['valid_interval'][1]:.2f}) on valid items"
            for row in board["runs"]
        ]
        sentences.append(
            "Accuracy on valid items (invalid and ambiguous items left out; a ratio estimator over the strata, "
            "exact intervals on the effective sample size implied by the variance of "
            f"{board['bootstrap']['resamples']} stratified bootstrap resamples; ties counted {board['ties']}): "
            + "; ".join(parts)
            + "."
        )
    return " ".join(sentences)


def _own_sentences(report: Mapping[str, Any]) -> list[str]:
    """Each share the dataset's own verdicts measure, their figure against our estimate of it."""
    overall = report["overall"]
    measures = report.get("own_verdicts") or []
    parts = [
        f"{100 * overall['own'][m['outcomes']]:.1f}% ({m['definition']}) against our estimate of "
        f"{_percent(overall[SHARES[m['outcomes']][0]])} {SHARES[m['outcomes']][1]}"
        for m in measures
        if m["outcomes"] in overall.get("own", {})
    ]
    if not parts:
        return []
    return [f"On all items of the same categories the dataset's own verdicts give {'; '.join(parts)}."]


def share_text(share: Mapping[str, Any] | None) -> str:
    """A share in percent with its interval, one decimal: "10.0 (1.6 to 29.1)"; "" without one."""
    if share is None:
        return ""
    low, high = (100 * x for x in share["interval"])
    return f"{figure(100 * share['estimate'], 1)} ({figure(low, 1)} to {figure(high, 1)})"


def _with_interval(value: float | None, interval: Sequence[float] | None) -> str:
    if value is None:
        return ""
    return figure(value) + (f" ({interval_text(interval)})" if interval else "")


def design_table(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The sample's batches: allocation, target, seed, items drawn, annotators per item."""
    keys = {"batch": "batch", "allocation": "allocation", "target": "target", "seed": "seed", "drawn": "drawn"}
    return [
        {**{label: b[key] for label, key in keys.items()}, "annotators per item": b["overlap"]}
        for b in report["design"]["batches"]
    ]


def agreement_table(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each batch's agreement coefficients with their intervals (as Annotation batches names them)."""
    return [
        {
            "batch": row["batch"],
            "items": row["n_items"],
            **{COEFFICIENT_NAMES[key]: _with_interval(row[key], row["intervals"].get(key)) for key in COEFFICIENTS},
        }
        for row in report["agreement"]
    ]


def strata_table(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per category, and "all" over them, the items, drawn, decided, invalid and ambiguous counts and
    shares in percent with intervals; beside each share the dataset's own verdicts measure, their
    figure over all items, labelled with its definition (and the invalid-or-ambiguous share shown
    only where they measure it)."""
    measured = {m["outcomes"]: m["definition"] for m in report.get("own_verdicts") or []}
    shown = [o for o in SHARES if o != "invalid+ambiguous" or o in measured]

    def row_of(category: str, counts: Mapping[str, Any], figures: Mapping[str, Any]) -> dict[str, Any]:
        row = {"category": category, **counts}
        for outcomes in shown:
            key, words = SHARES[outcomes]
            row[f"{words} % (95% CI)"] = share_text(figures[key])
            if outcomes in measured:
                own = figures.get("own", {}).get(outcomes)
                row[f"dataset's own % ({measured[outcomes]})"] = "" if own is None else figure(100 * own, 1)
        return row

    keys = ("drawn", "decided", "invalid", "ambiguous")
    rows = [row_of(r["category"], {"items": r["size"], **{k: r[k] for k in keys}}, r) for r in report["strata"]]
    overall = report["overall"]
    if overall["invalid_share"] is not None:
        design = report["design"]
        counts = {"items": overall["covers"], "drawn": design["drawn"], "decided": design["decided"]}
        counts |= {"invalid": overall["invalid_share"]["count"], "ambiguous": overall["ambiguous_share"]["count"]}
        rows.append(row_of("all", counts, overall))
    return rows


def compared_shares(report: Mapping[str, Any]) -> dict[str, Any]:
    """What the page charts per category: the first share the dataset's own verdicts measure (the
    invalid share where they measure none), our estimate with its interval in percent and their
    figure, with a title and names saying which is compared with which."""
    measures = report.get("own_verdicts") or []
    outcomes = measures[0]["outcomes"] if measures else "invalid"
    key, words = SHARES[outcomes]
    rows = [
        {
            "category": r["category"],
            "estimate": 100 * r[key]["estimate"],
            "low": 100 * r[key]["interval"][0],
            "high": 100 * r[key]["interval"][1],
            "own": 100 * r["own"][outcomes] if outcomes in r.get("own", {}) else None,
        }
        for r in report["strata"]
        if r[key] is not None
    ]
    title = f"{words.capitalize()} negatives per category, % (95% interval)"
    if not measures:
        return {
            "title": title,
            "axis": f"{words} %",
            "estimate_name": "estimated from the sample",
            "own_name": None,
            "rows": rows,
        }
    definition = measures[0]["definition"]
    return {
        "title": f'{title}, against the dataset\'s own "{definition.split(":")[0]}"',
        "axis": f"{words} %",
        "estimate_name": f"{words}, estimated from the sample",
        "own_name": f"the dataset's own verdicts on all items ({definition})",
        "rows": rows,
    }


def blind_table(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Blind text-only accuracy (percent, a tie counted half) per category and over all items."""
    blind = report["hackability"]
    rows = [*blind["by_category"].items(), ("all", blind["overall"])]
    return [{"category": c, **{s: figure(v[s]) for s in blind["scorers"]}} for c, v in rows]


def leaderboard_table(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each run's accuracy on all items (published) and on valid items with its interval."""
    return [
        {
            "run": r["run"],
            "all items %": figure(r["published"]),
            "valid items % (95% CI)": f"{figure(r['valid'])} ({interval_text(r['valid_interval'])})",
        }
        for r in (report.get("leaderboard") or {}).get("runs", [])
    ]


def pairs_table(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each pair of runs: A - B on valid items with its interval, and the resamples ordering them
    unlike their all-items figures."""
    return [
        {
            "run A": p["a"],
            "run B": p["b"],
            "A - B on valid items, points (95% CI)": f"{figure(p['difference'])} ({interval_text(p['interval'])})",
            "resamples ordering them unlike all items": f"{figure(100 * p['order_differs'], 1)}%",
        }
        for p in (report.get("leaderboard") or {}).get("pairs", [])
    ]


def human_table(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The human baseline's metrics with their intervals (empty without baseline batches)."""
    humans = report.get("human_baseline") or {"metrics": []}
    return [
        {"metric": m["metric"], "value (95% CI)": f"{figure(m['value'])} ({interval_text(m['interval'])})"}
        for m in humans["metrics"]
    ]


def _markdown_table(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return []
    cells = [[("" if v is None else str(v)) for v in row.values()] for row in rows]
    lines = ["| " + " | ".join(rows[0]) + " |", "| --- " * len(rows[0]) + "|"]
    return lines + ["| " + " | ".join(row) + " |" for row in cells]


def report_markdown(report: Mapping[str, Any]) -> str:
    """The benchmark card in Markdown: the same figures as the JSON report, in the tables the page shows."""
    lines = [f"# Benchmark health: {report['dataset']}", "", "## Methods", "", report["methods"], ""]
    lines += ["## Sample", "", *_markdown_table(design_table(report))]
    lines += ["", "## Agreement of the validations", "", *_markdown_table(agreement_table(report))]
    lines += ["", "## Invalid negatives per category", "", *_markdown_table(strata_table(report))]
    if report.get("hackability"):
        lines += ["", "## Hackability: blind text-only accuracy, % (a tie counted half; chance 50)", ""]
        lines += _markdown_table(blind_table(report))
    if leaderboard_table(report):
        lines += ["", "## Leaderboard: all items (published) and valid items", ""]
        lines += _markdown_table(leaderboard_table(report))
        if pairs_table(report):
            lines += ["", *_markdown_table(pairs_table(report))]
    humans = report.get("human_baseline")
    if humans and human_table(report):
        lines += ["", f"## Human baseline ({', '.join(humans['batches'])}; {humans['n']} items)", ""]
        lines += _markdown_table(human_table(report))
    return "\n".join(lines) + "\n"
