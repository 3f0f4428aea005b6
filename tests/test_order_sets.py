"""ARO's order sets built from captioned images (`./foil build aro-order`, `data/order_sets.py`):
ARO's options in ARO's order, one category per seed, the seeds' mean and standard error in the
metrics, ARO's tie rule, the audit on them, and the demo set."""

from __future__ import annotations

import ast
import json
from itertools import permutations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import sem

from foil_studio import api, cli
from foil_studio.analysis import metrics as m
from foil_studio.analysis.audit import audit
from foil_studio.data import demo, demo_world, order_sets, store, word_order
from foil_studio.data.formats import source_format
from foil_studio.data.word_order import Token
from tests.spacy_support import train_tagger

CAPTIONS = [
    "A red circle left of a blue square.",
    "a large green triangle above an orange diamond",
    "Two dogs.",  # one noun, no adjective pair, a single trigram with nothing to move after normalising
]


# ARO's `perturb_functions` for COCO-Order and Flickr30k-Order (its dataset_zoo/aro_datasets.py), in its
# order, and the name each has here.
ARO_PERTURB_FUNCTIONS = [
    "shuffle_nouns_and_adj",
    "shuffle_allbut_nouns_and_adj",
    "shuffle_within_trigrams",
    "shuffle_trigrams",
]
NAMED_HERE = {
    "shuffle_nouns_and_adj": "shuffle_nouns_and_adjectives",
    "shuffle_allbut_nouns_and_adj": "shuffle_all_but_nouns_and_adjectives",
    "shuffle_within_trigrams": "shuffle_within_trigrams",
    "shuffle_trigrams": "shuffle_trigrams",
}


def tag_by_lexicon(captions, model=None):
    """The demo lexicon, which covers the test captions: nouns, adjectives, anything else."""
    return demo_world.demo_tags(captions)


def karpathy_file(folder: Path) -> Path:
    """Karpathy's split layout: `{image, caption: [...]}` per image."""
    path = folder / "coco_karpathy_test.json"
    records = [{"image": "val2014/a.jpg", "caption": CAPTIONS[:2]}, {"image": "val2014/b.jpg", "caption": CAPTIONS[2]}]
    path.write_text(json.dumps(records))
    return path


def test_options_are_the_caption_and_its_four_perturbations_in_aros_order(tmp_path):
    captioned = order_sets.read_captioned(karpathy_file(tmp_path))
    assert [(c.image, c.row) for c in captioned] == [("val2014/a.jpg", 1), ("val2014/a.jpg", 1), ("val2014/b.jpg", 2)]
    parsed = order_sets.build_order_set(captioned, tag_by_lexicon, name="coco-order", seeds=[3])
    assert len(parsed.items) == 2
    for item, caption in zip(parsed.items, CAPTIONS):
        tokens = tag_by_lexicon([caption])[0]
        shuffled = word_order.perturbations(tokens, word_order.words(caption), 3)
        expected = [order_sets.pre_caption(caption)] + [
            order_sets.pre_caption(shuffled[NAMED_HERE[n]]) for n in ARO_PERTURB_FUNCTIONS
        ]
        assert list(item.captions) == expected
        assert item.meta["options"] == ["caption", *(NAMED_HERE[n] for n in ARO_PERTURB_FUNCTIONS)]
        assert len(set(item.captions)) == 5  # every option differs from the caption and each other
        assert item.kind == "retrieval" and item.truth == {"correct": 0} and item.category == "seed 3"
        for option in item.captions[1:]:
            assert sorted(option.split()) == sorted(item.captions[0].split())  # the same words, another order
    # the caption nothing can perturb is reported with its file and row, not kept
    [warning] = parsed.warnings
    assert warning.row == 2 and "left out" in warning.message and warning.file.endswith("coco_karpathy_test.json")


