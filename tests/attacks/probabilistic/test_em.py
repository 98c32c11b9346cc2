"""prl's Fellegi-Sunter EM (em.py)."""

import numpy as np
import pytest

from linkrisk.attacks import make_context
from linkrisk.attacks import probabilistic as P
from tests.attacks.probabilistic.conftest import (
    pram_files,
)


def test_em_recovers_known_m_and_u():
    cards = [3, 5, 8, 12, 20, 6, 10, 4]
    keep = [0.9, 0.8, 0.7, 0.95, 0.6, 0.85, 0.75, 0.9]
    a, b = pram_files(2000, cards, keep, 3)
    ctx, _ = make_context(a, b)
    cmp = P.compare(ctx)
    cnt = P.pattern_counts(cmp)
    g = P.bits(8, np.arange(256))
    tc = np.bincount(P.true_patterns(cmp, ctx.truth), minlength=256)
    true_m = (tc @ g) / 2000                      # agreement rate over the true pairs
    true_u = ((cnt - tc) @ g) / (cnt.sum() - 2000)  # over all other pairs
    for fixed in (None, 2000 / cnt.sum()):
        fit = P.em(cnt, 8, 1 / 2000, fixed_p=fixed)
        assert fit.converged and (fit.m >= fit.u).all()
        np.testing.assert_allclose(fit.m, true_m, atol=0.03)
        np.testing.assert_allclose(fit.u, true_u, atol=1e-3)
        assert fit.p * cnt.sum() == pytest.approx(2000, rel=0.1)
    np.testing.assert_allclose(true_m, keep, atol=0.03)
