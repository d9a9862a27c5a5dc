"""A scripted household solver that reads the true state: the reference Alice of the Watch-And-Help tasks.

``solver_action(state, char)`` picks one action from the state alone (no memory), every step afresh, jittable,
vmappable and without data-dependent branches. Its plan, in order of priority:

1. A held object that nothing needs (and that is not a book Alice must hold) is put down on the nearest
   surface that is no goal target.
2. Delivery: a held object some unmet ON / INSIDE predicate needs goes to that predicate's target (the nearest
   one when several need its class): walk there, open it when it is a closed container, put the object on /
   in it with the hand holding it. Delivery waits while a hand is free and another object can be fetched (two
   objects per trip), except that a second object is never fetched when both would go into closed containers
   (opening takes a free hand).
3. Fetching: the needed object (class still short after counting what is held) with the least walk to it plus
   walk on to its target; objects already satisfying a goal predicate and objects held by anyone are left
   alone. Walk to the furniture it is on or in, open that when closed, grab.
4. ``holds_book``: once nothing else is to be placed, fetch the nearest book and keep it.
5. ``sit_sofa``: once everything else holds, walk to the target sofa and sit (a walk stands the character
   up, so sitting comes last).

Distances are route lengths through the doors a walk takes (``world``'s ``next_door``), so the plan follows
the dynamics' own routes. ``ScriptedAlice`` wraps the solver as a ``HelperEnv`` Alice; ``solve_rate`` measures
it on a task set. ``python -m jaxsoc.envs.household.solver --split test-1`` prints its success rate and episode
lengths with 1 m walks and with teleporting.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.household import classes as C
from jaxsoc.envs.household import env as E
from jaxsoc.envs.household import predicates as PR
from jaxsoc.envs.household import tasks as T
from jaxsoc.envs.household import world as W

_BIG = 1e6
_PLACE = np.isin(PR.PRED_KIND, (PR.ON_KIND, PR.INSIDE_KIND))  # predicates met by putting objects somewhere
_INSIDE = PR.PRED_KIND == PR.INSIDE_KIND
_HOLDS = PR.PREDICATE["holds_book"]
_SIT = PR.PREDICATE["sit_sofa"]
_BOOK = C.CLASS["book"]


def route_length(state: W.State, room, pos, goal_room, goal_pos) -> jax.Array:
    """Returns the length in metres (``float32``, the broadcast shape of the inputs) of the route a walk takes
    from ``(room, pos)`` to ``(goal_room, goal_pos)``: straight within a room, else through the doors of
    ``state.next_door``'s shortest route. ``room``/``goal_room`` int ``[...]``, ``pos``/``goal_pos``
    float ``[..., 2]``."""
    room, goal_room = jnp.asarray(room, jnp.int32), jnp.asarray(goal_room, jnp.int32)
    shape = jnp.broadcast_shapes(room.shape, goal_room.shape, pos.shape[:-1], goal_pos.shape[:-1])
    room, goal_room = jnp.broadcast_to(room, shape), jnp.broadcast_to(goal_room, shape)
    pos, goal_pos = jnp.broadcast_to(pos, (*shape, 2)), jnp.broadcast_to(goal_pos, (*shape, 2))
    door_pos = state.nodes.pos[W.DOOR0 : W.FURNITURE0]
    total = jnp.zeros(shape, jnp.float32)
    for _ in range(W.NUM_ROOMS):  # at most 3 doors, then the last stretch (zero once arrived)
        arrived = room == goal_room
        door = jnp.maximum(state.next_door[room, goal_room], 0).astype(jnp.int32)
        way = jnp.where(arrived[..., None], goal_pos, door_pos[door])
        total = total + jnp.linalg.norm(way - pos, axis=-1)
        pos = way
        a, b = state.door_rooms[door, 0].astype(jnp.int32), state.door_rooms[door, 1].astype(jnp.int32)
        room = jnp.where(arrived, room, jnp.where(a == room, b, a))
    return total


def _approach(close: jax.Array, walk_to: jax.Array, act: jax.Array) -> jax.Array:
    """Returns ``act`` when the character is close enough, else a walk towards ``walk_to``."""
    return jnp.where(close, act, W.encode_action("walk", walk_to))


def solver_action(state: W.State, char: int = 0) -> jax.Array:
    """Returns the scripted action (``int32``, ``world.encode_action``) of character ``char`` towards Alice's goal
    in ``state`` (see the module docstring), read from the true state. Pure, jittable and vmappable, with no
    branch or loop on traced values. ``holds_book`` and ``sit_sofa`` count Alice's hands and seat only, so a
    ``char`` other than 0 helps with the ON / INSIDE predicates alone."""
    nodes, chars = state.nodes, state.chars
    v = W.view(state, char)
    anchor = W.anchors(state, v.holder)
    kind = jnp.asarray(W.NODE_KIND)
    idx = jnp.arange(W.NUM_NODES)
    is_obj = (kind == 3) & (nodes.cls > 0)
    closed = ((nodes.properties & C.CAN_OPEN) > 0) & ((nodes.states & C.OPEN) == 0)  # [N] a closed box

    # the goal: what is still missing
    count = state.goal_count.astype(jnp.int32)
    sat = W.satisfied(state)
    place = jnp.asarray(_PLACE)
    need = jnp.where(place, jnp.maximum(count - sat, 0), 0)  # [P]
    target = jnp.maximum(state.goal_target, 0).astype(jnp.int32)  # [P]
    pred_obj = jnp.asarray(PR.PRED_OBJECT)
    relation = jnp.where(jnp.asarray(_INSIDE), C.INSIDE, C.ON_TOP)
    of_class = nodes.cls[:, None] == pred_obj[None, :]  # [N, P]
    meets = (
        of_class
        & (nodes.parent[:, None] == state.goal_target[None, :])
        & (nodes.relation[:, None] == relation[None, :])
        & (count > 0)[None, :]
        & place[None, :]
    )
    frozen = meets.any(1)  # [N] already satisfies a goal predicate: never moved
    wanted = of_class & (need > 0)[None, :]  # [N, P] the object could meet predicate p
    obj_need = (of_class * need[None, :]).sum(1)  # [N] instances its class still needs

    # distances (metres along the walk's route)
    here_room, here_pos = chars.room[char], chars.pos[char]
    to_node = route_length(state, here_room, here_pos, v.room, anchor)  # [N]
    obj_to_target = route_length(state, v.room[:, None], anchor[:, None], v.room[target][None, :], anchor[target][None])
    target_closed = closed[target]  # [P]

    # what the character holds
    hands = chars.hands[char].astype(jnp.int32)  # [2] right, left
    holding = hands >= 0
    held = jnp.maximum(hands, 0)
    free = ~holding.all()
    held_same = ((nodes.cls[None, :] == nodes.cls[held][:, None]) & holding[:, None]).sum(0)  # [N]
    book_wanted = count[_HOLDS] > 0
    # per hand: the nearest predicate its object can still meet, and whether it can be delivered now
    hand_wanted = wanted[held] & holding[:, None]  # [2, P]
    infeasible = target_closed & ~free  # opening takes a free hand
    hand_cost = jnp.where(hand_wanted, to_node[target][None, :] + _BIG * infeasible[None, :], jnp.inf)
    hand_pred = jnp.argmin(hand_cost, axis=1)  # [2]
    deliverable = hand_wanted.any(1)  # [2]
    feasible = deliverable & (hand_cost.min(1) < _BIG)
    junk = holding & ~deliverable & ~((nodes.cls[held] == _BOOK) & book_wanted)
    # both hands full and neither delivery possible: the left hand's object goes down
    junk = junk.at[1].set(junk[1] | (holding.all() & ~feasible.any()))

    # fetch candidates: short classes, not frozen, held by nobody
    to_target = jnp.where(wanted, obj_to_target, jnp.inf)  # [N, P]
    cand_cost = to_target.min(1)  # [N] on to its nearest target
    # every target that still wants it is a closed container (independent of where the character stands, so
    # that the set of candidates only changes when the world does: no dithering between two plans)
    closed_only = (wanted & ~target_closed[None, :]).sum(1) == 0  # [N]
    held_closed = (deliverable & closed_only[held]).any()
    candidate = is_obj & ~frozen & (v.holder < 0) & (obj_need > held_same) & free & ~(held_closed & closed_only)
    parent = jnp.maximum(nodes.parent, 0).astype(jnp.int32)
    boxed = (nodes.relation == C.INSIDE) & closed[parent]  # [N] inside a closed container
    cost = to_node + cand_cost + boxed
    pick = jnp.argmin(jnp.where(candidate, cost, jnp.inf))
    has_candidate = candidate.any()

    def fetch(obj):
        box = parent[obj]
        act = jnp.where(boxed[obj], W.encode_action("open", box), W.encode_action("grab", obj))
        return _approach(v.close[obj], box, act)

    # 1. put junk down on the nearest surface that is no goal target
    surface = (
        (kind == 2)
        & (nodes.cls > 0)
        & ((nodes.properties & C.SURFACES) > 0)
        & ~(idx[:, None] == state.goal_target[None, :]).any(1)
    )
    spot = jnp.argmin(jnp.where(surface, to_node, jnp.inf))
    junk_hand = jnp.where(junk[0], 0, 1)
    drop = _approach(v.close[spot], spot, W.encode_action(W.V["putback_rh"] + junk_hand, spot))

    # 2. deliver the held object whose target is nearest
    deliver_hand = jnp.argmin(jnp.where(feasible, hand_cost.min(1), jnp.inf))
    p = hand_pred[deliver_hand]
    goal = target[p]
    put_verb = jnp.where(jnp.asarray(_INSIDE)[p], W.V["putin_rh"], W.V["putback_rh"]) + deliver_hand
    put = jnp.where(closed[goal], W.encode_action("open", goal), W.encode_action(put_verb, goal))
    deliver = _approach(v.close[goal], goal, put)

    # 4. a book to hold, 5. the sofa to sit on
    placed_all = (need == 0).all() & ~deliverable.any()
    book = (nodes.cls == _BOOK) & (v.holder < 0)
    book_pick = jnp.argmin(jnp.where(book, to_node + boxed, jnp.inf))
    get_book = book_wanted & (sat[_HOLDS] < count[_HOLDS]) & placed_all & free & book.any()
    others_hold = ((sat >= count) | (jnp.arange(PR.NUM_PREDICATES) == _SIT)).all()
    sofa = target[_SIT]
    sit = (count[_SIT] > 0) & (sat[_SIT] < count[_SIT]) & others_hold
    sit_action = _approach(v.close[sofa], sofa, W.encode_action("sit", sofa))

    action = W.encode_action("noop", 0)
    action = jnp.where(sit, sit_action, action)
    action = jnp.where(get_book, fetch(book_pick), action)
    action = jnp.where(has_candidate, fetch(pick), action)
    action = jnp.where(feasible.any() & (~free | ~has_candidate), deliver, action)
    action = jnp.where(junk.any(), drop, action)
    return action.astype(jnp.int32)


class ScriptedAlice:
    """``env.AlicePolicy`` acting by ``solver_action`` on the true state (its memory is an unused ``int32``)."""

    def __init__(self, char: int = 0) -> None:
        self.char = char

    def init(self, key, state, params):
        return jnp.zeros((), jnp.int32)

    def act(self, key, memory, obs, state, params):
        return solver_action(state, self.char), memory


def _rollout(states: W.State, params: E.HouseholdParams, keys: jax.Array, max_steps: int):
    """Returns ``(success, length, invalid)`` per task (``bool/int32/int32[B]``): the solver alone as Alice (Bob
    idles) for ``max_steps`` steps; ``length`` is the step of the first success (``max_steps`` + 1 for none)
    and ``invalid`` counts Alice's actions whose preconditions failed before it."""

    def one(state, key):
        def step(carry, k):
            state, done, length, invalid = carry
            action = solver_action(state, 0)
            state, _, success, _, info = E.advance(k, state, jnp.stack([action, jnp.int32(0)]), params)
            invalid = invalid + (~done & ~info["action_valid"][0])
            length = jnp.where(~done & success, state.step, length)
            return (state, done | success, length, invalid), None

        init = (state, jnp.array(False), jnp.int32(max_steps + 1), jnp.int32(0))
        (_, done, length, invalid), _ = jax.lax.scan(step, init, jax.random.split(key, max_steps))
        return done, length, invalid

    return jax.vmap(one)(states, keys)


