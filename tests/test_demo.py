"""The demo world: captions say what their truth says, images show their scene graphs."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from PIL import Image

from foil_studio.data import demo_world as w
from foil_studio.data import store
from foil_studio.data.demo import DemoConfig, build_world, claim_from_data, install_demo, scene_from_data
from tests.conftest import SMALL_DEMO

SHAPE_WORDS = {**{s: s for s in w.SHAPES}, "box": "square"}
SIZE_WORDS = {"small": "small", "little": "small", "large": "large", "big": "large"}
RELATION_WORDS = {"to the left of": "left of", "to the right of": "right of", **{r: r for r in w.RELATIONS}}
OBJECT = re.compile(rf"\ban? (?:({'|'.join(SIZE_WORDS)}) )?(?:({'|'.join(w.COLOURS)}) )?({'|'.join(SHAPE_WORDS)})\b")


def read_caption(text: str) -> w.Claim:
    """An independent reading of a caption's words back into a claim (no renderer code)."""
    descs = tuple(
        w.Desc(SHAPE_WORDS[shape], colour or None, SIZE_WORDS[size] if size else None)
        for size, colour, shape in OBJECT.findall(text)
    )
    between = OBJECT.split(text)[4] if len(descs) == 2 else ""
    relation = next(
        (RELATION_WORDS[r] for r in sorted(RELATION_WORDS, key=len, reverse=True) if f" {r} " in f" {between} "), None
    )
    return w.Claim(descs, (0, relation, 1) if relation else None)


@pytest.fixture(scope="module")
def world():
    return {demo_set.name: demo_set for demo_set in build_world(SMALL_DEMO)}


def test_default_demo_has_all_item_kinds_and_enough_items():
    sets = build_world(DemoConfig())
    kinds = Counter(item.kind for s in sets for item in s.parsed.items)
    assert set(kinds) == {"pair", "triple", "group", "retrieval", "candidates"}
    # 1,920 items: CREPE-like retrieval sets and ARO's order set (40 captions x 5 seeds) are both retrieval
    assert kinds == {"pair": 770, "triple": 300, "group": 300, "candidates": 200, "retrieval": 150 + 200}
    categories = {item.category for item in sets[0].parsed.items}
    assert categories == set(w.CATEGORIES)


def test_pair_negatives_are_false_except_the_known_false_negatives(world):
    items = world["demo-sugarcrepe"].parsed.items
    verdicts = Counter()
    for item in items:
        scene = scene_from_data(item.meta["scene"])
        assert w.evaluate(read_caption(item.captions[0]), scene) == "true", item.captions
        verdict = w.evaluate(read_caption(item.captions[1]), scene)
        assert verdict == item.truth["negative"], item.captions
        verdicts[verdict] += 1
    n = len(items)
    assert verdicts["false"] >= n * (1 - SMALL_DEMO.false_negative_share - SMALL_DEMO.ambiguous_share)
    assert 0 < verdicts["true"] <= round(n * SMALL_DEMO.false_negative_share) + len(w.CATEGORIES)
    assert 0 < verdicts["ambiguous"] <= round(n * SMALL_DEMO.ambiguous_share) + len(w.CATEGORIES)


def test_each_category_edit_changes_what_its_name_says(world):
    for item in world["demo-sugarcrepe"].parsed.items:
        positive, negative = (claim_from_data(c) for c in item.meta["claims"])
        if item.category == "replace_rel":
            assert positive.objects == negative.objects and positive.relation != negative.relation
        elif item.category == "add_obj":
            assert len(negative.objects) == len(positive.objects) + 1
        elif item.category.startswith("swap"):
            assert negative != positive and positive.relation == negative.relation
            for part in ("shape", "colour"):  # a swap moves properties, it adds or loses none
                assert sorted(str(getattr(d, part)) for d in positive.objects) == sorted(
                    str(getattr(d, part)) for d in negative.objects
                )
        assert item.captions[0] != item.captions[1]


def test_hard_positives_are_true_and_hard_negatives_false(world):
    variants = Counter()
    for item in world["demo-hard-positives"].parsed.items:
        scene = scene_from_data(item.meta["scene"])
        c, c_n, c_p = (read_caption(text) for text in item.captions)
        assert (w.evaluate(c, scene), w.evaluate(c_n, scene), w.evaluate(c_p, scene)) == ("true", "false", "true")
        assert item.captions[2] != item.captions[0]
        variants[item.meta["variant"]] += 1
    assert set(variants) == {"converse", "conjunct_order", "synonym"}


