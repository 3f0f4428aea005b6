"""Foil Studio from Python (a notebook): one store, and what the command line does with it, as
pandas data frames and the command line's own result objects.

Each method calls the function the matching `foil` command calls, so a figure read here is the
figure `foil ... --json` prints (docs/python-api.md).

>>> from foil_studio import api
>>> studio = api.open_store(":memory:")  # or a file, a postgresql:// URL, or nothing: $FOIL_DB / ./foil.db
>>> studio.datasets().columns.tolist()
['name', 'format', 'n_items', 'by_category']
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import sqlite_utils

from foil_studio.analysis.cluster import ClusterSpec
from foil_studio.analysis.model_spec import ModelSpec, demo_model_spec
from foil_studio.analysis.results import BOOTSTRAP
from foil_studio.analysis.scorers import split_family
from foil_studio.data import paths, store

ITEM_COLUMNS = ["id", "kind", "category", "source_id", "captions", "images", "truth", "meta"]


class Studio:
    """An open store. Build one with `open_store`; `db` is the store connection every layer takes.

    >>> studio = open_store(":memory:")
    >>> studio.runs().empty, studio.batches().empty, studio.location is None
    (True, True, True)
    >>> studio.items("sugarcrepe")
    Traceback (most recent call last):
    ...
    foil_studio.data.store.base.NotFoundError: no dataset named 'sugarcrepe' (datasets: none)
    """

    def __init__(self, db: sqlite_utils.Database) -> None:
        self.db = db

    @property
    def location(self) -> str | Path | None:
        """The store's file or PostgreSQL URL (None in memory)."""
        return store.location(self.db)

    def datasets(self) -> pd.DataFrame:
        """One row per dataset: name, import format, number of items and items per category (`foil datasets`)."""
        rows = [
            {"name": d["name"], "format": d["format"], "n_items": d["n_items"], "by_category": d["by_category"]}
            for d in store.list_datasets(self.db)
        ]
        return pd.DataFrame(rows, columns=["name", "format", "n_items", "by_category"])

    def runs(self, dataset: str | None = None) -> pd.DataFrame:
        """One row per model run (scored here or imported), of one dataset or all (`foil runs`)."""
        return pd.DataFrame(store.list_runs(self.db, dataset))

    def items(self, dataset: str, *, category: str | None = None, subset: str | None = None) -> pd.DataFrame:
        """Every item of a dataset (or of one category, or a named subset such as VALSE's `valid`):
        id, kind, category, source id, captions, images (paths under the image root), truth, meta."""
        from foil_studio.data.subsets import truth_flag

        dataset_id = store.get_dataset(self.db, dataset)["id"]
        rows = store.list_items(self.db, dataset_id, category=category, limit=1 << 62, truth_flag=truth_flag(subset))
        return pd.DataFrame(rows, columns=ITEM_COLUMNS)

    def results(self, dataset: str, run: str, *, subset: str | None = None) -> pd.DataFrame:
        """One row per scored item of a run: `item`, `category`, `correct` (under the benchmark's
        tie rule), its score gaps (named as on Inspect runs) where the run holds scores, and the
        per-item columns of its metric family."""
        from foil_studio.analysis.inspection import item_table

        return item_table(self.db, dataset, run, subset)

    def metrics(
        self,
        dataset: str,
        run: str,
        *,
        ties: str | None = None,
        subset: str | None = None,
        bootstrap: int = BOOTSTRAP,
        seed: int = 0,
    ) -> dict[str, Any]:
        """The metrics of one run per category with bootstrap 95% intervals and tie counts: the
        document `foil metrics --json` prints (`by_category`, `intervals`, `tie_rule`...)."""
        from foil_studio.analysis.results import run_metrics

        return run_metrics(self.db, dataset, run, n_boot=bootstrap, seed=seed, subset=subset, ties=ties)

    def metrics_table(self, dataset: str, run: str, **options: Any) -> pd.DataFrame:
        """`metrics` as the table `foil metrics` prints: one row per category and metric with its
        value, 95% interval (`low`, `high`), `n` and `ties`; `options` are those of `metrics`."""
        from foil_studio.analysis.results import metric_rows

        rows = metric_rows(self.metrics(dataset, run, **options))
        for row in rows:
            interval = row.pop("interval") or (float("nan"), float("nan"))
            row["low"], row["high"] = interval
        return pd.DataFrame(rows)

    def batches(self) -> pd.DataFrame:
        """One row per annotation batch: name, dataset, task type, creation time, assignments, labels."""
        return pd.DataFrame(store.list_batches(self.db))

    def labels(self, batch: str) -> pd.DataFrame:
        """Every label of an annotation batch: annotator, item, answer, displayed order, flags,
        comment, timestamps and seconds (`foil labels`)."""
        return pd.DataFrame(store.batch_labels(self.db, store.get_batch(self.db, batch)["id"]))

    def agreement(self, batch: str) -> dict[str, Any]:
        """Inter-annotator agreement of a batch (`foil agreement --json`): every coefficient, Fleiss'
        kappa among them, with its 95% interval from bootstrap resamples of items (`intervals`)."""
        from foil_studio.annotate.batch_reports import batch_agreement

        return batch_agreement(self.db, batch)

    def score(
        self,
        dataset: str,
        model: str | ModelSpec = "demo",
        *,
        pretrained: str | None = None,
        checkpoint: str | None = None,
        precision: str = "auto",
        run: str | None = None,
        device: str = "auto",
        limit: int | None = None,
        cluster: ClusterSpec | None = None,
    ) -> dict[str, Any]:
        """Score a dataset (`foil score`): `model` is an open_clip architecture (``"ViT-B-32"`` with
        ``pretrained="openai"``), a `ModelSpec`, ``"demo"`` for the shipped demo model, or another
        family's ``"FAMILY:FOLDER_OR_NAME"`` (``"blip-itm:/models/blip"``: the family table of docs/scoring.md).
        `cluster` (``ClusterSpec("local", actors=2)``) scores on Ray actors, any family
        (`foil score --cluster`). Returns the report `foil score --json` prints."""
        from foil_studio.analysis.scoring import score_with_model

        family = split_family(model) if isinstance(model, str) else None
        if family is not None:
            from foil_studio.analysis.scorers.pairwise import score_with_family

            if pretrained or checkpoint:
                raise ValueError(f"pretrained and checkpoint are open_clip's; {family[0]} reads its folder or name")
            settings: dict[str, Any] = {"precision": precision, "device": device, "run": run, "limit": limit}
            if cluster is not None:
                from foil_studio.analysis.cluster import score_family_on_cluster

                return score_family_on_cluster(self.db, dataset, *family, cluster, **settings)
            return score_with_family(self.db, dataset, *family, **settings)
        if isinstance(model, ModelSpec):
            spec = model
        elif model == "demo":
            spec = demo_model_spec()
        else:
            spec = ModelSpec(model, pretrained, checkpoint, precision)
        if cluster is not None:
            from foil_studio.analysis.cluster import score_on_cluster

            return score_on_cluster(self.db, dataset, spec, cluster, device=device, run=run, limit=limit)
        return score_with_model(self.db, dataset, spec, device=device, run=run, limit=limit)

    def import_file(
        self,
        source_format: str,
        path: str | Path,
        *,
        images: str | Path | None = None,
        name: str | None = None,
        run: str | None = None,
        category: str | None = None,
    ) -> dict[str, Any]:
        """Import a benchmark file or folder, or a model's per-instance results (`foil import`; the
        formats are the import table of docs/formats.md); `category` names the category of a Hub copy
        that names none. Returns the import report (items, new items, warnings)."""
        from foil_studio.data.loading import import_path

        location = self.location
        embedded = paths.embedded_image_dir(location, name or source_format) if location is not None else None
        report = import_path(
            self.db,
            source_format,
            paths.given_path(path),
            images=Path(images) if images else None,
            name=name,
            run=run,
            embedded_root=embedded,
            category=category,
        )
        return report.to_dict()

    def import_predictions(self, dataset: str, path: str | Path, name: str) -> dict[str, Any]:
        """A predictor's output on every item with a negative, for prediction-powered health
        (`foil health predictions`): JSON lines or CSV of `id` and `invalid` (0 to 1)."""
        from foil_studio.annotate.health import import_predictions

        return import_predictions(self.db, dataset, Path(path), name)

    def predictions_from_run(self, dataset: str, run: str, name: str) -> dict[str, Any]:
        """A yes-probability or match-probability run's score of each altered caption, stored as
        predictions for prediction-powered health (`foil health predictions --from-run`)."""
        from foil_studio.annotate.health import predictions_from_run

        return predictions_from_run(self.db, dataset, run, name)

    def predictions_from_answers(self, dataset: str, batch: str, annotator: str, name: str) -> dict[str, Any]:
        """One annotator's answers in a validate_negative batch over every item (invalid 1, valid 0,
        unsure 0.5), stored as predictions (`foil health predictions --from-batch --annotator`)."""
        from foil_studio.annotate.health import predictions_from_answers

        return predictions_from_answers(self.db, dataset, batch, annotator, name)

    def health_report(
        self,
        dataset: str,
        runs: list[str] | None = None,
        *,
        predictions: str | None = None,
        consensus: str = "majority",
        ties: str | None = None,
        n_boot: int = BOOTSTRAP,
        seed: int = 0,
    ) -> dict[str, Any]:
        """The benchmark health card's figures (`foil health report --json`); with `predictions`,
        the invalid shares also prediction-powered, beside the plain ones (`prediction_powered`);
        `consensus` "majority" or "dawid-skene" (how validations become an item's verdict)."""
        from foil_studio.annotate.health import health_report

        return health_report(
            self.db, dataset, runs, ties=ties, n_boot=n_boot, seed=seed, predictions=predictions, consensus=consensus
        )


IN_MEMORY = ":memory:"


def open_store(location: str | Path | None = None) -> Studio:
    """Open (creating and migrating if needed) the store at `location`: a file, a ``postgresql://``
    URL, or ``":memory:"``. Without one: `$FOIL_DB`, else ``./foil.db``, else (in a checkout) the
    demo store `make run` built, as the command line chooses."""
    if location is None:
        location = paths.cli_db_path()
    return Studio(store.open_db(None if str(location) == IN_MEMORY else location))


__all__ = ["ModelSpec", "Studio", "open_store"]
