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

import os
import sys
from typing import TYPE_CHECKING, Any

from ._version import __version__
from .errors import LinkriskError, LinkriskWarning
from .options import check_seed, parse_params, parse_percent


def numba_cache_dir(package_dir: str | None = None) -> str | None:
    """Where numba caches linkrisk's compiled kernels when the package folder is read-only.

    Parameters
    ----------
    package_dir : str, optional
        The folder to check (default: this package's).

    Returns
    -------
    str or None
        None when ``NUMBA_CACHE_DIR`` is set or ``package_dir`` is writable (numba then
        writes ``__pycache__`` beside the sources), else ``$XDG_CACHE_HOME/linkrisk/numba``
        (``~/.cache/linkrisk/numba`` without ``XDG_CACHE_HOME``): the user cache directory
        of an installed wheel, so that only its first run compiles (issue 43).
    """
    if os.environ.get("NUMBA_CACHE_DIR"):
        return None
    pkg = package_dir or os.path.dirname(os.path.abspath(__file__))
    cache = os.path.join(pkg, "__pycache__")
    if os.access(pkg, os.W_OK) and (not os.path.isdir(cache) or os.access(cache, os.W_OK)):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "linkrisk", "numba")


def _set_numba_cache() -> None:
    """Point numba's cache at :func:`numba_cache_dir` before any kernel is decorated (also
    when numba was imported first)."""
    where = numba_cache_dir()
    if where is None:
        return
    os.environ["NUMBA_CACHE_DIR"] = where
    if "numba" in sys.modules:
        from numba.core import config

        config.CACHE_DIR = where


_set_numba_cache()  # before any module that decorates kernels is imported

if TYPE_CHECKING:  # imported on first use (``_LAZY``): ``import linkrisk`` stays light
    from . import catalog, datasets
    from .attacks import (
        ATTACKS,
        AttackResult,
        AttackResults,
        LinkSettings,
        attack,
        resolve_methods,
    )
    from .data import parse_columns, parse_kinds
    from .engine.budget import DEFAULT_MEMORY_BUDGET
    from .experiments.choose import parse_method, sidecar_path
    from .experiments.choose_report import require_matplotlib
    from .measures import records_at_risk


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
        ``progress``, ``block``, as :func:`linkrisk.experiments.study`.

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


def warmup_in_background(only_if_needed=False):
    """Compile the attacks' kernels in a detached process at the lowest CPU priority
    (``linkrisk warmup --background``), so that later runs load them from numba's cache
    (issue 43; :mod:`linkrisk.engine.background`). The command line calls it with
    ``only_if_needed=True`` after every command.

    Parameters
    ----------
    only_if_needed : bool, default False
        Start it only when this process ran an attack on numpy because its kernels were
        not compiled yet (the small-problem path of a first run).

    Returns
    -------
    int or None
        The process id, or None: nothing needed, one is already compiling into this
        cache, or ``LINKRISK_BACKGROUND_COMPILE=0``.
    """
    from .engine import background

    return background.start_if_deferred() if only_if_needed else background.start()


