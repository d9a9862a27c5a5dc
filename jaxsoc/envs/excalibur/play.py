"""Running EXCALIBUR episodes with an agent (``agents``' protocol), the behaviour evaluation, a learned-policy
adapter and the behaviour table beside the paper's.

- ``rollout`` plays ``E`` whole episodes at once: the episodes vmapped inside a ``lax.scan`` over a static number
  of steps (``max_steps``: the longest an episode can last), with ``env.step_env`` and no auto-reset; an episode
  freezes at the state of the step that ended its phase IV (``world.step``'s ``done``). Once every episode of the
  batch has ended the remaining steps cost nothing (a ``lax.cond`` on the batch), and for an agent with an
  ``explore_act`` (the scripted explorers) the answering computation runs only at the steps where some live episode
  is in an answer phase (another ``lax.cond``). One compilation per (env, agent settings, shapes).
- ``evaluate`` summarises the final states with ``metrics.behaviour`` (Table 7's TTI, Area, % Seen, % Interacted
  per exploration phase, the accuracies of phases II and IV and the steps), optionally the exploration score
  ``metrics.exqa`` for a given ``k``.
- ``PolicyAgent`` turns a network of the learners' policy protocol (``networks.registry``: ``initial_memory``,
  ``encode_context``, ``step``) into an agent: it observes with ``observation.observe`` and acts on the network's
  log-probabilities; ``evaluate_policy`` evaluates one.
- ``behaviour_table`` formats several agents' summaries next to ``metrics.PAPER_TABLE7`` as markdown.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsoc.core.autoreset import select_rows
from jaxsoc.envs.excalibur import houses as H
from jaxsoc.envs.excalibur import metrics as M
from jaxsoc.envs.excalibur import observation as O
from jaxsoc.envs.excalibur import state as S


def max_steps(params) -> int:
    """Returns the most steps an episode can take under ``params`` (an ``env.ExcaliburParams`` with concrete
    budgets): ``explore_budget + reenter_budget + 2 * Q + 2`` (``Q`` the question rows). Raises ``TypeError``
    when a budget is traced."""
    try:
        explore, reenter = int(params.explore_budget), int(params.reenter_budget)
    except (TypeError, jax.errors.ConcretizationTypeError) as error:
        raise TypeError("rollout needs concrete (Python int) explore_budget and reenter_budget") from error
    return explore + reenter + 2 * int(params.houses.questions.shape[-2]) + 2


@functools.partial(jax.jit, static_argnames=("env", "num_episodes", "num_steps"))
def _rollout(env, params, agent, key: jax.Array, num_episodes: int, num_steps: int):
    k_reset, k_init, k_run = jax.random.split(key, 3)
    _, states = jax.vmap(env.reset_env, in_axes=(0, None))(jax.random.split(k_reset, num_episodes), params)
    memory = jax.vmap(agent.init)(jax.random.split(k_init, num_episodes), states)

    act = jax.vmap(agent.act)
    explore_act = jax.vmap(agent.explore_act) if hasattr(agent, "explore_act") else None
    step = jax.vmap(env.step_env, in_axes=(0, 0, 0, None))

    def live(carry, t):
        states, memory, done = carry
        keys = jax.vmap(jax.random.split)(jax.random.split(jax.random.fold_in(k_run, t), num_episodes))
        k_act, k_step = keys[:, 0], keys[:, 1]
        if explore_act is None:
            actions, new_memory = act(k_act, memory, states)
        else:  # the answering computation only at the steps where some live episode answers
            answering = ~done & (states.phase != S.EXPLORE) & (states.phase != S.REENTER)
            actions, new_memory = jax.lax.cond(answering.any(), act, explore_act, k_act, memory, states)
        _, new_states, _, terminated, _, _ = step(k_step, states, actions, params)
        states = select_rows(done, states, new_states)
        memory = select_rows(done, memory, new_memory)
        return states, memory, done | terminated

    def body(carry, t):
        return jax.lax.cond(carry[2].all(), lambda c, _: c, live, carry, t), None

    carry = (states, memory, jnp.zeros(num_episodes, bool))
    (states, _, _), _ = jax.lax.scan(body, carry, jnp.arange(num_steps))
    return states


def rollout(env, params, agent, key: jax.Array, num_episodes: int) -> S.State:
    """Returns the final ``State`` of ``num_episodes`` episodes (every field with a leading axis ``E``), each on a
    house drawn by ``env.reset_env`` from ``params.houses`` and played by ``agent`` (``agents``' protocol) to the end
    of its phase IV; at most ``max_steps(params)`` steps (budgets must be concrete). Deterministic in ``key``.
    Jitted once per (env, agent settings, ``num_episodes``, shapes)."""
    if num_episodes < 1:
        raise ValueError(f"num_episodes must be >= 1, got {num_episodes}")
    return _rollout(env, params, agent, key, num_episodes=int(num_episodes), num_steps=max_steps(params))


def knowledge_accuracy(state: S.State, known: tuple[jax.Array, jax.Array]) -> jax.Array:
    """Returns ``float32``: the fraction of the house's questions answered right from ``known = (seen bool[N],
    lifted bool[N])`` as the scripted explorers answer (``agents.answer_action``: the family's default where the
    knowledge gives no valid answer). For a learned agent it measures its exploration apart from its answer head."""
    from jaxsoc.envs.excalibur import agents as A
    from jaxsoc.envs.excalibur import questions as Q

    return Q.accuracy(state.house, known, A.DEFAULT_ANSWER)


@jax.jit
def _behaviour(states: S.State) -> dict[str, jax.Array]:
    reachable = jax.vmap(H.reachable)(states.house)
    out = jax.vmap(M.behaviour)(states, reachable)
    tracks = states.tracks
    out["knowledge_first"] = jax.vmap(knowledge_accuracy)(states, (tracks.seen[:, 0], tracks.lifted[:, 0]))
    out["knowledge_again"] = jax.vmap(knowledge_accuracy)(states, (tracks.seen.any(1), tracks.lifted.any(1)))
    return out


def episode_metrics(states: S.State) -> dict[str, np.ndarray]:
    """Returns ``metrics.behaviour`` of each finished episode of ``states`` (a leading axis ``E``) as
    ``float32[E]`` numpy arrays."""
    return {name: np.asarray(value) for name, value in jax.device_get(_behaviour(states)).items()}


#: the metrics ``evaluate`` gives a standard error for
SE_KEYS = ("accuracy_first", "accuracy_again", "knowledge_first", "knowledge_again")


def evaluate(env, params, agent, key: jax.Array, num_episodes: int, k: float | None = None) -> dict[str, float]:
    """Returns the mean over ``num_episodes`` episodes (``rollout``) of ``metrics.behaviour``: ``accuracy_first``,
    ``accuracy_again`` (in [0, 1]) and ``{explore,reenter}_{tti,area,seen,interacted,steps}``; with ``k`` also
    ``exqa_first`` / ``exqa_again``: ``metrics.exqa`` of the phase II accuracy with phase I's steps and of the
    phase IV accuracy with the steps of phases I and III. ``episodes`` holds ``num_episodes``; ``{name}_se`` the
    standard error of the mean of each of ``SE_KEYS``."""
    rows = episode_metrics(rollout(env, params, agent, key, num_episodes))
    if k is not None:
        rows["exqa_first"] = M.exqa(rows["accuracy_first"], rows["explore_steps"], k)
        rows["exqa_again"] = M.exqa(rows["accuracy_again"], rows["explore_steps"] + rows["reenter_steps"], k)
    out = M.summarise(rows)
    for name in SE_KEYS:  # the standard error of the mean over episodes
        out[f"{name}_se"] = float(np.std(rows[name], ddof=1) / np.sqrt(num_episodes)) if num_episodes > 1 else 0.0
    out["episodes"] = float(num_episodes)
    return out


# -- learned policies -----------------------------------------------------------------------------------------


class PolicyAgent(struct.PyTreeNode):
    """A network of the learners' policy protocol as an agent: ``model`` (static; ``initial_memory(batch)``,
    ``apply(..., method="encode_context")``, ``apply(..., method="step")``), its ``variables``, the env's
    ``view_size`` (static) and ``greedy`` (static: argmax, else sampled). Its memory is ``{"net": the network's
    memory with a batch of 1, "last": int32 the last action (NUM_ACTIONS at the start)}``; each step it observes
    with ``observation.observe(state, view_size, last)``, as the env's own observations, so a policy trained on the
    env sees the same inputs."""

    model: Any = struct.field(pytree_node=False)
    variables: Any
    view_size: int = struct.field(pytree_node=False, default=7)
    greedy: bool = struct.field(pytree_node=False, default=True)

    def init(self, key: jax.Array, state: S.State) -> dict:
        """Returns ``{"net": model.initial_memory(1), "last": int32 NUM_ACTIONS}``."""
        return {"net": self.model.initial_memory(1), "last": jnp.int32(S.NUM_ACTIONS)}

    def act(self, key: jax.Array, memory: dict, state: S.State) -> tuple[jax.Array, dict]:
        """Returns ``(action int32, memory)``: the network's argmax (``greedy``) or a sample from its
        log-probabilities on the observation of ``state``; in the answer phases always the argmax."""
        obs = O.observe(state, self.view_size, memory["last"])
        obs = jax.tree_util.tree_map(lambda x: jnp.asarray(x)[None], obs)
        context = self.model.apply(self.variables, obs, method="encode_context")
        log_probs, _, net = self.model.apply(self.variables, obs, context, memory["net"], train=False, method="step")
        log_probs = log_probs[0]
        mode = jnp.argmax(log_probs)
        action = mode if self.greedy else jax.random.categorical(key, log_probs)
        # answers are always the answer head's mode (the paper decodes its answers by beam search)
        answering = (state.phase == S.ANSWER_FIRST) | (state.phase == S.ANSWER_AGAIN)
        action = jnp.where(answering, mode, action).astype(jnp.int32)
        return action, {"net": net, "last": action}


def evaluate_policy(
    env, params, model, variables, key: jax.Array, num_episodes: int, greedy: bool = True, k: float | None = None
) -> dict[str, float]:
    """Returns ``evaluate`` of the network ``model`` with ``variables`` (``PolicyAgent``, argmax actions when
    ``greedy``) on ``params``."""
    agent = PolicyAgent(model=model, variables=variables, view_size=params.view_size, greedy=greedy)
    return evaluate(env, params, agent, key, num_episodes, k)


# -- the table --------------------------------------------------------------------------------------------------

_PHASE_COLUMNS = [(phase, metric) for phase in M.PHASES for metric in M.BEHAVIOUR]
_HEADER = (
    "| agent | I: TTI | I: Area | I: %Seen | I: %Inter | III: TTI | III: Area | III: %Seen | III: %Inter "
    "| II: acc % | IV: acc % | II: known % | IV: known % | I: steps | III: steps |"
)


def _cell(value: float | None, digits: int = 1) -> str:
    return "—" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def behaviour_table(results: dict[str, dict[str, float]], paper: bool = True) -> str:
    """Returns a markdown table: one row per agent of ``results`` (name -> ``evaluate``'s summary) with TTI, Area,
    % Seen and % Interacted of phases I and III, the accuracies of phases II and IV (percent), the accuracies what
    was seen and lifted by then would give (``knowledge_accuracy``, percent) and the steps of
    phases I and III; below them, with ``paper``, the rows of ``metrics.PAPER_TABLE7`` (no accuracies or steps:
    "—")."""
    lines = [_HEADER, "|" + " --- |" * 15]
    for name, row in results.items():
        cells = [_cell(row.get(f"{phase}_{metric}")) for phase, metric in _PHASE_COLUMNS]
        keys = ("accuracy_first", "accuracy_again", "knowledge_first", "knowledge_again")
        cells += [_cell(None if key not in row else 100.0 * row[key]) for key in keys]
        cells += [_cell(row.get(f"{phase}_steps")) for phase in M.PHASES]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    if paper:
        for name, row in M.PAPER_TABLE7.items():
            cells = [_cell(v) for phase in M.PHASES for v in row[phase]] + ["—"] * 6
            lines.append(f"| {name} (paper) | " + " | ".join(cells) + " |")
    return "\n".join(lines)