def test_each_seed_is_a_category_and_the_same_seed_gives_the_same_items(tmp_path):
    captioned = order_sets.read_captioned(karpathy_file(tmp_path))
    first = order_sets.build_order_set(captioned, tag_by_lexicon, name="x", seeds=range(5))
    again = order_sets.build_order_set(captioned, tag_by_lexicon, name="x", seeds=range(5))
    assert [i.captions for i in first.items] == [i.captions for i in again.items]
    assert sorted({i.category for i in first.items}) == [f"seed {s}" for s in range(5)]
    by_seed = {i.category: i.captions for i in first.items if i.source_id.endswith("/0")}
    assert len(set(by_seed.values())) > 1  # other seeds, other orders


def test_trigram_perturbations_cut_nltks_words_of_the_raw_caption_as_aro_does(tmp_path):
    """ARO's trigram perturbations read `nltk.word_tokenize(caption)`, not spaCy's tokens: quotes
    become `` and '', a hyphenated word stays whole, a run of spaces is no token."""
    caption = 'A "red" circle left of a blue-green  square'
    aro_words = ["a", "``", "red", "''", "circle", "left", "of", "a", "blue-green", "square"]  # lower-cased
    groups = [aro_words[i : i + 3] for i in range(0, len(aro_words), 3)]
    path = tmp_path / "captions.jsonl"
    path.write_text(json.dumps({"image": "a.png", "caption": caption}))
    parsed = order_sets.build_order_set(order_sets.read_captioned(path), tag_by_lexicon, name="x", seeds=range(5))
    assert len(parsed.items) == 5
    for item in parsed.items:
        options = dict(zip(item.meta["options"], item.captions))
        within = options["shuffle_within_trigrams"].split()
        assert [sorted(g) for g in trigrams_of(within)] == [sorted(g) for g in groups]
        whole = [" ".join(g) for g in groups]
        assert any(" ".join(order) == options["shuffle_trigrams"] for order in permutations(whole))


def trigrams_of(words: list[str]) -> list[list[str]]:
    return [words[i : i + 3] for i in range(0, len(words), 3)]


def tag_by_hand(captions, model=None):
    """Nouns and adjectives of the captions below, by hand; any other word X."""
    nouns, adjectives = {"dog", "cat", "man", "hat", "cup", "boy", "girl", "bench", "table"}, {"small", "big"}
    return [[Token(w, "NN" if w in nouns else "JJ" if w in adjectives else "X") for w in c.split()] for c in captions]


def test_a_seeds_items_do_not_depend_on_which_other_seeds_are_built():
    """A caption whose draw in one seed comes out the same once case is removed ("a" and "A" swapped)
    is left out of that seed only: `--seeds 1` and `--seeds 5` give seed 0 the same items."""
    captions = ["A dog and a cat", "A man with a hat and a cup", "A small dog and a big cat on a table"]
    captioned = [order_sets.Captioned(f"{n}.png", c, Path("x.jsonl"), n + 1) for n, c in enumerate(captions)]
    alone = order_sets.build_order_set(captioned, tag_by_hand, name="x", seeds=[0])
    among = order_sets.build_order_set(captioned, tag_by_hand, name="x", seeds=range(5))
    seed_0 = [(i.source_id, i.captions) for i in among.items if i.category == "seed 0"]
    assert [(i.source_id, i.captions) for i in alone.items] == seed_0
    assert "0/1" in [source for source, _ in seed_0] and "1/1" not in [i.source_id for i in among.items]
    assert any("left out of seed 1:" in w.message and "a man with a hat" in w.message for w in among.warnings)


def test_jsonl_with_one_caption_per_line_and_limits(tmp_path):
    path = tmp_path / "captions.jsonl"
    path.write_text("\n".join(json.dumps({"image": f"{n}.png", "caption": c}) for n, c in enumerate(CAPTIONS)))
    captioned = order_sets.read_captioned(path)
    assert [c.row for c in captioned] == [1, 2, 3]
    parsed = order_sets.build_order_set(captioned, tag_by_lexicon, name="x", seeds=[0], limit=1)
    assert len(parsed.items) == 1 and parsed.items[0].images == ("0.png",)


