"""``MiniGrid-KeyCorridorS*R*-v0`` (minigrid 3.2.0 ``envs/keycorridor.py``): pick up the ball behind a locked door
whose key lies in another room.

The world is the one ``BabyAI-KeyCorridor*`` levels use (``babyai.levels.bonus_goto.key_corridor``): three
columns of ``num_rows`` rooms, the middle column one hallway, the ball in a right-column room behind a locked
door, its key in a left-column room. The task is minigrid's ``KeyCorridorEnv``: a ``pickup`` that leaves the
agent carrying the ball succeeds; the mission is "pick up the {color} ball" and ``max_steps`` is
``30 * room_size**2``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsoc.envs.babyai import roomgrid as RG
from jaxsoc.envs.babyai.levels.bonus_goto import key_corridor
from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld import mission as M
from jaxsoc.envs.gridworld import placement as P
from jaxsoc.envs.gridworld.env import GridEnvironment
from jaxsoc.envs.gridworld.state import GridParams, GridState, make_state


class KeyCorridor(GridEnvironment):
    """``MiniGrid-KeyCorridorS{room_size}R{num_rows}-v0``; ``state.target_obj`` is the ball ``(BALL, color)``."""

    mission_observation = True

    def __init__(self, room_size: int = 6, num_rows: int = 3, **params):
        self.layout = RG.layout(room_size, num_rows, 3)
        lay = self.layout
        super().__init__(height=lay.height, width=lay.width, **{"max_steps": 30 * room_size**2, **params})

    def generate(self, key: jax.Array, params: GridParams) -> GridState:
        """Returns a new level (the ``key_corridor`` world with its ball as ``target_obj``)."""
        lay = self.layout
        if (params.height, params.width) != (lay.height, lay.width):
            raise ValueError("params height/width do not match the KeyCorridor layout")
        num_words = P.count_words(lambda bits: key_corridor(bits, lay))
        bits = P.Bits(jax.random.bits(key, (num_words,), jnp.uint32))
        state, ball_color = key_corridor(bits, lay)
        target = jnp.stack([jnp.int32(C.BALL), ball_color]).astype(jnp.uint8)
        return make_state(state.grid, state.agent_pos, state.agent_dir, target_obj=target)

    def task_outcome(self, state, action, moved, params):
        carrying_ball = jnp.all(state.carrying[: C.COLOR + 1] == state.target_obj)
        return (action == C.PICKUP) & carrying_ball, jnp.bool_(False)

    def mission_tokens(self, state: GridState, params: GridParams | None = None) -> jax.Array:
        """Returns "pick up the {color} ball" as ``int32[mission.MAX_TOKENS]`` word ids."""
        return M.compose("pick up the", M.color_word(state.target_obj[C.COLOR]), M.type_word(state.target_obj[0]))


ENVS = {
    f"MiniGrid-KeyCorridorS{size}R{rows}-v0": (KeyCorridor, {"room_size": size, "num_rows": rows})
    for size, rows in ((3, 1), (3, 2), (3, 3), (4, 3), (5, 3), (6, 3))
}
