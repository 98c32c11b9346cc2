"""A sweep of bad or awkward inputs through the CLI, in process (``linkrisk.cli.main``).

Every case gets exit code 2 and exactly one ``error:`` line on stderr (a few are
documented successes, exit 0), never a traceback, no partial or temporary file, and no
existing file changed. ``SWEEP`` is the table of the closing note (input → code →
message). Ctrl-C during a long attack runs in a real subprocess at the end.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from linkrisk import cli, datasets

N = 60


def _orig() -> pd.DataFrame:
    return datasets.synthetic(N, 4, seed=5).round(3)


def _rel(df: pd.DataFrame, seed: int = 6) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return (df + rng.normal(0, 0.2, df.shape) * df.std().to_numpy()).round(3)


def _csv(d: Path, name: str, df: pd.DataFrame) -> Path:
    df.to_csv(d / name, index=False)
    return d / name


def base(d: Path) -> None:
    o = _orig()
    _csv(d, "o.csv", o)
    _csv(d, "m.csv", _rel(o))


def with_masked(fn):
    def setup(d: Path) -> None:
        base(d)
        m = pd.read_csv(d / "m.csv")
        _csv(d, "m.csv", fn(m))
    return setup


def with_orig(fn):
    def setup(d: Path) -> None:
        base(d)
        o = pd.read_csv(d / "o.csv")
        _csv(d, "o.csv", fn(o))
    return setup


def touch(name: str, text: str = "old"):
    def setup(d: Path) -> None:
        base(d)
        (d / name).write_text(text)
    return setup


def mkdir(name: str):
    def setup(d: Path) -> None:
        base(d)
        (d / name).mkdir()
    return setup


def _set(df, col, row, value):
    df = df.astype({col: object}) if isinstance(value, str) else df.copy()
    df.loc[row, col] = value
    return df


def _collinear(df):
    df = df.copy()
    df["v2"] = 2 * df["v1"]
    return df


def _collinear_both(d: Path) -> None:
    o = _collinear(_orig())
    _csv(d, "o.csv", o)
    _csv(d, "m.csv", _collinear(_rel(o)))


def _shuffled(d: Path) -> None:
    base(d)
    m = pd.read_csv(d / "m.csv").sample(frac=1, random_state=3)
    _csv(d, "m.csv", m)


def _with_ids(d: Path) -> None:
    o = _orig().assign(rid=[f"r{i}" for i in range(N)])
    m = _rel(_orig()).assign(rid=[f"r{i}" for i in range(N)]).sample(frac=1, random_state=3)
    _csv(d, "o.csv", o)
    _csv(d, "m.csv", m)


def _masked_ids(d: Path) -> None:
    o = _orig().assign(rid=np.arange(N))
    _csv(d, "o.csv", o)
    _csv(d, "m.csv", _rel(_orig()).assign(rid=np.arange(N) + 0.5))


def _wrong_ids(d: Path) -> None:
    o = _orig().assign(rid=np.arange(N))
    _csv(d, "o.csv", o)
    _csv(d, "m.csv", _rel(_orig()).assign(rid=np.random.default_rng(1).permutation(N)))


def _huge(d: Path) -> None:
    o = _set(_orig(), "v3", 9, 1e300)
    _csv(d, "o.csv", o)
    _csv(d, "m.csv", _set(_rel(_orig()), "v3", 9, 1e300))


def _dup_ids(d: Path) -> None:
    o = _orig().assign(rid=[i // 2 for i in range(N)])
    _csv(d, "o.csv", o)
    _csv(d, "m.csv", _rel(_orig()).assign(rid=[i // 2 for i in range(N)]))


def _tiny(d: Path) -> None:
    o = datasets.synthetic(6, 8, seed=2)
    _csv(d, "o.csv", o)
    _csv(d, "m.csv", _rel(o))


def _one_row(d: Path) -> None:
    _csv(d, "one.csv", pd.DataFrame({"a": [1.5], "b": [2.5]}))


def _all_ids(d: Path) -> None:
    df = pd.DataFrame({"person_id": range(N), "weight": np.arange(N) % 7 + 1.0})
    _csv(d, "o.csv", df)
    _csv(d, "m.csv", df.assign(weight=df["weight"] + 0.5))


def _no_common(d: Path) -> None:
    base(d)
    m = pd.read_csv(d / "m.csv")
    _csv(d, "m.csv", m.set_axis([f"z{i}" for i in range(m.shape[1])], axis=1))


def _garbage_parquet(d: Path) -> None:
    base(d)
    (d / "m.parquet").write_bytes(b"PAR1 this is not parquet")


def _empty(d: Path) -> None:
    base(d)
    (d / "m.csv").write_text("")


def _header_only(d: Path) -> None:
    base(d)
    (d / "m.csv").write_text("v1,v2,v3,v4\n")


def _fewer_rows(d: Path) -> None:
    base(d)
    _csv(d, "m.csv", pd.read_csv(d / "m.csv").head(N - 5))


ORIG, REL = "{d}/o.csv", "{d}/m.csv"
ATTACK = ["attack", ORIG, REL]
ASSESS = ["assess", ORIG, REL]

#: (case id, setup, argv, exit code, a phrase of the one stderr line)
SWEEP = [
    ("missing original file", base, ["attack", "{d}/none.csv", REL], 2, "file not found"),
    ("missing released file", base, ["attack", ORIG, "{d}/none.csv"], 2, "file not found"),
    ("empty file", _empty, ATTACK, 2, "is empty"),
    ("header-only file", _header_only, ATTACK, 2, "header but no rows"),
    ("directory as input", mkdir("sub"), ["attack", ORIG, "{d}/sub"], 2, "is a directory"),
    ("garbage Parquet", _garbage_parquet, ["attack", ORIG, "{d}/m.parquet"], 2, "m.parquet"),
    ("mismatched rows, no ids", _fewer_rows, ATTACK, 2, "without id columns truth is row order"),
    ("NaN in a QI (success: scored over the observed values)",
     with_masked(lambda m: _set(m, "v2", 7, np.nan)), ATTACK, 0, ""),
    ("inf in a QI", with_masked(lambda m: _set(m, "v3", 4, np.inf)), ATTACK, 2, "infinite"),
    ("text in a numeric column", with_masked(lambda m: _set(m, "v1", 3, "abc")), ATTACK, 2,
     "looks numeric but row"),
    ("collinear QIs, mahalanobis", _collinear_both, ATTACK + ["-m", "mahalanobis0"], 2,
     "singular"),
    ("more QIs than records, mahalanobis", _tiny, ATTACK + ["-m", "mahalanobis0"], 2,
     "more records than QIs"),
    ("shuffled release without --ids", _shuffled, ATTACK, 2, "the release looks reordered"),
    ("shuffled release, assess", _shuffled, ASSESS, 2, "pass --ids"),
    ("id column missing", base, ATTACK + ["--ids", "rid"], 2, "not in the original file"),
    ("id values repeat", _dup_ids, ATTACK + ["--ids", "rid"], 2, "id values repeat"),
    ("no common column", _no_common, ATTACK, 2, "no column in common"),
    ("only id/weight columns", _all_ids, ASSESS, 2, "looks like an identifier or a weight"),
    ("ids that pair no record", _masked_ids, ASSESS + ["--ids", "rid"], 2,
     "pairs only 0 of the 60 records"),
    ("ids that pair the wrong records", _wrong_ids, ATTACK + ["--ids", "rid"], 2,
     "the ids do not pair masked records"),
    ("a value that overflows", _huge, ASSESS, 2, "column 'v3' of the attacker's file has values "
     "too large"),
    ("unknown QI column", base, ATTACK + ["--qi", "v1,zz"], 2, "'zz' not in"),
    ("QI named twice", base, ATTACK + ["--qi", "v1,v1"], 2, "named twice"),
    ("unknown kind", base, ATTACK + ["--kinds", "v1=interval"], 2, "unknown attribute kind"),
    ("malformed --kinds", base, ATTACK + ["--kinds", "v1"], 2, "col=kind"),
    ("--nominal contradicts --kinds", base,
     ATTACK + ["--kinds", "v1=numeric", "--nominal", "v1"], 2, "two kinds"),
    ("unknown direction", base, ATTACK + ["--direction", "sideways"], 2, "unknown direction"),
    ("unknown attack", base, ATTACK + ["-m", "dbrl3"], 2, "unknown attack 'dbrl3'"),
    ("attack named twice", base, ATTACK + ["-m", "dbrl,dbrl"], 2, "named twice"),
    ("unknown parameter", base, ATTACK + ["-p", "zz=1"], 2, "no chosen attack takes"),
    ("parameter without =", base, ATTACK + ["-p", "d"], 2, "name=value"),
    ("kernel d=2.5", base, ATTACK + ["-m", "kernel", "-p", "d=2.5"], 2, "must be an integer"),
    ("kernel d=200", base, ATTACK + ["-m", "kernel", "-p", "d=200"], 2, "integer from 1 to"),
    ("kernel d=0", base, ATTACK + ["-m", "kernel", "-p", "d=0"], 2, "integer from 1 to"),
    ("negative seed, attack", base, ATTACK + ["--seed", "-5"], 2, "non-negative integer"),
    ("negative seed, mask", base, ["mask", ORIG, "-m", "noise", "-o", "{d}/r.csv", "--seed", "-5"],
     2, "non-negative integer"),
    ("garbage --memory", base, ATTACK + ["--memory", "1.2.3MiB"], 2, "cannot read memory size"),
    ("--memory below 1 MiB", base, ATTACK + ["--memory", "1000"], 2, "at least 1 MiB"),
    ("unknown backend", base, ATTACK + ["--backend", "spark"], 2, "unknown backend"),
    ("attack not applicable to the kinds", base, ASSESS + ["-m", "dbrl_hamming"], 2,
     "dbrl_hamming cannot run"),
    ("rsrl without p", base, ASSESS + ["-m", "rsrl"], 2, "needs the swapping parameter"),
    ("--rank-swap-p 0", base, ASSESS + ["--rank-swap-p", "0"], 2, "rank_swap_p must be"),
    ("--max-risk garbage", base, ASSESS + ["--max-risk", "five"], 2, "cannot read the percentage"),
    ("--max-risk 150%", base, ASSESS + ["--max-risk", "150%"], 2, "must be in (0, 100]"),
    ("existing --per-record without --force", touch("per.csv"),
     ATTACK + ["--per-record", "{d}/per.csv"], 2, "exists; pass --force"),
    ("existing report without --force", touch("r.html"), ASSESS + ["-o", "{d}/r.html"], 2,
     "exists; pass --force"),
    ("existing release without --force", touch("r.csv"),
     ["mask", ORIG, "-m", "noise", "-o", "{d}/r.csv", "--seed", "1"], 2, "exists; pass --force"),
    ("report into a missing directory", base, ASSESS + ["-o", "{d}/nodir/r.html"], 2,
     "does not exist"),
    ("--per-record into a missing directory", base,
     ATTACK + ["--per-record", "{d}/nodir/x.csv"], 2, "does not exist"),
    ("report onto a directory, --force", mkdir("out"), ASSESS + ["-o", "{d}/out", "--force"], 2,
     "is a directory"),
    ("release onto a directory", mkdir("out"),
     ["mask", ORIG, "-m", "noise", "-o", "{d}/out", "--seed", "1"], 2, "is a directory"),
    ("unknown masking method", base, ["mask", ORIG, "-m", "blur", "-o", "{d}/r.csv"], 2,
     "unknown masking method"),
    ("k > n in microaggregation", _one_row,
     ["mask", "{d}/one.csv", "-m", "mdav", "-p", "k=5", "-o", "{d}/r.csv", "--seed", "1"], 2,
     "out of range"),
    ("mask a column that is not there", base,
     ["mask", ORIG, "-m", "noise", "--columns", "zz", "-o", "{d}/r.csv", "--seed", "1"], 2, "zz"),
    ("demo with 3 records", base, ["demo", "--n", "3"], 2, "--n ≥ 10"),
    ("unknown study", base, ["study", "{d}/nope.toml"], 2, "nope"),
    ("missing argument", base, ["attack", ORIG], 2, "Missing argument 'masked'"),
    ("unknown option", base, ATTACK + ["--bogus"], 2, "No such option: --bogus"),
    ("text where a number belongs", base, ATTACK + ["--seed", "abc"], 2, "Invalid value for '--seed'"),
    ("unknown command", base, ["attak"], 2, "No such command 'attak'"),
    # documented successes
    ("constant QI column (success)", with_masked(lambda m: m.assign(v4=1.0)),
     ATTACK + ["--qi", "v1,v2,v3,v4"], 0, ""),
    ("shuffled release with --ids (success)", _with_ids, ATTACK + ["--ids", "rid"], 0, ""),
    ("--method all on numeric files (success)", base, ATTACK + ["-m", "all"], 0, ""),
    ("1-row file masked (success, warned)", _one_row,
     ["mask", "{d}/one.csv", "-m", "noise", "-p", "a=0.5", "-o", "{d}/r.csv", "--seed", "1"], 0,
     "nothing was masked"),
]


def _snapshot(d: Path) -> dict[str, str]:
    return {str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(d.rglob("*")) if p.is_file()}


def invoke(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        cli.main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    cap = capsys.readouterr()
    return code, cap.out, cap.err


@pytest.mark.parametrize("case,setup,argv,code,phrase", SWEEP, ids=[c[0] for c in SWEEP])
def test_sweep(case, setup, argv, code, phrase, tmp_path, capsys):
    setup(tmp_path)
    before = _snapshot(tmp_path)
    args = [a.replace("{d}", str(tmp_path)) for a in argv]
    got, stdout, stderr = invoke(args, capsys)
    assert "Traceback" not in stderr + stdout
    assert got == code, stderr
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    after = _snapshot(tmp_path)
    assert not [p for p in after if ".tmp-" in p], "temporary file left behind"
    if code == 2:
        assert len(lines) == 1 and lines[0].startswith("error: "), stderr
        assert phrase in lines[0]
        assert after == before, "an error must not create or change a file"
    else:
        assert all(before[p] == after[p] for p in before), "an existing file changed"
        assert phrase in stderr


def test_sweep_is_large_enough():
    assert len({c[0] for c in SWEEP}) >= 40


def sweep_table(tmp_path_factory=None) -> str:  # pragma: no cover - used for the report
    """The sweep as a Markdown table (``python tests/test_cli_sweep.py``)."""
    import contextlib
    import io
    import tempfile

    rows = ["| input | command | exit | stderr |", "|---|---|---|---|"]
    for case, setup, argv, _, _ in SWEEP:
        with tempfile.TemporaryDirectory() as t:
            d = Path(t)
            setup(d)
            args = [a.replace("{d}", "D") for a in argv]
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                try:
                    cli.main([a.replace("{d}", str(d)) for a in argv])
                    code = 0
                except SystemExit as exc:
                    code = exc.code
            msg = " / ".join(ln for ln in err.getvalue().replace(str(d), "D").splitlines()
                             if ln.strip())
            rows.append(f"| {case} | `linkrisk {' '.join(args)}` | {code} | "
                        f"{msg.replace('|', '/')} |")
    return "\n".join(rows)


# ------------------------------------------------------------------ Ctrl-C, for real
@pytest.mark.slow
def test_ctrl_c_during_a_long_attack(tmp_path):
    """SIGINT while an attack runs: exit 130, one line, no partial --per-record file. The
    signal is sent once the attack has reported progress (a plain line on the pipe)."""
    import queue
    import threading

    big = datasets.synthetic(60_000, 6, seed=1)
    big.to_parquet(tmp_path / "o.parquet", index=False)
    _rel(big).to_parquet(tmp_path / "m.parquet", index=False)
    out = tmp_path / "per.csv"
    env = {**os.environ, "PYTHONPATH": str(Path(cli.__file__).parents[2])}
    p = subprocess.Popen([sys.executable, "-m", "linkrisk.cli", "attack",
                          str(tmp_path / "o.parquet"), str(tmp_path / "m.parquet"),
                          "-m", "gdbrl,kernel,rbrl_sum", "--memory", "4MiB", "--per-record", str(out)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    lines: queue.Queue[str] = queue.Queue()
    seen: list[str] = []

    def pump() -> None:
        for ln in p.stderr:
            lines.put(ln)
        lines.put("")

    threading.Thread(target=pump, daemon=True).start()
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        ln = lines.get(timeout=max(deadline - time.monotonic(), 0.1))
        seen.append(ln)
        if ln.startswith(("gdbrl:", "kernel:", "rbrl_sum:")) or ln == "":
            break
    assert p.poll() is None, "the attack finished before it could be interrupted: " + "".join(seen)
    p.send_signal(signal.SIGINT)
    p.wait(timeout=120)
    while True:
        ln = lines.get(timeout=30)
        if ln == "":
            break
        seen.append(ln)
    assert p.returncode == 130, "".join(seen)
    errors = [ln.strip() for ln in seen if ln.strip()
              and not ln.startswith(("gdbrl:", "kernel:", "rbrl_sum:"))]
    assert errors == ["error: interrupted; no output was written"], "".join(seen)
    assert not out.exists()
    assert sorted(f.name for f in tmp_path.iterdir()) == ["m.parquet", "o.parquet"]


if __name__ == "__main__":  # pragma: no cover
    print(sweep_table())
