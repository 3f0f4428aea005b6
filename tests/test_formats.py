"""Every benchmark format: the import table of docs/formats.md is the registry's, and what a writer writes
its reader reads back as the same items (captions, categories, images, boxes, truth)."""

from __future__ import annotations

import csv
import json

import pytest

from foil_studio.analysis.exports import export_dataset
from foil_studio.data import formats, store
from foil_studio.data.loading import import_path
from foil_studio.plugin_checks import check_format, item_content
from tests.conftest import REPO


def test_the_readme_import_table_is_the_registry():
    assert formats.import_table() in (REPO / "docs" / "formats.md").read_text()


def test_every_import_format_is_offered_by_the_cli_and_the_datasets_form():
    from foil_studio.cli import COMMANDS

    importing = next(c for c in COMMANDS if c.group is None and c.name == "import")
    choices = next(options["choices"] for flags, options in importing.arguments if flags == ("source_format",))
    assert tuple(choices) == formats.IMPORT_FORMATS
    assert "formats.IMPORT_FORMATS" in (REPO / "foil_studio" / "views" / "datasets.py").read_text()


ROUND_TRIPS = [name for name, f in formats.REGISTRY.items() if f.read is not None and f.write is not None]


@pytest.mark.parametrize("name", ROUND_TRIPS)
def test_a_written_benchmark_reads_back_as_the_same_items(name, fresh_db, fixtures, tmp_path):
    """The generic check a plugin's format passes too (`plugin_checks.check_format`): its sample
    (`source_fixture` in the shared fixtures, or what `write_source` writes) read, written, read back."""
    check_format(formats.REGISTRY[name], tmp_path, db=fresh_db, fixtures=fixtures)


def test_a_written_bivlc_reads_back_with_its_images(fresh_db, tmp_path):
    from PIL import Image

    images = tmp_path / "images"
    images.mkdir()
    rows = []
    for n in range(3):
        for side in ("pos", "neg"):
            Image.new("RGB", (8, 8), (40 * n, 100 if side == "pos" else 200, 0)).save(images / f"{n}_{side}.png")
        rows.append(
            {
                "caption": f"a dog {n} on a mat",
                "negative_caption": f"a mat {n} on a dog",
                "type": "swap",
                "subtype": "obj",
                "image": f"{n}_pos.png",
                "negative_image": f"{n}_neg.png",
            }
        )
    source = tmp_path / "bivlc.csv"
    with source.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    import_path(fresh_db, "bivlc", source, images=images, name="first")
    export_dataset(fresh_db, "first", "bivlc", tmp_path / "written")
    report = import_path(
        fresh_db, "bivlc", tmp_path / "written" / "bivlc.csv", images=tmp_path / "written", name="second"
    )
    assert report.missing_images == 0
    first = [(k, c, cap) for k, c, cap, *_ in item_content(fresh_db, "first")]
    assert [(k, c, cap) for k, c, cap, *_ in item_content(fresh_db, "second")] == first and len(first) == 3


# --- the runs a JSONL export carries read back (issue 53: `import jsonl` dropped `results`) -------------


def scored_run(db, dataset: str, run: str, seed: int) -> int:
    """A run of random similarities on every item of a dataset, as open_clip scoring stores them."""
    import numpy as np

    from foil_studio.data import item_kinds

    rng, row = np.random.default_rng(seed), store.get_dataset(db, dataset)
    items = store.list_items(db, row["id"], limit=1 << 20)
    rows = [
        (i["id"], item_kinds.item_kind(i["kind"]).scores_from(rng.random((len(i["images"]), len(i["captions"])))))
        for i in items
    ]
    with store.transaction(db):
        store.put_scores(db, store.ensure_run(db, row["id"], run, run_type="scores", model="ViT-B-32"), rows)
    return len(rows)


def results_by_source(db, dataset: str) -> dict[str, dict]:
    """Every run's per-item results of a dataset (what an export writes), keyed by the items' source ids."""
    from foil_studio.analysis.exports import per_instance_results

    sources = {
        i["id"]: i["source_id"] for i in store.list_items(db, store.get_dataset(db, dataset)["id"], limit=1 << 20)
    }
    return {sources[item]: runs for item, runs in per_instance_results(db, dataset).items()}


