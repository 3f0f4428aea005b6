"""One whole item at a time, in Chromium: the next item's captions and images appear together
(640x480 JPEGs, as COCO's), nothing of the last item stays, the reading clock starts when the
browser reports the whole item on screen, and a slow network changes none of that."""

from __future__ import annotations

import re
import time

import pytest

from foil_studio.annotate import batches
from foil_studio.data import store
from foil_studio.data.demo_photos import photo_dataset
from tests.browser_support import WATCH_ITEMS, focus_page, launch, start_queue, streamlit_server, wait_idle

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect
READING_MS = 800


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    folder = tmp_path_factory.mktemp("whole-item")
    db_file = folder / "foil.db"
    photo_dataset(store.open_db(db_file), folder, 24)
    with streamlit_server(db_file, folder / "streamlit.log") as base, playwright_api.sync_playwright() as p:
        browser = launch(p)
        yield {"base": base, "db": db_file, "browser": browser}
        browser.close()


def annotate(site, name: str, n_answers: int, *, throttle: dict | None = None) -> dict:
    """Open a fresh annotator's queue, watch every frame, answer `n_answers` items with key 1."""
    created = batches.create_batch(
        store.open_db(site["db"]),
        batches.BatchSpec("photos", "validate_negative", (name,), 1, n_answers + 2, seed=3, name=f"{name}-batch"),
    )
    context = site["browser"].new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    if throttle:
        context.new_cdp_session(page).send("Network.emulateNetworkConditions", {"offline": False, **throttle})
    page.goto(f"{site['base']}/?token={created['annotators'][0]['token']}")
    expect(page.get_by_text(f"Welcome, {name}")).to_be_visible(timeout=60_000)
    start_queue(page, expect)
    page.evaluate(WATCH_ITEMS)
    expect(page.locator(".stimulus img")).to_be_visible(timeout=60_000)
    for done in range(n_answers):
        page.wait_for_timeout(READING_MS)
        wait_idle(page, expect)
        focus_page(page)
        page.keyboard.press("1")
        expect(page.get_by_text(f"{done + 1} of {n_answers + 2} done")).to_be_visible(timeout=60_000)
        page.wait_for_function(f"window.__items.shown.length > {done + 1}", timeout=60_000)
    frames = page.evaluate("window.__items")
    context.close()
    return {"frames": frames, "batch": created["batch"], "name": name}


def stored(site, batch: str) -> tuple[list[dict], list[tuple]]:
    db = store.open_db(site["db"])
    batch_id = store.get_batch(db, batch)["id"]
    return store.batch_labels(db, batch_id), db.execute(
        "SELECT item_id, opened_at, shown_at FROM assignments WHERE batch_id = ? AND answered = 1", [batch_id]
    ).fetchall()


def test_no_frame_shows_parts_of_two_items_and_the_clock_starts_when_all_is_on_screen(site):
    run = annotate(site, "una", 6)
    frames = run["frames"]
    assert frames["frames"] > 100 and frames["mixed"] == 0 and frames["partial"] == 0, frames
    assert len(frames["shown"]) == len(set(frames["shown"])) == 7  # each item appeared once, whole
    labels, assignments = stored(site, run["batch"])
    assert len(labels) == 6
    shown_at = {item: shown for item, _, shown in assignments}
    for _, opened, shown in assignments:
        assert shown is not None and shown >= opened  # the browser's report comes after the server's draw
    assert all(
        label["started_at"] == shown_at[label["item"]] for label in labels
    )  # the clock: from the whole item on screen


def test_a_throttled_network_still_never_shows_a_mixed_item(site):
    # a slow connection (300 ms each way, 1.5 Mbit/s): the next item takes longer, and still arrives whole
    throttle = {"latency": 300, "downloadThroughput": 1_500_000 / 8, "uploadThroughput": 750_000 / 8}
    run = annotate(site, "vic", 3, throttle=throttle)
    frames = run["frames"]
    assert frames["mixed"] == 0 and frames["partial"] == 0, frames
    assert len(stored(site, run["batch"])[0]) == 3


def test_a_lost_shown_report_is_sent_again_and_the_answer_then_stored(site):
    """The server never heard that the item was shown (its report lost on a loaded machine): the
    person's answer is refused and said, the browser reports the painted item again, and the
    next answer after the reading time is stored with its clock from that report."""
    created = batches.create_batch(
        store.open_db(site["db"]),
        batches.BatchSpec("photos", "validate_negative", ("wyn",), 1, 3, seed=5, name="lost-report"),
    )
    page = site["browser"].new_context(viewport={"width": 1400, "height": 1000}).new_page()
    page.goto(f"{site['base']}/?token={created['annotators'][0]['token']}")
    expect(page.get_by_text("Welcome, wyn")).to_be_visible(timeout=60_000)
    start_queue(page, expect)
    expect(page.locator(".stimulus img")).to_be_visible(timeout=60_000)
    db = store.open_db(site["db"])
    batch_id = store.get_batch(db, "lost-report")["id"]
    item = db.execute(
        "SELECT item_id FROM assignments WHERE batch_id = ? AND opened_at IS NOT NULL", [batch_id]
    ).fetchone()[0]

    def wait_for_shown_at():
        return db.execute(
            "SELECT shown_at FROM assignments WHERE batch_id = ? AND item_id = ?", [batch_id, item]
        ).fetchone()[0]

    deadline = time.monotonic() + 60
    while wait_for_shown_at() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    with store.transaction(db):
        db.execute(
            "UPDATE assignments SET shown_at = NULL WHERE batch_id = ? AND item_id = ?", [batch_id, item]
        )  # the report, lost
    page.wait_for_timeout(READING_MS)
    wait_idle(page, expect)
    focus_page(page)
    page.keyboard.press("1")
    expect(page.get_by_text(re.compile(r"^Not stored\. This item had not finished appearing"))).to_be_visible(
        timeout=60_000
    )
    deadline = time.monotonic() + 60
    while wait_for_shown_at() is None and time.monotonic() < deadline:  # reported again, unasked by the person
        time.sleep(0.1)
    assert wait_for_shown_at() is not None
    page.wait_for_timeout(READING_MS)
    wait_idle(page, expect)
    focus_page(page)
    page.keyboard.press("1")
    expect(page.get_by_text("1 of 3 done")).to_be_visible(timeout=60_000)
    labels, _ = stored(site, "lost-report")
    assert [(label["item"], label["started_at"]) for label in labels] == [(item, wait_for_shown_at())]
    page.context.close()
