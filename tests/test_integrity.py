"""Annotation integrity: every stored label is the answer a person gave to the item they saw.

The write path refuses answers for items that are not (or no longer) the annotator's, were never
drawn, or were drawn too briefly to be seen; lease reassignment never moves an answered item;
crowd links resist made-up participants; agreement works for every task type.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from itertools import combinations

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from foil_studio.annotate import batch_reports, batches, consensus, crowd_studies, queues, simulation
from foil_studio.annotate.task_types import TASK_TYPES, expected_answer, is_correct, task_type
from foil_studio.data import store
from foil_studio.data.plain_text import figure
from foil_studio.data.store import base as store_base
from tests.conftest import DATASET_FOR_TASK, FOIL_CLI

pytestmark = pytest.mark.both_engines


def make(db, task="validate_negative", n=12, overlap=2, annotators=("ada", "ben", "cleo"), **options):
    spec = batches.BatchSpec(
        DATASET_FOR_TASK[task], task, annotators, overlap, n, seed=4, **{"min_seconds": 0, **options}
    )
    return batches.create_batch(db, spec)["batch"]


def annotator_id(db, name: str) -> int:
    return store.ensure_annotator(db, name)["id"]


def first_option(task) -> dict[str, str]:
    return {q: task.options[0].value for q in task.questions}


def labels_of(db, batch: str) -> list[dict]:
    return store.batch_labels(db, store.get_batch(db, batch)["id"])


# --- the write path ----------------------------------------------------------------------------


def test_reading_the_queue_starts_no_lease_and_no_timer(demo_db):
    batch = make(demo_db)
    ada = annotator_id(demo_db, "ada")
    state = queues.queue_state(demo_db, ada, batch)
    assert state.started_at is None
    held = [a for a in store.batch_assignments(demo_db, store.get_batch(demo_db, batch)["id"]) if a["opened_at"]]
    assert held == []  # instructions, consent and practice screens hold nothing either
    drawn = queues.draw(demo_db, ada, batch)
    assert drawn.task == state.task and drawn.started_at is not None
    assert queues.draw(demo_db, ada, batch).started_at == drawn.started_at  # a reload keeps the first draw


def test_an_item_never_drawn_cannot_be_answered(demo_db):
    batch = make(demo_db)
    ada = annotator_id(demo_db, "ada")
    task = queues.queue_state(demo_db, ada, batch).task
    with pytest.raises(store.LabelRefused) as refused:
        queues.submit_answer(demo_db, ada, batch, task, first_option(task))
    assert refused.value.reason == "not_opened" and labels_of(demo_db, batch) == []


def test_an_answer_too_soon_after_the_draw_is_refused_and_the_item_stays_open(demo_db):
    batch = make(demo_db, min_seconds=0.4)
    ada = annotator_id(demo_db, "ada")
    task = queues.draw(demo_db, ada, batch).task
    with pytest.raises(store.LabelRefused, match="on screen for only") as refused:
        queues.submit_answer(demo_db, ada, batch, task, first_option(task))  # the batch's min_seconds=0.4 applies
    assert refused.value.reason == "too_fast" and labels_of(demo_db, batch) == []
    time.sleep(0.45)
    assert queues.submit_answer(demo_db, ada, batch, task, first_option(task)) is True
    assert [(lab["item"], lab["part"]) for lab in labels_of(demo_db, batch)] == [(task.item_id, task.part)]


def test_two_tabs_on_one_link_store_one_answer_on_the_item_both_showed(demo_db):
    batch = make(demo_db)
    ada = annotator_id(demo_db, "ada")
    tab1, tab2 = queues.draw(demo_db, ada, batch), queues.draw(demo_db, ada, batch)
    assert tab1.task == tab2.task
    assert queues.submit_answer(demo_db, ada, batch, tab2.task, {"answer": "negative_true"}) is True
    assert queues.submit_answer(demo_db, ada, batch, tab1.task, {"answer": "negative_false"}) is False
    stored = labels_of(demo_db, batch)
    assert [(lab["item"], lab["answer"]["answer"]) for lab in stored] == [(tab1.task.item_id, "negative_true")]


def test_an_answer_after_the_item_was_reassigned_is_refused_and_stored_nowhere(demo_db):
    batch = make(demo_db, n=6)
    ada = annotator_id(demo_db, "ada")
    held = queues.draw(demo_db, ada, batch)
    assert queues.reassign_stale(demo_db, batch, now=datetime.now(UTC) + timedelta(hours=1)) == 1
    with pytest.raises(store.LabelRefused, match="not in your queue") as refused:
        queues.submit_answer(demo_db, ada, batch, held.task, first_option(held.task))
    assert refused.value.reason == "not_in_queue"
    assert labels_of(demo_db, batch) == []
    following = queues.draw(demo_db, ada, batch)
    assert (following.task.item_id, following.task.part) != (held.task.item_id, held.task.part)


def test_an_answered_item_is_never_moved_and_keeps_its_label(demo_db):
    batch = make(demo_db, n=6)
    ada = annotator_id(demo_db, "ada")
    state = queues.draw(demo_db, ada, batch)
    queues.submit_answer(demo_db, ada, batch, state.task, first_option(state.task))
    later = datetime.now(UTC) + timedelta(hours=1)
    assert queues.reassign_stale(demo_db, batch, now=later) == 0
    assert len(labels_of(demo_db, batch)) == 1 and labels_of(demo_db, batch)[0]["annotator"] == "ada"


def test_freed_work_goes_only_to_annotators_whose_queues_are_still_open(demo_db):
    batch = make(demo_db, n=6, overlap=1)
    ids = {name: annotator_id(demo_db, name) for name in ("ada", "ben", "cleo")}
    for name in ("ben",):  # ben finishes his queue
        while (state := queues.draw(demo_db, ids[name], batch)).task is not None:
            queues.submit_answer(demo_db, ids[name], batch, state.task, first_option(state.task))
    held = queues.draw(demo_db, ids["ada"], batch)
    later = datetime.now(UTC) + timedelta(hours=1)
    assert queues.reassign_stale(demo_db, batch, now=later) == 1
    holder = {
        (a["item_id"], a["part"]): a["annotator"]
        for a in store.batch_assignments(demo_db, store.get_batch(demo_db, batch)["id"])
    }
    assert holder[(held.task.item_id, held.task.part)] == "cleo"  # not ben, whose queue was finished
    while (state := queues.draw(demo_db, ids["cleo"], batch)).task is not None:
        queues.submit_answer(demo_db, ids["cleo"], batch, state.task, first_option(state.task))
    stale = queues.draw(demo_db, ids["ada"], batch)
    assert queues.reassign_stale(demo_db, batch, now=later + timedelta(hours=1)) == 0  # nobody else works: ada keeps it
    assert queues.submit_answer(demo_db, ids["ada"], batch, stale.task, first_option(stale.task)) is True


def test_fifty_workers_with_short_leases_lose_no_acknowledged_label(demo_db):
    """50 threads, each its own connection: draw, think 0-0.6 s, answer, with 0.3 s leases so that
    items are reassigned under the workers' hands all the time."""
    db, path = demo_db, store.location(demo_db)
    names = tuple(f"w{n:02d}" for n in range(50))
    batch = make(db, n=60, overlap=2, annotators=names, lease_minutes=0.3 / 60)
    acknowledged: list[tuple[str, int, int, dict]] = []
    refused = Counter[str]()
    errors: list[BaseException] = []
    lock = threading.Lock()

    def work(name: str) -> None:
        try:
            own = store.open_db(path)
            me, rng, deadline = annotator_id(own, name), random.Random(name), time.monotonic() + 120
            while time.monotonic() < deadline:
                queues.reassign_stale(own, batch)
                state = queues.draw(own, me, batch)
                if state.task is None:
                    return
                time.sleep(rng.uniform(0, 0.6))
                answer = {"answer": rng.choice([o.value for o in state.task.options])}
                try:
                    if queues.submit_answer(own, me, batch, state.task, answer):
                        with lock:
                            acknowledged.append((name, state.task.item_id, state.task.part, answer))
                except store.LabelRefused as error:
                    with lock:
                        refused[error.reason] += 1
            raise AssertionError(f"{name} did not finish in time")
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=work, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=180)
    assert errors == [] and not any(t.is_alive() for t in threads)
    assert refused["not_in_queue"] > 0  # the race really happened
    stored = {(lab["annotator"], lab["item"], lab["part"]): lab["answer"] for lab in labels_of(db, batch)}
    assert {(n, i, p): a for n, i, p, a in acknowledged} == stored  # every acknowledged label, nothing else
    exported = [json.loads(line) for line in batch_reports.export_labels(db, batch, "jsonl").splitlines()]
    assert len(exported) == len(acknowledged)
    assert batch_reports.batch_agreement(db, batch)["n_labels"] == len(acknowledged)
    per_unit = Counter((i, p) for _, i, p, _ in acknowledged)
    assert set(per_unit.values()) == {2} and len(per_unit) == 60  # exact overlap, no item left out
    assert all(a["done"] for a in store.batch_assignments(db, store.get_batch(db, batch)["id"]))