def test_aros_tie_rule_is_its_argmax(tmp_path):
    """ARO takes np.argmax over the options: the first of tied ones, the true caption, wins."""
    rule = source_format(order_sets.ORDER_SOURCE).ties
    scores = np.random.default_rng(0).integers(0, 4, size=(500, 5)).astype(float)  # many ties
    assert np.array_equal(m.recall_at_k(scores, 1, rule), (np.argmax(scores, axis=1) == 0).astype(float))


@pytest.fixture
def built(tmp_path, monkeypatch, capsys):
    """The command line's build on a captioned set of demo images, tagged by the demo lexicon
    (spaCy's English model does not install here), then scored with the demo model."""
    images = tmp_path / "images"
    images.mkdir()
    records = []
    for n, caption in enumerate(CAPTIONS * 4):
        demo_world.draw(demo_world.random_scene(__import__("random").Random(n), 2)).save(images / f"{n}.png")
        records.append({"image": f"{n}.png", "caption": [caption]})
    (tmp_path / "captions.json").write_text(json.dumps(records))
    monkeypatch.setattr(word_order, "tag_captions", tag_by_lexicon)
    db_file = tmp_path / "foil.db"
    code = cli.main(
        ["build", "aro-order", str(tmp_path / "captions.json"), "--images", str(images), "--name", "order"]
        + ["--seeds", "5", "--seed", "10", "--db", str(db_file), "--json"]
    )
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    studio = api.open_store(db_file)
    studio.score("order", "demo", run="demo-clip")
    return studio, report


def test_build_stores_retrieval_items_and_metrics_give_the_mean_and_se_over_seeds(built):
    built, report = built
    assert report["n_items"] == 8 * 5 and len(report["warnings"]) == 4  # "Two dogs." four times, left out
    assert report["by_category"] == {f"seed {s}": 8 for s in range(10, 15)}
    result = built.metrics("order", "demo-clip")
    assert result["tie_rule"]["rule"] == "right" and result["chance"]["(all)"]["precision_at_1"] == 20.0
    seeds = [figures["precision_at_1"] for figures in result["by_category"].values()]
    over = result["over_seeds"]["precision_at_1"]
    assert over["mean"] == pytest.approx(np.mean(seeds)) and over["se"] == pytest.approx(sem(seeds))
    assert over["n_seeds"] == 5 and set(result["category_intervals"]) == set(result["by_category"])
    assert "recall_at_5" not in result["metrics"]  # of five options, always 100
    text = cli.metrics_text(result)
    assert f"over 5 seeds (mean ± standard error of the seeds' figures): precision_at_1 {over['mean']:.2f}" in text


def test_build_without_an_english_model_says_how_to_install_one(tmp_path, capsys):
    spacy = pytest.importorskip("spacy")
    if spacy.util.is_package(word_order.SPACY_MODEL):
        pytest.skip(f"{word_order.SPACY_MODEL} is installed here")
    path = karpathy_file(tmp_path)
    code = cli.main(
        ["build", "aro-order", str(path), "--images", str(tmp_path), "--name", "o", "--db", str(tmp_path / "f.db")]
    )
    assert code == 1
    assert capsys.readouterr().err.strip() == f"error: {word_order.INSTALL_HINT}"
    assert store.dataset_names(store.open_db(tmp_path / "f.db")) == []


def test_the_demo_order_set_is_solved_by_a_grammar_only_scorer(demo_db):
    """SugarCrepe's finding: a blind scorer that knows word order (a bigram model) solves the
    order sets; one that sees only word statistics is at chance (every pair a tie)."""
    assert store.get_dataset(demo_db, demo.ORDER_SET)["source_format"] == order_sets.ORDER_SOURCE
    result = audit(demo_db, demo.ORDER_SET, scorers=("stats", "ngram"))
    assert result["blind"]["stats"] == 50.0 and result["ties"]["stats"] == result["n"]
    assert result["blind"]["ngram"] > 90
    assert result["n"] == 4 * len(api.Studio(demo_db).items(demo.ORDER_SET))  # each caption against each perturbation
    assert sorted(result["by_category"]) == [f"seed {s}" for s in range(5)]


