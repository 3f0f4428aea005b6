"""Model families other than open_clip (issue 44): each built from a tiny random configuration,
saved with save_pretrained and loaded by path as a user's local copy loads; the batched path
gives the scores of a reference loop written from the library's documented API (one pair at a
time, fp32), and the same decisions. Both come from the family's test kit, which its record names
(`ScorerFamily.test_kit`, `analysis.scorers.tiny`): every family with a kit is tested here."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from transformers import BertTokenizer

from foil_studio.analysis.model_files import WEIGHT_SUFFIXES
from foil_studio.analysis.model_spec import ModelUnavailableError
from foil_studio.analysis.results import run_metrics
from foil_studio.analysis.scorers import REGISTRY, blip_itm, scorer_family, split_family, tiny, vqascore
from foil_studio.analysis.scorers.pairwise import load_family, score_with_family
from foil_studio.analysis.scoring import load_image
from foil_studio.data import plugins, store

CAPTIONS = ["a red cube left of the blue sphere", "a blue cube", "the sphere on the cube", "a small green ball"]
# Every family that scores pairs and has a test kit, by name: a new family's module and record are
# enough for the tests of this file and tests/test_precision_choice.py to test it.
FAMILIES = {family.name: family for family in REGISTRY.values() if family.scores_pairs and family.test_kit}


def reference_of(name: str):
    """The family's reference scorer: `(folder, image, caption) -> score`."""
    return FAMILIES[name].kit().reference_score


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def saved(request, tmp_path_factory):
    """(family name, folder of its tiny saved model)."""
    return request.param, FAMILIES[request.param].kit().tiny_model(tmp_path_factory.mktemp(request.param))


def _images(n: int) -> list[Image.Image]:
    rng = np.random.default_rng(7)
    return [Image.fromarray(rng.integers(0, 256, (40 + 8 * k, 48, 3), dtype=np.uint8)) for k in range(n)]


def test_every_cross_encoder_family_is_named_where_the_cli_reads_names():
    """One list: `--model`'s help and `split_family` read the registry's records, and each record's
    `load` names a function that imports."""
    from foil_studio.cli import COMMANDS

    scoring = next(c for c in COMMANDS if c.name == "score")
    said = next(options["help"] for flags, options in scoring.arguments if flags == ("--model",))
    for family in REGISTRY.values():
        assert (f"{family.name} ({family.summary})" in said) == family.scores_pairs, family.name
        assert split_family(f"{family.name}:folder") == ((family.name, "folder") if family.scores_pairs else None)
        assert family.rule and family.source and family.example
        assert not family.scores_pairs or callable(family.loader())
        if family.scores_pairs and plugins.origin(plugins.SCORERS, family.name).built_in:  # foil's own are tested
            kit = family.kit()
            assert callable(kit.tiny_model) and callable(kit.reference_score), family.name


def test_batched_scores_equal_the_reference_loop_pair_by_pair(saved):
    name, folder = saved
    loaded = load_family(scorer_family(name), str(folder), "fp32", "cpu")
    images = _images(3)
    image_states, text_states = loaded.scorer.prepare_images(images), loaded.scorer.prepare_texts(CAPTIONS)
    pairs = [(i, t) for i in range(len(images)) for t in range(len(CAPTIONS))]
    batched = np.array(
        loaded.scorer.score_pairs([image_states[i] for i, _ in pairs], [text_states[t] for _, t in pairs])
    )
    reference = np.array([reference_of(name)(folder, images[i], CAPTIONS[t]) for i, t in pairs])
    difference = float(np.abs(batched - reference).max())
    print(f"{name}: max |batched - reference| = {difference:.2e} over {len(pairs)} pairs")
    assert difference < 1e-5
    by_image = batched.reshape(len(images), -1), reference.reshape(len(images), -1)
    assert (by_image[0].argmax(axis=1) == by_image[1].argmax(axis=1)).all()
    assert np.ptp(reference) > 1e-3  # the check above compares scores that differ


