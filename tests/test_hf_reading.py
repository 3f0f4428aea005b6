"""`import hf`'s reading (`data.formats.hf`) part by part, each refusal's whole message pinned:
mutation testing (issue 53) found the messages and the small rules between them (which split is a
part, which config an aggregate, which name a shard) reached by the layout tests but not held."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from foil_studio.api import open_store
from foil_studio.cli.main import main as cli_main
from foil_studio.data import paths
from foil_studio.data.formats import REGISTRY, BadInputError, hf
from foil_studio.data.formats.base import HubLayout, Parsed
from foil_studio.data.items import Item

SCPP = {"caption": "a red cup", "caption2": "a cup that is red", "negative_caption": "a grey cup"}


def refusal(call, *args, **kwargs) -> str:
    """The whole message of the `BadInputError` that `call(*args)` raises."""
    with pytest.raises(BadInputError) as refused:
        call(*args, **kwargs)
    return str(refused.value)


def split(config: str | None, name: str | None, rows: list[dict] | None = None) -> hf.Split:
    return hf.Split(config, name, Path(f"{config}-{name}.parquet"), rows if rows is not None else [])


def parquet(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


# --- splits, categories, layouts -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "name", "category"),
    [
        ("swap_obj", "test", "swap_obj"),
        ("swap_obj", "train", "swap_obj"),
        ("swap_obj", "validation", "swap_obj"),
        ("swap_obj", "swap_att", "swap_att"),
        ("swap_obj", None, "swap_obj"),
        (None, "test", None),
        (None, "replace_rel", "replace_rel"),
    ],
)
def test_a_splits_category_is_its_name_unless_the_name_is_only_a_part(config, name, category):
    assert split(config, name).category == category


def test_a_split_is_described_by_its_name_and_config():
    assert split("swap_obj", "test").describe() == "split 'test' of config 'swap_obj'"
    assert split(None, "swap_obj").describe() == "split 'swap_obj' of no named config"


def test_the_layouts_are_every_formats_tried_with_the_most_columns_first():
    layouts = hf.hub_layouts()
    sizes = [len(layout.columns) for _, layout in layouts]
    assert len(layouts) == sum(len(fmt.hub_layouts) for fmt in REGISTRY.values())
    assert sizes == sorted(sizes, reverse=True) and sizes[0] > sizes[-1]


LAYOUT = HubLayout(frozenset(), lambda *_: None, category_name=lambda name: name.upper())


def test_categories_are_the_splits_own_by_the_layouts_spelling_in_order():
    splits = [split("replace", "test"), split(None, "add"), split("swap", "swap")]
    assert hf.categories(splits, Path("copy"), LAYOUT) == [
        ("ADD", splits[1]),
        ("REPLACE", splits[0]),
        ("SWAP", splits[2]),
    ]


def test_a_given_category_names_a_split_that_is_only_a_part_and_nothing_else():
    only_a_part = split(None, "train")
    assert hf.categories([only_a_part], Path("copy"), LAYOUT, "swap_att") == [("SWAP_ATT", only_a_part)]
    said = refusal(hf.categories, [split(None, "swap_obj")], Path("copy"), LAYOUT, "swap_att")
    assert said == "copy: --category 'swap_att': split 'swap_obj' of no named config names its own category 'swap_obj'"


def test_a_split_that_names_no_category_is_refused_with_the_way_out():
    said = refusal(hf.categories, [split(None, "test")], Path("copy"), LAYOUT)
    assert said == (
        f"copy: split 'test' of no named config names no category; {hf.EXPECTED}; or pass --category NAME where "
        "only the repository's name says it (HuggingFaceM4/SugarCrepe_swap_att: --category swap_att)"
    )


def test_two_splits_of_one_category_are_refused_naming_both():
    said = refusal(hf.categories, [split(None, "swap_att"), split("x", "SWAP_ATT")], Path("copy"), LAYOUT)
    assert said == (
        "copy: split 'swap_att' of no named config and split 'SWAP_ATT' of config 'x' would both be category "
        f"'SWAP_ATT'; {hf.EXPECTED}"
    )


def test_the_layout_is_the_one_whose_columns_every_split_holds():
    scpp = [split(None, "a", [SCPP, {**SCPP, "extra": 1}]), split(None, "b", [{**SCPP, "image": "x.png"}])]
    assert hf.layout_of(scpp, Path("copy"))[0].name == "sugarcrepe-pp"
    # one split lacks caption2: only SugarCrepe's two columns are in every split
    pairs = [split(None, "a", [SCPP]), split(None, "b", [{"caption": "a", "negative_caption": "b"}])]
    assert hf.layout_of(pairs, Path("copy"))[0].name == "sugarcrepe"


def test_columns_of_no_benchmark_are_refused_naming_them_and_every_layout():
    known = "; ".join(f"{fmt.name}: {sorted(layout.columns)}" for fmt, layout in hf.hub_layouts())
    said = refusal(hf.layout_of, [split(None, "a", [{"text": "a"}, {"label": 1}])], Path("copy"))
    assert said == f"copy: columns ['label', 'text'] match no known benchmark (expected {known})"


def test_a_copy_that_names_its_categories_takes_no_category_and_an_aggregate_is_said(tmp_path):
    aro = parquet(tmp_path / "aro" / "test-00000-of-00001.parquet", [{"image": "a.png", "bbox": [0, 0, 1, 1]}])
    table = pa.Table.from_pylist([{"image": "a.png", "bbox": [0, 0, 1, 1], "true_caption": "a", "false_caption": "b"}])
    pq.write_table(table, aro)
    assert refusal(hf.parse_hf, aro.parent, "swap_att") == (
        f"{aro.parent}: --category 'swap_att': this copy's rows name their own categories"
    )
    for config, captions in (("a", ["1"]), ("all", ["1", "2"]), ("b", ["2"])):
        rows = [{**SCPP, "caption": caption, "filename": f"{caption}.jpg"} for caption in captions]
        parquet(tmp_path / "scpp" / config / "test-00000-of-00001.parquet", rows)
    parsed = hf.parse_hf(tmp_path / "scpp")
    assert [(w.file, w.row, w.message) for w in parsed.warnings] == [
        (
            str(tmp_path / "scpp"),
            None,
            "config 'all' holds every other config's rows together: skipped (its folder alone imports it)",
        )
    ]
    assert sorted(item.category for item in parsed.items) == ["a", "b"]


WINOGROUND = {"image_0": "a.png", "image_1": "b.png", "caption_0": "x", "caption_1": "y", "collapsed_tag": "Object"}


def test_a_copy_naming_its_categories_keeps_each_rows_file_and_row_and_refuses_an_id_twice(tmp_path):
    files = [parquet(tmp_path / "wino" / f"{name}-00000-of-00001.parquet", [WINOGROUND]) for name in ("a", "b")]
    parsed = hf.parse_hf(files[0])
    assert parsed.origins == [(str(files[0]), 1)]
    said = refusal(hf.parse_hf, tmp_path / "wino")
    assert said == (
        f"{tmp_path / 'wino'}: {files[1]} row 1 and {files[0]} row 1 are both item '0' of category 'Object'; "
        "expected one split per category"
    )


# --- aggregates and row identity -------------------------------------------------------------------


def rows(*texts: str) -> list[dict]:
    return [{"caption": text} for text in texts]


def test_a_config_holding_every_other_configs_rows_is_skipped():
    splits = [
        split("a", "test", rows("1", "2")),
        split("all", "test", rows("3", "1", "2")),
        split("b", "test", rows("3")),
    ]
    kept, skipped = hf.without_aggregates(splits)
    assert skipped == ["all"] and kept == [splits[0], splits[2]]


def test_an_aggregate_needs_two_configs_beside_it_and_counts_repeated_rows():
    assert hf.without_aggregates([split("a", "test", rows("1")), split("b", "test", rows("1"))]) == (
        [split("a", "test", rows("1")), split("b", "test", rows("1"))],
        [],
    )
    # the same rows once fewer, or once more, or as many rows of another content, are not the others together
    for held in (rows("1", "2"), rows("1", "2", "2", "3"), rows("1", "2", "4")):
        splits = [split("a", "test", rows("1")), split("all", "test", held), split("b", "test", rows("2", "3"))]
        assert hf.without_aggregates(splits) == (splits, [])


def test_splits_of_no_named_config_are_never_an_aggregate_and_always_kept():
    splits = [split(None, "a", rows("1", "2")), split("b", "test", rows("1")), split("c", "test", rows("2"))]
    assert hf.without_aggregates(splits) == (splits, [])
    splits.append(split("d", "test", rows("1", "2")))
    assert hf.without_aggregates(splits) == ([*splits[:3]], ["d"])


def test_an_aggregate_of_aggregates_is_compared_without_the_ones_already_skipped():
    # `all` holds a, b and z; z holds a and b: once `all` is skipped, z is a and b together
    splits = [
        split("a", "test", rows("1")),
        split("all", "test", rows("1", "2", "1", "2")),
        split("b", "test", rows("2")),
        split("z", "test", rows("1", "2")),
    ]
    assert hf.without_aggregates(splits) == ([splits[0], splits[2]], ["all", "z"])


def test_a_rows_key_is_its_content_with_bytes_by_their_digest():
    digest = hashlib.sha256(b"png").hexdigest()
    expected = hashlib.sha256(json.dumps({"a": 1, "image": digest}, sort_keys=True).encode()).hexdigest()
    assert hf._row_key({"image": b"png", "a": 1}) == expected
    assert hf._row_key({"image": b"png"}) != hf._row_key({"image": b"jpg"})
    assert hf._row_key({"path": Path("a")}) != hf._row_key({"path": Path("b")})  # other values by their text


def test_two_items_of_one_category_and_source_id_are_refused_naming_both_rows():
    parsed = Parsed("sugarcrepe", "sugarcrepe")
    for row in (3, 8):
        parsed.add(Item("pair", "swap_att", "7", ("a", "b"), ("x.png",)), "f.parquet", row)
    said = refusal(hf._check_unique_ids, parsed, Path("copy"))
    assert said == (
        "copy: f.parquet row 8 and f.parquet row 3 are both item '7' of category 'swap_att'; "
        "expected one split per category"
    )
    parsed.items[1] = Item("pair", "swap_obj", "7", ("a", "b"), ("x.png",))
    hf._check_unique_ids(parsed, Path("copy"))


def test_items_and_their_origins_never_fall_out_of_step():
    parsed = Parsed("sugarcrepe", "sugarcrepe", items=[Item("pair", "c", "1", ("a", "b"), ("x.png",))], origins=[])
    for check in (hf._check_unique_ids, hf.place_images):
        with pytest.raises(ValueError, match="zip"):
            check(parsed, Path("copy"))


# --- image paths -----------------------------------------------------------------------------------


def test_image_paths_inside_the_root_become_relative_and_others_are_refused(tmp_path):
    root = tmp_path / "images"
    parsed = Parsed("sugarcrepe", "sugarcrepe")
    for row, image in enumerate(("sub/a.png", str(root / "sub" / "b.png"), str(root / "x" / ".." / "c.png"))):
        parsed.add(Item("pair", "c", str(row), ("a", "b"), (image,)), "f.parquet", row)
    placed = hf.place_images(parsed, root)
    assert [item.images for item in placed.items] == [("sub/a.png",), ("sub/b.png",), ("c.png",)]
    assert placed.origins == parsed.origins
    outside = str(tmp_path / "elsewhere" / "d.png")
    parsed.add(Item("pair", "c", "9", ("a", "b"), (outside,)), "f.parquet", 9)
    said = refusal(hf.place_images, parsed, root)
    assert said == (
        f"f.parquet, row 9: image path {outside!r} is outside the image root {root.resolve()} (--images); "
        "expected paths inside it"
    )


@pytest.mark.parametrize(
    ("cell", "stored"),
    [
        ({"bytes": None, "path": "a.png"}, "a.png"),
        ({"bytes": b"png", "path": "a.png"}, {"bytes": b"png", "path": "a.png"}),
        ({"bytes": None, "path": "a.png", "mode": "RGB"}, {"bytes": None, "path": "a.png", "mode": "RGB"}),
        ("a.png", "a.png"),
    ],
)
def test_an_image_cell_without_bytes_is_its_path(cell, stored):
    assert hf._stored_paths({"image": cell, "caption": "a"}) == {"image": stored, "caption": "a"}


# --- where a copy is -------------------------------------------------------------------------------


def test_a_missing_path_says_where_the_nearest_folder_is(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    said = refusal(hf.read_splits, Path("data/scpp"))
    assert said == (
        "data/scpp: no such file or folder (in data, which exists: a typing error? A Hub id is ORG/NAME with "
        "no such local folder)"
    )
    assert refusal(hf.read_splits, Path("./scpp")) == "scpp: no such file or folder (nor a Hub id such as ORG/NAME)"


@pytest.mark.parametrize(
    ("text", "local"),
    [
        ("../org/name", True),
        (".org/name", True),
        ("/org/name", True),
        ("~org/name", True),
        ("data/name", True),
        ("org/name", False),
    ],
)
def test_a_path_is_local_when_it_starts_as_no_hub_id_does_or_its_first_folder_is_here(
    tmp_path, monkeypatch, text, local
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    assert hf._looks_local(Path(text)) is local


def test_a_hub_id_goes_to_the_hub_and_a_local_looking_one_does_not(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    asked = []
    monkeypatch.setattr(hf, "_hub_splits", lambda hub_id: asked.append(hub_id) or [split("c", "test", rows("1"))])
    assert hf.read_splits(Path("org/name")) == [split("c", "test", rows("1"))] and asked == ["org/name"]
    (tmp_path / "org").mkdir()
    assert refusal(hf.read_splits, Path("org/name")).startswith("org/name: no such file or folder (in org, which")
    assert refusal(hf.read_splits, Path("-org/name")).endswith("no such file or folder (nor a Hub id such as ORG/NAME)")
    assert asked == ["org/name"]


@pytest.mark.parametrize("written", ["./org/name", "../org/name"])
def test_a_path_written_from_here_stays_local_through_the_command_line_and_the_api(tmp_path, monkeypatch, written):
    """`Path` drops `./`: `foil import hf ./org/name` for a folder not there was asked of the Hub."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(hf, "_hub_splits", lambda hub_id: pytest.fail(f"asked the Hub for {hub_id}"))
    where = (tmp_path / written).absolute()
    with pytest.raises(BadInputError) as refused:
        open_store(":memory:").import_file("hf", written)
    assert str(refused.value) == (
        f"{where}: no such file or folder (in {where.parent.parent}, which exists: a typing error? A Hub id is "
        "ORG/NAME with no such local folder)"
    )
    assert cli_main(["import", "hf", written, "--db", str(tmp_path / "cli.db")]) == 1
    assert paths.given_path(Path("./org/name")) == Path("org/name")  # a Path given is taken as it is