def warmup(progress=None, masking=True, exclusive=False):
    """Compile the numeric kernels of every attack, measure and masking method now, so
    that no later run waits for numba (``linkrisk warmup``; issue 43).

    Masks a small synthetic file (and a categorical version of it) with every masking
    method and assesses a rank-swapped and a PRAM-ed release with every attack that
    applies. Compiled kernels go to numba's cache (``__pycache__`` beside the sources,
    ``$NUMBA_CACHE_DIR``, or :func:`numba_cache_dir` for a read-only install), so a second
    warm-up only loads them. Results are discarded.

    Parameters
    ----------
    progress : callable, optional
        Called with the label of each step before it runs.
    masking : bool, default True
        False: the attacks' kernels only (the background compilation after a cold
        command, :mod:`linkrisk.engine.background`, which never deferred a masking
        kernel).
    exclusive : bool, default False
        Hold the lock of the background compilation
        (:func:`warmup_in_background`) while compiling, and do nothing (return ``[]``)
        when another live process holds it.

    Returns
    -------
    list of (str, float)
        Each step's label and seconds.
    """
    import time
    import warnings

    from .catalog import METHODS
    from .datasets import synthetic
    from .engine.nearest import small

    if exclusive:
        from .engine import background

        with background.hold_lock() as mine:
            return warmup(progress, masking) if mine else []
    num = synthetic(400, 12, seed=0)
    cat = num.rank(method="first").floordiv(80).astype(int).astype(str)
    steps = []

    def step(label, fn):
        if progress is not None:
            progress(label)
        t = time.perf_counter()
        try:
            fn()
        except LinkriskError:  # a method that does not apply to this file
            pass
        steps.append((label, time.perf_counter() - t))

    # small problems take the kernels too here (engine/nearest/small.py): compile them
    with warnings.catch_warnings(), small.mode("off"):
        warnings.simplefilter("ignore")
        for name in METHODS if masking else ():
            for kind, df in (("numeric", num), ("categorical", cat)):
                step(f"mask {name} ({kind})", lambda name=name, df=df: mask(df, name, seed=1))
        swapped = mask(num, "rank_swap", seed=1, p=5)
        step("assess rank_swap(p=5) (numeric attacks)",
             lambda: assess(num, swapped, rank_swap_p=5, sensitive=["v12"]))
        pram = mask(cat, "pram", seed=1)
        step("assess pram (categorical attacks)", lambda: assess(cat, pram))
        # blocking has kernels of its own (batched small blocks, prl's per-block walks)
        key = {"g": num.index % 4}
        step("assess rank_swap(p=5) blocked (numeric attacks)",
             lambda: assess(num.assign(**key), swapped.assign(**key), block=["g"],
                            rank_swap_p=5, sensitive=["v12"]))
        step("assess pram blocked (categorical attacks)",
             lambda: assess(cat.assign(**key), pram.assign(**key), block=["g"]))
        # dbrl's faiss screen runs from 5·10⁷ pairs on: its kernels, on a small file
        from .engine.nearest import faiss_screen, nearest_sets

        if faiss_screen.available():
            step("dbrl faiss screen", lambda: nearest_sets(
                num.to_numpy(float), swapped.to_numpy(float), screen="faiss"))
    return steps


#: public names defined in heavier modules, imported on first use: ``import linkrisk``
#: (and ``linkrisk --help``) loads neither pandas nor numba nor the engine's kernels
#: (issue 43; ``python benchmarks/coldstart.py``)
_LAZY_NAMES = {  # module -> the names it provides
    "linkrisk.attacks": ("ATTACKS", "AttackResult", "AttackResults", "LinkSettings", "attack",
                         "resolve_methods"),
    "linkrisk.data": ("parse_columns", "parse_kinds"),
    "linkrisk.engine.budget": ("DEFAULT_MEMORY_BUDGET",),
    "linkrisk.measures": ("records_at_risk",),
    "linkrisk.experiments.choose": ("parse_method", "sidecar_path"),
    "linkrisk.experiments.choose_report": ("require_matplotlib",),
}
_LAZY = {"datasets": ("linkrisk.datasets", None), "catalog": ("linkrisk.catalog", None),
         **{name: (mod, name) for mod, names in _LAZY_NAMES.items() for name in names}}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        mod, attr = _LAZY[name]
        m = importlib.import_module(mod)
        value = m if attr is None else getattr(m, attr)
        globals()[name] = value  # later look-ups skip __getattr__
        return value
    raise AttributeError(f"module 'linkrisk' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = ["ATTACKS", "DEFAULT_MEMORY_BUDGET", "AttackResult", "AttackResults", "LinkSettings", "LinkriskError",
           "LinkriskWarning", "assess", "attack", "catalog", "check_seed", "choose", "datasets",
           "mask", "parse_columns", "parse_kinds", "parse_method", "parse_params",
           "parse_percent", "records_at_risk", "require_matplotlib", "resolve_methods",
           "sidecar_path", "study", "numba_cache_dir", "warmup", "warmup_in_background",
           "__version__"]
