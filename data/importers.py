"""Parsers for the benchmark file formats, one per import kind, all of one signature.

A parser reads a path and returns a ``Parsed``: the items in file order, the file and row each
came from, per-item outcomes when the file holds a model's results, and warnings. Parsers never
touch the store; ``data.loading.import_path`` writes what they return in one transaction.

Import kinds (``python cli.py import KIND PATH``):

``sugarcrepe``          a folder of ``{category}.json`` files (``data/`` or ``data_unrefined/``)
                        or one such file: ``{id: {filename, caption, negative_caption}}``.
``sugarcrepe-correct``  BiVLC's ``SUGARCREPE_CORRECT_<model>.csv``: a run of 0/1 decisions.
``bivlc-results``       BiVLC's ``BiVLC_<model>.csv``: a run of the seven per-instance scores.
``gpt4v``               SugarCrepe's GPT-4V answers: a folder holding ``positive-first/`` and/or
                        ``negative-first/`` (or one of them), files ``gpt4v-{category}.json``.
``bivlc``               CSV or parquet with ``caption, negative_caption, type, subtype, image,
                        negative_image``; images are paths under ``--images`` or embedded bytes.
``bivlc-candidates``    ``BiVLC_negative_imgs.csv``: four generated images per negative caption.
``hard-positives``      a folder with ``data/X.json`` and ``swapped_data/X.json`` joined row by
                        row (or one ``data/X.json`` file).
``aro``                 ARO's ``visual_genome_relation.json`` / ``visual_genome_attribution.json``.
``crepe``               CREPE's retrieval CSVs (a folder searched recursively, or one file):
                        ``prod_vg_hard_negs_{atom,swap,negate}_complexity_{4..12}.csv`` and
                        ``syst_vg_hard_negs_{seen,unseen}_compounds_in_{dataset}.csv``.
``jsonl``               the generic format: one JSON object per line, see ``parse_jsonl``.
"""

from __future__ import annotations

import ast
import io
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from data.items import Item, ItemShapeError, category_key
from data.reading import BadInputError, check_binary_file, check_text, parse_json, read_csv_rows, read_json, read_text

__all__ = ["BadInputError", "PARSERS", "Parsed", "parse_choice"]


@dataclass(frozen=True)
class ImportWarning:
    """Something imported with a caveat, or skipped."""

    file: str
    row: int | str | None
    message: str


@dataclass(frozen=True)
class RunSpec:
    """The run that imported per-item results belong to."""

    name: str
    kind: str  # "correct", "groups" or "choices"
    model: str | None = None


@dataclass
class Parsed:
    """What a parser read: items in file order, their origins and optional outcomes."""

    source_kind: str
    default_name: str
    items: list[Item] = field(default_factory=list)
    origins: list[tuple[str, int | str]] = field(default_factory=list)
    outcomes: list[dict[str, Any]] | None = None
    run: RunSpec | None = None
    warnings: list[ImportWarning] = field(default_factory=list)
    embedded_images: dict[str, bytes] = field(default_factory=dict)

    def add(self, item: Item, file: Path | str, row: int | str, outcome: dict[str, Any] | None = None) -> None:
        """Append one item with where it came from (and its outcome for results files)."""
        self.items.append(item)
        self.origins.append((str(file), row))
        if outcome is not None:
            if self.outcomes is None:
                self.outcomes = []
            self.outcomes.append(outcome)

    def warn(self, file: Path | str, row: int | str | None, message: str) -> None:
        """Record a warning that the import report will show."""
        self.warnings.append(ImportWarning(str(file), row, message))


Parser = Callable[[Path], Parsed]


# --- reading helpers -------------------------------------------------------------------------


def require_keys(record: Any, keys: tuple[str, ...], file: Path, row: int | str) -> dict[str, Any]:
    """Return `record` if it is an object with non-empty string values at `keys`."""
    if not isinstance(record, dict):
        raise BadInputError(file, row, f"expected an object with keys {list(keys)}, got {type(record).__name__}")
    bad = [k for k in keys if not isinstance(record.get(k), str) or not record[k].strip()]
    if bad:
        raise BadInputError(file, row, f"missing or empty field(s) {bad}; expected {list(keys)}")
    return record


