#!/usr/bin/env python
"""Re-identification rates of the numeric masking methods on the CASC Census file.

For a few parameterizations of every numeric method, mask Census with a fixed seed and
print a Markdown table of the ``dbrl`` and ``rbrl_max`` correct-link rates (% of records).
IPSO and data shuffling treat the last ``--confidential`` columns as the confidential
attributes and the attacker links on the remaining ones; the other methods mask and link
on all 13 attributes. One replicate per row (`linkrisk study` replicates R times).

    python scripts/masking_table.py [--seed 0] [--only mdav,noise] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import sys
import time

# (method, params) rows; strength grows down each method's block
GRID: list[tuple[str, dict]] = [
    ("noise", {"a": 0.1}), ("noise", {"a": 0.5}), ("noise", {"a": 1.0}),
    ("correlated_noise", {"a": 0.1}), ("correlated_noise", {"a": 0.5}),
    ("correlated_noise", {"a": 1.0}),
    ("multiplicative_noise", {"b": 0.1}), ("multiplicative_noise", {"b": 0.3}),
    ("multiplicative_noise", {"b": 0.6}),
    ("rank_swap", {"p": 2}), ("rank_swap", {"p": 5}), ("rank_swap", {"p": 15}),
    ("rank_swap_pdist", {"p": 2}), ("rank_swap_pdist", {"p": 5}),
    ("rank_swap_pdist", {"p": 15}),
    ("rank_swap_pbuckets", {"p": 50}), ("rank_swap_pbuckets", {"p": 10}),
    ("rank_swap_pbuckets", {"p": 3}),
    ("rank_shuffle", {"q": 5}), ("rank_shuffle", {"q": 20}), ("rank_shuffle", {"q": 100}),
    ("microaggregation_ir", {"k": 3}), ("microaggregation_ir", {"k": 10}),
    ("microaggregation_ir", {"k": 20}),
    ("mdav", {"k": 3}), ("mdav", {"k": 10}), ("mdav", {"k": 20}),
    ("micdp", {"k": 10, "epsilon": 10.0}), ("micdp", {"k": 10, "epsilon": 1.0}),
    ("micdp", {"k": 20, "epsilon": 1.0}),
    ("ipso", {"variant": "A"}), ("ipso", {"variant": "B"}), ("ipso", {"variant": "C"}),
    ("data_shuffle", {}),
]
NEEDS_CONFIDENTIAL = {"ipso", "data_shuffle"}
ATTACKS = ("dbrl", "rbrl_max")


def _fmt(params: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items()) or "–"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=None,
                    help="folder holding census.csv that overrides the packaged file "
                         "(default: $LINKRISK_DATA, else the file shipped with linkrisk)")
    ap.add_argument("--seed", type=int, default=0, help="masking seed (default 0)")
    ap.add_argument("--confidential", type=int, default=4,
                    help="number of trailing Census columns that are confidential for "
                         "ipso/data_shuffle (default 4)")
    ap.add_argument("--only", default="", help="comma-separated method names to run")
    args = ap.parse_args(argv)

    from linkrisk.datasets import load
    from linkrisk.errors import LinkriskError
    from linkrisk.masking import mask

    try:
        from linkrisk import attack
    except ImportError:
        print("linkrisk.attack is not available yet; nothing to measure", file=sys.stderr)
        return 2

    try:
        census = load("census", args.data_dir)
    except LinkriskError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    conf = list(census.columns[-args.confidential:])
    qi_rest = [c for c in census.columns if c not in conf]
    only = {m.strip() for m in args.only.split(",") if m.strip()}

    print(f"Census ({len(census)} × {census.shape[1]}), seed {args.seed}; ipso/data_shuffle: "
          f"confidential {', '.join(conf)}, attacker links on the other {len(qi_rest)} columns\n")
    print("| method | parameters | QIs | " + " | ".join(f"{a} %" for a in ATTACKS)
          + " | mask s |")
    print("|---|---|---|" + "---:|" * (len(ATTACKS) + 1))
    for method, params in GRID:
        if only and method not in only:
            continue
        extra, qi = ({"confidential": conf}, qi_rest) if method in NEEDS_CONFIDENTIAL \
            else ({}, list(census.columns))
        t0 = time.perf_counter()
        masked = mask(census, method, seed=args.seed, **params, **extra)
        secs = time.perf_counter() - t0
        rates = [100 * attack(census, masked, method=a, qi=qi).rate for a in ATTACKS]
        print(f"| {method} | {_fmt(params)} | {len(qi)} | "
              + " | ".join(f"{r:.1f}" for r in rates) + f" | {secs:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
