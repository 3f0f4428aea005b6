"""CREPE (Ma et al. 2023): retrieval sets of a caption and its hard negatives per image region,
from the productivity and systematicity CSVs."""

from __future__ import annotations

import ast
import csv
import re
from collections import defaultdict
from pathlib import Path

from foil_studio.data.formats.base import ExportContext, Format, Parsed, StoredItem, make_item
from foil_studio.data.reading import BadInputError, read_csv_rows

CREPE_PRODUCTIVITY = re.compile(r"prod_vg_hard_negs_(?P<type>atom|swap|negate)_complexity_(?P<complexity>\d+)\.csv")
CREPE_SYSTEMATICITY = re.compile(r"syst_vg_hard_negs_(?P<split>seen|unseen)_compounds_in_(?P<train>\w+)\.csv")
CREPE_BOX = ("x", "y", "width", "height")


def parse_crepe(path: Path) -> Parsed:
    """CREPE's retrieval sets: one caption and its hard negatives per image region.

    Productivity files give one set per row (column ``hard_negs``), category
    ``prod_{type}_c{complexity}``; systematicity files give up to two per row (columns
    ``valid_hard_negs_atom`` and ``valid_hard_negs_comp``), categories ``syst_{type}_{split}``.
    Images are ``{image_id}.jpg`` under the image root (Visual Genome's two folders merged),
    cropped to the row's x, y, width, height when scored. Rows with no valid negative are skipped
    with a warning.
    """
    parsed = Parsed("crepe", "crepe")
    files = [path] if path.is_file() else sorted(path.rglob("*.csv")) if path.is_dir() else []
    known = [(f, CREPE_PRODUCTIVITY.fullmatch(f.name), CREPE_SYSTEMATICITY.fullmatch(f.name)) for f in files]
    known = [(f, prod, syst) for f, prod, syst in known if prod or syst]
    if not known:
        raise BadInputError(
            path,
            None,
            "no CREPE files here; expected prod_vg_hard_negs_{type}_complexity_{n}.csv or "
            "syst_vg_hard_negs_{split}_compounds_in_{dataset}.csv",
        )
    for file, prod, syst in known:
        if prod:
            sets = {prod["type"]: "hard_negs"}
            category = lambda negative_set, m=prod: f"prod_{negative_set}_c{int(m['complexity']):02d}"  # noqa: E731
            extra: dict[str, int | str] = {"complexity": int(prod["complexity"])}
        else:
            sets = {"atom": "valid_hard_negs_atom", "comp": "valid_hard_negs_comp"}
            category = lambda negative_set, m=syst: f"syst_{negative_set}_{m['split']}"  # noqa: E731
            assert syst is not None  # a known file matches one of the two names
            extra = {"split": syst["split"], "trained_on": syst["train"]}
        for number, row in read_csv_rows(file, ("image_id", "caption", *CREPE_BOX, *sets.values())):
            box = _crepe_box(row, file, number)
            for negative_set, column in sets.items():
                negatives = _caption_list(row[column], file, number, column)
                if not negatives:
                    parsed.warn(file, number, f"no {column}: this row has no {negative_set} retrieval set")
                    continue
                item = make_item(
                    file,
                    number,
                    kind="retrieval",
                    category=category(negative_set),
                    source_id=f"{file.stem}/{number}/{negative_set}",
                    captions=(row["caption"], *negatives),
                    images=(f"{row['image_id'].strip()}.jpg",),
                    meta={"bbox": box, "image_id": row["image_id"].strip(), "negative_type": negative_set, **extra},
                )
                parsed.add(item, file, number)
    return parsed


def _crepe_box(row: dict[str, str], file: Path, number: int) -> list[float]:
    try:
        return [float(row[k]) for k in CREPE_BOX]
    except (TypeError, ValueError):
        raise BadInputError(
            file, number, f"expected numbers in {list(CREPE_BOX)}, got {[row.get(k) for k in CREPE_BOX]}"
        ) from None


