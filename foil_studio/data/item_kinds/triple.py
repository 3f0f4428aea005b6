"""triple: one image, a caption, its hard negative and a hard positive (the hard-positives set)."""

from foil_studio.data.item_kinds import truth
from foil_studio.data.item_kinds.base import Gap, ItemKind, first_image_row, one_image

ITEM_KIND = ItemKind(
    "triple",
    images="[I]",
    captions="[c, c_n, c_p]",
    n_captions=3,
    n_images=1,
    caption_roles=lambda n: ["positive", "negative", "hard positive"],
    image_roles=one_image,
    scores_from=first_image_row,
    gaps=(Gap("s(c) - s(c_n)", lambda s: s[:, 0] - s[:, 1]), Gap("s(c_p) - s(c_n)", lambda s: s[:, 2] - s[:, 1])),
    metric_family="hard_positive",
    truth_keys=(truth.NEGATIVE, truth.POSITIVE_VARIANT),
    example={
        "id": 2,
        "kind": "triple",
        "captions": ["c", "c_n", "c_p"],
        "images": ["b.png"],
        "truth": {"negative": "false"},
    },
    caption_pair=True,
    audited=True,
)
