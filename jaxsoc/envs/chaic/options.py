"""CHAIC's helper as a semi-MDP over *options* (issue 38): ``ChaicOptionsEnv`` (ids ``CHAIC-<Task>-Options-v0``,
``CHAIC-All-Options-v0``), whose every step is one option executed by the rule helpers' machinery
(``agents``: perception and memory, door-graph walking of ``navigation``, the interactions), and
``OptionPolicyHelper``, a policy over options as an agent ``play`` runs.

**Options** share the primitive action layout (``NUM_OPTIONS = state.NUM_ACTIONS``), so the ``chaic`` network's
pointer heads score the object options: ``EXPLORE`` (id 0: walk to the nearest unexplored viewpoint and look
around), ``LOOK`` (1: turn a full circle looking for the child, shopping), ``FOLLOW`` (2: walk to where the child
was last seen, shopping), ``WAIT`` (3: one wait), ``PUT_IN`` (4: put the held item in the held container), ``GOAL``
(5: walk to the goal place and put on until nothing is left to put), ``FETCH + i`` (``7 + i``: walk to object ``i``
and pick it up), ``REMOVE + i`` (``55 + i``: walk to obstacle ``i`` and remove it). Id 6 is never valid. With
``rooms=True`` the **room options** follow (``ROOM + r``, ids ``103 + r``): walk over the door graph to the nearest
viewpoint of room ``r`` still to explore and look around there (exploring, confined to one room; valid while the
room has such a viewpoint), the view gains ``rooms`` (``room_view``) for the network's room pointer, and the rules'
exploring becomes the room option of the viewpoint they would walk to. ``option_id(name, obj)`` names them.

**Ending.** An option runs while the helper is ready (one decision per finished action) and ends, at the first
decision after: its last action was issued (the pick-up, the removal, the put-in, the wait, the last turn of a look
around or for the child, a follow that reached the child), it is no longer valid (the object gone or unreachable,
nothing left to put), it is **interrupted** (the RHP rules' priority list now wants another kind of plan than it
wanted at the option's previous decision: something worth fetching came into view, an obstacle to remove, the child
ran off or was lost; a ``GOAL`` or ``REMOVE`` option only for the child, as the rules keep those plans), or it timed
out (``agents.MAX_EXPLORE_FRAMES`` for exploring and following, ``MAX_FOLLOW_FRAMES`` for looking,
``agents.MAX_MOVE_FRAMES`` otherwise; a timed-out fetch marks its object failed, as the rules do). An option invalid
at its first decision waits once instead, so every step moves the world on.

**A step** is one option: a fixed-length ``lax.scan`` of ``OPTION_EVENTS`` world events (the constrained agent
acting whenever ready) with a done mask; the events after the option ended (or the episode) change nothing. An
option still running after them is continued by the next step when the policy chooses it again (else replaced);
one that ends at that step's first decision, before the world moved, is started afresh, so every step moves the
world on.

**Observation**: the helper's (``observation.observe``, no goal) with ``objects`` from its *memory* (every object it
knows, at its remembered position; ``where`` only for those in view), ``action_mask`` bool[NUM_OPTIONS] the valid
options, and ``partner_classes`` float32[NUM_CLASSES], a partner model's evidence: the classes it has seen the
constrained agent handle (``partner_evidence``, accumulated at its decisions), or, with a learned partner model
(``ChaicOptionsEnv(partner=...)``, e.g. the BM helper's, ``learners.chaic.bm.BMPartner``, stepped at every decision
of the helper as the BM helper steps it), the model's probability of each class being in the goal, and its
constraint probabilities in ``partner_constraint`` float32[C]. **Reward**: the helper's own
deliveries (its transported share of the task, ``play.transported_by``), or with ``shared_reward`` the shared
transport reward of ``env.ChaicHelperEnv``. No shaping (the true goal is never read). The state carries ``expert``:
the RHP rules' choice for the current decision (the plan the priority list wants, as an option; ``PUT_IN`` whenever
possible), for behaviour cloning.
"""

from __future__ import annotations

from typing import Any, Protocol

import jax
import jax.numpy as jnp
from flax import struct

from jaxsoc.core import spaces
from jaxsoc.core.env import Environment, _select_tree
from jaxsoc.envs.chaic import agents as A
from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.envs.chaic import env as E
from jaxsoc.envs.chaic import observation as O
from jaxsoc.envs.chaic import state as S
from jaxsoc.envs.chaic import world as W
from jaxsoc.envs.chaic.family import FAMILY
from jaxsoc.envs.chaic.play import transported_by

