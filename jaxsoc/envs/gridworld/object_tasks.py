"""MiniGrid's single-room object tasks whose mission varies with the level, with the rules of minigrid 3.2.0's
``minigrid/envs/{fetch,gotodoor,gotoobject,putnear,redbluedoors}.py``.

Each task ends by its own rule rather than on a goal tile: Fetch by picking something up (the described
object succeeds, any other fails), GoToDoor and GoToObject by ``done`` beside the target (``toggle`` or ``done``
elsewhere fails), PutNear by dropping the described object next to the target (picking up another object
or dropping anywhere else fails), RedBlueDoors by opening the blue door (after the red one succeeds,
before it fails). Their missions are observed as ``mission`` tokens (``GridEnvironment.mission_observation``).
Levels are drawn with minigrid's distributions (rejection samplers become uniform draws over masks); the
random streams differ.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld import mission as M
from jaxsoc.envs.gridworld import placement as P
from jaxsoc.envs.gridworld.classic import walled_grid
from jaxsoc.envs.gridworld.compat import grid_params_from_minigrid, grid_state_from_minigrid
from jaxsoc.envs.gridworld.dynamics import Transition
from jaxsoc.envs.gridworld.env import GridEnvironment
from jaxsoc.envs.gridworld.state import GridState, make_state

#: Fetch's five phrasings, in minigrid's order
FETCH_SYNTAX = ("get a", "go get a", "fetch a", "go fetch a", "you must fetch a")
#: the object types GoToObject and PutNear draw (Fetch draws the first two)
OBJECT_TYPES = (C.KEY, C.BALL, C.BOX)


@struct.dataclass
class FetchState(GridState):
    """A Fetch world; ``target_obj`` is the described ``(type, colour)``.

    Attributes:
        syntax: ``int32[]``, the index of the mission's phrasing in ``FETCH_SYNTAX``.
    """

    syntax: jax.Array


@struct.dataclass
class PutNearState(GridState):
    """A PutNear world; ``target_obj``/``target_pos`` are the object to put the other one near.

    Attributes:
        move_obj: ``uint8[2]``, ``(type, colour)`` of the object to move.
    """

    move_obj: jax.Array


@struct.dataclass
class RedBlueState(GridState):
    """A RedBlueDoors world; ``target_pos`` is the blue door.

    Attributes:
        red_pos: ``int32[2]``, ``(x, y)`` of the red door.
    """

    red_pos: jax.Array


def object_cell(kind: jax.Array, color: jax.Array, state: int = 0) -> jax.Array:
    """Returns the grid cell ``uint8[NUM_CHANNELS]`` of an object of traced ``kind`` and ``color``."""
    zero = jnp.uint8(0)
    return jnp.stack([jnp.asarray(kind, jnp.uint8), jnp.asarray(color, jnp.uint8), jnp.uint8(state), zero, zero])


def distinct_draws(words: jax.Array, n: int) -> jax.Array:
    """Returns ``int32[k]``: ``k = len(words)`` distinct values of ``[0, n)``, each uniform among those not
    drawn before (minigrid's "draw again if already taken" loops), one ``uint32`` word each."""
    taken = jnp.zeros(n, bool)
    out = []
    for word in words:
        value = P.choose_index(word, ~taken)
        taken = taken.at[value].set(True)
        out.append(value)
    return jnp.stack(out)


def not_near(height: int, width: int, pos: jax.Array) -> jax.Array:
    """Returns ``bool[H, W]``, True where a cell is not ``pos`` nor one of its 8 neighbours (PutNear's
    ``near_obj`` rejection)."""
    ys = jnp.arange(height)[:, None]
    xs = jnp.arange(width)[None, :]
    return jnp.maximum(jnp.abs(xs - pos[0]), jnp.abs(ys - pos[1])) > 1


def place_objects(
    words: jax.Array, grid: jax.Array, kinds: jax.Array, colors: jax.Array, spread: bool = False
) -> tuple[jax.Array, jax.Array]:
    """Places objects one after the other, each on a uniform empty cell (with ``spread``, also away from the
    8-neighbourhood of the ones placed before). Returns ``(grid, positions int32[N, 2])``."""
    height, width = grid.shape[:2]
    allowed = jnp.ones((height, width), bool)
    positions = []
    for i, word in enumerate(words):
        grid, pos = P.place(word, grid, allowed, object_cell(kinds[i], colors[i]))
        if spread:
            allowed = allowed & not_near(height, width, pos)
        positions.append(pos)
    return grid, jnp.stack(positions)


def _adjacent(a: jax.Array, b: jax.Array) -> jax.Array:
    """True when ``a`` and ``b`` (``int32[2]``) are 4-neighbours."""
    return jnp.sum(jnp.abs(a - b)) == 1


def _kind_color(name: str, color: str) -> tuple[int, int]:
    return C.OBJECT_TO_IDX[name], C.COLOR_TO_IDX[color]


class Fetch(GridEnvironment):
    """``MiniGrid-Fetch-*``: ``num_objs`` keys and balls of random colours (repeats allowed); pick up one
    matching the mission. Picking up any other object ends the episode with 0."""

    mission_observation = True

    def __init__(self, size: int = 8, num_objs: int = 3, **params):
        self.num_objs = num_objs
        params = {"max_steps": 5 * size**2, "see_through_walls": True, **params}
        super().__init__(height=size, width=size, **params)

    def generate(self, key, params):
        n = self.num_objs
        words = jax.random.bits(key, (3 * n + 3,), jnp.uint32)
        kinds = C.KEY + P.below(words[:n], 2)
        colors = P.below(words[n : 2 * n], C.NUM_COLORS)
        grid = jnp.asarray(walled_grid(params.height, params.width))
        grid, _ = place_objects(words[2 * n : 3 * n], grid, kinds, colors)
        pos, direction = P.place_agent(words[3 * n], grid, jnp.ones(grid.shape[:2], bool))
        target = P.below(words[3 * n + 1], n)
        state = make_state(grid, pos, direction, target_obj=jnp.stack([kinds[target], colors[target]]))
        return FetchState(**vars(state), syntax=P.below(words[3 * n + 2], len(FETCH_SYNTAX)))

    def task_outcome(self, state, action, moved: Transition, params):
        holding = state.carrying[C.TYPE] != C.EMPTY
        match = jnp.all(state.carrying[: C.COLOR + 1] == state.target_obj)
        return holding & match, holding & ~match

    def mission_tokens(self, state, params=None):
        kind, color = M.type_word(state.target_obj[0]), M.color_word(state.target_obj[1])
        phrasings = jnp.stack([M.compose(syntax, color, kind) for syntax in FETCH_SYNTAX])
        return phrasings[state.syntax]

    def import_minigrid(self, env):
        u = env.unwrapped
        state = grid_state_from_minigrid(env)
        target = jnp.array(_kind_color(u.targetType, u.targetColor), jnp.uint8)
        syntax = FETCH_SYNTAX.index(u.mission.rsplit(" ", 2)[0])
        state = FetchState(**vars(state.replace(target_obj=target)), syntax=jnp.int32(syntax))
        return state, grid_params_from_minigrid(env)


class _GoTo(GridEnvironment):
    """The GoTo rule: ``done`` on a cell 4-adjacent to ``target_pos`` succeeds; ``done`` elsewhere or
    ``toggle`` (which still acts) ends the episode with 0."""

    mission_observation = True

    def task_outcome(self, state, action, moved: Transition, params):
        done = action == C.DONE
        near = _adjacent(state.agent_pos, state.target_pos)
        return done & near, (action == C.TOGGLE) | (done & ~near)

    def mission_tokens(self, state, params=None):
        return M.compose("go to the", M.color_word(state.target_obj[1]), M.type_word(state.target_obj[0]))

    def import_minigrid(self, env):
        u = env.unwrapped
        kind = getattr(u, "targetType", "door")
        state = grid_state_from_minigrid(env).replace(
            target_pos=jnp.asarray(u.target_pos, jnp.int32),
            target_obj=jnp.array(_kind_color(kind, u.target_color), jnp.uint8),
        )
        return state, grid_params_from_minigrid(env)


class GoToDoor(_GoTo):
    """``MiniGrid-GoToDoor-*``: a walled room of random size (5 to ``size`` cells a side) in the top-left of
    the grid, one closed door of a distinct colour in each wall; go next to the described one."""

    def __init__(self, size: int = 5, **params):
        params = {"max_steps": 4 * size**2, "see_through_walls": True, **params}
        super().__init__(height=size, width=size, **params)

    def generate(self, key, params):
        size_h, size_w = params.height, params.width
        words = jax.random.bits(key, (12,), jnp.uint32)
        width, height = P.randint(words[0], 5, size_w + 1), P.randint(words[1], 5, size_h + 1)
        room = P.rect_mask(size_h, size_w, 0, 0, width, height)
        inner = P.rect_mask(size_h, size_w, 1, 1, width - 2, height - 2)
        grid = jnp.where((room & ~inner)[..., None], jnp.asarray(C.WALL_CELL), jnp.asarray(C.EMPTY_CELL))
        along = P.randint(words[2:6], 2, jnp.stack([width, width, height, height]) - 2)
        zero = jnp.int32(0)
        doors = jnp.stack(
            [
                jnp.stack([along[0], zero]),
                jnp.stack([along[1], height - 1]),
                jnp.stack([zero, along[2]]),
                jnp.stack([width - 1, along[3]]),
            ]
        )
        colors = distinct_draws(words[6:10], C.NUM_COLORS)
        cells = jax.vmap(lambda c: object_cell(C.DOOR, c, C.CLOSED))(colors)
        grid = grid.at[doors[:, 1], doors[:, 0]].set(cells)
        pos, direction = P.place_agent(words[10], grid, room)
        target = P.below(words[11], 4)
        target_obj = jnp.stack([jnp.int32(C.DOOR), colors[target]])
        return make_state(grid, pos, direction, target_pos=doors[target], target_obj=target_obj)


class GoToObject(_GoTo):
    """``MiniGrid-GoToObject-*``: ``num_objs`` distinct (type, colour) keys, balls and boxes; go next to the
    described one (its start cell counts, even if it has been moved)."""

    def __init__(self, size: int = 6, num_objs: int = 2, **params):
        self.num_objs = num_objs
        params = {"max_steps": 5 * size**2, "see_through_walls": True, **params}
        super().__init__(height=size, width=size, **params)

    def generate(self, key, params):
        n = self.num_objs
        words = jax.random.bits(key, (2 * n + 2,), jnp.uint32)
        kinds, colors = _distinct_objects(words[:n])
        grid = jnp.asarray(walled_grid(params.height, params.width))
        grid, positions = place_objects(words[n : 2 * n], grid, kinds, colors)
        pos, direction = P.place_agent(words[2 * n], grid, jnp.ones(grid.shape[:2], bool))
        target = P.below(words[2 * n + 1], n)
        target_obj = jnp.stack([kinds[target], colors[target]])
        return make_state(grid, pos, direction, target_pos=positions[target], target_obj=target_obj)


def _distinct_objects(words: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Returns ``(kinds, colors)``, ``int32[N]`` each: distinct (type, colour) pairs of keys, balls and boxes,
    each uniform among the pairs not drawn before."""
    pairs = distinct_draws(words, len(OBJECT_TYPES) * C.NUM_COLORS)
    return jnp.asarray(np.array(OBJECT_TYPES))[pairs // C.NUM_COLORS], pairs % C.NUM_COLORS


class PutNear(GridEnvironment):
    """``MiniGrid-PutNear-*``: ``num_objs`` distinct objects, none in another's 8-neighbourhood; put the
    described one on a cell in the 8-neighbourhood of the target's start cell. Picking up another object, or
    any drop while carrying (a blocked one included), ends the episode."""

    mission_observation = True

    def __init__(self, size: int = 6, num_objs: int = 2, **params):
        self.num_objs = num_objs
        params = {"max_steps": 5 * size, "see_through_walls": True, **params}
        super().__init__(height=size, width=size, **params)

    def generate(self, key, params):
        n = self.num_objs
        words = jax.random.bits(key, (2 * n + 3,), jnp.uint32)
        kinds, colors = _distinct_objects(words[:n])
        grid = jnp.asarray(walled_grid(params.height, params.width))
        grid, positions = place_objects(words[n : 2 * n], grid, kinds, colors, spread=True)
        pos, direction = P.place_agent(words[2 * n], grid, jnp.ones(grid.shape[:2], bool))
        move = P.below(words[2 * n + 1], n)
        target = P.below(words[2 * n + 2], n - 1)
        target = target + (target >= move)
        state = make_state(
            grid,
            pos,
            direction,
            target_pos=positions[target],
            target_obj=jnp.stack([kinds[target], colors[target]]),
        )
        return PutNearState(**vars(state), move_obj=jnp.stack([kinds[move], colors[move]]).astype(jnp.uint8))

    def task_outcome(self, state, action, moved: Transition, params):
        holding = state.carrying[C.TYPE] != C.EMPTY
        wrong = holding & ~jnp.all(state.carrying[: C.COLOR + 1] == state.move_obj)
        near = jnp.max(jnp.abs(moved.front_pos - state.target_pos)) <= 1
        success = moved.dropped & near
        held_before = holding | moved.dropped
        failure = ((action == C.PICKUP) & wrong) | ((action == C.DROP) & held_before & ~success)
        return success, failure

    def mission_tokens(self, state, params=None):
        move, target = state.move_obj, state.target_obj
        return M.compose(
            "put the",
            M.color_word(move[1]),
            M.type_word(move[0]),
            "near the",
            M.color_word(target[1]),
            M.type_word(target[0]),
        )

    def import_minigrid(self, env):
        u = env.unwrapped
        state = grid_state_from_minigrid(env).replace(
            target_pos=jnp.asarray(u.target_pos, jnp.int32),
            target_obj=jnp.array(_kind_color(u.target_type, u.target_color), jnp.uint8),
        )
        move = jnp.array(_kind_color(u.move_type, u.moveColor), jnp.uint8)
        return PutNearState(**vars(state), move_obj=move), grid_params_from_minigrid(env)


class RedBlueDoors(GridEnvironment):
    """``MiniGrid-RedBlueDoors-*``: a ``size``-wide room in the middle of a ``2 * size`` by ``size`` grid, a
    red door in its left wall and a blue one in its right wall; open the red door, then the blue one.
    Opening the blue door first (or reopening the red one while the blue one is open) ends the episode
    with 0."""

    mission = "open the red door then the blue door"

    def __init__(self, size: int = 8, **params):
        self.size = size
        super().__init__(height=size, width=2 * size, **{"max_steps": 20 * size**2, **params})

    def generate(self, key, params):
        size, left = self.size, self.size // 2
        right = left + size - 1
        words = jax.random.bits(key, (3,), jnp.uint32)
        grid = walled_grid(params.height, params.width)
        grid[:, [left, right]] = C.WALL_CELL
        grid = jnp.asarray(grid)
        pos, direction = P.place_agent(words[0], grid, P.rect_mask(params.height, params.width, left, 0, size, size))
        red = jnp.stack([jnp.int32(left), P.randint(words[1], 1, size - 1)])
        blue = jnp.stack([jnp.int32(right), P.randint(words[2], 1, size - 1)])
        grid = P.put(grid, red, C.cell(C.DOOR, C.RED, C.CLOSED))
        grid = P.put(grid, blue, C.cell(C.DOOR, C.BLUE, C.CLOSED))
        return RedBlueState(**vars(make_state(grid, pos, direction, target_pos=blue)), red_pos=red)

    def task_outcome(self, state, action, moved: Transition, params):
        def is_open(pos):
            after = state.grid[pos[1], pos[0], C.STATE] == C.OPEN
            before = jnp.where(jnp.all(moved.front_pos == pos), moved.front_before[C.STATE] == C.OPEN, after)
            return before, after

        red_before, red_after = is_open(state.red_pos)
        blue_before, blue_after = is_open(state.target_pos)
        success = blue_after & red_before
        failure = (blue_after & ~red_before) | (~blue_after & red_after & blue_before)
        return success, failure

    def import_minigrid(self, env):
        u = env.unwrapped
        where = {id(u.grid.get(x, y)): (x, y) for x in range(u.grid.width) for y in range(u.grid.height)}
        state = grid_state_from_minigrid(env).replace(target_pos=jnp.asarray(where[id(u.blue_door)], jnp.int32))
        state = RedBlueState(**vars(state), red_pos=jnp.asarray(where[id(u.red_door)], jnp.int32))
        return state, grid_params_from_minigrid(env)


ENVS = {
    "MiniGrid-Fetch-5x5-N2-v0": (Fetch, {"size": 5, "num_objs": 2}),
    "MiniGrid-Fetch-6x6-N2-v0": (Fetch, {"size": 6, "num_objs": 2}),
    "MiniGrid-Fetch-8x8-N3-v0": (Fetch, {"size": 8, "num_objs": 3}),
    **{f"MiniGrid-GoToDoor-{n}x{n}-v0": (GoToDoor, {"size": n}) for n in (5, 6, 8)},
    "MiniGrid-GoToObject-6x6-N2-v0": (GoToObject, {"size": 6, "num_objs": 2}),
    "MiniGrid-GoToObject-8x8-N2-v0": (GoToObject, {"size": 8, "num_objs": 2}),
    "MiniGrid-PutNear-6x6-N2-v0": (PutNear, {"size": 6, "num_objs": 2}),
    "MiniGrid-PutNear-8x8-N3-v0": (PutNear, {"size": 8, "num_objs": 3}),
    **{f"MiniGrid-RedBlueDoors-{n}x{n}-v0": (RedBlueDoors, {"size": n}) for n in (6, 8)},
}
