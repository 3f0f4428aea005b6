"""`foil migrate-store`: a whole store copied between SQLite and PostgreSQL, checked, and the
PostgreSQL store's errors said in one line."""

from __future__ import annotations

import json
import os
import subprocess

from foil_studio.annotate import batches, simulation
from foil_studio.data import store
from tests.conftest import FOIL_CLI, REPO


def foil(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*FOIL_CLI, *args], capture_output=True, text=True, cwd=REPO, timeout=300, env=env)


def test_a_store_with_labels_goes_to_postgresql_and_back_unchanged(demo_db, postgres, tmp_path):
    created = batches.create_batch(
        demo_db, batches.BatchSpec("demo-sugarcrepe", "validate_negative", ("ada", "ben"), 2, 20, seed=4)
    )
    simulation.simulate(demo_db, created["batch"], accuracies=0.8, seed=4)
    label = store.batch_labels(demo_db, store.get_batch(demo_db, created["batch"])["id"])[0]
    store.revise_label(demo_db, label["id"], {"answer": "unsure"}, by="admin", reason="typo")
    before = store.row_counts(demo_db), store.labels_checksum(demo_db)
    url, back = postgres.create_database(), tmp_path / "back.db"

    there = foil("migrate-store", str(store.location(demo_db)), url, "--json")
    assert there.returncode == 0, there.stderr
    again = foil("migrate-store", url, str(back), "--json")
    assert again.returncode == 0, again.stderr

    copied = json.loads(there.stdout)
    assert (copied["rows"], copied["labels_checksum"]) == before and copied["rows"]["labels"] == 40
    for location in (url, back):
        db = store.open_db(location)
        assert (store.row_counts(db), store.labels_checksum(db)) == before
        assert store.batch_labels(db, store.get_batch(db, created["batch"])["id"]) == store.batch_labels(
            demo_db, store.get_batch(demo_db, created["batch"])["id"]
        )
    # the copy goes on working: new rows take ids after the copied ones
    pg = store.open_db(url)
    assert store.ensure_annotator(pg, "dora")["id"] > max(a["id"] for a in store.list_annotators(demo_db))


def test_a_destination_that_holds_data_is_refused_and_left_as_it_was(demo_db, tmp_path):
    target = tmp_path / "taken.db"
    taken = store.open_db(target)
    store.ensure_annotator(taken, "someone")
    taken.conn.close()
    done = foil("migrate-store", str(store.location(demo_db)), str(target))
    assert (
        done.returncode == 1
        and "not empty (1 annotators, 1 annotator_tokens)" in done.stderr
        and "Nothing was copied" in done.stderr
    )
    assert store.row_counts(store.open_db(target))["datasets"] == 0


def test_an_unreachable_postgresql_store_is_one_line_without_its_password(tmp_path):
    done = foil("datasets", "--db", "postgresql://foil:s3cret-pass@127.0.0.1:1/foil")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "cannot open the PostgreSQL store postgresql://foil:***@127.0.0.1:1/foil" in done.stderr
    assert "s3cret-pass" not in done.stderr


def test_a_postgresql_store_needs_its_files_folder_and_admin_token_from_the_environment(postgres):
    url = postgres.create_database()
    env = {k: v for k, v in os.environ.items() if k not in ("FOIL_FILES", "FOIL_ADMIN_TOKEN")}
    token = foil("admin-token", "--db", url, env=env)
    assert token.returncode == 1 and "takes its admin token from $FOIL_ADMIN_TOKEN" in token.stderr
    demo = foil("demo", "--db", url, env=env)
    assert demo.returncode == 1 and "$FOIL_FILES" in demo.stderr


def test_a_source_that_is_not_a_store_is_refused_and_no_file_is_created(tmp_path, postgres):
    destination = tmp_path / "copy.db"
    absent = foil("migrate-store", str(tmp_path / "nowhere.db"), str(destination))
    assert absent.returncode == 1 and "no store at" in absent.stderr and "no such file" in absent.stderr
    assert not (tmp_path / "nowhere.db").exists() and not destination.exists()
    (tmp_path / "empty.db").write_bytes(b"")
    empty = foil("migrate-store", str(tmp_path / "empty.db"), str(destination))
    assert empty.returncode == 1 and "it is empty" in empty.stderr and not destination.exists()
    assert (tmp_path / "empty.db").stat().st_size == 0
    bare = postgres.create_database()  # a PostgreSQL database that holds no store
    done = foil("migrate-store", bare, str(destination))
    assert done.returncode == 1 and "holds no Foil Studio store" in done.stderr and not destination.exists()