EXPLORE, LOOK, FOLLOW, WAIT, PUT_IN, GOAL = 0, 1, 2, 3, 4, 5
FETCH, REMOVE = S.PICK, S.REMOVE
NUM_OPTIONS = S.NUM_ACTIONS
ROOM = NUM_OPTIONS  # the room options (``rooms=True``) follow the primitive layout: ``ROOM + r`` explores room r
NUM_ROOM_OPTIONS = ROOM + S.MAX_ROOMS
OPTION_NAMES = ("explore", "look", "follow", "wait", "put_in", "goal", "fetch", "remove", "room")
_SIMPLE = {"explore": EXPLORE, "look": LOOK, "follow": FOLLOW, "wait": WAIT, "put_in": PUT_IN, "goal": GOAL}
OPTION_EVENTS = 48  # world events per step at most


def num_options(rooms: bool = False) -> int:
    """Returns the number of option ids: ``NUM_OPTIONS``, or ``NUM_ROOM_OPTIONS`` with the room options."""
    return NUM_ROOM_OPTIONS if rooms else NUM_OPTIONS


def option_id(name: str, obj: int | None = None) -> int:
    """Returns the option id of ``name`` (``OPTION_NAMES``; ``obj`` the object slot of ``fetch`` / ``remove``, the
    room slot of ``room``). Raises ``ValueError`` for an unknown name, a missing or out-of-range object or room, or
    an object given to another."""
    if name not in OPTION_NAMES:
        raise ValueError(f"unknown CHAIC option {name!r}; choose from {list(OPTION_NAMES)}")
    if name in _SIMPLE:
        if obj is not None:
            raise ValueError(f"option {name!r} takes no object, got {obj}")
        return _SIMPLE[name]
    if name == "room":
        if obj is None or not 0 <= obj < S.MAX_ROOMS:
            raise ValueError(f"option 'room' needs a room slot in [0, {S.MAX_ROOMS}), got {obj}")
        return ROOM + obj
    if obj is None or not 0 <= obj < S.MAX_OBJECTS:
        raise ValueError(f"option {name!r} needs an object slot in [0, {S.MAX_OBJECTS}), got {obj}")
    return (FETCH if name == "fetch" else REMOVE) + obj


class OptionMemory(struct.PyTreeNode):
    """The helper's option memory: ``agent`` (``agents.AgentMemory`` of an RHP helper: perception and the plan it
    executes), ``option`` int32 (the running option), ``acted`` bool (it issued an action), ``issued`` bool (its
    last action was issued), ``done`` bool (it ended), ``want`` int32 (the plan kind the rules wanted at its last
    decision, ``agents.PLAN_NAMES``: a change interrupts it), ``partner_classes`` float32[NUM_CLASSES] (without a
    partner model: 1 for each class the helper has seen the constrained agent hold or pick up or put,
    ``partner_evidence``; with one: its latest probability that the class is in the goal), ``partner`` (the partner
    model's state), ``partner_constraint`` float32[C] (its latest constraint probabilities) and ``partner_frame``
    int32 (the world frame the model last stepped at, -1 before); these three are ``()``, None and None without a
    model, so the memory has exactly the leaves it had before partner models (older runs' states restore)."""

    agent: A.AgentMemory
    option: jax.Array
    acted: jax.Array
    issued: jax.Array
    done: jax.Array
    want: jax.Array
    partner_classes: jax.Array
    partner: Any = ()
    partner_constraint: jax.Array | None = None
    partner_frame: jax.Array | None = None


class PartnerModel(Protocol):
    """A learned model of the constrained agent that the helper steps at each of its decisions (the helper is ready)
    on its own observation (``observation.observe``, no goal), as the BM helper does (``learners.chaic.bm.BMPartner``
    implements it; the learner layer loads one from a run and hands it to ``ChaicOptionsEnv(partner=...)``)."""

    num_constraints: int  # C, the constraint classes it predicts

    def init(self) -> Any:
        """Returns the model's state at the start of an episode (a pytree of arrays)."""

    def step(self, state: Any, obs: dict) -> tuple[Any, jax.Array, jax.Array]:
        """Returns ``(state, targets float32[NUM_CLASSES], constraint float32[C])``: probabilities after ``obs``."""


def init_memory(state: S.State, partner: PartnerModel | None = None) -> OptionMemory:
    """Returns a fresh ``OptionMemory`` for the helper in ``state`` (no option running: the first step starts one;
    ``partner``: the partner model whose state it carries, at no evidence and a uniform constraint)."""
    agent = A.RuleAgent("rhp").init(jax.random.key(0), state, S.HELPER)
    no_evidence = jnp.zeros(K.NUM_CLASSES, jnp.float32)
    mem = OptionMemory(
        agent, jnp.int32(WAIT), jnp.bool_(False), jnp.bool_(False), jnp.bool_(True), jnp.int32(-1), no_evidence
    )
    if partner is None:
        return mem
    c = int(partner.num_constraints)
    uniform = jnp.full((c,), 1.0 / c, jnp.float32)
    return mem.replace(partner=partner.init(), partner_constraint=uniform, partner_frame=jnp.int32(-1))


