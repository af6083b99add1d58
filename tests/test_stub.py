"""The `_core.pyi` stub names exactly what the compiled module has, with the same
parameters."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import neardup
from neardup import _core

STUB = Path(neardup.__file__).with_name("_core.pyi")


def stub_members() -> dict[str, ast.AST]:
    tree = ast.parse(STUB.read_text())
    out: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = node
    return out


def runtime_members() -> set[str]:
    return {n for n in dir(_core) if not n.startswith("__") and n not in {"_core"}}


def params_of(fn: ast.FunctionDef) -> list[str]:
    return [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs if a.arg not in ("self", "cls")]


def test_stub_lists_every_member() -> None:
    assert set(stub_members()) == runtime_members()


def test_functions_have_the_same_parameters() -> None:
    for name, node in stub_members().items():
        obj = getattr(_core, name)
        if isinstance(node, ast.FunctionDef):
            assert params_of(node) == list(inspect.signature(obj).parameters), name


def test_class_methods_match() -> None:
    for name, node in stub_members().items():
        if not isinstance(node, ast.ClassDef):
            continue
        cls = getattr(_core, name)
        stub_methods = {n.name: n for n in node.body if isinstance(n, ast.FunctionDef)}
        runtime = {m for m in dir(cls) if not m.startswith("_")} | ({"__len__"} if hasattr(cls, "__len__") else set())
        assert {m for m in stub_methods if m not in ("__new__",)} == runtime, name
        for mname, fn in stub_methods.items():
            if mname.startswith("__"):
                continue
            member = inspect.getattr_static(cls, mname)
            if isinstance(member, (staticmethod, classmethod)) or callable(member):
                target = getattr(cls, mname)
                try:
                    sig = inspect.signature(target)
                except (TypeError, ValueError):
                    continue
                assert params_of(fn) == [p for p in sig.parameters if p not in ("self", "cls")], f"{name}.{mname}"
