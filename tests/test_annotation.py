"""Annotation: assignment properties, task randomisation, idempotent labels, queues and pages."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from foil_studio.annotate import batch_reports, batches, consensus, construction, crowd_studies, queues, simulation
from foil_studio.annotate.task_types import REGISTRY as TASK_REGISTRY
from foil_studio.annotate.task_types import TASK_TYPES, TaskError, build_task, check_answer, expected_answer, is_correct
from foil_studio.data import store
from foil_studio.data.item_kinds import REGISTRY as ITEM_KINDS
from foil_studio.data.items import Item
from tests.conftest import APP_SCRIPT, DATASET_FOR_TASK

ADMIN = "annotation-admin-token"
pytestmark = pytest.mark.both_engines


# --- assignment ---------------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(
    n_units=st.integers(0, 120), n_annotators=st.integers(1, 8), overlap=st.integers(1, 4), seed=st.integers(0, 10**6)
)
def test_assignment_gives_exact_overlap_no_repeats_balanced_load(n_units, n_annotators, overlap, seed):
    annotators = list(range(10, 10 + n_annotators))
    if overlap > n_annotators:
        with pytest.raises(batches.BatchError):
            batches.plan_assignments(n_units, annotators, overlap, seed)
        return
    plan = batches.plan_assignments(n_units, annotators, overlap, seed)
    assert len(plan) == n_units
    assert all(len(holders) == len(set(holders)) == overlap for holders in plan)
    load = Counter(a for holders in plan for a in holders)
    loads = [load[a] for a in annotators]
    assert max(loads) - min(loads) <= 1


@settings(max_examples=40, deadline=None)
@given(n_annotators=st.integers(2, 6), seed=st.integers(0, 10**6))
def test_every_annotator_pair_shares_items_for_kappa(n_annotators, seed):
    annotators = list(range(n_annotators))
    n_pairs = n_annotators * (n_annotators - 1) // 2
    plan = batches.plan_assignments(10 * n_pairs, annotators, 2, seed)
    shared = Counter(tuple(sorted(h)) for h in plan)
    assert set(shared) == set(combinations(annotators, 2))
    assert min(shared.values()) >= 0.7 * 10  # every pair gets close to its even share (10 units)


# --- tasks ----------------------------------------------------------------------------------------

ITEMS = {name: kind.example for name, kind in ITEM_KINDS.items()}  # a small item of each kind


def example_item(task_type: str):
    """The item a task type's tests lay out: an item of its example kind."""
    return ITEMS[TASK_REGISTRY[task_type].example_kind]


def test_every_item_kind_has_an_example_item_of_its_shape():
    for name, kind in ITEM_KINDS.items():
        item = Item(
            name,
            "example",
            str(kind.example.get("id")),
            tuple(kind.example.get("captions", ())),
            tuple(kind.example.get("images", ())),
            dict(kind.example.get("truth", {})),
        )
        assert item.kind == kind.example["kind"] == name, f"give item kind {name} an example item"


# Task types that show their captions under their roles (validate_negative) have no position to shuffle.
SHUFFLED_STIMULI = [name for name, t in TASK_REGISTRY.items() if t.shuffles]


@pytest.mark.parametrize("task_type", SHUFFLED_STIMULI)
def test_option_order_is_randomised_reproducible_and_recorded(task_type):
    item = example_item(task_type)
    layouts = {build_task(task_type, item, 0, seed=str(s)).displayed_order for s in range(40)}
    assert len(layouts) > 1  # the order really varies
    again = build_task(task_type, item, 0, seed="7")
    assert again == build_task(task_type, item, 0, seed="7")
    assert sorted(again.displayed_order) == sorted(set(again.displayed_order))


@pytest.mark.parametrize("task_type", TASK_TYPES)
def test_answer_buttons_and_their_keys_never_move_between_items(task_type):
    """Key 1 means the same answer on every item of a task type: only the stimuli are shuffled."""
    item = example_item(task_type)
    buttons = {
        tuple((o.label, o.shortcut) for o in build_task(task_type, item, 0, seed=str(s)).options) for s in range(40)
    }
    assert len(buttons) == 1
    questions = {build_task(task_type, item, 0, seed=str(s)).question_labels for s in range(40)}
    assert len(questions) == 1


def test_validate_negative_keys_mean_the_same_verdict_on_every_item():
    meanings = {
        tuple(
            (o.shortcut, o.value)
            for o in build_task("validate_negative", {**ITEMS["pair"], "id": n}, 0, seed=str(n)).options
        )
        for n in range(30)
    }
    assert meanings == {(("1", "negative_false"), ("2", "negative_true"), ("3", "unsure"))}


def test_pick_image_answer_is_stored_in_item_terms_whatever_the_display():
    item = ITEMS["candidates"]
    for seed in range(20):
        task = build_task("pick_image", item, 0, seed=str(seed))
        shown_first = task.images[0][1]
        option = task.options[0]  # the button under the first image shown
        assert item["images"][int(option.value)] == shown_first
        assert is_correct("pick_image", item, 0, {"answer": option.value}) == item["truth"]["valid"][int(option.value)]


def test_baseline_answers_name_the_caption_not_the_position():
    item = ITEMS["group"]
    for part in (0, 1):
        for seed in range(10):
            task = build_task("baseline_i2t", item, part, seed=str(seed))
            right = next(o for o, (_, text) in zip(task.options, task.captions) if text == item["captions"][part])
            assert is_correct("baseline_i2t", item, part, {"answer": right.value})
            assert task.images[0][1] == item["images"][part]


def test_answers_outside_the_options_are_refused():
    task = build_task("validate_negative", ITEMS["pair"], 0, seed="1")
    with pytest.raises(TaskError):
        check_answer(task, {"answer": "maybe"})
    assert check_answer(task, {"answer": "unsure", "junk": 1}) == {"answer": "unsure"}


def test_ranking_with_ties_is_scored_by_order():
    item = ITEMS["triple"]
    assert is_correct("rank_captions", item, 0, {"rank_0": "1", "rank_1": "3", "rank_2": "1"})
    assert is_correct("rank_captions", item, 0, expected_answer("rank_captions", item))
    assert not is_correct("rank_captions", item, 0, {"rank_0": "1", "rank_1": "2", "rank_2": "3"})


# --- batches in a store -----------------------------------------------------------------------------


@pytest.fixture
def db(demo_db):
    return demo_db


def make_batch(
    db, task="pick_image", dataset="demo-bivlc-candidates", n=12, overlap=2, gold=0.0, annotators=("ada", "ben", "cleo")
):
    # min_seconds=0: these tests answer as fast as code can; the too-fast guard has tests of its own
    return batches.create_batch(
        db, batches.BatchSpec(dataset, task, annotators, overlap, n, gold_share=gold, seed=5, min_seconds=0)
    )


