"""A full simulated BiVLC construction on the demo: pick image, filter ambiguity, baseline, export."""

from __future__ import annotations

import csv
import json
import subprocess

import pytest

from foil_studio.annotate import batch_reports, batches, consensus, construction, simulation
from foil_studio.annotate.baselines import human_baseline
from foil_studio.annotate.export import export_clean
from foil_studio.data import store
from tests.conftest import FOIL_CLI, REPO


def test_bivlc_construction_ends_in_a_cleaned_set_whose_provenance_matches_the_labels(demo_db, tmp_path):
    db = demo_db
    pick = batches.create_batch(
        db, batches.BatchSpec("demo-bivlc-candidates", "pick_image", ("ada", "ben", "cleo"), 2, 40, seed=1)
    )
    simulation.simulate(db, pick["batch"], accuracies=0.9, seed=1)
    ambiguity = construction.create_ambiguity_batch(db, pick["batch"], annotators=("ada", "ben", "cleo"), overlap=2)
    simulation.simulate(db, ambiguity["batch"], accuracies=0.9, seed=2)
    summary = export_clean(db, ambiguity["batch"], "bivlc", tmp_path / "clean")

    provenance = json.loads((tmp_path / "clean" / "provenance.json").read_text())
    rows = list(csv.DictReader((tmp_path / "clean" / "bivlc.csv").open()))
    assert len(rows) == summary["n_kept"] == provenance["n_kept"] > 0
    assert all(
        (tmp_path / "clean" / r["image"]).is_file() and (tmp_path / "clean" / r["negative_image"]).is_file()
        for r in rows
    )
    # every decision in the provenance is the majority of the stored labels
    decided = {d.item: d for d in consensus.decisions(db, ambiguity["batch"])}
    for entry in provenance["removed"]:
        if entry["batch"] == ambiguity["batch"]:
            assert decided[entry["item"]].answer == entry["decision"] != "original"
    assert {k["item"] for k in provenance["kept"]} == {i for i, d in decided.items() if d.answer == "original"}
    picked_none = [e for e in provenance["removed"] if e["batch"] == pick["batch"]]
    assert all(e["decision"] == "none" for e in picked_none)
    assert len(picked_none) + ambiguity["n_items"] == pick["n_items"]
    assert "annotators labelled" in provenance["protocol"] and provenance["agreement"]["n_labels"] > 0

    # the human baseline on the constructed groups uses the model metric keys
    names = []
    for task in ("baseline_i2t", "baseline_t2i"):
        created = batches.create_batch(
            db, batches.BatchSpec("demo-bivlc-candidates-constructed", task, ("ada", "ben"), 1, seed=3)
        )
        simulation.simulate(db, created["batch"], accuracies=0.95, seed=3)
        names.append(created["batch"])
    result = human_baseline(db, names, n_boot=20)
    assert set(result["metrics"]) == {"i2t", "t2i", "group", "ipos2t", "ineg2t", "tpos2i", "tneg2i"}


def test_validation_export_drops_false_negatives_in_sugarcrepe_layout(demo_db, tmp_path):
    created = batches.create_batch(
        demo_db, batches.BatchSpec("demo-sugarcrepe", "validate_negative", ("ada", "ben", "cleo"), 3, 140, seed=5)
    )
    simulation.simulate(demo_db, created["batch"], accuracies=1.0, seed=5)
    export_clean(demo_db, created["batch"], "sugarcrepe", tmp_path / "sc")
    items = store.items_by_id(
        demo_db,
        {a["item_id"] for a in store.batch_assignments(demo_db, store.get_batch(demo_db, created["batch"])["id"])},
    )
    exported = {}
    for path in (tmp_path / "sc").glob("*.json"):
        if path.name != "provenance.json":
            exported.update({(path.stem, k): v for k, v in json.loads(path.read_text()).items()})
    truly_false = [i for i in items.values() if i["truth"]["negative"] == "false"]
    assert len(exported) == len(truly_false)
    provenance = json.loads((tmp_path / "sc" / "provenance.json").read_text())
    rules = {e["rule"] for e in provenance["removed"]}
    assert any("false negative" in r for r in rules)


