"""Reading and writing microdata files: formats, round trips, value labels, malformed input.

The CLI cases run ``linkrisk.cli.main`` in-process (exit code and stderr as a user sees
them); stdin/stdout and SIGTERM need a real process and use subprocess.
"""

import gzip
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import linkrisk
from linkrisk import cli
from linkrisk.data import infer_kind
from linkrisk.errors import LinkriskError
from linkrisk.fileio import (
    FileFormatWarning,
    read_input,
    read_inputs,
    read_stdin,
    read_table,
    write_table,
)
from tests.conftest import noisy

pyreadstat = pytest.importorskip("pyreadstat", reason="needs pyreadstat: pip install -e .")


def run_main(args, monkeypatch, capsys):
    """``linkrisk ARGS`` in this process: (exit code, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", ["linkrisk", *map(str, args)])
    monkeypatch.setattr(warnings, "showwarning", warnings.showwarning)  # main() replaces it
    old = signal.getsignal(signal.SIGTERM)
    try:
        with pytest.raises(SystemExit) as exc:
            cli.main()
    finally:
        signal.signal(signal.SIGTERM, old)
    o = capsys.readouterr()
    return exc.value.code, o.out, o.err


@pytest.fixture(scope="module")
def pair(census):
    """300 Census records and a noise-masked release (a = 0.5), both as floats."""
    orig = census.head(300).reset_index(drop=True)
    return orig, noisy(orig, 0.5, seed=7)


def same_attack(a, b, ref):
    res = linkrisk.attack(a, b, method="dbrl")
    assert res.rate == ref.rate
    pd.testing.assert_frame_equal(res.per_record, ref.per_record)


# ------------------------------------------------------------------------- round trips

@pytest.mark.parametrize("suffix", [".csv", ".dta", ".sav", ".zsav", ".xpt", ".parquet",
                                    ".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zip", ".tsv"])
def test_roundtrip_gives_the_same_attack_result(pair, suffix, tmp_path):
    orig, rel = pair
    ref = linkrisk.attack(orig, rel, method="dbrl")
    a = read_table(write_table(orig, tmp_path / f"o{suffix}"))
    b = read_table(write_table(rel, tmp_path / f"m{suffix}"))
    np.testing.assert_array_equal(a.to_numpy(np.float64), orig.to_numpy())  # exact values
    np.testing.assert_array_equal(b.to_numpy(np.float64), rel.to_numpy())
    assert list(b.columns) == list(rel.columns)
    same_attack(a, b, ref)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([f"o{suffix}", f"m{suffix}"])


def test_compressed_output_by_suffix_and_reproducible(pair, tmp_path):
    orig, _ = pair
    magic = {".gz": b"\x1f\x8b", ".bz2": b"BZh", ".xz": b"\xfd7zXZ", ".zip": b"PK\x03\x04"}
    for suf, m in magic.items():
        p = write_table(orig, tmp_path / f"x.csv{suf}")
        assert p.read_bytes().startswith(m)
    first = (tmp_path / "x.csv.gz").read_bytes()
    write_table(orig, tmp_path / "x.csv.gz", force=True)
    assert (tmp_path / "x.csv.gz").read_bytes() == first  # no time stamp inside
    with gzip.open(tmp_path / "x.csv.gz", "rt") as f:
        assert f.readline().strip() == ",".join(orig.columns)
    with zipfile.ZipFile(tmp_path / "x.csv.zip") as z:
        assert z.namelist() == ["x.csv"]


def test_semicolon_decimal_comma_and_other_delimiters(pair, tmp_path):
    """The issue's ';'-separated file: read as one column it gave 1 QI and 0.09 %."""
    orig, rel = pair
    ref = linkrisk.attack(orig, rel, method="dbrl")
    orig.to_csv(tmp_path / "o.csv", sep=";", decimal=",", index=False)
    rel.to_csv(tmp_path / "m.csv", sep="|", index=False)
    with pytest.warns(FileFormatWarning, match="decimal commas"):
        a = read_table(tmp_path / "o.csv")
    b = read_table(tmp_path / "m.csv")
    assert a.shape == orig.shape and b.shape == rel.shape
    same_attack(a, b, ref)
    rel.to_csv(tmp_path / "m2.csv", sep=";", index=False)  # ';' with decimal points
    same_attack(a, read_table(tmp_path / "m2.csv"), ref)


def thousands(df):
    return df.map(lambda v: f"{int(v):,}")


