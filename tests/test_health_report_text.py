"""`annotate.health`'s report and card pinned to their exact output (issue 40's mutation run): the
text the page, the Markdown card and the CLI print, where that text is what a reader gets, and the
report's figures built from hand-made samples.

The card is a function of the report alone, so its tests give it a report made by hand (`REPORT`:
two categories, two batches, the dataset's own verdicts, the blind audit, a human baseline and
two runs) and read every line it prints; each expected line was checked against the report's
figures by eye."""

# ruff: noqa: E501  (the expected Markdown tables are one line a row, as the card prints them)

from __future__ import annotations

import copy
import dataclasses
import json
import re

import numpy as np
import pytest
from pytest import approx

from foil_studio.annotate.health import card


def share(estimate: float, low: float, high: float, count: int, decided: int, size: int) -> dict:
    return {"estimate": estimate, "interval": [low, high], "count": count, "decided": decided, "size": size}


# a batch drawn at random within its categories, as the report's design lists it
RANDOM_DRAW = {"strategy": "random", "predictions": None, "floor_share": None, "plan": None}

REPORT = {
    "dataset": "toy-bench",
    "estimator": "stratified",
    "design": {
        "batches": [
            {
                "batch": "health-1",
                "allocation": "proportional",
                **RANDOM_DRAW,
                "target": "share",
                "seed": 0,
                "drawn": 30,
                "overlap": 3,
                "decided": 30,
                "answers": {"items": 30, "min": 3, "max": 3, "mean": 3.0},
            },
            {
                "batch": "health-2",
                "allocation": "neyman",
                **RANDOM_DRAW,
                "target": "share",
                "seed": 1,
                "drawn": 20,
                "overlap": 2,
                "decided": 15,
                "answers": {"items": 15, "min": 1, "max": 2, "mean": 1.6},
            },
        ],
        "items": 400,
        "categories": 2,
        "drawn": 50,
        "decided": 45,
        "answers": {"items": 45, "min": 1, "max": 3, "mean": 2.53},
    },
    "agreement": [
        {
            "batch": "health-1",
            "n_items": 30,
            "percent_agreement": 81.25,
            "cohen_mean": 0.5,
            "fleiss": 0.4567,
            "krippendorff_alpha": None,
            "gwet_ac1": 0.7,
            "intervals": {"percent_agreement": [70.0, 90.5], "fleiss": [0.2, 0.7]},
        },
    ],
    "own_verdicts": [
        {"verdicts": "invalid", "definition": "known flaw: the demo planted it"},
        {"verdicts": "invalid+ambiguous", "definition": "not valid: fewer than 3 of 5 said valid"},
    ],
    "strata": [
        {
            "category": "color",
            "size": 100,
            "drawn": 20,
            "decided": 18,
            "valid": 12,
            "invalid": 4,
            "ambiguous": 2,
            "invalid_share": share(0.2222, 0.0812, 0.4456, 4, 18, 100),
            "ambiguous_share": share(0.1111, 0.0204, 0.3211, 2, 18, 100),
            "invalid_or_ambiguous_share": share(0.3333, 0.1555, 0.5678, 6, 18, 100),
            "own": {"invalid": 0.25, "invalid+ambiguous": 0.31},
        },
        {
            "category": "count",
            "size": 300,
            "drawn": 30,
            "decided": 27,
            "valid": 25,
            "invalid": 1,
            "ambiguous": 1,
            "invalid_share": share(0.037, 0.0011, 0.1802, 1, 27, 300),
            "ambiguous_share": share(0.037, 0.0011, 0.1802, 1, 27, 300),
            "invalid_or_ambiguous_share": share(0.0741, 0.0101, 0.2345, 2, 27, 300),
            "own": {"invalid": 0.02},
        },
    ],
    "overall": {
        "covers": 400,
        "size": 400,
        "invalid_share": share(0.0833, 0.0321, 0.1789, 5, 45, 400),
        "ambiguous_share": share(0.0556, 0.0123, 0.1432, 3, 45, 400),
        "invalid_or_ambiguous_share": share(0.1389, 0.0654, 0.2468, 8, 45, 400),
        "categories_without_decided_items": [],
        "own": {"invalid": 0.0775, "invalid+ambiguous": 0.12},
    },
    "hackability": {
        "scorers": ["stats", "ngram"],
        "ties": "half",
        "overall": {"stats": 55.5, "ngram": 61.25},
        "by_category": {"color": {"stats": 50.0, "ngram": 70.0}, "count": {"stats": 57.33, "ngram": 58.0}},
    },
    "human_baseline": {
        "batches": ["baseline-1", "baseline-2"],
        "n": 40,
        "min_items": 30,
        "metrics": [
            {"metric": "accuracy", "value": 92.5, "interval": [83.1, 97.4]},
            {"metric": "text score", "value": -0.001, "interval": [-5.25, 4.5]},
        ],
    },
    "leaderboard": {
        "runs": [
            {"run": "clip", "published": 71.25, "valid": 74.5, "valid_interval": [65.01, 82.2]},
            {"run": "blip", "published": 68.0, "valid": 69.99, "valid_interval": [60.0, 78.5]},
        ],
        "pairs": [{"a": "clip", "b": "blip", "difference": 4.51, "interval": [-1.2, 10.25], "order_differs": 0.0725}],
        "ties": "half",
        "bootstrap": {"resamples": 1000, "seed": 0},
        "skipped": {},
    },
}


def test_a_share_is_printed_in_percent_with_its_interval_to_one_decimal():
    assert card._percent({"estimate": 0.1234, "interval": [0.05, 0.2]}) == "12.3% (95% CI 5.0 to 20.0)"
    assert card.share_text({"estimate": 0.1234, "interval": [0.05, 0.2]}) == "12.3 (5.0 to 20.0)"
    assert card.share_text(None) == ""