def answer_next(db, name: str, batch: str, pick=0) -> queues.QueueState:
    annotator = store.ensure_annotator(db, name)
    state = queues.draw(db, annotator["id"], batch)
    option = state.task.options[pick]
    answer = {q: option.value for q in state.task.questions}
    queues.submit_answer(db, annotator["id"], batch, state.task, answer)
    return state


def test_batch_create_matches_cli_contract_and_overlap(db):
    created = make_batch(db, n=12, overlap=2)
    assert set(created) == {"batch", "task_type", "n_items", "overlap", "annotators"}
    assert sum(a["n_assigned"] for a in created["annotators"]) == 24
    rows = store.batch_assignments(db, store.get_batch(db, created["batch"])["id"])
    per_item = Counter(r["item_id"] for r in rows)
    assert set(per_item.values()) == {2}


def test_gold_items_go_to_everyone_and_score_annotators(db):
    created = make_batch(db, n=20, overlap=1, gold=0.25)
    rows = store.batch_assignments(db, store.get_batch(db, created["batch"])["id"])
    gold = {r["item_id"] for r in rows if r["is_gold"]}
    assert len(gold) == 5
    assert all(sum(r["item_id"] == g for r in rows) == 3 for g in gold)
    items = store.items_by_id(db, gold)
    ada = store.ensure_annotator(db, "ada")
    while (state := queues.draw(db, ada["id"], created["batch"])).task is not None:
        item = items.get(state.task.item_id)
        answer = expected_answer("pick_image", item) if item else {"answer": "none"}
        queues.submit_answer(db, ada["id"], created["batch"], state.task, answer)
    progress = {row["annotator"]: row for row in batch_reports.batch_progress(db, created["batch"])}
    assert progress["ada"]["gold_n"] == 5 and progress["ada"]["gold_accuracy"] == 100.0
    assert progress["ada"]["remaining"] == 0 and progress["ben"]["gold_n"] == 0


def test_resubmission_never_creates_a_second_label(db):
    created = make_batch(db)
    ada = store.ensure_annotator(db, "ada")
    state = queues.draw(db, ada["id"], created["batch"])
    first = queues.submit_answer(db, ada["id"], created["batch"], state.task, {"answer": "none"})
    second = queues.submit_answer(db, ada["id"], created["batch"], state.task, {"answer": state.task.options[0].value})
    assert (first, second) == (True, False)
    labels = store.batch_labels(db, store.get_batch(db, created["batch"])["id"])
    assert len(labels) == 1 and labels[0]["answer"] == {"answer": "none"}


def test_an_annotator_cannot_answer_someone_elses_item(db):
    created = make_batch(db, overlap=1)
    ada, ben = (store.ensure_annotator(db, n) for n in ("ada", "ben"))
    ben_task = queues.draw(db, ben["id"], created["batch"]).task
    mine = {
        r["item_id"]
        for r in store.batch_assignments(db, store.get_batch(db, created["batch"])["id"])
        if r["annotator_id"] == ada["id"]
    }
    assert ben_task.item_id not in mine
    with pytest.raises(store.StoreError, match="not in your queue"):
        queues.submit_answer(db, ada["id"], created["batch"], ben_task, {"answer": "none"})


def test_labels_record_order_time_and_export(db):
    created = make_batch(db)
    answer_next(db, "ada", created["batch"], pick=1)
    answer_next(db, "ada", created["batch"], pick=4)
    rows = list(csv.DictReader(io.StringIO(batch_reports.export_labels(db, created["batch"], "csv"))))
    assert len(rows) == 2 and all(r["annotator"] == "ada" for r in rows)
    assert all(len(json.loads(r["displayed_order"])) == 4 and r["submitted_at"] and r["seconds"] != "" for r in rows)
    jsonl = [json.loads(line) for line in batch_reports.export_labels(db, created["batch"], "jsonl").splitlines()]
    assert jsonl[1]["answer"] == {"answer": "none"}


def test_admin_revision_keeps_history(db):
    created = make_batch(db)
    answer_next(db, "ada", created["batch"], pick=4)
    label = store.batch_labels(db, store.get_batch(db, created["batch"])["id"])[0]
    store.revise_label(db, label["id"], {"answer": "2"}, by="admin", reason="adjudicated")
    assert store.batch_labels(db, store.get_batch(db, created["batch"])["id"])[0]["answer"] == {"answer": "2"}
    history = list(db.query("SELECT * FROM label_revisions"))
    assert json.loads(history[0]["previous_answer"]) == {"answer": "none"} and history[0]["revised_by"] == "admin"


def test_walked_away_items_are_reassigned_keeping_exact_overlap(db):
    created = make_batch(db, n=6, overlap=2)
    batch = store.get_batch(db, created["batch"])
    ada = store.ensure_annotator(db, "ada")
    held = queues.draw(db, ada["id"], created["batch"])  # ada opens an item and leaves
    later = datetime.now(UTC) + timedelta(hours=2)
    assert queues.reassign_stale(db, created["batch"], now=later) == 1
    rows = store.batch_assignments(db, batch["id"])
    holders = [r["annotator"] for r in rows if (r["item_id"], r["part"]) == (held.task.item_id, held.task.part)]
    assert len(holders) == len(set(holders)) == 2 and "ada" not in holders


# --- pages --------------------------------------------------------------------------------------


@pytest.fixture
def app_db(db, monkeypatch):
    monkeypatch.setenv("FOIL_DB", str(store.location(db)))
    monkeypatch.setenv("FOIL_ADMIN_TOKEN", ADMIN)
    return db


def open_app(token: str) -> AppTest:
    at = AppTest.from_file(str(APP_SCRIPT), default_timeout=60)
    at.query_params["token"] = token
    return at.run()


@pytest.mark.parametrize("task_type", TASK_TYPES)
def test_annotator_flow_per_task_resumes_without_duplicates(app_db, task_type):
    dataset = DATASET_FOR_TASK[task_type]
    created = make_batch(app_db, task=task_type, dataset=dataset, n=4, overlap=1, annotators=("ada",))
    token = created["annotators"][0]["token"]
    at = open_app(token)
    assert not at.exception and at.button(key="start")
    at.button(key="start").click().run()
    for _ in range(3):
        _answer_on_page(at)
        assert not at.exception
    labels = store.batch_labels(app_db, store.get_batch(app_db, created["batch"])["id"])
    assert len(labels) == 3
    resumed = open_app(token)  # a reload starts a new session: it resumes at the 4th question
    assert resumed.get("progress")[0].proto.text.startswith("3 of")
    _answer_on_page(resumed)
    labels = store.batch_labels(app_db, store.get_batch(app_db, created["batch"])["id"])
    assert len(labels) == len({(label["item"], label["part"]) for label in labels}) == 4


