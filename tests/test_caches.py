"""On-disk caches of generated data (``jaxsoc.cache``, the EXCALIBUR and minigrid WFC banks): the key follows the
generating code (not its comments), and a truncated or corrupt file is rebuilt with a warning, never served."""

from __future__ import annotations

import ast
import dataclasses

import numpy as np
import pytest

from jaxsoc import cache
from jaxsoc.envs.excalibur import bank as B
from jaxsoc.envs.excalibur import state as S
from jaxsoc.envs.gridworld import wfc_bank

SOURCE = '''"""A module."""
LIMIT = 3


def f(x):
    """Doubles."""
    return 2 * x + LIMIT
'''


def test_tree_digest_follows_the_code_not_comments_docstrings_or_layout():
    digest = cache.tree_digest(ast.parse(SOURCE))
    same = [
        SOURCE.replace("LIMIT = 3", "LIMIT = 3  # a comment"),
        SOURCE.replace('"""Doubles."""', '"""Doubles x, then adds LIMIT."""'),
        SOURCE.replace("2 * x + LIMIT", "(2 * x) + LIMIT").replace('"""A module."""\n', ""),
    ]
    for text in same:
        assert cache.tree_digest(ast.parse(text)) == digest, text
    for text in (SOURCE.replace("LIMIT = 3", "LIMIT = 4"), SOURCE.replace("2 * x", "3 * x")):
        assert cache.tree_digest(ast.parse(text)) != digest, text


def test_source_closure_reaches_the_generating_modules():
    names = [name for name, _ in cache.source_closure(B.__name__)]
    assert names == sorted(names)
    prefix = "jaxsoc.envs.excalibur."
    assert {f"{prefix}{m}" for m in ("bank", "houses", "questions", "state", "catalogue", "relations")} <= set(names)
    assert not any(n.startswith("jaxsoc.learners") for n in names), "only what the generator imports"
    assert "jaxsoc.envs.gridworld.constants" in dict(cache.source_closure(wfc_bank.__name__))
    with pytest.raises(ModuleNotFoundError):
        cache.source_closure("jaxsoc.no_such_module")


def edited(monkeypatch, module: str, edited_module: str) -> None:
    """Makes ``cache.source_closure(module)`` answer as if ``edited_module`` (one it imports) had other code."""
    real = cache.source_closure
    closure = tuple((n, "0" * 64 if n == edited_module else d) for n, d in real(module))
    assert closure != real(module), f"{edited_module} is not in the closure of {module}"
    monkeypatch.setattr(cache, "source_closure", lambda name: closure if name == module else real(name))


def test_excalibur_cache_path_follows_the_generating_source(monkeypatch, tmp_path):
    monkeypatch.setenv("JAXSOC_CACHE", str(tmp_path))
    path = B.cache_path("train", 0)
    assert path.parent == tmp_path / "excalibur" and path == B.cache_path("train", 0)
    assert B.cache_path("train", 1) != path and B.cache_path("test", 0) != path
    edited(monkeypatch, B.__name__, "jaxsoc.envs.excalibur.houses")
    moved = B.cache_path("train", 0)
    assert moved != path and moved.parent == path.parent
    monkeypatch.setattr(B, "source_hash", lambda: "another generator")
    assert B.cache_path("train", 0) not in (path, moved)


@dataclasses.dataclass
class StubWFCConfig:
    pattern_path: str
    tile_size: int = 1


