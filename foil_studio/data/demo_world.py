"""The synthetic compositional world behind the embedded demo.

A scene holds 2-3 coloured shapes of two sizes at known positions. Captions are rendered from
*claims* (object descriptions plus an optional spatial relation), and every claim is evaluated
against the scene graph, so the truth of every caption is known, not assumed:

* ``evaluate(claim, scene)`` is ``"true"``, ``"false"`` or ``"ambiguous"`` (a relation whose
  objects are offset by less than ``CLEAR_OFFSET`` pixels: a careful human could go either way).
* Hard negatives come from the seven SugarCrepe edits of the positive claim (replace / swap /
  add of objects, attributes, relations) and are kept only when they evaluate as intended.
* Hard positives (conjunct order, converse relation, synonyms) evaluate true by construction
  and are checked anyway.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from PIL import Image, ImageDraw

from foil_studio.data.word_order import Token

CANVAS = 128
SHAPES = ("circle", "square", "triangle", "diamond", "cross")
COLOURS = {
    "red": (220, 40, 40),
    "green": (40, 170, 60),
    "blue": (40, 80, 220),
    "yellow": (235, 210, 40),
    "purple": (140, 60, 180),
    "orange": (245, 140, 30),
}
SIZES = {"small": 11, "large": 20}
RELATIONS = ("left of", "right of", "above", "below")
CONVERSE = {"left of": "right of", "right of": "left of", "above": "below", "below": "above"}
CLEAR_OFFSET = 18  # pixels between centres for a relation to be plainly visible
BACKGROUND = (245, 245, 240)
CATEGORIES = ("replace_obj", "replace_att", "replace_rel", "swap_obj", "swap_att", "add_obj", "add_att")

Verdict = Literal["true", "false", "ambiguous"]


@dataclass(frozen=True)
class Thing:
    """One object of a scene."""

    shape: str
    colour: str
    size: str
    x: int
    y: int


@dataclass(frozen=True)
class Desc:
    """How a caption describes an object; None leaves that property unsaid."""

    shape: str
    colour: str | None = None
    size: str | None = None

    def matches(self, thing: Thing) -> bool:
        """Whether `thing` fits this description."""
        return self.shape == thing.shape and self.colour in (None, thing.colour) and self.size in (None, thing.size)


@dataclass(frozen=True)
class Claim:
    """What a caption asserts: these objects exist (distinct), and optionally a relation."""

    objects: tuple[Desc, ...]
    relation: tuple[int, str, int] | None = None


Scene = tuple[Thing, ...]


# --- truth ---------------------------------------------------------------------------------------


def relation_verdict(a: Thing, relation: str, b: Thing) -> Verdict:
    """Whether `a` is `relation` `b`, with an ambiguous band for small offsets."""
    offset = {"left of": b.x - a.x, "right of": a.x - b.x, "above": b.y - a.y, "below": a.y - b.y}[relation]
    if offset >= CLEAR_OFFSET:
        return "true"
    return "ambiguous" if offset > 0 else "false"


def evaluate(claim: Claim, scene: Scene) -> Verdict:
    """The claim's truth in the scene: the best over assignments of distinct objects."""
    best: Verdict = "false"
    for assignment in _assignments(claim.objects, scene, ()):
        verdict: Verdict = "true"
        if claim.relation is not None:
            i, relation, j = claim.relation
            verdict = relation_verdict(assignment[i], relation, assignment[j])
        if verdict == "true":
            return "true"
        if verdict == "ambiguous":
            best = "ambiguous"
    return best


def _assignments(descs: tuple[Desc, ...], scene: Scene, used: tuple[Thing, ...]) -> list[tuple[Thing, ...]]:
    if not descs:
        return [used]
    found = []
    for thing in scene:
        if thing not in used and descs[0].matches(thing):
            found.extend(_assignments(descs[1:], scene, (*used, thing)))
    return found


# --- scenes and drawing ----------------------------------------------------------------------------


def random_scene(rng: random.Random, n_objects: int) -> Scene:
    """Objects with random properties at non-overlapping positions."""
    things: list[Thing] = []
    while len(things) < n_objects:
        size = rng.choice(list(SIZES))
        candidate = Thing(rng.choice(SHAPES), rng.choice(list(COLOURS)), size, 0, 0)
        placed = _place(rng, candidate, things)
        if placed is not None:
            things.append(placed)
    return tuple(things)


