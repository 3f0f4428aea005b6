"""pair: one image, a caption and its hard negative (ARO, SugarCrepe, VALSE...)."""

from foil_studio.data.item_kinds import truth
from foil_studio.data.item_kinds.base import Gap, ItemKind, first_image_row, one_image

ITEM_KIND = ItemKind(
    "pair",
    images="[I]",
    captions="[c, c_n]",
    n_captions=2,
    n_images=1,
    caption_roles=lambda n: ["positive", "negative"],
    image_roles=one_image,
    scores_from=first_image_row,
    gaps=(Gap("s(c) - s(c_n)", lambda s: s[:, 0] - s[:, 1]),),
    metric_family="pairwise",
    truth_keys=(truth.NEGATIVE, truth.VALID_FOIL),
    example={
        "id": 1,
        "kind": "pair",
        "captions": ["a red circle", "a blue circle"],
        "images": ["a.png"],
        "truth": {"negative": "false"},
    },
    caption_pair=True,
    audited=True,
)
