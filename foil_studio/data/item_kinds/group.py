"""group: two images and two captions, each caption belonging to one image (BiVLC)."""

from foil_studio.data.item_kinds import truth
from foil_studio.data.item_kinds.base import Gap, ItemKind

ITEM_KIND = ItemKind(
    "group",
    images="[I0, I1]",
    captions="[C0, C1]",
    n_captions=2,
    n_images=2,
    caption_roles=lambda n: ["C0 (positive)", "C1 (negative)"],
    image_roles=lambda n: ["I0 (positive)", "I1 (negative)"],
    scores_from=lambda similarity: similarity.tolist(),  # [[s(C0,I0), s(C1,I0)], [s(C0,I1), s(C1,I1)]]
    gaps=(
        Gap("Ipos2T: s(C0,I0) - s(C1,I0)", lambda s: s[:, 0, 0] - s[:, 0, 1]),
        Gap("Ineg2T: s(C1,I1) - s(C0,I1)", lambda s: s[:, 1, 1] - s[:, 1, 0]),
        Gap("Tpos2I: s(C0,I0) - s(C0,I1)", lambda s: s[:, 0, 0] - s[:, 1, 0]),
        Gap("Tneg2I: s(C1,I1) - s(C1,I0)", lambda s: s[:, 1, 1] - s[:, 0, 1]),
    ),
    metric_family="bivlc",
    truth_keys=(truth.NEGATIVE, truth.AMBIGUOUS),
    example={
        "id": 3,
        "kind": "group",
        "captions": ["C0", "C1"],
        "images": ["i0.png", "i1.png"],
        "truth": {"ambiguous": False},
    },
    caption_pair=True,
    audited=True,
)