def _answer_on_page(at: AppTest) -> None:
    """Press the first option's button, or fill every radio of the form and submit it."""
    option_buttons = [b for b in at.button if b.key and b.key.startswith("option:")]
    if option_buttons:
        option_buttons[0].click().run()
        return
    for radio in at.radio:
        radio.set_value(radio.options[0])
    at.button[-1].click().run()


def test_annotator_sees_only_their_own_queue_and_no_admin_pages(app_db):
    created = make_batch(app_db, overlap=1)
    ada = next(a for a in created["annotators"] if a["name"] == "ada")
    at = open_app(ada["token"])
    assert [t.value for t in at.title] == ["Welcome, ada"]
    with pytest.raises(ValueError, match="Could not find a navigation page"):
        at.switch_page("views/batches.py")
    page_text = " ".join(t.value for t in at.text)
    other_tokens = [a["token"] for a in created["annotators"] if a["name"] != "ada"]
    assert not any(token in page_text for token in other_tokens)


def test_admin_batches_page_shows_live_progress(app_db):
    created = make_batch(app_db)
    at = open_app(ADMIN)
    at.switch_page("views/batches.py").run()
    assert not at.exception
    at.selectbox(key="batch").set_value(created["batch"]).run()
    before = at.dataframe[1].value.set_index("annotator")
    answer_next(app_db, "ben", created["batch"])
    at.button(key="refresh").click().run()
    after = at.dataframe[1].value.set_index("annotator")
    assert after.loc["ben", "done"] == before.loc["ben", "done"] + 1
    at.button(key="issue_links").click().run()  # tokens are stored hashed: links are shown when issued
    links = [c.value for c in at.code if "/?token=" in c.value]  # each in a code block with a copy button
    assert len(links) == len(created["annotators"])
    assert {store.annotator_by_token(app_db, link.split("token=")[1])["name"] for link in links} == {
        a["name"] for a in created["annotators"]
    }


def test_pick_image_survivors_become_an_ambiguity_batch(db):
    created = make_batch(db, n=10, overlap=2, annotators=("ada", "ben"))
    batch = store.get_batch(db, created["batch"])
    items = store.items_by_id(db, {r["item_id"] for r in store.batch_assignments(db, batch["id"])})
    for name in ("ada", "ben"):
        annotator = store.ensure_annotator(db, name)
        while (state := queues.draw(db, annotator["id"], created["batch"])).task is not None:
            answer = expected_answer("pick_image", items[state.task.item_id])
            queues.submit_answer(db, annotator["id"], created["batch"], state.task, answer)
    kept = [i for i in items.values() if i["truth"]["best"] is not None]
    survivors = construction.pick_image_survivors(db, created["batch"])
    assert [(item["id"], choice) for item, choice in survivors] == sorted((i["id"], i["truth"]["best"]) for i in kept)
    follow = construction.create_ambiguity_batch(db, created["batch"], annotators=("ada", "ben"), overlap=2)
    assert follow["task_type"] == "ambiguity" and follow["n_items"] == len(kept)
    groups = store.list_items(db, store.get_dataset(db, "demo-bivlc-candidates-constructed")["id"], limit=100)
    by_source = {g["meta"]["candidate_item"]: g for g in groups}
    for item, choice in survivors:
        group = by_source[item["id"]]
        assert group["images"] == [item["meta"]["source_image"], item["images"][choice]]
        assert group["captions"] == [item["meta"]["positive_caption"], item["captions"][0]]
        assert group["truth"]["valid_choice"] is True and "ambiguous" in group["truth"]


# --- crowd sessions -------------------------------------------------------------------------------


def pid(n: int) -> str:
    """A plausible Prolific participant id (24 hex characters)."""
    return f"{n:024x}"


def study_token(created: dict) -> str:
    """The study token of a crowd batch's link."""
    return created["crowd_url"].split("study=")[1].split("&")[0]


def make_crowd_batch(db, n=6, overlap=2, per_worker=3, gold=0.0):
    spec = batches.BatchSpec(
        "demo-bivlc-candidates",
        "pick_image",
        (),
        overlap,
        n,
        gold_share=gold,
        seed=9,
        crowd_items=per_worker,
        min_seconds=0,
    )
    return batches.create_batch(db, spec)


def test_crowd_workers_fill_every_item_exactly_to_the_overlap(db):
    created = make_crowd_batch(db, n=6, overlap=2, per_worker=3)
    token = study_token(created)
    assert "PROLIFIC_PID={{%PROLIFIC_PID%}}" in created["crowd_url"]
    workers = [crowd_studies.join_crowd(db, token, pid(i)) for i in range(4)]
    assert crowd_studies.join_crowd(db, token, pid(0))["id"] == workers[0]["id"]  # a second visit adds nothing
    assert store.batch_assignments(db, store.get_batch(db, created["batch"])["id"]) == []  # joining deals nothing
    for worker in workers:
        queues.draw(db, worker["id"], created["batch"])  # the first draw deals the first units
    rows = store.batch_assignments(db, store.get_batch(db, created["batch"])["id"])
    assert Counter(r["annotator"] for r in rows) == {
        f"crowd-{pid(i)}": 2 for i in range(4)
    }  # the window, not the whole share
    while True:  # they take turns; more units are dealt as they answer
        moved = False
        for worker in workers:
            state = queues.draw(db, worker["id"], created["batch"])
            if state.task is not None:
                queues.submit_answer(
                    db, worker["id"], created["batch"], state.task, {"answer": state.task.options[0].value}
                )
                moved = True
        if not moved:
            break
    rows = store.batch_assignments(db, store.get_batch(db, created["batch"])["id"])
    assert Counter(r["annotator"] for r in rows) == {f"crowd-{pid(i)}": 3 for i in range(4)}
    assert set(Counter(r["item_id"] for r in rows).values()) == {2} and all(r["done"] for r in rows)
    assert all(crowd_studies.finish_crowd(db, created["batch"], w["id"]).code for w in workers)
    assert store.list_annotators(db)[-1]["external_id"] == pid(3)
    with pytest.raises(batches.BatchError, match="not valid"):
        crowd_studies.join_crowd(db, "forged", pid(9))


