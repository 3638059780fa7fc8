"""The method registry: each decoding method is one :class:`Method`, the one place that says how to plan it,
run it, price it and label it.

A method is data, read by every layer instead of comparing its name: the plan
(:func:`csd_lib.engine.plan.make_plan`) reads which drafters it takes, where its K comes from and which settings
it accepts; the engine (:func:`csd_lib.engine.cascade.run_plan`) reads whether it verifies a chain or which
token tree; the price layer reads the same traits (:attr:`Method.ar_like`, :attr:`Method.lenient`,
:attr:`Method.tree`, ...); tables and figures read :attr:`Method.label` and the registry's order.
transformers' own baselines (``hf-assisted``, ``hf-pld``) are methods too, flagged ``baseline``: the
measure layer runs them (:func:`csd_lib.measure.bench.hf_generate`), the engine refuses them.

A new method is one new :class:`Method` passed to :func:`register` (tests/engine/test_methods.py adds one).
This module is pure: it imports nothing from the library.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

# Neural drafters a method takes from its family (largest first): none, SD's one (``drafter``, else the largest),
# the two largest, or every one.
ALL = -1

# The token tree a tree method verifies (csd_lib/engine/tree_methods.py); None for a chain.
HEADS = "heads"        # the target's Medusa heads propose, by rank
DRAFTER = "drafter"    # one drafter's draft, plus its second choice where it is unsure
CASCADE = "cascade"    # the cascade's main chain, plus branches at the first depths

def _sd_k(family, task):
    return family.sd_k if task is None else family.sd_k_for(task)


def _cascade_k(family, task):
    return family.default_k if task is None else family.k_for(task)


def _staged_k(family, task):
    return family.staged_k


def _mag_k(family, task):
    return family.mag.n


@dataclass(frozen=True)
class Method:
    """One decoding method: what it drafts with, what it takes, what it verifies and how it is shown.

    Args:
        name: what users pass (``method="csd"``) and what records store.
        label: its name in tables and figures (default: ``name``).
        neural: neural drafters from the family: 0, 1 (SD's one), 2 (the two largest) or :data:`ALL`.
        mag: MaG drafts last (the bottom of the cascade).
        default_k: ``(family, task) -> K`` when the user gives none (task None: the family's default);
            None: the method takes no k.
        min_k: the least draft length its one drafter may get (SD: 1, since k=0 drafts nothing).
        lenient: it has lenient draft-to-draft reviews, so it takes ``lenience`` and ``mag_lenience``.
        tree: the token tree it verifies (:data:`HEADS`, :data:`DRAFTER`, :data:`CASCADE`), None for a chain.
        branches: its drafters branch where unsure, so it takes ``branch_below``.
        default: every family runs it and a bench runs it unless told otherwise.
        at_k: a bench may run it at another draft length as ``name@K`` beside its own run.
        baseline: transformers runs it (measure layer), not the engine.
        assistant: a baseline that drafts with the family's largest drafter (transformers' assisted generation).
        prompt_lookup: a baseline's prompt-lookup draft length (0: none).
    """
    name: str
    label: str = ""
    neural: int = 0
    mag: bool = False
    default_k: Callable | None = None
    min_k: int = 0
    lenient: bool = False
    tree: str | None = None
    branches: bool = False
    default: bool = False
    at_k: bool = False
    baseline: bool = False
    assistant: bool = False
    prompt_lookup: int = 0

    def __post_init__(self):
        if not self.label:
            object.__setattr__(self, "label", self.name)

    @property
    def takes_k(self) -> bool:
        return self.default_k is not None

    @property
    def takes_drafter(self) -> bool:
        """It drafts with one neural drafter the user may pick (SD's ``drafter``)."""
        return self.neural == 1

    @property
    def is_tree(self) -> bool:
        return self.tree is not None

    @property
    def ar_like(self) -> bool:
        """The engine runs it without any draft: the target decodes alone (prices as AR)."""
        return not (self.baseline or self.neural or self.mag or self.tree)

    @property
    def mag_only(self) -> bool:
        """Its drafts come from MaG only."""
        return self.mag and not self.neural

    def needs(self, family) -> bool:
        """Whether ``family`` has the neural drafters this method takes."""
        return len(family.drafters) >= max(self.neural, 0)

    @property
    def skippable(self) -> bool:
        """A family with too few neural drafters skips it (with a note) rather than failing: it needs two."""
        return self.neural > 1

    def runs_on(self, family) -> bool:
        """Whether a bench or a demo runs it on ``family``: a skippable method only where the drafters suffice."""
        return not self.skippable or self.needs(family)


_REGISTRY: dict[str, Method] = {}


def register(method: Method) -> Method:
    """Add ``method`` to the registry (after the others in tables); a name already taken is a ValueError."""
    if method.name in _REGISTRY:
        raise ValueError(f"method {method.name!r} is already registered")
    if "@" in method.name:
        raise ValueError(f"a method name may not hold '@' (bench labels use name@K), got {method.name!r}")
    _REGISTRY[method.name] = method
    return method


def unregister(name: str) -> None:
    """Remove a method added by :func:`register` (tests that add a toy method)."""
    _REGISTRY.pop(name)


def names(engine: bool | None = None, default: bool | None = None, tree: bool | None = None) -> tuple[str, ...]:
    """Registered method names in table order, optionally only the engine's (or the baselines: ``engine=False``),
    the default ones, or the tree methods."""
    return tuple(m.name for m in _REGISTRY.values()
                 if (engine is None or engine != m.baseline) and (default is None or default == m.default)
                 and (tree is None or tree == m.is_tree))


def find(name: str) -> Method | None:
    """The method called ``name``, or None."""
    return _REGISTRY.get(name)


def get(name: str, engine: bool = False) -> Method:
    """The method called ``name``; an unknown one (or, with ``engine``, a baseline) is a ValueError."""
    m = _REGISTRY.get(name) if isinstance(name, str) else None
    if m is None or (engine and m.baseline):
        known = names(engine=True) if engine else names()
        raise ValueError(f"unknown method {name!r}; use one of {', '.join(known)}")
    return m


def label(name: str) -> str:
    """A method's table and figure label; a bench label that is no method (``sd@8``) is its own."""
    m = _REGISTRY.get(name)
    return m.label if m else name


# The methods, in the tables' order; code that means one method by name (a report on Table 3) reads its ``name``.
AR = register(Method("ar", default=True))
SD = register(Method("sd", neural=1, default_k=_sd_k, min_k=1, default=True, at_k=True))
MAG_ALONE = register(Method("mag", mag=True, default_k=_mag_k, default=True))
STAGED = register(Method("staged", neural=2, default_k=_staged_k, default=True))
CSD = register(Method("csd", neural=ALL, mag=True, default_k=_cascade_k, lenient=True, default=True))
TREE_SD = register(Method("tree-sd", neural=1, default_k=_sd_k, min_k=1, tree=DRAFTER, branches=True))
MEDUSA = register(Method("medusa", tree=HEADS))
CSD_TREE = register(Method("csd-tree", neural=ALL, mag=True, default_k=_cascade_k, lenient=True, tree=CASCADE,
                           branches=True))
HF_ASSISTED = register(Method("hf-assisted", default=True, baseline=True, assistant=True))
HF_PLD = register(Method("hf-pld", default=True, baseline=True, prompt_lookup=10))

# The method every speedup is measured against: plain autoregressive decoding by the target.
REFERENCE = AR.name
