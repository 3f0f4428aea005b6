"""End to end in a real browser: an annotator labels pick_image items with the keyboard only.

Debian's Chromium driven by Playwright (never a downloaded browser); the app runs as a real
Streamlit server on a free local port.
"""

from __future__ import annotations

import re

import pytest

from foil_studio.annotate import batch_reports, batches
from foil_studio.data import store
from foil_studio.views.registry import PAGES, pages_for
from tests.browser_support import ADMIN_TOKEN, PAGE_WAIT_MS, launch, press_when_idle, streamlit_server, wait_idle

playwright_api = pytest.importorskip("playwright.sync_api")
ADMIN = pages_for("admin")  # every admin page (`views/registry.py`)


@pytest.fixture
def server(demo_store, tmp_path):
    """A Streamlit server on a copy of the demo store, with a pick_image batch for ada."""
    db_file = tmp_path / "browser.db"
    store.open_db(demo_store).conn.execute("VACUUM INTO ?", [str(db_file)])
    db = store.open_db(db_file)
    spec = batches.BatchSpec(
        "demo-bivlc-candidates", "pick_image", ("ada", "ben", "cleo"), 2, 12, gold_share=0.25, seed=2, min_seconds=0
    )
    created = batches.create_batch(db, spec)
    with streamlit_server(db_file, tmp_path / "streamlit.log") as base:
        yield {
            "base": base,
            "db": db_file,
            "batch": created["batch"],
            "tokens": {a["name"]: a["token"] for a in created["annotators"]},
            "assigned": {a["name"]: a["n_assigned"] for a in created["annotators"]},
        }


def label_by_keyboard(page, url: str, name: str, n_assigned: int, keys: list[str]) -> None:
    """Open an annotator's link, start, and answer len(keys) items with the given keys."""
    expect = playwright_api.expect
    page.goto(url)
    expect(page.get_by_text(f"Welcome, {name}")).to_be_visible(timeout=PAGE_WAIT_MS)
    expect(page.get_by_text("Read the description")).to_be_visible()
    press_when_idle(page, expect, "Enter")  # "Start"
    try:
        expect(page.get_by_text(f"0 of {n_assigned} done")).to_be_visible(timeout=PAGE_WAIT_MS)
    except AssertionError:  # the Enter came while the page redrew (a loaded machine): press it again
        wait_idle(page, expect)
        if page.get_by_role("button", name=re.compile("^Start")).is_visible():
            press_when_idle(page, expect, "Enter")
    for done, key in enumerate(keys):
        expect(page.get_by_text(f"{done} of {n_assigned} done")).to_be_visible(timeout=PAGE_WAIT_MS)
        press_when_idle(page, expect, key)
        moved_on = page.get_by_text(f"{done + 1} of {n_assigned} done")
        try:
            expect(moved_on).to_be_visible(timeout=PAGE_WAIT_MS)
        except AssertionError:
            # on a loaded machine a key pressed while the page redraws can reach no button: nothing
            # ran, the same item is on screen, and a person presses again
            wait_idle(page, expect)
            if page.get_by_text(f"{done} of {n_assigned} done").is_visible():
                press_when_idle(page, expect, key)
    expect(page.get_by_text(f"{len(keys)} of {n_assigned} done")).to_be_visible(timeout=PAGE_WAIT_MS)


def test_three_annotators_label_by_keyboard_in_three_browser_sessions(server):
    plan = {"ada": ["1", "0", "1", "0", "1"], "ben": ["2", "1", "0"], "cleo": ["1", "1", "1"]}
    with playwright_api.sync_playwright() as p:
        browser = launch(p)
        for name, keys in plan.items():  # one isolated session (cookies, storage) per annotator
            context = browser.new_context()
            label_by_keyboard(
                context.new_page(),
                f"{server['base']}/?token={server['tokens'][name]}",
                name,
                server["assigned"][name],
                keys,
            )
            context.close()
        browser.close()
    db = store.open_db(server["db"])
    labels = store.batch_labels(db, store.get_batch(db, server["batch"])["id"])
    by_annotator = {name: [label for label in labels if label["annotator"] == name] for name in plan}
    assert {name: len(rows) for name, rows in by_annotator.items()} == {"ada": 5, "ben": 3, "cleo": 3}
    assert [label["answer"]["answer"] == "none" for label in by_annotator["ada"]] == [False, True, False, True, False]
    assert all(label["seconds"] is not None and len(label["displayed_order"]) == 4 for label in labels)
    progress = {row["annotator"]: row for row in batch_reports.batch_progress(db, server["batch"])}
    assert progress["ada"]["done"] == 5 and progress["ada"]["remaining"] == server["assigned"]["ada"] - 5


