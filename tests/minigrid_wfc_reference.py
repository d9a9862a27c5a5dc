"""Helpers that drive minigrid 3.2.0's WFC envs in tests (test-only).

minigrid 3.2.0's distributions lack the WFC pattern images, so unless ``$JAXSOC_WFC_PATTERNS`` points at the real
ones the tests run minigrid's generator on stand-in images written here (black walls, white floor) under the
preset file names. ``fixed_pattern`` replaces minigrid's WFC solver call by a constant pattern, so the rest of
minigrid's generator (largest connected area, agent and goal placement, decoding) runs in milliseconds per level.
minigrid is imported lazily, so ``stand_in_layouts`` works without it.
"""

from __future__ import annotations

import contextlib
import os
import pathlib

import numpy as np

from jaxsoc.envs.gridworld import wfc_bank

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


def real_patterns_dir() -> str | None:
    """Returns the folder of minigrid's real pattern images (``$JAXSOC_WFC_PATTERNS`` or minigrid's own), or None
    when they are not available."""
    for preset in wfc_bank.PRESETS:
        try:
            config = wfc_bank.wfc_config(preset)
        except FileNotFoundError:
            return None
    return os.environ.get(wfc_bank.PATTERNS_ENV) or str(pathlib.Path(config.pattern_path).parent)


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
