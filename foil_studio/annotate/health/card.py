"""The benchmark card: the methods paragraph and the tables the page, the Markdown card and the
CLI show, each a function of the report alone."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from foil_studio.annotate.agreement import COEFFICIENT_NAMES, COEFFICIENTS
from foil_studio.annotate.baselines import figure_text
from foil_studio.annotate.health.sample import SHARES
from foil_studio.data.plain_text import figure, interval_text


def _percent(share: Mapping[str, Any]) -> str:
    low, high = share["interval"]
    return f"{100 * share['estimate']:.1f}% (95% CI {100 * low:.1f} to {100 * high:.1f})"


# How the methods paragraph says an item's validations became its verdict, per `sample.CONSENSUS`.
OUTCOME_RULE = {
    "majority": "an item's verdict is the majority answer, a tie or a majority of Unsure counting as ambiguous and "
    "an admin's decision winning.",
    "dawid-skene": "an item's verdict is the answer Dawid and Skene's model gives it from every annotator's "
    "estimated confusion (crowd-kit), an Unsure answer counting as ambiguous and an admin's decision winning.",
}


# How the shares are estimated, by the report's `estimator`: a random sample per category, or rounds
# (a sample with an active batch, `analysis.active_sampling`).
ESTIMATORS = {
    "stratified": "stratified estimator; per category, exact intervals for sampling without replacement, from the "
    "hypergeometric distribution; overall, Korn and Graubard's exact interval on the design-based effective sample "
    "size, where a category that showed no invalid item, or only invalid ones, enters the variance as if one more of "
    "each had been drawn",
    "binned": "stratified estimator with each category's prediction bins as strata, since, given how many items "
    "each bin gave, the items drawn in it are a random sample of it, those of random batches included; per "
    "category and overall, Korn and Graubard's exact interval on the design-based effective sample size, where a "
    "bin that showed no invalid item, or only invalid ones, enters the variance with its share of one more item of "
    "each verdict per category, shared out as the predictions place the category's invalid items",
    "rounds": "per category, each round's estimate of what the rounds before it left undrawn, weighted by its "
    "inclusion probabilities (a run of random batches one round, an active batch one of its own), the rounds "
    "averaged by their decided items; Korn and Graubard's interval on the design variance, widened by one item "
    "each way; overall, the categories weighted by their sizes",
}


# A batch's `strategy` when it drew at random within its categories (the others drew on predictions).
RANDOM_DRAWS = ("random", "neyman")


def _design_sentence(report: Mapping[str, Any], allocations: Sequence[str]) -> str:
    """What was drawn, how, in how many batches, and which batches drew on predictions."""
    design = report["design"]
    count = len(design["batches"])
    random = all(b["strategy"] in RANDOM_DRAWS for b in design["batches"])
    sentence = (
        f"We drew a stratified {'random ' if random else ''}sample without replacement of {design['drawn']} of "
        f"the {design['items']} items of {report['dataset']} with a negative caption (strata: its "
        f"{design['categories']} categories; {' then '.join(allocations)} allocation; {count} "
        f"batch{'es' if count != 1 else ''})."
    )
    return sentence if random else f"{sentence} {_draws_sentence(design['batches'])}"


def _draws_sentence(batches: Sequence[Mapping[str, Any]]) -> str:
    """Which batches drew at random and which on which predictions, the random ones first."""
    groups: dict[tuple[str, str | None], list[Mapping[str, Any]]] = {("random", None): []}
    for b in batches:
        key = ("random", None) if b["strategy"] in RANDOM_DRAWS else (b["strategy"], b["predictions"])
        groups.setdefault(key, []).append(b)
    clauses = [f"{_named(group)} {_how_drawn(group[0])}" for group in groups.values() if group]
    said = "; ".join(clauses)
    return said[0].upper() + said[1:] + "."


def _named(batches: Sequence[Mapping[str, Any]]) -> str:
    """Batches by name: "batch a", "batches a and b", "batches a, b and c"."""
    names = [str(b["batch"]) for b in batches]
    if len(names) == 1:
        return f"batch {names[0]}"
    return f"batches {', '.join(names[:-1])} and {names[-1]}"


def _how_drawn(batch: Mapping[str, Any]) -> str:
    """How a batch drew: at random, actively on predictions (in words), or on predictions by another strategy."""
    strategy, predictions = batch["strategy"], batch["predictions"]
    if strategy in RANDOM_DRAWS:
        return "drew at random"
    on = f"on the predictions {predictions}" if predictions is not None else "on predictions"
    if strategy == "predicted":
        return (
            f"drew by prediction, {on}: each category cut into bins of f (the predicted probability that the "
            "negative is invalid) by Dalenius and Hodges' cumulative square-root rule, every bin given a few items "
            f"first and the rest shared by Neyman's rule on its mean prediction{_plan_clause(batch.get('plan'))}, "
            "the items drawn at random within each bin"
        )
    if strategy != "active":
        return f"drew {on} ({strategy})"
    return (
        f"drew actively, {on}: within each category every item not drawn before on its own coin, with a "
        "probability that grows with the predictions' uncertainty (sqrt(f (1 - f)), f the predicted probability "
        f"that the negative is invalid), {figure(100 * batch['floor_share'], 0)}% of each probability spread evenly "
        "over the items so that none is left out"
    )


def _plan_clause(plan: Mapping[str, Any] | None) -> str:
    """How a draw by prediction weighed each bin's mean prediction, as its batch recorded it ("" for a
    batch drawn before batches recorded it)."""
    if not plan:
        return ""
    floor = plan["floor"]
    return (
        f" (weighed as the bin's share of the answers against {plan['pseudo_answers']} answers at one half, "
        f"kept within {figure(100 * floor, 0)}-{figure(100 * (1 - floor), 0)}%)"
    )


def _answers_clause(report: Mapping[str, Any]) -> str:
    """How many answers the decided items had, as counted ("" before the first decided item)."""
    answers = report["design"].get("answers")
    if not answers:
        return ""
    left_out = (
        " (answers of annotators screened out by their gold answers left out)" if report.get("screened_out") else ""
    )
    if answers["min"] == answers["max"]:
        return f"; each had {answers['min']} answer{'s' if answers['min'] != 1 else ''}{left_out}"
    low, high, mean = answers["min"], answers["max"], figure(answers["mean"], 1)
    return f"; they had {low} to {high} answers each (mean {mean}){left_out}"


def answers_text(answers: Mapping[str, Any] | None) -> str:
    """Answers per decided item as counted: "3", "1 to 3 (mean 2.1)"; "" without a decided item."""
    if not answers:
        return ""
    if answers["min"] == answers["max"]:
        return str(answers["min"])
    return f"{answers['min']} to {answers['max']} (mean {figure(answers['mean'], 1)})"


def _changed(report: Mapping[str, Any]) -> str:
    """How many verdicts a rule other than the majority decided otherwise ("" for the majority)."""
    differs = report.get("differs_from_majority")
    if differs is None:
        return ""
    return f"It decides {differs} of the decided items otherwise than the majority answer would. "


def methods_paragraph(report: Mapping[str, Any]) -> str:
    """The report's methods paragraph: every number in it is a figure of the report's tables."""
    design, overall = report["design"], report["overall"]
    allocations = list(dict.fromkeys(b["allocation"] for b in design["batches"]))
    sentences = [
        _design_sentence(report, allocations),
        "Annotators judged whether the altered caption is wrong for the image; "
        f"{OUTCOME_RULE[report.get('consensus', 'majority')]} "
        + _changed(report)
        + f"{design['decided']} of the {design['drawn']} drawn items are decided{_answers_clause(report)}.",
    ]
    if report.get("waiting"):
        sentences.append(f"The estimates stand on the batches drawn before: {report['waiting']}.")
    if overall["invalid_share"] is not None:
        covers = (
            ""
            if overall["covers"] == overall["size"]
            else f" (over the {overall['covers']} items of categories with a decided item)"
        )
        sentences.append(
            f"We estimate that {_percent(overall['invalid_share'])} of the negatives are invalid and "
            f"{_percent(overall['ambiguous_share'])} ambiguous{covers} ({ESTIMATORS[report['estimator']]})."
        )
        sentences += _own_sentences(report)
        sentences += _powered_sentence(report)
    blind = report.get("hackability")
    if blind:
        figures = " and ".join(f"{blind['overall'][s]:.2f}% ({s})" for s in blind["scorers"])
        sentences.append(
            f"Blind text-only scorers that never see the image choose the positive caption on {figures} of all "
            f"items (a tie counted half; 50% is chance{_audit_sample_words(blind.get('sample'))})."
        )
    sentences += _humans_sentence(report)
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


def _humans_sentence(report: Mapping[str, Any]) -> list[str]:
    """The human baseline's first figure, or, from too few decided items, why none is cited."""
    humans = report.get("human_baseline")
    if not humans or not humans["metrics"]:
        return []
    batches = ", ".join(humans["batches"])
    if humans["n"] < humans["min_items"]:
        return [
            f"A human baseline (humans answering the models' own question, {batches}) needs at least "
            f"{humans['min_items']} decided items and has {humans['n']}, so none is cited."
        ]
    first = humans["metrics"][0]
    said = figure_text(first["value"], first["interval"], humans["n"], humans["min_items"])
    return [f"Humans answering the models' own question ({batches}) reach {first['metric']} {said}."]


