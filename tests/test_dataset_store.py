"""The store's datasets, items, images and import log (`data/store/datasets.py`) function by function
on both engines: what each returns in order and in full, where mutation testing (issue 53) found the
bulk import's rules and the readers' filters reached by the import tests but not held."""

from __future__ import annotations

import pytest

from foil_studio.data import store
from foil_studio.data.images import ImageInfo
from foil_studio.data.items import Item
from foil_studio.data.store import datasets as dataset_rows
from foil_studio.data.store import dialect

pytestmark = pytest.mark.both_engines


def pair(source_id: str, category: str = "add_obj", images: tuple[str, ...] = (), **fields) -> Item:
    return Item("pair", category, source_id, (f"a cat {source_id}", f"a dog {source_id}"), images, **fields)


def stored(db, name: str, items: list[Item], image_root=None) -> int:
    """A dataset `name` holding `items`; its id."""
    with store.transaction(db):
        dataset_id = store.ensure_dataset(db, name, "jsonl", image_root)
        store.upsert_items(db, dataset_id, items)
    return dataset_id


def images(db, dataset_id: int, **statuses: str) -> None:
    with store.transaction(db):
        store.record_images(
            db, dataset_id, [ImageInfo(path, status, "ab" * 32, 100, 4, 3) for path, status in statuses.items()]
        )


# --- datasets ---------------------------------------------------------------------------------------


def test_a_dataset_is_made_once_and_a_newly_given_image_root_is_recorded(fresh_db, tmp_path):
    with store.transaction(fresh_db):
        made = store.ensure_dataset(fresh_db, "set", "jsonl", tmp_path / "a" / ".." / "root")
        assert store.ensure_dataset(fresh_db, "set", "csv") == made
        assert store.get_dataset(fresh_db, "set")["image_root"] == str((tmp_path / "root").resolve())
        assert store.ensure_dataset(fresh_db, "set", "csv", tmp_path / "other") == made
        other = store.ensure_dataset(fresh_db, "other", "csv")
    row = store.get_dataset(fresh_db, "set")
    assert (row["id"], row["source_format"], row["image_root"]) == (made, "jsonl", str(tmp_path / "other"))
    assert other != made and store.get_dataset(fresh_db, "other")["image_root"] is None
    with pytest.raises(store.InvalidNameError) as refused:
        store.ensure_dataset(fresh_db, " ", "jsonl")
    assert str(refused.value) == "a dataset name must be non-empty text, got ' '"


def test_an_unknown_dataset_is_refused_listing_the_known_ones_or_none(fresh_db):
    with pytest.raises(store.NotFoundError) as refused:
        store.get_dataset(fresh_db, "sugar")
    assert str(refused.value) == "no dataset named 'sugar' (datasets: none)"
    for name in ("sugarcrepe", "bivlc"):
        stored(fresh_db, name, [])
    with pytest.raises(store.NotFoundError) as refused:
        store.delete_dataset(fresh_db, "sugar")
    assert str(refused.value) == "no dataset named 'sugar' (datasets: bivlc, sugarcrepe)"


def test_deleting_a_dataset_leaves_the_others_whole(fresh_db):
    kept = stored(fresh_db, "kept", [pair("1"), pair("2")])
    stored(fresh_db, "gone", [pair("1")])
    store.delete_dataset(fresh_db, "gone")
    assert store.dataset_names(fresh_db) == ["kept"] and store.count_items(fresh_db, kept) == 2


def test_the_dataset_list_counts_items_by_category_and_kind_and_images_by_status(fresh_db):
    triple = Item("triple", "swap", "t", ("a", "b", "c"), ("t.png",))
    first = stored(fresh_db, "first", [pair("1", "swap", ("1.png",)), pair("2", "add", ("2.png",)), triple])
    images(fresh_db, first, **{"1.png": "ok", "2.png": "missing", "t.png": "ok"})
    stored(fresh_db, "second", [])
    listed = store.list_datasets(fresh_db)
    assert [(d["name"], d["format"], d["image_root"]) for d in listed] == [
        ("first", "jsonl", None),
        ("second", "jsonl", None),
    ]
    assert listed[0]["n_items"] == 3 and listed[1]["n_items"] == 0
    assert listed[0]["by_category"] == {"add": 1, "swap": 2}
    assert listed[0]["item_kinds"] == {"pair": 2, "triple": 1}
    assert listed[0]["images"] == {"missing": 1, "ok": 2} and listed[1]["images"] == {}
    assert store.kind_category_counts(fresh_db, first) == {
        ("pair", "add"): 1,
        ("pair", "swap"): 1,
        ("triple", "swap"): 1,
    }
    assert list(store.kind_category_counts(fresh_db, first)) == [("pair", "add"), ("pair", "swap"), ("triple", "swap")]
    assert store.category_counts(fresh_db, first) == {"add": 1, "swap": 2}
    assert store.item_kind_counts(fresh_db, first) == {"pair": 2, "triple": 1}


