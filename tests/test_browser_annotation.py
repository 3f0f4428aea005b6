"""The annotator's path in a real browser, the way people behave: double presses, a key held
down, two tabs, a walk-away past the lease, a reload, a stale tab. Each test asserts on what is
stored: never a label on an item the annotator did not see, and a message saying what happened.
Also: every task type fits one screen at 1280x720 and 1400x1000 (screenshots kept for review).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from foil_studio.annotate import batches
from foil_studio.annotate.task_types import TASK_TYPES
from foil_studio.data import store
from tests.browser_support import (
    PAGE_WAIT_MS,
    focus_page,
    launch,
    press_when_idle,
    start_queue,
    streamlit_server,
    wait_idle,
)
from tests.conftest import DATASET_FOR_TASK

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect

READING_MS = 800  # a person looks at an item before answering (the page refuses answers under 0.5 s)
SCREENSHOTS = Path(os.environ.get("FOIL_SCREENSHOTS", "")) if os.environ.get("FOIL_SCREENSHOTS") else None


@pytest.fixture(scope="module")
def site(demo_store, tmp_path_factory):
    """One server for the module; each scenario gets its own batch and annotators."""
    folder = tmp_path_factory.mktemp("browser-annotation")
    db_file = folder / "foil.db"
    store.open_db(demo_store).conn.execute("VACUUM INTO ?", [str(db_file)])
    with streamlit_server(db_file, folder / "streamlit.log") as base, playwright_api.sync_playwright() as p:
        browser = launch(p)
        yield {"base": base, "db": db_file, "browser": browser}
        browser.close()


def new_batch(site, names: tuple[str, ...], task="validate_negative", overlap=1, n=8, **options) -> dict[str, str]:
    """A batch for these annotators; returns name -> link."""
    db = store.open_db(site["db"])
    spec = batches.BatchSpec(
        DATASET_FOR_TASK[task], task, names, overlap, n, seed=len(names[0]), name=f"{names[0]}-batch", **options
    )
    created = batches.create_batch(db, spec)
    return {a["name"]: f"{site['base']}/?token={a['token']}" for a in created["annotators"]}


def open_queue(context, link: str, name: str):
    """Open a link, read the instructions, press Start; return the page showing the first item."""
    page = context.new_page()
    page.goto(link)
    expect(page.get_by_text(f"Welcome, {name}")).to_be_visible(timeout=PAGE_WAIT_MS)
    start_queue(page, expect)
    expect(page.get_by_text(re.compile(r"^0 of \d+ done$"))).to_be_visible(timeout=PAGE_WAIT_MS)
    wait_idle(page, expect)
    return page


def shown_negative(page) -> str:
    """The altered caption on screen now."""
    return page.get_by_text(re.compile(r"^altered caption: ")).inner_text().removeprefix("altered caption: ")


def stored(site, name: str) -> list[tuple[str, str]]:
    """(altered caption of the item, answer) of every label the annotator has, in order."""
    db = store.open_db(site["db"])
    me = store.annotator_by_name(db, name)["id"]
    rows = db.execute("SELECT item_id, answer FROM labels WHERE annotator_id = ? ORDER BY id", [me]).fetchall()
    items = store.items_by_id(db, [r[0] for r in rows])
    import json

    return [(items[i]["captions"][1], json.loads(a)["answer"]) for i, a in rows]


def answer_and_wait(page, key: str) -> None:
    """Look at the item, press `key`, and wait until the progress count has moved on."""
    # a rerun on a busy machine (the suite runs two workers) can hold the count away for a while
    count = page.get_by_text(re.compile(r"^\d+ of \d+ done$")).inner_text(timeout=90_000)
    done, total = map(int, re.match(r"(\d+) of (\d+) done", count).groups())
    page.wait_for_timeout(READING_MS)
    press_when_idle(page, expect, key)
    expect(page.get_by_text(re.compile(rf"^{done + 1} of \d+ done$"))).to_be_visible(timeout=PAGE_WAIT_MS)
    wait_idle(page, expect)


def notice(page) -> str:
    """The message the last answer produced (waits for it: the rerun may not have started yet)."""
    expect(page.get_by_test_id("stAlert").first).to_be_visible(timeout=PAGE_WAIT_MS)
    wait_idle(page, expect)
    return " ".join(page.get_by_test_id("stAlert").all_inner_texts())


def test_a_double_key_press_stores_one_answer_on_the_item_shown(site):
    links = new_batch(site, ("dora",))
    context = site["browser"].new_context()
    page = open_queue(context, links["dora"], "dora")
    first = shown_negative(page)
    page.wait_for_timeout(READING_MS)
    focus_page(page)
    page.keyboard.press("1")
    page.wait_for_timeout(80)
    page.keyboard.press("1")
    expect(page.get_by_text("1 of 8 done")).to_be_visible(timeout=PAGE_WAIT_MS)
    wait_idle(page, expect)
    second = shown_negative(page)
    assert second != first
    assert stored(site, "dora") == [(first, "negative_false")]  # nothing on the second item
    # the second press met the first item already answered, or the next one not yet (wholly) on screen
    assert re.search(r"Saved|already answered|too briefly|had not finished appearing", notice(page))
    page.wait_for_timeout(READING_MS)
    press_when_idle(page, expect, "2")
    expect(page.get_by_text("2 of 8 done")).to_be_visible(timeout=PAGE_WAIT_MS)
    assert stored(site, "dora") == [(first, "negative_false"), (second, "negative_true")]
    context.close()


def test_a_key_held_down_stores_one_answer(site):
    links = new_batch(site, ("hal",))
    context = site["browser"].new_context()
    page = open_queue(context, links["hal"], "hal")
    first = shown_negative(page)
    page.wait_for_timeout(READING_MS)
    focus_page(page)
    for _ in range(12):  # the keyboard's auto-repeat: keydown after keydown, ~35 ms apart
        page.keyboard.down("3")
        page.wait_for_timeout(35)
    page.keyboard.up("3")
    expect(page.get_by_text("1 of 8 done")).to_be_visible(timeout=PAGE_WAIT_MS)
    page.wait_for_timeout(500)
    wait_idle(page, expect)
    assert stored(site, "hal") == [(first, "unsure")]
    context.close()


def test_two_tabs_on_one_link_never_answer_an_item_the_tab_did_not_show(site):
    links = new_batch(site, ("tess",))
    context = site["browser"].new_context()
    tab_a = open_queue(context, links["tess"], "tess")
    tab_b = context.new_page()
    tab_b.goto(links["tess"])
    expect(tab_b.get_by_text(re.compile(r"^altered caption: "))).to_be_visible(timeout=PAGE_WAIT_MS)
    shown = shown_negative(tab_a)
    assert shown_negative(tab_b) == shown
    tab_b.wait_for_timeout(READING_MS)
    press_when_idle(tab_b, expect, "3")
    expect(tab_b.get_by_text("1 of 8 done")).to_be_visible(timeout=PAGE_WAIT_MS)
    press_when_idle(tab_a, expect, "1")  # tab A still shows the item tab B answered
    expect(tab_a.get_by_text("1 of 8 done")).to_be_visible(timeout=PAGE_WAIT_MS)
    assert "already answered" in notice(tab_a)
    assert stored(site, "tess") == [(shown, "unsure")]
    context.close()


def test_a_reload_mid_item_resumes_it_and_times_it_from_the_first_draw(site):
    links = new_batch(site, ("ray",))
    context = site["browser"].new_context()
    page = open_queue(context, links["ray"], "ray")
    shown = shown_negative(page)
    page.wait_for_timeout(READING_MS)
    page.reload()
    expect(page.get_by_text(re.compile(r"^altered caption: "))).to_be_visible(timeout=PAGE_WAIT_MS)
    assert shown_negative(page) == shown  # no instructions again, the same item
    press_when_idle(page, expect, "2")
    counted = page.get_by_text("1 of 8 done")
    try:
        expect(counted).to_be_visible(timeout=PAGE_WAIT_MS)
    except AssertionError:
        # In one CI run (stop 51) the key pressed just after the reload never became a
        # press: nothing stored, no notice. A person presses again; a lost press must store nothing.
        assert stored(site, "ray") == []
        press_when_idle(page, expect, "2")
        expect(counted).to_be_visible(timeout=PAGE_WAIT_MS)
    assert stored(site, "ray") == [(shown, "negative_true")]
    db = store.open_db(site["db"])
    seconds = db.execute(
        "SELECT seconds FROM labels WHERE annotator_id = ?", [store.annotator_by_name(db, "ray")["id"]]
    ).fetchone()[0]
    assert seconds >= READING_MS / 1000


def test_after_a_walk_away_past_the_lease_the_stale_tab_stores_nothing_and_says_why(site):
    # a 20-second lease: zoe's own items have it too, and on a machine running the suite beside the
    # browser her first item waited out wes's stale press first: a 2-second lease failed there twice
    links = new_batch(site, ("wes", "zoe"), n=8, lease_minutes=20 / 60)
    wes_context, zoe_context = site["browser"].new_context(), site["browser"].new_context()
    wes = open_queue(wes_context, links["wes"], "wes")
    held = shown_negative(wes)
    wes.wait_for_timeout(21_000)  # wes walks away past the 20-second lease
    zoe = open_queue(zoe_context, links["zoe"], "zoe")  # zoe's page frees wes's item and zoe gets it
    db = store.open_db(site["db"])
    holders = {
        store.items_by_id(db, [a["item_id"]])[a["item_id"]]["captions"][1]: a["annotator"]
        for a in store.batch_assignments(db, store.get_batch(db, "wes-batch")["id"])
    }
    assert holders[held] == "zoe"
    press_when_idle(wes, expect, "1")  # wes comes back to the stale tab and answers
    assert "not in your queue" in notice(wes)
    assert stored(site, "wes") == []
    while shown_negative(zoe) != held:  # zoe answers her queue until the item she took over
        answer_and_wait(zoe, "2")
    answer_and_wait(zoe, "3")
    assert (held, "unsure") in stored(site, "zoe")
    press_when_idle(wes, expect, "1")  # a second press on the now-answered, reassigned item: still nothing
    assert (held, "negative_false") not in stored(site, "wes")
    assert all(caption != held for caption, _ in stored(site, "wes"))
    wes_context.close()
    zoe_context.close()


@pytest.mark.parametrize("task", TASK_TYPES)
def test_each_task_fits_one_screen_with_answers_visible(site, task):
    name = f"shot{TASK_TYPES.index(task)}"
    links = new_batch(site, (name,), task=task, n=4)
    for width, height in ((1280, 720), (1400, 1000)):
        context = site["browser"].new_context(viewport={"width": width, "height": height})
        page = context.new_page()
        page.goto(links[name])
        expect(page.get_by_text(f"Welcome, {name}")).to_be_visible(timeout=PAGE_WAIT_MS)
        start_queue(page, expect)
        answers = page.locator("[class*='st-key-option'] button, [data-testid='stBaseButton-primaryFormSubmit']")
        expect(answers.first).to_be_visible(timeout=PAGE_WAIT_MS)
        expect(page.locator(".stimulus")).to_be_visible(timeout=PAGE_WAIT_MS)  # the whole item is on screen
        wait_idle(page, expect)
        page.wait_for_timeout(300)  # the layout settles
        if SCREENSHOTS:
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / f"annotate-{task}-{width}x{height}.png"))
        boxes = [answers.nth(i).bounding_box() for i in range(answers.count())]
        assert boxes and all(b["y"] >= 0 and b["y"] + b["height"] <= height for b in boxes), (task, width, boxes)
        for image in page.locator(".stimulus img").all():  # the item's images (views/stimulus.py)
            box = image.bounding_box()
            assert box["y"] + box["height"] <= height, (task, width, "image below the fold")
        context.close()


def labels_of(site, name: str) -> list[dict]:
    """Every label the annotator has (answer, comment, displayed order), in order."""
    import json

    db = store.open_db(site["db"])
    me = store.annotator_by_name(db, name)["id"]
    rows = db.execute(
        "SELECT answer, comment, displayed_order FROM labels WHERE annotator_id = ? ORDER BY id", [me]
    ).fetchall()
    return [{"answer": json.loads(a), "comment": c, "order": json.loads(o)} for a, c, o in rows]


def test_a_digit_typed_after_a_comment_answers_and_keeps_the_comment(site):
    links = new_batch(site, ("cora",))
    context = site["browser"].new_context()
    page = open_queue(context, links["cora"], "cora")
    page.wait_for_timeout(READING_MS)
    field = page.get_by_role("textbox", name="Comment (optional)")
    field.click()
    field.type("blurry image")
    page.keyboard.press("Enter")  # ends the comment
    wait_idle(page, expect)
    page.wait_for_timeout(200)  # a person's next key press
    page.keyboard.press("1")  # no click in between: the key must answer, not extend the comment
    expect(page.get_by_text("1 of 8 done")).to_be_visible(timeout=PAGE_WAIT_MS)
    assert [(label["answer"]["answer"], label["comment"]) for label in labels_of(site, "cora")] == [
        ("negative_false", "blurry image")
    ]
    context.close()


def test_rank_questions_have_keys_one_question_after_another(site):
    links = new_batch(site, ("rhea",), task="rank_captions")
    context = site["browser"].new_context()
    page = open_queue(context, links["rhea"], "rhea")
    page.wait_for_timeout(READING_MS)
    for key in ("1", "3", "2"):  # rank of caption (1), (2), (3) as shown
        press_when_idle(page, expect, key) if key == "1" else page.keyboard.press(key)
    page.keyboard.press("Control+Enter")
    expect(page.get_by_text("1 of 8 done")).to_be_visible(timeout=PAGE_WAIT_MS)
    [label] = labels_of(site, "rhea")
    shown_ranks = {f"rank_{caption}": rank for caption, rank in zip(label["order"], ("1", "3", "2"))}
    assert label["answer"] == shown_ranks  # each key went to its question, in the order shown
    context.close()


def test_enter_presses_start_after_a_batch_is_chosen_from_the_list(site):
    new_batch(site, ("ivo",), n=3)
    db = store.open_db(site["db"])
    second = batches.create_batch(
        db,
        batches.BatchSpec(
            DATASET_FOR_TASK["validate_negative"], "validate_negative", ("ivo",), 1, 4, seed=9, name="ivo-second"
        ),
    )
    link = f"{site['base']}/?token={second['annotators'][0]['token']}"
    context = site["browser"].new_context()
    page = context.new_page()
    page.goto(link)
    expect(page.get_by_text("Welcome, ivo")).to_be_visible(timeout=PAGE_WAIT_MS)
    wait_idle(page, expect)
    page.get_by_test_id("stSelectbox").first.click()
    page.get_by_role("option", name=re.compile(r"^Batch 2: validate negative$")).click()
    expect(page.get_by_role("button", name=re.compile(r"^Start"))).to_be_visible(timeout=PAGE_WAIT_MS)
    wait_idle(page, expect)
    page.wait_for_timeout(300)
    page.keyboard.press("Enter")
    expect(page.get_by_text("0 of 4 done", exact=True)).to_be_visible(timeout=PAGE_WAIT_MS)  # Start was pressed
    seen = page.inner_text("body")
    assert "ivo-batch" not in seen and "ivo-second" not in seen  # no internal batch names on screen
    context.close()


def test_ticking_consent_by_keyboard_keeps_the_focus_and_enter_goes_on(site):
    """A participant on the consent box presses Space, Tab, Enter at once: the tick reruns nothing
    (a form), so Continue is already enabled and next in the tab order, and Enter continues. (With
    the box outside a form, the tick reran the page and Continue was still disabled when Tab came:
    the focus fell elsewhere and Enter did nothing.)"""
    db = store.open_db(site["db"])
    spec = batches.BatchSpec(
        DATASET_FOR_TASK["validate_negative"], "validate_negative", (), 1, 4, name="consent-study", crowd_items=2
    )
    study = batches.create_batch(db, spec)["crowd_url"]
    participant = f"{77:024x}"
    page = site["browser"].new_context(viewport={"width": 1280, "height": 720}).new_page()
    page.goto(f"{site['base']}/{study.lstrip('/')}&PROLIFIC_PID={participant}&STUDY_ID=s&SESSION_ID=x")
    box = page.get_by_role("checkbox", name="I agree to take part")
    expect(box).to_be_visible(timeout=PAGE_WAIT_MS)
    wait_idle(page, expect)
    box.focus()
    page.keyboard.press("Space")  # then at once Tab and Enter, as a person does, before any rerun could land
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    expect(page.get_by_text("Instructions")).to_be_visible(timeout=PAGE_WAIT_MS)
    joined = store.crowd_joins(db, store.get_batch(db, "consent-study")["id"])
    assert len(joined) == 1
    page.context.close()


def choose_new_batch(page, number: int) -> None:
    """Pick "Batch N", not yet started, in My queue's menu as a person does with the mouse, and
    press Start on its instructions. The instructions are waited for: the script may not have begun
    its rerun when the click returns, and the last batch's item is on screen until it does."""
    wait_idle(page, expect)
    page.get_by_test_id("stSelectbox").first.click()
    page.get_by_role("option", name=re.compile(rf"^Batch {number}: ")).click()
    expect(page.get_by_role("button", name=re.compile(r"^Start"))).to_be_visible(timeout=PAGE_WAIT_MS)
    start_queue(page, expect)
    # exact: the menu's caption also says "0 of 3 done" for every batch not started
    expect(page.get_by_text(re.compile(r"^0 of \d+ done$"))).to_be_visible(timeout=PAGE_WAIT_MS)
    wait_idle(page, expect)