def test_admin_pages_refuse_direct_links_from_the_first_visitor_on(server):
    """Typed URLs of admin pages give an annotator their queue and a stranger (or a wrong token) the sign-in page,
    starting with the very first request the server sees (a `pages/` folder once broke this)."""
    expect = playwright_api.expect
    with playwright_api.sync_playwright() as p:
        browser = launch(p)
        for path in (admin.url_path for admin in ADMIN):
            for token, landing in (
                (server["tokens"]["ada"], "Welcome, ada"),
                ("", "Foil Studio"),
                ("not-a-token", "Foil Studio"),
            ):
                context = browser.new_context()
                page = context.new_page()
                page.goto(f"{server['base']}/{path}?token={token}")
                expect(page.get_by_role("heading", level=1)).to_contain_text(landing, timeout=PAGE_WAIT_MS)
                headings = page.get_by_role("heading", level=1).all_inner_texts()
                assert not any(h in (admin.title for admin in ADMIN) for h in headings), (path, headings)
                assert "Create batch" not in page.inner_text("body")
                context.close()
        browser.close()


def box_of(locator, expect) -> dict:
    """The element's box once it stays attached (a redraw can replace it between two calls)."""
    for _ in range(20):
        expect(locator).to_be_visible(timeout=PAGE_WAIT_MS)
        box = locator.bounding_box()
        if box is not None:
            return box
    raise AssertionError(f"{locator} kept being redrawn")


def facet_area(chart, title_box: dict) -> dict:
    """The plot area (plotly's drag rectangle) of the facet whose title box is given: the one
    right below the title, spanning its centre."""
    centre = title_box["x"] + title_box["width"] / 2
    below = [
        b
        for b in (r.bounding_box() for r in chart.locator(".draglayer .nsewdrag").all())
        if b and b["x"] <= centre <= b["x"] + b["width"] and b["y"] >= title_box["y"]
    ]
    return min(below, key=lambda b: b["y"])


def test_a_box_drawn_on_one_histogram_facet_lists_that_categorys_items(server):
    """Plotly's box selection reaches the page (AppTest cannot draw one): the listing narrows to
    the gap range and the category of the facet the box was drawn on."""
    import re

    from foil_studio.analysis import inspection
    from foil_studio.analysis.models import demo_model_spec, load_model
    from foil_studio.analysis.scoring import score_dataset

    db = store.open_db(server["db"])
    score_dataset(db, "demo-sugarcrepe", load_model(demo_model_spec(), device="cpu"), run="demo-clip")
    table = inspection.item_table(db, "demo-sugarcrepe", "demo-clip")
    expect = playwright_api.expect
    with playwright_api.sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1400, "height": 1800})
        page.goto(f"{server['base']}/inspect_runs?token={ADMIN_TOKEN}")
        chart = page.locator(".js-plotly-plot").first
        title = chart.locator(".annotation-text", has_text="add_att:")
        expect(title).to_be_visible(timeout=PAGE_WAIT_MS)  # plotly has laid out the facets
        wait_idle(page, expect)  # the page's run has finished: the chart is not redrawn under the mouse
        area = facet_area(chart, box_of(title, expect))
        start = (area["x"] + area["width"] * 0.05, area["y"] + area["height"] * 0.05)
        end = (area["x"] + area["width"] * 0.45, area["y"] + area["height"] * 0.95)
        page.mouse.move(*start)
        page.mouse.down()
        page.mouse.move(*end, steps=10)
        page.mouse.up()
        listing = page.get_by_text(re.compile(r"items of demo-clip with .* \(from the box drawn on the chart"))
        expect(listing).to_be_visible(timeout=PAGE_WAIT_MS)
        caption = listing.inner_text()
        failures = page.get_by_text(re.compile(r"^\d+ items, worst margin first in the gap range above"))
        expect(failures).to_be_visible(timeout=PAGE_WAIT_MS)  # the box drives the failure browser too
        shown_failures = int(failures.inner_text().split()[0])
        wait_idle(page, expect)  # the run drawing the cards has ended: none of the last run's cards remain
        headings = [t for t in page.locator("[data-testid=stText]").all_inner_texts() if t.startswith("#")]
        thumbs = [float(v) for v in page.get_by_role("slider").evaluate_all("s => s.map(t => t.value)")]
        failures_category = page.get_by_role("combobox", name="Category").input_value()
        browser.close()
    shown, low, high, category = re.match(
        r"(\d+) items of demo-clip with .* in \[(\S+), (\S+)\] in (\w+)", caption
    ).groups()
    assert category == "add_att"
    in_facet = table[
        (table["category"] == "add_att") & table["s(c) - s(c_n)"].between(float(low) - 5e-4, float(high) + 5e-4)
    ]
    assert (
        0 < int(shown) <= (table["category"] == "add_att").sum() and abs(int(shown) - len(in_facet)) <= 1
    )  # caption rounds to 3 decimals
    assert abs(shown_failures - int((~in_facet["correct"]).sum())) <= 1, (shown_failures, caption)
    assert all(" add_att " in h for h in headings), headings
    # one range on screen: the slider's thumbs moved to the box, the failures' Category to its facet
    assert abs(thumbs[0] - float(low)) < 5e-3 and abs(thumbs[1] - float(high)) < 5e-3, (thumbs, low, high)
    assert "add_att" in failures_category, failures_category


