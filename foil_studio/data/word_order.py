"""ARO's word-order perturbations (Yuksekgonul et al. 2023, Table 1; COCO-Order and Flickr30k-Order):
from a tagged caption, four captions with the same words in another order.

* ``shuffle_nouns_and_adjectives``: the nouns (Penn tags NN, NNS, NNP, NNPS) move among the nouns'
  positions and the adjectives (JJ, JJR, JJS) among the adjectives'; every other word stays;
* ``shuffle_all_but_nouns_and_adjectives``: every other word moves among its own positions; the
  nouns and adjectives stay;
* ``shuffle_trigrams``: the caption cut into consecutive trigrams (the last may be shorter), whose
  order is shuffled;
* ``shuffle_within_trigrams``: the words shuffled inside each trigram.

The first two read spaCy's tagged tokens; the trigram ones, as in ARO, NLTK's words of the raw
caption (`words`). ARO calls `nltk.word_tokenize`, which splits sentences with the Punkt model (a
download) and applies `NLTKWordTokenizer` to each; here it is applied to the whole caption, which
is one sentence (4 of SugarCrepe's 4,345 COCO captions hold two, where Punkt may cut a trigram
elsewhere). spaCy's tokens differ on runs of spaces (tokens to spaCy), hyphenated words and
quotes (a double quote becomes two backticks or two apostrophes in NLTK's words, as in ARO's options).

As in ARO's code, a perturbation keeps the multiset of words and joins them with spaces. Unlike a
plain shuffle, it never hands back the caption unchanged: where a shuffle happens to restore the
original order, the moved words are rotated by one instead (which changes a sequence unless all its
words are the same); where nothing can move (one noun and no adjective pair, a two-word caption's
single trigram...), `TooShortError` says so and names the perturbation. Tagging is the caller's
(`tag_captions`: spaCy's English tagger, as ARO uses it).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

NOUN_TAGS = frozenset({"NN", "NNS", "NNP", "NNPS"})
ADJECTIVE_TAGS = frozenset({"JJ", "JJR", "JJS"})
SPACY_MODEL = "en_core_web_sm"
INSTALL_HINT = f"no English spaCy model: install one with `python -m spacy download {SPACY_MODEL}`"


@dataclass(frozen=True)
class Token:
    """A word of a caption with its Penn Treebank tag."""

    text: str
    tag: str


class TooShortError(ValueError):
    """A caption offers nothing to move for a perturbation (it would come back unchanged)."""


class TaggerUnavailableError(RuntimeError):
    """spaCy or its English model is not installed; the message is the line that installs it."""


def _moved(words: list[str], positions: Sequence[int], rng: random.Random, what: str) -> list[str]:
    """`words` with the words at `positions` permuted among themselves, never as they were."""
    chosen = [words[i] for i in positions]
    if len(set(chosen)) < 2:
        raise TooShortError(f"{what}: fewer than two different words to move in {' '.join(words)!r}")
    shuffled = chosen[:]
    rng.shuffle(shuffled)
    if shuffled == chosen:
        shuffled = chosen[1:] + chosen[:1]
    result = words[:]
    for i, word in zip(positions, shuffled):
        result[i] = word
    return result


def shuffle_nouns_and_adjectives(tokens: Sequence[Token], rng: random.Random) -> str:
    """Nouns among the nouns' positions, adjectives among the adjectives'.

    >>> tagged = [Token("the", "DT"), Token("red", "JJ"), Token("cup", "NN"), Token("on", "IN"),
    ...           Token("a", "DT"), Token("blue", "JJ"), Token("table", "NN")]
    >>> shuffle_nouns_and_adjectives(tagged, random.Random(0))
    'the blue table on a red cup'
    """
    words = [t.text for t in tokens]
    nouns = [i for i, t in enumerate(tokens) if t.tag in NOUN_TAGS]
    adjectives = [i for i, t in enumerate(tokens) if t.tag in ADJECTIVE_TAGS]
    movable = [group for group in (nouns, adjectives) if len({words[i] for i in group}) > 1]
    if not movable:
        raise TooShortError(
            f"shuffle_nouns_and_adjectives: no two different nouns or adjectives in {' '.join(words)!r}"
        )
    for group in movable:
        words = _moved(words, group, rng, "shuffle_nouns_and_adjectives")
    return " ".join(words)


def shuffle_all_but_nouns_and_adjectives(tokens: Sequence[Token], rng: random.Random) -> str:
    """Every word but the nouns and adjectives, among its own positions."""
    others = [i for i, t in enumerate(tokens) if t.tag not in NOUN_TAGS | ADJECTIVE_TAGS]
    return " ".join(_moved([t.text for t in tokens], others, rng, "shuffle_all_but_nouns_and_adjectives"))


def words(caption: str) -> list[str]:
    """The caption's words as ARO's trigram perturbations read them (`nltk.word_tokenize` on one sentence).

    >>> words('A "stop" sign on a black-and-white pole..')
    ['A', '``', 'stop', "''", 'sign', 'on', 'a', 'black-and-white', 'pole', '..']
    """
    from nltk.tokenize import NLTKWordTokenizer  # here: nltk imports scipy.stats, a second on every `foil` command

    return list(NLTKWordTokenizer().tokenize(caption))


def trigrams(words: Sequence[str]) -> list[list[str]]:
    """Consecutive trigrams, the last one shorter where the length is not a multiple of three.

    >>> trigrams("a b c d e".split())
    [['a', 'b', 'c'], ['d', 'e']]
    """
    return [list(words[i : i + 3]) for i in range(0, len(words), 3)]


def shuffle_trigrams(words: Sequence[str], rng: random.Random) -> str:
    """The trigrams in another order, each kept whole."""
    groups = [" ".join(group) for group in trigrams(words)]
    return " ".join(_moved(groups, range(len(groups)), rng, "shuffle_trigrams"))


def shuffle_within_trigrams(words: Sequence[str], rng: random.Random) -> str:
    """The words of each trigram in another order inside it (a trigram of one repeated word stays)."""
    groups = trigrams(words)
    if not any(len(set(group)) > 1 for group in groups):
        raise TooShortError(f"shuffle_within_trigrams: no trigram with two different words in {groups!r}")
    return " ".join(
        " ".join(_moved(group, range(len(group)), rng, "shuffle_within_trigrams") if len(set(group)) > 1 else group)
        for group in groups
    )


# The perturbations of tagged tokens (spaCy's) and of words (NLTK's), by name.
TAGGED: dict[str, Callable[[Sequence[Token], random.Random], str]] = {
    "shuffle_nouns_and_adjectives": shuffle_nouns_and_adjectives,
    "shuffle_all_but_nouns_and_adjectives": shuffle_all_but_nouns_and_adjectives,
}
WORDS: dict[str, Callable[[Sequence[str], random.Random], str]] = {
    "shuffle_trigrams": shuffle_trigrams,
    "shuffle_within_trigrams": shuffle_within_trigrams,
}
PERTURBATIONS = (*TAGGED, *WORDS)


def perturbations(tokens: Sequence[Token], words: Sequence[str], seed: int) -> dict[str, str]:
    """The caption's four perturbations, from its tagged tokens and its NLTK words (`words(caption)`),
    each from its own generator seeded by `seed`, the caption and the perturbation's name: the same
    seed gives the same captions. TooShortError names the first perturbation the caption cannot take."""
    caption = " ".join(t.text for t in tokens)

    def rng(name: str) -> random.Random:
        return random.Random(f"{seed}:{name}:{caption}")

    return {
        **{name: shuffle(tokens, rng(name)) for name, shuffle in TAGGED.items()},
        **{name: shuffle(words, rng(name)) for name, shuffle in WORDS.items()},
    }


def tag_captions(captions: Sequence[str], model: str = SPACY_MODEL) -> list[list[Token]]:
    """Each caption's tokens with their Penn tags from spaCy's English tagger, as ARO tags them;
    TaggerUnavailableError with the one line that installs a model where none is installed."""
    try:
        import spacy
    except ImportError as error:
        raise TaggerUnavailableError(f"spaCy is not installed: `pip install spacy`, then {INSTALL_HINT}") from error
    try:
        nlp = spacy.load(model, disable=["parser", "ner", "lemmatizer"])
    except OSError as error:
        if model != SPACY_MODEL:
            raise TaggerUnavailableError(f"the spaCy model {model!r} is not installed or not a model folder") from error
        raise TaggerUnavailableError(INSTALL_HINT) from error
    return [[Token(t.text, t.tag_) for t in doc] for doc in nlp.pipe(captions)]