SURVEY_WORDS = (
    "(stratified estimator; per category, exact intervals for sampling without replacement, from the hypergeometric "
    "distribution; overall, Korn and Graubard's exact interval on the design-based effective sample size, where a "
    "category that showed no invalid item, or only invalid ones, enters the variance as if one more of each had been "
    "drawn)."
)
DRAWN = (
    "We drew a stratified random sample without replacement of 50 of the 400 items of toy-bench with a negative "
    "caption (strata: its 2 categories; "
)
JUDGED = (
    "Annotators judged whether the altered caption is wrong for the image; an item's verdict is the majority answer, "
    "a tie or a majority of Unsure counting as ambiguous and an admin's decision winning. 45 of the 50 drawn items "
    "are decided"
)
ACCURACY = (
    "Accuracy on valid items (invalid and ambiguous items left out; a ratio estimator over the strata, exact "
    "intervals on the effective sample size implied by the variance of 1000 stratified bootstrap resamples; ties "
    "counted half): clip 71.25% on all items and 74.50% (95% CI 65.01 to 82.20) on valid items"
)


def test_the_methods_paragraph_of_a_full_report_word_for_word():
    assert card.methods_paragraph(REPORT) == " ".join(
        [
            DRAWN + "proportional then neyman allocation; 2 batches).",
            JUDGED + "; they had 1 to 3 answers each (mean 2.5).",
            "We estimate that 8.3% (95% CI 3.2 to 17.9) of the negatives are invalid and 5.6% (95% CI 1.2 to 14.3) "
            "ambiguous " + SURVEY_WORDS,
            "On all items of the same categories the dataset's own verdicts give 7.8% (known flaw: the demo planted "
            "it) against our estimate of 8.3% (95% CI 3.2 to 17.9) invalid; 12.0% (not valid: fewer than 3 of 5 "
            "said valid) against our estimate of 13.9% (95% CI 6.5 to 24.7) invalid or ambiguous.",
            "Blind text-only scorers that never see the image choose the positive caption on 55.50% (stats) and "
            "61.25% (ngram) of all items (a tie counted half; 50% is chance).",
            "Humans answering the models' own question (baseline-1, baseline-2) reach accuracy 92.50 from 40 items "
            "(95% CI 83.10 to 97.40).",
            ACCURACY + "; blip 68.00% on all items and 69.99% (95% CI 60.00 to 78.50) on valid items.",
        ]
    )


def test_the_methods_paragraph_of_one_batch_part_of_the_strata_and_no_valid_item_yet():
    report = copy.deepcopy(REPORT)
    report["design"]["batches"] = report["design"]["batches"][1:]
    report["design"]["answers"] = report["design"]["batches"][0]["answers"] = {
        "items": 45,
        "min": 1,
        "max": 1,
        "mean": 1,
    }
    report["overall"]["covers"] = 300
    report["own_verdicts"] = report["hackability"] = None
    report["human_baseline"] = {"batches": ["b"], "n": 3, "min_items": 30, "metrics": []}
    report["leaderboard"] = {"runs": [], "skipped": {}, "undefined": "no decided item is valid yet"}
    assert card.methods_paragraph(report) == " ".join(
        [
            DRAWN + "neyman allocation; 1 batch).",
            JUDGED + "; each had 1 answer.",
            "We estimate that 8.3% (95% CI 3.2 to 17.9) of the negatives are invalid and 5.6% (95% CI 1.2 to 14.3) "
            "ambiguous (over the 300 items of categories with a decided item) " + SURVEY_WORDS,
            "Accuracy on valid items: not yet defined (no decided item is valid yet).",
        ]
    )


def test_the_methods_paragraph_without_a_decided_item_or_own_verdicts_it_can_compare():
    report = copy.deepcopy(REPORT)
    report["overall"]["invalid_share"] = None
    report["leaderboard"]["runs"] = report["leaderboard"]["runs"][:1]
    report["hackability"] = report["human_baseline"] = None
    assert card.methods_paragraph(report) == " ".join(
        [
            DRAWN + "proportional then neyman allocation; 2 batches).",
            JUDGED + "; they had 1 to 3 answers each (mean 2.5).",
            ACCURACY + ".",
        ]
    )
    # own verdicts of a share the overall figures do not hold say nothing
    report = copy.deepcopy(REPORT)
    report["overall"]["own"] = {}
    assert "own verdicts" not in card.methods_paragraph(report)
    del report["overall"]["own"]
    assert "own verdicts" not in card.methods_paragraph(report)


def test_a_human_baseline_from_too_few_items_is_not_cited_and_its_figures_say_so():
    """It cited "accuracy 100.00 (95% CI 100.00 to 100.00)" from 2 items; now the paragraph says a
    baseline needs 30 decided items, and the table gives the figure with its n and exact interval."""
    report = copy.deepcopy(REPORT)
    report["human_baseline"] = {
        "batches": ["humans"],
        "n": 2,
        "min_items": 30,
        "metrics": [{"metric": "accuracy_micro", "value": 100.0, "interval": [15.81, 100.0]}],
    }
    paragraph = card.methods_paragraph(report)
    assert (
        "A human baseline (humans answering the models' own question, humans) needs at least 30 decided items and "
        "has 2, so none is cited." in paragraph
    )
    assert "Humans answering" not in paragraph and "100.00" not in paragraph
    assert card.human_table(report) == [
        {
            "metric": "accuracy_micro",
            "value": "100.00 from 2 items (95% CI 15.81 to 100.00); too few for a baseline (30 needed)",
        }
    ]
    markdown = card.report_markdown({**report, "methods": paragraph})
    assert "| accuracy_micro | 100.00 from 2 items (95% CI 15.81 to 100.00); too few for a baseline (30 needed) |" in (
        markdown
    )
    assert not {"nan", "None"} & set(re.findall(r"[A-Za-z]+", markdown))
    report["human_baseline"]["n"] = 30  # at the minimum it is a baseline
    assert "reach accuracy_micro 100.00 from 30 items (95% CI 15.81 to 100.00)." in card.methods_paragraph(report)