# --- crowd studies -------------------------------------------------------------------------------


def crowd(db, n=6, overlap=2, per_worker=3, **options):
    spec = batches.BatchSpec(
        "demo-bivlc-candidates", "pick_image", (), overlap, n, seed=9, crowd_items=per_worker, min_seconds=0, **options
    )
    created = batches.create_batch(db, spec)
    return created["batch"], created["crowd_url"].split("study=")[1].split("&")[0]


def pid(n: int) -> str:
    return f"{n:024x}"


def test_made_up_ids_cannot_drain_a_study_and_abandoned_units_come_back(demo_db):
    batch, token = crowd(demo_db, n=6, overlap=2, per_worker=3, idle_minutes=10)  # 12 units: 4 participants
    for fake in ["bot", "12345", "x" * 24, "<script>", pid(1)[:-1], pid(1) + "0", pid(1).upper()[:23] + "G"]:
        with pytest.raises(batches.BatchError, match="valid participant id"):
            crowd_studies.join_crowd(demo_db, token, fake)
    working, refused = [], []
    for n in range(50):  # 50 plausible made-up ids arrive at once, and each draws an item
        try:
            bot = crowd_studies.join_crowd(demo_db, token, pid(1000 + n))
        except batches.BatchError as error:
            refused.append(str(error))
            continue
        working += [bot] if queues.draw(demo_db, bot["id"], batch).task is not None else []
    assert len(working) == 4 and len(refused) == 46 and all("full" in r for r in refused)  # the cap
    with pytest.raises(batches.BatchError, match="full"):
        crowd_studies.join_crowd(demo_db, token, pid(7))  # the real worker is turned away for now...
    # ...until the no-show time: the bots answered nothing, so the items they opened go back with the unopened ones
    later = datetime.now(UTC) + timedelta(minutes=11)
    assert queues.reassign_stale(demo_db, batch, now=later) == 8
    assert queues.reassign_stale(demo_db, batch, now=datetime.now(UTC) + timedelta(minutes=31)) == 0  # once
    real = crowd_studies.join_crowd(demo_db, token, pid(7), now=later)
    queues.draw(demo_db, real["id"], batch)
    mine = [
        a
        for a in store.batch_assignments(demo_db, store.get_batch(demo_db, batch)["id"])
        if a["annotator_id"] == real["id"]
    ]
    assert len(mine) == 2
    assert [j["external_id"] for j in crowd_studies.study_joins(demo_db, batch)][-1] == pid(7)


