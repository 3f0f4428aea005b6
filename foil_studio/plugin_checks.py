"""The generic checks every registry record passes, as functions a plugin's own test suite calls
(foil's suite calls the same ones on the built-ins): a format's read -> write -> read round trip,
a task type's fixed buttons and reproducible layout, a metric family's tie rules, an item kind's
example and a scorer family's record. ``check_plugin`` runs them on every record an installed
package adds. Each raises ``CheckFailed`` (an AssertionError, so pytest shows it as a failed
assertion) with a sentence naming the record.

>>> check_item_kind(item_kinds.item_kind("pair"))
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import sqlite_utils

from foil_studio.analysis import metric_families, scorers
from foil_studio.analysis.exports import export_dataset
from foil_studio.analysis.metric_families.base import MetricFamily
from foil_studio.analysis.scorers.record import ScorerFamily
from foil_studio.annotate import task_types
from foil_studio.annotate.task_types.base import Item, TaskType
from foil_studio.data import formats, item_kinds, plugins, store
from foil_studio.data.images import existing_image
from foil_studio.data.item_kinds.base import ItemKind
from foil_studio.data.loading import import_path

TIE_LEVELS = (0.1, 0.2, 0.3, 0.4)  # scores drawn from few values, so that ties are common
SEEDS = ("s", "t")


class CheckFailed(AssertionError):
    """A record does not behave as its registry needs."""


def expect(holds: bool, said: str) -> None:
    """Raise CheckFailed saying `said` unless `holds`."""
    if not holds:
        raise CheckFailed(said)


# --- formats ------------------------------------------------------------------------------------


def format_source(fmt: formats.Format, folder: Path, fixtures: Path | None = None) -> Path:
    """The format's example source: its file in the shared fixtures (`source_fixture`), or the one
    its `write_source` writes under `folder`."""
    if fmt.source_fixture and fixtures is not None:
        return fixtures / fmt.source_fixture
    expect(fmt.write_source is not None, f"format {fmt.name}: give it a `write_source(folder)` for the round trip")
    assert fmt.write_source is not None
    return fmt.write_source(folder)


def source_items(fmt: formats.Format, folder: Path, db: sqlite_utils.Database | None = None) -> list[Item]:
    """The items of the format's source, imported into `db` (a fresh store in memory by default),
    as the store returns them: what a task type of the plugin can be checked on."""
    db = db if db is not None else store.open_db(None)
    import_path(db, fmt.name, format_source(fmt, folder / "source"), name=f"{fmt.name}-source")
    dataset = store.get_dataset(db, f"{fmt.name}-source")
    return [dict(item) for item in store.list_items(db, dataset["id"], limit=1 << 20)]


def check_format(
    fmt: formats.Format, folder: Path, *, db: sqlite_utils.Database | None = None, fixtures: Path | None = None
) -> None:
    """A format that reads and writes gives back the items it read: its source imported, exported
    in its own layout and imported again holds the same items (captions, categories, images,
    boxes, truth); a format that only reads reads its source into at least one item."""
    db = db if db is not None else store.open_db(None)
    source = format_source(fmt, folder / "source", fixtures)
    expect(source.exists(), f"format {fmt.name}: its source {source} does not exist")
    import_path(db, fmt.name, source, name="first", embedded_root=folder / "embedded")
    expect(bool(item_content(db, "first")), f"format {fmt.name}: its source {source} reads as no item")
    if fmt.write is None:
        return
    files = export_dataset(db, "first", fmt.name, folder / "written")["files"]
    # read back as it was read: the folder, or the one file written when the source was one file
    written_files = [f for f in files if not f.endswith("/")]  # "images/" is a folder of copies beside them
    one_file = source.is_file() and len(written_files) == 1
    written = folder / "written" / written_files[0] if one_file else folder / "written"
    images = folder / "written" if fmt.renames_images else None
    import_path(db, fmt.name, written, images=images, name="second")
    by_bytes = fmt.renames_images
    first, second = item_content(db, "first", by_bytes), item_content(db, "second", by_bytes)
    expect(second == first, f"format {fmt.name}: what its writer wrote reads back as other items")


def item_content(db: sqlite_utils.Database, dataset: str, by_bytes: bool = False) -> list[tuple[Any, ...]]:
    """What a user would call the items: everything but store ids, in a fixed order; `by_bytes`
    names each image by a digest of its file (for a writer that renames the images it copies)."""
    row = store.get_dataset(db, dataset)
    rows = store.list_items(db, row["id"], limit=1 << 62)
    root = Path(row["image_root"]) if row["image_root"] else None

    def image(reference: str) -> str:
        if not by_bytes:
            return reference
        path = existing_image(root, reference)
        expect(path is not None, f"{dataset}: image {reference} not found under {root}")
        assert path is not None
        return hashlib.sha256(path.read_bytes()).hexdigest()

    return sorted(
        (
            r["kind"],
            r["category"],
            tuple(r["captions"]),
            tuple(image(ref) for ref in r["images"]),
            json.dumps(r["truth"], sort_keys=True),
            json.dumps(r["meta"].get("bbox")),
        )
        for r in rows
    )


# --- task types ---------------------------------------------------------------------------------


def task_items(task_type: TaskType) -> list[Item]:
    """The example item of the task type's example item kind (what the task table lays out)."""
    return [dict(item_kinds.item_kind(task_type.example_kind).example)]


