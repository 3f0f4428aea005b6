"""What `import hf` rests on, pinned where mutation testing found it unpinned (issue 53): how the
Hub is reached (`data.hub`: its address through a proxy, the offline switch, the error line) and the
refusals of a README's `configs:` section and of a Hub id that fails to load (`formats.hf`)."""

from __future__ import annotations

import pytest

from foil_studio import api
from foil_studio.data import hub
from foil_studio.data.formats import BadInputError


@pytest.mark.parametrize(
    ("environment", "address"),
    [
        ({}, ("huggingface.co", 443)),
        ({"HF_ENDPOINT": "http://mirror.example"}, ("mirror.example", 80)),
        ({"HF_ENDPOINT": "https://mirror.example:8443"}, ("mirror.example", 8443)),
        ({"https_proxy": "http://proxy.example:3128"}, ("proxy.example", 3128)),
        ({"https_proxy": "proxy.example:3128"}, ("proxy.example", 3128)),  # a proxy written without its scheme
        ({"https_proxy": "http://proxy.example:3128", "no_proxy": "huggingface.co"}, ("huggingface.co", 443)),
        ({"HF_ENDPOINT": "http://mirror.example", "http_proxy": "http://proxy.example"}, ("proxy.example", 80)),
    ],
)
def test_the_hub_is_reached_at_its_endpoint_or_through_the_proxy_that_serves_its_scheme(
    monkeypatch, environment, address
):
    for name in ("HF_ENDPOINT", "https_proxy", "http_proxy", "HTTPS_PROXY", "HTTP_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert hub._hub_address() == address


@pytest.mark.parametrize(
    ("value", "offline"), [("1", True), ("on", True), (" yes ", True), ("TRUE", True), ("0", False), ("", False)]
)
def test_the_offline_switch_reads_as_the_hugging_face_libraries_read_it(monkeypatch, value, offline):
    for name in hub.OFFLINE:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(hub.OFFLINE[-1], value)
    assert hub.offline_requested() is offline


def test_an_unreachable_hub_is_said_to_be_unreachable(monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # the discard port: nothing listens
    for name in ("http_proxy", "HTTP_PROXY"):
        monkeypatch.delenv(name, raising=False)
    assert hub.hub_endpoint() == "http://127.0.0.1:9"
    assert hub.hub_reachable(timeout=1) is False


def test_a_hub_that_takes_connections_is_reachable(monkeypatch):
    import socket

    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{listening.getsockname()[1]}")
        for name in ("http_proxy", "HTTP_PROXY"):
            monkeypatch.delenv(name, raising=False)
        assert hub.hub_reachable(timeout=5) is True


def test_the_probe_of_the_hub_gives_up_after_three_seconds_unless_told_otherwise(monkeypatch):
    """A Hub behind a firewall that drops packets would hold `import hf` for the system's own timeout
    (minutes) before it could say the Hub is out of reach."""
    asked = []

    def connect(address, timeout=None):
        asked.append(timeout)
        raise OSError("dropped")

    monkeypatch.setattr(hub.socket, "create_connection", connect)
    assert hub.hub_reachable() is False
    assert hub.hub_reachable(timeout=0.5) is False
    assert asked == [3.0, 0.5]


def test_the_hub_is_huggingface_co_over_https_unless_hf_endpoint_says_otherwise(monkeypatch):
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    assert hub.hub_endpoint() == "https://huggingface.co"  # as messages print it


def test_an_error_line_is_the_first_line_cut_between_words():
    assert hub.error_line(ValueError("")) == "ValueError"
    assert hub.error_line(OSError("first\nsecond")) == "first"
    assert hub.error_line(OSError("a " * 200)) == ("a " * 150).strip() + " ..."
    assert hub.error_line(OSError("x" * 300)) == "x" * 300
    assert hub.error_line(OSError("x" * 299 + " y")) == "x" * 299 + " ..."  # 301 characters: cut at 300


def readme(repo, body: str) -> None:
    repo.mkdir(exist_ok=True)
    (repo / "README.md").write_text(f"---\nconfigs:\n{body}---\n")


def test_a_readme_config_whose_pattern_finds_no_file_is_refused_naming_the_card_the_config_and_split(tmp_path):
    repo = tmp_path / "repo"
    readme(repo, "- config_name: swap_obj\n  data_files:\n  - split: test\n    path: data/swap_obj*.parquet\n")
    with pytest.raises(BadInputError) as refused:
        api.open_store(tmp_path / "foil.db").import_file("hf", repo)
    said = str(refused.value)
    assert str(repo / "README.md") in said
    assert "config 'swap_obj' split 'test': no file matches ['data/swap_obj*.parquet']" in said


def test_a_readme_pattern_that_leaves_the_repository_is_refused_naming_the_file(tmp_path):
    repo = tmp_path / "repo"
    (tmp_path / "elsewhere.parquet").write_bytes(b"PAR1")
    readme(repo, "- config_name: swap_obj\n  data_files: ../elsewhere.parquet\n")
    with pytest.raises(BadInputError) as refused:
        api.open_store(tmp_path / "foil.db").import_file("hf", repo)
    said = str(refused.value)
    assert str(repo / "README.md") in said and "config 'swap_obj'" in said and "is outside" in said
    assert "elsewhere.parquet" in said


def test_a_readme_config_with_data_files_of_no_known_shape_is_refused(tmp_path):
    repo = tmp_path / "repo"
    readme(repo, "- config_name: swap_obj\n  data_files:\n    test: data/x.parquet\n")
    with pytest.raises(BadInputError) as refused:
        api.open_store(tmp_path / "foil.db").import_file("hf", repo)
    assert str(repo / "README.md") in str(refused.value)
    assert "config 'swap_obj': data_files expected a pattern, a list of them, or [{split, path}]" in str(refused.value)


def test_a_hub_id_that_fails_to_load_online_is_one_line_naming_the_id(tmp_path, monkeypatch):
    import datasets

    for name in hub.OFFLINE:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("foil_studio.data.formats.hf.hub_reachable", lambda: True)

    def refuse(path, **_):
        raise ValueError(f"Dataset '{path}' doesn't exist on the Hub\nmore lines of the library")

    monkeypatch.setattr(datasets, "get_dataset_config_names", refuse)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(BadInputError) as refused:
        api.open_store(tmp_path / "foil.db").import_file("hf", "some-org/some-set")
    said = str(refused.value)
    assert said.startswith("some-org/some-set") and "\n" not in said
    assert "could not load from the Hub: Dataset 'some-org/some-set' doesn't exist on the Hub" in said


def test_both_offline_switches_are_named_when_both_are_set(tmp_path, monkeypatch):
    for name in hub.OFFLINE:
        monkeypatch.setenv(name, "1")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(BadInputError) as refused:
        api.open_store(tmp_path / "foil.db").import_file("hf", "no-such-org/no-such-set")
    assert f"the Hub is switched off ({' or '.join(hub.OFFLINE)})" in str(refused.value)
    assert str(refused.value).startswith("no-such-org/no-such-set")


# --- README data_files forms and save_to_disk folders, as `datasets` writes them ---------------------


def scpp_rows(colour: str, n: int = 2) -> dict[str, list]:
    """SugarCrepe++'s columns (its category comes from the config or the file name), images as paths;
    ids apart per colour."""
    first = 100 * len(colour)
    return {
        "id": list(range(first, first + n)),
        "image": [f"coco/{colour}.png"] * n,
        "caption": [f"a {colour} cup {i}" for i in range(n)],
        "caption2": [f"a cup that is {colour} {i}" for i in range(n)],
        "negative_caption": [f"a grey cup {i}" for i in range(n)],
    }


def scpp_part(tmp_path, colour: str, n: int = 2):
    import datasets
    from PIL import Image

    (tmp_path / "coco").mkdir(exist_ok=True)
    Image.new("RGB", (4, 4), colour).save(tmp_path / "coco" / f"{colour}.png")
    return datasets.Dataset.from_dict(scpp_rows(colour, n)).cast_column("image", datasets.Image())


@pytest.mark.parametrize(
    "data_files",
    [
        "data/*.parquet",  # one pattern: the train split
        "\n  - data/red.parquet\n  - data/green.parquet",  # a list of patterns: the train split
        # one split given twice
        "\n  - split: test\n    path: data/red.parquet\n  - split: test\n    path: data/green.parquet",
        "\n  - split: test\n    path:\n    - data/red.parquet\n    - data/green.parquet",  # a split with a list
    ],
    ids=["pattern", "patterns", "split-twice", "split-with-a-list"],
)
def test_each_form_of_a_readme_configs_data_files_reads_every_file_it_names(tmp_path, monkeypatch, data_files):
    monkeypatch.chdir(tmp_path)  # the library stores each image path as it was given
    repo = tmp_path / "repo"
    for colour in ("red", "green"):
        scpp_part(tmp_path, colour).to_parquet(str(repo / "data" / f"{colour}.parquet"))
    readme(repo, f"- config_name: swap_object\n  data_files: {data_files}\n")
    report = api.open_store(tmp_path / "foil.db").import_file("hf", repo, images=tmp_path)
    assert report["n_items"] == 4 and report["by_category"] == {"swap_obj": 4}


def test_a_saved_split_of_several_files_reads_them_all_and_takes_its_config_from_dataset_info(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    saved = tmp_path / "saved"
    part = scpp_part(tmp_path, "red", n=6)
    part.info.config_name = "replace_attribute"  # what load_dataset records for the config it loaded
    part.save_to_disk(str(saved), num_shards=3)
    assert len(list(saved.glob("*.arrow"))) == 3
    report = api.open_store(tmp_path / "foil.db").import_file("hf", saved, images=tmp_path)
    assert report["n_items"] == 6 and report["by_category"] == {"replace_att": 6}


@pytest.mark.parametrize(
    ("document", "said"),
    [
        ({"splits": "test"}, "expected {'splits': [names of split folders]}"),
        ({"splits": ["test", " "]}, "expected {'splits': [names of split folders]}"),
        ({"splits": [".."]}, "'..'"),
        ({"splits": ["a/b"]}, "'a/b'"),
        ({"splits": ["a\\\\b"]}, "is not a"),
    ],
    ids=["not-a-list", "a-blank-name", "parent", "a-path", "a-backslash"],
)
def test_a_dataset_dict_json_that_names_no_split_folders_is_refused_naming_it(tmp_path, document, said):
    import json

    saved = tmp_path / "saved"
    saved.mkdir()
    (saved / "dataset_dict.json").write_text(json.dumps(document))
    with pytest.raises(BadInputError) as refused:
        api.open_store(tmp_path / "foil.db").import_file("hf", saved)
    assert str(saved / "dataset_dict.json") in str(refused.value) and said in str(refused.value)


def test_a_split_folder_without_its_state_or_with_a_bad_one_is_refused_naming_it(tmp_path):
    import json

    saved = tmp_path / "saved"
    (saved / "test").mkdir(parents=True)
    (saved / "dataset_dict.json").write_text(json.dumps({"splits": ["test"]}))
    store_file = tmp_path / "foil.db"
    with pytest.raises(BadInputError) as refused:
        api.open_store(store_file).import_file("hf", saved)
    assert str(saved / "test") in str(refused.value)
    assert "no state.json; expected a split folder written by save_to_disk" in str(refused.value)
    (saved / "test" / "state.json").write_text(json.dumps({"_data_files": [{"name": "x.arrow"}]}))
    with pytest.raises(BadInputError) as refused:
        api.open_store(store_file).import_file("hf", saved)
    assert str(saved / "test" / "state.json") in str(refused.value)
    assert "expected '_data_files': [{'filename': ...}]" in str(refused.value)
