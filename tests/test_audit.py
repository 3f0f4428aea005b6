"""Hackability audit: blind baselines beat chance only on biased sets; refinement removes the bias."""

from __future__ import annotations

import json
import random
import subprocess

import numpy as np
import pytest

from foil_studio.analysis import blind
from foil_studio.analysis.audit import audit, refine_dataset, stored_audit
from foil_studio.data.formats import Parsed
from foil_studio.data.items import Item
from foil_studio.data.loading import import_path, store_parsed
from tests.conftest import FOIL_CLI, REPO

NOUNS = [
    "dog",
    "cat",
    "horse",
    "man",
    "woman",
    "child",
    "car",
    "bus",
    "plate",
    "table",
    "chair",
    "kite",
    "boat",
    "tree",
]
SUGARCREPE_CATEGORIES = ("replace_obj", "replace_att", "replace_rel", "swap_obj", "swap_att", "add_obj", "add_att")
VERBS = ["sits on", "stands near", "runs past", "looks at", "lies under", "waits by"]


def balanced_pairs(n: int, seed: int) -> list[tuple[str, str]]:
    """Positive and negative drawn from the same distribution: nothing to exploit."""
    rng = random.Random(seed)
    caption = lambda: f"a {rng.choice(NOUNS)} {rng.choice(VERBS)} a {rng.choice(NOUNS)}"  # noqa: E731
    return [(caption(), caption()) for _ in range(n)]


def negated_pairs(n: int, seed: int) -> list[tuple[str, str]]:
    """Negatives made by adding "not": any blind model can spot them."""
    return [(c, c.replace(" a ", " not a ", 1)) for c, _ in balanced_pairs(n, seed)]


def fake_embed(texts: list[str]) -> np.ndarray:
    """Bag of words as a stand-in embedding (the real MiniLM test is below)."""
    vocabulary = sorted({w for phrase in [*NOUNS, *VERBS, "a not"] for w in blind.words(phrase)})
    index = {w: i for i, w in enumerate(vocabulary)}
    out = np.zeros((len(texts), len(vocabulary)), dtype=np.float32)
    for row, text in enumerate(texts):
        for word in blind.words(text):
            out[row, index[word]] += 1
    return out


@pytest.mark.parametrize("scorer", ["stats", "ngram"])
def test_blind_scorers_beat_chance_only_on_a_biased_set(scorer):
    biased = blind.blind_gaps(negated_pairs(400, 1), [scorer])[scorer]
    fair = blind.blind_gaps(balanced_pairs(400, 2), [scorer])[scorer]
    assert biased.correct.mean() > 0.9
    assert abs(fair.correct.mean() - 0.5) < 0.08  # chance (its ties, common here, count half)


def test_same_words_flags_order_swaps():
    pairs = [("a dog chases a cat", "a cat chases a dog"), ("a red cup", "a blue cup")]
    assert [blind.same_words(*p) for p in pairs] == [True, False]


def test_refinement_brings_both_blind_scorers_to_chance():
    rng = np.random.default_rng(0)
    a = rng.normal(0.6, 1.0, 4000)  # two biased scorers, correlated like plausibility and grammar
    b = 0.5 * a + rng.normal(0.3, 1.0, 4000)
    assert (a > 0).mean() > 0.65 and (b > 0).mean() > 0.65
    keep = blind.refine(a, b, grid=8, seed=0)
    assert keep.sum() > 1000
    assert abs((a[keep] > 0).mean() - 0.5) <= 0.02 and abs((b[keep] > 0).mean() - 0.5) <= 0.02


def test_refinement_with_ties_keeps_a_set_at_exactly_chance():
    """Ties (a bag-of-words scorer on word swaps) lie on the axis: kept, they count half, and each
    scorer's accuracy on the kept set is 50% exactly. Before, a tied item fell in the cell on the
    positive side and its mirror's wrong items were kept against it: 25% was called refined."""
    rng = np.random.default_rng(1)
    a = np.where(rng.random(3000) < 0.3, 0.0, rng.normal(0.4, 1.0, 3000))
    b = np.where(rng.random(3000) < 0.2, 0.0, 0.5 * a + rng.normal(0.2, 1.0, 3000))
    keep = blind.refine(a, b, grid=8, seed=0)
    for gaps in (a, b):
        kept = blind.BlindResult("x", gaps[keep])
        assert kept.ties > 100 and kept.correct.mean() == 0.5
    assert keep[(a == 0) & (b == 0)].all()  # on both axes: its own mirror, always kept
    with pytest.raises(ValueError, match="even"):
        blind.refine(a, b, grid=7)


