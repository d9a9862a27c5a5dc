"""EXCALIBUR's dynamics: one step of the four-phase episode, branch-free (every phase's update is computed and the
current phase's is selected).

- **Exploration phases** (I, III): the MiniGrid moves (``LEFT``, ``RIGHT``, ``FORWARD`` onto a free floor cell),
  ``PICKUP``, ``DROP``, ``TOGGLE`` and ``STOP`` act on the cell in front (``state`` module docstring). A phase ends
  on ``STOP`` or when its budget of steps is spent.
- **Answer phases** (II, IV): step ``k`` answers question ``k``: an ``ANSWER + a`` action gives answer ``a``, any
  other action gives none (wrong). The phase lasts ``num_questions`` steps (one step when a house has none).
- Phase III starts from the house as generated: the agent back at its spawn pose, every object where it was,
  every container closed, nothing held. What the agent learnt in phase I is only in its own memory.

Everything an exploration phase does is recorded in ``state.tracks`` (visited cells, objects seen, lifted and
touched, steps, the step of the first touch) for the metrics of ``metrics``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.core.env import _select_tree
from jaxsoc.envs.excalibur import catalogue as K
from jaxsoc.envs.excalibur import state as S
from jaxsoc.envs.gridworld import constants as GC
from jaxsoc.envs.gridworld.observation import process_vis, view_coordinates

_DIR_TO_VEC = GC.DIR_TO_VEC
_IS_PICKUP = K.IS_PICKUP
_IS_FURNITURE = K.IS_FURNITURE
_IS_SURFACE = K.IS_SURFACE
_IS_CONTAINER = K.IS_CONTAINER
_IS_OPENABLE = K.IS_OPENABLE


def _table(values: np.ndarray, types: jax.Array) -> jax.Array:
    return jnp.asarray(values)[types.astype(jnp.int32)]


def empty_tracks(height: int, width: int, num_objects: int) -> S.Tracks:
    """Returns the ``Tracks`` of phases I and III before they start (leading axis 2)."""
    return S.Tracks(
        visited=jnp.zeros((2, height, width), bool),
        viewed=jnp.zeros((2, height, width), bool),
        seen=jnp.zeros((2, num_objects), bool),
        lifted=jnp.zeros((2, num_objects), bool),
        touched=jnp.zeros((2, num_objects), bool),
        steps=jnp.zeros(2, jnp.int32),
        first_touch=jnp.full(2, -1, jnp.int32),
    )


def initial_state(house: S.House, view_size: int = 7) -> S.State:
    """Returns the ``State`` at the start of phase I in ``house``: the agent at its spawn pose, the objects as
    generated, every container closed; what the agent sees from there is already recorded as seen."""
    return _record_view(_as_generated(house), jnp.int32(0), view_size)


def _as_generated(house: S.House) -> S.State:
    """Returns the ``State`` of ``house`` as generated, in phase I, with empty tracks and no answers."""
    height, width = house.walls.shape
    num_objects = house.valid.shape[0]
    return S.State(
        house=house,
        agent_pos=house.spawn_pos.astype(jnp.int32),
        agent_dir=house.spawn_dir.astype(jnp.int32),
        held=jnp.int32(-1),
        cell=house.cell,
        parent=house.parent,
        link=house.link,
        order=house.order,
        is_open=jnp.zeros(num_objects, bool),
        next_order=jnp.int32(num_objects),
        phase=jnp.int32(S.EXPLORE),
        phase_step=jnp.int32(0),
        step=jnp.int32(0),
        tracks=empty_tracks(height, width, num_objects),
        given=jnp.full((2, house.questions.shape[0]), -1, jnp.int16),
        knowledge=jnp.zeros(2, jnp.float32),
    )


def reenter(state: S.State, view_size: int = 7) -> S.State:
    """Returns ``state`` at the start of phase III: the house as generated again, the agent at its spawn pose;
    tracks and answers are kept."""
    fresh = _as_generated(state.house)
    state = fresh.replace(
        tracks=state.tracks, given=state.given, step=state.step, phase=jnp.int32(S.REENTER), knowledge=state.knowledge
    )
    return _record_view(state, jnp.int32(1), view_size)


# -- what is where -----------------------------------------------------------------------------------------------


def front_pos(state: S.State) -> jax.Array:
    """Returns ``int32[2]``, the ``(x, y)`` of the cell the agent faces."""
    return state.agent_pos + jnp.asarray(_DIR_TO_VEC)[state.agent_dir]


def accessible(state: S.State) -> jax.Array:
    """Returns ``bool[N]``: valid objects not enclosed by a closed openable container (up to two levels up) and not
    held."""
    house = state.house
    openable = _table(_IS_OPENABLE, house.type)
    parent = state.parent.astype(jnp.int32)
    safe_parent = jnp.maximum(parent, 0)
    closed_in = (state.link == S.IN) & (parent >= 0) & openable[safe_parent] & ~state.is_open[safe_parent]
    grand_closed = (parent >= 0) & closed_in[safe_parent]
    held = jnp.arange(parent.shape[0]) == state.held
    return house.valid & ~closed_in & ~grand_closed & ~held


def _at(state: S.State, pos: jax.Array) -> jax.Array:
    """Returns ``bool[N]``: valid objects in cell ``pos`` (not the held one)."""
    return (
        state.house.valid
        & (state.cell[:, 0] == pos[0])
        & (state.cell[:, 1] == pos[1])
        & (jnp.arange(state.cell.shape[0]) != state.held)
    )


def _first(mask: jax.Array, key: jax.Array) -> jax.Array:
    """Returns ``int32``: the index of the True entry of ``mask`` with the smallest ``key``, -1 for none."""
    big = jnp.iinfo(jnp.int32).max
    index = jnp.argmin(jnp.where(mask, key, big)).astype(jnp.int32)
    return jnp.where(mask.any(), index, -1)


def occupant(state: S.State, pos: jax.Array) -> jax.Array:
    """Returns ``int32``: the furniture or floor item standing in cell ``pos`` (-1 for none)."""
    return _first(_at(state, pos) & (state.link == S.FLOOR), state.order)


def is_free(state: S.State, pos: jax.Array) -> jax.Array:
    """Returns ``bool``: ``pos`` is inside the house, not a wall and holds no furniture or floor item."""
    height, width = state.house.walls.shape
    inside = (pos[0] >= 0) & (pos[0] < width) & (pos[1] >= 0) & (pos[1] < height)
    wall = state.house.walls[jnp.clip(pos[1], 0, height - 1), jnp.clip(pos[0], 0, width - 1)]
    return inside & ~wall & (occupant(state, pos) < 0)


def pickable(state: S.State, pos: jax.Array) -> jax.Array:
    """Returns ``bool[N]``: items in ``pos`` the agent can pick up: reachable, and nothing on or in them."""
    house = state.house
    num = house.valid.shape[0]
    parent = jnp.where(house.valid & (jnp.arange(num) != state.held), state.parent.astype(jnp.int32), -1)
    has_child = jnp.zeros(num + 1, bool).at[jnp.where(parent >= 0, parent, num)].set(True)[:num]
    return _at(state, pos) & accessible(state) & _table(_IS_PICKUP, house.type) & ~has_child


# -- the exploration step ------------------------------------------------------------------------------------------


def _touch(tracks: S.Tracks, phase: jax.Array, objects: jax.Array, lifted: jax.Array) -> S.Tracks:
    """Returns ``tracks`` with ``objects`` (bool[N]) touched (and lifted where ``lifted``) in exploration phase
    ``phase`` (0 or 1); the first touch is stamped with that phase's step count."""
    touched = tracks.touched[phase] | objects
    first = jnp.where((tracks.first_touch[phase] < 0) & objects.any(), tracks.steps[phase], tracks.first_touch[phase])
    return tracks.replace(
        touched=tracks.touched.at[phase].set(touched),
        lifted=tracks.lifted.at[phase].set(tracks.lifted[phase] | (objects & lifted)),
        first_touch=tracks.first_touch.at[phase].set(first),
    )


