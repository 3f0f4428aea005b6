"""Tokens and whole-store copies, where a plausible slip would pass the older tests: placeholder
values kept in `annotators.token` never open a queue, an admin token is measured after trimming,
Fleiss from vote counts refuses unequal totals, and migrate-store keeps every row's id even when
the ids have gaps (rows deleted), compared row by row by primary key on both engines."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from foil_studio.annotate import agreement, batches, roles, simulation
from foil_studio.data import store

ADMIN = "an-admin-token-of-enough-length"


@pytest.mark.both_engines
def test_placeholder_token_values_open_no_queue(demo_db):
    created = store.ensure_annotator(demo_db, "zia")
    placeholders = [
        row[0] for row in demo_db.execute("SELECT token FROM annotators WHERE id = ?", [created["id"]]).fetchall()
    ]
    assert placeholders and placeholders[0].startswith("hashed:")
    for guess in [*placeholders, "pending:" + "0" * 32, f"hashed:{created['id']}", ""]:
        assert roles.resolve_role(demo_db, guess, ADMIN).role_name != "annotator", guess
    assert roles.resolve_role(demo_db, created["token"], ADMIN).role_name == "annotator"


@pytest.mark.parametrize("value", [" " * 10 + "short-token" + " " * 10, "\tfifteen-chars-x\n"])
def test_an_admin_token_is_measured_after_trimming(value, tmp_path, monkeypatch):
    monkeypatch.setenv(roles.ADMIN_TOKEN_ENV, value)
    assert len(value) >= roles.MIN_ADMIN_TOKEN_CHARS > len(value.strip())
    with pytest.raises(roles.AdminTokenError, match=f"has {len(value.strip())} characters"):
        roles.admin_token(tmp_path / "foil.db")


def test_an_admin_token_is_used_trimmed(tmp_path, monkeypatch):
    monkeypatch.setenv(roles.ADMIN_TOKEN_ENV, f"  {ADMIN}\n")
    assert roles.admin_token(tmp_path / "foil.db") == ADMIN


def test_fleiss_from_counts_refuses_unequal_vote_totals_and_matches_statsmodels_otherwise():
    from statsmodels.stats.inter_rater import fleiss_kappa

    unequal = np.array([[3, 0], [2, 1], [1, 1]])  # the last item has two votes, the others three
    value, n, why = agreement.fleiss_from_counts(unequal)
    assert value is None and n == 3 and "votes per item vary" in why
    equal = np.array([[3, 0], [2, 1], [1, 2], [0, 3]])
    assert agreement.fleiss_from_counts(equal)[0] == pytest.approx(fleiss_kappa(equal))


@pytest.mark.both_engines
def test_migrate_store_keeps_ids_with_gaps_row_by_row(demo_db, tmp_path):
    """Delete rows so ids have gaps, copy to the other engine and back: every table equal by
    primary key (a copy that renumbered rows would pass a count and a labels checksum)."""
    for seed in (1, 2, 3):
        simulation.simulate(
            demo_db,
            batches.create_batch(
                demo_db,
                batches.BatchSpec(
                    "demo-sugarcrepe",
                    "validate_negative",
                    ("ada", "ben"),
                    2,
                    6,
                    seed=seed,
                    min_seconds=0,
                    name=f"gap-{seed}",
                ),
            )["batch"],
        )
    middle = store.get_batch(demo_db, "gap-2")["id"]
    with store.transaction(demo_db):
        for table in ("labels", "assignments"):
            demo_db.execute(f"DELETE FROM {table} WHERE batch_id = ?", [middle])
        demo_db.execute("DELETE FROM batches WHERE id = ?", [middle])
        first_label = demo_db.execute("SELECT MIN(id) FROM labels").fetchone()[0]
        demo_db.execute("DELETE FROM labels WHERE id = ?", [first_label])
    copy = tmp_path / "copy.db"
    store.copy_store(demo_db, store.open_db(copy))
    copied = store.open_db(copy)
    for table, key in (
        ("batches", "id"),
        ("assignments", "id"),
        ("labels", "id"),
        ("annotators", "id"),
        ("items", "id"),
        ("datasets", "id"),
    ):
        columns = ", ".join(c for c in _columns(demo_db, table))
        before = [tuple(r) for r in demo_db.execute(f"SELECT {columns} FROM {table} ORDER BY {key}").fetchall()]
        after = [tuple(r) for r in copied.execute(f"SELECT {columns} FROM {table} ORDER BY {key}").fetchall()]
        assert after == before, table
    ids = [r[0] for r in copied.execute("SELECT id FROM batches ORDER BY id").fetchall()]
    assert middle not in ids and len(ids) >= 2  # the gap survived the copy


def _columns(db, table: str) -> list[str]:
    row = db.execute(f"SELECT * FROM {table} LIMIT 1")
    return [d[0] for d in row.description]


def test_a_generated_admin_token_is_made_once_private_and_read_back(tmp_path, monkeypatch):
    import stat

    monkeypatch.delenv(roles.ADMIN_TOKEN_ENV, raising=False)
    token = roles.admin_token(tmp_path / "foil.db")
    kept = tmp_path / "foil_files" / "admin_token"
    assert kept.read_text() == token and len(token) == 32  # token_urlsafe(24): 24 bytes in base64
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert roles.admin_token(tmp_path / "foil.db") == token
    monkeypatch.setenv(roles.ADMIN_TOKEN_ENV, "  \n")  # blank counts as unset
    assert roles.admin_token(tmp_path / "foil.db") == token
    kept.write_text("  written-by-another-process  \n")
    assert roles.admin_token(tmp_path / "foil.db") == "written-by-another-process"
    monkeypatch.setenv(roles.ADMIN_TOKEN_ENV, "x" * roles.MIN_ADMIN_TOKEN_CHARS)  # exactly enough
    assert roles.admin_token(tmp_path / "foil.db") == "x" * 16
    monkeypatch.setenv(roles.ADMIN_TOKEN_ENV, "y" * 15)
    with pytest.raises(roles.AdminTokenError) as short:
        roles.admin_token(tmp_path / "foil.db")
    assert str(short.value) == (
        "FOIL_ADMIN_TOKEN has 15 characters; it needs at least 16 (unset it and one is generated for you)"
    )
    monkeypatch.delenv(roles.ADMIN_TOKEN_ENV)
    with pytest.raises(roles.AdminTokenError) as remote:
        roles.admin_token("postgresql://foil@db/foil")
    assert str(remote.value) == (
        "a PostgreSQL store takes its admin token from $FOIL_ADMIN_TOKEN (at least 16 characters, the same on "
        "every server): set it (docs/deployment.md)"
    )


def test_a_token_resolves_to_the_admin_its_annotator_or_nobody(fresh_db):
    created = store.ensure_annotator(fresh_db, "zia")
    assert roles.resolve_role(fresh_db, ADMIN, ADMIN) == roles.Role("admin")
    assert roles.resolve_role(fresh_db, created["token"], ADMIN) == roles.Role("annotator", created["id"], "zia")
    assert roles.resolve_role(fresh_db, None, ADMIN) == roles.ANONYMOUS == roles.Role("anonymous")
    assert roles.resolve_role(fresh_db, ADMIN + "x", ADMIN) == roles.ANONYMOUS


def _labelled_demo(demo_db):
    created = batches.create_batch(
        demo_db, batches.BatchSpec("demo-sugarcrepe", "validate_negative", ("ada", "ben"), 2, 6, seed=2, min_seconds=0)
    )
    simulation.simulate(demo_db, created["batch"], accuracies=0.8, seed=2)
    return created["batch"]


def test_a_copy_reports_the_sources_counts_and_labels_checksum_and_goes_on_numbering(demo_db, postgres):
    _labelled_demo(demo_db)
    target = store.open_db(postgres.create_database())
    report = store.copy_store(demo_db, target)
    assert report == {"rows": store.row_counts(demo_db), "labels_checksum": store.labels_checksum(demo_db)}
    assert list(report["rows"]) == list(store.COPY_ORDER) and report["rows"]["labels"] == 12
    assert store.row_counts(target) == report["rows"] and store.labels_checksum(target) == report["labels_checksum"]
    # PostgreSQL's identities continue after the copied ids, in every table that has one
    assert store.ensure_annotator(target, "dora")["id"] == max(a["id"] for a in store.list_annotators(demo_db)) + 1
    first = store.batch_labels(target, store.get_batch(target, store.list_batches(target)[0]["name"])["id"])[0]
    store.revise_label(target, first["id"], {"answer": "unsure"}, by="admin", reason="a changed answer")
    assert store.labels_checksum(target) != report["labels_checksum"]  # the checksum sees one answer change


def test_a_copy_into_a_store_that_holds_rows_or_is_at_another_version_is_refused_untouched(demo_db, tmp_path):
    taken = store.open_db(tmp_path / "taken.db")
    store.ensure_annotator(taken, "someone")
    with pytest.raises(store.StoreError) as refused:
        store.copy_store(demo_db, taken)
    assert str(refused.value) == (
        "the destination is not empty (1 annotators, 1 annotator_tokens); copy into a new store. Nothing was copied."
    )
    assert store.row_counts(taken)["datasets"] == 0
    older = store.open_db(tmp_path / "older.db", upto=8)
    with pytest.raises(store.StoreError, match=f"schema versions {store.SCHEMA_VERSION} and 8; open both"):
        store.copy_store(demo_db, older)


def test_a_copy_that_does_not_match_its_source_keeps_nothing(demo_db, tmp_path, monkeypatch):
    from foil_studio.data.store import copying

    _labelled_demo(demo_db)
    copy_table = copying._copy_table

    def losing_a_table(source, target, table):
        if table != "crowd_joins":
            copy_table(source, target, table)

    demo_db.execute(
        "INSERT INTO crowd_joins (batch_id, annotator_id, external_id, joined_at) SELECT MIN(id), "
        "(SELECT MIN(id) FROM annotators), 'x', '2026-01-01' FROM batches"
    )
    monkeypatch.setattr(copying, "_copy_table", losing_a_table)
    target = store.open_db(tmp_path / "lost.db")
    with pytest.raises(store.StoreError, match=r"rows in source, copy: \{'crowd_joins': \(1, 0\)\}"):
        store.copy_store(demo_db, target)
    assert set(store.row_counts(target).values()) == {0}

    def changing_a_label(source, target, table):
        copy_table(source, target, table)
        if table == "labels":
            target.execute("UPDATE labels SET comment = 'changed' WHERE id = (SELECT MIN(id) FROM labels)")

    monkeypatch.setattr(copying, "_copy_table", changing_a_label)
    with pytest.raises(store.StoreError, match="copied labels differ from the source's"):
        store.copy_store(demo_db, target)
    assert set(store.row_counts(target).values()) == {0}


def test_an_admin_token_file_made_by_another_server_meanwhile_is_read_not_overwritten(tmp_path, monkeypatch):
    import os

    monkeypatch.delenv(roles.ADMIN_TOKEN_ENV, raising=False)
    real_open = os.open

    def another_server_first(path, flags, mode=0o777):
        Path(path).write_text("  made-by-the-other-server-0123  \n")  # between the check and the create
        return real_open(path, flags, mode)

    monkeypatch.setattr(roles.os, "open", another_server_first)
    assert roles.admin_token(tmp_path / "foil.db") == "made-by-the-other-server-0123"
    assert (tmp_path / "foil_files" / "admin_token").read_text() == "  made-by-the-other-server-0123  \n"
