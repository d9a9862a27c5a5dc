"""On-disk caches of generated data (the EXCALIBUR house banks, the minigrid WFC layout banks): where they live,
what their keys hash, and reading a cached file that may be truncated or corrupt.

A cached file is a function of its arguments and of the code that generated it, so a cache key hashes, beside
the arguments, ``source_digest`` of the generating module: the parse trees (without docstrings, so comments,
docstrings and formatting do not count) of that module and of every jaxsoc module it imports, transitively,
wherever the import statement is (module level or inside a function). Editing the generator therefore builds a
new file instead of serving the old one. Code reached without an import statement (``importlib``, a function
passed in by a caller) is not hashed.

The cache root is ``$JAXSOC_CACHE``, else ``~/.cache/jaxsoc``; the test suite and CI point ``JAXSOC_CACHE`` at a
fresh temporary folder, so they always build what they use.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import os
import pathlib
import warnings
import zipfile

ENV = "JAXSOC_CACHE"
#: what ``numpy.load`` of a truncated or corrupt ``.npz`` raises
UNREADABLE = (OSError, EOFError, KeyError, ValueError, zipfile.BadZipFile)


def cache_root() -> pathlib.Path:
    """Returns the root folder of jaxsoc's on-disk caches: ``$JAXSOC_CACHE``, else ``~/.cache/jaxsoc``."""
    return pathlib.Path(os.environ.get(ENV) or os.path.join(os.path.expanduser("~"), ".cache", "jaxsoc"))


def _module_file(name: str) -> pathlib.Path | None:
    """Returns the source file of the module ``name``, or None when ``name`` is no module with a ``.py`` file
    (an attribute imported from a module, a namespace package)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, AttributeError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    return pathlib.Path(spec.origin)


def _jaxsoc_imports(tree: ast.Module, name: str, is_package: bool) -> set[str]:
    """Returns the names of the jaxsoc modules that the module ``name`` (parse tree ``tree``) imports. ``from p
    import x`` counts the submodule ``p.x`` when there is one, else ``p`` itself (``x`` is an attribute of it)."""
    package = name if is_package else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
            subs = [f"{base}.{alias.name}" for alias in node.names]
            candidates = [s if _module_file(s) else base for s in subs]
        else:
            continue
        found.update(c for c in candidates if c == "jaxsoc" or c.startswith("jaxsoc."))
    return found


def _without_docstrings(tree: ast.Module) -> ast.Module:
    """Returns ``tree`` with the docstrings of the module, its classes and functions removed (in place)."""
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        first = node.body[0] if node.body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            node.body = node.body[1:] or [ast.Pass()]
    return tree


def tree_digest(tree: ast.Module) -> str:
    """Returns the sha256 hex digest of the parse tree ``tree`` without its docstrings (comments and formatting
    are not in a parse tree), so only a change of the code changes it. ``tree`` loses its docstrings."""
    return hashlib.sha256(ast.dump(_without_docstrings(tree)).encode()).hexdigest()


@functools.cache
def source_closure(name: str) -> tuple[tuple[str, str], ...]:
    """Returns ``((module name, sha256 of its parse tree without docstrings), ...)`` of the module ``name`` and of
    every jaxsoc module it imports transitively, sorted by name. Raises ``ModuleNotFoundError`` for an unknown
    module."""
    todo, seen, digests = [name], set(), {}
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        path = _module_file(current)
        if path is None:
            if current == name:
                raise ModuleNotFoundError(f"no source file for module {name!r}")
            continue
        tree = ast.parse(path.read_bytes(), filename=str(path))
        todo.extend(_jaxsoc_imports(tree, current, path.name == "__init__.py"))
        digests[current] = tree_digest(tree)
    return tuple(sorted(digests.items()))


def source_digest(name: str) -> str:
    """Returns a sha256 hex digest of ``source_closure(name)``: it changes when the code of the module ``name``
    or of any jaxsoc module it imports changes (not for comments, docstrings or formatting)."""
    return hashlib.sha256(repr(source_closure(name)).encode()).hexdigest()


def warn_unreadable(path: pathlib.Path, error: BaseException) -> None:
    """Warns that the cached file ``path`` could not be read (``error``) and will be rebuilt."""
    warnings.warn(
        f"jaxsoc: ignoring the unreadable cache file {path} ({type(error).__name__}: {error}); rebuilding it",
        RuntimeWarning,
        stacklevel=3,
    )