def test_a_demo_dataset_scored_by_a_family_equals_the_reference_item_by_item_and_reaches_metrics(saved, demo_db):
    name, folder = saved
    report = score_with_family(demo_db, "demo-sugarcrepe", name, str(folder), precision="fp32", device="cpu", limit=12)
    run = store.get_run(demo_db, "demo-sugarcrepe", report["run"])
    assert run["meta"]["family"] == name and run["meta"]["rule"] == REGISTRY[name].rule
    columns = store.run_columns(demo_db, run["id"])
    dataset = store.get_dataset(demo_db, "demo-sugarcrepe")
    items = {item["id"]: item for item in store.list_items(demo_db, dataset["id"], limit=12)}
    root = Path(dataset["image_root"])
    reference = np.array(
        [
            [reference_of(name)(folder, load_image(root, items[i]["images"][0]), c) for c in items[i]["captions"]]
            for i in columns.item_ids
        ]
    )
    assert columns.scores is not None
    difference = float(np.abs(columns.scores - reference).max())
    print(f"{name} on demo-sugarcrepe: max |stored - reference| = {difference:.2e} over {reference.size} scores")
    assert difference < 1e-5
    assert ((columns.scores[:, 0] > columns.scores[:, 1]) == (reference[:, 0] > reference[:, 1])).all()
    accuracy = run_metrics(demo_db, "demo-sugarcrepe", report["run"], n_boot=50)["metrics"]["accuracy_micro"]
    assert accuracy == pytest.approx(100 * float(np.mean(reference[:, 0] > reference[:, 1])))


def test_a_second_run_reads_every_pair_from_the_cache(saved, demo_db):
    name, folder = saved
    first = score_with_family(demo_db, "demo-sugarcrepe", name, str(folder), precision="fp32", device="cpu", limit=5)
    again = score_with_family(demo_db, "demo-sugarcrepe", name, str(folder), precision="fp32", device="cpu", limit=5)
    assert first["n_images_encoded"] > 0 and again["n_images_encoded"] == again["n_texts_encoded"] == 0
    assert first["cache_hits"] == 0 and again["cache_hits"] > 0  # distinct pairs: items may share one


def test_the_cache_keys_every_file_and_option_that_changes_a_score(saved, demo_db, tmp_path):
    """Issue 54: a pair's cached score is reused only by a model whose every file that can change a
    score (weights, configuration, processor, tokenizer, chat template), precision and rule are the
    same: editing any of those files in place (each file but the weights) scores afresh; editing the
    model card does not."""
    import dataclasses
    import shutil

    name, folder = saved
    copy = shutil.copytree(folder, tmp_path / folder.name)

    def cache_hits(precision: str = "fp32") -> int:
        report = score_with_family(
            demo_db, "demo-sugarcrepe", name, str(copy), precision=precision, device="cpu", limit=3
        )
        return report["cache_hits"]

    assert cache_hits() == 0 and cache_hits() > 0
    (copy / "README.md").write_text("---\nlicense: mit\n---\nA model card.\n")
    assert cache_hits() > 0  # documentation changes no score
    read = sorted(p for p in copy.rglob("*") if p.is_file() and not p.name.endswith((".md", *WEIGHT_SUFFIXES)))
    assert read, f"{name}'s saved model has no file beside its weights to edit"
    for path in read:
        path.write_bytes(path.read_bytes() + b"\n")
        assert cache_hits() == 0, f"{path.name} edited in place, yet scores were read from the cache"
    assert cache_hits("bf16") == 0  # another precision, another key
    loaded = load_family(FAMILIES[name], str(copy), "fp32", "cpu")
    other_rule = dataclasses.replace(FAMILIES[name], rule=FAMILIES[name].rule + " (changed)")
    assert load_family(other_rule, str(copy), "fp32", "cpu").identity != loaded.identity


@pytest.mark.parametrize(
    ("name", "saved_from"), [("blip-itm", "flava-itm"), ("flava-itm", "blip-itm"), ("vqascore", "blip-itm")]
)
def test_a_folder_saved_from_another_family_is_refused_not_scored_with_random_weights(name, saved_from, tmp_path):
    """transformers loads these folders of another model into the family's class, fills what they
    lack at random and goes on (a folder whose tensors do not fit at all, BLIP's for BLIP-2, it
    refuses itself): scored, the figures would be a random model's."""
    folder = FAMILIES[saved_from].kit().tiny_model(tmp_path)
    with pytest.raises(
        ModelUnavailableError, match=rf"is not a {name} model \(its weights lack \d+ of the \d+ tensors"
    ):
        load_family(scorer_family(name), str(folder), "fp32", "cpu")


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_a_name_neither_cached_nor_reachable_fails_in_seconds_with_how_to_provide_it(monkeypatch, tmp_path, name):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty-cache"))
    started = time.perf_counter()
    with pytest.raises(ModelUnavailableError) as raised:
        load_family(scorer_family(name), "Salesforce/no-such-model", "fp32", "cpu")
    assert time.perf_counter() - started < 10
    message = str(raised.value)
    assert "\n" not in message and "save_pretrained" in message and "HF_HOME" in message


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_a_missing_local_folder_says_so(tmp_path, name):
    with pytest.raises(ModelUnavailableError, match="does not exist"):
        load_family(scorer_family(name), str(tmp_path / "nowhere"), "fp32", "cpu")