def test_bivlc_groups_negative_image_shows_the_negative_caption(world):
    ambiguous = 0
    for item in world["demo-bivlc"].parsed.items:
        i0, i1 = (scene_from_data(s) for s in item.meta["scenes"])
        c0, c1 = (read_caption(text) for text in item.captions)
        assert (w.evaluate(c0, i0), w.evaluate(c1, i0), w.evaluate(c1, i1)) == ("true", "false", "true")
        assert item.truth["ambiguous"] == (w.evaluate(c0, i1) != "false")
        ambiguous += item.truth["ambiguous"]
    assert 0 < ambiguous < len(world["demo-bivlc"].parsed.items)


def test_candidate_validity_matches_the_scenes_and_the_configured_share(world):
    flags = []
    for item in world["demo-bivlc-candidates"].parsed.items:
        claim = read_caption(item.captions[0])
        scenes = [scene_from_data(s) for s in item.meta["scenes"]]
        assert item.truth["valid"] == [w.evaluate(claim, s) == "true" for s in scenes]
        for flaw, valid in zip(item.meta["flaws"], item.truth["valid"]):
            assert valid or flaw is not None  # only a deliberately flawed drawing can be wrong
        flags.extend(item.truth["valid"])
    wrong_share = 1 - sum(flags) / len(flags)
    assert 0.15 <= wrong_share <= SMALL_DEMO.wrong_candidate_share + 0.1


def test_retrieval_sets_have_one_true_caption(world):
    for item in world["demo-crepe"].parsed.items:
        scene = scene_from_data(item.meta["scene"])
        verdicts = [w.evaluate(read_caption(text), scene) for text in item.captions]
        assert verdicts == ["true"] + ["false"] * (len(item.captions) - 1)


def test_images_on_disk_show_their_scene_graphs(demo_store):
    db = store.open_db(demo_store)
    dataset = store.get_dataset(db, "demo-sugarcrepe")
    checked = 0
    for item in store.list_items(db, dataset["id"], limit=60):
        with Image.open(f"{dataset['image_root']}/{item['images'][0]}") as image:
            for thing in item["meta"]["scene"]:
                centre = (thing["x"], thing["y"] + (4 if thing["shape"] == "triangle" else 0))
                assert image.getpixel(centre) == w.COLOURS[thing["colour"]]
                checked += 1
    assert checked >= 120


def test_demo_install_is_idempotent_and_has_annotators(demo_db, tmp_path):
    db = demo_db  # a private copy: installing again must not move the shared store's image root
    reports = install_demo(db, tmp_path / "images", SMALL_DEMO)
    assert all(r.n_new_items == 0 and r.missing_images == 0 for r in reports)
    assert [a["name"] for a in store.list_annotators(db)] == ["ada", "ben", "cleo"]


class _TorchvisionForAnotherTorch:
    """A meta-path finder that fails importing open_clip as a torchvision built for another torch does."""

    def find_spec(self, name, path=None, target=None):
        if name == "open_clip":
            raise RuntimeError("operator torchvision::nms does not exist")
        return None


def test_a_mismatched_torch_and_torchvision_end_the_demo_in_one_line_naming_both(tmp_path, monkeypatch, capsys):
    """Issue 53: a torchvision built for another torch ended `foil demo` in a raw traceback. Now it is
    one line naming the two installed versions and what to do, and nothing is built."""
    import sys
    from importlib import metadata

    from foil_studio import cli

    for module in ("open_clip", "foil_studio.analysis.models", "foil_studio.analysis.scoring"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    monkeypatch.setattr(sys, "meta_path", [_TorchvisionForAnotherTorch(), *sys.meta_path])
    code = cli.main(["demo", "--db", str(tmp_path / "demo.db")])
    shown = capsys.readouterr()
    assert code == 1 and not shown.out and shown.err.count("\n") == 1 and "Traceback" not in shown.err, shown
    for package in ("torch", "torchvision"):
        assert f"{package} {metadata.version(package)}" in shown.err
    assert "not a matching pair" in shown.err and "torchvision::nms" in shown.err
    assert "reinstall a matching pair" in shown.err
    assert store.list_datasets(store.open_db(tmp_path / "demo.db")) == []


def test_an_import_failure_outside_torchvision_is_not_called_a_mismatch():
    from foil_studio.analysis.model_spec import mismatched_torch_pair

    assert mismatched_torch_pair(ImportError("No module named 'open_clip'")) is None
    assert mismatched_torch_pair(RuntimeError("CUDA driver initialization failed")) is None
