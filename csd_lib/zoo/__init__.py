"""The tiny model zoo: shared tokenizer, training recipes, training, export and model cards.

- ``python -m csd_lib.zoo train --family tiny-t5`` (or ``tiny-llama``) trains and exports;
- ``python -m csd_lib.zoo card --family tiny-t5`` re-measures and writes the model card.
"""
from csd_lib.zoo.recipes import FAMILY_RECIPES, PRESETS, family_models, make_config, make_model

__all__ = ["FAMILY_RECIPES", "PRESETS", "family_models", "make_config", "make_model"]
