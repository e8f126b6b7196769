"""The house rules of docs/architecture.md, checked on the source: what may import what, and no cycles.

Imports are read statically (every `import` statement, at module level or inside a function, except
under `if TYPE_CHECKING:`), so a lazy import that would break a rule counts as much as a top-level one.
"""

from __future__ import annotations

import ast
import pkgutil
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

import faultline
from tests.conftest import REPO

PACKAGES = ("faultline", "flows", "tasks", "dashboards")
DIAGNOSERS = ("faultline.sade", "faultline.astra", "faultline.marts", "faultline.mcp", "faultline.nightly",
              "faultline.verdict", "dashboards")
NEEDLE = "/".join(("..", "shared"))  # spelled out here would make this file an offender
LAB_SIDE = ("faultline.corpus", "faultline.lab.faults", "faultline.lab.lifecycle")


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _targets(module: str, path: Path, node: ast.Import | ast.ImportFrom, known: dict[str, Path]) -> list[str]:
    """The project modules one import statement loads (`from pkg import sub` loads `pkg.sub`)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name in known]
    base = node.module or ""
    if node.level:
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        package = package[: len(package) - node.level + 1]
        base = ".".join([*package, base] if base else package)
    found = []
    for alias in node.names:
        full = f"{base}.{alias.name}"
        found.append(full if full in known else base)
    return [name for name in found if name in known]


@cache
def import_graph() -> dict[str, frozenset[str]]:
    """module -> the project modules it imports (anywhere in the file, type-checking blocks excepted)."""
    known = _modules()
    graph = {}
    for module, path in known.items():
        tree = ast.parse(path.read_text(), str(path))
        type_only = {id(n) for block in ast.walk(tree)
                     if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
                     for n in ast.walk(block)}
        deps = {target for node in ast.walk(tree)
                if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in type_only
                for target in _targets(module, path, node, known)}
        graph[module] = frozenset(deps - {module})
    return graph


def reachable(start: str) -> set[str]:
    """Every project module `start` (a module or a package and all its modules) loads, directly or not."""
    graph = import_graph()
    todo = [m for m in graph if m == start or m.startswith(start + ".")]
    seen: set[str] = set()
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(graph[module])
    return seen


def import_cycles() -> list[list[str]]:
    """Groups of modules that import each other (strongly connected components with more than one module)."""
    graph, index, low, stack, on_stack, cycles = import_graph(), {}, {}, [], set(), []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for dep in graph[module]:
            if dep not in index:
                visit(dep)
                low[module] = min(low[module], low[dep])
            elif dep in on_stack:
                low[module] = min(low[module], index[dep])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return cycles


def _inside(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def package_of(module: str) -> str:
    """The package a module belongs to: `faultline.<sub>` (a subpackage or a top-level module), or `flows`,
    `tasks`, `dashboards`."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "faultline" and len(parts) > 1 else parts[0]


def package_graph() -> dict[str, set[str]]:
    """package -> the other packages its modules import."""
    graph: dict[str, set[str]] = {}
    for module, deps in import_graph().items():
        graph.setdefault(package_of(module), set()).update(package_of(d) for d in deps)
    return {package: deps - {package} for package, deps in graph.items()}


def package_cycles() -> list[list[str]]:
    """Groups of packages that import each other, directly or around a longer loop."""
    graph = package_graph()
    reach = {p: set() for p in graph}
    for start in graph:
        todo = list(graph[start])
        while todo:
            p = todo.pop()
            if p not in reach[start]:
                reach[start].add(p)
                todo.extend(graph.get(p, ()))
    groups = {frozenset({p, *(q for q in reach[p] if p in reach.get(q, ()))}) for p in graph if p in reach[p]}
    return sorted(sorted(g) for g in groups)


_BOARD_ROW = re.compile(r"^\| `([\w.]+)` \| (.+) \|$")


