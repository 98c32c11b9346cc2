"""Risk, utility and score measures of a release (docs/methods.md, Measures)."""

from .frequency import FrequencyRisk, frequency_risk, suda2
from .risk import disclosure_risk, interval_disclosure, per_record_risk, score, worst_case
from .utility import InformationLoss, categorical_information_loss, information_loss, pil

__all__ = ["FrequencyRisk", "InformationLoss", "categorical_information_loss",
           "disclosure_risk", "frequency_risk", "information_loss", "interval_disclosure",
           "per_record_risk", "pil", "score", "suda2",
           "worst_case"]
