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


def mask(df, method, columns=None, seed=None, **params):
    """Mask ``df`` with ``method`` (:func:`linkrisk.masking.mask`; docs/methods.md, Masking
    methods).

    Parameters
    ----------
    df : pandas.DataFrame
        The original file.
    method : str
        A masking method (``linkrisk methods`` lists them): noise, mdav, rankswap, pram, ….
    columns : sequence of str, optional
        The columns to mask (default: those the method applies to).
    seed : int or numpy.random.Generator, optional
        Seed of every random step: same seed, same output.
    **params
        The method's parameters.

    Returns
    -------
    pandas.DataFrame
        A masked copy of ``df`` (same rows, index and columns).
    """
    from .masking import mask as _mask

    return _mask(df, method, columns=columns, seed=seed, **params)


def assess(original, masked, qi=None, attacks="all", **kw):
    """Every applicable attack and the risk/utility measures of a release
    (:func:`linkrisk.assessment.assess`; docs/methods.md, Measures).

    Parameters
    ----------
    original, masked : pandas.DataFrame
        The original file (what the attacker knows) and the release.
    qi : str or sequence of str, optional
        The quasi-identifiers (default: the common columns, leaving out id-like, weight-like
        and unchanged ones).
    attacks : str or sequence of str
        ``"all"`` (every attack applicable to the QI kinds) or a list of attack names.
    **kw
        ``ids``, ``kinds``, ``rank_swap_p``, ``params``, ``seed``, ``max_risk``, ``weights``,
        ``household`` …, as :func:`linkrisk.assessment.assess`.

    Returns
    -------
    linkrisk.assessment.Assessment
        The attack results, the skipped attacks with the reason, the measures (DLD, PLD,
        RSLD, ID, IL, PIL, DR, Score) and the per-record risk.

    References
    ----------
    Domingo-Ferrer, J. & Torra, V. (2001). A quantitative comparison of disclosure control
    methods for microdata. In *Confidentiality, Disclosure and Data Access*.
    """
    from .assessment import assess as _assess

    return _assess(original, masked, qi, attacks, **kw)


def study(config, **kw):
    """Run a replicated study of masking methods × attacks (:func:`linkrisk.experiments.study`).

    Parameters
    ----------
    config : str, pathlib.Path or mapping
        A TOML/YAML path, a built-in study name or a parsed mapping.
    **kw
        ``data_dir``, ``out_dir``, ``replications``, ``processes``, ``quick``, ``force``,
        ``progress``, as :func:`linkrisk.experiments.study`.

    Returns
    -------
    linkrisk.experiments.StudyResult
        ``rows`` (one per cell, replication and attack or measure), ``summary`` (mean, std
        and 95 % interval per cell) and the files written.
    """
    from .experiments import study as _study

    return _study(config, **kw)


def choose(original, methods=None, **kw):
    """Sweep masking methods and recommend a release (:func:`linkrisk.experiments.choose.choose`;
    docs/methods.md).

    Parameters
    ----------
    original : str, pathlib.Path or pandas.DataFrame
        The file to release (a path, a reference dataset name or a DataFrame).
    methods : sequence of str, optional
        Grid specs such as ``"rank_swap:p=2..20"`` (default: the methods of the data kind).
    **kw
        ``max_risk``, ``risk_attacks``, ``replications``, ``qi``, ``confidential``, ``seed``
        …, as :func:`linkrisk.experiments.choose.choose`.

    Returns
    -------
    linkrisk.experiments.choose.Choice
        Every candidate with its risk and utility, and the recommendation.
    """
    from .experiments.choose import choose as _choose

    return _choose(original, methods, **kw)


#: public names defined in heavier modules, imported on first use
_LAZY = {
    "catalog": ("linkrisk.catalog", None),
    "records_at_risk": ("linkrisk.measures", "records_at_risk"),
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
