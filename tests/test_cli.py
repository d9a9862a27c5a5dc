"""The jaxsoc command and the benchmark module (tiny sizes)."""

from __future__ import annotations

import imageio.v2 as imageio
import pytest

from jaxsoc.bench.minigrid import format_table, measure_jaxsoc, measure_minigrid
from jaxsoc.cli import main


def test_list_groups_every_id_by_family(capsys):
    import jaxsoc

    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    ids = [line for line in lines if not line.startswith("#")]
    assert ids and sorted(ids) == jaxsoc.registered_envs()
    families = [line for line in lines if line.startswith("# ")]
    assert [f.split(":")[0][2:] for f in families] == ["MiniGrid", "BabyAI", "WatchAndHelp", "CHAIC", "EXCALIBUR"]
    # each family header counts the ids listed under it, up to the next header
    starts = [lines.index(f) for f in families] + [len(lines)]
    for header, start, end in zip(families, starts, starts[1:]):
        listed = [line for line in lines[start + 1 : end] if not line.startswith("#")]
        assert header.endswith(f": {len(listed)} ids")
        assert all(name.startswith(header.split(":")[0][2:]) for name in listed)
    assert "## classic" in lines and "## paper" in lines and "## bonus" in lines
    paper = lines[lines.index("## paper") + 1 : lines.index("## paper") + 21]
    assert "BabyAI-BossLevel-v0" in paper and "BabyAI-PutNextICLR19-v0" in paper


def test_unknown_env_exits_2_with_suggestions(capsys):
    assert main(["render", "MiniGrid-Empty-5x5", "--out", "x.gif"]) == 2
    err = capsys.readouterr().err
    assert "unknown environment" in err and "MiniGrid-Empty-5x5-v0" in err


def test_demo_writes_gif_and_throughput(tmp_path, capsys):
    assert (
        main(["demo", "--env", "MiniGrid-Empty-5x5-v0", "--num-envs", "64", "--steps", "40", "--out", str(tmp_path)])
        == 0
    )
    out = capsys.readouterr().out
    assert "steps/s" in out and "episodes finished" in out
    frames = imageio.mimread(tmp_path / "demo.gif")
    assert len(frames) == 40 and frames[0].shape[0] > 100


def test_benchmark_rows():
    row = measure_jaxsoc("MiniGrid-Empty-5x5-v0", num_envs=8, num_steps=10, repeats=1, see_through_walls=False)
    assert row["steps_per_s"] > 0 and row["compile_s"] > 0 and not row["see_through_walls"]
    reference = measure_minigrid("MiniGrid-Empty-5x5-v0", seconds=0.2)
    assert reference["steps"] >= 256 and reference["steps_per_s"] > 0
    row.update(minigrid_steps_per_s=reference["steps_per_s"], ratio_minigrid=1.0)
    row.update(xminigrid_steps_per_s=None, ratio_xminigrid=None)
    table = format_table([row])
    assert "MiniGrid-Empty-5x5-v0" in table and "minigrid occlusion" in table


def test_unknown_video_extension_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="extension"):
        main(["render", "MiniGrid-Empty-5x5-v0", "--steps", "2", "--out", str(tmp_path / "x.avi")])


def test_render_babyai_level_with_mission_caption(tmp_path, capsys):
    out = tmp_path / "x.gif"
    assert main(["render", "BabyAI-GoToLocal-v0", "--seed", "3", "--steps", "3", "--out", str(out)]) == 0
    frames = imageio.mimread(out)
    grid_pixels = 8 * 32
    assert 1 <= len(frames) <= 3 and frames[0].shape[0] > grid_pixels  # GIF merges repeated frames
    assert frames[0].shape[1] == grid_pixels
    caption = frames[0][grid_pixels:]
    assert (caption < 128).any() and (caption == 255).mean() > 0.5  # dark text on a white band