def make_item(file: Path, row: int | str, **fields: Any) -> Item:
    """Build an Item from outside text, checked at the reading boundary: captions, category and
    image paths are text within the limits, free of control characters; truth and meta are
    objects. Any failure is a BadInputError naming file and row."""
    for n, caption in enumerate(fields.get("captions", ())):
        check_text(caption, file, row, f"caption {n + 1}")
    for n, image in enumerate(fields.get("images", ())):
        check_text(image, file, row, f"image {n + 1}")
    check_text(fields.get("category"), file, row, "category")
    for key in ("truth", "meta"):
        if not isinstance(fields.get(key, {}), dict):
            raise BadInputError(file, row, f"{key} is {fields[key]!r} ({type(fields[key]).__name__}); expected an object")
    try:
        return Item(**fields)
    except ItemShapeError as error:
        raise BadInputError(file, row, str(error)) from None


def json_files(path: Path, pattern: str = "*.json") -> list[Path]:
    """`path` itself if it is a file, else the matching files of the folder in sorted order."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise BadInputError(path, None, "no such file or folder")
    files = sorted(path.glob(pattern))
    if not files:
        raise BadInputError(path, None, f"no {pattern} files in this folder")
    return files


def _bool(value: str, file: Path, row: int, column: str) -> bool:
    text = str(value).strip().lower()
    if text in ("true", "1", "1.0"):
        return True
    if text in ("false", "0", "0.0"):
        return False
    raise BadInputError(file, row, f"column {column!r} is {value!r}; expected True/False or 1/0")


# --- SugarCrepe --------------------------------------------------------------------------------

SUGARCREPE_FIELDS = ("filename", "caption", "negative_caption")


def parse_sugarcrepe(path: Path) -> Parsed:
    """SugarCrepe JSON files, one per category: `{id: {filename, caption, negative_caption}}`."""
    parsed = Parsed("sugarcrepe", "sugarcrepe")
    for file in json_files(path):
        records = read_json(file)
        if not isinstance(records, dict):
            raise BadInputError(file, None, "expected an object mapping ids to items")
        category = file.stem.lower()
        for key, record in records.items():
            require_keys(record, SUGARCREPE_FIELDS, file, key)
            parsed.add(_sugarcrepe_pair(record, category, f"{category}/{key}", file, key), file, key)
    return parsed


def _sugarcrepe_pair(record: dict[str, Any], category: str, source_id: str, file: Path, row: int | str) -> Item:
    return make_item(
        file, row, kind="pair", category=category, source_id=source_id,
        captions=(record["caption"], record["negative_caption"]), images=(record["filename"],),
    )


def parse_sugarcrepe_correct(path: Path) -> Parsed:
    """BiVLC's per-instance SugarCrepe results: one 0/1 `correct` per item."""
    model = _model_from_stem(path, "SUGARCREPE_CORRECT_")
    parsed = Parsed("sugarcrepe", "sugarcrepe", run=RunSpec(model, "correct", model))
    columns = ("filename", "caption", "negative_caption", "type", "subtype", "correct")
    for number, row in read_csv_rows(path, columns):
        category = category_key(row["type"], row["subtype"])
        item = _sugarcrepe_pair(row, category, f"{category}/csv-{number}", path, number)
        parsed.add(item, path, number, {"correct": _bool(row["correct"], path, number, "correct")})
    return parsed


GPT4V_ORDERINGS = ("positive-first", "negative-first")
_LEADING_CHOICE = re.compile(r"^\s*(?:output\s*:?\s*)?\(?([12])\)?(?![0-9])", re.IGNORECASE)
_NAMED_OPTION = re.compile(r"\(([12])\)")
_DECLINES = re.compile(r"^\s*(neither|none|i'm sorry|i am sorry|i cannot|i can't|there (is|are) no)", re.IGNORECASE)


