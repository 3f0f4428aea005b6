"""Benchmark health over the store: the sample's design, outcomes from validations, the report and
its methods paragraph, the CLI and the page, the demo's known flaws and VALSE's crowd votes
(`annotate.health`; the estimators' coverage is `test_health_coverage.py`)."""

from __future__ import annotations

import json
import re
from collections import Counter

import numpy as np
import pytest

from foil_studio.analysis import health as h
from foil_studio.annotate import health
from foil_studio.annotate.health.card import OUTCOME_RULE
from foil_studio.annotate.queues import draw as draw_next
from foil_studio.annotate.queues import submit_answer
from foil_studio.annotate.simulation import simulate
from foil_studio.data import paths, store
from foil_studio.data.loading import import_path
from tests.conftest import APP_ADMIN as ADMIN
from tests.test_cli import run_cli

DATASET = "demo-sugarcrepe"


def draw(db, budget=70, name="health-1", **plan):
    drawn = health.plan_sample(db, DATASET, budget, **plan)
    return health.create_sample_batch(db, drawn, ("ann-a", "ann-b", "ann-c"), overlap=3, name=name)


def test_a_sample_records_its_design_and_draws_without_replacement(demo_db):
    frame = health.sampling_frame(demo_db, DATASET)
    created = draw(demo_db, 70, allocation="proportional")
    design = health.batch_design(demo_db, "health-1")
    assert created["drawn"] == 70 == len(design["items"])
    for category, stratum in design["strata"].items():
        assert stratum["size"] == len(frame[category]) and stratum["before"] == 0
    sizes = {c: len(items) for c, items in frame.items()}
    assert {c: s["drawn"] for c, s in design["strata"].items()} == h.allocate(sizes, 70, "proportional")
    for item, entry in design["items"].items():
        assert int(item) in frame[entry["category"]]
        assert entry["inclusion"] == round(design["strata"][entry["category"]]["drawn"] / sizes[entry["category"]], 6)
    draw(demo_db, 50, name="health-2", allocation="neyman")
    second = health.batch_design(demo_db, "health-2")
    assert not set(second["items"]) & set(design["items"]), "a later batch drew an item again"
    for category, stratum in second["strata"].items():
        assert stratum["before"] == design["strata"][category]["drawn"]
        total = stratum["before"] + stratum["drawn"]
        assert all(
            e["inclusion"] == round(total / sizes[category], 6)
            for e in second["items"].values()
            if e["category"] == category
        )


def test_the_same_seed_draws_the_same_items(demo_db, tmp_path):
    first = health.plan_sample(demo_db, DATASET, 40, seed=7).item_ids
    assert health.plan_sample(demo_db, DATASET, 40, seed=7).item_ids == first
    assert health.plan_sample(demo_db, DATASET, 40, seed=8).item_ids != first


def test_per_category_and_refusals(demo_db):
    plan = health.plan_sample(demo_db, DATASET, per_category=3)
    assert all(len(items) == 3 for items in plan.drawn.values())
    with pytest.raises(health.HealthError, match="not both"):
        health.plan_sample(demo_db, DATASET, 10, per_category=3)
    with pytest.raises(health.HealthError, match="two runs"):
        health.plan_sample(demo_db, DATASET, 10, target="rank", runs=("demo-clip",))
    with pytest.raises(health.HealthError, match="no health sample"):
        health.health_report(demo_db, DATASET)


def test_outcomes_follow_the_majority_and_a_tie_is_ambiguous(demo_db):
    draw(demo_db, 7, allocation="equal")
    items = sorted(int(i) for i in health.batch_design(demo_db, "health-1")["items"])
    answers = {
        items[0]: ("negative_false", "negative_false", "negative_true"),  # valid
        items[1]: ("negative_true", "negative_true", "unsure"),  # invalid
        items[2]: ("unsure", "unsure", "negative_false"),  # ambiguous: a majority of Unsure
        items[3]: ("negative_true", "negative_false", "unsure"),  # ambiguous: a three-way tie
    }
    annotators = {a["name"]: a["id"] for a in store.list_annotators(demo_db)}
    for position, name in enumerate(("ann-a", "ann-b", "ann-c")):
        while (state := draw_next(demo_db, annotators[name], "health-1")).task is not None:
            item = state.task.item_id
            answer = answers[item][position] if item in answers else "negative_false"
            assert submit_answer(demo_db, annotators[name], "health-1", state.task, {"answer": answer}, simulated=True)
    outcomes = health.item_verdicts(demo_db, DATASET)
    assert {item: outcomes[item] for item in answers} == {
        items[0]: "valid",
        items[1]: "invalid",
        items[2]: "ambiguous",
        items[3]: "ambiguous",
    }
    assert len(outcomes) == 7 and all(outcomes[i] == "valid" for i in items[4:])


