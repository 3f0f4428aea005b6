"""The command line: the JSON contract of docs/commands.md, one-line errors, every command documented."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from foil_studio import cli
from foil_studio.data.formats import IMPORT_FORMATS as PARSERS
from foil_studio.data.store import db_file as store_file
from tests.conftest import FOIL_CLI, REPO, checkout_copy


def run_cli(*args: str, db) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*FOIL_CLI, *args, "--db", str(db)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )


def test_import_prints_exact_counts_as_json(tmp_path, fixtures):
    done = run_cli("import", "hard-positives", str(fixtures / "hard_positives"), "--json", db=tmp_path / "f.db")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["by_category"] == {"vl_checklist_attributes": 10575, "vl_checklist_relations": 16868}
    assert report["n_items"] == report["n_new_items"] == 27443 and report["run"] is None
    assert set(report) == {"dataset", "run", "n_items", "n_new_items", "by_category", "missing_images", "warnings"}


def test_results_import_reports_the_run(tmp_path, fixtures):
    path = fixtures / "bivlc" / "results" / "BiVLC_CLIP_TROHN-Img.csv"
    report = json.loads(run_cli("import", "bivlc-results", str(path), "--json", db=tmp_path / "f.db").stdout)
    assert (report["dataset"], report["run"], report["n_items"]) == ("bivlc", "CLIP_TROHN-Img", 2933)
    runs = json.loads(run_cli("runs", "bivlc", "--json", db=tmp_path / "f.db").stdout)
    assert [(r["run"], r["run_type"], r["n_items"]) for r in runs] == [("CLIP_TROHN-Img", "groups", 2933)]


def test_bad_input_exits_non_zero_with_one_line(tmp_path):
    bad = tmp_path / "swap_att.json"
    bad.write_text('{"0": {"filename": "a.jpg", "caption": "x"}}')
    done = run_cli("import", "sugarcrepe", str(bad), "--json", db=tmp_path / "f.db")
    assert done.returncode != 0 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "swap_att.json, row 0" in lines[0] and "negative_caption" in lines[0]


DEMO_COUNTS = {
    "demo-sugarcrepe": 770,
    "demo-hard-positives": 300,
    "demo-bivlc": 300,
    "demo-bivlc-candidates": 200,
    "demo-crepe": 150,
    "demo-coco-order": 200,  # 40 captions, 5 seeds
}


def shell_env() -> dict[str, str]:
    """A newcomer's shell in the checkout: no store chosen, so `./foil` finds the demo store."""
    return {k: v for k, v in os.environ.items() if k != "FOIL_DB"}


@pytest.fixture(scope="module")
def made_checkout(tmp_path_factory) -> Path:
    """A copy of every tracked file (a fresh clone of this working tree), its `.venv` linked and its
    demo store built as `make run` builds it (`make demo_store/foil.db`), and a pristine copy of that
    store beside it (`pristine.db`): the full demo is built once for the tests below."""
    checkout = checkout_copy(tmp_path_factory.mktemp("made") / "checkout")
    (checkout / ".venv").symlink_to(Path(sys.prefix))  # the environment `make` set up for this run
    built = subprocess.run(
        ["make", "demo_store/foil.db"], cwd=checkout, env=shell_env(), capture_output=True, text=True, timeout=600
    )
    assert built.returncode == 0, built.stderr
    built_store = sqlite3.connect(checkout / "demo_store" / "foil.db")
    built_store.execute("VACUUM INTO ?", [str(checkout.parent / "pristine.db")])
    built_store.close()
    return checkout


@pytest.mark.slow
def test_make_builds_the_demo_world_and_datasets_lists_it(made_checkout):
    listed = json.loads(run_cli("datasets", "--json", db=made_checkout.parent / "pristine.db").stdout)
    assert [d["name"] for d in listed] == list(DEMO_COUNTS)
    assert {d["name"]: d["n_items"] for d in listed} == DEMO_COUNTS  # the default demo world, exactly
    assert (made_checkout / "demo_store" / "foil_files" / "demo" / "demo-sugarcrepe" / "00000.png").is_file()