def notice(mem: OptionMemory, state: S.State, timing: W.Timing, partner: PartnerModel | None = None) -> OptionMemory:
    """Returns ``mem`` after the helper reads its partner at a decision: without ``partner`` the classes it sees
    the constrained agent handle join ``partner_classes`` (``partner_evidence``); with one, the model steps on the
    helper's observation and its predictions replace ``partner_classes`` and ``partner_constraint``, once per world
    frame (a decision that ends an option and the next option's first one share a frame: the model steps once, as
    ``BMHelper`` steps once per act)."""
    if partner is None:
        return mem.replace(partner_classes=jnp.maximum(mem.partner_classes, partner_evidence(state, timing.view_dist)))
    obs = O.observe(state, S.HELPER, False, timing.view_dist)
    carry, targets, constraint = partner.step(mem.partner, obs)
    stepped = mem.replace(
        partner=carry,
        partner_classes=targets.astype(jnp.float32),
        partner_constraint=constraint.astype(jnp.float32),
        partner_frame=jnp.asarray(state.frame, jnp.int32),
    )
    return _select_tree(state.frame != mem.partner_frame, stepped, mem)


def start(mem: OptionMemory, option: jax.Array, state: S.State) -> OptionMemory:
    """Returns ``mem`` running ``option``: continued when it is the running option and has not ended, else fresh."""
    option = jnp.asarray(option, jnp.int32)
    fresh = (option != mem.option) | mem.done
    agent = mem.agent
    agent = agent.replace(
        plan_start=jnp.where(fresh, state.frame, agent.plan_start).astype(jnp.int32),
        scan_left=jnp.where(fresh, -1, agent.scan_left).astype(jnp.int32),
        plan_view=jnp.where(fresh, -1, agent.plan_view).astype(jnp.int32),
    )
    keep = ~fresh
    return mem.replace(
        agent=agent, option=option, acted=mem.acted & keep, issued=mem.issued & keep, done=jnp.bool_(False)
    )


def partner_evidence(state: S.State, view_dist: float) -> jax.Array:
    """Returns ``bool[NUM_CLASSES]``: the classes the helper sees the constrained agent handle now (in its hands,
    or the object of its current pick-up or put), all False when it does not see it. The constrained agent
    handles its goal's targets (and containers), so this is what a partner model reads of its goal."""
    a, obj = state.agents, state.objects
    seen = W.visible_agents(state, S.HELPER, view_dist)[S.MAIN]
    hands = a.hands[S.MAIN]
    _, target = S.decode_action(W.stored_action(a.action[S.MAIN]))
    handled = jnp.concatenate([hands, target[None]])
    cls = jnp.where(handled >= 0, obj.cls[jnp.maximum(handled, 0)], 0)
    return jnp.zeros(K.NUM_CLASSES, bool).at[cls].set(handled >= 0) & seen


def _shopping(state: S.State) -> jax.Array:
    return (state.task == K.TASK["shopping"]) & state.agents.active[S.CHILD]


def _follow_ok(state: S.State, sit: dict, mem: A.AgentMemory) -> jax.Array:
    return _shopping(state) & jnp.isfinite(sit["child_len"]) & ~mem.child_lost


def _room_views(mem: A.AgentMemory, sit: dict) -> jax.Array:
    """Returns ``bool[MAX_ROOMS, VIEWS_PER_ROOM]``: the viewpoints exploring may walk to now
    (``agents.explore_candidates``), by room."""
    return A.explore_candidates(mem, sit)[0].reshape(S.MAX_ROOMS, A.VIEWS_PER_ROOM)


def valid_options(mem: A.AgentMemory, state: S.State, sit: dict, rooms: bool = False) -> jax.Array:
    """Returns ``bool[num_options(rooms)]``: the options that may start now for the helper of ``mem`` (perceived)
    with ``agents._situation`` ``sit``: explore and wait always; follow in shopping while the child is known; put in
    when possible; look for the child in shopping; the goal place when holding something and the goal place is
    known and reachable; fetch a known free pickable object a free hand can take; remove a known obstacle; (with
    ``rooms``) explore room r while it has a viewpoint exploring may walk to (``_room_views``)."""
    mask = jnp.zeros(num_options(rooms), bool)
    if rooms:
        mask = mask.at[ROOM:].set(_room_views(mem, sit).any(-1))
    mask = mask.at[EXPLORE].set(True).at[WAIT].set(True)
    mask = mask.at[FOLLOW].set(_follow_ok(state, sit, mem)).at[LOOK].set(_shopping(state))
    mask = mask.at[PUT_IN].set(sit["put_in"])
    mask = mask.at[GOAL].set(sit["has_put"] & sit["goal_ok"])
    mask = mask.at[FETCH : FETCH + S.MAX_OBJECTS].set(sit["pick_cand"])
    return mask.at[REMOVE : REMOVE + S.MAX_OBJECTS].set(sit["obstacle_cand"])


