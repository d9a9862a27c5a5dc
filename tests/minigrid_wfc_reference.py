"""Helpers that drive minigrid 3.2.0's WFC envs in tests (test-only).

minigrid 3.2.0's distributions lack the WFC pattern images. ``real_patterns_dir`` finds the real ones
(``$JAXSOC_WFC_PATTERNS``, else the project's ``../shared/data/minigrid-wfc-patterns`` beside the repository root,
else minigrid's own package folder) and ``minigrid_reads_patterns`` makes minigrid's own registered WFC envs read
them, without writing into minigrid's package folder. Where they are missing the tests run minigrid's generator on
stand-in images written here (black walls, white floor) under the preset file names. ``fixed_pattern`` replaces
minigrid's WFC solver call by a constant pattern, so the rest of minigrid's generator (largest connected area,
agent and goal placement, decoding) runs in milliseconds per level. minigrid is imported lazily, so
``stand_in_layouts`` works without it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pathlib

import numpy as np

from jaxsoc.envs.gridworld import wfc_bank

#: the project's copy of minigrid's pattern images (Apache-2.0, see its NOTICE.md), used when it sits beside the
#: repository root and ``$JAXSOC_WFC_PATTERNS`` is unset
SHARED_PATTERNS = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data" / "minigrid-wfc-patterns"
NO_PATTERNS = (
    f"minigrid's WFC pattern images are not available (set ${wfc_bank.PATTERNS_ENV} to a folder holding "
    f"minigrid/envs/wfc/patterns/*.png, or put them in {SHARED_PATTERNS})"
)
STAND_IN = [
    "#.#.####",
    "#......#",
    "###.##.#",
    "..#..#..",
    "#.##.#.#",
    "#....#.#",
    "####...#",
    "...#.#..",
]


# width-3 presets solve the maze above in ~10 s per layout; these blocks take ~0.5 s
STAND_IN_WIDTH_3 = ["......", "......", "..##..", "..##..", "......", "......"]


def pattern_image(rows: list[str]) -> np.ndarray:
    """Returns the RGB ``uint8[H, W, 3]`` image of ``rows`` (``#`` black wall, ``.`` white floor)."""
    walls = np.array([[char == "#" for char in row] for row in rows])
    return np.where(walls[..., None], 0, 255).astype(np.uint8).repeat(3, axis=-1)


def write_stand_in_patterns(folder: pathlib.Path) -> pathlib.Path:
    """Writes a stand-in pattern image under every preset's file name into ``folder``; returns ``folder``."""
    import imageio.v2 as imageio
    from minigrid.envs.wfc.config import WFC_PRESETS

    folder.mkdir(parents=True, exist_ok=True)
    for preset in wfc_bank.PRESETS:
        config = WFC_PRESETS[preset]
        rows = STAND_IN if config.pattern_width == 2 else STAND_IN_WIDTH_3
        imageio.imwrite(folder / pathlib.Path(config.pattern_path).name, pattern_image(rows))
    return folder


def _image_names() -> list[str]:
    from minigrid.envs.wfc.config import WFC_PRESETS

    return [pathlib.Path(WFC_PRESETS[preset].pattern_path).name for preset in wfc_bank.PRESETS]


def real_patterns_dir() -> str | None:
    """Returns the folder of minigrid's real pattern images, or None when there is none: ``$JAXSOC_WFC_PATTERNS``
    when set (a folder that lacks them then fails the tests that use it, rather than skipping them), else
    ``SHARED_PATTERNS`` when it exists, else minigrid's own ``patterns`` folder when it holds the six presets'
    images (a minigrid installed from source)."""
    if os.environ.get(wfc_bank.PATTERNS_ENV):
        return os.environ[wfc_bank.PATTERNS_ENV]
    if SHARED_PATTERNS.is_dir():
        return str(SHARED_PATTERNS)
    from minigrid.envs.wfc.config import PATTERN_PATH

    if all((PATTERN_PATH / name).is_file() for name in _image_names()):
        return str(PATTERN_PATH)
    return None


@contextlib.contextmanager
def minigrid_reads_patterns(folder: str | os.PathLike):
    """Within the block, minigrid's registered WFC presets take their pattern images from ``folder``, so
    ``gymnasium.make("MiniGrid-WFC-<preset>-v0")`` makes minigrid's own env, as registered, able to reset (an env
    made inside keeps its config after the block). Only minigrid's in-memory preset table changes."""
    from minigrid.envs.wfc.config import WFC_PRESETS

    saved = dict(WFC_PRESETS)
    try:
        for preset in wfc_bank.PRESETS:
            config = WFC_PRESETS[preset]
            path = pathlib.Path(folder) / pathlib.Path(config.pattern_path).name
            WFC_PRESETS[preset] = dataclasses.replace(config, pattern_path=path)
        yield
    finally:
        WFC_PRESETS.update(saved)


def minigrid_level(preset: str, seed: int, folder: str | os.PathLike):
    """Returns minigrid's own ``MiniGrid-WFC-<preset>-v0`` (``gymnasium.make`` of the registered id, default
    settings) reset with ``seed``, its pattern image read from ``folder``."""
    import gymnasium

    with minigrid_reads_patterns(folder):
        env = gymnasium.make(wfc_bank.env_id(preset))
    env.reset(seed=seed)
    return env


def random_pattern(seed: int, size: int = 23, density: float = 0.35) -> np.ndarray:
    """Returns an RGB ``uint8[size, size, 3]`` pattern of random black walls on white, as WFC would return."""
    walls = np.random.default_rng(seed).random((size, size)) < density
    return np.where(walls[..., None], 0, 255).astype(np.uint8).repeat(3, axis=-1)


@contextlib.contextmanager
def fixed_pattern(pattern: np.ndarray):
    """Within the block, minigrid's WFC envs take ``pattern`` as the solver's output at every reset (the solver
    is not run and draws nothing from the env's generator)."""
    from minigrid.envs.wfc import wfcenv

    original = wfcenv.execute_wfc
    wfcenv.execute_wfc = lambda **kwargs: (pattern.copy(), {})
    try:
        yield
    finally:
        wfcenv.execute_wfc = original


def stand_in_layouts(size: int = 25) -> np.ndarray:
    """Returns ``bool[2, size, size]``, a stand-in bank for ``WFC.set_layouts`` where the real one cannot be built
    (no pattern images, or no minigrid): an open room, and a room split by a wall with one gap."""
    bank = np.zeros((2, size, size), bool)
    bank[:, [0, -1], :] = True
    bank[:, :, [0, -1]] = True
    bank[1, :, size // 2] = True
    bank[1, size // 2, size // 2] = False
    return bank
