"""Contextual word vectors on CoNLL-2003 NER: what a pretrained biLM (ELMo, TagLM) and an MT
encoder (CoVe) add to a tagger over static GloVe vectors, the claim of Peters et al. 2017/2018
and McCann et al. 2017 that contextual beats static.

    TRANSFERLAB_DATA=../shared .venv/bin/python benchmarks/contextual_ner.py \\
        [--bilm runs/bench/bilm-small/best] [--mt runs/bench/mt-small/best] [--seeds 0,1,2]

1. The pretrained models, made when their folder holds none (each resumes after a stop):
   ``transferlab pretrain bilm --preset small`` on general-en (our ELMo) and ``transferlab
   pretrain mt --preset small`` on l10n-en-de (CoVe's MT-LSTM).
2. For each method and seed, ``transferlab finetune`` on CoNLL-2003 (the train split; best epoch
   on valid; entity F1 on test, seqeval's rules):

   - ``glove``: the TagLM architecture without the biLM (``--encoder taglm --taglm.use_lm=false``):
     GloVe (glove-6b-50d) and a character CNN into two biGRU layers, the static-vector tagger;
   - ``taglm``: the same with the frozen biLM's top layer after the first biGRU (Peters et al. 2017);
   - ``glove_elmo``: the same tagger with ELMo at its input instead (Peters et al. 2018: a learned
     scalar mix of every biLM layer beside the word and character vectors, ``--taglm.lm_at=input``);
   - ``glove_cove``: the same tagger with CoVe at its input (McCann et al. 2017's ``[GloVe; CoVe]``
     as a task model's input: the frozen MT-LSTM's layers, mixed the same way, beside the word and
     character vectors; the tagger keeps its cased words, CoVe reads their lower-cased GloVe rows);
   - ``glove_cove_static`` and ``glove_elmo_static``: the static controls of those two, the same
     tagger and frozen model with only its layer 0 at the input (``--taglm.lm_layers=[0]``):
     ``[GloVe; 0]`` from CoVe's table, which has a GloVe row for any word GloVe knows, test words
     unseen in training included (the ``glove`` tagger's own embedding has rows for the training
     words only), and ELMo's character-CNN token layer;
   - ``elmo``: our ELMo frozen, its layers mixed by a learned scalar mix under a softmax tag
     head (``--adapt=features``, Peters et al. 2018's feature use);
   - ``cove``: ``[GloVe; CoVe]`` from the frozen MT-LSTM under the same kind of head;
   - ``elmo_tokens`` and ``cove_glove``: the static controls of those two rows, the same frozen
     model and head reading layer 0 only (``--features_layers=[0]``): ELMo's character-CNN token
     layer, and ``[GloVe; 0]``. A feature row minus its control is what context adds, the head
     being a per-token softmax (no RNN over the features, no CRF): far below a tagger's F1.

One JSON line per finished run in ``<out>/runs.jsonl``; a rerun skips what is there. Figures, for
every method with a finished run (``--methods`` chooses what runs): ``METHOD_f1`` (mean over
seeds) and ``METHOD_f1_sd``, with the model sizes and wall times.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import append_row, finished_rows, write_result  # noqa: E402

from transferlab.config import load_config  # noqa: E402
from transferlab.recipes import finetune, pretrain_bilm, pretrain_mt  # noqa: E402

COMMON = ['data.task="conll2003"', "train.log_every=0", "train.progress=false"]
METHODS = {
    "glove": ['encoder="taglm"', "taglm.use_lm=false", 'vectors="glove-6b-50d"', "train.epochs=5"],
    "taglm": ['encoder="taglm"', 'pretrained="{bilm}"', 'vectors="glove-6b-50d"', "train.epochs=5"],
    "glove_elmo": ['encoder="taglm"', 'pretrained="{bilm}"', 'taglm.lm_at="input"', 'vectors="glove-6b-50d"',
                   "train.epochs=5"],
    "glove_cove": ['encoder="taglm"', 'pretrained="{mt}"', 'taglm.lm_at="input"', 'vectors="glove-6b-50d"',
                   "train.epochs=5"],
    # the static controls of the two taggers with an LM at the input: the same run, layer 0 only
    "glove_cove_static": ['encoder="taglm"', 'pretrained="{mt}"', 'taglm.lm_at="input"', "taglm.lm_layers=[0]",
                          'vectors="glove-6b-50d"', "train.epochs=5"],
    "glove_elmo_static": ['encoder="taglm"', 'pretrained="{bilm}"', 'taglm.lm_at="input"', "taglm.lm_layers=[0]",
                          'vectors="glove-6b-50d"', "train.epochs=5"],
    "elmo": ['encoder="elmo"', 'pretrained="{bilm}"', 'adapt="features"', "train.epochs=5"],
    "cove": ['encoder="cove"', 'pretrained="{mt}"', 'adapt="features"', "train.epochs=5"],
    # the static controls of the two feature rows: the same frozen model and head, layer 0 only
    "elmo_tokens": ['encoder="elmo"', 'pretrained="{bilm}"', 'adapt="features"', "features_layers=[0]",
                    "train.epochs=5"],
    "cove_glove": ['encoder="cove"', 'pretrained="{mt}"', 'adapt="features"', "features_layers=[0]",
                   "train.epochs=5"],
}


def pretrained(kind: str, checkpoint: Path, threads: int) -> dict:
    """The pretraining run's results.json, training it (``--preset small``) when missing."""
    run = checkpoint.parent
    if not (run / "results.json").exists():
        recipe, cls = (pretrain_bilm, pretrain_bilm.PretrainBiLMConfig) if kind == "bilm" else (
            pretrain_mt, pretrain_mt.PretrainMTConfig)
        recipe.run(load_config(cls, "small", [f'out="{run}"', "resume=true",
                                               f"train.threads={threads}"], kind=kind))
    return json.loads((run / "results.json").read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bilm", default="runs/bench/bilm-small/best", help="a `pretrain bilm` checkpoint")
    ap.add_argument("--mt", default="runs/bench/mt-small/best", help="a `pretrain mt` checkpoint")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--out", default="runs/bench/contextual-ner")
    ap.add_argument("--threads", type=int, default=2, help="torch threads of each pretraining and fine-tuning run")
    args = ap.parse_args()
    out, methods = Path(args.out), args.methods.split(",")
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        ap.error(f"unknown method(s) {', '.join(unknown)}: choose from {', '.join(METHODS)}")
    log = out / "runs.jsonl"
    rows = finished_rows(log, "method", "seed")
    models, reported = {}, set(methods) | {m for m, _ in rows}  # the JSON reports every finished row
    for kind, checkpoint in (("bilm", args.bilm), ("mt", args.mt)):  # the pretrained models those rows read
        if any(f"{{{kind}}}" in o for m in reported for o in METHODS[m]):
            models[kind] = pretrained(kind, Path(checkpoint), args.threads)
    for seed in map(int, args.seeds.split(",")):
        for method in methods:
            if (method, seed) in rows:
                continue
            overrides = [o.format(bilm=args.bilm, mt=args.mt) for o in METHODS[method]]
            cfg = finetune.load_finetune_config(None, [*COMMON, *overrides, f"train.seed={seed}",
                                                       f"train.threads={args.threads}",
                                                       f'out="{out / f"{method}-{seed}"}"'])
            s = finetune.run(cfg)
            row = {"method": method, "seed": seed, "f1": s["test_entity_f1"], "wall_s": s["wall_s"],
                   "train_size": s["train_size"]}
            rows[(method, seed)] = row
            append_row(log, row)
            print(json.dumps(row), flush=True)
    figures = {}
    for method in [m for m in METHODS if m in reported]:
        f1 = [r["f1"] for (m, _), r in sorted(rows.items()) if m == method]
        if f1:
            figures[f"{method}_f1"] = statistics.mean(f1)
            figures[f"{method}_f1_sd"] = statistics.stdev(f1) if len(f1) > 1 else 0.0
            print(f"{method:<11} entity F1 {100 * figures[f'{method}_f1']:.1f} ({len(f1)} seeds)")
    write_result("contextual_ner", figures, pretrained=models, runs=sorted(rows.values(), key=lambda r: (r["method"],
                                                                                                     r["seed"])))


if __name__ == "__main__":
    main()