def test_a_folder_of_nothing_readable_or_of_empty_splits_is_refused(tmp_path):
    assert refusal(hf.read_splits, tmp_path) == (
        f"{tmp_path}: holds no dataset_dict.json, state.json or .parquet file; expected a folder written by "
        "save_to_disk (or one per config) or the dataset's parquet files"
    )
    empty = parquet(tmp_path / "data" / "test-00000-of-00001.parquet", [SCPP])
    pq.write_table(pa.Table.from_pylist([SCPP]).slice(0, 0), empty)
    assert refusal(hf.read_splits, tmp_path) == f"{tmp_path}: holds no rows; expected at least one item"


def test_empty_splits_are_left_out_and_an_index_file_names_its_folder(tmp_path):
    import datasets

    saved = tmp_path / "saved"
    datasets.DatasetDict(
        {"swap_obj": datasets.Dataset.from_list([SCPP]), "swap_att": datasets.Dataset.from_list([SCPP]).select([])}
    ).save_to_disk(str(saved))
    for path in (saved, saved / "dataset_dict.json"):
        assert [(s.config, s.name, s.rows) for s in hf.read_splits(path)] == [("saved", "swap_obj", [SCPP])]
    # one split's own folder is a saved `Dataset`: named by its folder, its split by its state (none recorded)
    assert [(s.config, s.name) for s in hf.read_splits(saved / "swap_obj" / "state.json")] == [("swap_obj", None)]