def open_study(created: dict, participant: str, checks=None) -> AppTest:
    """A participant follows the study link, consents and presses Start (`checks(at)` on the first screen)."""
    token = study_token(created)
    at = AppTest.from_file(str(APP_SCRIPT), default_timeout=60)
    at.query_params.update({"study": token, "PROLIFIC_PID": participant, "STUDY_ID": "s1", "SESSION_ID": "x"})
    at.run()
    if checks:
        checks(at)
    at.checkbox(key="consent_box").check()  # in a form: sent with the Continue press
    at.button(key="consent").click().run()
    at.button(key="start").click().run()
    return at


def test_crowd_session_consent_practice_annotation_and_code(app_db):
    created = make_crowd_batch(app_db, n=4, overlap=1, per_worker=4)

    def anonymous(at: AppTest) -> None:  # the participant id stays off the screen
        assert [t.value for t in at.title] == ["Welcome"] and not at.exception
        assert not any(pid(123) in m.value for m in [*at.markdown, *at.caption, *at.title])

    at = open_study(created, pid(123), anonymous)
    assert any("Practice question 1 of 2" in c.value for c in at.caption)
    _answer_on_page(at)
    assert any(m.value.startswith("Practice feedback:") for m in at.info)
    _answer_on_page(at)
    assert not any("Practice question" in c.value for c in at.caption)
    assert store.batch_labels(app_db, store.get_batch(app_db, created["batch"])["id"]) == []  # practice is not stored
    for _ in range(4):
        _answer_on_page(at)
    config = store.get_batch(app_db, created["batch"])["config"]
    assert any(config["completion_code"] in s.value for s in at.success)
    assert not any(s.value.startswith("Saved.") and "All done" in s.value for s in at.success)
    completion = f"https://app.prolific.com/submissions/complete?cc={config['completion_code']}"
    assert any(completion in str(h.proto) for h in at.get("html"))  # sent on to Prolific's completion URL
    assert any(b.proto.url == completion for b in at.get("link_button"))


def test_a_participant_returns_the_study_from_the_page(app_db):
    created = make_crowd_batch(app_db, n=6, overlap=1, per_worker=4)
    at = open_study(created, pid(77))
    for _ in range(2):  # the practice questions
        _answer_on_page(at)
    _answer_on_page(at)  # one real answer
    at.button(key="return_study").click().run()
    assert not at.exception and any("returned" in m.value for m in at.info)
    batch = store.get_batch(app_db, created["batch"])
    worker = store.annotator_by_name(app_db, f"crowd-{pid(77)}")
    held = [a for a in store.batch_assignments(app_db, batch["id"]) if a["annotator_id"] == worker["id"]]
    assert [a["done"] for a in held] == [1] and store.has_returned(app_db, batch["id"], worker["id"])
    assert not any(batch["config"]["completion_code"] in m.value for m in [*at.success, *at.info, *at.warning])


def test_a_participant_may_return_the_study_during_the_practice_questions(app_db):
    """Issue 55: the button showed only from the first counted question on."""
    created = make_crowd_batch(app_db, n=6, overlap=1, per_worker=4)
    at = open_study(created, pid(78))
    assert any("Practice question 1 of 2" in c.value for c in at.caption)
    at.button(key="return_study").click().run()
    assert not at.exception
    assert [m.value for m in at.info] == [
        "You returned the study.",
        "You returned this study. Thank you for your time; you may close this tab.",
    ]
    batch = store.get_batch(app_db, created["batch"])
    worker = store.annotator_by_name(app_db, f"crowd-{pid(78)}")
    assert store.has_returned(app_db, batch["id"], worker["id"])
    assert not [a for a in store.batch_assignments(app_db, batch["id"]) if a["annotator_id"] == worker["id"]]


def test_simulating_a_crowd_study_says_why_nothing_was_answered(app_db):
    """Issue 55: "Simulate annotators" on a crowd study said "Simulated 0 labels" and no more."""
    created = make_crowd_batch(app_db, n=6, overlap=1, per_worker=3)
    result = simulation.simulate(app_db, created["batch"])
    assert result["labels_written"] == {} and "no participant holds any yet" in result["note"]
    from tests.test_cli import run_cli

    shown = run_cli("simulate", created["batch"], db=store.location(app_db))
    assert shown.returncode == 0 and "note: nothing to answer: a crowd study assigns" in shown.stdout, shown
    at = open_app(ADMIN)
    at.switch_page("views/batches.py").run()
    at.selectbox(key="batch").set_value(created["batch"]).run()
    at.button(key="simulate").click().run()
    assert not at.exception
    notice = next(m.value for m in at.info if m.value.startswith("Simulated 0 labels"))
    assert "a crowd study assigns its items to participants only as they join and work" in notice, notice
    worker = crowd_studies.join_crowd(app_db, study_token(created), pid(5))
    queues.draw(app_db, worker["id"], created["batch"])  # the first units are dealt
    answered = simulation.simulate(app_db, created["batch"])
    assert answered["labels_written"] == {worker["name"]: 3} and "note" not in answered
    again = simulation.simulate(app_db, created["batch"])
    assert again["labels_written"] == {} and "every item dealt to the study's participants is answered" in again["note"]
    done = make_batch(app_db, n=4, overlap=1, annotators=("ada",))
    simulation.simulate(app_db, done["batch"])
    assert simulation.simulate(app_db, done["batch"])["note"].endswith(
        "every item assigned in the batch is answered already"
    )


def test_failing_gold_checks_get_the_screen_out_code(db):
    created = make_crowd_batch(db, n=10, overlap=1, per_worker=2, gold=0.5)
    token = study_token(created)
    worker = crowd_studies.join_crowd(db, token, pid(0xCA7E1E55))
    batch = store.get_batch(db, created["batch"])
    items = store.items_by_id(db, {i for i, _, _ in batch["config"]["units"]})
    while (state := queues.draw(db, worker["id"], created["batch"])).task is not None:
        right = expected_answer("pick_image", items[state.task.item_id])["answer"]
        wrong = next(
            o.value
            for o in state.task.options
            if not is_correct("pick_image", items[state.task.item_id], 0, {"answer": o.value})
        )
        queues.submit_answer(db, worker["id"], created["batch"], state.task, {"answer": wrong if right else right})
    finish = crowd_studies.finish_crowd(db, created["batch"], worker["id"])
    assert not finish.passed and finish.code == batch["config"]["screen_out_code"]


