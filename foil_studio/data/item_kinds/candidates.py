"""candidates: one caption and several generated images, of which some may show it (BiVLC step 1)."""

from foil_studio.data.item_kinds import truth
from foil_studio.data.item_kinds.base import ItemKind

ITEM_KIND = ItemKind(
    "candidates",
    images="[img_1, ..., img_N]",
    captions="[caption]",
    n_captions=1,
    n_images=None,
    min_images=2,
    caption_roles=lambda n: ["caption"],
    image_roles=lambda n: [f"candidate {chr(ord('A') + i)}" for i in range(n)],
    scores_from=lambda similarity: similarity[:, 0].tolist(),  # s(caption, img_k)
    no_metric_because="candidate-image scores are inspected by people: annotate them with pick_image",
    truth_keys=(truth.BEST, truth.VALID, truth.AMBIGUOUS_CANDIDATES),
    example={
        "id": 4,
        "kind": "candidates",
        "captions": ["neg"],
        "images": ["h0", "h1", "h2", "h3"],
        "truth": {"valid": [False, True, False, True], "best": 1},
    },
)
