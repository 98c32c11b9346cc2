"""Risk, utility and score measures of a release (docs/methods.md, Measures)."""

from .risk import disclosure_risk, interval_disclosure, per_record_risk, score, worst_case
from .utility import InformationLoss, categorical_information_loss, information_loss, pil

__all__ = ["InformationLoss", "categorical_information_loss", "disclosure_risk",
           "information_loss", "interval_disclosure", "per_record_risk", "pil", "score",
           "worst_case"]