def explore_step(state: S.State, action: jax.Array) -> S.State:
    """Returns the state after one exploration-phase action (``STOP`` and answers change nothing here: the phase
    logic of ``step`` handles them). Tracks of the current exploration phase are updated, not its step count."""
    house = state.house
    num = house.valid.shape[0]
    slot = jnp.arange(num)
    track = (state.phase == S.REENTER).astype(jnp.int32)
    ahead = front_pos(state)

    # moves
    agent_dir = jnp.where(action == S.LEFT, (state.agent_dir + 3) % 4, state.agent_dir)
    agent_dir = jnp.where(action == S.RIGHT, (state.agent_dir + 1) % 4, agent_dir)
    move = (action == S.FORWARD) & is_free(state, ahead)
    agent_pos = jnp.where(move, ahead, state.agent_pos)

    # pick up: the front cell's first pickable item in the cell's order
    picked = _first(pickable(state, ahead), state.order)
    pick = (action == S.PICKUP) & (state.held < 0) & (picked >= 0)

    # drop: on/into the furniture or floor item in front, or onto a free floor cell
    target = occupant(state, ahead)
    safe_target = jnp.maximum(target, 0)
    target_type = house.type[safe_target]
    surface = (target >= 0) & _table(_IS_SURFACE, target_type)
    container = (
        (target >= 0)
        & _table(_IS_CONTAINER, target_type)
        & (~_table(_IS_OPENABLE, target_type) | state.is_open[safe_target])
    )
    floor = is_free(state, ahead)
    drop = (action == S.DROP) & (state.held >= 0) & (surface | container | floor)
    drop_link = jnp.where(surface, S.ON, jnp.where(container, S.IN, S.FLOOR)).astype(state.link.dtype)
    drop_parent = jnp.where(surface | container, target, -1).astype(state.parent.dtype)
    is_held = slot == state.held
    dropped = drop & is_held
    cell = jnp.where(dropped[:, None], ahead.astype(state.cell.dtype), state.cell)
    parent = jnp.where(dropped, drop_parent, state.parent)
    link = jnp.where(dropped, drop_link, state.link)
    order = jnp.where(dropped, state.next_order, state.order)
    next_order = state.next_order + drop.astype(jnp.int32)
    # a picked item leaves its parent
    picked_mask = pick & (slot == picked)
    parent = jnp.where(picked_mask, jnp.asarray(S.NO_PARENT, parent.dtype), parent)
    link = jnp.where(picked_mask, jnp.asarray(S.FLOOR, link.dtype), link)
    held = jnp.where(pick, picked, jnp.where(drop, -1, state.held))

    # open / close the openable furniture in front
    toggled = (action == S.TOGGLE) & (target >= 0) & _table(_IS_OPENABLE, target_type)
    is_open = state.is_open ^ (toggled & (slot == target))

    touched = picked_mask | (drop & (is_held | (slot == target))) | (toggled & (slot == target))
    tracks = _touch(state.tracks, track, touched, picked_mask)
    return state.replace(
        agent_pos=agent_pos,
        agent_dir=agent_dir,
        held=held,
        cell=cell,
        parent=parent,
        link=link,
        order=order,
        is_open=is_open,
        next_order=next_order,
        tracks=tracks,
    )


