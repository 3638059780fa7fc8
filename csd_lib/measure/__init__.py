"""Running things and reading what they wrote.

:mod:`~csd_lib.measure.bench` runs methods in interleaved rounds into a resumable JSONL file of
:class:`~csd_lib.measure.records.BenchRecord` lines; :mod:`~csd_lib.measure.batch_bench` runs the same
batches at several batch sizes (``bench --batch-size``), one line per row; :mod:`~csd_lib.measure.acceptance` turns
generations' stats into per-position acceptance tables (and fills the pairs a run never
exercised) and measured seconds per call; :mod:`~csd_lib.measure.curves` measures teacher-forced
acceptance curves;
:mod:`~csd_lib.measure.lossless` checks identity and exact sampling;
:mod:`~csd_lib.measure.machine` describes the machine a number was measured on;
:mod:`~csd_lib.measure.specbench` writes a bench's records as Spec-Bench answer files;
:mod:`~csd_lib.measure.sweep` generates a grid of K and lenience on the same prompts (notebook 04);
:mod:`~csd_lib.measure.vertical` benchmarks the paper's "base + MaG" run beside a committed one.
"""
