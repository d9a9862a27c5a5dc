"""Frame utilities shared by every family: tiling many worlds into one image, and GIF/MP4 export.

Frames are ``uint8[T, h, w, 3]`` RGB arrays (numpy or JAX, or a sequence of ``uint8[h, w, 3]`` frames).
GIFs are written with pillow through imageio; MP4 needs the optional ``imageio-ffmpeg`` package
(``pip install jaxsoc[video]``).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from pathlib import Path

import numpy as np

VIDEO_SUFFIXES = (".gif", ".mp4")


def check_frames(frames) -> np.ndarray:
    """Returns ``frames`` as a numpy ``uint8[T, h, w, 3]`` array with ``T, h, w >= 1``.

    Raises:
        ValueError: on another dtype, a single frame ``[h, w, 3]``, another rank or channel count, or
            an empty sequence.
    """
    if isinstance(frames, Sequence) and not isinstance(frames, np.ndarray) and len(frames) == 0:
        raise ValueError("frames is empty: need at least one uint8[h, w, 3] frame")
    try:
        array = np.asarray(frames)
    except ValueError as error:  # ragged sequences
        raise ValueError(f"frames must all have the same shape uint8[h, w, 3]: {error}") from error
    if array.dtype != np.uint8:
        raise ValueError(
            f"frames must be uint8 RGB (0..255), got dtype {array.dtype}; "
            "convert with np.clip(x, 0, 255).astype(np.uint8) (multiply by 255 first if in [0, 1])"
        )
    if array.ndim == 3 and array.shape[-1] == 3:
        raise ValueError(f"got a single frame of shape {array.shape}; pass frames as uint8[T, h, w, 3] (e.g. x[None])")
    if array.ndim != 4 or array.shape[-1] != 3:
        raise ValueError(f"frames must have shape [T, h, w, 3] (RGB), got shape {array.shape}")
    if min(array.shape[:3]) < 1:
        raise ValueError(f"frames must have T, h, w >= 1, got shape {array.shape}")
    return array


def caption(frames, texts: Sequence[str], height: int | None = None) -> np.ndarray:
    """Returns the frames with a white band below each one holding its text (wrapped to the frame width),
    ``uint8[T, h + band, w, 3]``, e.g. a BabyAI mission under every frame.

    Raises:
        ValueError: when the number of texts is not the number of frames.
    """
    from PIL import Image, ImageDraw, ImageFont

    frames = check_frames(frames)
    if len(texts) != len(frames):
        raise ValueError(f"got {len(texts)} texts for {len(frames)} frames")
    font = ImageFont.load_default()
    width = frames.shape[2]
    chars_per_line = max(8, width // 7)

    def wrap(text: str) -> list[str]:
        lines, line = [], ""
        for word in text.split():
            candidate = f"{line} {word}".strip()
            if len(candidate) > chars_per_line and line:
                lines.append(line)
                candidate = word
            line = candidate
        return lines + [line]

    wrapped = [wrap(t) for t in texts]
    band = height or 6 + 14 * max(len(w) for w in wrapped)
    out = np.full((len(frames), frames.shape[1] + band, width, 3), 255, np.uint8)
    out[:, : frames.shape[1]] = frames
    for t, lines in enumerate(wrapped):
        image = Image.fromarray(out[t])
        draw = ImageDraw.Draw(image)
        for k, line in enumerate(lines):
            draw.text((4, frames.shape[1] + 3 + 14 * k), line, fill=(0, 0, 0), font=font)
        out[t] = np.asarray(image)
    return out


def _check_fps(fps: float) -> float:
    if not isinstance(fps, numbers.Real) or not math.isfinite(fps) or fps <= 0:
        raise ValueError(f"fps must be a positive number, got {fps!r}")
    return float(fps)


def tile_frames(frames, columns: int | None = None, gap: int = 2, gap_value: int = 0) -> np.ndarray:
    """Lays out a batch of images on a grid, row by row, e.g. many parallel worlds in one picture.

    Args:
        frames: ``uint8[..., N, h, w, 3]``; leading axes (such as time) are kept, so a rollout
            ``uint8[T, N, h, w, 3]`` becomes a video of grids.
        columns: images per row; ``ceil(sqrt(N))`` when None.
        gap: pixels between neighbouring images, filled with ``gap_value`` (also fills empty slots).

    Returns:
        ``uint8[..., rows * (h + gap) - gap, columns * (w + gap) - gap, 3]`` with ``rows = ceil(N / columns)``.
    """
    array = np.asarray(frames)
    if array.dtype != np.uint8:
        raise ValueError(f"frames must be uint8 RGB, got dtype {array.dtype}")
    if array.ndim < 4 or array.shape[-1] != 3:
        raise ValueError(f"frames must have shape [..., N, h, w, 3], got shape {array.shape}")
    n, h, w = array.shape[-4:-1]
    if n < 1:
        raise ValueError("frames holds no image (N == 0)")
    columns = math.ceil(math.sqrt(n)) if columns is None else int(columns)
    if columns < 1 or gap < 0:
        raise ValueError(f"columns must be >= 1 and gap >= 0, got columns={columns}, gap={gap}")
    columns = min(columns, n)
    rows = math.ceil(n / columns)
    lead = array.shape[:-4]
    pad = [(0, 0)] * len(lead) + [(0, rows * columns - n), (0, gap), (0, gap), (0, 0)]
    padded = np.pad(array, pad, constant_values=gap_value)  # [..., rows * columns, h + gap, w + gap, 3]
    grid = padded.reshape(*lead, rows, columns, h + gap, w + gap, 3)
    k = len(lead)
    order = (*range(k), k, k + 2, k + 1, k + 3, k + 4)  # [..., rows, h + gap, columns, w + gap, 3]
    grid = grid.transpose(order).reshape(*lead, rows * (h + gap), columns * (w + gap), 3)
    return np.ascontiguousarray(grid[..., : rows * (h + gap) - gap, : columns * (w + gap) - gap, :])


def save_gif(frames, path: str | Path, fps: float = 8) -> Path:
    """Writes ``uint8[T, h, w, 3]`` frames as a looping GIF (pillow; colours are quantised to 256 per frame).

    Returns:
        The ``Path`` written (parent folders are created).
    """
    import imageio.v2 as imageio

    array = check_frames(frames)
    fps = _check_fps(fps)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    imageio.mimsave(path, list(array), format="GIF", duration=1000.0 / fps, loop=0)
    return path


def save_mp4(frames, path: str | Path, fps: float = 8) -> Path:
    """Writes ``uint8[T, h, w, 3]`` frames as an H.264 MP4; odd heights/widths are padded by one black pixel.

    Returns:
        The ``Path`` written (parent folders are created).

    Raises:
        RuntimeError: when the optional ``imageio-ffmpeg`` package is missing.
    """
    array = check_frames(frames)
    fps = _check_fps(fps)
    try:
        import imageio_ffmpeg  # noqa: F401
    except ImportError as error:
        raise RuntimeError(
            "MP4 export needs the optional imageio-ffmpeg package: pip install jaxsoc[video] "
            "(or pip install imageio-ffmpeg), or save a .gif instead"
        ) from error
    import imageio.v2 as imageio

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pad = ((0, 0), (0, array.shape[1] % 2), (0, array.shape[2] % 2), (0, 0))  # yuv420p wants even sizes
    imageio.mimsave(path, list(np.pad(array, pad)), format="FFMPEG", fps=fps, macro_block_size=1)
    return path


def save_video(frames, path: str | Path, fps: float = 8) -> Path:
    """Writes frames ``uint8[T, h, w, 3]`` as a GIF or an MP4, chosen by the file extension.

    Returns:
        The ``Path`` written.

    Raises:
        ValueError: for an extension other than ``.gif`` or ``.mp4``, or bad frames.
    """
    suffix = Path(path).suffix.lower()
    if suffix == ".gif":
        return save_gif(frames, path, fps)
    if suffix == ".mp4":
        return save_mp4(frames, path, fps)
    raise ValueError(f"unknown video extension {suffix or '(none)'!r} in {str(path)!r}: use one of {VIDEO_SUFFIXES}")
