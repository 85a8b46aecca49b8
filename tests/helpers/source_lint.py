"""AST scans of src/mlmm for writes and parses that bypass mlmm.io (the write layer and the
readers). Shared by tests/test_write_layer.py and
tests/test_error_boundary.py."""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "mlmm"
LAYER = SRC / "io.py"  # the write layer's and the readers' own implementation

WRITE_MODE = re.compile(r"[rwxabt+]*[wax+][rwxabt+]*")
# Calls that write, move or delete a file whatever the object: method or function names.
WRITE_CALLS = {"savefig", "write_text", "write_bytes", "extractall", "unlink"}
MODULE_WRITES = {
    ("os", "replace"), ("os", "rename"), ("os", "remove"), ("os", "unlink"), ("shutil", "copy"),
    ("shutil", "copyfile"), ("shutil", "copy2"), ("shutil", "copytree"), ("shutil", "move"),
    ("shutil", "rmtree"), ("json", "dump"), ("yaml", "dump"), ("yaml", "safe_dump"),
    ("pickle", "dump"), ("np", "save"), ("np", "savez"), ("np", "savez_compressed"),
    ("np", "savetxt"), ("numpy", "save"), ("numpy", "savez"), ("torch", "save"),
}  # fmt: skip
FRAME_WRITES = {"to_csv", "to_parquet", "to_json", "to_pickle", "to_excel", "to_latex", "to_html"}
PARSES = {("json", "load"), ("json", "loads"), ("yaml", "safe_load"), ("yaml", "load"),
          ("yaml", "full_load"), ("np", "load"), ("numpy", "load"), ("np", "loadtxt"),
          ("np", "genfromtxt"), ("torch", "load"), ("pd", "read_csv"), ("pd", "read_json"),
          ("pd", "read_table"), ("pd", "read_parquet"), ("csv", "reader"),
          ("csv", "DictReader"), ("tomllib", "load"), ("tomllib", "loads"),
          ("pickle", "load"), ("pickle", "loads")}  # fmt: skip


def _name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _layer_names(tree: ast.AST) -> set[str]:
    """Names bound by ``with atomic_path(...) as NAME`` (the layer's temporary path) or by
    ``NAME = temp_dir_beside(...)`` (a directory the layer builds and renames into place), and
    by ``with open(NAME, ...) as HANDLE`` on such a name: writes to them go through the layer."""
    names: set[str] = set()
    for node in ast.walk(tree):
        built = isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
        if built and _name(node.value.func) == "temp_dir_beside":
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    changed = True
    while changed:
        changed = False
        for node in ast.walk(tree):
            if not isinstance(node, ast.With | ast.AsyncWith):
                continue
            for item in node.items:
                call, var = item.context_expr, item.optional_vars
                if not isinstance(call, ast.Call) or not isinstance(var, ast.Name):
                    continue
                via_layer = _name(call.func) == "atomic_path" or any(
                    _root_name(a) in names for a in call.args[:1]
                )
                if via_layer and var.id not in names:
                    names.add(var.id)
                    changed = True
    return names


def _root_name(node: ast.AST) -> str | None:
    """``tmp`` for ``tmp``, ``tmp / "a" / "b"``: the path a written path is built from."""
    while isinstance(node, ast.BinOp):
        node = node.left
    return node.id if isinstance(node, ast.Name) else None


def _mode(call: ast.Call) -> str | None:
    args = [*call.args[:2], *(k.value for k in call.keywords if k.arg == "mode")]
    for arg in args:
        text = arg.value if isinstance(arg, ast.Constant) else None
        if isinstance(text, str) and WRITE_MODE.fullmatch(text):
            return text
    return None


def _is_write(call: ast.Call) -> str | None:
    func = call.func
    name = _name(func)
    owner = _name(func.value) if isinstance(func, ast.Attribute) else None
    if name == "open" and _mode(call):
        return f"open(..., {_mode(call)!r})"
    if (owner, name) in MODULE_WRITES:
        if (
            owner == "yaml"
            and len(call.args) < 2
            and not any(k.arg == "stream" for k in call.keywords)
        ):
            return None  # yaml.safe_dump(data): a string
        return f"{owner}.{name}"
    if name in WRITE_CALLS and isinstance(func, ast.Attribute):
        return f".{name}()"
    if name in FRAME_WRITES and (call.args or any(k.arg == "path_or_buf" for k in call.keywords)):
        return f".{name}(path)"
    return None


def _violations(check) -> list[str]:
    """``check(call, layer names)`` over every call under src/mlmm but io.py; the layer's names
    are those of the function the call is in (module-level ones for a module-level call)."""
    found = set()
    for path in sorted(SRC.rglob("*.py")):
        if path == LAYER:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        scopes = [tree, *(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))]
        seen: dict[tuple[int, int], str | None] = {}
        for scope in scopes:  # innermost last: a nested function's own names decide
            layer = _layer_names(scope)
            for node in ast.walk(scope):
                if isinstance(node, ast.Call):
                    seen[(node.lineno, node.col_offset)] = check(node, layer)
        for (line, _), what in seen.items():
            if what:
                found.add(f"{path.relative_to(SRC.parent)}:{line}: {what}")
    return sorted(found)


def direct_writes() -> list[str]:
    """Writes, moves and deletions under src/mlmm outside mlmm.io and not to a path the layer
    gave (``with atomic_path(x) as tmp``)."""

    def check(call: ast.Call, layer: set[str]) -> str | None:
        what = _is_write(call)
        if what is None:
            return None
        targets = [*call.args, *(k.value for k in call.keywords)]
        if isinstance(call.func, ast.Attribute):
            targets.append(call.func.value)
        if any(_root_name(t) in layer for t in targets):
            return None
        return what

    return _violations(check)


def direct_parses() -> list[str]:
    """Parses of JSON, YAML, CSV, .npy/.npz, .pt (...) under src/mlmm outside mlmm.io's readers."""

    def check(call: ast.Call, layer: set[str]) -> str | None:
        func = call.func
        if isinstance(func, ast.Attribute):
            pair = (_name(func.value), func.attr)
            if pair in PARSES:
                return f"{pair[0]}.{pair[1]}"
        return None

    return _violations(check)


if __name__ == "__main__":
    writes, parses = direct_writes(), direct_parses()
    print("\n".join(writes))
    print(f"{len(writes)} direct writes")
    print("\n".join(parses))
    print(f"{len(parses)} direct parses")
