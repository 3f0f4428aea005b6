"""A JSONL file is imported chunk by chunk (`Format.read_chunks`): memory holds one chunk, and what
is stored, and said, is exactly what the whole file read at once gives."""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import json
import multiprocessing
import os
import pickle
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from foil_studio.data import loading, reading, store
from foil_studio.data.formats import BadInputError, Parsed, jsonl
from foil_studio.data.items import _digest, normalize_caption, texts_json
from foil_studio.data.loading import import_path, read_ahead
from foil_studio.data.reading import parse_json


def _records() -> list[dict]:
    """Eleven items with what spans chunks: twins, shared images, a text-only item, a run's scores."""
    records = [
        {
            "kind": "pair",
            "category": "swap_att" if i % 2 else "add_obj",
            "id": str(i),
            "captions": [f"a cat number {i}", f"a dog number {i}"],
            "images": [f"{i % 3}.jpg"],
            "results": {"clip": {"correct": True, "scores": [0.3 + i / 100, 0.2]}} if i % 4 else {},
        }
        for i in range(8)
    ]
    twin = {"kind": "pair", "category": "add_obj", "id": "t", "captions": ["a red cube", "a blue cube"], "images": []}
    return [*records[:2], twin, *records[2:6], twin, *records[6:], {**twin, "id": "u", "images": ["missing.jpg"]}]


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def _images(folder: Path) -> Path:
    folder.mkdir()
    for i in range(3):
        Image.new("RGB", (8, 8), (i * 60, 0, 0)).save(folder / f"{i}.jpg")
    return folder


def _stored(db) -> tuple[list, dict]:
    """The dataset's items in import order with their ids, and run clip's scores by item id."""
    dataset_id = store.get_dataset(db, "mine")["id"]
    items = [dict(row) for row in store.list_items(db, dataset_id, limit=1000)]
    columns = store.run_columns(db, int(store.get_run(db, "mine", "clip")["id"]))
    return items, dict(zip(columns.item_ids.tolist(), [list(scores) for scores in columns.scores]))


@pytest.mark.both_engines
def test_a_file_read_in_chunks_stores_and_reports_what_the_whole_file_does(fresh_db, engine, tmp_path, monkeypatch):
    """Chunks of 3 items against one chunk: the same rows, ids, scores, image statuses and report,
    the first time and when the file comes again with an item more and one fewer."""
    images = _images(tmp_path / "imgs")
    first = _write(tmp_path / "mine.jsonl", _records())
    another = {**_records()[1], "id": "new", "captions": ["x", "y"]}
    changed = _write(tmp_path / "mine2.jsonl", [*_records()[1:], another])
    whole = store.open_db(None) if engine == "sqlite" else None
    outcomes = []
    for chunk_items, db in ((3, fresh_db), (None, whole)):
        if db is None:  # PostgreSQL: the chunked import ran first, the whole file goes to a second dataset's store
            continue
        monkeypatch.setattr(jsonl, "CHUNK_ITEMS", chunk_items)
        reports = [import_path(db, "jsonl", path, images=images, name="mine").to_dict() for path in (first, changed)]
        outcomes.append((reports, _stored(db)))
    reports, (items, scores) = outcomes[0]
    assert len(items) == 12 and [row["source_id"] for row in items].count("t") == 2  # the twins kept apart
    assert reports[0]["n_items"] == 11 and reports[0]["n_new_items"] == 11 and reports[0]["missing_images"] == 1
    assert reports[0]["runs"] == {"clip": 6} and len(scores) == 6
    assert reports[1]["n_new_items"] == 1
    said = [warning["message"] for warning in reports[1]["warnings"]]
    assert any("added: swap_att ['x', 'y']" in line for line in said)
    assert any(line.startswith("dataset item 0 (id") and "is not in this file" in line for line in said)
    if len(outcomes) == 2:
        assert outcomes[0] == outcomes[1]