# -- what the agent sees --------------------------------------------------------------------------------------


def view_cells(state: S.State, view_size: int) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """Returns ``(x, y, inside, visible)``, each ``[V, V]`` indexed ``[i, j]`` as the grid engine's view: the world
    cell of each view cell, whether it lies inside the house, and whether it is visible (walls occlude, as
    MiniGrid's ``process_vis``)."""
    height, width = state.house.walls.shape
    x, y = view_coordinates(state.agent_pos, state.agent_dir, view_size)
    inside = (x >= 0) & (x < width) & (y >= 0) & (y < height)
    wall = ~inside | state.house.walls[jnp.clip(y, 0, height - 1), jnp.clip(x, 0, width - 1)]
    return x, y, inside, process_vis(wall)


def visible_cells(state: S.State, view_size: int) -> jax.Array:
    """Returns ``bool[H, W]``: the cells in view now."""
    height, width = state.house.walls.shape
    x, y, inside, visible = view_cells(state, view_size)
    flat = jnp.where(inside & visible, y * width + x, height * width)
    return jnp.zeros(height * width + 1, bool).at[flat.reshape(-1)].set(True)[:-1].reshape(height, width)


def visible_objects(state: S.State, view_size: int, cells: jax.Array | None = None) -> jax.Array:
    """Returns ``bool[N]``: objects seen now: reachable ones in a visible cell, and the held one (``cells``:
    ``visible_cells`` when already computed)."""
    cells = visible_cells(state, view_size) if cells is None else cells
    in_view = cells[state.cell[:, 1].astype(jnp.int32), state.cell[:, 0].astype(jnp.int32)]
    held = jnp.arange(state.cell.shape[0]) == state.held
    return (accessible(state) & in_view) | (held & state.house.valid)