def test_admin_dashboard_shows_agreement_and_records_adjudication(app_db):
    created = make_batch(app_db, task="validate_negative", dataset="demo-sugarcrepe", n=60, overlap=2)
    simulation.simulate(app_db, created["batch"], accuracies=0.7, seed=3)
    at = open_app(ADMIN)
    at.switch_page("views/batches.py").run()
    at.selectbox(key="batch").set_value(created["batch"]).run()
    assert not at.exception
    summary = at.dataframe[2].value.set_index("coefficient")
    assert {"Cohen's kappa, mean over annotator pairs", "Krippendorff's alpha", "Gwet's AC1"} <= set(summary.index)
    assert len(at.get("plotly_chart")) == 2  # kappa heatmap and answer distribution
    decide = [b for b in at.button if b.key and b.key.startswith("decide_button:")]
    assert decide
    _, item, part = decide[0].key.split(":")
    assert decide[0].disabled  # nothing is pre-selected: a decision nobody made is never one click away
    choice = at.selectbox(key=f"decide:{item}:{part}")
    assert choice.value is None
    pending = next(
        d for d in consensus.adjudication_queue(app_db, created["batch"]) if (d.item, d.part) == (int(item), int(part))
    )
    choice.set_value(sorted(pending.votes)[0]).run()
    next(b for b in at.button if b.key == decide[0].key).click().run()
    recorded = store.batch_decisions(app_db, store.get_batch(app_db, created["batch"])["id"])
    assert (int(item), int(part)) in recorded and recorded[(int(item), int(part))]["decided_by"] == "admin"


def test_the_next_items_images_are_resized_before_they_are_shown(tmp_path):
    from PIL import Image

    from foil_studio.data.formats import Parsed
    from foil_studio.data.items import Item
    from foil_studio.data.loading import store_parsed
    from foil_studio.data.paths import thumbnail_dir

    images = tmp_path / "images"
    images.mkdir()
    parsed = Parsed("jsonl", "large-images")
    for n in range(5):
        Image.new("RGB", (1200, 900), (40 * n, 80, 120)).save(images / f"{n}.jpg")
        parsed.add(Item("pair", "replace_att", f"x/{n}", (f"a red cup {n}", f"a blue cup {n}"), (f"{n}.jpg",)), "x", n)
    db = store.open_db(tmp_path / "foil.db")
    store_parsed(db, parsed, source_format="jsonl", path="x", images=images)
    created = batches.create_batch(db, batches.BatchSpec("large-images", "validate_negative", ("ada",), 1, seed=1))
    ada = store.ensure_annotator(db, "ada")["id"]
    current = queues.draw(db, ada, created["batch"]).task
    assert len(queues.upcoming_images(db, ada, created["batch"])) == 2
    made = {p.name for p in thumbnail_dir(tmp_path / "foil.db").glob("*.jpg")}
    assert len(made) == 2  # the two following items, not the current one (it was shown already)
    shown = queues.task_images(db, store.get_batch(db, created["batch"]), current)
    assert shown[0][1].name not in made


def test_a_finished_lab_batch_leads_to_the_next_one_without_a_completion_code(app_db):
    first = batches.create_batch(
        app_db, batches.BatchSpec("demo-sugarcrepe", "validate_negative", ("lena",), 1, 3, seed=1, min_seconds=0)
    )
    second = batches.create_batch(
        app_db, batches.BatchSpec("demo-sugarcrepe", "validate_negative", ("lena",), 1, 2, seed=2, min_seconds=0)
    )
    for _ in range(3):
        answer_next(app_db, "lena", first["batch"])
    at = open_app(first["annotators"][0]["token"])
    assert not at.exception
    assert at.selectbox(key="batch").value == first["batch"]
    assert at.selectbox(key="batch").options == ["Batch 1: validate negative", "Batch 2: validate negative"]
    assert any(  # the progress beside the menu, never in its labels (a changing label reset the choice)
        c.value == "Batch 1: validate negative, 3 of 3 done · Batch 2: validate negative, 0 of 2 done"
        for c in at.caption
    )
    assert any("This batch is done" in s.value for s in at.success)
    assert not any("code" in m.value for m in [*at.success, *at.warning])  # a lab annotator gets no Prolific-style code
    at.button(key="next_batch").click().run()
    assert at.selectbox(key="batch").value == second["batch"]
    assert [s.value for s in at.subheader] == ["Instructions"]  # the next batch starts with its instructions
    for _ in range(2):
        answer_next(app_db, "lena", second["batch"])
    at.run()
    assert any(s.value == "All done, thank you. You may close this tab." for s in at.success)


def test_a_bad_participant_id_is_told_why_without_the_admin_sign_in_form(app_db):
    created = make_crowd_batch(app_db, n=4, overlap=1, per_worker=2)
    token = study_token(created)
    at = AppTest.from_file(str(APP_SCRIPT), default_timeout=60)
    at.query_params.update({"study": token, "PROLIFIC_PID": "not-an-id", "STUDY_ID": "s1", "SESSION_ID": "x"})
    at.run()
    assert not at.exception and any("valid participant id" in e.value for e in at.error)
    assert len(at.text_input) == 0  # no token form: a participant has nothing to sign in with