def test_demo_tags_follow_the_worlds_lexicon():
    tokens = demo_world.demo_tags(["a small red circle, a blue square"])[0]
    assert [t.tag for t in tokens] == ["X", "JJ", "JJ", "NN", "X", "JJ", "NN"]
    assert all(isinstance(t, Token) for t in tokens)


def test_the_command_line_tags_with_a_real_spacy_model(tmp_path, capsys):
    """The whole path with spaCy: `--spacy-model` names a model folder (a tagger trained here on
    the test captions, `tests/spacy_support.py`), which tags the raw captions."""
    pytest.importorskip("spacy")
    sentences = [
        [(t.text, t.tag) for t in tokens] for tokens in tag_by_lexicon([c.replace(".", " .") for c in CAPTIONS])
    ]
    sentences = [[(w, "." if w == "." else tag) for w, tag in s] for s in sentences]
    model = train_tagger(sentences, tmp_path / "tagger")
    path = karpathy_file(tmp_path)
    args = ["build", "aro-order", str(path), "--images", str(tmp_path), "--name", "o", "--spacy-model", model]
    assert cli.main([*args, "--db", str(tmp_path / "f.db"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["n_items"] == 2 and "Two dogs" in report["warnings"][0]["message"]
    items = api.open_store(tmp_path / "f.db").items("o")
    assert items["captions"].str[0].tolist() == [order_sets.pre_caption(c) for c in CAPTIONS[:2]]


def test_an_order_sets_perturbations_go_to_validate_negative_one_question_each(demo_db, tmp_path):
    """A perturbation may happen to be a valid caption: validate_negative asks about each negative
    of a retrieval item on its own, and the training table keeps exactly the validated ones."""
    from foil_studio.annotate import batches
    from foil_studio.annotate.batches import BatchError
    from foil_studio.annotate.export import export_clean, export_negclip
    from foil_studio.annotate.health import HealthError, plan_sample
    from foil_studio.annotate.task_types import build_task

    [item] = store.list_items(demo_db, store.get_dataset(demo_db, demo.ORDER_SET)["id"], limit=1)
    spec = batches.BatchSpec(demo.ORDER_SET, "validate_negative", ("ada",), overlap=1, item_ids=(item["id"],), name="v")
    batches.create_batch(demo_db, spec)
    batch = store.get_batch(demo_db, "v")
    assignments = store.batch_assignments(demo_db, batch["id"])
    assert sorted(a["part"] for a in assignments) == [0, 1, 2, 3]  # one question per perturbation
    for part in range(4):
        task = build_task("validate_negative", item, part, "seed")
        assert dict(task.captions)["altered caption"] == item["captions"][1 + part]
        assert dict(task.captions)["caption"] == item["captions"][0]
    answers = {0: "negative_false", 1: "negative_true", 2: "negative_false"}  # part 3 left undecided
    for part, answer in answers.items():
        store.decide(demo_db, batch["id"], item["id"], part, {"answer": answer}, by="admin")

    export_negclip(demo_db, demo.ORDER_SET, tmp_path / "negclip")
    table = pd.read_csv(tmp_path / "negclip" / "negclip.tsv", sep="\t")
    assert table["neg_caption"].map(ast.literal_eval).tolist() == [[item["captions"][1], item["captions"][3]]]
    with pytest.raises(BatchError, match="negclip-csv"):
        export_clean(demo_db, "v", None, tmp_path / "clean")
    with pytest.raises(HealthError, match="no items with a negative to validate"):
        plan_sample(demo_db, demo.ORDER_SET, budget=10)
