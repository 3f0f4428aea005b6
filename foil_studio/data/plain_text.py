"""Numbers, intervals, p-values, counts and tables written as plain text, one way for the
command line, the pages, the protocol paragraphs and the exports (names that could be markup are
escaped by the pages' `views.text`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def figure(value: float, decimals: int = 2) -> str:
    """A number as people write it: fixed decimals, no negative zero, an ASCII minus (pasted into
    LaTeX or a spreadsheet, a typographic minus breaks).

    >>> figure(-0.0001), figure(-32.857), figure(75.0), figure(1234.5, 1)
    ('0.00', '-32.86', '75.00', '1234.5')
    """
    shown = f"{value:.{decimals}f}"
    return shown[1:] if shown.startswith("-") and float(shown) == 0 else shown


def interval_text(interval: Sequence[float] | float | None) -> str:
    """An interval as "low to high" with two decimals (as the figures beside it), "" when there
    is none (None, or a table's missing cell: NaN); "to", not a dash, so that negative ends read as such.

    >>> interval_text((78.794, 92.941)), interval_text((-32.857, -24.29))
    ('78.79 to 92.94', '-32.86 to -24.29')
    >>> interval_text(None), interval_text(float("nan"))
    ('', '')
    """
    if not isinstance(interval, Sequence) or any(v != v for v in interval):  # NaN: too few items to resample
        return ""
    return f"{figure(interval[0])} to {figure(interval[1])}"


def p_value_text(p: float | None) -> str:
    """A p-value, the one way the CLI and the pages write it: three decimals, and scientific
    notation with two significant digits below 0.001 (so 1e-14 does not read as 0.00).

    >>> p_value_text(0.04213), p_value_text(1.23e-14), p_value_text(1.0), p_value_text(None)
    ('0.042', '1.2e-14', '1.000', '')
    """
    if p is None or p != p:
        return ""
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def count_range(low: int, high: int) -> str:
    """A range of whole numbers as a person writes it.

    >>> count_range(10, 10), count_range(8, 12)
    ('10', 'between 8 and 12')
    """
    return f"{low:,}" if low == high else f"between {low:,} and {high:,}"


def cell(value: Any) -> str:
    """One value as a table cell: two decimals for floats, inline `k v` pairs for a flat
    mapping, nothing for None or NaN.

    >>> cell(0.3137254901960783), cell(None), cell({"add": 4, "swap": 2}), cell([1.0, 2.5])
    ('0.31', '', 'add 4, swap 2', '1.00, 2.50')
    """
    if value is None or (isinstance(value, float) and value != value):
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return figure(value)
    if isinstance(value, dict):
        return ", ".join(f"{k} {cell(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(cell(v) for v in value)
    return str(value)


def table(rows: Sequence[Mapping[str, Any]]) -> str:
    """Rows as an aligned plain-text table: a header, then one line per row; numbers are
    right-aligned, text left-aligned, columns in order of first appearance.

    >>> print(table([{"run": "a", "acc": 75.0}, {"run": "long-name", "acc": 5.125}]))
    run         acc
    a         75.00
    long-name  5.12
    """
    columns = list(dict.fromkeys(key for row in rows for key in row))
    cells = [[cell(row.get(column)) for column in columns] for row in rows]
    numeric = [
        all(
            isinstance(row.get(c), (int, float)) and not isinstance(row.get(c), bool)
            for row in rows
            if row.get(c) is not None
        )
        for c in columns
    ]
    widths = [max([len(c), *(len(line[i]) for line in cells)]) for i, c in enumerate(columns)]

    def line(values: Sequence[str]) -> str:
        return " ".join(v.rjust(w) if right else v.ljust(w) for v, w, right in zip(values, widths, numeric)).rstrip()

    return "\n".join([line(columns), *(line(values) for values in cells)])
