"""The paper's per-call cost tables: what each preset's calls cost in the "previous work" SWI, with sources.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..engine.plan import MAG
from ..engine.stats import model_size_costs


@dataclass(frozen=True)
class CostTable:
    """Cost per forward call of each cascade role relative to the target, and where it comes from."""
    costs: dict[str, float]
    source: str

# The paper's "Speedup (PW)" metric prices each call with the T5 time costs reported by
# Leviathan et al. (2023), relative to T5-XXL: small 0.02, base 0.04, large 0.11, xxl 1.
# Each preset's table names its source; MaG costs 0 everywhere.
_T5_COST = {"small": 0.02, "base": 0.04, "large": 0.11, "xxl": 1.0}

PREVIOUS_WORK = {
    "flan-t5": CostTable({"target": 1.0, "base": 0.04, "small": 0.02, "mag": 0.0},
                         "Leviathan et al. (2023) T5 costs relative to T5-XXL, as quoted by the CSD paper"),
    "flan-t5-colab": CostTable({"target": 1.0, "base": _T5_COST["base"] / _T5_COST["large"],
                                "small": _T5_COST["small"] / _T5_COST["large"], "mag": 0.0},
                               "Leviathan et al. (2023) T5 costs rescaled to a T5-large target "
                               "(base 0.04/0.11, small 0.02/0.11)"),
    "vicuna": CostTable({"target": 1.0, "small": 68 / 7000, "mag": 0.0},
                        "no published per-call cost for a Llama drafter: the parameter ratio 68M/7B "
                        "(the paper's model-size table)"),
    "tiny-t5": CostTable({"target": 1.0, "base": 0.04, "small": 0.02, "mag": 0.0},
                         "Leviathan et al.'s T5 costs (relative to T5-XXL) applied by role: what the "
                         "paper's costs would make of this cascade's calls, not the tiny models' own costs"),
    "tiny-llama": CostTable({"target": 1.0, "small": 0.02, "mag": 0.0},
                            "Leviathan et al.'s T5-small cost (0.02 of T5-XXL) applied by role, not the "
                            "tiny models' own costs"),
}


def previous_work_costs(family_name: str, params: dict[str, int] | None = None) -> CostTable:
    """The previous-work cost table of a preset; other families get parameter-count ratios."""
    if family_name in PREVIOUS_WORK:
        return PREVIOUS_WORK[family_name]
    if not params or not params.get("target"):
        raise ValueError(f"family {family_name!r} has no previous-work cost table; pass its parameter counts "
                         f"(role -> params, with 'target') to use parameter ratios")
    costs = {k: v for k, v in model_size_costs(params).items() if k != MAG}
    return CostTable({**costs, MAG: 0.0}, "no published per-call costs: parameter-count ratios")
