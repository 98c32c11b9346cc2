"""linkrisk: how many people could an attacker re-identify in a masked microdata file?

Public API (pandas DataFrames in, results out)::

    import linkrisk
    orig = linkrisk.datasets.synthetic(2000, 8, seed=1)
    rel = linkrisk.mask(orig, "noise", a=0.25, seed=2)
    linkrisk.attack(orig, rel, method="dbrl").rate
"""

from __future__ import annotations

from . import datasets
from ._version import __version__
from .attacks import ATTACKS, AttackResult, attack
from .errors import LinkriskError


def mask(df, method, columns=None, seed=None, **params):  # noqa: ANN001, ANN201
    """Mask ``df`` with ``method`` (see :func:`linkrisk.masking.mask`)."""
    from .masking import mask as _mask

    return _mask(df, method, columns=columns, seed=seed, **params)


def assess(original, masked, qi=None, attacks="all", **kw):  # noqa: ANN001, ANN201
    """Every applicable attack and the risk/utility measures (see :func:`linkrisk.assess.assess`)."""
    from .assessment import assess as _assess

    return _assess(original, masked, qi, attacks, **kw)


def study(config, **kw):  # noqa: ANN001, ANN201
    """Run a replicated study (see :func:`linkrisk.experiments.study`)."""
    from .experiments import study as _study

    return _study(config, **kw)


def choose(original, methods=None, **kw):  # noqa: ANN001, ANN201
    """Sweep masking methods and recommend a release (see
    :func:`linkrisk.experiments.choose.choose`)."""
    from .experiments.choose import choose as _choose

    return _choose(original, methods, **kw)


__all__ = ["ATTACKS", "AttackResult", "LinkriskError", "assess", "attack", "choose", "datasets",
           "mask", "study",
           "__version__"]
