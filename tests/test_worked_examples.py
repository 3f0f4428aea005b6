"""ARCHITECTURE.md's "Where new things go", done as written: in a copy of the checkout, a toy
benchmark format, a toy task type, a toy page and a toy model family are each one new file and one
registry line (the family's record beside it, in `scorers/built_in.py`), then
`docs/readme_tables.py` (what `make docs` runs) updates the docs. The existing generic tests
must pick all three up, and no other file may change.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, checkout_copy

TOY_FORMAT = '''"""toy-pairs: an EqBen-like layout, one JSON list of `{image, caption, foil}` per category."""

from __future__ import annotations

import json
from pathlib import Path

from foil_studio.data.formats.base import ExportContext, Format, Parsed, StoredItem, json_files, make_item, require_keys
from foil_studio.data.formats.base import write_json_files
from foil_studio.data.reading import read_json


def parse_toy(path: Path) -> Parsed:
    parsed = Parsed("toy-pairs", "toy-pairs")
    for file in json_files(path):
        for row, record in enumerate(read_json(file)):
            require_keys(record, ("image", "caption", "foil"), file, row)
            item = make_item(file, row, kind="pair", category=file.stem, source_id=f"{file.stem}/{row}",
                             captions=(record["caption"], record["foil"]), images=(record["image"],))
            parsed.add(item, file, row)
    return parsed


def write_toy(items: list[StoredItem], out: Path, context: ExportContext) -> list[str]:
    files: dict[str, list[dict[str, str]]] = {}
    for item in items:
        record = {"image": item["images"][0], "caption": item["captions"][0], "foil": item["captions"][1]}
        files.setdefault(item["category"], []).append(record)
    return write_json_files(out, files)


def write_toy_source(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    records = [{"image": f"{n}.jpg", "caption": f"a cup left of plate {n}", "foil": f"a plate left of cup {n}"}
               for n in range(3)]
    (folder / "spatial.json").write_text(json.dumps(records))
    return folder / "spatial.json"


TOY = Format("toy-pairs", "one JSON list of `{image, caption, foil}` per category",
             "./foil import toy-pairs toy/spatial.json --images toy/images", parse_toy, write_toy, writes=("pair",),
             write_source=write_toy_source)
'''

TOY_TASK = '''"""grammar_check: is the altered caption grammatical? Yes, no or unsure, on caption pairs."""

from __future__ import annotations

import random

from foil_studio.annotate.task_types.base import Item, Option, Task, TaskType


def build(item: Item, part: int, rng: random.Random) -> Task:
    options = (Option("yes", "Grammatical", "1"), Option("no", "Ungrammatical", "2"), Option("unsure", "Unsure", "3"))
    return Task("grammar_check", item["id"], part, "Is the altered caption grammatical?",
                (("altered caption", item["captions"][1]),), (), options, (1,))


TASK_TYPE = TaskType("grammar_check", ("pair",), "Say whether the caption is grammatical English.", build,
                     summary="is the altered caption grammatical?", shuffles=False)
'''

TOY_PAGE = '''"""Toy page: how many items of a dataset have a caption of more than ten words."""

import streamlit as st

from foil_studio.analysis.toy_counts import long_caption_items
from foil_studio.annotate import browse
from foil_studio.views import registry
from foil_studio.views.session import session_db

BOX = registry.page("views/toy_page.py").box
db = session_db()
st.title("Toy page")
names = browse.datasets_holding(db, BOX.item_kinds, with_runs=BOX.with_runs)
if not names:
    st.info("No dataset yet.")
    st.stop()
dataset = st.selectbox("Dataset", names, key=BOX.key)
st.write(f"{long_caption_items(db, dataset)} items with a caption of more than ten words")
'''

TOY_PAGE_LOGIC = '''"""The toy page's figure, below the pages where tests reach it without Streamlit."""

import sqlite_utils

from foil_studio.data import store


def long_caption_items(db: sqlite_utils.Database, dataset: str) -> int:
    dataset_id = store.get_dataset(db, dataset)["id"]
    items = store.list_items(db, dataset_id, limit=store.count_items(db, dataset_id))
    return sum(any(len(caption.split()) > 10 for caption in item["captions"]) for item in items)