def _place(rng: random.Random, thing: Thing, others: list[Thing], tries: int = 200) -> Thing | None:
    radius = SIZES[thing.size]
    for _ in range(tries):
        x, y = rng.randint(radius + 2, CANVAS - radius - 2), rng.randint(radius + 2, CANVAS - radius - 2)
        if all(abs(x - o.x) + abs(y - o.y) > radius + SIZES[o.size] + 8 for o in others):
            return replace(thing, x=x, y=y)
    return None


def realize(claim: Claim, rng: random.Random, tries: int = 500) -> Scene:
    """A fresh scene in which `claim` is plainly true (what a faithful generator would draw)."""
    for _ in range(tries):
        things: list[Thing] = []
        for desc in claim.objects:
            thing = Thing(
                desc.shape, desc.colour or rng.choice(list(COLOURS)), desc.size or rng.choice(list(SIZES)), 0, 0
            )
            placed = _place(rng, thing, things)
            if placed is None:
                break
            things.append(placed)
        scene = tuple(things)
        if len(scene) == len(claim.objects) and evaluate(claim, scene) == "true":
            return scene
    raise RuntimeError(f"could not realize {claim}")


def draw(scene: Scene, size: int = CANVAS) -> Image.Image:
    """Render a scene with Pillow."""
    image = Image.new("RGB", (CANVAS, CANVAS), BACKGROUND)
    pen = ImageDraw.Draw(image)
    for thing in scene:
        _draw_thing(pen, thing)
    return image if size == CANVAS else image.resize((size, size), Image.Resampling.BILINEAR)