def test_one_parquet_file_is_read_as_its_split(tmp_path):
    file = parquet(tmp_path / "swap_obj" / "test-00000-of-00001.parquet", [SCPP])
    assert hf.read_splits(file) == [hf.Split(None, "test", file, [SCPP])]


def test_a_folder_named_as_an_index_file_is_read_as_itself_not_its_parent(tmp_path):
    import datasets

    for name in ("state.json", "other"):
        datasets.Dataset.from_list([SCPP]).save_to_disk(str(tmp_path / name))
    assert [s.config for s in hf.read_splits(tmp_path / "state.json")] == ["state.json"]
    assert [s.config for s in hf.read_splits(tmp_path / "other" / "state.json")] == ["other"]


@pytest.mark.parametrize(("name", "config"), [(None, None), ("default", None), ("data", None), ("swap", "swap")])
def test_the_hubs_unnamed_config_names_are_no_config(name, config):
    assert hf._config(name) == config


# --- a README's configs ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "card",
    [
        None,
        "configs:\n- config_name: a\n  data_files: x.parquet\n",  # no YAML header: text
        "---\nconfigs:\n- config_name: a\n",  # an opening line and no closing one
        "---\n- a list\n---\n",
        "---\npretty_name: a set\n---\n",
    ],
    ids=["no-card", "no-header", "unclosed", "not-a-mapping", "no-configs"],
)
def test_a_card_that_declares_no_configs_declares_none(tmp_path, card):
    if card is not None:
        (tmp_path / "README.md").write_text(card)
    assert hf._card_configs(tmp_path) == []


