"""The tiny model zoo: how the embedded families were made.

:mod:`~csd_lib.zoo.tokenizer` is the shared tokenizer, :mod:`~csd_lib.zoo.recipes` the model presets and
family recipes, :mod:`~csd_lib.zoo.train` trains and exports, :mod:`~csd_lib.zoo.card` measures and writes
the model cards, :mod:`~csd_lib.zoo.medusa` trains Medusa heads for a decoder-only target.

- ``python -m csd_lib.zoo train --family tiny-t5`` (or ``tiny-llama``) trains and exports;
- ``python -m csd_lib.zoo card --family tiny-t5`` re-measures and writes the model card.
"""
from csd_lib.zoo.recipes import FAMILY_RECIPES, PRESETS, family_models, make_config, make_model

__all__ = ["FAMILY_RECIPES", "PRESETS", "family_models", "make_config", "make_model"]
