"""All synthetic-data measures of one release, with a verdict (docs/methods.md,
"Synthetic data")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..errors import LinkriskError
from .anonymeter import AttackRisk, inference, linkability, singling_out
from .distance import DistanceRisk, distance_risk


@dataclass
class SyntheticRisk:
    """What :func:`synthetic_risk` found: ``distance`` (DCR, NNDR, copies, membership
    inference) and ``attacks`` (anonymeter's attacks by name). ``worst``: the largest of the
    attacks' risks and the membership advantage, in [0, 1]."""

    distance: DistanceRisk
    attacks: dict[str, AttackRisk]
    settings: dict[str, Any]
    notes: list[str] = field(default_factory=list)

    @property
    def worst(self) -> tuple[str, float]:
        cand = [(k, a.risk) for k, a in self.attacks.items()]
        mia = self.distance.summary.get("membership")
        if mia:
            cand.append(("membership advantage", mia["advantage"]))
        return max(cand, key=lambda t: t[1]) if cand else ("none", 0.0)

    @property
    def exceeds(self) -> bool:
        mx = self.settings.get("max_risk")
        return mx is not None and 100.0 * self.worst[1] > mx

    def to_dict(self) -> dict[str, Any]:
        return {"threat_model": "synthetic", "settings": self.settings,
                "distance": self.distance.summary,
                "attacks": {k: a.to_dict() for k, a in self.attacks.items()},
                "worst": {"measure": self.worst[0], "risk": self.worst[1]},
                "exceeds": self.exceeds, "notes": self.notes + self.distance.notes}

    def text(self) -> str:
        """The report's synthetic-data section (plain text)."""
        d = self.distance.summary
        pct = lambda v: f"{100 * v:.2f} %"  # noqa: E731
        lines = ["Synthetic data (no record of the release is a version of an original one)",
                 f"  records: synthetic {d['n_synthetic']:,}, training {d['n_train']:,}, "
                 f"holdout {d['n_holdout']:,}" if d["n_holdout"] is not None else
                 f"  records: synthetic {d['n_synthetic']:,}, training {d['n_train']:,}, "
                 "no holdout",
                 "  Distance to closest record (standardized QIs; median, 5th percentile):",
                 f"    to training {d['dcr_train_median']:.4g}, {d['dcr_train_p05']:.4g}"
                 f"; exact copies of training records {d['exact_copies_train']:,} "
                 f"({pct(d['exact_copies_train_share'])})"]
        if d.get("dcr_holdout_median") is not None:
            lines.append(f"    to holdout  {d['dcr_holdout_median']:.4g}, "
                         f"{d['dcr_holdout_p05']:.4g}; exact copies of holdout records "
                         f"{d['exact_copies_holdout']:,}")
            lo, hi = d["closer_to_train_ci"]
            lines.append(f"    closer to a training than to a holdout record: "
                         f"{pct(d['closer_to_train_share'])} [{pct(lo)}, {pct(hi)}] "
                         "(50 % when nothing is memorised)")
        if "nndr_train_median" in d:
            lines.append(f"    nearest-neighbour distance ratio to training: median "
                         f"{d['nndr_train_median']:.3f}, 5th percentile "
                         f"{d['nndr_train_p05']:.3f} (over {d['nndr_records']:,} synthetic "
                         "records; near 0: close to one training record only)")
        m = d.get("membership")
        if m:
            ci = lambda k: (f" [{m[k + '_ci'][0]:.3f}, {m[k + '_ci'][1]:.3f}]"  # noqa: E731
                            if m.get(k + "_ci") else "")
            tprs = ", ".join(f"TPR at FPR {k.rsplit('_', 1)[1]}: {m[k]:.3f}{ci(k)}"
                             for k in m if k.startswith("tpr_at_fpr_") and not k.endswith("_ci"))
            lines += ["  Membership inference (distance to the closest synthetic record tells "
                      "training from holdout records):",
                      f"    AUC {m['auc']:.3f}{ci('auc')} (0.5: no better than chance); "
                      f"advantage max(TPR−FPR) {m['advantage']:.3f}{ci('advantage')}",
                      f"    {tprs}"]
        if self.attacks:
            lines.append("  anonymeter attacks (Giomi et al. 2023), risk [95 % interval]"
                         if self.settings.get("confidence_level", 0.95) == 0.95 else
                         "  anonymeter attacks (Giomi et al. 2023), risk [interval]")
        for name, a in self.attacks.items():
            what = ("residual over holdout" if a.control_rate is not None
                    else "no holdout: attack success rate")
            lines.append(f"    {name:<34} {a.risk:.4f} [{a.ci[0]:.4f}, {a.ci[1]:.4f}] "
                         f"({what}; training {a.rate:.4f}"
                         + (f", holdout {a.control_rate:.4f}" if a.control_rate is not None
                            else "") + f", baseline {a.baseline_rate:.4f})")
        w, r = self.worst
        verdict = f"  Verdict (synthetic): worst {w} {pct(r)}"
        mx = self.settings.get("max_risk")
        if mx is not None:
            verdict += f"; {'EXCEEDS' if self.exceeds else 'within'} the acceptable {mx:g} %"
        lines.append(verdict)
        lines += [f"  note: {n}" for n in self.notes + self.distance.notes]
        return "\n".join(lines)


def synthetic_risk(original: pd.DataFrame, synthetic: pd.DataFrame,
                   holdout: pd.DataFrame | None = None, *, qi: Sequence[str] | None = None,
                   sensitive: Sequence[str] | None = None,
                   aux_cols: tuple[Sequence[str], Sequence[str]] | None = None,
                   n_neighbors: int = 1, singling_out_attacks: int = 500, n_cols: int = 3,
                   max_attempts: int | None = 200_000, seed: int = 0,
                   confidence_level: float = 0.95, max_risk: float | None = None,
                   n_boot: int = 200) -> SyntheticRisk:
    """Every synthetic-data measure of ``synthetic`` against its training file ``original``.

    Parameters
    ----------
    original : pandas.DataFrame
        The generator's training records.
    synthetic : pandas.DataFrame
        The synthetic release (any number of rows, no pairing with ``original``).
    holdout : pandas.DataFrame, optional
        Original records the generator never saw (anonymeter's control set).
    qi : sequence of str, optional
        The columns used (default: the columns common to the files).
    sensitive : sequence of str, optional
        Secrets of the inference attack (default: every column in turn).
    aux_cols : (list, list), optional
        The linkability attack's two column sets (default: the columns in file order,
        split in two halves).
    n_neighbors, singling_out_attacks, n_cols, max_attempts :
        The attacks' parameters (anonymeter's ``n_neighbors``, ``n_attacks``, ``n_cols``,
        ``max_attempts``).
    seed : int
        Seeds every random choice.
    confidence_level : float
        The level of the intervals.
    max_risk : float, optional
        The acceptable worst risk in % (the verdict says whether it is exceeded).
    n_boot : int
        Bootstrap resamples of the membership-inference figures.
    """
    cols = list(qi) if qi is not None else [
        c for c in original.columns if c in synthetic.columns
        and (holdout is None or c in holdout.columns)]
    if len(cols) < 2:
        raise LinkriskError("the synthetic-data measures need at least 2 columns common to the "
                            "original and the synthetic file")
    ori, syn = original[cols], synthetic[cols]
    hold = holdout[cols] if holdout is not None else None
    notes: list[str] = []
    dist = distance_risk(syn, ori, hold, seed=seed, n_boot=n_boot, conf=confidence_level)
    attacks: dict[str, AttackRisk] = {}
    for mode in ("univariate", "multivariate"):
        attacks[f"singling out ({mode})"] = singling_out(
            ori, syn, control=hold, mode=mode, n_attacks=singling_out_attacks,
            n_cols=min(n_cols, len(cols)), max_attempts=max_attempts, seed=seed,
            conf=confidence_level)
    aux = aux_cols or (cols[:len(cols) // 2], cols[len(cols) // 2:])
    attacks["linkability"] = linkability(ori, syn, aux, control=hold, n_neighbors=n_neighbors,
                                         seed=seed, conf=confidence_level)
    for s in (list(sensitive) if sensitive else cols):
        attacks[f"inference ({s})"] = inference(ori, syn, s, control=hold, seed=seed,
                                                conf=confidence_level)
    for a in attacks.values():
        notes += [f"{a.attack}: {n}" for n in a.notes]
    settings = {"qi": cols, "holdout": hold is not None, "n_neighbors": n_neighbors,
                "aux_cols": [list(aux[0]), list(aux[1])], "seed": seed,
                "confidence_level": confidence_level, "max_risk": max_risk,
                "singling_out_attacks": singling_out_attacks, "n_cols": n_cols}
    return SyntheticRisk(dist, attacks, settings, notes)
