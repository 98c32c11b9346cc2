"""Cost of the attacker-scenario search (issue #39) against today's ``assess``.

Census (1,080 records, 12 default QIs) against a release and ``assess`` run twice in the
same process after a warm-up (numba compilation excluded): ``scenarios="none"`` (today's
assess: every attack on all QIs) and the given strategy; the table gives both times, the
scenario search's own time (inside the second run) and its ratio to the first run,
the QI sets scored, the attacks run and the worst case with its scenario.

    python benchmarks/scenarios.py [--release rank_swap|ipso] [--strategy all|greedy]
                                   [--repeat 3]

``rank_swap``: rank swapping p = 5 (seed 1), assessed with ``rank_swap_p=5``; ``ipso``:
IPSO-C with the two blocks modelled on each other (``mutual=True``, seed 1), the release of
issue #39.
"""

from __future__ import annotations

import argparse
import statistics
import warnings

import linkrisk

CONF = ["PEARNVAL", "POTHVAL", "WSALVAL", "ERNVAL"]


def release(census, which: str):
    if which == "rank_swap":
        return linkrisk.mask(census, "rank_swap", p=5, seed=1), {"rank_swap_p": 5}
    cols = [c for c in census.columns if c not in CONF]
    return linkrisk.mask(census, "ipso", columns=cols, confidential=CONF, variant="C",
                         mutual=True, seed=1), {}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--release", choices=("rank_swap", "ipso"), default="rank_swap")
    ap.add_argument("--strategy", choices=("all", "greedy"), default="all")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    census = linkrisk.datasets.load("census")
    rel, kw = release(census, args.release)
    linkrisk.assess(census, rel, scenarios="none", **kw)  # warm-up: numba compilation
    print(f"Census vs {args.release}, scenarios={args.strategy}")
    print(f"{'run':>3} {'assess none s':>13} {'assess s':>9} {'search s':>9} {'ratio':>6} "
          f"{'sets':>5} {'attacks':>7}  worst case")
    ratios = []
    for i in range(args.repeat):
        base = linkrisk.assess(census, rel, scenarios="none", **kw)
        full = linkrisk.assess(census, rel, scenarios=args.strategy, **kw)
        s = full.scenario_search
        ratio = s["seconds"] / base.seconds
        ratios.append(ratio)
        w = full.worst
        print(f"{i + 1:>3} {base.seconds:>13.2f} {full.seconds:>9.2f} {s['seconds']:>9.2f} "
              f"{ratio:>5.2f}x {s['scenarios_scored']:>5} {s['attacks_run']:>7}  "
              f"{100 * w.rate:.2f} % {w.method}, {full.worst_attacker}")
    print(f"median ratio (search / today's assess): {statistics.median(ratios):.2f}x")


if __name__ == "__main__":
    main()
