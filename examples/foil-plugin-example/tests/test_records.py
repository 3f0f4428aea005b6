"""This package's records pass the generic checks foil's own records pass (foil_studio.plugin_checks)."""

from __future__ import annotations

from foil_plugin_example.colour import save_colours
from foil_plugin_example.eqben import COLOURS, EQBEN
from foil_plugin_example.grammar import TASK_TYPE
from PIL import Image

from foil_studio import plugin_checks
from foil_studio.analysis import scorers
from foil_studio.annotate import task_types
from foil_studio.data import formats


def test_the_records_are_registered():
    assert formats.REGISTRY["eqben"] is EQBEN
    assert task_types.REGISTRY["grammatical_negative"] is TASK_TYPE
    assert scorers.split_family("colour-match:./model") == ("colour-match", "./model")


def test_eqben_reads_back_what_it_writes(tmp_path):
    plugin_checks.check_format(EQBEN, tmp_path)


def test_the_task_keeps_its_buttons_and_layout_on_eqben_items(tmp_path):
    plugin_checks.check_task_type(TASK_TYPE, plugin_checks.source_items(EQBEN, tmp_path))


def test_the_colour_family_scores_the_colour_a_caption_names(tmp_path):
    family = scorers.scorer_family("colour-match")
    plugin_checks.check_scorer_family(family)
    scorer = family.loader()(str(save_colours(tmp_path / "model", COLOURS)), "fp32", "cpu")
    (red,) = scorer.prepare_images([Image.new("RGB", (4, 4), COLOURS["red"])])
    says_red, says_blue, says_none = scorer.prepare_texts(["a red square", "a blue square", "a square"])
    right, wrong, none = scorer.score_pairs([red] * 3, [says_red, says_blue, says_none])
    assert right > wrong > none == -2.0 and abs(right) < 1e-6


def test_every_record_of_the_package_at_once(tmp_path):
    ran = plugin_checks.check_plugin("foil-plugin-example", tmp_path)
    assert ran == ["format eqben", "task type grammatical_negative", "model family colour-match"]
