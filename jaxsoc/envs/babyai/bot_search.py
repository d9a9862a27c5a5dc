"""The breadth-first searches of minigrid 3.2.0's BabyAI bot, as two level-synchronous sweeps per step.

The reference bot (``minigrid/utils/baby_ai_bot.py``) runs a textbook FIFO BFS over cells for every query.
A queue entry carries the direction of the move that produced it, and a cell expands its four neighbours
in the order ``(d, swap(d), -swap(d), -d)`` (straight first), so its tie-breaking is part of the bot's
behaviour. Cells are marked when dequeued; a cell is *visited* by the first of its entries in queue order.
Every cell is tested against the query when visited; only seen cells expand, walls and closed doors never,
objects only when blockers are allowed.

The queue order does not depend on the query, so one exhaustive BFS answers every query of a step: the
answer is the accepted cell visited first. ``visit_order`` runs that BFS with a static number of rounds: a
queue of the cells that expand, one dequeued per round, pushing its unvisited neighbours in slot order; a
cell's visit order (0 = the start) is its position in the reference's queue (its first entry; later entries
of a visited cell do nothing there). The second search, "with blockers", starts from *every* cell the first
one visited, in its visit order, all heading east, exactly as the reference's ``previous_pos`` dictionary
seeds it.

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
SLOT_MOVE = np.argsort(EXPANSION_SLOT, axis=1).astype(np.int32)  # [heading, slot] -> move


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


# A visited cell is one int32 word: order (11 bits) | heading (2) | first step (9) | source (9). Grids of at
# most 511 cells (BabyAI's largest is 22 x 22 = 484).
MAX_CELLS = 511
_INVALID = np.int32(2**31 - 1)


def _pack(order, heading, first, source) -> jax.Array:
    return (order << 20) | (heading << 18) | ((first & 511) << 9) | source


def visit_order(expands: jax.Array, start: Sweep, rounds: int | None = None) -> Sweep:
    """Runs the reference BFS to exhaustion from the start cells of ``start`` (``order < UNVISITED``,
    already ordered densely from 0, with their headings; depth 0).

    Args:
        expands: ``bool[H, W]`` cells that push their neighbours when visited.
        start: the start cells.
        rounds: the number of rounds, a static bound on the number of visited cells that expand (one is
            dequeued per round; a round past the end of the queue changes nothing). The default ``H * W``
            is always enough; with fewer than the cells of ``expands`` the BFS may stop early.

    Returns:
        The ``Sweep`` of every visited cell. Each round reads a few words of the dequeued cell and its four
        neighbours and writes the fresh ones, so it costs the same on any grid.
    """
    height, width = expands.shape
    num_cells = height * width
    if num_cells > MAX_CELLS:
        raise ValueError(f"the bot's search supports grids of at most {MAX_CELLS} cells, got {height}x{width}")
    rounds = num_cells if rounds is None else rounds
    expands = expands.ravel()
    started = (start.order < UNVISITED).ravel()
    words = jnp.where(started, _pack(start.order, start.heading, start.first, start.source).ravel(), _INVALID)
    count = jnp.sum(started, dtype=jnp.int32)
    # the queue starts with the start cells that expand, in their order
    cell_at = (
        jnp.zeros(num_cells, jnp.int32)
        .at[jnp.where(started, start.order.ravel(), num_cells)]
        .set(jnp.arange(num_cells, dtype=jnp.int32), mode="drop")
    )
    queued = expands[cell_at] & (jnp.arange(num_cells) < count)
    queue = (
        jnp.zeros(num_cells, jnp.int32)
        .at[jnp.where(queued, jnp.cumsum(queued) - 1, num_cells)]
        .set(cell_at, mode="drop")
    )
    slot_move = jnp.asarray(SLOT_MOVE)
    dir_vecs = jnp.asarray(DIR_VECS, jnp.int32)

    def round_(i, carry):
        words, depth, queue, length, count = carry
        cell = queue[jnp.minimum(i, num_cells - 1)]
        word = words[cell]
        moves = slot_move[(word >> 18) & 3]  # the four moves in expansion order
        x, y = cell % width + dir_vecs[moves, 0], cell // width + dir_vecs[moves, 1]
        inside = (x >= 0) & (x < width) & (y >= 0) & (y < height)
        neighbour = jnp.clip(y, 0, height - 1) * width + jnp.clip(x, 0, width - 1)
        fresh = (i < length) & inside & (words[neighbour] == _INVALID)
        order = count + jnp.cumsum(fresh) - fresh  # their places in the reference's queue
        first = jnp.where(depth[cell] == 0, neighbour, (word >> 9) & 511)
        target = jnp.where(fresh, neighbour, num_cells)
        words = words.at[target].set(_pack(order, moves, first, word & 511), mode="drop")
        depth = depth.at[target].set(depth[cell] + 1, mode="drop")
        grows = fresh & expands[neighbour]
        queue = queue.at[jnp.where(grows, length + jnp.cumsum(grows) - grows, num_cells)].set(neighbour, mode="drop")
        return words, depth, queue, length + jnp.sum(grows, dtype=jnp.int32), count + jnp.sum(fresh, dtype=jnp.int32)

    carry = (words, start.depth.ravel(), queue, jnp.sum(queued, dtype=jnp.int32), count)
    words, depth, _, _, _ = jax.lax.fori_loop(0, rounds, round_, carry)
    words, depth = words.reshape(height, width), depth.reshape(height, width)
    visited = words != _INVALID
    first = (words >> 9) & 511
    return Sweep(
        order=jnp.where(visited, words >> 20, UNVISITED),
        depth=depth,
        heading=(words >> 18) & 3,
        first=jnp.where(visited & (first != 511), first, -1),
        source=words & 511,
    )


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
    """Returns both searches of the reference bot for the agent at ``agent_pos`` facing ``agent_dir``, on a
    grid whose outer ring is wall (every MiniGrid grid): each takes ``(H - 2) * (W - 2)`` rounds."""
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
    # the outer wall never expands: masking it (a no-op on a walled grid) bounds the cells that expand
    inner = np.zeros((height, width), bool)
    inner[1:-1, 1:-1] = True
    rounds = max(height - 2, 0) * max(width - 2, 0)
    clear = visit_order(expanding_cells(grid, seen, False) & inner, start, rounds)
    restart = Sweep(order=clear.order, depth=zeros, heading=zeros, first=start.first, source=cells)
    blocked = visit_order(expanding_cells(grid, seen, True) & inner, restart, rounds)
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