def test_truth_keys_say_each_value_in_the_sentence_of_its_meaning():
    """Every truth key's sentence and verdict, per value, written out by hand."""
    import numpy as np

    from foil_studio.data.item_kinds import base, paraphrase, truth

    shown = base.Shown(caption_roles=("positive", "negative"), votes={"caption": 2, "foil": 1, "other": 1})
    assert [truth.is_true(v) for v in ("true", "TRUE", True, "false", False, None, 1)] == [
        True,
        True,
        True,
        False,
        False,
        False,
        False,
    ]
    said = {key.name: key.said for key in ITEM_KINDS["pair"].truth_keys}
    assert said["negative"]("True", shown) == "The altered caption is also true of the image: not a valid negative."
    assert said["negative"]("AMBIGUOUS", shown) == (
        "Whether the altered caption is true of the image is ambiguous: not a clear negative."
    )
    assert said["negative"]("false", shown) == "The altered caption is false for the image: a valid negative."
    assert [truth.NEGATIVE.verdict(v) for v in ("True", "Ambiguous", "false", None)] == [
        "invalid",
        "ambiguous",
        "valid",
        "valid",
    ]
    assert truth.POSITIVE_VARIANT.said(True, shown) == "The hard positive is true of the image."
    assert truth.POSITIVE_VARIANT.said("false", shown) == "The hard positive is false for the image."
    assert truth.AMBIGUOUS.said(True, shown) == "The generated image also fits the positive caption: ambiguous."
    assert truth.AMBIGUOUS.said(False, shown) == "The generated image fits only its own caption."
    assert truth.CORRECT.said(1, shown) == "The true caption is the negative one."
    assert truth.CORRECT.said(0, shown) == "The true caption is the positive one."
    assert [truth.CORRECT.said(v, shown) for v in (2, -1, "1")] == ["correct: 2", "correct: -1", "correct: 1"]
    assert truth.BEST.said(None, shown) == "Best candidate: none."
    assert [truth.BEST.said(v, shown) for v in (0, 2)] == ["Best candidate: A.", "Best candidate: C."]
    assert truth.VALID.said([0], shown) is None
    assert truth.VALID_FOIL.said(1, shown) == (
        "Crowd validation: 2 of 4 workers chose the caption, 1 the foil, 1 neither: a valid foil "
        "(the authors keep it when 2 or more choose the caption)."
    )
    assert truth.crowd_votes_sentence(True, {"caption": 3}).startswith(
        "Crowd validation: 3 of 3 workers chose the caption, 0 the foil, 0 neither: a valid foil"
    )
    assert truth.crowd_votes_sentence(False, {"foil": 2}) == (
        "Crowd validation: 0 of 2 workers chose the caption, 2 the foil, 0 neither: not a valid foil "
        "(the authors keep it when 2 or more choose the caption)."
    )
    assert truth.crowd_votes_sentence(False, None) == "Crowd validation: not a valid foil."
    assert truth.crowd_votes_sentence(True, {}) == "Crowd validation: a valid foil."
    assert [truth.VALID_FOIL.verdict(v) for v in (True, 0)] == ["valid", "invalid"]
    assert truth.negative_verdict((truth.NEGATIVE, truth.VALID_FOIL), {"negative": "true", "valid_foil": True}) == (
        "invalid"
    )
    assert truth.negative_verdict((truth.CORRECT, truth.VALID_FOIL), {"correct": 0, "valid_foil": True}) == "valid"
    assert ITEM_KINDS["pair"].truth_key("negative") is truth.NEGATIVE
    assert ITEM_KINDS["pair"].truth_key("no such key") is None
    cosines = np.array([[1.0, 0.2, 0.9], [0.2, 1.0, 0.3], [0.9, 0.3, 1.0]])
    assert paraphrase.caption_cosines(cosines) == [0.9, 0.2, 0.3]  # cos(p1,p2), cos(p1,n), cos(p2,n)
    assert base.one_image(2) == ["image", "image"]
    assert base.first_image_row(np.array([[0.1, 0.2], [0.3, 0.4]])) == [0.1, 0.2]


# --- the store's reads, each against what was written -----------------------------------------------


def test_item_labels_lists_every_label_of_the_asked_items_once_in_item_then_answer_order(db):
    created = make_batch(db, n=8, overlap=2)
    batch = store.get_batch(db, created["batch"])
    answers = (("ada", 1), ("ben", 4), ("ada", 0))
    answered = [answer_next(db, name, created["batch"], pick=pick) for name, pick in answers]
    by_item = sorted(store.batch_labels(db, batch["id"]), key=lambda label: (label["item"], label["id"]))
    # Ids are read 500 to a query: 499 ids that no item has sort before the labelled ones, so the
    # first of these is the last id of the first query and the others are in the second; one is
    # asked twice.
    asked = [*range(-499, 0), *(s.task.item_id for s in answered), answered[0].task.item_id]
    found = store.item_labels(db, asked)
    assert [(row["item"], row["annotator"], row["answer"]) for row in found] == [
        (label["item"], label["annotator"], label["answer"]) for label in by_item
    ]
    assert all(row["batch"] == created["batch"] and row["task_type"] == "pick_image" for row in found)
    assert all(row["part"] == 0 and row["flags"] == [] and row["comment"] in ("", None) for row in found)
    first = answered[0].task.item_id
    assert store.item_labels(db, [first]) == [row for row in found if row["item"] == first]
    assert store.item_labels(db, []) == []


def test_revoking_an_annotators_tokens_ends_every_link_of_theirs_and_no_one_elses(db):
    ada, ben = (store.ensure_annotator(db, name) for name in ("ada", "ben"))
    store.revoke_tokens(db, ada["id"])  # the demo may have given ada a link already
    ada_tokens = [store.issue_token(db, ada["id"]) for _ in range(3)]
    ben_token = store.issue_token(db, ben["id"])
    assert all(store.annotator_by_token(db, token)["name"] == "ada" for token in ada_tokens)
    assert store.revoke_tokens(db, ada["id"]) == 3
    assert all(store.annotator_by_token(db, token) is None for token in ada_tokens)
    assert store.annotator_by_token(db, ben_token)["name"] == "ben"
    assert store.revoke_tokens(db, ada["id"]) == 0


def test_a_participants_studies_count_their_own_units_and_answers_as_they_are_now(db):
    first = make_crowd_batch(db, n=6, overlap=2, per_worker=3)
    second = make_crowd_batch(db, n=4, overlap=1, per_worker=2)
    tokens = [study_token(created) for created in (first, second)]
    worker = crowd_studies.join_crowd(db, tokens[0], pid(1))
    crowd_studies.join_crowd(db, tokens[0], pid(2))  # someone else's units are not counted
    batch = store.get_batch(db, first["batch"])
    [study] = store.joined_studies(db, worker["id"])
    assert (study["id"], study["name"], study["task_type"]) == (batch["id"], first["batch"], "pick_image")
    assert json.loads(study["config"]) == batch["config"]
    assert (study["assigned"], study["done"]) == (0, 0)  # joined: the place is taken by work, at the first draw
    state = queues.draw(db, worker["id"], first["batch"])
    assert [(s["assigned"], s["done"]) for s in store.joined_studies(db, worker["id"])] == [(2, 0)]  # its window
    queues.submit_answer(db, worker["id"], first["batch"], state.task, {"answer": state.task.options[0].value})
    assert [(s["assigned"], s["done"]) for s in store.joined_studies(db, worker["id"])] == [(2, 1)]
    crowd_studies.join_crowd(db, tokens[1], pid(1))
    studies = store.joined_studies(db, worker["id"])
    assert [s["name"] for s in studies] == [first["batch"], second["batch"]]
    assert [(s["assigned"], s["done"]) for s in studies] == [(2, 1), (0, 0)]
    store.return_study(db, batch["id"], worker["id"])  # the open units go back; the answer stays
    assert [(s["assigned"], s["done"]) for s in store.joined_studies(db, worker["id"])][0] == (1, 1)
    assert store.joined_studies(db, store.ensure_annotator(db, "nobody")["id"]) == []
    assert store.crowd_quota(db, batch["id"], worker["id"]) == 3  # the units its completion code needs
    assert store.crowd_quota(db, batch["id"], store.ensure_annotator(db, "nobody")["id"]) is None  # never joined