def test_a_cards_configs_are_read_and_bad_ones_refused(tmp_path):
    card = tmp_path / "README.md"
    card.write_text("---\nconfigs:\n- config_name: a\n  data_files: x.parquet\n---\n# A set\n")
    assert hf._card_configs(tmp_path) == [{"config_name": "a", "data_files": "x.parquet"}]
    for configs in ("configs: a", "configs:\n- data_files: x.parquet", "configs:\n- a"):
        card.write_text(f"---\n{configs}\n---\n")
        assert refusal(hf._card_configs, tmp_path) == f"{card}: configs: expected a list of {{config_name, data_files}}"
    card.write_text("---\nconfigs: [a\n---\n")
    import yaml

    with pytest.raises(yaml.YAMLError) as error:
        yaml.safe_load("\nconfigs: [a\n")
    assert len(str(error.value).splitlines()) > 1
    said = refusal(hf._card_configs, tmp_path)
    assert said == f"{card}: its YAML header cannot be read: {str(error.value).splitlines()[0]}"


def test_a_card_is_read_whatever_its_body_holds(tmp_path):
    header = "---\nconfigs:\n- config_name: a\n  data_files: x.parquet\n---\n"
    (tmp_path / "README.md").write_bytes(header.encode() + b"# A set\n\xff not UTF-8\n\n---\n\nlicense: below a rule\n")
    assert hf._card_configs(tmp_path) == [{"config_name": "a", "data_files": "x.parquet"}]