def test_reading_in_chunks_is_lazy_and_gives_whole_files_chunks_in_order(tmp_path):
    """Each chunk is read when asked for: a broken line past the first chunk is not reached by it."""
    records = _records()
    path = tmp_path / "broken.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + "{not json\n")
    chunks = jsonl.jsonl_chunks(path, 4)
    assert [item.source_id for item in next(chunks).items] == ["0", "1", "t", "2"]
    assert [item.source_id for item in next(chunks).items] == ["3", "4", "5", "t"]
    with pytest.raises(BadInputError, match=r"broken\.jsonl, row 12"):
        next(chunks)
    good = _write(tmp_path / "good.jsonl", records)
    streamed = list(jsonl.jsonl_chunks(good, 4))
    assert [len(chunk.items) for chunk in streamed] == [4, 4, 3]
    whole = jsonl.parse_jsonl(good)
    assert [i for chunk in streamed for i in chunk.items] == whole.items
    assert [o for chunk in streamed for o in chunk.origins] == whole.origins
    assert [set(chunk.scored_runs["clip"]) for chunk in streamed] == [{1, 3}, {0, 2}, {0, 1}]


@pytest.mark.both_engines
def test_a_bad_line_in_a_late_chunk_stores_nothing_of_the_file(fresh_db, tmp_path, monkeypatch):
    monkeypatch.setattr(jsonl, "CHUNK_ITEMS", 2)
    path = tmp_path / "late.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _records()) + '{"kind": "pair"}\n')
    with pytest.raises(BadInputError, match=r"late\.jsonl, row 12.*category"):
        import_path(fresh_db, "jsonl", path)
    assert store.dataset_names(fresh_db) == []


def test_a_file_with_a_byte_that_is_not_utf8_names_its_line_and_byte(tmp_path):
    path = tmp_path / "latin.jsonl"
    line = json.dumps(_records()[0]).encode()
    path.write_bytes(line + b"\n" + line.replace(b"cat", b"caf\xe9") + b"\n")
    with pytest.raises(BadInputError, match=rf"latin\.jsonl.*2.*byte {len(line) + 1 + line.index(b'cat') + 3}"):
        list(jsonl.jsonl_chunks(path, 1))


@given(st.lists(st.text(), max_size=4))
def test_the_keys_text_is_json_dumps_exact_text(texts):
    """Item keys and stored lists are built from the C string encoder: the same text as json.dumps."""
    assert texts_json(tuple(texts)) == json.dumps(texts)
    assert _digest(texts) == hashlib.sha1(json.dumps(texts).encode()).hexdigest()[:20]


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1, "a": 2}',
        '{"a" : 1, "b": {"a": 1, "a\\": 2": 3, "a": 4}}',  # a key twice beside a string holding a key's end
        '{"a"\n : 1, "a": 2}',  # space before the colon: counting '":' alone would see one key, as read
        '[{"x": 1}, {"y": 2, "y": 3}]',
    ],
)
def test_a_key_twice_is_refused_however_the_text_hides_it(text):
    with pytest.raises(BadInputError, match="appears twice"):
        parse_json(text, "f.jsonl", 3)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"a": "b\\": c", "d": [1, {"e": "f"}]}', {"a": 'b": c', "d": [1, {"e": "f"}]}),
        ('{"a" :1}', {"a": 1}),
        ("[]", []),
        ('"x"', "x"),
    ],
)
def test_json_without_a_key_twice_reads_as_it_is(text, value):
    assert parse_json(text, "f.jsonl", 3) == value


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=3),
    max_leaves=12,
)


@given(JSON)
def test_the_keys_of_a_scored_line_are_counted_as_the_walk_counts_them(value):
    """A line within the depth limit has its keys counted recursively (a scored export's lines); the
    walk that also measures the depth counts the same keys, and a key twice is refused either way."""
    assert reading._key_count(value) == reading._shape(value)[0]
    assert parse_json(json.dumps(value), "f.jsonl", 1) == value


def test_nesting_past_the_limit_is_refused_and_at_it_read(monkeypatch):
    monkeypatch.setenv("FOIL_MAX_JSON_DEPTH", "3")
    assert parse_json('{"a": [{"b": 1}]}', "f.jsonl", 1) == {"a": [{"b": 1}]}
    with pytest.raises(BadInputError, match="JSON nesting depth is 4, over the limit of 3"):
        parse_json('{"a": [{"b": [1]}]}', "f.jsonl", 1)


def _readers() -> list[str]:
    return [thread.name for thread in threading.enumerate() if thread.name == "foil-import-reader"]


