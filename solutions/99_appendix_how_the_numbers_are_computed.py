"""Solutions to the exercises of notebooks/99_appendix_how_the_numbers_are_computed.ipynb."""
import numpy as np

from csd_lib.report.intervals import paired_difference, rate_difference
from csd_lib.teach.exercises import check

# 1. Differences 1, 2, ..., n: the t interval (3 to 5 prompts) excludes 0 from n = 4; at 99% the t
#    quantiles are larger, so it takes more prompts.
first = {lvl: next(n for n in range(3, 30) if paired_difference(np.arange(1, n + 1), np.zeros(n), level=lvl).sign == 1)
         for lvl in (0.95, 0.99)}
method = paired_difference(np.arange(1, first[0.95] + 1), np.zeros(first[0.95])).method
print(f"ex1 the interval first excludes 0 at n = {first[0.95]} ({method}) at 95%, at n = {first[0.99]} at 99%")
assert first[0.95] == 4 and method == "t" and first[0.99] > first[0.95]
assert check(first[0.95], first[0.95], rel=0, what="exercise 1").ok

# 2. Twice the tokens on one side at the same rates: the pooled rates do not move, and the pseudo-values
#    barely do, because prompts (not tokens) are the units that vary.
hits_a, totals_a = [30, 28, 31, 23], [70, 66, 72, 57]
hits_b, totals_b = [29, 30, 29, 29], [68, 66, 66, 72]
once = rate_difference(hits_a, totals_a, hits_b, totals_b)
twice = rate_difference([2 * h for h in hits_a], [2 * t for t in totals_a], hits_b, totals_b)
print(f"ex2 {once.interval()} against {twice.interval()} with twice the tokens on one side")
assert abs(once.estimate - twice.estimate) < 1e-12

# 3. One or two small non-zero values among zeros: the bounded interval stays the wider one.
for vals in ([0.2], [0.2, 0.2], [0.2, 0.2, 0.2, 0.2]):
    d = np.zeros(12)
    d[:len(vals)] = vals
    sym, bnd = paired_difference(d, np.zeros(12)), paired_difference(d, np.zeros(12), bounds=(-1, 1))
    print(f"ex3 {len(vals)} non-zero: sign-flip {sym.interval()}; bounded {bnd.interval()}")