def test_idle_participants_return_unopened_units_and_an_opened_item_keeps_its_lease_once_one_is_answered(demo_db):
    batch, token = crowd(demo_db, n=6, overlap=1, per_worker=3, idle_minutes=10)
    busy, idle = crowd_studies.join_crowd(demo_db, token, pid(1)), crowd_studies.join_crowd(demo_db, token, pid(2))
    queues.draw(demo_db, idle["id"], batch)  # one item on screen, one dealt behind it; then idle walks away
    state = queues.draw(demo_db, busy["id"], batch)
    queues.submit_answer(demo_db, busy["id"], batch, state.task, first_option(state.task))
    queues.draw(demo_db, busy["id"], batch)
    soon = datetime.now(UTC) + timedelta(minutes=5)
    assert queues.reassign_stale(demo_db, batch, now=soon) == 0
    later = datetime.now(UTC) + timedelta(minutes=11)
    rows_before = store.batch_assignments(demo_db, store.get_batch(demo_db, batch)["id"])
    freed = queues.reassign_stale(demo_db, batch, now=later)
    rows_after = store.batch_assignments(demo_db, store.get_batch(demo_db, batch)["id"])
    lost = Counter(a["annotator"] for a in rows_before) - Counter(a["annotator"] for a in rows_after)
    # busy gives back its unopened unit and keeps the answered one and the one on screen (its lease runs); idle
    # answered nothing, so it is a no-show: the item on screen goes back with the unopened one
    assert lost[busy["name"]] == 1 and lost[idle["name"]] == 2 and freed == 3
    assert len(labels_of(demo_db, batch)) == 1
    lease_over = datetime.now(UTC) + timedelta(minutes=31)
    assert queues.reassign_stale(demo_db, batch, now=lease_over) == 1  # busy's opened item, past its lease


def test_no_completion_code_for_partial_work_and_a_returning_participant_gets_new_units(demo_db):
    """Answer 1 of 4, walk away past the no-show time: the page must not say "All done" with the
    code. The participant is told, dealt new units, and gets the code only when all are answered."""
    batch, token = crowd(demo_db, n=6, overlap=1, per_worker=4, idle_minutes=10)
    worker = crowd_studies.join_crowd(demo_db, token, pid(1))
    state = queues.draw(demo_db, worker["id"], batch)
    queues.submit_answer(demo_db, worker["id"], batch, state.task, first_option(state.task))
    later = datetime.now(UTC) + timedelta(minutes=11)
    assert queues.reassign_stale(demo_db, batch, now=later) == 1  # the other unit of the window, never opened
    assert queues.queue_state(demo_db, worker["id"], batch).task is None  # an empty queue, but not finished work
    finish = crowd_studies.finish_crowd(demo_db, batch, worker["id"])
    config = store.get_batch(demo_db, batch)["config"]
    assert finish.code is None and (finish.answered, finish.quota, finish.dealt) == (1, 4, 2)
    assert config["completion_code"] not in finish.sentence() and "1 of your 4 items" in finish.sentence()
    while (state := queues.draw(demo_db, worker["id"], batch)).task is not None:
        queues.submit_answer(demo_db, worker["id"], batch, state.task, first_option(state.task))
    done = crowd_studies.finish_crowd(demo_db, batch, worker["id"])
    assert done.code == config["completion_code"] and (done.answered, done.quota) == (4, 4)
    assert done.completion_url == f"https://app.prolific.com/submissions/complete?cc={done.code}"
    assert len(labels_of(demo_db, batch)) == 4


