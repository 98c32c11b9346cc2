"""Risk, utility and score measures of a release (docs/methods.md, Measures)."""

from .risk import disclosure_risk, interval_disclosure, per_record_risk, score, worst_case
from .utility import InformationLoss, information_loss, pil

__all__ = ["InformationLoss", "disclosure_risk", "information_loss", "interval_disclosure",
           "per_record_risk", "pil", "score", "worst_case"]
