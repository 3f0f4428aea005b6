"""Datasets made in Foil Studio rather than imported: the demo world, and the groups BiVLC's
construction steps build from a pick_image batch's chosen images. Neither reads nor writes a
file, so neither is an import kind or an export format; their records say what their metrics
follow (a dataset's ``source_kind`` names one of them)."""

from __future__ import annotations

from foil_studio.data.formats.base import Format
from foil_studio.data.formats.bivlc import bivlc_type

# The demo imitates SugarCrepe, BiVLC and CREPE: its groups' categories are BiVLC's `{type}_{subtype}`.
DEMO = Format("demo", "the embedded demo world (`./foil demo`)", category_types=bivlc_type)
# BiVLC step 2: groups from BiVLC's candidate images, in BiVLC's categories (cleaned to BiVLC's layout).
CONSTRUCTION = Format(
    "construction", "BiVLC groups built from a pick_image batch's chosen images", category_types=bivlc_type
)