def whiteboard() -> tuple[set[str], dict[str, set[str] | None]]:
    """docs/architecture.md's whiteboard: the foundation (any package may import it) and, per package, the packages
    it may import (None: every package)."""
    text = (REPO / "docs" / "architecture.md").read_text()
    board = text[text.index("### The whiteboard"):]
    foundation = set(re.findall(r"`(faultline\.\w+)`", board[:board.index("| package | may import |")]))
    allowed: dict[str, set[str] | None] = {}
    for line in board.splitlines():
        row = _BOARD_ROW.match(line)
        if row:
            cell = row.group(2)
            allowed[row.group(1)] = None if cell == "every package" else set(re.findall(r"`([\w.]+)`", cell))
    return foundation, allowed


def off_the_board(graph: dict[str, set[str]]) -> list[str]:
    """Every package-level import the whiteboard does not allow, and every package it has no row for."""
    foundation, allowed = whiteboard()
    wrong = []
    for package, deps in sorted(graph.items()):
        if package == "faultline":
            continue
        if package in foundation:
            wrong += [f"{package} -> {d} (the foundation imports only itself)" for d in sorted(deps - foundation)]
        elif package not in allowed:
            wrong.append(f"{package} has no row on the whiteboard")
        elif allowed[package] is not None:
            wrong += [f"{package} -> {d}" for d in sorted(deps - foundation - allowed[package])]
    return wrong


# --- the rules -------------------------------------------------------------------------------------


def test_the_graph_sees_lazy_imports():
    """The checks below would be hollow if imports inside functions were missed."""
    assert "faultline.lab.faults.base" in import_graph()["faultline.lab.lifecycle"]  # imported inside _remove
    assert "faultline.network.snapshot" in import_graph()["faultline.network.snapshot_backend"]  # in snapshot_backend


def test_no_import_cycles():
    assert import_cycles() == []


def test_no_package_imports_another_that_imports_it_back():
    assert package_cycles() == []


def test_every_package_imports_only_what_the_whiteboard_allows():
    assert off_the_board(package_graph()) == []


def test_a_package_loop_and_an_import_off_the_board_would_be_found(monkeypatch):
    """NIKA's catalogue importing the truth (which reads the catalogue): a loop of packages, though no module
    imports one that imports it back."""
    graph = dict(import_graph())
    graph["faultline.nika.labels"] = graph["faultline.nika.labels"] | {"faultline.truth.records"}
    monkeypatch.setattr(sys.modules[__name__], "import_graph", lambda: graph)
    assert import_cycles() == []
    assert package_cycles() == [["faultline.nika", "faultline.truth"]]
    assert off_the_board(package_graph()) == ["faultline.nika -> faultline.truth"]


def test_an_import_cycle_would_be_found(monkeypatch):
    graph = dict(import_graph())
    graph["faultline.network.records"] = graph["faultline.network.records"] | {"faultline.network.probes"}
    monkeypatch.setattr(sys.modules[__name__], "import_graph", lambda: graph)
    assert any("faultline.network.records" in group for group in import_cycles())


@pytest.mark.parametrize("package", DIAGNOSERS)
def test_diagnosers_never_load_the_corpus_generator_or_the_fault_injectors(package):
    assert sorted(m for m in reachable(package) if _inside(m, LAB_SIDE)) == []


def test_network_access_knows_nothing_of_the_lab_or_the_analyses():
    forbidden = ("faultline.lab", "faultline.corpus", "faultline.sade", "faultline.astra", "faultline.nightly",
                 "faultline.mcp", "faultline.cli")
    assert sorted(m for m in reachable("faultline.network") if _inside(m, forbidden)) == []


def test_nikas_vocabulary_imports_nothing_of_the_project():
    assert sorted(m for m in reachable("faultline.nika") if not _inside(m, ("faultline.nika",))) == []


def test_diagnosers_reach_a_running_lab_only_through_lab_access():
    """By import, or as the network backend the registry opens by name (an entry point in pyproject.toml)."""
    direct = {dep for p in DIAGNOSERS for m in reachable(p) if not _inside(m, ("faultline.lab",))
              for dep in import_graph()[m] if _inside(dep, ("faultline.lab",))}
    assert direct <= {"faultline.lab.access"}
    import tomllib

    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"]
    backends = {name: target.split(":")[0] for name, target in declared["faultline.network_backends"].items()}
    assert backends["lab"] == "faultline.lab.access"
    assert sorted(m for m in backends.values() if _inside(m, LAB_SIDE)) == []


