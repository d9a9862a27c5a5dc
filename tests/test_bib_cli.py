"""``jaxsoc bib`` end to end: render, data, eval, and clear errors (small sizes, shared compiled programs)."""

import json

import pytest

from jaxsoc.cli import main
from jaxsoc.envs.bib import dataset


def test_render_write_read_and_score_files(tmp_path, capsys):
    assert (
        main(
            [
                "bib",
                "render",
                "--task",
                "efficiency_time",
                "--compact",
                "--size",
                "84",
                "--out",
                str(tmp_path / "t.gif"),
            ]
        )
        == 0
    )
    assert (tmp_path / "te.gif").stat().st_size > 0 and (tmp_path / "tu.gif").stat().st_size > 0
    out = tmp_path / "data"
    assert main(["bib", "data", "--split", "evaluation", "--tasks", "efficiency_time", "--episodes", "2",
                 "--video", "none", "--compact", "--out", str(out)]) == 0  # fmt: skip
    manifest = json.loads((out / "evaluation" / dataset.MANIFEST_NAME).read_text())
    assert manifest["totals"]["episodes"] == 2
    files = sorted((out / "evaluation" / "efficiency_time").glob("*.json"))
    assert [f.name for f in files] == [f"efficiency_time_00000{i}{s}.json" for i in range(2) for s in "eu"]
    assert main(["bib", "render", "--json", str(files[0]), "--size", "84", "--out", str(tmp_path / "f.gif")]) == 0
    assert "wrote" in capsys.readouterr().out
    scored = ["bib", "eval", "--data", str(out), "--types", "efficiency_time", "--observer", "nearest_object"]
    assert main(scored) == 0  # files on disk are scored like generated pairs
    assert "| Efficiency: time control | 100.0 |" in capsys.readouterr().out


def test_eval_writes_the_table_the_plot_and_the_record(tmp_path, capsys):
    code = main(["bib", "eval", "--pairs", "16", "--types", "efficiency_time", "multi_agent",
                 "--observer", "nearest_object", "--out", str(tmp_path)])  # fmt: skip
    assert code == 0
    record = json.loads((tmp_path / "bib_observers.json").read_text())
    accuracy = record["accuracy"]["nearest_object"]
    assert accuracy["efficiency_time"] == 1.0 and accuracy["multi_agent"] == 0.5
    assert record["pairs"] == {"efficiency_time": 16, "multi_agent": 16}
    assert (tmp_path / "bib_observers.png").stat().st_size > 1000
    assert "Efficiency: time control" in capsys.readouterr().out


def test_bad_input_is_refused_with_a_message(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["bib", "render", "--task", "nope"])
    assert main(["bib", "eval", "--types", "efficiency"]) == 2
    assert "did you mean" in capsys.readouterr().err
    if not dataset.has_ffmpeg():
        assert main(["bib", "data", "--split", "background", "--out", str(tmp_path), "--video", "mp4"]) == 2
        assert "jaxsoc[video]" in capsys.readouterr().err
    assert main(["bib", "render", "--json", str(tmp_path / "missing.json"), "--out", str(tmp_path / "m.gif")]) == 2