@pytest.mark.parametrize(
    ("lines", "refused"),
    [
        ([], "holds no items"),  # refused on the first chunk
        ([*_records(), {**_records()[0], "id": "far", "images": ["../outside.jpg"]}], "leaves the image root"),
    ],
)
def test_a_refused_import_stops_its_reading_thread(fresh_db, tmp_path, monkeypatch, lines, refused):
    """The next chunk is read in a thread while one is stored (`loading.read_ahead`); however the
    import ends, the thread ends with it, and nothing is stored."""
    monkeypatch.setattr(jsonl, "CHUNK_ITEMS", 2)
    with pytest.raises(BadInputError, match=refused):
        import_path(fresh_db, "jsonl", _write(tmp_path / "mine.jsonl", lines))
    assert _readers() == [] and store.dataset_names(fresh_db) == []


def test_reading_ahead_hands_on_every_chunk_in_order_then_a_readers_error():
    def chunks():
        yield from (Parsed("jsonl", str(number)) for number in range(5))
        raise BadInputError("f.jsonl", 9, "broken")

    read = read_ahead(chunks())
    assert [next(read).default_name for _ in range(5)] == ["0", "1", "2", "3", "4"]
    with pytest.raises(BadInputError, match="f.jsonl, row 9: broken"):
        next(read)
    assert _readers() == []


@given(st.text(alphabet=" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u2000\u3000ab."))
def test_a_captions_whitespace_collapses_as_the_regular_expression_collapses_it(caption):
    """Item keys depend on it: `str.split` must find the whitespace `\\s+` finds, or a file imported
    again would not find its own items."""
    assert normalize_caption(caption) == re.sub(r"\s+", " ", caption).strip()


@pytest.mark.both_engines
def test_the_sampling_frame_is_read_off_the_index_after_a_large_import(fresh_db, engine, tmp_path, monkeypatch):
    """PostgreSQL: `items_by_kind` carries the ids (migration 0020) and an import that wrote
    `SETTLED_AFTER` items vacuums them (which marks their pages visible where commits are durable), so
    the frame's query is an index-only scan; a smaller import leaves it to autovacuum. SQLite's index
    holds the rowid already, and its plan says it covers the query."""
    from foil_studio.data.store import datasets

    def vacuumed() -> bool:
        sql = "SELECT last_vacuum IS NOT NULL FROM pg_stat_user_tables WHERE relname = 'items'"
        return bool(fresh_db.execute(sql).fetchone()[0])

    import_path(fresh_db, "jsonl", _write(tmp_path / "few.jsonl", _records()), name="few")
    assert engine == "sqlite" or not vacuumed()  # 11 items: under the default threshold
    monkeypatch.setattr(datasets, "SETTLED_AFTER", 11)
    import_path(fresh_db, "jsonl", _write(tmp_path / "mine.jsonl", _records()), name="mine")
    dataset_id = store.get_dataset(fresh_db, "mine")["id"]
    where = f"dataset_id = {dataset_id} AND kind = 'pair' AND category = 'add_obj'"
    query = f"SELECT id FROM items WHERE {where}"
    frame = store.item_strata(fresh_db, dataset_id, ["pair"])
    assert sorted(frame) == ["add_obj", "swap_att"]
    assert (
        frame["add_obj"] == [i for (i,) in fresh_db.execute(query + " ORDER BY id").fetchall()]
        and len(frame["add_obj"]) == 7
    )
    if engine == "postgresql":
        query = f"SELECT array_agg(id ORDER BY id) FROM items WHERE {where}"  # the frame's ids in one array
        assert vacuumed()
        fresh_db.execute("SET enable_seqscan = off")  # 22 rows: the planner would rather read the table
        fresh_db.execute("SET enable_bitmapscan = off")
        plan = "\n".join(row[0] for row in fresh_db.execute("EXPLAIN " + query).fetchall())
        assert "Index Only Scan using items_by_kind" in plan, plan
    else:
        plan = " ".join(str(row[-1]) for row in fresh_db.execute("EXPLAIN QUERY PLAN " + query).fetchall())
        assert "COVERING INDEX items_by_kind" in plan, plan