def test_a_tie_is_half_right_and_counted():
    result = blind.BlindResult("x", np.array([0.3, 0.0, -0.2, 0.0]))
    assert result.correct.tolist() == [1.0, 0.5, 0.0, 0.5] and result.ties == 2


def test_audit_and_refine_a_stored_dataset(fresh_db, tmp_path):
    parsed = Parsed("jsonl", "negated")
    for n, (c, neg) in enumerate(negated_pairs(300, 3) + balanced_pairs(300, 4)):
        category = "negated" if n < 300 else "balanced"
        parsed.add(Item("pair", category, f"{category}/{n}", (c, neg), (f"{n}.jpg",)), "x", n)
    store_parsed(fresh_db, parsed, source_format="jsonl", path="x")
    result = audit(fresh_db, "negated", scorers=("stats", "ngram", "minilm"), embed=fake_embed)
    assert result["by_category"]["negated"]["blind"]["stats"] > 90
    assert result["by_category"]["balanced"]["blind"]["ngram"] < 60
    refined = refine_dataset(fresh_db, "negated", ("stats", "ngram"), grid=8, out=tmp_path / "refined")
    assert refined["n_after"] < refined["n_before"]
    assert refined["blind_after"] == {"stats": 50.0, "ngram": 50.0}  # chance, exactly (ties half)
    written = sum(len(json.loads(p.read_text())) for p in (tmp_path / "refined").glob("*.json"))
    assert written == refined["n_after"]


def test_an_audit_is_stored_until_the_dataset_gains_items(fresh_db, monkeypatch):
    def add(pairs: list[tuple[str, str]], start: int) -> None:
        parsed = Parsed("jsonl", "negated")
        for n, (c, neg) in enumerate(pairs, start):
            parsed.add(Item("pair", "negated", f"negated/{n}", (c, neg), (f"{n}.jpg",)), "x", n)
        store_parsed(fresh_db, parsed, source_format="jsonl", path="x")

    add(negated_pairs(200, 6), 0)
    assert stored_audit(fresh_db, "negated", scorers=("stats", "ngram")) is None
    first = audit(fresh_db, "negated", scorers=("stats", "ngram"))
    assert stored_audit(fresh_db, "negated", scorers=("ngram", "stats")) == first  # the page shows it without refitting
    assert (
        stored_audit(fresh_db, "negated", scorers=("stats", "ngram"), seed=1) is None
    )  # other settings: not this result
    with monkeypatch.context() as patch:
        patch.setattr(blind, "blind_gaps", lambda *a, **k: pytest.fail("refinement refitted a stored audit"))
        refined = refine_dataset(fresh_db, "negated", ("stats", "ngram"))
    assert refined["blind_before"] == first["blind"] and refined["n_after"] < refined["n_before"]
    add(negated_pairs(50, 7), 200)
    assert stored_audit(fresh_db, "negated", scorers=("stats", "ngram")) is None  # new items: refit
    assert audit(fresh_db, "negated", scorers=("stats", "ngram"))["n"] == 250


