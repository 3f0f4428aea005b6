"""Datasets made in Foil Studio rather than imported: the demo world, the groups BiVLC's
construction steps build from a pick_image batch's chosen images, and ARO's order sets built
from a captioned image set (`data.order_sets`). Neither reads nor writes a
file, so neither is an import format or an export format; their records say what their metrics
follow (a dataset's ``source_format`` names one of them)."""

from __future__ import annotations

from foil_studio.data.formats.base import Format
from foil_studio.data.formats.bivlc import bivlc_type

# The demo imitates SugarCrepe, BiVLC and CREPE: its groups' categories are BiVLC's `{type}_{subtype}`.
DEMO = Format("demo", "the embedded demo world (`./foil demo`)", category_types=bivlc_type)
# BiVLC step 2: groups from BiVLC's candidate images, in BiVLC's categories (cleaned to BiVLC's layout).
CONSTRUCTION = Format(
    "construction", "BiVLC groups built from a pick_image batch's chosen images", category_types=bivlc_type
)
# ARO's COCO-Order / Flickr30k-Order: five options per caption, one category per seed.
ARO_ORDER = Format(
    "aro-order",
    "ARO's word-order sets built from a captioned image set (`./foil build aro-order`)",
    metric_names={"recall_at_1": "precision_at_1", "recall_at_5": None},  # ARO's Precision@1; of five, @5 is all
    ties="right",
    ties_because="ARO's code takes np.argmax over the five captions, which returns the first of tied ones: the true "
    "caption",
    categories_are_seeds=True,
)
