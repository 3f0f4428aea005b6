"""Names from outside (annotators, runs, datasets, categories, batches) shown as text, never as
markup: Streamlit renders markdown in titles, captions and alerts, and plotly renders a subset of
HTML (links among it) in labels. Pages pass every such name through these functions; numbers,
intervals and the command line's tables are written by `data.plain_text`.
"""

from __future__ import annotations

import html
import re
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from foil_studio.data.plain_text import figure

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


def blank_missing(frame: pd.DataFrame) -> pd.DataFrame:
    """A table whose missing text cells are empty: Streamlit draws a missing value as "None"."""
    text_columns = frame.select_dtypes(exclude="number").columns
    return frame.assign(**{c: frame[c].fillna("") for c in text_columns})


def figure_cells(column: pd.Series, decimals: int = 2) -> pd.Series:
    """A table's numbers as text with fixed decimals, and an empty cell where a figure is not
    defined (a table would draw the missing number as "None"); the page says why beside it."""
    return column.map(lambda x: "" if x is None or pd.isna(x) else figure(x, decimals))


def whole_number_ticks(figure: go.Figure, highest: float, axis: str = "y") -> go.Figure:
    """Ticks at whole numbers on an axis of counts: with small counts plotly would put ticks at
    0.5, 1.5..., a count nothing can have."""
    if highest <= 10:
        figure.update_yaxes(dtick=1, tick0=0) if axis == "y" else figure.update_xaxes(dtick=1, tick0=0)
    return figure
