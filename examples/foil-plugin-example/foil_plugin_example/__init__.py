"""A Foil Studio plugin: EqBen's JSON layout (``eqben``), the question "is the altered caption
grammatical?" (``grammatical_negative``) and a model family scoring a caption by the colour it
names (``colour-match``), each one record that an entry point of ``pyproject.toml`` names."""

__version__ = "0.1.0"
