"""The report's statistics: Wilson's 95 % interval, the unbiased pass@k, quantiles.

Pure functions (property-tested in tests/test_jobs_report.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

Z95 = 1.959963984540054  # the 97.5th percentile of the standard normal


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval for a binomial proportion (0, 0 for n = 0): unlike the normal
    approximation it stays within [0, 1] and is sensible at 0 or n successes."""
    if n == 0:
        return 0.0, 0.0
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    low = 0.0 if successes == 0 else max(0.0, centre - half)  # exact at the ends (no rounding off)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimator of pass@k from n attempts with c passes (Chen et al. 2021):
    1 - C(n-c, k) / C(n, k); needs 1 <= k <= n."""
    if not 1 <= k <= n or not 0 <= c <= n:
        raise ValueError(f"pass@k needs 1 <= k <= n and 0 <= c <= n, got n={n} c={c} k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def quantile(values: Sequence[float], q: float) -> float | None:
    """The q-quantile of sorted *values* by linear interpolation (numpy's default); None if empty."""
    if not values:
        return None
    position = (len(values) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (position - low)