def test_the_paragraph_says_which_batches_drew_at_random_and_which_on_which_predictions():
    report = copy.deepcopy(REPORT)
    third = {**report["design"]["batches"][1], "batch": "health-3", "strategy": "active", "predictions": "judge"}
    plan = {"rule": "neyman", "pseudo_answers": 4, "floor": 0.02}
    fourth = {**third, "batch": "health-4", "strategy": "predicted", "predictions": "votes", "plan": plan}
    report["design"]["batches"] = [*report["design"]["batches"], {**third, "floor_share": 0.1}, fourth]
    report["design"]["batches"][1]["strategy"] = "neyman"  # a random draw, by name
    paragraph = card.methods_paragraph(report)
    assert paragraph.startswith(
        "We drew a stratified sample without replacement of 50 of the 400 items of toy-bench with a negative caption "
        "(strata: its 2 categories; proportional then neyman allocation; 4 batches). Batches health-1 and health-2 "
        "drew at random; batch health-3 drew actively, on the predictions judge: within each category every item not "
        "drawn before on its own coin, with a probability that grows with the predictions' uncertainty (sqrt(f (1 - "
        "f)), f the predicted probability that the negative is invalid), 10% of each probability spread evenly over "
        "the items so that none is left out; batch health-4 drew by prediction, on the predictions votes: each "
        "category cut into bins of f (the predicted probability that the negative is invalid) by Dalenius and "
        "Hodges' cumulative square-root rule, every bin given a few items first and the rest shared by Neyman's rule "
        "on its mean prediction (weighed as the bin's share of the answers against 4 answers at one half, kept within "
        "2-98%), the items drawn at random within each bin. Annotators judged"
    )
    del report["design"]["batches"][3]["plan"]  # a batch drawn before batches recorded their plan
    assert "Neyman's rule on its mean prediction, the items drawn at random" in card.methods_paragraph(report)
    assert [row["draw"] for row in card.design_table(report)] == ["random", "neyman", "active", "predicted", ""]
    report["design"]["batches"] = report["design"]["batches"][3:]
    assert (
        "(strata: its 2 categories; neyman allocation; 1 batch). Batch health-4 drew by prediction, on the predictions votes"
        in (card.methods_paragraph(report))
    )


def test_before_any_answer_the_paragraph_counts_no_answers_and_says_no_overlap():
    """After a batch nobody answered it said "Each drawn item was validated by 2 or 3 annotators"."""
    report = copy.deepcopy(REPORT)
    report["design"] |= {"decided": 0, "answers": None}
    for batch in report["design"]["batches"]:
        batch |= {"decided": 0, "answers": None}
    report["overall"]["invalid_share"] = None
    report["leaderboard"] = report["human_baseline"] = report["hackability"] = None
    assert card.methods_paragraph(report) == " ".join(
        [
            DRAWN + "proportional then neyman allocation; 2 batches).",
            JUDGED.replace("45 of the 50", "0 of the 50") + ".",
        ]
    )
    assert [row["answers per decided item"] for row in card.design_table(report)] == ["", "", ""]
    report["screened_out"] = ["ann-x"]
    report["design"]["answers"] = {"items": 3, "min": 2, "max": 2, "mean": 2.0}
    assert card.methods_paragraph(report).endswith(
        "; each had 2 answers (answers of annotators screened out by their gold answers left out)."
    )


MARKDOWN_HEAD = """\
# Benchmark health: toy-bench

## Methods

METHODS

## Sample

| batch | allocation | draw | target | seed | drawn | decided | annotators asked per item | answers per decided item |
| --- | --- | --- | --- | --- | --- | --- | --- | --- |
| health-1 | proportional | random | share | 0 | 30 | 30 | 3 | 3 |
| health-2 | neyman | random | share | 1 | 20 | 15 | 2 | 1 to 2 (mean 1.6) |
| all |  |  |  |  | 50 | 45 |  | 1 to 3 (mean 2.5) |

## Agreement of the validations

| batch | items | Percent agreement | Cohen's kappa, mean over annotator pairs | Fleiss' kappa | Krippendorff's alpha | Gwet's AC1 |
| --- | --- | --- | --- | --- | --- | --- |
| health-1 | 30 | 81.25 (70.00 to 90.50) | 0.50 | 0.46 (0.20 to 0.70) |  | 0.70 |

## Invalid negatives per category

| category | items | drawn | decided | invalid | ambiguous | invalid % (95% CI) | dataset's own % (known flaw: the demo planted it) | ambiguous % (95% CI) | invalid or ambiguous % (95% CI) | dataset's own % (not valid: fewer than 3 of 5 said valid) |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
| color | 100 | 20 | 18 | 4 | 2 | 22.2 (8.1 to 44.6) | 25.0 | 11.1 (2.0 to 32.1) | 33.3 (15.6 to 56.8) | 31.0 |
| count | 300 | 30 | 27 | 1 | 1 | 3.7 (0.1 to 18.0) | 2.0 | 3.7 (0.1 to 18.0) | 7.4 (1.0 to 23.4) |  |
"""


def test_the_markdown_card_of_a_full_report_line_for_line():
    report = {**REPORT, "methods": "METHODS"}
    assert (
        card.report_markdown(report)
        == MARKDOWN_HEAD
        + """\
| all | 400 | 50 | 45 | 5 | 3 | 8.3 (3.2 to 17.9) | 7.8 | 5.6 (1.2 to 14.3) | 13.9 (6.5 to 24.7) | 12.0 |

## Hackability: blind text-only accuracy, % (a tie counted half; chance 50)

| category | stats | ngram |
| --- | --- | --- |
| color | 50.00 | 70.00 |
| count | 57.33 | 58.00 |
| all | 55.50 | 61.25 |

## Leaderboard: all items (published) and valid items

| run | all items % | valid items % (95% CI) |
| --- | --- | --- |
| clip | 71.25 | 74.50 (65.01 to 82.20) |
| blip | 68.00 | 69.99 (60.00 to 78.50) |

| run A | run B | A - B on valid items, points (95% CI) | resamples ordering them unlike all items |
| --- | --- | --- | --- |
| clip | blip | 4.51 (-1.20 to 10.25) | 7.2% |

## Human baseline (baseline-1, baseline-2; 40 items)

| metric | value |
| --- | --- |
| accuracy | 92.50 from 40 items (95% CI 83.10 to 97.40) |
| text score | 0.00 from 40 items (95% CI -5.25 to 4.50) |
"""
    )


