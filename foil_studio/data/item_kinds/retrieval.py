"""retrieval: one image, its caption and k hard negatives (CREPE)."""

import numpy as np

from foil_studio.data.item_kinds import truth
from foil_studio.data.item_kinds.base import Gap, ItemKind, first_image_row, one_image

ITEM_KIND = ItemKind(
    "retrieval",
    images="[I]",
    captions="[c, c_n1, ..., c_nk]",
    n_captions=None,
    n_images=1,
    min_captions=2,
    caption_roles=lambda n: ["positive"] + [f"negative {i}" for i in range(1, n)],
    image_roles=one_image,
    scores_from=first_image_row,
    # the margin to the hardest negative: above zero is a hit at rank 1
    gaps=(Gap("s(c) - max s(c_n)", lambda s: s[:, 0] - np.nanmax(s[:, 1:], axis=1)),),
    metric_family="retrieval",
    truth_keys=(truth.CORRECT,),
    example={"id": 5, "kind": "retrieval", "captions": ["pos", "n1", "n2"], "images": ["r.png"], "truth": {}},
    audited=True,
)