def test_a_cleaned_export_is_written_in_its_task_types_layout_and_refuses_another(demo_db, tmp_path):
    created = batches.create_batch(
        demo_db, batches.BatchSpec("demo-sugarcrepe", "validate_negative", ("ada", "ben"), 2, 20, seed=6)
    )
    simulation.simulate(demo_db, created["batch"], accuracies=1.0, seed=6)
    with pytest.raises(batches.BatchError, match="leaves a sugarcrepe benchmark, not bivlc"):
        export_clean(demo_db, created["batch"], "bivlc", tmp_path / "wrong")
    assert not (tmp_path / "wrong").exists()
    summary = export_clean(demo_db, created["batch"], None, tmp_path / "clean")
    assert summary["format"] == "sugarcrepe" and (tmp_path / "clean" / "provenance.json").is_file()


def test_adjudication_wins_and_dawid_skene_recovers_annotator_accuracy(demo_db):
    created = batches.create_batch(
        demo_db, batches.BatchSpec("demo-sugarcrepe", "validate_negative", ("ada", "ben", "cleo"), 3, 200, seed=7)
    )
    simulation.simulate(demo_db, created["batch"], accuracies={"ada": 0.95, "ben": 0.85, "cleo": 0.6}, seed=7)
    estimated = consensus.dawid_skene(demo_db, created["batch"])["accuracy"]
    assert estimated["ada"] == pytest.approx(0.95, abs=0.08)
    assert estimated["cleo"] == pytest.approx(0.6, abs=0.12)
    assert estimated["ada"] > estimated["ben"] > estimated["cleo"]
    queue = consensus.adjudication_queue(demo_db, created["batch"])
    assert queue and all(len(d.votes) > 1 for d in queue)
    first = queue[0]
    batch_id = store.get_batch(demo_db, created["batch"])["id"]
    store.decide(
        demo_db, batch_id, first.item, first.part, {"answer": "unsure"}, by="admin", reason="checked the image"
    )
    decided = {(d.item, d.part): d for d in consensus.decisions(demo_db, created["batch"])}
    assert decided[(first.item, first.part)].answer == "unsure" and decided[(first.item, first.part)].rule == "admin"
    assert (first.item, first.part) not in {
        (d.item, d.part) for d in consensus.adjudication_queue(demo_db, created["batch"])
    }