def numbers(text: str) -> list[str]:
    return re.findall(r"\d+(?:\.\d+)?", text)


def test_the_methods_paragraph_says_only_figures_of_the_tables(demo_db):
    draw(demo_db, 70)
    simulate(demo_db, "health-1", accuracies=0.95, seed=0)
    draw(demo_db, 35, name="health-2", allocation="neyman")
    simulate(demo_db, "health-2", accuracies=0.95, seed=1)
    from foil_studio.annotate.batches import BatchSpec, create_batch

    create_batch(demo_db, BatchSpec(DATASET, "baseline_i2t", ("p", "q"), n=40, name="humans"))
    simulate(demo_db, "humans", accuracies=0.9, seed=2)
    report = health.health_report(demo_db, DATASET, n_boot=200)
    assert report["human_baseline"]["batches"] == ["humans"] and "Humans answering" in report["methods"]
    markdown = health.report_markdown(report)
    tables = markdown.split("## Sample", 1)[1]
    said = numbers(report["methods"])
    assert said, report["methods"]
    # each number of the paragraph is in the tables below it (the dataset's own name aside)
    allowed = set(numbers(tables)) | {"95"} | set(numbers(DATASET))
    assert [n for n in said if n not in allowed] == [], report["methods"]
    overall = report["overall"]["invalid_share"]
    assert f"{100 * overall['estimate']:.1f}%" in report["methods"]
    assert report["design"]["drawn"] == 105 and "proportional then neyman" in report["methods"]


def answer_queue(db, batch: str, annotator: str, limit: int, answer: str = "negative_false") -> None:
    """`annotator` answers the first `limit` items of their queue in `batch`."""
    who = next(a["id"] for a in store.list_annotators(db) if a["name"] == annotator)
    for _ in range(limit):
        state = draw_next(db, who, batch)
        assert submit_answer(db, who, batch, state.task, {"answer": answer}, simulated=True)


def test_the_methods_paragraph_counts_the_answers_each_decided_item_had(demo_db):
    """It said "Each drawn item was validated by 3 annotators" (the batch's overlap) while each
    decided item had one or two answers, and "2 or 3" after a second batch nobody answered. Now the
    answers are counted from the stored labels of the decided items only; a batch nobody answered
    changes nothing, and an admin's decision on an item nobody answered counts 0 answers."""
    draw(demo_db, 12, allocation="equal")
    answer_queue(demo_db, "health-1", "ann-a", 12)
    answer_queue(demo_db, "health-1", "ann-b", 4, answer="negative_true")
    report = health.health_report(demo_db, DATASET, n_boot=50)
    batch = store.get_batch(demo_db, "health-1")
    stored = Counter(label["item"] for label in store.batch_labels(demo_db, batch["id"]))
    assert sorted(stored.values()) == [1] * 8 + [2] * 4  # counted here, independently of the report
    counted = {"items": 12, "min": 1, "max": 2, "mean": 1.33}
    assert report["design"]["answers"] == report["design"]["batches"][0]["answers"] == counted
    said = "12 of the 12 drawn items are decided; they had 1 to 2 answers each (mean 1.3)."
    assert said in report["methods"] and "validated by" not in report["methods"]
    assert OUTCOME_RULE["majority"].endswith("counting as ambiguous and an admin's decision winning.")
    assert [row["answers per decided item"] for row in health.design_table(report)] == ["1 to 2 (mean 1.3)"]

    draw(demo_db, 12, name="health-2", allocation="equal")  # nobody answers it
    later = health.health_report(demo_db, DATASET, n_boot=50)
    assert later["design"]["answers"] == counted and said.replace("12 of the 12", "12 of the 24") in later["methods"]
    assert [row["answers per decided item"] for row in health.design_table(later)] == [
        "1 to 2 (mean 1.3)",
        "",
        "1 to 2 (mean 1.3)",
    ]
    assert [(row["batch"], row["decided"]) for row in health.design_table(later)] == [
        ("health-1", 12),
        ("health-2", 0),
        ("all", 12),
    ]
    second = store.get_batch(demo_db, "health-2")
    item = int(next(iter(health.batch_design(demo_db, "health-2")["items"])))
    store.decide(demo_db, second["id"], item, 0, {"answer": "negative_true"}, by="admin")
    decided = health.health_report(demo_db, DATASET, n_boot=50)
    assert decided["design"]["answers"] == {"items": 13, "min": 0, "max": 2, "mean": 1.23}
    assert "13 of the 24 drawn items are decided; they had 0 to 2 answers each (mean 1.2)." in decided["methods"]


def test_one_answer_per_decided_item_is_said_in_the_singular(demo_db):
    draw(demo_db, 7, allocation="equal")
    answer_queue(demo_db, "health-1", "ann-c", 7)
    report = health.health_report(demo_db, DATASET, n_boot=50)
    assert "7 of the 7 drawn items are decided; each had 1 answer." in report["methods"]
    assert health.design_table(report)[0]["annotators asked per item"] == 3


