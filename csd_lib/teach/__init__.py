"""What a learner runs beside the figures: the live panel, exercise checks, the demo.

:mod:`~csd_lib.teach.panel` is the notebooks' live panel (:class:`~csd_lib.teach.panel.LivePanel`,
ipywidgets);
:mod:`~csd_lib.teach.exercises` checks exercise answers; :mod:`~csd_lib.teach.replay` replays
drafting rules (MaG variants, prompt lookup) against a reference output;
:mod:`~csd_lib.teach.demo` is the README's main job; :mod:`~csd_lib.teach.worked` picks and counts the
rounds of notebook 00's hand-written speculative decoding; :mod:`~csd_lib.teach.curve_picker` is
notebook 01's drafter/task picker; :mod:`~csd_lib.teach.ewif_explorer` and
:mod:`~csd_lib.teach.ratio_explorer` are notebook 05's EWIF and cost-ratio sliders;
:mod:`~csd_lib.teach.tree_budget` is notebook 08's tree budget widget; :mod:`~csd_lib.teach.batch_explorer`
is notebook 09's batch-size widget and its small live batch run; :mod:`~csd_lib.teach.explorer_data`
records the engine runs that the classroom site's explorer replays without a kernel.
"""