def test_the_markdown_card_leaves_out_the_tables_a_report_has_no_rows_for():
    report = copy.deepcopy({**REPORT, "methods": "METHODS"})
    report["overall"]["invalid_share"] = None
    report["leaderboard"]["runs"] = report["leaderboard"]["runs"][:1]
    report["leaderboard"]["pairs"] = []
    report["hackability"] = None
    report["human_baseline"] = {"batches": ["b"], "n": 3, "min_items": 30, "metrics": []}
    assert (
        card.report_markdown(report)
        == MARKDOWN_HEAD
        + """\

## Leaderboard: all items (published) and valid items

| run | all items % | valid items % (95% CI) |
| --- | --- | --- |
| clip | 71.25 | 74.50 (65.01 to 82.20) |
"""
    )
    report["leaderboard"] = None
    report["agreement"] = []
    strata_table = MARKDOWN_HEAD.split("## Invalid negatives per category\n", 1)[1]
    assert card.report_markdown(report).endswith(
        "\n## Agreement of the validations\n\n\n## Invalid negatives per category\n" + strata_table
    )


def test_the_strata_table_rows_are_keyed_by_their_column_names_and_empty_where_nothing_is_known():
    """The page shows the rows as a table by their keys (the Markdown card by position)."""
    report = copy.deepcopy(REPORT)
    report["strata"][1] |= {"decided": 0, "invalid": 0, "ambiguous": 0, "valid": 0}
    report["strata"][1] |= dict.fromkeys(("invalid_share", "ambiguous_share", "invalid_or_ambiguous_share"))
    del report["strata"][1]["own"]
    rows = card.strata_table(report)
    own_invalid, own_either = (f"dataset's own % ({m['definition']})" for m in REPORT["own_verdicts"])
    assert rows[1] == {
        "category": "count",
        "items": 300,
        "drawn": 30,
        "decided": 0,
        "invalid": 0,
        "ambiguous": 0,
        "invalid % (95% CI)": "",
        own_invalid: "",
        "ambiguous % (95% CI)": "",
        "invalid or ambiguous % (95% CI)": "",
        own_either: "",
    }
    assert rows[2] == {
        "category": "all",
        "items": 400,
        "drawn": 50,
        "decided": 45,
        "invalid": 5,
        "ambiguous": 3,
        "invalid % (95% CI)": "8.3 (3.2 to 17.9)",
        own_invalid: "7.8",
        "ambiguous % (95% CI)": "5.6 (1.2 to 14.3)",
        "invalid or ambiguous % (95% CI)": "13.9 (6.5 to 24.7)",
        own_either: "12.0",
    }
    # the chart leaves out a category without an estimate, and has no own figure where none is known
    report = copy.deepcopy(REPORT)
    del report["strata"][1]["own"]
    assert [r["own"] for r in card.compared_shares(report)["rows"]] == [25.0, None]


def test_tables_of_a_report_without_runs_or_humans_are_empty_and_a_missing_cell_is_blank():
    report = copy.deepcopy(REPORT)
    report["leaderboard"] = {"runs": [], "skipped": {}, "undefined": "no decided item is valid yet"}
    report["human_baseline"] = None
    assert card.pairs_table(report) == card.leaderboard_table(report) == card.human_table(report) == []
    report["leaderboard"] = None
    assert card.pairs_table(report) == card.leaderboard_table(report) == []
    assert card._markdown_table([{"a": None, "b": 1}, {"a": 0, "b": "x"}]) == [
        "| a | b |",
        "| --- | --- |",
        "|  | 1 |",
        "| 0 | x |",
    ]
    assert card._markdown_table([]) == []


def test_without_own_verdicts_the_strata_table_shows_the_two_shares_and_no_own_column():
    report = copy.deepcopy(REPORT)
    report["own_verdicts"] = None
    assert card.strata_table(report)[0] == {
        "category": "color",
        "items": 100,
        "drawn": 20,
        "decided": 18,
        "invalid": 4,
        "ambiguous": 2,
        "invalid % (95% CI)": "22.2 (8.1 to 44.6)",
        "ambiguous % (95% CI)": "11.1 (2.0 to 32.1)",
    }


def test_the_chart_compares_the_first_share_the_dataset_measures_or_else_shows_the_invalid_share():
    compared = card.compared_shares(REPORT)
    assert {k: v for k, v in compared.items() if k != "rows"} == {
        "title": 'Invalid negatives per category, % (95% interval), against the dataset\'s own "known flaw"',
        "axis": "invalid %",
        "estimate_name": "invalid, estimated from the sample",
        "own_name": "the dataset's own verdicts on all items (known flaw: the demo planted it)",
    }
    assert compared["rows"] == [
        {"category": "color", "estimate": approx(22.22), "low": approx(8.12), "high": approx(44.56), "own": 25.0},
        {"category": "count", "estimate": approx(3.7), "low": approx(0.11), "high": approx(18.02), "own": 2.0},
    ]
    report = copy.deepcopy(REPORT)
    report["own_verdicts"] = REPORT["own_verdicts"][1:]
    compared = card.compared_shares(report)
    assert compared["title"] == (
        'Invalid or ambiguous negatives per category, % (95% interval), against the dataset\'s own "not valid"'
    )
    assert (compared["axis"], compared["estimate_name"]) == (
        "invalid or ambiguous %",
        "invalid or ambiguous, estimated from the sample",
    )
    assert [r["own"] for r in compared["rows"]] == [31.0, None]
    assert compared["rows"][0]["high"] == approx(56.78)
    report["own_verdicts"] = None
    report["strata"][1]["invalid_share"] = None
    assert card.compared_shares(report) == {
        "title": "Invalid negatives per category, % (95% interval)",
        "axis": "invalid %",
        "estimate_name": "estimated from the sample",
        "own_name": None,
        "rows": [
            {"category": "color", "estimate": approx(22.22), "low": approx(8.12), "high": approx(44.56), "own": 25.0}
        ],
    }


