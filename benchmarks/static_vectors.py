"""Static vectors: our trainers beside gensim, our GloVe beside mittens, and what the vectors buy.

    TRANSFERLAB_DATA=../shared .venv/bin/python benchmarks/static_vectors.py [--sections trainers,glove,downstream]

1. **trainers**: word2vec skip-gram and CBOW, fastText, doc2vec PV-DM and PV-DBOW on PTB and
   SOTU through transferlab's API (the corpus read through our readers, the token file, gensim in
   ``corpus_file`` mode, the WordVectors artifact), beside gensim called directly with the same
   settings on the same tokenized file, each saving what it trained. Both start from that one
   file (SOTU is tokenized once with our word tokenizer beforehand; that time is reported
   apart), so the ratio is the cost of the wrapping: reading the corpus again, the token file,
   the progress bar, the artifact. ``wrapper_overhead`` is the worst ratio of medians over
   ``--repeats`` runs of each side (alternating which side goes first; gensim's threads make
   single runs vary by 10-20%); ``wrapper_overhead_same_train`` is the worst ratio with the
   shared gensim ``train`` call's time taken out (see :func:`trainers`). Our GloVe runs on the
   same corpora (no gensim twin).
   Each row: wall time, words per second, WordSim-353, SimLex-999 and analogy accuracy.
2. **glove**: our GloVe against mittens on one co-occurrence matrix (``glove_vs_mittens.py``).
3. **downstream**: SST-2 and AG News with 1,000 labels (subset seeds 0-2): the fastText-style
   classifier from random embeddings, from our word2vec vectors (skip-gram, 50 dimensions, trained
   on the unlabeled text of SOTU, PTB and the tasks' training sets), and from glove-6b-50d; and a
   logistic regression on doc2vec PV-DBOW features and on mean-pooled GloVe.

Settings as in PEERS.md: dim 100, window 5, negative 5, min_count 5, 5 epochs, 2 worker threads.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import write_result  # noqa: E402

from transferlab.config import load_config  # noqa: E402
from transferlab.data import catalog  # noqa: E402
from transferlab.eval.intrinsic import evaluate  # noqa: E402
from transferlab.text.tokenize import whitespace_tokenize, word_tokenize  # noqa: E402
from transferlab.vectors.corpus import tokenize_corpus  # noqa: E402
from transferlab.vectors.doc2vec import Doc2VecConfig, gensim_args, train_doc2vec  # noqa: E402
from transferlab.vectors.word2vec import FastTextConfig, Word2VecConfig, common_args, train_word2vec  # noqa: E402

TRAINERS = {
    "word2vec_sg": Word2VecConfig(arch="skipgram"),
    "word2vec_cbow": Word2VecConfig(arch="cbow"),
    "fasttext_sg": FastTextConfig(arch="skipgram"),
    "doc2vec_dm": Doc2VecConfig(mode="dm", min_count=5, epochs=5),
    "doc2vec_dbow": Doc2VecConfig(mode="dbow", min_count=5, epochs=5),
}


def tokenized_file(name: str, folder: Path) -> tuple[Path, float]:
    """The corpus as one tokenized, lower-cased line per sentence/document, and the seconds it took."""
    path = folder / f"{name}.tok.txt"
    start = time.perf_counter()
    if not path.exists():
        with open(path, "w", encoding="utf-8") as f:
            for line in catalog.corpus(name):
                tokens = word_tokenize(line, lower=True)
                if tokens:
                    f.write(" ".join(tokens) + "\n")
    return path, time.perf_counter() - start


def gensim_direct(key: str, cfg, path: Path, folder: Path) -> tuple[float, float, object]:
    """gensim as its users call it: build the vocabulary from the file, train on it, then save what
    was trained (the vectors; the whole model for doc2vec, as ours keeps it for inference). The
    documented build_vocab-then-train form of ``Word2Vec(corpus_file=...)``, so that the train call
    can be timed apart. Returns (total seconds, seconds in ``train``, model)."""
    from gensim.models import Doc2Vec, FastText, Word2Vec

    start = time.perf_counter()
    if key.startswith("doc2vec"):
        model = Doc2Vec(**gensim_args(cfg))
    elif key.startswith("fasttext"):
        model = FastText(sg=1, cbow_mean=1, min_n=cfg.min_n, max_n=cfg.max_n, bucket=cfg.bucket, **common_args(cfg))
    else:
        model = Word2Vec(sg=int(cfg.arch == "skipgram"), cbow_mean=1, **common_args(cfg))
    model.build_vocab(corpus_file=str(path))
    train_start = time.perf_counter()
    model.train(corpus_file=str(path), total_examples=model.corpus_count, total_words=model.corpus_total_words,
                epochs=model.epochs)
    train_s = time.perf_counter() - train_start
    if key.startswith("doc2vec"):
        model.save(str(folder / f"{key}-gensim.model"))
    else:
        model.wv.save(str(folder / f"{key}-gensim.kv"))
    return time.perf_counter() - start, train_s, model


def ours(key: str, cfg, path: Path, folder: Path) -> tuple[float, object, dict]:
    start = time.perf_counter()
    tokens = tokenize_corpus(str(path), whitespace_tokenize, folder=folder, progress=False)
    try:
        if key.startswith("doc2vec"):
            pv, stats = train_doc2vec(tokens, cfg, progress=False)
            pv.save(folder / f"{key}-model")
            wv = pv.word_vectors()
        else:
            wv, stats = train_word2vec(tokens, cfg, progress=False)
        wv.save(folder / f"{key}-vectors")
    finally:
        tokens.remove()
    return time.perf_counter() - start, wv, stats


def scores(wv) -> dict:
    r = evaluate(wv, analogy_vocab=100_000)
    return {"ws353": r["wordsim353"]["spearman"], "simlex": r["simlex999"]["spearman"],
            "analogy": r["analogies"]["accuracy"], "analogy_oov": r["analogies"]["oov"]}


def glove_row(path: Path, folder: Path, epochs: int) -> dict:
    from transferlab.recipes.pretrain_vectors import train_glove_vectors
    from transferlab.vectors.glove import GloVeConfig

    start = time.perf_counter()
    tokens = tokenize_corpus(str(path), whitespace_tokenize, folder=folder, progress=False)
    try:
        wv, stats = train_glove_vectors(tokens, GloVeConfig(dim=100, window=10, min_count=5, epochs=epochs),
                                        folder, progress=False)
    finally:
        tokens.remove()
    return {"wall_s": time.perf_counter() - start, **stats, **scores(wv)}


def trainers(out: Path, corpora: list[str], glove_epochs: int, repeats: int) -> dict:
    """Both sides end in the same gensim ``train`` call (same C loop, file, vocabulary and
    settings), whose time swings 10-20% from run to run with the scheduling of its two threads.
    So beside the ratio of total times, each row reports the ratio with that call's time taken
    out of the comparison: (ours outside ``train`` + gensim's ``train``) / gensim's total, i.e.
    what the wrapping (reading, token file, counts, progress bar, artifact) costs on top of the
    same training, with the medians over the repeats."""
    rows, overheads, outside = {}, {}, {}
    for name in corpora:
        path, tok_s = tokenized_file(name, out)
        rows[f"{name}_tokenize_s"] = tok_s
        for key, cfg in TRAINERS.items():
            direct, mine = [], []
            for r in range(repeats):  # alternate which goes first, so neither always runs on a warm cache
                if r % 2 == 0:
                    direct.append(gensim_direct(key, cfg, path, out)[:2])
                ours_s, wv, stats = ours(key, cfg, path, out)
                mine.append((ours_s, stats["train_s"]))
                if r % 2 == 1:
                    direct.append(gensim_direct(key, cfg, path, out)[:2])
            ours_s, direct_s = statistics.median(t for t, _ in mine), statistics.median(t for t, _ in direct)
            ours_out = statistics.median(t - tr for t, tr in mine)
            direct_out = statistics.median(t - tr for t, tr in direct)
            direct_train = statistics.median(tr for _, tr in direct)
            ratio = ours_s / direct_s
            same_train = (ours_out + direct_train) / (direct_out + direct_train)
            overheads[f"{name}/{key}"], outside[f"{name}/{key}"] = ratio, same_train
            row = {"ours_s": ours_s, "gensim_s": direct_s, "ratio": ratio, "ours_outside_train_s": ours_out,
                   "gensim_outside_train_s": direct_out, "gensim_train_s": direct_train,
                   "ours_train_s": statistics.median(tr for _, tr in mine), "ratio_same_train": same_train,
                   "ours_runs_s": [t for t, _ in mine], "gensim_runs_s": [t for t, _ in direct],
                   "words": stats["corpus_words"], "words_per_s": stats["corpus_words"] * cfg.epochs / ours_s,
                   "vocab": stats["vocab_size"], **scores(wv)}
            rows[f"{name}/{key}"] = row
            print(f"{name:5} {key:14} ours {ours_s:6.1f} s  gensim {direct_s:6.1f} s  ratio {ratio:.3f}  "
                  f"outside train: ours {ours_out:.2f} s gensim {direct_out:.2f} s -> {same_train:.3f}  "
                  f"ws353 {row['ws353']:.3f} simlex {row['simlex']:.3f} analogy {row['analogy']:.3f}", flush=True)
        rows[f"{name}/glove"] = glove_row(path, out, glove_epochs)
        print(f"{name:5} glove          {json.dumps(rows[f'{name}/glove'])}", flush=True)
    worst = max(overheads, key=overheads.get)
    worst_outside = max(outside, key=outside.get)
    return {"rows": rows, "wrapper_overhead": overheads[worst], "wrapper_overhead_worst": worst,
            "wrapper_overhead_same_train": outside[worst_outside], "wrapper_overhead_same_train_worst": worst_outside}


def glove_vs_mittens(out: Path) -> dict:
    import glove_vs_mittens as gm

    return gm.run()


# --- downstream ----------------------------------------------------------------------------------

def pretrain_for_tasks(out: Path) -> tuple[str, str]:
    """Our skip-gram (50 d) and PV-DBOW on SOTU + PTB + the tasks' unlabeled training text."""
    from transferlab.recipes import pretrain_vectors

    paths = []
    for method, extra in (("word2vec", ["word2vec.dim=50"]), ("doc2vec", ["doc2vec.dim=100", "doc2vec.epochs=10"])):
        folder = out / f"task-{method}"
        if not (folder / "results.json").exists():
            cfg = load_config(pretrain_vectors.PretrainVectorsConfig, None, [
                f'method="{method}"', 'data.corpus="sotu,ptb,sst2,agnews"', f'out="{folder}"',
                "progress=false", *extra])
            pretrain_vectors.run(cfg)
        paths.append(str(folder / ("vectors" if method == "word2vec" else "doc2vec")))
    return paths[0], paths[1]


def fasttext_classifier(task: str, vectors: str, seed: int, out: Path) -> float:
    from transferlab.recipes import finetune

    done = out / "results.json"
    if done.exists():
        return json.loads(done.read_text())["test_accuracy"]
    overrides = ['encoder="fasttext"', f'data.task="{task}"', "data.train_size=1000", f"data.subset_seed={seed}",
                 f"train.seed={seed}", "train.threads=2", "train.log_every=0", "train.progress=false", f'out="{out}"']
    if vectors:
        overrides.append(f'vectors="{vectors}"')
    else:
        overrides.append("fasttext.dim=50")
    return finetune.run(finetune.load_finetune_config(None, overrides))["test_accuracy"]


def downstream(out: Path, seeds: list[int]) -> dict:
    from transferlab.recipes import vector_features
    from transferlab.data.tasks import TaskDataConfig

    w2v, d2v = pretrain_for_tasks(out)
    figures: dict = {}
    for task in ("sst2", "agnews"):
        for label, vectors in (("scratch", ""), ("ours_init", w2v), ("glove_init", "glove-6b-50d")):
            accs = [fasttext_classifier(task, vectors, s, out / f"{task}-{label}-{s}") for s in seeds]
            figures[f"{task}_1000_{label}_acc"] = statistics.mean(accs)
            figures[f"{task}_1000_{label}_accs"] = accs
        for label, vectors in (("doc2vec_lr", d2v), ("glove_mean_lr", "glove-6b-50d")):
            accs = [vector_features.run(vectors, TaskDataConfig(task=task, train_size=1000, subset_seed=s),
                                        "mean", seed=s)["test_accuracy"] for s in seeds]
            figures[f"{task}_1000_{label}_acc"] = statistics.mean(accs)
            figures[f"{task}_1000_{label}_accs"] = accs
        for label in ("ours_init", "glove_init", "doc2vec_lr", "glove_mean_lr"):
            gain = 100 * (figures[f"{task}_1000_{label}_acc"] - figures[f"{task}_1000_scratch_acc"])
            figures[f"{task}_1000_{label}_gain_points"] = gain
        print(json.dumps({k: v for k, v in figures.items() if k.startswith(task) and not k.endswith("accs")},
                         indent=1), flush=True)
    return figures


def glove6b() -> dict:
    from transferlab.vectors.keyed import load_vectors

    s = scores(load_vectors("glove-6b-50d"))
    return {"glove6b_ws353": s["ws353"], "glove6b_simlex": s["simlex"], "glove6b_analogy": s["analogy"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="runs/bench/static-vectors")
    ap.add_argument("--sections", default="trainers,glove,downstream")
    ap.add_argument("--corpora", default="ptb,sotu")
    ap.add_argument("--glove-epochs", type=int, default=25)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs of each trainer, each side (median)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    parts = out / "sections.json"
    # sections not rerun keep their last figures: from this out folder, else from the recorded JSON
    recorded = Path(__file__).parent / "results" / "static_vectors.json"
    done = json.loads(parts.read_text()) if parts.exists() else \
        json.loads(recorded.read_text()).get("sections", {}) if recorded.exists() else {}
    done["glove6b"] = glove6b()
    for section in args.sections.split(","):
        if section == "trainers":
            done[section] = trainers(out, args.corpora.split(","), args.glove_epochs, args.repeats)
        elif section == "glove":
            done[section] = glove_vs_mittens(out)
        elif section == "downstream":
            done[section] = downstream(out, [int(s) for s in args.seeds.split(",")])
        parts.write_text(json.dumps(done, indent=2))
    figures = dict(done["glove6b"])
    if "trainers" in done:
        figures["wrapper_overhead"] = done["trainers"]["wrapper_overhead"]
        if "wrapper_overhead_same_train" in done["trainers"]:
            figures["wrapper_overhead_same_train"] = done["trainers"]["wrapper_overhead_same_train"]
    if "glove" in done:
        figures["glove_vs_mittens_speed"] = done["glove"]["figures"]["glove_vs_mittens_speed"] \
            if "figures" in done["glove"] else done["glove"]["glove_vs_mittens_speed"]
    if "downstream" in done:
        d = done["downstream"]
        figures |= {"sst2_1000_scratch_acc": d["sst2_1000_scratch_acc"],
                    "sst2_1000_glove_init_acc": d["sst2_1000_glove_init_acc"],
                    "sst2_1000_ours_init_acc": d["sst2_1000_ours_init_acc"]}
    write_result("static_vectors", figures, sections=done)


if __name__ == "__main__":
    main()
