"""The BabyAI expert (minigrid 3.2.0's ``BabyAIBot``) as a pure, jittable, vmappable policy.

``bot_init(params, state)`` builds the plan of a state's instruction; ``bot_act(params, bot, state, obs)``
returns the next action and the new ``BotState``. Like the reference it is a privileged planner that
limits itself to the cells it has seen (``BotState.seen``, grown from the observation's visible cells),
keeps a stack of subgoals and replans every step:

* ``GoNextTo(target, reason)``: walk to face an object description, an object or a cell; ``PutNext``
  faces an empty cell beside the object; a locked door target first fetches its key; a blocker on the
  way is picked up and dropped where it keeps the 8-neighbourhood connected;
* ``Open(reason)`` (fetching the key of a locked door, ``Unlock`` then drops the key), ``Close``,
  ``Pickup``, ``Drop``; ``Explore``: the closest unseen cell, else the closest closed unlocked door,
  else any closed door.

Searches are ``bot_search``'s exact reproduction of the reference BFS order, so on the same state the bot
takes the reference's action. Unlike the reference it never hangs or raises: a stack overflow, too many
replanning rounds in one step, nothing left to explore, or a reference assertion (e.g. a box was opened)
sets ``BotState.failed``, and the bot then answers ``done``.

Advising mode (the paper's interactive teaching): pass ``taken``, the action the learner actually took
after the previous call (``-1`` = the suggestion was followed); the bot plans to undo it, as the reference
``replan(action_taken)`` does. It can also start from any state (``bot_init`` on a mid-episode state).

Known difference: the reference snapshots the positions of the keys it looks for when it decides to fetch
one; jaxsoc reads their current positions (they differ only if such a key was moved in between). minigrid's
pairing of a description's objects with stale positions after a drop is reproduced (see ``_find_obj_pos``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsoc.envs.babyai import bot_search as S
from jaxsoc.envs.babyai import instr as I
from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld.observation import view_coordinates

STACK_SIZE = 32
# Replanning rounds per step, a static number: every step runs MAX_ROUNDS rounds (those after the action is
# decided change nothing). The reference loops without bound; jaxsoc gives up at the cap. Measured on 256
# episodes of every paper level (jaxsoc-generated, up to 300 steps), the bot followed and in advising mode
# with 30% random deviations (80% on six of the levels): at most 6 rounds in a step (GoToSeq; 5 on BossLevel,
# SynthSeq and GoToSeq with 80% deviations, at most 4 elsewhere). The cap is twice that.
MAX_ROUNDS = 12
PUSH_MAX = 8

# subgoal kinds
GO_NEXT_TO, OPEN, CLOSE, PICKUP, DROP, EXPLORE = range(6)
KIND_NAMES = ("GoNextTo", "Open", "Close", "Pickup", "Drop", "Explore")
# reasons
R_NONE, R_PUTNEXT, R_OPEN, R_EXPLORE, R_UNLOCK, R_KEEPKEY = range(6)
# what a GoNextTo datum is: an instruction description (leaf * 2 + d), a key of a colour, an object id, a cell
D_NONE, D_DESC, D_KEY, D_OBJ, D_CELL = range(5)

_DIRS = C.DIR_TO_VEC  # numpy: importing jaxsoc must not start a JAX backend
_NEIGHBOURS8 = np.array([(-1, -1), (0, -1), (1, -1), (1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0)])


@struct.dataclass
class BotState:
    """The bot's memory. Stack arrays are ``int32[STACK_SIZE]``, entry ``sp - 1`` the top.

    Attributes:
        seen: ``bool[H, W]`` cells the agent has seen.
        kind, reason, dkind, datum: the subgoal stack (``datum`` is a description index, a colour, an
            object id or a flat cell ``y * W + x`` according to ``dkind``).
        sp: ``int32[]`` stack size.
        rank: ``int32[MAX_OBJECTS]`` x-major scan rank of each object at ``bot_init`` (minigrid's order of
            a description's matched objects, used to break distance ties).
        prev_pos: ``int32[2]``; prev_carrying: ``int32[]`` carried id; door_was_open: ``bool[]``;
        prev_front: ``int32[]`` type of the faced cell, all after the previous call (advising mode).
        failed: ``bool[]`` the bot gave up; it then only answers ``done``.
    """

    seen: jax.Array
    kind: jax.Array
    reason: jax.Array
    dkind: jax.Array
    datum: jax.Array
    sp: jax.Array
    rank: jax.Array
    prev_pos: jax.Array
    prev_carrying: jax.Array
    door_was_open: jax.Array
    prev_front: jax.Array
    failed: jax.Array


@struct.dataclass
class Pushes:
    """Up to ``PUSH_MAX`` subgoals to push (bottom first), each field ``int32[PUSH_MAX]``, and ``count``."""

    kind: jax.Array
    reason: jax.Array
    dkind: jax.Array
    datum: jax.Array
    count: jax.Array


def pushes(*subgoals) -> Pushes:
    """Returns the ``Pushes`` of ``(kind, reason, dkind, datum)`` tuples, bottom of the stack first."""
    fields = [[jnp.asarray(s[f], jnp.int32) for s in subgoals] for f in range(4)]
    pad = PUSH_MAX - len(subgoals)
    stacked = [jnp.stack(f + [jnp.int32(0)] * pad) if f else jnp.zeros(PUSH_MAX, jnp.int32) for f in fields]
    return Pushes(*stacked, count=jnp.int32(len(subgoals)))


def goal(kind, reason=R_NONE, dkind=D_NONE, datum=0):
    return (kind, reason, dkind, datum)


@struct.dataclass
class Outcome:
    """What one replanning round decided: ``action`` (-1 = none yet), ``pop`` the top, then ``push``;
    ``fail`` marks a reference assertion or dead end."""

    action: jax.Array
    pop: jax.Array
    push: Pushes
    fail: jax.Array


def outcome(action=-1, pop=False, push=None, fail=False) -> Outcome:
    return Outcome(jnp.asarray(action, jnp.int32), jnp.asarray(pop), push or pushes(), jnp.asarray(fail))


def _choose(pairs, default: Outcome) -> Outcome:
    """Returns the outcome of the first true condition in ``[(cond, Outcome), ...]``, else ``default``."""
    result = default
    for cond, value in reversed(pairs):
        result = jax.tree_util.tree_map(lambda a, b, c=cond: jnp.where(c, a, b), value, result)
    return result


# ---------------------------------------------------------------------------------------------------------
# the plan of an instruction


def _leaf_subgoals(instr: I.Instruction, leaf: int) -> Pushes:
    """Returns the subgoals of one leaf, bottom first (the reference ``_process_instr``)."""
    move, fixed = leaf * 2, leaf * 2 + 1
    options = [
        (I.ACT_GOTO, pushes(goal(GO_NEXT_TO, R_NONE, D_DESC, move))),
        (I.ACT_OPEN, pushes(goal(OPEN), goal(GO_NEXT_TO, R_OPEN, D_DESC, move))),
        (I.ACT_PICKUP, pushes(goal(DROP), goal(PICKUP), goal(GO_NEXT_TO, R_NONE, D_DESC, move))),
        (
            I.ACT_PUTNEXT,
            pushes(
                goal(DROP), goal(GO_NEXT_TO, R_PUTNEXT, D_DESC, fixed), goal(PICKUP), goal(GO_NEXT_TO, 0, D_DESC, move)
            ),
        ),
    ]
    result = pushes()
    for action, value in options:
        result = jax.tree_util.tree_map(lambda a, b, c=instr.action[leaf] == action: jnp.where(c, a, b), value, result)
    return result


def _push(bot: BotState, push: Pushes) -> BotState:
    """Returns ``bot`` with ``push`` on its stack; overflow sets ``failed``."""
    slots = bot.sp + jnp.arange(PUSH_MAX)
    write = (jnp.arange(PUSH_MAX) < push.count) & (slots < STACK_SIZE)
    target = jnp.where(write, slots, STACK_SIZE)
    fields = {
        f: getattr(bot, f).at[target].set(getattr(push, f), mode="drop") for f in ("kind", "reason", "dkind", "datum")
    }
    overflow = bot.sp + push.count > STACK_SIZE
    return bot.replace(**fields, sp=jnp.minimum(bot.sp + push.count, STACK_SIZE), failed=bot.failed | overflow)


def bot_init(params: I.BabyAIParams, state: I.BabyAIState) -> BotState:
    """Returns the ``BotState`` for ``state``'s instruction: nothing seen, the instruction's subgoals on the
    stack (first clause on top; ``then`` runs part A first, ``after you`` part B first)."""
    grid = state.world.grid
    height, width = grid.shape[:2]
    ids = grid[..., C.OBJ_ID].astype(jnp.int32)
    ys, xs = jnp.meshgrid(jnp.arange(height), jnp.arange(width), indexing="ij")
    rank = jnp.full(I.MAX_OBJECTS, height * width, jnp.int32).at[ids].min(xs * height + ys).at[0].set(height * width)
    zero = jnp.int32(0)
    bot = BotState(
        seen=jnp.zeros((height, width), bool),
        kind=jnp.zeros(STACK_SIZE, jnp.int32),
        reason=jnp.zeros(STACK_SIZE, jnp.int32),
        dkind=jnp.zeros(STACK_SIZE, jnp.int32),
        datum=jnp.zeros(STACK_SIZE, jnp.int32),
        sp=zero,
        rank=rank,
        prev_pos=state.world.agent_pos.astype(jnp.int32),
        prev_carrying=state.world.carrying[C.OBJ_ID].astype(jnp.int32),
        door_was_open=jnp.asarray(False),
        prev_front=zero,
        failed=jnp.asarray(False),
    )
    seq = state.instr.seq
    # leaves in push order (bottom first): one part pushes clause 1 then clause 0
    order = jnp.where(
        seq == I.SEQ_BEFORE,
        jnp.array([3, 2, 1, 0]),
        jnp.where(seq == I.SEQ_AFTER, jnp.array([1, 0, 3, 2]), jnp.array([1, 0, 3, 2])),
    )
    per_leaf = [_leaf_subgoals(state.instr, leaf_index) for leaf_index in range(I.MAX_LEAVES)]
    for slot in range(I.MAX_LEAVES):
        leaf = order[slot]
        chosen = jax.tree_util.tree_map(lambda *xs, i=leaf: jnp.stack(xs)[i], *per_leaf)
        bot = _push(bot, chosen)
    return bot


# ---------------------------------------------------------------------------------------------------------
# per-step facts shared by every replanning round


@struct.dataclass
class Facts:
    """What the subgoals read about the current state (computed once per step)."""

    grid: jax.Array  # uint8[H, W, channels]
    pos: jax.Array  # int32[2]
    dir_vec: jax.Array  # int32[2]
    right_vec: jax.Array  # int32[2]
    fwd: jax.Array  # int32[2]
    fwd_cell: jax.Array  # uint8[channels]
    carrying: jax.Array  # int32[] carried object id (0 = nothing)
    carrying_cell: jax.Array  # uint8[channels]
    searches: S.Searches
    distance: jax.Array  # int32[H, W] _find_obj_pos distances
    drop_pos: jax.Array  # int32[] flat cell of _find_drop_pos(), -1 if none
    drop_pos_block: jax.Array  # int32[] _find_drop_pos(except drop_pos)
    wall_left: jax.Array  # int32[] _closest_wall_or_door_given_dir(pos, -right)
    wall_right: jax.Array


def _cell(grid: jax.Array, xy: jax.Array) -> jax.Array:
    height, width = grid.shape[:2]
    return grid[jnp.clip(xy[1], 0, height - 1), jnp.clip(xy[0], 0, width - 1)]


def _flat(xy: jax.Array, width: int) -> jax.Array:
    return (xy[1] * width + xy[0]).astype(jnp.int32)


def _xy(flat: jax.Array, width: int) -> jax.Array:
    return jnp.stack([flat % width, flat // width]).astype(jnp.int32)


def _empty(cell) -> jax.Array:
    return cell[..., C.TYPE] == C.EMPTY


def _open_door(cell) -> jax.Array:
    return (cell[..., C.TYPE] == C.DOOR) & (cell[..., C.STATE] == C.OPEN)


def _drop_candidates(grid, seen, pos, except_cell) -> tuple[jax.Array, jax.Array]:
    """Returns ``(unblocking, empty)``, ``bool[H, W]``: the reference ``_find_drop_pos`` predicates
    ``match_unblock`` and ``match_empty`` for every cell (``except_cell`` flat, -1 for none)."""
    height, width = seen.shape
    cells = jnp.arange(height * width).reshape(height, width)
    agent = cells == pos[1] * width + pos[0]
    excluded = cells == except_cell
    base = seen & _empty(grid) & ~agent & ~excluded
    wall = grid[..., C.TYPE] == C.WALL
    free = seen & (_empty(grid) | _open_door(grid) | agent) & ~excluded
    classes = []
    for dx, dy in _NEIGHBOURS8.tolist():
        nb_wall = S.shift(seen & wall, -dx, -dy, False)
        nb_free = S.shift(free, -dx, -dy, False)
        classes.append(jnp.where(nb_wall, 1, jnp.where(nb_free, 0, 2)))
    changes = sum((classes[(i + 1) % 8] != 0) != (classes[i] != 0) for i in range(8))
    stranded = jnp.zeros_like(base)
    for i in range(8):
        stranded |= (classes[i] == 2) & (classes[(i + 7) % 8] != 0) & (classes[(i + 1) % 8] != 0)
    return base & ~stranded & (changes <= 2), base


def _find_drop_pos(searches, grid, seen, pos, except_cell) -> jax.Array:
    """Returns the flat cell of the reference ``_find_drop_pos(except_pos)``, -1 if there is none."""
    unblocking, empty = _drop_candidates(grid, seen, pos, except_cell)
    tries = [
        S.query(searches, unblocking, False),
        S.query(searches, empty, False),
        S.query(searches, unblocking, True),
        S.query(searches, empty, True),
    ]
    result = jnp.int32(-1)
    for found in reversed(tries):
        result = jnp.where(found.found, found.cell, result)
    return result


def _closest_wall_or_door(grid, pos, step, view_size: int) -> jax.Array:
    """The reference ``_closest_wall_or_door_given_dir``: the distance to the first wall or door from
    ``pos`` along the sideways ``step``, at most the last distance inside the view window (``view_size // 2``)."""
    distance = jnp.int32(view_size // 2)
    for d in reversed(range(1, view_size // 2 + 1)):
        kind = _cell(grid, pos + d * step)[C.TYPE]
        distance = jnp.where((kind == C.WALL) | (kind == C.DOOR), d, distance)
    return distance


def visible_cells(obs: dict, agent_pos: jax.Array, agent_dir: jax.Array, shape) -> jax.Array:
    """Returns ``bool[H, W]``: the world cells the observation shows (non-``unseen`` view cells)."""
    height, width = shape
    view = obs["image"]
    x, y = view_coordinates(agent_pos, agent_dir, view.shape[0])
    inside = (x >= 0) & (x < width) & (y >= 0) & (y < height)
    shown = (view[..., 0] != C.UNSEEN) & inside
    target = jnp.where(shown, y * width + x, height * width)
    return jnp.zeros(height * width + 1, bool).at[target.ravel()].set(True)[:-1].reshape(height, width)


def _facts(state: I.BabyAIState, seen: jax.Array, view_size: int) -> Facts:
    world = state.world
    grid = world.grid
    pos = world.agent_pos.astype(jnp.int32)
    dir_vec = jnp.asarray(_DIRS)[world.agent_dir]
    right_vec = jnp.stack([-dir_vec[1], dir_vec[0]])
    fwd = pos + dir_vec
    carrying = world.carrying[C.OBJ_ID].astype(jnp.int32)
    searches = S.search(grid, seen, pos, world.agent_dir)
    drop_pos = _find_drop_pos(searches, grid, seen, pos, -1)
    return Facts(
        grid=grid,
        pos=pos,
        dir_vec=dir_vec,
        right_vec=right_vec,
        fwd=fwd,
        fwd_cell=_cell(grid, fwd),
        carrying=carrying,
        carrying_cell=world.carrying,
        searches=searches,
        distance=S.path_lengths(searches, carrying != 0),
        drop_pos=drop_pos,
        drop_pos_block=_find_drop_pos(searches, grid, seen, pos, drop_pos),
        wall_left=_closest_wall_or_door(grid, pos, -right_vec, view_size),
        wall_right=_closest_wall_or_door(grid, pos, right_vec, view_size),
    )


# ---------------------------------------------------------------------------------------------------------
# the subgoals' replan_before_action


def _scan_rank(mask: jax.Array) -> jax.Array:
    """Returns ``int32[H, W]``: for every cell, how many ``mask`` cells come before it in minigrid's
    x-major scan (``for x: for y:``); two small triangular matmuls instead of a 484-long ``cumsum``."""
    height, width = mask.shape
    by_column = mask.T.astype(jnp.float32)  # [W, H]
    exact = jax.lax.Precision.HIGHEST
    within = jnp.dot(by_column, jnp.asarray(np.triu(np.ones((height, height), np.float32), k=1)), precision=exact)
    totals = by_column.sum(axis=1)
    before = jnp.dot(totals, jnp.asarray(np.triu(np.ones((width, width), np.float32), k=1)), precision=exact)
    return (within + before[:, None]).T.astype(jnp.int32)


def _find_obj_pos(
    state: I.BabyAIState, bot: BotState, facts: Facts, dkind, datum, adjacent
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The reference ``_find_obj_pos``: the seen matching object with the smallest estimated distance.

    minigrid iterates over a description's ``obj_set`` (reset scan order) and reads the ``i``-th position
    of ``obj_poss``, which every ``drop`` rebuilds in the *current* scan order of the tracked objects left
    in the grid; so after objects moved, object ``i`` is paired with another object's cell (and a carried
    ``obj_set[i]`` skips that cell). That pairing is reproduced: candidate cells are the snapshot cells of
    tracked objects; the ``i``-th in scan order stands for the ``i``-th object in reset order; ties go to
    the earlier ``i``. Keys to fetch (``D_KEY``) are matched on the current grid.

    Returns ``(found, flat cell, object id)`` (the id is ``obj_set[i]``, the reference's ``target_obj``).
    """
    grid = facts.grid
    height, width = grid.shape[:2]
    ids = grid[..., C.OBJ_ID].astype(jnp.int32)
    snapshot = state.verifier.id_snapshot.astype(jnp.int32)
    tracked = state.verifier.obj_set.reshape(-1, I.MAX_OBJECTS)[jnp.clip(datum, 0, 2 * I.MAX_LEAVES - 1)]
    is_key = (grid[..., C.TYPE] == C.KEY) & (grid[..., C.COLOR] == datum)
    is_desc = dkind != D_KEY
    cells = jnp.where(is_desc, tracked[snapshot], is_key)
    index = _scan_rank(cells)  # i of each candidate cell
    # the id of the i-th tracked object in reset scan order
    rank = jnp.where(tracked, bot.rank, jnp.iinfo(jnp.int32).max)
    reset_index = jnp.sum(rank[None, :] < rank[:, None], axis=1)  # [MAX_OBJECTS]
    id_at = (
        jnp.zeros(I.MAX_OBJECTS, jnp.int32)
        .at[jnp.where(tracked, reset_index, I.MAX_OBJECTS)]
        .set(jnp.arange(I.MAX_OBJECTS, dtype=jnp.int32), mode="drop")
    )
    paired = jnp.where(is_desc, id_at[jnp.clip(index, 0, I.MAX_OBJECTS - 1)], ids)
    candidates = cells & (paired != facts.carrying) & bot.seen
    distance = facts.distance
    distance = jnp.where(distance == 0, jnp.where(adjacent, 3, 2), distance)
    distance = jnp.where(adjacent & (distance == 1), 3, distance)
    reachable = candidates & (distance < S.UNVISITED)
    score = jnp.where(reachable, distance * (height * width + 1) + index, jnp.iinfo(jnp.int32).max).ravel()
    cell = jnp.argmin(score).astype(jnp.int32)
    return jnp.any(reachable), cell, paired.ravel()[cell]


def _setting_aside(drop_cell, *middle) -> Pushes:
    """Returns the subgoals that drop the carried object at ``drop_cell``, do ``middle`` (bottom first), then
    go back for the object and pick it up again."""
    keep = goal(GO_NEXT_TO, R_NONE, D_CELL, drop_cell)
    return pushes(goal(PICKUP), keep, *middle, goal(DROP), keep)


def _go_next_to(state: I.BabyAIState, bot: BotState, facts: Facts, reason, dkind, datum) -> Outcome:
    grid, pos, fwd = facts.grid, facts.pos, facts.fwd
    width = grid.shape[1]
    adjacent = reason == R_PUTNEXT
    found_obj, obj_cell, obj_id = _find_obj_pos(state, bot, facts, dkind, datum, adjacent)
    obj_ids = grid[..., C.OBJ_ID].astype(jnp.int32).ravel()
    is_desc = (dkind == D_DESC) | (dkind == D_KEY)
    target = jnp.where(is_desc, obj_cell, jnp.where(dkind == D_OBJ, jnp.argmax(obj_ids == datum), datum))
    target_xy = _xy(target, width)
    # the object the subgoal is about (the reference's target_obj; only its door state matters)
    target_id = jnp.where(dkind == D_DESC, obj_id, jnp.where(dkind == D_OBJ, datum, obj_ids[target]))
    target_cell = grid.reshape(-1, grid.shape[-1])[jnp.argmax(obj_ids == target_id)]
    has_obj = (dkind != D_CELL) & (target_id != 0)
    locked_door = has_obj & (target_cell[C.TYPE] == C.DOOR) & (target_cell[C.STATE] == C.LOCKED)
    fetch_key = (reason == R_OPEN) & locked_door & (facts.carrying == 0)
    door_id = target_cell[C.OBJ_ID].astype(jnp.int32)
    key_colour = target_cell[C.COLOR].astype(jnp.int32)

    distance = jnp.sum(jnp.abs(target_xy - pos))
    move_away = distance == jnp.where(adjacent, 1, 0)

    def steppable(cell):
        return _empty(cell) | _open_door(cell)

    away_action = jnp.where(
        steppable(facts.fwd_cell),
        C.FORWARD,
        jnp.where(steppable(_cell(grid, pos + facts.right_vec)), C.RIGHT, C.LEFT),
    )
    fwd_to_target = jnp.sum(jnp.abs(target_xy - fwd))
    put_next_here = adjacent & (fwd_to_target == 1)
    facing_target = ~adjacent & jnp.all(target_xy == fwd)

    # a path ending on the agent's own cell is empty, and the reference then explores
    path = S.query(facts.searches, _one_hot(target, grid.shape[:2]), True)
    path_ok = path.found & (path.length > 0)
    next_xy = _xy(path.first, width)
    next_is_fwd = jnp.all(next_xy == fwd)
    fwd_cell = facts.fwd_cell
    fwd_type = fwd_cell[C.TYPE]
    fwd_is_door = fwd_type == C.DOOR
    carrying = facts.carrying != 0
    drop_cur, drop_block = facts.drop_pos, facts.drop_pos_block
    fwd_flat = _flat(fwd, width)
    unblock_carrying = _setting_aside(
        drop_cur,
        goal(DROP),
        goal(GO_NEXT_TO, R_NONE, D_CELL, drop_block),
        goal(PICKUP),
        goal(GO_NEXT_TO, R_NONE, D_CELL, fwd_flat),
    )
    unblock = pushes(goal(DROP), goal(GO_NEXT_TO, R_NONE, D_CELL, drop_cur), goal(PICKUP))
    step = next_xy - pos
    turn_behind = jnp.where(facts.wall_left > facts.wall_right, C.LEFT, C.RIGHT)
    explore = outcome(push=pushes(goal(EXPLORE)))
    return _choose(
        [
            (is_desc & ~found_obj, explore),
            (
                fetch_key,
                outcome(
                    pop=True,
                    push=pushes(
                        goal(GO_NEXT_TO, R_OPEN, D_OBJ, door_id),
                        goal(PICKUP),
                        goal(GO_NEXT_TO, R_NONE, D_KEY, key_colour),
                    ),
                ),
            ),
            (move_away, outcome(away_action)),
            (put_next_here & _empty(fwd_cell), outcome(pop=True)),
            (
                put_next_here & _open_door(fwd_cell),
                outcome(push=pushes(goal(GO_NEXT_TO, R_NONE, D_CELL, _flat(fwd + 2 * facts.dir_vec, width)))),
            ),
            (facing_target, outcome(pop=True)),
            (~path_ok, explore),
            (next_is_fwd & fwd_is_door & (fwd_cell[C.STATE] == C.LOCKED), outcome(fail=True)),
            (next_is_fwd & fwd_is_door & (fwd_cell[C.STATE] == C.CLOSED), outcome(push=pushes(goal(OPEN)))),
            (next_is_fwd & fwd_is_door, outcome(C.FORWARD)),
            (next_is_fwd & ~_empty(fwd_cell) & carrying & ((drop_cur < 0) | (drop_block < 0)), outcome(fail=True)),
            (next_is_fwd & ~_empty(fwd_cell) & carrying, outcome(push=unblock_carrying)),
            (next_is_fwd & ~_empty(fwd_cell) & (drop_cur < 0), outcome(fail=True)),
            (next_is_fwd & ~_empty(fwd_cell), outcome(push=unblock)),
            (next_is_fwd, outcome(C.FORWARD)),
            (jnp.all(step == facts.right_vec), outcome(C.RIGHT)),
            (jnp.all(step == -facts.right_vec), outcome(C.LEFT)),
        ],
        outcome(turn_behind),
    )


def _one_hot(flat, shape) -> jax.Array:
    height, width = shape
    return jnp.arange(height * width).reshape(height, width) == flat


def _open(bot: BotState, facts: Facts, reason) -> Outcome:
    fwd_cell, width = facts.fwd_cell, facts.grid.shape[1]
    is_door = fwd_cell[C.TYPE] == C.DOOR
    locked = is_door & (fwd_cell[C.STATE] == C.LOCKED)
    colour = fwd_cell[C.COLOR].astype(jnp.int32)
    carried = facts.carrying_cell
    got_key = (carried[C.TYPE] == C.KEY) & (carried[C.COLOR] == colour)
    carrying = facts.carrying != 0
    fwd_flat = _flat(facts.fwd, width)
    drop_cur = facts.drop_pos
    fetch_key = (
        goal(OPEN),
        goal(GO_NEXT_TO, R_NONE, D_CELL, fwd_flat),
        goal(PICKUP),
        goal(GO_NEXT_TO, R_NONE, D_KEY, colour),
    )
    fetch_while_carrying = _setting_aside(drop_cur, *fetch_key)
    fetch = pushes(*fetch_key)
    return _choose(
        [
            (~is_door, outcome(fail=True)),
            (locked & ~got_key & carrying & (drop_cur < 0), outcome(fail=True)),
            (locked & ~got_key & carrying, outcome(pop=True, push=fetch_while_carrying)),
            (locked & ~got_key, outcome(pop=True, push=fetch)),
            (fwd_cell[C.STATE] == C.OPEN, outcome(push=pushes(goal(CLOSE)))),
            (locked & (reason == R_NONE), outcome(pop=True, push=pushes(goal(OPEN, R_UNLOCK)))),
        ],
        outcome(C.TOGGLE),
    )


def _explore(state: I.BabyAIState, bot: BotState, facts: Facts) -> Outcome:
    grid = facts.grid
    unseen = S.query(facts.searches, ~bot.seen, True)
    door = grid[..., C.TYPE] == C.DOOR
    closed_door = door & (grid[..., C.STATE] != C.OPEN)
    unlocked = S.query(facts.searches, closed_door & (grid[..., C.STATE] != C.LOCKED), True)
    any_door = S.query(facts.searches, closed_door, True)
    door_cell = jnp.where(unlocked.found, unlocked.cell, any_door.cell)
    door_found = unlocked.found | any_door.found
    door_obj = grid.reshape(-1, grid.shape[-1])[door_cell]
    carried = facts.carrying_cell
    got_key = (carried[C.TYPE] == C.KEY) & (carried[C.COLOR] == door_obj[C.COLOR])
    open_reason = jnp.where((door_obj[C.STATE] == C.LOCKED) & got_key, R_KEEPKEY, R_NONE)
    door_id = door_obj[C.OBJ_ID].astype(jnp.int32)
    return _choose(
        [
            (unseen.found, outcome(push=pushes(goal(GO_NEXT_TO, R_EXPLORE, D_CELL, unseen.cell)))),
            (
                door_found,
                outcome(pop=True, push=pushes(goal(OPEN, open_reason), goal(GO_NEXT_TO, R_OPEN, D_OBJ, door_id))),
            ),
        ],
        outcome(fail=True),
    )


def _replan_before(state: I.BabyAIState, bot: BotState, facts: Facts, explore: Outcome) -> Outcome:
    """One ``replan_before_action`` of the top subgoal (``explore``: the Explore subgoal's outcome, which
    depends only on the step's state)."""
    top = bot.sp - 1
    kind, reason, dkind, datum = bot.kind[top], bot.reason[top], bot.dkind[top], bot.datum[top]
    fwd_cell = facts.fwd_cell
    carrying = facts.carrying != 0
    options = [
        _go_next_to(state, bot, facts, reason, dkind, datum),
        _open(bot, facts, reason),
        outcome(C.TOGGLE, fail=~_open_door(fwd_cell)),  # Close
        outcome(C.PICKUP, fail=carrying),  # Pickup
        outcome(C.DROP, fail=~carrying | ~_empty(fwd_cell)),  # Drop
        explore,
    ]
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs)[kind], *options)


# ---------------------------------------------------------------------------------------------------------
# replan_after_action (advising mode and the completion of one-step subgoals)


def _undo(bot: BotState, facts: Facts, taken) -> Pushes:
    """The reference ``_plan_undo_action(taken)``."""
    width = facts.grid.shape[1]
    moved = jnp.any(bot.prev_pos != facts.pos)
    carrying_changed = bot.prev_carrying != facts.carrying
    fwd_cell = facts.fwd_cell
    door_toggled = (fwd_cell[C.TYPE] == C.DOOR) & (bot.door_was_open != _open_door(fwd_cell))
    options = [
        ((taken == C.FORWARD) & moved, pushes(goal(GO_NEXT_TO, R_NONE, D_CELL, _flat(facts.pos, width)))),
        (taken == C.LEFT, pushes(goal(GO_NEXT_TO, R_NONE, D_CELL, _flat(facts.pos + facts.right_vec, width)))),
        (taken == C.RIGHT, pushes(goal(GO_NEXT_TO, R_NONE, D_CELL, _flat(facts.pos - facts.right_vec, width)))),
        ((taken == C.DROP) & carrying_changed, pushes(goal(PICKUP))),
        ((taken == C.PICKUP) & carrying_changed, pushes(goal(DROP))),
        ((taken == C.TOGGLE) & door_toggled & _open_door(fwd_cell), pushes(goal(CLOSE))),
        ((taken == C.TOGGLE) & door_toggled, pushes(goal(OPEN))),
    ]
    return _choose([(c, outcome(push=p)) for c, p in options], outcome()).push


def _replan_after(bot: BotState, facts: Facts, taken) -> BotState:
    """The top subgoal's ``replan_after_action(taken)`` (``taken = -1``: the suggestion was followed)."""
    top = jnp.maximum(bot.sp - 1, 0)
    kind, reason = bot.kind[top], bot.reason[top]
    followed = taken < 0
    moved_or_turned = (taken == C.FORWARD) | (taken == C.LEFT) | (taken == C.RIGHT)
    turned = (taken == C.LEFT) | (taken == C.RIGHT)
    done_as_told = followed | (
        ((kind == OPEN) | (kind == CLOSE)) & (taken == C.TOGGLE)
        | (kind == DROP) & (taken == C.DROP)
        | (kind == PICKUP) & (taken == C.PICKUP)
    )
    one_step = (kind == OPEN) | (kind == CLOSE) | (kind == DROP) | (kind == PICKUP)
    finished = (bot.sp > 0) & one_step & done_as_told
    undo_wanted = (bot.sp > 0) & jnp.where(
        kind == GO_NEXT_TO,
        (taken == C.PICKUP) | (taken == C.DROP) | (taken == C.TOGGLE),
        jnp.where(kind == OPEN, ~done_as_told, jnp.where(kind == PICKUP, turned, moved_or_turned))
        & one_step
        & ~done_as_told,
    )
    bot = bot.replace(sp=bot.sp - finished.astype(jnp.int32))
    drop_key = pushes(goal(DROP), goal(GO_NEXT_TO, R_NONE, D_CELL, facts.drop_pos))
    unlock_done = finished & (kind == OPEN) & (reason == R_UNLOCK)
    push = jax.tree_util.tree_map(
        lambda a, b, c: jnp.where(unlock_done, a, jnp.where(undo_wanted, b, c)),
        drop_key,
        _undo(bot, facts, taken),
        pushes(),
    )
    bot = _push(bot, push)
    return bot.replace(failed=bot.failed | (unlock_done & (facts.drop_pos < 0)))


# ---------------------------------------------------------------------------------------------------------
# the step


def bot_act(
    params: I.BabyAIParams, bot: BotState, state: I.BabyAIState, obs: dict, taken: jax.Array | int = -1
) -> tuple[jax.Array, BotState]:
    """Returns ``(action, bot)``: the reference ``replan(action_taken)`` for the current ``state`` and its
    observation ``obs``. ``action`` is ``int32[]``; ``done`` (6) when the plan is complete or the bot failed
    (``bot.failed``). ``taken`` is the action the learner took after the previous call, ``-1`` if it
    followed the suggestion (or on the first call)."""
    world = state.world
    shape = world.grid.shape[:2]
    taken = jnp.asarray(taken, jnp.int32)
    visible_now = visible_cells(obs, world.agent_pos, world.agent_dir, shape)
    bot = bot.replace(seen=bot.seen | visible_now)
    bot = bot.replace(failed=bot.failed | ((taken == C.TOGGLE) & (bot.prev_front == C.BOX)))
    facts = _facts(state, bot.seen, params.view_size)
    bot = _replan_after(bot, facts, taken)

    # pop the exploratory subgoals on top of the stack, all at once: the new top is the highest other one
    exploratory = (bot.kind == EXPLORE) | ((bot.kind == GO_NEXT_TO) & (bot.reason == R_EXPLORE))
    slots = jnp.arange(STACK_SIZE, dtype=jnp.int32)
    bot = bot.replace(sp=jnp.max(jnp.where((slots < bot.sp) & ~exploratory, slots + 1, 0)))
    explore = _explore(state, bot, facts)

    def round_(_, carry):
        # a round after the action is decided (or the plan ended or failed) changes nothing
        b, action = carry
        live = (action < 0) & (b.sp > 0) & ~b.failed
        result = _replan_before(state, b, facts, explore)
        after = b.replace(sp=b.sp - result.pop.astype(jnp.int32), failed=b.failed | result.fail)
        after = _push(after, result.push)
        b = jax.tree_util.tree_map(lambda new, old: jnp.where(live, new, old), after, b)
        return b, jnp.where(live, jnp.where(result.fail, -1, result.action), action)

    bot, action = jax.lax.fori_loop(0, MAX_ROUNDS, round_, (bot, jnp.int32(-1)))
    bot = bot.replace(failed=bot.failed | ((action < 0) & (bot.sp > 0)))
    action = jnp.where(bot.failed | (action < 0), C.DONE, action)
    fwd_cell = facts.fwd_cell
    return action, bot.replace(
        prev_pos=facts.pos,
        prev_carrying=facts.carrying,
        door_was_open=jnp.where(fwd_cell[C.TYPE] == C.DOOR, _open_door(fwd_cell), bot.door_was_open),
        prev_front=fwd_cell[C.TYPE].astype(jnp.int32),
    )
