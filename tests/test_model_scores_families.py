"""The Score form of the Model scores page offers every model family of the registry with the name
it takes, and scores a dataset with one given as a local folder (issue 44's faces: the command, the
API and the page take the same families)."""

from __future__ import annotations

from foil_studio.analysis.scorers import REGISTRY, blip2_itm, family_choices
from foil_studio.data import store
from tests.conftest import APP_ADMIN as ADMIN

PAGE = "views/model_scores.py"


def family_form(app):
    """The page with the Score form switched to the other families, on demo-sugarcrepe."""
    at = app(ADMIN)
    at.switch_page(PAGE).run()
    at.selectbox(key="score_dataset").set_value("demo-sugarcrepe").run()
    at.radio(key="score_source").set_value(next(o for o in at.radio(key="score_source").options if "family" in o))
    return at.run()


def test_family_choices_are_the_registry_s_pair_scorers_with_their_example_names():
    choices = family_choices()
    assert [c.name for c in choices] == [name for name, f in REGISTRY.items() if f.load is not None]
    for choice in choices:
        assert f"{choice.name}:{choice.example}" == REGISTRY[choice.name].example and choice.rule and choice.source
    assert {"blip2-itm", "vqascore"} <= {c.name for c in choices}


def test_the_score_form_lists_every_family_with_its_example_and_rule(app, demo_db):
    at = family_form(app)
    assert not at.exception
    box = at.selectbox(key="score_family")
    assert box.options == [f"{c.name} (e.g. {c.example})" for c in family_choices()]
    for choice in family_choices():
        box.set_value(choice.name).run()
        assert at.text_input(key="score_family_ref").placeholder == choice.example
        said = " ".join(c.value for c in at.caption)
        assert choice.rule.split(" ")[0] in said and choice.source.split(",")[0] in said
    box.set_value("vqascore").run()
    assert at.text_input(key="score_run").placeholder.startswith("vqascore-FOLDER")


def test_scoring_with_a_family_folder_from_the_page_makes_its_run(app, demo_db, tmp_path):
    folder = blip2_itm.tiny_model(tmp_path)
    at = family_form(app)
    at.selectbox(key="score_family").set_value("blip2-itm").run()
    at.text_input(key="score_family_ref").set_value(str(folder)).run()
    at.selectbox(key="score_precision").set_value("fp32").run()
    assert at.text_input(key="score_run").placeholder == "blip2-itm-blip2"
    at.button(key="score_now").click().run()
    assert not at.exception and not at.error
    n_items = store.count_items(demo_db, store.get_dataset(demo_db, "demo-sugarcrepe")["id"])
    assert any(f"Scored {n_items} items as run blip2-itm-blip2" in s.value for s in at.success)
    run = store.get_run(demo_db, "demo-sugarcrepe", "blip2-itm-blip2")
    assert run["meta"]["family"] == "blip2-itm" and run["meta"]["precision"] == "fp32"
    assert at.multiselect(key="scores_runs:demo-sugarcrepe").value == ["blip2-itm-blip2"]


def test_the_family_form_says_what_is_missing_without_a_trace(app, demo_db, tmp_path):
    at = family_form(app)
    at.selectbox(key="score_family").set_value("vqascore").run()
    at.button(key="score_now").click().run()
    assert not at.exception and any("Give a Hugging Face name or a local folder" in e.value for e in at.error)
    at.text_input(key="score_family_ref").set_value(str(tmp_path / "nowhere")).run()
    at.button(key="score_now").click().run()
    assert not at.exception and any("does not exist" in e.value for e in at.error)
    (tmp_path / "empty").mkdir()  # a folder, but no model in it (issue 55: transformers' own message)
    at.selectbox(key="score_family").set_value("blip-itm").run()
    at.text_input(key="score_family_ref").set_value(str(tmp_path / "empty")).run()
    at.button(key="score_now").click().run()
    [said] = [e.value for e in at.error]
    assert not at.exception and "is not a blip-itm model" in said and "made by save_pretrained" in said, said
