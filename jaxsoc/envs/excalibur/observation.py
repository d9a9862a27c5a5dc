"""What the EXCALIBUR agent observes (``observe``) and its space.

- ``image`` uint8[V, V, 4]: the egocentric view, indexed ``[i, j]`` as the grid engine's (walls occlude, as
  MiniGrid's ``process_vis``); channels: cell kind (``UNSEEN`` 0, ``FLOOR`` 1, ``WALL`` 2), 1 + the type of the
  furniture or floor item in the cell (0 none), 1 + its most salient colour (0 none), its look (0 plain,
  ``CLOSED`` 1 / ``OPEN`` 2 for openable furniture, ``LOADED`` 3 for anything with reachable items on or in it).
- ``direction`` int32; ``held`` int32 (1 + the held slot, 0 none); ``phase`` int32; ``phase_step`` int32 (steps in
  the phase; in the answer phases the index of the question being answered); ``last_action`` int32 (``NUM_ACTIONS``
  at the start of an episode).
- ``objects`` int16[N, OBJECT_COLUMNS]: one row per object slot, zeros unless the object is seen now (in view and
  reachable, or held): ``VISIBLE``, 1 + type, 1 + colours (2), 1 + materials (3), ``AHEAD`` / ``RIGHT`` (the cell's
  offset in the agent's frame), 1 + parent slot, link, open, held. The slot is the object's identity for the
  episode (it survives being looked away from), so a memory can bind what it learns to it.
- ``object_sizes`` float32[N, 4]: the sorted dimensions (m) of the objects seen now and, in column 3, the mass (kg)
  of the held object: mass is felt only while lifting.
- ``questions`` int16[Q, QUESTION_SLOTS]: zeros in phase I, the house's questions afterwards; ``question``
  int16[QUESTION_SLOTS]: the one being answered in phases II and IV (zeros otherwise).
- ``action_mask`` bool[NUM_ACTIONS]: the moves and interactions in phases I and III, the answers in II and IV.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.core import spaces
from jaxsoc.envs.excalibur import catalogue as K
from jaxsoc.envs.excalibur import state as S
from jaxsoc.envs.excalibur import world as W

UNSEEN, FLOOR, WALL = range(3)
PLAIN, CLOSED, OPEN, LOADED = range(4)
VISIBLE, TYPE, COLOR1, COLOR2, MATERIAL1, MATERIAL2, MATERIAL3, AHEAD, RIGHT, PARENT, LINK, IS_OPEN, HELD = range(13)
OBJECT_COLUMNS = 13
_EXPLORE_MASK = np.arange(S.NUM_ACTIONS) < S.ANSWER


def object_rows(shown, agent_dir, offset, types, colors, materials, parent, link, flags) -> jax.Array:
    """Returns ``int16[N, OBJECT_COLUMNS]``: the object table's rows (module docstring) of the ``shown`` (bool[N])
    slots, zeros elsewhere: 1, 1 + ``types`` (int[N]), 1 + ``colors`` (int[N, 2]), 1 + ``materials`` (int[N, 3]),
    ``offset`` (int32[N, 2], cell minus the agent's position) ahead and right of an agent facing ``agent_dir``,
    1 + ``parent``, ``link`` and the two ``flags`` (bool[N] each: open and held in the observation)."""
    forward = jnp.asarray(W._DIR_TO_VEC)[agent_dir]
    right = jnp.stack([-forward[1], forward[0]])
    plus_one = [types[:, None], colors[:, :2], materials[:, :3]]
    columns = [
        jnp.ones((shown.shape[0], 1), jnp.int32),
        jnp.concatenate([x.astype(jnp.int32) for x in plus_one], -1) + 1,
        (offset @ forward)[:, None],
        (offset @ right)[:, None],
        parent.astype(jnp.int32)[:, None] + 1,
        link.astype(jnp.int32)[:, None],
        jnp.stack([f.astype(jnp.int32) for f in flags], -1),
    ]
    return jnp.where(shown[:, None], jnp.concatenate(columns, -1), 0).astype(jnp.int16)


def observe(state: S.State, view_size: int = 7, last_action: jax.Array | int = S.NUM_ACTIONS) -> dict:
    """Returns the observation dict of the module docstring for ``state``."""
    house = state.house
    height, width = house.walls.shape
    num = house.valid.shape[0]
    x, y, inside, visible = W.view_cells(state, view_size)
    cx, cy = jnp.clip(x, 0, width - 1), jnp.clip(y, 0, height - 1)

    # what stands in each cell: furniture and floor items (one per cell), and whether it holds reachable items
    reach = W.accessible(state)
    standing = reach & (state.link == S.FLOOR)
    flat = jnp.where(standing, state.cell[:, 1].astype(jnp.int32) * width + state.cell[:, 0], height * width)
    occupant = jnp.full(height * width + 1, -1, jnp.int32).at[flat].set(jnp.arange(num, dtype=jnp.int32))[:-1]
    loaded_flat = jnp.where(
        reach & (state.link != S.FLOOR), state.cell[:, 1].astype(jnp.int32) * width + state.cell[:, 0], height * width
    )
    loaded = jnp.zeros(height * width + 1, bool).at[loaded_flat].set(True)[:-1]
    view_flat = cy * width + cx
    who = occupant[view_flat]
    safe = jnp.maximum(who, 0)
    kind = jnp.where(~visible, UNSEEN, jnp.where(~inside | house.walls[cy, cx], WALL, FLOOR))
    shown = visible & inside & (who >= 0)
    typ = jnp.where(shown, house.type[safe].astype(jnp.int32) + 1, 0)
    color = jnp.where(shown, house.colors[safe, 0].astype(jnp.int32) + 1, 0)
    openable = jnp.asarray(K.IS_OPENABLE)[house.type[safe].astype(jnp.int32)]
    look = jnp.where(openable, jnp.where(state.is_open[safe], OPEN, CLOSED), PLAIN)
    look = jnp.where(loaded[view_flat] & (~openable | state.is_open[safe]), LOADED, look)
    look = jnp.where(shown, look, PLAIN)
    image = jnp.stack([kind, typ, color, look], -1).astype(jnp.uint8)

    # the objects seen now, in the agent's frame
    seen = W.visible_objects(state, view_size)
    slot = jnp.arange(num)
    held = slot == state.held
    offset = jnp.where(held[:, None], 0, state.cell.astype(jnp.int32) - state.agent_pos)
    look = (house.type, house.colors, house.materials, state.parent, state.link)
    objects = object_rows(seen, state.agent_dir, offset, *look, (state.is_open, held))
    mass = jnp.where(held, house.mass, 0.0)
    sizes = jnp.where(seen[:, None], jnp.concatenate([house.dims, mass[:, None]], -1), 0.0).astype(jnp.float32)

    asked = state.phase != S.EXPLORE
    answering = (state.phase == S.ANSWER_FIRST) | (state.phase == S.ANSWER_AGAIN)
    k = jnp.clip(state.phase_step, 0, house.questions.shape[0] - 1)
    question = jnp.where(answering & (state.phase_step < house.num_questions), house.questions[k], 0)
    explore_mask = jnp.asarray(_EXPLORE_MASK)
    return {
        "image": image,
        "direction": state.agent_dir.astype(jnp.int32),
        "objects": objects,
        "object_sizes": sizes,
        "held": (state.held + 1).astype(jnp.int32),
        "phase": state.phase.astype(jnp.int32),
        "phase_step": state.phase_step.astype(jnp.int32),
        "last_action": jnp.asarray(last_action, jnp.int32),
        "questions": jnp.where(asked, house.questions, 0).astype(jnp.int16),
        "question": question.astype(jnp.int16),
        "action_mask": jnp.where(answering, ~explore_mask, explore_mask),
    }


def observation_space(num_objects: int, num_questions: int, view_size: int = 7) -> spaces.Dict:
    """Returns the ``spaces.Dict`` of ``observe`` for ``num_objects`` slots and ``num_questions`` questions."""
    big = np.iinfo(np.int16).max
    return spaces.Dict(
        {
            "image": spaces.Box(0, max(K.NUM_TYPES, K.NUM_COLORS) + 1, (view_size, view_size, 4), jnp.uint8),
            "direction": spaces.Discrete(4),
            "objects": spaces.Box(-big, big, (num_objects, OBJECT_COLUMNS), jnp.int16),
            "object_sizes": spaces.Box(0.0, 1e3, (num_objects, 4), jnp.float32),
            "held": spaces.Discrete(num_objects + 1),
            "phase": spaces.Discrete(4),
            "phase_step": spaces.Box(0, np.iinfo(np.int32).max, (), jnp.int32),
            "last_action": spaces.Discrete(S.NUM_ACTIONS + 1),
            "questions": spaces.Box(0, big, (num_questions, S.QUESTION_SLOTS), jnp.int16),
            "question": spaces.Box(0, big, (S.QUESTION_SLOTS,), jnp.int16),
            "action_mask": spaces.Box(0, 1, (S.NUM_ACTIONS,), jnp.bool_),
        }
    )