# --- the report over the store ----------------------------------------------------------------------

PIECES = {"existence": 12, "plurals": 20, "counting-hard": 8, "relations": 6}  # a tiny VALSE's pieces and items


def tiny_valse(db, folder, votes: bool = True) -> str:
    """A VALSE of four pieces written to `folder` and imported: every third foil judged not valid by
    its crowd (caption chosen by 1 of 3; no votes at all unless `votes`), and two runs of made-up
    scores ("alpha", "beta", right and wrong by the item's place, beta with ties)."""
    from foil_studio.data import store
    from foil_studio.data.loading import import_path

    folder.mkdir()
    for piece, n in PIECES.items():
        records = {
            str(k): {
                "dataset": "coco",
                "image_file": f"{piece}-{k}.jpg",
                "caption": f"there are {k} {piece} things",
                "foil": f"there are {k + 1} {piece} things",
            }
            | ({"mturk": {"caption": 1 if k % 3 == 0 else 3, "foil": 1, "other": 0}} if votes else {})
            for k in range(n)
        }
        (folder / f"{piece}.json").write_text(json.dumps(records))
    import_path(db, "valse", folder, name="tiny")
    row = store.get_dataset(db, "tiny")
    items = store.list_items(db, row["id"], limit=1 << 20)
    right, wrong, tie = [1.0, 0.0], [0.0, 1.0], [0.5, 0.5]
    scores = {  # both runs right on some items and wrong on others; beta ties on every fifth
        "alpha": [right if k % 2 == 0 else wrong for k in range(len(items))],
        "beta": [tie if k % 5 == 0 else right if k % 3 != 1 else wrong for k in range(len(items))],
    }
    with store.transaction(db):
        for run, rows in scores.items():
            run_id = store.ensure_run(db, row["id"], run, run_type="scores", model="hand")
            store.put_scores(db, run_id, [(i["id"], s) for i, s in zip(items, rows)])
    return "tiny"