def test_on_the_demo_the_estimates_bracket_the_known_flawed_share(demo_db):
    """The demo knows which of its negatives are also true. Annotators who answer right give every
    drawn item its true outcome (the whole path: batch, queues, consensus), and over ten seeds'
    samples the overall interval holds the true share in all but the odd one (95% intervals)."""
    from foil_studio.analysis.models import ModelSpec, load_model
    from foil_studio.analysis.scoring import score_dataset
    from foil_studio.data import item_kinds
    from foil_studio.data.item_kinds.truth import negative_verdict

    score_dataset(demo_db, DATASET, load_model(ModelSpec("foil-demo-clip", "none"), device="cpu"), run="demo-clip")
    draw(demo_db, 100)
    simulate(demo_db, "health-1", accuracies=1.0, seed=0)
    outcomes = health.item_verdicts(demo_db, DATASET)
    rows = store.items_by_id(demo_db, outcomes)
    verdict = {i: negative_verdict(item_kinds.item_kind(r["kind"]).truth_keys, r["truth"]) for i, r in rows.items()}
    assert outcomes == verdict and len(outcomes) == 100
    report = health.health_report(demo_db, DATASET, n_boot=200)
    assert report["leaderboard"]["runs"], report["leaderboard"]
    run = report["leaderboard"]["runs"][0]
    assert run["run"] == "demo-clip" and run["valid_interval"][0] <= run["valid"] <= run["valid_interval"][1], report[
        "leaderboard"
    ]

    truth = health.own_shares(demo_db, DATASET)["by_category"]
    every = {r["id"]: r for r in store.list_items(demo_db, store.get_dataset(demo_db, DATASET)["id"], limit=1 << 20)}
    true_share = sum(t["counts"]["invalid"] for t in truth.values()) / sum(t["items"] for t in truth.values())
    held = 0
    for seed in range(1, 11):
        plan = health.plan_sample(demo_db, DATASET, 60, seed=seed)  # from the items health-1 left
        invalid = [
            sum(
                negative_verdict(item_kinds.item_kind(every[i]["kind"]).truth_keys, every[i]["truth"]) == "invalid"
                for i in items
            )
            for items in plan.drawn.values()
        ]
        sizes = [plan.sizes[c] - plan.before.get(c, 0) for c in plan.drawn]
        remaining = [
            sum(1 for i in health.sampling_frame(demo_db, DATASET)[c] if i not in outcomes) for c in plan.drawn
        ]
        assert sizes == remaining
        left_truth = sum(
            negative_verdict(item_kinds.item_kind(every[i]["kind"]).truth_keys, every[i]["truth"]) == "invalid"
            for c in plan.drawn
            for i in health.sampling_frame(demo_db, DATASET)[c]
            if i not in outcomes
        ) / sum(sizes)
        share = h.stratified_share(invalid, [len(items) for items in plan.drawn.values()], sizes)
        held += share.low <= left_truth <= share.high
    assert held >= 9, held
    assert 0 < true_share < 0.2


def test_valse_pieces_estimated_from_40_items_each_hold_the_crowds_share(fresh_db, fixtures):
    """VALSE's three votes per foil are the population's truth. Forty items per piece answered as the
    crowd's majority did, through the whole path once (batch, queues, consensus, report: the report
    shows both figures), then for ten more seeds' samples: each piece's interval holds its true
    invalid share in the large majority of cases. VALSE's rule says "not valid", which our
    outcomes split into invalid and ambiguous: the report sets it beside our invalid-or-ambiguous
    share, never beside the invalid one alone."""
    from foil_studio.data import item_kinds
    from foil_studio.data.item_kinds.truth import negative_verdict

    import_path(fresh_db, "valse", fixtures / "valse" / "data", name="valse")
    own = health.own_shares(fresh_db, "valse")
    assert own is not None and len(own["by_category"]) >= 10
    assert [m["verdicts"] for m in own["measures"]] == ["invalid+ambiguous"]
    truth = {c: t["counts"]["invalid+ambiguous"] / t["items"] for c, t in own["by_category"].items()}
    every = {r["id"]: r for r in store.list_items(fresh_db, store.get_dataset(fresh_db, "valse")["id"], limit=1 << 20)}

    def invalid(item: int) -> bool:
        row = every[item]
        return negative_verdict(item_kinds.item_kind(row["kind"]).truth_keys, row["truth"]) == "invalid"

    held, total = 0, 0
    for seed in range(1, 11):  # drawn only: nothing stored, so every seed samples the whole dataset
        plan = health.plan_sample(fresh_db, "valse", per_category=40, seed=seed)
        for category, items in plan.drawn.items():
            share = h.stratum_share(sum(map(invalid, items)), len(items), plan.sizes[category])
            held += share.low <= truth[category] <= share.high
            total += 1
    assert held / total >= 0.85, (held, total)

    plan = health.plan_sample(fresh_db, "valse", per_category=40, seed=0)
    health.create_sample_batch(fresh_db, plan, ("v1", "v2", "v3"), overlap=3, name="valse-health")
    simulate(fresh_db, "valse-health", accuracies=1.0, seed=0)
    report = health.health_report(fresh_db, "valse", n_boot=100)
    for row in report["strata"]:
        assert row["invalid"] == sum(map(invalid, plan.drawn[row["category"]]))
        assert row["own"] == {"invalid+ambiguous": round(truth[row["category"]], 4)}
    own_column = "dataset's own % (not valid: fewer than 2 of 3 crowd workers chose the caption)"
    table = health.strata_table(report)
    assert list(table[0])[-2:] == ["invalid or ambiguous % (95% CI)", own_column], list(table[0])
    assert own_column in health.report_markdown(report)


