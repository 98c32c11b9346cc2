"""Risk, utility and score measures of a release (docs/methods.md, Measures)."""

from .frequency import FrequencyRisk, frequency_risk, suda2
from .release import MEASURES, categorical_measures, numeric_measures
from .risk import (
                   disclosure_risk,
                   interval_disclosure,
                   per_record_risk,
                   records_at_risk,
                   score,
                   worst_case,
)
from .utility import InformationLoss, categorical_information_loss, information_loss, pil

__all__ = ["MEASURES", "FrequencyRisk", "InformationLoss", "categorical_information_loss",
           "categorical_measures", "numeric_measures",
           "disclosure_risk", "frequency_risk", "information_loss", "interval_disclosure",
           "per_record_risk", "pil", "records_at_risk", "score", "suda2",
           "worst_case"]
