"""The recommendation of ``linkrisk choose`` (the rule in the docstring of
:mod:`linkrisk.experiments.choose`): the feasible points and near ties, the recommended
or closest point, why each other method loses, and a suggestion when no point is
feasible."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .grid import fmt_value

RULE_WITH_LIMIT = ("feasible: upper 95 % bound of worst-case risk ≤ the limit; among them the "
                   "least mean IL; near ties (mean IL ≤ the upper 95 % bound of the least) go "
                   "to the least mean risk, then least Score, then deterministic, then sweep "
                   "order")
RULE_SCORE = ("least mean Score; near ties (mean Score ≤ the upper 95 % bound of the least) go "
              "to the least mean risk, then least IL, then deterministic, then sweep order")



def recommend(points: pd.DataFrame, max_risk: float | None
              ) -> tuple[int | None, int | None, list[str], str]:
    """Apply the rule of the module docstring to a points table; returns (recommended
    index or None, closest index when none is feasible, reasons the others lose, a
    suggestion when none is feasible)."""
    p = points
    feasible, ties = _feasible_and_ties(p, max_risk)
    if not feasible.any():
        closest = min(p.index, key=lambda i: (p.at[i, "risk_hi"], p.at[i, "risk_mean"],
                                              p.at[i, "IL_mean"], p.at[i, "order"]))
        return None, closest, _reasons_none(p, closest, max_risk), _suggest(p, max_risk)
    other = "Score" if max_risk is not None else "IL"
    t = p.loc[ties]
    rec = min(t.index, key=lambda i: (t.at[i, "risk_mean"], t.at[i, f"{other}_mean"],
                                      not t.at[i, "deterministic"], t.at[i, "order"]))
    return rec, None, _reasons(p, rec, feasible, ties, max_risk), ""


def _feasible_and_ties(p: pd.DataFrame, max_risk: float | None) -> tuple[pd.Series, pd.Index]:
    """Feasible points (upper risk bound ≤ limit; all without a limit) and the near ties of
    the best one (goal mean ≤ the best's upper bound; goal IL with a limit, else Score)."""
    if max_risk is None:  # a point without a Score (an attack DR needs did not run) is out
        feasible = p["Score_mean"].notna()
        goal = "Score"
    else:
        feasible = p["risk_hi"] <= max_risk + 1e-12
        goal = "IL"
    if not feasible.any():
        return feasible, pd.Index([])
    f = p[feasible]
    least = min(f.index, key=lambda i: (f.at[i, f"{goal}_mean"], f.at[i, "order"]))
    bound = f.at[least, f"{goal}_hi"]
    return feasible, f.index[f[f"{goal}_mean"] <= bound + 1e-12]


def _rel(a: float, b: float) -> str:
    """'40 % less' / '25 % more' of a relative to b."""
    if b == 0:
        return "the same" if a == 0 else "more"
    d = 100.0 * (a - b) / abs(b)
    return f"{abs(d):.0f} % {'less' if d < 0 else 'more'}"


def _risk_txt(r: pd.Series) -> str:
    sd = f" ± {r['deciding_sd']:.1f}" if r["n"] > 1 and np.isfinite(r["deciding_sd"]) else ""
    return f"{r['deciding_attack']} re-identifies {r['deciding_mean']:.1f}{sd} %"


def _reasons(p: pd.DataFrame, rec: int, feasible: pd.Series, ties: pd.Index,
             max_risk: float | None) -> list[str]:
    """Why the others lose, per method. With a limit: the method's most tempting point
    over the limit (of the points with less IL than the recommended one, the one with the
    least risk) and its best point within the limit (least IL); a method with no point
    within the limit also gets its safest point. Without a limit: its best Score."""
    b = p.loc[rec]
    out = []
    for _, part in p.groupby("label", sort=False):
        others = part.drop(index=[rec], errors="ignore")
        if others.empty:
            continue
        if max_risk is None:
            i = min(others.index, key=lambda j: (others.at[j, "Score_mean"],
                                                 others.at[j, "order"]))
            out.append(_why(p.loc[i], b, True, i in ties, max_risk))
            continue
        tempting = others[(~feasible[others.index]) & (others["IL_mean"] < b["IL_mean"])]
        shown = None
        if len(tempting):
            shown = min(tempting.index, key=lambda j: (tempting.at[j, "risk_mean"],
                                                       tempting.at[j, "order"]))
            out.append(_why(p.loc[shown], b, False, False, max_risk))
        within = others[feasible[others.index]]
        if len(within):
            i = min(within.index, key=lambda j: (within.at[j, "IL_mean"], within.at[j, "order"]))
            out.append(_why(p.loc[i], b, True, i in ties, max_risk))
        elif not feasible[part.index].any():
            i = min(part.index, key=lambda j: (part.at[j, "risk_hi"], part.at[j, "risk_mean"],
                                               part.at[j, "order"]))
            r = p.loc[i]
            if i == shown:
                out[-1] += "; no setting of it meets the limit"
                continue
            out.append(f"{r['label']}: no setting meets the limit; even the safest, "
                       f"{r['param']}={fmt_value(r['value'])}, {_risk_txt(r).replace(' re-', ' still re-')}"
                       f" (95 % upper bound {r['risk_hi']:.1f} %)")
    return out


def _why(r: pd.Series, b: pd.Series, feasible: bool, tie: bool, max_risk: float | None) -> str:
    if max_risk is not None and not feasible:
        less = r["IL_mean"] < b["IL_mean"]
        il = (f"has {_rel(r['IL_mean'], b['IL_mean'])} IL {'but' if less else 'and'}"
              if r["IL_mean"] != b["IL_mean"] else "has the same IL but")
        return (f"{r['point']} {il} {_risk_txt(r)} (95 % upper bound "
                f"{r['risk_hi']:.1f} % > {max_risk:g} %)")
    if tie:
        return (f"{r['point']} is a near tie (its {'IL' if max_risk is not None else 'Score'} "
                f"lies within the interval of the best) but its worst-case risk is "
                f"{r['risk_mean']:.2f} % vs {b['risk_mean']:.2f} %"
                + ("" if r["risk_mean"] != b["risk_mean"] else " (same; later tie-breaks)"))
    if max_risk is not None:
        return (f"{r['point']} meets the limit ({r['risk_hi']:.1f} %) but has "
                f"{_rel(r['IL_mean'], b['IL_mean'])} IL ({r['IL_mean']:.2f} vs "
                f"{b['IL_mean']:.2f})")
    return (f"{r['point']} has Score {r['Score_mean']:.2f} vs {b['Score_mean']:.2f} "
            f"(IL {r['IL_mean']:.2f}, {_risk_txt(r)})")


def _reasons_none(p: pd.DataFrame, closest: int, max_risk: float | None) -> list[str]:
    out = []
    for _, part in p.groupby("label", sort=False):
        i = min(part.index, key=lambda j: (part.at[j, "risk_hi"], part.at[j, "risk_mean"],
                                           part.at[j, "order"]))
        r = p.loc[i]
        out.append(f"{r['label']}: safest point {r['param']}={fmt_value(r['value'])}, but "
                   f"{_risk_txt(r)} (95 % upper bound {r['risk_hi']:.1f} % > {max_risk:g} %)")
    return out


def _suggest(p: pd.DataFrame, max_risk: float | None) -> str:
    """What to try next: extend the grid of the closest methods in the direction in which
    their risk fell, or protect fewer QIs."""
    tips = []
    for label, part in sorted(p.groupby("label", sort=False),
                              key=lambda kv: kv[1]["risk_hi"].min()):
        part = part.sort_values("order")
        if len(part) < 2 or part["param"].iloc[0] is None:
            continue
        first, last = part.iloc[0], part.iloc[-1]
        end = first if first["risk_mean"] < last["risk_mean"] else last
        if not isinstance(end["value"], (int, float, np.number)):
            continue
        tips.append(f"{label} beyond {end['param']}={fmt_value(end['value'])} (its risk falls "
                    f"that way: {part['risk_mean'].max():.1f} → {part['risk_mean'].min():.1f} %)")
        if len(tips) == 2:
            break
    tip = "Try " + " or ".join(tips) + "; " if tips else "Try stronger settings; "
    return (tip + "or another method, fewer QIs released (--qi), a higher limit, or fewer "
            "attack assumptions (--risk-attacks) if some attacks do not fit your scenario.")


def verdicts(p: pd.DataFrame, rec: int | None, closest: int | None,
              max_risk: float | None) -> pd.DataFrame:
    p = p.copy()
    feasible, ties = _feasible_and_ties(p, max_risk)
    p["feasible"] = feasible
    p["near_tie"] = p.index.isin(ties) & (p.index != rec)
    p["recommended"] = p.index == rec
    verdict = []
    for i, r in p.iterrows():
        if i == rec:
            verdict.append("recommended")
        elif rec is None:
            verdict.append("closest to the limit" if i == closest else
                           f"risk {r['risk_hi']:.1f} % > {max_risk:g} %")
        else:
            verdict.append(_why(r, p.loc[rec], bool(r["feasible"]), bool(r["near_tie"]),
                                max_risk)
                           .removeprefix(f"{r['point']} "))
    p["verdict"] = verdict
    return p