def test_dataset_names_are_oldest_first_and_with_runs_only_those_scored(fresh_db):
    for name in ("zeta", "alpha", "mid"):
        stored(fresh_db, name, [])
    with store.transaction(fresh_db):
        store.ensure_run(fresh_db, store.get_dataset(fresh_db, "mid")["id"], "run", run_type="scores")
    assert store.dataset_names(fresh_db) == ["zeta", "alpha", "mid"]
    assert store.dataset_names(fresh_db, with_runs=True) == ["mid"]


# --- images -----------------------------------------------------------------------------------------


def test_image_rows_are_refreshed_in_place_and_only_found_ones_are_totalled(fresh_db):
    dataset_id = stored(fresh_db, "set", [])
    other = stored(fresh_db, "other", [])
    assert store.found_image_totals(fresh_db, dataset_id) == (0, 0)
    images(fresh_db, dataset_id, **{"a.png": "missing", "b.png": "ok", "c.png": "unreadable"})
    images(fresh_db, other, **{"a.png": "ok"})
    with store.transaction(fresh_db):
        store.record_images(fresh_db, dataset_id, [ImageInfo("a.png", "ok", "cd" * 32, 250, 8, 6)])
    assert store.known_image_paths(fresh_db, dataset_id) == {"a.png": "ok", "b.png": "ok", "c.png": "unreadable"}
    assert store.image_status_counts(fresh_db, dataset_id) == {"ok": 2, "unreadable": 1}
    assert store.found_image_totals(fresh_db, dataset_id) == (2, 350)
    row = fresh_db.execute(
        "SELECT sha256, size, width, height FROM images WHERE dataset_id = ? AND path = 'a.png'", [dataset_id]
    ).fetchone()
    assert tuple(row) == ("cd" * 32, 250, 8, 6)


# --- the bulk import --------------------------------------------------------------------------------


def test_an_item_with_the_captions_of_a_stored_one_but_other_images_is_another_item(fresh_db):
    dataset_id = stored(fresh_db, "set", [pair("1", images=("a.png",))])
    with store.transaction(fresh_db):
        written = store.upsert_items(fresh_db, dataset_id, [pair("1", images=("b.png",)), pair("1", images=("a.png",))])
    assert [fresh for _, fresh in written] == [True, False] and written[0][0] != written[1][0]
    assert store.count_items(fresh_db, dataset_id) == 2
    assert [row["images"] for row in store.list_items(fresh_db, dataset_id)] == [["a.png"], ["b.png"]]


def test_an_item_without_images_matches_the_first_stored_item_of_its_text(fresh_db):
    dataset_id = stored(fresh_db, "set", [pair("1", images=("a.png",)), pair("1", images=("b.png",))])
    first, second = (row["id"] for row in store.list_items(fresh_db, dataset_id))
    with store.transaction(fresh_db):
        written = store.upsert_items(fresh_db, dataset_id, [pair("1")])
    assert written == [(first, False)] and second > first
    assert store.count_items(fresh_db, dataset_id) == 2


def test_a_text_only_item_is_filled_in_by_the_same_item_with_images_once(fresh_db):
    dataset_id = stored(fresh_db, "set", [pair("1")])
    (text_only,) = (row["id"] for row in store.list_items(fresh_db, dataset_id))
    with store.transaction(fresh_db):
        written = store.upsert_items(fresh_db, dataset_id, [pair("1", images=("a.png",))])
    assert written == [(text_only, False)]
    assert store.items_by_id(fresh_db, [text_only])[text_only]["images"] == ["a.png"]
    # filled once: the same text with other images is another item
    with store.transaction(fresh_db):
        again = store.ItemWriter(fresh_db, dataset_id).write(
            [pair("1", images=("a.png",)), pair("1", images=("b.png",))]
        )
    assert again[0] == (text_only, False) and again[1][1] is True
    assert store.count_items(fresh_db, dataset_id) == 2 and store.category_counts(fresh_db, dataset_id) == {
        "add_obj": 2
    }


