"""The hand-written stubs (python/brisvox/_brisvox.pyi) name exactly what the compiled module
defines: every public function, class, method, property and enum member, and nothing else."""

import ast
import inspect
from pathlib import Path

import brisvox
from brisvox import _brisvox

STUB = Path(brisvox.__file__).with_name("_brisvox.pyi")
# (__init__ is left out: nanobind gives every class one, which raises where there is no constructor.)
PROTOCOL = {"__enter__", "__exit__", "__iter__", "__next__", "__aiter__", "__anext__"}


def stub_names():
    tree = ast.parse(STUB.read_text())
    top, members = set(), {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            top.add(node.name)
            names = set()
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names.add(item.name)
                elif isinstance(item, ast.Assign):
                    names.update(t.id for t in item.targets if isinstance(t, ast.Name))
                elif isinstance(item, ast.AnnAssign):
                    names.add(item.target.id)
            members[node.name] = names - {"__init__"}
        elif isinstance(node, ast.FunctionDef):
            top.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            top.add(node.target.id)
    return top - {"Samples", "_StreamOptions", "_CallOptions", "_SpeechOptions"}, members  # the stubs' own typing helpers


def module_members(cls):
    if issubclass(cls, BaseException):  # `code` is declared once, on Error; every class has one
        assert isinstance(cls.code, str)
        return {"code"} if cls is _brisvox.Error else set()
    names = set()
    for name, value in vars(cls).items():
        if name.startswith("_") and name not in PROTOCOL:
            continue
        names.add(name)
    if hasattr(cls, "__members__"):  # enums: the members, not nanobind's helpers
        names = set(cls.__members__)
    return names


def test_stub_lists_the_module():
    top, members = stub_names()
    module = {n for n in vars(_brisvox) if not n.startswith("__") or n == "__version__"}
    assert top == module
    for name in top:
        obj = getattr(_brisvox, name)
        if inspect.isclass(obj):
            assert members[name] == module_members(obj), name


def test_everything_public_is_documented():
    for name in brisvox.__all__:
        obj = getattr(brisvox, name)
        if callable(obj):
            assert (obj.__doc__ or "").strip(), name
    for cls in (brisvox.Stream, brisvox.Call, brisvox.Engine):
        for name, value in vars(cls).items():
            if not name.startswith("_") and callable(value):
                assert (value.__doc__ or "").strip(), f"{cls.__name__}.{name}"
