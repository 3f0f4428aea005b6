"""Crowd studies (e.g. Prolific): participants join through the study's link and are dealt units
on demand, up to a window of unanswered ones; practice items first; a completion code (or the
screen-out code, when gold checks fail) once their work is complete; returning the study; closing it.

Places are taken by work, not by joining. Joining registers a participant (their quota, their
session) and deals nothing; their first units are dealt when they draw their first item, after
the consent, instructions and practice screens. A participant holds a place while they hold an
unanswered unit: made-up ids that join and open nothing hold neither units nor places, however
many arrive, so a real participant among them is dealt items as soon as they start. Taking a
place is what the study limits: a participant who holds nothing in it (new, or every unit went
back unanswered) is dealt units only while fewer than `max_participants` hold work and fewer
than `joins_per_minute` took their place in the last minute (the flood cap), so ids that each
take a unit cannot drain the study: they hold at most the cap's places, a window each. A
participant idle for the no-show time (`idle_minutes`) gives back their unopened units, and,
when they answered nothing in the study, the item they opened too: ids that open one item and
leave hold their places for the no-show time, not for the item's lease. One who answered keeps
an opened item for its lease (`lease_minutes`). Joining first returns what was abandoned, then is
refused when the limits are reached (the study is full: the refusal says when the next place
frees; or too many started), the study is closed, or no unit is free.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlite_utils

from foil_studio.annotate.batch_reports import batch_progress
from foil_studio.annotate.batches import PROLIFIC_COMPLETION_URL, PROLIFIC_ID_PATTERN, BatchError, setting
from foil_studio.annotate.task_types import Task, build_task
from foil_studio.data import store


def join_crowd(
    db: sqlite_utils.Database, crowd_token: str, external_id: str, *, now: datetime | None = None
) -> dict[str, Any]:
    """Register a crowd worker (e.g. a Prolific PID) for a study; safe to repeat. Nothing is dealt
    yet: their first draw deals their first units (`top_up`), so an id that joins and opens
    nothing holds no place (the module's docstring has the rule). Units abandoned by `now`
    (`free_abandoned_units`) go back to the pool first.

    Refused with a BatchError saying why when the link is wrong, the id implausible, the
    participant returned the study, or the study is closed or full, too many participants took
    their place in the last minute, or no unit is free. A participant who holds work (open or
    answered) gets a new session and nothing more.
    """
    batch = store.batch_by_crowd_token(db, crowd_token)
    if batch is None:
        raise BatchError("This study link is not valid.")
    worker_id = external_id.strip()
    if not re.fullmatch(batch["config"].get("worker_id_pattern", PROLIFIC_ID_PATTERN), worker_id):
        raise BatchError("This link does not carry a valid participant id. Open the study from the recruiting site.")
    name = f"crowd-{worker_id}"
    moment = now or datetime.now(UTC)
    # Its own transaction: a refusal below rolls its transaction back, and the places that were
    # abandoned must be free for the next participant all the same.
    free_abandoned_units(db, batch, moment)
    with store.transaction(db, row_locks=True):  # one joiner at a time: the cap and the rate hold under concurrency
        store.lock_batch(db, batch["id"])
        known = store.annotator_by_name(db, name)
        if known is not None and store.has_returned(db, batch["id"], known["id"]):
            raise BatchError("You returned this study, so it cannot be taken up again.")
        if known is None or _takes_place(db, batch, known["id"]):
            refusal = _refusal(db, batch, moment)
            if refusal is not None:
                raise BatchError(refusal)
            worker = store.ensure_annotator(db, name, external_id=worker_id)
            if not _crowd_share(batch, worker["id"], store.batch_assignments(db, batch["id"])):
                raise BatchError("Every item of this study is taken right now. Please try again later.")
            store.record_join(db, batch["id"], worker["id"], worker_id, _quota(batch))
        else:
            worker = {**known, "token": None}
    return {**worker, "token": worker["token"] or store.issue_token(db, worker["id"])}  # older sessions stay valid


@dataclass(frozen=True)
class CrowdFinish:
    """What a crowd participant with nothing left in their queue is told.

    `code` is set only when their work is complete: every unit dealt to them answered and either
    their quota reached or nothing left in the study for them. Otherwise `answered` of `quota`
    were, and `dealt` new units were dealt now (0: none is free for them at the moment).
    """

    code: str | None
    passed: bool
    answered: int
    quota: int
    dealt: int = 0
    completion_url: str | None = None

    def sentence(self) -> str:
        """The participant's message, in words."""
        if self.code is not None:
            return (
                f"All done, thank you. Your completion code: {self.code}"
                if self.passed
                else f"Thank you. Some attention checks were missed; your code: {self.code}"
            )
        so_far = f"You answered {self.answered} of your {self.quota} items."
        if self.dealt:
            return f"{so_far} Here {'is 1 more item' if self.dealt == 1 else f'are {self.dealt} more items'}."
        return (
            f"{so_far} No item is free for you right now (others hold them), so there is no completion code yet: "
            "please come back in a few minutes, or return the study."
        )


def finish_crowd(db: sqlite_utils.Database, batch_name: str, annotator_id: int) -> CrowdFinish:
    """For a participant whose queue is empty: their code if their work is complete; else new
    units in place of those that went back to the pool (as many as are free)."""
    batch = store.get_batch(db, batch_name)
    with store.transaction(db, row_locks=True):
        store.lock_batch(db, batch["id"])
        answered, quota = _answered_and_quota(db, batch, annotator_id)
        if answered >= quota or _nothing_left_for(batch, annotator_id, store.batch_assignments(db, batch["id"])):
            code, passed = final_code(db, batch, annotator_id)
            url = (
                batch["config"].get("completion_url", PROLIFIC_COMPLETION_URL).replace("{code}", code)
                if passed
                else None
            )
            return CrowdFinish(code, passed, answered, quota, completion_url=url)
        dealt = 0 if store.has_returned(db, batch["id"], annotator_id) else _deal(db, batch, annotator_id)
    return CrowdFinish(None, True, answered, quota, dealt)


def return_study(db: sqlite_utils.Database, batch_name: str, annotator_id: int) -> int:
    """A participant returns the study (Prolific's "return"): their unanswered units go back to the
    pool at once, they get no code and cannot take the study up again; return how many units went back."""
    batch = store.get_batch(db, batch_name)
    with store.transaction(db, row_locks=True):
        store.lock_batch(db, batch["id"])
        return store.return_study(db, batch["id"], annotator_id)


def free_abandoned_units(db: sqlite_utils.Database, batch: store.BatchRow, moment: datetime) -> int:
    """Return to a crowd study's pool, as of `moment`, the units participants walked away from;
    return how many went back. An opened item goes back past its lease; the other unanswered
    units of a participant idle for the no-show time go back then, the opened one included when
    they answered nothing in the study. Reads once and returns when nothing is stale; one write
    transaction re-reads what is, so an answer stored a moment ago is never taken back."""
    config = batch["config"]
    opened_before = store.timestamp(moment - timedelta(minutes=setting(config, "lease_minutes")))
    idle_before = store.timestamp(moment - timedelta(minutes=setting(config, "idle_minutes")))
    if not store.stale_assignments(db, batch["id"], opened_before, idle_before):  # the common case: no lock taken
        return 0
    # Labels are written under row locks (`store.save_label`): an answer stored while this runs
    # keeps its assignment, which then is not deleted and does not count.
    with store.transaction(db, row_locks=True):
        store.lock_batch(db, batch["id"])
        stale = store.stale_assignments(db, batch["id"], opened_before, idle_before)
        return sum(store.delete_assignment(db, assignment["id"]) for assignment in stale)


@dataclass(frozen=True)
class StudyPlaces:
    """A crowd study's places (participants holding work at once) and its flood cap, as they stand.

    `places` is None for a study without a cap; `next_place_frees_at` (the store's time text) is
    when the first place frees if nobody holding one does anything more (None when nobody holds
    one): a participant who finishes or returns the study frees theirs sooner.
    """

    places: int | None
    taken: int
    starts_per_minute: int
    window: int
    no_show_minutes: float
    lease_minutes: float
    next_place_frees_at: str | None

    def sentence(self) -> str:
        """The rule and where the study stands, in words (the batch page and `batch joins`)."""
        cap = "no cap on places" if self.places is None else _places(self.places)
        frees = (
            f"; the next frees at {self.next_place_frees_at[:19].replace('T', ' ')} UTC if nobody holding one goes on"
            if self.next_place_frees_at and self.places is not None and self.taken >= self.places
            else ""
        )
        no_show, lease = f"{self.no_show_minutes:g} minutes idle", f"{self.lease_minutes:g}-minute lease"
        return (
            f"{cap} (participants holding work at once), {self.taken} taken now{frees}. Flood cap: at most "
            f"{self.starts_per_minute} participants take a place per minute, each holding at most {self.window} "
            f"unanswered items. A participant who opened an item and answered nothing gives the place back after "
            f"{no_show} (the no-show time); one who answered something gives unopened items back after {no_show} "
            f"and an opened item after its {lease}."
        )


def study_places(db: sqlite_utils.Database, batch_name: str) -> StudyPlaces:
    """A crowd study's places, how many are taken and its flood cap (for the admin). Reads only."""
    batch = store.get_batch(db, batch_name)
    config = batch["config"]
    frees = _next_place_frees_at(db, batch)
    return StudyPlaces(
        places=setting(config, "max_participants"),
        taken=store.participants_holding_work(db, batch["id"]),
        starts_per_minute=setting(config, "joins_per_minute"),
        window=setting(config, "window"),
        no_show_minutes=float(setting(config, "idle_minutes")),
        lease_minutes=float(setting(config, "lease_minutes")),
        next_place_frees_at=None if frees is None else store.timestamp(frees),
    )


def _next_place_frees_at(db: sqlite_utils.Database, batch: store.BatchRow) -> datetime | None:
    """When the first place of the study frees if nobody holding one does anything more (the rule
    `free_abandoned_units` applies); None when nobody holds one."""
    config = batch["config"]
    no_show = timedelta(minutes=setting(config, "idle_minutes"))
    lease = timedelta(minutes=setting(config, "lease_minutes"))
    moments = []
    for holder in store.place_holders(db, batch["id"]):
        idle_until = _moment(holder["last_active"]) + no_show
        if holder["answered"] == 0 or holder["latest_opened"] is None:
            moments.append(idle_until)  # every unit they hold goes back at the no-show time
        else:
            leased_until = _moment(holder["latest_opened"]) + lease
            moments.append(max(idle_until, leased_until) if holder["unopened"] else leased_until)
    return min(moments, default=None)


def _moment(stored: str) -> datetime:
    """A time the store wrote; a missing one (rows older than the column) is long past."""
    return datetime.fromisoformat(stored) if stored else datetime(1970, 1, 1, tzinfo=UTC)


def top_up(db: sqlite_utils.Database, batch: store.BatchRow, annotator_id: int) -> int:
    """Deal a crowd participant units up to the study's window as they answer (called by `draw`);
    return how many were dealt. Reads two counts and returns when nothing is due."""
    unanswered, held = store.open_units(db, batch["id"], annotator_id)
    quota = store.crowd_quota(db, batch["id"], annotator_id)
    if quota is None or unanswered >= setting(batch["config"], "window") or held >= quota:
        return 0
    with store.transaction(db, row_locks=True):
        store.lock_batch(db, batch["id"])
        if store.has_returned(db, batch["id"], annotator_id):
            return 0
        return _deal(db, batch, annotator_id)


def _answered_and_quota(db: sqlite_utils.Database, batch: store.BatchRow, annotator_id: int) -> tuple[int, int]:
    unanswered, held = store.open_units(db, batch["id"], annotator_id)
    return held - unanswered, store.crowd_quota(db, batch["id"], annotator_id) or held


def _takes_place(db: sqlite_utils.Database, batch: store.BatchRow, annotator_id: int) -> bool:
    """Whether units dealt to a participant now would take a place: they hold nothing in the batch
    (new, or every unit went back unanswered)."""
    return store.open_units(db, batch["id"], annotator_id)[1] == 0


def _nothing_left_for(batch: store.BatchRow, annotator_id: int, current: list[dict[str, Any]]) -> bool:
    """No unit the participant has not answered can ever be dealt to them: every regular one is
    answered by as many others as the overlap asks, and every gold one answered by them."""
    config = batch["config"]
    answered = Counter((a["item_id"], a["part"]) for a in current if a["done"])
    theirs = {(a["item_id"], a["part"]) for a in current if a["annotator_id"] == annotator_id and a["done"]}
    return all(
        (i, p) in theirs or (not gold and answered[(i, p)] >= config["overlap"]) for i, p, gold in config["units"]
    )


def _deal(db: sqlite_utils.Database, batch: store.BatchRow, annotator_id: int) -> int:
    """Inside the batch's lock: deal a participant units up to the window (regular units short of
    their overlap, and gold); return how many were dealt. One who holds nothing in the batch (new,
    or every unit went back unanswered) takes a place by it, so gets units only while the study
    has room for a newcomer (`_refusal`); one who answered some goes on as before."""
    if _takes_place(db, batch, annotator_id) and _refusal(db, batch, datetime.now(UTC)):
        return 0
    share = _crowd_share(batch, annotator_id, store.batch_assignments(db, batch["id"]))
    store.add_assignments(db, batch["id"], share)
    return len(share)


def _quota(batch: store.BatchRow) -> int:
    """The units a participant answers for their code: their items per participant (or every
    regular unit, where fewer) and every gold unit."""
    units = batch["config"]["units"]
    return min(batch["config"]["crowd_items"], sum(not gold for *_, gold in units)) + sum(bool(g) for *_, g in units)


def _refusal(db: sqlite_utils.Database, batch: store.BatchRow, moment: datetime) -> str | None:
    """Why a crowd study takes no new place now (closed, full, or too many started in the minute
    before `moment`), in the participant's words; None when it takes one."""
    config = batch["config"]
    if batch.get("closed_at"):
        return "This study is closed."
    places = setting(config, "max_participants") or 1 << 30
    if store.participants_holding_work(db, batch["id"]) >= places:
        taken = f"its {_places(places)} is taken" if places == 1 else f"all {_places(places)} are taken"
        return f"This study is full right now: {taken}. {_when_a_place_frees(db, batch, moment)}"
    since = store.timestamp(moment - timedelta(minutes=1))
    if store.participants_started_since(db, batch["id"], since) >= setting(config, "joins_per_minute"):
        return "Too many people are joining this study at once. Please try again in a minute."
    return None


def _places(n: int) -> str:
    """A count of places in words: "1 place", "10 places"."""
    return f"{n} place{'' if n == 1 else 's'}"


def _when_a_place_frees(db: sqlite_utils.Database, batch: store.BatchRow, moment: datetime) -> str:
    """The full study's advice to a participant: when to try again, in minutes from `moment`."""
    frees = _next_place_frees_at(db, batch)
    minutes = 0 if frees is None else math.ceil((frees - moment).total_seconds() / 60)
    when = "within a minute" if minutes <= 1 else f"in {minutes} minutes"
    return f"The next place frees {when} unless its participant is still working: please try again then."


def close_study(db: sqlite_utils.Database, batch_name: str, closed: bool = True) -> None:
    """Stop (or resume) taking new participants through a crowd study's link."""
    store.set_batch_closed(db, store.get_batch(db, batch_name)["id"], closed)


def study_joins(db: sqlite_utils.Database, batch_name: str) -> list[dict[str, Any]]:
    """Who joined a crowd study, when, whether and when they returned it (`returned_at`), and what
    they hold and answered (for the admin)."""
    return store.crowd_joins(db, store.get_batch(db, batch_name)["id"])


def _crowd_share(
    batch: store.BatchRow, worker_id: int, current: list[dict[str, Any]]
) -> list[tuple[int, int, int, int, bool]]:
    """The next units of a participant, up to the window of unanswered ones: regular units short
    of their overlap that they never held, fewest holders first, while they are short of the
    items per participant, and gold units they never held, mixed in at seeded random places
    (each slot is gold with the share of gold among what they still lack)."""
    config = batch["config"]
    holders = Counter((a["item_id"], a["part"]) for a in current)
    mine = [a for a in current if a["annotator_id"] == worker_id]
    theirs = {(a["item_id"], a["part"]) for a in mine}
    room = setting(config, "window") - sum(not a["done"] for a in mine)
    regular = sorted(
        (
            (i, p)
            for i, p, gold in config["units"]
            if not gold and holders[(i, p)] < config["overlap"] and (i, p) not in theirs
        ),
        key=lambda unit: holders[unit],
    )
    regular = regular[: max(0, config["crowd_items"] - sum(not a["is_gold"] for a in mine))]
    gold = [(i, p) for i, p, is_gold in config["units"] if is_gold and (i, p) not in theirs]
    rng = random.Random(f"queue:{config['seed']}:{worker_id}:{len(mine)}")
    rng.shuffle(gold)
    share = []
    while room > 0 and (regular or gold):
        pick_gold = bool(gold) and (not regular or rng.random() < len(gold) / (len(gold) + len(regular)))
        share.append((gold.pop(), True) if pick_gold else (regular.pop(0), False))
        room -= 1
    start = max((a["position"] for a in mine), default=-1) + 1
    return [(item, part, worker_id, start + n, is_gold) for n, ((item, part), is_gold) in enumerate(share)]


def practice_tasks(
    db: sqlite_utils.Database, batch: store.BatchRow, annotator_id: int
) -> list[tuple[Task, store.ItemRow]]:
    """The crowd batch's practice questions (items outside the batch with known answers)."""
    items = store.items_by_id(db, batch["config"].get("practice_items", []))
    return [
        (build_task(batch["task_type"], items[i], 0, seed=f"practice:{annotator_id}"), items[i])
        for i in batch["config"].get("practice_items", [])
    ]


def final_code(db: sqlite_utils.Database, batch: store.BatchRow, annotator_id: int) -> tuple[str, bool]:
    """(code to show, passed): the completion code, or the screen-out code when gold checks fail.
    Only for complete work: `finish_crowd` calls it once every dealt unit is answered."""
    config = batch["config"]
    name = next(a["name"] for a in store.list_annotators(db) if a["id"] == annotator_id)
    row = next((r for r in batch_progress(db, batch["name"]) if r["annotator"] == name), None)
    failed = "screen_out_code" in config and row is not None and row["screened_out"]
    return (config["screen_out_code"], False) if failed else (config["completion_code"], True)
