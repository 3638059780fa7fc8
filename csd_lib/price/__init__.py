"""From acceptance and call costs to seconds, around two nouns: the cost of a call and the prediction.

Cost: :mod:`~csd_lib.price.costmodel` is the :class:`~csd_lib.price.costmodel.CostModel`, what one call of
each model costs as a fitted function (also built from per-call constants or a family's load probe);
:mod:`~csd_lib.price.costs` measures one on this machine, stores it and chooses the stored one that fits
this machine class. Prediction: :mod:`~csd_lib.price.ewif` is the paper's theory and the Algorithm 1
simulator (:func:`~csd_lib.price.ewif.predict_speedup`); :mod:`~csd_lib.price.batch` extends both to a
batch of B rows in lockstep (a call priced by the tokens it feeds across rows; the crossover batch size);
:mod:`~csd_lib.price.pricing` is the one price of a
plan (:func:`~csd_lib.price.pricing.price_plan`) and of a method's generation before it runs;
:mod:`~csd_lib.price.predict` holds the entry points (``predict_from_runs``, ``predict_for_device``, the CLI's
``predict``, and ``predict_for_tuner``); :mod:`~csd_lib.price.tune` chooses K, lenience and tree budgets by
predicting, then measuring the best few; :mod:`~csd_lib.price.tuned` tunes K, SD's k and the draft policy on this
machine (``python -m csd_lib tune``), stores them by machine class and fills a user's unset settings from them
(:func:`~csd_lib.price.tuned.tuned_settings`). The imports run one way: costmodel, ewif, batch, pricing, costs,
predict, tune, tuned (each imports only those before it in that order; costs prices its probe with pricing).
"""
