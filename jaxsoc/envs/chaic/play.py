"""Running CHAIC episodes: the constrained agent and a helper acting in a batch of worlds, on the device.

``play(states, main, helper, timing, keys, max_events)`` scans over events, the episodes vmapped inside: at each
event the ready agents act (``agents``: ``init(key, state, agent)`` / ``act(key, memory, state, timing)``), then
``world.step_event`` starts their actions and advances the clock to the next moment an action finishes. An
episode stops (its state and memories frozen) once its frame reaches ``max_frames`` or every target is on the
goal place (``world.success``). ``make_player`` returns it jitted for fixed agents.

Events per episode: each event advances the clock by at least one frame, so ``max_events = max_frames`` (the
default ``DEFAULT_MAX_EVENTS``, 3,000) always lets an episode end; with ``skip_done`` the events after every
episode of the batch ended cost nothing, so the default costs only what the episodes need. Measured on the
generated test sets (12 episodes of each task, rule-based agents): the constrained agent alone 260-700 events,
with the RHP, Oracle or random helper 580-1,200 (the most in shopping, where the child's follow steps, one frame
for a few centimetres, add events). ``complete`` in the result says whether an episode ended within
``max_events``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsoc.envs.chaic import agents as A
from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.envs.chaic import state as S
from jaxsoc.envs.chaic import world as W

#: each event advances at least one frame: as many events as the longest episode has frames always suffice
DEFAULT_MAX_EVENTS = max(K.TASK_FRAMES.values())


def finished(state: S.State) -> jax.Array:
    """Returns ``bool``: the episode is over (its frame reached ``max_frames`` or every target is delivered)."""
    return (state.frame >= state.max_frames) | W.success(state)


def transported_by(state: S.State) -> jax.Array:
    """Returns ``float32[NUM_AGENTS]``: the transported amount (objects; furniture: mass) each agent put on the goal
    place, counting only what counts towards the goal."""
    obj = state.objects
    weight = jnp.where(state.task == K.TASK["furniture"], obj.mass, 1.0) * W.counted(state)
    by = obj.delivered_by.astype(jnp.int32)
    return jnp.stack([jnp.where(by == agent, weight, 0.0).sum() for agent in range(S.NUM_AGENTS)])


def prepare(state: S.State, helper) -> S.State:
    """Returns ``state`` ready for an episode with ``helper``: without the helper (``agents.active[1]`` False) when
    it is ``inactive`` (``agents.NoHelper``), unchanged otherwise."""
    if getattr(helper, "inactive", False):
        return state.replace(agents=state.agents.replace(active=state.agents.active.at[S.HELPER].set(False)))
    return state


def play(
    states: S.State,
    main,
    helper,
    timing: W.Timing,
    keys: jax.Array,
    max_events: int = DEFAULT_MAX_EVENTS,
    record: bool = False,
    skip_done: bool = True,
) -> dict:
    """Runs ``B`` episodes (``states``: a batched ``State``, ``keys``: ``[B]`` keys) and returns a dict of
    per-episode arrays:

    - ``transport_rate`` float32[B], ``success`` bool[B], ``frames`` int32[B] (the frame it ended at);
    - ``placed`` / ``useful`` int32[B, 3] (``state.placed`` / ``state.useful``: for IA and CR);
    - ``transported_by`` float32[B, 3] (what each agent delivered that counts), ``helper_rate`` float32[B] (the
      helper's part over the total: CR), ``helper_share`` float32[B] (the helper's share of what was transported,
      0 when nothing was);
    - ``away_frames`` int32[B] (the child's emergency, shopping), ``events`` int32[B] (events used),
      ``complete`` bool[B] (the episode ended within ``max_events``);
    - ``final``: the final ``State`` (batched);
    - with ``record``: ``actions`` int32[B, E, 2] (each controlled agent's action at every event, -1 where it was not
      ready or the episode was over), ``valid`` bool[B, E, 2] (whether that action was valid then,
      ``world.valid_actions``; True where it did not act), ``failed`` bool[B, E, 2] (an action of the agent finished
      FAILED at the event), ``frame`` int32[B, E] (the frame at the event's start), ``pos`` float32[B, E, 2, 2]
      (both agents' positions then).

    ``main`` and ``helper`` are agents (``agents.make_agent``); a helper with ``inactive`` True (``NoHelper``) is
    taken out of the world; two rule-based agents (``agents.RuleAgent``, any roles) share one compiled act, vmapped
    over the two. Episodes are vmapped inside the scan over events; with ``skip_done`` an event at which
    every episode of the batch is over costs nothing (a ``lax.cond`` on the whole batch; a select under an outer
    vmap). Jittable: wrap it with the agents, ``max_events``, ``record`` and ``skip_done`` fixed, or use
    ``make_player``."""
    inactive = bool(getattr(helper, "inactive", False))
    shared = not inactive and _rule_based(main) and _rule_based(helper)
    batch = keys.shape[0]

    def init(state: S.State, key: jax.Array):
        k_main, k_helper, k_run = jax.random.split(key, 3)
        state = prepare(state, helper)
        return state, main.init(k_main, state, S.MAIN), helper.init(k_helper, state, S.HELPER), k_run

    def event(state: S.State, mem_main, mem_helper, key: jax.Array):
        key, k_m, k_h, k_s = jax.random.split(key, 4)
        done = finished(state)
        ready = W.ready(state) & ~done
        if shared:  # both rule agents through one (vmapped) act
            mems = jax.tree_util.tree_map(lambda a, b: jnp.stack([a, b]), mem_main, mem_helper)
            acts, news = jax.vmap(A.rule_act, in_axes=(0, 0, None, None))(jnp.stack([k_m, k_h]), mems, state, timing)
            act_main, act_helper = acts[0], acts[1]
            new_main = jax.tree_util.tree_map(lambda x: x[0], news)
            new_helper = jax.tree_util.tree_map(lambda x: x[1], news)
        else:
            act_main, new_main = main.act(k_m, mem_main, state, timing)
            if inactive:
                act_helper, new_helper = jnp.int32(S.WAIT), mem_helper
            else:
                act_helper, new_helper = helper.act(k_h, mem_helper, state, timing)
        mem_main = W.jnp_select(ready[S.MAIN], new_main, mem_main)
        mem_helper = W.jnp_select(ready[S.HELPER], new_helper, mem_helper)
        actions = jnp.stack([act_main, act_helper]).astype(jnp.int32)
        stepped, info = W.step_event(k_s, state, actions, timing)
        out = {}
        if record:
            valid = jnp.stack(
                [W.valid_actions(state, agent)[jnp.clip(actions[agent], 0, S.NUM_ACTIONS - 1)] for agent in (0, 1)]
            )
            out = {
                "actions": jnp.where(ready[:2], actions, -1),
                "valid": valid | ~ready[:2],
                "failed": info["finished"][:2] & (stepped.agents.status[:2] == S.FAILED) & ~done,
                "frame": state.frame,
                "pos": state.agents.pos[:2],
            }
        state = W.jnp_select(done, state, stepped)
        return state, mem_main, mem_helper, key, (~done).astype(jnp.int32), out

    def step(carry):
        state, mem_main, mem_helper, keys, events = carry
        state, mem_main, mem_helper, keys, used, out = jax.vmap(event)(state, mem_main, mem_helper, keys)
        return (state, mem_main, mem_helper, keys, events + used), out

    def idle(carry):
        out = {}
        if record:
            out = {
                "actions": jnp.full((batch, 2), -1, jnp.int32),
                "valid": jnp.ones((batch, 2), bool),
                "failed": jnp.zeros((batch, 2), bool),
                "frame": carry[0].frame,
                "pos": carry[0].agents.pos[:, :2],
            }
        return carry, out

    def body(carry, _):
        if not skip_done:
            return step(carry)
        return jax.lax.cond(jax.vmap(finished)(carry[0]).all(), idle, step, carry)

    state, mem_main, mem_helper, run_keys = jax.vmap(init)(states, keys)
    carry = (state, mem_main, mem_helper, run_keys, jnp.zeros(batch, jnp.int32))
    (final, _, _, _, events), trace = jax.lax.scan(body, carry, None, length=max_events)
    by = jax.vmap(transported_by)(final)
    total = jnp.maximum(final.total, 1e-6)
    done_total = by.sum(-1)
    result = {
        "transport_rate": jax.vmap(W.transport_rate)(final),
        "success": jax.vmap(W.success)(final),
        "frames": final.frame,
        "placed": final.placed,
        "useful": final.useful,
        "transported_by": by,
        "helper_rate": by[:, S.HELPER] / total,
        "helper_share": jnp.where(done_total > 0, by[:, S.HELPER] / jnp.maximum(done_total, 1e-6), 0.0),
        "away_frames": final.away_frames,
        "events": events,
        "complete": jax.vmap(finished)(final),
        "final": final,
    }
    if record:
        result.update({name: jnp.swapaxes(value, 0, 1) for name, value in trace.items()})
    return result


def _rule_based(agent) -> bool:
    """Whether ``agent`` acts with ``agents.rule_act`` (a ``RuleAgent`` whose ``act`` is not overridden)."""
    return isinstance(agent, A.RuleAgent) and type(agent).act is A.RuleAgent.act


def make_player(main, helper, max_events: int = DEFAULT_MAX_EVENTS, record: bool = False):
    """Returns ``run(states, keys, timing=None) -> dict``: ``play`` jitted for these agents (see ``play``; ``timing``
    defaults to ``world.Timing()``)."""

    @jax.jit
    def run(states: S.State, keys: jax.Array, timing: W.Timing | None = None) -> dict:
        timing = W.Timing() if timing is None else timing
        return play(states, main, helper, timing, keys, max_events, record)

    return run
