"""SugarCrepe's GPT-4V answers: free-form answers to "which caption, (1) or (2)?", asked with the
positive caption first and with the negative first. Imported as a run of choices; there is no
writer, since these are a model's answers rather than a benchmark (export them with a dataset's
runs as jsonl or parquet).
"""

from __future__ import annotations

import re
from pathlib import Path

from foil_studio.data.formats.base import Format, Parsed, RunSpec, json_files, require_keys
from foil_studio.data.formats.sugarcrepe import SUGARCREPE_FIELDS, sugarcrepe_pair
from foil_studio.data.reading import BadInputError, read_json

GPT4V_ORDERINGS = ("positive-first", "negative-first")
_LEADING_CHOICE = re.compile(r"^\s*(?:output\s*:?\s*)?\(?([12])\)?(?![0-9])", re.IGNORECASE)
_NAMED_OPTION = re.compile(r"\(([12])\)")
_DECLINES = re.compile(r"^\s*(neither|none|i'm sorry|i am sorry|i cannot|i can't|there (is|are) no)", re.IGNORECASE)


def parse_choice(answer: str) -> int | None:
    """The option (1 or 2) a free-form answer picks, or None when it names neither.

    An answer that opens with an option picks it; one that declines ("Neither...", a refusal)
    picks nothing even if it later leans to one; otherwise a single option named in it counts.

    >>> [parse_choice(a) for a in ["(1)", "Output (2).", "2", "The correct caption is (2).", "Neither (1) nor (2)."]]
    [1, 2, 2, 2, None]
    """
    text = answer or ""
    match = _LEADING_CHOICE.match(text)
    if match:
        return int(match.group(1))
    named = set(_NAMED_OPTION.findall(text))
    if _DECLINES.match(text) or len(named) != 1:
        return None
    return int(named.pop())


def parse_gpt4v(path: Path) -> Parsed:
    """SugarCrepe's GPT-4V answers, one ordering folder or a folder holding both."""
    orderings = [o for o in GPT4V_ORDERINGS if (path / o).is_dir()]
    folders = [(o, path / o) for o in orderings] or [(_ordering_of(path), path)]
    parsed = Parsed("sugarcrepe", "sugarcrepe", run=RunSpec("gpt4v", "choices", "gpt-4-vision"))
    for ordering, folder in folders:
        for file in json_files(folder, "gpt4v-*.json"):
            _parse_gpt4v_file(parsed, file, ordering)
    _warn_on_disagreements(parsed)
    return _merge_orderings(parsed)


def _warn_on_disagreements(parsed: Parsed) -> None:
    """Name the answers where our reading differs from the authors' `correct` judgement."""
    for (file, row), outcome in zip(parsed.origins, parsed.outcomes or []):
        answer = next(iter(outcome.values()))
        if answer["reported_correct"] is not None and answer["correct"] != answer["reported_correct"]:
            parsed.warn(
                file,
                row,
                f"answer {answer['answer'][:80]!r} read as choice {answer['choice']}; "
                f"the authors judged it {'correct' if answer['reported_correct'] else 'wrong'}",
            )


def _merge_orderings(parsed: Parsed) -> Parsed:
    """One item per question: the answers under both orderings become one outcome."""
    merged = Parsed(parsed.source_format, parsed.default_name, run=parsed.run, warnings=parsed.warnings)
    position: dict[str, int] = {}
    for item, origin, outcome in zip(parsed.items, parsed.origins, parsed.outcomes or []):
        if item.content_key in position:
            (merged.outcomes or [])[position[item.content_key]].update(outcome)
            continue
        position[item.content_key] = len(merged.items)
        merged.add(item, *origin, dict(outcome))
    return merged


def _ordering_of(folder: Path) -> str:
    if folder.name not in GPT4V_ORDERINGS:
        raise BadInputError(folder, None, f"expected a folder named or holding {list(GPT4V_ORDERINGS)}")
    return folder.name


def _parse_gpt4v_file(parsed: Parsed, file: Path, ordering: str) -> None:
    records = read_json(file)
    if not isinstance(records, dict):
        raise BadInputError(file, None, "expected an object mapping ids to answers")
    category = file.stem.removeprefix("gpt4v-").lower()
    for key, record in records.items():
        if not isinstance(record, dict):
            parsed.warn(file, key, f"skipped non-item key {key!r} (value {record!r})")
            continue
        require_keys(record, SUGARCREPE_FIELDS, file, key)
        answer = record.get("answer", {}).get("free_form_answer", "") if isinstance(record.get("answer"), dict) else ""
        choice = parse_choice(answer)
        positive_option = 1 if ordering == "positive-first" else 2
        outcome = {
            "answer": answer,
            "choice": choice,
            "parsed": choice is not None,
            "correct": choice == positive_option,
            "reported_correct": record.get("correct"),
        }
        item = sugarcrepe_pair(record, category, f"{category}/{key}", file, key)
        parsed.add(item, file, key, {ordering: outcome})


GPT4V = Format(
    "gpt4v",
    "GPT-4V answers in `positive-first/` and `negative-first/`; free-form answers parsed, unparseable ones kept and "
    "counted as wrong",
    "./foil import gpt4v sugar-crepe/gpt4v",
    parse_gpt4v,
)
