"""EXCALIBUR's evaluated learned agents read only what they observe: the pretrained memory explorer
(``model:excalibur-memory-explorer``, moves sampled as it is evaluated) and the answerer answering from its memory
(``model:excalibur-answerer``) decide the same, step by step, when the hidden parts of the true state are permuted:
the attributes of the objects not yet seen (shuffled among the unseen objects of the same kind), the walls of the
cells never in view (removed), the room types and the true answers. The same permutations change the true answers
of some houses' questions and the answers the same answerer gives from a privileged memory of the whole house, so
they hide something that matters (as the household's belief-teacher test shows for Bob's privileged planner).
That the memory's relations read no wall the agent has not seen is tested on a hand-made house in
tests/test_excalibur_answerer.py."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsoc.envs.excalibur import catalogue as K
from jaxsoc.envs.excalibur import memory as MEM
from jaxsoc.envs.excalibur import questions as Q
from jaxsoc.envs.excalibur import world as W
from jaxsoc.envs.excalibur.env import ExcaliburEnv, ExcaliburParams
from jaxsoc.envs.excalibur.explorer_env import answerer_read
from jaxsoc.learners.excalibur import answerer as ANS
from jaxsoc.learners.excalibur import explorer as X
from tests.excalibur_scenes import small_bank
from tests.test_excalibur_answerer import COMMITTED

EXPLORER = "model:excalibur-memory-explorer"
HOUSES, STEPS = 2, 8
#: a type's kind: what decides where it may stand and what it lets be seen (kept by the shuffle)
KIND = np.stack([K.IS_PICKUP, K.IS_FURNITURE, K.IS_SURFACE, K.IS_CONTAINER, K.IS_OPENABLE, K.ON_FLOOR], -1)


def hide_elsewhere(state, rng: np.random.Generator):
    """Returns ``state`` with the hidden parts of its house changed (module docstring) and the number of unseen
    objects whose attributes moved: each kind's unseen objects take one another's type, colours, materials,
    dimensions and mass (rolled by one), every wall of a cell not viewed goes, the room types and the true
    answers are permuted."""
    house = jax.device_get(state.house)
    seen = np.asarray(state.tracks.seen).any(0)
    viewed = np.asarray(state.tracks.viewed).any(0)
    hidden = np.flatnonzero(np.asarray(house.valid) & ~seen)
    fields = {name: np.array(getattr(house, name)) for name in ("type", "colors", "materials", "dims", "mass")}
    kinds = KIND[fields["type"][hidden].astype(int)]
    moved = 0
    for kind in np.unique(kinds, axis=0):
        group = hidden[(kinds == kind).all(-1)]
        if len(group) < 2:
            continue
        for values in fields.values():
            values[group] = values[np.roll(group, 1)]
        moved += len(group)
    answers = np.asarray(house.answers)
    new = house.replace(
        walls=jnp.asarray(np.asarray(house.walls) & viewed),
        room_type=jnp.asarray(rng.permutation(np.asarray(house.room_type))),
        answers=jnp.asarray(np.where(answers >= 0, (answers + 1) % K.NUM_ANSWERS, answers).astype(answers.dtype)),
        **{name: jnp.asarray(values) for name, values in fields.items()},
    )
    return state.replace(house=new), moved


def house_of(bank, h: int):
    """Returns house ``h`` of ``bank``."""
    return jax.tree_util.tree_map(lambda x: x[h], bank)


@pytest.fixture(scope="module")
def agent():
    """The pretrained memory explorer with the pretrained answerer, moves sampled (``jaxsoc excalibur eval
    --sample``, as the model is scored)."""
    answerer, answerer_variables, _ = ANS.load(COMMITTED)
    policy, variables, record = X.load_explorer(EXPLORER)
    return X.MemoryPolicyAgent(
        policy=policy,
        policy_variables=variables,
        answerer=answerer,
        answerer_variables=answerer_variables,
        greedy=False,
        allow_stop=bool(record["allow_stop"]),
    )


def test_the_learned_explorer_and_answerer_decide_alike_whatever_they_have_not_seen(agent):
    env = ExcaliburEnv("answers")
    params = ExcaliburParams(houses=small_bank(), explore_budget=STEPS + 2, reenter_budget=2)
    start = jax.jit(W.initial_state)
    step = jax.jit(lambda k, s, a: env.step_env(k, s, a, params)[1])
    act = jax.jit(agent.act)

    @jax.jit
    def judge(memory, state):
        """The answerer's answers to every question from the memory written at ``state``."""
        objects = MEM.write(memory["objects"], state)
        return answerer_read(agent.answerer, agent.answerer_variables, objects, state.house)[1]

    @jax.jit
    def privileged(house):
        """The true answers to the house's questions and the answerer's from a memory of the whole house."""
        whole = MEM.from_knowledge(house, house.valid, house.valid, jnp.ones_like(house.walls))
        truth = jax.vmap(Q.answer, in_axes=(None, 0))(house, house.questions)[0]
        return truth, answerer_read(agent.answerer, agent.answerer_variables, whole, house)[1]

    rng = np.random.default_rng(0)
    moved = 0
    for h in range(HOUSES):
        key = jax.random.key(h)
        state = start(house_of(params.houses, h))
        memory = agent.init(key, state)
        for t in range(STEPS):
            k_act, k_step = jax.random.split(jax.random.fold_in(key, t))
            other, n = hide_elsewhere(state, rng)
            moved += n
            (action, after), (action_2, after_2) = act(k_act, memory, state), act(k_act, memory, other)
            assert int(action) == int(action_2), (h, t)
            jax.tree_util.tree_map(np.testing.assert_array_equal, after, after_2)  # the next decisions too
            np.testing.assert_array_equal(np.asarray(judge(memory, state)), np.asarray(judge(memory, other)))
            state, memory = step(k_step, state, action), after
    assert moved > 0
    # the shuffles hide something that matters: over the bank, seen from the spawn, some true answers change, and
    # so do the answers from a privileged memory of the whole house
    changed = np.zeros(2, int)
    for h in range(params.houses.valid.shape[0]):
        state = start(house_of(params.houses, h))
        asked = np.arange(state.house.questions.shape[0]) < int(state.house.num_questions)
        before, after = privileged(state.house), privileged(hide_elsewhere(state, rng)[0].house)
        changed += [int((np.asarray(b)[asked] != np.asarray(a)[asked]).any()) for b, a in zip(before, after)]
    assert (changed >= 2).all(), changed
