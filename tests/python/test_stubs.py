"""The type stubs (python/deep500/_core.pyi) name exactly the extension's
public functions and classes, with the same parameters and class members."""
import ast
import pathlib
import re

import deep500
from deep500 import _core

STUBS = pathlib.Path(_core.__file__).with_name("_core.pyi")


def stub_tree():
    return ast.parse(STUBS.read_text())


def public(obj):
    return {n for n in dir(obj) if not n.startswith("_")}


def test_stubs_exist_beside_the_extension_with_py_typed():
    assert STUBS.exists() and STUBS.with_name("py.typed").exists()


def test_stubs_name_every_function_and_class():
    names = {n.name for n in stub_tree().body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    assert names == public(_core)


def test_function_parameters_match():
    for node in stub_tree().body:
        if not isinstance(node, ast.FunctionDef):
            continue
        signature = getattr(_core, node.name).__doc__.splitlines()[0]
        actual = re.findall(r"(\w+):", signature[signature.index("("):])
        assert [a.arg for a in node.args.args] == actual, node.name


def test_class_members_match():
    for node in stub_tree().body:
        if not isinstance(node, ast.ClassDef) or node.name == "Error":
            continue
        stubbed = {n.target.id for n in node.body if isinstance(n, ast.AnnAssign)}
        stubbed |= {n.name for n in node.body if isinstance(n, ast.FunctionDef)
                    and not n.name.startswith("_")}
        assert stubbed == public(getattr(_core, node.name)), node.name


def test_the_package_exports_the_extension():
    assert public(_core) <= set(deep500.__all__)