rollout = jax.jit(_rollout, static_argnames="max_steps")


def solve_rate(
    task_set: T.TaskSet | W.State,
    params: E.HouseholdParams,
    max_steps: int = 250,
    batch: int | None = None,
    seed: int = 0,
) -> dict:
    """Runs the solver alone (Bob does noop) on every task of ``task_set`` (a ``TaskSet`` or a batch of
    states) for ``max_steps`` steps, ``batch`` tasks at a time (all at once for None).

    Returns a dict: ``success_rate`` (float), ``mean_length``/``max_length`` (steps to success over the
    successes; nan/0 without any), ``failed`` (list of the failed tasks' indices), ``lengths`` (``int32[T]``,
    ``max_steps`` + 1 for a failure), ``invalid_actions`` (``int32[T]``: Alice's invalid actions before success).
    """
    states = task_set.states if isinstance(task_set, T.TaskSet) else task_set
    num = int(states.nodes.cls.shape[0])
    batch = num if batch is None else min(batch, num)
    keys = jax.random.split(jax.random.key(seed), num)
    done, length, invalid = [], [], []
    for start in range(0, num, batch):
        index = np.arange(start, start + batch) % num  # the last chunk is padded to one compiled shape
        chunk = jax.tree_util.tree_map(lambda x, i=index: x[i], states)
        d, n, bad = jax.device_get(rollout(chunk, params, keys[index], max_steps=max_steps))
        keep = min(batch, num - start)
        done.append(d[:keep])
        length.append(n[:keep])
        invalid.append(bad[:keep])
    done, length, invalid = np.concatenate(done), np.concatenate(length), np.concatenate(invalid)
    ok = length[done]
    return {
        "success_rate": float(done.mean()),
        "mean_length": float(ok.mean()) if ok.size else float("nan"),
        "max_length": int(ok.max()) if ok.size else 0,
        "failed": np.flatnonzero(~done).tolist(),
        "lengths": length.astype(np.int32),
        "invalid_actions": invalid.astype(np.int32),
    }


