"""The import graph of the package: no cycle, and no module imports from a floor above its own.

Every module under ``src/transferlab`` is parsed with ``ast``; every import of a transferlab
module counts, at module level, inside functions and under ``TYPE_CHECKING`` alike. The floors
are the layer table of the package docstring (``transferlab.__doc__``)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import transferlab

SRC = Path(transferlab.__file__).parent


def layer_table() -> dict[str, int]:
    """``{"data": 1, "eval.metrics": 2, ...}`` from the docstring's table."""
    table: dict[str, int] = {}
    for floor, names in re.findall(r"^\s+(\d)\s+(\S.*)$", transferlab.__doc__, flags=re.M):
        for name in names.split("(")[0].split(","):
            table[name.strip()] = int(floor)
    return table


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = ["transferlab", *path.relative_to(SRC).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imports(path: Path, known: set[str]) -> set[str]:
    """The transferlab modules ``path`` imports (``from pkg import mod`` is the module mod)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "transferlab"}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.split(".")[0] == "transferlab":
            subs = {f"{node.module}.{a.name}" for a in node.names} & known
            out |= subs or {node.module}
    return out


def graph() -> dict[str, set[str]]:
    mods = modules()
    return {name: imports(path, set(mods)) - {name} for name, path in mods.items()}


def floor(module: str, table: dict[str, int]) -> int:
    name = module.removeprefix("transferlab").lstrip(".") or "transferlab"
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in table:
            return table[".".join(parts[:n])]
    raise AssertionError(f"{module} is in no floor of the layer table in transferlab/__init__.py")


def test_the_table_is_read_and_covers_every_module():
    table = layer_table()
    assert table["data"] == 1 and table["encoders"] == 3 and table["recipes"] == 6 and table["cli"] == 7
    for module in graph():
        floor(module, table)


def test_no_module_imports_from_a_higher_floor():
    table = layer_table()
    upward = [f"{m} (floor {floor(m, table)}) imports {i} (floor {floor(i, table)})"
              for m, targets in graph().items() for i in sorted(targets) if floor(i, table) > floor(m, table)]
    assert not upward, "\n".join(upward)


def test_no_import_cycle():
    g = graph()
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(g.get(m, ())):
            if state.get(n) == 1:
                return path[path.index(n):] + [n]
            if n not in state and (cycle := visit(n)):
                return cycle
        path.pop()
        state[m] = 2
        return None

    for m in sorted(g):
        if m not in state:
            cycle = visit(m)
            assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_checker_sees_function_level_imports_and_cycles(tmp_path):
    code = "def f():\n    from transferlab.recipes import finetune\n"
    (tmp_path / "m.py").write_text(code)
    assert imports(tmp_path / "m.py", {"transferlab.recipes.finetune"}) == {"transferlab.recipes.finetune"}
    assert floor("transferlab.eval.metrics", layer_table()) < floor("transferlab.tasks.model", layer_table())
