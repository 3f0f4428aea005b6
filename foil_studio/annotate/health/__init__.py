"""Benchmark health over the store, in three steps: `sample` draws stratified samples of a
dataset's negatives into validate_negative batches and reads each drawn item's outcome, `report`
joins the outcomes with the runs into the report's figures, and `card` words them (methods
paragraph, tables, Markdown). `analysis.health` has the statistics and their definitions.

The names below are the package's face: pages, the CLI and the API import them from here.
"""

from foil_studio.annotate.health.card import (
    agreement_table,
    blind_table,
    compared_shares,
    design_table,
    human_table,
    leaderboard_table,
    methods_paragraph,
    pairs_table,
    powered_table,
    report_markdown,
    share_text,
    strata_table,
)
from foil_studio.annotate.health.powered import import_predictions, powered_shares, predictions_from_run
from foil_studio.annotate.health.report import (
    BLIND_SCORERS,
    NO_VALID_ITEM,
    hackability,
    health_report,
    own_shares,
)
from foil_studio.annotate.health.sample import (
    CONSENSUS,
    DESIGN_KEY,
    HEALTH_KINDS,
    SHARES,
    TARGETS,
    TASK,
    VALIDATION,
    HealthError,
    HealthSample,
    SamplePlan,
    batch_design,
    create_sample_batch,
    drawn_items,
    health_batches,
    item_outcomes,
    plan_sample,
    read_sample,
    run_credits,
    sampling_frame,
)

__all__ = [
    "CONSENSUS",
    "BLIND_SCORERS",
    "DESIGN_KEY",
    "HEALTH_KINDS",
    "NO_VALID_ITEM",
    "VALIDATION",
    "SHARES",
    "TARGETS",
    "TASK",
    "HealthError",
    "HealthSample",
    "SamplePlan",
    "agreement_table",
    "batch_design",
    "blind_table",
    "compared_shares",
    "create_sample_batch",
    "design_table",
    "drawn_items",
    "hackability",
    "import_predictions",
    "health_batches",
    "health_report",
    "human_table",
    "item_outcomes",
    "leaderboard_table",
    "methods_paragraph",
    "own_shares",
    "pairs_table",
    "powered_shares",
    "powered_table",
    "predictions_from_run",
    "plan_sample",
    "read_sample",
    "report_markdown",
    "run_credits",
    "sampling_frame",
    "share_text",
    "strata_table",
]
