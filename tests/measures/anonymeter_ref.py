"""Run anonymeter on the CSV files of a folder and print its neighbours and counts as JSON.

Usage: python anonymeter_ref.py FOLDER. The folder holds ori.csv, syn.csv, control.csv and
spec.json ({"aux_cols": [[...], [...]], "secret": NAME, "n_neighbors": K}). Run by
test_synthetic.py with a Python that has anonymeter (anonymeter 1.1 pins numpy < 1.27,
which linkrisk's environment does not have: see LINKRISK_ANONYMETER_PYTHON there)."""

import json
import sys
import time
from pathlib import Path

import pandas as pd
from anonymeter.evaluators import InferenceEvaluator, LinkabilityEvaluator, SinglingOutEvaluator
from anonymeter.neighbors.mixed_types_kneighbors import MixedTypeKNeighbors


def main(folder: str) -> None:
    d = Path(folder)
    ori, syn = pd.read_csv(d / "ori.csv"), pd.read_csv(d / "syn.csv")
    ctl = pd.read_csv(d / "control.csv")
    spec = json.loads((d / "spec.json").read_text())
    out = {}
    if spec.get("timing_only"):
        a0, a1 = spec["aux_cols"]
        q = ori.iloc[: spec["timing_rows"]]
        t = time.perf_counter()
        for cols in (a0, a1):
            MixedTypeKNeighbors(n_neighbors=1).fit(syn[cols]).kneighbors(q[cols])
        out["seconds"] = time.perf_counter() - t
        print(json.dumps(out))
        return
    k = spec["n_neighbors"]
    a0, a1 = spec["aux_cols"]
    nn = MixedTypeKNeighbors(n_neighbors=k).fit(syn[a0])
    out["idx0"] = nn.kneighbors(ori[a0]).tolist()
    lk = LinkabilityEvaluator(ori, syn, (a0, a1), n_attacks=len(ori), n_neighbors=k,
                              control=ctl).evaluate()
    res = lk.results()
    out["linkability"] = {"n_success": int(res.n_success), "n_control": int(res.n_control),
                          "risk": lk.risk().value, "ci": list(lk.risk().ci)}
    s = spec["secret"]
    aux = [c for c in ori.columns if c != s]
    inf = InferenceEvaluator(ori, syn, aux, s, n_attacks=len(ori), control=ctl).evaluate()
    res = inf.results()
    out["inference"] = {"n_success": int(res.n_success), "n_control": int(res.n_control),
                        "risk": inf.risk().value, "ci": list(inf.risk().ci)}
    for mode in ("univariate", "multivariate"):
        so = SinglingOutEvaluator(ori, syn, n_attacks=spec["so_attacks"], n_cols=3,
                                  control=ctl).evaluate(mode=mode)
        out[f"singling_out_{mode}"] = {"risk": so.risk().value, "ci": list(so.risk().ci),
                                       "n_success": int(so.results().n_success)}
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
