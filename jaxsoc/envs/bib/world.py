"""BIB's world: the grid, its entities and palettes, the episode arrays, and frames from cell paths.

The Baby Intuitions Benchmark shows a 10x10 grid of 20 px cells (200x200 px frames) from above, its border
a black wall. Cells are indexed ``(row, col)``, row 0 at the top, as in the frames (BIB's JSON uses pixel
coordinates with a bottom-left origin; ``bibjson`` converts). An agent moves between cell centres in 8
directions (``MOVES``); a diagonal move needs both orthogonal neighbours free. Transitions are deterministic.

An ``Episode`` is 9 trials (8 familiarisation, 1 test). Each trial has a fixed layout (walls, a green
removable barrier, up to two goal objects, a key and its lock, the agent's home cell) and the agent's path as
a sequence of cells; the frames, in which the agent glides from cell to cell over ``frames_per_cell`` frames,
are a pure function of the path (``with_frames``), computed once when an episode is generated or read.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

GRID = 10  # cells per side, border included
CELL_PX = 20  # pixels per cell in BIB's 200x200 frames
FRAME_PX = GRID * CELL_PX
NUM_TRIALS = 9  # 8 familiarisation trials and the test trial
TEST = NUM_TRIALS - 1

# The 8 moves as (d_row, d_col), clockwise from north; action STAY marks frames without motion.
MOVES = np.array([(-1, 0), (-1, 1), (0, 1), (1, 1), (1, 0), (1, -1), (0, -1), (-1, -1)], np.int32)
STAY = 8

AGENT_SHAPES = ("pentagon", "clove", "kite")
OBJECT_SHAPES = (
    "heart",
    "clove_tree",
    "moon",
    "wine",
    "double_dia",
    "flag",
    "capsule",
    "vase",
    "curved_triangle",
    "spoon",
    "medal",
)
# Distinct colours for agents and objects; none is black (walls), lime (barrier, lock), magenta (home) or
# maroon (key), so an entity's role is never given away by colour alone.
PALETTE = np.array(
    [
        (230, 25, 75),  # red
        (245, 130, 48),  # orange
        (255, 205, 25),  # yellow
        (0, 130, 200),  # blue
        (145, 30, 180),  # purple
        (70, 200, 220),  # cyan
        (0, 128, 128),  # teal
        (170, 110, 40),  # brown
        (0, 0, 128),  # navy
        (250, 150, 180),  # pink
    ],
    np.uint8,
)
WALL_RGB = (0, 0, 0)
BARRIER_RGB = (50, 205, 50)
HOME_RGB = (255, 0, 255)
KEY_RGB = (128, 0, 0)
LOCK_RGB = BARRIER_RGB
BACKGROUND_RGB = (255, 255, 255)
ROTATIONS = (0, 90, 180, 270)  # key (triangle) and lock (triangle_slot) orientations, degrees

INF = 10_000  # distance of an unreachable cell


@struct.dataclass
class Episode:
    """One BIB episode: 9 trials. Leading axes ``[..., 9]`` (``[2, 9]`` for an evaluation pair).

    Layout, per trial:
        walls: ``bool[9, 10, 10]``, black walls (the border included).
        barrier: ``bool[9, 10, 10]``, green removable barrier cells (shown until the key enters the lock).
        home: ``int8[9, 2]``, the home cell (where the agent starts in most tasks).
        objects: ``int8[9, 2, 2]``, the cells of the two goal objects.
        object_visible: ``bool[9, 2]``, whether each object is in the trial.
        object_shape, object_color: ``int8[9, 2]``, indices into ``OBJECT_SHAPES`` and ``PALETTE``; an
            object's identity is its (shape, colour).
        key: ``int8[9, 2]``, the key's starting cell; ``has_key: bool[9]`` whether the trial has a key and lock.
        lock: ``int8[9, 2]``, the lock's cell; ``rotation: int8[9]``, index into ``ROTATIONS`` of both.
        agent_shape, agent_color: ``int8[9]``, the acting agent's identity.
    Motion, per trial:
        path: ``int8[9, M + 1, 2]``, the agent's cells; after ``moves[i]`` moves it stays put.
        moves: ``int32[9]``, the number of moves.
        pickup, unlock: ``int32[9]``, the path index at which the agent reaches the key / brings it to the
            lock (the barrier, key and lock then disappear), ``-1`` when it does not.
        goal: ``int8[9]``, the object the agent heads for (ground truth for tests and analysis; -1 none).
    Frames (``with_frames``), ``T = intro + M * frames_per_cell + 1 + outro``:
        agent_xy, key_xy: ``float32[9, T, 2]``, positions in cell units ``(row, col)`` of the entity's centre.
        key_visible, lock_visible, barrier_visible: ``bool[9, T]``.
        action: ``int8[9, T]``, the move under way at each frame (index into ``MOVES``), ``STAY`` otherwise.
        length: ``int32[9]``, frames in each trial; later frames repeat the last one.
    """

    walls: jax.Array
    barrier: jax.Array
    home: jax.Array
    objects: jax.Array
    object_visible: jax.Array
    object_shape: jax.Array
    object_color: jax.Array
    key: jax.Array
    has_key: jax.Array
    lock: jax.Array
    rotation: jax.Array
    agent_shape: jax.Array
    agent_color: jax.Array
    path: jax.Array
    moves: jax.Array
    pickup: jax.Array
    unlock: jax.Array
    goal: jax.Array
    agent_xy: jax.Array
    key_xy: jax.Array
    key_visible: jax.Array
    lock_visible: jax.Array
    barrier_visible: jax.Array
    action: jax.Array
    length: jax.Array
    frames_per_cell: int = struct.field(pytree_node=False, default=10)
    intro_frames: int = struct.field(pytree_node=False, default=30)
    outro_frames: int = struct.field(pytree_node=False, default=83)

    @property
    def max_moves(self) -> int:
        return self.path.shape[-2] - 1

    @property
    def num_frames(self) -> int:
        return self.agent_xy.shape[-2]


@struct.dataclass
class BIBParams:
    """Static sizes of generated episodes (all fix array shapes).

    ``frames_per_cell=10`` moves the agent 2 px per frame at 200 px, and ``intro_frames=30``,
    ``outro_frames=83`` are the still frames BIB's baselines drop from the start and end of every trial, so
    the defaults give frames like BIB's videos. ``BIBParams.compact()`` has one frame per cell and no still
    frames: the frame stream the baselines actually consume, at a tenth of the cost.
    """

    frames_per_cell: int = struct.field(pytree_node=False, default=10)
    intro_frames: int = struct.field(pytree_node=False, default=30)
    outro_frames: int = struct.field(pytree_node=False, default=83)
    max_moves: int = struct.field(pytree_node=False, default=32)

    @classmethod
    def compact(cls) -> BIBParams:
        return cls(frames_per_cell=1, intro_frames=0, outro_frames=0)

    @property
    def num_frames(self) -> int:
        return self.intro_frames + self.max_moves * self.frames_per_cell + 1 + self.outro_frames

    def check(self) -> None:
        """Raises ``ValueError`` on sizes that cannot describe an episode."""
        if self.frames_per_cell < 1 or self.max_moves < 1 or self.intro_frames < 0 or self.outro_frames < 0:
            raise ValueError(f"BIBParams needs frames_per_cell >= 1, max_moves >= 1, intro/outro >= 0, got {self}")


# ---------------------------------------------------------------------------------------------------- grid


def border() -> np.ndarray:
    """Returns ``bool[10, 10]``, True on the border wall."""
    walls = np.zeros((GRID, GRID), bool)
    walls[0, :] = walls[-1, :] = walls[:, 0] = walls[:, -1] = True
    return walls


def shift(grid: jax.Array, d_row: int, d_col: int, fill) -> jax.Array:
    """Returns ``out[r, c] = grid[r + d_row, c + d_col]`` (``fill`` outside), same shape as ``grid[..., H, W]``."""
    h, w = grid.shape[-2:]
    pad = [(0, 0)] * (grid.ndim - 2) + [(1, 1), (1, 1)]
    padded = jnp.pad(grid, pad, constant_values=fill)
    return padded[..., 1 + d_row : 1 + d_row + h, 1 + d_col : 1 + d_col + w]


def move_allowed(free: jax.Array) -> jax.Array:
    """Returns ``bool[8, ..., H, W]``: whether move ``d`` from each cell is allowed on the ``bool[..., H, W]``
    grid of free cells (both cells free; for a diagonal, both orthogonal neighbours free too)."""
    out = []
    for d_row, d_col in MOVES:
        ok = free & shift(free, int(d_row), int(d_col), False)
        if d_row and d_col:
            ok = ok & shift(free, int(d_row), 0, False) & shift(free, 0, int(d_col), False)
        out.append(ok)
    return jnp.stack(out)


def distance_field(free: jax.Array, cost: jax.Array, rounds: int = (GRID - 2) ** 2) -> jax.Array:
    """Returns ``int32[..., H, W]``: the fewest moves from each cell to a source plus that source's cost.

    ``free`` is ``bool[..., H, W]``; ``cost`` is ``int32[..., H, W]``, the cost of ending at each cell
    (``INF`` where a cell is no source). The relaxation runs a static number of rounds (enough for any path
    of the 8x8 interior); unreachable cells stay at ``INF``. Works under ``vmap``.
    """
    allowed = move_allowed(free)
    cost = jnp.minimum(cost.astype(jnp.int32), INF)

    def relax(_, dist):
        best = dist
        for d, (d_row, d_col) in enumerate(MOVES):
            through = jnp.where(allowed[d], shift(dist, int(d_row), int(d_col), INF) + 1, INF)
            best = jnp.minimum(best, through)
        return jnp.minimum(best, INF)

    return jax.lax.fori_loop(0, rounds, relax, cost)


def at(grid: jax.Array, cell: jax.Array) -> jax.Array:
    """Returns ``grid[..., row, col]`` for ``cell = (row, col)`` (``grid`` ``[H, W]``, ``cell`` ``int[2]``)."""
    return grid[cell[0], cell[1]]


def one_hot_cell(cell: jax.Array, value=0, fill=INF) -> jax.Array:
    """Returns ``int32[10, 10]`` holding ``value`` at ``cell`` and ``fill`` elsewhere."""
    rows, cols = jnp.arange(GRID)[:, None], jnp.arange(GRID)[None, :]
    return jnp.where((rows == cell[0]) & (cols == cell[1]), value, fill).astype(jnp.int32)


def move_between(a: jax.Array, b: jax.Array) -> jax.Array:
    """Returns the move index ``int32`` from cell ``a`` to the neighbouring cell ``b`` (``STAY`` if equal)."""
    delta = (b - a).astype(jnp.int32)
    table = jnp.asarray(np.concatenate([MOVES, [[0, 0]]]))
    return jnp.argmax(jnp.all(table == delta, axis=-1)).astype(jnp.int32)


# ---------------------------------------------------------------------------------------------------- frames


def with_frames(episode: Episode, frames_per_cell: int = 10, intro_frames: int = 30, outro_frames: int = 83) -> Episode:
    """Returns ``episode`` with its frame arrays computed from the paths (see ``Episode``). Works for any
    leading axes; jittable (the three sizes are static)."""
    lead = episode.moves.shape
    flat = jax.tree_util.tree_map(lambda x: x.reshape((-1, *x.shape[len(lead) :])), episode)
    frames = jax.vmap(lambda e: _trial_frames(e, frames_per_cell, intro_frames, outro_frames))(flat)
    frames = jax.tree_util.tree_map(lambda x: x.reshape((*lead, *x.shape[1:])), frames)
    return episode.replace(
        **frames, frames_per_cell=frames_per_cell, intro_frames=intro_frames, outro_frames=outro_frames
    )


def _trial_frames(trial: Episode, per_cell: int, intro: int, outro: int) -> dict:
    """Frame arrays of one trial (the fields of ``trial`` without their trial axis)."""
    max_moves = trial.path.shape[0] - 1
    num_frames = intro + max_moves * per_cell + 1 + outro
    t = jnp.arange(num_frames)
    moving = jnp.clip(t - intro, 0, trial.moves * per_cell)  # frames of motion elapsed
    index = moving // per_cell
    frac = (moving % per_cell).astype(jnp.float32) / per_cell
    path = trial.path.astype(jnp.float32)
    here = path[index]
    there = path[jnp.minimum(index + 1, max_moves)]
    agent_xy = here + frac[:, None] * (there - here)
    in_motion = (t >= intro) & (t < intro + trial.moves * per_cell)
    move = jax.vmap(move_between)(trial.path[index], trial.path[jnp.minimum(index + 1, max_moves)])
    action = jnp.where(in_motion, move, STAY).astype(jnp.int8)
    # The key rides on the agent from the frame it arrives at the key until the frame it reaches the lock.
    arrive = lambda i: jnp.where(i >= 0, intro + i * per_cell, num_frames)  # noqa: E731
    carried = (t >= arrive(trial.pickup)) & (t < arrive(trial.unlock))
    key_xy = jnp.where(carried[:, None], agent_xy, trial.key.astype(jnp.float32))
    unlocked = t >= arrive(trial.unlock)
    return {
        "agent_xy": agent_xy,
        "key_xy": key_xy,
        "key_visible": trial.has_key & ~unlocked,
        "lock_visible": trial.has_key & ~unlocked,
        "barrier_visible": jnp.any(trial.barrier) & ~unlocked,
        "action": action,
        "length": (intro + trial.moves * per_cell + 1 + outro).astype(jnp.int32),
    }


def blank_trials(max_moves: int = 32, num_trials: int = NUM_TRIALS) -> Episode:
    """Returns an ``Episode`` of ``num_trials`` empty trials (border walls only, no objects, key or barrier,
    the agent standing still at cell (1, 1)) without frames; generators and tests fill in its fields and
    call ``with_frames``."""
    n = num_trials
    zeros2 = jnp.zeros((n, 2), jnp.int8)
    return Episode(
        walls=jnp.broadcast_to(jnp.asarray(border()), (n, GRID, GRID)),
        barrier=jnp.zeros((n, GRID, GRID), bool),
        home=jnp.ones((n, 2), jnp.int8),
        objects=jnp.zeros((n, 2, 2), jnp.int8),
        object_visible=jnp.zeros((n, 2), bool),
        object_shape=jnp.zeros((n, 2), jnp.int8),
        object_color=jnp.zeros((n, 2), jnp.int8),
        key=zeros2,
        has_key=jnp.zeros((n,), bool),
        lock=zeros2,
        rotation=jnp.zeros((n,), jnp.int8),
        agent_shape=jnp.zeros((n,), jnp.int8),
        agent_color=jnp.zeros((n,), jnp.int8),
        path=jnp.ones((n, max_moves + 1, 2), jnp.int8),
        moves=jnp.zeros((n,), jnp.int32),
        pickup=jnp.full((n,), -1, jnp.int32),
        unlock=jnp.full((n,), -1, jnp.int32),
        goal=jnp.full((n,), -1, jnp.int8),
        agent_xy=jnp.zeros((n, 1, 2), jnp.float32),
        key_xy=jnp.zeros((n, 1, 2), jnp.float32),
        key_visible=jnp.zeros((n, 1), bool),
        lock_visible=jnp.zeros((n, 1), bool),
        barrier_visible=jnp.zeros((n, 1), bool),
        action=jnp.full((n, 1), STAY, jnp.int8),
        length=jnp.ones((n,), jnp.int32),
    )