def test_links_carry_the_port_and_host_the_admin_opened_the_app_at(server, monkeypatch):
    """Served on a free port (not 8501): the address field next to Create batch, and so every
    link, starts with the address in the admin's browser."""
    monkeypatch.delenv("FOIL_BASE_URL", raising=False)
    expect = playwright_api.expect
    with playwright_api.sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{server['base']}/batches?token={ADMIN_TOKEN}")
        field = page.get_by_label("App address the links start with", exact=True)
        expect(field).to_have_value(server["base"], timeout=PAGE_WAIT_MS)
        assert ":8501" not in server["base"]
        browser.close()


def test_the_health_pages_tables_fit_a_page_1280_px_wide(server):
    """Issue 55: at 1280 px the strata table was wider than the page, the dataset's own figures cut
    off. No table of the Benchmark health page scrolls sideways there (glide draws on a canvas: its
    scroller's width is the tables' laid-out width)."""
    from foil_studio.annotate import health
    from foil_studio.annotate.simulation import simulate

    db = store.open_db(server["db"])
    health.create_sample_batch(
        db, health.plan_sample(db, "demo-sugarcrepe", 35), ("ada", "ben", "cleo"), overlap=3, name="health-1"
    )
    simulate(db, "health-1", accuracies=0.9, seed=0)
    expect = playwright_api.expect
    with playwright_api.sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(f"{server['base']}/health?token={ADMIN_TOKEN}")
        tables = page.get_by_test_id("stDataFrame")
        expect(tables.first.locator(".dvn-scroller")).to_be_attached(timeout=PAGE_WAIT_MS)
        wait_idle(page, expect)
        for i in range(tables.count()):  # each table laid out once its grid is drawn
            expect(tables.nth(i).locator(".dvn-scroller")).to_be_attached(timeout=PAGE_WAIT_MS)
        widths = [
            tables.nth(i).evaluate(
                "t => { const s = t.querySelector('.dvn-scroller'); return [s.scrollWidth, s.clientWidth] }"
            )
            for i in range(tables.count())
        ]
        browser.close()
    assert len(widths) >= 2 and all(laid_out <= shown for laid_out, shown in widths), widths


def test_each_roles_landing_page_opens_at_its_own_address_too(server):
    """Issue 55: `/datasets?token=...` showed a "Page not found" dialog over the Datasets page, which
    Streamlit serves at `/` only. Each role's landing page answers at its own address as well."""
    expect = playwright_api.expect
    landings = {page.role: page for page in PAGES if page.default}
    tokens = {"admin": ADMIN_TOKEN, "annotator": server["tokens"]["ada"], "anonymous": ""}
    headings = {"admin": "Datasets", "annotator": "Welcome, ada", "anonymous": "Foil Studio"}
    with playwright_api.sync_playwright() as p:
        browser = launch(p)
        for role, landing in landings.items():
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            for address in (f"/{landing.url_path}", "/"):
                page.goto(f"{server['base']}{address}?token={tokens[role]}")
                expect(page.get_by_role("heading", level=1).first).to_be_visible(timeout=PAGE_WAIT_MS)
                wait_idle(page, expect)
                assert page.get_by_text("Page not found").count() == 0, (role, address)
                heading = page.get_by_role("heading", level=1).first.inner_text()
                assert heading == headings[role], (role, address, heading)
            page.close()
        browser.close()
