"""A generated corpus of malformed and odd inputs: every import kind, the store, names.

Each case is written by code into a temporary folder (no binaries in the repository). Each must
end in the named error, with a message naming the file and the row (or the field or limit), and
leave the store byte-for-byte unchanged. A few odd-but-valid inputs (a byte-order mark) must be
accepted. Add a case whenever a new bad input turns up.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import struct
import subprocess
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from foil_studio import cli
from foil_studio.annotate import batches, health
from foil_studio.cli.base import MOST_RESAMPLES, WholeNumber
from foil_studio.data import store
from foil_studio.data.formats import BadInputError
from foil_studio.data.loading import import_path
from tests.conftest import FOIL_CLI, REPO, SMALL_DEMO

SC = {"filename": "a.jpg", "caption": "a red cup", "negative_caption": "a blue cup"}
VALSE = {
    "dataset": "SWiG",
    "image_file": "a.jpg",
    "caption": "a dog chases a cat",
    "foil": "a cat chases a dog",
    "mturk": {"caption": 3, "foil": 0, "other": 0},
}
HP = {"image_id": 1, "true_caption": "a dog on a mat", "false_caption": "a mat on a dog", "image_path": "a.jpg"}
ARO = {
    "image_path": "a.jpg",
    "true_caption": "the dog is on the mat",
    "false_caption": "the mat is on the dog",
    "relation_name": "on",
    "bbox_x": 0,
    "bbox_y": 0,
    "bbox_w": 10,
    "bbox_h": 10,
}
SCPP = {
    "id": 0,
    "filename": "a.jpg",
    "caption": "a dog on a mat",
    "caption2": "a mat under a dog",
    "negative_caption": "a mat on a dog",
}
WINO = {
    "id": 0,
    "image_0": "ex_0_img_0",
    "image_1": "ex_0_img_1",
    "caption_0": "a dog bites a man",
    "caption_1": "a man bites a dog",
    "tag": "Noun",
    "secondary_tag": "",
    "num_main_preds": 1,
    "collapsed_tag": "Object",
}
WHATSUP = {
    "image_path": "data/controlled_images/mug_on_table.jpeg",
    "caption_options": ["A mug on a table", "A mug under a table"],
}
JSONL = {"kind": "pair", "category": "att", "id": "1", "captions": ["a red cup", "a blue cup"], "images": ["a.jpg"]}
RETRIEVAL = {**JSONL, "kind": "retrieval", "captions": ["a red cup", "a blue cup", "a cup red"]}
CANDIDATES = {**JSONL, "kind": "candidates", "captions": ["a red cup"], "images": ["a.jpg", "b.jpg", "c.jpg"]}
CSV_HEADERS = {
    "sugarcrepe-correct": ["filename", "caption", "negative_caption", "type", "subtype", "correct"],
    "bivlc-results": [
        "caption",
        "negative_caption",
        "type",
        "subtype",
        "text_score_i0",
        "text_score_i1",
        "image_score_c0",
        "image_score_c1",
        "text_score",
        "image_score",
        "group_score",
    ],
    "bivlc": ["caption", "negative_caption", "type", "subtype", "image", "negative_image"],
    "bivlc-candidates": [
        "filename",
        "caption",
        "negative_caption",
        "type",
        "subtype",
        "hn_img_0",
        "hn_img_1",
        "hn_img_2",
        "hn_img_3",
    ],
}
CSV_ROWS = {
    "sugarcrepe-correct": ["a.jpg", "a red cup", "a blue cup", "replace", "att", "1"],
    "bivlc-results": ["a red cup", "a blue cup", "replace", "att", *["True"] * 7],
    "bivlc": ["a red cup", "a blue cup", "replace", "att", "a.jpg", "b.jpg"],
    "bivlc-candidates": ["a.jpg", "a red cup", "a blue cup", "replace", "att", "h0.jpg", "h1.jpg", "h2.jpg", "h3.jpg"],
}
CSV_FILES = {
    "sugarcrepe-correct": "SUGARCREPE_CORRECT_m.csv",
    "bivlc-results": "BiVLC_m.csv",
    "bivlc": "bivlc.csv",
    "bivlc-candidates": "BiVLC_negative_imgs.csv",
}
CREPE_HEADER = ["image_id", "caption", "x", "y", "width", "height", "hard_negs"]
CREPE_ROW = ["1", "a dog on a mat", "0", "0", "5", "5", "['a mat on a dog']"]


@dataclass(frozen=True)
class Case:
    """One bad input: how to write it, what to import it as, and what the error must say."""

    name: str
    kind: str
    write: Callable[[Path], Path]
    says: tuple[str, ...]  # substrings the message must hold (besides the file name)
    row: str | None = None  # "row N" expected in the message, when the fault has a row


def csv_text(header: list[str], rows: list[list[str]]) -> str:
    import csv
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


def file_writer(relative: str, payload: str | bytes) -> Callable[[Path], Path]:
    """Write `payload` at `relative` under the case folder; the import reads that folder's entry point."""

    def write(folder: Path) -> Path:
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(payload if isinstance(payload, bytes) else payload.encode("utf-8"))
        return target

    return write


def in_parent(write: Callable[[Path], Path], levels: int) -> Callable[[Path], Path]:
    """Import the folder `levels` above the file written (gpt4v reads a folder of orderings)."""

    def wrapped(folder: Path) -> Path:
        target = write(folder)
        for _ in range(levels):
            target = target.parent
        return target

    return wrapped


def sugarcrepe(records: object | str | bytes, name: str = "add_att.json") -> Callable[[Path], Path]:
    payload = records if isinstance(records, (str, bytes)) else json.dumps(records)
    return file_writer(f"data/{name}", payload)


def hard_positives(rows: object, swapped: object | None = None) -> Callable[[Path], Path]:
    def write(folder: Path) -> Path:
        for sub, payload in (("data", rows), ("swapped_data", rows if swapped is None else swapped)):
            (folder / sub).mkdir(parents=True, exist_ok=True)
            (folder / sub / "x.json").write_text(payload if isinstance(payload, str) else json.dumps(payload))
        return folder

    return write


