"""Learning-curve logic without training: sizes capped and reported, the JSONL record and its
half-written rows, aggregation, the sample-efficiency summary on hand-made rows, table and PNG."""

import json
import statistics

import pytest

from transferlab.eval import curves


def test_sizes_all_capped_deduplicated_sorted_with_a_note():
    sizes, notes = curves.resolve_sizes("200, 50,all,100,5000,50", n_train=1000)
    assert sizes == [50, 100, 200, 1000]
    assert len(notes) == 1 and "5000" in notes[0] and "1000" in notes[0] and "capped" in notes[0]
    sizes, notes = curves.resolve_sizes("16,32,ALL", n_train=20)  # 32 and all are both the full set: one cell
    assert sizes == [16, 20] and len(notes) == 1
    assert curves.resolve_sizes("10,20", n_train=500) == ([10, 20], [])


@pytest.mark.parametrize("text, message", [("", "--sizes"), ("50,lots", "'lots'"), ("0,10", ">= 1"),
                                           ("-5", ">= 1")])
def test_bad_sizes_name_the_flag(text, message):
    with pytest.raises(ValueError, match=message):
        curves.parse_sizes(text)


def _row(method, size, seed, score, metric="accuracy"):
    return {"method": method, "size": size, "seed": seed, "metric": metric, "score": score, "wall_s": 1.0,
            "train_size": size, "task": "t"}


def test_log_appends_reads_back_and_knows_the_done_cells(tmp_path):
    path = tmp_path / "sub" / "curve.jsonl"
    log = curves.CurveLog.open(path)
    assert log.rows == [] and log.done() == set()
    log.append(_row("scratch", 10, 0, 0.5))
    log.append(_row("ulmfit", 10, 1, 0.7))
    assert path.read_text().endswith("\n") and len(path.read_text().splitlines()) == 2
    again = curves.CurveLog.open(path)
    assert again.dropped == [] and again.done() == {("scratch", 10, 0), ("ulmfit", 10, 1)}
    with pytest.raises(ValueError, match="size and seed"):
        log.append({"method": "scratch", "size": "10", "seed": 0, "metric": "accuracy", "score": 0.5})


