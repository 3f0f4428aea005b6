"""Analysis: model loading and scoring, pure metrics, runs to metrics, inspection (the figures and
item lists behind the pages' charts; the charts themselves are drawn in `foil_studio/views/`), parity,
exports with per-instance results, blind baselines and hackability audits, benchmark-health statistics."""