@pytest.mark.both_engines
def test_item_truths_reads_every_item_of_its_dataset_a_page_at_a_time(fresh_db, engine, tmp_path, monkeypatch):
    """PostgreSQL reads the truths a page at a time by id (SQLite steps its cursor): with pages of
    two, a dataset whose ids interleave with another's gives each of its items once, and no other's."""
    from foil_studio.data.store import datasets

    monkeypatch.setattr(datasets, "TRUTH_PAGE", 2)

    def records(tag: str, n: int) -> list[dict]:
        return [
            {"kind": "pair", "category": f"c{i % 2}", "id": f"{tag}{i}", "captions": [f"{tag} {i}", f"not {tag} {i}"],
             "truth": {"mark": f"{tag}{i}"}}
            for i in range(n)
        ]  # fmt: skip

    import_path(fresh_db, "jsonl", _write(tmp_path / "a.jsonl", records("a", 5)), name="a")
    import_path(fresh_db, "jsonl", _write(tmp_path / "b.jsonl", records("b", 3)), name="b")
    import_path(fresh_db, "jsonl", _write(tmp_path / "a2.jsonl", records("a", 8)), name="a")  # ids after b's
    for name, n in (("a", 8), ("b", 3)):
        dataset_id = store.get_dataset(fresh_db, name)["id"]
        read = sorted(
            (truth["mark"], category) for category, truth in store.item_truths(fresh_db, dataset_id, ["pair"])
        )
        assert read == sorted((f"{name}{i}", f"c{i % 2}") for i in range(n))
        assert list(store.item_truths(fresh_db, dataset_id, ["triple"])) == []
        first = next(store.item_truths(fresh_db, dataset_id, ["pair"]))  # a caller may stop at the first
        assert first[1]["mark"].startswith(name)


@pytest.mark.both_engines
def test_truth_flags_finds_each_flag_some_item_holds_as_a_key_in_one_pass(fresh_db, tmp_path):
    """`store.truth_flags` reads every flag in one query: a flag held as a key (whatever its value)
    by any item is found, one only named inside a value is not, and another dataset's flags are not."""

    def item(i: int, truth: dict) -> dict:
        return {"kind": "pair", "category": "c", "id": str(i), "captions": [f"x {i}", f"y {i}"], "truth": truth}

    mine = [item(0, {}), item(1, {"valid": False}), item(2, {"note": '"hard" in words'}), item(3, {"gold": None})]
    import_path(fresh_db, "jsonl", _write(tmp_path / "mine.jsonl", mine), name="mine")
    import_path(fresh_db, "jsonl", _write(tmp_path / "other.jsonl", [item(0, {"hard": True})]), name="other")
    mine_id, other_id = (store.get_dataset(fresh_db, name)["id"] for name in ("mine", "other"))
    assert store.truth_flags(fresh_db, mine_id, ["valid", "hard", "gold", "absent"]) == ["valid", "gold"]
    assert store.truth_flags(fresh_db, other_id, ["valid", "hard"]) == ["hard"]
    assert store.truth_flags(fresh_db, mine_id, []) == []


def _reading_processes() -> list[str]:
    return [child.name for child in multiprocessing.active_children() if child.name == "foil-import-reader"]


@pytest.fixture
def read_in_process(monkeypatch) -> list[Path]:
    """Every streamed file read in a process of its own (`loading.read_in_process`), whatever its
    size; the list names each file so read."""
    read: list[Path] = []

    def counted(fmt, path, images):
        read.append(path)
        return original(fmt, path, images)

    original = loading.read_in_process
    monkeypatch.setattr(loading, "PROCESS_READ_BYTES", 0)
    monkeypatch.setattr(loading, "_forkable", lambda: True)  # whatever threads other tests left running
    monkeypatch.setattr(loading, "read_in_process", counted)
    return read