def test_the_reports_figures_are_the_statistics_of_its_sample(fresh_db, tmp_path, monkeypatch):
    """A sample whose first batch drew from three pieces only, one item from one of them (validated),
    then a Neyman batch over all (not yet validated), two runs and a human baseline: every figure of
    the report is `analysis.health`'s on the sample as the store holds it, each rounded as the card
    prints it."""
    from foil_studio.analysis import health as h
    from foil_studio.annotate import health
    from foil_studio.annotate.baselines import dataset_baseline
    from foil_studio.annotate.batch_reports import batch_agreement
    from foil_studio.annotate.batches import BatchSpec, create_batch
    from foil_studio.annotate.simulation import simulate

    monkeypatch.setattr("foil_studio.annotate.batch_reports.AGREEMENT_BOOTSTRAP", 20)  # its intervals' resamples
    dataset = tiny_valse(fresh_db, tmp_path / "valse")
    with pytest.raises(health.HealthError) as refused:
        health.health_report(fresh_db, dataset)
    assert str(refused.value) == "tiny has no health sample yet; draw one with `./foil health sample tiny`"
    plan = health.plan_sample(fresh_db, dataset, 24, allocation="equal", seed=2)
    plan = dataclasses.replace(
        plan,
        drawn={
            "existence": plan.drawn["existence"],
            "plurals": plan.drawn["plurals"],
            "relations": plan.drawn["relations"][:1],
        },
    )
    created = health.create_sample_batch(fresh_db, plan, ("ann-a", "ann-b", "ann-c"), overlap=3, name="health-1")
    assert created["drawn"] == 13 and created["design"]["allocation"] == "equal" and "items" not in created["design"]
    # drawn, nothing decided yet: no overall share and no leaderboard; a piece never drawn has no counts
    early = health.health_report(fresh_db, dataset, n_boot=20)
    assert early["leaderboard"] is None and early["overall"]["invalid_share"] is None
    assert early["overall"] == {
        "covers": 0,
        "size": 46,
        "invalid_share": None,
        "ambiguous_share": None,
        "invalid_or_ambiguous_share": None,
    }
    assert early["strata"][0] == {
        "category": "counting-hard",
        "size": 8,
        **dict.fromkeys(("drawn", "decided", "valid", "invalid", "ambiguous"), 0),
        **dict.fromkeys(("invalid_share", "ambiguous_share", "invalid_or_ambiguous_share")),
        "own": {"invalid+ambiguous": round(3 / 8, 4)},
    }
    simulate(fresh_db, "health-1", accuracies=0.8, seed=0)
    later = health.plan_sample(fresh_db, dataset, 9, allocation="neyman", seed=5)
    health.create_sample_batch(fresh_db, later, ("ann-a", "ann-b"), overlap=2, name="health-2")
    create_batch(fresh_db, BatchSpec(dataset, "baseline_i2t", ("p", "q"), n=10, name="humans"))
    simulate(fresh_db, "humans", accuracies=0.9, seed=2)
    report = health.health_report(fresh_db, dataset, n_boot=60, seed=3)

    sample = health.read_sample(fresh_db, dataset)
    sizes, counts = sample.sizes, sample.counts()
    assert sizes == PIECES
    decided = sorted(c for c in sizes if counts.get(c, {}).get("decided", 0))
    assert decided == ["existence", "plurals", "relations"] and counts["relations"]["decided"] == 1
    assert len(sample.verdicts) == 13 and len(sample.drawn) == 22
    assert report["dataset"] == dataset
    assert report["design"] == {
        "batches": [
            {
                "batch": "health-1",
                "allocation": "equal",
                **RANDOM_DRAW,
                "target": "share",
                "seed": 2,
                "drawn": 13,
                "overlap": 3,
                "decided": 13,
                "answers": {"items": 13, "min": 3, "max": 3, "mean": 3.0},
            },
            {
                "batch": "health-2",
                "allocation": "neyman",
                **RANDOM_DRAW,
                "target": "share",
                "seed": 5,
                "drawn": 9,
                "overlap": 2,
                "decided": 0,  # nobody answered it: it changes no counted figure
                "answers": None,
            },
        ],
        "items": 46,
        "categories": 4,
        "drawn": 22,
        "decided": 13,
        "answers": {"items": 13, "min": 3, "max": 3, "mean": 3.0},
    }
    assert report["screened_out"] == []
    assert "each had 3 answers." in report["methods"] and "annotators asked" not in report["methods"]
    assert [row["batch"] for row in report["agreement"]] == ["health-1", "health-2"]
    assert [row["n_items"] for row in report["agreement"]] == [13, 0]
    agreement = batch_agreement(fresh_db, "health-1")
    assert report["agreement"][0] == {
        "batch": "health-1",
        "n_items": 13,
        **{
            key: agreement[key]
            for key in ("percent_agreement", "cohen_mean", "fleiss", "krippendorff_alpha", "gwet_ac1")
        },
        "intervals": agreement["intervals"],
    }
    own = health.own_shares(fresh_db, dataset)
    # the crowd's rule counts every third foil (k = 0, 3, 6...) not valid
    not_valid = {piece: len(range(0, n, 3)) for piece, n in PIECES.items()}
    assert own["by_category"] == {
        piece: {"items": n, "counts": {"invalid+ambiguous": not_valid[piece]}} for piece, n in sorted(PIECES.items())
    }
    assert report["own_verdicts"] == own["measures"] and [m["verdicts"] for m in own["measures"]] == [
        "invalid+ambiguous"
    ]

    keys = {"invalid": ["invalid"], "ambiguous": ["ambiguous"], "invalid+ambiguous": ["invalid", "ambiguous"]}
    for row in report["strata"]:
        c = row["category"]
        found = counts[c]
        expected = {
            "category": c,
            "size": sizes[c],
            **found,
            "own": {"invalid+ambiguous": round(not_valid[c] / sizes[c], 4)},
        }
        for outcomes, (key, _) in health.SHARES.items():
            x = sum(found[o] for o in keys[outcomes])
            expected[key] = h.stratum_share(x, found["decided"], sizes[c]).as_dict() if found["decided"] else None
        assert row == expected
    assert [row["category"] for row in report["strata"]] == sorted(sizes)
    assert report["strata"][1]["own"] == {"invalid+ambiguous": 0.3333}  # 4 of 12, to four decimals
    overall = {
        "covers": 38,
        "size": 46,
        "categories_without_decided_items": ["counting-hard"],
        "own": {"invalid+ambiguous": round((4 + 7 + 2) / 38, 4)},
    }
    for outcomes, (key, _) in health.SHARES.items():
        x = [sum(counts[c][o] for o in keys[outcomes]) for c in decided]
        overall[key] = h.stratified_share(
            x, [counts[c]["decided"] for c in decided], [sizes[c] for c in decided]
        ).as_dict()
    assert report["overall"] == overall

    items = sorted(sample.verdicts)
    runs = ["alpha", "beta"]
    credit = {run: health.run_credits(fresh_db, dataset, run) for run in runs}
    published = [float(np.mean(list(credit[run].values()))) for run in runs]
    board = h.valid_accuracy(
        [sample.drawn[i] for i in items],
        np.array([sample.verdicts[i] == "valid" for i in items]),
        np.array([[credit[run][i] for run in runs] for i in items]),
        {c: sizes[c] for c in decided},
        runs,
        published=published,
        n_boot=60,
        seed=3,
    )
    (gap, low, high), flips = board.difference[("alpha", "beta")], board.order_flip[("alpha", "beta")]
    assert report["leaderboard"] == {
        "runs": [
            {
                "run": run,
                "published": round(100 * published[r], 2),
                "valid": round(100 * float(board.estimate[r]), 2),
                "valid_interval": [round(100 * float(board.low[r]), 2), round(100 * float(board.high[r]), 2)],
            }
            for r, run in enumerate(runs)
        ],
        "pairs": [
            {
                "a": "alpha",
                "b": "beta",
                "difference": round(100 * gap, 2),
                "interval": [round(100 * low, 2), round(100 * high, 2)],
                "order_differs": round(flips, 4),
            }
        ],
        "ties": "wrong",  # VALSE's own rule
        "bootstrap": {"resamples": 60, "seed": 3},
        "skipped": {},
    }
    found = dataset_baseline(fresh_db, dataset)
    assert found["batches"] == ["humans"] and found["metrics"]
    assert report["human_baseline"] == {
        "batches": ["humans"],
        "n": found["n"],
        "min_items": 30,
        "metrics": [
            {"metric": key, "value": round(value, 2), "interval": [round(x, 2) for x in found["intervals"][key]]}
            for key, value in found["metrics"].items()
        ],
    }
    blind = report["hackability"]
    assert (blind["scorers"], blind["ties"], sorted(blind["by_category"])) == (
        ["stats", "ngram"],
        "half",
        sorted(sizes),
    )
    assert report["methods"] == card.methods_paragraph(report)
    # the default seed is 0; runs and the tie rule are passed on
    assert (
        health.health_report(fresh_db, dataset, n_boot=60)["leaderboard"]
        == health.health_report(fresh_db, dataset, n_boot=60, seed=0)["leaderboard"]
    )
    chosen = health.health_report(fresh_db, dataset, ["beta"], ties="right", n_boot=60)["leaderboard"]
    assert [r["run"] for r in chosen["runs"]] == ["beta"] and chosen["ties"] == "right" and chosen["pairs"] == []
    right = health.run_credits(fresh_db, dataset, "beta", "right")
    assert chosen["runs"][0]["published"] == round(100 * float(np.mean(list(right.values()))), 2)