def test_cli_sample_next_report(demo_db, tmp_path):
    db = store.location(demo_db)
    first = json.loads(
        run_cli(
            "health",
            "sample",
            DATASET,
            "--budget",
            "35",
            "--annotators",
            "x",
            "y",
            "z",
            "--name",
            "hs",
            "--json",
            db=db,
        ).stdout
    )
    assert first["drawn"] == 35 and first["design"]["allocation"] == "proportional"
    again = run_cli("health", "sample", DATASET, "--budget", "5", db=db)
    assert again.returncode == 1 and "health next" in again.stderr
    run_cli("simulate", "hs", db=db)
    nxt = json.loads(
        run_cli("health", "next", DATASET, "--budget", "20", "--annotators", "x", "y", "z", "--json", db=db).stdout
    )
    assert nxt["drawn"] == 20 and nxt["design"]["allocation"] == "neyman"
    out = tmp_path / "card"
    shown = run_cli("health", "report", DATASET, "--bootstrap", "100", "--out", str(out), db=db).stdout
    assert shown.startswith(f"# Benchmark health: {DATASET}") and (out / "report.md").read_text() in shown + "\n"
    written = json.loads((out / "report.json").read_text())
    assert written["design"]["drawn"] == 55 and written["methods"] in shown


def test_health_next_asks_as_many_annotators_per_item_as_the_sample_did(demo_db):
    """Issue 55: `health next` asked 3 by default, and refused a sample drawn with 2 annotators."""
    db = store.location(demo_db)
    two = ("--annotators", "x", "y")
    first = run_cli("health", "sample", DATASET, "--budget", "10", *two, "--overlap", "2", "--json", db=db)
    assert first.returncode == 0, first.stderr
    nxt = run_cli("health", "next", DATASET, "--budget", "10", *two, "--json", db=db)
    assert nxt.returncode == 0, nxt.stderr
    assert json.loads(nxt.stdout)["overlap"] == 2 == health.sample_overlap(demo_db, DATASET)
    asked = run_cli("health", "next", DATASET, "--budget", "10", *two, "--overlap", "1", "--json", db=db)
    assert json.loads(asked.stdout)["overlap"] == 1 == health.sample_overlap(demo_db, DATASET)


def test_the_pages_next_batch_form_asks_as_many_annotators_per_item_as_the_sample_did(app, demo_db):
    plan = health.plan_sample(demo_db, DATASET, 10)
    health.create_sample_batch(demo_db, plan, ("ann-a", "ann-b"), overlap=2, name="two-each")
    at = app(ADMIN)
    at.switch_page("views/health.py").run()
    at.selectbox(key="health_dataset").set_value(DATASET).run()
    assert not at.exception
    assert [n.value for n in at.number_input if n.label == "Annotators per item"] == [2]


def test_the_pages_strata_tables_are_counts_and_shares_under_short_labels(app, demo_db):
    """Issue 55: one table with the card's column names was wider than the page at 1280 px, cutting off
    the dataset's own verdicts (`tests/test_browser.py` measures the width in a browser)."""
    plan = health.plan_sample(demo_db, DATASET, 21)
    health.create_sample_batch(demo_db, plan, ("ann-a", "ann-b", "ann-c"), overlap=3, name="h")
    simulate(demo_db, "h", accuracies=0.9, seed=0)
    at = app(ADMIN)
    at.switch_page("views/health.py").run()
    at.selectbox(key="health_dataset").set_value(DATASET).run()
    assert not at.exception
    tables = {tuple(t.value.columns): json.loads(t.proto.columns) for t in at.dataframe}
    counts, shares = ("category", *health.STRATA_COUNTS), next(c for c in tables if "invalid % (95% CI)" in c)
    assert counts in tables and set(shares) & set(counts) == {"category"}
    labels = [tables[shares].get(column, {}).get("label", column) for column in shares]
    assert labels == ["category", "invalid %", "own invalid %", "ambiguous %", "own ambiguous %"], labels
    note = next(c.value for c in at.caption if c.value.startswith("Shares in percent"))
    assert "known flaw" in note and "known ambiguous negative" in note, note