def parse_choice(answer: str) -> int | None:
    """The option (1 or 2) a free-form answer picks, or None when it names neither.

    An answer that opens with an option picks it; one that declines ("Neither...", a refusal)
    picks nothing even if it later leans to one; otherwise a single option named in it counts.

    >>> [parse_choice(a) for a in ["(1)", "Output (2).", "2", "The correct caption is (2).", "Neither (1) nor (2)."]]
    [1, 2, 2, 2, None]
    """
    text = answer or ""
    match = _LEADING_CHOICE.match(text)
    if match:
        return int(match.group(1))
    named = set(_NAMED_OPTION.findall(text))
    if _DECLINES.match(text) or len(named) != 1:
        return None
    return int(named.pop())


def parse_gpt4v(path: Path) -> Parsed:
    """SugarCrepe's GPT-4V answers, one ordering folder or a folder holding both."""
    orderings = [o for o in GPT4V_ORDERINGS if (path / o).is_dir()]
    folders = [(o, path / o) for o in orderings] or [(_ordering_of(path), path)]
    parsed = Parsed("sugarcrepe", "sugarcrepe", run=RunSpec("gpt4v", "choices", "gpt-4-vision"))
    for ordering, folder in folders:
        for file in json_files(folder, "gpt4v-*.json"):
            _parse_gpt4v_file(parsed, file, ordering)
    _warn_on_disagreements(parsed)
    return _merge_orderings(parsed)


def _warn_on_disagreements(parsed: Parsed) -> None:
    """Name the answers where our reading differs from the authors' `correct` judgement."""
    for (file, row), outcome in zip(parsed.origins, parsed.outcomes or []):
        answer = next(iter(outcome.values()))
        if answer["reported_correct"] is not None and answer["correct"] != answer["reported_correct"]:
            parsed.warn(file, row, f"answer {answer['answer'][:80]!r} read as choice {answer['choice']}; "
                        f"the authors judged it {'correct' if answer['reported_correct'] else 'wrong'}")


def _merge_orderings(parsed: Parsed) -> Parsed:
    """One item per question: the answers under both orderings become one outcome."""
    merged = Parsed(parsed.source_kind, parsed.default_name, run=parsed.run, warnings=parsed.warnings)
    position: dict[str, int] = {}
    for item, origin, outcome in zip(parsed.items, parsed.origins, parsed.outcomes or []):
        if item.content_key in position:
            (merged.outcomes or [])[position[item.content_key]].update(outcome)
            continue
        position[item.content_key] = len(merged.items)
        merged.add(item, *origin, dict(outcome))
    return merged


def _ordering_of(folder: Path) -> str:
    if folder.name not in GPT4V_ORDERINGS:
        raise BadInputError(folder, None, f"expected a folder named or holding {list(GPT4V_ORDERINGS)}")
    return folder.name


def _parse_gpt4v_file(parsed: Parsed, file: Path, ordering: str) -> None:
    records = read_json(file)
    if not isinstance(records, dict):
        raise BadInputError(file, None, "expected an object mapping ids to answers")
    category = file.stem.removeprefix("gpt4v-").lower()
    for key, record in records.items():
        if not isinstance(record, dict):
            parsed.warn(file, key, f"skipped non-item key {key!r} (value {record!r})")
            continue
        require_keys(record, SUGARCREPE_FIELDS, file, key)
        answer = record.get("answer", {}).get("free_form_answer", "") if isinstance(record.get("answer"), dict) else ""
        choice = parse_choice(answer)
        positive_option = 1 if ordering == "positive-first" else 2
        outcome = {
            "answer": answer, "choice": choice, "parsed": choice is not None,
            "correct": choice == positive_option, "reported_correct": record.get("correct"),
        }
        item = _sugarcrepe_pair(record, category, f"{category}/{key}", file, key)
        parsed.add(item, file, key, {ordering: outcome})


# --- BiVLC ---------------------------------------------------------------------------------------

BIVLC_SCORE_COLUMNS = {
    "text_score_i0": "ipos2t", "text_score_i1": "ineg2t", "image_score_c0": "tpos2i",
    "image_score_c1": "tneg2i", "text_score": "i2t", "image_score": "t2i", "group_score": "group",
}