def jsonl(*records: object) -> Callable[[Path], Path]:
    return file_writer("x.jsonl", "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))


def deep_json(depth: int) -> str:
    return "[" * depth + "]" * depth


def png_header_only(width: int, height: int) -> bytes:
    """A PNG whose header claims width x height (a decompression bomb, written in bytes)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00")) + chunk(b"IEND", b"")


def json_cases() -> list[Case]:
    cases = []
    for kind, build, good in (
        ("sugarcrepe", lambda r: sugarcrepe(r), {"1": SC}),
        (
            "gpt4v",
            lambda r: in_parent(
                file_writer("positive-first/gpt4v-add_att.json", r if isinstance(r, (str, bytes)) else json.dumps(r)), 2
            ),
            {"1": SC},
        ),
        (
            "aro",
            lambda r: file_writer("visual_genome_relation.json", r if isinstance(r, (str, bytes)) else json.dumps(r)),
            [ARO],
        ),
    ):
        cases += [
            Case(f"{kind}-malformed", kind, build('{"1": {"filename": '), ("malformed JSON",), "row 1"),
            Case(f"{kind}-nested-100k", kind, build(deep_json(100_000)), ("nested too deeply", "FOIL_MAX_JSON_DEPTH")),
            Case(f"{kind}-nested-100", kind, build(deep_json(100)), ("JSON nesting depth", "FOIL_MAX_JSON_DEPTH")),
            Case(
                f"{kind}-latin1",
                kind,
                build(
                    json.dumps(good, ensure_ascii=False)
                    .replace("the", "thé")
                    .replace("red", "rouge é")
                    .encode("latin-1")
                ),
                ("not UTF-8",),
            ),
            Case(f"{kind}-binary", kind, build(os.urandom(512) + b"\xff\xfe"), ("not UTF-8",)),
            Case(f"{kind}-empty-object", kind, build({} if kind != "aro" else []), ("no items",)),
            Case(f"{kind}-wrong-top-level", kind, build([SC] if kind != "aro" else {"1": ARO}), ("expected",)),
        ]
    cases += [
        Case(
            "sugarcrepe-folder-named-json",
            "sugarcrepe",
            lambda f: (f / "data" / "add_att.json").mkdir(parents=True) or f / "data",
            ("is a folder",),
        ),
        Case(
            "sugarcrepe-duplicate-id",
            "sugarcrepe",
            sugarcrepe(f'{{"7": {json.dumps(SC)}, "7": {json.dumps(SC)}}}'),
            ("appears twice",),
            "row 7",
        ),
        Case(
            "sugarcrepe-nul-in-caption",
            "sugarcrepe",
            sugarcrepe({"1": {**SC, "caption": "a red\u0000cup"}}),
            ("control character",),
            "row 1",
        ),
        Case(
            "sugarcrepe-bell-in-caption",
            "sugarcrepe",
            sugarcrepe({"1": {**SC, "caption": "a red\u0007cup"}}),
            ("control character",),
            "row 1",
        ),
        Case(
            "sugarcrepe-20mb-caption",
            "sugarcrepe",
            sugarcrepe({"1": {**SC, "caption": "a " * 10_000_000}}),
            ("FOIL_MAX_CAPTION_CHARS", "caption 1"),
            "row 1",
        ),
        Case(
            "sugarcrepe-6k-caption",
            "sugarcrepe",
            sugarcrepe({"1": {**SC, "negative_caption": "b" * 6000}}),
            ("FOIL_MAX_CAPTION_CHARS", "caption 2"),
            "row 1",
        ),
        Case(
            "sugarcrepe-caption-number",
            "sugarcrepe",
            sugarcrepe({"1": {**SC, "caption": 5}}),
            ("missing or empty",),
            "row 1",
        ),
        Case(
            "sugarcrepe-empty-caption",
            "sugarcrepe",
            sugarcrepe({"1": {**SC, "caption": "  "}}),
            ("missing or empty",),
            "row 1",
        ),
        Case(
            "sugarcrepe-missing-field",
            "sugarcrepe",
            sugarcrepe({"1": {"filename": "a.jpg", "caption": "x"}}),
            ("negative_caption",),
            "row 1",
        ),
        Case("sugarcrepe-record-is-list", "sugarcrepe", sugarcrepe({"1": ["a.jpg"]}), ("expected an object",), "row 1"),
        Case(
            "sugarcrepe-image-escapes-root",
            "sugarcrepe",
            sugarcrepe({"1": {**SC, "filename": "../../etc/passwd"}}),
            ("leaves the image root",),
            "row 1",
        ),
        Case(
            "sugarcrepe-absolute-image",
            "sugarcrepe",
            sugarcrepe({"1": {**SC, "filename": "/etc/passwd"}}),
            ("leaves the image root",),
            "row 1",
        ),
        Case(
            "sugarcrepe-empty-folder", "sugarcrepe", lambda f: (f / "data").mkdir() or f / "data", ("no *.json files",)
        ),
        Case("sugarcrepe-no-such-path", "sugarcrepe", lambda f: f / "nowhere", ("no such file",)),
        Case(
            "gpt4v-folder-with-wrong-name",
            "gpt4v",
            file_writer("answers/gpt4v-add_att.json", json.dumps({"1": SC})),
            ("expected a folder named",),
        ),
        Case(
            "gpt4v-duplicate-id",
            "gpt4v",
            in_parent(
                file_writer("negative-first/gpt4v-add_att.json", f'{{"3": {json.dumps(SC)}, "3": {json.dumps(SC)}}}'),
                2,
            ),
            ("appears twice",),
            "row 3",
        ),
        Case(
            "aro-bbox-text", "aro", file_writer("vgr.json", json.dumps([{**ARO, "bbox_x": "left"}])), ("bbox",), "row 1"
        ),
        Case(
            "aro-no-relation",
            "aro",
            file_writer("vgr.json", json.dumps([{k: v for k, v in ARO.items() if k != "relation_name"}])),
            ("relation_name",),
            "row 1",
        ),
        Case(
            "aro-nul-caption",
            "aro",
            file_writer("vgr.json", json.dumps([{**ARO, "false_caption": "x\u0000"}])),
            ("control character",),
            "row 1",
        ),
        Case(
            "valse-votes-as-words",
            "valse",
            file_writer(
                "existence.json", json.dumps({"1": {**VALSE, "mturk": {"caption": "two", "foil": 1, "other": 0}}})
            ),
            ("mturk.caption is 'two'", "whole number"),
            "row 1",
        ),
        Case(
            "valse-votes-missing",
            "valse",
            file_writer("existence.json", json.dumps({"1": {**VALSE, "mturk": {"caption": 2, "foil": 1}}})),
            ("mturk is", "vote counts"),
            "row 1",
        ),
        Case(
            "valse-no-foil",
            "valse",
            file_writer("existence.json", json.dumps({"1": {k: v for k, v in VALSE.items() if k != "foil"}})),
            ("foil",),
            "row 1",
        ),
        Case(
            "valse-list", "valse", file_writer("existence.json", json.dumps([VALSE])), ("expected an object mapping",)
        ),
        Case("hard-positives-misaligned", "hard-positives", hard_positives([HP, HP], [HP]), ("misaligned",)),
        Case(
            "hard-positives-row-mismatch",
            "hard-positives",
            hard_positives([HP], [{**HP, "image_path": "b.jpg"}]),
            ("misaligned",),
            "row 1",
        ),
        Case("hard-positives-not-a-list", "hard-positives", hard_positives({"a": HP}), ("expected a list",)),
        Case("hard-positives-empty", "hard-positives", hard_positives([]), ("no items",)),
        Case(
            "hard-positives-no-swapped",
            "hard-positives",
            file_writer("data/x.json", json.dumps([HP])),
            ("no matching hard-positive file",),
        ),
        Case("hard-positives-deep", "hard-positives", hard_positives(deep_json(5000)), ("nest",)),
        Case(
            "hard-positives-caption-control",
            "hard-positives",
            hard_positives([{**HP, "true_caption": "a\u001bdog"}]),
            ("control character",),
            "row 1",
        ),
        Case(
            "sugarcrepe-pp-object-not-list",
            "sugarcrepe-pp",
            file_writer("swap_obj.json", json.dumps({"0": SCPP})),
            ("expected a list",),
        ),
        Case(
            "sugarcrepe-pp-no-second-positive",
            "sugarcrepe-pp",
            file_writer("swap_obj.json", json.dumps([{k: v for k, v in SCPP.items() if k != "caption2"}])),
            ("caption2",),
            "row 1",
        ),
        Case(
            "sugarcrepe-pp-image-escapes",
            "sugarcrepe-pp",
            file_writer("swap_obj.json", json.dumps([{**SCPP, "filename": "../x.jpg"}])),
            ("leaves the image root",),
            "row 1",
        ),
        Case(
            "winoground-no-tag",
            "winoground",
            file_writer("examples.jsonl", json.dumps({k: v for k, v in WINO.items() if k != "collapsed_tag"}) + "\n"),
            ("collapsed_tag",),
            "row 1",
        ),
        Case(
            "winoground-malformed-line",
            "winoground",
            file_writer("examples.jsonl", json.dumps(WINO) + '\n{"id": '),
            ("malformed JSON",),
            "row 2",
        ),
        Case(
            "winoground-caption-list",
            "winoground",
            file_writer("examples.jsonl", json.dumps({**WINO, "caption_0": ["a"]}) + "\n"),
            ("missing or empty",),
            "row 1",
        ),
        Case(
            "whatsup-unknown-files",
            "whatsup",
            file_writer("spatial.json", json.dumps([WHATSUP])),
            ("no What'sUp file",),
        ),
        Case(
            "whatsup-one-caption",
            "whatsup",
            file_writer("controlled_images_dataset.json", json.dumps([{**WHATSUP, "caption_options": ["A mug"]}])),
            ("caption_options",),
            "row 1",
        ),
        Case(
            "whatsup-image-name",
            "whatsup",
            file_writer("controlled_images_dataset.json", json.dumps([{**WHATSUP, "image_path": "mug.jpeg"}])),
            ("object_preposition_object",),
            "row 1",
        ),
        Case(
            "whatsup-image-two-words",
            "whatsup",
            file_writer("controlled_images_dataset.json", json.dumps([{**WHATSUP, "image_path": "mug_on.jpeg"}])),
            ("object_preposition_object",),
            "row 1",
        ),
        Case(
            "whatsup-no-image-path",
            "whatsup",
            file_writer("controlled_images_dataset.json", json.dumps([WHATSUP, {"caption_options": ["a", "b"]}])),
            ("image_path",),
            "row 2",
        ),
        Case(
            "whatsup-empty-caption-option",
            "whatsup",
            file_writer("controlled_images_dataset.json", json.dumps([{**WHATSUP, "caption_options": ["A mug", " "]}])),
            ("caption 2",),
            "row 1",
        ),
        Case(
            "whatsup-image-escapes",
            "whatsup",
            file_writer(
                "controlled_images_dataset.json",
                json.dumps([WHATSUP, {**WHATSUP, "image_path": "../../etc/mug_on_table.jpeg"}]),
            ),
            ("..",),
            "row 2",
        ),
        Case(
            "whatsup-qa-number-caption",
            "whatsup",
            file_writer(
                "vg_qa_one_obj.json", json.dumps([[1, "A cup on the left", "A cup on the right"], [2, 5, "b"]])
            ),
            ("expected [image_id, right caption, wrong caption]",),
            "row 2",
        ),
        Case(
            "whatsup-qa-empty-right-caption",
            "whatsup",
            file_writer("coco_qa_two_obj.json", json.dumps([[139, "", "A dog below a cat"]])),
            ("expected [image_id, right caption, wrong caption]",),
            "row 1",
        ),
        Case(
            "whatsup-qa-short-row",
            "whatsup",
            file_writer("coco_qa_one_obj.json", json.dumps([[139, "A dog on the left"]])),
            ("expected [image_id, right caption, wrong caption]",),
            "row 1",
        ),
        Case(
            "whatsup-qa-object",
            "whatsup",
            file_writer("vg_qa_two_obj.json", json.dumps({"0": [1, "a", "b"]})),
            ("expected a list",),
        ),
    ]
    return cases


def csv_cases() -> list[Case]:
    cases = []
    for kind, header in CSV_HEADERS.items():
        name, row = CSV_FILES[kind], CSV_ROWS[kind]
        good = csv_text(header, [row])
        cases += [
            Case(
                f"{kind}-latin1",
                kind,
                file_writer(name, good.replace("red", "rouge é").encode("latin-1")),
                ("not UTF-8",),
                "row 2",
            ),
            Case(f"{kind}-binary", kind, file_writer(name, b"\x00\x01\x02\xff" * 200), ("not UTF-8",)),
            Case(f"{kind}-nul-byte", kind, file_writer(name, good.replace("red", "re\x00d")), ("NUL byte",), "row 2"),
            Case(
                f"{kind}-short-row",
                kind,
                file_writer(name, csv_text(header, [row[:-2]])),
                ("fields but the header has",),
                "row 2",
            ),
            Case(
                f"{kind}-long-row",
                kind,
                file_writer(name, csv_text(header, [[*row, "extra"]])),
                ("fields but the header has",),
                "row 2",
            ),
            Case(
                f"{kind}-unterminated-quote",
                kind,
                file_writer(name, good + '"' + ",".join(row)),
                ("fields but the header has",),
                "row 3",
            ),
            Case(
                f"{kind}-header-only", kind, file_writer(name, csv_text(header, [])), ("header but no rows",), "row 2"
            ),
            Case(f"{kind}-empty-file", kind, file_writer(name, ""), ("is empty",), "row 1"),
            Case(
                f"{kind}-missing-column",
                kind,
                file_writer(name, csv_text(header[:-1], [row[:-1]])),
                ("missing column",),
                "row 1",
            ),
            Case(f"{kind}-folder-named-csv", kind, lambda f, n=name: (f / n).mkdir() or f / n, ("is a folder",)),
            Case(
                f"{kind}-huge-field",
                kind,
                file_writer(name, csv_text(header, [[*row[:-1], "x" * 1_100_000]])),
                ("FOIL_MAX_FIELD_CHARS",),
                "row 2",
            ),
            Case(
                f"{kind}-bell-caption",
                kind,
                file_writer(name, good.replace("a red cup", "a red\x07cup")),
                ("control character",),
                "row 2",
            ),
        ]
    cases += [
        Case(
            "sugarcrepe-correct-bad-bool",
            "sugarcrepe-correct",
            file_writer(
                CSV_FILES["sugarcrepe-correct"],
                csv_text(CSV_HEADERS["sugarcrepe-correct"], [[*CSV_ROWS["sugarcrepe-correct"][:-1], "maybe"]]),
            ),
            ("expected True/False",),
            "row 2",
        ),
        Case(
            "bivlc-results-bad-bool",
            "bivlc-results",
            file_writer(
                CSV_FILES["bivlc-results"],
                csv_text(CSV_HEADERS["bivlc-results"], [[*CSV_ROWS["bivlc-results"][:-1], "yes"]]),
            ),
            ("expected True/False",),
            "row 2",
        ),
        Case(
            "bivlc-image-escapes",
            "bivlc",
            file_writer("bivlc.csv", csv_text(CSV_HEADERS["bivlc"], [[*CSV_ROWS["bivlc"][:-1], "../b.jpg"]])),
            ("leaves the image root",),
            "row 2",
        ),
        Case(
            "bivlc-empty-image",
            "bivlc",
            file_writer("bivlc.csv", csv_text(CSV_HEADERS["bivlc"], [[*CSV_ROWS["bivlc"][:-1], " "]])),
            ("image column is empty",),
            "row 2",
        ),
        Case(
            "bivlc-broken-parquet",
            "bivlc",
            file_writer("bivlc.parquet", b"PAR1 not really"),
            ("cannot read as a parquet table",),
        ),
        Case(
            "crepe-bad-list",
            "crepe",
            file_writer(
                "prod_vg_hard_negs_swap_complexity_4.csv", csv_text(CREPE_HEADER, [[*CREPE_ROW[:-1], "a mat"]])
            ),
            ("expected a list of captions",),
            "row 2",
        ),
        Case(
            "crepe-bad-box",
            "crepe",
            file_writer(
                "prod_vg_hard_negs_swap_complexity_4.csv",
                csv_text(CREPE_HEADER, [[*CREPE_ROW[:2], "x", *CREPE_ROW[3:]]]),
            ),
            ("expected numbers",),
            "row 2",
        ),
        Case(
            "crepe-no-files",
            "crepe",
            file_writer("other.csv", csv_text(CREPE_HEADER, [CREPE_ROW])),
            ("no CREPE files",),
        ),
        Case(
            "crepe-latin1",
            "crepe",
            file_writer(
                "prod_vg_hard_negs_swap_complexity_4.csv",
                csv_text(CREPE_HEADER, [CREPE_ROW]).replace("dog", "chien é").encode("latin-1"),
            ),
            ("not UTF-8",),
            "row 2",
        ),
        Case(
            "crepe-header-only",
            "crepe",
            file_writer("prod_vg_hard_negs_swap_complexity_4.csv", csv_text(CREPE_HEADER, [])),
            ("header but no rows",),
            "row 2",
        ),
    ]
    return cases


def jsonl_cases() -> list[Case]:
    return [
        Case(
            "jsonl-meta-string",
            "jsonl",
            jsonl({**JSONL, "meta": "oops"}),
            ("meta is 'oops'", "expected an object"),
            "row 1",
        ),
        Case(
            "jsonl-truth-list",
            "jsonl",
            jsonl({**JSONL, "truth": ["negative", "false"]}),
            ("truth is", "expected an object"),
            "row 1",
        ),
        Case("jsonl-image-number", "jsonl", jsonl({**JSONL, "images": [7]}), ("image 1 is 7",), "row 1"),
        Case(
            "jsonl-caption-number",
            "jsonl",
            jsonl({**JSONL, "captions": ["a red cup", 3]}),
            ("caption 2 is 3",),
            "row 1",
        ),
        Case("jsonl-captions-string", "jsonl", jsonl({**JSONL, "captions": "a red cup"}), ("must be lists",), "row 1"),
        Case("jsonl-unknown-kind", "jsonl", jsonl({**JSONL, "kind": "quad"}), ("unknown item kind",), "row 1"),
        Case("jsonl-wrong-shape", "jsonl", jsonl({**JSONL, "captions": ["a"]}), ("needs 2 captions",), "row 1"),
        Case("jsonl-malformed-line", "jsonl", jsonl(JSONL, '{"kind": '), ("malformed JSON",), "row 2"),
        Case("jsonl-not-object", "jsonl", jsonl([1, 2]), ("expected an object",), "row 1"),
        Case("jsonl-duplicate-key", "jsonl", jsonl('{"kind": "pair", "kind": "triple"}'), ("appears twice",), "row 1"),
        Case("jsonl-nul", "jsonl", jsonl({**JSONL, "captions": ["a\u0000", "b"]}), ("control character",), "row 1"),
        Case("jsonl-deep", "jsonl", jsonl(deep_json(200)), ("nest",), "row 1"),
        Case("jsonl-empty-file", "jsonl", file_writer("x.jsonl", "\n\n"), ("no items",)),
        Case(
            "jsonl-category-control",
            "jsonl",
            jsonl({**JSONL, "category": "a\u0008b"}),
            ("category holds the control character",),
            "row 1",
        ),
        Case("jsonl-binary", "jsonl", file_writer("x.jsonl", os.urandom(300) + b"\xff"), ("not UTF-8",)),
        Case("jsonl-missing", "jsonl", lambda f: f / "absent.jsonl", ("no such file",)),
        # `results`, as `export --format jsonl` writes them: each run's scores become that run again
        Case("jsonl-results-list", "jsonl", jsonl({**JSONL, "results": [0.3]}), ("'results' is list",), "row 1"),
        Case(
            "jsonl-results-run-number",
            "jsonl",
            jsonl({**JSONL, "results": {"clip": 0.3}}),
            ("run 'clip'", "{correct, scores}"),
            "row 1",
        ),
        *[
            Case(
                f"jsonl-results-scores-{name}",
                "jsonl",
                jsonl(JSONL, {**JSONL, "id": "2", "results": {"clip": {"correct": True, "scores": scores}}}),
                ("run 'clip'", "expected 2 finite numbers, as a pair item's scores are"),
                "row 2",
            )
            for name, scores in (
                ("short", [0.3]),
                ("nested", [[0.3, 0.2]]),
                ("text", ["0.3", 0.2]),
                ("bool", [True, 0.2]),
                ("nan", [float("nan"), 0.2]),
                ("infinite", [float("inf"), 0.2]),
            )
        ],
        Case(
            "jsonl-results-group-scores-flat",
            "jsonl",
            jsonl(
                {
                    **JSONL,
                    "kind": "group",
                    "images": ["a.jpg", "b.jpg"],
                    "results": {"clip": {"correct": True, "scores": [0.3, 0.2, 0.1, 0.4]}},
                }
            ),
            ("expected 2 x 2 finite numbers, as a group item's scores are",),
            "row 1",
        ),
        Case(
            "jsonl-results-scores-without-images",
            "jsonl",
            jsonl({**JSONL, "images": [], "results": {"clip": {"correct": True, "scores": [0.3, 0.2]}}}),
            ("an item without images is scored by no run",),
            "row 1",
        ),
        Case(
            "jsonl-results-run-name-too-long",
            "jsonl",
            jsonl({**JSONL, "results": {"r" * 200: {"correct": True, "scores": [0.3, 0.2]}}}),
            ("'results': a run name may have at most 120 characters",),
            "row 1",
        ),
    ]


def hf_parquet(rows: list[dict], name: str = "swap_object-00000-of-00001.parquet") -> Callable[[Path], Path]:
    """A Hub-style parquet shard of `rows` in a folder (the copy `import hf` reads)."""

    def write(folder: Path) -> Path:
        import pyarrow as pa
        import pyarrow.parquet as pq

        (folder / "hf").mkdir(exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows), folder / "hf" / name)
        return folder / "hf"

    return write


def hf_cases() -> list[Case]:
    """Hugging Face copies (`import hf`): folders of the wrong shape, tables of no known benchmark, bad rows."""
    return [
        Case("hf-empty-folder", "hf", lambda f: f, ("holds no dataset_dict.json, state.json or .parquet",)),
        Case("hf-missing", "hf", lambda f: f / "absent", ("no such file or folder",)),
        Case("hf-unknown-columns", "hf", hf_parquet([{"text": "a", "label": 1}]), ("match no known benchmark",)),
        Case("hf-empty-caption", "hf", hf_parquet([{**SCPP, "caption": " "}]), ("missing or empty field",), "row 1"),
        Case("hf-no-image", "hf", hf_parquet([{k: v for k, v in SCPP.items() if k != "filename"}]), ("filename",)),
        Case(
            "hf-bad-dataset-dict",
            "hf",
            file_writer("hf/dataset_dict.json", json.dumps({"splits": ["../etc"]})),
            ("expected {'splits'",),
        ),
        Case(
            "hf-state-without-files",
            "hf",
            in_parent(file_writer("hf/state.json", json.dumps({"_split": "test"})), 1),
            ("'_data_files'",),
        ),
        Case(
            "hf-arrow-garbage",
            "hf",
            in_parent(
                lambda f: (
                    file_writer("hf/state.json", json.dumps({"_data_files": [{"filename": "data.arrow"}]}))(f),
                    file_writer("hf/data.arrow", os.urandom(200))(f),
                )[1],
                1,
            ),
            ("cannot read as an Arrow stream",),
        ),
        Case("hf-parquet-garbage", "hf", file_writer("x.parquet", b"PAR1" + os.urandom(100)), ("cannot read",)),
        Case(
            "hf-split-leaves-the-folder",
            "hf",
            lambda f: (hf_saved(None)(f), file_writer("hf/dataset_dict.json", json.dumps({"splits": [".."]}))(f))[1],
            ("split '..'", "a folder inside"),
        ),
        Case(
            "hf-split-dot",
            "hf",
            lambda f: (hf_saved(None)(f), file_writer("hf/dataset_dict.json", json.dumps({"splits": ["."]}))(f))[1],
            ("split '.'", "a folder inside"),
        ),
        Case("hf-split-object", "hf", hf_saved({"a": 1}), ("_split is {'a': 1} (dict)", "expected text")),
        # layouts the `datasets` library writes that name no category, or one category twice: refused, never guessed
        Case(
            "hf-train-split-without-config",
            "hf",
            hf_written("data/train-00000-of-00001.parquet"),
            ("split 'train' of no named config names no category", "one config per category"),
        ),
        Case(
            "hf-converted-without-config",
            "hf",
            hf_written("default/test/0000.parquet"),
            ("split 'test' of no named config names no category",),
        ),
        Case(
            "hf-converted-split-folder",
            "hf",
            hf_written("replace_att/train/0000.parquet", "hf/replace_att/train"),
            ("the name '0000.parquet' names no split",),
        ),
        Case(
            "hf-file-named-by-no-split",
            "hf",
            hf_written("swap_object.parquet"),
            ("'swap_object.parquet' names no split",),
        ),
        Case(
            "hf-missing-shard",
            "hf",
            hf_written("data/swap_object-00001-of-00002.parquet"),
            ("split 'swap_object' of no named config has shards ['00001-of-00002']", "00000 to 00001 of 00002"),
        ),
        Case(
            "hf-part-splits-of-one-config",
            "hf",
            hf_saved_dict("replace_att", ("test", "train")),
            ("split 'test' of config 'replace_att' and split 'train' of config 'replace_att' would both be category",),
        ),
        Case(
            "hf-image-path-absolute-outside-the-root",  # inside it, an absolute path is taken relative to it
            "hf",
            hf_written("data/swap_object-00000-of-00001.parquet", image="../../outside.png", absolute=True),
            ("image path '/", "outside.png' is outside the image root", "expected paths inside it"),
            "row 1",
        ),
        Case(
            "hf-image-path-up",
            "hf",
            hf_written("data/swap_object-00000-of-00001.parquet", image="../a.png"),
            ("image path '../a.png' leaves the image root",),
            "row 1",
        ),
    ]


def hf_written(relative: str, read: str = "hf", image: str = "", absolute: bool = False) -> Callable[[Path], Path]:
    """One SugarCrepe++ row written by the `datasets` library's to_parquet at `hf/{relative}`; the import reads
    `read`. With `image`, a PNG written at that path (from the `hf` folder) is the row's `Image()` cell: its path
    as to_parquet stores it, as given (from the folder the copy was made in) or `absolute`."""

    def write(folder: Path) -> Path:
        import contextlib

        import datasets

        (folder / "hf").mkdir(exist_ok=True)
        with contextlib.chdir(folder / "hf"):  # the library measures each image file at the path it was given
            if not image:
                part = datasets.Dataset.from_list([SCPP])
            else:
                Path(image).write_bytes(png_header_only(1, 1))
                stored = str(Path(image).resolve()) if absolute else image
                part = datasets.Dataset.from_list([{**SCPP, "image": stored}]).cast_column("image", datasets.Image())
            part.to_parquet(str(folder / "hf" / relative))
        return folder / read

    return write


def hf_saved_dict(config: str, splits: tuple[str, ...]) -> Callable[[Path], Path]:
    """A `DatasetDict` of one SugarCrepe++ row per split, saved by the `datasets` library as `hf/{config}`."""

    def write(folder: Path) -> Path:
        import datasets

        target = folder / "hf" / config
        datasets.DatasetDict({split: datasets.Dataset.from_list([SCPP]) for split in splits}).save_to_disk(str(target))
        return target

    return write


def hf_saved(split: object) -> Callable[[Path], Path]:
    """A `save_to_disk` folder of one SugarCrepe++ row whose state.json names `split` (the folder `hf/split`)."""

    def write(folder: Path) -> Path:
        import pyarrow as pa

        target = folder / "hf" / "split"
        target.mkdir(parents=True, exist_ok=True)
        table = pa.Table.from_pylist([SCPP])
        with pa.ipc.new_stream(str(target / "data.arrow"), table.schema) as writer:
            writer.write_table(table)
        state = {"_data_files": [{"filename": "data.arrow"}], "_split": split}
        (target / "state.json").write_text(json.dumps(state))
        return target

    return write


# Every field read as a number, a count or an id, given a boolean (JSON's true is Python's 1), a
# float where a whole number is meant, and a negative count: (kind, writer of one record, field, what it must say).
def _typed_fields() -> list[tuple[str, Callable[[object], Callable[[Path], Path]], str, bool]]:
    """(kind, writer given the bad value, field named in the message, whether it is a count/id that
    refuses floats and negatives)."""

    def valse(vote: str) -> Callable[[object], Callable[[Path], Path]]:
        return lambda v: file_writer(
            "existence.json", json.dumps({"1": {**VALSE, "mturk": {**VALSE["mturk"], vote: v}}})
        )

    return [
        *[("valse", valse(vote), f"mturk.{vote}", True) for vote in ("caption", "foil", "other")],
        (
            "whatsup",
            lambda v: file_writer("coco_qa_one_obj.json", json.dumps([[v, "A dog on the left", "A dog on the right"]])),
            "image id",
            True,
        ),
        ("aro", lambda v: file_writer("vgr.json", json.dumps([{**ARO, "image_id": v}])), "image_id", True),
        *[
            ("aro", lambda v, k=k: file_writer("vgr.json", json.dumps([{**ARO, k: v}])), k, False)
            for k in ("bbox_x", "bbox_y", "bbox_w", "bbox_h")
        ],
        ("hard-positives", lambda v: hard_positives([{**HP, "image_id": v}]), "image_id", True),
        ("sugarcrepe-pp", lambda v: file_writer("swap_obj.json", json.dumps([{**SCPP, "id": v}])), "id", True),
        ("winoground", lambda v: file_writer("examples.jsonl", json.dumps({**WINO, "id": v}) + "\n"), "id", True),
        ("winoground", winoground_preds, "num_main_preds", True),
        ("jsonl", lambda v: jsonl({**JSONL, "id": v}), "id", True),
        ("jsonl", lambda v: jsonl({**RETRIEVAL, "truth": {"correct": v}}), "truth.correct", True),
        ("jsonl", lambda v: jsonl({**CANDIDATES, "truth": {"best": v}}), "truth.best", True),
    ]


def winoground_preds(value: object) -> Callable[[Path], Path]:
    return file_writer("examples.jsonl", json.dumps({**WINO, "num_main_preds": value}) + "\n")


def typed_cases() -> list[Case]:
    cases = []
    for kind, write, field, whole in _typed_fields():
        bad: list[tuple[str, object]] = [("boolean", True), ("false", False)] + (
            [("float", 2.5), ("negative", -1)] if whole else [("text", "3")]
        )
        for label, value in bad:
            cases.append(Case(f"{kind}-{field}-{label}", kind, write(value), (f"{field} is {value!r}",), "row 1"))
    cases += [
        Case(
            "sugarcrepe-caption-boolean",
            "sugarcrepe",
            sugarcrepe({"1": {**SC, "caption": True}}),
            ("missing or empty",),
            "row 1",
        ),
        Case(
            "jsonl-caption-boolean",
            "jsonl",
            jsonl({**JSONL, "captions": ["a red cup", True]}),
            ("caption 2 is True",),
            "row 1",
        ),
        Case("winoground-num_main_preds-1.5", "winoground", winoground_preds(1.5), ("num_main_preds is 1.5",), "row 1"),
        Case(
            "winoground-num_main_preds-word",
            "winoground",
            winoground_preds("one"),
            ("num_main_preds is 'one'", "whole number"),
            "row 1",
        ),
        Case(
            "jsonl-truth.correct-out-of-range",
            "jsonl",
            jsonl({**RETRIEVAL, "truth": {"correct": 9}}),
            ("truth.correct is 9", "from 0 to 2"),
            "row 1",
        ),
        Case(
            "jsonl-truth.best-out-of-range",
            "jsonl",
            jsonl({**CANDIDATES, "truth": {"best": 7}}),
            ("truth.best is 7", "from 0 to 2"),
            "row 1",
        ),
        *[
            Case(
                f"aro-{k}-negative",
                "aro",
                file_writer("vgr.json", json.dumps([{**ARO, k: -5}])),
                (f"{k} is -5", "0 or more"),
                "row 1",
            )
            for k in ("bbox_w", "bbox_h")
        ],
        Case(
            "winoground-image-boolean",
            "winoground",
            file_writer("examples.jsonl", json.dumps({**WINO, "image_0": True}) + "\n"),
            ("missing or empty",),
            "row 1",
        ),
    ]
    return cases


CASES = json_cases() + csv_cases() + jsonl_cases() + typed_cases() + hf_cases()


@pytest.fixture
def seeded_store(tmp_path):
    """A store file holding one small dataset, closed (its bytes are the reference)."""
    source = tmp_path / "seed.jsonl"
    source.write_text(json.dumps(JSONL) + "\n")
    path = tmp_path / "foil.db"
    db = store.open_db(path)
    import_path(db, "jsonl", source, name="seed")
    db.conn.close()
    return path


def digest(path: Path) -> str:
    """The store's bytes, with its write-ahead log if one is left."""
    parts = [path.read_bytes()] + [Path(f"{path}{s}").read_bytes() for s in ("-wal",) if Path(f"{path}{s}").exists()]
    return hashlib.sha256(b"".join(parts)).hexdigest()


def test_the_corpus_is_large():
    assert len(CASES) + len(STORE_CASES) + len(NAME_CASES) + len(COMMAND_CASES) >= 80
    assert len({c.name for c in COMMAND_CASES}) == len(COMMAND_CASES)
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_bad_file_gives_a_clear_error_and_changes_nothing(case, seeded_store, tmp_path):
    folder = tmp_path / "input"
    folder.mkdir()
    target = case.write(folder)
    before = digest(seeded_store)
    db = store.open_db(seeded_store)
    with pytest.raises(BadInputError) as caught:
        import_path(db, case.kind, target, images=folder)
    db.conn.close()
    message = str(caught.value)
    assert str(folder) in message or str(target) in message, message  # names the file
    assert all(part in message for part in case.says), message
    if case.row:
        assert f"{case.row}:" in message, message
    assert "Traceback" not in message
    assert digest(seeded_store) == before


# --- images ------------------------------------------------------------------------------------


def test_an_image_bomb_is_not_decoded_and_the_import_says_why(tmp_path):
    images = tmp_path / "images"
    images.mkdir()
    (images / "a.jpg").write_bytes(png_header_only(30_000, 30_000))
    data = sugarcrepe({"1": SC})(tmp_path)
    report = import_path(store.open_db(tmp_path / "foil.db"), "sugarcrepe", data.parent, images=images)
    assert report.missing_images == 1
    warning = next(w for w in report.warnings if w["file"] == "a.jpg")
    assert "900,000,000 pixels" in warning["message"] and "FOIL_MAX_IMAGE_PIXELS" in warning["message"]


def test_a_symlink_loop_as_an_image_is_a_clear_error(tmp_path):
    images = tmp_path / "images"
    images.mkdir()
    (images / "a.jpg").symlink_to(images / "b.jpg")
    (images / "b.jpg").symlink_to(images / "a.jpg")
    data = sugarcrepe({"1": SC})(tmp_path)
    with pytest.raises(BadInputError, match=r"add_att.json, row 1: image path 'a.jpg' cannot be resolved"):
        import_path(store.open_db(tmp_path / "foil.db"), "sugarcrepe", data.parent, images=images)


# --- odd but valid -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sugarcrepe", "sugarcrepe-correct", "jsonl"])
def test_utf8_with_a_byte_order_mark_is_accepted(kind, tmp_path):
    if kind == "sugarcrepe":
        target = sugarcrepe(b"\xef\xbb\xbf" + json.dumps({"1": SC}).encode())(tmp_path).parent
    elif kind == "jsonl":
        target = file_writer("x.jsonl", b"\xef\xbb\xbf" + json.dumps(JSONL).encode() + b"\n")(tmp_path)
    else:
        target = file_writer(CSV_FILES[kind], b"\xef\xbb\xbf" + csv_text(CSV_HEADERS[kind], [CSV_ROWS[kind]]).encode())(
            tmp_path
        )
    report = import_path(store.open_db(tmp_path / "foil.db"), kind, target)
    assert report.n_items == 1


def test_a_whatsup_controlled_image_with_two_captions_is_read_with_its_slot_pair_and_set(tmp_path):
    """Two caption options are enough (the repository's QA files have two; a controlled image
    usually has four); the image name gives the preposition slot, pair and set."""
    target = file_writer("controlled_clevr_dataset.json", json.dumps([WHATSUP]))(tmp_path)
    db = store.open_db(tmp_path / "foil.db")
    assert import_path(db, "whatsup", target).n_items == 1
    [item] = store.list_items(db, store.get_dataset(db, "whatsup")["id"])
    assert item["captions"] == WHATSUP["caption_options"] and item["category"] == "controlled_b"
    assert item["meta"]["preposition"] == "on"
    assert item["meta"]["groups"] == {"pair": "controlled_b/mug/table/on-under", "set": "controlled_b/mug/table"}


def test_limits_are_raised_by_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("FOIL_MAX_CAPTION_CHARS", "10000")
    target = sugarcrepe({"1": {**SC, "negative_caption": "b" * 6000}})(tmp_path).parent
    assert import_path(store.open_db(tmp_path / "foil.db"), "sugarcrepe", target).n_items == 1


# --- the store ------------------------------------------------------------------------------------


def newer_store(path: Path) -> Path:
    db = store.open_db(path)
    db.execute(
        "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'from_the_future', 'x')",
        [store.SCHEMA_VERSION + 1],
    )
    db.conn.commit()
    db.conn.close()
    return path


def truncated_store(path: Path) -> Path:
    db = store.open_db(path)
    db.execute("CREATE TABLE filler (x)")
    db.conn.executemany("INSERT INTO filler VALUES (?)", [("x" * 1000,)] * 200)
    db.conn.commit()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.conn.close()
    payload = path.read_bytes()
    path.write_bytes(payload[:8192])
    return path


def foreign_sqlite(path: Path) -> Path:
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE photos (id INTEGER)")
    connection.commit()
    connection.close()
    return path


def written(payload: bytes) -> Callable[[Path], Path]:
    def write(path: Path) -> Path:
        path.write_bytes(payload)
        return path

    return write


STORE_CASES = {
    "text-file": (written(b"just some notes\n"), "not an SQLite database"),
    "random-bytes": (written(os.urandom(8192)), "not an SQLite database"),
    "a-folder": (lambda p: p.mkdir() or p, "is a folder"),
    "truncated": (truncated_store, "is damaged"),
    "newer-schema": (newer_store, "newer Foil Studio"),
    "foreign-sqlite": (foreign_sqlite, "not a Foil Studio store"),
    "short-header": (written(b"SQLite format 3\x00\x10"), "not an SQLite database"),
}


@pytest.mark.parametrize("case", sorted(STORE_CASES))
def test_a_bad_store_is_refused_in_one_line_and_left_untouched(case, tmp_path):
    make, says = STORE_CASES[case]
    path = make(tmp_path / "store.db")
    before = digest(path) if path.is_file() else None
    with pytest.raises(store.StoreError, match=says) as caught:
        store.open_db(path)
    assert str(path) in str(caught.value)
    assert (digest(path) if path.is_file() else None) == before
    done = subprocess.run(
        [*FOIL_CLI, "datasets", "--db", str(path)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert (
        done.returncode == 1 and done.stderr.count("\n") == 1 and says in done.stderr and "Traceback" not in done.stderr
    )
    assert (digest(path) if path.is_file() else None) == before


# --- names -----------------------------------------------------------------------------------------

NAME_CASES = {
    "empty": "",
    "blank": "   ",
    "newline": "ada\nbob",
    "nul": "ada\x00",
    "escape": "\x1b[31mred",
    "too-long": "a" * 121,
    "tab": "ada\tbob",
    "delete": "ada\x7f",
}


@pytest.mark.parametrize("case", sorted(NAME_CASES))
@pytest.mark.parametrize("where", ["annotator", "batch", "run", "dataset"])
def test_bad_names_are_refused_on_the_way_in(case, where, seeded_store):
    name = NAME_CASES[case]
    if case == "empty" and where in ("batch", "dataset"):
        pytest.skip("an empty batch or dataset name means: choose one for me")
    db = store.open_db(seeded_store)
    before = digest(seeded_store)
    article = "an" if where[0] in "aeiou" else "a"  # "an annotator name", "a batch name"
    with pytest.raises(store.InvalidNameError, match=f"{article} {where} name"):
        if where == "annotator":
            store.ensure_annotator(db, name)
        elif where == "batch":
            batches.create_batch(db, batches.BatchSpec("seed", "validate_negative", ("ada",), 1, name=name))
        elif where == "run":
            store.ensure_run(db, store.get_dataset(db, "seed")["id"], name, run_type="scores")
        else:
            import_path(db, "jsonl", seeded_store.parent / "seed.jsonl", name=name)
    db.conn.close()
    assert digest(seeded_store) == before


# --- command arguments ------------------------------------------------------------------------------

HEALTH = "demo-sugarcrepe"
HEALTH_ITEMS = 7 * SMALL_DEMO.pairs_per_category  # its items in the tests' demo: seven categories of pairs
FIRST_DRAW = 20  # the health sample of the `sampled` store: drawn, nothing answered yet


@dataclass(frozen=True)
class CommandCase:
    """A command given a bad argument, or run out of turn, and what its one line must say."""

    name: str
    argv: tuple[str, ...]
    says: tuple[str, ...]
    sampled: bool = False  # run on a store whose demo-sugarcrepe has a health sample


def health_argv(action: str, *rest: str) -> tuple[str, ...]:
    return ("health", action, HEALTH, *rest)


def past_the_bound_cases() -> list[CommandCase]:
    """Every whole-number argument of every command (the registry the parser is built from), one past
    the bound its --help states (issue 53: every count has one)."""
    cases = []
    for command in cli.COMMANDS:
        words = (*([command.group] if command.group else []), command.name)
        for flags, options in command.arguments:
            kind = options.get("type")
            if isinstance(kind, WholeNumber):
                span = f"from {kind.at_least} to {kind.most}"
                name = "-".join((*words, flags[0].lstrip("-"), "past-its-bound"))
                cases.append(CommandCase(name, (*words, flags[0], str(kind.most + 1)), (flags[0], span)))
    return cases


TWO_NEW = ("--annotators", "hann1", "hann2")
COMMAND_CASES = [
    CommandCase("health-sample-budget-negative", health_argv("sample", "--budget", "-1"), ("--budget", "from 1 to")),
    CommandCase("health-next-budget-negative", health_argv("next", "--budget", "-3"), ("--budget", "from 1 to"), True),
    CommandCase("health-sample-budget-zero", health_argv("sample", "--budget", "0"), ("--budget", "from 1 to")),
    CommandCase("health-next-budget-zero", health_argv("next", "--budget", "0"), ("--budget", "from 1 to"), True),
    CommandCase("health-sample-per-category-zero", health_argv("sample", "--per-category", "0"), ("--per-category",)),
    CommandCase(
        "health-sample-per-category-negative", health_argv("sample", "--per-category", "-2"), ("--per-category",)
    ),
    CommandCase("health-next-per-category-negative", health_argv("next", "--per-category", "-1"), ("--per-category",)),
    CommandCase("serve-port-negative", ("serve", "--port", "-1"), ("--port", "from 1 to 65535")),
    CommandCase("serve-port-too-large", ("serve", "--port", "70000"), ("--port", "from 1 to 65535")),
    CommandCase(
        "health-next-before-a-sample",
        health_argv("next", "--budget", "10"),
        ("draw a health sample first", f"./foil health sample {HEALTH}"),
    ),
    CommandCase(
        "health-sample-budget-over-the-items",
        health_argv("sample", "--budget", "1000"),
        ("budget of 1000", f"only {HEALTH_ITEMS} items"),
    ),
    CommandCase(
        "health-next-budget-over-what-is-left",
        health_argv("next", "--budget", "100000"),
        ("budget of 100000", f"only {HEALTH_ITEMS - FIRST_DRAW} items"),
        True,
    ),
    CommandCase(
        "health-report-unknown-run-before-answers",
        health_argv("report", "--runs", "no-such-run"),
        ("no run named 'no-such-run'",),
        True,
    ),
    CommandCase("health-report-bootstrap-zero", health_argv("report", "--bootstrap", "0"), ("--bootstrap",), True),
    CommandCase("health-report-bootstrap-negative", health_argv("report", "--bootstrap", "-5"), ("--bootstrap",), True),
    CommandCase(
        "health-sample-overlap-over-the-annotators",
        health_argv("sample", "--budget", "10", *TWO_NEW, "--overlap", "3"),
        ("overlap 3", "2 annotators"),
    ),
    *[
        CommandCase(
            f"health-sample-overlap{value}",
            health_argv("sample", "--budget", "10", *TWO_NEW, "--overlap", value),
            ("--overlap", "from 1 to"),
        )
        for value in ("0", "-1")
    ],
    *[
        CommandCase(
            f"health-next-overlap{value}",
            health_argv("next", "--budget", "10", *TWO_NEW, "--overlap", value),
            ("--overlap", "from 1 to"),
            True,
        )
        for value in ("0", "-1", "two")
    ],
    CommandCase(  # the sample asked 3 per item, and `health next` asks as many unless told
        "health-next-sample-overlap-over-the-annotators",
        health_argv("next", "--budget", "10", *TWO_NEW),
        ("overlap 3", "2 annotators"),
        True,
    ),
    *[
        CommandCase(f"items-limit{value}", ("items", HEALTH, "--limit", value), ("--limit", "from 1 to"))
        for value in ("0", "-1", "many")
    ],
    CommandCase(
        "items-unknown-category", ("items", HEALTH, "--category", "no-such"), ("no category 'no-such'", "swap_obj")
    ),
    CommandCase("items-unknown-dataset", ("items", "no-such-dataset"), ("no dataset named 'no-such-dataset'",)),
    CommandCase(
        "health-report-bootstrap-a-billion",  # issue 53: a memory-error traceback
        health_argv("report", "--bootstrap", "1000000000"),
        ("--bootstrap", f"from 1 to {MOST_RESAMPLES}"),
        True,
    ),
    CommandCase("metrics-bootstrap-a-billion", ("metrics", HEALTH, "--bootstrap", "1000000000"), ("--bootstrap",)),
    CommandCase("metrics-seed-negative", ("metrics", HEALTH, "--seed", "-1"), ("--seed", "from 0 to")),
    CommandCase(
        "refine-grid-odd",
        ("refine", HEALTH, "--scorers", "stats", "ngram", "--grid", "3", "--out", "x"),
        ("--grid", "even"),
    ),
    # scoring on a cluster (issue 54): each setting out of bounds, or given without --cluster
    CommandCase(
        "score-actors-zero", ("score", HEALTH, "--model", "ViT-B-32", "--actors", "0"), ("--actors", "from 1 to")
    ),
    CommandCase(
        "score-actor-cpus-zero",
        ("score", HEALTH, "--model", "ViT-B-32", "--actor-cpus", "0"),
        ("--actor-cpus", "from 1"),
    ),
    CommandCase(
        "score-actor-gpus-negative", ("score", HEALTH, "--model", "ViT-B-32", "--actor-gpus", "-1"), ("--actor-gpus",)
    ),
    CommandCase(
        "score-actors-without-a-cluster",
        ("score", HEALTH, "--model", "ViT-B-32", "--actors", "2"),
        ("--actors, --actor-cpus and --actor-gpus are for --cluster",),
    ),
    *past_the_bound_cases(),
]


@pytest.fixture
def command_store(demo_store, tmp_path):
    """A copy of the demo store, with or without a health sample of demo-sugarcrepe."""

    def make(sampled: bool) -> Path:
        path = tmp_path / "foil.db"
        store.open_db(demo_store).conn.execute("VACUUM INTO ?", [str(path)])
        db = store.open_db(path)  # opened once before, as every store a command is given
        if sampled:
            plan = health.plan_sample(db, HEALTH, FIRST_DRAW)
            health.create_sample_batch(db, plan, ("ann-a", "ann-b", "ann-c"), overlap=3, name="health-1")
        db.conn.close()
        return path

    return make


def folder_files(folder: Path) -> dict[str, str]:
    """Every file under `folder` -> a digest of its bytes (SQLite's -wal and -shm aside: `digest` has the log)."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.name.endswith(("-wal", "-shm"))
    }


def run_command(argv: tuple[str, ...], db: Path) -> int:
    """`./foil ARGV --db DB` in this process; its exit code (argparse refuses by SystemExit)."""
    try:
        return cli.main([*argv, "--db", str(db)])
    except SystemExit as done:
        return int(done.code or 0)


@pytest.mark.parametrize("case", COMMAND_CASES, ids=lambda c: c.name)
def test_a_bad_argument_is_refused_in_one_line_before_anything_is_written(case, command_store, capsys):
    path = command_store(case.sampled)
    before = (digest(path), folder_files(path.parent))
    capsys.readouterr()
    code = run_command(case.argv, path)
    shown = capsys.readouterr()
    assert code != 0 and shown.err.count("\n") == 1 and not shown.out, shown
    assert all(part in shown.err for part in case.says) and "Traceback" not in shown.err, shown.err
    assert (digest(path), folder_files(path.parent)) == before


def test_a_hub_id_fails_fast_when_the_hub_cannot_be_reached(tmp_path, monkeypatch):
    """No network here: the Hub's address ($HF_ENDPOINT) is a closed local port."""
    import socket
    import time

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    db = store.open_db(tmp_path / "foil.db")
    started = time.perf_counter()
    with pytest.raises(BadInputError, match="cannot reach the Hub") as caught:
        import_path(db, "hf", Path("no-such-org/no-such-dataset"))
    assert time.perf_counter() - started < 5 and "HF_HUB_OFFLINE=1" in str(caught.value)
    assert store.dataset_names(db) == []


# --- secrets ---------------------------------------------------------------------------------------


def test_a_short_admin_token_is_refused(tmp_path, monkeypatch):
    from foil_studio.annotate import roles

    monkeypatch.setenv("FOIL_ADMIN_TOKEN", "x")
    with pytest.raises(roles.AdminTokenError, match="at least 16"):
        roles.admin_token(tmp_path / "foil.db")
    monkeypatch.setenv("FOIL_ADMIN_TOKEN", "a-long-enough-admin-token")
    assert roles.admin_token(tmp_path / "foil.db") == "a-long-enough-admin-token"


def test_the_generated_admin_token_file_is_private_from_the_start(tmp_path, monkeypatch):
    from foil_studio.annotate import roles

    monkeypatch.delenv("FOIL_ADMIN_TOKEN", raising=False)
    old = os.umask(0)  # even with a permissive umask, the file is never readable by others
    try:
        token = roles.admin_token(tmp_path / "foil.db")
    finally:
        os.umask(old)
    token_file = tmp_path / "foil_files" / "admin_token"
    assert token_file.stat().st_mode & 0o777 == 0o600 and len(token) >= 16
    assert roles.admin_token(tmp_path / "foil.db") == token


# --- captioned image sets (`./foil build aro-order`) -------------------------------------------

# (name, file name, content, what the message must say, the row it names)
CAPTIONED_CASES = [
    ("not-a-list", "k.json", json.dumps({"images": []}), "expected a list of {image, caption}", None),
    ("no-image", "k.json", json.dumps([{"caption": ["a dog"]}]), "expected an object with 'image'", "row 1"),
    ("image-number", "k.json", json.dumps([{"image": 7, "caption": "a dog"}]), "'image' (a path)", "row 1"),
    ("empty-caption-list", "k.json", json.dumps([{"image": "a.jpg", "caption": []}]), "'caption' is missing", "row 1"),
    ("caption-number", "k.json", json.dumps([{"image": "a.jpg", "caption": [3]}]), "caption 1 is 3", "row 1"),
    (
        "caption-control",
        "k.json",
        json.dumps([{"image": "a.jpg", "caption": "a\u0007b"}]),
        "control character",
        "row 1",
    ),
    ("empty-list", "k.json", "[]", "holds no captions", None),
    ("jsonl-malformed", "k.jsonl", '{"image": "a.jpg", "caption": "a b c"}\n{"image": ', "malformed JSON", "row 2"),
    ("binary", "k.json", os.urandom(200) + b"\xff", "not UTF-8", None),
]


@pytest.mark.parametrize("case", CAPTIONED_CASES, ids=lambda c: c[0])
def test_a_bad_captioned_set_is_named_with_its_row_and_nothing_is_built(case, tmp_path):
    from foil_studio.data.order_sets import read_captioned

    _, name, content, says, row = case
    path = file_writer(name, content)(tmp_path)
    with pytest.raises(BadInputError) as caught:
        read_captioned(path)
    message = str(caught.value)
    assert str(path) in message and says in message, message
    if row:
        assert f"{row}:" in message, message


def test_an_order_set_image_outside_its_root_is_refused_and_nothing_stored(tmp_path):
    from foil_studio.data.demo_world import demo_tags
    from foil_studio.data.loading import store_parsed
    from foil_studio.data.order_sets import build_order_set, read_captioned

    path = file_writer("k.json", json.dumps([{"image": "../../etc/passwd", "caption": "a red circle above a square"}]))(
        tmp_path
    )
    parsed = build_order_set(read_captioned(path), demo_tags, name="o", seeds=[0])
    db = store.open_db(tmp_path / "foil.db")
    with pytest.raises(BadInputError, match="row 1: .*leaves"):
        store_parsed(db, parsed, source_format="aro-order", path=str(path), images=tmp_path, name="o")
    assert store.dataset_names(db) == []
