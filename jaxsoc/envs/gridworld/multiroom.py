"""minigrid 3.2.0's ``MiniGrid-MultiRoom-*`` (``minigrid/envs/multiroom.py``): a chain of rooms joined by closed
doors in a 25x25 world; the agent starts in the first room, the goal is in the last one.

minigrid lays the rooms out by a random walk: the first room's top-left corner is uniform in
``[0, width - 2)^2`` (both coordinates use the width), each room's sides are uniform in ``[4, max_room_size]``
(a first room outside the world ends the chain), and each next room gets 8 attempts: an exit wall (any but
the room's entry wall), a door cell on it (not a corner), the new room's sides and its offset along the
door's wall (the door not at its corner). An attempt is rejected when the room leaves the world
(``top >= 0``, ``top_x + size_x <= width``, ``top_y + size_y < height``) or meets a room of the chain other
than its parent (minigrid's ``nonOverlap`` test, kept as is). A room whose 8 attempts all fail ends the
chain, and a chain shorter than the number of rooms is thrown away: the layout is the first complete chain.

Here ``chains`` chains are computed at once (each with its 8 attempts per room side by side, its first room
drawn among those inside the world: ``_first_room``) and the first complete one is kept, so the layout has
minigrid's distribution except with probability ``(1 - p) ** chains`` (``p`` the chance that a chain
completes), when the longest chain is used (fewer rooms).
Each attempt's five numbers come from two random words by repeated multiply-shift (``_take``), a bias below
``1e-7`` per attempt. Doors are closed; each door's colour is uniform among the colours other than the
previous door's. The agent is placed uniformly (pose and direction) inside the first room, the goal uniformly
inside the last.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld import placement as P
from jaxsoc.envs.gridworld.classic import goal_cell
from jaxsoc.envs.gridworld.env import GridEnvironment
from jaxsoc.envs.gridworld.state import GridParams, GridState, make_state

#: attempts minigrid makes to place each next room
ATTEMPTS = 8
#: chains per reset, by ``(number of rooms, max_room_size)``: the smallest ``K`` with ``q ** K < 1e-12``, ``q``
#: the measured chance that a chain (its first room inside the world) fails, plus 6 standard errors, rounded
#: up to 0.01; 200,000 chains each, keys ``key(100 + i)``, ``i < 4``. ``tests/test_minigrid_multiroom.py``
#: checks the rates against minigrid's.
#:
#:   rooms  size  chains  failed  q       q_up  K
#:   2      4     200000     558  0.0028  0.01   6
#:   4      5     200000   38137  0.1907  0.20  18
#:   6      5     200000   78895  0.3945  0.41  31
#:   6      10    200000  132671  0.6634  0.67  69
CHAINS = {(2, 4): 6, (4, 5): 18, (6, 5): 31, (6, 10): 69}
DEFAULT_CHAINS = 128


def _take(word: jax.Array, n: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Returns ``(value, rest)``: ``value = floor(word * n / 2**32)``, an ``int32`` uniform in ``[0, n)`` (up to a
    bias of ``n / 2**32``), and ``rest = word * n mod 2**32``, a word to draw the next value from (the biases
    multiply up: ``value``'s from a ``rest`` is at most the product of the ``n`` drawn so far over ``2**32``).
    ``word`` is ``uint32``, ``1 <= n < 2**16``."""
    n = jnp.asarray(n).astype(jnp.uint32)
    high, low = word >> 16, word & 0xFFFF
    low_product = low * n
    middle = high * n + (low_product >> 16)
    return (middle >> 16).astype(jnp.int32), (middle << 16) | (low_product & 0xFFFF)


@struct.dataclass
class Rooms:
    """A chain of rooms (one chain; a leading axis for several).

    Attributes:
        top: ``int32[N, 2]``, each room's top-left ``(x, y)`` (its walls included).
        size: ``int32[N, 2]``, each room's ``(width, height)``, walls included.
        door: ``int32[N, 2]``, the ``(x, y)`` of each room's entry door (row 0 unused).
        count: ``int32[]``, how many of the ``N`` rooms were placed.
    """

    top: jax.Array
    size: jax.Array
    door: jax.Array
    count: jax.Array


