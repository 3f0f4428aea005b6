"""What'sUp (Kamath, Hessel and Chang, EMNLP 2023): spatial relations, read as the repository's
``dataset_zoo/aro_datasets.py`` (github.com/amitakamath/whatsup_vlms) reads them.

* Controlled images: ``controlled_images_dataset.json`` (subset A: on, under, left of, right of)
  and ``controlled_clevr_dataset.json`` (subset B: in front of, behind, left of, right of), a
  list of ``{image_path, caption_options}`` with four captions, the first one right. Each image
  file is ``{object}_{preposition}_{object}.jpeg``; the four images of one object pair form a
  *set*, and left/right and on/under (A) or in-front/behind (B) form *pairs*.
* COCO-QA and VG-QA: ``coco_qa_{one,two}_obj.json`` and ``vg_qa_{one,two}_obj.json``, a list
  of ``[image_id, right caption, wrong caption]``; images ``val2017/{id:012}.jpg`` and
  ``vg_images/{id}.jpg``.

Every instance is a ``retrieval`` item (right caption first). Its category is the file's
subset (``controlled_a``, ``coco_one``...: the columns of the paper's table) and its
preposition is kept in ``meta``. Metrics as the repository's ``evaluate_scores``: individual
accuracy (the argmax is the right caption: a tie picks it, as numpy's argmax picks the first),
pair accuracy and set accuracy (every image of the pair or set right).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path, PurePosixPath
from typing import Any

from foil_studio.data.formats.base import (
    ExportContext,
    Format,
    Parsed,
    StoredItem,
    json_files,
    make_item,
    require_keys,
    write_json_files,
)
from foil_studio.data.items import Item
from foil_studio.data.reading import BadInputError, check_id, read_json

CONTROLLED = {"controlled_images_dataset": "controlled_a", "controlled_clevr_dataset": "controlled_b"}
QA = {
    "coco_qa_one_obj": "coco_one",
    "coco_qa_two_obj": "coco_two",
    "vg_qa_one_obj": "vg_one",
    "vg_qa_two_obj": "vg_two",
}
FILES = {**CONTROLLED, **QA}
# The slots of a controlled image (the word after the first object), and the pairs they form.
PAIRS = {
    "left": "left-right",
    "right": "left-right",
    "on": "on-under",
    "under": "on-under",
    "in-front": "front-behind",
    "behind": "front-behind",
}


def parse_whatsup(path: Path) -> Parsed:
    """Every What'sUp file at `path` (one file, or a folder holding any of them)."""
    files = [f for f in json_files(path) if f.stem in FILES]
    if not files:
        raise BadInputError(path, None, f"no What'sUp file; expected one of {sorted(f'{name}.json' for name in FILES)}")
    parsed = Parsed("whatsup", "whatsup")
    for file in files:
        records = read_json(file)
        if not isinstance(records, list):
            raise BadInputError(file, None, "expected a list of instances")
        read = _controlled_item if file.stem in CONTROLLED else _qa_item
        for number, record in enumerate(records, start=1):
            parsed.add(read(record, file, number), file, number)
    return parsed


def controlled_groups(image_path: str, subset: str) -> tuple[str, dict[str, str]]:
    """The preposition slot of a controlled image and the pair and set it belongs to.

    >>> controlled_groups("data/controlled_images/beer-bottle_left_of_armchair.jpeg", "controlled_a")
    ('left', {'pair': 'controlled_a/beer-bottle/armchair/left-right', 'set': 'controlled_a/beer-bottle/armchair'})
    """
    parts = PurePosixPath(image_path).stem.split("_")
    if len(parts) < 3 or parts[1] not in PAIRS:
        raise ValueError(f"image name {PurePosixPath(image_path).name!r} is not object_preposition_object")
    slot, pair = parts[1], f"{subset}/{parts[0]}/{parts[-1]}"
    return slot, {"pair": f"{pair}/{PAIRS[slot]}", "set": pair}


def _controlled_item(record: Any, file: Path, number: int) -> Item:
    require_keys(record, ("image_path",), file, number)
    options = record.get("caption_options")
    if not isinstance(options, list) or len(options) < 2:
        raise BadInputError(
            file, number, f"caption_options is {options!r}; expected a list of captions, the right one first"
        )
    subset = CONTROLLED[file.stem]
    try:
        slot, groups = controlled_groups(record["image_path"], subset)
    except ValueError as error:
        raise BadInputError(file, number, str(error)) from None
    return make_item(
        file,
        number,
        kind="retrieval",
        category=subset,
        source_id=f"{file.stem}/{number - 1}",
        captions=tuple(options),
        images=(record["image_path"].strip(),),
        meta={"preposition": slot, "groups": groups, "image_path": record["image_path"]},
    )