@pytest.mark.parametrize(
    ("data_files", "patterns"),
    [
        ("data/*.parquet", {"train": ["data/*.parquet"]}),
        (["a.parquet", "b.parquet"], {"train": ["a.parquet", "b.parquet"]}),
        (
            [
                {"split": "test", "path": "a.parquet"},
                {"split": "test", "path": ["b.parquet"]},
                {"split": 1, "path": "c"},
            ],
            {"test": ["a.parquet", "b.parquet"], "1": ["c"]},
        ),
    ],
    ids=["pattern", "patterns", "splits"],
)
def test_data_files_are_split_to_patterns_as_datasets_reads_them(data_files, patterns):
    assert hf._data_files(data_files, Path("README.md"), "a") == patterns


@pytest.mark.parametrize(
    "data_files", [None, {"test": "a.parquet"}, ["a", 1], [{"split": "test"}], ["a", {"split": "t", "path": "p"}]]
)
def test_data_files_of_no_known_shape_are_refused(data_files):
    said = refusal(hf._data_files, data_files, Path("README.md"), "a")
    assert said == "README.md: config 'a': data_files expected a pattern, a list of them, or [{split, path}]"


def test_declared_configs_read_their_files_in_order_and_refuse_what_they_cannot(tmp_path):
    parquet(tmp_path / "data" / "b.parquet", [{**SCPP, "caption": "b"}])
    parquet(tmp_path / "data" / "a.parquet", [{**SCPP, "caption": "a"}])
    (tmp_path / "data" / "c.parquet").mkdir()  # a folder a pattern finds is no file
    declared = [{"config_name": "default", "data_files": [{"split": "swap", "path": ["data/*.parquet", "data/a*"]}]}]
    [read] = hf._declared_splits(tmp_path, declared)
    assert (read.config, read.name, read.file) == (None, "swap", tmp_path / "data" / "a.parquet")
    assert [row["caption"] for row in read.rows] == ["a", "b"]
    card = tmp_path / "README.md"
    said = refusal(hf._declared_splits, tmp_path, [{"config_name": "x", "data_files": "none/*.parquet"}])
    assert said == f"{card}: config 'x' split 'train': no file matches ['none/*.parquet'] in {tmp_path}"
    parquet(tmp_path.parent / f"{tmp_path.name}-out.parquet", [SCPP])
    outside = tmp_path / ".." / f"{tmp_path.name}-out.parquet"
    said = refusal(
        hf._declared_splits, tmp_path, [{"config_name": "x", "data_files": f"../{tmp_path.name}-out.parquet"}]
    )
    assert said == f"{card}: config 'x': {outside} is outside {tmp_path}"
    said = refusal(hf._declared_splits, tmp_path, [{"config_name": "x", "data_files": "/x/*.parquet"}])
    assert said.startswith(f"{card}: data_files pattern '/x/*.parquet': ")
    assert said.endswith("; expected a path inside the repository")
    assert refusal(hf._declared_splits, tmp_path, [{"config_name": " ", "data_files": "x"}]) == (
        f"{card}: config_name is empty; expected text"
    )


# --- save_to_disk folders --------------------------------------------------------------------------