def test_annotator_add_prints_a_private_link(tmp_path):
    added = json.loads(run_cli("annotator", "add", "zoe", "--json", db=tmp_path / "f.db").stdout)
    assert added["name"] == "zoe" and added["url"].endswith(f"?token={added['token']}")


def test_every_command_is_documented_in_the_readme():
    """README points to docs/commands.md, whose table of commands names every command."""
    commands_page = (REPO / "docs" / "commands.md").read_text()
    for command in cli.COMMANDS:  # the registry the parser is built from
        name = f"{command.group} {command.name}" if command.group else command.name
        assert re.search(rf"\./foil {name}\b", commands_page), name


@pytest.mark.parametrize("source_format", sorted(PARSERS))
def test_every_import_format_has_a_readme_example(source_format):
    """The import table README points to (docs/formats.md) has an example line of every import format."""
    assert f"./foil import {source_format} " in (REPO / "docs" / "formats.md").read_text()


@pytest.mark.slow
def test_export_round_trips_and_carries_per_instance_results(demo_db, tmp_path):
    from foil_studio.analysis.models import demo_model_spec, load_model
    from foil_studio.analysis.results import run_metrics
    from foil_studio.analysis.scoring import score_dataset

    score_dataset(demo_db, "demo-sugarcrepe", load_model(demo_model_spec(), device="cpu"), run="demo-clip")
    db_file = store_file(demo_db)
    done = run_cli(
        "export", "demo-sugarcrepe", "--format", "jsonl", "--out", str(tmp_path / "jsonl"), "--json", db=db_file
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["runs"] == ["demo-clip"] and report["files"] == ["demo-sugarcrepe.jsonl"]
    records = [json.loads(line) for line in (tmp_path / "jsonl" / "demo-sugarcrepe.jsonl").read_text().splitlines()]
    assert len(records) == report["n_items"]
    correct = [r["results"]["demo-clip"]["correct"] for r in records]
    assert 100 * sum(correct) / len(correct) == pytest.approx(
        run_metrics(demo_db, "demo-sugarcrepe", "demo-clip", n_boot=0)["metrics"]["accuracy_micro"]
    )
    assert all(
        r["results"]["demo-clip"]["correct"]
        == (r["results"]["demo-clip"]["scores"][0] > r["results"]["demo-clip"]["scores"][1])
        for r in records
    )
    back = json.loads(
        run_cli(
            "import",
            "jsonl",
            str(tmp_path / "jsonl" / "demo-sugarcrepe.jsonl"),
            "--name",
            "again",
            "--json",
            db=tmp_path / "new.db",
        ).stdout
    )
    assert (
        back["n_items"] == len(records)
        and back["by_category"] == json.loads(run_cli("datasets", "--json", db=db_file).stdout)[0]["by_category"]
    )

    assert (
        run_cli(
            "export", "demo-sugarcrepe", "--format", "parquet", "--out", str(tmp_path / "pq"), db=db_file
        ).returncode
        == 0
    )
    table = pd.read_parquet(tmp_path / "pq" / "demo-sugarcrepe.parquet")
    assert len(table) == len(records) and table["demo-clip.correct"].tolist() == correct

    assert (
        run_cli(
            "export", "demo-sugarcrepe", "--format", "sugarcrepe", "--out", str(tmp_path / "sc"), db=db_file
        ).returncode
        == 0
    )
    again = json.loads(run_cli("import", "sugarcrepe", str(tmp_path / "sc"), "--json", db=tmp_path / "sc.db").stdout)
    assert again["n_items"] == len(records)

    refused = run_cli("export", "demo-hard-positives", "--format", "bivlc", "--out", str(tmp_path / "x"), db=db_file)
    assert (
        refused.returncode != 0
        and refused.stderr.strip() == "error: the bivlc layout holds group items; demo-hard-positives has triple items"
    )


def test_progress_is_one_bar_per_stage_and_silent_off_a_terminal(fixtures, tmp_path, capsys, monkeypatch):
    from foil_studio.cli import TerminalProgress, main

    made = []
    import tqdm

    real = tqdm.tqdm
    monkeypatch.setattr(tqdm, "tqdm", lambda *a, **k: made.append(k["desc"]) or real(*a, **k))
    progress = TerminalProgress()
    for done in range(0, 101, 10):
        progress("images", done, 100)
        progress("texts", done // 2, 50)
    assert sorted(made) == ["images", "texts"]  # one bar each, not one per report
    assert all(bar.disable or bar.n == bar.total for bar in progress.bars.values())
    assert (
        main(
            [
                "import",
                "sugarcrepe",
                str(fixtures / "sugarcrepe" / "data" / "swap_obj.json"),
                "--db",
                str(tmp_path / "p.db"),
            ]
        )
        == 0
    )
    assert "245/245" not in capsys.readouterr().err  # a pipe or log gets no carriage-return progress litter


def readme_lines_after_make_run() -> list[str]:
    """The command lines meant to run as written once `make run` built the demo store (docs/commands.md)."""
    text = (REPO / "docs" / "commands.md").read_text()
    block = text.split("<!-- after make run -->", 1)[1].split("<!-- end -->", 1)[0]
    return [line for line in block.splitlines() if line.startswith("./foil ")]


@pytest.mark.slow
def test_the_readme_command_lines_run_as_written_on_a_fresh_checkout_after_make_run(made_checkout):
    """Each line of docs/commands.md, verbatim, from the root of a fresh checkout after `make run`."""
    checkout, env = made_checkout, shell_env()
    lines = readme_lines_after_make_run()
    assert len(lines) >= 8
    for line in lines:
        done = subprocess.run(["sh", "-c", line], cwd=checkout, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{line}: {done.stderr}"
        assert "using the demo store" in done.stderr and (done.stdout.strip() or "--out" in line), line
        assert "(none)" not in done.stdout, f"{line} found nothing: {done.stdout}"
    assert (checkout / "first-batch.csv").read_text().count("\n") > 20  # 2 annotators x 20 items, and a header


@pytest.mark.parametrize("command", ["", *(f"{c.group} {c.name}" if c.group else c.name for c in cli.COMMANDS)])
def test_help_of_every_command_prints_its_name(command, capsys):
    """`./foil --help` (which `make run` points people to) and each command's --help end in their text,
    not a traceback: argparse %-formats help, and docstrings say "95%"."""
    for flag in ("--help", "-h"):
        with pytest.raises(SystemExit) as done:
            cli.main([*command.split(), flag])
        assert done.value.code == 0
        shown = capsys.readouterr().out
        assert "usage: foil" in shown and (command.split()[-1] in shown if command else "migrate-store" in shown)
        assert "%%" not in shown, "a doubled % shows as such: argparse formats help, not the description"


def test_every_whole_number_argument_states_its_bound_in_its_help(capsys):
    """Issue 53: `--bootstrap 1000000000` ended in a memory error. Every argument a command parses as a
    number is a whole number with an upper bound (`cli.base.WholeNumber`: its refusal names the range,
    `tests/test_bad_inputs.py` tries one past it) or a float (a share, minutes), and --help states the
    range. Other parsers check text (`health next --strategy` refuses the retired `active` with its
    reason) and are named here, so that a number parsed another way still fails."""
    from foil_studio.cli.base import WholeNumber
    from foil_studio.cli.health import _strategy

    text_checks = {_strategy}
    for command in cli.COMMANDS:
        words = [*([command.group] if command.group else []), command.name]
        for flags, options in command.arguments:
            kind = options.get("type")
            if kind is None or kind is float or kind in text_checks:
                continue
            assert isinstance(kind, WholeNumber) and kind.most is not None, (words, flags, kind)
            with pytest.raises(SystemExit):
                cli.main([*words, "--help"])
            shown = " ".join(capsys.readouterr().out.split())
            assert f"{flags[0]} " in shown and f"(a whole number {kind.span})" in shown, (words, flags)


@pytest.mark.slow
def test_runs_lists_by_default_and_deletes_a_run(tmp_path, fixtures):
    db = tmp_path / "f.db"
    run_cli("import", "bivlc-results", str(fixtures / "bivlc" / "results" / "BiVLC_ViT-B-32.csv"), db=db)
    assert [r["run"] for r in json.loads(run_cli("runs", "bivlc", "--json", db=db).stdout)] == ["ViT-B-32"]
    assert json.loads(run_cli("runs", "list", "--json", db=db).stdout) == json.loads(
        run_cli("runs", "--json", db=db).stdout
    )
    deleted = json.loads(run_cli("runs", "delete", "bivlc", "ViT-B-32", "--json", db=db).stdout)
    assert deleted["deleted_scores"] == 2933
    assert json.loads(run_cli("runs", "bivlc", "--json", db=db).stdout) == []
    again = run_cli("runs", "delete", "bivlc", "ViT-B-32", db=db)
    assert again.returncode == 1 and "no run named 'ViT-B-32'" in again.stderr


@pytest.mark.slow
def test_readme_example_outputs_are_what_the_commands_print(made_checkout, tmp_path):
    """The demo outputs of README.md and docs/*.md are generated (`make docs`), never pasted: they must
    equal the output now, on a demo store as `make run` builds it (a copy of the pristine one)."""
    shutil.copy(made_checkout.parent / "pristine.db", tmp_path / "foil.db")
    done = subprocess.run(
        [sys.executable, str(REPO / "docs" / "readme_outputs.py"), "--check", "--db", str(tmp_path / "foil.db")],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr


def test_baseline_of_a_batch_with_no_answer_says_why_and_prints_no_figure(demo_db):
    """It printed `metrics: accuracy_micro , accuracy_macro` (blank, NaN underneath) with rc 0."""
    from foil_studio.annotate import batches
    from foil_studio.data import store

    batches.create_batch(demo_db, batches.BatchSpec("demo-sugarcrepe", "baseline_i2t", ("ada",), 1, 5, name="bl"))
    for extra in ((), ("--json",)):
        done = run_cli("baseline", "bl", *extra, db=store.location(demo_db))
        assert done.returncode != 0 and not done.stdout
        assert done.stderr.strip() == "error: no question of bl has an answer yet: a baseline needs one"


def test_items_lists_each_items_ids_category_and_item_kind(demo_db):
    """Issue 55: a predictions file names items by their ids, which only `export` showed."""
    from foil_studio.data import store

    db = store.location(demo_db)
    dataset_id = store.get_dataset(demo_db, "demo-sugarcrepe")["id"]
    stored = store.list_items(demo_db, dataset_id, limit=1 << 40)
    listed = run_cli("items", "demo-sugarcrepe", "--json", db=db)
    assert listed.returncode == 0 and not listed.stderr, listed.stderr
    assert json.loads(listed.stdout) == [
        {"id": i["id"], "source_id": i["source_id"], "category": i["category"], "item_kind": i["kind"]} for i in stored
    ]
    category = stored[-1]["category"]
    first = run_cli("items", "demo-sugarcrepe", "--category", category, "--limit", "3", "--json", db=db)
    in_category = [i for i in stored if i["category"] == category]
    assert [row["id"] for row in json.loads(first.stdout)] == [i["id"] for i in in_category[:3]]
    assert first.stderr.strip() == f"the first 3 of {len(in_category)} items (--limit)"
    shown = run_cli("items", "demo-sugarcrepe", "--limit", "2", db=db).stdout.splitlines()
    assert shown[0].split() == ["id", "source_id", "category", "item_kind"] and len(shown) == 3, shown
    assert str(stored[1]["source_id"]) in shown[-1]
