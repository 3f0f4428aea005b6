"""A real spaCy pipeline for the tests: a tagger trained on hand-tagged sentences and saved as a
model folder, which `word_order.tag_captions` loads as it loads `en_core_web_sm` (no English
model installs offline)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path


def train_tagger(sentences: Sequence[Sequence[tuple[str, str]]], folder: Path, epochs: int = 40) -> str:
    """Train spaCy's tagger on `(word, Penn tag)` sentences; save it under `folder`; return the path."""
    import spacy
    from spacy.tokens import Doc
    from spacy.training import Example

    nlp = spacy.blank("en")
    tagger = nlp.add_pipe("tagger")
    for sentence in sentences:
        for _, tag in sentence:
            tagger.add_label(tag)
    examples = [
        Example.from_dict(Doc(nlp.vocab, words=[w for w, _ in s]), {"tags": [t for _, t in s]}) for s in sentences
    ]
    optimizer = nlp.initialize(lambda: examples)
    rng = random.Random(0)
    for _ in range(epochs):
        rng.shuffle(examples)
        nlp.update(examples, sgd=optimizer)
    nlp.to_disk(folder)
    return str(folder)