def test_thousands_separators_census(pair, tmp_path, monkeypatch, capsys):
    """The issue's Census release with "45,554": it was assessed as categorical (0.93 %
    where the plain file gives 100 %). Read as numbers, the attack is the plain file's."""
    orig, _ = pair
    rel = orig.copy()  # an unmasked release: every record is exposed
    thousands(orig).to_csv(tmp_path / "o.csv", index=False)
    rel.to_csv(tmp_path / "m.csv", index=False)
    with pytest.warns(FileFormatWarning, match="thousands separators"):
        a = read_table(tmp_path / "o.csv")
    assert all(infer_kind(a[c]) == "numeric" for c in a)
    np.testing.assert_array_equal(a.to_numpy(np.float64), orig.to_numpy())
    code, out, err = run_main(["attack", tmp_path / "o.csv", tmp_path / "m.csv", "--json"],
                              monkeypatch, capsys)
    assert code == 0, err
    assert json.loads(out)[0]["rate"] == linkrisk.attack(orig, rel, method="dbrl").rate == 1.0
    assert "warning: read column(s) 'AFNLWGT'" in err  # one line, says how it was read
    # unambiguous forms: several groups, decimals, spaces, apostrophes
    (tmp_path / "t.csv").write_text('a,b,c,d\n"1,234,567.5",12 345,1\'000,"-2,000"\n'
                                    '"7,000",5 000,2\'500,3\n')
    t = read_table(tmp_path / "t.csv")
    assert t.to_numpy().tolist() == [[1234567.5, 12345, 1000, -2000], [7000, 5000, 2500, 3]]


def test_index_column_saved_with_the_file(pair, tmp_path, monkeypatch, capsys):
    """The issue's CSV saved with its index: 'Unnamed: 0' became a QI (99 % for 94.5 %)."""
    orig, rel = pair
    ref = linkrisk.attack(orig, rel, method="dbrl")
    orig.to_csv(tmp_path / "o.csv")  # pandas default: the index is written
    rel.to_csv(tmp_path / "m.csv", index=False)
    with pytest.warns(FileFormatWarning, match="row numbers 0..299"):
        a = read_table(tmp_path / "o.csv")
    assert list(a.columns) == list(orig.columns)
    same_attack(a, read_table(tmp_path / "m.csv"), ref)
    # R's write.csv: row names 1..n under an empty header; twice through pandas: 'Unnamed: 0'
    orig.set_axis(range(1, 301)).to_csv(tmp_path / "r.csv")
    orig.to_csv(tmp_path / "u.csv")
    with pytest.warns(FileFormatWarning):
        read_table(tmp_path / "u.csv").to_csv(tmp_path / "u2.csv")
    for f in ("r.csv", "u2.csv"):
        with pytest.warns(FileFormatWarning):
            assert list(read_table(tmp_path / f).columns) == list(orig.columns)
    # an index of a reordered file carries the true order: refused, not silently dropped
    orig.sample(frac=1, random_state=1).to_csv(tmp_path / "s.csv")
    code, _, err = run_main(["attack", tmp_path / "s.csv", tmp_path / "m.csv"],
                            monkeypatch, capsys)
    assert code == 2 and "another order" in err and "--ids" in err


# ------------------------------------------------------------------ labelled files

def labelled_frame(n=300, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"region": rng.integers(1, 5, n).astype(float),
                       "educ": rng.integers(1, 4, n).astype(float),
                       "sex": rng.integers(1, 3, n).astype(float),
                       "income": rng.normal(1000, 100, n).round(),
                       "town": rng.choice(["Reus", "Valls", "Tarragona"], n)})
    df.loc[3, "income"] = 99
    labels = {"region": {1: "North", 2: "South", 3: "East", 4: "West"},
              "educ": {1: "primary", 2: "secondary", 3: "tertiary"},
              "sex": {1: "male", 2: "female"}, "income": {99: "refused"}}
    return df, labels


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    d = tmp_path_factory.mktemp("labelled")
    df, labels = labelled_frame()
    pyreadstat.write_sav(df, d / "in.sav", variable_value_labels=labels,
                         column_labels={"region": "Region of residence"},
                         variable_measure={"region": "nominal", "educ": "ordinal",
                                           "sex": "scale", "income": "scale"})
    pyreadstat.write_dta(df, d / "in.dta", variable_value_labels=labels,
                         column_labels={"region": "Region of residence"})
    return d, df, labels


