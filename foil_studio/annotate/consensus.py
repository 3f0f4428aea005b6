"""From labels to decisions: majority vote, Dawid-Skene, gold-based exclusion, adjudication.

Rules, in order, for each question (item, part) of a batch:

1. An admin decision (adjudication) wins and is recorded as such.
2. Annotators whose gold answers screen them out (``annotate.gold``: accuracy below the batch's
   ``gold_pass`` with 95% confidence) are left out of the vote.
3. Majority vote over the remaining answers; a tie is *unresolved* and goes to the adjudication
   queue (it is never broken silently).

Dawid-Skene (crowd-kit) is offered beside the vote: it weighs annotators by their estimated
reliability and reports each one's estimated accuracy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd
import sqlite_utils

from foil_studio.annotate.batch_reports import batch_progress
from foil_studio.annotate.gold import GOLD_PASS, gold_upper_bound
from foil_studio.annotate.task_types import TaskType
from foil_studio.data import store

if TYPE_CHECKING:
    from crowdkit.aggregation import DawidSkene

Unit = tuple[int, int]


@dataclass(frozen=True)
class Decision:
    """The outcome for one question: the answer (None if unresolved) and which rule gave it."""

    item: int
    part: int
    answer: str | None
    rule: str  # "admin", "majority", "unresolved"
    votes: dict[str, int]


def answer_key(answer: dict[str, Any]) -> str:
    """One comparable string per answer (multi-question answers joined in a fixed order)."""
    return str(answer["answer"]) if set(answer) == {"answer"} else "|".join(f"{k}={answer[k]}" for k in sorted(answer))


def answer_from_key(key: str, questions: tuple[str, ...]) -> dict[str, str]:
    """The answer an `answer_key` was made from.

    >>> answer_from_key("commonsense=2|grammar=1", ("commonsense", "grammar")), answer_from_key("A", ("answer",))
    ({'commonsense': '2', 'grammar': '1'}, {'answer': 'A'})
    """
    if questions == ("answer",):
        return {"answer": key}
    return dict(part.split("=", 1) for part in key.split("|"))


@dataclass(frozen=True)
class Exclusion:
    """An annotator left out of the vote, and why (their gold accuracy against the pass mark)."""

    annotator: str
    gold_accuracy: float
    gold_n: int
    gold_pass: float

    @property
    def reason(self) -> str:
        """Why, in words a methods section can quote."""
        right = round(self.gold_accuracy * self.gold_n / 100)
        return (
            f"{right} of {self.gold_n} gold items right ({self.gold_accuracy:.0f}%; at most "
            f"{gold_upper_bound(right, self.gold_n):.0f}% with 95% confidence, below the pass mark of "
            f"{self.gold_pass:.0f}%)"
        )


def vote_words(task_type: TaskType, item: Mapping[str, Any], decision: Decision) -> dict[str, str]:
    """Each answer voted on the decision's question, in words (`TaskType.answer_words`)."""
    return {
        key: task_type.answer_words(item, decision.part, answer_from_key(key, task_type.questions))
        for key in decision.votes
    }


def votes_text(words: Mapping[str, str], decision: Decision) -> str:
    """The votes in words, most voted first.

    >>> votes_text({"negative_false": "Altered is wrong", "unsure": "Unsure"},
    ...            Decision(1, 0, None, "unresolved", {"unsure": 1, "negative_false": 2}))
    'Altered is wrong (2); Unsure (1)'
    """
    ranked = sorted(decision.votes.items(), key=lambda vote: -vote[1])
    return "; ".join(f"{words[key]} ({count})" for key, count in ranked)


def excluded_annotators(db: sqlite_utils.Database, batch_name: str) -> list[Exclusion]:
    """Annotators whose gold answers screen them out (`annotate.gold`: accuracy below the batch's
    pass mark with 95% confidence); those with too few gold answers to tell, or none, stay in."""
    mark = float(store.get_batch(db, batch_name)["config"].get("gold_pass", GOLD_PASS))
    return [
        Exclusion(row["annotator"], row["gold_accuracy"], row["gold_n"], mark)
        for row in batch_progress(db, batch_name)
        if row["screened_out"]
    ]


def decisions(db: sqlite_utils.Database, batch_name: str, *, include_excluded: bool = False) -> list[Decision]:
    """The decision for every answered question of a batch (gold questions excluded).

    Annotators below the gold pass mark are left out of the vote unless `include_excluded`.
    """
    batch = store.get_batch(db, batch_name)
    left_out = set() if include_excluded else {e.annotator for e in excluded_annotators(db, batch_name)}
    admin = store.batch_decisions(db, batch["id"])
    votes: dict[Unit, Counter[str]] = {}
    for label in store.batch_labels(db, batch["id"]):
        if not label["is_gold"] and label["annotator"] not in left_out:
            votes.setdefault((label["item"], label["part"]), Counter())[answer_key(label["answer"])] += 1
    result = []
    for unit in sorted(set(votes) | set(admin)):
        counts = votes.get(unit, Counter())
        if unit in admin:
            result.append(Decision(*unit, answer_key(admin[unit]["answer"]), "admin", dict(counts)))
            continue
        ranked = counts.most_common()
        tied = len(ranked) > 1 and ranked[0][1] == ranked[1][1]
        result.append(
            Decision(*unit, None if tied else ranked[0][0], "unresolved" if tied else "majority", dict(counts))
        )
    return result


def adjudication_queue(db: sqlite_utils.Database, batch_name: str, *, include_excluded: bool = False) -> list[Decision]:
    """Questions whose annotators disagree and that no admin has decided yet (annotators below the
    gold pass mark are left out unless `include_excluded`: `excluded_annotators` says who and why)."""
    return [
        d
        for d in decisions(db, batch_name, include_excluded=include_excluded)
        if d.rule != "admin" and len(d.votes) > 1
    ]


def dawid_skene(db: sqlite_utils.Database, batch_name: str, *, n_iter: int = 100) -> dict[str, Any]:
    """Dawid-Skene labels per question and each annotator's estimated accuracy (crowd-kit)."""
    batch = store.get_batch(db, batch_name)
    rows = [
        {"task": f"{label['item']}:{label['part']}", "worker": label["annotator"], "label": answer_key(label["answer"])}
        for label in store.batch_labels(db, batch["id"])
        if not label["is_gold"]
    ]
    if not rows:
        return {"labels": {}, "accuracy": {}}
    # here: crowd-kit imports nltk and scipy.stats, a second on every `foil` command and app start
    from crowdkit.aggregation import DawidSkene

    frame = pd.DataFrame(rows)
    model = DawidSkene(n_iter=n_iter).fit(frame)
    assert model.labels_ is not None  # set by fit
    return {"labels": {str(k): v for k, v in model.labels_.items()}, "accuracy": _worker_accuracy(model)}


def _worker_accuracy(model: DawidSkene) -> dict[str, float]:
    """Each worker's probability of giving the true label, weighted by the estimated class priors."""
    errors, priors = model.errors_, model.priors_
    assert errors is not None and priors is not None  # set by fit
    accuracy = {}
    for worker in errors.index.get_level_values(0).unique():
        matrix = errors.loc[worker]  # rows: observed label, columns: true label
        accuracy[str(worker)] = float(sum(priors[c] * matrix.loc[c, c] for c in priors.index if c in matrix.index))
    return accuracy
