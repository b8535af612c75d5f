"""Why a SQuAD v2.0 model answers nothing: its spans, and its sense of whether there is an answer.

    TRANSFERLAB_DATA=../shared .venv/bin/python benchmarks/qa_answerability.py \\
        [--model runs/bench/qa-squad/squad-v2.0/last] [--threads 1]

A v2.0 model's F1 mixes two skills: the span it picks on answerable questions, and the no-answer
decision (null score minus best-span score against the threshold tuned on validation). When the
tuned threshold answers almost nothing (``qa_squad.json``'s ``v2_has_ans_f1`` near 0), this says
which skill is missing, on the same test split (``squad-v2.0``'s held-out articles):

- ``has_ans_f1_forced`` / ``has_ans_exact_match_forced``: EM/F1 on the answerable questions with
  the model made to answer (its best span, no null option): the span skill alone;
- ``answerable_auc``: ROC AUC of the null-minus-span score as a detector of unanswerable
  questions (0.5: it cannot tell them apart; 1.0: a threshold separates them perfectly);
- ``null_gap_mean_answerable`` / ``null_gap_mean_unanswerable``: that score's means per group;
- ``all_null_f1``: the F1 of answering nothing at all (the unanswerable share), the floor a v2.0
  model must beat.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import write_result  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from sklearn.metrics import roc_auc_score  # noqa: E402

from transferlab.data.tasks import TaskDataConfig, load_task  # noqa: E402
from transferlab.eval.squad import squad_metrics  # noqa: E402
from transferlab.tasks.loading import load_task_model  # noqa: E402
from transferlab.tasks.qa import predictor_spans  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="runs/bench/qa-squad/squad-v2.0/last",
                    help="a QA model fine-tuned on squad-v2.0 (benchmarks/qa_squad.py writes this one)")
    ap.add_argument("--task", default="squad-v2.0", help="its catalog task; the test split is scored")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--record", default="qa_answerability")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    p = load_task_model(args.model)
    test = load_task(TaskDataConfig(task=args.task))["test"]
    preds = predictor_spans(p, test)
    unanswerable = np.array([ex.is_impossible or not ex.answers for ex in test])
    if unanswerable.all() or not unanswerable.any():
        raise SystemExit(f"{args.task}'s test split needs answerable and unanswerable questions (a v2.0 task)")
    answerable = [i for i in range(len(test)) if not unanswerable[i]]
    forced = squad_metrics([test[i] for i in answerable], {test[i].id: preds[i].text for i in answerable})
    gap = np.array([q.null_score - q.score for q in preds])  # high: the model leans to "no answer"
    write_result(args.record, {
        "has_ans_f1_forced": forced["f1"], "has_ans_exact_match_forced": forced["exact_match"],
        "answerable_auc": float(roc_auc_score(unanswerable, gap)),
        "null_gap_mean_answerable": float(gap[~unanswerable].mean()),
        "null_gap_mean_unanswerable": float(gap[unanswerable].mean()),
        "all_null_f1": float(unanswerable.mean()),
    }, model=args.model, task=args.task, test_questions=len(test), answerable=len(answerable))


if __name__ == "__main__":
    main()