def _qa_item(record: Any, file: Path, number: int) -> Item:
    if not (
        isinstance(record, list) and len(record) == 3 and all(isinstance(v, str) and v.strip() for v in record[1:])
    ):
        raise BadInputError(
            file, number, f"expected [image_id, right caption, wrong caption], got {str(record)[:80]!r}"
        )
    given, right, wrong = record
    image_id = check_id(given, file, number, "image id")  # a COCO or Visual Genome image id
    subset = QA[file.stem]
    image = f"val2017/{str(image_id).zfill(12)}.jpg" if subset.startswith("coco") else f"vg_images/{image_id}.jpg"
    return make_item(
        file,
        number,
        kind="retrieval",
        category=subset,
        source_id=f"{file.stem}/{number - 1}",
        captions=(right, wrong),
        images=(image,),
        meta={"preposition": qa_preposition(right, subset), "image_id": given},  # as given: the export writes it back
    )


def qa_preposition(caption: str, subset: str) -> str:
    """The preposition of a COCO-QA / VG-QA caption, by the repository's rules.

    >>> qa_preposition("A dog to the left of a cat", "coco_two"), qa_preposition("A dog on the left", "coco_one")
    ('left', 'left')
    """
    if subset.endswith("one"):
        return caption.split()[-1]
    coco = subset.startswith("coco")
    phrases = (
        ("left of", "left"),
        ("right of", "right"),
        *((("above", "above"),) if coco else (("front of", "front"), ("behind", "behind"))),
    )
    return next((name for phrase, name in phrases if phrase in caption), "below" if coco else "top")


def place_images(parsed: Parsed, root: Path) -> Parsed:
    """Controlled images as found under `root`: the path as given (`data/controlled_images/x.jpeg`),
    else with leading folders dropped one at a time (`controlled_images/x.jpeg`, `x.jpeg`)."""
    return dataclasses.replace(
        parsed, items=[dataclasses.replace(item, images=(_found(root, item.images[0]),)) for item in parsed.items]
    )


def _found(root: Path, path: str) -> str:
    parts = PurePosixPath(path).parts
    for start in range(len(parts)):
        candidate = PurePosixPath(*parts[start:])
        if (root / candidate).is_file():
            return str(candidate)
    return path


def write_whatsup(items: list[StoredItem], out: Path, context: ExportContext) -> list[str]:
    """Each instance back into its file: controlled `{image_path, caption_options}`, QA `[id, right, wrong]`."""
    files: dict[str, list[Any]] = {}
    for item in items:
        name = item["source_id"].split("/", 1)[0]
        if name in CONTROLLED:
            record: Any = {
                "image_path": item["meta"].get("image_path", item["images"][0]),
                "caption_options": list(item["captions"]),
            }
        else:
            record = [item["meta"].get("image_id"), *item["captions"][:2]]
        files.setdefault(name, []).append(record)
    return write_json_files(out, files)


def write_whatsup_source(folder: Path) -> Path:
    """A small `data/` folder in `folder`, without images: two object pairs in four prepositions and
    three COCO-QA questions."""
    rows = []
    for a, b in (("mug", "table"), ("dog", "chair")):
        for preposition in ("left_of", "right_of", "on", "under"):
            words = preposition.replace("_", " ")
            others = [o for o in ("left of", "right of", "on", "under") if o != words]
            rows.append(
                {
                    "image_path": f"data/controlled_images/{a}_{preposition}_{b}.jpeg",
                    "caption_options": [f"A {a} {words} a {b}", *(f"A {a} {o} a {b}" for o in others)],
                }
            )
    qa = [
        [139, "A dog on the left", "A dog on the right"],
        [285, "A cat on the right", "A cat on the left"],
        [632, "A cup on the left", "A cup on the right"],
    ]
    write_json_files(folder / "data", {"controlled_images_dataset": rows, "coco_qa_one_obj": qa})
    return folder / "data"


WHATSUP = Format(
    "whatsup",
    "What'sUp's `controlled_images_dataset.json`, `controlled_clevr_dataset.json` (four captions, the first right) and "
    "`coco_qa_{one,two}_obj.json`, `vg_qa_{one,two}_obj.json` (`[image_id, right, wrong]`); category = subset; "
    "individual, pair and set accuracy",
    "./foil import whatsup whatsup_vlms/data --images whatsup_vlms/data",
    parse_whatsup,
    write_whatsup,
    writes=("retrieval",),
    place_images=place_images,
    metric_names={"recall_at_1": "individual_accuracy", "recall_at_3": None, "recall_at_5": None},
    ties="right",
    ties_because="What'sUp takes numpy's argmax over the captions, the right one first: a tie picks it",
    groups=("pair", "set"),
    write_source=write_whatsup_source,
)