def test_a_returning_participant_is_told_when_no_unit_is_free(demo_db, monkeypatch):
    clock = StudyClock(monkeypatch)  # joining returns abandoned units first: the others' draws happen later too
    batch, token = crowd(demo_db, n=6, overlap=1, per_worker=4, idle_minutes=10, max_participants=10)
    first = crowd_studies.join_crowd(demo_db, token, pid(1))
    state = queues.draw(demo_db, first["id"], batch)
    queues.submit_answer(demo_db, first["id"], batch, state.task, first_option(state.task))
    clock.set(clock.moment + timedelta(minutes=11))
    queues.reassign_stale(demo_db, batch)  # idle: the unopened unit goes back
    for n in (3, 4, 5):  # others take the 5 units left, 2 + 2 + 1
        queues.draw(demo_db, crowd_studies.join_crowd(demo_db, token, pid(n))["id"], batch)
    finish = crowd_studies.finish_crowd(demo_db, batch, first["id"])
    assert finish.code is None and finish.dealt == 0 and "no completion code yet" in finish.sentence()


def test_a_returned_study_frees_its_units_at_once_and_takes_no_more(demo_db):
    batch, token = crowd(demo_db, n=6, overlap=1, per_worker=4)
    worker = crowd_studies.join_crowd(demo_db, token, pid(1))
    state = queues.draw(demo_db, worker["id"], batch)
    queues.submit_answer(demo_db, worker["id"], batch, state.task, first_option(state.task))
    queues.draw(demo_db, worker["id"], batch)  # the next item on screen, one more dealt behind it
    assert crowd_studies.return_study(demo_db, batch, worker["id"]) == 2
    held = [
        a
        for a in store.batch_assignments(demo_db, store.get_batch(demo_db, batch)["id"])
        if a["annotator_id"] == worker["id"]
    ]
    assert [a["done"] for a in held] == [1]  # the answer stays; nothing else is held
    assert queues.draw(demo_db, worker["id"], batch).task is None  # no more units are dealt
    with pytest.raises(batches.BatchError, match="returned"):
        crowd_studies.join_crowd(demo_db, token, pid(1))
    assert len(labels_of(demo_db, batch)) == 1


def test_a_flood_of_made_up_ids_cannot_lock_a_study(demo_db):
    """Issue 41: 200 well-formed made-up ids join a 100-item study (overlap 2, 20 items each: a cap
    of 10) in one minute and open nothing. They hold no place: a real participant who joins in that
    minute is dealt items at once and finishes. Ids that each take a unit fill only the cap."""
    spec = batches.BatchSpec(
        "demo-sugarcrepe", "validate_negative", (), 2, 100, seed=9, crowd_items=20, min_seconds=0, idle_minutes=5
    )
    created = batches.create_batch(demo_db, spec)
    batch, token = created["batch"], created["crowd_url"].split("study=")[1].split("&")[0]
    assert store.get_batch(demo_db, batch)["config"]["max_participants"] == 10
    now = datetime.now(UTC)
    for n in range(200):  # joins_per_minute keeps its default (20): the rate counts places taken, not ids
        crowd_studies.join_crowd(demo_db, token, pid(5000 + n), now=now + timedelta(seconds=n * 0.3))
    real = crowd_studies.join_crowd(demo_db, token, pid(7), now=now + timedelta(seconds=30))
    assert queues.draw(demo_db, real["id"], batch).task is not None  # within the flood's minute
    takers = [
        crowd_studies.join_crowd(demo_db, token, pid(9000 + n), now=now + timedelta(seconds=40)) for n in range(30)
    ]
    took = [t for t in takers if queues.draw(demo_db, t["id"], batch).task is not None]
    assert len(took) == 9  # with the real participant, the cap of 10; the others were dealt nothing
    with pytest.raises(batches.BatchError, match="full"):
        crowd_studies.join_crowd(demo_db, token, pid(8), now=now + timedelta(seconds=50))
    rows = store.batch_assignments(demo_db, store.get_batch(demo_db, batch)["id"])
    assert len({r["annotator_id"] for r in rows}) == 10 and len(rows) == 20  # a window of 2 each: 10% of the units
    while (state := queues.draw(demo_db, real["id"], batch)).task is not None:
        queues.submit_answer(demo_db, real["id"], batch, state.task, first_option(state.task))
    finish = crowd_studies.finish_crowd(demo_db, batch, real["id"])
    assert finish.code == store.get_batch(demo_db, batch)["config"]["completion_code"] and finish.answered == 20


