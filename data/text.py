"""Names from outside (annotators, runs, datasets, categories, batches) shown as text, never as
markup: Streamlit renders markdown in titles, captions and alerts, and plotly renders a subset of
HTML (links among it) in labels. Pages pass every such name through these functions. The
command line's tables (`table`) are plain text too.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

# Characters that start markup inside a line (CommonMark, GitHub's tables and strikethrough,
# LaTeX): a backslash makes each literal. An underscore inside a word ("negative_caption") never
# starts emphasis. Hyphens and numbers act only at the start of a line (lists).
_INLINE_ACTIVE = re.compile(r"([\\`*\[\]<>#|~$!&]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")
_LIST_MARK = re.compile(r"(?m)^(\s*)([-+=])")
_NUMBERED = re.compile(r"(?m)^(\s*\d+)([.)])")
# Streamlit turns ":smile:", ":material/home:" and ":red[...]" into emoji, icons and colours, and
# "http://...", "www...." and "a@b.org" into links, after escapes are resolved; an invisible word
# joiner after ":" and "@" and inside "www." breaks each such sequence without changing what shows.
WORD_JOINER = "\u2060"
_LINK_OR_ICON = re.compile(r"(:|@|(?i:\bwww)(?=\.))")


def md(value: Any) -> str:
    """`value` as markdown that renders exactly as its text (plus invisible word joiners).

    >>> md("[click](http://x.org) *now*").replace(WORD_JOINER, "^")
    '\\\\[click\\\\](http:^//x.org) \\\\*now\\\\*'
    >>> md("- www.x.org :red[alert]").replace(WORD_JOINER, "^")
    '\\\\- www^.x.org :^red\\\\[alert\\\\]'
    """
    escaped = _INLINE_ACTIVE.sub(r"\\\1", str(value))
    escaped = _LIST_MARK.sub(r"\1\\\2", escaped)
    escaped = _NUMBERED.sub(r"\1\\\2", escaped)
    return _LINK_OR_ICON.sub(lambda m: m.group(1) + WORD_JOINER, escaped)


def plain(value: Any) -> str:
    """`value` as plotly label text that shows exactly as its text (plotly reads &, < and >).

    >>> plain("<a href='x'>run</a> & co")
    "&lt;a href='x'&gt;run&lt;/a&gt; &amp; co"
    """
    return html.escape(str(value), quote=False)


def literal_figure(figure: go.Figure) -> go.Figure:
    """The figure with every text it shows (trace names, categorical axes, titles, facet and
    legend labels, hover text) escaped for plotly, so names from outside cannot become markup."""
    for trace in figure.data:
        if isinstance(getattr(trace, "name", None), str):
            trace.name = plain(trace.name)
        for axis in ("x", "y", "text", "hovertext"):
            values = getattr(trace, axis, None)
            if values is not None and not isinstance(values, str) and any(isinstance(v, str) for v in values):
                setattr(trace, axis, [plain(v) if isinstance(v, str) else v for v in values])
        if getattr(trace, "legendgroup", None):
            trace.legendgroup = plain(trace.legendgroup)
    for annotation in figure.layout.annotations or ():
        annotation.text = plain(annotation.text)
    if figure.layout.title and figure.layout.title.text:
        figure.layout.title.text = plain(figure.layout.title.text)
    if figure.layout.legend and figure.layout.legend.title and figure.layout.legend.title.text:
        figure.layout.legend.title.text = plain(figure.layout.legend.title.text)
    escape_title = lambda axis: axis.title.text and axis.update(title_text=plain(axis.title.text))  # noqa: E731
    figure.for_each_xaxis(escape_title)
    figure.for_each_yaxis(escape_title)
    return figure


def figure(value: float, decimals: int = 2) -> str:
    """A number as people write it: fixed decimals, no negative zero, an ASCII minus (pasted into
    LaTeX or a spreadsheet, a typographic minus breaks).

    >>> figure(-0.0001), figure(-32.857), figure(75.0), figure(1234.5, 1)
    ('0.00', '-32.86', '75.00', '1234.5')
    """
    shown = f"{value:.{decimals}f}"
    return shown[1:] if shown.startswith("-") and float(shown) == 0 else shown


def interval_text(interval: Sequence[float] | None) -> str:
    """An interval as "low to high" with two decimals (as the figures beside it), "" when there
    is none; "to", not a dash, so that negative ends read as such.

    >>> interval_text((78.794, 92.941)), interval_text((-32.857, -24.29)), interval_text(None)
    ('78.79 to 92.94', '-32.86 to -24.29', '')
    """
    if interval is None or any(v != v for v in interval):  # NaN: too few items to resample
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
    numeric = [all(isinstance(row.get(c), (int, float)) and not isinstance(row.get(c), bool) for row in rows if row.get(c) is not None) for c in columns]
    widths = [max([len(c), *(len(line[i]) for line in cells)]) for i, c in enumerate(columns)]

    def line(values: Sequence[str]) -> str:
        return " ".join(v.rjust(w) if right else v.ljust(w) for v, w, right in zip(values, widths, numeric)).rstrip()

    return "\n".join([line(columns), *(line(values) for values in cells)])
