"""What a CHAIC rule agent remembers and how it perceives (``agents`` holds its plans and actions).

``AgentMemory`` is a rule agent's memory (the objects it has seen and where, the goal place once seen, the other
agents' last seen spots, its current plan, the explored viewpoints, failed objects); ``new_memory`` builds one for a
role, ``perceive`` updates it from what the agent sees (one line-of-sight test per observer, ``world.sightings``),
and ``viewpoints`` places each room's viewpoints. The constants are the rule agent's thresholds (frames, metres),
named as ``agents``' module docstring describes them.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.envs.chaic import state as S
from jaxsoc.envs.chaic import world as W

KINDS = ("main", "none", "random", "rhp", "oracle")
ROLES = ("main", "rhp", "oracle", "random")

# plan kinds (AgentMemory.plan)
NO_PLAN, EXPLORE, FETCH_CONTAINER, FETCH_TARGET, GOAL, REMOVE, FOLLOW, LOOK = range(8)
PLAN_NAMES = ("none", "explore", "fetch_container", "fetch_target", "goal", "remove", "follow", "look")

# the original's constants (plan_agent.py)
MAX_MOVE_FRAMES = 1000  # a plan that walks to something is given up after this many frames
MAX_EXPLORE_FRAMES = 250
MAX_FOLLOW_FRAMES = 250
MOVE_TO_GOAL_PLACE_LIMIT = 750  # after T - 750 frames, targets in hand go to the goal place
GOAL_UNSEEN_LIMIT = 1125  # after T - 1125 frames, carrying targets, an unseen goal place is searched for
CONTAINER_LIMIT = 1500  # containers are fetched only before T - 1500 frames
FAIL_IGNORE = 500  # frames a failed object is ignored
CHILD_FAR = 3.5  # follow the child farther than this from the constrained agent
CHILD_FAR_RECENT, CHILD_RECENT_FRAMES = 5.5, 50  # ... or farther than 5.5 m within the last 50 frames
CHILD_LOST_FRAMES = 200  # turn around when she was not seen for this long
CHILD_NEAR = 2.0  # close enough to her (she returns when someone is within world.CHILD_RETURN = 2.5 m)
LOOK_TURNS = 24  # turns (a full circle) spent looking for the child before giving up for a while
# this implementation's exploration and navigation
DOOR_BLOCK = 0.8  # an obstacle this close to a door centre blocks it for the wheelchair
VIEW_SPLIT = 10.0  # rooms longer than this get two viewpoints along that side
VIEWS_PER_ROOM = 4
NUM_VIEWS = S.MAX_ROOMS * VIEWS_PER_ROOM
ARRIVE_VIEW = 0.75  # metres from a viewpoint at which the agent starts turning around
SCAN_TURNS = 18  # 270 degrees: with a 90-degree field of view, a full look around
NUM_BUMPS = 4  # spots where a move failed, avoided for BUMP_FRAMES
BUMP_RADIUS = 0.35
BUMP_FRAMES = 150
CHECK_OBSTACLES = 4  # remembered obstacles (the nearest) checked each call for having been moved

DEFAULT_TIMING = W.Timing()
_KIND = jnp.asarray(K.CLASS_KIND.astype(np.int32))
_OBSTACLE_AVOID = W.OBSTACLE_BLOCK + 0.1


class AgentMemory(struct.PyTreeNode):
    """A rule-based agent's memory (``N = MAX_OBJECTS``, ``V = NUM_VIEWS``):

    - ``agent`` int32: which agent it is; ``helper`` bool (the helpers' rules: removing obstacles, keeping the
      child near the constrained agent); ``omniscient`` bool (it perceives everything: the Oracle); ``random``
      bool (it draws its plans at random: the random helper);
      ``goal_count`` int8[NUM_CLASSES]: the goal it pursues (the true one, or 1 for every possible target class
      when it does not know it); ``knows_goal`` bool. The role is data, so one compiled ``act`` serves every
      role (and a batch may mix them).
    - objects: ``seen`` bool[N] (known to be there), ``last_pos`` float32[N, 2] (where last seen), ``free``
      bool[N] (free, i.e. held by no one, in no container, not delivered or broken, as of when the agent last saw
      it or last handled it itself: another agent's pick-up out of its view is not known until it sees the object
      or its empty spot), ``failed_until`` int32[N] (ignored until this frame), ``carrying`` bool[N] (carried at
      the last call: it knows where they went).
    - ``goal_seen`` bool; ``explored`` bool[V] (viewpoints explored).
    - the plan: ``plan`` int32 (``PLAN_NAMES``), ``plan_obj`` int32 (-1), ``plan_view`` int32 (-1),
      ``plan_start`` int32 (frame it started), ``plan_dist`` float32 (walking distance to it then), ``scan_left``
      int32 (turns left while looking around: -1 not started, 0 done).
    - others: ``agent_pos`` float32[3, 2] and ``agent_seen`` int32[3] (where / when each agent was last seen),
      ``child_far_frame`` int32 (the last frame the child was seen more than 5.5 m from the constrained agent),
      ``child_lost`` bool (her remembered spot was seen empty: she is not followed until seen again).
    - ``bumps`` float32[NUM_BUMPS, 2], ``bump_until`` int32[NUM_BUMPS]: spots where a move failed, avoided.
    """

    agent: jax.Array
    helper: jax.Array
    omniscient: jax.Array
    random: jax.Array
    goal_count: jax.Array
    knows_goal: jax.Array
    seen: jax.Array
    last_pos: jax.Array
    free: jax.Array
    failed_until: jax.Array
    carrying: jax.Array
    goal_seen: jax.Array
    explored: jax.Array
    plan: jax.Array
    plan_obj: jax.Array
    plan_view: jax.Array
    plan_start: jax.Array
    plan_dist: jax.Array
    scan_left: jax.Array
    agent_pos: jax.Array
    agent_seen: jax.Array
    child_far_frame: jax.Array
    child_lost: jax.Array
    bumps: jax.Array
    bump_until: jax.Array


# -- helpers --------------------------------------------------------------------------------------------------


def viewpoints(scene: S.Scene) -> tuple[jax.Array, jax.Array]:
    """Returns ``(points float32[NUM_VIEWS, 2], valid bool[NUM_VIEWS])``: where the agents look around when
    exploring: each room's centre, or the centres of its halves / quarters when it is longer than ``VIEW_SPLIT``
    (view ``4 * room + 2 * a + b``)."""
    r = scene.rooms
    w, h = r[:, 2] - r[:, 0], r[:, 3] - r[:, 1]
    nx = jnp.where(w > VIEW_SPLIT, 2, 1)
    nz = jnp.where(h > VIEW_SPLIT, 2, 1)
    pts, ok = [], []
    for a in range(2):
        for b in range(2):
            fx = jnp.where(nx == 2, (2 * a + 1) / 4, 0.5)
            fz = jnp.where(nz == 2, (2 * b + 1) / 4, 0.5)
            pts.append(jnp.stack([r[:, 0] + fx * w, r[:, 1] + fz * h], -1))
            ok.append(scene.room_valid & (a < nx) & (b < nz))
    return jnp.stack(pts, 1).reshape(NUM_VIEWS, 2), jnp.stack(ok, 1).reshape(NUM_VIEWS)


def possible_target_classes(task: jax.Array) -> jax.Array:
    """Returns ``bool[NUM_CLASSES]``: the classes a helper that does not know the goal considers possible targets
    (the original's ``possible_target_object_names``): items and vases, the furniture in the furniture task."""
    furniture = task == K.TASK["furniture"]
    return jnp.where(furniture, _KIND == K.FURNITURE, (_KIND == K.ITEM) | (_KIND == K.VASE))


def _class_counts(cls: jax.Array, mask: jax.Array) -> jax.Array:
    return jnp.zeros(K.NUM_CLASSES, jnp.int32).at[cls].add(mask.astype(jnp.int32))


def _nearest(mask: jax.Array, length: jax.Array) -> jax.Array:
    """Returns ``int32``: the index with the smallest ``length`` among ``mask`` (-1 when none)."""
    return jnp.where(mask.any(), jnp.argmin(jnp.where(mask, length, jnp.inf)), -1).astype(jnp.int32)


def _uniform(key: jax.Array, mask: jax.Array) -> jax.Array:
    """Returns ``int32``: an index drawn uniformly among ``mask`` (-1 when none)."""
    rank = jax.random.randint(key, (), 0, jnp.maximum(mask.sum(), 1))
    return jnp.where(mask.any(), jnp.argmax(jnp.cumsum(mask) > rank), -1).astype(jnp.int32)


def new_memory(
    state: S.State, agent, goal_count: jax.Array, knows_goal, helper=False, omniscient=False, random=False
) -> AgentMemory:
    """Returns a fresh ``AgentMemory`` for ``agent`` pursuing ``goal_count`` (it knows where every agent starts)."""
    n = S.MAX_OBJECTS
    return AgentMemory(
        agent=jnp.asarray(agent, jnp.int32),
        helper=jnp.asarray(helper, bool),
        omniscient=jnp.asarray(omniscient, bool),
        random=jnp.asarray(random, bool),
        goal_count=jnp.asarray(goal_count).astype(jnp.int8),
        knows_goal=jnp.asarray(knows_goal, bool),
        seen=jnp.zeros(n, bool),
        last_pos=jnp.zeros((n, 2), jnp.float32),
        free=jnp.zeros(n, bool),
        failed_until=jnp.zeros(n, jnp.int32),
        carrying=jnp.zeros(n, bool),
        goal_seen=jnp.bool_(False),
        explored=jnp.zeros(NUM_VIEWS, bool),
        plan=jnp.int32(NO_PLAN),
        plan_obj=jnp.int32(-1),
        plan_view=jnp.int32(-1),
        plan_start=jnp.asarray(state.frame, jnp.int32),
        plan_dist=jnp.float32(0.0),
        scan_left=jnp.int32(-1),
        agent_pos=state.agents.pos.astype(jnp.float32),
        agent_seen=jnp.full(S.NUM_AGENTS, state.frame, jnp.int32),
        child_far_frame=jnp.int32(-(10**6)),
        child_lost=jnp.bool_(False),
        bumps=jnp.zeros((NUM_BUMPS, 2), jnp.float32),
        bump_until=jnp.full(NUM_BUMPS, -1, jnp.int32),
    )


def perceive(mem: AgentMemory, state: S.State, timing: W.Timing) -> AgentMemory:
    """Returns ``mem`` updated with what the agent perceives now (see the module docstring, step 1). An
    ``omniscient`` memory knows every object, the goal place and every agent (so its ``free`` is the true state's:
    the Oracle's privilege). Others update an object's ``free`` only for what they see now, what they carried at
    the last call and the object of their own last pick-up or removal."""
    agent = mem.agent
    a, o = state.agents, state.objects
    frame = state.frame
    cls = o.cls.astype(jnp.int32)
    omniscient = mem.omniscient
    # remembered objects whose spot the agent now sees empty are forgotten: checked for the current plan's object
    # and the CHECK_OBSTACLES nearest known obstacles (others when they become the plan's object: the agent walks
    # there and sees)
    obstacle = mem.seen & (_KIND[cls] == K.OBSTACLE)
    near = jnp.where(obstacle, jnp.linalg.norm(mem.last_pos - a.pos[agent], axis=-1), jnp.inf)
    _, nearest = jax.lax.top_k(-near, CHECK_OBSTACLES)
    checked = jnp.concatenate([jnp.maximum(mem.plan_obj, 0)[None], nearest])
    # one line-of-sight test for everything: objects, agents, the goal place, the checked spots, the child's spot
    sight = W.sightings(
        state, agent, timing.view_dist, jnp.concatenate([mem.last_pos[checked], mem.agent_pos[S.CHILD][None]])
    )
    pos, carrier = sight["positions"], sight["carrier"]
    vis = sight["objects"] | (omniscient & (cls > 0))
    goal_vis = sight["goal"] | omniscient
    agents_vis = sight["agents"] | omniscient | (jnp.arange(S.NUM_AGENTS) == agent)
    # the last action: a failed pick-up / removal is ignored for a while; a removed obstacle's new place is known
    kind, obj = S.decode_action(W.stored_action(a.action[agent]))
    status = a.status[agent]
    touched = ((kind == 7) | (kind == 8)) & (obj >= 0)
    failed_obj = touched & (status == S.FAILED)
    idx = jnp.arange(S.MAX_OBJECTS)
    failed_until = jnp.where(failed_obj & (idx == obj), frame + FAIL_IGNORE, mem.failed_until)
    knows = vis | mem.carrying | (touched & (idx == obj))
    knows = knows & (cls > 0)
    looked = sight["extra"][: CHECK_OBSTACLES + 1]
    looked = looked & jnp.concatenate([(mem.plan_obj >= 0)[None], obstacle[nearest]])
    gone = mem.seen & ~knows & jnp.zeros(S.MAX_OBJECTS, bool).at[checked].max(looked)
    seen = (mem.seen & ~gone) | knows
    last_pos = jnp.where(knows[:, None], pos, mem.last_pos)
    free_now = (cls > 0) & (o.holder < 0) & (o.container < 0) & ~o.delivered & ~o.broken
    free = jnp.where(knows, free_now, mem.free)
    # the other agents
    agent_pos = jnp.where(agents_vis[:, None], a.pos, mem.agent_pos)
    agent_seen = jnp.where(agents_vis, frame, mem.agent_seen)
    # the child is not where the agent remembers her: lost until seen again
    vanished = ~agents_vis[S.CHILD] & sight["extra"][CHECK_OBSTACLES + 1]
    child_lost = (mem.child_lost | vanished) & ~agents_vis[S.CHILD]
    child_far = agents_vis[S.CHILD] & (jnp.linalg.norm(agent_pos[S.CHILD] - agent_pos[S.MAIN]) > CHILD_FAR_RECENT)
    # a move that failed: avoid the spot for a while
    bumped = (kind == S.MOVE) & (status == S.FAILED)
    slot = jnp.argmin(mem.bump_until)
    bumps = jnp.where(bumped, mem.bumps.at[slot].set(a.target_pos[agent]), mem.bumps)
    bump_until = jnp.where(bumped, mem.bump_until.at[slot].set(frame + BUMP_FRAMES), mem.bump_until)
    return mem.replace(
        seen=seen,
        last_pos=last_pos,
        free=free,
        failed_until=failed_until,
        carrying=(carrier == agent) & (cls > 0),
        goal_seen=mem.goal_seen | goal_vis,
        agent_pos=agent_pos,
        agent_seen=agent_seen,
        child_far_frame=jnp.where(child_far, frame, mem.child_far_frame),
        child_lost=child_lost,
        bumps=bumps,
        bump_until=bump_until,
    )
