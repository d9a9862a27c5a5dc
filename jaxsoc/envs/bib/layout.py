"""Building blocks of BIB trials: cell sampling, enclosures, the actors' walks, and trial assembly.

A trial is a dict of arrays with the fields of ``world.Episode`` that describe one trial (no trial axis, no
frames). Generators build trials from these pieces, draw several candidate trials at once and keep the first
that satisfies their construction (``first_valid``): fixed work, no data-dependent loops.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.bib import planner
from jaxsoc.envs.bib import world as W
from jaxsoc.envs.gridworld import placement as P

INTERIOR = ~W.border()
_ROWS = np.arange(W.GRID)[:, None]
_COLS = np.arange(W.GRID)[None, :]


def cell_mask(cell: jax.Array) -> jax.Array:
    """Returns ``bool[10, 10]``, True at ``cell``."""
    return (cell[0] == _ROWS) & (cell[1] == _COLS)


def chebyshev_map(cell: jax.Array) -> jax.Array:
    """Returns ``int32[10, 10]``: the number of moves from ``cell`` to each cell on an empty grid."""
    return jnp.maximum(jnp.abs(_ROWS - cell[0]), jnp.abs(_COLS - cell[1])).astype(jnp.int32)


def sample_cell(word: jax.Array, mask: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Returns ``(cell int32[2], ok bool)``: a uniformly drawn True cell of ``bool[10, 10]`` ``mask``, chosen
    with the ``uint32`` ``word`` (``ok`` False, and cell (0, 0), when the mask is empty)."""
    mask = jnp.asarray(mask)
    index = P.choose_index(word, mask)
    return jnp.stack([index // W.GRID, index % W.GRID]).astype(jnp.int32), jnp.any(mask)


def neighbourhood(cell: jax.Array) -> jax.Array:
    """Returns ``bool[10, 10]``: the interior cells around ``cell`` (its 8 neighbours, the cell excluded)."""
    return (chebyshev_map(cell) == 1) & INTERIOR


def orthogonal(cell: jax.Array) -> jax.Array:
    """Returns ``bool[10, 10]``: the interior cells sharing a side with ``cell``."""
    d = jnp.abs(_ROWS - cell[0]) + jnp.abs(_COLS - cell[1])
    return (d == 1) & INTERIOR


def rectangle(corner: jax.Array, height: jax.Array, width: jax.Array) -> jax.Array:
    """Returns ``bool[10, 10]``: the cells of the rectangle with top-left ``corner`` and the given size."""
    return (corner[0] <= _ROWS) & (corner[0] + height > _ROWS) & (corner[1] <= _COLS) & (corner[1] + width > _COLS)


def ring(region: jax.Array) -> jax.Array:
    """Returns ``bool[10, 10]``: the interior cells next to ``region`` (8-neighbourhood) and outside it."""
    grown = region
    for d_row, d_col in W.MOVES:
        grown = grown | W.shift(region, int(d_row), int(d_col), False)
    return grown & ~region & INTERIOR


def side_cells(region: jax.Array) -> jax.Array:
    """Returns ``bool[10, 10]``: the interior cells outside ``region`` sharing a side with it."""
    grown = region
    for d_row, d_col in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        grown = grown | W.shift(region, d_row, d_col, False)
    return grown & ~region & INTERIOR


def facing(cell: jax.Array, region: jax.Array) -> jax.Array:
    """Returns the ``int8`` index into ``world.ROTATIONS`` of the side of ``cell`` that faces ``region``
    (0 north, 1 east, 2 south, 3 west)."""
    sides = [(-1, 0), (0, 1), (1, 0), (0, -1)]
    hits = jnp.stack([W.at(region, cell + jnp.array(s)) for s in sides])
    return jnp.argmax(hits).astype(jnp.int8)


def reachable(free: jax.Array, start: jax.Array, goal: jax.Array) -> jax.Array:
    """Returns whether ``goal`` can be reached from ``start`` over the ``free`` cells (bool)."""
    return W.at(W.distance_field(free, W.one_hot_cell(goal)), start) < W.INF


# ---------------------------------------------------------------------------------------------------- walks


def walk(free: jax.Array, start: jax.Array, goal: jax.Array, max_moves: int) -> dict:
    """The efficient actor's shortest path from ``start`` to ``goal`` over the ``free`` cells.

    Returns a dict: ``path`` ``int8[max_moves + 1, 2]``, ``moves`` ``int32``, ``shortest`` ``int32`` (the
    fewest moves, ``INF`` if unreachable), ``field`` ``int32[10, 10]`` (the goal's distance field) and ``ok``
    (reached within ``max_moves``).
    """
    dist = W.distance_field(free, W.one_hot_cell(goal))
    path, moves, arrivals = planner.follow(dist[None], goal[None], free[None], start, max_moves)
    return {"path": path, "moves": moves, "shortest": W.at(dist, start), "field": dist, "ok": arrivals[0] >= 0}


def routine(walls: jax.Array, barrier: jax.Array, obstacles: jax.Array, start, key, lock, goal, max_moves: int) -> dict:
    """The instrumental routine: fetch the key, bring it to the lock (the barrier and lock then vanish), go to
    ``goal``. Before it holds the key the lock and the goal are solid; the key opens the lock cell.

    Returns a dict: ``path``, ``moves``, ``pickup`` and ``unlock`` (path indices), and ``ok``.
    """
    solid = walls | obstacles
    goal_cell, lock_cell = cell_mask(goal), cell_mask(lock)
    free = jnp.stack([~(solid | barrier | lock_cell | goal_cell), ~(solid | barrier | goal_cell), ~solid])
    targets = jnp.stack([key, lock, goal]).astype(jnp.int32)
    fields = jax.vmap(lambda f, t: W.distance_field(f, W.one_hot_cell(t)))(free, targets)
    path, moves, arrivals = planner.follow(fields, targets, free, start, max_moves)
    return {"path": path, "moves": moves, "pickup": arrivals[0], "unlock": arrivals[1], "ok": jnp.all(arrivals >= 0)}


def legal(free: jax.Array, path: jax.Array, moves: jax.Array) -> jax.Array:
    """Returns whether each of the first ``moves`` moves of ``path`` (``int8[M + 1, 2]``) is allowed on the
    ``free`` grid (both cells free, and for a diagonal both orthogonal neighbours), as a bool."""
    cells = path.astype(jnp.int32)
    steps = jax.vmap(W.move_between)(cells[:-1], cells[1:])
    allowed = W.move_allowed(free)[jnp.minimum(steps, 7), cells[:-1, 0], cells[:-1, 1]]
    return jnp.all(allowed | (jnp.arange(steps.shape[0]) >= moves))


def replay(path: jax.Array, moves: jax.Array, upto: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Returns ``(path, moves)``: ``path`` cut after ``upto`` moves (the agent then stays put)."""
    upto = jnp.minimum(upto, moves)
    index = jnp.minimum(jnp.arange(path.shape[0]), upto)
    return path[index], upto.astype(jnp.int32)


# ---------------------------------------------------------------------------------------------------- trials


def trial(
    *,
    path: jax.Array,
    moves: jax.Array,
    walls: jax.Array | None = None,
    barrier: jax.Array | None = None,
    objects: jax.Array | None = None,
    object_visible=(False, False),
    goal=-1,
    key: jax.Array | None = None,
    lock: jax.Array | None = None,
    has_key=False,
    rotation=0,
    pickup=-1,
    unlock=-1,
) -> dict:
    """Returns one trial's fields (see ``world.Episode``), with defaults for what the trial lacks; the home
    cell is where the path starts."""
    zeros = jnp.zeros((2,), jnp.int8)
    return {
        "walls": jnp.asarray(W.border()) if walls is None else walls | W.border(),
        "barrier": jnp.zeros((W.GRID, W.GRID), bool) if barrier is None else barrier,
        "home": path[0].astype(jnp.int8),
        "objects": jnp.zeros((2, 2), jnp.int8) if objects is None else objects.astype(jnp.int8),
        "object_visible": jnp.asarray(object_visible, bool),
        "goal": jnp.asarray(goal, jnp.int8),
        "key": zeros if key is None else key.astype(jnp.int8),
        "lock": zeros if lock is None else lock.astype(jnp.int8),
        "has_key": jnp.asarray(has_key, bool),
        "rotation": jnp.asarray(rotation, jnp.int8),
        "path": path.astype(jnp.int8),
        "moves": jnp.asarray(moves, jnp.int32),
        "pickup": jnp.asarray(pickup, jnp.int32),
        "unlock": jnp.asarray(unlock, jnp.int32),
    }


def first_valid(key: jax.Array, attempt: Callable, attempts: int):
    """Draws ``attempts`` candidates ``attempt(bits) -> (value, ok)`` at once, each from its own block of
    random words (``placement.Bits``), and returns ``(value, ok)`` of the first that is ok (the first
    candidate, with ``ok`` False, when none is)."""
    words = jax.random.bits(key, (attempts, P.count_words(attempt)), jnp.uint32)
    return _first_valid(words, attempt)


def first_valid_each(key: jax.Array, attempt: Callable, attempts: int, num: int):
    """``first_valid`` for ``num`` independent draws at once: ``(values, oks)`` with a leading axis ``num``."""
    words = jax.random.bits(key, (num, attempts, P.count_words(attempt)), jnp.uint32)
    return jax.vmap(lambda w: _first_valid(w, attempt))(words)


def _first_valid(words: jax.Array, attempt: Callable):
    values, oks = jax.vmap(lambda w: attempt(P.Bits(w)))(words)
    index = jnp.argmax(oks)
    return jax.tree_util.tree_map(lambda x: x[index], values), oks[index]


def episode(trials: dict, objects_id: jax.Array, agent_id: jax.Array, params: W.BIBParams) -> W.Episode:
    """Returns the ``Episode`` of 9 stacked ``trials`` with its frames.

    ``objects_id`` is ``int8[2, 2]`` (shape, colour) of the two objects, the same in every trial; ``agent_id``
    is ``int8[9, 2]`` (shape, colour) of the agent acting in each trial.
    """
    blank = W.blank_trials(params.max_moves)
    visible = trials["object_visible"]  # an absent object keeps zeros, as a BIB file cannot show it
    filled = blank.replace(
        **dict(trials, objects=jnp.where(visible[..., None], trials["objects"], 0).astype(jnp.int8)),
        object_shape=jnp.where(visible, objects_id[:, 0], 0).astype(jnp.int8),
        object_color=jnp.where(visible, objects_id[:, 1], 0).astype(jnp.int8),
        agent_shape=agent_id[:, 0].astype(jnp.int8),
        agent_color=agent_id[:, 1].astype(jnp.int8),
    )
    return W.with_frames(filled, params.frames_per_cell, params.intro_frames, params.outro_frames)


def episode_bits(key: jax.Array, words: int = 32) -> P.Bits:
    """Returns a ``placement.Bits`` block of ``words`` random words for an episode's own draws (its cast,
    fixed start, preferred object...)."""
    return P.Bits(jax.random.bits(key, (words,), jnp.uint32))


def identities(bits: P.Bits) -> tuple[jax.Array, jax.Array]:
    """Draws the episode's cast: ``objects int8[2, 2]`` and ``agents int8[2, 2]``, (shape, colour) rows of two
    goal objects and two agents (the second is the 'new agent' of the multi-agent tasks). The two objects
    differ in shape and colour, the two agents too, and no agent shares a colour with an object."""
    shapes = distinct(bits, len(W.OBJECT_SHAPES), 2)
    colors = distinct(bits, len(W.PALETTE), 4)
    agent_shapes = distinct(bits, len(W.AGENT_SHAPES), 2)
    objects = jnp.stack([shapes, colors[:2]], axis=1).astype(jnp.int8)
    agents = jnp.stack([agent_shapes, colors[2:]], axis=1).astype(jnp.int8)
    return objects, agents


def distinct(bits: P.Bits, n: int, k: int) -> jax.Array:
    """Returns ``int32[k]``: ``k`` distinct integers below ``n``, drawn uniformly in order."""
    taken = jnp.zeros((n,), bool)
    out = []
    for _ in range(k):
        choice = P.choose_index(bits.one(), ~taken)
        taken = taken.at[choice].set(True)
        out.append(choice)
    return jnp.stack(out).astype(jnp.int32)


def random_walls(bits: P.Bits, max_density: float, keep: jax.Array) -> jax.Array:
    """Returns ``bool[10, 10]``: the border plus interior wall cells drawn independently with a probability
    itself drawn uniformly up to ``max_density``, never on the ``keep`` cells."""
    density = P.below(bits.one(), 1 << 12).astype(jnp.float32) / (1 << 12) * max_density
    cells = P.below(bits.take(W.GRID * W.GRID), 1 << 12).reshape(W.GRID, W.GRID)
    return jnp.asarray(W.border()) | ((cells < density * (1 << 12)) & INTERIOR & ~keep)