def test_half_written_last_row_is_reported_and_removed(tmp_path):
    path = tmp_path / "curve.jsonl"
    good = [_row("scratch", 10, 0, 0.5), _row("scratch", 10, 1, 0.6)]
    last = json.dumps(_row("scratch", 20, 0, 0.8))
    path.write_text("".join(json.dumps(r) + "\n" for r in good) + last[: len(last) // 2])
    log = curves.CurveLog.open(path)
    assert len(log.dropped) == 1 and "half-written" in log.dropped[0] and ":3:" in log.dropped[0]
    assert log.done() == {("scratch", 10, 0), ("scratch", 10, 1)}
    assert path.read_text() == "".join(json.dumps(r) + "\n" for r in good)  # rewritten without it
    # a complete JSON object that lost its newline was interrupted too: its cell reruns
    path.write_text(path.read_text() + last)
    log = curves.CurveLog.open(path)
    assert ("scratch", 20, 0) not in log.done() and len(log.dropped) == 1
    log.append(_row("scratch", 20, 0, 0.8))
    assert curves.CurveLog.open(path).done() == {("scratch", 10, 0), ("scratch", 10, 1), ("scratch", 20, 0)}


def test_corrupt_and_incomplete_lines_anywhere_are_dropped(tmp_path):
    path = tmp_path / "curve.jsonl"
    rows = [json.dumps(_row("a", 10, 0, 0.5)), "{not json", json.dumps({"method": "a", "size": 10}),
            json.dumps(_row("a", 10, 1, 0.6)), ""]
    path.write_text("\n".join(rows))
    log = curves.CurveLog.open(path)
    assert len(log.dropped) == 2 and "curve.jsonl:2:" in log.dropped[0] and "curve.jsonl:3:" in log.dropped[1]
    assert log.done() == {("a", 10, 0), ("a", 10, 1)} and len(path.read_text().splitlines()) == 2


ROWS = ([_row("scratch", n, s, v) for n, vs in ((10, (0.50, 0.54)), (100, (0.60, 0.62)), (1000, (0.80, 0.82)))
         for s, v in enumerate(vs)]
        + [_row("ulmfit", n, s, v) for n, vs in ((10, (0.70, 0.72)), (100, (0.81, 0.83)), (1000, (0.90, 0.92)))
           for s, v in enumerate(vs)]
        + [_row("glove", n, s, v) for n, vs in ((10, (0.52, 0.52)), (100, (0.65, 0.63)), (1000, (0.78, 0.80)))
           for s, v in enumerate(vs)])


def test_aggregate_mean_and_sample_std_per_method_and_size():
    agg = curves.aggregate(ROWS + [_row("glove", 10, 0, 0.52)])  # a cell recorded twice counts once
    assert list(agg["scratch"]) == [10, 100, 1000]
    assert agg["scratch"][100]["mean"] == pytest.approx(0.61)
    assert agg["scratch"][100]["std"] == pytest.approx(statistics.stdev([0.60, 0.62]))
    assert agg["glove"][10] == {"mean": pytest.approx(0.52), "std": 0.0, "n": 2, "scores": [0.52, 0.52]}
    assert curves.aggregate([_row("a", 5, 0, 0.3)])["a"][5]["std"] == 0.0


def test_sample_efficiency_on_hand_made_rows():
    agg = curves.aggregate(ROWS)
    eff = curves.sample_efficiency(agg)
    assert eff["reference"] == "scratch" and eff["reference_size"] == 1000
    assert eff["reference_score"] == pytest.approx(0.81)
    # ulmfit's mean at 100 labels (0.82) reaches scratch's 0.81 with 1,000: 10x fewer labels
    assert eff["methods"]["ulmfit"] == {"reaches_at": 100, "label_savings": pytest.approx(10.0)}
    assert eff["methods"]["scratch"] == {"reaches_at": 1000, "label_savings": pytest.approx(1.0)}
    # glove tops out at 0.79: it never gets there
    assert eff["methods"]["glove"] == {"reaches_at": None, "label_savings": 0.0}
    other = curves.sample_efficiency(agg, reference="glove")  # any method can be the reference
    assert other["reference_score"] == pytest.approx(0.79) and other["methods"]["scratch"]["reaches_at"] == 1000
    with pytest.raises(ValueError, match="'fasttext'"):
        curves.sample_efficiency(agg, reference="fasttext")

    figures = curves.curve_figures(agg, eff, "accuracy", full_size=1000)
    assert figures["ulmfit_label_savings"] == pytest.approx(10.0) and figures["glove_label_savings"] == 0.0
    assert figures["ulmfit_acc_100"] == pytest.approx(0.82) and figures["scratch_acc_all"] == pytest.approx(0.81)
    assert "spearman" in next(iter(curves.curve_figures(agg, None, "spearman")))


def test_table_and_png(tmp_path):
    agg = curves.aggregate(ROWS)
    eff = curves.sample_efficiency(agg)
    table = curves.format_table(agg, "accuracy", eff, full_size=1000)
    lines = table.splitlines()
    assert "all (1,000)" in lines[2] and "label savings" in lines[2]
    ulmfit = next(line for line in lines if line.startswith("| ulmfit"))
    assert "0.820 ± 0.014" in ulmfit and "| 100 |" in ulmfit and "10.0x" in ulmfit
    assert "never" in next(line for line in lines if line.startswith("| glove"))
    one_seed = curves.format_table(curves.aggregate([r for r in ROWS if r["seed"] == 0]), "accuracy")
    assert "±" not in one_seed and one_seed.startswith("accuracy (one seed)")  # no spread to show
    png = curves.plot_curves(agg, tmp_path / "out" / "curve.png", "accuracy", title="t", efficiency=eff)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