class StudyClock:
    """The one clock a crowd study reads, moved by hand: the store's timestamps (dealt, opened,
    answered), joins, deals and leases all take `datetime.now` from the modules patched here."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.moment = datetime.now(UTC)
        clock = self

        class Frozen(datetime):
            @classmethod
            def now(cls, tz=None):
                return clock.moment.astimezone(tz) if tz else clock.moment.replace(tzinfo=None)

        for module in (store_base, crowd_studies, queues):
            monkeypatch.setattr(module, "datetime", Frozen)

    def set(self, moment: datetime) -> None:
        self.moment = moment


def test_ten_made_up_ids_that_open_one_item_and_leave_hold_a_study_only_for_the_no_show_time(demo_db, monkeypatch):
    """Issue 53: in a 100-item study (overlap 2, 20 items each: 10 places) ten made-up ids each
    open one item and leave. They answered nothing, so they are no-shows: a real participant who
    arrives before the no-show time (5 minutes) is told the study is full and when a place frees;
    one who arrives after it gets an item (not after the 30-minute lease). The flooded units go
    back to the pool once, and ten real participants then label every unit exactly twice."""
    clock = StudyClock(monkeypatch)
    spec = batches.BatchSpec("demo-sugarcrepe", "validate_negative", (), 2, 100, seed=9, crowd_items=20, min_seconds=0)
    created = batches.create_batch(demo_db, spec)
    batch, token = created["batch"], created["crowd_url"].split("study=")[1].split("&")[0]
    batch_id = store.get_batch(demo_db, batch)["id"]
    config = store.get_batch(demo_db, batch)["config"]
    assert (config["max_participants"], batches.setting(config, "idle_minutes")) == (10, 5)
    assert batches.setting(config, "lease_minutes") == 30
    flood = clock.moment
    bots = [crowd_studies.join_crowd(demo_db, token, pid(5000 + n)) for n in range(10)]
    assert all(queues.draw(demo_db, bot["id"], batch).task is not None for bot in bots)  # each opens one item, leaves
    flooded = store.batch_assignments(demo_db, batch_id)
    assert len(flooded) == 20 and sum(a["opened_at"] is not None for a in flooded) == 10  # a window of 2 each
    places = crowd_studies.study_places(demo_db, batch)
    assert (places.places, places.taken, places.starts_per_minute) == (10, 10, 20)
    assert places.next_place_frees_at == store.timestamp(flood + timedelta(minutes=5))

    refusals: dict[float, str] = {}
    waited = None
    for tenths in range(301):  # the real participant tries every 6 seconds, up to the 30-minute lease
        clock.set(flood + timedelta(minutes=tenths / 10))
        try:
            real = crowd_studies.join_crowd(demo_db, token, pid(7))
        except batches.BatchError as refused:
            refusals[tenths / 10] = str(refused)
            assert len(store.batch_assignments(demo_db, batch_id)) == 20  # a refusal changes nothing
            continue
        waited = tenths / 10
        break
    assert waited is not None and 5 < waited <= 5.1  # just past the no-show time, not the lease
    assert len(refusals) == 51 and all("full right now: all 10 places are taken" in r for r in refusals.values())
    assert "frees in 5 minutes" in refusals[0] and "frees in 3 minutes" in refusals[2.5]
    assert "frees within a minute" in refusals[4.5]

    state = queues.draw(demo_db, real["id"], batch)
    assert state.task is not None
    rows = store.batch_assignments(demo_db, batch_id)
    assert {a["annotator_id"] for a in rows} == {real["id"]} and len(rows) == 2  # every flooded unit went back...
    assert queues.reassign_stale(demo_db, batch) == 0  # ...once: nothing of theirs is left to go back
    assert crowd_studies.study_places(demo_db, batch).taken == 1

    # nine more real participants join in the same minute; all ten finish, and the flood lost nothing
    workers = [real] + [crowd_studies.join_crowd(demo_db, token, pid(100 + n)) for n in range(9)]
    for worker in workers:
        while (state := queues.draw(demo_db, worker["id"], batch)).task is not None:
            assert queues.submit_answer(demo_db, worker["id"], batch, state.task, first_option(state.task))
        finish = crowd_studies.finish_crowd(demo_db, batch, worker["id"])
        assert finish.code == config["completion_code"] and finish.answered == 20
    labels = labels_of(demo_db, batch)
    per_unit = Counter((label["item"], label["part"]) for label in labels)
    assert len(labels) == 200 and len(per_unit) == 100 and set(per_unit.values()) == {2}  # none lost or doubled
    assert all((a["item_id"], a["part"]) in per_unit for a in flooded)
    assert len({(label["annotator"], label["item"], label["part"]) for label in labels}) == 200
    assert not {label["annotator"] for label in labels} & {bot["name"] for bot in bots}
    joins = {j["external_id"]: j for j in crowd_studies.study_joins(demo_db, batch)}
    assert all((joins[pid(5000 + n)]["held"], joins[pid(5000 + n)]["answered"]) == (0, 0) for n in range(10))


def test_a_studys_places_and_flood_cap_are_stated_by_batch_joins(demo_db, monkeypatch):
    import argparse

    from foil_studio.cli.batches import cmd_batch_joins

    clock = StudyClock(monkeypatch)
    batch, token = crowd(demo_db, n=6, overlap=1, per_worker=3, max_participants=1)
    queues.draw(demo_db, crowd_studies.join_crowd(demo_db, token, pid(1))["id"], batch)
    result = cmd_batch_joins(demo_db, argparse.Namespace(batch=batch))
    assert (result["places"], result["taken"], result["starts_per_minute"], result["no_show_minutes"]) == (1, 1, 20, 5)
    assert result["next_place_frees_at"] == store.timestamp(clock.moment + timedelta(minutes=5))
    assert result["rule"].startswith("1 place (participants holding work at once), 1 taken now; the next frees at")
    assert "Flood cap: at most 20 participants take a place per minute" in result["rule"]
    with pytest.raises(batches.BatchError, match="full right now: its 1 place is taken. The next place frees in 5 min"):
        crowd_studies.join_crowd(demo_db, token, pid(2))
    assert [p["external_id"] for p in result["participants"]] == [pid(1)]


def test_joins_are_rate_limited_and_a_closed_study_takes_nobody(demo_db):
    batch, token = crowd(demo_db, n=20, overlap=2, per_worker=2, joins_per_minute=5, max_participants=100)
    now = datetime.now(UTC)
    late = crowd_studies.join_crowd(demo_db, token, pid(9), now=now)  # joined, not started yet
    for n in range(5):  # five take their places (the first draw deals their units)
        queues.draw(demo_db, crowd_studies.join_crowd(demo_db, token, pid(n), now=now)["id"], batch)
    assert queues.draw(demo_db, late["id"], batch).task is None  # a sixth start in the minute is held back
    with pytest.raises(batches.BatchError, match="Too many people"):
        crowd_studies.join_crowd(demo_db, token, pid(5), now=now)
    crowd_studies.join_crowd(demo_db, token, pid(5), now=now + timedelta(minutes=2))
    crowd_studies.close_study(demo_db, batch)
    with pytest.raises(batches.BatchError, match="closed"):
        crowd_studies.join_crowd(demo_db, token, pid(6), now=now + timedelta(minutes=4))
    assert crowd_studies.join_crowd(demo_db, token, pid(0))["external_id"] == pid(0)  # those in may come back
    assert len(crowd_studies.study_joins(demo_db, batch)) == 7


# --- agreement and adjudication -----------------------------------------------------------------


def independent_tables(exported: list[dict], task: str, questions: tuple[str, ...]) -> dict[tuple, dict[str, str]]:
    """unit -> {annotator: label}, built from the exported labels without the app's agreement code."""
    units: dict[tuple, dict[str, str]] = {}
    for row in exported:
        if row["is_gold"]:
            continue
        for q in questions:
            value = row["answer"][q]
            if task == "pick_image":
                value = "none" if value == "none" else "image"
            units.setdefault((row["item"], row["part"], q), {})[row["annotator"]] = value
    return units


