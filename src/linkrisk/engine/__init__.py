"""linkrisk's two engines.

* :mod:`.nearest` — the nearest-set engine every per-record attack shares (candidate sets
  with ties, blocked compiled kernels, the faiss screen, Dask distribution, transforms)
  and the rules all results follow (:mod:`.nearest.rules`).
* :mod:`.matching` — global matching, used by ``gdbrl`` only: exact k-NN candidate graphs,
  sparse assignment, transport between repeated records, the optimality certificate.

The names below are re-exported for convenience; ``matching`` builds on ``nearest``, and
neither imports anything above the engine.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .matching import (
        KNN,
        Matching,
        SparseAssignment,
        allowed_edges,
        knn,
        min_cost_matching,
    )
    from .nearest import (
        DEFAULT_MEMORY_BUDGET,
        RTOL,
        NearestSets,
        Pairwise,
        Tables,
        average_ranks,
        covariance,
        nearest_sets,
        standardize,
        whiten,
        whitening,
    )

#: the re-exports load their package on first use, so that importing a light module such
#: as :mod:`.budget` does not load (and numba-decorate) every kernel (issue 43)
_MATCHING = {"KNN", "Matching", "SparseAssignment", "allowed_edges", "knn",
             "min_cost_matching"}


def __getattr__(name: str) -> Any:
    if name in __all__:
        import importlib

        pkg = importlib.import_module(".matching" if name in _MATCHING else ".nearest",
                                      __name__)
        value = getattr(pkg, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["DEFAULT_MEMORY_BUDGET", "RTOL", "NearestSets", "Tables", "nearest_sets",
           "average_ranks", "covariance", "standardize", "whiten", "whitening", "KNN",
           "Pairwise", "knn", "Matching", "min_cost_matching", "SparseAssignment",
           "allowed_edges"]