def test_a_dataset_past_the_audit_size_is_audited_on_a_stated_random_part(fresh_db, monkeypatch):
    """Issue 57: a million items' audit decoded and fitted every item (minutes, gigabytes)."""
    from foil_studio.analysis import audit as audit_module
    from foil_studio.annotate.health.card import _audit_sample_words

    parsed = Parsed("jsonl", "negated")
    for n, (c, neg) in enumerate(negated_pairs(300, 3) + balanced_pairs(300, 4)):
        category = "negated" if n < 300 else "balanced"
        parsed.add(Item("pair", category, f"{category}/{n}", (c, neg), (f"{n}.jpg",)), "x", n)
    store_parsed(fresh_db, parsed, source_format="jsonl", path="x")
    whole = audit(fresh_db, "negated", scorers=("stats",))
    assert "sample" not in whole and whole["n"] == 600
    monkeypatch.setattr(audit_module, "AUDIT_MOST", 200)
    part = audit(fresh_db, "negated", scorers=("stats",))
    assert part["n"] == 200 and part["sample"]["items"] == 200 and part["sample"]["of"] == 600
    # the margin stated holds the whole dataset's figure (a 95% margin: this seed is no outlier)
    assert abs(part["blind"]["stats"] - whole["blind"]["stats"]) <= part["sample"]["margin_overall"]
    assert part["sample"]["margin_category"] >= part["sample"]["margin_overall"] > 0
    assert "fitted on a random 200 of the 600 items" in _audit_sample_words(part["sample"])


def test_real_sugarcrepe_refined_data_is_less_hackable_than_unrefined(fresh_db, fixtures):
    import_path(fresh_db, "sugarcrepe", fixtures / "sugarcrepe" / "data")
    import_path(fresh_db, "sugarcrepe", fixtures / "sugarcrepe" / "data_unrefined", name="unrefined")
    refined = audit(fresh_db, "sugarcrepe", scorers=("ngram", "stats"))
    unrefined = audit(fresh_db, "unrefined", scorers=("ngram", "stats"))
    assert refined["n"] == 7511 and unrefined["n"] == 17478
    assert unrefined["blind"]["ngram"] > refined["blind"]["ngram"]
    assert refined["by_category"]["swap_obj"]["same_words"] > 0.5 * 245  # about two thirds of swap_obj


def test_same_word_pairs_of_real_sugarcrepe_swap_att_count_half_for_the_stats_scorer(fresh_db, fixtures):
    """A bag-of-words statistic cannot tell a word swap's captions apart: each such pair counts
    exactly 0.5 (it was 0, so swap_att read 22% and looked hackable)."""
    import_path(fresh_db, "sugarcrepe", fixtures / "sugarcrepe" / "data" / "swap_att.json")
    items = [i for i in fresh_db_items(fresh_db, "sugarcrepe") if i["category"] == "swap_att"]
    pairs = [(i["captions"][0], i["captions"][1]) for i in items]
    stats = blind.blind_gaps(pairs, ["stats"])["stats"]
    same = np.array([blind.same_words(c, n) for c, n in pairs])
    # same words and the same characters but for white space (a trailing space no tokenizer sees);
    # the other same-word pairs differ in punctuation ("pole" / "pole."), which a tokenizer does see
    blind_alike = same & np.array([blind.caption_stats(c) == blind.caption_stats(n) for c, n in pairs])
    assert blind_alike.sum() == 363 and same.sum() == 408
    assert (stats.correct[blind_alike] == 0.5).all() and (stats.gaps[blind_alike] == 0).all()
    result = audit(fresh_db, "sugarcrepe", scorers=("stats",))["by_category"]["swap_att"]
    assert result["ties"]["stats"] >= 363 and 40 < result["blind"]["stats"] < 60


def fresh_db_items(db, dataset: str) -> list[dict]:
    from foil_studio.data import store

    return store.list_items(db, store.get_dataset(db, dataset)["id"], limit=1 << 62)


def test_minilm_scorer_runs_offline_from_the_wheel():
    pairs = negated_pairs(120, 5)
    result = blind.blind_gaps(pairs, ["minilm"])["minilm"]
    assert result.correct.mean() > 0.9


