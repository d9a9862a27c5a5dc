"""Top-down floor plans of household states in JAX, with captioned episode GIFs.

``render(state, size)`` draws one ``world.State`` as a ``uint8[size, size, 3]`` RGB picture seen from above:
the apartment's longest side is scaled to the frame less a margin (``MARGIN`` of the side on each edge),
keeping its aspect and centring it. World ``x`` runs to the right and world ``z`` down the picture.

Painter's order:

1. rooms, filled with a pale colour of their class (bathroom, bedroom, kitchen, living room);
2. walls: a dark outline of every room;
3. doors: a light mark across the wall where a door stands;
4. furniture: a filled rectangle of its footprint in its class colour, with a darker edge. A container that
   can open looks different when OPEN (a pale fill and a thick edge); a switched-ON appliance carries a yellow
   dot in its middle;
5. grabbable objects: small squares in their class colour (a square of ``OBJECT_SIDE`` metres, whatever the
   object's own size). An object held by a character sits just beside it, to its right (right hand) or its
   left (left hand). An object INSIDE a closed container (hidden from the characters) is drawn dimmed;
6. characters: discs of ``CHAR_RADIUS`` metres, Alice red, Bob blue; a dark ring surrounds a sitting
   character. When the two stand nearer than one radius they are drawn pushed half a radius apart along
   ``x``, Alice to the left, so that neither hides the other.

Every class has one colour in ``PALETTE`` (indexed by class id; ``legend()`` names them). Sizes below a few
pixels are raised to a minimum in pixels, so small frames stay legible. Drawing is branch-free: per-pixel
world coordinates, rectangle and disc tests vectorised over nodes, and for each layer the last node covering a
pixel gives its colour. Rectangle tests are separable, so a layer's coverage is kept as 32-bit sets of nodes
per pixel (a row's set AND a column's set) and the last node is the highest set bit: memory and work per frame
stay ``O(H * W)`` rather than ``O(nodes * H * W)``. ``render`` is pure and jittable (``size`` static) and
accepts leading batch axes; ``render_episode`` and ``save_episode_gif`` turn a rollout into captioned frames
and a GIF.
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.core.render import caption, check_frames, save_gif
from jaxsoc.envs.household import classes as C
from jaxsoc.envs.household import predicates as PR
from jaxsoc.envs.household import world as W

MARGIN = 0.04  # fraction of the frame side left empty on each edge
WALL_HALF = 0.07  # metres: half a wall's thickness
DOOR_HALF = 0.45  # metres: half a doorway's width along its wall
EDGE = 0.05  # metres: the edge of a piece of furniture (closed)
OPEN_EDGE = 0.14  # metres: the edge of an OPEN container
ON_DOT = 0.13  # metres: radius of the dot marking a switched-ON appliance
OBJECT_SIDE = 0.24  # metres: side of an object's square
OBJECT_EDGE = 0.03  # metres: the dark edge around an object's square
CHAR_RADIUS = 0.35  # metres
SIT_RING = 0.13  # metres: width of the ring around a sitting character
CHUNK = 32  # states drawn at once by ``render`` on a batch and by ``render_episode`` (bounds the memory)

BACKGROUND_RGB = (248, 248, 248)
WALL_RGB = (48, 48, 56)
ON_RGB = (255, 214, 0)
RING_RGB = (20, 20, 20)
OBJECT_EDGE_RGB = (30, 30, 30)
CHARACTER_RGB = ((220, 38, 38), (37, 90, 230))  # Alice, Bob
OPEN_TINT = 0.65  # an OPEN container's fill: this much of the way from its colour to white
HIDDEN_TINT = 0.6  # an object hidden in a closed container: this much of the way to HIDDEN_RGB
HIDDEN_RGB = (205, 205, 205)
EDGE_SHADE = 0.55  # a furniture edge: its colour times this

_COLOURS = {
    "none": (0, 0, 0),
    # rooms (pale) and doors
    "bathroom": (203, 229, 244),
    "bedroom": (236, 222, 244),
    "kitchen": (249, 239, 201),
    "livingroom": (214, 238, 208),
    "doorjamb": (255, 255, 255),
    # furniture and appliances
    "kitchentable": (160, 108, 58),
    "coffeetable": (196, 146, 92),
    "sofa": (104, 128, 166),
    "bench": (148, 118, 86),
    "chair": (186, 156, 112),
    "bed": (126, 156, 204),
    "desk": (138, 98, 68),
    "nightstand": (172, 132, 98),
    "kitchencounter": (150, 150, 156),
    "cabinet": (184, 122, 70),
    "kitchencabinet": (206, 154, 82),
    "bathroomcabinet": (128, 188, 198),
    "toilet": (232, 232, 238),
    "fridge": (168, 208, 230),
    "dishwasher": (118, 158, 178),
    "microwave": (92, 92, 104),
    "stove": (64, 64, 68),
    "tv": (32, 32, 44),
    "lamp": (238, 196, 122),
    # grabbable objects (saturated, kept apart from the characters' red and blue)
    "plate": (250, 250, 250),
    "waterglass": (110, 205, 255),
    "wineglass": (176, 112, 224),
    "cutleryfork": (150, 150, 164),
    "cupcake": (255, 132, 184),
    "pancake": (232, 182, 88),
    "poundcake": (204, 136, 52),
    "pudding": (132, 76, 36),
    "apple": (108, 192, 40),
    "juice": (255, 150, 0),
    "wine": (128, 0, 64),
    "coffeepot": (86, 58, 38),
    "book": (0, 128, 128),
    "remotecontrol": (44, 44, 44),
    "whippedcream": (255, 244, 200),
}
#: ``uint8[NUM_CLASSES, 3]``: each class's colour, indexed by class id
PALETTE = np.array([_COLOURS[name] for name in C.CLASS_NAMES], np.uint8)

_CAN_OPEN = np.array((C.PROPERTIES & C.CAN_OPEN) > 0)
_HAND_SIDE = np.array([1.0, -1.0], np.float32)  # right hand to the right (+x), left hand to the left


# ---------------------------------------------------------------------------------------------------- checks


def check_size(size) -> int:
    """Returns ``size`` as an ``int``; raises ``ValueError`` unless it is a positive integer (not a bool)."""
    if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 1:
        raise ValueError(f"size must be a positive int (the frame side in pixels, e.g. 128 or 256), got {size!r}")
    return int(size)


def legend() -> dict[str, tuple[int, int, int]]:
    """Returns ``{name: (r, g, b)}``: the colour of every class (``classes.CLASS_NAMES`` but ``none``) and of the
    two characters (``alice``, ``bob``)."""
    out = {name: tuple(int(v) for v in PALETTE[i]) for i, name in enumerate(C.CLASS_NAMES) if i > 0}
    for name, rgb in zip(W.AGENTS, CHARACTER_RGB, strict=True):
        out[name] = rgb
    return out


# ---------------------------------------------------------------------------------------------------- geometry


def _frame(state: W.State, size: int) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """Returns ``(lo, scale, off, px)``: the apartment's lowest corner ``float32[2]`` (metres), pixels per metre,
    the pixel offset ``float32[2]`` of that corner (x, z) in the frame, and one pixel in metres."""
    nodes = state.nodes
    real = (nodes.cls[: W.NUM_ROOMS] > 0)[:, None]
    centre, half = nodes.pos[: W.NUM_ROOMS], nodes.size[: W.NUM_ROOMS] / 2
    lo = jnp.min(jnp.where(real, centre - half, jnp.inf), axis=0)
    hi = jnp.max(jnp.where(real, centre + half, -jnp.inf), axis=0)
    lo = jnp.where(jnp.isfinite(lo), lo, 0.0)
    hi = jnp.where(jnp.isfinite(hi), hi, 1.0)
    span = jnp.maximum(hi - lo, 1e-3)
    scale = size * (1 - 2 * MARGIN) / span.max()
    off = (size - span * scale) / 2
    return lo, scale, off, 1.0 / scale


def pixel_coords(state: W.State, size: int, points) -> jax.Array:
    """Returns ``float32[..., 2]``: the (row, column) pixel coordinates in ``render(state, size)`` of world
    points ``float[..., 2]`` (x, z metres); pixel ``(i, j)`` has its centre at ``(i + 0.5, j + 0.5)``."""
    size = check_size(size)
    lo, scale, off, _ = _frame(state, size)
    xz = (jnp.asarray(points, jnp.float32) - lo) * scale + off
    return xz[..., ::-1]


def _axes(state: W.State, size: int) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Returns ``(x, z, px)``: the world x of every pixel column ``float32[size]``, the world z of every pixel
    row ``float32[size]``, and one pixel in metres."""
    lo, scale, off, px = _frame(state, size)
    centres = jnp.arange(size, dtype=jnp.float32) + 0.5
    return lo[0] + (centres - off[0]) / scale, lo[1] + (centres - off[1]) / scale, px


