"""The import graph of linkrisk: every module imports, there are no import circles, and
data flows one way — errors/params → data/file I/O/masking → engine → attacks → measures →
report (renders a result it is handed; the assessment type only for type checking) →
assessment/experiments/catalog → the package's public API → cli. The two engine packages
import nothing from above them (only the leaves ``linkrisk.errors`` and ``linkrisk.options``), and the nearest-set engine
nothing from global matching."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import linkrisk

ROOT = Path(linkrisk.__file__).resolve().parent

#: layer of each top-level part (a module may import only from its own part or lower)
LAYER = {"errors": 0, "_version": 0, "params": 0, "options": 0, "dates": 0, "truth": 1, "data": 1, "grouping": 1, "datasets": 1, "fileio": 1, "masking": 1,
         "engine": 2, "attacks": 3, "measures": 4, "report": 5, "scenarios": 5, "synthetic": 5, "assessment": 6, "experiments": 6,
         "catalog": 6, "": 7, "app": 8, "cli": 8, "__main__": 9}
#: known edges against the flow (none: ``Assessment.to_html`` calls the report package,
#: which sits below the assessment and reads ``records_at_risk`` from the measures)
KNOWN: set[tuple[str, str]] = set()


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for p in ROOT.rglob("*.py"):
        parts = list(p.relative_to(ROOT.parent).with_suffix("").parts)
        pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if pkg else parts)] = (p, pkg)
    return out


def import_graph() -> dict[str, set[str]]:
    """module → the linkrisk modules it imports (anywhere in the file, also inside
    functions); ``from pkg import name`` counts as importing ``pkg.name`` when that is a
    module, else ``pkg``."""
    mods = _modules()
    graph: dict[str, set[str]] = {}
    for mod, (path, pkg) in mods.items():
        deps: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        typing_only = {id(n) for block in ast.walk(tree) if _is_type_checking(block)
                       for stmt in block.body for n in ast.walk(stmt)}
        for node in ast.walk(tree):
            if id(node) in typing_only:  # ``if TYPE_CHECKING:`` imports never run
                continue
            if isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name.split(".")[0] == "linkrisk"}
            elif isinstance(node, ast.ImportFrom):
                target = _from_target(mod, pkg, node)
                if target.split(".")[0] != "linkrisk":
                    continue
                deps |= {f"{target}.{a.name}" if f"{target}.{a.name}" in mods else target
                         for a in node.names}
        graph[mod] = deps - {mod}
    return graph


def _from_target(mod: str, pkg: bool, node: ast.ImportFrom) -> str:
    """The absolute module a ``from … import`` in module ``mod`` (a package when ``pkg``)
    reads from."""
    if not node.level:
        return node.module or ""
    base = mod.split(".") if pkg else mod.split(".")[:-1]
    base = base[:len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and (
        (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
        or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING"))


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _part(mod: str) -> str:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_every_module_imports():
    for mod in sorted(_modules()):
        importlib.import_module(mod)


def test_no_import_cycles():
    graph = import_graph()
    for a, b in KNOWN:
        graph[a].discard(b)
    assert cycles(graph) == []


def test_data_flows_one_way():
    bad = [(a, b) for a, deps in import_graph().items() for b in deps
           if LAYER[_part(b)] > LAYER[_part(a)] and (a, b) not in KNOWN]
    assert bad == []


def test_engine_packages_imported_only_from_above():
    graph = import_graph()
    for mod, deps in graph.items():
        if mod.startswith("linkrisk.engine"):
            outside = {d for d in deps if not d.startswith("linkrisk.engine")}
            # linkrisk.options is a leaf (it imports linkrisk.errors only): the engine's
            # memory budget reads LINKRISK_MEMORY with its size parser
            assert outside <= {"linkrisk.errors", "linkrisk.options"}, (mod, outside)
        if mod.startswith("linkrisk.engine.nearest"):
            assert not any(d.startswith("linkrisk.engine.matching") for d in deps), mod


def private_imports() -> list[str]:
    """Every use of another module's private name (``_name``, not ``__dunder__``) in
    linkrisk: ``from mod import _name`` and ``mod._name`` where ``mod`` names a linkrisk
    module imported in the file. Private modules (``masking._base``) count as modules."""
    mods = _modules()
    out = []
    for mod, (path, pkg) in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module_names: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                module_names |= {(a.asname or a.name).split(".")[0] for a in node.names
                                 if a.name.split(".")[0] == "linkrisk"}
            elif isinstance(node, ast.ImportFrom):
                target = _from_target(mod, pkg, node)
                if target.split(".")[0] != "linkrisk":
                    continue
                for a in node.names:
                    if f"{target}.{a.name}" in mods:
                        module_names.add(a.asname or a.name)
                    elif a.name.startswith("_") and not a.name.startswith("__"):
                        out.append(f"{mod}:{node.lineno} imports {target}.{a.name}")
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in module_names and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                out.append(f"{mod}:{node.lineno} uses {node.value.id}.{node.attr}")
    return sorted(out)


def test_no_private_cross_module_imports():
    """A helper used by another file is public in its module (named without the leading
    underscore and documented), so that its callers are visible and it is not changed as
    if it were private."""
    assert private_imports() == []


def test_the_checker_sees_a_cycle():
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(g) == [["a", "b", "c"]]
    assert "linkrisk.engine.nearest.rules" in import_graph()["linkrisk.engine.nearest.kernels"]


def test_attack_registry_order():
    """The registry's order (docs, ``linkrisk methods``, "all") does not depend on how the
    attack modules import each other: dbrl and its variants first, as before."""
    from linkrisk.attacks import ATTACKS

    assert list(ATTACKS)[:8] == ["dbrl", "dbrl_l1", "dbrl2", "mahalanobis", "mahalanobis0",
                                 "kernel", "dbrl_mixed", "dbrl_hamming"]
