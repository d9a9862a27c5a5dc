"""Banks of MiniGrid WFC layouts, generated on the host by minigrid's own generator and cached on disk.

Wave-function collapse is a backtracking constraint solver with a data-dependent amount of work, so the WFC ids
are not generated on the device: ``make_bank`` resets minigrid's ``MiniGrid-WFC-<preset>-v0`` with seeds
``0 .. size - 1`` and keeps each level's walls (the WFC pattern, reduced to its largest connected navigable area
and padded with a wall border). The layout distribution of a bank is therefore minigrid's by construction, an
empirical sample of ``size`` levels. The agent and goal are not kept: given a layout, minigrid places them as a
uniform ordered pair of distinct open cells and draws the direction uniformly, independently of the WFC draw, so
``wfc.WFC`` redraws them on the device at every reset (a bank of ``size`` layouts yields far more levels).

minigrid is an optional dependency, imported only here and only when a bank is built. minigrid 3.2.0's
distributions (wheel and sdist) lack the WFC pattern images ``minigrid/envs/wfc/patterns/*.png``: point
``$JAXSOC_WFC_PATTERNS`` (or ``patterns_dir``) at a folder holding them, e.g. that folder of a minigrid source
checkout. ``cached_bank`` keeps a bank on disk (``$JAXSOC_CACHE/minigrid-wfc``, default ``~/.cache/jaxsoc``; see
``jaxsoc.cache``); the file name carries ``BANK_VERSION``, the id, the size, the grid size and a hash of the
pattern image, the WFC settings, minigrid's and numpy's versions and this module's source with the jaxsoc modules
it imports (``cache.source_digest``), so a change of any of them builds a new bank, and an unreadable file is
rebuilt with a warning.

Cost: the solver's time per layout depends on the preset; with minigrid's own images (CPU time per reset, mean of
seeds 0-19 on this project's development machine): ObstaclesBlackdots 0.14 s, MazeSimple 0.40 s, DungeonMazeScaled
0.59 s, RoomsFabric 0.86 s, ObstaclesHogs3 1.2 s, ObstaclesAngular 2.0 s. ``DEFAULT_BANK_SIZE`` layouts therefore
take about 2 to 33 minutes once per preset, then load in milliseconds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import os
import pathlib
import tempfile

import numpy as np

from jaxsoc import cache
from jaxsoc.envs.gridworld import constants as C

#: the six presets minigrid 3.2.0 registers (``MiniGrid-WFC-<preset>-v0``)
PRESETS = (
    "MazeSimple",
    "DungeonMazeScaled",
    "RoomsFabric",
    "ObstaclesBlackdots",
    "ObstaclesAngular",
    "ObstaclesHogs3",
)
#: layouts per bank when none is asked for: the bank is a sample of minigrid's layout distribution, and a bigger
#: bank approximates it better; 1000 is a one-off build of 2 to 33 minutes per preset (see above)
DEFAULT_BANK_SIZE = 1000
#: ``wfc.WFC`` draws the bank index with ``placement.below``, which takes ``n < 2**16``
MAX_BANK_SIZE = 2**16 - 1
#: bump when the file layout changes (the generating code is hashed into the file name: ``source_hash``)
BANK_VERSION = 1
PATTERNS_ENV = "JAXSOC_WFC_PATTERNS"


def env_id(preset: str) -> str:
    """Returns the minigrid id of a preset, ``MiniGrid-WFC-<preset>-v0``."""
    return f"MiniGrid-WFC-{preset}-v0"


def _import_minigrid():
    """Returns minigrid's ``(gymnasium, WFC_PRESETS, minigrid version)``; raises ``ImportError`` with the
    install line when minigrid (or its WFC extras) is missing."""
    try:
        import gymnasium
        import imageio  # noqa: F401  (minigrid's WFC reads its pattern with it)
        import minigrid
        import networkx  # noqa: F401  (minigrid's WFC post-processing)
        from minigrid.envs.wfc.config import WFC_PRESETS
    except ImportError as error:
        raise ImportError(
            "the MiniGrid WFC ids build their layout bank with minigrid's generator: "
            "pip install minigrid 'minigrid[wfc]' (minigrid==3.2.0 with networkx and imageio)"
        ) from error
    return gymnasium, WFC_PRESETS, minigrid.__version__


def wfc_config(preset: str, patterns_dir: str | os.PathLike | None = None):
    """Returns minigrid's ``WFCConfig`` of ``preset`` with its pattern image looked up in ``patterns_dir``, else
    ``$JAXSOC_WFC_PATTERNS``, else minigrid's own ``patterns`` folder. Raises ``FileNotFoundError`` (saying where
    to get it) when the image is in none of them, ``KeyError`` for an unknown preset."""
    _, presets, _ = _import_minigrid()
    if preset not in PRESETS:
        raise KeyError(f"unknown WFC preset {preset!r}; choose from {PRESETS}")
    config = presets[preset]
    name = pathlib.Path(config.pattern_path).name
    folders = [patterns_dir, os.environ.get(PATTERNS_ENV), pathlib.Path(config.pattern_path).parent]
    for folder in folders:
        if folder and (pathlib.Path(folder) / name).is_file():
            return dataclasses.replace(config, pattern_path=pathlib.Path(folder) / name)
    raise FileNotFoundError(
        f"WFC pattern image {name} not found (looked in {[str(f) for f in folders if f]}): minigrid 3.2.0's "
        f"wheel and sdist do not ship minigrid/envs/wfc/patterns/*.png; copy that folder from a minigrid source "
        f"checkout and set ${PATTERNS_ENV} (or patterns_dir) to it"
    )


def reference_env(preset: str, size: int = 25, patterns_dir: str | os.PathLike | None = None):
    """Returns minigrid's env of ``preset`` (``gymnasium.make`` of its id, so ``spec.id`` is the id) with the
    pattern image resolved by ``wfc_config``."""
    gymnasium, _, _ = _import_minigrid()
    return gymnasium.make(env_id(preset), wfc_config=wfc_config(preset, patterns_dir), size=size)


def layout_of(env) -> np.ndarray:
    """Returns ``bool[H, W]`` (``[y, x]``), True at the walls of a reset minigrid WFC env."""
    kinds = env.unwrapped.grid.encode()[..., 0].T
    return kinds == C.WALL


def make_bank(
    preset: str, size: int = DEFAULT_BANK_SIZE, grid_size: int = 25, patterns_dir: str | os.PathLike | None = None
) -> np.ndarray:
    """Returns ``bool[size, grid_size, grid_size]``: the walls of minigrid's levels of ``preset`` for seeds
    ``0 .. size - 1``. Raises ``ValueError`` for a size outside ``[1, MAX_BANK_SIZE]``."""
    if not 1 <= size <= MAX_BANK_SIZE:
        raise ValueError(f"a WFC bank holds 1 to {MAX_BANK_SIZE} layouts, got {size}")
    env = reference_env(preset, grid_size, patterns_dir)
    layouts = np.zeros((size, grid_size, grid_size), bool)
    for seed in range(size):
        env.reset(seed=seed)
        layouts[seed] = layout_of(env)
    return layouts


def cache_dir() -> pathlib.Path:
    """Returns the folder of the on-disk banks (``$JAXSOC_CACHE/minigrid-wfc``, default
    ``~/.cache/jaxsoc/minigrid-wfc``)."""
    return cache.cache_root() / "minigrid-wfc"


def source_hash() -> str:
    """Returns the hex digest of the jaxsoc code that turns minigrid's levels into a bank: this module and the
    jaxsoc modules it imports, without comments and docstrings."""
    return cache.source_digest(__name__)


def cache_path(preset: str, size: int, grid_size: int = 25, patterns_dir=None) -> pathlib.Path:
    """Returns the cache file of a bank; its name hashes every setting the bank depends on: the pattern image's
    bytes, minigrid's WFC settings, the minigrid and numpy versions and ``source_hash()``."""
    _, _, version = _import_minigrid()
    config = wfc_config(preset, patterns_dir)
    solver = {k: v for k, v in dataclasses.asdict(config).items() if k not in ("pattern_path", "docstring")}
    image = hashlib.sha1(pathlib.Path(config.pattern_path).read_bytes()).hexdigest()
    settings = (BANK_VERSION, preset, size, grid_size, version, sorted(solver.items()), image)
    settings += (np.__version__, source_hash())
    tag = hashlib.sha1(repr(settings).encode()).hexdigest()[:16]
    return cache_dir() / f"bank-v{BANK_VERSION}-{preset}-{grid_size}x{grid_size}-n{size}-{tag}.npz"