def _next_rooms(words: jax.Array, top: jax.Array, size: jax.Array, entry_wall: jax.Array, max_size: int):
    """The ``ATTEMPTS`` attempts to place the room after the room ``top``/``size`` (``int32[2]`` each) entered
    by ``entry_wall``, from ``words`` ``uint32[ATTEMPTS, 2]``. Returns ``(top, size, door)``, ``int32[ATTEMPTS,
    2]`` each, and ``entry_wall`` ``int32[ATTEMPTS]`` of the candidate rooms (bounds and overlaps unchecked)."""
    index, rest = _take(words[:, 0], 3)
    exit_wall = index + (index >= entry_wall)  # the sorted walls other than the entry wall
    along_x = (exit_wall == 1) | (exit_wall == 3)
    offset, _ = _take(rest, jnp.where(along_x, size[0], size[1]) - 2)
    door_x = jnp.where(exit_wall == 0, top[0] + size[0] - 1, jnp.where(exit_wall == 2, top[0], top[0] + 1 + offset))
    door_y = jnp.where(exit_wall == 1, top[1] + size[1] - 1, jnp.where(exit_wall == 3, top[1], top[1] + 1 + offset))
    entry = (exit_wall + 2) % 4
    size_x, rest = _take(words[:, 1], max_size - 3)
    size_y, rest = _take(rest, max_size - 3)
    size_x, size_y = size_x + 4, size_y + 4
    shift, _ = _take(rest, jnp.where((entry == 1) | (entry == 3), size_x, size_y) - 2)
    top_x = jnp.where(entry == 0, door_x - size_x + 1, jnp.where(entry == 2, door_x, door_x - size_x + 2 + shift))
    top_y = jnp.where(entry == 1, door_y - size_y + 1, jnp.where(entry == 3, door_y, door_y - size_y + 2 + shift))
    stack = lambda x, y: jnp.stack([x, y], axis=-1)  # noqa: E731
    return stack(top_x, top_y), stack(size_x, size_y), stack(door_x, door_y), entry


def _inside(top: jax.Array, size: jax.Array, width: int, height: int) -> jax.Array:
    """minigrid's bounds test of rooms ``top``/``size`` (``int32[..., 2]``; ``top_y + size_y`` must stay below
    ``height``: the last row is never used). Returns ``bool[...]``."""
    x, y, w, h = top[..., 0], top[..., 1], size[..., 0], size[..., 1]
    return (x >= 0) & (y >= 0) & (x + w <= width) & (y + h < height)


def _apart(top: jax.Array, size: jax.Array, others_top: jax.Array, others_size: jax.Array) -> jax.Array:
    """minigrid's ``nonOverlap`` of each room ``top``/``size`` (``int32[A, 2]``) with each of ``others``
    (``int32[M, 2]``). Returns ``bool[A, M]``."""
    top, size = top[:, None], size[:, None]
    return (
        (top[..., 0] + size[..., 0] < others_top[:, 0])
        | (others_top[:, 0] + others_size[:, 0] <= top[..., 0])
        | (top[..., 1] + size[..., 1] < others_top[:, 1])
        | (others_top[:, 1] + others_size[:, 1] <= top[..., 1])
    )


