"""open_clip, today's path: image and caption embedded apart, scored by their cosine.

Its models load and score in ``analysis.models`` and ``analysis.scoring`` (QuickGELU where the
weights need it, exact trimming, cached embeddings); this record only lists it beside the others.
"""

from __future__ import annotations

from foil_studio.analysis.scorers.base import ScorerFamily

FAMILY = ScorerFamily(
    "open_clip",
    "any open_clip architecture with a pretrained tag, an hf-hub: name or a local checkpoint",
    "cosine of the L2-normalised image and caption embeddings",
    "CLIP's contrastive similarity, as ARO's model_zoo/clip_models.py and SugarCrepe's evaluation score CLIP",
    "ViT-B-32 --pretrained openai",
)
