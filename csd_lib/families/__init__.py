"""What the engine runs on: model families, checkpoints, tasks.

A :class:`~csd_lib.families.family.Family` is a target, its neural drafters and MaG with the
preset's K and lenience (:mod:`~csd_lib.families.presets`, the tiny families' tuned settings read from
``data/tuned_presets.json``; the paper's per-call cost tables in
:mod:`~csd_lib.families.paper_costs`). :func:`~csd_lib.families.family.load_family` loads the
embedded tiny families or real checkpoints, checked before any download
(:mod:`~csd_lib.families.hub`: configs, probing, loading; :mod:`~csd_lib.families.placement`:
memory; :mod:`~csd_lib.families.archs`: the published configs and models built from them);
:mod:`~csd_lib.families.shadow` writes random-weight stand-ins of the real checkpoints,
:mod:`~csd_lib.families.toy` random tiny families for tests, :mod:`~csd_lib.families.tasks` the
GSM8K/MMLU prompts and their synthetic look-alikes, :mod:`~csd_lib.families.task_choice` which tasks a
family is benchmarked on and where their examples came from; :mod:`~csd_lib.families.medusa` holds the
Medusa-1 heads of a decoder-only target and their loader.
"""