def test_item_rows_keep_every_field_and_count_each_kind_and_category(fresh_db):
    with_fields = pair("1", "swap", ("a.png",), truth={"valid": True}, meta={"note": "x"})
    dataset_id = stored(fresh_db, "set", [with_fields, pair("2", "swap"), pair("3", "add")])
    rows = store.list_items(fresh_db, dataset_id)
    assert [(r["kind"], r["category"], r["source_id"]) for r in rows] == [
        ("pair", "swap", "1"),
        ("pair", "swap", "2"),
        ("pair", "add", "3"),
    ]
    assert (rows[0]["captions"], rows[0]["images"], rows[0]["truth"], rows[0]["meta"]) == (
        ["a cat 1", "a dog 1"],
        ["a.png"],
        {"valid": True},
        {"note": "x"},
    )
    assert (rows[1]["truth"], rows[1]["meta"]) == ({}, {})
    assert fresh_db.execute("SELECT truth, meta FROM items WHERE id = ?", [rows[1]["id"]]).fetchone() == ("{}", "{}")
    assert store.kind_category_counts(fresh_db, dataset_id) == {("pair", "add"): 1, ("pair", "swap"): 2}
    with store.transaction(fresh_db):
        store.upsert_items(fresh_db, dataset_id, [pair("4", "swap")])
    assert store.kind_category_counts(fresh_db, dataset_id) == {("pair", "add"): 1, ("pair", "swap"): 3}


def test_two_datasets_holding_the_same_items_each_get_their_own_rows(fresh_db):
    first = stored(fresh_db, "first", [pair("1"), pair("2")])
    with store.transaction(fresh_db):
        second = store.ensure_dataset(fresh_db, "second", "jsonl")
        written = store.upsert_items(fresh_db, second, [pair("1"), pair("2")])
    assert all(fresh for _, fresh in written)
    assert {i for i, _ in written}.isdisjoint(row["id"] for row in store.list_items(fresh_db, first))
    assert [row["id"] for row in store.list_items(fresh_db, second)] == [i for i, _ in written]


def test_identical_items_of_one_input_are_keyed_by_their_occurrence_from_zero(fresh_db):
    """An import's keys are the item's content and text keys with the occurrence number: the same
    file imported again, by this version or a later one, maps onto the same rows."""
    twin = pair("1", images=("a.png",))
    dataset_id = stored(fresh_db, "set", [twin, pair("2", images=("b.png",)), twin, twin])
    keys = fresh_db.execute("SELECT item_key, text_key FROM items WHERE dataset_id = ? ORDER BY id", [dataset_id])
    content, text = twin.keys()
    other_content, other_text = pair("2", images=("b.png",)).keys()
    assert [tuple(row) for row in keys.fetchall()] == [
        (f"{content}#0", f"{text}#0"),
        (f"{other_content}#0", f"{other_text}#0"),
        (f"{content}#1", f"{text}#1"),
        (f"{content}#2", f"{text}#2"),
    ]


def test_an_empty_chunk_writes_nothing(fresh_db):
    dataset_id = stored(fresh_db, "set", [])
    with store.transaction(fresh_db):
        assert store.ItemWriter(fresh_db, dataset_id).write([]) == []
    assert store.count_items(fresh_db, dataset_id) == 0


def test_copy_rows_inserts_every_row_with_copy_on_postgresql(fresh_db, monkeypatch):
    dataset_id = stored(fresh_db, "set", [])
    rows = [(dataset_id, f"{n}.png", "ok", None, n, None, None) for n in range(3)]
    copied = []
    if dialect.is_postgres(fresh_db):  # one stream, not a statement per row
        copy = fresh_db.conn.copy_rows
        monkeypatch.setattr(fresh_db.conn, "copy_rows", lambda *args: copied.append(args[0]) or copy(*args))
    with store.transaction(fresh_db):
        dataset_rows.copy_rows(
            fresh_db, "images", ("dataset_id", "path", "status", "sha256", "size", "width", "height"), rows
        )
    assert store.found_image_totals(fresh_db, dataset_id) == (3, 3)
    assert copied == (["images"] if dialect.is_postgres(fresh_db) else [])