def laid_out(task_type: TaskType, items: Sequence[Item], seed: str) -> list[tuple[Item, Any]]:
    """Every question of every item, built as an annotator sees it under `seed`."""
    return [
        (item, task_types.build_task(task_type.name, item, part, seed))
        for item in items
        for part in task_type.parts(item)
    ]


def check_task_buttons(task_type: TaskType, items: Sequence[Item]) -> None:
    """Each item shows the task type's buttons (`TaskType.buttons`), and items of one shape show the same ones."""
    by_shape: dict[tuple[int, int], list[tuple[str, str]]] = {}
    for item, shown in laid_out(task_type, items, SEEDS[0]):
        buttons = [(o.label, o.shortcut) for o in shown.options]
        expect(
            buttons == list(task_type.buttons(item)), f"task type {task_type.name}: item {item['id']}'s buttons moved"
        )
        shape = (len(item["images"]), len(item["captions"]))
        expect(
            by_shape.setdefault(shape, buttons) == buttons, f"task type {task_type.name}: buttons differ between items"
        )


def check_task_layout(task_type: TaskType, items: Sequence[Item]) -> None:
    """The same seed lays each item out the same way; a task type that shuffles its stimuli shuffles them
    per item and per seed (given items enough to show it), one that does not keeps the item's order."""
    first, again, other = (laid_out(task_type, items, seed) for seed in (SEEDS[0], SEEDS[0], SEEDS[1]))
    orders = [t.displayed_order for _, t in first]
    expect(orders == [t.displayed_order for _, t in again], f"task type {task_type.name}: one seed, two layouts")
    if not task_type.shuffles:
        kept = {t.displayed_order for _, t in first + other}
        expect(len(kept) == 1, f"task type {task_type.name}: shuffles=False, yet its stimuli move")
    elif len(orders) >= 8:
        expect(len(set(orders)) > 1, f"task type {task_type.name}: shuffles=True, yet every item has one order")
        expect(
            orders != [t.displayed_order for _, t in other],
            f"task type {task_type.name}: another seed, the same layouts",
        )


def check_task_type(task_type: TaskType, items: Sequence[Item] | None = None) -> None:
    """`check_task_buttons` and `check_task_layout` on `items` (default: the example item of its
    example item kind), and each answer it offers is one `check_answer` takes."""
    items = list(items) if items else task_items(task_type)
    expect(bool(task_type.item_kinds), f"task type {task_type.name}: name the item kinds it takes")
    for item_kind in task_type.item_kinds:
        expect(
            item_kind in item_kinds.REGISTRY, f"task type {task_type.name}: item kind {item_kind!r} is not registered"
        )
    check_task_buttons(task_type, items)
    check_task_layout(task_type, items)
    for _, shown in laid_out(task_type, items[:3], SEEDS[0]):
        for option in shown.options:
            task_types.check_answer(shown, {question: option.value for question in shown.questions})


# --- metric families ----------------------------------------------------------------------------


def score_shape(item_kind: ItemKind) -> tuple[int, ...]:
    """The shape of one item's stored scores, as the item kind reads them off its example's similarity
    matrix (and its captions' cosines, where it reads text scores too: `analysis.scoring`)."""
    n_images, n_captions = max(1, len(item_kind.example.get("images", ()))), len(item_kind.example.get("captions", ()))
    return item_kind.scores_shape(n_images, n_captions)


def tied_run(item_kind: str, shape: tuple[int, ...], n: int, rng: np.random.Generator) -> store.RunColumns:
    """A run of `n` items of item kind `item_kind` whose scores take few values, so that many comparisons tie."""
    scores = rng.choice(TIE_LEVELS, size=(n, *shape))
    return store.RunColumns(
        "scores", np.arange(n), np.array([item_kind] * n), np.array(["c"] * n), scores, [None] * n, [None] * n
    )