def test_value_labels_become_categories(labelled):
    d, df, labels = labelled
    sav, dta = read_table(d / "in.sav"), read_table(d / "in.dta")
    # SPSS: measure level decides; a scale variable labelled on every value is ordered,
    # one labelled on a special value only stays numeric
    assert {c: infer_kind(sav[c]) for c in sav} == {
        "region": "nominal", "educ": "ordinal", "sex": "ordinal", "income": "numeric",
        "town": "nominal"}
    # Stata has no measure levels: labelled on every value -> unordered categories
    assert {c: infer_kind(dta[c]) for c in dta} == {
        "region": "nominal", "educ": "nominal", "sex": "nominal", "income": "numeric",
        "town": "nominal"}
    for f in (sav, dta):
        assert list(f["educ"].cat.categories) == ["primary", "secondary", "tertiary"]
        expect = df["region"].map(labels["region"])
        assert (f["region"].astype(str) == expect).all()
        assert f["income"].iloc[3] == 99
        assert f.attrs["linkrisk_meta"]["columns"]["region"]["label"] == "Region of residence"


@pytest.mark.parametrize("fmt", ["sav", "dta"])
def test_value_labels_survive_mask_cli(labelled, fmt, tmp_path, monkeypatch, capsys):
    d, df, labels = labelled
    src, out = d / f"in.{fmt}", tmp_path / f"released.{fmt}"
    code, _, err = run_main(["mask", src, "-m", "pram", "--columns", "region,educ,sex",
                             "--seed", "3", "-o", out], monkeypatch, capsys)
    assert code == 0, err
    back, meta = (pyreadstat.read_sav if fmt == "sav" else pyreadstat.read_dta)(
        out, apply_value_formats=False)
    for c in ("region", "educ", "sex", "income"):
        assert {float(k): v for k, v in meta.variable_value_labels[c].items()} == \
            {float(k): v for k, v in labels[c].items()}
    assert meta.column_names_to_labels["region"] == "Region of residence"
    if fmt == "sav":
        assert meta.variable_measure["region"] == "nominal"
        assert meta.variable_measure["educ"] == "ordinal"
    # the codes written are the masked categories' original codes
    expected = linkrisk.mask(read_table(src), "pram", columns=["region", "educ", "sex"], seed=3)
    inv = {c: {v: k for k, v in labels[c].items()} for c in ("region", "educ", "sex")}
    for c in inv:
        assert (back[c] == expected[c].astype(str).map(inv[c])).all()
    assert (back["income"] == df["income"]).all()
    assert (back[["region", "educ"]] != df[["region", "educ"]]).any().any()  # it was masked
    again = read_table(out)
    for c in ("region", "educ", "sex"):
        assert again[c].dtype == read_table(src)[c].dtype  # same categories, same order flag


def test_new_categories_and_xpt(labelled, tmp_path):
    d, _, _ = labelled
    sav = read_table(d / "in.sav")
    rec = linkrisk.mask(sav, "global_recoding", columns=["educ"], width=2)
    write_table(rec, tmp_path / "r.sav", like=sav)
    back, meta = pyreadstat.read_sav(tmp_path / "r.sav", apply_value_formats=False)
    names = set(meta.variable_value_labels["educ"].values())
    assert names == set(rec["educ"].cat.categories)  # recoded groups got their own codes
    assert read_table(tmp_path / "r.sav")["educ"].equals(rec["educ"].astype(
        read_table(tmp_path / "r.sav")["educ"].dtype))
    write_table(sav, tmp_path / "r.xpt")  # transport files have no value labels: the text
    x = read_table(tmp_path / "r.xpt")
    assert (x["region"] == sav["region"].astype(str)).all()


# ------------------------------------------------------------------ inputs and names

def test_read_input_names_and_errors(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert read_input("census").shape == (1080, 13)
    with pytest.raises(LinkriskError, match="file not found: censsus.*census, eia"):
        read_input("censsus")
    with pytest.raises(LinkriskError, match="only one input"):
        read_inputs("-", "-")
    buf = io.BytesIO(gzip.compress(b"a;b\n1;2,5\n3;4\n"))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(buf))
    with pytest.warns(FileFormatWarning):
        assert read_stdin().to_numpy().tolist() == [[1, 2.5], [3, 4]]