def _rect_bits(x: jax.Array, z: jax.Array, pos: jax.Array, half: jax.Array, valid: jax.Array) -> list[jax.Array]:
    """Returns which pixels lie in each of ``K`` rectangles (centres ``pos`` and half extents ``half``,
    ``float32[K, 2]``; only where ``valid`` ``bool[K]``) as bit sets: ``ceil(K / 32)`` words ``uint32[H, W]``,
    bit ``b`` of word ``w`` for rectangle ``32 w + b``. A rectangle test is separable, so each word is the AND
    of a per-row and a per-column word: no ``[K, H, W]`` array is built."""
    in_x = (jnp.abs(x[None, :] - pos[:, :1]) <= half[:, :1]) & valid[:, None]  # [K, W]
    in_z = jnp.abs(z[None, :] - pos[:, 1:]) <= half[:, 1:]  # [K, H]
    words = []
    for start in range(0, pos.shape[0], 32):
        stop = min(start + 32, pos.shape[0])
        bit = jnp.left_shift(jnp.uint32(1), jnp.arange(stop - start, dtype=jnp.uint32))[:, None]
        cols = jnp.sum(jnp.where(in_x[start:stop], bit, jnp.uint32(0)), axis=0, dtype=jnp.uint32)  # distinct bits
        rows = jnp.sum(jnp.where(in_z[start:stop], bit, jnp.uint32(0)), axis=0, dtype=jnp.uint32)
        words.append(rows[:, None] & cols[None, :])
    return words