def main(argv: list[str] | None = None) -> None:
    """Prints the solver's success rate and episode lengths on a split, walking and teleporting."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="test-1", choices=sorted(T.SPLITS))
    parser.add_argument("--seed", type=int, default=0, help="the task set's seed")
    parser.add_argument("--max-steps", type=int, default=250)
    parser.add_argument("--batch", type=int, default=None, help="tasks per compiled rollout (default: all)")
    args = parser.parse_args(argv)
    task_set = T.cached_split(args.split, args.seed)
    by_activity = np.asarray(task_set.activities)
    for teleport in (False, True):
        params = E.params_for(args.split, args.seed, teleport=teleport, max_steps=args.max_steps)
        start = time.perf_counter()
        out = solve_rate(task_set, params, args.max_steps, args.batch)
        seconds = time.perf_counter() - start
        mode = "teleport" if teleport else "walk 1 m/step"
        print(
            f"{args.split} ({len(task_set)} tasks), {mode}: success {out['success_rate']:.1%}, "
            f"length mean {out['mean_length']:.1f} max {out['max_length']}, "
            f"invalid actions {int(out['invalid_actions'].sum())}, {seconds:.1f} s"
        )
        for a, name in enumerate(PR.ACTIVITY_NAMES):
            rows = (by_activity == a).any(1)
            if rows.any():
                ok = rows & (out["lengths"] <= args.max_steps)
                lens = out["lengths"][ok]
                print(f"  {name:15s} {ok.sum()}/{rows.sum()}  mean {lens.mean() if lens.size else float('nan'):.1f}")
        if out["failed"]:
            print(f"  failed: {out['failed']}")


if __name__ == "__main__":
    main()
