"""ARO's COCO-Order and Flickr30k-Order, built from any captioned image set (Yuksekgonul et al.
2023; ARO ships no files for them: its `dataset_zoo/aro_datasets.py` builds them).

As ARO builds them: every caption of every image becomes one `retrieval` item whose options are
the caption and its four word-order perturbations (`data.word_order`, in ARO's order: nouns and
adjectives shuffled, everything else shuffled, words within trigrams, trigrams), each passed
through ARO's `pre_caption` (lower case, the characters ``.!"()*#:;~`` removed, at most 30
words). The true caption is option 0, so chance is one in five. Each seed's perturbations are one
category (``seed 0``...): ARO averages its figures over several seeds, and `./foil metrics`
prints their mean and standard error beside each seed's interval.

Unlike ARO, which keeps every caption, no option repeats the caption: a caption with nothing to
move (too short) is left out of every seed, and a caption one of whose perturbations comes out the
same once punctuation and case are removed is left out of that seed only (each is reported), so
a seed's items do not depend on which other seeds are built.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from foil_studio.data.formats import Parsed
from foil_studio.data.formats.base import json_lines, make_item
from foil_studio.data.reading import BadInputError, check_text, read_json
from foil_studio.data.word_order import PERTURBATIONS, Token, TooShortError, perturbations, words

ORDER_SOURCE = "aro-order"  # the record of `formats.MADE_HERE` its datasets follow
ARO_ORDER = (  # the order of ARO's `perturb_functions`, options 1 to 4 of every item
    "shuffle_nouns_and_adjectives",
    "shuffle_all_but_nouns_and_adjectives",
    "shuffle_within_trigrams",
    "shuffle_trigrams",
)
MAX_WORDS = 30  # ARO's `max_words` for the order sets
assert set(ARO_ORDER) == set(PERTURBATIONS)

Tagger = Callable[[Sequence[str]], list[list[Token]]]


@dataclass(frozen=True)
class Captioned:
    """One caption of one image, with where it was read (file and row, for reports)."""

    image: str
    caption: str
    file: Path
    row: int


def pre_caption(caption: str, max_words: int = MAX_WORDS) -> str:
    """ARO's caption normalisation: lower case, ``.!"()*#:;~`` become spaces, runs of spaces one,
    at most `max_words` words.

    >>> pre_caption("A dog (brown) chases: the CAT!")
    'a dog brown chases the cat'
    """
    caption = re.sub(r"([.!\"()*#:;~])", " ", caption.lower())
    caption = re.sub(r"\s{2,}", " ", caption).rstrip("\n").strip(" ")
    return " ".join(caption.split(" ")[:max_words])


def read_captioned(path: Path) -> list[Captioned]:
    """The captions of a captioned image set: Karpathy's JSON as ARO reads it (a list of
    `{image, caption}`, `caption` a list or one string: `coco_karpathy_test.json`,
    `flickr30k_test.json`), or JSON lines of `{image, caption}`."""
    if path.suffix.lower() == ".jsonl":
        records = list(json_lines(path))
    else:
        document = read_json(path)
        if not isinstance(document, list):
            raise BadInputError(path, None, "expected a list of {image, caption} records (Karpathy's split files)")
        records = list(enumerate(document, start=1))
    found = []
    for row, record in records:
        if not isinstance(record, dict) or not isinstance(record.get("image"), str) or not record["image"].strip():
            raise BadInputError(path, row, "expected an object with 'image' (a path) and 'caption' (text or a list)")
        captions = record.get("caption")
        captions = [captions] if isinstance(captions, str) else captions
        if not isinstance(captions, list) or not captions:
            raise BadInputError(path, row, "'caption' is missing; expected text or a non-empty list of texts")
        for n, caption in enumerate(captions, start=1):
            check_text(caption, path, row, f"caption {n}")
            found.append(Captioned(record["image"].strip(), caption, path, row))
    if not found:
        raise BadInputError(path, None, "holds no captions; expected at least one {image, caption} record")
    return found


def build_order_set(
    captioned: Sequence[Captioned], tagger: Tagger, *, name: str, seeds: Sequence[int], limit: int | None = None
) -> Parsed:
    """The order set's items: per seed (a category), one `retrieval` item per caption (the first
    `limit` captions) that takes every perturbation with that seed. Each caption left out is
    reported once per reason, with the seeds it is left out of."""
    chosen = list(captioned[:limit] if limit else captioned)
    read = list(zip(chosen, tagger([c.caption for c in chosen]), (words(c.caption) for c in chosen)))
    parsed = Parsed(ORDER_SOURCE, name)
    left_out: dict[tuple[int, str], list[int]] = {}
    for seed in seeds:
        for n, (caption, tokens, split) in enumerate(read):
            try:
                parsed.add(
                    _item(caption, _options(caption.caption, tokens, split, seed), seed, n), caption.file, caption.row
                )
            except TooShortError as error:
                left_out.setdefault((n, str(error)), []).append(seed)
    for (n, reason), where in sorted(left_out.items()):
        seeds_named = "every seed" if len(where) == len(seeds) else f"seed {', '.join(map(str, where))}"
        parsed.warn(read[n][0].file, read[n][0].row, f"left out of {seeds_named}: {reason}")
    return parsed


def _options(caption: str, tokens: Sequence[Token], split: Sequence[str], seed: int) -> tuple[str, ...]:
    """The caption and its perturbations in ARO's order, normalised; TooShortError where one
    comes out the same as the caption."""
    shuffled = perturbations(tokens, split, seed)
    options = (pre_caption(caption), *(pre_caption(shuffled[name]) for name in ARO_ORDER))
    same = [name for name, option in zip(ARO_ORDER, options[1:]) if option == options[0]]
    if same:
        raise TooShortError(f"{same[0]}: the same caption once punctuation and case are removed ({options[0]!r})")
    return options


def _item(caption: Captioned, options: tuple[str, ...], seed: int, n: int) -> Any:
    return make_item(
        caption.file,
        caption.row,
        kind="retrieval",
        category=f"seed {seed}",
        source_id=f"{seed}/{n}",
        captions=options,
        images=(caption.image,),
        truth={"correct": 0},
        meta={"seed": seed, "options": ["caption", *ARO_ORDER]},
    )