@pytest.mark.parametrize("name", sorted(FAMILIES))
@pytest.mark.parametrize("holds", ["nothing", "a config only", "a model without its processor"])
def test_a_folder_that_is_not_the_familys_model_is_one_line_naming_it_and_what_was_expected(tmp_path, name, holds):
    """Issue 55: the Model scores page showed transformers' own message (many lines, naming neither
    the family nor what the folder should hold); `load_family` says it for the page and `foil score`."""
    folder = tmp_path / "not-a-model"
    folder.mkdir()
    if holds != "nothing":
        made = blip_itm.tiny_model(tmp_path)  # a model of one family: its config, or all but its processor
        for file in ("config.json", *(("model.safetensors",) if holds != "a config only" else ())):
            (folder / file).write_bytes((made / file).read_bytes())
    with pytest.raises(ModelUnavailableError) as raised:
        load_family(scorer_family(name), str(folder), "fp32", "cpu")
    message = str(raised.value)
    assert "\n" not in message and message.startswith(f"{folder} is not a"), message
    expected = "a model transformers loads with" if "Unrecognized model" in message else "made by save_pretrained"
    assert expected in message and len(message) < 500, message


def test_foil_score_says_a_folder_is_not_the_familys_model_in_one_line(demo_store, tmp_path, capsys):
    from foil_studio import cli

    db_file = tmp_path / "foil.db"
    store.open_db(demo_store).conn.execute("VACUUM INTO ?", [str(db_file)])
    (tmp_path / "empty").mkdir()
    argv = ["score", "demo-sugarcrepe", "--model", f"blip-itm:{tmp_path / 'empty'}", "--db", str(db_file)]
    assert cli.main([*argv, "--device", "cpu"]) == 1
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and said.startswith(f"error: {tmp_path / 'empty'} is not a blip-itm model ("), said
    assert "expected a folder made by save_pretrained" in said


def test_vqascore_without_a_chat_template_asks_the_plain_question_after_the_image_token(tmp_path):
    folder = vqascore.tiny_model(tmp_path, chat_template=None)
    loaded = load_family(scorer_family("vqascore"), str(folder), "fp32", "cpu")
    assert loaded.stamp()["prompt_format"].startswith("plain") and loaded.stamp()["answer_token"] == "Yes"
    images = _images(2)
    batched = loaded.scorer.score_pairs(
        [images[0], images[1], images[1]], loaded.scorer.prepare_texts([CAPTIONS[0], CAPTIONS[1], CAPTIONS[3]])
    )
    reference = [vqascore.reference_score(folder, images[i], CAPTIONS[t]) for i, t in [(0, 0), (1, 1), (1, 3)]]
    difference = float(np.abs(np.array(batched) - np.array(reference)).max())
    print(f"vqascore, plain prompt: max |batched - reference| = {difference:.2e} over 3 pairs")
    assert difference < 1e-5


def test_vqascore_refuses_a_tokenizer_that_has_no_single_yes_token(tmp_path):
    from foil_studio.analysis.scorers.vqascore import NotScorableError, yes_token_id

    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join([*tiny.SPECIAL, "y", "##es", "no"]) + "\n")
    with pytest.raises(NotScorableError, match="2 tokens"):
        yes_token_id(BertTokenizer(str(vocab)))  # "yes" is "y", "##es" here
    with pytest.raises(NotScorableError, match="unknown"):
        yes_token_id(tiny.word_tokenizer("no"))  # one token, but the unknown one
    assert yes_token_id(tiny.word_tokenizer("Yes")) == tiny.word_tokenizer("Yes").convert_tokens_to_ids("Yes")


