"""What the keys of an item's ``truth`` mean, in sentences a newcomer reads on the item's card:
one ``TruthKey`` record per key, listed on the item kinds whose items carry it
(``ItemKind.truth_keys``). Keys a kind does not list are shown as ``key: value``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foil_studio.data.item_kinds.base import Shown, TruthKey


def is_true(value: Any) -> bool:
    """A truth value stored as "true"/"false" (the demo's verdicts) or as a boolean."""
    return str(value).lower() == "true"


def _negative(value: Any, shown: Shown) -> str:
    if is_true(value):
        return "The altered caption is also true of the image: not a valid negative."
    if str(value).lower() == "ambiguous":
        return "Whether the altered caption is true of the image is ambiguous: not a clear negative."
    return "The altered caption is false for the image: a valid negative."


def _negative_verdict(value: Any) -> str:
    """The demo's verdict on its altered caption ("true": also true, so an invalid negative)."""
    return {"true": "invalid", "ambiguous": "ambiguous"}.get(str(value).lower(), "valid")


def _positive_variant(value: Any, shown: Shown) -> str:
    return "The hard positive is " + ("true of the image." if is_true(value) else "false for the image.")


def _ambiguous(value: Any, shown: Shown) -> str:
    if value:
        return "The generated image also fits the positive caption: ambiguous."
    return "The generated image fits only its own caption."


def _correct(value: Any, shown: Shown) -> str:
    """The index of the true caption, said by its role on the card."""
    if isinstance(value, int) and 0 <= value < len(shown.caption_roles):
        return f"The true caption is the {shown.caption_roles[value]} one."
    return f"correct: {value}"


def _best(value: Any, shown: Shown) -> str:
    return "Best candidate: " + ("none." if value is None else f"{chr(ord('A') + int(value))}.")


def on_the_images(value: Any, shown: Shown) -> None:
    """Said on the candidate images instead (`annotate.browse.candidate_marks`)."""


KEPT_WHEN = "(the authors keep it when 2 or more choose the caption)"  # VALSE's rule (`formats.valse.VALID_FOIL_VOTES`)


def crowd_votes_sentence(valid: bool, votes: Mapping[str, int] | None) -> str:
    """VALSE's crowd validation of a foil in words, with its three votes.

    >>> crowd_votes_sentence(True, {"caption": 3, "foil": 0, "other": 0})
    'Crowd validation: 3 of 3 workers chose the caption, 0 the foil, 0 neither: a valid foil
    (the authors keep it when 2 or more choose the caption).'
    """
    verdict = "a valid foil" if valid else "not a valid foil"
    if not votes:
        return f"Crowd validation: {verdict}."
    total = sum(votes.values())
    counts = f"{votes.get('caption', 0)} of {total} workers chose the caption, {votes.get('foil', 0)} the foil"
    return f"Crowd validation: {counts}, {votes.get('other', 0)} neither: {verdict} {KEPT_WHEN}."


NEGATIVE = TruthKey(  # the altered caption's verdict in the image (demo)
    "negative",
    _negative,
    _negative_verdict,
    measures=(("invalid", "known flaw: the altered caption is also true"), ("ambiguous", "known ambiguous negative")),
)
POSITIVE_VARIANT = TruthKey("positive_variant", _positive_variant)  # the hard positive's verdict
AMBIGUOUS = TruthKey("ambiguous", _ambiguous)  # BiVLC: the positive caption fits the generated image too
CORRECT = TruthKey("correct", _correct)  # retrieval: the index of the true caption
BEST = TruthKey("best", _best)  # candidates: the best valid candidate, or None
VALID = TruthKey("valid", on_the_images)  # candidates: which show the caption
AMBIGUOUS_CANDIDATES = TruthKey("ambiguous_candidates", on_the_images)
VALID_FOIL = TruthKey(  # VALSE's authors' crowd rule
    "valid_foil",
    lambda value, shown: crowd_votes_sentence(bool(value), shown.votes),
    lambda value: "valid" if value else "invalid",
    measures=(("invalid+ambiguous", "not valid: fewer than 2 of 3 crowd workers chose the caption"),),
)


def negative_verdict(keys: tuple[TruthKey, ...], truth: Mapping[str, Any]) -> str | None:
    """How the item's source judged its negative ("valid", "invalid", "ambiguous"), from the first
    of `keys` (its kind's truth keys) that judges it and is present; None where the source says nothing.

    >>> negative_verdict((NEGATIVE, VALID_FOIL), {"valid_foil": False}), negative_verdict((NEGATIVE,), {})
    ('invalid', None)
    """
    for key in keys:
        if key.verdict is not None and key.name in truth:
            return key.verdict(truth[key.name])
    return None