def test_split_names_of_a_dataset_dict_are_plain_folder_names(tmp_path):
    index = tmp_path / "dataset_dict.json"
    index.write_text(json.dumps({"splits": ["test", "swap_obj"]}))
    assert hf._dict_splits(tmp_path) == ["test", "swap_obj"]
    for document in ({"split": ["test"]}, ["test"], {"splits": [1]}):
        index.write_text(json.dumps(document))
        assert refusal(hf._dict_splits, tmp_path) == f"{index}: expected {{'splits': [names of split folders]}}"
    index.write_text(json.dumps({"splits": ["test", "."]}))
    assert refusal(hf._dict_splits, tmp_path) == (
        f"{index}: split '.' is not a plain folder name; expected {{'splits': [names of split folders]}}, each a "
        f"folder inside {tmp_path}"
    )


def test_a_saved_splits_name_and_config_come_from_its_state_and_info(tmp_path):
    import datasets

    part = datasets.Dataset.from_list([SCPP])
    part.save_to_disk(str(tmp_path / "saved_as"))
    state = tmp_path / "saved_as" / "state.json"
    document = json.loads(state.read_text())
    assert document["_split"] is None
    read = hf._arrow_split(tmp_path / "saved_as", "saved_as", None)
    assert (read.config, read.name, read.file, read.rows) == ("saved_as", None, tmp_path / "saved_as", [SCPP])
    assert hf._arrow_split(tmp_path / "saved_as", "default", "given").config is None
    state.write_text(json.dumps({**document, "_split": "swap_obj"}))
    assert hf._arrow_split(tmp_path / "saved_as", "saved_as", None).name == "swap_obj"
    assert hf._arrow_split(tmp_path / "saved_as", "saved_as", "given").name == "given"
    state.write_text(json.dumps({**document, "_split": 3}))
    assert refusal(hf._arrow_split, tmp_path / "saved_as", "saved_as", None) == (
        f"{state}: _split is 3 (int); expected text"
    )
    info = tmp_path / "saved_as" / "dataset_info.json"
    info.write_text(json.dumps({**json.loads(info.read_text()), "config_name": "swap_att"}))
    state.write_text(json.dumps(document))
    assert hf._arrow_split(tmp_path / "saved_as", "default", None).config == "swap_att"
    info.write_text(json.dumps({"config_name": "default"}))
    assert hf._arrow_split(tmp_path / "saved_as", "saved_as", None).config == "saved_as"
    info.write_text(json.dumps(["not", "an", "object"]))
    assert hf._arrow_split(tmp_path / "saved_as", "saved_as", None).config == "saved_as"
    info.write_text(json.dumps({"config_name": 3}))
    assert refusal(hf._arrow_split, tmp_path / "saved_as", "saved_as", None) == (
        f"{info}: config_name is 3 (int); expected text"
    )
    info.unlink()  # `from_dict` and older releases record no info
    assert hf._arrow_split(tmp_path / "saved_as", "saved_as", None).config == "saved_as"


def test_a_split_folder_without_a_readable_state_is_refused_naming_it(tmp_path):
    assert refusal(hf._arrow_split, tmp_path, "saved", None) == (
        f"{tmp_path}: no state.json; expected a split folder written by save_to_disk"
    )
    for state in ([{"filename": "x.arrow"}], {"_data_files": [{"name": "x.arrow"}]}, {"_data_files": "x.arrow"}):
        (tmp_path / "state.json").write_text(json.dumps(state))
        assert refusal(hf._arrow_split, tmp_path, "saved", None) == (
            f"{tmp_path / 'state.json'}: expected '_data_files': [{{'filename': ...}}]"
        )


def test_a_saved_file_that_is_no_arrow_stream_is_refused_naming_it(tmp_path):
    (tmp_path / "data-00000-of-00001.arrow").write_bytes(b"not arrow")
    (tmp_path / "state.json").write_text(json.dumps({"_data_files": [{"filename": "../data-00000-of-00001.arrow"}]}))
    said = refusal(hf._arrow_split, tmp_path, "saved", None)
    assert said.startswith(
        f"{tmp_path / 'data-00000-of-00001.arrow'}: cannot read as an Arrow stream written by save_to_disk: "
    )


def test_a_non_parquet_file_or_a_broken_one_is_refused_naming_it(tmp_path):
    (tmp_path / "a.csv").write_text("caption\n")
    assert (
        refusal(hf._parquet_rows, tmp_path / "a.csv") == f"{tmp_path / 'a.csv'}: expected a .parquet file or a folder"
    )
    (tmp_path / "a.PARQUET").write_bytes(b"PAR1 broken")
    said = refusal(hf._parquet_rows, tmp_path / "a.PARQUET")
    assert said.startswith(f"{tmp_path / 'a.PARQUET'}: cannot read as a parquet table: ")


