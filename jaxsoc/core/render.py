"""Frame utilities shared by every family: tiling many worlds into one image and GIF/MP4 export."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np


def _check_frames(frames) -> np.ndarray:
    frames = np.asarray(frames)
    if frames.dtype != np.uint8 or frames.ndim != 4 or frames.shape[-1] != 3 or len(frames) == 0:
        raise ValueError(f"frames must be uint8[T, h, w, 3] with T >= 1, got {frames.dtype}{list(frames.shape)}")
    return frames


def tile_frames(frames: np.ndarray, columns: int | None = None, gap: int = 2) -> np.ndarray:
    """Returns ``uint8[..., rows * (h + gap) - gap, columns * (w + gap) - gap, 3]``: a batch of images
    ``uint8[..., N, h, w, 3]`` (leading axes such as time are kept) laid out on a grid, black between."""
    frames = np.asarray(frames)
    n, h, w = frames.shape[-4:-1]
    columns = columns or math.ceil(math.sqrt(n))
    rows = math.ceil(n / columns)
    lead = frames.shape[:-4]
    out = np.zeros((*lead, rows * (h + gap) - gap, columns * (w + gap) - gap, 3), np.uint8)
    for i in range(n):
        r, c = divmod(i, columns)
        out[..., r * (h + gap) : r * (h + gap) + h, c * (w + gap) : c * (w + gap) + w, :] = frames[..., i, :, :, :]
    return out


def save_gif(frames, path: str | Path, fps: int = 8) -> Path:
    """Writes ``uint8[T, h, w, 3]`` frames as a looping GIF and returns the path."""
    import imageio.v2 as imageio

    frames = _check_frames(frames)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    imageio.mimsave(path, list(frames), duration=1000 / fps, loop=0)
    return path


def save_mp4(frames, path: str | Path, fps: int = 8) -> Path:
    """Writes ``uint8[T, h, w, 3]`` frames as an H.264 MP4 (needs ``imageio-ffmpeg``) and returns the path."""
    import imageio.v2 as imageio

    frames = _check_frames(frames)
    try:
        import imageio_ffmpeg  # noqa: F401
    except ImportError as error:
        raise RuntimeError("MP4 export needs imageio-ffmpeg: pip install 'jaxsoc[video]' (or write a .gif)") from error
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pad = ((0, 0), (0, frames.shape[1] % 2), (0, frames.shape[2] % 2), (0, 0))  # H.264 wants even sizes
    imageio.mimsave(path, list(np.pad(frames, pad)), fps=fps, macro_block_size=1)
    return path


def save_video(frames, path: str | Path, fps: int = 8) -> Path:
    """Writes frames as GIF or MP4 according to the file extension and returns the path."""
    suffix = Path(path).suffix.lower()
    if suffix == ".gif":
        return save_gif(frames, path, fps)
    if suffix == ".mp4":
        return save_mp4(frames, path, fps)
    raise ValueError(f"unknown video extension {suffix!r} in {path}: use .gif or .mp4")
