"""What every BabyAI level generator shares: whole-level rejection sampling, instruction builders, params.

A level module defines an *attempt* ``attempt(bits, lay) -> (RoomGridState, Instruction, accepted)``: one
run of minigrid's ``gen_mission`` + ``validate_instrs`` drawing its randomness from ``bits``
(``roomgrid.Bits``), with ``accepted`` False where minigrid would raise ``RejectSampling`` or
``RecursionError``. ``LevelGenerator`` turns it into ``generate(key, params) -> (GridState, Instruction)``:
attempts with fresh randomness in a bounded ``lax.while_loop`` until one is accepted, as
``RoomGridLevel._gen_grid`` restarts the whole level.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsoc.envs.babyai import instr as I
from jaxsoc.envs.babyai import roomgrid as RG
from jaxsoc.envs.gridworld.state import GridState, make_state

# An attempt is rejected with probability at most about 0.6 on every paper level, so 64 tries fail with
# probability below 1e-14 per reset.
DEFAULT_MAX_TRIES = 64


class LevelGenerator:
    """A jittable level generator ``generator(key, params) -> (GridState, Instruction)``.

    Args:
        name: the level's name (for messages).
        attempt: ``attempt(bits, lay) -> (RoomGridState, Instruction, accepted)`` (see the module docstring).
        max_tries: the cap on attempts per reset. When every attempt is rejected (probability below
            ``1e-14`` with the default), the last attempt is returned as is; ``sample`` reports it.
    """

    def __init__(self, name: str, attempt, max_tries: int = DEFAULT_MAX_TRIES):
        self.name = name
        self.attempt = attempt
        self.max_tries = max_tries
        self._traced: dict[RG.Layout, tuple] = {}

    def __repr__(self):
        return f"LevelGenerator({self.name!r})"

    def _shapes(self, lay: RG.Layout):
        """Returns ``(words, shapes)``: how many random ``uint32`` words one attempt uses and the shapes of
        its outputs, from one abstract trace (cached per layout)."""
        if lay not in self._traced:
            counter = RG.Bits(None)
            shapes = jax.eval_shape(lambda: self.attempt(counter, lay))
            self._traced[lay] = (counter.used, shapes)
        return self._traced[lay]

    def num_words(self, lay: RG.Layout) -> int:
        """Returns the number of random ``uint32`` words one attempt uses."""
        return self._shapes(lay)[0]

    def _try(self, key: jax.Array, lay: RG.Layout):
        n = self.num_words(lay)
        bits = RG.Bits(jax.random.bits(key, (n,), jnp.uint32))
        level, instruction, accepted = self.attempt(bits, lay)
        if bits.used != n:
            raise AssertionError(f"{self.name}: attempt used {bits.used} random words, expected {n}")
        return level, instruction, accepted & level.ok

    def sample(self, key: jax.Array, params: I.BabyAIParams):
        """Returns ``(GridState, Instruction, accepted, tries)``: the level, whether it passed every check
        (False only if ``max_tries`` attempts were all rejected) and how many attempts it took (``int32[]``)."""
        lay = RG.layout(params.room_size, params.num_rows, params.num_cols)
        if (lay.height, lay.width) != (params.height, params.width):
            raise ValueError(f"{self.name}: params height/width do not match the room layout")
        # the attempt is traced once, inside the loop, which starts from a rejected placeholder
        placeholder = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), self._shapes(lay)[1])

        def cond(carry):
            _, (_, _, accepted), tries = carry
            return ~accepted & (tries < self.max_tries)

        def body(carry):
            key, _, tries = carry
            key, sub = jax.random.split(key)
            return key, self._try(sub, lay), tries + 1

        _, (level, instruction, accepted), tries = jax.lax.while_loop(cond, body, (key, placeholder, jnp.int32(0)))
        world = make_state(level.grid, level.agent_pos, level.agent_dir)
        return world, instruction, accepted, tries

    def __call__(self, key: jax.Array, params: I.BabyAIParams) -> tuple[GridState, I.Instruction]:
        world, instruction, _, _ = self.sample(key, params)
        return world, instruction


def num_navs(instruction: I.Instruction) -> jax.Array:
    """minigrid's ``num_navs_needed``: 2 per ``put next`` leaf, 1 per other leaf, summed (``int32[]``)."""
    action = instruction.action
    return jnp.sum(jnp.where(action == I.ACT_PUTNEXT, 2, (action != I.ACT_NONE).astype(jnp.int32)))


def max_steps(instruction: I.Instruction, params: I.BabyAIParams) -> jax.Array:
    """The episode's step limit, ``num_navs * room_size**2 * num_rows * num_cols`` (``int32[]``), as
    ``RoomGridLevel.reset`` sets it."""
    return num_navs(instruction) * params.room_size**2 * params.num_rows * params.num_cols


def leaf_instruction(action: int, types, colors, locs=None) -> I.Instruction:
    """Returns a one-leaf ``Instruction``: ``action`` on descriptions ``types``/``colors``/``locs``
    (sequences of one, or two for ``put next``, traced or not)."""
    n = len(types)
    locs = [I.LOC_NONE] * n if locs is None else locs
    desc_type = jnp.full((I.MAX_LEAVES, 2), I.ANY_TYPE, jnp.int32).at[0, :n].set(jnp.stack(list(map(jnp.int32, types))))
    desc_color = (
        jnp.full((I.MAX_LEAVES, 2), I.ANY_COLOR, jnp.int32).at[0, :n].set(jnp.stack(list(map(jnp.int32, colors))))
    )
    desc_loc = jnp.full((I.MAX_LEAVES, 2), I.LOC_NONE, jnp.int32).at[0, :n].set(jnp.stack(list(map(jnp.int32, locs))))
    action_arr = jnp.zeros(I.MAX_LEAVES, jnp.int32).at[0].set(action)
    return I.Instruction(action_arr, desc_type, desc_color, desc_loc, jnp.int32(I.SEQ_NONE))


def level_params(room_size: int, num_rows: int, num_cols: int, navs: int = 1) -> I.BabyAIParams:
    """Returns the ``BabyAIParams`` of a room layout (view 7, no see-through walls). ``max_steps`` is the
    limit of a ``navs``-navigation instruction; a level whose instructions vary sets each episode's limit
    with ``max_steps(instruction, params)``."""
    lay = RG.layout(room_size, num_rows, num_cols)
    return I.BabyAIParams(
        max_steps=navs * room_size**2 * num_rows * num_cols,
        height=lay.height,
        width=lay.width,
        view_size=7,
        see_through_walls=False,
        room_size=room_size,
        num_rows=num_rows,
        num_cols=num_cols,
    )