def _decide(mem: OptionMemory, state: S.State, timing: W.Timing):
    """Returns ``(action int32, mem, ended bool)`` at a decision of the helper (it is ready; ``mem`` has ``notice``d
    its partner): ``ended`` when the running option is over (then ``action`` is to be ignored and ``mem`` has it
    closed), else its next action (``agents.perceive``, ``agents._situation``, ``_decide_plan``,
    ``agents._execute``, ``_decide_end``)."""
    agent = A.perceive(mem.agent, state, timing)
    sit = A._situation(agent, state)
    agent, plan = _decide_plan(mem, agent, state, sit)
    act, running = A._execute(agent, state, sit, put_in_first=False)
    return _decide_end(mem, plan, act, running, sit)


def _decide_plan(mem: OptionMemory, agent: A.AgentMemory, state: S.State, sit: dict) -> tuple[A.AgentMemory, dict]:
    """Returns ``(agent, plan)``: the part of ``_decide`` before the action, for the helper's perceived memory
    ``agent`` (``mem.agent`` after ``agents.perceive``) and its ``_situation`` ``sit``: ``agent`` set to carry out
    the running option (``agents._execute`` with ``sit`` gives its next action), ``plan`` what ``_decide_end``
    needs (``kind``, ``obj``, ``first``, ``valid``, ``ended`` bool, ``want`` int32, ``closed`` the memory with
    the option closed)."""
    opt = mem.option
    in_room = opt >= ROOM  # a room option explores as EXPLORE does, within its room
    kind = jnp.select([in_room, opt >= REMOVE, opt >= FETCH], [EXPLORE, REMOVE, FETCH], opt)
    obj = jnp.where(opt >= REMOVE, opt - REMOVE, opt - FETCH).clip(0, S.MAX_OBJECTS - 1)
    valid = valid_options(agent, state, sit)[jnp.minimum(opt, NUM_OPTIONS - 1)]  # exploring's validity is below
    # exploring: the nearest unexplored viewpoint (in the option's room for a room option), chosen at the option's
    # first decision
    cand, explored = A.explore_candidates(agent, sit)
    in_this_room = jnp.arange(A.NUM_VIEWS) // A.VIEWS_PER_ROOM == opt - ROOM
    view = A._nearest(cand & (in_this_room | ~in_room), sit["view_len"])
    first = ~mem.acted
    explore_first = first & (kind == EXPLORE)
    agent = agent.replace(
        plan_view=jnp.where(explore_first, view, agent.plan_view).astype(jnp.int32),
        explored=jnp.where(explore_first, explored, agent.explored),
    )
    pv = jnp.maximum(agent.plan_view, 0)
    view_ok = (agent.plan_view >= 0) & ~agent.explored[pv] & jnp.isfinite(sit["view_len"][pv])
    valid = jnp.where(kind == EXPLORE, view_ok | (agent.scan_left > 0), valid)
    scanning = (kind == LOOK) & (agent.scan_left > 0)
    valid = jnp.where(kind == LOOK, valid & ((agent.scan_left < 0) | scanning), valid)
    walks = (kind == EXPLORE) | (kind == FOLLOW)
    limit = jnp.select([walks, kind == LOOK], [A.MAX_EXPLORE_FRAMES, A.MAX_FOLLOW_FRAMES], A.MAX_MOVE_FRAMES)
    looking_around = (kind == EXPLORE) & (agent.scan_left > 0)  # a look around, once started, is finished
    timed_out = (state.frame - agent.plan_start > limit) & ~looking_around
    # interrupted: the rules now want another kind of plan (GOAL and REMOVE kept but for the child), as they switch
    want = A._rules_want(agent, state, sit)[0]
    urgent = (want == A.FOLLOW) | (want == A.LOOK)
    sticky = (kind == GOAL) | (kind == REMOVE)
    interrupted = (want != mem.want) & (~sticky | urgent)
    ended = mem.done | mem.issued | ((~valid | timed_out | interrupted) & mem.acted)
    plan = jnp.select(
        [kind == EXPLORE, kind == GOAL, kind == FETCH, kind == REMOVE, kind == FOLLOW, kind == LOOK],
        [A.EXPLORE, A.GOAL, A.FETCH_TARGET, A.REMOVE, A.FOLLOW, A.LOOK],
        A.NO_PLAN,
    )
    agent = agent.replace(plan=plan.astype(jnp.int32), plan_obj=jnp.where(kind >= FETCH, obj, -1).astype(jnp.int32))
    # an ended option: close it as the rules close a plan (a viewpoint scanned or stuck marked, a timed-out fetch
    # or removal marked failed)
    closed = A._finish_plan(agent, sit, jnp.bool_(False))
    plan = {"kind": kind, "obj": obj, "first": first, "valid": valid, "ended": ended, "want": want, "closed": closed}
    return agent, plan