def parse_bivlc_results(path: Path) -> Parsed:
    """BiVLC's per-instance results: the four directional scores and their combinations."""
    model = _model_from_stem(path, "BiVLC_")
    parsed = Parsed("bivlc", "bivlc", run=RunSpec(model, "groups", model))
    columns = ("caption", "negative_caption", "type", "subtype", *BIVLC_SCORE_COLUMNS)
    for number, row in read_csv_rows(path, columns):
        item = _bivlc_group(row, (), path, number)
        outcome = {key: _bool(row[col], path, number, col) for col, key in BIVLC_SCORE_COLUMNS.items()}
        parsed.add(item, path, number, outcome)
    return parsed


def _bivlc_group(row: dict[str, Any], images: tuple[str, ...], file: Path, number: int) -> Item:
    category = category_key(str(row["type"]), str(row["subtype"]))
    return make_item(
        file, number, kind="group", category=category, source_id=f"{category}/{number}",
        captions=(row["caption"], row["negative_caption"]), images=images,
        meta={"type": str(row["type"]).lower(), "subtype": str(row["subtype"]).lower()},
    )


BIVLC_COLUMNS = ("caption", "negative_caption", "type", "subtype", "image", "negative_image")


def parse_bivlc(path: Path) -> Parsed:
    """BiVLC instances from CSV or parquet; images as relative paths or embedded bytes."""
    parsed = Parsed("bivlc", "bivlc")
    for number, row in _table_rows(path, BIVLC_COLUMNS):
        images = (_image_ref(parsed, row["image"], path, number), _image_ref(parsed, row["negative_image"], path, number))
        parsed.add(_bivlc_group(row, images, path, number), path, number)
    return parsed