@pytest.mark.parametrize("dataset", ["demo-sugarcrepe", "demo-bivlc", "demo-bivlc-candidates", "demo-crepe"])
def test_a_jsonl_export_reads_back_with_its_runs(dataset, demo_db, tmp_path):
    n = scored_run(demo_db, dataset, "clip", seed=1)
    scored_run(demo_db, dataset, "siglip", seed=2)
    file = tmp_path / "out" / export_dataset(demo_db, dataset, "jsonl", tmp_path / "out")["files"][0]
    back = store.open_db(tmp_path / "back.db")
    report = import_path(back, "jsonl", file, name=dataset)
    assert report.runs == {"clip": n, "siglip": n} and not report.warnings
    assert results_by_source(back, dataset) == results_by_source(demo_db, dataset)
    assert [(r["run"], r["run_type"], r["n_items"]) for r in store.list_runs(back, dataset)] == [
        ("clip", "scores", n),
        ("siglip", "scores", n),
    ]
    again = import_path(back, "jsonl", file, name=dataset)  # the same file again: nothing new, nothing said
    assert again.runs == report.runs and not again.warnings
    assert results_by_source(back, dataset) == results_by_source(demo_db, dataset)


def test_a_run_without_scores_is_left_and_the_import_says_how_many_results(demo_db, tmp_path, capsys):
    """A run imported from a benchmark's results file holds decisions only: a JSONL export carries
    them, and importing it back leaves them, in a line naming the run and how many results."""
    from foil_studio import cli

    dataset = "demo-sugarcrepe"
    row = store.get_dataset(demo_db, dataset)
    items = store.list_items(demo_db, row["id"], limit=1 << 20)
    with store.transaction(demo_db):
        run_id = store.ensure_run(demo_db, row["id"], "from-a-file", run_type="correct")
        store.put_outcomes(demo_db, run_id, [(i["id"], {"correct": n % 3 > 0}) for n, i in enumerate(items)])
    n = scored_run(demo_db, dataset, "clip", seed=3)
    export_dataset(demo_db, dataset, "jsonl", tmp_path / "out")
    back = tmp_path / "back.db"
    argv = ["import", "jsonl", str(tmp_path / "out" / f"{dataset}.jsonl"), "--name", dataset, "--db", str(back)]
    capsys.readouterr()
    assert cli.main(argv) == 0
    shown = capsys.readouterr().out
    left = f"results of run 'from-a-file' on {len(items)} item(s) left out: they hold a decision but no scores"
    assert left in shown and f"runs: clip {n}" in shown, shown
    assert cli.main([*argv, "--json"]) == 0
    said = json.loads(capsys.readouterr().out)
    assert said["runs"] == {"clip": n} and len(said["warnings"]) == 1 and left in said["warnings"][0]["message"]
    assert [r["run"] for r in store.list_runs(store.open_db(back), dataset)] == ["clip"]


def test_a_run_already_there_with_other_scores_keeps_them_and_the_import_says_so(demo_db, tmp_path):
    dataset = "demo-crepe"
    scored_run(demo_db, dataset, "clip", seed=4)
    file = tmp_path / "out" / export_dataset(demo_db, dataset, "jsonl", tmp_path / "out")["files"][0]
    back = store.open_db(tmp_path / "back.db")
    import_path(back, "jsonl", file, name=dataset)
    scored_run(back, dataset, "clip", seed=5)  # scored again meanwhile, say with other weights
    kept = results_by_source(back, dataset)
    report = import_path(back, "jsonl", file, name=dataset)
    assert report.runs == {} and results_by_source(back, dataset) == kept
    (warning,) = report.warnings
    assert "the scores of run 'clip' on" in warning["message"] and "a run of that name already" in warning["message"]


def test_a_run_name_names_the_one_run_a_jsonl_export_carries(demo_db, tmp_path):
    from foil_studio.data.formats import BadInputError

    dataset = "demo-bivlc"
    n = scored_run(demo_db, dataset, "clip", seed=6)
    file = tmp_path / "out" / export_dataset(demo_db, dataset, "jsonl", tmp_path / "out")["files"][0]
    back = store.open_db(tmp_path / "back.db")
    assert import_path(back, "jsonl", file, name=dataset, run="clip-again").runs == {"clip-again": n}
    scored_run(demo_db, dataset, "siglip", seed=7)
    export_dataset(demo_db, dataset, "jsonl", tmp_path / "out")
    with pytest.raises(BadInputError, match=r"carries the scores of 2 runs \(clip, siglip\)"):
        import_path(back, "jsonl", file, name="other", run="one")
    with pytest.raises(store.NotFoundError):
        store.get_dataset(back, "other")