'''

TOY_FAMILY = '''"""toy-match: a two-tower toy, an image's mean colour through a linear layer against its caption's
mean word embedding, scored by their cosine."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image

from foil_studio.analysis.scorers import base, tiny


class ToyModel(torch.nn.Module):
    def __init__(self, n_words: int) -> None:
        super().__init__()
        self.image = torch.nn.Linear(3, 8)
        self.words = torch.nn.Embedding(n_words, 8)


def mean_colour(image: Image.Image) -> np.ndarray:
    return np.asarray(image.convert("RGB"), dtype=np.float32).mean(axis=(0, 1)) / 255


def word_ids(vocab: dict[str, int], caption: str) -> list[int]:
    return [vocab.get(word, 0) for word in caption.lower().split()] or [0]


class ToyScorer:
    def __init__(self, model: ToyModel, vocab: dict[str, int], device: torch.device) -> None:
        self.model, self.vocab, self.device = model, vocab, device

    def prepare_images(self, images: list[Image.Image]) -> list[Any]:
        return [torch.from_numpy(mean_colour(image)) for image in images]

    def prepare_texts(self, texts: list[str]) -> list[Any]:
        return [torch.tensor(word_ids(self.vocab, text)) for text in texts]

    @torch.no_grad()
    def score_pairs(self, images: Sequence[Any], texts: Sequence[Any]) -> list[float]:
        pixels = torch.stack(list(images)).to(self.device, self.model.image.weight.dtype)
        seen = self.model.image(pixels).float()
        said = torch.stack([self.model.words(ids.to(self.device)).float().mean(0) for ids in texts])
        return torch.nn.functional.cosine_similarity(seen, said, dim=-1).cpu().tolist()

    def stamp(self) -> dict[str, Any]:
        return {"words": len(self.vocab)}

    def image_encoder(self) -> torch.nn.Module:
        return self.model.image


def load(ref: str, precision: str, device: torch.device) -> ToyScorer:
    folder = base.weights_folder(ref)
    vocab = json.loads((folder / "vocab.json").read_text())
    model = ToyModel(len(vocab))
    model.load_state_dict(torch.load(folder / "toy.pt"))
    model = model.to(base.model_dtype(precision)).eval()
    base.place(model, device)
    return ToyScorer(model, vocab, device)


def tiny_model(folder: Path) -> Path:
    out = folder / "toy"
    out.mkdir(parents=True, exist_ok=True)
    vocab = {word: n for n, word in enumerate(["<unk>", *tiny.WORDS.split()])}
    torch.manual_seed(0)
    torch.save(ToyModel(len(vocab)).state_dict(), out / "toy.pt")
    (out / "vocab.json").write_text(json.dumps(vocab))
    return out


def reference_score(folder: Path, image: Image.Image, caption: str) -> float:
    weights = {name: value.double().numpy() for name, value in torch.load(folder / "toy.pt").items()}
    seen = weights["image.weight"] @ mean_colour(image).astype(np.float64) + weights["image.bias"]
    said = weights["words.weight"][word_ids(json.loads((folder / "vocab.json").read_text()), caption)].mean(axis=0)
    return float(seen @ said / (np.linalg.norm(seen) * np.linalg.norm(said)))
'''

TOY_FAMILY_RECORD = """

TOY_MATCH = ScorerFamily(
    "toy-match",
    "a toy two-tower model: an image's mean colour against its caption's mean word embedding",
    "cosine of the two vectors",
    "tests/test_worked_examples.py",
    "toy-match:models/toy",
    "foil_studio.analysis.scorers.toy_match:load",
    test_kit="foil_studio.analysis.scorers.toy_match",
)
"""

# file -> (text after which the registry line goes, the registry line, the import it needs)
REGISTRY_LINES = {
    "foil_studio/data/formats/__init__.py": (
        "        jsonl.PARQUET,\n",
        "        toy_pairs.TOY,\n",
        "from foil_studio.data.formats import toy_pairs\n",
    ),
    "foil_studio/annotate/task_types/__init__.py": (
        "        compare_negatives.TASK_TYPE,\n",
        "        grammar_check.TASK_TYPE,\n",
        "from foil_studio.annotate.task_types import grammar_check\n",
    ),
    "foil_studio/analysis/scorers/built_in.py": ("    VQASCORE,\n", "    TOY_MATCH,\n", ""),
    "foil_studio/views/registry.py": (
        '"where a link without a valid token lands: how to get one",\n        default=True,\n    ),\n',
        '    Page("views/toy_page.py", "Toy page", ":material/star:", "admin", "counts a dataset\'s long captions",\n'
        '         box=DatasetBox("toy_dataset")),\n',
        "",
    ),
}
NEW_FILES = {
    "foil_studio/data/formats/toy_pairs.py": TOY_FORMAT,
    "foil_studio/annotate/task_types/grammar_check.py": TOY_TASK,
    "foil_studio/views/toy_page.py": TOY_PAGE,
    "foil_studio/analysis/toy_counts.py": TOY_PAGE_LOGIC,
    "foil_studio/analysis/scorers/toy_match.py": TOY_FAMILY,
}
# What the generic tests must run for the toys (and nothing they run may fail).
GENERIC_TESTS = [
    "tests/test_formats.py",
    "tests/test_cli.py::test_every_import_format_has_a_readme_example",
    "tests/test_task_display.py",
    "tests/test_annotation.py",
    "tests/test_integrity.py",
    "tests/test_app.py",
    "tests/test_docs.py",
    "tests/test_scorer_families.py",
    "tests/test_precision_choice.py",
]
# The pages whose generated tables the toys add a row to (README.md's pages aside).
GENERATED_IN = {
    "format": "docs/formats.md",
    "task_type": "docs/annotation.md",
    "commands": "docs/commands.md",
    "family": "docs/scoring.md",
}
EXPECTED_IDS = ("[toy-pairs]", "[grammar_check]", "[toy_page]", "[toy-match]", "[toy-match-")


def digests(root: Path) -> dict[str, str]:
    """Path -> content hash of every file under `root` but caches."""
    skip = ("__pycache__", ".pytest_cache", ".hypothesis")
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file() and not any(part in skip for part in p.parts)
    }


def add_registry_line(root: Path, name: str) -> None:
    """One line in the file's registry (and the import of its module), as ARCHITECTURE.md says."""
    after, line, module_import = REGISTRY_LINES[name]
    text = (root / name).read_text()
    assert text.count(after) == 1, f"{name}: the registry no longer ends with {after!r}; update this test"
    text = text.replace(after, after + line)
    if module_import:
        lines = text.splitlines(keepends=True)
        at = last_import_end(lines)
        text = "".join(lines[:at]) + module_import + "".join(lines[at:])
    (root / name).write_text(text)