def _save(path: pathlib.Path, layouts: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".npz", delete=False) as tmp:
        np.savez(tmp, walls=layouts)
    os.replace(tmp.name, path)  # atomic: parallel workers may build the same bank


def _load(path: pathlib.Path, shape: tuple[int, int, int]) -> np.ndarray | None:
    """Returns the ``bool[shape]`` layouts stored at ``path``; None (with a warning when the file exists) when the
    file is absent, truncated, corrupt or holds another shape or dtype."""
    if not path.exists():
        return None
    try:
        with np.load(path) as data:
            layouts = np.asarray(data["walls"])
        if layouts.shape != shape or layouts.dtype != np.bool_:
            raise ValueError(f"walls {layouts.dtype}{list(layouts.shape)}, expected bool{list(shape)}")
    except cache.UNREADABLE as error:
        cache.warn_unreadable(path, error)
        return None
    return layouts


@functools.lru_cache(maxsize=32)
def cached_bank(
    preset: str, size: int = DEFAULT_BANK_SIZE, grid_size: int = 25, patterns_dir: str | None = None
) -> np.ndarray:
    """Returns ``make_bank(preset, size, grid_size, patterns_dir)``: from memory, else from the disk cache, else
    built (and saved). ``bool[size, grid_size, grid_size]``, read-only."""
    path = cache_path(preset, size, grid_size, patterns_dir)
    layouts = _load(path, (size, grid_size, grid_size))
    if layouts is None:
        layouts = make_bank(preset, size, grid_size, patterns_dir)
        with contextlib.suppress(OSError):  # a read-only home: keep the bank in memory only
            _save(path, layouts)
    layouts.setflags(write=False)
    return layouts