def test_the_bulk_write_cache_is_given_back_after_the_write(fresh_db):
    if dialect.is_postgres(fresh_db):
        with store.bulk_write_cache(fresh_db):
            assert fresh_db.execute("SELECT 1").fetchone()[0] == 1  # nothing to size: PostgreSQL sizes its own
        return
    (before,) = fresh_db.execute("PRAGMA cache_size").fetchone()
    with store.bulk_write_cache(fresh_db):
        assert fresh_db.execute("PRAGMA cache_size").fetchone()[0] == -dataset_rows.BULK_CACHE_KIB
    assert fresh_db.execute("PRAGMA cache_size").fetchone()[0] == before
    with pytest.raises(RuntimeError), store.bulk_write_cache(fresh_db):
        raise RuntimeError("a failed write")
    assert fresh_db.execute("PRAGMA cache_size").fetchone()[0] == before


def test_items_are_settled_after_a_large_import_on_postgresql_only_outside_a_transaction(fresh_db, monkeypatch):
    sent = []
    execute = fresh_db.execute
    monkeypatch.setattr(fresh_db, "execute", lambda sql, *args: sent.append(sql) or execute(sql, *args))
    store.settle_items(fresh_db, dataset_rows.SETTLED_AFTER - 1)
    assert sent == []
    store.settle_items(fresh_db, dataset_rows.SETTLED_AFTER)
    assert sent == (["VACUUM (ANALYZE) items"] if dialect.is_postgres(fresh_db) else [])
    sent.clear()
    with store.transaction(fresh_db):
        store.ensure_dataset(fresh_db, "set", "jsonl")
        store.settle_items(fresh_db, dataset_rows.SETTLED_AFTER)
    assert "VACUUM (ANALYZE) items" not in sent


# --- readers ----------------------------------------------------------------------------------------


def mixed(db) -> int:
    """A dataset of pairs and triples in two categories, stored interleaved; its id."""
    items = [
        pair("p1", "swap"),
        Item("triple", "add", "t1", ("a", "b", "c")),
        pair("p2", "add"),
        Item("triple", "swap", "t2", ("d", "e", "f")),
        pair("p3", "swap", truth={"hard": True, "valid": False}),
    ]
    stored(db, "noise", [pair("n1", "swap")])
    return stored(db, "mixed", items)


def ids(db, dataset_id: int) -> dict[str, int]:
    return {row["source_id"]: row["id"] for row in store.list_items(db, dataset_id, limit=100)}


def test_ids_by_category_source_and_kind_are_the_datasets_alone(fresh_db):
    dataset_id = mixed(fresh_db)
    by_source = ids(fresh_db, dataset_id)
    assert store.item_ids_by_category(fresh_db, dataset_id, ["swap"]) == {
        by_source["p1"]: "p1",
        by_source["t2"]: "t2",
        by_source["p3"]: "p3",
    }
    assert store.item_ids_by_category(fresh_db, dataset_id, []) == {}  # `IN ()` is PostgreSQL's syntax error
    assert (
        store.item_sources(fresh_db, dataset_id, []) == [] and list(store.item_truths(fresh_db, dataset_id, [])) == []
    )
    assert store.item_sources(fresh_db, dataset_id, ["pair"]) == [
        (by_source["p1"], "p1", "swap"),
        (by_source["p2"], "p2", "add"),
        (by_source["p3"], "p3", "swap"),
    ]
    assert store.item_sources(fresh_db, dataset_id, ["pair", "triple"])[1] == (by_source["t1"], "t1", "add")


def test_the_sampling_frame_orders_categories_by_their_first_item_and_merges_kinds(fresh_db):
    dataset_id = mixed(fresh_db)
    by_source = ids(fresh_db, dataset_id)
    frame = store.item_strata(fresh_db, dataset_id, ["pair", "triple"])
    assert frame == {
        "swap": [by_source["p1"], by_source["t2"], by_source["p3"]],
        "add": [by_source["t1"], by_source["p2"]],
    }
    assert list(frame) == ["swap", "add"]
    assert store.item_strata(fresh_db, dataset_id, ["triple"]) == {"add": [by_source["t1"]], "swap": [by_source["t2"]]}
    assert store.item_strata(fresh_db, dataset_id, ["group"]) == {}


