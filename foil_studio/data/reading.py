"""The one boundary through which Foil Studio reads files from outside.

Every reader here checks sizes against ``Limits`` (each raisable by an environment variable),
decodes UTF-8 with or without a byte-order mark, refuses NUL and control characters, nesting
deeper than a limit, duplicate ids and empty files, and raises ``BadInputError`` naming the file,
the row (or field) and what was expected. Nothing is written by any of them.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import re
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any


class BadInputError(ValueError):
    """A file cannot be imported; the message names the file, the row and what was expected."""

    def __init__(self, file: Path | str, row: int | str | None, message: str) -> None:
        self.file, self.row, self.message = str(file), row, message
        where = f"{file}" if row is None else f"{file}, row {row}"
        super().__init__(f"{where}: {message}")

    def __reduce__(self) -> tuple[type[BadInputError], tuple[str, int | str | None, str]]:
        """Pickled as its three parts (a reading process hands its error to the importer)."""
        return type(self), (self.file, self.row, self.message)


@dataclass(frozen=True)
class Limits:
    """What one file may hold. Each limit is read from ``FOIL_MAX_<NAME>`` when set."""

    file_bytes: int = 4 * 1024**3  # FOIL_MAX_FILE_BYTES
    caption_chars: int = 5_000  # FOIL_MAX_CAPTION_CHARS: the longest caption or name-like text field
    field_chars: int = 1_000_000  # FOIL_MAX_FIELD_CHARS: the longest CSV field
    json_depth: int = 64  # FOIL_MAX_JSON_DEPTH: nesting of lists and objects
    image_pixels: int = 178_956_970  # FOIL_MAX_IMAGE_PIXELS: width x height (Pillow's own error threshold)

    @staticmethod
    def env_name(name: str) -> str:
        return f"FOIL_MAX_{name.upper()}"


def limits() -> Limits:
    """The limits in force, read from the environment at call time (or those `pinned_limits` keeps
    while a file is read).

    >>> limits().json_depth >= 16
    True
    """
    held: Limits | None = getattr(_pinned, "limits", None)
    return held if held is not None else _limits_from_environment()


@contextlib.contextmanager
def pinned_limits() -> Iterator[Limits]:
    """Keep the limits in force now for the reading of one file (in this thread): read from the
    environment at each row, they took most of a million-line import's time."""
    held: Limits | None = getattr(_pinned, "limits", None)
    if held is not None:  # an enclosing read pinned them
        yield held
        return
    _pinned.limits = now = _limits_from_environment()
    try:
        yield now
    finally:
        _pinned.limits = None


_pinned = threading.local()


def _limits_from_environment() -> Limits:
    values = {}
    for spec in fields(Limits):
        text = os.environ.get(Limits.env_name(spec.name))
        if text:
            try:
                values[spec.name] = int(text.replace("_", ""))
            except ValueError:
                raise BadInputError(Limits.env_name(spec.name), None, f"is {text!r}; expected a whole number") from None
    return Limits(**values)


def over_limit(name: str, value: int, limit: int, what: str) -> str:
    """The message for a limit passed: the value, the limit and how to raise it."""
    return (
        f"{what} is {value:,}, over the limit of {limit:,}; raise it with "
        f"{Limits.env_name(name)}={max(value, limit * 2)}"
    )


# C0 control characters other than tab, line feed and carriage return, and DEL.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def check_binary_file(path: Path) -> None:
    """The checks every file passes before it is read: a file (not a folder), within the size limit."""
    path = Path(path)
    if path.is_dir():
        raise BadInputError(path, None, "is a folder; expected a file")
    try:
        size = path.stat().st_size
    except OSError as error:
        raise BadInputError(
            path, None, f"cannot be read ({error.strerror or error}); expected a readable file"
        ) from None
    if size > limits().file_bytes:
        raise BadInputError(path, None, over_limit("file_bytes", size, limits().file_bytes, "file size in bytes"))


def read_text(path: Path) -> str:
    """A whole text file: `check_binary_file`, then UTF-8 (a BOM is fine) free of NUL bytes."""
    return "".join(line for _, line in read_lines(path))


