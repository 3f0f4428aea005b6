"""Images decoded and preprocessed on a loader thread while the previous batch encodes (issue 44's
speed part): the same embeddings and scores, bit for bit, as decoding in turn, in the same order,
and an unreadable image file still stops the run with the error that names it."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import sqlite_utils
from PIL import UnidentifiedImageError

from foil_studio.analysis import models, scoring
from foil_studio.analysis.models import ModelSpec, load_model
from foil_studio.analysis.scoring import prepared_ahead, score_dataset
from foil_studio.data import store
from foil_studio.data.demo_photos import photo_dataset

N_PHOTOS = 7  # with batches of 3: two full batches and a short one, so two are decoded ahead


@pytest.fixture(scope="module")
def random_demo_model():
    return load_model(ModelSpec(models.DEMO_ARCH, "none"), device="cpu")


@pytest.fixture
def photos(tmp_path) -> tuple[sqlite_utils.Database, Path]:
    """A store holding `photos`: COCO-sized 640x480 JPEGs, one caption pair each."""
    db = store.open_db(tmp_path / "photos.db")
    photo_dataset(db, tmp_path / "files", N_PHOTOS)
    return db, tmp_path / "files" / "images"


def _in_turn(chunks, prepare):
    """What scoring did before the loader thread: each batch prepared when it is reached."""
    for chunk in chunks:
        yield prepare(chunk)


def _stored(db, loaded) -> tuple[dict[str, bytes], dict[int, list[float]]]:
    """The run's cached image embeddings (as stored bytes) and its scores per item."""
    dataset = store.get_dataset(db, "photos")
    hashes = store.image_hashes(db, dataset["id"])
    vectors = store.get_embeddings(db, loaded.identity, "image", sorted(set(hashes.values())))
    columns = store.run_columns(db, store.get_run(db, "photos", "run")["id"])
    assert columns.scores is not None
    return vectors, dict(zip(columns.item_ids, columns.scores.tolist()))


def test_decoding_ahead_gives_the_embeddings_and_scores_of_decoding_in_turn_bit_for_bit(
    photos, tmp_path, random_demo_model, monkeypatch
):
    db, _ = photos
    copy = tmp_path / "in-turn.db"
    db.conn.execute("VACUUM INTO ?", [str(copy)])
    threads: set[str] = set()
    preprocess = models.preprocess_images

    def watched(loaded, images):
        threads.add(threading.current_thread().name)
        return preprocess(loaded, images)

    monkeypatch.setattr(scoring, "preprocess_images", watched)
    ahead = score_dataset(db, "photos", random_demo_model, run="run", batch_size=3)
    assert threads and all(name.startswith("foil-decode") for name in threads)  # decoded on the loader thread

    threads.clear()
    monkeypatch.setattr(scoring, "prepared_ahead", _in_turn)
    in_turn_db = store.open_db(copy)
    in_turn = score_dataset(in_turn_db, "photos", random_demo_model, run="run", batch_size=3)
    assert threads == {threading.main_thread().name}

    assert ahead.n_images_encoded == in_turn.n_images_encoded == N_PHOTOS
    (vectors_a, scores_a), (vectors_b, scores_b) = (
        _stored(db, random_demo_model),
        _stored(in_turn_db, random_demo_model),
    )
    assert len(vectors_a) == N_PHOTOS and vectors_a == vectors_b  # the float32 bytes themselves
    assert scores_a == scores_b
    assert len({tuple(s) for s in scores_a.values()}) == N_PHOTOS  # different images, different scores


def test_the_loader_thread_keeps_the_order_of_the_batches_however_long_each_takes():
    def slow_for_even(chunk: list[int]) -> list[int]:
        time.sleep(0.02 if chunk[0] % 2 == 0 else 0)
        return [value * 10 for value in chunk]

    chunks = [[n] for n in range(8)]
    assert list(prepared_ahead(chunks, slow_for_even)) == [[n * 10] for n in range(8)]
    assert list(prepared_ahead([], slow_for_even)) == []


def test_the_next_batch_is_prepared_while_the_caller_works_on_this_one():
    began = {chunk: threading.Event() for chunk in range(3)}

    def prepare(chunk: int) -> int:
        began[chunk].set()
        return chunk

    ready = prepared_ahead([0, 1, 2], prepare)
    assert next(ready) == 0
    # the caller still "encodes" batch 0 and has not asked for batch 1: it is being prepared already
    assert began[1].wait(timeout=60)
    assert next(ready) == 1
    ready.close()


def test_an_unreadable_image_stops_the_run_naming_the_file_and_keeps_what_was_encoded(photos, random_demo_model):
    db, images = photos
    broken = images / "00004.jpg"  # in the second batch of three, decoded while the first encodes
    broken.write_bytes(b"not a JPEG at all")
    with pytest.raises(UnidentifiedImageError) as raised:
        score_dataset(db, "photos", random_demo_model, run="run", batch_size=3)
    assert str(broken) in str(raised.value)
    assert not any(t.name.startswith("foil-decode") for t in threading.enumerate())  # the loader thread ended
    dataset = store.get_dataset(db, "photos")
    hashes = store.image_hashes(db, dataset["id"])
    cached = store.get_embeddings(db, random_demo_model.identity, "image", sorted(set(hashes.values())))
    assert len(cached) == 3  # the first batch, encoded before the error, is kept: a re-run resumes there
    with pytest.raises(store.NotFoundError):
        store.get_run(db, "photos", "run")  # no run is stored of a half-scored dataset


def test_a_family_run_still_names_an_unreadable_image(tmp_path):
    """The cross-encoder path decodes ahead on the same loader thread (`prepared_ahead`)."""
    from foil_studio.analysis.scorers import blip_itm, scorer_family
    from foil_studio.analysis.scorers.pairwise import load_family, score_dataset_pairs

    db = store.open_db(tmp_path / "photos.db")
    photo_dataset(db, tmp_path / "files", 4)
    broken = tmp_path / "files" / "images" / "00003.jpg"
    broken.write_bytes(b"\xff\xd8 truncated")
    loaded = load_family(scorer_family("blip-itm"), str(blip_itm.tiny_model(tmp_path)), "fp32", "cpu")
    with pytest.raises(UnidentifiedImageError) as raised:
        score_dataset_pairs(db, "photos", loaded, batch_size=2)
    assert str(broken) in str(raised.value)
    assert len(store.get_embeddings(db, loaded.identity, "pair", _pair_keys(db))) == 4  # first chunk's pairs


def _pair_keys(db) -> list[str]:
    from foil_studio.analysis.scorers.pairwise import pair_key
    from foil_studio.analysis.scoring import image_key, text_key

    dataset = store.get_dataset(db, "photos")
    hashes = store.image_hashes(db, dataset["id"])
    items = store.list_items(db, dataset["id"], limit=100)
    return [
        pair_key(image_key(hashes[item["images"][0]], None), text_key(c)) for item in items for c in item["captions"]
    ]