def test_truths_are_every_item_of_the_kinds_read_in_pages_on_postgresql(fresh_db, monkeypatch):
    dataset_id = mixed(fresh_db)
    monkeypatch.setattr(dataset_rows, "TRUTH_PAGE", 2)
    truths = sorted(store.item_truths(fresh_db, dataset_id, ["pair"]), key=lambda pair: (pair[0], sorted(pair[1])))
    assert truths == [("add", {}), ("swap", {}), ("swap", {"hard": True, "valid": False})]
    assert len(list(store.item_truths(fresh_db, dataset_id, ["pair", "triple"]))) == 5
    monkeypatch.setattr(dataset_rows, "TRUTH_PAGE", 3)  # a page exactly full, then an empty one
    assert len(list(store.item_truths(fresh_db, dataset_id, ["pair"]))) == 3
    empty = stored(fresh_db, "empty", [])
    assert list(store.item_truths(fresh_db, empty, ["pair"])) == []


def test_truths_come_a_page_at_a_time_on_postgresql_and_from_one_query_on_sqlite(fresh_db, monkeypatch):
    """PostgreSQL sends a query's whole result at once: a caller that stops at the first truth
    would wait for a million, so there the truths are read a page at a time."""
    dataset_id = mixed(fresh_db)
    monkeypatch.setattr(dataset_rows, "TRUTH_PAGE", 2)
    sent = []
    execute = fresh_db.execute
    monkeypatch.setattr(fresh_db, "execute", lambda sql, *args: sent.append(sql) or execute(sql, *args))
    truths = store.item_truths(fresh_db, dataset_id, ["pair", "triple"])
    next(truths)
    queries_for_the_first = len(sent)
    assert len(list(truths)) == 4
    if dialect.is_postgres(fresh_db):  # where the dataset starts, then pages of 2, 2 and 1
        assert (queries_for_the_first, len(sent)) == (2, 4)
    else:
        assert (queries_for_the_first, len(sent)) == (1, 1)


def test_a_page_of_items_is_fifty_unless_told_and_the_first_by_default(fresh_db):
    dataset_id = stored(fresh_db, "many", [pair(str(n)) for n in range(60)])
    assert [row["source_id"] for row in store.list_items(fresh_db, dataset_id)] == [str(n) for n in range(50)]


def test_a_page_of_items_is_cut_filtered_by_category_and_by_a_truth_flag(fresh_db):
    dataset_id = mixed(fresh_db)
    every = [row["source_id"] for row in store.list_items(fresh_db, dataset_id)]
    assert every == ["p1", "t1", "p2", "t2", "p3"]
    assert [row["source_id"] for row in store.list_items(fresh_db, dataset_id, limit=2, offset=1)] == ["t1", "p2"]
    assert [row["source_id"] for row in store.list_items(fresh_db, dataset_id, category="swap")] == ["p1", "t2", "p3"]
    assert [row["source_id"] for row in store.list_items(fresh_db, dataset_id, truth_flag="hard")] == ["p3"]
    assert store.list_items(fresh_db, dataset_id, truth_flag="valid") == []
    with pytest.raises(store.StoreError) as refused:
        store.list_items(fresh_db, dataset_id, truth_flag="hard'; --")
    assert str(refused.value) == 'truth flag "hard\'; --" is not a plain name'


def test_items_by_id_reads_past_one_chunk_and_keeps_to_the_dataset(fresh_db, monkeypatch):
    many = stored(fresh_db, "many", [pair(str(n)) for n in range(1_001)])
    other = stored(fresh_db, "other", [pair("x")])
    wanted = [row["id"] for row in store.list_items(fresh_db, many, limit=2_000)]
    (foreign,) = (row["id"] for row in store.list_items(fresh_db, other))
    queries = []
    query = fresh_db.query
    monkeypatch.setattr(fresh_db, "query", lambda sql, *args: queries.append(sql) or query(sql, *args))
    found = store.items_by_id(fresh_db, [*reversed(wanted), wanted[0], foreign])
    assert len(queries) == 3  # 1,002 ids, 500 a query
    assert sorted(found) == sorted([*wanted, foreign]) and found[wanted[-1]]["source_id"] == "1000"
    assert (found[foreign]["captions"], found[foreign]["images"]) == (["a cat x", "a dog x"], [])
    assert (found[foreign]["truth"], found[foreign]["meta"]) == ({}, {})
    assert set(store.items_by_id(fresh_db, [wanted[0], foreign], dataset_id=many)) == {wanted[0]}
    assert store.items_by_id(fresh_db, []) == {}


