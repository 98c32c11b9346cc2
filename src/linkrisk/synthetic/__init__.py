"""Disclosure risk of synthetic data: releases with no record-to-record correspondence to
the original file (definitions in docs/methods.md, "Synthetic data").

* :mod:`.distance` — distance to closest record (DCR) to the training and holdout records,
  the share of synthetic records closer to training than to holdout, the nearest-neighbour
  distance ratio, exact copies, and a distance-based membership-inference attack.
* :mod:`.anonymeter` — anonymeter's singling-out, linkability and inference attacks
  (Giomi et al. 2023) on linkrisk's nearest-neighbour engine, each against the holdout
  (control) records, with anonymeter's confidence intervals.
* :mod:`.report` — :func:`synthetic_risk`, all of the above for one release, with a verdict.
"""

from .anonymeter import AttackRisk, inference, linkability, singling_out
from .distance import DistanceRisk, distance_risk
from .report import SyntheticRisk, synthetic_risk

__all__ = ["AttackRisk", "DistanceRisk", "SyntheticRisk", "distance_risk", "inference",
           "linkability", "singling_out", "synthetic_risk"]