def _table_rows(path: Path, columns: tuple[str, ...]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(row number, row) of a CSV (through the reading boundary) or a parquet table."""
    if path.suffix.lower() != ".parquet":
        yield from read_csv_rows(path, columns)
        return
    check_binary_file(path)
    try:
        frame = pd.read_parquet(path)
    except (ValueError, OSError) as error:
        raise BadInputError(path, None, f"cannot read as a parquet table: {error}") from None
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise BadInputError(path, 1, f"missing column(s) {missing}; expected {list(columns)}")
    if frame.empty:
        raise BadInputError(path, None, "has no rows; expected at least one item")
    yield from enumerate(frame.to_dict("records"), start=2)


def _image_ref(parsed: Parsed, value: Any, file: Path, number: int) -> str:
    """A relative image path; embedded bytes are kept for writing under a content name."""
    if isinstance(value, dict) and value.get("bytes"):
        payload = bytes(value["bytes"])
        name = f"embedded/{_digest_bytes(payload)}{Path(str(value.get('path') or '')).suffix or '.png'}"
        parsed.embedded_images[name] = payload
        return name
    if isinstance(value, str) and value.strip():
        return value.strip()
    raise BadInputError(file, number, "image column is empty; expected a path or {bytes, path}")


def _digest_bytes(payload: bytes) -> str:
    import hashlib

    return hashlib.sha256(payload).hexdigest()[:24]


def parse_bivlc_candidates(path: Path) -> Parsed:
    """`BiVLC_negative_imgs.csv`: per negative caption, the four generated candidate images."""
    candidate_columns = tuple(f"hn_img_{i}" for i in range(4))
    columns = ("filename", "caption", "negative_caption", "type", "subtype", *candidate_columns)
    parsed = Parsed("bivlc-candidates", "bivlc-candidates")
    for number, row in read_csv_rows(path, columns):
        category = category_key(row["type"], row["subtype"])
        check_text(row["caption"], path, number, "caption")
        item = make_item(
            path, number, kind="candidates", category=category,
            source_id=f"{category}/{row.get('index') or number}",
            captions=(row["negative_caption"],), images=tuple(row[c] for c in candidate_columns),
            meta={"positive_caption": row["caption"], "source_image": row["filename"]},
        )
        parsed.add(item, path, number)
    return parsed


# --- hard positives, ARO, jsonl ------------------------------------------------------------------

HARD_POSITIVE_FIELDS = ("true_caption", "false_caption", "image_path")


def parse_hard_positives(path: Path) -> Parsed:
    """Hard-positive triples: `data/X.json` (c, c_n) joined row by row with `swapped_data/X.json` (c_p)."""
    originals = json_files(path / "data") if path.is_dir() else [path]
    parsed = Parsed("hard-positives", "hard-positives")
    for original in originals:
        swapped = original.parent.parent / "swapped_data" / original.name
        if not swapped.is_file():
            raise BadInputError(original, None, f"no matching hard-positive file {swapped}")
        _join_hard_positives(parsed, original, swapped)
    return parsed


def _join_hard_positives(parsed: Parsed, original: Path, swapped: Path) -> None:
    rows, positives = read_json(original), read_json(swapped)
    for file, records in ((original, rows), (swapped, positives)):
        if not isinstance(records, list):
            raise BadInputError(file, None, "expected a list of {image_id, true_caption, false_caption, image_path}")
    if len(rows) != len(positives):
        raise BadInputError(swapped, None, f"has {len(positives)} rows but {original} has {len(rows)}; files are misaligned")
    category = original.stem.lower()
    for number, (row, positive) in enumerate(zip(rows, positives), start=1):
        require_keys(row, HARD_POSITIVE_FIELDS, original, number)
        require_keys(positive, HARD_POSITIVE_FIELDS, swapped, number)
        if (row["image_path"], row["false_caption"]) != (positive["image_path"], positive["false_caption"]):
            raise BadInputError(swapped, number, f"does not match {original} row {number} (image or negative caption differ); files are misaligned")
        item = make_item(
            original, number, kind="triple", category=category, source_id=f"{category}/{number}",
            captions=(row["true_caption"], row["false_caption"], positive["true_caption"]),
            images=(row["image_path"],), meta={"image_id": str(row.get("image_id", ""))},
        )
        parsed.add(item, original, number)


def parse_aro(path: Path) -> Parsed:
    """ARO's VG-Relation / VG-Attribution JSON; the bounding box crops the image when scored."""
    parsed = Parsed("aro", "aro")
    for file in json_files(path):
        records = read_json(file)
        if not isinstance(records, list):
            raise BadInputError(file, None, "expected a list of ARO items")
        for number, record in enumerate(records, start=1):
            require_keys(record, ("true_caption", "false_caption", "image_path"), file, number)
            parsed.add(_aro_pair(record, file, number), file, number)
    return parsed


def _aro_pair(record: dict[str, Any], file: Path, number: int) -> Item:
    if isinstance(record.get("relation_name"), str):
        category = record["relation_name"]
    elif isinstance(record.get("attributes"), list) and len(record["attributes"]) == 2:
        category = "_".join(map(str, record["attributes"]))
    else:
        raise BadInputError(file, number, "expected a 'relation_name' or a two-element 'attributes' list")
    try:
        bbox = [float(record[k]) for k in ("bbox_x", "bbox_y", "bbox_w", "bbox_h")]
    except (KeyError, TypeError, ValueError):
        raise BadInputError(file, number, "expected numeric bbox_x, bbox_y, bbox_w, bbox_h") from None
    return make_item(
        file, number, kind="pair", category=category, source_id=f"{file.stem}/{number}",
        captions=(record["true_caption"], record["false_caption"]), images=(record["image_path"],),
        meta={"bbox": bbox, "image_id": str(record.get("image_id", ""))},
    )


# --- CREPE ------------------------------------------------------------------------------------

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
        raise BadInputError(path, None, "no CREPE files here; expected prod_vg_hard_negs_{type}_complexity_{n}.csv or syst_vg_hard_negs_{split}_compounds_in_{dataset}.csv")
    for file, prod, syst in known:
        if prod:
            sets = {prod["type"]: "hard_negs"}
            category = lambda kind, m=prod: f"prod_{kind}_c{int(m['complexity']):02d}"  # noqa: E731
            extra = {"complexity": int(prod["complexity"])}
        else:
            sets = {"atom": "valid_hard_negs_atom", "comp": "valid_hard_negs_comp"}
            category = lambda kind, m=syst: f"syst_{kind}_{m['split']}"  # noqa: E731
            extra = {"split": syst["split"], "trained_on": syst["train"]}
        for number, row in read_csv_rows(file, ("image_id", "caption", *CREPE_BOX, *sets.values())):
            box = _crepe_box(row, file, number)
            for kind, column in sets.items():
                negatives = _caption_list(row[column], file, number, column)
                if not negatives:
                    parsed.warn(file, number, f"no {column}: this row has no {kind} retrieval set")
                    continue
                item = make_item(
                    file, number, kind="retrieval", category=category(kind), source_id=f"{file.stem}/{number}/{kind}",
                    captions=(row["caption"], *negatives), images=(f"{row['image_id'].strip()}.jpg",),
                    meta={"bbox": box, "image_id": row["image_id"].strip(), "negative_type": kind, **extra},
                )
                parsed.add(item, file, number)
    return parsed


def _crepe_box(row: dict[str, str], file: Path, number: int) -> list[float]:
    try:
        return [float(row[k]) for k in CREPE_BOX]
    except (TypeError, ValueError):
        raise BadInputError(file, number, f"expected numbers in {list(CREPE_BOX)}, got {[row.get(k) for k in CREPE_BOX]}") from None


def _caption_list(text: str, file: Path, number: int, column: str) -> list[str]:
    """A column holding a Python list literal of captions, as CREPE writes them."""
    try:
        value = ast.literal_eval(text) if text and text.strip() else []
    except (ValueError, SyntaxError):
        value = None
    if not isinstance(value, list) or not all(isinstance(c, str) for c in value):
        raise BadInputError(file, number, f"column {column!r} is {text[:60]!r}; expected a list of captions such as ['a dog', 'a cat']")
    return value


def parse_jsonl(path: Path) -> Parsed:
    """The generic format: one object per line.

    Keys: ``kind`` (pair, triple, group, retrieval, candidates), ``category``, ``id``,
    ``captions`` (list), ``images`` (list of paths under the image root, may be empty), and
    optional ``truth`` and ``meta`` objects. List order follows ``data/items.py``.
    """
    parsed = Parsed("jsonl", path.stem)
    if not path.exists():
        raise BadInputError(path, None, "no such file")
    for number, line in enumerate(io.StringIO(read_text(path)), start=1):
        if line.strip():
            parsed.add(_jsonl_item(parse_json(line, path, number), path, number), path, number)
    return parsed


def _jsonl_item(record: Any, file: Path, number: int) -> Item:
    require_keys(record, ("kind", "category"), file, number)
    captions, images = record.get("captions"), record.get("images", [])
    if not isinstance(captions, list) or not isinstance(images, list):
        raise BadInputError(file, number, "'captions' and 'images' must be lists")
    return make_item(
        file, number, kind=record["kind"], category=record["category"],
        source_id=str(record.get("id", number)), captions=tuple(captions), images=tuple(images),
        truth=record.get("truth", {}), meta=record.get("meta", {}),
    )


def _model_from_stem(path: Path, prefix: str) -> str:
    if not path.is_file():
        raise BadInputError(path, None, "is a folder; expected a file" if path.is_dir() else "no such file")
    return path.stem.removeprefix(prefix) or path.stem


PARSERS: dict[str, Parser] = {
    "sugarcrepe": parse_sugarcrepe,
    "sugarcrepe-correct": parse_sugarcrepe_correct,
    "bivlc-results": parse_bivlc_results,
    "gpt4v": parse_gpt4v,
    "bivlc": parse_bivlc,
    "bivlc-candidates": parse_bivlc_candidates,
    "hard-positives": parse_hard_positives,
    "aro": parse_aro,
    "crepe": parse_crepe,
    "jsonl": parse_jsonl,
}