def test_foil_score_takes_a_family_and_its_folder_and_metrics_read_the_run(saved, demo_store, tmp_path, capsys):
    import json

    from foil_studio import cli

    name, folder = saved
    db_file = tmp_path / "foil.db"
    store.open_db(demo_store).conn.execute("VACUUM INTO ?", [str(db_file)])
    common = ["--db", str(db_file), "--json"]
    argv = ["score", "demo-sugarcrepe", "--model", f"{name}:{folder}", "--precision", "fp32", "--limit", "6"]
    assert cli.main([*argv, "--device", "cpu", *common]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["family"] == name and report["run"] == f"{name}-{folder.name}" and report["n_items"] == 6
    assert cli.main(["metrics", "demo-sugarcrepe", "--run", report["run"], *common]) == 0
    assert "accuracy_micro" in json.loads(capsys.readouterr().out)["metrics"]
    assert cli.main([*argv, "--pretrained", "openai", *common]) != 0
    assert "open_clip's" in capsys.readouterr().err


def test_items_that_need_caption_to_caption_cosines_are_refused_with_the_way_out():
    from foil_studio.analysis.scorers.pairwise import NoTextScoresError, refuse_text_scores
    from foil_studio.analysis.scoring import ItemPlan

    refuse_text_scores([ItemPlan(1, "pair", ("i",), ("a", "b"))])
    with pytest.raises(NoTextScoresError, match="open_clip"):
        refuse_text_scores([ItemPlan(1, "paraphrase", ("i",), ("a", "b", "c"))])


def test_the_api_scores_with_a_family_as_the_command_does(saved, demo_store, tmp_path):
    """`Studio.score` takes the names `foil score --model` takes (issue 44's faces)."""
    from foil_studio import api

    name, folder = saved
    db_file = tmp_path / "foil.db"
    store.open_db(demo_store).conn.execute("VACUUM INTO ?", [str(db_file)])
    studio = api.Studio(store.open_db(db_file))
    report = studio.score("demo-sugarcrepe", f"{name}:{folder}", precision="fp32", device="cpu", limit=4)
    assert report["family"] == name and report["n_items"] == 4
    assert studio.metrics("demo-sugarcrepe", report["run"])["n"] == 4
    with pytest.raises(ValueError, match="open_clip's"):
        studio.score("demo-sugarcrepe", f"{name}:{folder}", pretrained="openai")


def test_a_family_run_flows_through_inspection_parity_and_the_health_leaderboard(demo_db, tmp_path):
    """A family's run is a run like open_clip's: Inspect runs' table, parity between two of its
    precisions and Benchmark health's leaderboard read it without knowing its family."""
    from foil_studio.analysis import inspection
    from foil_studio.analysis.parity import parity
    from foil_studio.annotate import health
    from foil_studio.annotate.simulation import simulate

    (tmp_path / "blip").mkdir()
    folder = blip_itm.tiny_model(tmp_path / "blip")
    dataset = "demo-sugarcrepe"
    runs = [
        score_with_family(demo_db, dataset, "blip-itm", str(folder), precision=p, device="cpu", run=f"blip-{p}")["run"]
        for p in ("fp32", "bf16")
    ]
    n_items = store.count_items(demo_db, store.get_dataset(demo_db, dataset)["id"])
    table = inspection.item_table(demo_db, dataset, runs[0])
    assert len(table) == n_items and table["correct"].isin([True, False]).all()
    flips = parity(demo_db, dataset, *runs).to_dict()
    assert flips["n_items"] == n_items
    for name in ("ann-a", "ann-b", "ann-c"):
        store.ensure_annotator(demo_db, name)
    plan = health.plan_sample(demo_db, dataset, per_category=4, seed=0)
    health.create_sample_batch(demo_db, plan, ("ann-a", "ann-b", "ann-c"), overlap=3, name="health-1")
    simulate(demo_db, "health-1", accuracies=1.0, seed=0)
    board = health.health_report(demo_db, dataset, runs, n_boot=50)["leaderboard"]
    assert [row["run"] for row in board["runs"]] == runs
    published = run_metrics(demo_db, dataset, runs[0], n_boot=50)["metrics"]["accuracy_micro"]
    assert board["runs"][0]["published"] == pytest.approx(published, abs=0.01)


def test_blip2_reads_each_caption_through_lavis_text_processor(tmp_path):
    """Issue 54: LAVIS evaluates BLIP-2's ITM on captions through its `blip_caption` processor (lower
    case, `. ! " ( ) * # : ; ~` as spaces, 50 words at most): a caption and its processed form score
    alike, and the run records the processor."""
    from foil_studio.analysis.scorers.blip2_itm import lavis_caption

    assert lavis_caption("The CUBE (red) is left of: the Sphere!!  ") == "the cube red is left of the sphere"
    assert lavis_caption(" ".join(["cube"] * 60)) == " ".join(["cube"] * 50)
    assert lavis_caption("a cube, then a ball") == "a cube, then a ball"  # commas are kept, as LAVIS keeps them
    folder = FAMILIES["blip2-itm"].kit().tiny_model(tmp_path)
    loaded = load_family(scorer_family("blip2-itm"), str(folder), "fp32", "cpu")
    image = loaded.scorer.prepare_images(_images(1))[0]
    raw, processed = loaded.scorer.prepare_texts(["The RED cube (left)!", "the red cube left"])
    assert raw.tolist() == processed.tolist()
    assert loaded.scorer.score_pairs([image, image], [raw, processed])[0] == pytest.approx(
        reference_of("blip2-itm")(folder, _images(1)[0], "the red cube left"), abs=1e-5
    )
    assert loaded.stamp()["text_processor"] == "LAVIS blip_caption (max_words 50)"
