"""Does the margin an audit on a sample states hold the whole dataset's blind accuracy? (TESTING.md,
"A million items")

    .venv/bin/python bench/audit_sample_margin.py          # --reps N (default 60)

2,000 pairs (600 whose negative is a negation, 1,400 balanced); the whole dataset's figure is the
mean of three full audits; then `--reps` audits on a random 500 (`audit.AUDIT_MOST` lowered), each
asked whether the whole figure lies within its stated `margin_overall`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: its packages and tests

from foil_studio.analysis import audit
from foil_studio.data import store
from foil_studio.data.formats import Parsed
from foil_studio.data.items import Item
from foil_studio.data.loading import store_parsed
from tests.test_audit import balanced_pairs, negated_pairs

SCORERS = ("stats", "ngram")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=60)
    args = parser.parse_args()
    db = store.open_db(None)
    parsed = Parsed("jsonl", "pairs")
    for n, (caption, negative) in enumerate(negated_pairs(600, 3) + balanced_pairs(1400, 4)):
        category = "negated" if n < 600 else "balanced"
        parsed.add(Item("pair", category, f"{category}/{n}", (caption, negative), (f"{n}.jpg",)), "x", n)
    store_parsed(db, parsed, source_format="jsonl", path="x")
    whole = [audit.audit(db, "pairs", scorers=SCORERS, seed=seed)["blind"] for seed in range(3)]
    truth = {s: sum(w[s] for w in whole) / len(whole) for s in SCORERS}
    audit.AUDIT_MOST = 500
    held = dict.fromkeys(SCORERS, 0)
    for rep in range(args.reps):
        part = audit.audit(db, "pairs", scorers=SCORERS, seed=100 + rep)
        for s in SCORERS:
            held[s] += abs(part["blind"][s] - truth[s]) <= part["sample"]["margin_overall"]
    margin = part["sample"]["margin_overall"]
    shares = ", ".join(f"{s} {held[s] / args.reps:.2f}" for s in SCORERS)
    print(f"whole dataset {truth}; stated margin {margin} points; the whole figure within it: {shares}")


if __name__ == "__main__":
    main()
