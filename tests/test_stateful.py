"""What admins and annotators do, composed by Hypothesis (a stateful test), with the invariants
checked after every step: labels land where the acting person chose, every page renders for its
role, no output says nan / None / inf, and the page, the CLI and the API count alike.

The rules are the admin's (create a batch of any task on any demo dataset, with or without gold
and a category; simulate; reissue a link; draw a health sample and the next batch; score and
delete a run; export) and the annotators' (several of them, each choosing among their batches on
My queue and answering through the page itself, AppTest). `make stateful` runs many more
examples than the suite; TESTING.md records what it explored and found.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from streamlit.testing.v1 import AppTest

from foil_studio import api, cli
from foil_studio.analysis.models import demo_model_spec, load_model
from foil_studio.analysis.scoring import score_dataset
from foil_studio.annotate import batches, health, queues, simulation
from foil_studio.annotate.task_types import TASK_TYPES
from foil_studio.data import store
from foil_studio.views.registry import PAGES
from tests.conftest import APP_SCRIPT

ADMIN_TOKEN = "stateful-admin-token"
PEOPLE = ("ann1", "ann2", "ann3")
DATASETS = ("demo-sugarcrepe", "demo-hard-positives", "demo-bivlc", "demo-bivlc-candidates", "demo-crepe")
ADMIN_PAGES = tuple(page for page in PAGES if page.role == "admin")
# Words that say a figure went missing on its way out, as whole words; pick_image's answer
# "None" is written in quotes wherever a text names it (and buttons are not read).
UNDEFINED = re.compile(r'(?<!")\b(nan|NaN|None|inf)\b(?!")|<NA>')
EXAMPLES = int(os.environ.get("FOIL_STATEFUL_EXAMPLES", "4"))  # the suite's share: under a minute
STEPS = int(os.environ.get("FOIL_STATEFUL_STEPS", "12"))
STEPS_RUN: list[int] = []  # the length of every sequence run (the longest goes in TESTING.md)


def page_texts(at: AppTest) -> list[str]:
    """Everything a page shows as text: alerts, markdown, captions, metrics, code and table cells."""
    kinds = ("title", "subheader", "markdown", "caption", "text", "info", "success", "warning", "error", "code")
    shown = [str(element.value) for kind in kinds for element in getattr(at, kind)]
    shown += [f"{m.label} {m.value}" for m in at.metric]
    shown += [frame.value.to_string() for frame in at.dataframe]
    return shown


def assert_true_text(where: str, texts: list[str]) -> None:
    """No text says nan, None or inf where a figure belongs."""
    for shown in texts:
        found = UNDEFINED.search(shown)
        assert found is None, (
            f"{where} shows {found.group(0)!r}: {shown[max(0, found.start() - 200) : found.end() + 80]}"
        )


def assert_finite_json(where: str, value) -> None:
    """A JSON document with no NaN or infinity (null, the documented "undefined", is allowed)."""
    if isinstance(value, float):
        assert math.isfinite(value), f"{where}: {value}"
    elif isinstance(value, dict):
        for key, inner in value.items():
            assert_finite_json(f"{where}.{key}", inner)
    elif isinstance(value, list):
        for n, inner in enumerate(value):
            assert_finite_json(f"{where}[{n}]", inner)


def run_cli(*args: str) -> tuple[int, str, str]:
    """One `foil` command in this process (as the console script runs it): (code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(args))
    return code, out.getvalue(), err.getvalue()


