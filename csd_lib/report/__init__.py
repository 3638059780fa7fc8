"""Numbers and words from results.

:mod:`~csd_lib.report.summary` summarizes benchmark records (speedups with intervals, SWI,
predictions beside them); :mod:`~csd_lib.report.bench_stats` holds the statistics
BENCHMARKS.md reports (per-example ratios, the SWI ordering, the goals); :mod:`~csd_lib.report.intervals`
gives a difference over prompts its interval, so that a sentence says a direction only beyond the noise;
:mod:`~csd_lib.report.words` puts numbers into words; :mod:`~csd_lib.report.claims` prints a claim's verdict
on a run and keeps the claims ledger; :mod:`~csd_lib.report.lenience_replay` replays a run's reviews under
other leniences;
:mod:`~csd_lib.report.batches` summarizes batch bench lines (throughput and speedup over AR per batch size,
the crossover where speculation stops paying, the cost model's prediction beside them);
:mod:`~csd_lib.report.regimes` compares two families' regimes by per-prompt SWI counts;
:mod:`~csd_lib.report.compare` compares configurations and methods per example (runs, labels, ties);
:mod:`~csd_lib.report.decay` states acceptance-by-position claims (paper Fig. 2);
:mod:`~csd_lib.report.lenience_runs` sets a strict run beside a lenient one;
:mod:`~csd_lib.report.run_counts` pools a review pair's acceptance and a model's calls per token over
prompts; :mod:`~csd_lib.report.table1` sets the paper's Table 1 beside the rows EWIF computes;
:mod:`~csd_lib.report.trees` holds notebook 08's Table 3 and tree reviews; :mod:`~csd_lib.report.ledger_doc`
renders the numbers a document quotes from a claims ledger; :mod:`~csd_lib.report.evidence` answers each
lesson's question from the committed 50-prompt runs, with its interval.
"""
