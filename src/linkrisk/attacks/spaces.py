"""The engine inputs of a named distance (:class:`Space`), shared by the numeric
(:mod:`.distance`) and categorical (:mod:`.categorical`) attacks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class Space:
    """Both files mapped so that the engine ``metric`` on (a, b) is the wanted score.
    ``root``: the distance is the square root of the engine's score (Euclidean from squared
    Euclidean), which keeps argmin sets but matters for sums (global matching costs)."""

    a: np.ndarray
    b: np.ndarray
    metric: str
    kw: dict[str, Any] = field(default_factory=dict)
    root: bool = False
