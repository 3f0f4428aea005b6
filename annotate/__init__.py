"""Annotation: the SQLite store, task types, batches, agreement and consensus."""
