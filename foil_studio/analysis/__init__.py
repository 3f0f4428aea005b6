"""Analysis: model loading and scoring, metrics, charts, blind baselines."""
