"""Build the embedded demo: six datasets of the synthetic world, with images and ground truth
(their sizes: `DemoConfig`, and docs/demo.md).

=========================  ==========  ====================================================
dataset                    item kind   what it mimics
=========================  ==========  ====================================================
``demo-sugarcrepe``        pair        SugarCrepe's seven categories, with a known share of
                                       false negatives and ambiguous negatives to catch
``demo-hard-positives``    triple      image, caption, hard negative, hard positive
``demo-bivlc``             group       BiVLC: a drawn negative image for each negative
``demo-bivlc-candidates``  candidates  four "generated" images per negative caption, a known
                                       share of them wrong
``demo-crepe``             retrieval   one caption against three hard negatives
``demo-coco-order``        retrieval   ARO's COCO-Order: captions against their word-order
                                       perturbations, one category per seed
=========================  ==========  ====================================================

Every item's ``meta`` holds its scene graph(s) and claims, ``truth`` what they imply.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import sqlite_utils

from foil_studio.data import demo_world as w
from foil_studio.data import order_sets, store
from foil_studio.data.formats import Parsed
from foil_studio.data.formats.made_here import DEMO
from foil_studio.data.items import Item
from foil_studio.data.loading import ImportReport, store_parsed

DEMO_SOURCE = DEMO.name  # the demo's source record (`data.formats.MADE_HERE`)
# The demo dataset holding each item kind (tests and examples find that item kind's items here).
DEMO_DATASETS = {
    "pair": "demo-sugarcrepe",
    "triple": "demo-hard-positives",
    "group": "demo-bivlc",
    "candidates": "demo-bivlc-candidates",
    "retrieval": "demo-crepe",
}
DEMO_ANNOTATORS = ("ada", "ben", "cleo")


@dataclass(frozen=True)
class DemoConfig:
    """Sizes and shares of the demo world; the seed makes it reproducible."""

    seed: int = 7
    pairs_per_category: int = 110
    items_per_image: int = 5
    n_triples: int = 300
    n_groups: int = 300
    n_candidate_sets: int = 200
    n_retrieval: int = 150
    n_order_captions: int = 40  # ARO's order sets: captioned images, each perturbed with every seed
    order_seeds: int = 5
    false_negative_share: float = 0.08
    ambiguous_share: float = 0.05
    wrong_candidate_share: float = 0.35


@dataclass
class DemoSet:
    """One demo dataset: its name, items in order, and the images to write."""

    name: str
    parsed: Parsed
    images: dict[str, w.Scene]


def scene_to_data(scene: w.Scene) -> list[dict[str, Any]]:
    """A scene graph as plain JSON data."""
    return [asdict(thing) for thing in scene]


def scene_from_data(data: list[dict[str, Any]]) -> w.Scene:
    """Inverse of scene_to_data."""
    return tuple(w.Thing(**thing) for thing in data)


def claim_to_data(claim: w.Claim) -> dict[str, Any]:
    """A claim as plain JSON data."""
    return {"objects": [asdict(d) for d in claim.objects], "relation": list(claim.relation) if claim.relation else None}


def claim_from_data(data: dict[str, Any]) -> w.Claim:
    """Inverse of claim_to_data."""
    relation = tuple(data["relation"]) if data["relation"] else None
    return w.Claim(tuple(w.Desc(**d) for d in data["objects"]), relation)  # type: ignore[arg-type]


class _Builder:
    """Collects items and the scenes their images show."""

    def __init__(self, name: str) -> None:
        self.set = DemoSet(name, Parsed(DEMO_SOURCE, name), {})

    def image(self, scene: w.Scene) -> str:
        path = f"{self.set.name}/{len(self.set.images):05d}.png"
        self.set.images[path] = scene
        return path

    def add(self, item: Item) -> None:
        self.set.parsed.add(item, f"demo:{self.set.name}", len(self.set.parsed.items) + 1)


def _positive(rng: random.Random, category: str) -> tuple[w.Scene, w.Claim]:
    while True:
        scene = w.random_scene(rng, rng.choice((2, 3)))
        claim = w.positive_claim(category, scene, rng)
        if claim is not None and w.evaluate(claim, scene) == "true" and w.edits(category, claim):
            return scene, claim


def _edit_with_verdict(
    rng: random.Random, category: str, target: w.Verdict, tries: int = 300
) -> tuple[w.Scene, w.Claim, w.Claim] | None:
    for _ in range(tries):
        scene, claim = _positive(rng, category)
        options = [e for e in w.edits(category, claim) if w.evaluate(e, scene) == target]
        if options:
            return scene, claim, rng.choice(options)
    return None


def _targets(rng: random.Random, n: int, config: DemoConfig) -> list[w.Verdict]:
    n_false_negative = round(n * config.false_negative_share)
    n_ambiguous = round(n * config.ambiguous_share)
    targets: list[w.Verdict] = ["true"] * n_false_negative
    targets += ["ambiguous"] * n_ambiguous
    targets += ["false"] * (n - len(targets))
    rng.shuffle(targets)
    return targets


def build_pairs(rng: random.Random, config: DemoConfig) -> DemoSet:
    """SugarCrepe-style pairs; `truth.negative` is the negative caption's real verdict.

    Like SugarCrepe (7,511 items over 1,560 COCO images), one image serves several categories:
    each scene takes items for up to `items_per_image` categories that still need some, trying
    the rare verdicts (false negatives, ambiguous) first.
    """
    builder = _Builder(DEMO_DATASETS["pair"])
    quotas = {category: Counter(_targets(rng, config.pairs_per_category, config)) for category in w.CATEGORIES}
    misses = Counter[str]()
    while any(sum(q.values()) for q in quotas.values()):
        scene = w.random_scene(rng, rng.choice((2, 3)))
        open_categories = [c for c in w.CATEGORIES if sum(quotas[c].values())]
        rng.shuffle(open_categories)
        image = None
        for category in open_categories[: config.items_per_image]:
            found = _next_pair(rng, scene, category, quotas[category], misses)
            if found is None:
                continue
            claim, negative = found
            image = image or builder.image(scene)
            template = rng.randrange(3)
            builder.add(
                Item(
                    kind="pair",
                    category=category,
                    source_id=f"{category}/{config.pairs_per_category - sum(quotas[category].values()) - 1}",
                    captions=(w.render(claim, template), w.render(negative, template)),
                    images=(image,),
                    truth={"negative": w.evaluate(negative, scene)},
                    meta={"scene": scene_to_data(scene), "claims": [claim_to_data(claim), claim_to_data(negative)]},
                )
            )
    return builder.set


def _next_pair(
    rng: random.Random, scene: w.Scene, category: str, quota: Counter[w.Verdict], misses: Counter[str]
) -> tuple[w.Claim, w.Claim] | None:
    """An item for the category on this scene, rare verdicts first; updates the quota."""
    rare: list[w.Verdict] = [v for v in ("true", "ambiguous") if quota[v]]
    order: list[w.Verdict] = [*rare, "false"] if quota["false"] else rare
    for verdict in order:
        found = _edit_on_scene(rng, scene, category, verdict)
        if found is not None:
            quota[verdict] -= 1
            return found
    for verdict in rare:
        misses[f"{category}:{verdict}"] += 1
        if misses[f"{category}:{verdict}"] > 300:  # out of reach for this category: make it a plain negative
            quota[verdict] -= 1
            quota["false"] += 1
            misses[f"{category}:{verdict}"] = 0
    return None


def _edit_on_scene(
    rng: random.Random, scene: w.Scene, category: str, target: w.Verdict, tries: int = 8
) -> tuple[w.Claim, w.Claim] | None:
    """A true claim about `scene` and an edit of it whose verdict is `target`, if one is found."""
    for _ in range(tries):
        claim = w.positive_claim(category, scene, rng)
        if claim is None or w.evaluate(claim, scene) != "true":
            continue
        options = [e for e in w.edits(category, claim) if w.evaluate(e, scene) == target]
        if options:
            return claim, rng.choice(options)
    return None


def build_triples(rng: random.Random, config: DemoConfig) -> DemoSet:
    """Hard-positive triples (c, c_n, c_p): c_n false and c_p true for the scene."""
    builder = _Builder(DEMO_DATASETS["triple"])
    while len(builder.set.parsed.items) < config.n_triples:
        category = rng.choice(("replace_att", "replace_rel", "swap_att"))
        scene, claim, negative = _edit_with_verdict(rng, category, "false") or (None, None, None)
        if scene is None or claim is None or negative is None:
            continue
        positive, synonyms, variant = w.hard_positive(claim, rng)
        template = rng.randrange(3)
        captions = (w.render(claim, template), w.render(negative, template), w.render(positive, template, synonyms))
        if captions[2] == captions[0]:
            continue
        builder.add(
            Item(
                kind="triple",
                category=category,
                source_id=f"{category}/{len(builder.set.parsed.items)}",
                captions=captions,
                images=(builder.image(scene),),
                truth={"negative": w.evaluate(negative, scene), "positive_variant": w.evaluate(positive, scene)},
                meta={
                    "scene": scene_to_data(scene),
                    "variant": variant,
                    "claims": [claim_to_data(claim), claim_to_data(negative), claim_to_data(positive)],
                },
            )
        )
    return builder.set


def build_groups(rng: random.Random, config: DemoConfig) -> DemoSet:
    """BiVLC-style groups: I1 drawn from the negative claim; `truth.ambiguous` if C0 fits I1 too."""
    builder = _Builder(DEMO_DATASETS["group"])
    for index in range(config.n_groups):
        category = w.CATEGORIES[index % len(w.CATEGORIES)]
        scene, claim, negative = _require(_edit_with_verdict(rng, category, "false"))
        negative_scene = w.realize(negative, rng)
        template = rng.randrange(3)
        type_, subtype = category.split("_")
        builder.add(
            Item(
                kind="group",
                category=category,
                source_id=f"{category}/{index}",
                captions=(w.render(claim, template), w.render(negative, template)),
                images=(builder.image(scene), builder.image(negative_scene)),
                truth={"ambiguous": w.evaluate(claim, negative_scene) != "false"},
                meta={
                    "type": type_,
                    "subtype": subtype,
                    "scenes": [scene_to_data(scene), scene_to_data(negative_scene)],
                    "claims": [claim_to_data(claim), claim_to_data(negative)],
                },
            )
        )
    return builder.set


def build_candidates(rng: random.Random, config: DemoConfig) -> DemoSet:
    """Four candidate images per negative caption; `truth.valid` says which show it all."""
    builder = _Builder(DEMO_DATASETS["candidates"])
    for index in range(config.n_candidate_sets):
        category = w.CATEGORIES[index % len(w.CATEGORIES)]
        scene, claim, negative = _require(_edit_with_verdict(rng, category, "false"))
        scenes: list[w.Scene] = []
        flaws: list[str | None] = []
        for _ in range(4):
            if rng.random() < config.wrong_candidate_share:
                drawn, flaw = w.corrupt(negative, rng)
                scenes.append(w.realize(drawn, rng))
                flaws.append(flaw)
            else:
                scenes.append(w.realize(negative, rng))
                flaws.append(None)
        valid = [w.evaluate(negative, s) == "true" for s in scenes]
        builder.add(
            Item(
                kind="candidates",
                category=category,
                source_id=f"{category}/{index}",
                captions=(w.render(negative, rng.randrange(3)),),
                images=tuple(builder.image(s) for s in scenes),
                truth={
                    "valid": valid,
                    "best": valid.index(True) if any(valid) else None,
                    "ambiguous_candidates": {str(i): w.evaluate(claim, s) != "false" for i, s in enumerate(scenes)},
                },
                meta={
                    "positive_caption": w.render(claim),
                    "source_image": builder.image(scene),
                    "flaws": flaws,
                    "scenes": [scene_to_data(s) for s in scenes],
                    "claims": [claim_to_data(claim), claim_to_data(negative)],
                },
            )
        )
    return builder.set


def build_retrieval(rng: random.Random, config: DemoConfig) -> DemoSet:
    """CREPE-style retrieval sets: one caption against three false hard negatives."""
    builder = _Builder(DEMO_DATASETS["retrieval"])
    families = {"hn_atom": ("replace_obj", "replace_att"), "hn_swap": ("swap_obj", "swap_att", "replace_rel")}
    while len(builder.set.parsed.items) < config.n_retrieval:
        family = rng.choice(list(families))
        scene, claim = _positive(rng, "replace_rel")
        negatives = [e for c in families[family] for e in w.edits(c, claim) if w.evaluate(e, scene) == "false"]
        if len(negatives) < 3:
            continue
        chosen = rng.sample(negatives, 3)
        builder.add(
            Item(
                kind="retrieval",
                category=family,
                source_id=f"{family}/{len(builder.set.parsed.items)}",
                captions=(w.render(claim), *(w.render(n) for n in chosen)),
                images=(builder.image(scene),),
                truth={"correct": 0},
                meta={"scene": scene_to_data(scene), "claims": [claim_to_data(c) for c in (claim, *chosen)]},
            )
        )
    return builder.set


ORDER_SET = "demo-coco-order"


def build_order_set(rng: random.Random, config: DemoConfig) -> DemoSet:
    """ARO's COCO-Order on the demo world's captions (`data.order_sets`), tagged by the world's
    own lexicon; one category per seed."""
    images: dict[str, w.Scene] = {}
    captioned = []
    for n in range(config.n_order_captions):
        scene = w.random_scene(rng, rng.choice((2, 3)))
        claim = None
        while claim is None:
            claim = w.positive_claim(rng.choice(("replace_rel", "replace_att", "add_obj")), scene, rng)
        path = f"{ORDER_SET}/{n:05d}.png"
        images[path] = scene
        caption = w.render(claim, template=rng.randrange(3))
        captioned.append(order_sets.Captioned(path, caption, Path(f"demo:{ORDER_SET}"), n + 1))
    parsed = order_sets.build_order_set(captioned, w.demo_tags, name=ORDER_SET, seeds=range(config.order_seeds))
    return DemoSet(ORDER_SET, parsed, images)


def _require(found: tuple[w.Scene, w.Claim, w.Claim] | None) -> tuple[w.Scene, w.Claim, w.Claim]:
    if found is None:
        raise RuntimeError("the demo world could not produce a required item")
    return found


BUILDERS: tuple[Callable[[random.Random, DemoConfig], DemoSet], ...] = (
    build_pairs,
    build_triples,
    build_groups,
    build_candidates,
    build_retrieval,
    build_order_set,
)


def build_world(config: DemoConfig = DemoConfig()) -> list[DemoSet]:
    """All demo datasets, deterministically from the seed."""
    return [builder(random.Random(f"{config.seed}:{builder.__name__}"), config) for builder in BUILDERS]


def write_images(demo_set: DemoSet, root: Path) -> None:
    """Draw the set's scenes as PNG files under `root`."""
    for relative, scene in demo_set.images.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        w.draw(scene).save(target)


def install_demo(db: sqlite_utils.Database, root: Path, config: DemoConfig = DemoConfig()) -> list[ImportReport]:
    """Build the demo world into the store with its images under `root`; safe to repeat."""
    reports = []
    for demo_set in build_world(config):
        write_images(demo_set, root)
        reports.append(
            store_parsed(
                db,
                demo_set.parsed,
                source_format=DEMO_SOURCE,
                path=f"demo seed {config.seed}",
                images=root,
                name=demo_set.name,
            )
        )
    for name in DEMO_ANNOTATORS:
        store.ensure_annotator(db, name)
    return reports