def test_the_page_draws_a_sample_and_shows_the_estimates(app, demo_db):
    at = app(ADMIN)
    at.switch_page("views/health.py").run()
    at.selectbox(key="health_dataset").set_value(DATASET).run()
    assert any("No health sample" in i.value for i in at.info)
    store.ensure_annotator(demo_db, "ann-a")
    at = app(ADMIN)
    at.switch_page("views/health.py").run()
    at.selectbox(key="health_dataset").set_value(DATASET).run()
    at.number_input[0].set_value(21)
    next(b for b in at.button if b.label == "Draw the sample").click().run()
    assert not at.exception
    batches = health.health_batches(demo_db, DATASET)
    assert len(batches) == 1 and len(health.batch_design(demo_db, batches[0]["name"])["items"]) == 21
    # the page moves on to the drawn sample (it kept "No health sample yet" and the first form) and
    # shows the new batch's links once, where it says they are
    assert not any("No health sample" in i.value for i in at.info)
    assert "Draw the sample" not in [b.label for b in at.button]
    assert any(s.value.startswith(f"Batch {batches[0]['name']}: 21 items") for s in at.success)
    shown_links = [c.value for c in at.code]
    holders = {a["name"] for a in store.list_annotators(demo_db)}
    by_link = [store.annotator_by_token(demo_db, link.split("?token=")[1]) for link in shown_links]
    assert len(shown_links) == 3 and all(a is not None and a["name"] in holders for a in by_link)  # the first three
    simulate(demo_db, batches[0]["name"], accuracies=1.0, seed=0)
    at = app(ADMIN)
    at.switch_page("views/health.py").run()
    at.selectbox(key="health_dataset").set_value(DATASET).run()
    assert not at.exception
    report = health.health_report(demo_db, DATASET)
    shown = " ".join(m.value for m in at.markdown)
    assert f"{100 * report['overall']['invalid_share']['estimate']:.1f}%" in shown.replace("\\", "")
    assert at.dataframe[0].value["category"].tolist() == [row["category"] for row in report["strata"]] + ["all"]
    assert at.dataframe[0].value["items"].iloc[-1] == report["design"]["items"] == report["overall"]["covers"]
    # the leaderboard's figures in a table, not only on the chart's hover
    from foil_studio.analysis.models import demo_model_spec, load_model
    from foil_studio.analysis.scoring import score_dataset

    score_dataset(demo_db, DATASET, load_model(demo_model_spec(), device="cpu"), run="trained")
    at.run()
    board = next(d.value for d in at.dataframe if "valid items % (95% CI)" in d.value.columns)
    assert board["run"].tolist() == ["trained"]
    assert (
        board["all items %"].iloc[0]
        == health.leaderboard_table(health.health_report(demo_db, DATASET))[0]["all items %"]
    )


def test_a_rank_target_draws_where_the_two_runs_disagree(demo_db):
    """`health next --target rank`: Neyman allocation on the spread of the two runs' paired credit
    difference per category, from the valid items decided so far (1 where fewer than two)."""
    from foil_studio.analysis.models import ModelSpec, demo_model_spec, load_model
    from foil_studio.analysis.results import load_run, run_family
    from foil_studio.analysis.scoring import score_dataset

    score_dataset(demo_db, DATASET, load_model(demo_model_spec(), device="cpu"), run="trained")
    score_dataset(demo_db, DATASET, load_model(ModelSpec("foil-demo-clip", "none"), device="cpu"), run="random")
    draw(demo_db, 70)
    simulate(demo_db, "health-1", accuracies=1.0, seed=0)
    outcomes = health.item_verdicts(demo_db, DATASET)
    drawn = health.drawn_items(demo_db, DATASET)
    credit = {}
    for run in ("trained", "random"):
        loaded = load_run(demo_db, DATASET, run)
        credit[run] = dict(zip(loaded.item_ids.tolist(), run_family(loaded).credits(loaded, "wrong").tolist()))
    spreads = {}
    for category in health.sampling_frame(demo_db, DATASET):
        gaps = [
            credit["trained"][i] - credit["random"][i]
            for i, outcome in outcomes.items()
            if outcome == "valid" and drawn[i] == category
        ]
        spreads[category] = float(np.std(gaps, ddof=1)) if len(gaps) > 1 else 1.0
    plan = health.plan_sample(demo_db, DATASET, 40, target="rank", runs=("trained", "random"), seed=3)
    sizes = {c: len(items) for c, items in health.sampling_frame(demo_db, DATASET).items()}
    expected = h.allocate(sizes, 40, "neyman", taken=plan.before, spreads=spreads)
    assert {c: len(items) for c, items in plan.drawn.items()} == {c: n for c, n in expected.items() if n > 0}
    assert plan.allocation == "neyman" and plan.target == "rank" and len(plan.item_ids) == 40
    assert not set(plan.item_ids) & set(drawn)
    assert len(set(spreads.values())) > 1  # the categories differ, so the allocation is not even by chance


