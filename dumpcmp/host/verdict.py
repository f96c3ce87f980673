"""Which compared tensors count as diverging: the thresholds users know from msit's analyser.

A row diverges when any of five metrics is beyond its threshold. Cosine alone misses uniform
noise (5 % noise everywhere keeps CosineSimilarity at 0.998), which RelativeEuclideanDistance and
KullbackLeiblerDivergence catch. The summary and the xlsx colouring both ask this module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the CLI reads the defaults at import time, before numpy is needed
    from dumpcmp.host.metrics.offline_data import MetricValues


@dataclass(frozen=True, slots=True)
class Thresholds:
    """msit analyser's defaults; each is a ``compare`` option of the same meaning."""

    cosine: float = 0.99  # CosineSimilarity below this diverges
    relative_euclidean: float = 0.05  # RelativeEuclideanDistance above
    kl: float = 0.005  # KullbackLeiblerDivergence above
    rmse: float = 1.0  # RootMeanSquareError above
    mean_relative: float = 1.0  # MeanRelativeError above
    # Statistics dumps (metrics.md §2): |diff| / (max(|target|, |golden|) + 1e-10) above this
    statistics: float = 0.5

    def describe(self) -> str:
        return (
            f"CosineSimilarity < {self.cosine:g}, RelativeEuclideanDistance > {self.relative_euclidean:g}, "
            f"KullbackLeiblerDivergence > {self.kl:g}, RootMeanSquareError > {self.rmse:g}, "
            f"MeanRelativeError > {self.mean_relative:g}"
        )

    def breaches(self, m: MetricValues) -> tuple[str, ...]:
        """Each metric of ``m`` beyond its threshold, as ``"Name value op threshold"``.

        A pair without numbers breaches nothing (its reason says why). A NaN CosineSimilarity
        beside numbers (NaN/inf in the data, one side all zero) is a breach: the tensors were
        comparable and do not agree. Other NaN metrics (bool tensors) are not judged.
        NaN/inf at exactly the same positions on both sides say nothing of a difference, but make
        the metrics NaN: such a pair is judged by the metrics of its other elements
        (``MetricValues.finite``), named as theirs.
        """
        if m.finite is not None:
            return self._breaches(m.finite, " of the finite elements")
        return self._breaches(m, "")

    def _breaches(self, m: MetricValues, of: str) -> tuple[str, ...]:
        if not m.has_numbers:
            return ()
        found = []
        if math.isnan(m.cosine_similarity):
            found.append(f"CosineSimilarity{of} NaN")
        elif m.cosine_similarity < self.cosine:
            found.append(f"CosineSimilarity{of} {m.cosine_similarity:.6f} < {self.cosine:g}")
        above = (
            ("RelativeEuclideanDistance", m.relative_euclidean_distance, self.relative_euclidean),
            ("KullbackLeiblerDivergence", m.kullback_leibler_divergence, self.kl),
            ("RootMeanSquareError", m.root_mean_square_error, self.rmse),
            ("MeanRelativeError", m.mean_relative_error, self.mean_relative),
        )
        found += [f"{name}{of} {value:.6f} > {limit:g}" for name, value, limit in above if value > limit]
        return tuple(found)

    def diverges(self, m: MetricValues) -> bool:
        return bool(self.breaches(m))