def test_wfc_cache_path_follows_the_generating_source(monkeypatch, tmp_path):
    image = tmp_path / "pattern.png"
    image.write_bytes(b"pixels")
    monkeypatch.setenv("JAXSOC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(wfc_bank, "wfc_config", lambda preset, patterns_dir=None: StubWFCConfig(str(image)))
    path = wfc_bank.cache_path("MazeSimple", 4)
    assert path.parent == tmp_path / "cache" / "minigrid-wfc" and path == wfc_bank.cache_path("MazeSimple", 4)
    edited(monkeypatch, wfc_bank.__name__, "jaxsoc.envs.gridworld.constants")
    moved = wfc_bank.cache_path("MazeSimple", 4)
    assert moved != path
    monkeypatch.setattr(wfc_bank, "source_hash", lambda: "another generator")
    assert wfc_bank.cache_path("MazeSimple", 4) not in (path, moved)


@pytest.fixture
def fresh_banks():
    """Empties the banks' in-process caches before and after (a test's stub bank must not outlive it)."""
    B.cached_bank.cache_clear()
    wfc_bank.cached_bank.cache_clear()
    yield
    B.cached_bank.cache_clear()
    wfc_bank.cached_bank.cache_clear()


def damage(path, how: str) -> None:
    """Truncates the file at ``path`` to half its size (``"truncated"``) or flips bytes in its middle."""
    data = bytearray(path.read_bytes())
    if how == "truncated":
        path.write_bytes(bytes(data[: len(data) // 2]))
    else:
        middle = len(data) // 2
        data[middle : middle + 64] = bytes(b ^ 0xFF for b in data[middle : middle + 64])
        path.write_bytes(bytes(data))


def stub_house(num: int) -> S.House:
    names = [f.name for f in dataclasses.fields(S.House)]
    return S.House(**{name: np.full((num, 3), i, np.int16) for i, name in enumerate(names)})


@pytest.mark.parametrize("how", ["truncated", "corrupt"])
def test_a_damaged_excalibur_bank_is_rebuilt_not_served(monkeypatch, tmp_path, fresh_banks, how):
    monkeypatch.setenv("JAXSOC_CACHE", str(tmp_path))
    builds = []
    monkeypatch.setattr(B, "make_bank", lambda *args: builds.append(args) or (stub_house(40 + len(builds)), {}))
    first = B.cached_bank("train", 0)
    path = B.cache_path("train", 0)
    assert path.is_file() and len(builds) == 1
    B.cached_bank.cache_clear()
    assert B.cached_bank("train", 0).walls.shape == first.walls.shape and len(builds) == 1, "served from disk"
    damage(path, how)
    B.cached_bank.cache_clear()
    with pytest.warns(RuntimeWarning, match=f"unreadable cache file {path}"):
        rebuilt = B.cached_bank("train", 0)
    assert len(builds) == 2 and rebuilt.walls.shape[0] == 42, "the damaged file was served"
    assert B._load(path).walls.shape[0] == 42, "the rebuilt bank replaced the damaged file"


def test_an_excalibur_bank_of_another_layout_is_refused(tmp_path):
    path = tmp_path / "bank.npz"
    B._save(path, stub_house(5).replace(answers=np.zeros((4, 3), np.int16)))
    with pytest.warns(RuntimeWarning, match="different numbers of houses"):
        assert B._load(path) is None
    np.savez(path, walls=np.zeros((5, 3)))
    with pytest.warns(RuntimeWarning, match="KeyError"):
        assert B._load(path) is None
    assert B._load(tmp_path / "absent.npz") is None


@pytest.mark.parametrize("how", ["truncated", "corrupt", "shape"])
def test_a_damaged_wfc_bank_is_rebuilt_not_served(monkeypatch, tmp_path, fresh_banks, how):
    path = tmp_path / "bank.npz"
    monkeypatch.setattr(wfc_bank, "cache_path", lambda *args: path)
    builds = []

    def build(preset, size, grid_size, patterns_dir):
        builds.append(preset)
        return np.eye(grid_size, dtype=bool)[None].repeat(size, 0) ^ (len(builds) > 1)

    monkeypatch.setattr(wfc_bank, "make_bank", build)
    first = wfc_bank.cached_bank("MazeSimple", 3, 9)
    assert path.is_file() and len(builds) == 1
    if how == "shape":
        np.savez(path, walls=np.zeros((2, 9, 9), bool))
    else:
        damage(path, how)
    wfc_bank.cached_bank.cache_clear()
    with pytest.warns(RuntimeWarning, match="unreadable cache file"):
        rebuilt = wfc_bank.cached_bank("MazeSimple", 3, 9)
    assert len(builds) == 2 and np.array_equal(rebuilt, ~first), "the damaged file was served"
    np.testing.assert_array_equal(wfc_bank._load(path, (3, 9, 9)), rebuilt)