def _decide_end(mem: OptionMemory, plan: dict, act: jax.Array, running: A.AgentMemory, sit: dict):
    """Returns ``_decide``'s ``(action int32, mem, ended bool)`` from ``_decide_plan``'s ``plan`` and the action
    and memory ``agents._execute`` gave (``act``, ``running``)."""
    kind, obj, first, valid = plan["kind"], plan["obj"], plan["first"], plan["valid"]
    ended, want, closed = plan["ended"], plan["want"], plan["closed"]
    act = jnp.select([kind == PUT_IN, kind == WAIT], [S.PUT_IN, S.WAIT], act)
    fallback = first & ~valid
    act = jnp.where(fallback, S.WAIT, act).astype(jnp.int32)
    near_child = jnp.linalg.norm(sit["src"] - sit["child_pos"]) <= A.CHILD_NEAR
    last = jnp.select(
        [kind == FETCH, kind == REMOVE, (kind == EXPLORE) | (kind == LOOK), kind == FOLLOW, kind == GOAL],
        [act == S.PICK + obj, act == S.REMOVE + obj, running.scan_left == 0, near_child, jnp.bool_(False)],
        jnp.bool_(True),  # put in, wait
    )
    going = mem.replace(agent=running, acted=jnp.bool_(True), issued=last | fallback, done=jnp.bool_(False), want=want)
    over = mem.replace(agent=closed.replace(plan=jnp.int32(A.NO_PLAN)), done=True, want=want)
    return act, _select_tree(ended, over, going), ended


def _pair(first: Any, second: Any) -> Any:
    return jax.tree_util.tree_map(lambda a, b: jnp.stack([a, b]), first, second)


def _member(pair: Any, i: int) -> Any:
    return jax.tree_util.tree_map(lambda x: x[i], pair)


def act_together(key_main: jax.Array, main: A.AgentMemory, helper: OptionMemory, state: S.State, timing: W.Timing):
    """Returns ``(act_main int32, main, act_helper int32, helper, ended bool)``: the constrained agent's
    ``agents.rule_act`` (key ``key_main``, memory ``main``) and the helper's ``_decide`` (``helper`` has ``notice``d
    its partner) in the same ``state``, their common parts (``agents.perceive``, ``agents._situation``,
    ``agents._execute``) computed for both at once (``jax.vmap`` over the two: one copy of each in the program).
    The same values as calling the two. (``agents._situation`` stays one call per agent: vmapped, XLA fuses its
    path lengths differently and a distance can move by a unit in the last place.)"""
    pair = jax.vmap(A.perceive, in_axes=(0, None, None))(_pair(main, helper.agent), state, timing)
    m_sit, h_sit = A._situation(_member(pair, 0), state), A._situation(_member(pair, 1), state)
    sits = _pair(*({k: sit[k] for k in A.EXECUTE_KEYS} for sit in (m_sit, h_sit)))
    main, drawn_put_in = A.rule_plan(key_main, _member(pair, 0), state, m_sit)
    agent, plan = _decide_plan(helper, _member(pair, 1), state, h_sit)
    put_in_first = jnp.stack([~main.random, jnp.bool_(False)])
    acts, runs = jax.vmap(A._execute, in_axes=(0, None, 0, 0))(_pair(main, agent), state, sits, put_in_first)
    act_main = jnp.where(drawn_put_in, S.PUT_IN, acts[0]).astype(jnp.int32)
    act_helper, helper, ended = _decide_end(helper, plan, acts[1], _member(runs, 1), h_sit)
    return act_main, _member(runs, 0), act_helper, helper, ended


