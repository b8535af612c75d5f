"""SQuAD EM/F1 equal the official evaluate-v1.1.py and evaluate-v2.0.py (their logic re-typed below as
the reference) on predictions made from the dev sets: gold answers, perturbed ones, wrong ones, empty ones."""

from __future__ import annotations

import collections
import json
import random
import re
import string

import pytest

from transferlab.data.readers import SquadReader
from transferlab.eval.squad import best_threshold, exact_match, f1, normalize_answer, squad_metrics

# --- the official scripts' logic (Rajpurkar et al.), as published -----------------------------------


def official_normalize_answer(s):
    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    def lower(text):
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def v1_f1_score(prediction, ground_truth):
    prediction_tokens = official_normalize_answer(prediction).split()
    ground_truth_tokens = official_normalize_answer(ground_truth).split()
    common = collections.Counter(prediction_tokens) & collections.Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def v1_exact_match_score(prediction, ground_truth):
    return official_normalize_answer(prediction) == official_normalize_answer(ground_truth)


def v1_metric_max_over_ground_truths(metric_fn, prediction, ground_truths):
    return max(metric_fn(prediction, ground_truth) for ground_truth in ground_truths)


def v1_evaluate(dataset, predictions):
    f1 = exact_match = total = 0
    for article in dataset:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                total += 1
                if qa["id"] not in predictions:
                    continue
                ground_truths = [x["text"] for x in qa["answers"]]
                prediction = predictions[qa["id"]]
                exact_match += v1_metric_max_over_ground_truths(v1_exact_match_score, prediction, ground_truths)
                f1 += v1_metric_max_over_ground_truths(v1_f1_score, prediction, ground_truths)
    return {"exact_match": 100.0 * exact_match / total, "f1": 100.0 * f1 / total}


def v2_make_qid_to_has_ans(dataset):
    return {qa["id"]: bool(qa["answers"]) for article in dataset for p in article["paragraphs"] for qa in p["qas"]}


def v2_get_tokens(s):
    if not s:
        return []
    return official_normalize_answer(s).split()


def v2_compute_exact(a_gold, a_pred):
    return int(official_normalize_answer(a_gold) == official_normalize_answer(a_pred))


def v2_compute_f1(a_gold, a_pred):
    gold_toks = v2_get_tokens(a_gold)
    pred_toks = v2_get_tokens(a_pred)
    common = collections.Counter(gold_toks) & collections.Counter(pred_toks)
    num_same = sum(common.values())
    if len(gold_toks) == 0 or len(pred_toks) == 0:
        return int(gold_toks == pred_toks)
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(pred_toks)
    recall = 1.0 * num_same / len(gold_toks)
    return (2 * precision * recall) / (precision + recall)


def v2_get_raw_scores(dataset, preds):
    exact_scores, f1_scores = {}, {}
    for article in dataset:
        for p in article["paragraphs"]:
            for qa in p["qas"]:
                qid = qa["id"]
                gold_answers = [a["text"] for a in qa["answers"] if official_normalize_answer(a["text"])]
                if not gold_answers:
                    gold_answers = [""]
                if qid not in preds:
                    continue
                a_pred = preds[qid]
                exact_scores[qid] = max(v2_compute_exact(a, a_pred) for a in gold_answers)
                f1_scores[qid] = max(v2_compute_f1(a, a_pred) for a in gold_answers)
    return exact_scores, f1_scores


def v2_apply_no_ans_threshold(scores, na_probs, qid_to_has_ans, na_prob_thresh):
    new_scores = {}
    for qid, s in scores.items():
        pred_na = na_probs[qid] > na_prob_thresh
        new_scores[qid] = float(not qid_to_has_ans[qid]) if pred_na else s
    return new_scores


def v2_make_eval_dict(exact_scores, f1_scores, qid_list=None):
    if not qid_list:
        total = len(exact_scores)
        return {"exact": 100.0 * sum(exact_scores.values()) / total,
                "f1": 100.0 * sum(f1_scores.values()) / total, "total": total}
    total = len(qid_list)
    return {"exact": 100.0 * sum(exact_scores[k] for k in qid_list) / total,
            "f1": 100.0 * sum(f1_scores[k] for k in qid_list) / total, "total": total}


def v2_find_best_thresh(preds, scores, na_probs, qid_to_has_ans):
    num_no_ans = sum(1 for k in qid_to_has_ans if not qid_to_has_ans[k])
    cur_score = num_no_ans
    best_score = cur_score
    best_thresh = 0.0
    qid_list = sorted(na_probs, key=lambda k: na_probs[k])
    for qid in qid_list:
        if qid not in scores:
            continue
        if qid_to_has_ans[qid]:
            diff = scores[qid]
        else:
            diff = -1 if preds[qid] else 0
        cur_score += diff
        if cur_score > best_score:
            best_score = cur_score
            best_thresh = na_probs[qid]
    return 100.0 * best_score / len(scores), best_thresh


