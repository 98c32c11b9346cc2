"""The recommendation of linkrisk choose (experiments/choose/recommend.py) on a hand-made
points table: near ties, tie-breaks, no limit, no feasible point."""

import pandas as pd

from linkrisk.experiments.choose import recommend


def test_near_tie_rule_on_a_hand_made_table():
    def pt(point, il, il_hi, risk, risk_hi, score, det, order):
        m, v = point.split()
        return {"point": point, "label": m, "method": m, "param": v.split("=")[0],
                "value": float(v.split("=")[1]), "n": 1 if det else 5, "IL_mean": il,
                "IL_sd": 1.0, "IL_lo": il, "IL_hi": il_hi, "risk_mean": risk, "risk_sd": 0.5,
                "risk_lo": risk, "risk_hi": risk_hi, "Score_mean": score, "Score_sd": 1.0,
                "Score_lo": score, "Score_hi": score + 1, "deterministic": det,
                "order": order, "deciding_attack": "dbrl", "deciding_mean": risk,
                "deciding_sd": 0.5}

    p = pd.DataFrame([
        pt("noise a=1", 10.0, 14.0, 4.0, 4.5, 20.0, False, 0),   # least IL
        pt("mdav k=5", 12.0, 12.0, 2.0, 2.0, 22.0, True, 1),     # near tie, less risk
        pt("noise a=2", 13.9, 16.0, 2.0, 2.5, 21.0, False, 2),   # near tie, same risk, less Score
        pt("rank_swap p=5", 5.0, 6.0, 7.0, 8.0, 9.0, False, 3),  # less IL, over the limit
        pt("mdav k=10", 20.0, 20.0, 1.0, 1.0, 15.0, True, 4),    # not a near tie
    ])
    rec, closest, reasons, _ = recommend(p, 5.0)
    assert p.loc[rec, "point"] == "noise a=2" and closest is None
    assert any(r.startswith("rank_swap p=5 has 64 % less IL but dbrl re-identifies 7.0")
               for r in reasons)
    # equal risk and Score: the deterministic method wins, then the earlier point
    p.loc[2, "Score_mean"] = 22.0
    assert p.loc[recommend(p, 5.0)[0], "point"] == "mdav k=5"
    p.loc[1, "deterministic"] = False
    assert p.loc[recommend(p, 5.0)[0], "point"] == "mdav k=5"  # order 1 before 2
    # no limit: least Score (rank_swap 9), its near ties up to 10: none
    assert p.loc[recommend(p, None)[0], "point"] == "rank_swap p=5"
    # a limit nobody meets: the closest is the least upper bound, ties to the lower mean
    rec, closest, reasons, tip = recommend(p, 0.5)
    assert rec is None and p.loc[closest, "point"] == "mdav k=10" and tip.startswith("Try")
