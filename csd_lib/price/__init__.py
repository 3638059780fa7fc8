"""From acceptance and call costs to seconds.

:mod:`~csd_lib.price.costmodel` is the fitted per-call cost t(n, L), measured by
:mod:`~csd_lib.price.timing` and stored by :mod:`~csd_lib.price.costfile`;
:mod:`~csd_lib.price.ewif` is the paper's theory and the Algorithm 1 simulator;
:func:`~csd_lib.price.pricing.price_plan` is the one price of a plan. On top of it:
:mod:`~csd_lib.price.predict` (a benchmark's own acceptance), :mod:`~csd_lib.price.tune`
(choosing K and lenience) and :mod:`~csd_lib.price.forecast` (a device, before any download).
"""