class StudioMachine(RuleBasedStateMachine):
    """One store per example (a copy of the small demo), admins and annotators acting on it."""

    def __init__(self) -> None:
        super().__init__()
        self.db_file: Path = Path()
        self.tokens: dict[str, str] = {}  # annotator -> their newest link's token
        self.queues: dict[str, AppTest] = {}  # annotator -> their open My queue (its session kept)
        self.batch_names: list[str] = []
        self.runs: list[tuple[str, str]] = []
        self.pages_seen = 0
        self.steps = 0

    @initialize()
    def open_store(self) -> None:
        folder = Path(TEMPLATE["folder"]) / f"example-{len(STEPS_RUN)}"
        folder.mkdir()
        self.db_file = folder / "foil.db"
        store.open_db(TEMPLATE["db"]).conn.execute("VACUUM INTO ?", [str(self.db_file)])
        self.db = store.open_db(self.db_file)
        os.environ["FOIL_DB"] = str(self.db_file)
        STEPS_RUN.append(0)

    def teardown(self) -> None:
        """Every admin page, once more, at the end of the sequence."""
        if self.db_file != Path():
            for page in ADMIN_PAGES:
                self.render_admin(page.path)

    # -- what the admin does ---------------------------------------------------------------------

    @rule(
        task=st.sampled_from(TASK_TYPES),
        dataset=st.sampled_from(DATASETS),
        people=st.lists(st.sampled_from(PEOPLE), min_size=1, max_size=3, unique=True),
        overlap=st.integers(1, 3),
        n=st.integers(2, 6),
        gold=st.sampled_from([0.0, 0.34]),
        one_category=st.booleans(),
    )
    def create_batch(self, task, dataset, people, overlap, n, gold, one_category) -> None:
        categories = ()
        if one_category:
            categories = (min(store.category_counts(self.db, store.get_dataset(self.db, dataset)["id"])),)
        spec = batches.BatchSpec(
            dataset,
            task,
            tuple(people),
            overlap,
            n,
            categories=categories,
            gold_share=gold,
            seed=len(self.batch_names),
            name=f"b{len(self.batch_names)}",
            min_seconds=0,
        )
        before = self.counts()
        try:
            created = batches.create_batch(self.db, spec)
        except store.StoreError:
            assert self.counts() == before, "a refused batch wrote something"
            return
        self.batch_names.append(created["batch"])
        for annotator in created["annotators"]:
            self.tokens[annotator["name"]] = annotator["token"]

    @precondition(lambda self: self.batch_names)
    @rule(data=st.data())
    def simulate(self, data) -> None:
        name = data.draw(st.sampled_from(self.batch_names))
        simulation.simulate(self.db, name, accuracies=0.8, seed=len(self.batch_names))

    @precondition(lambda self: self.tokens)
    @rule(data=st.data(), revoke=st.booleans())
    def reissue_link(self, data, revoke) -> None:
        who = data.draw(st.sampled_from(sorted(self.tokens)))
        self.tokens[who] = batches.reissue_link(self.db, who, revoke_old=revoke)
        if revoke:
            self.queues.pop(who, None)  # the old link's tab no longer works; they open the new one

    @rule(budget=st.integers(1, 12), people=st.lists(st.sampled_from(PEOPLE), min_size=1, max_size=3, unique=True))
    def draw_health_batch(self, budget, people) -> None:
        dataset = "demo-sugarcrepe"
        first = not health.health_batches(self.db, dataset)
        args = ["health", "sample" if first else "next", dataset, "--budget", str(budget), "--annotators", *people]
        args += ["--overlap", str(len(people)), "--db", str(self.db_file), "--json"]
        before = self.counts()
        code, out, err = run_cli(*args)
        if code != 0:
            assert err.startswith("error: ") and "Traceback" not in err, err
            assert self.counts() == before, f"a refused {' '.join(args[:2])} wrote something: {err}"
            return
        created = json.loads(out)
        self.batch_names.append(created["batch"])
        for annotator in created["annotators"]:
            self.tokens[annotator["name"]] = annotator["token"]

    @precondition(lambda self: len(self.runs) < 2)
    @rule(dataset=st.sampled_from(("demo-sugarcrepe", "demo-crepe")))
    def score(self, dataset) -> None:
        name = f"run{len(self.runs)}"
        score_dataset(self.db, dataset, MODEL["model"], run=name)
        self.runs.append((dataset, name))

    @precondition(lambda self: self.runs)
    @rule()
    def delete_run(self) -> None:
        dataset, name = self.runs.pop()
        code, _, err = run_cli("runs", "delete", dataset, name, "--db", str(self.db_file))
        assert code == 0, err

    @precondition(lambda self: self.batch_names)
    @rule(data=st.data())
    def export_labels(self, data) -> None:
        name = data.draw(st.sampled_from(self.batch_names))
        for fmt in ("jsonl", "csv"):
            code, out, err = run_cli("labels", name, "--format", fmt, "--db", str(self.db_file))
            assert code == 0, err
        stored = len(api.Studio(self.db).labels(name))
        assert len([line for line in out.splitlines()[1:] if line]) >= stored  # CSV: a header, then a row a label

    # -- what an annotator does, on their own page -------------------------------------------------

    @precondition(lambda self: self.tokens)
    @rule(data=st.data(), choice=st.integers(0, 8), presses=st.integers(1, 3))
    def answer_on_my_queue(self, data, choice, presses) -> None:
        who = data.draw(st.sampled_from(sorted(self.tokens)))
        page = self.queue_of(who).run()  # their tab, as their next action redraws it (a new batch appears)
        me = store.annotator_by_name(self.db, who)["id"]
        mine = [b["name"] for b in store.annotator_batches(self.db, me)]
        if len(mine) > 1:
            chosen = data.draw(st.sampled_from(mine))
            page.selectbox(key="batch").set_value(chosen).run()
        elif mine:
            chosen = mine[0]
        else:
            return
        assert not page.exception, page.exception
        for _ in range(2):  # instructions, consent-free: press Start where it is shown
            start = [b for b in page.button if b.key == "start"]
            if not start:
                break
            start[0].click().run()
        for _ in range(presses):
            options = [b for b in page.button if (b.key or "").startswith("option:")]
            forms = [b for b in page.button if b.label == "Submit"]
            if not options and not forms:
                return  # this batch is done for them
            target = self.answer_once(page, options, choice, me)
            assert not page.exception, page.exception
            batch_name, item, part = target
            assert batch_name == chosen, f"{who} chose {chosen} but the page showed {batch_name}"
            batch_id = store.get_batch(self.db, chosen)["id"]
            stored = self.db.execute(
                "SELECT COUNT(*) FROM labels WHERE batch_id = ? AND annotator_id = ? AND item_id = ? AND part = ?",
                [batch_id, me, item, part],
            ).fetchone()[0]
            assert stored == 1, f"{who}'s answer to item {item} part {part} of {chosen}: {stored} labels"
            assert_true_text(f"My queue of {who}", page_texts(page))

    def answer_once(self, page: AppTest, options, choice: int, me: int) -> tuple[str, int, int]:
        """Press one answer (a button, or every radio then Submit); return (batch, item, part) it was drawn for."""
        if options:
            button = options[choice % len(options)]
            _, _, batch_name, item, part = button.key.rsplit(":", 4)
            self.looked_at(me, batch_name, int(item), int(part))
            button.click().run()
            return batch_name, int(item), int(part)
        radios = page.radio
        batch_name, item, part = radios[0].key.split(":", 1)[1].rsplit(":", 2)
        self.looked_at(me, batch_name, int(item), int(part))
        for radio in radios:
            radio.set_value(radio.options[choice % len(radio.options)])
        next(b for b in page.button if b.label == "Submit").click().run()
        return batch_name, int(item), int(part)

    def looked_at(self, me: int, batch_name: str, item: int, part: int) -> None:
        """What the browser reports and the person does, which AppTest cannot: the item whole on
        screen (`queues.mark_shown`), then read for longer than any batch's minimum (set back by hand)."""
        queues.mark_shown(self.db, me, batch_name, item, part)
        earlier = store.timestamp(datetime.now(UTC) - timedelta(seconds=10))
        with store.transaction(self.db):
            self.db.execute(
                "UPDATE assignments SET shown_at = ? WHERE batch_id = ? AND annotator_id = ? AND item_id = ?"
                " AND part = ? AND shown_at IS NOT NULL",
                [earlier, store.get_batch(self.db, batch_name)["id"], me, item, part],
            )

    def queue_of(self, who: str) -> AppTest:
        if who not in self.queues:
            at = AppTest.from_file(str(APP_SCRIPT), default_timeout=120)
            at.query_params["token"] = self.tokens[who]
            self.queues[who] = at.run()
        return self.queues[who]

    # -- invariants --------------------------------------------------------------------------------

    @invariant()
    def count_the_step(self) -> None:
        if self.db_file != Path():
            STEPS_RUN[-1] += 1

    @invariant()
    def every_label_is_on_an_item_assigned_to_its_annotator(self) -> None:
        if self.db_file == Path():
            return
        stray = self.db.execute(
            "SELECT l.id FROM labels l WHERE NOT EXISTS (SELECT 1 FROM assignments a WHERE a.batch_id = l.batch_id"
            " AND a.annotator_id = l.annotator_id AND a.item_id = l.item_id AND a.part = l.part)"
        ).fetchall()
        assert not stray, f"labels on items their annotator was not assigned: {stray}"
        twice = self.db.execute(
            "SELECT batch_id, annotator_id, item_id, part, COUNT(*) FROM labels"
            " GROUP BY batch_id, annotator_id, item_id, part HAVING COUNT(*) > 1"
        ).fetchall()
        assert not twice, f"answers stored twice: {twice}"

    @invariant()
    def one_admin_page_renders_in_turn(self) -> None:
        """Admin pages in turn (all of them again at the end of a sequence): rendering each after
        every step would take minutes."""
        if self.db_file == Path():
            return
        self.render_admin(ADMIN_PAGES[self.pages_seen % len(ADMIN_PAGES)].path)
        self.pages_seen += 1

    @invariant()
    def page_cli_and_api_count_alike(self) -> None:
        if self.db_file == Path() or not self.batch_names:
            return
        listed = {b["name"]: b for b in api.Studio(self.db).batches().to_dict("records")}
        for name in self.batch_names[-2:]:
            code, out, err = run_cli("labels", name, "--db", str(self.db_file))  # JSONL, a label a line
            assert code == 0, err
            assert len(out.splitlines()) == listed[name]["n_labels"] == len(api.Studio(self.db).labels(name))
            self.check_outputs(name)

    # -- helpers -----------------------------------------------------------------------------------

    def render_admin(self, path: str) -> None:
        at = AppTest.from_file(str(APP_SCRIPT), default_timeout=120)
        at.query_params["token"] = ADMIN_TOKEN
        at = at.run().switch_page(path).run()
        assert not at.exception, (path, at.exception)
        if path == "views/batches.py" and self.batch_names:
            shown = at.dataframe[0].value.set_index("name")
            for b in store.list_batches(self.db):
                assert shown.loc[b["name"], "n_labels"] == b["n_labels"], b["name"]
        assert_true_text(path, page_texts(at))

    def check_outputs(self, name: str) -> None:
        """The batch's agreement (plain and JSON), its baseline where it is one, and the health card."""
        where = f"--db={self.db_file}"
        for extra in ((), ("--json",)):
            code, out, err = run_cli("agreement", name, where, *extra)
            assert code == 0, err
            if extra:
                assert_finite_json(f"agreement {name}", json.loads(out))
            else:
                assert_true_text(f"agreement {name}", [out])
        batch = store.get_batch(self.db, name)
        if batch["task_type"].startswith("baseline") or batch["task_type"] == "rank_captions":
            code, out, err = run_cli("baseline", name, where)
            assert code == 0 or (err.startswith("error: ") and not out), err
            assert_true_text(f"baseline {name}", [out])
        if health.health_batches(self.db, "demo-sugarcrepe"):
            code, out, err = run_cli("health", "report", "demo-sugarcrepe", "--bootstrap", "50", where)
            assert code == 0, err
            assert_true_text("health report", [out])

    def counts(self) -> tuple[int, ...]:
        return tuple(
            self.db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
            for table in ("batches", "assignments", "labels", "annotators")
        )


