"""A run's stored column copy (`store.run_columns`, migration 21): the very run its score rows
hold, made by the commands that write scores, and never served once those scores change."""

from __future__ import annotations

import numpy as np
import pytest

from foil_studio.data import store
from foil_studio.data.loading import import_path
from foil_studio.data.store import runs
from tests.test_benchmarks import put_run, whatsup_folder


def assert_same_columns(served: store.RunColumns, held: store.RunColumns) -> None:
    assert served.run_type == held.run_type
    for name in ("item_ids", "kinds", "categories"):
        assert getattr(served, name).tolist() == getattr(held, name).tolist(), name
    if held.scores is None:
        assert served.scores is None
    else:
        assert served.scores is not None and served.scores.shape == held.scores.shape
        assert np.array_equal(served.scores, held.scores, equal_nan=True)  # exactly: no float32 on the way
    assert served.outcomes == held.outcomes and served.groups == held.groups


def copies(db) -> dict[int, int]:
    """Run id -> the version its stored copy is of."""
    return dict(db.execute("SELECT run_id, version FROM run_copies").fetchall())


def versions(db) -> dict[int, int]:
    return dict(db.execute("SELECT id, version FROM runs").fetchall())


@pytest.mark.both_engines
def test_an_import_that_carries_a_run_leaves_its_copy_stored_before_any_read(fresh_db, fixtures):
    import_path(fresh_db, "bivlc-results", fixtures / "bivlc" / "results" / "BiVLC_ViT-B-32.csv")
    assert copies(fresh_db) == versions(fresh_db) and copies(fresh_db)  # no page pays for the first read
    for run_id in versions(fresh_db):
        assert_same_columns(store.run_columns(fresh_db, run_id), runs._read_run_columns(fresh_db, run_id))


@pytest.mark.both_engines
def test_groups_padded_scores_and_imported_decisions_survive_the_copy(fresh_db, fixtures, tmp_path):
    folder = whatsup_folder(tmp_path)
    import_path(fresh_db, "whatsup", folder / "data", images=folder)
    right = [0.9, 0.1, 0.2, 0.3]
    # four captions for the controlled images, two for COCO's: rows padded with NaN in one array
    put_run(
        fresh_db,
        "whatsup",
        {**{f"controlled_images_dataset/{n}": right for n in range(8)}, "coco_qa_one_obj/0": [0.6, 0.4]},
    )
    import_path(fresh_db, "bivlc-results", fixtures / "bivlc" / "results" / "BiVLC_ViT-B-32.csv")
    for run_id in versions(fresh_db):
        served = store.run_columns(fresh_db, run_id)  # the whatsup run: copied on this first read
        assert_same_columns(served, runs._read_run_columns(fresh_db, run_id))
        assert_same_columns(store.run_columns(fresh_db, run_id), served)  # the second read: from the copy
    whatsup = store.run_columns(fresh_db, store.get_run(fresh_db, "whatsup", "hand")["id"])
    assert any(whatsup.groups) and np.isnan(whatsup.scores).any()
    assert all(store.run_columns(fresh_db, store.get_run(fresh_db, "bivlc", "ViT-B-32")["id"]).outcomes)
    assert copies(fresh_db) == versions(fresh_db)


@pytest.mark.both_engines
def test_a_copy_of_older_scores_is_never_served(fresh_db, tmp_path):
    folder = whatsup_folder(tmp_path)
    import_path(fresh_db, "whatsup", folder / "data", images=folder)
    put_run(fresh_db, "whatsup", {"coco_qa_one_obj/0": [0.6, 0.4], "coco_qa_one_obj/1": [0.5, 0.5]})
    run_id = store.get_run(fresh_db, "whatsup", "hand")["id"]
    assert store.run_columns(fresh_db, run_id).scores.tolist() == [[0.6, 0.4], [0.5, 0.5]]
    put_run(fresh_db, "whatsup", {"coco_qa_one_obj/1": [0.1, 0.9]})  # scored again: a new version
    assert copies(fresh_db)[run_id] != versions(fresh_db)[run_id]
    assert store.run_columns(fresh_db, run_id).scores.tolist() == [[0.6, 0.4], [0.1, 0.9]]
    assert copies(fresh_db) == versions(fresh_db)
    deleted = store.delete_run(fresh_db, "whatsup", "hand")
    assert deleted["run_copies"] == 1 and copies(fresh_db) == {}


@pytest.mark.both_engines
def test_a_subset_is_read_from_the_rows_and_stores_no_copy(demo_db):
    row = store.get_dataset(demo_db, "demo-sugarcrepe")
    items = store.list_items(demo_db, row["id"], limit=1 << 62)
    with store.transaction(demo_db):
        run_id = store.ensure_run(demo_db, row["id"], "hand", run_type="scores")
        store.put_scores(demo_db, run_id, [(item["id"], [0.3, 0.1]) for item in items])
    flagged = [item["id"] for item in items[::3]]
    with store.transaction(demo_db):
        for item_id in flagged:
            demo_db.execute("UPDATE items SET truth = ? WHERE id = ?", ['{"valid": true}', item_id])
    subset = store.run_columns(demo_db, run_id, truth_flag="valid")
    assert subset.item_ids.tolist() == sorted(flagged) and 0 < len(flagged) < len(items)
    assert copies(demo_db) == {}