def _caption_list(text: str, file: Path, number: int, column: str) -> list[str]:
    """A column holding a Python list literal of captions, as CREPE writes them."""
    try:
        value = ast.literal_eval(text) if text and text.strip() else []
    except (ValueError, SyntaxError):
        value = None
    if not isinstance(value, list) or not all(isinstance(c, str) for c in value):
        raise BadInputError(
            file, number, f"column {column!r} is {text[:60]!r}; expected a list of captions such as ['a dog', 'a cat']"
        )
    return value


def write_crepe(items: list[StoredItem], out: Path, context: ExportContext) -> list[str]:
    """The CSV each item came from (named by its source id), one row per image region: the
    productivity files' `hard_negs`, the systematicity files' atom and compound columns."""
    rows: dict[str, dict[str, dict[str, str]]] = defaultdict(dict)
    for item in items:
        stem, number, negative_type = item["source_id"].rsplit("/", 2)
        row = rows[stem].setdefault(
            number,
            {
                "image_id": str(item["meta"].get("image_id", "")),
                "caption": item["captions"][0],
                **{k: f"{v:g}" for k, v in zip(CREPE_BOX, item["meta"].get("bbox") or (0, 0, 0, 0))},
            },
        )
        column = "hard_negs" if stem.startswith("prod_") else f"valid_hard_negs_{negative_type}"
        row[column] = repr(list(item["captions"][1:]))
    out.mkdir(parents=True, exist_ok=True)
    for stem, by_number in rows.items():
        sets = ["hard_negs"] if stem.startswith("prod_") else ["valid_hard_negs_atom", "valid_hard_negs_comp"]
        with (out / f"{stem}.csv").open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, ["image_id", "caption", *CREPE_BOX, *sets], restval="[]")
            writer.writeheader()
            writer.writerows(by_number[n] for n in sorted(by_number, key=int))
    return sorted(f"{stem}.csv" for stem in rows)


def write_crepe_source(folder: Path) -> Path:
    """A small CREPE folder: a productivity CSV and a systematicity CSV, two rows each."""
    folder.mkdir(parents=True, exist_ok=True)
    _write_csv(
        folder / "prod_vg_hard_negs_swap_complexity_4.csv",
        [
            ["image_id", "caption", "x", "y", "width", "height", "hard_negs"],
            ["11", "a dog on a red mat", "0", "1", "50", "60", "['a mat on a red dog', 'a red dog on a mat']"],
            ["12", "a cup left of a plate", "3", "4", "20", "20", "['a plate left of a cup']"],
        ],
    )
    _write_csv(
        folder / "syst_vg_hard_negs_unseen_compounds_in_cc12m.csv",
        [
            ["image_id", "caption", "x", "y", "width", "height", "valid_hard_negs_atom", "valid_hard_negs_comp"],
            ["13", "a tall man", "0", "0", "9", "9", "['a short man']", "['a tall woman', 'a small man']"],
            ["14", "a wet road", "0", "0", "9", "9", "[]", "['a dry road']"],
        ],
    )
    return folder


def _write_csv(file: Path, rows: list[list[str]]) -> None:
    with file.open("w", newline="") as handle:
        csv.writer(handle).writerows(rows)


CREPE = Format(
    "crepe",
    "CREPE's retrieval CSVs, searched recursively: `prod_vg_hard_negs_{atom,swap,negate}_complexity_{n}.csv` (category "
    "`prod_swap_c04`...) and `syst_vg_hard_negs_{seen,unseen}_compounds_in_{dataset}.csv` (categories "
    "`syst_atom_unseen`...); images `{image_id}.jpg` (put Visual Genome's two folders in one), cropped to the row's "
    "box; Recall@1/3/5",
    "./foil import crepe crepe/ --images vg/all_images",
    parse_crepe,
    write_crepe,
    writes=("retrieval",),
    ties_because="a negative scoring exactly as the positive ranks above it",
    write_source=write_crepe_source,
)
