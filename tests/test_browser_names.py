"""Names from outside stay text on every admin page and in every chart, in a real browser.

A store whose dataset, categories, run, batch and annotators are named with markdown, HTML and
links: no page may turn them into links, bold or coloured text, and each shows the literal name.
"""

from __future__ import annotations

import json
import random
import time

import pytest

from foil_studio.annotate import batches, health, simulation
from foil_studio.data import store
from foil_studio.data.loading import import_path
from foil_studio.views.registry import pages_for
from foil_studio.views.text import WORD_JOINER
from tests.browser_support import ADMIN_TOKEN, PAGE_WAIT_MS, launch, streamlit_server, wait_idle

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect

DATASET = "[ds](http://evil.example/d) <b>EVILBOLD</b>"
CATEGORY = ":red[cat] _EVILEM_ www.evil.example"
RUN = "**run** <a href='http://evil.example/r'>EVILLINK</a>"
BATCH = "[batch](http://evil.example/x) *EVILSTAR*"
ANNOTATORS = ('<a href="http://evil.example/a">ann</a>', "[ben](http://evil.example/b)", ":material/home: cleo")
PAGES = tuple(page.url_path for page in pages_for("admin"))
MARKERS = ("EVILBOLD", "EVILLINK", "EVILEM", "EVILSTAR", "evil.example")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    folder = tmp_path_factory.mktemp("names")
    source = folder / "evil.jsonl"
    rng = random.Random(1)
    with source.open("w") as handle:
        for n in range(40):
            colour, other = rng.sample(["red", "blue", "green", "yellow"], 2)
            record = {
                "kind": "pair",
                "category": CATEGORY if n % 2 else "plain",
                "id": str(n),
                "captions": [f"a {colour} cup number {n}", f"a {other} cup number {n}"],
                "images": [],
                "truth": {"negative": "false"},
            }
            handle.write(json.dumps(record) + "\n")
    db_file = folder / "foil.db"
    db = store.open_db(db_file)
    import_path(db, "jsonl", source, name=DATASET)
    dataset = store.get_dataset(db, DATASET)
    with store.transaction(db):
        run_id = store.ensure_run(db, dataset["id"], RUN, run_type="scores", model="hand-made")
        store.put_scores(
            db,
            run_id,
            [(item["id"], [rng.random(), rng.random()]) for item in store.list_items(db, dataset["id"], limit=100)],
        )
    created = batches.create_batch(
        db, batches.BatchSpec(DATASET, "validate_negative", ANNOTATORS, 2, 30, name=BATCH, min_seconds=0)
    )
    simulation.simulate(db, created["batch"], accuracies=0.7, seed=1)
    plan = health.plan_sample(db, DATASET, per_category=10)
    health.create_sample_batch(db, plan, ANNOTATORS, overlap=2, name="health-of-evil")
    simulation.simulate(db, "health-of-evil", accuracies=0.9, seed=2)
    db.conn.close()
    with streamlit_server(db_file, folder / "streamlit.log") as base, playwright_api.sync_playwright() as p:
        browser = launch(p)
        yield {"base": base, "browser": browser}
        browser.close()


LINKS_TO_EVIL = """() => [...document.querySelectorAll('*')].filter(e => [...e.attributes].some(
    a => a.name.endsWith('href') && a.value.includes('evil.example'))).length"""
MARKUP_AROUND_MARKERS = """(markers) => [...document.querySelectorAll('a, b, strong, em, i, span[style*="color"], h1 a')]
    .filter(e => markers.some(m => e.textContent.includes(m))).map(e => e.outerHTML.slice(0, 120))"""  # noqa: E501


def shown_text(page) -> str:
    """The page's text as a reader sees it: its word joiners (invisible, kept out of links) removed."""
    return page.evaluate("() => document.body.textContent").replace(WORD_JOINER, "")


@pytest.mark.parametrize("page_name", PAGES)
def test_names_with_markup_show_as_literal_text(site, page_name):
    context = site["browser"].new_context(viewport={"width": 1400, "height": 1600})
    page = context.new_page()
    page.goto(f"{site['base']}/{page_name}?token={ADMIN_TOKEN}")
    expect(page.get_by_role("heading", level=1)).to_be_visible(timeout=PAGE_WAIT_MS)
    wait_idle(page, expect)
    # what each page names (a page missing here names none of them); the batch name shows only in
    # tables (canvas), and a select box's chosen value is not text of the page
    expected = {
        "datasets": [DATASET, CATEGORY],
        "model_scores": [RUN, CATEGORY],
        "inspect_runs": [RUN],
        "batches": list(ANNOTATORS),
        "hackability": [DATASET],
        "health": [DATASET, CATEGORY, RUN],
    }.get(page_name, [])
    # plotly draws its SVG after the script run ends, later still on a busy machine: wait until every
    # name the page shows is there (a chart's axis labels among them), then until the SVG stops growing
    deadline = time.monotonic() + PAGE_WAIT_MS / 1000
    while not all(name in shown_text(page) for name in expected) and time.monotonic() < deadline:
        page.wait_for_timeout(300)
    settled = page.locator("svg text").count()
    for _ in range(20):
        page.wait_for_timeout(300)
        settled, before = page.locator("svg text").count(), settled
        if settled == before and settled > 0:
            break
    assert not page.get_by_test_id("stException").count()
    assert page.evaluate(LINKS_TO_EVIL) == 0
    assert page.evaluate(MARKUP_AROUND_MARKERS, list(MARKERS)) == []
    shown = shown_text(page)
    for name in expected:
        assert name in shown, (page_name, name)
    context.close()
