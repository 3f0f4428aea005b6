"""What'sUp read and written as its repository's `dataset_zoo/aro_datasets.py` has it: the QA
files' prepositions by its if/elif chain, images where its loaders open them, and every instance
written back into its own file as it was given."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from foil_studio.analysis.exports import export_dataset
from foil_studio.data import store
from foil_studio.data.formats.whatsup import qa_preposition
from foil_studio.data.loading import import_path

# (subset, caption, the repository's preposition): its `all_prepositions`, branch by branch
QA_PREPOSITIONS = [
    ("coco_one", "A dog on the left", "left"),
    ("vg_one", "A cup on the right", "right"),
    ("coco_two", "A dog to the left of a cat", "left"),
    ("coco_two", "A dog to the right of a cat", "right"),
    ("coco_two", "A lamp above a table", "above"),
    ("coco_two", "A table below a lamp", "below"),  # whatever else: below
    ("coco_two", "A dog left of a cat right of a cup", "left"),  # the chain's first match wins
    ("coco_two", "A cat in front of a dog", "below"),  # COCO has no front/behind branch
    ("vg_two", "A dog to the left of a cat", "left"),
    ("vg_two", "A dog to the right of a cat", "right"),
    ("vg_two", "A cat in front of a dog", "front"),
    ("vg_two", "A cat behind a dog", "behind"),
    ("vg_two", "A lamp above a table", "top"),  # VG has no above branch: top
    ("vg_two", "A cat right of a dog behind a cup", "right"),
]


@pytest.mark.parametrize(("subset", "caption", "preposition"), QA_PREPOSITIONS)
def test_qa_prepositions_follow_the_repositorys_rules_in_its_order(subset, caption, preposition):
    assert qa_preposition(caption, subset) == preposition


def write_all_files(folder: Path) -> dict[str, object]:
    """One instance or two of each of What'sUp's six files, as the repository ships them."""
    given: dict[str, object] = {
        "controlled_images_dataset": [
            {
                "image_path": "data/controlled_images/mug_on_table.jpeg",
                "caption_options": ["A mug on a table", "A mug under a table", "A mug left of a table", "A mug"],
            },
        ],
        "controlled_clevr_dataset": [
            {
                "image_path": "data/controlled_clevr/cube_behind_sphere.jpeg",
                "caption_options": ["A cube behind a sphere", "A cube in front of a sphere"],
            },
        ],
        "coco_qa_one_obj": [[139, "A dog on the left", "A dog on the right"]],
        "coco_qa_two_obj": [[285, "A cat above a dog", "A cat below a dog"]],
        "vg_qa_one_obj": [[2417, "A cup on the right", "A cup on the left"]],
        "vg_qa_two_obj": [[51, "A cat behind a dog", "A cat in front of a dog"], [52, "a b", "c d"]],
    }
    (folder / "data").mkdir(parents=True)
    for name, records in given.items():
        (folder / "data" / f"{name}.json").write_text(json.dumps(records))
    return given


def test_qa_images_are_named_where_the_repositorys_loaders_open_them(fresh_db, tmp_path):
    write_all_files(tmp_path)
    import_path(fresh_db, "whatsup", tmp_path / "data", name="spatial")
    items = store.list_items(fresh_db, store.get_dataset(fresh_db, "spatial")["id"], limit=100)
    qa = {item["source_id"]: item for item in items if not item["category"].startswith("controlled")}
    assert {source: (item["category"], item["images"][0]) for source, item in qa.items()} == {
        "coco_qa_one_obj/0": ("coco_one", "val2017/000000000139.jpg"),
        "coco_qa_two_obj/0": ("coco_two", "val2017/000000000285.jpg"),
        "vg_qa_one_obj/0": ("vg_one", "vg_images/2417.jpg"),
        "vg_qa_two_obj/0": ("vg_two", "vg_images/51.jpg"),
        "vg_qa_two_obj/1": ("vg_two", "vg_images/52.jpg"),
    }
    assert qa["coco_qa_two_obj/0"]["captions"] == ["A cat above a dog", "A cat below a dog"]
    assert [qa[s]["meta"]["preposition"] for s in ("coco_qa_two_obj/0", "vg_qa_two_obj/0", "vg_qa_two_obj/1")] == [
        "above",
        "behind",
        "top",
    ]
    assert qa["vg_qa_one_obj/0"]["meta"]["image_id"] == 2417


def test_controlled_images_are_found_under_the_image_root_with_leading_folders_dropped(fresh_db, tmp_path):
    write_all_files(tmp_path)
    images = tmp_path / "images"
    (images / "controlled_images").mkdir(parents=True)
    (images / "controlled_images" / "mug_on_table.jpeg").write_bytes(b"")  # found one folder down
    import_path(fresh_db, "whatsup", tmp_path / "data", images=images, name="spatial")
    items = store.list_items(fresh_db, store.get_dataset(fresh_db, "spatial")["id"], limit=100)
    by_source = {item["source_id"]: item for item in items}
    assert by_source["controlled_images_dataset/0"]["images"] == ["controlled_images/mug_on_table.jpeg"]
    # not found: kept as given (the import reports it missing)
    assert by_source["controlled_clevr_dataset/0"]["images"] == ["data/controlled_clevr/cube_behind_sphere.jpeg"]
    assert by_source["controlled_images_dataset/0"]["meta"]["image_path"] == "data/controlled_images/mug_on_table.jpeg"


def test_an_export_writes_each_instance_back_into_its_own_file_as_it_was_given(fresh_db, tmp_path):
    given = write_all_files(tmp_path / "source")
    images = tmp_path / "images" / "controlled_images"
    images.mkdir(parents=True)
    (images / "mug_on_table.jpeg").write_bytes(b"")
    import_path(fresh_db, "whatsup", tmp_path / "source" / "data", images=tmp_path / "images", name="spatial")
    files = export_dataset(fresh_db, "spatial", "whatsup", tmp_path / "written")["files"]
    assert sorted(files) == sorted(f"{name}.json" for name in given)
    for name, records in given.items():
        assert json.loads((tmp_path / "written" / f"{name}.json").read_text()) == records, name