def test_audit_cli_contract(tmp_path, fixtures):
    db = tmp_path / "f.db"

    def run(*a):
        return subprocess.run(
            [*FOIL_CLI, *a, "--db", str(db)],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=300,
        )

    run("import", "sugarcrepe", str(fixtures / "sugarcrepe" / "data" / "swap_obj.json"))
    done = run("audit", "sugarcrepe", "--scorers", "stats", "ngram", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert {"dataset", "n", "by_category", "blind"} <= set(report)
    assert set(report["by_category"]["swap_obj"]) >= {"n", "same_words", "blind"}
    done = run("refine", "sugarcrepe", "--scorers", "stats", "ngram", "--out", str(tmp_path / "out"), "--json")
    assert done.returncode == 0, done.stderr
    refined = json.loads(done.stdout)
    assert {"dataset", "n_before", "n_after", "blind_before", "blind_after"} <= set(refined)


@pytest.mark.slow
def test_hackability_page_on_the_real_sugarcrepe_files(tmp_path, fixtures, admin_page):
    from foil_studio.data import store

    db = store.open_db(tmp_path / "foil.db")
    import_path(db, "sugarcrepe", fixtures / "sugarcrepe" / "data")
    import_path(db, "sugarcrepe", fixtures / "sugarcrepe" / "data_unrefined", name="unrefined")
    at = admin_page(tmp_path / "foil.db", "views/hackability.py", timeout=300)
    at.selectbox(key="audit_compare").set_value("unrefined").run()
    assert not at.exception
    table = at.dataframe[0].value.set_index("category")
    assert list(table.index) == sorted(SUGARCREPE_CATEGORIES) + ["(all)"]
    assert table.loc["(all)", "n"] == 7511 and table.loc["swap_obj", "same words"] > 0.5 * 245
    for scorer in ("stats", "ngram"):
        assert (
            table[f"sugarcrepe {scorer}"].between(0, 100).all() and table[f"unrefined {scorer}"].between(0, 100).all()
        )
    assert (
        table.loc["(all)", "unrefined ngram"] > table.loc["(all)", "sugarcrepe ngram"]
    )  # refinement removed a text bias
    assert stored_audit(db, "unrefined", scorers=("stats", "ngram")) is not None  # fitted once, kept for the next visit
    at.slider(key="refine_grid").set_value(6).run()
    at.button(key="refine").click().run()
    assert not at.exception and any(m.value.startswith("Kept ") for m in at.markdown)
    assert len(at.get("download_button")) == 1


def test_audit_table_has_a_row_per_category_and_the_whole_set_with_the_compared_dataset_beside():
    from foil_studio.analysis.audit import audit_table

    def summary(blind: float) -> dict:
        return {"n": 4, "same_words": 1, "blind": {"stats": blind}, "ties": {"stats": 1}}

    result = {**summary(50.0), "by_category": {"swap_att": summary(62.5)}}
    other = {**summary(40.0), "by_category": {"swap_att": summary(30.0)}}
    rows = audit_table(result, "mine", ["stats"], other, "theirs")
    assert [r["category"] for r in rows] == ["swap_att", "(all)"]
    assert [(r["mine stats"], r["theirs stats"], r["stats ties"]) for r in rows] == [(62.5, 30.0, 1), (50.0, 40.0, 1)]
    assert "theirs stats" not in audit_table(result, "mine", ["stats"])[0]


def test_the_hackability_page_asks_before_fitting_a_large_dataset_and_then_keeps_the_fit(
    demo_store, tmp_path, admin_page, monkeypatch
):
    """Issue 57: a first render never fits the blind scorers of a dataset past `PAGE_FITS_MOST`
    audited items (20 s at a million): it says so and offers a button; once pressed, the audit is
    fitted and stored, and a new visit shows it at once."""
    from foil_studio.analysis import audit as audits
    from foil_studio.data import store

    db_file = tmp_path / "foil.db"
    store.open_db(demo_store).conn.execute("VACUUM INTO ?", [str(db_file)])
    monkeypatch.setattr(audits, "PAGE_FITS_MOST", 10)
    at = admin_page(db_file, "views/hackability.py")
    dataset = at.selectbox(key="audit_dataset").value
    assert not at.exception and not at.dataframe
    assert any("have not been fitted" in info.value for info in at.info)
    db = store.open_db(db_file)
    assert audits.stored_audit(db, dataset, scorers=("stats", "ngram")) is None  # nothing fitted unasked
    at.button(key=f"audit_fit:{dataset}").click().run()
    assert not at.exception and at.dataframe and not any("have not been fitted" in i.value for i in at.info)
    assert audits.stored_audit(db, dataset, scorers=("stats", "ngram")) is not None
    again = admin_page(db_file, "views/hackability.py")  # a new visit: the stored audit, no question
    assert not again.exception and again.dataframe and not again.info