@pytest.mark.both_engines
def test_a_file_read_in_a_process_stores_and_reports_what_a_reading_thread_gives(
    fresh_db, engine, tmp_path, monkeypatch, read_in_process
):
    """Chunks of 3 read in a process (each with its items' keys worked out there) against the
    reading thread: the same rows, scores and reports (the item ids aside: the store is emptied
    between), the first time and with the file again changed; the process has ended after each import."""
    monkeypatch.setattr(jsonl, "CHUNK_ITEMS", 3)  # a forked reader reads this module's value
    given_keys = []  # per chunk stored: whether it came with its items' keys, and whether they are theirs
    write = store.ItemWriter.write

    def noted(self, items, keys=None):
        given_keys.append(keys is not None and keys == [item.keys() for item in items])
        return write(self, items, keys)

    monkeypatch.setattr(store.ItemWriter, "write", noted)
    images = _images(tmp_path / "imgs")
    first = _write(tmp_path / "mine.jsonl", _records())
    changed = _write(tmp_path / "mine2.jsonl", [*_records()[1:], {**_records()[1], "id": "n", "captions": ["x", "y"]}])
    in_process = [
        import_path(fresh_db, "jsonl", path, images=images, name="mine").to_dict() for path in (first, changed)
    ]
    assert read_in_process == [first, changed] and _reading_processes() == []
    assert given_keys == [True] * 8  # 11 and 11 items in chunks of 3
    stored = _stored(fresh_db)
    monkeypatch.setattr(loading, "PROCESS_READ_BYTES", 10**12)
    fresh_db.execute("DELETE FROM datasets")  # the same store again, read by the thread this time
    by_thread = [
        import_path(fresh_db, "jsonl", path, images=images, name="mine").to_dict() for path in (first, changed)
    ]
    assert read_in_process == [first, changed]  # the thread read these
    assert _without_ids(in_process) == _without_ids(by_thread) and len(stored[0]) == 12
    assert _without_ids(_stored(fresh_db)) == _without_ids(stored)


def _without_ids(value):
    """`value` with the store's item ids left out (a store emptied and filled again numbers anew)."""
    if isinstance(value, dict):
        return (
            sorted((key, _without_ids(v)) for key, v in value.items() if key != "id")
            if all(isinstance(key, str) for key in value)
            else sorted(_without_ids(v) for v in value.values())
        )
    if isinstance(value, (list, tuple)):
        return [_without_ids(v) for v in value]
    return re.sub(r"\(id \d+\)", "(id N)", value) if isinstance(value, str) else value


@pytest.mark.both_engines
def test_a_bad_line_read_in_a_process_is_refused_as_the_thread_refuses_it(
    fresh_db, tmp_path, monkeypatch, read_in_process
):
    """The reading process's error comes out whole (file, row, message) where its chunk would have;
    nothing of the file is stored and the process is gone."""
    monkeypatch.setattr(jsonl, "CHUNK_ITEMS", 2)
    path = tmp_path / "late.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _records()) + '{"kind": "pair"}\n')
    with pytest.raises(BadInputError) as refused:
        import_path(fresh_db, "jsonl", path)
    assert read_in_process == [path] and _reading_processes() == []
    assert (refused.value.file, refused.value.row) == (str(path), 12)
    assert (
        str(refused.value) == f"{path}, row 12: missing or empty field(s) ['category']; expected ['kind', 'category']"
    )
    assert store.dataset_names(fresh_db) == []


def test_an_import_refused_while_its_process_reads_on_ends_the_process(
    fresh_db, tmp_path, monkeypatch, read_in_process
):
    """The importer refuses an image path of the first chunk while the reader is still at work on the
    file's later chunks: the process is ended with the import, and nothing is stored."""
    monkeypatch.setattr(jsonl, "CHUNK_ITEMS", 2)
    lines = [{**_records()[0], "id": "far", "images": ["../outside.jpg"]}, *(_records() * 300)]
    lines = [{**line, "id": f"{n}"} for n, line in enumerate(lines)]
    with pytest.raises(
        BadInputError, match=r"mine\.jsonl, row 1: image path '\.\./outside\.jpg' leaves the image root"
    ):
        import_path(fresh_db, "jsonl", _write(tmp_path / "mine.jsonl", lines))
    assert _reading_processes() == [] and store.dataset_names(fresh_db) == []


def test_a_reading_process_that_dies_is_said_and_nothing_is_stored(fresh_db, tmp_path, monkeypatch, read_in_process):
    monkeypatch.setattr(loading, "_send_chunks", lambda *_: os._exit(3))  # the forked reader runs this
    path = _write(tmp_path / "mine.jsonl", _records())
    with pytest.raises(
        RuntimeError,
        match=rf"^the process reading {re.escape(str(path))} ended without a word \(exit code 3\); nothing was stored$",
    ):
        import_path(fresh_db, "jsonl", path)
    assert store.dataset_names(fresh_db) == []


