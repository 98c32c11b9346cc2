"""The order of the attack registry, stated once.

Each attack module registers its attacks with :func:`.base.register` when it is
imported, in source order. Which module Python imports first is an accident of the
import graph (``globalmatch``, ``rank`` and ``rankswap`` import ``distance``), so the
order across modules is :data:`ATTACK_MODULES` instead: :func:`order_attacks` puts
``ATTACKS`` in that order once every module is imported. That order is the one users
see: ``linkrisk methods``, docs/methods.md, ``method="all"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType

from . import distance, globalmatch, probabilistic, rank, rankswap
from .base import ATTACKS

#: the modules that register attacks, in the registry's order: dbrl and its variants
#: first. A new attack module is added here (an attack of a module not listed is an error).
ATTACK_MODULES: tuple[ModuleType, ...] = (distance, globalmatch, probabilistic, rank, rankswap)


def order_attacks(modules: Sequence[ModuleType] = ATTACK_MODULES) -> None:
    """Reorder ``ATTACKS`` in place: by the position in ``modules`` of the module (or
    package) that defines each attack's function, each module's attacks in registration
    order. An attack whose module is not listed raises a ``RuntimeError`` naming it, so a
    new module cannot land at an arbitrary place."""
    names = [m.__name__ for m in modules]

    def position(module: str) -> int:
        for i, name in enumerate(names):
            if module == name or module.startswith(name + "."):
                return i
        raise RuntimeError(f"attack module {module} is not in "
                           "linkrisk.attacks.registry.ATTACK_MODULES; add it there")

    ordered = sorted(ATTACKS.items(), key=lambda item: position(item[1].run.__module__))
    ATTACKS.clear()
    ATTACKS.update(ordered)


order_attacks()
