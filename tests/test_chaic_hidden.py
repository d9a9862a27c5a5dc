"""CHAIC's learned helper reads only what it observes (issue 59): the shipped options helper
(``chaic-options-helper``, its partner model in its view) makes the same decisions, its observation, option choice,
action and whole memory, when the parts of the true state it has not seen are permuted and the objects it remembers
but no longer sees change state (taken or broken out of its view), as the household's belief-teacher test does for
Bob (``tests/test_household_help_observable.py``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.envs.chaic import options as OP
from jaxsoc.envs.chaic import state as S
from jaxsoc.envs.chaic import tasks as T
from jaxsoc.envs.chaic import world as W
from jaxsoc.learners.chaic.ppo_helper import load_ppo_helper

EPISODES = 4  # of the normal task's validation split


def hide_and_permute(state: S.State, remembered: np.ndarray) -> S.State:
    """Returns ``state`` with what the helper has not seen permuted: the objects out of its view and memory rolled
    among themselves (class, position, height, size, mass), the objects it remembers but does not see now broken
    (their status changed out of its view), and the goal counts rolled by one class."""
    o = jax.device_get(state.objects)
    visible = np.asarray(W.sightings(state, S.HELPER)["objects"])
    hidden = np.flatnonzero(~visible & ~remembered & (o.cls > 0) & (o.holder < 0))
    moved = np.roll(hidden, 1)
    fields = {}
    for name in ("cls", "pos", "height", "size", "mass"):
        values = np.array(getattr(o, name))
        values[hidden] = values[moved]
        fields[name] = jnp.asarray(values)
    fields["broken"] = jnp.asarray(o.broken | (remembered & ~visible & (o.cls > 0)))
    return state.replace(objects=state.objects.replace(**fields), goal_count=jnp.roll(state.goal_count, 1))


def _key_data(x):
    return jax.random.key_data(x) if jnp.issubdtype(x.dtype, jax.dtypes.prng_key) else x


def test_hidden_state_permuted_changes_no_decision():
    helper = load_ppo_helper("model:chaic-options-helper")
    timing = W.Timing()
    bank = jax.tree_util.tree_map(lambda x: x[:EPISODES], T.cached_split("normal", "validation").states)

    def first_decision(state, key):
        return helper.act(key, helper.init(key, state), state, timing)

    def decision(memory, state, key):
        """The policy's view and choice at a decision, and the helper's action and memory after it."""
        noticed = OP.notice(memory["options"], state, timing, helper.partner)
        _, perceived, _ = OP._decide(noticed, state, timing)
        obs = OP.observe(perceived, state, helper.env_params.replace(timing=timing), helper.rooms)
        option, net = helper.choose(helper.params, memory["net"], obs, key)
        action, after = helper.act(key, memory, state, timing)
        return {"obs": obs, "option": option, "net": net, "action": action, "memory": after}

    # the helper faces where it sees the most objects at the start
    def facing(state, heading):
        state = state.replace(agents=state.agents.replace(heading=state.agents.heading.at[S.HELPER].set(heading)))
        return W.sightings(state, S.HELPER)["objects"].sum()

    headings = jnp.arange(K.NUM_HEADINGS)
    counts = jax.jit(jax.vmap(jax.vmap(facing, (None, 0)), (0, None)))(bank, headings)
    best = jnp.argmax(counts, 1).astype(bank.agents.heading.dtype)
    bank = bank.replace(agents=bank.agents.replace(heading=bank.agents.heading.at[:, S.HELPER].set(best)))
    keys = jax.random.split(jax.random.key(3), EPISODES)
    _, memory = jax.jit(jax.vmap(first_decision))(bank, keys)
    # a frame later, turned round: what it saw at first is behind it, remembered but out of view
    a = bank.agents
    turned = bank.replace(
        agents=a.replace(heading=a.heading.at[:, S.HELPER].add(K.NUM_HEADINGS // 2) % K.NUM_HEADINGS),
        frame=bank.frame + 1,
    )
    remembered = np.asarray(memory["options"].agent.seen)
    one = lambda tree, i: jax.tree_util.tree_map(lambda x: x[i], tree)  # noqa: E731
    permuted = [hide_and_permute(one(turned, i), remembered[i]) for i in range(EPISODES)]
    permuted = jax.tree_util.tree_map(lambda *x: jnp.stack(x), *permuted)
    # the permutation moved hidden objects, changed remembered objects out of view, and the goal
    assert (np.asarray(permuted.objects.cls) != np.asarray(turned.objects.cls)).any()
    out_of_view = np.asarray(permuted.objects.broken) & ~np.asarray(turned.objects.broken)
    assert out_of_view.sum() >= 3
    assert (np.asarray(permuted.goal_count) != np.asarray(turned.goal_count)).any()

    decide = jax.jit(jax.vmap(decision))
    keys = jax.random.split(jax.random.key(4), EPISODES)
    raw = lambda tree: jax.device_get(jax.tree_util.tree_map(_key_data, tree))  # noqa: E731
    plain = raw(decide(memory, turned, keys))
    shuffled = raw(decide(memory, permuted, keys))
    # the changed objects were options it could choose (fetch), so the test can fail
    assert (plain["obs"]["action_mask"][:, OP.FETCH : OP.FETCH + S.MAX_OBJECTS] & out_of_view).any()
    flat_plain = jax.tree_util.tree_flatten_with_path(plain)[0]
    flat_shuffled = jax.tree_util.tree_leaves(shuffled)
    for (path, x), y in zip(flat_plain, flat_shuffled, strict=True):
        np.testing.assert_array_equal(x, y, err_msg=jax.tree_util.keystr(path))
