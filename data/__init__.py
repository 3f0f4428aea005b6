"""Datasets: the item model, importers and exporters, the synthetic demo world."""
