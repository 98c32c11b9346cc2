"""Rank-based record linkage (RBRL, Nin, Herranz & Torra 2008; SPEC §2).

Each attribute is replaced by its rank, computed separately in A and in B, with average
ranks for ties (divided by the file size when |A| ≠ |B|). Sum: Σ_j |r_aj − s_bj|;
Max: max_j |r_aj − s_bj|. Ranks are multiples of ½, so equal-size scores are exact and
ties are real ties.
"""

from __future__ import annotations

from ..engine import average_ranks
from .base import LinkContext, Outcome, register


def _rbrl(ctx: LinkContext, metric: str) -> Outcome:
    a, b = ctx.numeric()
    norm = a.shape[0] != b.shape[0]
    ra, rb = average_ranks(a, normalize=norm), average_ranks(b, normalize=norm)
    return ctx.nearest(ra, rb, metric)


@register("rbrl_sum", "RBRL-Sum: sum over attributes of rank differences")
def rbrl_sum(ctx: LinkContext) -> Outcome:
    """score(a,b) = Σ_j |rank_A(a_j) − rank_B(b_j)|."""
    return _rbrl(ctx, "l1")


@register("rbrl_max", "RBRL-Max: largest rank difference over attributes")
def rbrl_max(ctx: LinkContext) -> Outcome:
    """score(a,b) = max_j |rank_A(a_j) − rank_B(b_j)|."""
    return _rbrl(ctx, "linf")