def test_class_labels_are_read_as_their_names_where_the_number_names_one(tmp_path):
    import datasets

    features = datasets.Features({"label": datasets.ClassLabel(names=["no", "yes"]), "score": datasets.Value("int64")})
    written = datasets.Dataset.from_dict({"label": [0, 1, 1], "score": [0, 1, 2]}, features=features)
    written.to_parquet(str(tmp_path / "a.parquet"))
    table = pq.read_table(tmp_path / "a.parquet")
    assert hf._rows_with_names(table) == [
        {"label": "no", "score": 0},
        {"label": "yes", "score": 1},
        {"label": "yes", "score": 2},
    ]
    out_of_range = table.set_column(0, "label", pa.array([-1, 2, None], pa.int64()))
    assert [row["label"] for row in hf._rows_with_names(out_of_range)] == [-1, 2, None]


@pytest.mark.parametrize(
    "recorded",
    [b"not json", b"{}", b'{"info": {}}', b'{"info": []}', b'{"info": {"features": []}}', b"[]"],
)
def test_schema_metadata_that_records_no_features_names_no_class_labels(recorded):
    assert hf._class_names({b"huggingface": recorded}) == {}


def test_only_class_label_features_with_a_list_of_names_are_class_labels():
    features = {
        "label": {"_type": "ClassLabel", "names": ["no", 1]},
        "tag": {"_type": "Value", "names": ["a"]},
        "kind": {"_type": "ClassLabel", "names": "a,b"},
        "other": ["ClassLabel"],
    }
    recorded = json.dumps({"info": {"features": features}}).encode()
    assert hf._class_names({b"huggingface": recorded}) == {"label": ["no", "1"]}
    assert hf._class_names({}) == {}


# --- parquet names ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("relative", "place"),
    [
        ("data/test-00000-of-00002.parquet", hf.Place(None, "test", 0, 2)),
        ("swap_obj/test-00001-of-00002-4a5b6c.parquet", hf.Place("swap_obj", "test", 1, 2)),
        ("swap_obj/test/0003.parquet", hf.Place("swap_obj", "test", 3, None)),
        ("default/test/0000.parquet", hf.Place(None, "test", 0, None)),
    ],
)
def test_a_parquet_files_name_and_folders_place_it(tmp_path, relative, place):
    root = tmp_path / "repo"
    root.mkdir()
    assert hf._place(root / relative, root) == place


def test_one_file_given_alone_names_no_config_whatever_its_folders(tmp_path):
    alone = parquet(tmp_path / "swap_obj" / "test-00000-of-00001.parquet", [SCPP])
    assert hf._place(alone, alone) == hf.Place(None, "test", 0, 1)


def test_the_repositorys_own_folder_names_a_config_but_no_folder_above_it(tmp_path):
    root = tmp_path / "swap_obj"
    root.mkdir()
    assert hf._place(root / "test-00000-of-00001.parquet", root) == hf.Place("swap_obj", "test", 0, 1)
    assert hf._place(root / "test" / "0000.parquet", root) == hf.Place("swap_obj", "test", 0, None)
    said = refusal(hf._place, root / "0000.parquet", root)
    assert said == f"{root / '0000.parquet'}: the name '0000.parquet' names no split; {hf.EXPECTED}"
    said = refusal(hf._place, root / "swap.parquet", root)
    assert said == f"{root / 'swap.parquet'}: the name 'swap.parquet' names no split; {hf.EXPECTED}"


@pytest.mark.parametrize(
    ("shards", "said"),
    [
        ([(0, 3), (2, 3)], "['00000-of-00003', '00002-of-00003']; expected every shard 00000 to 00002 of 00003"),
        ([(0, 2), (1, 3)], "['00000-of-00002', '00001-of-00003']; expected every shard 00000 to 00002 of 00003"),
        ([(1, 2), (2, 2)], "['00001-of-00002', '00002-of-00002']; expected every shard 00000 to 00001 of 00002"),
        (
            [(0, 3), (1, 3), (2, 2)],
            "['00000-of-00003', '00001-of-00003', '00002-of-00002']; expected every shard 00000 to 00002 of 00003",
        ),
    ],
)
def test_a_split_missing_a_shard_is_refused_naming_the_shards_found(shards, said):
    places = {Path(f"{index}-{total}"): hf.Place("c", "test", index, total) for index, total in shards}
    places[Path("whole")] = hf.Place("c", "other", 0, None)
    assert refusal(hf._check_shards, places, Path("repo")) == f"repo: split 'test' of config 'c' has shards {said}"