@pytest.mark.slow
def test_stdin_and_stdout(tmp_path):
    """`mask census -o - | attack census -`: CSV on stdout (notes on stderr), read from stdin."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    base = [sys.executable, "-m", "linkrisk.cli"]
    tee = tmp_path / "released.csv"
    m = subprocess.Popen([*base, "mask", "census", "-m", "rank_swap", "-p", "p=5", "--seed",
                          "1", "-o", "-"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env, cwd=tmp_path)
    t = subprocess.Popen(["tee", str(tee)], stdin=m.stdout, stdout=subprocess.PIPE)
    a = subprocess.run([*base, "attack", "census", "-", "--json"], stdin=t.stdout,
                       capture_output=True, timeout=300, env=env, cwd=tmp_path)
    m.stdout.close()
    t.stdout.close()
    assert m.wait(timeout=60) == 0 and t.wait(timeout=60) == 0
    assert b"wrote stdout" in m.stderr.read()
    assert a.returncode == 0, a.stderr
    assert sorted(f.name for f in tmp_path.iterdir()) == ["released.csv"]  # no file '-'
    rel = pd.read_csv(tee)
    census = linkrisk.datasets.load("census")
    pd.testing.assert_frame_equal(rel, linkrisk.mask(census, "rank_swap", p=5, seed=1))
    res = json.loads(a.stdout)[0]  # the CLI leaves the weight-like AFNLWGT out of its QIs
    assert res["rate"] == linkrisk.attack(census, rel, qi=res["qi"]).rate


SLOW_WRITE = textwrap.dedent("""
    import sys, time
    import pandas as pd
    from linkrisk import cli
    plain = pd.DataFrame.to_csv
    def slow(self, *args, **kw):  # write, then hang before the rename
        plain(self, *args, **kw)
        print("writing", flush=True)
        time.sleep(60)
    pd.DataFrame.to_csv = slow
    sys.argv = ["linkrisk", *sys.argv[1:]]
    cli.main()