def test_construction_from_the_cli(demo_db, tmp_path):
    path = str(store.location(demo_db))

    def run(*args):
        done = subprocess.run(
            [*FOIL_CLI, *args, "--db", path, "--json"],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    pick = run(
        "batch",
        "create",
        "demo-bivlc-candidates",
        "--task-type",
        "pick_image",
        "--overlap",
        "2",
        "--n",
        "20",
        "--annotators",
        "ada",
        "ben",
        "cleo",
    )
    run("simulate", pick["batch"], "--accuracy", "0.9")
    ambiguity = run("batch", "from-picks", pick["batch"])
    run("simulate", ambiguity["batch"], "--accuracy", "0.9")
    cleaned = run("export-clean", ambiguity["batch"], "--format", "bivlc", "--out", str(tmp_path / "out"))
    assert cleaned["n_kept"] + cleaned["n_removed"] == pick["n_items"]
    assert (tmp_path / "out" / "provenance.json").is_file()


def test_adaptive_overlap_adds_one_annotator_to_disputed_items_only(demo_db):
    created = batches.create_batch(
        demo_db,
        batches.BatchSpec("demo-sugarcrepe", "validate_negative", ("ada", "ben", "cleo", "dan"), 2, 60, seed=11),
    )
    simulation.simulate(demo_db, created["batch"], accuracies=0.7, seed=11)
    disputed = {(d.item, d.part) for d in consensus.decisions(demo_db, created["batch"]) if len(d.votes) > 1}
    added = batches.extend_disagreements(demo_db, created["batch"])
    rows = store.batch_assignments(demo_db, store.get_batch(demo_db, created["batch"])["id"])
    holders = {}
    for row in rows:
        holders.setdefault((row["item_id"], row["part"]), []).append(row["annotator"])
    assert added == len(disputed) > 0
    assert all(len(holders[u]) == 3 and len(set(holders[u])) == 3 for u in disputed)
    assert all(len(h) == 2 for u, h in holders.items() if u not in disputed)
    per_category = batch_reports.agreement_by_category(demo_db, created["batch"])
    assert {row["category"] for row in per_category} <= {
        "replace_obj",
        "replace_att",
        "replace_rel",
        "swap_obj",
        "swap_att",
        "add_obj",
        "add_att",
    }
    assert sum(row["n_items"] for row in per_category) == 60


def test_construction_from_the_app(demo_db, admin_page):
    at = admin_page(store.location(demo_db), "views/batches.py")
    at.selectbox(key="new_task_type").set_value("pick_image").run()
    at.selectbox(key="new_dataset").set_value("demo-bivlc-candidates").run()
    at.number_input(key="new_n").set_value(20).run()
    at.text_input(key="new_names").set_value("ada, ben").run()
    at.button(key="create_batch").click().run()
    pick = store.list_batches(demo_db)[-1]["name"]
    assert at.selectbox(key="batch").value == pick  # the new batch is the one shown
    at.button(key="simulate").click().run()
    at.button(key="to_ambiguity").click().run()
    ambiguity = store.list_batches(demo_db)[-1]["name"]
    assert store.get_batch(demo_db, ambiguity)["task_type"] == "ambiguity"
    at.run()  # the batch list is drawn before the button creates the new batch
    at.selectbox(key="batch").set_value(ambiguity).run()
    at.button(key="simulate").click().run()
    at.button(key="export_clean").click().run()
    assert not at.exception
    assert any(s.value.startswith("Kept ") and "provenance.json" in s.value for s in at.success)
    protocol = next(c.value for c in at.code if "annotators labelled" in c.value)
    assert (
        "Median time per item" not in protocol and "labels were simulated" in protocol
    )  # no "0.0 s" from simulated answers
    assert at.get("download_button")  # the cleaned benchmark as a zip, not only a path on the server


def test_creating_a_batch_selects_it_shows_its_links_once_and_forgets_the_names_typed(demo_db, admin_page):
    at = admin_page(store.location(demo_db), "views/batches.py")
    at.selectbox(key="new_dataset").set_value("demo-sugarcrepe").run()
    assert at.button(key="create_batch").disabled  # nobody chosen yet: no batch for "everyone" by default
    at.text_input(key="new_names").set_value("zoe, yann").run()
    at.button(key="create_batch").click().run()
    first = store.list_batches(demo_db)[-1]["name"]
    assert not at.exception and at.selectbox(key="batch").value == first
    assert at.text_input(key="new_names").value == "" and at.multiselect(key="new_annotators").value == []
    links = [c.value for c in at.code if "?token=" in c.value]
    assert len(links) == 2  # one copyable link per annotator
    at.multiselect(key="new_annotators").set_value(["yann"]).run()
    at.number_input(key="new_overlap").set_value(1).run()
    at.button(key="create_batch").click().run()
    assert not at.error, at.error[0].value if at.error else ""
    second = store.list_batches(demo_db)[-1]["name"]
    assert at.selectbox(key="batch").value == second != first
    holders = {a["annotator"] for a in store.batch_assignments(demo_db, store.get_batch(demo_db, second)["id"])}
    assert holders == {"yann"}  # zoe, typed for the first batch, was not silently added to the second


@pytest.mark.slow
def test_adjudication_options_read_as_the_answers_people_gave(demo_db, admin_page):
    created = batches.create_batch(
        demo_db, batches.BatchSpec("demo-crepe", "compare_negatives", ("ada", "ben"), 2, 10, seed=1)
    )
    simulation.simulate(demo_db, created["batch"], accuracies=0.5, seed=2)
    queue = consensus.adjudication_queue(demo_db, created["batch"])
    assert queue
    at = admin_page(store.location(demo_db), "views/batches.py")
    at.selectbox(key="batch").set_value(created["batch"]).run()
    first = queue[0]
    decision = at.selectbox(key=f"decide:{first.item}:{first.part}")
    item = store.items_by_id(demo_db, [first.item])[first.item]
    shown = list(decision.options)  # as drawn (AppTest holds the formatted labels)
    assert all(s.startswith("commonsense: ") and "; grammar: " in s and "=" not in s and "|" not in s for s in shown)
    assert any(
        f"“{caption}”" in s for s in shown for caption in item["captions"][1:3]
    )  # which negatives were compared, by their text
    assert decision.value is None  # nothing pre-selected
    chosen = sorted(first.votes)[0]
    decision.set_value(chosen).run()
    at.button(key=f"decide_button:{first.item}:{first.part}").click().run()
    decided = [
        d for d in consensus.decisions(demo_db, created["batch"]) if (d.item, d.part) == (first.item, first.part)
    ][0]
    assert decided.rule == "admin" and decided.answer == chosen
