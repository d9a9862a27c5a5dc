"""The breadth-first searches of minigrid 3.2.0's BabyAI bot, as two level-synchronous sweeps per step.

The reference bot (``minigrid/utils/baby_ai_bot.py``) runs a textbook FIFO BFS over cells for every query.
A queue entry carries the direction of the move that produced it, and a cell expands its four neighbours
in the order ``(d, swap(d), -swap(d), -d)`` (straight first), so its tie-breaking is part of the bot's
behaviour. Cells are marked when dequeued; a cell is *visited* by the first of its entries in queue order.
Every cell is tested against the query when visited; only seen cells expand, walls and closed doors never,
objects only when blockers are allowed.

The queue order does not depend on the query, so one exhaustive BFS answers every query of a step: the
answer is the accepted cell visited first. Layer ``d + 1`` is ordered by (rank of the parent in layer
``d``, slot of the move), which is what ``visit_order`` computes, layer by layer, with a dense global
order (0 = the start). The second search, "with blockers", starts from *every* cell the first one visited,
in its visit order, all heading east, exactly as the reference's ``previous_pos`` dictionary seeds it.

Arrays are ``[H, W]`` indexed ``[y, x]``; cells are flat indices ``y * W + x``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsoc.envs.gridworld import constants as C

UNVISITED = np.int32(2**30)
DIR_VECS = C.DIR_TO_VEC  # [4, 2] (dx, dy) for east, south, west, north


def _expansion_slots() -> np.ndarray:
    """Returns ``int32[4, 4]``: ``[heading, move]`` -> the move's position in the heading's expansion order."""
    index = {tuple(v): k for k, v in enumerate(DIR_VECS.tolist())}
    slots = np.zeros((4, 4), np.int32)
    for heading, (dx, dy) in enumerate(DIR_VECS.tolist()):
        for slot, vec in enumerate([(dx, dy), (dy, dx), (-dy, -dx), (-dx, -dy)]):
            slots[heading, index[vec]] = slot
    return slots


EXPANSION_SLOT = _expansion_slots()


def shift(a: jax.Array, dx: int, dy: int, fill) -> jax.Array:
    """Returns ``out[y, x] = a[y - dy, x - dx]`` (``fill`` outside), the value of each cell's neighbour
    at ``-(dx, dy)``."""
    height, width = a.shape
    padded = jnp.pad(a, 1, constant_values=fill)
    return jax.lax.dynamic_slice(padded, (1 - dy, 1 - dx), (height, width))


@struct.dataclass
class Sweep:
    """One exhaustive BFS. All ``int32[H, W]``.

    Attributes:
        order: global visit order (``UNVISITED`` if never visited).
        depth: BFS layer of the visit (path length from the start cell).
        heading: direction index of the move that visited the cell.
        first: the cell's first step away from its start cell (flat index, -1 for start cells).
        source: the start cell its path begins at (flat index).
    """

    order: jax.Array
    depth: jax.Array
    heading: jax.Array
    first: jax.Array
    source: jax.Array


def visit_order(expands: jax.Array, start: Sweep) -> Sweep:
    """Runs the reference BFS to exhaustion from the start cells of ``start`` (``order < UNVISITED``,
    already ordered densely from 0, with their headings).

    Args:
        expands: ``bool[H, W]`` cells that push their neighbours when visited.
        start: the start cells (depth 0).

    Returns:
        The ``Sweep`` of every visited cell. A bounded ``while_loop`` of at most ``H * W`` layers.
    """
    height, width = expands.shape
    cells = jnp.arange(height * width, dtype=jnp.int32).reshape(height, width)
    key_space = 4 * height * width
    slot_table = jnp.asarray(EXPANSION_SLOT)

    def layer(carry):
        sweep, frontier, count, depth = carry
        visited = sweep.order < UNVISITED
        grows = frontier & expands
        best_key = jnp.full((height, width), key_space, jnp.int32)
        best_move = jnp.zeros((height, width), jnp.int32)
        inherited_first = jnp.full((height, width), -1, jnp.int32)
        inherited_source = jnp.zeros((height, width), jnp.int32)
        for move, (dx, dy) in enumerate(DIR_VECS.tolist()):
            parent_grows = shift(grows, dx, dy, False)
            parent_order = shift(sweep.order, dx, dy, 0)
            parent_heading = shift(sweep.heading, dx, dy, 0)
            key = jnp.where(parent_grows & ~visited, parent_order * 4 + slot_table[parent_heading, move], key_space)
            better = key < best_key
            parent_first = shift(sweep.first, dx, dy, -1)
            best_key = jnp.where(better, key, best_key)
            best_move = jnp.where(better, move, best_move)
            inherited_first = jnp.where(better, jnp.where(depth == 0, cells, parent_first), inherited_first)
            inherited_source = jnp.where(better, shift(sweep.source, dx, dy, 0), inherited_source)
        new = best_key < key_space
        occupied = jnp.zeros(key_space + 1, jnp.int32).at[jnp.where(new, best_key, key_space)].set(1)
        rank = jnp.cumsum(occupied)[best_key] - 1
        sweep = Sweep(
            order=jnp.where(new, count + rank, sweep.order),
            depth=jnp.where(new, depth + 1, sweep.depth),
            heading=jnp.where(new, best_move, sweep.heading),
            first=jnp.where(new, inherited_first, sweep.first),
            source=jnp.where(new, inherited_source, sweep.source),
        )
        return sweep, new, count + jnp.sum(new, dtype=jnp.int32), depth + 1

    def more(carry):
        _, frontier, _, depth = carry
        return jnp.any(frontier) & (depth < height * width)

    frontier = start.order < UNVISITED
    count = jnp.sum(frontier, dtype=jnp.int32)
    sweep, _, _, _ = jax.lax.while_loop(more, layer, (start, frontier, count, jnp.int32(0)))
    return sweep


@struct.dataclass
class Searches:
    """The two searches of a bot step: ``clear`` (no blockers, from the agent) and ``blocked`` (blockers
    passable, from every cell ``clear`` visited)."""

    clear: Sweep
    blocked: Sweep
    agent_cell: jax.Array


def expanding_cells(grid: jax.Array, seen: jax.Array, ignore_blockers: bool) -> jax.Array:
    """Returns ``bool[H, W]``: seen cells that the reference BFS expands (empty, open door, and with
    ``ignore_blockers`` any object that is not a wall or a door)."""
    kind = grid[..., C.TYPE]
    door = kind == C.DOOR
    open_door = door & (grid[..., C.STATE] == C.OPEN)
    empty = kind == C.EMPTY
    blocker = ~empty & ~door & (kind != C.WALL)
    return seen & (empty | open_door | (blocker if ignore_blockers else False))


def search(grid: jax.Array, seen: jax.Array, agent_pos: jax.Array, agent_dir: jax.Array) -> Searches:
    """Returns both searches of the reference bot for the agent at ``agent_pos`` facing ``agent_dir``."""
    height, width = seen.shape
    agent_cell = agent_pos[1] * width + agent_pos[0]
    cells = jnp.arange(height * width, dtype=jnp.int32).reshape(height, width)
    is_agent = cells == agent_cell
    zeros = jnp.zeros((height, width), jnp.int32)
    start = Sweep(
        order=jnp.where(is_agent, 0, UNVISITED),
        depth=zeros,
        heading=jnp.where(is_agent, agent_dir, 0),
        first=jnp.full((height, width), -1, jnp.int32),
        source=cells,
    )
    clear = visit_order(expanding_cells(grid, seen, False), start)
    restart = Sweep(order=clear.order, depth=zeros, heading=zeros, first=start.first, source=cells)
    blocked = visit_order(expanding_cells(grid, seen, True), restart)
    return Searches(clear=clear, blocked=blocked, agent_cell=agent_cell)


@struct.dataclass
class Found:
    """The answer of one query (all scalars).

    Attributes:
        found: some accepted cell was visited.
        cell: the accepted cell visited first (flat index).
        first: the first cell of the path to it (-1 when the path is empty: the agent's own cell).
        length: the path's length in moves.
        with_blockers: it was found by the search that passes blockers.
    """

    found: jax.Array
    cell: jax.Array
    first: jax.Array
    length: jax.Array
    with_blockers: jax.Array


def query(searches: Searches, accept: jax.Array, try_with_blockers: bool) -> Found:
    """The reference ``_shortest_path(accept_fn, try_with_blockers)`` for ``accept``, ``bool[H, W]``."""
    clear, blocked = searches.clear, searches.blocked
    clear_order = jnp.where(accept, clear.order, UNVISITED).ravel()
    cell = jnp.argmin(clear_order).astype(jnp.int32)
    found = clear_order[cell] < UNVISITED
    result = Found(found, cell, clear.first.ravel()[cell], clear.depth.ravel()[cell], jnp.asarray(False))
    if not try_with_blockers:
        return result
    blocked_order = jnp.where(accept, blocked.order, UNVISITED).ravel()
    cell_b = jnp.argmin(blocked_order).astype(jnp.int32)
    source = blocked.source.ravel()[cell_b]
    first_b = jnp.where(source == searches.agent_cell, blocked.first.ravel()[cell_b], clear.first.ravel()[source])
    length_b = blocked.depth.ravel()[cell_b] + clear.depth.ravel()[source]
    with_b = Found(blocked_order[cell_b] < UNVISITED, cell_b, first_b, length_b, jnp.asarray(True))
    return jax.tree_util.tree_map(lambda a, b: jnp.where(found, a, b), result, with_b)


def path_lengths(searches: Searches, carrying: jax.Array) -> jax.Array:
    """Returns ``int32[H, W]``: the bot's distance estimate to every cell (``_find_obj_pos``): the clear
    path length, else the blocker path length plus 4 (plus 7 when carrying), ``UNVISITED`` if unreachable."""
    clear, blocked = searches.clear, searches.blocked
    via_source = clear.depth.ravel()[blocked.source].reshape(clear.depth.shape)
    penalty = jnp.where(carrying, 7, 4)
    with_blockers = jnp.where(blocked.order < UNVISITED, blocked.depth + via_source + penalty, UNVISITED)
    return jnp.where(clear.order < UNVISITED, clear.depth, with_blockers)