""")


@pytest.mark.slow
def test_sigterm_during_write_leaves_nothing(tmp_path):
    rng = np.random.default_rng(0)  # measurements, not ids (mask leaves id-like columns)
    pd.DataFrame({"x": rng.normal(size=50).round(2), "y": rng.normal(size=50).round(2)}
                 ).to_csv(tmp_path / "in.csv", index=False)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    p = subprocess.Popen([sys.executable, "-c", SLOW_WRITE, "mask", "in.csv", "-m", "noise",
                          "-p", "a=0.1", "--seed", "1", "-o", "out.csv.gz"], cwd=tmp_path,
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert p.stdout.readline().strip() == b"writing", p.stderr.read()
        assert any(f.name.startswith(".out.csv.gz.tmp-") for f in tmp_path.iterdir())
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=60) == 128 + signal.SIGTERM
    finally:
        if p.poll() is None:
            p.kill()
    assert sorted(f.name for f in tmp_path.iterdir()) == ["in.csv"]


def test_stale_temp_files_of_killed_runs_are_removed(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".x.csv.tmp-{dead.pid}"
    stale.write_text("partial")
    write_table(pd.DataFrame({"a": [1]}), tmp_path / "x.csv")
    assert sorted(f.name for f in tmp_path.iterdir()) == ["x.csv"]


# ------------------------------------------------------------------ malformed input

def _xlsx(p):
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("xl/workbook.xml", "<workbook/>")


def _two_members(p):
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("a.csv", "a\n1\n")
        z.writestr("b.csv", "b\n2\n")


BAD = {  # name -> (file name, content or writer, expected words in the one error line)
    "empty": ("e.csv", b"", "is empty"),
    "blank lines": ("e.csv", b"\n \n\n", "is empty"),
    "header only": ("h.csv", b"a,b\n", "header but no rows"),
    "binary garbage": ("g.csv", bytes(np.random.default_rng(0).integers(0, 256, 4000,
                                                                        dtype=np.uint8)),
                       "binary"),
    "control characters": ("g.csv", b"a,b\n\x01\x02\x03\x04\x05\x06,\x07\x08\x0e\x0f\n" * 50,
                           "binary"),
    "latin-1": ("l.csv", "a,b\ncafé,1\nthé,2\n".encode("latin-1"), "not UTF-8"),
    "latin-1 after 64 KiB": ("l.csv", b"a,b\n" + b"x,1\n" * 20000 + "é,2\n".encode("latin-1"),
                             "not UTF-8"),
    "duplicate names": ("d.csv", b"x,y,x\n1,2,3\n4,5,6\n", "'x' appears twice"),
    "text in numbers": ("t.csv", b"a,b\n1,2\n.,3\n4,5\n6,7\n", "row 2 holds '.'"),
    "percent signs": ("p.csv", b"a,b\n12%,1\n7.5%,2\n", "unit or currency sign"),
    "currency signs": ("c.csv", 'a,b\n"$1,200",1\n€ 12,2\n'.encode(), "'$1,200'"),
    "thousands and decimal commas": ("m.csv", b'a;b\n"1,234,567";1\n"2,5";2\n', "mixes"),
    "bad grouping": ("i.csv", b'a,b\n"1,23,456",1\n"1,234",2\n', "'1,23,456'"),
    "ragged rows": ("r.csv", b"a,b\n1,2\n3,4,5\n6,7\n", "Expected 2 fields in line 3"),
    "one field more than header": ("x.csv", b"a,b\n1,2,3\n4,5,6\n", "one field more"),
    "unnamed middle column": ("u.csv", b"a,,b\n1,7,2\n3,9,4\n", "column 2 of"),
    "zip of two files": ("z.csv.zip", _two_members, "exactly one CSV"),
    "Excel workbook": ("w.csv", _xlsx, "Excel workbook"),
    "Parquet named csv": ("p.csv", b"PAR1\x00\x00\x15\x04", "Parquet file"),
    "truncated gzip": ("t.csv.gz", gzip.compress(b"a,b\n" + "".join(
        f"{i},{i * i}\n" for i in range(5000)).encode())[:5000], "cannot read"),
    "not a Stata file": ("s.dta", b"hello,world\n1,2\n", "s.dta as Stata"),
    "not an SPSS file": ("s.sav", b"\x00" * 300, "s.sav as SPSS"),
    "not a SAS file": ("s.sas7bdat", b"\x00" * 300, "s.sas7bdat as SAS7BDAT"),
    "not an XPT file": ("s.xpt", b"x" * 400, "s.xpt as SAS transport"),
    "not a Parquet file": ("s.parquet", b"a,b\n1,2\n", "s.parquet as Parquet"),
    "directory": ("dir", None, "is a directory"),
    "missing file": ("nope.csv", "missing", "file not found: "),
}


@pytest.mark.parametrize("case", list(BAD))
def test_malformed_inputs_one_line_exit_2(case, tmp_path, monkeypatch, capsys):
    fname, content, words = BAD[case]
    p = tmp_path / fname
    if content is None:
        p.mkdir()
    elif callable(content):
        content(p)
    elif content != "missing":
        p.write_bytes(content)
    code, out, err = run_main(["attack", p, "census"], monkeypatch, capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert words in lines[0], lines[0]
    assert "Traceback" not in err and out == ""


@pytest.mark.parametrize("output,words", [("r.sas7bdat", "write SAS transport instead"),
                                          ("r.xlsx", "unknown output format"),
                                          ("nodir/r.csv", "does not exist"),
                                          (".", "is a directory")])
def test_unwritable_outputs_refused_before_masking(output, words, tmp_path, monkeypatch,
                                                   capsys):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_main(["mask", "census", "-m", "noise", "-p", "a=0.1", "-o", output],
                            monkeypatch, capsys)
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_spaces_and_trailing_delimiters(tmp_path):
    (tmp_path / "s.csv").write_text("a, b,\n1, 2,\n3, 4,\n")
    with pytest.warns(FileFormatWarning, match="no name and no values"):
        t = read_table(tmp_path / "s.csv")
    assert list(t.columns) == ["a", "b"] and t.to_numpy().tolist() == [[1, 2], [3, 4]]
    (tmp_path / "d.csv").write_text("a, a\n1,2\n")
    with pytest.raises(LinkriskError, match="'a' appears twice"):
        read_table(tmp_path / "d.csv")


def test_utf16_and_bom_are_read(tmp_path):
    text = "a\tb\n1\t2\n3\t4\n"
    (tmp_path / "u16.txt").write_bytes(text.encode("utf-16"))
    (tmp_path / "bom.csv").write_bytes(b"\xef\xbb\xbf" + text.replace("\t", ",").encode())
    for f in ("u16.txt", "bom.csv"):
        t = read_table(tmp_path / f)
        assert list(t.columns) == ["a", "b"] and t.to_numpy().tolist() == [[1, 2], [3, 4]]


def test_sas7bdat_reads_the_catalog_labels(labelled, tmp_path, monkeypatch):
    """No open writer makes SAS7BDAT files, so the reader is fed a labelled file's data
    and metadata; what is checked is that the sibling catalog is passed and applied."""
    d, _, _ = labelled
    seen = {}

    def fake(path, catalog_file=None, **kw):
        seen["catalog"] = catalog_file
        df, meta = pyreadstat.read_sav(d / "in.sav", apply_value_formats=False)
        if catalog_file is None:
            meta.variable_value_labels = {}
        return df, meta

    monkeypatch.setattr(pyreadstat, "read_sas7bdat", fake)
    (tmp_path / "x.sas7bdat").write_bytes(b"stand-in")
    plain = read_table(tmp_path / "x.sas7bdat")
    assert seen["catalog"] is None and infer_kind(plain["region"]) == "numeric"
    (tmp_path / "x.sas7bcat").write_bytes(b"stand-in")
    lab = read_table(tmp_path / "x.sas7bdat")
    assert seen["catalog"] == str(tmp_path / "x.sas7bcat")
    # SAS has no measure levels: fully labelled variables become unordered categories
    assert infer_kind(lab["educ"]) == "nominal" and infer_kind(lab["income"]) == "numeric"
    assert list(lab["region"].cat.categories) == ["North", "South", "East", "West"]


@pytest.mark.parametrize("suffix", [".dta", ".sav", ".parquet", ".csv"])
def test_categorical_file_roundtrip(data_dir, suffix, tmp_path):
    """Household's coded categories (no labels in memory) written and read back: still
    categorical, and the Hamming attack gives the same result."""
    orig = linkrisk.datasets.load("household").head(300).reset_index(drop=True)
    rel = linkrisk.mask(orig, "pram", columns=["roof", "walls", "water"], seed=2)
    ref = linkrisk.attack(orig, rel, method="dbrl_hamming")
    a = read_table(write_table(orig, tmp_path / f"o{suffix}"))
    b = read_table(write_table(rel, tmp_path / f"m{suffix}"))
    if suffix in (".dta", ".sav"):  # the same Categoricals of codes come back
        for c in orig:
            assert a[c].dtype == orig[c].dtype and b[c].dtype == rel[c].dtype
        assert a.equals(orig) and b.equals(rel)
    if suffix == ".parquet":  # pyarrow keeps the codes, pandas' metadata the kind; unused
        for x, y in ((a, orig), (b, rel)):  # categories are lost
            assert all(infer_kind(x[c]) == "nominal" for c in x)
            assert (x.astype(int) == y.astype(int)).all().all()
    kinds = {c: "nominal" for c in a}  # CSV holds codes only: the kinds are given
    for x, y in ((a, b), (orig, b)):  # also the built-in original against the file
        res = linkrisk.attack(x, y, method="dbrl_hamming", kinds=kinds)
        assert res.rate == ref.rate
        np.testing.assert_array_equal(res.per_record.to_numpy(), ref.per_record.to_numpy())


# ------------------------------------------- issue #38: values, labels, dates, races, files

def test_row_order_check_compares_codes_by_value():
    """Codes written 2 in the original and 2.0 (or "2") in the release are one category:
    a shuffled release is refused, the release in order passes."""
    from linkrisk.truth import row_order_check

    rng = np.random.default_rng(3)
    n = 2000
    a = pd.DataFrame({"h": rng.integers(1, 15, n), "g": rng.integers(1, 15, n)})
    b = a.copy()
    flip = rng.random(n) < 0.1
    b.loc[flip, "h"] = rng.integers(1, 15, int(flip.sum()))
    b = pd.DataFrame({"h": b["h"].astype(float), "g": b["g"].map(lambda v: f" {v}.0")})
    kinds = {"h": "nominal", "g": "nominal"}
    assert row_order_check(a, b, ["h", "g"], kinds).checked
    shuffled = b.sample(frac=1.0, random_state=1).reset_index(drop=True)
    with pytest.raises(LinkriskError, match="reordered"):
        row_order_check(a, shuffled, ["h", "g"], kinds)


def test_ids_are_labels(tmp_path):
    """--ids columns are read as text: '001' and '0001' are two ids, 'S0000' among
    '00001' is an id, not a number with text; ids spelled as other numbers are refused."""
    from linkrisk.data import truth_from_ids

    ids = ["001", "0001", "S0000", "00002", " 7"] + [f"{i:05d}" for i in range(10, 40)]
    x = np.arange(len(ids), dtype=float) ** 1.5
    pd.DataFrame({"id": ids, "x": x}).to_csv(tmp_path / "a.csv", index=False)
    pd.DataFrame({"id": ids[::-1], "x": x[::-1] + 0.1}).to_csv(tmp_path / "b.csv",
                                                               index=False)
    a, b = read_inputs(tmp_path / "a.csv", tmp_path / "b.csv", text_columns="id")
    assert list(a["id"][:5]) == ["001", "0001", "S0000", "00002", "7"]
    truth = truth_from_ids(a, b, "id")
    assert list(truth) == list(range(len(ids) - 1, -1, -1))
    # without --ids the column is kept as text (labels with leading zeros), not refused
    assert read_table(tmp_path / "a.csv")["id"].iloc[3] == "00002"
    # the same numbers written differently: one line that says so
    pd.DataFrame({"id": [str(int(v)) for v in ids[3:]], "x": x[3:]}).to_csv(
        tmp_path / "c.csv", index=False)
    a, c = read_inputs(tmp_path / "a.csv", tmp_path / "c.csv", text_columns=["id"])
    a = a[a["id"].str.isdigit()].reset_index(drop=True)
    with pytest.raises(LinkriskError, match=r"written differently.*'000(\d+)'.*'\1'.*3 %.*100 % as numbers"):
        truth_from_ids(a.iloc[3:], c, "id")
    # numbers of a numeric dtype: 1 and 1.0 are one id
    t = truth_from_ids(pd.DataFrame({"id": [1, 2, 3]}), pd.DataFrame({"id": [3.0, 1.0, 2.0]}),
                       "id")
    assert list(t) == [1, 2, 0]


def test_ids_given_to_the_cli_are_read_as_text(tmp_path, monkeypatch, capsys):
    rng = np.random.default_rng(0)
    n = 60
    ids = [f"{i:04d}" for i in range(n - 1)] + ["00000"]  # '0000' and '00000' differ
    x = rng.normal(size=(n, 2))
    pd.DataFrame({"rid": ids, "a": x[:, 0], "b": x[:, 1]}).to_csv(tmp_path / "o.csv",
                                                                  index=False)
    order = rng.permutation(n)
    pd.DataFrame({"rid": np.array(ids)[order], "a": x[order, 0] + 0.01,
                  "b": x[order, 1]}).to_csv(tmp_path / "m.csv", index=False)
    code, out, err = run_main(["attack", tmp_path / "o.csv", tmp_path / "m.csv", "--ids",
                               "rid", "--json"], monkeypatch, capsys)
    assert code == 0, err
    assert json.loads(out)[0]["correct_links"] > 0.9 * n


def _dates_pair(tmp_path, n=400):
    rng = np.random.default_rng(5)
    dob = pd.Timestamp("1950-01-01") + pd.to_timedelta(rng.integers(0, 20000, n), unit="D")
    shift = pd.to_timedelta(rng.integers(-30, 31, n), unit="D")
    w = rng.normal(70, 10, n)
    pd.DataFrame({"dob": dob.strftime("%Y-%m-%d"), "w": w}).to_csv(tmp_path / "o.csv",
                                                                   index=False)
    pd.DataFrame({"dob": (dob + shift).strftime("%d/%m/%Y"), "w": w + rng.normal(0, 1, n)}
                 ).to_csv(tmp_path / "m.csv", index=False)
    days = ((dob - pd.Timestamp("1970-01-01")) / pd.Timedelta(days=1)).to_numpy()
    return days


def test_dates_are_numbers(tmp_path):
    from linkrisk.data import attribute_kinds, numeric_matrix

    days = _dates_pair(tmp_path)
    with pytest.warns(FileFormatWarning, match="'dob'.*as dates"):
        a = read_table(tmp_path / "o.csv")
    with pytest.warns(FileFormatWarning, match="as dates"):
        b = read_table(tmp_path / "m.csv")
    assert a["dob"].dtype == np.float64 and np.array_equal(a["dob"].to_numpy(), days)
    assert np.abs(b["dob"].to_numpy() - days).max() <= 30
    assert attribute_kinds(a, ["dob"], {"dob": "numeric"}) == {"dob": "numeric"}
    # the same as day numbers: the same attack result
    numbers = a.assign(dob=days), b
    ref = linkrisk.attack(*numbers, method="dbrl", assume_row_order=True)
    res = linkrisk.attack(a, b, method="dbrl", assume_row_order=True)
    assert res.rate == ref.rate > 0.2
    # dates held as text or datetime64 (Python API) are numeric too, as days
    text = pd.Series(["1970-01-02", "1970-01-03 12:00"])
    assert infer_kind(text) == "numeric"
    assert numeric_matrix(pd.DataFrame({"d": text}), ["d"])[:, 0].tolist() == [1.0, 2.5]
    assert infer_kind(pd.Series(pd.to_datetime(["2000-01-01"]))) == "numeric"
    # written back as dates
    write_table(a, tmp_path / "back.csv")
    assert (tmp_path / "back.csv").read_text().splitlines()[1].split(",")[0] == \
        pd.read_csv(tmp_path / "o.csv")["dob"][0]


def test_dates_from_binary_formats_and_ambiguous_text(tmp_path):
    df = pd.DataFrame({"t": pd.to_datetime(["1970-01-02 06:00", "1980-03-14 10:00"]),
                       "x": [1.0, 2.0]})
    df.to_parquet(tmp_path / "d.parquet")
    with pytest.warns(FileFormatWarning, match="'t'.*as dates"):
        r = read_table(tmp_path / "d.parquet")
    assert r["t"].tolist()[0] == 1.25
    (tmp_path / "amb.csv").write_text("d,x\n03/04/1980,1\n01/02/1970,2\n")
    with pytest.raises(LinkriskError, match="day/month or month/day.*YYYY-MM-DD"):
        read_table(tmp_path / "amb.csv")


def test_two_writers_of_one_output_never_both_win(tmp_path):
    import threading

    from linkrisk.fileio import atomic_path

    dest = tmp_path / "same.csv"
    barrier = threading.Barrier(2)
    outcome = {}

    def writer(k):
        try:
            with atomic_path(dest) as tmp:
                tmp.write_text(f"release {k}\n")
                barrier.wait(timeout=10)  # both checked that dest is free, both wrote
            outcome[k] = "wrote"
        except LinkriskError as exc:
            outcome[k] = str(exc)

    threads = [threading.Thread(target=writer, args=(k,)) for k in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcome.values())[1] == "wrote"
    assert "exists; pass --force" in sorted(outcome.values())[0]
    winner = next(k for k, v in outcome.items() if v == "wrote")
    assert dest.read_text() == f"release {winner}\n"
    assert sorted(f.name for f in tmp_path.iterdir()) == ["same.csv"]


def test_mask_loses_the_race_with_exit_2(pair, tmp_path, monkeypatch, capsys):
    from linkrisk import fileio

    pair[0].to_csv(tmp_path / "in.csv", index=False)
    out = tmp_path / "same.csv"
    plain = fileio._WRITERS["csv"]

    def racing(df, tmp, **kw):  # another mask writes the same name meanwhile
        plain(df, tmp, **kw)
        out.write_text("the other release\n")

    monkeypatch.setitem(fileio._WRITERS, "csv", racing)
    code, _, err = run_main(["mask", tmp_path / "in.csv", "-m", "noise", "-p", "a=0.1",
                             "--seed", "1", "-o", out], monkeypatch, capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "exists; pass --force" in lines[0], err
    assert out.read_text() == "the other release\n"
    assert sorted(f.name for f in tmp_path.iterdir()) == ["in.csv", "same.csv"]


@pytest.mark.parametrize("suffix", [".xpt", ".xpt80", ".dta", ".sav", ".zsav", ".parquet",
                                    ".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zip", ".csv"])
def test_truncated_files_are_refused(pair, suffix, tmp_path, monkeypatch, capsys):
    real = ".xpt" if suffix == ".xpt80" else suffix
    df = pair[0].head(200).assign(s=lambda d: np.where(d.index % 2, "a", "bb"))
    full = tmp_path / f"full{real}"
    write_table(df, full)
    data = full.read_bytes()
    cut = len(data) // 2
    if suffix == ".xpt80":  # at a record boundary: only the partial observation shows it
        cut = cut // 80 * 80
    elif suffix == ".csv":  # inside a record
        cut = data.rfind(b",", 0, cut) + 1
    p = tmp_path / f"cut{real}"
    p.write_bytes(data[:cut])
    code, out, err = run_main(["attack", p, "census"], monkeypatch, capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), err
    assert "truncated" in lines[0].replace(str(tmp_path), ""), lines[0]


def test_memory_error_while_reading_names_the_file(pair, tmp_path, monkeypatch, capsys):
    from linkrisk import fileio

    p = tmp_path / "big.csv.gz"
    write_table(pair[0], p)

    def no_memory(*a, **k):
        raise MemoryError

    monkeypatch.setattr(fileio, "_read_csv", no_memory)
    code, _, err = run_main(["attack", p, "census"], monkeypatch, capsys)
    assert code == 2 and "too large for this machine's memory" in err, err
    assert "compressed" in err and "Parquet" in err and "--memory" not in err


def test_cache_and_study_in_a_read_only_directory(tmp_path, monkeypatch, capsys):
    from linkrisk import fileio
    from linkrisk.experiments.choose import cache_folder

    ro = tmp_path / "ro"
    ro.mkdir()
    monkeypatch.chdir(ro)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    real = fileio.writable_dir
    monkeypatch.setattr(fileio, "writable_dir",  # tests run as root: chmod would not do
                        lambda p: ro not in [Path(p).absolute(), *Path(p).absolute().parents]
                        and real(p))
    with pytest.warns(linkrisk.LinkriskWarning, match="not writable.*xdg"):
        assert cache_folder(Path(".linkrisk-cache")) == tmp_path / "xdg" / "linkrisk"
    with pytest.raises(LinkriskError, match="cannot use cache folder.*--cache"):
        cache_folder(ro / "mine")
    assert not (ro / ".linkrisk-cache").exists()
    code, _, err = run_main(["study", "synthetic", "--quick"], monkeypatch, capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "not writable" in lines[0], err
    assert "--output" in lines[0] and list(ro.iterdir()) == []
