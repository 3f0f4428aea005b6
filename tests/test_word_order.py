"""ARO's word-order perturbations (`data/word_order.py`) against their definitions, on captions
tagged by hand: what moves, what stays, trigram boundaries, seeds, and captions too short."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from foil_studio.data.word_order import (
    ADJECTIVE_TAGS,
    INSTALL_HINT,
    NOUN_TAGS,
    TAGGED,
    WORDS,
    Token,
    TooShortError,
    perturbations,
    shuffle_nouns_and_adjectives,
    tag_captions,
    trigrams,
)
from tests.spacy_support import train_tagger


def tagged(text: str) -> list[Token]:
    """`word/TAG word/TAG ...` as tokens."""
    return [Token(*pair.rsplit("/", 1)) for pair in text.split()]


CAPTIONS = [
    tagged("a/DT small/JJ brown/JJ dog/NN sits/VBZ on/IN the/DT wooden/JJ bench/NN near/IN two/CD kids/NNS"),
    tagged("the/DT man/NN is/VBZ riding/VBG a/DT horse/NN on/IN the/DT beach/NN"),
    tagged("two/CD red/JJ buses/NNS parked/VBN next/RB to/IN a/DT tall/JJ building/NN ./."),
]


@pytest.mark.parametrize("caption", CAPTIONS, ids=lambda c: c[1].text)
@pytest.mark.parametrize("seed", range(20))
def test_every_perturbation_keeps_the_words_and_changes_the_order(caption, seed):
    original = [t.text for t in caption]
    for name, perturbed in perturbations(caption, original, seed).items():
        assert Counter(perturbed.split()) == Counter(original), name
        assert perturbed.split() != original, (name, seed)


@pytest.mark.parametrize("seed", range(20))
def test_nouns_and_adjectives_move_only_among_their_own_positions(seed):
    caption = CAPTIONS[0]
    out = TAGGED["shuffle_nouns_and_adjectives"](caption, random.Random(seed)).split()
    for token, word in zip(caption, out):
        if token.tag in NOUN_TAGS:
            assert word in {t.text for t in caption if t.tag in NOUN_TAGS}
        elif token.tag in ADJECTIVE_TAGS:
            assert word in {t.text for t in caption if t.tag in ADJECTIVE_TAGS}
        else:
            assert word == token.text


@pytest.mark.parametrize("seed", range(20))
def test_everything_but_nouns_and_adjectives_moves_and_they_stay(seed):
    caption = CAPTIONS[0]
    out = TAGGED["shuffle_all_but_nouns_and_adjectives"](caption, random.Random(seed)).split()
    others = Counter(t.text for t in caption if t.tag not in NOUN_TAGS | ADJECTIVE_TAGS)
    moved = Counter(word for token, word in zip(caption, out) if token.tag not in NOUN_TAGS | ADJECTIVE_TAGS)
    assert moved == others
    assert all(word == t.text for t, word in zip(caption, out) if t.tag in NOUN_TAGS | ADJECTIVE_TAGS)


@pytest.mark.parametrize("seed", range(20))
def test_trigram_perturbations_respect_trigram_boundaries(seed):
    caption = CAPTIONS[1]  # 9 words: three whole trigrams
    plain = [t.text for t in caption]
    groups = trigrams(plain)
    out = WORDS["shuffle_trigrams"](plain, random.Random(seed)).split()
    assert sorted(map(tuple, trigrams(out))) == sorted(map(tuple, groups)) and out != plain
    within = WORDS["shuffle_within_trigrams"](plain, random.Random(seed)).split()
    assert [Counter(g) for g in trigrams(within)] == [Counter(g) for g in groups] and within != plain
    eleven = [t.text for t in CAPTIONS[0][:11]]  # its last trigram has two words, shuffled inside its own slot
    inside = WORDS["shuffle_within_trigrams"](eleven, random.Random(seed)).split()
    assert [Counter(g) for g in trigrams(inside)] == [Counter(g) for g in trigrams(eleven)]


def test_captions_too_short_to_perturb_are_reported_not_kept():
    one_noun = tagged("a/DT dog/NN")
    with pytest.raises(TooShortError, match="shuffle_nouns_and_adjectives"):
        TAGGED["shuffle_nouns_and_adjectives"](one_noun, random.Random(0))
    with pytest.raises(TooShortError, match="shuffle_trigrams"):
        WORDS["shuffle_trigrams"](["a", "dog"], random.Random(0))  # a single trigram has nowhere to go
    only_nouns = tagged("dogs/NNS cats/NNS")
    with pytest.raises(TooShortError, match="shuffle_all_but_nouns_and_adjectives"):
        TAGGED["shuffle_all_but_nouns_and_adjectives"](only_nouns, random.Random(0))
    with pytest.raises(TooShortError, match="shuffle_within_trigrams"):
        WORDS["shuffle_within_trigrams"](["buffalo"] * 3, random.Random(0))
    with pytest.raises(TooShortError):
        perturbations(one_noun, ["a", "dog"], seed=0)


def test_the_same_seed_gives_the_same_captions_and_another_seed_others():
    first = [perturbations(c, [t.text for t in c], 3) for c in CAPTIONS]
    assert [perturbations(c, [t.text for t in c], 3) for c in CAPTIONS] == first
    assert [perturbations(c, [t.text for t in c], 4) for c in CAPTIONS] != first


def test_tagging_needs_an_english_model_and_says_how_to_install_one():
    try:
        tokens = tag_captions(["a small dog sits on the wooden bench"])
    except RuntimeError as error:  # no spaCy or no model here: the one line that fixes it
        assert "spacy" in str(error).lower() and ("download" in str(error) or "pip install" in str(error))
        assert INSTALL_HINT.endswith("en_core_web_sm`")
        return
    tags = {t.text: t.tag for t in tokens[0]}  # a real tagger: the nouns and adjectives ARO moves
    assert tags["dog"] in NOUN_TAGS and tags["bench"] in NOUN_TAGS and tags["small"] in ADJECTIVE_TAGS


@pytest.fixture(scope="module")
def spacy_tagger(tmp_path_factory) -> str:
    """spaCy's tagger trained on the hand-tagged captions (`tests/spacy_support.py`)."""
    pytest.importorskip("spacy")
    sentences = [[(t.text, t.tag) for t in caption] for caption in CAPTIONS]
    return train_tagger(sentences, tmp_path_factory.mktemp("spacy") / "tagger")


def test_spacy_tags_the_captions_and_the_perturbations_move_what_it_tagged(spacy_tagger):
    """The spaCy path on real tagging: spaCy tokenizes the raw text ("building." into two tokens)
    and its tagger's Penn tags decide what the perturbations move."""
    texts = [" ".join(t.text for t in caption).replace(" .", ".") for caption in CAPTIONS]
    tagged_by_spacy = tag_captions(texts, model=spacy_tagger)
    assert [[t.text for t in c] for c in tagged_by_spacy] == [[t.text for t in c] for c in CAPTIONS]
    agree = sum(a.tag == b.tag for got, want in zip(tagged_by_spacy, CAPTIONS) for a, b in zip(got, want))
    assert agree / sum(map(len, CAPTIONS)) >= 0.9  # the trained tagger reproduces its training tags
    for tokens in tagged_by_spacy:
        words = [t.text for t in tokens]
        moved = shuffle_nouns_and_adjectives(tokens, random.Random(1)).split()
        fixed = [i for i, t in enumerate(tokens) if t.tag not in NOUN_TAGS | ADJECTIVE_TAGS]
        assert [moved[i] for i in fixed] == [words[i] for i in fixed]
