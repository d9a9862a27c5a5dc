"""A household episode played by scripted or random characters (``jaxsoc household render``): ``rollout`` steps
Alice and Bob under ``POLICIES`` (no planner, no learner) and keeps every state."""

from __future__ import annotations

import jax
import jax.numpy as jnp

#: the characters' scripted policies: the no-op, a random valid action, the solver that reads the true state
POLICIES = ("noop", "random", "solver")


def policy(name: str, char: int):
    """Returns ``act(key, state) -> int32`` of policy ``name`` (``POLICIES``) for character ``char``."""
    from jaxsoc.envs.household import env as E

    if name == "noop":
        return lambda key, state: jnp.int32(0)
    if name == "random":
        return lambda key, state: E.random_valid_action(key, state, char)
    from jaxsoc.envs.household.solver import solver_action

    return lambda key, state: solver_action(state, char)


def rollout(task, params, alice: str, bob: str, steps: int, key: jax.Array):
    """Returns ``(states, actions, success)``: a household ``world.State`` with a leading axis of ``steps + 1``
    (the first is ``task``), the ``int32[steps, 2]`` actions taken, and ``bool[steps]`` success after each step.
    Once the goal holds the state stays as it is."""
    from jaxsoc.envs.household import env as E

    policies = (policy(alice, 0), policy(bob, 1))

    def body(carry, k):
        state, done = carry
        k_a, k_b, k_step = jax.random.split(k, 3)
        actions = jnp.stack([policies[0](k_a, state), policies[1](k_b, state)])
        actions = jnp.where(done, 0, actions)
        nxt, _, success, _, _ = E.advance(k_step, state, actions, params)
        nxt = jax.tree_util.tree_map(lambda new, old: jnp.where(done, old, new), nxt, state)
        return (nxt, done | success), (nxt, actions, done | success)

    _, (states, actions, success) = jax.lax.scan(body, (task, jnp.array(False)), jax.random.split(key, steps))
    states = jax.tree_util.tree_map(lambda first, rest: jnp.concatenate([first[None], rest]), task, states)
    return states, actions, success