def test_where_another_thread_runs_a_thread_reads(fresh_db, tmp_path, monkeypatch):
    """A fork would copy a lock another thread (the app's server) may hold, and a process started
    afresh would run the program's main script again (the app's page): with another thread running,
    the file is read by a thread, and stored the same."""
    monkeypatch.setattr(loading, "PROCESS_READ_BYTES", 0)
    release = threading.Event()
    other = threading.Thread(target=release.wait, name="a server's thread")
    other.start()
    try:
        assert not loading._forkable()
        report = import_path(fresh_db, "jsonl", _write(tmp_path / "mine.jsonl", _records()), name="mine")
    finally:
        release.set()
        other.join()
    assert report.n_items == 11 and report.runs == {"clip": 6} and _reading_processes() == []
    assert len(_stored(fresh_db)[0]) == 11


def test_a_reading_process_that_cannot_start_leaves_the_reading_to_a_thread(
    fresh_db, tmp_path, monkeypatch, read_in_process, caplog
):
    def refused(self):
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr(multiprocessing.context.ForkProcess, "start", refused)
    path = _write(tmp_path / "mine.jsonl", _records())
    report = import_path(fresh_db, "jsonl", path, name="mine")
    assert report.n_items == 11 and report.runs == {"clip": 6} and read_in_process == [path]
    assert caplog.messages == [
        f"reading {path} in this process: no reading process ([Errno 12] Cannot allocate memory)"
    ]


def test_which_reader_reads_a_file(tmp_path, monkeypatch):
    """A process for a streamed file from `PROCESS_READ_BYTES`, a thread for a smaller one, for a
    file read whole (a category given), for a format that does not stream, for a folder and where
    this process cannot fork."""
    path = _write(tmp_path / "mine.jsonl", _records())
    monkeypatch.setattr(loading, "_forkable", lambda: True)
    monkeypatch.setattr(loading, "read_in_process", lambda fmt, path, images: "a process")
    monkeypatch.setattr(loading, "read_ahead", lambda chunks: "a thread")
    monkeypatch.setattr(loading, "PROCESS_READ_BYTES", path.stat().st_size)
    readers = [loading._reading(jsonl.JSONL, path, category, None) for category in (None, "a category")]
    monkeypatch.setattr(loading, "PROCESS_READ_BYTES", path.stat().st_size + 1)
    readers.append(loading._reading(jsonl.JSONL, path, None, None))
    monkeypatch.setattr(loading, "PROCESS_READ_BYTES", 0)
    readers.append(loading._reading(dataclasses.replace(jsonl.JSONL, read_chunks=None), path, None, None))
    readers.append(loading._reading(jsonl.JSONL, tmp_path, None, None))  # a folder: the format's reader says so
    monkeypatch.setattr(loading, "_forkable", lambda: False)
    readers.append(loading._reading(jsonl.JSONL, path, None, None))
    assert readers == ["a process", "a thread", "a thread", "a thread", "a thread", "a thread"]


class _NeedsTwo(Exception):
    def __init__(self, first: str, second: str) -> None:
        super().__init__(f"{first} and {second}")


def test_a_readers_error_that_cannot_come_back_whole_comes_as_its_text(tmp_path):
    """An error whose class needs other arguments pickles but cannot be read back: its text goes."""
    path = tmp_path / "mine.jsonl"
    sent = pickle.loads(loading._as_sent(("error", _NeedsTwo("a", "b")), path))
    assert sent[0] == "error" and type(sent[1]) is RuntimeError
    assert str(sent[1]) == f"reading {path} failed: _NeedsTwo('a and b')"
    refusal = BadInputError(path, 3, "expected text")
    assert pickle.loads(loading._as_sent(("error", refusal), path))[1].row == 3


def test_a_readers_error_that_cannot_come_back_whole_is_raised_as_its_text(
    fresh_db, tmp_path, monkeypatch, read_in_process
):
    def broken(*_):
        raise _NeedsTwo("a", "b")
        yield

    monkeypatch.setattr(loading, "_read", broken)  # the forked reader runs this
    path = _write(tmp_path / "mine.jsonl", _records())
    with pytest.raises(RuntimeError) as refused:
        import_path(fresh_db, "jsonl", path)
    assert str(refused.value) == f"reading {path} failed: _NeedsTwo('a and b')" and read_in_process == [path]
    assert store.dataset_names(fresh_db) == []