def _top_bits(words: list[jax.Array]) -> tuple[jax.Array, jax.Array]:
    """Returns ``(hit, top)``: ``bool[H, W]`` whether any rectangle of ``_rect_bits`` covers a pixel, and
    ``int32[H, W]`` the highest-numbered one that does (0 where none): the one painted last."""
    hit = jnp.zeros(words[0].shape, bool)
    top = jnp.zeros(words[0].shape, jnp.int32)
    for w, word in enumerate(words):
        here = word != 0
        highest = 31 - jax.lax.clz(word).astype(jnp.int32)
        top = jnp.where(here, 32 * w + highest, top)
        hit = hit | here
    return hit, top


def _top(masks: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Returns ``(hit, top)``: ``bool[H, W]`` whether any of ``masks`` (``bool[K, H, W]``) covers a pixel, and
    ``int32[H, W]`` the last one that does (0 where none): the one painted last."""
    index = jnp.arange(masks.shape[0], dtype=jnp.int32)[:, None, None]
    top = jnp.max(jnp.where(masks, index, -1), axis=0)
    return top >= 0, jnp.maximum(top, 0)


def _paint(image: jax.Array, where: jax.Array, rgb) -> jax.Array:
    """Returns ``image`` (``float32[H, W, 3]``) with colour ``rgb`` (``[3]`` or ``[H, W, 3]``) where ``where``."""
    return jnp.where(where[..., None], jnp.asarray(rgb, jnp.float32), image)


def _boxes(image, x, z, pos, half, valid, fill, edge_rgb, edge, dot=None, dot_radius=0.0):
    """Returns ``image`` (``float32[H, W, 3]``) with ``K`` rectangles painted in order: ``fill`` ``float32[K, 3]``
    inside, ``edge_rgb`` ``float32[K, 3]`` within ``edge`` ``float32[K]`` metres of their border, and a disc of
    ``ON_RGB`` of radius ``dot_radius`` at the centre of those with ``dot`` ``bool[K]``."""
    hit, top = _top_bits(_rect_bits(x, z, pos, half, valid))
    dx = jnp.abs(x[None, :] - pos[top, 0])  # [H, W]
    dz = jnp.abs(z[:, None] - pos[top, 1])
    inner = (dx <= half[top, 0] - edge[top]) & (dz <= half[top, 1] - edge[top])
    colour = jnp.where(inner[..., None], fill[top], edge_rgb[top])
    if dot is not None:
        colour = jnp.where(
            (dot[top] & (dx**2 + dz**2 <= dot_radius**2))[..., None], jnp.asarray(ON_RGB, jnp.float32), colour
        )
    return _paint(image, hit, colour)


# ---------------------------------------------------------------------------------------------------- layers


def _rooms_walls_doors(image, state: W.State, x, z, px):
    """Returns ``image`` with the rooms, their walls and the doors painted."""
    nodes = state.nodes
    palette = jnp.asarray(PALETTE, jnp.float32)
    r = slice(0, W.NUM_ROOMS)
    pos, half, real = nodes.pos[r], nodes.size[r] / 2, nodes.cls[r] > 0
    image = _boxes(image, x, z, pos, half, real, palette[nodes.cls[r]], palette[nodes.cls[r]], jnp.zeros(W.NUM_ROOMS))
    wall = jnp.maximum(WALL_HALF, 0.6 * px)
    (outer,) = _rect_bits(x, z, pos, half + wall, real)
    (inner,) = _rect_bits(x, z, pos, half - wall, real)
    image = _paint(image, (outer & ~inner) != 0, WALL_RGB)
    # a door lies on a wall of its first room: across a vertical wall (x fixed) it spans z, else x
    d = slice(W.DOOR0, W.FURNITURE0)
    door_pos, door_real = nodes.pos[d], nodes.cls[d] > 0
    room = jnp.clip(state.door_rooms[:, 0].astype(jnp.int32), 0, W.NUM_ROOMS - 1)
    gap = jnp.abs(jnp.abs(door_pos - pos[room]) - half[room])  # distance to the room's x walls, z walls
    vertical = gap[:, 0] < gap[:, 1]
    along, across = jnp.maximum(DOOR_HALF, 1.5 * px), wall * 1.6
    door_half = jnp.where(vertical[:, None], jnp.stack([across, along]), jnp.stack([along, across]))
    doors = door_pos.shape[0]
    colour = jnp.broadcast_to(palette[C.CLASS["doorjamb"]], (doors, 3))
    return _boxes(image, x, z, door_pos, door_half, door_real, colour, colour, jnp.zeros(doors))


def _furniture(image, state: W.State, x, z, px):
    """Returns ``image`` with the furniture painted (OPEN containers pale with a thick edge, ON ones dotted)."""
    nodes = state.nodes
    f = slice(W.FURNITURE0, W.OBJECT0)
    cls = nodes.cls[f]
    base = jnp.asarray(PALETTE, jnp.float32)[cls]
    is_open = jnp.asarray(_CAN_OPEN)[cls] & ((nodes.states[f] & C.OPEN) > 0)
    is_on = (nodes.states[f] & C.ON) > 0
    fill = jnp.where(is_open[:, None], base + OPEN_TINT * (255.0 - base), base)
    edge_rgb = base * EDGE_SHADE
    edge = jnp.where(is_open, jnp.maximum(OPEN_EDGE, 1.6 * px), jnp.maximum(EDGE, 0.75 * px))
    dot = jnp.maximum(ON_DOT, 1.2 * px)
    return _boxes(image, x, z, nodes.pos[f], nodes.size[f] / 2, cls > 0, fill, edge_rgb, edge, is_on, dot)


def _character_positions(state: W.State, radius: jax.Array) -> jax.Array:
    """Returns ``float32[2, 2]``: where the characters are drawn (pushed apart when nearer than ``radius``)."""
    pos = state.chars.pos
    near = jnp.linalg.norm(pos[0] - pos[1]) < radius
    push = jnp.array([[-0.5, 0.0], [0.5, 0.0]], jnp.float32) * radius
    return pos + jnp.where(near, push, 0.0)


def _objects(image, state: W.State, x, z, px, char_pos, radius):
    """Returns ``image`` with the grabbable objects painted: held ones beside their holder, hidden ones dim."""
    nodes = state.nodes
    o = slice(W.OBJECT0, W.NUM_NODES)
    cls = nodes.cls[o]
    half = jnp.maximum(OBJECT_SIDE / 2, 1.5 * px)
    # where each hand's object is drawn: beside its holder's drawn disc
    hands = state.chars.hands.reshape(-1).astype(jnp.int32)  # (alice rh, alice lh, bob rh, bob lh)
    beside = char_pos.repeat(2, axis=0) + jnp.stack(
        [jnp.tile(jnp.asarray(_HAND_SIDE), 2) * (radius + 1.2 * half), jnp.zeros(4)], axis=1
    )
    slot = jnp.where(hands >= W.OBJECT0, hands - W.OBJECT0, W.MAX_OBJECTS)
    held = jnp.zeros(W.MAX_OBJECTS, bool).at[slot].set(True, mode="drop")
    pos = W.positions(state)[o]
    pos = jnp.where(held[:, None], jnp.zeros_like(pos).at[slot].set(beside, mode="drop"), pos)
    parent = jnp.maximum(nodes.parent[o].astype(jnp.int32), 0)
    hidden = (nodes.relation[o] == C.INSIDE) & ((nodes.states[parent] & C.OPEN) == 0) & ~held
    base = jnp.asarray(PALETTE, jnp.float32)[cls]
    dim = jnp.asarray(HIDDEN_RGB, jnp.float32)
    fill = jnp.where(hidden[:, None], base + HIDDEN_TINT * (dim - base), base)
    edge_rgb = jnp.where(hidden[:, None], dim * 0.7, jnp.asarray(OBJECT_EDGE_RGB, jnp.float32))
    edge = jnp.full(W.MAX_OBJECTS, jnp.maximum(OBJECT_EDGE, 0.5 * px))
    halves = jnp.broadcast_to(half, (W.MAX_OBJECTS, 2))
    return _boxes(image, x, z, pos, halves, cls > 0, fill, edge_rgb, edge)


def _characters(image, x, z, pos, radius, sitting, px):
    """Returns ``image`` with the two characters' discs (and the ring of a sitting one) painted, Bob last."""
    ring = jnp.maximum(SIT_RING, 1.0 * px)
    outer = radius + jnp.where(sitting, ring, 0.0)  # [2]
    d2 = (x[None, None, :] - pos[:, 0, None, None]) ** 2 + (z[None, :, None] - pos[:, 1, None, None]) ** 2
    hit, top = _top(d2 <= outer[:, None, None] ** 2)
    body = jnp.where(top == 1, d2[1], d2[0]) <= radius**2  # inside the top character's own disc
    colour = jnp.where(
        body[..., None], jnp.asarray(CHARACTER_RGB, jnp.float32)[top], jnp.asarray(RING_RGB, jnp.float32)
    )
    return _paint(image, hit, colour)


# ---------------------------------------------------------------------------------------------------- render


@functools.partial(jax.jit, static_argnames="size")
def _render_one(state: W.State, size: int) -> jax.Array:
    x, z, px = _axes(state, size)
    image = jnp.broadcast_to(jnp.asarray(BACKGROUND_RGB, jnp.float32), (size, size, 3))
    image = _rooms_walls_doors(image, state, x, z, px)
    image = _furniture(image, state, x, z, px)
    radius = jnp.maximum(CHAR_RADIUS, 2.5 * px)
    char_pos = _character_positions(state, radius)
    image = _objects(image, state, x, z, px, char_pos, radius)
    image = _characters(image, x, z, char_pos, radius, state.chars.sitting_on >= 0, px)
    return jnp.round(jnp.clip(image, 0.0, 255.0)).astype(jnp.uint8)


def render(state: W.State, size: int = 256) -> jax.Array:
    """Draws household states from above.

    Args:
        state: a ``world.State``, optionally with leading batch axes (``nodes.cls`` ``[..., NUM_NODES]``).
        size: the frame side in pixels (static under ``jit``).

    Returns:
        ``uint8[..., size, size, 3]`` RGB frames, one per state.

    Raises:
        ValueError: unless ``size`` is a positive int.
    """
    size = check_size(size)
    lead = state.nodes.cls.shape[:-1]
    if not lead:
        return _render_one(state, size)
    flat = jax.tree_util.tree_map(lambda a: a.reshape(-1, *a.shape[len(lead) :]), state)
    frames = _render_many(flat, size)
    return frames.reshape(*lead, size, size, 3)


@functools.partial(jax.jit, static_argnames="size")
def _render_many(states: W.State, size: int) -> jax.Array:
    """Returns ``uint8[N, size, size, 3]`` for states with one leading axis ``N``, drawn ``CHUNK`` at a time."""
    return jax.lax.map(lambda s: _render_one(s, size), states, batch_size=min(CHUNK, states.nodes.cls.shape[0]))


# ---------------------------------------------------------------------------------------------------- captions


def _describe(cls: np.ndarray, action) -> str:
    """Returns the words of ``action`` (an int) given the node classes ``cls`` ``[NUM_NODES]``."""
    action = int(action)
    if not 0 <= action < W.NUM_ACTIONS:
        return f"invalid action ({action})"
    verb, target = divmod(action, W.NUM_NODES)
    if verb == W.V["noop"]:
        return "noop"
    return f"{W.VERBS[verb]} <{C.CLASS_NAMES[int(cls[target])]}> ({target})"


def describe_action(state: W.State, action) -> str:
    """Returns an action id in words: ``"noop"``, or the verb, the target's class and its node index, e.g.
    ``"grab <apple> (47)"`` (``state`` names the target: one state, no batch axes); ``"invalid action (id)"``
    for an id outside ``[0, NUM_ACTIONS)``."""
    cls = np.asarray(state.nodes.cls)
    if cls.ndim != 1:
        raise ValueError(f"describe_action takes one state (nodes.cls [{W.NUM_NODES}]), got shape {cls.shape}")
    verb, target = W.decode_action(action)
    return _describe(cls, int(verb) * W.NUM_NODES + int(target))


def render_episode(states: W.State, actions, size: int = 256) -> tuple[np.ndarray, list[str]]:
    """Renders a rollout and writes its captions.

    Args:
        states: a ``world.State`` with a leading time axis ``T``.
        actions: ``int[T, 2]`` (or ``int[T - 1, 2]``): the actions Alice and Bob took from each state; a state
            without one is captioned ``-``.
        size: the frame side in pixels.

    Returns:
        ``(frames, texts)``: ``uint8[T, size, size, 3]`` (numpy) and ``T`` strings of two lines,
        ``"goal: <goal>"`` and ``"alice: <action>  bob: <action>"``.

    Raises:
        ValueError: for a bad ``size``, states without a time axis, or actions of another shape.
    """
    size = check_size(size)
    cls = np.asarray(states.nodes.cls)
    if cls.ndim != 2:
        raise ValueError(f"states must have one leading time axis (nodes.cls [T, {W.NUM_NODES}]), got {cls.shape}")
    steps = cls.shape[0]
    actions = np.asarray(actions)
    if actions.ndim != 2 or actions.shape[1] != W.NUM_CHARACTERS or actions.shape[0] not in (steps, steps - 1):
        raise ValueError(f"actions must have shape [{steps}, 2] (or [{steps - 1}, 2]), got {actions.shape}")
    frames = np.asarray(_render_many(states, size))
    counts, targets = np.asarray(states.goal_count), np.asarray(states.goal_target)
    texts = []
    for t in range(steps):
        words = [_describe(cls[t], a) for a in actions[t]] if t < len(actions) else ["-", "-"]
        acts = "  ".join(f"{name}: {w}" for name, w in zip(W.AGENTS, words, strict=True))
        texts.append(f"goal: {PR.goal_text(counts[t], targets[t])}\n{acts}")
    return frames, texts


def save_episode_gif(frames, texts: Sequence[str], path: str | Path, fps: float = 4) -> Path:
    """Writes frames ``uint8[T, H, W, 3]`` as a looping GIF with ``texts[t]`` in a white band under frame ``t``;
    each line of a text (split at ``\\n``) gets its own band, so lines stay apart however they wrap.

    Returns:
        The ``Path`` written.

    Raises:
        ValueError: for bad frames, a number of texts other than ``T``, or a bad ``fps``.
    """
    frames = check_frames(frames)
    if len(texts) != len(frames):
        raise ValueError(f"got {len(texts)} texts for {len(frames)} frames")
    lines = [str(text).split("\n") for text in texts]
    depth = max(len(line) for line in lines)
    for k in range(depth):
        frames = caption(frames, [line[k] if k < len(line) else "" for line in lines])
    return save_gif(frames, path, fps)
