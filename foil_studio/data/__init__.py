"""The ground floor: the store, the item model and item kinds, benchmark formats, the reading boundary,
the demo world."""