@pytest.mark.both_engines
def test_scores_written_again_replace_the_old_and_an_item_given_twice_keeps_its_last(fresh_db, tmp_path):
    folder = whatsup_folder(tmp_path)
    import_path(fresh_db, "whatsup", folder / "data", images=folder)
    items = {i["source_id"]: i["id"] for i in store.list_items(fresh_db, store.get_dataset(fresh_db, "whatsup")["id"])}
    first, second = items["coco_qa_one_obj/0"], items["coco_qa_one_obj/1"]
    with store.transaction(fresh_db):
        run_id = store.ensure_run(fresh_db, store.get_dataset(fresh_db, "whatsup")["id"], "hand", run_type="scores")
        store.put_scores(fresh_db, run_id, [(first, [0.1, 0.2]), (second, [0.3, 0.4]), (first, [0.5, 0.6])])
        store.put_scores(fresh_db, run_id, [(second, [0.7, 0.8])])  # a second write in the same transaction
    assert store.run_columns(fresh_db, run_id).scores.tolist() == [[0.5, 0.6], [0.7, 0.8]]
    with store.transaction(fresh_db):
        store.put_scores(fresh_db, run_id, [(first, [0.9, 0.1])])
    assert runs._read_run_columns(fresh_db, run_id).scores.tolist() == [[0.9, 0.1], [0.7, 0.8]]


@pytest.mark.both_engines
@pytest.mark.parametrize("page", [1, 2, 3])
def test_a_run_read_a_few_rows_at_a_time_is_the_run_read_at_once(fresh_db, tmp_path, monkeypatch, page):
    folder = whatsup_folder(tmp_path)
    import_path(fresh_db, "whatsup", folder / "data", images=folder)
    wide = {f"controlled_images_dataset/{n}": [0.9, 0.1 * n, 0.2, 0.3] for n in range(8)}
    narrow = {f"coco_qa_one_obj/{n}": [0.6, 0.1 * n] for n in range(3)}
    put_run(fresh_db, "whatsup", {**narrow, **wide})  # pages of two and of four captions: padded to four
    run_id = store.get_run(fresh_db, "whatsup", "hand")["id"]
    at_once = runs._read_run_columns(fresh_db, run_id)
    monkeypatch.setattr(runs, "RUN_PAGE", page)
    assert_same_columns(runs._read_run_columns(fresh_db, run_id), at_once)
    assert at_once.scores.shape == (11, 4) and int(np.isnan(at_once.scores).sum()) == 2 * 3
    assert len(at_once) == 11 and at_once.item_ids.tolist() == sorted(at_once.item_ids.tolist())


def test_pages_of_scores_join_as_one_array_padded_or_refused():
    two, four = np.ones((2, 2)), np.zeros((1, 4))
    joined = runs._joined_scores([two, four, two])
    assert joined.shape == (5, 4) and np.isnan(joined[:2, 2:]).all() and not np.isnan(joined[2]).any()
    assert runs._joined_scores([two, None]) is None
    assert runs._joined_scores([np.ones((2, 2, 2)), np.ones((1, 2, 2))]).shape == (3, 2, 2)
    with pytest.raises(store.StoreError, match="different shapes"):
        runs._joined_scores([np.ones((2, 2, 2)), two])


@pytest.mark.both_engines
def test_keep_run_copies_stores_only_the_copies_that_are_stale(fresh_db, tmp_path):
    folder = whatsup_folder(tmp_path)
    import_path(fresh_db, "whatsup", folder / "data", images=folder)
    put_run(fresh_db, "whatsup", {"coco_qa_one_obj/0": [0.6, 0.4]})
    put_run(fresh_db, "whatsup", {"coco_qa_one_obj/1": [0.6, 0.4]}, run="other")
    dataset_id = store.get_dataset(fresh_db, "whatsup")["id"]
    assert store.keep_run_copies(fresh_db, dataset_id) == 2 and copies(fresh_db) == versions(fresh_db)
    assert store.keep_run_copies(fresh_db, dataset_id) == 0
    put_run(fresh_db, "whatsup", {"coco_qa_one_obj/2": [0.1, 0.9]}, run="other")
    assert store.keep_run_copies(fresh_db, dataset_id) == 1 and copies(fresh_db) == versions(fresh_db)
    other = store.run_columns(fresh_db, store.get_run(fresh_db, "whatsup", "other")["id"])
    assert other.scores.tolist() == [[0.6, 0.4], [0.1, 0.9]] and other.run_type == "scores"


@pytest.mark.parametrize("engine", ["postgresql"])
def test_postgresql_knows_the_scores_just_written_before_their_copy_is_read(fresh_db, tmp_path, monkeypatch):
    """PostgreSQL's planner takes a table it has no figures of for a few rows: a million scores just
    written were then joined and sorted whole for each page of the copy (25 s, not 1 s).
    `keep_run_copies` has them analysed first, and only where a copy is made."""
    analysed = []
    execute = fresh_db.execute

    def noting(sql, *args, **kwargs):
        if sql.startswith("ANALYZE"):
            analysed.append(sql)
        return execute(sql, *args, **kwargs)

    monkeypatch.setattr(fresh_db, "execute", noting)
    folder = whatsup_folder(tmp_path)
    import_path(fresh_db, "whatsup", folder / "data", images=folder)
    put_run(fresh_db, "whatsup", {"coco_qa_one_obj/0": [0.6, 0.4]})
    dataset_id = store.get_dataset(fresh_db, "whatsup")["id"]
    analysed.clear()
    assert store.keep_run_copies(fresh_db, dataset_id) == 1 and analysed == ["ANALYZE scores"]
    analysed.clear()
    assert store.keep_run_copies(fresh_db, dataset_id) == 0 and analysed == []
    (when,) = fresh_db.execute("SELECT last_analyze FROM pg_stat_user_tables WHERE relname = 'scores'").fetchone()
    assert when is not None