def test_answers_stay_in_the_batch_chosen_among_three_of_different_tasks(site):
    """One annotator with three batches (validate_negative, pick_image, ambiguity) answers in
    Batch 2 and 3 by key. The menu's label once held the done count, so each answer changed it and
    the page fell back to Batch 1: the next `2`, meant as image B, was stored as "Altered is also
    true" on a validate_negative item. Every label must be in the batch the person chose, with
    that task's own answer keys, and "Saved." must not follow them to another batch."""
    db = store.open_db(site["db"])
    names = {}
    for number, task in enumerate(("validate_negative", "pick_image", "ambiguity"), start=1):
        spec = batches.BatchSpec(DATASET_FOR_TASK[task], task, ("vera",), 1, 3, seed=number, name=f"vera-{task}")
        names[number] = spec.name
        created = batches.create_batch(db, spec)
    link = f"{site['base']}/?token={created['annotators'][0]['token']}"
    page = site["browser"].new_context(viewport={"width": 1280, "height": 720}).new_page()
    page.goto(link)
    expect(page.get_by_text("Welcome, vera")).to_be_visible(timeout=PAGE_WAIT_MS)
    choose_new_batch(page, 2)
    answer_and_wait(page, "2")  # image B
    expect(page.get_by_role("combobox", name="Batch")).to_have_value("Batch 2: pick image")
    answer_and_wait(page, "2")  # still image B, on Batch 2's second item
    choose_new_batch(page, 3)  # the rerun's stale elements gone: Batch 2's notice stays with Batch 2
    expect(page.get_by_text("Saved.", exact=True)).to_have_count(0)
    answer_and_wait(page, "3")  # Both
    expect(page.get_by_role("combobox", name="Batch")).to_have_value("Batch 3: ambiguity")
    answer_and_wait(page, "1")  # Left

    me = store.annotator_by_name(db, "vera")["id"]
    rows = db.execute(
        "SELECT b.name, l.answer FROM labels l JOIN batches b ON b.id = l.batch_id"
        " WHERE l.annotator_id = ? ORDER BY l.id",
        [me],
    ).fetchall()
    import json

    shown_b = [json.loads(answer)["answer"] for name, answer in rows if name == names[2]]
    assert [name for name, _ in rows] == [names[2], names[2], names[3], names[3]]
    both, left = (json.loads(answer) for name, answer in rows if name == names[3])
    assert both["answer"] == "both" and left["answer"] in ("original", "generated")  # Left: whichever image was left
    assert all(value.isdigit() for value in shown_b)  # a candidate picked, never "negative_true"
    page.context.close()
