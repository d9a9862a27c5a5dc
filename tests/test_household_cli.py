"""``jaxsoc household`` end to end: task files written, checked and refused; an episode GIF."""

from jaxsoc.cli import main


def test_tasks_write_show_and_refuse(tmp_path, capsys):
    assert main(["household", "tasks", "--split", "test-2", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "test-2 (seed 0): 100 tasks" in out and (tmp_path / "test-2.npz").exists()
    assert main(["household", "tasks", "--show", str(tmp_path / "test-2.npz")]) == 0
    assert "apartments: 3:" in capsys.readouterr().out
    (tmp_path / "bad.npz").write_bytes(b"PK\x03\x04 broken")
    assert main(["household", "tasks", "--show", str(tmp_path / "bad.npz")]) == 2
    assert "jaxsoc household tasks: " in capsys.readouterr().err
    assert main(["household", "tasks", "--split", "test-2"]) == 2  # nowhere to write
    assert "--out DIR is required" in capsys.readouterr().err


def test_render_an_episode_gif(tmp_path, capsys):
    out = tmp_path / "ep.gif"
    args = ["household", "render", "--split", "test-1", "--task", "3", "--teleport", "--bob", "noop", "--out", str(out)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "goal reached in" in printed and out.stat().st_size > 0
    assert main(["household", "render", "--task", "100", "--out", str(out)]) == 2
    assert "--task must be in [0, 100)" in capsys.readouterr().err