def v2_evaluate(dataset, preds, na_probs=None, na_prob_thresh=1.0):
    na_probs = na_probs or {k: 0.0 for k in preds}
    qid_to_has_ans = v2_make_qid_to_has_ans(dataset)
    has_ans_qids = [k for k, v in qid_to_has_ans.items() if v]
    no_ans_qids = [k for k, v in qid_to_has_ans.items() if not v]
    exact_raw, f1_raw = v2_get_raw_scores(dataset, preds)
    exact_thresh = v2_apply_no_ans_threshold(exact_raw, na_probs, qid_to_has_ans, na_prob_thresh)
    f1_thresh = v2_apply_no_ans_threshold(f1_raw, na_probs, qid_to_has_ans, na_prob_thresh)
    out = v2_make_eval_dict(exact_thresh, f1_thresh)
    for prefix, qids in (("HasAns", has_ans_qids), ("NoAns", no_ans_qids)):
        if qids:
            out |= {f"{prefix}_{k}": v for k, v in v2_make_eval_dict(exact_thresh, f1_thresh, qids).items()}
    out["best_f1"], out["best_f1_thresh"] = v2_find_best_thresh(preds, f1_raw, na_probs, qid_to_has_ans)
    return out


# --- predictions made from the dev set ---------------------------------------------------------------

def _dev(shared_data, version: str, n_articles: int):
    path = shared_data / "datasets" / "squad" / f"{version}-dev.json"
    dataset = json.loads(path.read_text(encoding="utf-8"))["data"][:n_articles]
    examples = list(SquadReader(path, articles=lambda i, n: i < n_articles))
    return dataset, examples


def _perturbed(examples, seed: int = 0) -> dict[str, str]:
    """Gold answers as they are, with case/articles/punctuation changed, cut, padded, wrong or empty."""
    rng = random.Random(seed)
    pool = [a.text for ex in examples for a in ex.answers] or ["nothing"]
    out = {}
    for ex in examples:
        gold = rng.choice(ex.answers).text if ex.answers else rng.choice(pool)
        words = gold.split()
        kind = rng.randrange(8)
        out[ex.id] = [gold, f"The {gold.upper()}.", " ".join(words[1:]), f"{gold} and also more words",
                      rng.choice(pool), "", f"  an {gold} , !", " ".join(reversed(words))][kind]
    return out


def test_normalization_and_token_f1_by_hand():
    assert normalize_answer("The  Denver Broncos!") == "denver broncos"
    assert normalize_answer("an apple, a pear") == "apple pear"
    assert exact_match("the Broncos", "Broncos.") == 1.0
    assert f1("Denver Broncos won", "the Denver Broncos") == pytest.approx(2 * (2 / 3) * 1 / (2 / 3 + 1))
    assert f1("", "") == 0.0 and f1("", "", version2=True) == 1.0 and f1("x", "", version2=True) == 0.0


def test_v1_1_matches_the_official_script(shared_data):
    dataset, examples = _dev(shared_data, "v1.1", 3)
    assert len(examples) > 300
    preds = _perturbed(examples)
    ours, official = squad_metrics(examples, preds), v1_evaluate(dataset, preds)
    assert "has_ans_f1" not in ours and ours["total"] == len(examples)
    assert 100 * ours["exact_match"] == pytest.approx(official["exact_match"], abs=1e-6)
    assert 100 * ours["f1"] == pytest.approx(official["f1"], abs=1e-6)
    assert 20 < official["f1"] < 90  # the perturbations hit: neither all right nor all wrong
    del preds[examples[0].id]  # a missing prediction scores 0, as in the script
    assert 100 * squad_metrics(examples, preds)["f1"] == pytest.approx(v1_evaluate(dataset, preds)["f1"], abs=1e-6)


def test_v2_0_matches_the_official_script_with_has_ans_and_no_ans(shared_data):
    dataset, examples = _dev(shared_data, "v2.0", 2)
    assert len(examples) > 300 and any(ex.is_impossible for ex in examples)
    preds = _perturbed(examples, seed=1)
    ours, official = squad_metrics(examples, preds), v2_evaluate(dataset, preds)
    for mine, theirs in (("", ""), ("has_ans_", "HasAns_"), ("no_ans_", "NoAns_")):
        assert 100 * ours[f"{mine}exact_match"] == pytest.approx(official[f"{theirs}exact"], abs=1e-6)
        assert 100 * ours[f"{mine}f1"] == pytest.approx(official[f"{theirs}f1"], abs=1e-6)
        assert ours[f"{mine}total"] == official[f"{theirs}total"]
    assert 0 < ours["no_ans_exact_match"] < 1 and ours["has_ans_total"] + ours["no_ans_total"] == len(examples)


def test_v2_0_best_threshold_is_the_official_find_best_thresh(shared_data):
    dataset, examples = _dev(shared_data, "v2.0", 2)
    rng = random.Random(2)
    # non-empty answers everywhere; the no-answer score leans higher on the unanswerable questions
    preds = {k: v or "something" for k, v in _perturbed(examples, seed=3).items()}
    na = {ex.id: rng.gauss(1.0 if ex.is_impossible else -1.0, 1.5) for ex in examples}
    thresh, best = best_threshold(examples, preds, na)
    official = v2_evaluate(dataset, preds, na)
    assert thresh == official["best_f1_thresh"]
    assert 100 * best == pytest.approx(official["best_f1"], abs=1e-6)
    applied = {k: "" if na[k] > thresh else v for k, v in preds.items()}
    assert squad_metrics(examples, applied)["f1"] == pytest.approx(best, abs=1e-9)
    assert 100 * best > v2_evaluate(dataset, preds)["f1"]  # the threshold helps


def test_best_threshold_answers_nothing_when_that_is_best():
    from transferlab.data.examples import QAExample

    examples = [QAExample(str(i), "q", "c") for i in range(3)]  # all unanswerable
    thresh, best = best_threshold(examples, {str(i): "wrong" for i in range(3)}, {"0": -2.0, "1": 0.5, "2": 1.0})
    assert best == 1.0 and thresh < -2.0
