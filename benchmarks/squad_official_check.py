"""Our SQuAD EM/F1 against the official evaluation scripts, on our QA models' test predictions.

    TRANSFERLAB_DATA=../shared .venv/bin/python benchmarks/squad_official_check.py \\
        [--v1-model runs/bench/qa-squad/squad-v1.1/last] [--v2-model runs/bench/qa-squad/squad-v2.0/last]

The unit tests check :func:`transferlab.eval.squad.squad_metrics` against re-typed official
scripts; this runs published copies of the scripts themselves, read out of wheels on PyPI (nothing
vendored, nothing installed; ``pip download --no-deps`` once into ``--cache``):

- v1.1: the official ``evaluate-v1.1.py``, shipped verbatim as ``allennlp/tools/squad_eval.py`` in
  allennlp 0.9.0 (``evaluate(dataset, predictions)``);
- v2.0: the official ``evaluate-v2.0.py`` as shipped in FARM 0.8.0
  (``farm/evaluation/squad_evaluation.py``: the XLNet authors' copy, whose only change is the
  threshold search, not used here): ``get_raw_scores`` and ``make_eval_dict`` over all questions
  and the HasAns / NoAns subsets.

Each model (``benchmarks/qa_squad.py`` trains both) answers its task's test questions as
``transferlab evaluate`` does (the v2.0 model at its stored no-answer threshold); the answers go
to ``--cache/predictions-VERSION.json`` and the questions, grouped into articles and paragraphs, to
a SQuAD file beside it, which the official code scores. Figures per version: ``official_*`` and
``ours_*`` (EM and F1, in [0, 1]; v2.0 also HasAns and NoAns F1) and ``max_abs_diff`` (the issue's
bar: 1e-6).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import module_from_wheel, write_result  # noqa: E402

from transferlab.data.tasks import TaskDataConfig, load_task  # noqa: E402
from transferlab.eval.squad import squad_metrics  # noqa: E402
from transferlab.tasks.loading import load_task_model  # noqa: E402
from transferlab.tasks.qa import predictor_spans, predictor_threshold  # noqa: E402

SCRIPTS = {"v1.1": ("allennlp==0.9.0", "allennlp/tools/squad_eval.py"),
           "v2.0": ("farm==0.8.0", "farm/evaluation/squad_evaluation.py")}


def squad_file(examples) -> list[dict]:
    """The examples as SQuAD's ``data``: articles by title, paragraphs by context, in order."""
    articles: dict[str, dict[str, list]] = {}
    for ex in examples:
        qa = {"id": ex.id, "question": ex.question,
              "answers": [{"text": a.text, "answer_start": a.start} for a in ex.answers]}
        if ex.is_impossible:
            qa["is_impossible"] = True
        articles.setdefault(ex.title or "", {}).setdefault(ex.context, []).append(qa)
    return [{"title": t, "paragraphs": [{"context": c, "qas": qas} for c, qas in paras.items()]}
            for t, paras in articles.items()]


def answers(model: str, task: str) -> tuple[list, dict[str, str]]:
    """The task's test questions and the model's answers, as ``transferlab evaluate`` gives them."""
    p = load_task_model(model)
    test = load_task(TaskDataConfig(task=task))["test"]
    threshold = predictor_threshold(p)
    return test, {ex.id: q.answer(threshold) for ex, q in zip(test, predictor_spans(p, test))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--v1-model", default="runs/bench/qa-squad/squad-v1.1/last")
    ap.add_argument("--v2-model", default="runs/bench/qa-squad/squad-v2.0/last")
    ap.add_argument("--cache", default="runs/bench/squad-official")
    ap.add_argument("--record", default="squad_official_check")
    args = ap.parse_args()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    figures: dict[str, float] = {}
    for version, model in (("v1.1", args.v1_model), ("v2.0", args.v2_model)):
        test, predicted = answers(model, f"squad-{version}")
        data = squad_file(test)
        (cache / f"predictions-{version}.json").write_text(json.dumps(predicted, indent=1))
        (cache / f"test-{version}.json").write_text(json.dumps({"version": version, "data": data}))
        ours = squad_metrics(test, predicted)
        ev = module_from_wheel(*SCRIPTS[version], cache, f"squad_eval_{version.replace('.', '_')}")
        v = version.replace(".", "")
        if version == "v1.1":
            ref = ev.evaluate(data, predicted)
            pairs = {"exact_match": ref["exact_match"] / 100, "f1": ref["f1"] / 100}
        else:
            exact, f1 = ev.get_raw_scores(data, predicted)
            has = [ex.id for ex in test if ex.answers and not ex.is_impossible]
            no = [ex.id for ex in test if not (ex.answers and not ex.is_impossible)]
            whole, has_ans, no_ans = (ev.make_eval_dict(exact, f1, qid_list=ids) for ids in (None, has, no))
            pairs = {"exact_match": whole["exact"] / 100, "f1": whole["f1"] / 100,
                     "has_ans_f1": has_ans["f1"] / 100, "no_ans_f1": no_ans["f1"] / 100}
        for k, value in pairs.items():
            figures[f"{v}_official_{k}"], figures[f"{v}_ours_{k}"] = value, ours[k]
        figures[f"{v}_max_abs_diff"] = max(abs(value - ours[k]) for k, value in pairs.items())
        print(f"{version}: official {pairs}, ours { {k: ours[k] for k in pairs} }", flush=True)
    write_result(args.record, figures, models={"v1.1": args.v1_model, "v2.0": args.v2_model},
                 scripts={v: f"{r}:{m}" for v, (r, m) in SCRIPTS.items()})


if __name__ == "__main__":
    main()
