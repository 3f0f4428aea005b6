"""The metric families, one module each, listed once in ``METRIC_FAMILIES``: how a run of an
item kind (or of a run type, GPT-4V's choices) becomes benchmark metrics. A new family is a module
defining its outcomes and one line below, or an installed package's entry point in group
``foil_studio.metric_families`` (docs/plugins.md); its item kind names it (``ItemKind.metric_family``).
"""

from __future__ import annotations

from foil_studio.analysis.metric_families import bivlc, choices, hard_positive, pairwise, paraphrase, retrieval
from foil_studio.analysis.metric_families.base import MetricFamily, Run, UnsupportedRunError, item_kind
from foil_studio.data import item_kinds, plugins

# The built-in families, then each installed plugin's (`data.plugins`, entry-point group foil_studio.metric_families).
METRIC_FAMILIES: plugins.Registry[MetricFamily] = plugins.Registry(
    plugins.METRIC_FAMILIES,
    MetricFamily,
    (
        pairwise.FAMILY,
        hard_positive.FAMILY,
        paraphrase.FAMILY,
        bivlc.FAMILY,
        retrieval.FAMILY,
        choices.FAMILY,
    ),
)


def metric_family(name: str) -> MetricFamily:
    """The metric family of the item kind `name`; UnsupportedRunError when that item kind has none."""
    record = item_kinds.item_kind(name)
    if record.metric_family is None:
        raise UnsupportedRunError(f"{name} items have no right answer to score or inspect: {record.no_metric_because}")
    return METRIC_FAMILIES[record.metric_family]


def run_family(run: Run) -> MetricFamily:
    """The metric family of a run: the one claiming its run type (GPT-4V's `choices`), else its
    item kind's (UnsupportedRunError for a run mixing item kinds, or of an item kind with no metric)."""
    claimed = [family for family in METRIC_FAMILIES.values() if run.run_type in family.run_types]
    return claimed[0] if claimed else metric_family(item_kind(run))
