"""linkrisk: how many people could an attacker re-identify in a masked microdata file?

Public API (pandas DataFrames in, results out)::

    import linkrisk
    orig = linkrisk.datasets.synthetic(2000, 8, seed=1)
    rel = linkrisk.mask(orig, "noise", a=0.25, seed=2)
    linkrisk.attack(orig, rel, method="dbrl").rate
    s = linkrisk.LinkSettings(seed=3)          # the linkage options, validated once
    linkrisk.attack(orig, rel, ["dbrl", "rbrl_sum"], settings=s)["rbrl_sum"].rate

The command line (``linkrisk.cli``) uses only the names of ``__all__`` and the public
modules :mod:`linkrisk.fileio` and :mod:`linkrisk.errors`.
"""

from __future__ import annotations

from typing import Any

from . import datasets
from ._version import __version__
from .attacks import ATTACKS, AttackResult, AttackResults, LinkSettings, attack, resolve_methods
from .data import parse_columns, parse_kinds
from .errors import LinkriskError, LinkriskWarning
from .options import check_seed, parse_params, parse_percent


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


#: public names defined in heavier modules, imported on first use
_LAZY = {
    "catalog": ("linkrisk.catalog", None),
    "records_at_risk": ("linkrisk.assessment", "records_at_risk"),
    "parse_method": ("linkrisk.experiments.choose", "parse_method"),
    "sidecar_path": ("linkrisk.experiments.choose", "sidecar_path"),
    "require_matplotlib": ("linkrisk.experiments.choose_report", "require_matplotlib"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        mod, attr = _LAZY[name]
        m = importlib.import_module(mod)
        return m if attr is None else getattr(m, attr)
    raise AttributeError(f"module 'linkrisk' has no attribute {name!r}")


__all__ = ["ATTACKS", "AttackResult", "AttackResults", "LinkSettings", "LinkriskError",
           "LinkriskWarning", "assess", "attack", "catalog", "check_seed", "choose", "datasets",
           "mask", "parse_columns", "parse_kinds", "parse_method", "parse_params",
           "parse_percent", "records_at_risk", "require_matplotlib", "resolve_methods",
           "sidecar_path", "study", "__version__"]
