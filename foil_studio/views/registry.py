"""The app's pages: one record each, listed once in ``PAGES``.

``app.py`` shows a role the pages registered for it (the token in the link decides the role),
the page tests visit every page listed here (every dataset its box lists), and README's Pages
section is each record's summary: a new page is a file in ``views/`` and one line below (and,
where it computes something, its function in layer 2). Plain data, no Streamlit import, so tests
and docs read it without starting the app.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

from foil_studio.data.item_kinds import AUDITED_KINDS, CAPTION_PAIR_KINDS

ROLES = ("admin", "annotator", "anonymous")  # `annotate.roles.Role.role_name`


@dataclass(frozen=True)
class DatasetBox:
    """A page's dataset select box: its widget key, and which datasets it lists: those holding
    an item of `item_kinds` (every dataset when empty), only those with a run when `with_runs`
    (`annotate.browse.datasets_holding` reads the store by this rule; the page tests open each)."""

    key: str
    item_kinds: tuple[str, ...] = ()
    with_runs: bool = False


@dataclass(frozen=True)
class Page:
    """One page: its file (relative to ``app.py``), its title and icon in the navigation, the
    role that may open it and what it is for (`summary`, README's Pages section). ``default``
    marks the role's landing page; ``box`` is its dataset select box, where it has one."""

    path: str
    title: str
    icon: str
    role: str
    summary: str
    default: bool = False
    box: DatasetBox | None = None

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"page {self.path}: role {self.role!r} is not one of {ROLES}")

    @property
    def url_path(self) -> str:
        """The address Streamlit serves it at (`/datasets`): the file's name without `.py`; a role's
        landing page (``default``) is served at `/` as well (`app.py`)."""
        return PurePosixPath(self.path).stem


PAGES: tuple[Page, ...] = (
    Page(
        "views/datasets.py",
        "Datasets",
        ":material/dataset:",
        "admin",
        "every dataset with counts per category and item kind and its images found or missing (with "
        '"Attach an image folder"); an item browser (list or thumbnail grid, captions as plain text, '
        "the ground truth in sentences); an import form naming bad rows; exports to a zip in a "
        "benchmark's own layout, JSONL or parquet with every run's results, or a training table",
        default=True,
        box=DatasetBox("dataset"),
    ),
    Page(
        "views/model_scores.py",
        "Model scores",
        ":material/bar_chart:",
        "admin",
        "runs per dataset with headline figures, per-category tables with 95% intervals (the CLI's, "
        "to the digit), bar charts with the chance line and the humans' line where baseline batches "
        'exist; "Score a dataset now" with any model family; deleting a run',
        box=DatasetBox("scores_dataset", with_runs=True),
    ),
    Page(
        "views/inspect_runs.py",
        "Inspect runs",
        ":material/troubleshoot:",
        "admin",
        "score-gap histograms per category (a box drawn on a chart lists its items), run against run "
        "and run against the humans (agreement per category, McNemar's exact test), and a failure "
        "browser by pattern, worst margin first, whose selection can go to a validation batch",
        box=DatasetBox("inspect_dataset", with_runs=True),
    ),
    Page(
        "views/batches.py",
        "Annotation batches",
        ":material/group_work:",
        "admin",
        "create lab batches or crowd studies and their links; live progress, agreement (coefficients "
        "with intervals, kappa heatmap, per category), adjudication, adaptive overlap, simulated "
        "annotators, the pick_image -> ambiguity step, cleaned-benchmark and label exports",
    ),
    Page(
        "views/hackability.py",
        "Hackability audit",
        ":material/policy:",
        "admin",
        "blind text-only accuracy per category for one dataset against another, the 2-D gap plot of "
        "two blind scorers and adversarial refinement with a download",
        box=DatasetBox("audit_dataset", item_kinds=AUDITED_KINDS),
    ),
    Page(
        "views/health.py",
        "Benchmark health",
        ":material/health_and_safety:",
        "admin",
        "draw a stratified sample of a dataset's negatives for people to validate, then the invalid "
        "share per category and overall with 95% intervals, each run on all items against valid "
        "items, a methods paragraph and the benchmark card (Markdown or JSON); with a predictor's output on every "
        "item (a VLM judge, one cheap crowd vote), the shares prediction-powered beside the plain ones. It helps when "
        "the predictor tracks people and invalid items are not rare (95% agreement halves the interval of a 30% "
        "share), hardly at a 2% share, never widens an interval, and holds its 95% whatever the predictor (eight "
        "kinds tried, from constant to miscalibrated to wrong in half the categories: [TESTING.md](TESTING.md)). A "
        "next batch can also draw by prediction, within bins of the predicted probability, more answers where the "
        "invalid items are: at a 5% share and equal budget, 0.75 of a random draw's width with a calibrated "
        "predictor at 100 answers per category (0.63 at 200, 0.87 at 40), 0.83 to 0.92 with one that ranks the items "
        "but is miscalibrated, 0.87 to 0.90 on VALSE with one crowd vote as the predictor, as wide where it ranks "
        "nothing; it replaces drawing actively, more where the predictions are unsure, which made every interval "
        "wider ([docs/statistics.md](docs/statistics.md)). A human baseline from fewer than 30 decided items shows "
        "its n and exact interval and is not cited as a baseline",
        box=DatasetBox("health_dataset", item_kinds=CAPTION_PAIR_KINDS),
    ),
    Page(
        "views/annotate.py",
        "My queue",
        ":material/checklist:",
        "annotator",
        "an annotator's batches and the next item of the chosen one, answered by click or key",
        default=True,
    ),
    Page(
        "views/sign_in.py",
        "Sign in",
        ":material/key:",
        "anonymous",
        "where a link without a valid token lands: how to get one",
        default=True,
    ),
)


def pages_for(role: str) -> tuple[Page, ...]:
    """The pages a role may open, in navigation order."""
    return tuple(page for page in PAGES if page.role == role)


def page(path: str) -> Page:
    """The record of the page at `path` (``views/<page>.py``)."""
    found = [p for p in PAGES if p.path == path]
    if not found:
        raise KeyError(f"no page {path!r} in views/registry.py PAGES")
    return found[0]


def pages_section() -> str:
    """README's Pages section: each role's pages with their summaries."""
    lines = []
    for role, heading in (("admin", "With the admin link"), ("annotator", "With an annotator's link")):
        lines.append(f"{heading}:")
        lines += [f"- **{p.title}**: {p.summary}." for p in pages_for(role)]
        lines.append("")
    return "\n".join(lines).rstrip()
