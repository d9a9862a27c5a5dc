"""The Hybrid helper's training view of the household (Watch-And-Help §5.2, appendix C.3): ``HybridEnv``, in which
the agent is Bob's high level, a semi-MDP whose step is one option (``options``).

Its action is one of ``options.NUM_CHOICES = 31`` choices; one step executes it for up to ``OPTION_STEPS = 24``
primitive steps (a fixed-length ``lax.scan`` with a done mask; the steps after the option ended change nothing).
Each primitive step Alice (``PlanningAlice``) acts and Bob executes the choice (``options.execute``). The option
ends as ``options.option_ended`` says, or when the episode ends (the episode's primitive-step limit stays exact);
its counts are those Bob has seen (``option_end="observed"``, ``options.observed_satisfied``) or, privileged, the
true ones (``"true"``, Alice's placements out of his view included: the rule of the runs trained before it existed).
Reward (App. C.3): +2 per goal predicate instance newly satisfied by either character (-2 per one undone), -0.1 per
primitive step, summed over the option's ``tau`` steps with ``gamma ** k``; ``info["option_discount"] = gamma **
tau`` is the bootstrap's discount, which ``ppo.Trainer`` reads into ``gae``. The observation is
``options.observation`` (with ``choice_mask``) and the state carries HP_TG's choice for it
(``options.expert_choice``, the warm start's label).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from jaxsoc.core import spaces
from jaxsoc.core.env import Environment
from jaxsoc.envs.household import env as E
from jaxsoc.envs.household import options as OPT
from jaxsoc.envs.household import world as W
from jaxsoc.envs.household.agents import agents as AG
from jaxsoc.envs.household.agents import belief as B
from jaxsoc.envs.household.agents import planner as P
from jaxsoc.envs.household.options import (
    NOOP_CHOICE,
    NUM_CHOICES,
    OPTION_STEPS,
    execute,
    expert_choice,
    observation,
    observation_space,
    option_ended,
)

STEP_PENALTY = 0.1
PREDICATE_REWARD = 2.0


class HybridState(struct.PyTreeNode):
    """``world``: the household; ``alice``: Alice's memory; ``belief``: Bob's belief; ``choice`` int32: the
    option chosen at the previous step (-1 at the start); ``subgoal_obj`` int32: its object (-1 none);
    ``expert`` int32: HP_TG's choice for the current observation (``expert_choice``, the warm start's label);
    ``sightings``: what Bob has seen (``options.Sightings``, the observed option ends' counts)."""

    world: W.State
    alice: Any
    belief: B.Belief
    choice: jax.Array
    subgoal_obj: jax.Array
    expert: jax.Array
    sightings: OPT.Sightings


class HybridEnv(Environment):
    """Bob's high level with a built-in Alice, as a semi-MDP (module docstring): one step is one option of up to
    ``OPTION_STEPS`` primitive steps. params: ``env.HouseholdParams`` (``teleport``: stage 1). ``info``:
    ``advance``'s of the option's last primitive step plus ``alice_action``, ``bob_action`` (that step's),
    ``subgoal_obj``, ``option_steps`` (int32, the primitive steps ``tau`` it took) and ``option_discount``
    (float32 ``gamma ** tau``, the bootstrap's discount).

    Args:
        alice_simulations: Alice's tree-search simulations (``PlanningAlice``), also HP_TG's for
            ``expert_choice``.
        alice: another built-in Alice (an ``env.AlicePolicy``); overrides ``alice_simulations`` for Alice.
        gamma: the discount per primitive step within an option.
        expert: compute HP_TG's choice (``expert_choice``) into the state at every observation (the warm
            start's label; ``NOOP_CHOICE`` without, which spares a tree search per option). The random stream
            is the same either way, so the episodes are too.
        option_end: ``options.OPTION_ENDS``: ``"observed"``, an option gains an instance when Bob sees it;
            ``"true"`` (privileged), when the true satisfied count rises.
    """

    stochastic_step = True

    def __init__(
        self,
        alice_simulations: int = P.NUM_SIMULATIONS,
        alice: E.AlicePolicy | None = None,
        gamma: float = 0.95,
        expert: bool = True,
        option_end: str = "observed",
    ) -> None:
        if alice_simulations < 1:
            raise ValueError(f"alice_simulations must be positive, got {alice_simulations}")
        if not 0 <= gamma <= 1:
            raise ValueError(f"gamma must be in [0, 1], got {gamma}")
        if alice is None:
            alice = AG.PlanningAlice(AG.PlanningAgent(char=0, num_simulations=alice_simulations))
        self.alice = alice
        self.expert_simulations = alice_simulations
        self.gamma = float(gamma)
        self.expert = bool(expert)
        self.option_end = OPT.check_option_end(option_end)
        super().__init__()

    def with_expert(self, expert: bool = True) -> HybridEnv:
        """Returns this environment (same Alice, simulations, gamma and option end) with ``expert`` on or off."""
        return type(self)(self.expert_simulations, self.alice, self.gamma, expert, self.option_end)

    def _counts(self, state: HybridState) -> jax.Array:
        """Returns ``int32[30]``: the counts an option's end compares (``option_end``) in ``state``."""
        if self.option_end == "true":
            return W.satisfied(state.world)
        return OPT.observed_satisfied(state.sightings, state.world.goal_target)

    def default_params(self) -> E.HouseholdParams:
        return E.params_for("train")

    def _observe(self, state: HybridState) -> dict:
        world = state.world
        return observation(world, world.goal_count, world.goal_target, state.choice)

    def _expert(self, key: jax.Array, state: HybridState) -> jax.Array:
        if not self.expert:
            return jnp.int32(NOOP_CHOICE)
        mask = self._observe(state)["choice_mask"]
        return expert_choice(key, state.belief, state.world, mask, self.expert_simulations)

    def reset_env(self, key, params):
        k_task, k_alice, k_expert = jax.random.split(key, 3)
        world = E.draw_task(k_task, params)
        state = HybridState(
            world=world,
            alice=self.alice.init(k_alice, world, params),
            belief=B.init(world),
            choice=jnp.int32(-1),
            subgoal_obj=jnp.int32(-1),
            expert=jnp.int32(NOOP_CHOICE),
            sightings=OPT.sight(OPT.no_sightings(), W.observe(world, OPT.BOB, False)),
        )
        state = state.replace(expert=self._expert(k_expert, state))
        return self._observe(state), state

    def _primitive(self, key, state: HybridState, choice, keep, params):
        """Returns ``(state, reward, terminated, truncated, info, valid)`` after one primitive step of both
        characters, Bob executing ``choice`` (``execute``)."""
        k_alice, k_bob, k_step = jax.random.split(key, 3)
        world = state.world
        alice_obs = W.observe(world, 0, params.goal_for[0])
        alice_action, alice = self.alice.act(k_alice, state.alice, alice_obs, world, params)
        bob_action, belief, obj, valid = execute(
            k_bob, state.belief, world, world.goal_count, world.goal_target, choice, keep
        )
        before = W.progress(world)[0]
        world, _, terminated, truncated, info = E.advance(k_step, world, jnp.stack([alice_action, bob_action]), params)
        reward = PREDICATE_REWARD * (info["achieved"] - before) - STEP_PENALTY
        info = dict(info, alice_action=alice_action, bob_action=bob_action, subgoal_obj=obj)
        sightings = OPT.sight(state.sightings, W.observe(world, OPT.BOB, False))
        state = state.replace(
            world=world, alice=alice, belief=belief, choice=choice, subgoal_obj=obj, sightings=sightings
        )
        return state, reward.astype(jnp.float32), terminated, truncated, info, valid

    def _transition(self, key, state: HybridState, action, params):
        k_steps, k_expert = jax.random.split(key)
        choice = jnp.asarray(action, jnp.int32)
        keep0 = jnp.where(choice == state.choice, state.subgoal_obj, -1)
        gamma = jnp.float32(self.gamma)
        shapes = jax.eval_shape(lambda s: self._primitive(k_steps, s, choice, keep0, params)[4], state)
        info0 = jax.tree_util.tree_map(lambda x: jnp.zeros(x.shape, x.dtype), shapes)

        def body(carry, k):
            st, alive, tau, ret, disc, term, trunc, info = carry
            keep = jnp.where(tau == 0, keep0, st.subgoal_obj)
            new, reward, t, tr, step_info, valid = self._primitive(k, st, choice, keep, params)
            ended = option_ended(choice, valid, self._counts(st), self._counts(new), tau + 1) | t | tr
            pick = lambda a, b: jax.tree_util.tree_map(lambda x, y: jnp.where(alive, x, y), a, b)  # noqa: E731
            carry = (
                pick(new, st),
                alive & ~ended,
                jnp.where(alive, tau + 1, tau),
                jnp.where(alive, ret + disc * reward, ret),
                jnp.where(alive, disc * gamma, disc),
                jnp.where(alive, t, term),
                jnp.where(alive, tr, trunc),
                pick(step_info, info),
            )
            return carry, None

        no = jnp.array(False)
        carry = (state, jnp.array(True), jnp.int32(0), jnp.float32(0.0), jnp.float32(1.0), no, no, info0)
        carry, _ = jax.lax.scan(body, carry, jax.random.split(k_steps, OPTION_STEPS))
        state, _, tau, ret, disc, terminated, truncated, info = carry
        state = state.replace(expert=self._expert(k_expert, state))
        info = dict(info, option_steps=tau, option_discount=disc, expert_choice=state.expert)
        return state, ret, terminated, truncated, info

    def step_env(self, key, state, action, params):
        state, reward, terminated, truncated, info = self._transition(key, state, action, params)
        return self._observe(state), state, reward, terminated, truncated, info

    def _auto_reset_step(self, key, state, action, params):
        """As ``HelperEnv._auto_reset_step``: the state is selected first and observed once."""
        key, key_reset = jax.random.split(key)
        stepped, reward, terminated, truncated, info = self._transition(key, state, action, params)
        _, fresh = self.reset_env(key_reset, params)
        state = jax.tree_util.tree_map(lambda a, b: jnp.where(terminated | truncated, a, b), fresh, stepped)
        info = dict(info, final_observation=self._observe(stepped), final_state=stepped)
        return self._observe(state), state, reward, terminated, truncated, info

    def action_space(self, params=None) -> spaces.Discrete:
        return spaces.Discrete(NUM_CHOICES)

    def observation_space(self, params=None) -> spaces.Dict:
        return observation_space()

    def render(self, state, params=None):
        from jaxsoc.envs.household.render import render

        return render(state.world)