def _own_sentences(report: Mapping[str, Any]) -> list[str]:
    """Each share the dataset's own verdicts measure, their figure against our estimate of it."""
    overall = report["overall"]
    measures = report.get("own_verdicts") or []
    parts = [
        f"{100 * overall['own'][m['verdicts']]:.1f}% ({m['definition']}) against our estimate of "
        f"{_percent(overall[SHARES[m['verdicts']][0]])} {SHARES[m['verdicts']][1]}"
        for m in measures
        if m["verdicts"] in overall.get("own", {})
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
    """The sample's batches: allocation, draw (random or on predictions), target, seed, items drawn and
    decided, annotators asked per item and the answers the decided items had; with several batches,
    "all" over them."""
    keys = {
        "batch": "batch",
        "allocation": "allocation",
        "draw": "strategy",
        "target": "target",
        "seed": "seed",
        "drawn": "drawn",
        "decided": "decided",
        "annotators asked per item": "overlap",
    }
    design = report["design"]
    rows = [
        {
            **{label: b.get(key) for label, key in keys.items()},
            "answers per decided item": answers_text(b.get("answers")),
        }
        for b in design["batches"]
    ]
    if len(rows) < 2:
        return rows
    total = {
        "batch": "all",
        **dict.fromkeys(list(keys)[1:], ""),
        "drawn": design["drawn"],
        "decided": design["decided"],
    }
    return [*rows, {**total, "answers per decided item": answers_text(design.get("answers"))}]


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


# The strata table's counts, after its category and before its shares: a page shows them as a table
# of their own, since counts and shares side by side are wider than a page 1280 px wide (issue 55).
STRATA_COUNTS = ("items", "drawn", "decided", "invalid", "ambiguous")


def strata_table(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per category, and "all" over them, the items, drawn, decided, invalid and ambiguous counts and
    shares in percent with intervals; beside each share the dataset's own verdicts measure, their
    figure over all items, labelled with its definition (and the invalid-or-ambiguous share shown
    only where they measure it)."""
    measured, shown = _strata_shares(report)

    def row_of(category: str, counts: Mapping[str, Any], figures: Mapping[str, Any]) -> dict[str, Any]:
        row = {"category": category, **counts}
        for counted_verdicts in shown:
            key, words = SHARES[counted_verdicts]
            row[_share_column(words)] = share_text(figures[key])
            if counted_verdicts in measured:
                own = figures.get("own", {}).get(counted_verdicts)
                row[_own_column(measured[counted_verdicts])] = "" if own is None else figure(100 * own, 1)
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


def strata_headers(report: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
    """The strata table's long columns as a page 1280 px wide shows them: column -> (a short label,
    the column's meaning in words, for its help). The full names suit the Markdown card; on a page
    they made the table wider than the page, cutting off the dataset's own verdicts (issue 55).

    >>> strata_headers({"own_verdicts": [{"verdicts": "invalid", "definition": "known flaw"}]})["invalid % (95% CI)"]
    ('invalid %', 'the invalid share, in percent, with its 95% interval')
    """
    measured, shown = _strata_shares(report)
    headers = {}
    for counted_verdicts in shown:
        words = SHARES[counted_verdicts][1]
        headers[_share_column(words)] = (f"{words} %", f"the {words} share, in percent, with its 95% interval")
        if counted_verdicts in measured:
            headers[_own_column(measured[counted_verdicts])] = (
                _own_label(measured, counted_verdicts),
                f"the dataset's own verdicts over all its items, in percent: {measured[counted_verdicts]}",
            )
    return headers


def strata_note(report: Mapping[str, Any]) -> str:
    """One line under the page's strata table: what its short labels (`strata_headers`) stand for.

    >>> strata_note({"own_verdicts": [{"verdicts": "invalid", "definition": "known flaw"}]})
    "Shares in percent, each with its 95% interval. own %: the dataset's own verdicts over all its items (known flaw)."
    """
    measured, _ = _strata_shares(report)
    own = [
        f"{_own_label(measured, counted_verdicts)}: the dataset's own verdicts over all its items ({definition})."
        for counted_verdicts, definition in measured.items()
    ]
    return " ".join(["Shares in percent, each with its 95% interval.", *own])


def _own_label(measured: Mapping[str, str], counted_verdicts: str) -> str:
    """The short label of the dataset's own figure for `counted_verdicts` ("own %" where it measures one share)."""
    return "own %" if len(measured) == 1 else f"own {SHARES[counted_verdicts][1]} %"


def _strata_shares(report: Mapping[str, Any]) -> tuple[dict[str, str], list[str]]:
    """What the dataset's own verdicts measure (the verdicts each share counts) with its definitions,
    and the shares the strata table shows (the invalid-or-ambiguous share only where the verdicts measure it)."""
    measured = {m["verdicts"]: m["definition"] for m in report.get("own_verdicts") or []}
    return measured, [o for o in SHARES if o != "invalid+ambiguous" or o in measured]


def _share_column(words: str) -> str:
    return f"{words} % (95% CI)"


def _own_column(definition: str) -> str:
    return f"dataset's own % ({definition})"


def powered_table(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per category with a decided item, and "all": the plain and the prediction-powered invalid
    share side by side, which one the report takes, the predictor's agreement with people on the
    decided items and the human answers the predictions were worth."""
    powered = report.get("prediction_powered") or {}
    rows = [
        *powered.get("by_category", []),
        *([{"category": "all", **powered["overall"]}] if powered.get("overall") else []),
    ]
    return [
        {
            "category": row["category"],
            "decided": row["plain"]["decided"],
            "plain invalid % (95% CI)": share_text(row["plain"]),
            "prediction-powered invalid % (95% CI)": share_text(row["prediction_powered"]),
            "to cite": _cited(row["reported"]),
            "AUC": ranking_text(row),
            "mean f / observed %": " / ".join(figure(100 * row[k], 1) for k in ("mean_prediction", "observed_share")),
            "agreement %": figure(100 * row["agreement"], 1),
            "worth (answers)": figure(row["worth_human_answers"], 0),
        }
        for row in rows
    ]


def ranking_text(row: Mapping[str, Any]) -> str:
    """The predictor's AUC on the decided items, or, in brief, why it has none (people's verdicts all alike).

    >>> ranking_text({"ranking_auc": 0.9312, "observed_share": 0.1})
    '0.93'
    >>> ranking_text({"ranking_auc": None, "observed_share": 0.0})
    'none (no invalid)'
    """
    if row["ranking_auc"] is not None:
        return figure(row["ranking_auc"], 2)
    return "none (all invalid)" if row["observed_share"] == 1 else "none (no invalid)"


def powered_other_table(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ambiguous and invalid-or-ambiguous shares over all sampled categories, plain and powered by
    the same predictions, which one the report takes and what it is worth."""
    rows = [row for row in (report.get("prediction_powered") or {}).get("other_shares", []) if row["overall"]]
    return [
        {
            "share": row["share"],
            "plain % (95% CI)": share_text(row["overall"]["plain"]),
            "prediction-powered % (95% CI)": share_text(row["overall"]["prediction_powered"]),
            "to cite": _cited(row["overall"]["reported"]),
            "worth (answers)": figure(row["overall"]["worth_human_answers"], 0),
        }
        for row in rows
    ]


def powered_leaderboard_table(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each run's accuracy on valid items, plain and prediction-powered side by side, which one the
    report takes and the human answers the predictions were worth."""
    board = (report.get("prediction_powered") or {}).get("leaderboard") or {}
    return [
        {
            "run": row["run"],
            "plain valid items % (95% CI)": _with_interval(row["plain"], row["plain_interval"]),
            "prediction-powered valid items % (95% CI)": _with_interval(row["prediction_powered"], row["interval"]),
            "to cite": _cited(row["reported"]),
            "worth (answers)": figure(row["worth_human_answers"], 0),
        }
        for row in board.get("runs", [])
    ]


def powered_pairs_table(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each pair of runs' difference of accuracy on valid items, plain and prediction-powered."""
    board = (report.get("prediction_powered") or {}).get("leaderboard") or {}
    return [
        {
            "pair": f"{row['a']} - {row['b']}",
            "plain difference, points (95% CI)": _with_interval(row["plain"], row["plain_interval"]),
            "prediction-powered difference, points (95% CI)": _with_interval(
                row["prediction_powered"], row["interval"]
            ),
            "to cite": _cited(row["reported"]),
            "worth (answers)": figure(row["worth_human_answers"], 0),
        }
        for row in board.get("pairs", [])
    ]


def _cited(reported: str) -> str:
    """The narrower interval, the one to cite, in a table's few letters."""
    return "powered" if reported == "prediction-powered" else "plain"


def _powered_sentence(report: Mapping[str, Any]) -> list[str]:
    """Which predictions powered the invalid shares, how well they agreed with people, and what they were worth."""
    powered = report.get("prediction_powered") or {}
    overall = powered.get("overall")
    if not overall:
        return []
    categories = powered["by_category"]
    narrower = sum(row["reported"] == "prediction-powered" for row in categories)
    return (
        [
            f"With the predictions {powered['predictions']} on every item ({_predictor_words(overall)}), the "
            "prediction-powered invalid share is "
            f"{_percent(overall['prediction_powered'])} overall (the difference estimator with a power-tuned weight, "
            "PPI++, per category; Korn and Graubard's interval widened by one item each way). The narrower "
            f"interval is the one to cite: overall {_taken(overall)}; the prediction-powered one in {narrower} of "
            f"{len(categories)} categor{'y' if len(categories) == 1 else 'ies'}."
        ]
        + _powered_other_sentence(report)
        + _powered_board_sentence(report)
    )


def _predictor_words(row: Mapping[str, Any]) -> str:
    """What the predictions did on the decided items: how they rank them, how calibrated they are, and
    their thresholded agreement (which alone misdescribes a predictor that ranks well off-scale)."""
    ranked = (
        f"they rank the decided items with an AUC of {figure(row['ranking_auc'], 2)}"
        if row["ranking_auc"] is not None
        else "they cannot be ranked against people there (every decided item "
        + ("is invalid)" if row["observed_share"] == 1 else "is valid or ambiguous)")
    )
    return (
        f"{ranked}, predict {figure(100 * row['mean_prediction'], 1)}% invalid on average where people found "
        f"{figure(100 * row['observed_share'], 1)}%, and agree with people on {figure(100 * row['agreement'], 1)}% "
        "of them at f >= 0.5"
    )


def _powered_other_sentence(report: Mapping[str, Any]) -> list[str]:
    """The other shares the same predictions power, overall."""
    rows = [row for row in report["prediction_powered"].get("other_shares", []) if row["overall"]]
    if not rows:
        return []
    parts = [
        f"the {row['share']} share is {_percent(row['overall']['prediction_powered'])}"
        + ("" if row["overall"]["reported"] == "prediction-powered" else " (the plain interval is the narrower)")
        for row in rows
    ]
    return [f"Powered by the same predictions, {'; '.join(parts)}."]


def _taken(row: Mapping[str, Any]) -> str:
    """Whether the overall interval reported is the prediction-powered one, and what it is worth."""
    if row["reported"] != "prediction-powered":
        return "the plain one"
    return (
        f"the prediction-powered one, as narrow as {figure(row['worth_human_answers'], 0)} human answers would "
        f"give, against the {row['plain']['decided']} given"
    )


def _powered_board_sentence(report: Mapping[str, Any]) -> list[str]:
    rows = powered_leaderboard_table(report)
    if not rows:
        return []
    board = report["prediction_powered"]["leaderboard"]["runs"]
    parts = [
        f"{row['run']} {row['prediction_powered']:.2f}% (95% CI {row['interval'][0]:.2f} to {row['interval'][1]:.2f})"
        for row in board
    ]
    return [
        "With each run's credit on every item and the predicted validity (1 minus the prediction), accuracy on "
        "valid items prediction-powered (a ratio of difference estimators, one power-tuned weight per category "
        f"for its linearised variable) is {'; '.join(parts)}."
    ] + _powered_pairs_sentence(report)


def _powered_pairs_sentence(report: Mapping[str, Any]) -> list[str]:
    pairs = report["prediction_powered"]["leaderboard"].get("pairs", [])
    if not pairs:
        return []
    parts = [
        f"{row['a']} minus {row['b']} {row['prediction_powered']:.2f} points "
        f"(95% CI {row['interval'][0]:.2f} to {row['interval'][1]:.2f})"
        for row in pairs
    ]
    return [
        "Paired differences, the same way with the runs' credit difference (a t interval on the linearised "
        f"variance): {'; '.join(parts)}."
    ]


def compared_shares(report: Mapping[str, Any]) -> dict[str, Any]:
    """What the page charts per category: the first share the dataset's own verdicts measure (the
    invalid share where they measure none), our estimate with its interval in percent and their
    figure, with a title and names saying which is compared with which."""
    measures = report.get("own_verdicts") or []
    counted_verdicts = measures[0]["verdicts"] if measures else "invalid"
    key, words = SHARES[counted_verdicts]
    rows = [
        {
            "category": r["category"],
            "estimate": 100 * r[key]["estimate"],
            "low": 100 * r[key]["interval"][0],
            "high": 100 * r[key]["interval"][1],
            "own": 100 * r["own"][counted_verdicts] if counted_verdicts in r.get("own", {}) else None,
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


def _audit_sample_words(sample: Mapping[str, Any] | None) -> str:
    """How a blind audit fitted on part of a large dataset was fitted, and what that does to its figures."""
    if not sample:
        return ""
    # the margins count which items were drawn, not that the scorers were fitted on fewer of them:
    # a simulation (TESTING.md) found the whole dataset's figure inside the margin 87% of the time
    return (
        f"; fitted on a random {sample['items']:,} of the {sample['of']:,} items: which items were drawn moves "
        f"each figure by up to {sample['margin_overall']:.2f} points at 95% (each category's by up to "
        f"{sample['margin_category']:.2f}), and scorers fitted on fewer items may score a little lower than on all"
    )


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
    """The human baseline's metrics, each with its decided items and interval (`baselines.figure_text`:
    below the minimum, too few for a baseline); empty without baseline batches."""
    humans = report.get("human_baseline") or {"metrics": []}
    return [
        {"metric": m["metric"], "value": figure_text(m["value"], m["interval"], humans["n"], humans["min_items"])}
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
    if powered_table(report):
        predictions = report["prediction_powered"]["predictions"]
        lines += ["", f"## Prediction-powered invalid shares (predictions: {predictions})", ""]
        lines += _markdown_table(powered_table(report))
        lines += ["", *_markdown_table(powered_other_table(report))]
        if powered_leaderboard_table(report):
            lines += ["", *_markdown_table(powered_leaderboard_table(report))]
        if powered_pairs_table(report):
            lines += ["", *_markdown_table(powered_pairs_table(report))]
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