def oracle_kappas(units: dict[tuple, dict[str, str]]) -> dict[tuple[str, str], float]:
    names = sorted({a for labels in units.values() for a in labels})
    kappas = {}
    for a, b in combinations(names, 2):
        shared = [(labels[a], labels[b]) for labels in units.values() if a in labels and b in labels]
        x, y = zip(*shared)
        if len(set(x) | set(y)) > 1:
            kappas[(a, b)] = cohen_kappa_score(x, y)
    return kappas


def oracle_alpha(units: dict[tuple, dict[str, str]], ordinal: bool) -> float:
    names = sorted({a for labels in units.values() for a in labels})
    values = sorted({v for labels in units.values() for v in labels.values()}, key=lambda v: float(v) if ordinal else v)
    code = {v: i for i, v in enumerate(values)}
    matrix = np.array(
        [[code[labels[a]] if a in labels else np.nan for labels in units.values()] for a in names], dtype=float
    )
    return float(krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal" if ordinal else "nominal"))


@pytest.mark.parametrize("task", TASK_TYPES)
def test_agreement_on_every_task_type_matches_sklearn_and_krippendorff(demo_db, task):
    batch = make(demo_db, task=task, n=24, overlap=2)
    simulation.simulate(demo_db, batch, accuracies=0.75, seed=2)
    report = batch_reports.batch_agreement(demo_db, batch)
    exported = [json.loads(line) for line in batch_reports.export_labels(demo_db, batch, "jsonl").splitlines()]
    questions = task_type(task).questions
    ordinal = task_type(task).agreement_level == "ordinal"
    reports = {None: (report, questions)} | {
        q: (report["by_question"][q], (q,)) for q in questions if len(questions) > 1
    }
    for _, (part, asked) in reports.items():
        units = independent_tables(exported, task, asked)
        ours = {(p["a"], p["b"]): p["kappa"] for p in part["cohen_pairs"] if p["kappa"] is not None}
        expected = oracle_kappas(units)
        assert ours.keys() == expected.keys() and ours == pytest.approx(expected)
        assert part["krippendorff_alpha"] == pytest.approx(oracle_alpha(units, ordinal))
        assert part["n_items"] == len(units) and part["n_labels"] == sum(len(v) for v in units.values())
    assert report["level"] == ("ordinal" if ordinal else "nominal")


def careful_ada_and_careless_ben(db) -> str:
    """A validate_negative batch (30 regular items, 10 gold) where ada is always right and ben always wrong."""
    batch = make(db, n=40, overlap=2, annotators=("ada", "ben"), gold_share=0.25)
    items = store.items_by_id(db, {a["item_id"] for a in store.batch_assignments(db, store.get_batch(db, batch)["id"])})
    for name, careful in (("ada", True), ("ben", False)):
        me = annotator_id(db, name)
        while (state := queues.draw(db, me, batch)).task is not None:
            item = items[state.task.item_id]
            wrong = next(
                o.value for o in state.task.options if not is_correct("validate_negative", item, 0, {"answer": o.value})
            )
            queues.submit_answer(
                db, me, batch, state.task, expected_answer("validate_negative", item) if careful else {"answer": wrong}
            )
    return batch


def test_adjudication_names_the_annotators_left_out_and_can_include_them(demo_db):
    batch = careful_ada_and_careless_ben(demo_db)
    excluded = consensus.excluded_annotators(demo_db, batch)
    assert [e.annotator for e in excluded] == ["ben"] and "below the pass mark of 60%" in excluded[0].reason
    assert consensus.adjudication_queue(demo_db, batch) == []  # with ben left out nobody disagrees...
    disputed = consensus.adjudication_queue(demo_db, batch, include_excluded=True)
    assert len(disputed) == 30  # ...with him every regular item is disputed (he always answers wrong)


# --- the admin's page -------------------------------------------------------------------------------


def test_batches_page_lists_left_out_annotators_and_can_include_them(demo_db, admin_page):
    batch = careful_ada_and_careless_ben(demo_db)
    at = admin_page(store.location(demo_db), "views/batches.py")
    at.selectbox(key="batch").set_value(batch).run()
    assert not at.exception
    assert any(
        w.value.startswith("Left out of the vote: ben (0 of ") and "with 95% confidence" in w.value for w in at.warning
    )
    assert any(c.value.startswith("0 questions where annotators disagree") for c in at.caption)
    at.toggle(key="include_excluded").set_value(True).run()
    assert any(c.value.startswith("30 questions where annotators disagree") for c in at.caption)


def test_batches_page_shows_rank_agreement_per_question(demo_db, admin_page):
    batch = make(demo_db, task="rank_captions", n=20, overlap=2)
    simulation.simulate(demo_db, batch, accuracies=0.8, seed=1)
    at = admin_page(store.location(demo_db), "views/batches.py")
    at.selectbox(key="batch").set_value(batch).run()
    assert not at.exception
    per_question = next(d.value for d in at.dataframe if "question" in d.value.columns)
    report = batch_reports.batch_agreement(demo_db, batch)
    assert list(per_question["question"]) == [
        "rank of the positive caption",
        "rank of the negative caption",
        "rank of the hard positive caption",
    ]  # the caption each question ranks, not rank_0/1/2
    assert list(per_question["krippendorff_alpha"]) == [
        figure(report["by_question"][q]["krippendorff_alpha"]) for q in ("rank_0", "rank_1", "rank_2")
    ]  # written with two decimals, an empty cell where undefined


def test_batches_page_leaves_an_undefined_coefficient_empty_and_says_why(demo_db, admin_page):
    """Found by the stateful test: a category with one item (kappa undefined there) and a batch
    where nobody overlaps drew "None" in the agreement tables."""
    batch = make(demo_db, n=3, overlap=2, annotators=("ada", "ben"))
    simulation.simulate(demo_db, batch, accuracies=1.0, seed=1)
    at = admin_page(store.location(demo_db), "views/batches.py")
    at.selectbox(key="batch").set_value(batch).run()
    assert not at.exception
    tables = [d.value for d in at.dataframe]
    assert not [t.to_string() for t in tables if "None" in t.to_string() or "NaN" in t.to_string()]
    per_category = next(t for t in tables if "category" in t.columns and "undefined because" in t.columns)
    undefined = per_category[per_category["cohen_mean"] == ""]
    assert len(undefined) and all("cohen_mean: " in why for why in undefined["undefined because"])


def test_batches_page_shows_who_joined_a_study_and_closes_it(demo_db, admin_page):
    batch, token = crowd(demo_db, n=6, overlap=1, per_worker=2)
    queues.draw(demo_db, crowd_studies.join_crowd(demo_db, token, pid(42))["id"], batch)
    at = admin_page(store.location(demo_db), "views/batches.py")
    at.selectbox(key="batch").set_value(batch).run()
    joins = next(d.value for d in at.dataframe if "external_id" in d.value.columns)
    assert list(joins["external_id"]) == [pid(42)] and list(joins["held"]) == [2]
    stated = " ".join(t.value for t in at.text)
    places = crowd_studies.study_places(demo_db, batch)
    assert f"{places.places} places (participants holding work at once), 1 taken now" in stated
    assert "Flood cap: at most 20 participants take a place per minute" in stated and "no-show time" in stated
    at.button(key="close_study").click().run()
    assert not at.exception
    with pytest.raises(batches.BatchError, match="closed"):
        crowd_studies.join_crowd(demo_db, token, pid(43))


def test_cli_agreement_on_a_ranking_batch_reports_each_question(demo_db):
    import subprocess

    from tests.conftest import REPO

    batch = make(demo_db, task="rank_captions", n=15, overlap=2)
    simulation.simulate(demo_db, batch, accuracies=0.8, seed=5)
    done = subprocess.run(
        [*FOIL_CLI, "agreement", batch, "--db", str(store.location(demo_db)), "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    expected = batch_reports.batch_agreement(demo_db, batch)
    assert sorted(report["by_question"]) == ["rank_0", "rank_1", "rank_2"]
    assert (
        report["krippendorff_alpha"] == pytest.approx(expected["krippendorff_alpha"]) and report["level"] == "ordinal"
    )
    assert report["n_items"] == 45 and all(part["n_items"] == 15 for part in report["by_question"].values())


# --- the reading clock starts when the browser has the whole item on screen -------------------------


@pytest.mark.both_engines
def test_an_answer_before_the_item_is_reported_shown_or_too_soon_after_is_refused(demo_db):
    # the reading time is the batch's own (BatchSpec.min_seconds), no longer passed to submit_answer
    batch = make(demo_db, task="validate_negative", n=4, overlap=1, annotators=("ada",), min_seconds=0.5)
    ada = store.annotator_by_name(demo_db, "ada")["id"]
    state = queues.draw(demo_db, ada, batch)
    with pytest.raises(store.LabelRefused, match="had not finished appearing"):
        queues.submit_answer(demo_db, ada, batch, state.task, first_option(state.task), require_shown=True)
    assert queues.mark_shown(demo_db, ada, batch, state.task.item_id, state.task.part)
    assert not queues.mark_shown(
        demo_db, ada, batch, state.task.item_id, state.task.part
    )  # once: a rerun does not restart the clock
    with pytest.raises(store.LabelRefused, match="too briefly"):
        queues.submit_answer(demo_db, ada, batch, state.task, first_option(state.task), require_shown=True)
    time.sleep(0.55)  # the batch's 0.5 s have passed since the item was reported on screen
    assert queues.submit_answer(demo_db, ada, batch, state.task, first_option(state.task), require_shown=True)
    assert (
        labels_of(demo_db, batch)[0]["started_at"]
        >= demo_db.execute(
            "SELECT opened_at FROM assignments WHERE item_id = ? AND annotator_id = ?", [state.task.item_id, ada]
        ).fetchone()[0]
    )


@pytest.mark.both_engines
def test_a_reassigned_item_starts_its_lease_and_clocks_anew(demo_db):
    batch = make(demo_db, task="validate_negative", n=4, overlap=1, annotators=("ada", "ben"))
    ada, ben = (store.annotator_by_name(demo_db, n)["id"] for n in ("ada", "ben"))
    state = queues.draw(demo_db, ada, batch)
    queues.mark_shown(demo_db, ada, batch, state.task.item_id, state.task.part)
    later = datetime.now(UTC) + timedelta(hours=1)
    assert queues.reassign_stale(demo_db, batch, now=later) == 1
    row = demo_db.execute(
        "SELECT annotator_id, opened_at, shown_at FROM assignments WHERE item_id = ? AND batch_id = ?",
        [state.task.item_id, store.get_batch(demo_db, batch)["id"]],
    ).fetchone()
    assert tuple(row) == (ben, None, None)  # ben's lease and reading clock start when he sees it, not at ada's times


def test_the_places_of_a_study_count_each_holders_answered_and_unopened_units_and_when_they_were_active(demo_db):
    """`store.place_holders`, what the admission rule reads: a participant holds a place while any
    unit is unanswered; `answered`, `unopened`, `last_active` and `latest_opened` per holder."""
    batch, token = crowd(demo_db, n=6, overlap=1, per_worker=3, idle_minutes=10)
    busy, idle = crowd_studies.join_crowd(demo_db, token, pid(1)), crowd_studies.join_crowd(demo_db, token, pid(2))
    batch_id = store.get_batch(demo_db, batch)["id"]
    assert store.place_holders(demo_db, batch_id) == []  # joined, nothing dealt yet
    queues.draw(demo_db, idle["id"], batch)  # one item opened, two dealt behind it
    state = queues.draw(demo_db, busy["id"], batch)
    queues.submit_answer(demo_db, busy["id"], batch, state.task, first_option(state.task))
    held = {row["annotator_id"]: row for row in store.place_holders(demo_db, batch_id)}
    assert [row["annotator_id"] for row in store.place_holders(demo_db, batch_id)] == sorted(held)
    units = store.batch_assignments(demo_db, batch_id)  # counted again, from the assignments themselves
    for who, answered in ((idle, 0), (busy, 1)):
        mine = [a for a in units if a["annotator_id"] == who["id"]]
        unopened = sum(1 for a in mine if not a["done"] and a["opened_at"] is None)
        assert (held[who["id"]]["answered"], held[who["id"]]["unopened"]) == (answered, unopened)
    assert held[idle["id"]]["unopened"] == 1 and held[busy["id"]]["unopened"] >= 1
    assert held[idle["id"]]["latest_opened"] is not None and held[busy["id"]]["latest_opened"] is None
    answered_at = max(label["submitted_at"] for label in labels_of(demo_db, batch))
    assert held[busy["id"]]["last_active"] >= answered_at
    assert held[idle["id"]]["last_active"] >= held[idle["id"]]["latest_opened"]
    for _ in range(2):  # busy answers the rest: it no longer holds a place
        state = queues.draw(demo_db, busy["id"], batch)
        queues.submit_answer(demo_db, busy["id"], batch, state.task, first_option(state.task))
    assert [row["annotator_id"] for row in store.place_holders(demo_db, batch_id)] == [idle["id"]]