def read_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, line) of a text file read a line at a time, checked as `read_text` checks the
    whole: memory holds one line, never the file."""
    path = Path(path)
    check_binary_file(path)
    try:
        handle = path.open("rb")
    except OSError as error:
        raise BadInputError(
            path, None, f"cannot be read ({error.strerror or error}); expected a readable file"
        ) from None
    with handle:
        offset = 0
        for number, payload in enumerate(handle, start=1):
            yield number, _decoded(payload, path, number, offset)
            offset += len(payload)


def _decoded(payload: bytes, path: Path, number: int, offset: int) -> str:
    """One line as text: UTF-8 (a BOM at the file's start is dropped) without NUL bytes."""
    try:
        text = payload.decode("utf-8-sig" if offset == 0 else "utf-8")
    except UnicodeDecodeError as error:
        start = offset + error.start
        raise BadInputError(
            path,
            number,
            f"is not UTF-8 text (byte {start}: {payload[error.start : error.start + 1]!r}); save the file as UTF-8",
        ) from None
    if "\x00" in text:
        raise BadInputError(path, number, "holds a NUL byte (a binary file?); expected text")
    return text


def parse_json(text: str, file: Path | str, row: int | str | None = None) -> Any:
    """JSON text as Python values; refuses duplicate keys and nesting deeper than the limit."""
    depth = limits().json_depth
    try:
        value = json.loads(text)
        ends = len(_KEY_END.findall(text))
        # every bracket counted, even in strings: no more of them than the limit means nesting within it
        within_depth = text.count("[") + text.count("{") <= depth
        if within_depth and isinstance(value, dict) and ends == len(value):
            keys, found = ends, 0  # one flat object (a line of JSONL): nothing to walk
        elif within_depth:
            keys, found = _key_count(value), 0  # a scored line of an export: only the keys to count
        else:
            keys, found = _shape(value)
        if ends != keys:  # perhaps a key twice: read again, key by key
            value = json.loads(text, object_pairs_hook=lambda pairs: _unique_keys(pairs, file, row))
    except json.JSONDecodeError as error:
        raise BadInputError(
            file, row if row is not None else error.lineno, f"malformed JSON: {error.msg} (column {error.colno})"
        ) from None
    except RecursionError:
        raise BadInputError(
            file, row, f"JSON nested too deeply to read; the limit is {depth} ({Limits.env_name('json_depth')})"
        ) from None
    if found > depth:
        raise BadInputError(file, row, over_limit("json_depth", found, depth, "JSON nesting depth"))
    return value


# The end of an object's key: its closing quote, then the colon. Every key ends so, and a string
# value only adds to the count; as many ends as keys read means no key came twice (the one-pass
# check with a Python hook per object was most of the time of reading a JSON-lines file).
_KEY_END = re.compile(r'"\s*:')


def read_json(path: Path) -> Any:
    """A JSON file through `read_text` and `parse_json`."""
    return parse_json(read_text(path), path)


def _unique_keys(pairs: list[tuple[str, Any]], file: Path | str, row: int | str | None) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise BadInputError(
                file,
                row if row is not None else key,
                f"the key {key!r} appears twice in one object; "
                "expected unique ids (the second would silently replace the first)",
            )
        result[key] = value
    return result


def _key_count(value: Any) -> int:
    """The keys of all objects in JSON values nested no deeper than the depth limit: recursive, as
    the limit bounds it, in a fifth of `_shape`'s time on a scored export's line."""
    children: Iterable[Any]
    if isinstance(value, dict):
        keys, children = len(value), value.values()
    elif isinstance(value, list):
        keys, children = 0, value
    else:
        return 0
    for child in children:
        if isinstance(child, (dict, list)):
            keys += _key_count(child)
    return keys


def _shape(value: Any) -> tuple[int, int]:
    """(keys of all objects, how deeply lists and objects nest: 0 for a scalar) in JSON values,
    without recursion (only containers are stacked: this runs on every line of a large file)."""
    keys, deepest, stack = 0, 0, [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:
        current, level = stack.pop()
        deepest = max(deepest, level)
        children = current.values() if isinstance(current, dict) else current
        keys += len(current) if isinstance(current, dict) else 0
        stack.extend([(child, level + 1) for child in children if isinstance(child, (dict, list))])
    return keys, deepest


def read_csv_rows(path: Path, required: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    """Yield (row number, row) of a CSV after checking its header; row 1 is the header.

    Rows with fewer or more fields than the header, fields over the limit and unterminated
    quotes are refused with the row; a file with a header and no rows is refused too.
    """
    with pinned_limits():
        yield from _csv_rows(path, required)


def _csv_rows(path: Path, required: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    text = read_text(path)
    csv.field_size_limit(limits().field_chars)
    reader = csv.reader(io.StringIO(text, newline=""))
    header: list[str] | None = None
    number = 1
    try:
        header = next(reader, None)
        if header is None:
            raise BadInputError(path, 1, f"is empty; expected a header row with {list(required)}")
        missing = [c for c in required if c not in header]
        if missing:
            raise BadInputError(path, 1, f"missing column(s) {missing}; expected {list(required)}")
        n_rows, number = 0, 1
        for fields_ in reader:
            if not fields_:
                continue
            number += 1
            if len(fields_) != len(header):
                raise BadInputError(
                    path,
                    number,
                    f"has {len(fields_)} fields but the header has {len(header)} "
                    "(a missing field, an extra comma, or an unterminated quote?)",
                )
            n_rows += 1
            yield number, dict(zip(header, fields_))
    except csv.Error as error:
        message = str(error)
        if "field larger than field limit" in message:
            message = over_limit(
                "field_chars", limits().field_chars + 1, limits().field_chars, "a field's length in characters"
            )
        raise BadInputError(path, number + 1 if header else 1, f"unreadable CSV: {message}") from None
    if n_rows == 0:
        raise BadInputError(path, 2, "has a header but no rows; expected at least one item")


def check_text(value: Any, file: Path | str, row: int | str | None, field: str) -> str:
    """`value` if it is a non-empty string within the caption limit, free of control characters."""
    if not isinstance(value, str):
        raise BadInputError(file, row, f"{field} is {value!r} ({type(value).__name__}); expected text")
    if not value.strip():
        raise BadInputError(file, row, f"{field} is empty; expected text")
    limit = limits().caption_chars
    if len(value) > limit:
        raise BadInputError(
            file, row, over_limit("caption_chars", len(value), limit, f"{field}'s length in characters")
        )
    bad = _CONTROL.search(value)
    if bad:
        raise BadInputError(
            file,
            row,
            f"{field} holds the control character {bad.group()!r} at position {bad.start()}; expected plain text",
        )
    return value


# JSON's true and false are Python's True and False, which are also ints (True == 1): every
# number or id read from a file, and every whole-number argument of a command, goes through
# `whole_number_problem`, so a boolean is never taken for one.


def whole_number_problem(value: Any, at_least: int = 0, below: int | None = None, meaning: str = "") -> str | None:
    """None when `value` is a whole number from `at_least` (and below `below`), else what is wrong,
    for the caller to put after the field's or argument's name: the one rule for whole numbers
    from outside (file fields, command arguments). `meaning` says what the number stands for.

    >>> whole_number_problem(True), whole_number_problem(2, at_least=1, below=3) is None
    ('is True (bool); expected a whole number, 0 or more', True)
    >>> whole_number_problem(3, below=3, meaning="one of 3 captions")
    'is 3 (int); expected a whole number from 0 to 2 (one of 3 captions)'
    """
    whole = isinstance(value, int) and not isinstance(value, bool)
    if whole and at_least <= value and (below is None or value < below):
        return None
    span = f", {at_least} or more" if below is None else f" from {at_least} to {below - 1}"
    note = f" ({meaning})" if meaning else ""
    return f"is {value!r} ({type(value).__name__}); expected a whole number{span}{note}"


def check_count(
    value: Any,
    file: Path | str,
    row: int | str | None,
    field: str,
    *,
    at_least: int = 0,
    below: int | None = None,
    meaning: str = "",
) -> int:
    """`value` if it is a whole number from `at_least` (below `below`; a vote count, an index);
    otherwise BadInputError naming the file, row and field (`whole_number_problem`)."""
    problem = whole_number_problem(value, at_least, below, meaning)
    if problem:
        raise BadInputError(file, row, f"{field} {problem}")
    return int(value)


def check_number(
    value: Any, file: Path | str, row: int | str | None, field: str, at_least: float | None = None
) -> float:
    """`value` as a float if it is a finite number (a box coordinate, a score), `at_least` or more
    when given (a box's width); a boolean or text is refused."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or value != value
        or value in (float("inf"), float("-inf"))
        or (at_least is not None and value < at_least)
    ):
        least = "" if at_least is None else f", {at_least:g} or more"
        raise BadInputError(file, row, f"{field} is {value!r} ({type(value).__name__}); expected a number{least}")
    return float(value)


def check_id(value: Any, file: Path | str, row: int | str | None, field: str) -> str:
    """`value` as text if it is an id: non-empty text, or a whole number (0 or more); a boolean,
    a float or a negative number is refused (`True` would become an image `…True.jpg`)."""
    if isinstance(value, str):
        return check_text(value, file, row, field).strip()
    if whole_number_problem(value):
        raise BadInputError(
            file, row, f"{field} is {value!r} ({type(value).__name__}); expected an id: text or a whole number"
        )
    return str(value)
