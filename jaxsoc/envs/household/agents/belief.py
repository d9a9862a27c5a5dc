"""Where a character thinks each object is: Watch-And-Help's belief (``agents/belief.py``), as arrays.

The original keeps, for every grabbable object, a distribution over the places it may be: uniform at first over
the places the scene generator could have put it (other entries masked out), then updated on every step from
the observation. A seen object becomes certain; an unseen one loses every place the character would see now if
the object were there, including an open container it looks into; a distribution left with no possible place
is reset to the prior. The planner plans in a world sampled from the belief, and each object keeps its previous
sample unless the latest observation contradicts it. Nothing is forgotten (``forget_rate`` 0).

Adaptation to this world. Objects here always stand ON a surface or INSIDE a container of a piece of furniture
(never on the floor), or are HELD by a character, so the belief of object slot ``j`` (node
``world.OBJECT0 + j``) is over ``PLACES = 2 * MAX_FURNITURE + 1`` places: ON furniture slot ``f`` (node
``world.FURNITURE0 + f``) is place ``f``, INSIDE it is place ``MAX_FURNITURE + f``, and place ``HELD`` (the last)
is "in a character's hand". Furniture, its class and room, and which object slots exist and their classes are
known (they never change, and the original assumes the objects' existence, not their location, is known); they
are read from the true state. The belief is stored as log-weights: 0 for a possible place, ``IMPOSSIBLE``
(-1e9) otherwise, so it is uniform over what is still possible.

- The prior (``prior``) allows exactly the generator's places (``classes.placement_tables``) plus the goal
  targets every grabbable class can be carried to: ON a kitchen table or coffee table, INSIDE a fridge or a
  dishwasher. ``HELD`` starts impossible; it becomes certain when the object is seen in a hand.
- An object in the character's own hand is always seen, so its row is one-hot on ``HELD`` too; for an unseen
  object ``HELD`` can thus only mean "the other character holds it". Planners should read the character's own
  hands from the true state (``sample_world`` leaves them as they are).
- The places an unseen object loses on an update are: ON every piece of furniture in the character's room
  (surfaces are always seen), INSIDE every OPEN one there (closed ones hide their contents), and ``HELD`` when
  the other character is in the same room (whatever it holds would be seen).
- A sampled world (``sample_world``) puts objects sampled ``HELD`` in the other character's hands, keeping the
  objects it really holds there when they are sampled ``HELD`` as well and filling its free hands in slot order;
  an object that does not fit any more (both hands taken) is redrawn among its possible non-held places, or, if
  it has none, from the prior less the places the character sees (as a reset would).
- Only locations are uncertain: all else in the sampled world (container states, the characters) is the truth.
  When the belief was updated on the same state, the character sees in the sampled world exactly what it sees
  in the true one (unseen objects are only ever sampled at places it does not see).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsoc.envs.household import apartments as A
from jaxsoc.envs.household import classes as C
from jaxsoc.envs.household import world as W

MAX_FURNITURE = A.MAX_FURNITURE
MAX_OBJECTS = W.MAX_OBJECTS
PLACES = 2 * MAX_FURNITURE + 1
HELD = PLACES - 1
IMPOSSIBLE = -1e9
#: a log-weight above this is a possible place
THRESHOLD = -1e8


def _tables() -> tuple[np.ndarray, np.ndarray]:
    """Returns ``(inside, on)`` ``bool[NUM_CLASSES, NUM_CLASSES]``: the generator's placements plus the goal
    targets (ON kitchentable/coffeetable, INSIDE fridge/dishwasher) for every grabbable class."""
    inside, on = C.placement_tables()
    grab = [C.CLASS[name] for name in C.GRABBABLE_CLASSES]
    for target in ("kitchentable", "coffeetable"):
        on[grab, C.CLASS[target]] = True
    for target in ("fridge", "dishwasher"):
        inside[grab, C.CLASS[target]] = True
    return inside, on


_INSIDE, _ON = _tables()


class Belief(struct.PyTreeNode):
    """One character's belief (leading batch axes allowed).

    - ``logits`` float32[MAX_OBJECTS, PLACES]: per object slot, the log-weight of each place (0 possible,
      ``IMPOSSIBLE`` not); rows of empty slots are all ``IMPOSSIBLE``.
    - ``sample`` int16[MAX_OBJECTS]: the place each object had in the last sampled world, -1 before any sample
      and for empty slots.
    """

    logits: jax.Array
    sample: jax.Array


def _possible(logits: jax.Array) -> jax.Array:
    return logits > THRESHOLD


def _one_hot(place: jax.Array) -> jax.Array:
    """Returns ``float32[MAX_OBJECTS, PLACES]``: 0 at each row's ``place``, ``IMPOSSIBLE`` elsewhere (everywhere
    for place -1)."""
    return jnp.where(jnp.arange(PLACES)[None, :] == place[:, None], 0.0, IMPOSSIBLE).astype(jnp.float32)


def prior(state: W.State) -> jax.Array:
    """Returns the log-prior ``float32[MAX_OBJECTS, PLACES]``: 0 where an object of the slot's class may be (the
    generator's places and the goal targets, on furniture that exists), ``IMPOSSIBLE`` elsewhere, always
    ``IMPOSSIBLE`` for ``HELD`` and for empty slots."""
    cls = state.nodes.cls
    obj = cls[W.OBJECT0 :].astype(jnp.int32)[:, None]
    fur = cls[W.FURNITURE0 : W.OBJECT0].astype(jnp.int32)[None, :]
    exists = fur > 0
    on = jnp.asarray(_ON)[obj, fur] & exists
    inside = jnp.asarray(_INSIDE)[obj, fur] & exists
    held = jnp.zeros((MAX_OBJECTS, 1), bool)
    return jnp.where(jnp.concatenate([on, inside, held], axis=1), 0.0, IMPOSSIBLE).astype(jnp.float32)


def init(state: W.State) -> Belief:
    """Returns the initial ``Belief``: the prior and no sample yet (``sample`` all -1)."""
    return Belief(logits=prior(state), sample=jnp.full(MAX_OBJECTS, -1, jnp.int16))


def true_places(state: W.State, holder: jax.Array | None = None) -> jax.Array:
    """Returns ``int32[MAX_OBJECTS]``: where each object really is (``f`` ON furniture slot ``f``,
    ``MAX_FURNITURE + f`` INSIDE it, ``HELD`` in anyone's hand), -1 for empty slots. ``holder`` is
    ``world.holders(state)`` if already computed."""
    holder = W.holders(state) if holder is None else holder
    nodes = state.nodes
    rel = nodes.relation[W.OBJECT0 :]
    f = nodes.parent[W.OBJECT0 :].astype(jnp.int32) - W.FURNITURE0
    place = jnp.where(rel == C.INSIDE, MAX_FURNITURE + f, jnp.where(rel == C.ON_TOP, f, -1))
    place = jnp.where(holder[W.OBJECT0 :] >= 0, HELD, place)
    return jnp.where(nodes.cls[W.OBJECT0 :] > 0, place, -1).astype(jnp.int32)


def full_knowledge(state: W.State) -> Belief:
    """Returns a ``Belief`` certain of the truth (one-hot rows on ``true_places``, also the ``sample``), for the
    oracles: ``sample_world`` then returns ``state`` itself."""
    truth = true_places(state)
    return Belief(logits=_one_hot(truth), sample=truth.astype(jnp.int16))


def seen_places(state: W.State, char: int | jax.Array) -> jax.Array:
    """Returns ``bool[PLACES]``: the places character ``char`` sees now, where an object would be visible: ON
    the furniture of its room, INSIDE the open furniture there, and ``HELD`` when the other character is in the
    same room."""
    nodes, room = state.nodes, state.chars.room
    fur = slice(W.FURNITURE0, W.OBJECT0)
    here = (nodes.room[fur] == room[char]) & (nodes.cls[fur] > 0)
    opened = (nodes.states[fur] & C.OPEN) > 0
    other = (room[1 - char] == room[char])[None]
    return jnp.concatenate([here, here & opened, other])


def update(belief: Belief, state: W.State, char: int | jax.Array) -> Belief:
    """Returns ``belief`` after character ``char`` observes ``state`` (``sample`` unchanged).

    A visible object's row becomes one-hot on its true place. An unseen object's row loses the places the
    character sees (``seen_places``); a row left with no possible place is reset to the prior without those
    places, or to the plain prior if that is empty too."""
    v = W.view(state, char)
    visible = v.visible[W.OBJECT0 :]
    seen = seen_places(state, char)[None, :]
    base = prior(state)
    ruled = jnp.where(seen, IMPOSSIBLE, belief.logits)
    reset = jnp.where(seen, IMPOSSIBLE, base)
    reset = jnp.where(_possible(reset).any(-1, keepdims=True), reset, base)
    unseen = jnp.where(_possible(ruled).any(-1, keepdims=True), ruled, reset)
    logits = jnp.where(visible[:, None], _one_hot(true_places(state, v.holder)), unseen)
    return belief.replace(logits=logits.astype(jnp.float32))


def probabilities(belief: Belief) -> jax.Array:
    """Returns ``float32[..., MAX_OBJECTS, PLACES]``: each object's distribution over places (rows with no
    possible place, i.e. empty slots, are all zeros)."""
    probs = jax.nn.softmax(belief.logits, axis=-1)
    return jnp.where(_possible(belief.logits).any(-1, keepdims=True), probs, 0.0)


def sample_world(key: jax.Array, belief: Belief, state: W.State, char: int | jax.Array) -> tuple[Belief, W.State]:
    """Returns ``(belief, world)``: the belief with this draw stored in ``sample`` and a planning world for
    character ``char``.

    Each object keeps ``belief.sample`` while that place is still possible, else draws one from
    ``softmax(logits)`` (Gumbel-argmax); objects ``char`` sees (its own hands included) take their true place.
    The world is ``state`` with every unseen object whose sample differs from the truth moved there: ON / INSIDE
    the furniture (parent, relation, room, position of the furniture), or into a free hand of the other character
    for ``HELD`` (see the module docstring for the rule when both hands are taken); the other character's hands
    drop the objects sampled elsewhere. ``char`` may be traced."""
    nodes, chars = state.nodes, state.chars
    v = W.view(state, char)
    obj = slice(W.OBJECT0, None)
    real = nodes.cls[obj] > 0
    visible = v.visible[obj]
    truth = true_places(state, v.holder)
    logits = belief.logits
    old = belief.sample.astype(jnp.int32)
    at_old = jnp.take_along_axis(logits, jnp.maximum(old, 0)[:, None], axis=1)[:, 0]
    keep = (old >= 0) & _possible(at_old)
    noise = jax.random.gumbel(key, logits.shape, jnp.float32)
    sample = jnp.where(keep, old, jnp.argmax(logits + noise, axis=-1))
    sample = jnp.where(visible, truth, sample)

    # the other character's hands: objects it really holds and that are sampled HELD stay; the others sampled
    # HELD fill its free hands in slot order; those that find no hand are redrawn among non-held places
    other = 1 - char
    hands = chars.hands[other].astype(jnp.int32)  # [2]
    hand_obj = jnp.clip(hands - W.OBJECT0, 0, MAX_OBJECTS - 1)
    kept = (hands >= 0) & (sample[hand_obj] == HELD)
    fresh = real & ~visible & (sample == HELD) & (v.holder[obj] != other)
    rank = jnp.cumsum(fresh) - 1
    free = ~kept
    fits = fresh & (rank < free.sum())
    base = prior(state)[:, :HELD]
    unseen_base = jnp.where(seen_places(state, char)[None, :HELD], IMPOSSIBLE, base)
    base = jnp.where(_possible(unseen_base).any(-1, keepdims=True), unseen_base, base)
    rest = logits[:, :HELD]
    rest = jnp.where(_possible(rest).any(-1, keepdims=True), rest, base)
    redraw = jnp.argmax(rest + noise[:, :HELD], axis=-1)
    sample = jnp.where(fresh & ~fits, redraw, sample)
    free_rank = jnp.cumsum(free) - 1  # [2]: the rank among free hands
    match = fits[None, :] & (rank[None, :] == free_rank[:, None]) & free[:, None]  # [2, MAX_OBJECTS]
    filled = jnp.where(match.any(1), W.OBJECT0 + jnp.argmax(match, axis=1), -1)
    new_hands = jnp.where(kept, hands, filled).astype(jnp.int16)
    sample = jnp.where(real, sample, -1)

    # move the unseen objects whose sample is not where they are
    moved = real & ~visible & (sample != truth)
    held = sample == HELD
    f = jnp.clip(sample % MAX_FURNITURE, 0, MAX_FURNITURE - 1)
    fnode = W.FURNITURE0 + f
    relation = jnp.where(held, C.HELD, jnp.where(sample < MAX_FURNITURE, C.ON_TOP, C.INSIDE))
    parent = jnp.where(held, -1, fnode)
    room = jnp.where(held, chars.room[other], nodes.room[fnode])
    pos = jnp.where(held[:, None], chars.pos[other][None, :], nodes.pos[fnode])

    def put(field, value):
        return field.at[obj].set(jnp.where(moved.reshape(moved.shape + (1,) * (value.ndim - 1)), value, field[obj]))

    nodes = nodes.replace(
        relation=put(nodes.relation, relation.astype(nodes.relation.dtype)),
        parent=put(nodes.parent, parent.astype(nodes.parent.dtype)),
        room=put(nodes.room, room.astype(nodes.room.dtype)),
        pos=put(nodes.pos, pos.astype(nodes.pos.dtype)),
    )
    world = state.replace(nodes=nodes, chars=chars.replace(hands=chars.hands.at[other].set(new_hands)))
    return belief.replace(sample=sample.astype(jnp.int16)), world
