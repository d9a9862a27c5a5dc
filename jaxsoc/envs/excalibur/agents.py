"""Scripted EXCALIBUR players as pure, jittable and vmappable policies: the oracle explorer (jaxsoc's stand-in for
the paper's human players) and the random explorer.

**Protocol** (as the other families' agents): ``agent.init(key, state) -> memory`` and ``agent.act(key, memory,
state) -> (action int32, memory)``, both pure (no Python control flow on data, no data-dependent loop) and
vmappable over episodes; ``state`` is the env's privileged ``state.State``. Agents are ``flax.struct`` nodes whose
settings are static fields, so they can be passed through ``jax.jit`` (``play.rollout`` does).

**Answering** (phases II and IV, shared by both explorers: ``answer_action``): the agent answers the question
being asked (``house.questions[phase_step]``) from what it saw: ``questions.answer`` with ``known = (seen,
lifted)``, the unions of ``state.tracks.seen`` / ``state.tracks.lifted`` over the exploration phases so far (the
phase III row is empty until phase III). Objects it never saw are absent to it and masses it never felt leave
heavier/lighter unknown. When that knowledge gives no valid answer it guesses a fixed default of the family's
answer kind (``DEFAULT_ANSWER``): "no" for yes/no families, "0" for counts, the first colour / material / type of
the vocabulary. So the answers read the tracks (what the env recorded as seen and lifted), the house's questions
and the house's true attributes of the known objects — exactly what a player that memorised everything it saw
would know.

**OracleExplorer** (phase I): a systematic explorer with privileged knowledge of the layout. It visits every
*standing* object (furniture and floor items: ``valid & link == FLOOR``, not held), opens every closed openable
one (``TOGGLE``), and lifts every reachable item of the object's cell (``PICKUP`` then ``DROP`` back in front:
``world.PICKUP`` takes the cell's first pickable item in ``order`` and a drop sends it to the back, so pick/drop
cycles through the cell's items; an item that had something on or in it becomes pickable once that was moved).
An object is *processed* once it and every reachable object of its cell have been seen, it is open (if
openable), nothing is held, and every reachable pick-up-able object of its cell was lifted in this phase
(``tracks.lifted``); or once the oracle spent ``2 * (objects in the cell) + 4`` interactions on it (a guard
against an item that can never be lifted: fixed work). When every standing object is processed it ``STOP``s.

It reads, privileged: the walls, every object's cell / link / type / validity, ``held``, ``is_open``, its own pose
and the current phase's tracks (seen, lifted). Navigation plans on the true layout: free floor cells are those
``world.is_free`` allows (no wall, no furniture or floor item standing there; ``free_cells`` for the whole grid);
the goals are the free cells 4-adjacent to an unprocessed standing object; a breadth-first distance to them is
computed every step with a static number of rounds (``rounds``, default ``H * W - 1``: always enough, the
distance is below the number of cells; rows are packed into ``uint32`` words when ``W <= 32``, so a round costs a
few operations on ``H`` words). It moves greedily: turn toward the neighbour of least distance (the one ahead on
ties), ``FORWARD`` when facing it; on a goal cell it turns to face the unprocessed object and processes it
(``DROP`` if holding, else ``TOGGLE`` if closed, else ``PICKUP``). When no goal can be reached it gives up on the
unreachable objects and ``STOP``s.

In phase III the oracle ``STOP``s at once: it already saw everything and lifted everything reachable in phase I,
so re-entering cannot add to its knowledge (the answer phases use the union of both phases' tracks).

**IdleExplorer** (``"none"``) stops at once in phases I and III: the agent that does not explore.

**RandomExplorer**: in phases I and III a uniform choice among ``LEFT, RIGHT, FORWARD, PICKUP, DROP, TOGGLE``;
with probability ``stop_prob`` per step it ``STOP``s instead (with the default 0 it explores until the phase's
budget ends). It answers like the oracle, so the two differ only in how they explore.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsoc.envs.babyai.roomgrid import _pack_rows, _spread_rows
from jaxsoc.envs.excalibur import catalogue as K
from jaxsoc.envs.excalibur import questions as Q
from jaxsoc.envs.excalibur import state as S
from jaxsoc.envs.excalibur import world as W
from jaxsoc.envs.gridworld import constants as GC

_DIR_TO_VEC = GC.DIR_TO_VEC  # numpy [4, 2] (x, y): east, south, west, north; RIGHT turns +1
#: ``int32[NUM_FAMILIES + 1]``: the guessed answer of each family (index 0: a padding row) when knowledge gives none
DEFAULT_ANSWER = np.array(
    [K.NO, K.COUNT0, K.NO, K.COLOR0, K.MATERIAL0, K.TYPE0, K.NO, K.NO, K.NO, K.NO, K.NO, K.NO], np.int32
)
#: the oracle gives up on an object after ``CAP_PER_OBJECT * (objects in its cell) + CAP_BASE`` interactions
CAP_PER_OBJECT, CAP_BASE = 2, 4
#: the exploration actions the random explorer draws from
EXPLORE_ACTIONS = np.array([S.LEFT, S.RIGHT, S.FORWARD, S.PICKUP, S.DROP, S.TOGGLE], np.int32)


# -- answering (both explorers) -----------------------------------------------------------------------------------


def knowledge(state: S.State) -> tuple[jax.Array, jax.Array]:
    """Returns ``(seen bool[N], lifted bool[N])``: the objects seen / lifted in the exploration phases so far (the
    unions of the two rows of ``state.tracks``)."""
    return state.tracks.seen.any(0), state.tracks.lifted.any(0)


def answer_action(state: S.State) -> jax.Array:
    """Returns ``int32``: ``state.ANSWER + a`` with ``a`` the answer to the question being asked
    (``house.questions[phase_step]``) from what was seen and lifted (``knowledge``), or the family's
    ``DEFAULT_ANSWER`` when that knowledge gives no valid answer (or the row is padding)."""
    house = state.house
    k = jnp.clip(state.phase_step, 0, house.questions.shape[0] - 1)
    question = house.questions[k]
    answer, valid = Q.answer(house, question, knowledge(state))
    family = jnp.clip(question[S.FAMILY].astype(jnp.int32), 0, S.NUM_FAMILIES)
    answer = jnp.where(valid, answer, jnp.asarray(DEFAULT_ANSWER)[family])
    return (S.ANSWER + answer).astype(jnp.int32)


def exploring(state: S.State) -> jax.Array:
    """Returns ``bool``: the episode is in an exploration phase (I or III)."""
    return (state.phase == S.EXPLORE) | (state.phase == S.REENTER)


# -- the layout ---------------------------------------------------------------------------------------------------


def _scatter_cells(mask: jax.Array, cell: jax.Array, height: int, width: int) -> jax.Array:
    """Returns ``bool[H, W]``: the cells (``int[N, 2]`` ``(x, y)``) of the objects in ``mask`` (``bool[N]``)."""
    cell = cell.astype(jnp.int32)
    flat = jnp.where(mask, cell[:, 1] * width + cell[:, 0], height * width)
    return jnp.zeros(height * width + 1, bool).at[flat].set(True)[:-1].reshape(height, width)


def free_cells(state: S.State) -> jax.Array:
    """Returns ``bool[H, W]``: the cells ``world.is_free`` allows walking onto: no wall, no furniture and no floor
    item (a valid object with ``link == FLOOR`` that is not held)."""
    height, width = state.house.walls.shape
    slot = jnp.arange(state.house.valid.shape[0])
    standing = state.house.valid & (state.link == S.FLOOR) & (slot != state.held)
    return ~state.house.walls & ~_scatter_cells(standing, state.cell, height, width)


def _shift(grid: jax.Array, dx: int, dy: int, fill) -> jax.Array:
    """Returns ``grid`` shifted so that ``out[y, x] = grid[y + dy, x + dx]`` (``fill`` outside)."""
    height, width = grid.shape
    padded = jnp.pad(grid, 1, constant_values=fill)
    return padded[1 + dy : 1 + dy + height, 1 + dx : 1 + dx + width]


def beside(mask: jax.Array) -> jax.Array:
    """Returns ``bool[H, W]``: the cells 4-adjacent to a cell of ``mask`` (``bool[H, W]``)."""
    return (
        _shift(mask, 1, 0, False) | _shift(mask, -1, 0, False) | _shift(mask, 0, 1, False) | _shift(mask, 0, -1, False)
    )


def unreached(height: int, width: int) -> int:
    """Returns the distance ``distance_field`` gives cells that reach no goal: ``H * W``."""
    return height * width


def distance_field(free: jax.Array, goal: jax.Array, rounds: int | None = None) -> jax.Array:
    """Returns ``int32[H, W]``: each free cell's number of 4-neighbour steps through free cells (``free``,
    ``bool[H, W]``) to the nearest goal cell (``goal & free``), ``unreached(H, W)`` for a cell that reaches none
    (and for every cell that is not free). Bellman-Ford relaxation for a static number of ``rounds`` (default
    ``H * W - 1``, always enough; after ``r`` rounds exactly the distances up to ``r`` are known)."""
    height, width = free.shape
    rounds = height * width - 1 if rounds is None else int(rounds)
    far = unreached(height, width)
    start = jnp.where(goal & free, 0, far).astype(jnp.int32)

    def relax(_, dist):
        near = jnp.minimum(
            jnp.minimum(_shift(dist, 1, 0, far), _shift(dist, -1, 0, far)),
            jnp.minimum(_shift(dist, 0, 1, far), _shift(dist, 0, -1, far)),
        )
        return jnp.where(free, jnp.minimum(dist, jnp.minimum(near + 1, far)), far)

    return jax.lax.fori_loop(0, rounds, relax, start)


def probe_distances(free: jax.Array, goal: jax.Array, probes: jax.Array, rounds: int | None = None) -> jax.Array:
    """Returns ``int32[P]``: ``distance_field(free, goal, rounds)`` at the cells ``probes`` (``int[P, 2]``
    ``(x, y)``; a probe outside the grid reads ``unreached``). With ``W <= 32`` the breadth-first frontier is kept
    as one ``uint32`` word per row and only the probes' first arrival is recorded, so a round costs a few
    operations on ``H`` words; wider grids fall back to ``distance_field``."""
    height, width = free.shape
    rounds = height * width - 1 if rounds is None else int(rounds)
    far = unreached(height, width)
    probes = probes.astype(jnp.int32)
    inside = (probes[:, 0] >= 0) & (probes[:, 0] < width) & (probes[:, 1] >= 0) & (probes[:, 1] < height)
    px, py = jnp.clip(probes[:, 0], 0, width - 1), jnp.clip(probes[:, 1], 0, height - 1)
    if width > 32:
        return jnp.where(inside, distance_field(free, goal, rounds)[py, px], far)
    open_rows = _pack_rows(free)
    bit = px.astype(jnp.uint32)

    def hit(rows):
        return inside & (((rows[py] >> bit) & 1) == 1)

    frontier = _pack_rows(goal & free)
    first = jnp.where(hit(frontier), 0, far).astype(jnp.int32)

    def spread(r, carry):
        rows, first = carry
        rows = _spread_rows(rows) & open_rows
        return rows, jnp.where((first == far) & hit(rows), r + 1, first)

    return jax.lax.fori_loop(0, rounds, spread, (frontier, first))[1]


# -- the oracle -----------------------------------------------------------------------------------------------


class OracleMemory(struct.PyTreeNode):
    """The oracle's memory: ``processed`` bool[N] (standing objects done or given up), ``work`` int32[N]
    (interactions spent on each standing object)."""

    processed: jax.Array
    work: jax.Array


def _oracle_explore(memory: OracleMemory, state: S.State, rounds: int | None) -> tuple[jax.Array, OracleMemory]:
    """Returns ``(action, memory)`` of the oracle in an exploration phase (module docstring)."""
    house = state.house
    height, width = house.walls.shape
    num = house.valid.shape[0]
    slot = jnp.arange(num)
    track = (state.phase == S.REENTER).astype(jnp.int32)
    typ = house.type.astype(jnp.int32)
    valid = house.valid
    pickup = jnp.asarray(K.IS_PICKUP)[typ] & valid
    openable = jnp.asarray(K.IS_OPENABLE)[typ] & valid
    holding = state.held >= 0
    standing = valid & (state.link == S.FLOOR) & (slot != state.held)
    seen, lifted = state.tracks.seen[track], state.tracks.lifted[track]
    reach = W.accessible(state)

    # what is left to do at each standing object's cell
    cell = state.cell.astype(jnp.int32)
    same = valid[:, None] & valid[None, :] & jnp.all(cell[:, None, :] == cell[None, :, :], axis=-1)  # [o, j]
    unlifted = pickup & reach & ~lifted
    unseen = reach & ~seen
    todo = jnp.any(same & (unlifted | unseen)[None, :], axis=1) | ~seen
    done_now = standing & ~todo & (~openable | state.is_open) & ~holding
    cap = CAP_PER_OBJECT * same.sum(1) + CAP_BASE
    processed = memory.processed | done_now | (memory.work >= cap)
    pending = standing & ~processed

    # where to go: the free cells beside an unprocessed standing object
    free = free_cells(state)
    pending_cells = _scatter_cells(pending, cell, height, width)
    goal = free & beside(pending_cells)
    pos, direction = state.agent_pos.astype(jnp.int32), state.agent_dir.astype(jnp.int32)
    vec = jnp.asarray(_DIR_TO_VEC)
    probes = jnp.concatenate([pos[None], pos[None] + vec], 0)  # the agent's cell, then its 4 neighbours
    dist = probe_distances(free, goal, probes, rounds)
    far = unreached(height, width)
    here, around = dist[0], dist[1:]

    # the object in front and what it needs
    front = pos + vec[direction]
    target = W.occupant(state, front)
    safe = jnp.maximum(target, 0)
    faces_pending = (target >= 0) & pending[safe]
    interact = jnp.where(openable[safe] & ~state.is_open[safe], S.TOGGLE, S.PICKUP)
    interact = jnp.where(holding, S.DROP, interact)

    # turning: toward the pending neighbour on a goal cell, else down the distance field
    inb = (probes[1:, 0] >= 0) & (probes[1:, 0] < width) & (probes[1:, 1] >= 0) & (probes[1:, 1] < height)
    npx, npy = jnp.clip(probes[1:, 0], 0, width - 1), jnp.clip(probes[1:, 1], 0, height - 1)
    pending_beside = inb & pending_cells[npy, npx]
    turn_cost = jnp.asarray([0, 1, 2, 1])[(jnp.arange(4) - direction) % 4]  # 0 ahead, 1 a turn, 2 behind
    score_goal = jnp.where(pending_beside, turn_cost, 99)
    score_walk = jnp.where(around < far, around * 4 + turn_cost, 4 * far + 99)
    best = jnp.argmin(jnp.where(here == 0, score_goal, score_walk)).astype(jnp.int32)
    rel = (best - direction) % 4
    move = jnp.where(rel == 0, S.FORWARD, jnp.where(rel == 1, S.RIGHT, S.LEFT))

    any_pending = pending.any()
    lost = any_pending & (here >= far)  # no goal reachable: give up on what is left
    action = jnp.where(holding | faces_pending, interact, move)
    action = jnp.where(~holding & (~any_pending | lost), S.STOP, action)
    worked = (action == S.TOGGLE) | (action == S.PICKUP) | (action == S.DROP)
    work = memory.work + (worked & (target >= 0) & (slot == target)).astype(jnp.int32)
    processed = processed | (lost & ~holding & pending)
    return action.astype(jnp.int32), OracleMemory(processed=processed, work=work)


@struct.dataclass
class OracleExplorer:
    """The systematic explorer of the module docstring. ``rounds``: the breadth-first rounds per step (static;
    None: ``H * W - 1``, always enough)."""

    rounds: int | None = struct.field(pytree_node=False, default=None)

    def init(self, key: jax.Array, state: S.State) -> OracleMemory:
        """Returns the empty ``OracleMemory`` (``N`` = the house's object slots)."""
        num = state.house.valid.shape[0]
        return OracleMemory(processed=jnp.zeros(num, bool), work=jnp.zeros(num, jnp.int32))

    def act(self, key: jax.Array, memory: OracleMemory, state: S.State) -> tuple[jax.Array, OracleMemory]:
        """Returns ``(action int32, memory)``: phase I the systematic exploration, phase III ``STOP``, phases II
        and IV ``answer_action``. The memory changes in phase I only."""
        return self._act(memory, state, True)

    def explore_act(self, key: jax.Array, memory: OracleMemory, state: S.State) -> tuple[jax.Array, OracleMemory]:
        """Returns ``act`` without the answering computation: valid in phases I and III only (in the answer
        phases it returns ``state.ANSWER``, a placeholder). ``play.rollout`` uses it for the steps at which no
        episode of the batch is answering."""
        return self._act(memory, state, False)

    def _act(self, memory: OracleMemory, state: S.State, answers: bool) -> tuple[jax.Array, OracleMemory]:
        action, explored = _oracle_explore(memory, state, self.rounds)
        first = state.phase == S.EXPLORE
        answer = answer_action(state) if answers else jnp.int32(S.ANSWER)
        action = jnp.where(first, action, jnp.where(state.phase == S.REENTER, S.STOP, answer))
        memory = jax.tree_util.tree_map(lambda new, old: jnp.where(first, new, old), explored, memory)
        return action.astype(jnp.int32), memory


@struct.dataclass
class RandomExplorer:
    """The random explorer of the module docstring: ``stop_prob`` (static) the chance per exploration step of
    ``STOP``. Its memory is an unused ``int32`` 0."""

    stop_prob: float = struct.field(pytree_node=False, default=0.0)

    def init(self, key: jax.Array, state: S.State) -> jax.Array:
        """Returns ``int32`` 0 (no memory)."""
        return jnp.zeros((), jnp.int32)

    def act(self, key: jax.Array, memory: jax.Array, state: S.State) -> tuple[jax.Array, jax.Array]:
        """Returns ``(action int32, memory)``: a random exploration action (or ``STOP`` with ``stop_prob``) in
        phases I and III, ``answer_action`` in II and IV."""
        return self._act(key, memory, state, True)

    def explore_act(self, key: jax.Array, memory: jax.Array, state: S.State) -> tuple[jax.Array, jax.Array]:
        """Returns ``act`` without the answering computation (as ``OracleExplorer.explore_act``)."""
        return self._act(key, memory, state, False)

    def _act(self, key: jax.Array, memory: jax.Array, state: S.State, answers: bool):
        k_action, k_stop = jax.random.split(key)
        action = jnp.asarray(EXPLORE_ACTIONS)[jax.random.randint(k_action, (), 0, len(EXPLORE_ACTIONS))]
        if self.stop_prob > 0:
            action = jnp.where(jax.random.uniform(k_stop) < self.stop_prob, S.STOP, action)
        answer = answer_action(state) if answers else jnp.int32(S.ANSWER)
        action = jnp.where(exploring(state), action, answer)
        return action.astype(jnp.int32), memory


@struct.dataclass
class IdleExplorer:
    """Does not explore: ``STOP`` at once in phases I and III, then answers like the other explorers (from nothing
    seen: each family's ``DEFAULT_ANSWER``). With a learned answerer it measures the question-only prior. Its
    memory is an unused ``int32`` 0."""

    def init(self, key: jax.Array, state: S.State) -> jax.Array:
        """Returns ``int32`` 0 (no memory)."""
        return jnp.zeros((), jnp.int32)

    def act(self, key: jax.Array, memory: jax.Array, state: S.State) -> tuple[jax.Array, jax.Array]:
        """Returns ``(action int32, memory)``: ``STOP`` in phases I and III, ``answer_action`` in II and IV."""
        return jnp.where(exploring(state), S.STOP, answer_action(state)).astype(jnp.int32), memory

    def explore_act(self, key: jax.Array, memory: jax.Array, state: S.State) -> tuple[jax.Array, jax.Array]:
        """Returns ``act`` without the answering computation (as ``OracleExplorer.explore_act``)."""
        return jnp.where(exploring(state), S.STOP, S.ANSWER).astype(jnp.int32), memory


def make_agent(kind: str, **kw):
    """Returns the scripted agent ``kind`` (``"oracle"``, ``"random"`` or ``"none"``: ``IdleExplorer``) with
    settings ``kw``. Raises ``ValueError`` for an unknown kind."""
    kinds = {"oracle": OracleExplorer, "random": RandomExplorer, "none": IdleExplorer}
    if kind not in kinds:
        raise ValueError(f"unknown EXCALIBUR agent {kind!r}; choose from {sorted(kinds)}")
    return kinds[kind](**kw)