def test_truth_flags_are_those_some_item_sets_whatever_their_value(fresh_db):
    dataset_id = mixed(fresh_db)
    stored(fresh_db, "quoted", [pair("q", truth={"note": '"hard"'})])  # the flag's name as text, not a key
    quoted = store.get_dataset(fresh_db, "quoted")["id"]
    assert store.truth_flags(fresh_db, dataset_id, ["valid", "hard", "absent"]) == ["valid", "hard"]
    assert store.truth_flags(fresh_db, quoted, ["hard", "note"]) == ["note"]
    assert store.truth_flags(fresh_db, dataset_id, []) == []
    condition = store.truth_flag_condition(fresh_db, "hard", "items")
    held = fresh_db.execute(f"SELECT source_id FROM items WHERE {condition}").fetchall()
    assert [row[0] for row in held] == ["p3"]


def test_scorable_items_name_an_image_and_every_image_they_name_is_found(fresh_db):
    group = Item("group", "g", "g", ("a", "b"), ("a.png", "b.png"))
    items = [pair("1", images=("a.png",)), group, pair("2", images=("c.png",)), pair("3")]
    dataset_id = stored(fresh_db, "set", items)
    assert store.scorable_count(fresh_db, dataset_id) == 0  # no image found yet
    images(fresh_db, dataset_id, **{"a.png": "ok", "b.png": "ok", "c.png": "ok"})
    assert store.scorable_count(fresh_db, dataset_id) == 3
    assert store.scorable_count(fresh_db, dataset_id, limit=2) == 2
    images(fresh_db, dataset_id, **{"b.png": "missing"})
    assert store.scorable_count(fresh_db, dataset_id) == 2
    assert store.scorable_count(fresh_db, dataset_id, limit=2) == 1
    images(fresh_db, dataset_id, **{"a.png": "unreadable", "c.png": "missing"})
    assert store.scorable_count(fresh_db, dataset_id) == 0


def test_with_every_image_found_no_items_images_are_looked_up_one_by_one(fresh_db, monkeypatch):
    """The per-image lookup took 30 s at a million items: it runs only where some image is not found."""
    dataset_id = stored(fresh_db, "set", [pair("1", images=("a.png",)), pair("2", images=("b.png",))])
    images(fresh_db, dataset_id, **{"a.png": "ok", "b.png": "ok"})
    sent = []
    execute = fresh_db.execute
    monkeypatch.setattr(fresh_db, "execute", lambda sql, *args: sent.append(sql) or execute(sql, *args))
    assert store.scorable_count(fresh_db, dataset_id) == 2
    assert not any("NOT EXISTS" in sql for sql in sent)
    images(fresh_db, dataset_id, **{"b.png": "missing"})
    assert store.scorable_count(fresh_db, dataset_id) == 1
    assert any("NOT EXISTS" in sql for sql in sent)


def test_items_are_counted_in_all_or_in_one_category(fresh_db):
    dataset_id = mixed(fresh_db)
    assert store.count_items(fresh_db, dataset_id) == 5
    assert store.count_items(fresh_db, dataset_id, "swap") == 3
    assert store.count_items(fresh_db, dataset_id, "none") == 0
    assert store.count_items(fresh_db, stored(fresh_db, "empty", [])) == 0


def test_the_last_import_is_the_latest_of_items_not_of_a_run(fresh_db):
    dataset_id = stored(fresh_db, "set", [])
    assert store.last_import(fresh_db, dataset_id) is None
    with store.transaction(fresh_db):
        for path, run in (("first.jsonl", None), ("second.jsonl", None), ("scores.csv", "run")):
            store.log_import(fresh_db, dataset_id, source_format="jsonl", path=path, n_items=3, n_new_items=1, run=run)
    last = store.last_import(fresh_db, dataset_id)
    assert (last["source_format"], last["path"]) == ("jsonl", "second.jsonl") and last["imported_at"]
    logged = fresh_db.execute("SELECT n_items, n_new_items, run FROM imports ORDER BY id").fetchall()
    assert [tuple(row) for row in logged] == [(3, 1, None), (3, 1, None), (3, 1, "run")]