def test_the_reading_time_runs_from_the_item_on_screen_and_the_minimum_is_the_batchs(db):
    """The clock of an answer starts when the browser reported the item whole on screen (not at the
    draw), and an answer sooner than the batch's minimum is refused, by how long, without sleeps:
    the assignment's times are set back by hand."""
    created = batches.create_batch(
        db, batches.BatchSpec("demo-sugarcrepe", "validate_negative", ("ada",), 1, 2, seed=5, min_seconds=0.5)
    )
    ada = store.ensure_annotator(db, "ada")["id"]
    task = queues.draw(db, ada, created["batch"]).task
    answer = {q: task.options[0].value for q in task.questions}
    batch_id = store.get_batch(db, created["batch"])["id"]

    def set_times(opened_ago: float, shown_ago: float) -> str:
        now = datetime.now(UTC)
        shown = store.timestamp(now - timedelta(seconds=shown_ago))
        with store.transaction(db):
            db.execute(
                "UPDATE assignments SET opened_at = ?, shown_at = ? WHERE batch_id = ? AND item_id = ? AND part = ?",
                [store.timestamp(now - timedelta(seconds=opened_ago)), shown, batch_id, task.item_id, task.part],
            )
        return shown

    with pytest.raises(store.LabelRefused, match="had not finished appearing") as unseen:
        queues.submit_answer(db, ada, created["batch"], task, answer, require_shown=True)
    assert unseen.value.reason == "not_shown"  # the code the annotator's page reads to wait, not to scold
    for shown_ago in (0.05, 0.3):  # drawn a minute ago, on screen for less than the batch's 0.5 s
        set_times(60, shown_ago)
        with pytest.raises(store.LabelRefused, match="on screen for only 0\\.[0-4]") as brief:
            queues.submit_answer(db, ada, created["batch"], task, answer, require_shown=True)
        assert brief.value.reason == "too_fast"
    assert store.batch_labels(db, batch_id) == []
    shown = set_times(60, 2)
    assert queues.submit_answer(db, ada, created["batch"], task, answer, require_shown=True)
    [label] = store.batch_labels(db, batch_id)
    assert label["started_at"] == shown and 2 <= label["seconds"] < 30  # from the screen, not from the draw


def test_a_studys_joins_list_each_participant_with_what_they_hold_and_answered(db):
    created = make_crowd_batch(db, n=6, overlap=2, per_worker=3)
    token = study_token(created)
    first, second = (crowd_studies.join_crowd(db, token, pid(n)) for n in (1, 2))
    state = queues.draw(db, first["id"], created["batch"])
    queues.submit_answer(db, first["id"], created["batch"], state.task, {"answer": state.task.options[0].value})
    joins = crowd_studies.study_joins(db, created["batch"])
    assert [(j["annotator"], j["external_id"]) for j in joins] == [
        (f"crowd-{pid(1)}", pid(1)),
        (f"crowd-{pid(2)}", pid(2)),
    ]
    held = Counter(r["annotator"] for r in store.batch_assignments(db, store.get_batch(db, created["batch"])["id"]))
    assert [(j["held"], j["answered"]) for j in joins] == [(held[f"crowd-{pid(1)}"], 1), (held[f"crowd-{pid(2)}"], 0)]
    assert joins[0]["joined_at"] <= joins[1]["joined_at"]
    assert [j["returned_at"] for j in joins] == [None, None]
    assert crowd_studies.study_joins(db, make_crowd_batch(db)["batch"]) == []


def test_a_studys_joins_show_who_returned_it_on_the_page_and_the_command_line(app_db):
    """Issue 55: the joins table (batches page, `foil batch joins`) did not show who returned the study."""
    from tests.test_cli import run_cli

    created = make_crowd_batch(app_db, n=6, overlap=2, per_worker=3)
    token = study_token(created)
    stayed, left = (crowd_studies.join_crowd(app_db, token, pid(n)) for n in (1, 2))
    crowd_studies.return_study(app_db, created["batch"], left["id"])
    joins = {j["annotator"]: j for j in crowd_studies.study_joins(app_db, created["batch"])}
    assert joins[stayed["name"]]["returned_at"] is None and joins[left["name"]]["returned_at"]
    shown = run_cli("batch", "joins", created["batch"], "--json", db=store.location(app_db))
    assert {p["annotator"]: p["returned_at"] for p in json.loads(shown.stdout)["participants"]} == {
        stayed["name"]: None,
        left["name"]: joins[left["name"]]["returned_at"],
    }
    table = run_cli("batch", "joins", created["batch"], db=store.location(app_db)).stdout
    assert "returned_at" in table and joins[left["name"]]["returned_at"] in table, table
    at = open_app(ADMIN)
    at.switch_page("views/batches.py").run()
    at.selectbox(key="batch").set_value(created["batch"]).run()
    assert not at.exception
    assert any(t.value.startswith("2 participants joined, 1 returned the study.") for t in at.text)
    [frame] = [d.value for d in at.dataframe if "external_id" in d.value.columns]
    assert dict(zip(frame["annotator"], frame["returned_at"])) == {
        stayed["name"]: "",
        left["name"]: joins[left["name"]]["returned_at"],
    }


def test_a_closed_study_takes_nobody_until_it_is_opened_again(db):
    created = make_crowd_batch(db, n=6, overlap=2, per_worker=3)
    token = study_token(created)
    crowd_studies.close_study(db, created["batch"])
    assert store.get_batch(db, created["batch"])["closed_at"]
    with pytest.raises(batches.BatchError, match="closed"):
        crowd_studies.join_crowd(db, token, pid(1))
    crowd_studies.close_study(db, created["batch"], closed=False)
    assert store.get_batch(db, created["batch"])["closed_at"] is None
    assert crowd_studies.join_crowd(db, token, pid(1))["external_id"] == pid(1)


def test_a_revision_keeps_the_old_and_new_answer_who_and_why_and_an_unknown_label_is_named(db):
    created = make_batch(db)
    answer_next(db, "ada", created["batch"], pick=4)
    label = store.batch_labels(db, store.get_batch(db, created["batch"])["id"])[0]
    store.revise_label(db, label["id"], {"answer": "1"}, by="admin")  # no reason given
    [revision] = db.query("SELECT * FROM label_revisions WHERE label_id = ?", [label["id"]])
    assert json.loads(revision["previous_answer"]) == label["answer"]
    assert json.loads(revision["new_answer"]) == {"answer": "1"}
    assert (revision["revised_by"], revision["reason"]) == ("admin", "") and revision["revised_at"]
    with pytest.raises(store.NotFoundError, match="no label with id 999999"):
        store.revise_label(db, 999999, {"answer": "1"}, by="admin")