def add_family_record(root: Path) -> None:
    """The toy family's record beside foil's own, before the registry that lists them."""
    built_in = root / "foil_studio/analysis/scorers/built_in.py"
    text, registry = built_in.read_text(), "\n\n# Foil's own families"
    assert text.count(registry) == 1, f"{built_in}: no {registry.strip()!r} comment above BUILT_INS; update this test"
    built_in.write_text(text.replace(registry, TOY_FAMILY_RECORD.rstrip("\n") + registry))


def last_import_end(lines: list[str]) -> int:
    """The index of the line after the module's last top-level import (a parenthesized one included)."""
    end, inside = 0, False
    for n, line in enumerate(lines):
        if line.startswith(("from ", "import ")):
            inside, end = line.rstrip().endswith("("), n + 1
        elif inside:
            inside, end = not line.startswith(")"), n + 1
        elif line.strip() and not line.startswith(("#", '"""')) and end:
            break
    return end


@pytest.mark.slow
def test_a_format_a_task_type_a_page_and_a_model_family_need_one_file_and_one_registry_line_each(tmp_path):
    if not FIXTURES.is_dir():
        pytest.skip(f"benchmark fixtures not found at {FIXTURES}")
    root = checkout_copy(tmp_path / "checkout")
    before = digests(root)
    for name, text in NEW_FILES.items():
        (root / name).write_text(text)
    for name in REGISTRY_LINES:
        add_registry_line(root, name)
    add_family_record(root)
    env = {**os.environ, "FOIL_FIXTURES": str(FIXTURES)}
    docs = subprocess.run(
        [sys.executable, "docs/readme_tables.py"], cwd=root, env=env, capture_output=True, text=True, check=False
    )
    assert docs.returncode == 0, docs.stderr
    readme = (root / "README.md").read_text()
    assert "| `toy-pairs` |" in (root / GENERATED_IN["format"]).read_text()
    assert "| `grammar_check` |" in (root / GENERATED_IN["task_type"]).read_text()
    assert "toy-pairs\\|" in (root / GENERATED_IN["commands"]).read_text()  # `export --format` choices
    assert "**Toy page**: counts a dataset's long captions." in readme
    assert "| `toy-match` | `toy-match:models/toy` |" in (root / GENERATED_IN["family"]).read_text()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rA",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            "-x",
            "-k",
            "(toy or grammar_check or readme) and not postgresql",
            *GENERIC_TESTS,
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    passed = [line for line in done.stdout.splitlines() if line.startswith("PASSED")]
    for toy in EXPECTED_IDS:
        assert any(toy in line for line in passed), f"no generic test ran {toy}:\n" + "\n".join(passed)
    after = digests(root)
    touched = {name for name in after if before.get(name) != after[name]}
    assert touched == {*NEW_FILES, *REGISTRY_LINES, "README.md", *GENERATED_IN.values()}