def test_valse_not_valid_is_set_beside_our_invalid_or_ambiguous_share(fresh_db, fixtures):
    """VALSE's rule says "not valid" (fewer than 2 of 3 workers chose the caption), which covers what
    our validations call invalid and ambiguous alike: its figure stands beside our invalid-or-ambiguous
    share, labelled with its definition, in the table, the methods paragraph and the page's chart,
    and never beside the invalid share alone."""
    import_path(fresh_db, "valse", fixtures / "valse" / "data", name="valse")
    plan = health.plan_sample(fresh_db, "valse", per_category=12, seed=0)
    health.create_sample_batch(fresh_db, plan, ("v1", "v2", "v3"), overlap=3, name="valse-health")
    simulate(fresh_db, "valse-health", accuracies=0.75, seed=0)  # some ties and Unsure: ambiguous items
    report = health.health_report(fresh_db, "valse", n_boot=50)
    definition = "not valid: fewer than 2 of 3 crowd workers chose the caption"
    assert report["own_verdicts"] == [{"verdicts": "invalid+ambiguous", "definition": definition}]
    own = health.own_shares(fresh_db, "valse")["by_category"]
    assert sum(row["ambiguous"] for row in report["strata"]) > 0
    for row in report["strata"]:
        share = row["invalid_or_ambiguous_share"]
        assert share["estimate"] == round((row["invalid"] + row["ambiguous"]) / row["decided"], 4)
        mine = own[row["category"]]
        assert row["own"] == {"invalid+ambiguous": round(mine["counts"]["invalid+ambiguous"] / mine["items"], 4)}
    overall = report["overall"]
    not_valid = sum(t["counts"]["invalid+ambiguous"] for t in own.values()) / sum(t["items"] for t in own.values())
    assert overall["own"] == {"invalid+ambiguous": round(not_valid, 4)}

    columns = list(health.strata_table(report)[0])
    own_column = f"dataset's own % ({definition})"
    assert columns.index(own_column) == columns.index("invalid or ambiguous % (95% CI)") + 1
    assert [c for c in columns if c.startswith("dataset's own")] == [own_column]
    ours = health.share_text(overall["invalid_or_ambiguous_share"]).split(" (")[0]
    assert f"{100 * not_valid:.1f}% ({definition}) against our estimate of {ours}%" in report["methods"]
    assert re.search(r"invalid or ambiguous\.", report["methods"]), report["methods"]

    chart = health.compared_shares(report)
    assert chart["title"].startswith("Invalid or ambiguous negatives") and '"not valid"' in chart["title"]
    assert definition in chart["own_name"]
    for point, row in zip(chart["rows"], report["strata"]):
        assert point["estimate"] == 100 * row["invalid_or_ambiguous_share"]["estimate"]
        assert point["own"] == 100 * row["own"]["invalid+ambiguous"]


def test_the_demo_sets_its_known_flaws_beside_the_invalid_share_and_its_ambiguous_ones_beside_ambiguous(demo_db):
    draw(demo_db, 35)
    simulate(demo_db, "health-1", accuracies=0.9, seed=0)
    report = health.health_report(demo_db, DATASET, n_boot=50)
    assert [m["verdicts"] for m in report["own_verdicts"]] == ["invalid", "ambiguous"]
    columns = list(health.strata_table(report)[0])
    flaws, ambiguous = (f"dataset's own % ({m['definition']})" for m in report["own_verdicts"])
    assert columns.index(flaws) == columns.index("invalid % (95% CI)") + 1
    assert columns.index(ambiguous) == columns.index("ambiguous % (95% CI)") + 1
    assert "invalid or ambiguous % (95% CI)" not in columns
    chart = health.compared_shares(report)
    assert chart["title"].startswith("Invalid negatives") and '"known flaw"' in chart["title"]


