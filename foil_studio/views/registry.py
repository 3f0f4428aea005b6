"""The app's pages: one record each, listed once in ``PAGES``.

``app.py`` shows a role the pages registered for it (the token in the link decides the role),
and the page tests visit every page listed here: a new page is a file in ``views/`` and one
line below. Plain data, no Streamlit import, so tests and docs read it without starting the app.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

ROLES = ("admin", "annotator", "anonymous")  # `annotate.roles.Role.kind`


@dataclass(frozen=True)
class Page:
    """One page: its file (relative to ``app.py``), its title and icon in the navigation, and the
    role that may open it. ``default`` marks the role's landing page; ``dataset_key`` is the key
    of its dataset select box, where it has one (the page smoke test opens it on every dataset)."""

    path: str
    title: str
    icon: str
    role: str
    default: bool = False
    dataset_key: str = ""

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"page {self.path}: role {self.role!r} is not one of {ROLES}")

    @property
    def url_path(self) -> str:
        """The address Streamlit serves it at (`/datasets`): the file's name without `.py`."""
        return PurePosixPath(self.path).stem


PAGES: tuple[Page, ...] = (
    Page("views/datasets.py", "Datasets", ":material/dataset:", "admin", default=True, dataset_key="dataset"),
    Page("views/model_scores.py", "Model scores", ":material/bar_chart:", "admin", dataset_key="scores_dataset"),
    Page("views/inspect_runs.py", "Inspect runs", ":material/troubleshoot:", "admin", dataset_key="inspect_dataset"),
    Page("views/batches.py", "Annotation batches", ":material/group_work:", "admin"),
    Page("views/hackability.py", "Hackability audit", ":material/policy:", "admin", dataset_key="audit_dataset"),
    Page("views/health.py", "Benchmark health", ":material/health_and_safety:", "admin", dataset_key="health_dataset"),
    Page("views/annotate.py", "My queue", ":material/checklist:", "annotator", default=True),
    Page("views/sign_in.py", "Sign in", ":material/key:", "anonymous", default=True),
)


def pages_for(role: str) -> tuple[Page, ...]:
    """The pages a role may open, in navigation order."""
    return tuple(page for page in PAGES if page.role == role)