def _decorator_name(node: ast.expr) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    return target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")


def test_flows_are_wiring_tasks_live_in_tasks():
    """No Prefect task is defined in flows/; tasks/ holds them all."""
    for path in (REPO / "flows").glob("*.py"):
        tree = ast.parse(path.read_text())
        tasks = [f.name for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
                 and any(_decorator_name(d) == "task" for d in f.decorator_list)]
        assert tasks == [], f"{path.name} defines tasks {tasks}; move them to tasks/"


def test_importing_a_diagnosis_loads_no_injector():
    """The same rule at run time: SADE, ASTRA and the marts import without a fault injector or the corpus."""
    script = (
        "import sys\n"
        "import faultline.sade.engine, faultline.network.backend, faultline.astra.engine, faultline.marts\n"
        "import faultline.nightly.units, faultline.astra.unit, faultline.sade.unit, faultline.verdict.unit\n"
        "from faultline.network.backends import _opener\n"
        "assert all(_opener(name) for name in ('lab', 'snapshot', 'ssh', 'mcp'))  # every backend's module loaded\n"
        "print(sorted(m for m in sys.modules if m.startswith(('faultline.lab.faults', 'faultline.corpus'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def test_engine_imports_without_prefect():
    modules = [m.name for m in pkgutil.walk_packages(faultline.__path__, "faultline.")]
    script = (
        "import sys\n"
        "sys.modules['prefect'] = None  # any `import prefect` now raises ImportError\n"
        f"for name in {modules!r}:\n"
        "    __import__(name)\n"
        "print(len(sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(modules) > 20


def test_engine_source_never_imports_prefect():
    offenders = [str(p.relative_to(REPO)) for p in (REPO / "faultline").rglob("*.py")
                 if "import prefect" in p.read_text() or "from prefect" in p.read_text()]
    assert offenders == []


def test_no_file_refers_to_the_shared_folder_beside_the_checkout():
    """A clone of this repository alone has no shared folder beside it: only CI's script and the data page name it."""
    tracked = subprocess.run(["git", "ls-files"], capture_output=True, text=True, cwd=REPO, check=True).stdout.split()
    allowed = {".ci/run", "docs/data.md"}
    offenders = []
    for name in tracked:
        path = REPO / name
        if name in allowed or not path.is_file() or path.suffix in (".gz", ".png"):
            continue
        try:
            if NEEDLE in path.read_text():
                offenders.append(name)
        except UnicodeDecodeError:
            continue
    assert offenders == []


# --- registries refuse a second entry under a taken name --------------------------------------------


def test_registries_refuse_a_duplicate_name():
    from faultline.astra.agents import register_agent
    from faultline.errors import FaultlineError
    from faultline.lab.faults.registry import FAULTS, register_fault
    from faultline.lab.scenarios import SCENARIOS, register_scenario
    from faultline.network.backends import backend_names, open_backend, register_backend
    from faultline.network.probes import probe_names, register

    before = (probe_names(), dict(FAULTS), dict(SCENARIOS))
    with pytest.raises(FaultlineError, match="'ping' is already registered"):
        register("ping")(lambda ctx: None)
    with pytest.raises(FaultlineError, match="two fault classes for 'link_down'"):
        register_fault(type("AnotherLinkDown", (FAULTS["link_down"],), {}))
    with pytest.raises(FaultlineError, match="'simple_bgp' is already registered"):
        register_scenario("simple_bgp", SCENARIOS["dc_clos_bgp"])
    with pytest.raises(FaultlineError, match="'log' is already registered"):
        register_agent("log", lambda deps: None)
    with pytest.raises(FaultlineError, match="'snapshot' is already registered"):
        register_backend("snapshot", lambda settings, target: None)
    assert (probe_names(), dict(FAULTS), dict(SCENARIOS)) == before  # nothing was swapped in
    assert backend_names() == ["lab", "mcp", "snapshot", "ssh"]
    from faultline.config import Settings
    from faultline.network.backends import NetworkTarget

    recorded = REPO / "data" / "sample" / "backlog" / "sample-backlog-003"
    assert open_backend("snapshot", Settings(), NetworkTarget(snapshot=recorded)).kind == "snapshot"