def test_a_health_batch_keeps_its_items_in_rows_and_a_key_press_groups_before_the_join(demo_db):
    """At 100,000 items a 1,100-item health design (66 kB of per-item JSON in the batch's config)
    cost every key press 165 ms: `annotator_batches` grouped the annotator's assignments after
    joining the batches, copying the config into a temporary B-tree per assignment. Now the items
    are rows (`health_items`) and the counts are grouped first."""
    draw(demo_db, 10, name="small")
    draw(demo_db, 100, name="large")
    small, large = (len(json.dumps(store.get_batch(demo_db, n)["config"])) for n in ("small", "large"))
    assert abs(large - small) < 40  # 90 more items once added about 5 kB
    assert len(health.batch_design(demo_db, "large")["items"]) == 100
    if paths.is_store_url(store.location(demo_db)):
        return  # what follows reads SQLite's query plan
    seen: list[str] = []
    demo_db.conn.set_trace_callback(seen.append)
    ann = store.annotator_by_name(demo_db, "ann-a")["id"]
    assert [b["name"] for b in store.annotator_batches(demo_db, ann)] == ["small", "large"]
    demo_db.conn.set_trace_callback(None)
    query = next(sql for sql in seen if "FROM assignments" in sql)
    plan = demo_db.execute(f"EXPLAIN QUERY PLAN {query}").fetchall()
    assert not [row for row in plan if row[1] == 0 and "GROUP BY" in row[3]], plan  # grouped inside, before the join


def test_the_health_page_computes_its_report_once_until_the_labels_change(app, demo_db, monkeypatch):
    """The page rebuilt the report, bootstrap included, on every rerun (1.9 s at 100,000 items)."""
    draw(demo_db, 12)
    simulate(demo_db, "health-1", accuracies=1.0, seed=0)
    computed = []
    original = health.health_report
    monkeypatch.setattr(health, "health_report", lambda *a, **k: computed.append(1) or original(*a, **k))
    at = app(ADMIN)
    at.switch_page("views/health.py").run()
    at.selectbox(key="health_dataset").set_value(DATASET).run()
    at.run()
    at.run()
    assert not at.exception and len(computed) == 1  # three renders, one computation
    batch_id = store.get_batch(demo_db, "health-1")["id"]
    label = store.batch_labels(demo_db, batch_id)[0]
    store.decide(demo_db, batch_id, label["item"], 0, {"answer": "negative_true"}, by="admin")
    at.run()
    assert len(computed) == 2  # an admin's decision changes the estimates: computed again


def test_with_no_valid_item_decided_the_leaderboard_says_why_instead_of_nan(demo_db):
    """Found by the stateful test: every decided item invalid gave "nan% (95% CI 0.00 to 100.00)
    on valid items" in the methods paragraph, the page and the card."""
    from foil_studio.analysis.models import demo_model_spec, load_model
    from foil_studio.analysis.scoring import score_dataset

    score_dataset(demo_db, DATASET, load_model(demo_model_spec(), device="cpu"), run="trained")
    draw(demo_db, 5)
    annotators = {a["name"]: a["id"] for a in store.list_annotators(demo_db)}
    for name in ("ann-a", "ann-b", "ann-c"):
        while (state := draw_next(demo_db, annotators[name], "health-1")).task is not None:
            submit_answer(
                demo_db, annotators[name], "health-1", state.task, {"answer": "negative_true"}, simulated=True
            )
    report = health.health_report(demo_db, DATASET, n_boot=50)
    assert report["leaderboard"]["runs"] == [] and report["leaderboard"]["undefined"] == health.NO_VALID_ITEM
    card = health.report_markdown(report)
    assert "nan" not in card and "Accuracy on valid items: not yet defined (no decided item is valid yet" in card


def test_dawid_skene_verdicts_are_crowd_kits_own_and_the_report_says_which_rule_made_them(demo_db):
    """Outcomes by Dawid-Skene are what crowd-kit's DawidSkene, called here on the batch's labels,
    gives each item; the counts per category follow them, and the methods paragraph names the rule."""
    import pandas as pd
    from crowdkit.aggregation import DawidSkene

    from foil_studio.annotate.health.card import OUTCOME_RULE

    draw(demo_db, 60)
    simulate(demo_db, "health-1", accuracies={"ann-a": 0.95, "ann-b": 0.65, "ann-c": 0.55}, seed=3)
    batch = store.get_batch(demo_db, "health-1")
    labels = pd.DataFrame(
        [
            {"task": label["item"], "worker": label["annotator"], "label": label["answer"]["answer"]}
            for label in store.batch_labels(demo_db, batch["id"])
        ]
    )
    modelled = DawidSkene(n_iter=100).fit_predict(labels)
    expected = {int(item): health.VALIDATION.verdict_of_answer[answer] for item, answer in modelled.items()}
    sample = health.read_sample(demo_db, DATASET, "dawid-skene")
    assert sample.verdicts == expected
    majority = health.read_sample(demo_db, DATASET).verdicts
    assert majority != expected  # three annotators this noisy disagree on some items: the rule matters
    report = health.health_report(demo_db, DATASET, n_boot=50, consensus="dawid-skene")
    assert report["consensus"] == "dawid-skene" and OUTCOME_RULE["dawid-skene"] in report["methods"]
    for row in report["strata"]:
        outcomes = [o for i, o in expected.items() if sample.drawn[i] == row["category"]]
        assert (row["invalid"], row["ambiguous"]) == (outcomes.count("invalid"), outcomes.count("ambiguous"))
    assert OUTCOME_RULE["majority"] in health.health_report(demo_db, DATASET, n_boot=50)["methods"]
    assert set(OUTCOME_RULE) == set(health.CONSENSUS)