def check_metric_family(family: MetricFamily, item_kind: str, *, n: int = 200, seed: int = 0) -> None:
    """On a run of item kind `item_kind` with many ties: the headline is among the outcomes, every credit is in
    [0, 1], an item without a tie scores the same under every tie rule, `right` never scores below
    `half` nor `half` below `wrong`, and an item with all scores equal counts a tie."""
    shape = score_shape(item_kinds.item_kind(item_kind))
    run = tied_run(item_kind, shape, n, np.random.default_rng(seed))
    (wrong, tied), (half, _), (right, _) = (family.outcomes(run, rule) for rule in ("wrong", "half", "right"))
    expect(family.headline in wrong, f"metric family {family.name}: no headline outcome {family.headline!r}")
    free = np.asarray(tied) == 0
    for key in wrong:
        w, h, r = (np.asarray(o[key], dtype=float) for o in (wrong, half, right))
        expect(w.shape == (n,), f"metric family {family.name}: {key} has {w.shape} credits for {n} items")
        expect(bool(((w >= 0) & (w <= 1)).all()), f"metric family {family.name}: {key} credits outside [0, 1]")
        expect(np.array_equal(w[free], r[free]), f"metric family {family.name}: {key} moves on items with no tie")
        expect(bool((w <= h + 1e-12).all() and (h <= r + 1e-12).all()), f"metric family {family.name}: {key} order")
    flat = store.RunColumns(
        "scores", np.arange(1), np.array([item_kind]), np.array(["c"]), np.full((1, *shape), 0.5), [None], [None]
    )
    expect(int(family.outcomes(flat, "wrong")[1][0]) >= 1, f"metric family {family.name}: equal scores count no tie")


# --- item kinds and scorer families -------------------------------------------------------------


def check_item_kind(item_kind: ItemKind) -> None:
    """Its example item is of its item kind, with a role for each caption and image, and its scores read
    off a similarity matrix of the example's shape."""
    item = item_kind.example
    expect(item["kind"] == item_kind.name, f"item kind {item_kind.name}: give it an example item of its item kind")
    captions, images = list(item.get("captions", ())), list(item.get("images", ()))
    expect(
        len(item_kind.caption_roles(len(captions))) == len(captions), f"item kind {item_kind.name}: a role per caption"
    )
    expect(len(item_kind.image_roles(len(images))) == len(images), f"item kind {item_kind.name}: a role per image")
    expect(
        item_kind.metric_family in (None, *metric_families.METRIC_FAMILIES),
        f"item kind {item_kind.name}: unknown family",
    )
    score_shape(item_kind)


def check_scorer_family(family: ScorerFamily) -> None:
    """Its record says what it is, its rule, where it was read and an example `--model` value, and
    its `load` names a function that imports."""
    expect(bool(family.summary and family.rule and family.source), f"model family {family.name}: say what it is")
    expect(family.example.startswith(f"{family.name}:"), f"model family {family.name}: example is FAMILY:NAME")
    expect(callable(family.loader()), f"model family {family.name}: load names no function")
    expect(scorers.split_family(family.example) is not None, f"model family {family.name}: --model misses it")


# --- a whole plugin -----------------------------------------------------------------------------


def check_plugin(distribution: str, folder: Path) -> list[str]:
    """Every generic check on every record the installed package `distribution` adds (a task type
    on its own formats' source items where they are of its kinds); the checks run, by name.
    CheckFailed where a record fails, or where the package was refused or adds nothing."""
    plugin = next((p for p in plugins.installed() if p.distribution == distribution), None)
    expect(plugin is not None and bool(plugin.adds), f"{distribution} adds no record (foil plugins lists it)")
    assert plugin is not None
    expect(not plugin.refused, f"{distribution}: refused {plugin.refused}")
    ran, sources = [], []
    for name in plugin.adds.get(plugins.ITEM_KINDS, []):
        check_item_kind(item_kinds.item_kind(name))
        ran.append(f"item kind {name}")
    for name in plugin.adds.get(plugins.FORMATS, []):
        check_format(formats.REGISTRY[name], folder / "formats" / name)
        sources += source_items(formats.REGISTRY[name], folder / "sources" / name)
        ran.append(f"format {name}")
    for name in plugin.adds.get(plugins.METRIC_FAMILIES, []):
        kinds = [item_kind.name for item_kind in item_kinds.REGISTRY.values() if item_kind.metric_family == name]
        for item_kind in kinds:
            check_metric_family(metric_families.METRIC_FAMILIES[name], item_kind)
        ran.append(f"metric family {name}")
    for name in plugin.adds.get(plugins.TASK_TYPES, []):
        task_type = task_types.REGISTRY[name]
        check_task_type(task_type, [item for item in sources if item["kind"] in task_type.item_kinds] or None)
        ran.append(f"task type {name}")
    for name in plugin.adds.get(plugins.SCORERS, []):
        check_scorer_family(scorers.REGISTRY[name])
        ran.append(f"model family {name}")
    return ran