TEMPLATE: dict[str, str] = {}
MODEL: dict = {}


@pytest.fixture(scope="module", autouse=True)
def _template(demo_store, tmp_path_factory):
    TEMPLATE.update(db=str(demo_store), folder=str(tmp_path_factory.mktemp("stateful")))
    MODEL["model"] = load_model(demo_model_spec(), device="cpu")
    saved = {k: os.environ.get(k) for k in ("FOIL_DB", "FOIL_ADMIN_TOKEN")}
    os.environ["FOIL_ADMIN_TOKEN"] = ADMIN_TOKEN
    yield
    report = os.environ.get("FOIL_STATEFUL_REPORT")  # `make stateful` writes what it explored here
    if report:
        explored = {"sequences": len(STEPS_RUN), "steps": sum(STEPS_RUN), "longest": max(STEPS_RUN, default=0)}
        Path(report).write_text(json.dumps(explored) + "\n")
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


StudioMachine.TestCase.settings = settings(
    max_examples=EXAMPLES,
    stateful_step_count=STEPS,
    deadline=None,
    derandomize=True,  # seeded: the suite explores the same sequences every run
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    phases=[Phase.explicit, Phase.reuse, Phase.generate] if os.environ.get("FOIL_STATEFUL_NO_SHRINK") else list(Phase),
)
TestStudio = pytest.mark.slow(StudioMachine.TestCase)
