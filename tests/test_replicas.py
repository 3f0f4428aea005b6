"""Two Streamlit servers on one PostgreSQL store, as docs/deployment.md runs them behind a proxy.

Fifty annotators, half on each server, answer a batch at once in Chromium. Every answer a page
acknowledged (its progress count moved on) is stored exactly once, and each item got exactly
the batch's overlap, with nothing from one server lost or doubled by the other.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from contextlib import ExitStack

import pytest

from foil_studio.annotate import batches
from foil_studio.data import store
from tests.browser_support import CHROMIUM, LAUNCH_ARGS, streamlit_server

async_api = pytest.importorskip("playwright.async_api")
expect = async_api.expect

ANNOTATORS, ITEMS_EACH, OVERLAP = 50, 2, 2
AT_ONCE = 8  # browser pages open together (two cores run Chromium, both servers and PostgreSQL; 12 took 219 s)
UNREAD = None  # an acknowledged answer to an item whose caption the tab had no time to read
KEYS = {"1": "negative_false", "2": "negative_true", "3": "unsure"}


@pytest.fixture
def replicas(demo_db, engine, tmp_path, monkeypatch):
    """Two servers on the demo store copied into PostgreSQL; yields their base URLs."""
    monkeypatch.setenv("FOIL_ADMIN_TOKEN", "replica-admin-token")
    location = store.location(demo_db)
    with ExitStack() as servers:
        yield demo_db, [servers.enter_context(streamlit_server(location, tmp_path / f"server-{n}.log")) for n in (1, 2)]


async def annotate(page, link: str, name: str, key: str, acknowledged: list) -> None:
    """One annotator: open the link, press Start, answer every item with `key` after reading it;
    an answer counts as acknowledged once the page's progress count moves past it."""
    await page.goto(link)
    start = page.get_by_role("button", name=re.compile(r"^Start"))
    await expect(page.get_by_text(f"Welcome, {name}")).to_be_visible(timeout=90_000)
    await expect(start.or_(page.get_by_text(re.compile(r"^\d+ of \d+ done$")))).to_be_visible(timeout=90_000)
    await _idle(page)
    if await start.is_visible():
        await start.click()
    done = 0
    while done < ITEMS_EACH:
        await expect(page.get_by_text(f"{done} of {ITEMS_EACH} done")).to_be_visible(timeout=90_000)
        await _idle(page)  # the item's caption is redrawn after the progress count
        shown = (await page.get_by_text(re.compile(r"^altered caption: ")).inner_text()).removeprefix(
            "altered caption: "
        )
        moved_on = page.get_by_text(re.compile(rf"^[{done + 1}-{ITEMS_EACH}] of {ITEMS_EACH} done$"))
        refused = page.get_by_text(re.compile(r"^Not stored\. "))
        for _ in range(
            5
        ):  # as a person does: told "too briefly" (the server, loaded, heard late that the item was shown), look again
            await page.wait_for_timeout(800)  # reading: the page refuses answers sooner than 0.5 s
            await _idle(page)
            # A refusal on screen may be the last run's while this press's run had not begun: if that
            # press was stored after all, the page has moved on and a person would not press again.
            if await moved_on.is_visible():
                break
            await page.get_by_role("heading", level=1).first.click(position={"x": 3, "y": 3})
            await page.keyboard.press(key)
            await expect(moved_on.or_(refused)).to_be_visible(timeout=90_000)
            await _idle(page)
            if await moved_on.is_visible():
                break
        await expect(moved_on).to_be_visible(timeout=90_000)
        now = int((await moved_on.inner_text()).split()[0])
        acknowledged.append((name, shown, KEYS[key]))
        # The page went on between the check above and a press again (a loaded server's run arrived
        # in that instant): that press answered the next item, on screen when it reached the server,
        # whose caption the tab never read.
        acknowledged.extend((name, UNREAD, KEYS[key]) for _ in range(now - done - 1))
        done = now


async def _idle(page) -> None:
    await expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning", timeout=90_000)


async def crowd_of_annotators(links: dict[str, str], keys: dict[str, str]) -> list[tuple[str, str, str]]:
    """Every annotator's session, `AT_ONCE` at a time; a browser tab goes on to the next
    annotator's link when one finishes (a new Streamlit session, the app's code already cached)."""
    acknowledged: list[tuple[str, str, str]] = []
    waiting = list(links.items())

    async def tab(browser) -> None:
        context = await browser.new_context(viewport={"width": 1280, "height": 720})
        # tabs open pages at once on two cores beside both servers and PostgreSQL: a page's
        # load event has come after Playwright's default 30 s there (CI, stop 58)
        context.set_default_navigation_timeout(120_000)
        page = await context.new_page()
        while waiting:
            name, link = waiting.pop()
            await annotate(page, link, name, keys[name], acknowledged)

    async with async_api.async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=LAUNCH_ARGS)
        await asyncio.gather(*(tab(browser) for _ in range(AT_ONCE)))
        await browser.close()
    return acknowledged


@pytest.mark.parametrize("engine", ["postgresql"])
def test_fifty_annotators_on_two_servers_store_every_acknowledged_answer_once(replicas):
    db, servers = replicas
    names = tuple(f"r{n:02d}" for n in range(ANNOTATORS))
    created = batches.create_batch(
        db,
        batches.BatchSpec(
            "demo-sugarcrepe",
            "validate_negative",
            names,
            OVERLAP,
            ANNOTATORS * ITEMS_EACH // OVERLAP,
            seed=16,
            name="replicas",
        ),
    )
    # half the annotators reach one server, half the other (the proxy's sticky sessions)
    links = {a["name"]: f"{servers[n % 2]}/?token={a['token']}" for n, a in enumerate(created["annotators"])}
    keys = {name: "123"[n % 3] for n, name in enumerate(names)}

    acknowledged = asyncio.run(crowd_of_annotators(links, keys))

    assert len(acknowledged) == ANNOTATORS * ITEMS_EACH
    batch_id = store.get_batch(db, "replicas")["id"]
    labels = store.batch_labels(db, batch_id)
    items = store.items_by_id(db, [label["item"] for label in labels])
    stored = Counter(
        (label["annotator"], items[label["item"]]["captions"][1], label["answer"]["answer"]) for label in labels
    )
    read = Counter(entry for entry in acknowledged if entry[1] is not UNREAD)
    assert read <= stored  # every acknowledged answer, on the item shown, once
    unread = Counter((name, answer) for name, caption, answer in acknowledged if caption is UNREAD)
    assert Counter((name, answer) for name, _, answer in (stored - read).elements()) == unread  # nothing else
    assert set(Counter(label["item"] for label in labels).values()) == {OVERLAP}  # exact overlap
    assert [a["done"] for a in store.batch_assignments(db, batch_id)] == [1] * len(labels)