def test_a_refusal_crosses_a_process_whole():
    error = BadInputError("f.jsonl", 7, "expected text")
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is BadInputError and (copy.file, copy.row, copy.message, str(copy)) == (
        "f.jsonl",
        7,
        "expected text",
        "f.jsonl, row 7: expected text",
    )


@pytest.mark.parametrize("before", [(700, 11, 12), (200_000, 11, 12)])
def test_imports_at_once_share_one_pause_of_the_collector(before):
    """The collector runs less often from the first import in (never more often than the program
    had it) to the last out, and as before after; a program that turned collecting off keeps it off."""
    pause, kept = loading._CollectionPause(), gc.get_threshold()
    raised = (max(loading.YOUNG_COLLECTION_AFTER, before[0]), *before[1:])
    try:
        gc.set_threshold(*before)
        with pause:
            assert gc.get_threshold() == raised
            with pause:
                assert gc.get_threshold() == raised
            assert gc.get_threshold() == raised
        assert gc.get_threshold() == before
        gc.set_threshold(0)
        with pause:
            assert gc.get_threshold()[0] == 0
    finally:
        gc.set_threshold(*kept)


def test_a_process_may_fork_a_reader_only_while_it_runs_no_other_thread(monkeypatch):
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    assert loading._forkable() is ("fork" in multiprocessing.get_all_start_methods()) is True  # Linux
    monkeypatch.setattr(threading, "active_count", lambda: 2)
    assert loading._forkable() is False


@pytest.mark.parametrize("reader", ["a process", "a thread", "no process"])
def test_each_reader_places_the_images_of_a_format_that_places_them(fresh_db, tmp_path, monkeypatch, reader):
    """The image root reaches the format's `place_images` however the file is read."""
    monkeypatch.setattr(loading, "_forkable", lambda: reader != "a thread")
    monkeypatch.setattr(loading, "PROCESS_READ_BYTES", 0)
    if reader == "no process":
        monkeypatch.setattr(multiprocessing.context.ForkProcess, "start", lambda self: (_ for _ in ()).throw(OSError()))

    def placed(chunk, images):
        chunk.items = [dataclasses.replace(item, meta={"placed": str(images)}) for item in chunk.items]
        return chunk

    records = loading.formats.REGISTRY.records
    monkeypatch.setitem(records, "jsonl", dataclasses.replace(jsonl.JSONL, place_images=placed))
    import_path(fresh_db, "jsonl", _write(tmp_path / "mine.jsonl", _records()), images=tmp_path, name="mine")
    metas = {json.dumps(row["meta"]) for row in _stored(fresh_db)[0]}
    assert metas == {json.dumps({"placed": str(tmp_path)})}


IMPORTER = """
import multiprocessing, os, sys, time
from pathlib import Path
from foil_studio.data import loading, store
from foil_studio.data.formats import jsonl

loading.PROCESS_READ_BYTES, jsonl.CHUNK_ITEMS = 0, 2


def stuck(self, items, keys=None):  # the importer holds its first chunk: killed here
    (reader,) = multiprocessing.active_children()
    print(os.getpid(), reader.pid, reader.name, flush=True)
    time.sleep(120)


store.ItemWriter.write = stuck
loading.import_path(store.open_db(sys.argv[2]), "jsonl", Path(sys.argv[1]))
"""


def _running(pid: int) -> bool:
    """Whether a process runs (a zombie left unreaped has ended)."""
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in state


def test_a_reading_process_ends_when_its_importer_is_killed(tmp_path):
    """The reader holds no end of the importer's pipe: the importer killed mid-import (its
    transaction open), the reader's next write fails and it ends, rather than wait for ever holding
    the store's connection it was forked with."""
    path = _write(tmp_path / "mine.jsonl", [{**_records()[0], "id": str(n)} for n in range(3000)])
    importer = subprocess.Popen(
        [sys.executable, "-c", IMPORTER, str(path), str(tmp_path / "mine.db")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,  # the reader's too: it writes there until it ends
        text=True,
    )
    try:
        *pids, name = importer.stdout.readline().split()
        pids = [int(pid) for pid in pids]
        assert name == "foil-import-reader" and _running(pids[1])
    finally:
        importer.kill()
        importer.wait()
    deadline = time.monotonic() + 20
    while _running(pids[1]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _running(pids[1])
    assert importer.stderr.read() == ""  # it ended quietly: nothing left to say, and no one to say it to