def expert_option(
    mem: A.AgentMemory, state: S.State, knows_goal: bool = False, rooms: bool = False, sit: dict | None = None
) -> jax.Array:
    """Returns ``int32``: the RHP rules' option for the helper of ``mem`` (perceived) now: ``PUT_IN`` when
    possible, else the plan the priority list wants (``agents._rules_want``), falling back to ``EXPLORE`` where
    that option is not valid. ``knows_goal``: the rules told the true goal (``state.goal_count``: they fetch only
    what is still needed) while perceiving only what the helper perceives, a privileged teacher for cloning.
    ``rooms``: exploring is the room option of the viewpoint the rules would walk to (``ROOM + its room``).
    ``sit``: ``agents._situation`` of ``mem`` in ``state`` when the caller has it (not with ``knows_goal``)."""
    if knows_goal:
        mem = mem.replace(goal_count=state.goal_count.astype(jnp.int8), knows_goal=jnp.bool_(True))
        sit = None
    sit = A._situation(mem, state) if sit is None else sit
    want, obj, view, _ = A._rules_want(mem, state, sit)
    opt = jnp.select(
        [
            want == A.EXPLORE,
            want == A.GOAL,
            (want == A.FETCH_TARGET) | (want == A.FETCH_CONTAINER),
            want == A.REMOVE,
            want == A.FOLLOW,
            want == A.LOOK,
        ],
        [EXPLORE, GOAL, FETCH + jnp.maximum(obj, 0), REMOVE + jnp.maximum(obj, 0), FOLLOW, LOOK],
        WAIT,
    )
    if rooms:
        opt = jnp.where((opt == EXPLORE) & (view >= 0), ROOM + view // A.VIEWS_PER_ROOM, opt)
    mask = valid_options(mem, state, sit, rooms)
    opt = jnp.where(mask[PUT_IN], PUT_IN, opt)
    return jnp.where(mask[opt], opt, EXPLORE).astype(jnp.int32)


def room_view(mem: A.AgentMemory, state: S.State, sit: dict) -> dict:
    """Returns the rooms as the helper knows them (the room options' pointers read them; ``R = MAX_ROOMS``):
    ``valid`` bool[R], ``rel_pos`` float32[R, 2] the room's centre in the helper's frame (metres), ``size``
    float32[R, 2] its width and depth (metres), ``unexplored`` float32[R] the share of its viewpoints the helper
    has not explored, ``here`` bool[R] the room the helper stands in."""
    rooms, valid = state.scene.rooms, state.scene.room_valid
    centre = 0.5 * (rooms[:, :2] + rooms[:, 2:])
    pos = state.agents.pos[S.HELPER]
    inside = (pos[0] >= rooms[:, 0]) & (pos[0] <= rooms[:, 2]) & (pos[1] >= rooms[:, 1]) & (pos[1] <= rooms[:, 3])
    views = sit["views_ok"].reshape(S.MAX_ROOMS, A.VIEWS_PER_ROOM)
    open_views = (views & ~mem.explored.reshape(S.MAX_ROOMS, A.VIEWS_PER_ROOM)).sum(-1)
    return {
        "valid": valid,
        "rel_pos": jnp.where(valid[:, None], O._relative(state, S.HELPER, centre), 0.0),
        "size": jnp.where(valid[:, None], rooms[:, 2:] - rooms[:, :2], 0.0),
        "unexplored": jnp.where(valid, open_views / jnp.maximum(views.sum(-1), 1), 0.0).astype(jnp.float32),
        "here": inside & valid,
    }


def observe(
    options: OptionMemory, state: S.State, params: E.ChaicParams, rooms: bool = False, sit: dict | None = None
) -> dict:
    """Returns the helper's observation (module docstring) from its option memory (perceived); with ``rooms`` the
    mask covers the room options and ``rooms`` (``room_view``) is added. ``sit``: ``agents._situation`` of
    ``options.agent`` in ``state`` when the caller has it (else computed)."""
    mem = options.agent
    obs = O.observe(state, S.HELPER, params.sees_goal[S.HELPER], params.timing.view_dist, params.rays, mask=False)
    vis = obs["objects"]["visible"]
    known = mem.seen & (state.objects.cls > 0)
    rel = O._relative(state, S.HELPER, mem.last_pos)
    obs["objects"] = {
        "visible": known,
        "cls": jnp.where(known, state.objects.cls, 0).astype(jnp.int8),
        "rel_pos": jnp.where(known[:, None], rel, 0.0),
        "height": jnp.where(vis, obs["objects"]["height"], 0.0),
        "where": jnp.where(vis, obs["objects"]["where"], 0).astype(jnp.int8),
    }
    sit = A._situation(mem, state) if sit is None else sit
    obs["action_mask"] = valid_options(mem, state, sit, rooms)
    if rooms:
        obs["rooms"] = room_view(mem, state, sit)
    obs["partner_classes"] = options.partner_classes
    if options.partner_constraint is not None:
        obs["partner_constraint"] = options.partner_constraint
    return obs


def observation_space(rays: int = 0, constraints: int = 0, rooms: bool = False) -> spaces.Dict:
    """Returns the observation space (``observation.observation_space`` with ``action_mask`` over the options and
    ``partner_classes``; with ``constraints > 0`` (a partner model) also ``partner_constraint``; with ``rooms`` the
    room options' mask and ``rooms``)."""
    space = O.observation_space(rays)
    extra = {"partner_constraint": spaces.Box(0.0, 1.0, (constraints,), jnp.float32)} if constraints else {}
    if rooms:
        r = S.MAX_ROOMS
        extra["rooms"] = spaces.Dict(
            {
                "valid": spaces.Box(0, 1, (r,), jnp.bool_),
                "rel_pos": spaces.Box(-100.0, 100.0, (r, 2), jnp.float32),
                "size": spaces.Box(0.0, 100.0, (r, 2), jnp.float32),
                "unexplored": spaces.Box(0.0, 1.0, (r,), jnp.float32),
                "here": spaces.Box(0, 1, (r,), jnp.bool_),
            }
        )
    return spaces.Dict(
        {
            **space.spaces,
            "action_mask": spaces.Box(0, 1, (num_options(rooms),), jnp.bool_),
            "partner_classes": spaces.Box(0.0, 1.0, (K.NUM_CLASSES,), jnp.float32),
            **extra,
        }
    )


class OptionsState(struct.PyTreeNode):
    """``world``, ``main`` (the constrained agent's memory), ``helper`` (``OptionMemory``), ``steps`` (options),
    ``expert`` int32 (the RHP rules' option for the next decision)."""

    world: S.State
    main: Any
    helper: OptionMemory
    steps: jax.Array
    expert: jax.Array


def _own(world: S.State) -> jax.Array:
    return transported_by(world)[S.HELPER] / jnp.maximum(world.total, 1e-6)


class ChaicOptionsEnv(Environment):
    """The helper over options (module docstring). ``task``: a CHAIC task or ``"all"``; ``shared_reward``: the
    shared transport reward instead of the helper's own deliveries; ``events``: world events per step at most;
    ``partner``: a learned partner model (``PartnerModel``) whose predictions the view carries in
    ``partner_classes`` and ``partner_constraint`` instead of the hand-built evidence (``env_args``
    ``partner_run=RUN`` of a ``chaic-bm`` run: the learner layer loads it); ``rooms``: the room options too
    (``ROOM + r``: explore room r; ``NUM_ROOM_OPTIONS`` ids) and the rooms in the view (``room_view``)."""

    stochastic_step = True

    def __init__(
        self,
        task: str = "normal",
        shared_reward: bool = False,
        events: int = OPTION_EVENTS,
        partner: PartnerModel | None = None,
        rooms: bool = False,
    ) -> None:
        FAMILY.check_task(task, allow_all=True)
        if events < 1:
            raise ValueError(f"events must be positive, got {events}")
        if partner is not None and not (callable(getattr(partner, "step", None)) and hasattr(partner, "init")):
            raise ValueError(f"partner must be a partner model (init, step, num_constraints), got {partner!r}")
        self.task, self.shared_reward, self.events = task, bool(shared_reward), int(events)
        self.partner, self.rooms = partner, bool(rooms)
        self.main = A.make_agent("main")
        super().__init__()

    @property
    def name(self) -> str:
        extras = ", partner model" * (self.partner is not None) + ", rooms" * self.rooms
        return f"ChaicOptionsEnv({self.task}{extras})"

    def default_params(self) -> E.ChaicParams:
        return E.params_for(self.task)

    def max_episode_steps(self, params: E.ChaicParams | None = None) -> int:
        """Returns the task bank's largest ``max_frames``: a bound of the decisions of an episode as long as every
        decision advances the clock by at least a frame."""
        return E.episode_frames(self.default_params() if params is None else params)

    def reset_env(self, key, params):
        k_task, k_main = jax.random.split(key)
        world = E.draw_task(k_task, params)
        helper = init_memory(world, self.partner)
        helper = helper.replace(agent=A.perceive(helper.agent, world, params.timing))
        sit = A._situation(helper.agent, world)  # shared by the expert's choice and the observation
        expert = expert_option(helper.agent, world, rooms=self.rooms, sit=sit)
        state = OptionsState(world, self.main.init(k_main, world, S.MAIN), helper, jnp.int32(0), expert)
        return observe(helper, world, params, self.rooms, sit), state

    def _transition(self, key, state: OptionsState, action, params):
        timing = params.timing

        def event(carry, k):
            world, main, helper, live, moved = carry
            k_main, k_step = jax.random.split(k)
            live = live & ~(W.success(world) | (world.frame >= world.max_frames))
            ready = W.ready(world)
            noticed = notice(helper, world, timing, self.partner)
            act_main, new_main, act, decided, ended = act_together(k_main, main, noticed, world, timing)
            ended = ended & ready[S.HELPER]
            # a continued option over before this step moved the world (its last action issued, or invalid or
            # interrupted now): the chosen option starts afresh, deciding at the next event in the same world
            again = ended & ~moved
            decided = _select_tree(again, start(decided, action, world), decided)
            live = live & ~(ended & ~again)
            helper = _select_tree(ready[S.HELPER] & (live | ended), decided, helper)
            stepped, _ = W.step_event(
                k_step, world, jnp.stack([act_main, jnp.where(ready[S.HELPER], act, S.WAIT)]), timing
            )
            steps = live & ~again
            world = _select_tree(steps, stepped, world)
            main = _select_tree(steps & ready[S.MAIN], new_main, main)
            return (world, main, helper, live, moved | steps), None

        helper = start(state.helper, action, state.world)
        carry = (state.world, state.main, helper, jnp.bool_(True), jnp.bool_(False))
        (world, main, helper, _, _), _ = jax.lax.scan(event, carry, jax.random.split(key, self.events))
        if self.shared_reward:
            reward = W.transport_rate(world) - W.transport_rate(state.world)
        else:
            reward = _own(world) - _own(state.world)
        success = W.success(world)
        truncated = ~success & (world.frame >= world.max_frames)
        helper = helper.replace(agent=A.perceive(helper.agent, world, timing))
        sit = A._situation(helper.agent, world)  # shared by the expert's choice and the observation
        steps = state.steps + 1
        new = OptionsState(world, main, helper, steps, expert_option(helper.agent, world, rooms=self.rooms, sit=sit))
        info = {
            "success": success,
            "transport_rate": W.transport_rate(world),
            "frame": world.frame,
            "episode_steps": steps,
        }
        obs = observe(helper, world, params, self.rooms, sit)
        return obs, new, reward.astype(jnp.float32), success, truncated, info

    def step_env(self, key, state, action, params):
        """Returns ``(obs, state, reward, terminated, truncated, info)`` of one option (module docstring). The base
        class's auto-reset selects a reset's observation and state where the episode ended."""
        return self._transition(key, state, action, params)

    def action_space(self, params=None) -> spaces.Discrete:
        return spaces.Discrete(num_options(self.rooms))

    def observation_space(self, params=None) -> spaces.Dict:
        constraints = 0 if self.partner is None else int(self.partner.num_constraints)
        return observation_space(params.rays if params is not None else 0, constraints, self.rooms)

    def render(self, state, params=None):
        from jaxsoc.envs.chaic.render import render

        return render(state.world)


class OptionPolicyHelper:
    """A policy over options (``choose(params, net_memory, obs, key) -> (option int32, net_memory)`` on this
    module's observation) as a helper agent for ``play``: at each decision the running option goes on, or, once it
    ended, the policy chooses the next one (``start``) and its first action is taken. ``partner``: the partner
    model of the view the policy was trained on (``ChaicOptionsEnv.partner``); ``rooms``: its room options."""

    def __init__(
        self,
        choose,
        params: Any,
        net_memory: Any,
        env_params: E.ChaicParams,
        partner: PartnerModel | None = None,
        rooms: bool = False,
    ) -> None:
        self.choose, self.params, self.net_memory, self.env_params = choose, params, net_memory, env_params
        self.partner, self.rooms = partner, rooms

    def init(self, key: jax.Array, state: S.State, agent: int | jax.Array = S.HELPER) -> dict:
        """Returns ``{"options": OptionMemory, "net": the policy's memory, "key": key}``."""
        return {"options": init_memory(state, self.partner), "net": self.net_memory, "key": key}

    def act(self, key: jax.Array, memory: dict, state: S.State, timing: W.Timing = A.DEFAULT_TIMING):
        """Returns ``(action int32, memory)``: the running option's next action, or the first of a new one."""
        act, mem, ended = _decide(notice(memory["options"], state, timing, self.partner), state, timing)
        obs = observe(mem, state, self.env_params.replace(timing=timing), self.rooms)
        k_next, k_choose = jax.random.split(memory["key"])
        option, net = self.choose(self.params, memory["net"], obs, k_choose)
        new_act, new_mem, _ = _decide(start(mem, option, state), state, timing)
        act = jnp.where(ended, new_act, act)
        mem = _select_tree(ended, new_mem, mem)
        net = _select_tree(ended, net, memory["net"])
        return act.astype(jnp.int32), {"options": mem, "net": net, "key": k_next}


@struct.dataclass
class OptionExpertHelper:
    """The RHP rules acting through the options (``expert_option`` chooses each option, ``_decide`` carries it out):
    the ceiling a policy cloned from them reaches on this action space (``jaxsoc chaic eval --helper rhp_options``;
    ``knows_goal``: the rules told the true goal, the warm start's privileged teacher, ``--helper goal_options``;
    ``rooms``: exploring through the room options, ``--helper rhp_rooms``)."""

    knows_goal: bool = struct.field(pytree_node=False, default=False)
    rooms: bool = struct.field(pytree_node=False, default=False)

    def init(self, key: jax.Array, state: S.State, agent: int | jax.Array = S.HELPER) -> OptionMemory:
        """Returns a fresh ``OptionMemory`` (``init_memory``)."""
        return init_memory(state)

    def act(self, key: jax.Array, memory: OptionMemory, state: S.State, timing: W.Timing = A.DEFAULT_TIMING):
        """Returns ``(action int32, memory)``: the running option's next action, or the first of the rules' next."""
        act, mem, ended = _decide(notice(memory, state, timing), state, timing)
        option = expert_option(mem.agent, state, self.knows_goal, self.rooms)
        new_act, new_mem, _ = _decide(start(mem, option, state), state, timing)
        return jnp.where(ended, new_act, act).astype(jnp.int32), _select_tree(ended, new_mem, mem)