def test_a_dataset_without_its_own_verdicts_has_no_own_figures_and_runs_are_named_or_skipped(
    fresh_db, tmp_path, monkeypatch
):
    from foil_studio.annotate import health
    from foil_studio.annotate.simulation import simulate
    from foil_studio.data import store

    monkeypatch.setattr("foil_studio.annotate.batch_reports.AGREEMENT_BOOTSTRAP", 20)
    dataset = tiny_valse(fresh_db, tmp_path / "valse", votes=False)
    assert health.own_shares(fresh_db, dataset) is None
    row = store.get_dataset(fresh_db, dataset)
    items = store.list_items(fresh_db, row["id"], limit=1 << 20)
    with store.transaction(fresh_db):  # a run that scored the first half of the items only
        run_id = store.ensure_run(fresh_db, row["id"], "partial", run_type="scores", model="hand")
        store.put_scores(fresh_db, run_id, [(i["id"], [0.5, 0.4]) for i in items[: len(items) // 2]])
    plan = health.plan_sample(fresh_db, dataset, per_category=3, seed=0)
    health.create_sample_batch(fresh_db, plan, ("ann-a", "ann-b", "ann-c"), overlap=3, name="health-1")
    simulate(fresh_db, "health-1", accuracies=0.9, seed=1)
    report = health.health_report(fresh_db, dataset, n_boot=30)
    assert report["own_verdicts"] is None and all("own" not in r for r in report["strata"])
    assert "own" not in report["overall"]
    assert [r["run"] for r in report["leaderboard"]["runs"]] == ["alpha", "beta"]
    assert report["leaderboard"]["skipped"] == {"partial": "did not score every drawn item"}
    with pytest.raises(store.NotFoundError):
        health.health_report(fresh_db, dataset, ["nothing-here"], n_boot=30)
    only = health.health_report(fresh_db, dataset, ["partial"], n_boot=30)["leaderboard"]
    assert only == {"runs": [], "skipped": {"partial": "did not score every drawn item"}}


def test_a_tiny_sample_draws_from_the_items_left_and_records_its_design(fresh_db, tmp_path):
    from foil_studio.annotate import health

    dataset = tiny_valse(fresh_db, tmp_path / "valse")
    frame = health.sampling_frame(fresh_db, dataset)
    assert {c: len(ids) for c, ids in frame.items()} == PIECES
    plan = health.plan_sample(fresh_db, dataset, per_category=5, seed=1)
    assert (plan.allocation, plan.target, plan.seed, plan.sizes, plan.before) == (
        "proportional",
        "share",
        1,
        PIECES,
        {},
    )
    assert {c: len(ids) for c, ids in plan.drawn.items()} == dict.fromkeys(PIECES, 5)
    assert plan.item_ids == [i for c in plan.drawn for i in plan.drawn[c]]
    assert all(set(plan.drawn[c]) <= set(frame[c]) for c in plan.drawn)
    design = plan.design()
    assert design["strata"] == {c: {"size": n, "before": 0, "drawn": 5} for c, n in PIECES.items()}
    assert (design["allocation"], design["target"], design["seed"]) == ("proportional", "share", 1)
    assert design["items"] == {
        str(i): {"category": c, "inclusion": round(5 / PIECES[c], 6)} for c in plan.drawn for i in plan.drawn[c]
    }
    assert design["items"][str(plan.drawn["existence"][0])]["inclusion"] == 0.416667
    created = health.create_sample_batch(fresh_db, plan, ("ann-a", "ann-b"), overlap=2, name="h1")
    assert created["drawn"] == 20 and created["design"] == {k: v for k, v in design.items() if k != "items"}
    assert health.batch_design(fresh_db, "h1") == design
    assert [b["name"] for b in health.health_batches(fresh_db, dataset)] == ["h1"]
    assert health.drawn_items(fresh_db, dataset) == {i: c for c in plan.drawn for i in plan.drawn[c]}

    # a number per category is at most what each category has left
    again = health.plan_sample(fresh_db, dataset, per_category=10, seed=1)
    assert again.before == dict.fromkeys(PIECES, 5)
    assert {c: len(ids) for c, ids in again.drawn.items()} == {
        "existence": 7,
        "plurals": 10,
        "counting-hard": 3,
        "relations": 1,
    }
    assert not set(again.item_ids) & set(plan.item_ids)
    assert again.design()["strata"]["plurals"] == {"size": 20, "before": 5, "drawn": 10}
    assert again.design()["items"][str(again.drawn["plurals"][0])]["inclusion"] == 0.75
    health.create_sample_batch(fresh_db, again, ("ann-a", "ann-b"), overlap=2, name="h2")
    assert [b["name"] for b in health.health_batches(fresh_db, dataset)] == ["h1", "h2"]

    # 5 items left (plurals): a budget above them is refused, one of them is drawn
    with pytest.raises(health.HealthError) as refused:
        health.plan_sample(fresh_db, dataset, 6)
    assert str(refused.value) == (
        "a budget of 6 items, but only 5 items of tiny with a negative are left to draw (not yet in its health "
        "sample); give a budget of 5 or less"
    )
    last = health.plan_sample(fresh_db, dataset, 5)
    assert {c: len(ids) for c, ids in last.drawn.items()} == {"plurals": 5}
    health.create_sample_batch(fresh_db, last, ("ann-a",), overlap=1, name="h3")
    with pytest.raises(health.HealthError) as refused:
        health.plan_sample(fresh_db, dataset, per_category=1)
    assert str(refused.value) == "every item of tiny with a negative is in a health sample already"


@pytest.mark.parametrize(
    ("budget", "plan", "message"),
    [
        (5, {"target": "best"}, "unknown target 'best'; expected one of ['share', 'rank']"),
        (5, {"per_category": 2}, "give a budget (items in all) or a number per category, not both"),
        (None, {}, "give a budget (items in all) or a number per category, not both"),
        (5, {"target": "rank", "runs": ("alpha",)}, "a rank target needs two runs, the pair whose order matters"),
        (0, {}, "budget is 0 (int); expected a whole number, 1 or more"),
        (None, {"per_category": 2.5}, "per_category is 2.5 (float); expected a whole number, 1 or more"),
    ],
    ids=str,
)
def test_a_sample_plan_refuses_in_words(fresh_db, tmp_path, budget, plan, message):
    from foil_studio.annotate import health

    dataset = tiny_valse(fresh_db, tmp_path / "valse")
    with pytest.raises(health.HealthError) as refused:
        health.plan_sample(fresh_db, dataset, budget, **plan)
    assert str(refused.value) == message


def test_outcomes_follow_the_answers_and_neyman_and_rank_draws_follow_the_spreads(fresh_db, tmp_path):
    from foil_studio.analysis import health as h
    from foil_studio.annotate import health
    from foil_studio.annotate.queues import draw as draw_next
    from foil_studio.annotate.queues import submit_answer
    from foil_studio.data import store

    dataset = tiny_valse(fresh_db, tmp_path / "valse")
    plan = health.plan_sample(fresh_db, dataset, per_category=4, seed=0)
    health.create_sample_batch(fresh_db, plan, ("ann-a", "ann-b", "ann-c"), overlap=3, name="h1")
    items = plan.item_ids
    answers = {  # the first items' answers; the rest valid by all three
        items[0]: ("negative_false", "negative_false", "negative_true"),  # valid
        items[1]: ("negative_true", "negative_true", "unsure"),  # invalid
        items[2]: ("unsure", "unsure", "negative_false"),  # ambiguous: a majority of Unsure
        items[3]: ("negative_true", "negative_false", "unsure"),  # ambiguous: a tie
        items[4]: ("negative_true", "negative_true", "negative_true"),  # invalid
        items[8]: ("negative_true", "negative_true", "negative_false"),  # invalid
        items[9]: ("negative_true", "unsure", "negative_true"),  # invalid
    }
    annotators = {a["name"]: a["id"] for a in store.list_annotators(fresh_db)}
    for position, name in enumerate(("ann-a", "ann-b", "ann-c")):
        while (state := draw_next(fresh_db, annotators[name], "h1")).task is not None:
            item = state.task.item_id
            answer = answers[item][position] if item in answers else "negative_false"
            assert submit_answer(fresh_db, annotators[name], "h1", state.task, {"answer": answer}, simulated=True)
    outcomes = health.item_verdicts(fresh_db, dataset)
    expected = dict.fromkeys(items, "valid") | {
        items[1]: "invalid",
        items[2]: "ambiguous",
        items[3]: "ambiguous",
        items[4]: "invalid",
        items[8]: "invalid",
        items[9]: "invalid",
    }
    assert outcomes == expected
    sample = health.read_sample(fresh_db, dataset)
    assert sample.counts() == {
        plan_category: row
        for plan_category, row in zip(
            plan.drawn,
            (
                {"drawn": 4, "decided": 4, "valid": 1, "invalid": 1, "ambiguous": 2},
                {"drawn": 4, "decided": 4, "valid": 3, "invalid": 1, "ambiguous": 0},
                {"drawn": 4, "decided": 4, "valid": 2, "invalid": 2, "ambiguous": 0},
                {"drawn": 4, "decided": 4, "valid": 4, "invalid": 0, "ambiguous": 0},
            ),
        )
    }
    # Neyman on sqrt(p (1 - p)) of each category's smoothed invalid share, (x + 0.5) / (n + 1)
    neyman = health.plan_sample(fresh_db, dataset, 12, allocation="neyman", seed=0)
    smoothed = dict(zip(plan.drawn, (1.5 / 5, 1.5 / 5, 2.5 / 5, 0.5 / 5)))
    spreads = {c: float(np.sqrt(s * (1 - s))) for c, s in smoothed.items()}
    assert health.sample._share_spreads(sample) == pytest.approx(spreads, rel=1e-12)
    wanted = h.allocate(PIECES, 12, "neyman", taken=dict.fromkeys(PIECES, 4), spreads=spreads)
    assert {c: len(ids) for c, ids in neyman.drawn.items()} == {c: n for c, n in wanted.items() if n}
    assert neyman.allocation == "neyman"
    # rank: Neyman on the spread of the two runs' credit difference over each category's valid items
    credit = [health.run_credits(fresh_db, dataset, run) for run in ("alpha", "beta")]
    gaps = {c: [credit[0][i] - credit[1][i] for i in plan.drawn[c] if outcomes[i] == "valid"] for c in plan.drawn}
    spreads = {c: float(np.std(g, ddof=1)) if len(g) > 1 else 1.0 for c, g in gaps.items()}
    assert [len(g) for g in gaps.values()] == [1, 3, 2, 4]
    assert health.sample._difference_spreads(fresh_db, sample, ("alpha", "beta")) == pytest.approx(spreads, rel=1e-12)
    assert len(set(spreads.values())) >= 3 and 1.0 in spreads.values()
    rank = health.plan_sample(fresh_db, dataset, 12, target="rank", runs=("alpha", "beta"), allocation="equal", seed=0)
    wanted = h.allocate(PIECES, 12, "neyman", taken=dict.fromkeys(PIECES, 4), spreads=spreads)
    assert {c: len(ids) for c, ids in rank.drawn.items()} == {c: n for c, n in wanted.items() if n}
    assert (rank.allocation, rank.target) == ("neyman", "rank")


def test_a_dataset_without_a_negative_to_validate_has_no_sampling_frame(fresh_db, tmp_path):
    from foil_studio.annotate import health
    from foil_studio.data.formats.crepe import write_crepe_source
    from foil_studio.data.loading import import_path

    import_path(fresh_db, "crepe", write_crepe_source(tmp_path / "crepe"), name="wino")
    with pytest.raises(health.HealthError) as refused:
        health.sampling_frame(fresh_db, "wino")
    assert (
        str(refused.value) == f"wino has no items with a negative to validate ({'/'.join(health.HEALTH_KINDS)} items)"
    )
