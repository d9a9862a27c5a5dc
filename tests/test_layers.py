"""The package's import layers, read from the source with ``ast`` (no module is imported).

Imports run one way: ``core`` -> ``envs`` and ``data`` -> ``learners`` (and ``models``) -> ``bench`` -> ``gpu_suite``
-> ``cli`` (docs/architecture.md). Every import counts: top-level or inside a function, ``import x``,
``from x import y``, relative, and ``importlib.import_module("jaxsoc...")`` with a literal (or f-string) name. The
tests fail on an import from a lower layer to a higher one, naming its file and line, and on any import cycle among
the modules.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "jaxsoc"

#: layers from the bottom up: each is a list of module prefixes; a module belongs to the layer of its longest prefix
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("core", ("jaxsoc.core",)),
    ("envs", ("jaxsoc", "jaxsoc.compat", "jaxsoc.envs", "jaxsoc.data")),
    ("learners", ("jaxsoc.learners", "jaxsoc.models")),
    ("bench", ("jaxsoc.bench",)),
    ("gpu_suite", ("jaxsoc.gpu_suite",)),
    ("cli", ("jaxsoc.cli",)),
]


@dataclass(frozen=True)
class Edge:
    """One import: module ``source`` (at ``file``:``line``, the file relative to the package's parent) imports
    module ``target``."""

    source: str
    target: str
    file: str
    line: int


def module_files(package: Path = PACKAGE) -> dict[str, Path]:
    """Returns ``{dotted module name: file}`` for every ``.py`` file under ``package`` (``__init__.py`` as its
    package's name)."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def layer_of(module: str) -> int:
    """Returns the index in ``LAYERS`` of ``module``'s layer (its longest matching prefix). Raises ``KeyError`` for
    a module no layer claims."""
    best, index = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, index = len(prefix), i
    if index is None:
        raise KeyError(f"no layer claims {module}: add it to tests/test_layers.py LAYERS")
    return index


def _known(name: str, modules: dict[str, Path]) -> str | None:
    """Returns the longest prefix of dotted ``name`` that is a module of the package (None outside it)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def _dynamic_name(node: ast.Call) -> str | None:
    """Returns the module named by ``importlib.import_module(...)`` / ``__import__(...)``: the literal, or an
    f-string's text before its first placeholder up to its last dot (its package); None for anything else."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name not in ("import_module", "__import__") or not node.args:
        return None
    arg = node.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        return str(arg.values[0].value).rpartition(".")[0] or None
    return None


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> list[Edge]:
    """Returns every import of a package module that ``module`` (source file ``path``) makes, wherever it stands in
    the file; ``from p import name`` counts as importing ``p.name`` when that is a module, else ``p``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    file = path.relative_to(modules["jaxsoc"].parents[1]).as_posix()
    edges = []

    def add(name: str | None, line: int) -> None:
        target = _known(name, modules) if name else None
        if target is not None and target != module:
            edges.append(Edge(module, target, file, line))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            for alias in node.names:
                add(f"{origin}.{alias.name}" if f"{origin}.{alias.name}" in modules else origin, node.lineno)
        elif isinstance(node, ast.Call):
            add(_dynamic_name(node), node.lineno)
    return edges


def import_graph(package: Path = PACKAGE) -> list[Edge]:
    """Returns every import between the package's modules."""
    modules = module_files(package)
    return [edge for name, path in modules.items() for edge in imports_of(name, path, modules)]


def upward_imports(edges: list[Edge]) -> list[str]:
    """Returns one line per import from a lower layer to a higher one: ``file:line: a (layer) imports b (layer)``
    (an import statement naming several names of one module gives one line)."""
    out = []
    for e in edges:
        low, high = layer_of(e.source), layer_of(e.target)
        if high > low:
            out.append(f"{e.file}:{e.line}: {e.source} ({LAYERS[low][0]}) imports {e.target} ({LAYERS[high][0]})")
    return list(dict.fromkeys(out))


def import_cycles(edges: list[Edge]) -> list[list[Edge]]:
    """Returns one cycle (its imports in order, the last leading back to the first's module) for every strongly
    connected group of modules that import one another; empty when the graph has no cycle."""
    graph: dict[str, list[Edge]] = {}
    for e in edges:
        graph.setdefault(e.source, []).append(e)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def connect(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for e in graph.get(v, []):
            if e.target not in index:
                connect(e.target)
                low[v] = min(low[v], low[e.target])
            elif e.target in on_stack:
                low[v] = min(low[v], index[e.target])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(group)

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return [_cycle_in(group, graph) for group in groups]


def _cycle_in(group: set[str], graph: dict[str, list[Edge]]) -> list[Edge]:
    """Returns a shortest cycle through the first module (by name) of a strongly connected ``group``."""
    start = min(group)
    paths: dict[str, list[Edge]] = {start: []}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for e in graph.get(v, []):
                if e.target == start:
                    return paths[v] + [e]
                if e.target in group and e.target not in paths:
                    paths[e.target] = paths[v] + [e]
                    nxt.append(e.target)
        frontier = nxt
    raise AssertionError(f"{sorted(group)} is not strongly connected")


def describe(cycle: list[Edge]) -> str:
    """Returns a cycle as ``a (file:line) -> b (file:line) -> ... -> a``."""
    steps = [f"{e.source} ({e.file}:{e.line})" for e in cycle]
    return " -> ".join([*steps, cycle[0].source])


@pytest.fixture(scope="module")
def edges() -> list[Edge]:
    return import_graph()


def test_every_module_has_a_layer():
    for name in module_files():
        layer_of(name)  # raises KeyError naming the module


def test_the_graph_is_read(edges):
    """The reader sees top-level, function-level and relative imports (guards against an empty graph passing)."""
    pairs = {(e.source, e.target) for e in edges}
    assert ("jaxsoc", "jaxsoc.envs") in pairs
    assert ("jaxsoc.cli", "jaxsoc.cli.bench") in pairs
    assert len(edges) > 500


def test_no_import_runs_up_the_layers(edges):
    bad = upward_imports(edges)
    order = " -> ".join(name for name, _ in LAYERS)
    assert not bad, f"imports against the layer order ({order}):\n" + "\n".join(bad)


def test_no_import_cycles(edges):
    cycles = import_cycles(edges)
    assert not cycles, "import cycles:\n" + "\n".join(describe(c) for c in cycles)


def test_the_checks_catch_an_upward_import_and_a_cycle(tmp_path):
    """A toy package with one upward import (core -> cli, inside a function) and one cycle through a relative
    import: both are reported with their file and line."""
    root = tmp_path / "jaxsoc"
    for folder in ("core", "cli", "envs"):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "core" / "a.py").write_text("def f():\n    from jaxsoc.cli import b\n")
    (root / "cli" / "b.py").write_text("from . import c\n")
    (root / "cli" / "c.py").write_text("import jaxsoc.cli.b\n")
    edges = import_graph(root)
    assert upward_imports(edges) == ["jaxsoc/core/a.py:2: jaxsoc.core.a (core) imports jaxsoc.cli.b (cli)"]
    (cycle,) = import_cycles(edges)
    assert describe(cycle) == "jaxsoc.cli.b (jaxsoc/cli/b.py:1) -> jaxsoc.cli.c (jaxsoc/cli/c.py:1) -> jaxsoc.cli.b"