def test_a_splits_shards_are_one_split_named_by_its_first_file_with_their_rows_in_order(tmp_path):
    files = [
        parquet(tmp_path / "data" / f"test-0000{i}-of-00002.parquet", [{**SCPP, "caption": str(i)}]) for i in (0, 1)
    ]
    [read] = hf._parquet_splits(files, tmp_path)
    assert (read.config, read.name, read.file) == (None, "test", files[0])
    assert [row["caption"] for row in read.rows] == ["0", "1"]


def test_every_shard_of_every_split_passes():
    places = {Path(f"{split}{i}"): hf.Place(None, split, i, 2) for split in ("a", "b") for i in (1, 0)}
    hf._check_shards(places, Path("repo"))


# --- a Hub id --------------------------------------------------------------------------------------


def test_a_hub_id_without_the_datasets_library_says_how_to_get_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)  # what `import datasets` raises ImportError for
    assert refusal(hf._hub_splits, "org/name") == (
        "org/name: reading a Hub id needs the datasets library: pip install datasets (or pass a local copy)"
    )


def test_a_hub_out_of_reach_is_refused_at_once_with_the_ways_out(monkeypatch):
    from foil_studio.data import hub

    for name in hub.OFFLINE:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setattr(hf, "hub_reachable", lambda: False)
    assert refusal(hf._hub_splits, "org/name") == (
        "org/name: cannot reach the Hub at http://127.0.0.1:9. Without network access, save the dataset with "
        "save_to_disk on a connected machine and pass that folder, or set HF_HUB_OFFLINE=1 to read a copy already "
        "in the Hugging Face cache (HF_HOME)"
    )


def test_an_offline_hub_id_missing_from_the_cache_names_the_switch_and_the_cache(tmp_path, monkeypatch):
    from foil_studio.data import hub

    for name in hub.OFFLINE:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(hub.OFFLINE[0], "1")
    monkeypatch.setattr(hf, "_cache_home", lambda: "/cache")
    assert refusal(hf._hub_splits, "no-such-org/no-such-set") == (
        f"no-such-org/no-such-set: the Hub is switched off ({hub.OFFLINE[0]}) and the Hugging Face cache (/cache) has "
        "no copy of no-such-org/no-such-set: import it once with the Hub switched on (unset HF_HUB_OFFLINE), or on "
        "a connected machine save it with save_to_disk and pass that folder"
    )


def test_the_cache_is_where_the_hugging_face_libraries_keep_it():
    from huggingface_hub import constants

    assert hf._cache_home() == str(constants.HF_HOME)


def test_a_hub_ids_configs_and_splits_are_read_with_class_labels_named(monkeypatch):
    import datasets

    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(hf, "hub_reachable", lambda: True)
    features = datasets.Features({"caption": datasets.Value("string"), "label": datasets.ClassLabel(names=["a", "b"])})
    loaded = {
        "default": datasets.DatasetDict(
            {"test": datasets.Dataset.from_dict({"caption": ["x"], "label": [1]}, features=features)}
        ),
        "swap": datasets.DatasetDict(
            {"train": datasets.Dataset.from_dict({"caption": ["y"], "label": [0]}, features=features)}
        ),
    }
    asked = []
    monkeypatch.setattr(datasets, "get_dataset_config_names", lambda hub_id: asked.append(hub_id) or list(loaded))
    monkeypatch.setattr(
        datasets, "load_dataset", lambda hub_id, config: asked.append((hub_id, config)) or loaded[config]
    )
    assert hf._hub_splits("org/name") == [
        hf.Split(None, "test", Path("org/name"), [{"caption": "x", "label": "b"}]),
        hf.Split("swap", "train", Path("org/name"), [{"caption": "y", "label": "a"}]),
    ]
    assert asked == ["org/name", ("org/name", "default"), ("org/name", "swap")]


def test_an_offline_hub_id_is_read_with_the_libraries_switched_to_their_cache(monkeypatch):
    """The libraries read HF_HUB_OFFLINE once, when imported: set later, it is passed on to them."""
    import datasets
    from huggingface_hub import constants

    from foil_studio.data import hub

    for name in hub.OFFLINE:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(hub.OFFLINE[0], "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    seen = []
    monkeypatch.setattr(
        datasets, "get_dataset_config_names", lambda hub_id: seen.append(constants.HF_HUB_OFFLINE) or ["c"]
    )
    part = datasets.DatasetDict({"test": datasets.Dataset.from_list([SCPP])})
    monkeypatch.setattr(datasets, "load_dataset", lambda hub_id, config: seen.append(constants.HF_HUB_OFFLINE) or part)
    assert [s.rows for s in hf._hub_splits("org/name")] == [[SCPP]]
    assert seen == [True, True] and constants.HF_HUB_OFFLINE is False
