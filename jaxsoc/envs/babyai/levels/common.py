"""What every BabyAI level generator shares: whole-level rejection sampling, instruction builders, params.

A level module defines an *attempt* ``attempt(bits, lay) -> (RoomGridState, Instruction, accepted)``: one
run of minigrid's ``gen_mission`` + ``validate_instrs`` drawing its randomness from ``bits``
(``roomgrid.Bits``), with ``accepted`` False where minigrid would raise ``RejectSampling`` or
``RecursionError``. A level whose agent starts with an object in hand (minigrid's
``PutNext(start_carrying)``) returns a fourth element, the carried cell (``uint8[NUM_CHANNELS]``, with its
``OBJ_ID``), which becomes the ``GridState``'s ``carrying``; a three-element attempt starts empty-handed.
``LevelGenerator`` turns it into ``generate(key, params) -> (GridState, Instruction)``: the first accepted
of a sequence of attempts with fresh randomness, as ``RoomGridLevel._gen_grid`` restarts the whole level.
On accelerators the attempts are not a loop with a data-dependent stop (on a GPU such a loop reads its condition
back to the host every iteration): all ``MAX_TRIES[level]`` attempts run, up to ``MAX_PARALLEL`` at once with
``vmap``, and the first accepted one is selected. On the CPU, where a loop's condition never leaves the device,
the attempts run one at a time and stop at the first accepted one; the level is the same.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from jaxsoc.envs.babyai import instr as I
from jaxsoc.envs.babyai import roomgrid as RG
from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld.state import GridState, make_state

# Attempts per reset, per level: the K = MAX_TRIES[level] attempts all run, so a reset costs K attempts, and
# it fails (every attempt rejected, the last one kept) with probability p**K for a rejection rate p. K is the
# smallest with p_up**K < 1e-12, p_up being the measured rate plus 6 standard errors, rounded up to 0.01.
# Rates measured with the former sequential sampler: the attempts `sample` reported over 20,000 resets per
# level (keys fold_in(key(2024), chunk) split 2000 ways); "most" is the most attempts one reset took.
#
#   level            attempts  rejected  p       p_up   K   most
#   GoToObj             20000         0  0       -      1     1   (cannot reject: one object, an empty room)
#   GoToRedBallGrey     23624      3624  0.1534  0.17  16     5
#   GoToRedBall         23624      3624  0.1534  0.17  16     5
#   GoToLocal           23665      3665  0.1549  0.17  16     6
#   PutNextLocal        26187      6187  0.2363  0.26  21     6
#   PickupLoc           24511      4511  0.1840  0.20  18     6
#   GoToObjMaze         20557       557  0.0271  0.04   9     3
#   GoTo                38902     18902  0.4859  0.51  42    15
#   Pickup              38902     18902  0.4859  0.51  42    15
#   UnblockPickup       37664     17664  0.4690  0.49  39    14
#   Open                38902     18902  0.4859  0.51  42    15
#   Unlock              63331     43331  0.6842  0.70  78    27
#   PutNext             42572     22572  0.5302  0.55  47    15
#   Synth               21512      1512  0.0703  0.09  12     4
#   SynthLoc            21438      1438  0.0671  0.08  11     5
#   GoToSeq             39330     19330  0.4915  0.51  42    15
#   SynthSeq            22973      2973  0.1294  0.15  15     5
#   GoToImpUnlock       41833     21833  0.5219  0.54  45    16
#   BossLevel           22823      2823  0.1237  0.14  15     5
MAX_TRIES = {
    "GoToObj": 1,
    "GoToRedBallGrey": 16,
    "GoToRedBall": 16,
    "GoToLocal": 16,
    "PutNextLocal": 21,
    "PickupLoc": 18,
    "GoToObjMaze": 9,
    "GoTo": 42,
    "Pickup": 42,
    "UnblockPickup": 39,
    "Open": 42,
    "Unlock": 78,
    "PutNext": 47,
    "Synth": 12,
    "SynthLoc": 11,
    "GoToSeq": 42,
    "SynthSeq": 15,
    "GoToImpUnlock": 45,
    "BossLevel": 15,
}
DEFAULT_MAX_TRIES = 64  # a generator without an entry (a rate of 0.65 still fails with probability < 1e-11)
# Attempts run at once per reset on accelerators: a full reset of 16,384 worlds then holds about 15 GiB.
MAX_PARALLEL = 16


class LevelGenerator:
    """A jittable level generator ``generator(key, params) -> (GridState, Instruction)``.

    Args:
        name: the level's name (for messages, and its ``MAX_TRIES`` entry).
        attempt: ``attempt(bits, lay) -> (RoomGridState, Instruction, accepted[, carrying])`` (see the module
            docstring).
        max_tries: the number of attempts per reset, ``K`` (default ``MAX_TRIES[name]``). When every attempt
            is rejected (probability below ``1e-12`` with the defaults), the last attempt is returned as is;
            ``sample`` reports it.
        parallel: how many attempts run at once (``vmap``), in ``ceil(K / parallel)`` rounds of a ``scan``
            with a static trip count. The levels do not depend on it. By default, on CPU one at a time (the
            working set of many attempts at once makes a reset about twice as slow), on accelerators, where a
            round costs about as much whatever its width, up to ``MAX_PARALLEL`` (in as few rounds as that
            allows): an attempt in flight holds about 56 KiB, so memory, not time, limits the width.
    """

    def __init__(self, name: str, attempt, max_tries: int | None = None, parallel: int | None = None):
        self.name = name
        self.attempt = attempt
        self.max_tries = MAX_TRIES.get(name, DEFAULT_MAX_TRIES) if max_tries is None else max_tries
        self.parallel = parallel
        self._traced: dict[RG.Layout, tuple] = {}

    def __repr__(self):
        return f"LevelGenerator({self.name!r})"

    def _run(self, bits: RG.Bits, lay: RG.Layout):
        """Returns ``(RoomGridState, Instruction, carrying, accepted)`` of one attempt, ``carrying`` the
        ``uint8[NUM_CHANNELS]`` cell the agent starts with (``EMPTY_CELL`` for a three-element attempt)."""
        level, instruction, accepted, *held = self.attempt(bits, lay)
        carrying = held[0] if held else jnp.asarray(C.EMPTY_CELL)
        return level, instruction, jnp.asarray(carrying, jnp.uint8), accepted

    def _shapes(self, lay: RG.Layout):
        """Returns ``(words, shapes)``: how many random ``uint32`` words one attempt uses and the shapes of
        its outputs ``(level, instruction, carrying, accepted)``, from one abstract trace (cached per layout)."""
        if lay not in self._traced:
            counter = RG.Bits(None)
            shapes = jax.eval_shape(lambda: self._run(counter, lay))
            self._traced[lay] = (counter.used, shapes)
        return self._traced[lay]

    def num_words(self, lay: RG.Layout) -> int:
        """Returns the number of random ``uint32`` words one attempt uses."""
        return self._shapes(lay)[0]

    def _try_carrying(self, key: jax.Array, lay: RG.Layout):
        """Returns ``(RoomGridState, Instruction, carrying, accepted)`` of the attempt drawn from ``key``."""
        n = self.num_words(lay)
        bits = RG.Bits(jax.random.bits(key, (n,), jnp.uint32))
        level, instruction, carrying, accepted = self._run(bits, lay)
        if bits.used != n:
            raise AssertionError(f"{self.name}: attempt used {bits.used} random words, expected {n}")
        return level, instruction, carrying, accepted & level.ok

    def _try(self, key: jax.Array, lay: RG.Layout):
        """Returns ``(RoomGridState, Instruction, accepted)`` of the attempt drawn from ``key``."""
        level, instruction, _, accepted = self._try_carrying(key, lay)
        return level, instruction, accepted

    def sample(self, key: jax.Array, params: I.BabyAIParams):
        """Returns ``(GridState, Instruction, accepted, tries)``: the level, whether it passed every check
        (False only if all ``max_tries`` attempts were rejected) and the number of the attempt it is
        (``int32[]``, from 1), as if the attempts ran one after the other until one was accepted.

        Attempt ``i`` draws from the ``i``-th key of the chain ``key, sub = split(key)``, so the level is the
        one a sequential rejection loop over that chain returns. One at a time (the CPU's default) the loop stops
        at the first accepted attempt (``_first_accepted``); ``parallel`` at a time all ``max_tries`` attempts are
        computed in rounds of static length (``_rounds``). Either way the first accepted one is kept; with none
        accepted, the last one."""
        lay = RG.layout(params.room_size, params.num_rows, params.num_cols)
        if (lay.height, lay.width) != (params.height, params.width):
            raise ValueError(f"{self.name}: params height/width do not match the room layout")
        tries = self.max_tries
        if self.parallel is not None:
            parallel = max(1, min(self.parallel, tries))
        elif jax.default_backend() == "cpu":
            parallel = 1
        else:  # the fewest rounds of at most MAX_PARALLEL attempts, as even as can be
            parallel = -(-tries // -(-tries // MAX_PARALLEL))
        if parallel == 1:
            level, instruction, carrying, accepted, number = self._first_accepted(key, lay, tries)
        else:
            level, instruction, carrying, accepted, number = self._rounds(key, lay, tries, parallel)
        world = make_state(level.grid, level.agent_pos, level.agent_dir, carrying=carrying)
        return world, instruction, accepted, number + 1

    def _rounds(self, key: jax.Array, lay: RG.Layout, tries: int, parallel: int):
        """Returns ``(level, instruction, carrying, accepted, number)``: all ``tries`` attempts, ``parallel`` at a
        time in a ``scan`` of static length, the first accepted kept (else the last); ``number`` counts from 0."""
        rounds = -(-tries // parallel)

        def split(key, _):
            key, sub = jax.random.split(key)
            return key, sub

        _, subs = jax.lax.scan(split, key, None, length=rounds * parallel, unroll=True)

        def round_(carry, xs):
            found, chosen, number = carry
            r, keys = xs
            levels, instructions, carried, accepted = jax.vmap(lambda sub: self._try_carrying(sub, lay))(keys)
            index = r * parallel + jnp.arange(parallel, dtype=jnp.int32)
            accepted = accepted & (index < tries)  # keys past the last attempt only pad the last round
            first = jnp.argmax(accepted)  # the round's first accepted attempt (0 if none)
            # the first accepted attempt of all, else (in the last round) the last attempt
            pick = jnp.where(accepted[first], first, (tries - 1) % parallel)
            take = ~found & (accepted[first] | (r == rounds - 1))
            chosen = jax.tree.map(
                lambda new, old: jnp.where(take, new[pick], old), (levels, instructions, carried), chosen
            )
            return (found | accepted[first], chosen, jnp.where(take, index[pick], number)), None

        nothing = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), self._shapes(lay)[1][:3])
        init = (jnp.bool_(False), nothing, jnp.int32(0))
        xs = (jnp.arange(rounds, dtype=jnp.int32), subs.reshape(rounds, parallel))
        (accepted, (level, instruction, carrying), number), _ = jax.lax.scan(round_, init, xs)
        return level, instruction, carrying, accepted, number

    def _first_accepted(self, key: jax.Array, lay: RG.Layout, tries: int):
        """As ``_rounds`` one attempt at a time, stopping at the first accepted (or after ``tries``): a loop whose
        trip count depends on the levels drawn, for the CPU only, where its condition never leaves the device
        (the jit named ``_first_accepted_attempt``; ``tests/test_no_dynamic_loops.py`` accepts it there and
        checks that the accelerators' path, ``_rounds``, has none). Under ``vmap`` it runs until every world's
        attempt is accepted: for a batch of ``n`` worlds about ``log(n) / log(1 / p)`` attempts at rejection rate
        ``p`` instead of all ``tries``."""
        return _first_accepted_attempt(self, key, lay, tries)

    def __call__(self, key: jax.Array, params: I.BabyAIParams) -> tuple[GridState, I.Instruction]:
        world, instruction, _, _ = self.sample(key, params)
        return world, instruction


@functools.partial(jax.jit, static_argnums=(0, 2, 3))
def _first_accepted_attempt(generator: LevelGenerator, key: jax.Array, lay: RG.Layout, tries: int):
    """``LevelGenerator._first_accepted``'s loop."""

    def more(carry):
        number, _, found, _ = carry
        return ~found & (number < tries)

    def attempt(carry):
        number, key, _, _ = carry
        key, sub = jax.random.split(key)
        level, instruction, carrying, accepted = generator._try_carrying(sub, lay)
        return number + 1, key, accepted, (level, instruction, carrying)

    nothing = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), generator._shapes(lay)[1][:3])
    number, _, accepted, chosen = jax.lax.while_loop(more, attempt, (jnp.int32(0), key, jnp.bool_(False), nothing))
    return (*chosen, accepted, number - 1)


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