def test_an_unknown_consensus_is_refused(demo_db):
    draw(demo_db, 10)
    with pytest.raises(
        health.HealthError, match=r"unknown consensus 'vote'; expected one of \['majority', 'dawid-skene'\]"
    ):
        health.health_report(demo_db, DATASET, consensus="vote")
    refused = run_cli("health", "report", DATASET, "--consensus", "vote", db=store.location(demo_db))
    assert refused.returncode == 2 and "invalid choice: 'vote'" in refused.stderr and refused.stderr.count("\n") == 1


def test_dawid_skene_says_how_many_verdicts_it_decides_otherwise_than_the_majority(demo_db):
    draw(demo_db, 60)
    simulate(demo_db, "health-1", accuracies={"ann-a": 0.95, "ann-b": 0.65, "ann-c": 0.55}, seed=3)
    majority = health.read_sample(demo_db, DATASET).verdicts
    modelled = health.read_sample(demo_db, DATASET, "dawid-skene").verdicts
    differs = sum(majority.get(i) != o for i, o in modelled.items())
    report = health.health_report(demo_db, DATASET, n_boot=50, consensus="dawid-skene")
    assert report["differs_from_majority"] == differs > 0
    assert f"It decides {differs} of the decided items otherwise than the majority answer would." in report["methods"]
    assert health.health_report(demo_db, DATASET, n_boot=50)["differs_from_majority"] is None


def test_the_page_never_fits_the_blind_audit_on_its_own_and_says_how_to(app, demo_db, monkeypatch):
    """Issue 57: the page's first call fitted the blind audit of every item (47 s at 100,000 items)."""
    from foil_studio.analysis import audit

    draw(demo_db, 12)
    simulate(demo_db, "health-1", accuracies=1.0, seed=0)
    fitted = []
    original = audit.audit
    monkeypatch.setattr(audit, "audit", lambda *a, **k: fitted.append(1) or original(*a, **k))
    at = app(ADMIN)
    at.switch_page("views/health.py").run()
    at.selectbox(key="health_dataset").set_value(DATASET).run()
    assert not at.exception and not fitted and health.stored_blind_audit(demo_db, DATASET) is None
    assert any("./foil health report DATASET" in i.value and "not computed" in i.value for i in at.info)
    assert report_figures_shown(at)  # everything else is on the page at once
    next(b for b in at.button if b.label == "Fit the blind audit now").click().run()
    assert not at.exception and fitted == [1] and health.stored_blind_audit(demo_db, DATASET) is not None
    blind = health.hackability(demo_db, DATASET, fit=False)
    table = next(d.value for d in at.dataframe if "stats" in d.value.columns)
    assert table["stats"].iloc[-1] == health.blind_table({"hackability": blind})[-1]["stats"]
    at.run()
    assert fitted == [1]  # stored: read, never fitted again


def report_figures_shown(at) -> bool:
    """The estimates' table is on the page (its last row the overall one)."""
    return any(d.value["category"].tolist()[-1:] == ["all"] for d in at.dataframe if "category" in d.value.columns)


def test_the_cli_report_fits_the_blind_audit_once_and_says_so(demo_db, tmp_path):
    draw(demo_db, 12)
    simulate(demo_db, "health-1", accuracies=1.0, seed=0)
    first = run_cli("health", "report", DATASET, "--bootstrap", "50", db=store.location(demo_db))
    assert "fitting the blind text-only audit" in first.stderr and "Blind text-only scorers" in first.stdout
    again = run_cli("health", "report", DATASET, "--bootstrap", "50", db=store.location(demo_db))
    assert "fitting the blind" not in again.stderr and again.stdout == first.stdout


def test_credits_at_looks_up_the_asked_items_and_refuses_a_run_that_missed_one():
    from foil_studio.annotate.health.sample import credits_at

    ids, credits = np.array([2, 5, 9]), np.array([1.0, 0.5, 0.0])
    assert credits_at(ids, credits, [9, 2]) == {9: 0.0, 2: 1.0}
    assert credits_at(ids, credits, [2, 6]) is None  # between two scored items
    assert credits_at(ids, credits, [10]) is None and credits_at(ids, credits, [1]) is None  # past either end
    assert credits_at(ids, credits, []) == {}
    assert credits_at(np.array([], dtype=np.int64), np.array([]), [3]) is None
    assert credits_at(np.array([], dtype=np.int64), np.array([]), []) == {}