def test_an_admin_decision_is_stored_decoded_and_replaced_by_a_later_one(db):
    created = make_batch(db)
    batch_id = store.get_batch(db, created["batch"])["id"]
    item = store.batch_assignments(db, batch_id)[0]["item_id"]
    assert store.batch_decisions(db, batch_id) == {}
    store.decide(db, batch_id, item, 0, {"answer": "2"}, by="admin")
    decision = store.batch_decisions(db, batch_id)[(item, 0)]
    assert (decision["answer"], decision["decided_by"], decision["reason"]) == ({"answer": "2"}, "admin", "")
    store.decide(db, batch_id, item, 0, {"answer": "none"}, by="lead", reason="second look")
    [(key, later)] = store.batch_decisions(db, batch_id).items()
    assert key == (item, 0) and (later["answer"], later["decided_by"], later["reason"]) == (
        {"answer": "none"},
        "lead",
        "second look",
    )
    answer_next(db, "ada", created["batch"], pick=1)
    labels = store.batch_labels(db, batch_id)
    assert labels and all(label["flags"] == [] and isinstance(label["answer"], dict) for label in labels)  # decoded


def test_an_annotator_is_idle_only_without_a_draw_an_opened_item_or_an_answer_since(db):
    """`stale_assignments` with `idle_before`: unopened units go back only when their holder has
    done nothing in the batch since then: neither been dealt work, nor opened, nor answered."""
    created = make_batch(db, n=6, overlap=1, annotators=("ada",))
    batch_id = store.get_batch(db, created["batch"])["id"]
    ada = store.ensure_annotator(db, "ada")["id"]
    now = datetime.now(UTC)
    long_ago, recently = store.timestamp(now - timedelta(hours=2)), store.timestamp(now - timedelta(minutes=1))
    cutoff, lease = store.timestamp(now - timedelta(minutes=30)), store.timestamp(now - timedelta(hours=1))

    def stale_unopened() -> int:
        rows = store.stale_assignments(db, batch_id, lease, idle_before=cutoff)
        return sum(r["opened_at"] is None for r in rows)

    with store.transaction(db):
        db.execute("UPDATE assignments SET assigned_at = ? WHERE batch_id = ?", [long_ago, batch_id])
    assert stale_unopened() == 6 and store.stale_assignments(db, batch_id, lease) == []  # idle only when asked
    state = queues.draw(db, ada, created["batch"])  # opens one item now
    assert stale_unopened() == 0
    queues.submit_answer(db, ada, created["batch"], state.task, {"answer": state.task.options[0].value})
    with store.transaction(db):
        db.execute("UPDATE assignments SET opened_at = ? WHERE batch_id = ?", [long_ago, batch_id])
        db.execute(
            "UPDATE assignments SET opened_at = NULL WHERE batch_id = ? AND item_id != ?",
            [batch_id, state.task.item_id],
        )
        db.execute("UPDATE labels SET submitted_at = ? WHERE batch_id = ?", [recently, batch_id])
    assert stale_unopened() == 0  # answered a minute ago
    with store.transaction(db):
        db.execute("UPDATE labels SET submitted_at = ? WHERE batch_id = ?", [long_ago, batch_id])
    assert stale_unopened() == 5  # nothing since the cutoff: the five unopened units go back


def test_the_store_names_what_it_cannot_find_or_make(db):
    """Each refusal names the thing and what exists: a missing batch lists the batches, a taken
    batch name is named, a bad name says what it was meant to name."""
    with pytest.raises(store.NotFoundError) as missing:
        store.get_batch(db, "no-such-batch")
    assert str(missing.value) == "no batch named 'no-such-batch' (batches: none)"
    created = make_batch(db)
    with pytest.raises(store.NotFoundError, match=rf"\(batches: {created['batch']}\)$"):
        store.get_batch(db, "no-such-batch")
    batch = store.get_batch(db, created["batch"])
    with pytest.raises(store.StoreError, match=f"a batch named '{created['batch']}' already exists"):
        store.create_batch(db, created["batch"], batch["dataset_id"], batch["task_type"], batch["config"])
    with pytest.raises(store.InvalidNameError, match="an annotator name must be non-empty text"):
        store.ensure_annotator(db, " ")
    with pytest.raises(store.InvalidNameError, match="a batch name must be non-empty text"):
        store.create_batch(db, "", batch["dataset_id"], batch["task_type"], batch["config"])
    with pytest.raises(store.NotFoundError, match="no assignment with id 987654"):
        store.open_assignment(db, 987654)


def test_opening_an_assignment_returns_when_it_was_first_opened(db):
    created = make_batch(db)
    assignment = store.batch_assignments(db, store.get_batch(db, created["batch"])["id"])[0]["id"]
    first = store.open_assignment(db, assignment)
    assert first == db.execute("SELECT opened_at FROM assignments WHERE id = ?", [assignment]).fetchone()[0]
    assert datetime.fromisoformat(first) <= datetime.now(UTC)
    assert store.open_assignment(db, assignment) == first  # a reload keeps the first time


def test_the_batch_list_names_each_batch_with_its_dataset_task_and_counts(db):
    before = {row["name"] for row in store.list_batches(db)}
    first, second = make_batch(db, n=4, overlap=2), make_batch(db, task="validate_negative", dataset="demo-sugarcrepe")
    answer_next(db, "ada", first["batch"], pick=1)
    rows = {row["name"]: row for row in store.list_batches(db) if row["name"] not in before}
    assert list(rows) == [first["batch"], second["batch"]]  # in the order they were made
    one = rows[first["batch"]]
    assert (one["dataset"], one["task_type"], one["n_assignments"], one["n_labels"]) == (
        "demo-bivlc-candidates",
        "pick_image",
        8,
        1,
    )
    assert one["id"] == store.get_batch(db, first["batch"])["id"] and one["created_at"]
    assert (rows[second["batch"]]["dataset"], rows[second["batch"]]["n_labels"]) == ("demo-sugarcrepe", 0)


def test_a_batch_of_chosen_items_takes_only_the_datasets_own_of_them(demo_db):
    """A batch of listed item ids reads those items only (a health batch decoded every item of a
    million-item dataset); an id of another dataset's item is left out, as before."""
    from foil_studio.annotate import batches

    own = store.list_items(demo_db, store.get_dataset(demo_db, "demo-sugarcrepe")["id"], limit=3)
    other = store.list_items(demo_db, store.get_dataset(demo_db, "demo-bivlc")["id"], limit=1)
    spec = batches.BatchSpec(
        "demo-sugarcrepe",
        "validate_negative",
        ("ada",),
        overlap=1,
        item_ids=(own[2]["id"], other[0]["id"], own[0]["id"]),
        name="chosen",
    )
    created = batches.create_batch(demo_db, spec)
    assigned = store.batch_assignments(demo_db, store.get_batch(demo_db, created["batch"])["id"])
    assert sorted({a["item_id"] for a in assigned}) == sorted([own[0]["id"], own[2]["id"]])
