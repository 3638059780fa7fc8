"""Figures and trace views, by subject. One palette for the cascade levels (``palette``).

Submodules: ``palette`` (level colours), ``trace`` (trace views, notebooks 00/03),
``acceptance`` (acceptance and calls, 01/03), ``mag`` (Max-Gram, 02), ``cascade``
(coverage and grids, 04), ``ewif`` (theory, 05), ``bench`` (benchmarks and latency, 00/05/06),
``costs`` (the cost model, 05/06), ``predict`` (the device forecast, 05; speedup and a round's cost against batch size, 09), ``lossless`` (sampling, 07),
``rounds`` (one target round unrolled, 03), ``answers`` (the lessons' committed answers, 05-08), ``tree`` (token trees and their attention mask, 08), ``notebook``
(setup), ``lesson_evidence`` (the committed evidence of lessons 01-04), ``policies`` (draft-length policies, 10). Every figure and view is re-exported here; the helpers they share (token labels, patterns, the
palette's series tables) stay in their module.
"""
from .answers import answer_figure, answer_label
from .acceptance import acceptance_figure, calls_figure, merged_acceptance, pair_acceptance_figure, total_calls
from .bench import bench_figure, itl_figure, parity_figure
from .cascade import (cascade_tree, cascade_tree_figure, coverage_figure, coverage_from_events, grid_heatmap,
                      planned_coverage, planned_coverage_figure)
from .costs import cost_figure, cost_ratio_figure, prediction_figure, time_share_figure
from .ewif import cor44_figure, ewif_k_figure, lines_figure, sd_vs_cascade_figure, table1_figure
from .lesson_evidence import decay_evidence_figure, evidence_figure
from .lossless import sampling_figure
from .mag import mag_hits_figure, mag_step_html, match_length_figure
from .notebook import setup_notebook, show_in_output
from .palette import (LEVEL_COLORS, LEVEL_ORDER, LEVEL_PATTERN, LEVEL_UNDERLINE, OKABE_ITO, SEQUENTIAL_SCALE,
                      bar_pattern, level_color, level_css, level_pattern, model_color, proposer_color,
                      relative_luminance, series_style, text_color)
from .policies import draft_length_figure, policy_evidence_figure
from .predict import batch_bench_figure, batch_speedup_figure, forecast_figure, review_cost_figure
from .rounds import first_rejected_round, round_events, round_figure
from .trace import (batch_row, row_label, row_trace_figure, row_trace_html, save_trace_html, stats_html, token_origins,
                    token_pieces, trace_figure, trace_html, trace_text)
from .tree import token_tree_figure, tree_mask_figure

__all__ = ["LEVEL_COLORS", "LEVEL_ORDER", "LEVEL_PATTERN", "LEVEL_UNDERLINE", "OKABE_ITO", "SEQUENTIAL_SCALE",
           "acceptance_figure", "answer_figure", "answer_label", "bar_pattern", "batch_bench_figure", "batch_row",
           "batch_speedup_figure", "bench_figure", "calls_figure",
           "cascade_tree", "cascade_tree_figure",
           "cor44_figure", "cost_figure", "cost_ratio_figure", "coverage_figure", "coverage_from_events",
           "decay_evidence_figure", "draft_length_figure", "evidence_figure", "ewif_k_figure", "first_rejected_round", "forecast_figure", "grid_heatmap", "itl_figure", "level_color",
           "level_css", "level_pattern", "lines_figure", "mag_hits_figure", "mag_step_html", "match_length_figure",
           "merged_acceptance", "model_color", "pair_acceptance_figure", "parity_figure", "planned_coverage",
           "planned_coverage_figure", "policy_evidence_figure", "prediction_figure", "proposer_color",
           "relative_luminance", "review_cost_figure", "round_events", "round_figure", "row_label", "row_trace_figure",
           "row_trace_html", "sampling_figure", "save_trace_html", "sd_vs_cascade_figure", "series_style",
           "setup_notebook", "show_in_output", "stats_html", "table1_figure", "text_color", "time_share_figure",
           "token_origins", "token_pieces", "token_tree_figure", "total_calls", "trace_figure", "trace_html",
           "trace_text", "tree_mask_figure"]
