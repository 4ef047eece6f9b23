"""The package's layers: a module imports only from its own layer or the ones below, and no two
modules import each other at load time (directly or round a longer cycle).

Every import statement counts, also those inside functions (a lazy import that runs up the
layers is a dependency all the same); imports under ``if TYPE_CHECKING:`` (annotations only)
do not. The upper layers reach the core through the entry points they register
(``tractile.entry_points``), not the other way round.
"""
from __future__ import annotations

import ast
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2] / "src" / "tractile"

#: lowest first; a module belongs to the layer of the longest prefix that names it
LAYERS: list[tuple[str, ...]] = [
    ("errors", "datum", "dim", "dim_parse", "hooks"),
    ("fact", "fact_spec", "fact_unify"),
    ("graph", "ops.base", "ops.io", "ops.axes", "infer.exprs", "infer.rules"),
    ("model", "patch", "infer", "specialize"),
    ("ops",),
    ("passes", "runtime"),
    ("pulse", "compile", "formats"),
    ("tools", "batch", "backend", "entry_points", "cli", ""),
]


def layer_of(module: str) -> int:
    best, best_length = None, -1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".") or prefix == "") and len(prefix) > best_length:
                best, best_length = index, len(prefix)
    assert best is not None, module
    return best


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SOURCE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imports(path: Path) -> list[tuple[str, int, bool]]:
    """(imported tractile module, line, at module level) for every import of ``path``."""
    name = module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    tree = ast.parse(path.read_text(), str(path))
    found = []

    def visit(node: ast.AST, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if _type_checking_block(child):
                continue
            nested = top and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package[:len(package) - child.level + 1]
                    target = ".".join([*base, *(child.module.split(".") if child.module else [])])
                elif child.module and child.module.startswith("tractile"):
                    target = child.module.removeprefix("tractile").lstrip(".")
                else:
                    continue
                for alias in child.names:
                    sub = f"{target}.{alias.name}".lstrip(".")
                    is_module = (SOURCE / sub.replace(".", "/")).with_suffix(".py").exists() or \
                        (SOURCE / sub.replace(".", "/") / "__init__.py").exists()
                    found.append((sub if is_module else target, child.lineno, top))
            elif isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.startswith("tractile"):
                        found.append((alias.name.removeprefix("tractile").lstrip("."), child.lineno, top))
            visit(child, nested)

    visit(tree, True)
    return found


def all_modules() -> dict[str, Path]:
    return {module_name(path): path for path in SOURCE.rglob("*.py")}


def test_no_import_runs_up_the_layers():
    problems = []
    for name, path in sorted(all_modules().items()):
        for target, line, _ in imports(path):
            if layer_of(target) > layer_of(name):
                problems.append(f"{path.relative_to(SOURCE.parent)}:{line}: {name or 'tractile'} (layer "
                                f"{layer_of(name)}) imports {target} (layer {layer_of(target)})")
    assert not problems, "imports running up the layers:\n" + "\n".join(problems)


def test_no_import_cycles_at_load_time():
    modules = all_modules()
    graph = {name: {t for t, _, top in imports(path) if top and t in modules and t != name}
             for name, path in modules.items()}
    # a package's __init__ importing its own submodules is how packages are built, not a cycle
    for name, targets in graph.items():
        graph[name] = {t for t in targets if not (modules[name].name == "__init__.py" and t.startswith(name + "."))
                       and not (modules[t].name == "__init__.py" and name.startswith(t + ".") and t != "")}
    cycles, state = [], {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                cycles.append(" -> ".join(stack[stack.index(target):] + [target]))
            elif target not in state:
                visit(target, stack)
        stack.pop()
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_the_layer_check_sees_lazy_imports(tmp_path):
    probe = SOURCE / "dim.py"
    assert any(target == "dim_parse" for target, _, _ in imports(probe)) or layer_of("dim") == 0
    assert layer_of("model") < layer_of("ops.conv") < layer_of("runtime.plan") < layer_of("pulse.model")
    assert layer_of("formats.onnx.loader") > layer_of("ops.conv") and layer_of("cli.main") == len(LAYERS) - 1


#: sibling packages of one layer that must not depend on each other (importer prefix, imported prefix)
SEPARATE = [("batch", "cli"), ("compile", "pulse")]


def test_separate_siblings_stay_apart():
    """The batch runner is a library the command line drives, never the other way round; the
    compiler lowers the stream ops of the op layer (``ops.stream``) and never needs ``pulse/``."""
    problems = []
    for name, path in sorted(all_modules().items()):
        for importer, imported in SEPARATE:
            if name == importer or name.startswith(importer + "."):
                problems += [f"{path.relative_to(SOURCE.parent)}:{line}: {name} imports {target}"
                             for target, line, _ in imports(path)
                             if target == imported or target.startswith(imported + ".")]
    assert not problems, "\n".join(problems)