def _first_room(x_word: jax.Array, y_word: jax.Array, max_size: int, width: int, height: int):
    """Returns ``(top, size)``, ``int32[2]`` each, of a first room drawn uniformly among those inside the world.

    minigrid draws the corner in ``[0, width - 2)^2`` and the sides in ``[4, max_size]`` and throws the whole
    chain away when the room is outside; the room's own draws decide that, so keeping only the rooms inside
    (uniform over the valid ``(x, size_x)`` and ``(y, size_y)`` pairs, which are independent) leaves the
    distribution of complete chains unchanged and fewer chains fail."""
    sides = np.arange(4, max_size + 1)[None, :]
    corners = np.arange(width - 2)[:, None]
    pick_x = P.choose_index(x_word, jnp.asarray(corners + sides <= width))
    pick_y = P.choose_index(y_word, jnp.asarray(corners + sides < height))
    top = jnp.stack([pick_x // sides.size, pick_y // sides.size])
    return top, jnp.stack([pick_x % sides.size, pick_y % sides.size]) + 4


def chain(words: jax.Array, num_rooms: int, max_size: int, width: int, height: int) -> Rooms:
    """One run of minigrid's room placement for up to ``num_rooms`` rooms from ``words``
    ``uint32[chain_words(num_rooms)]``, its first room inside the world (see ``_first_room``). Returns the
    ``Rooms``; ``count`` is the length of the chain (the rooms after a failed one are not placed)."""
    top, size = _first_room(words[0], words[1], max_size, width, height)
    tops, sizes, doors, entry_wall = [top], [size], [top], jnp.int32(2)
    alive, count = jnp.bool_(True), jnp.int32(1)
    attempt_words = words[2:].reshape(num_rooms - 1, ATTEMPTS, 2)
    for k in range(1, num_rooms):
        top, size, door, entry = _next_rooms(attempt_words[k - 1], tops[-1], sizes[-1], entry_wall, max_size)
        valid = _inside(top, size, width, height)
        if k >= 2:  # every room of the chain but the parent
            valid &= jnp.all(_apart(top, size, jnp.stack(tops[:-1]), jnp.stack(sizes[:-1])), axis=1)
        first = jnp.argmax(valid)
        alive &= jnp.any(valid)
        count += alive.astype(jnp.int32)
        tops.append(top[first])
        sizes.append(size[first])
        doors.append(door[first])
        entry_wall = entry[first]
    return Rooms(top=jnp.stack(tops), size=jnp.stack(sizes), door=jnp.stack(doors), count=count)


def chain_words(num_rooms: int) -> int:
    """Returns how many random words one ``chain`` uses."""
    return 2 + 2 * ATTEMPTS * (num_rooms - 1)


class MultiRoom(GridEnvironment):
    """``MiniGrid-MultiRoom-N<n>-*``: ``min_rooms`` to ``max_rooms`` rooms (uniform) of sides 4 to
    ``max_room_size``; ``max_steps`` is ``20 * max_rooms``. ``chains``: chains computed per reset (see the
    module docstring; default from ``CHAINS``)."""

    mission = "traverse the rooms to get to the goal"

    def __init__(
        self,
        min_rooms: int,
        max_rooms: int,
        max_room_size: int = 10,
        width: int = 25,
        height: int = 25,
        chains: int | None = None,
        **params,
    ):
        if not 0 < min_rooms <= max_rooms or max_room_size < 4:
            raise ValueError(f"bad MultiRoom configuration {min_rooms=}, {max_rooms=}, {max_room_size=}")
        self.min_rooms, self.max_rooms, self.max_room_size = min_rooms, max_rooms, max_room_size
        self.chains = CHAINS.get((max_rooms, max_room_size), DEFAULT_CHAINS) if chains is None else chains
        super().__init__(height=height, width=width, **{"max_steps": 20 * max_rooms, **params})

    def layout(self, key: jax.Array, params: GridParams) -> Rooms:
        """Returns the rooms of a level (its first ``count`` rooms are used): the first of ``chains`` chains
        that holds the level's number of rooms (or the first longest, when none does)."""
        k_rooms, k_chains = jax.random.split(key)
        num_rooms = P.randint(jax.random.bits(k_rooms, (), jnp.uint32), self.min_rooms, self.max_rooms + 1)
        words = jax.random.bits(k_chains, (self.chains, chain_words(self.max_rooms)), jnp.uint32)
        chains = jax.vmap(lambda w: chain(w, self.max_rooms, self.max_room_size, params.width, params.height))(words)
        length = jnp.minimum(chains.count, num_rooms)
        best = jnp.argmax(length)  # the first complete chain, else the first longest
        rooms = jax.tree_util.tree_map(lambda x: x[best], chains)
        return rooms.replace(count=length[best])

    def build(self, key: jax.Array, rooms: Rooms, params: GridParams):
        """Returns ``(grid, agent_pos, agent_dir, goal_pos)`` of the level with the rooms ``rooms``."""
        height, width = params.height, params.width
        k_agent, k_goal, *k_colors = jax.random.bits(key, (2 + self.max_rooms,), jnp.uint32)
        used = jnp.arange(self.max_rooms) < rooms.count
        ys = jnp.arange(height)[None, :, None]
        xs = jnp.arange(width)[None, None, :]
        x0, y0 = rooms.top[:, 0, None, None], rooms.top[:, 1, None, None]
        x1, y1 = x0 + rooms.size[:, 0, None, None] - 1, y0 + rooms.size[:, 1, None, None] - 1
        inside = (xs >= x0) & (xs <= x1) & (ys >= y0) & (ys <= y1)
        border = inside & ((xs == x0) | (xs == x1) | (ys == y0) | (ys == y1))
        walls = jnp.any(border & used[:, None, None], axis=0)
        grid = jnp.where(walls[..., None], jnp.asarray(C.WALL_CELL), jnp.asarray(C.EMPTY_CELL))
        color = jnp.int32(0)
        for r in range(1, self.max_rooms):
            # the first door's colour is uniform, each next one uniform among the other five
            color = P.below(k_colors[r], 6) if r == 1 else (color + 1 + P.below(k_colors[r], 5)) % 6
            door = jnp.stack([jnp.uint8(C.DOOR), color.astype(jnp.uint8), jnp.uint8(C.CLOSED), 0, 0]).astype(jnp.uint8)
            x, y = rooms.door[r, 0], rooms.door[r, 1]
            grid = grid.at[y, x].set(jnp.where(used[r], door, grid[y, x]))
        pos, direction = P.place_agent(k_agent, grid, inside[0])
        last = inside[jnp.maximum(rooms.count - 1, 0)]
        grid, goal = P.place(k_goal, grid, last & P.away_from(height, width, pos, 1), goal_cell())
        return grid, pos, direction, goal

    def level(self, key: jax.Array, params: GridParams) -> tuple[GridState, Rooms]:
        """Returns ``(state, rooms)``: the initial state of a new level and its rooms."""
        k_layout, k_build = jax.random.split(key)
        rooms = self.layout(k_layout, params)
        grid, pos, direction, goal = self.build(k_build, rooms, params)
        return make_state(grid, pos, direction, target_pos=goal), rooms

    def generate(self, key, params):
        return self.level(key, params)[0]


ENVS = {
    "MiniGrid-MultiRoom-N2-S4-v0": (MultiRoom, {"min_rooms": 2, "max_rooms": 2, "max_room_size": 4}),
    # minigrid registers its legacy N4-S5-v0 with six rooms
    "MiniGrid-MultiRoom-N4-S5-v0": (MultiRoom, {"min_rooms": 6, "max_rooms": 6, "max_room_size": 5}),
    "MiniGrid-MultiRoom-N4-S5-v1": (MultiRoom, {"min_rooms": 4, "max_rooms": 4, "max_room_size": 5}),
    "MiniGrid-MultiRoom-N6-v0": (MultiRoom, {"min_rooms": 6, "max_rooms": 6}),
}
