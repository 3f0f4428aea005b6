"""paraphrase: one image, a caption, its hard negative and a second positive that says the same
in other words (SugarCrepe++). The captions are kept as [p1, n, p2], so caption 0 and caption 1
are a positive and its negative as in every other kind."""

import numpy as np

from foil_studio.data.item_kinds import truth
from foil_studio.data.item_kinds.base import Gap, ItemKind, first_image_row, one_image


def caption_cosines(similarity: np.ndarray) -> list[float]:
    """The text encoder's [cos(p1,p2), cos(p1,n), cos(p2,n)] from the captions' cosine matrix."""
    return [float(similarity[0, 2]), float(similarity[0, 1]), float(similarity[2, 1])]


ITEM_KIND = ItemKind(
    "paraphrase",
    images="[I]",
    captions="[p1, n, p2]",
    n_captions=3,
    n_images=1,
    caption_roles=lambda n: ["positive", "negative", "second positive"],
    image_roles=one_image,
    scores_from=first_image_row,
    text_scores_from=caption_cosines,
    gaps=(
        Gap("s(p1) - s(n)", lambda s: s[:, 0] - s[:, 1]),
        Gap("s(p2) - s(n)", lambda s: s[:, 2] - s[:, 1]),
        Gap("text only: cos(p1,p2) - max cos(p,n)", lambda s: s[:, 3] - np.maximum(s[:, 4], s[:, 5])),
    ),
    metric_family="paraphrase",
    truth_keys=(truth.NEGATIVE,),
    example={
        "id": 6,
        "kind": "paraphrase",
        "captions": ["p1", "n", "p2"],
        "images": ["p.png"],
        "truth": {"negative": "false"},
    },
    caption_pair=True,
    audited=True,
)
