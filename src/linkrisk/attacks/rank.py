"""Rank-based record linkage (RBRL, Muralidhar & Domingo-Ferrer 2016; docs/methods.md).

Each attribute is replaced by its rank, computed separately in A and in B, with average
ranks for ties (divided by the file size when |A| ≠ |B|). Sum: Σ_j |r_aj − s_bj|;
Max: max_j |r_aj − s_bj|. Ranks are multiples of ½, so equal-size scores are exact and
ties are real ties.
"""

from __future__ import annotations

from .base import LinkContext, Outcome, register
from .distance import linked


@register("rbrl_sum", "RBRL-Sum: sum over attributes of rank differences")
def rbrl_sum(ctx: LinkContext) -> Outcome:
    """score(a,b) = Σ_j |rank_A(a_j) − rank_B(b_j)|."""
    return linked(ctx, "rank_sum")


@register("rbrl_max", "RBRL-Max: largest rank difference over attributes")
def rbrl_max(ctx: LinkContext) -> Outcome:
    """score(a,b) = max_j |rank_A(a_j) − rank_B(b_j)|."""
    return linked(ctx, "rank_max")
