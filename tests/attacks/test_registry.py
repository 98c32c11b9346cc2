"""The attack registry's order is stated in attacks/registry.py (ATTACK_MODULES), not
left to the order in which Python imports the modules."""

import subprocess
import sys

import pytest

from linkrisk.attacks import ATTACKS
from linkrisk.attacks.base import register
from linkrisk.attacks.registry import ATTACK_MODULES, order_attacks

#: the order ``linkrisk methods`` and ``-m all`` show (dbrl and its variants first)
ORDER = ["dbrl", "dbrl_l1", "dbrl2", "mahalanobis", "mahalanobis0", "kernel", "dbrl_mixed",
         "dbrl_hamming", "gdbrl", "prl", "rbrl_sum", "rbrl_max", "rsrl", "rsrl_union"]


@pytest.fixture
def saved_registry():
    saved = dict(ATTACKS)
    yield
    ATTACKS.clear()
    ATTACKS.update(saved)


def test_registry_order_is_the_documented_one():
    assert list(ATTACKS) == ORDER


@pytest.mark.parametrize("first", ["rankswap", "rank", "probabilistic", "globalmatch"])
def test_order_does_not_depend_on_which_module_is_imported_first(first):
    code = (f"import linkrisk.attacks.{first}\n"
            "from linkrisk.attacks import ATTACKS\nprint(','.join(ATTACKS))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out.split(",") == ORDER


def test_order_follows_attack_modules(saved_registry):
    order_attacks(ATTACK_MODULES[::-1])
    modules = [spec.run.__module__.split(".")[2] for spec in ATTACKS.values()]
    assert modules == sorted(modules, key=["rankswap", "rank", "probabilistic",
                                           "globalmatch", "distance"].index)
    order_attacks()
    assert list(ATTACKS) == ORDER


def test_an_attack_of_an_unlisted_module_is_refused(saved_registry):
    register("unlisted_attack", "a test attack")(lambda ctx: None)
    with pytest.raises(RuntimeError, match="not in linkrisk.attacks.registry.ATTACK_MODULES"):
        order_attacks()