def _draw_thing(pen: ImageDraw.ImageDraw, thing: Thing) -> None:
    r, x, y, fill = SIZES[thing.size], thing.x, thing.y, COLOURS[thing.colour]
    if thing.shape == "circle":
        pen.ellipse((x - r, y - r, x + r, y + r), fill=fill)
    elif thing.shape == "square":
        pen.rectangle((x - r, y - r, x + r, y + r), fill=fill)
    elif thing.shape == "triangle":
        pen.polygon([(x, y - r), (x - r, y + r), (x + r, y + r)], fill=fill)
    elif thing.shape == "diamond":
        pen.polygon([(x, y - r), (x + r, y), (x, y + r), (x - r, y)], fill=fill)
    else:  # cross
        w = max(3, r // 3)
        pen.rectangle((x - r, y - w, x + r, y + w), fill=fill)
        pen.rectangle((x - w, y - r, x + w, y + r), fill=fill)


# --- captions ------------------------------------------------------------------------------------

SYNONYMS = {
    "large": "big",
    "small": "little",
    "left of": "to the left of",
    "right of": "to the right of",
    "square": "box",
}
RELATIONAL_TEMPLATES = ("{a} {rel} {b}", "there is {a} {rel} {b}", "a picture of {a} {rel} {b}")
CONJUNCT_TEMPLATES = ("{list}", "there is {list}", "an image showing {list}")


def describe(desc: Desc, synonyms: bool = False) -> str:
    """`a large red circle`, with the right article."""
    words = [w for w in (desc.size, desc.colour, desc.shape) if w]
    if synonyms:
        words = [SYNONYMS.get(w, w) for w in words]
    phrase = " ".join(words)
    return ("an " if phrase[0] in "aeiou" else "a ") + phrase


def render(claim: Claim, template: int = 0, synonyms: bool = False) -> str:
    """The caption text of a claim; `template` picks the sentence frame."""
    names = [describe(d, synonyms) for d in claim.objects]
    if claim.relation is not None:
        i, relation, j = claim.relation
        rel = SYNONYMS.get(relation, relation) if synonyms else relation
        frame = RELATIONAL_TEMPLATES[template % len(RELATIONAL_TEMPLATES)]
        return frame.format(a=names[i], rel=rel, b=names[j])
    listing = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return CONJUNCT_TEMPLATES[template % len(CONJUNCT_TEMPLATES)].format(list=listing)


# --- positive claims and the seven edits ------------------------------------------------------------


def positive_claim(category: str, scene: Scene, rng: random.Random) -> Claim | None:
    """A true claim about the scene shaped so that the category's edit applies, or None."""
    pair = rng.sample(scene, 2)
    descs = tuple(Desc(t.shape, t.colour, rng.choice([None, t.size])) for t in pair)
    if category in ("replace_rel", "swap_obj", "swap_att") or (
        category in ("replace_obj", "replace_att") and rng.random() < 0.5
    ):
        relation = next((r for r in RELATIONS if relation_verdict(pair[0], r, pair[1]) == "true"), None)
        if relation is None:
            return None
        return Claim(descs, (0, relation, 1))
    if category == "add_att":
        descs = (descs[0], Desc(pair[1].shape))
    return Claim(descs)


def edits(category: str, claim: Claim) -> list[Claim]:
    """Every claim one SugarCrepe-style edit of `category` away from `claim`."""
    objs = claim.objects
    if category == "replace_obj":
        return [_with(claim, i, replace(d, shape=s)) for i, d in enumerate(objs) for s in SHAPES if s != d.shape]
    if category == "replace_att":
        return [
            _with(claim, i, replace(d, colour=c))
            for i, d in enumerate(objs)
            if d.colour
            for c in COLOURS
            if c != d.colour
        ]
    if category == "replace_rel" and claim.relation:
        i, relation, j = claim.relation
        return [replace(claim, relation=(i, r, j)) for r in RELATIONS if r != relation]
    if category == "swap_obj" and len(objs) >= 2 and objs[0].shape != objs[1].shape:
        return [_with(_with(claim, 0, replace(objs[0], shape=objs[1].shape)), 1, replace(objs[1], shape=objs[0].shape))]
    if (
        category == "swap_att"
        and len(objs) >= 2
        and objs[0].colour
        and objs[1].colour
        and objs[0].colour != objs[1].colour
    ):
        return [
            _with(_with(claim, 0, replace(objs[0], colour=objs[1].colour)), 1, replace(objs[1], colour=objs[0].colour))
        ]
    if category == "add_obj" and claim.relation is None:
        return [Claim((*objs, Desc(s, c))) for s in SHAPES for c in COLOURS]
    if category == "add_att":
        return [_with(claim, i, replace(d, colour=c)) for i, d in enumerate(objs) if d.colour is None for c in COLOURS]
    return []


def _with(claim: Claim, index: int, desc: Desc) -> Claim:
    objects = list(claim.objects)
    objects[index] = desc
    return replace(claim, objects=tuple(objects))


def hard_positive(claim: Claim, rng: random.Random) -> tuple[Claim, bool, str]:
    """A meaning-preserving variant: (claim, render with synonyms, which variant)."""
    if claim.relation is not None and rng.random() < 0.6:
        i, relation, j = claim.relation
        return Claim(claim.objects, (j, CONVERSE[relation], i)), False, "converse"
    if claim.relation is None and len(claim.objects) >= 2 and rng.random() < 0.6:
        return Claim(tuple(reversed(claim.objects))), False, "conjunct_order"
    return claim, True, "synonym"


def corrupt(claim: Claim, rng: random.Random) -> tuple[Claim, str]:
    """What a sloppy text-to-image model draws instead, and its flaw: missing object, wrong colour or relation."""
    options = ["missing_object", "wrong_colour"] + (["wrong_relation"] if claim.relation else [])
    flaw = rng.choice(options)
    if flaw == "missing_object":
        keep = rng.randrange(len(claim.objects))
        return Claim((claim.objects[keep],)), flaw
    if flaw == "wrong_colour":
        i = rng.randrange(len(claim.objects))
        colour = rng.choice([c for c in COLOURS if c != claim.objects[i].colour])
        return _with(claim, i, replace(claim.objects[i], colour=colour)), flaw
    assert claim.relation is not None
    i, relation, j = claim.relation
    return replace(claim, relation=(i, CONVERSE[relation], j)), flaw


# The demo's own part-of-speech lexicon: its captions come from a grammar, so their tags are known
# (ARO's order sets tag real captions with spaCy; the demo needs no model).
DEMO_NOUNS = frozenset({*SHAPES, "box", "picture", "image"})
DEMO_ADJECTIVES = frozenset({*COLOURS, *SIZES, "big", "little"})


def demo_tags(captions: Sequence[str]) -> list[list[Token]]:
    """The demo captions' words with the Penn tag class the perturbations read (NN, JJ, or X for
    any other word), from the grammar's lexicon; punctuation stays on its word.

    >>> [(t.text, t.tag) for t in demo_tags(["a red circle above a square"])[0]]
    [('a', 'X'), ('red', 'JJ'), ('circle', 'NN'), ('above', 'X'), ('a', 'X'), ('square', 'NN')]
    """

    def tag(word: str) -> str:
        bare = word.strip(",.")
        return "NN" if bare in DEMO_NOUNS else "JJ" if bare in DEMO_ADJECTIVES else "X"

    return [[Token(word, tag(word)) for word in caption.split()] for caption in captions]