def _record_view(state: S.State, track: jax.Array, view_size: int) -> S.State:
    """Returns ``state`` with the agent's cell visited and the cells and objects it sees now viewed and seen in
    tracks ``track``."""
    tracks = state.tracks
    cells = visible_cells(state, view_size)
    seen = tracks.seen[track] | visible_objects(state, view_size, cells)
    viewed = tracks.viewed[track] | cells
    visited = tracks.visited[track].at[state.agent_pos[1], state.agent_pos[0]].set(True)
    return state.replace(
        tracks=tracks.replace(
            seen=tracks.seen.at[track].set(seen),
            viewed=tracks.viewed.at[track].set(viewed),
            visited=tracks.visited.at[track].set(visited),
        )
    )


# -- the full step ---------------------------------------------------------------------------------------------------


def novelty(tracks: S.Tracks, track: jax.Array, house: S.House) -> jax.Array:
    """Returns ``float32``: the novelty measure of exploration phase ``track`` whose increments the novelty reward
    pays: the mean of the fractions of objects seen, of objects touched and of the house's free floor cells
    visited (each in [0, 1])."""
    num_valid = jnp.maximum(house.valid.sum(), 1).astype(jnp.float32)
    floor = jnp.maximum((~house.walls).sum(), 1).astype(jnp.float32)
    seen = (tracks.seen[track] & house.valid).sum() / num_valid
    touched = (tracks.touched[track] & house.valid).sum() / num_valid
    visited = tracks.visited[track].sum() / floor
    return ((seen + touched + visited) / 3.0).astype(jnp.float32)


def step(
    state: S.State,
    action: jax.Array,
    explore_budget: jax.Array,
    reenter_budget: jax.Array,
    view_size: int = 7,
) -> tuple[S.State, dict]:
    """Returns ``(state, out)`` after one action; ``out`` holds ``correct`` (bool: an answer step answered right),
    ``answered`` (bool: an answer step), ``novelty`` (float32: the increase of ``novelty`` in an exploration phase)
    and ``done`` (bool: phase IV's last answer was given)."""
    action = jnp.asarray(action, jnp.int32)
    phase = state.phase
    exploring = (phase == S.EXPLORE) | (phase == S.REENTER)
    answering = ~exploring
    track = (phase == S.REENTER).astype(jnp.int32)

    # exploration
    before = novelty(state.tracks, track, state.house)
    moved = explore_step(state, action)
    moved = moved.replace(tracks=moved.tracks.replace(steps=moved.tracks.steps.at[track].add(1)))
    moved = _record_view(moved, track, view_size)
    gain = novelty(moved.tracks, track, state.house) - before
    budget = jnp.where(phase == S.EXPLORE, explore_budget, reenter_budget)
    phase_over = (action == S.STOP) | (state.phase_step + 1 >= budget)

    # answering
    num_q = state.house.num_questions
    k = jnp.clip(state.phase_step, 0, state.given.shape[1] - 1)
    given = jnp.where(action >= S.ANSWER, action - S.ANSWER, -1).astype(jnp.int16)
    has_q = state.phase_step < num_q
    answer_row = (phase == S.ANSWER_AGAIN).astype(jnp.int32)
    new_given = state.given.at[answer_row, k].set(jnp.where(has_q, given, state.given[answer_row, k]))
    correct = answering & has_q & (given == state.house.answers[k])
    answers_over = state.phase_step + 1 >= jnp.maximum(num_q, 1)

    stepped = _select_tree(exploring, moved, state.replace(given=new_given))
    over = jnp.where(exploring, phase_over, answers_over)
    next_phase = jnp.where(over, phase + 1, phase)
    stepped = stepped.replace(
        phase=next_phase, phase_step=jnp.where(over, 0, state.phase_step + 1), step=state.step + 1
    )
    # phase III starts from the house as generated
    stepped = _select_tree((phase == S.ANSWER_FIRST) & over, reenter(stepped, view_size), stepped)
    done = (phase == S.ANSWER_AGAIN) & over
    stepped = stepped.replace(phase=jnp.minimum(stepped.phase, S.ANSWER_AGAIN))
    out = {"correct": correct, "answered": answering & has_q, "novelty": jnp.where(exploring, gain, 0.0), "done": done}
    return stepped, out


def accuracy(state: S.State, row: int) -> jax.Array:
    """Returns ``float32``: the fraction of the house's questions answered right in phase II (``row`` 0) or IV
    (``row`` 1); 0 for a house without questions."""
    num_q = state.house.num_questions
    rows = jnp.arange(state.given.shape[1]) < num_q
    right = (state.given[row] == state.house.answers) & rows
    return (right.sum() / jnp.maximum(num_q, 1)).astype(jnp.float32)
