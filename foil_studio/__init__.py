"""Foil Studio: annotate, score and audit vision-language compositionality benchmarks.

The command line is ``foil`` (`foil_studio.cli`), the app is ``foil serve``, and notebooks use
`foil_studio.api`.
"""

__version__ = "0.10.0"
