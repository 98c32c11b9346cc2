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

    def to_html(self, title: str | None = None, *,
                inputs: Sequence[dict[str, Any]] | None = None,
                command: str | None = None) -> str:
        """A self-contained HTML report (the style of :mod:`linkrisk.report`: inline CSS,
        no script, no network resource): the synthetic section with its verdict, the
        distance and membership figures, anonymeter's attacks, notes, inputs and settings."""
        return synthetic_html(self, title, inputs=inputs, command=command)

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


#: what each synthetic-data figure means (the report's tables)
MEANINGS = {
    "singling out (univariate)": "share of predicates on one column, built from the "
                                 "synthetic file, that isolate exactly one training record",
    "singling out (multivariate)": "the same with predicates on several columns",
    "linkability": "share of training records whose two halves of columns point to the same "
                   "synthetic record",
    "inference": "share of training records whose secret the nearest synthetic record "
                 "gives away",
}


def synthetic_html(r: SyntheticRisk, title: str | None = None, *,
                   inputs: Sequence[dict[str, Any]] | None = None,
                   command: str | None = None) -> str:
    """The report of :meth:`SyntheticRisk.to_html` (every user string escaped)."""
    from html import escape

    from ..report import CSS, fmt, html_table, input_rows, verdict_band

    title = title or "linkrisk synthetic-data risk report"
    d = r.distance.summary
    mr = r.settings.get("max_risk")
    wname, wrisk = r.worst
    pct = 100 * wrisk
    band, colour = verdict_band(pct, mr)
    limit = ("" if mr is None else
             f"<p>Acceptable worst risk: {escape(fmt(mr))} %: the release is "
             f"<b>{'above' if r.exceeds else 'within'}</b> it.</p>")
    rows = [{"measure": "distance to closest training record (median)",
             "value": d.get("dcr_train_median")},
            {"measure": "distance to closest training record (5th percentile)",
             "value": d.get("dcr_train_p05")},
            {"measure": "exact copies of training records", "value": d.get("exact_copies_train")}]
    if d.get("dcr_holdout_median") is not None:
        rows += [{"measure": "distance to closest holdout record (median)",
                  "value": d.get("dcr_holdout_median")},
                 {"measure": "exact copies of holdout records",
                  "value": d.get("exact_copies_holdout")},
                 {"measure": "closer to a training than to a holdout record (%; 50 when "
                             "nothing is memorised)",
                  "value": 100 * d["closer_to_train_share"]}]
    if "nndr_train_median" in d:
        rows.append({"measure": "nearest-neighbour distance ratio (median)",
                     "value": d["nndr_train_median"]})
    m = d.get("membership")
    if m:
        rows += [{"measure": "membership inference AUC (0.5: chance)", "value": m["auc"]},
                 {"measure": "membership advantage max(TPR − FPR)", "value": m["advantage"]}]
    dist = html_table(pd.DataFrame(rows).fillna("—"), left=("measure",))
    att = pd.DataFrame([{"attack": k, "risk %": round(100 * a.risk, 2),
                         "95 % interval": f"{100 * a.ci[0]:.2f}–{100 * a.ci[1]:.2f} %",
                         "training %": round(100 * a.rate, 2),
                         "holdout %": "—" if a.control_rate is None
                         else round(100 * a.control_rate, 2),
                         "baseline %": round(100 * a.baseline_rate, 2),
                         "what it means": MEANINGS.get(k.split(" (")[0] if k.startswith(
                             "inference") else k, "")}
                        for k, a in r.attacks.items()])
    attacks = html_table(att, left=("attack", "95 % interval", "what it means")) if len(att) else ""
    notes = "".join(f"<li>{escape(n)}</li>" for n in r.notes + r.distance.notes)
    settings = pd.DataFrame([{"setting": k, "value": str(v)}
                             for k, v in r.settings.items()])
    files = input_rows(inputs)
    n_hold = d.get("n_holdout")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title><style>{CSS}</style></head>
<body><main>
<h1>{escape(title)}</h1>
<p class="sub">Disclosure risk of a synthetic release: {d['n_synthetic']:,} synthetic records,
{d['n_train']:,} training records, {'no holdout' if n_hold is None else f'{n_hold:,} holdout records'}.</p>
<section id="synthetic" class="verdict" style="background:{colour}">
<div class="big">{pct:.1f} %</div>
<div><p><b>Synthetic data — worst: {escape(wname)}</b> ({pct:.2f} %). Risk level:
<b>{escape(band)}</b>.</p>{limit}
<p>Columns: {escape(', '.join(map(str, r.settings.get('qi', []))))}.</p></div>
</section>
<h2 id="threat">Threat model</h2>
<p>No record of a synthetic release is a version of an original one, so there is no true pair
to re-identify. The attacker holds original records and asks whether the synthetic file
reveals them: whether a record was in the training data (membership), whether a predicate
isolates one training record (singling out), whether two halves of a record lead to the same
synthetic record (linkability), or whether its secret can be read off the nearest synthetic
record (inference). With a holdout, each attack's risk is what it achieves on training records
beyond what it achieves on records the generator never saw.</p>
<h2 id="attacks">anonymeter's attacks</h2>
<div class="scroll">{attacks}</div>
<h2 id="distance">Distances and membership inference</h2>
{dist}
{f'<ul class="note">{notes}</ul>' if notes else ''}
<h2 id="inputs">Inputs and reproduction</h2>
{f'<table><thead><tr><th class="l">file</th><th class="l">name</th><th class="l">SHA-256</th></tr></thead><tbody>{files}</tbody></table>' if files else '<p class="note">Inputs given as data frames (no files).</p>'}
{f'<p>Command: <code>{escape(command)}</code></p>' if command else ''}
<h2 id="settings">Settings</h2>
{html_table(settings, left=("setting", "value"))}
<p class="note">Generated by linkrisk.</p>
</main></body></html>
"""
