"""``transferlab pretrain skipthought``: skip-thought vectors (Kiros et al. 2015) on any corpus of
documents, for ``transferlab senteval`` and ``finetune --pretrained``.

Read the corpus as documents of ordered sentences (:mod:`transferlab.pretrain.sentences`), build
the training split's vocabulary, train a GRU sentence encoder and two conditional-GRU decoders
to generate each sentence's previous and next sentence (:mod:`transferlab.pretrain.skip_thought`),
keep the checkpoint with the best validation perplexity, and report held-out perplexity.

Vocabulary expansion (the paper's section 3): with ``expand`` naming static word vectors
(``glove-6b-50d``, a word2vec file, ...), a linear map from those vectors to the trained word
embeddings is fitted by least squares on the words both know, and saved in the best checkpoint
(the encoder's ``expansion`` buffer); loading that checkpoint as a backbone re-attaches the
static vectors, so a word outside the training vocabulary gets its mapped vector, not ``<unk>``.
``results.json`` reports the fit's R^2.

The checkpoint's ``sentence_rnn`` config section and ``vocab`` file are what
:func:`transferlab.encoders.backbone.pretrained_backbone` rebuilds the encoder from (its
``encoder.*`` weights; the decoders are left out).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from transferlab.checkpoint import check_run_folder, load_checkpoint, save_checkpoint
from transferlab.config import ConfigError, from_dict, to_dict, write_json
from transferlab.encoders.sentence_rnn import SentenceRNN, SentenceRNNConfig
from transferlab.log import log
from transferlab.pretrain.sentences import SentenceDataConfig, TripleBatches, encode_sentences
from transferlab.pretrain.skip_thought import SkipThought, SkipThoughtConfig, skip_thought_loss, skip_thought_perplexity
from transferlab.text.tokenize import TextConfig, tokenizer
from transferlab.text.vocab import Vocab
from transferlab.train import TrainConfig, fit


@dataclass(frozen=True)
class PretrainSkipThoughtConfig:
    data: SentenceDataConfig = field(default_factory=SentenceDataConfig)
    text: TextConfig = field(default_factory=TextConfig)
    # the paper's uni-skip: 620-d words, a GRU of 2,400 cells, its last state the sentence vector
    sentence_rnn: SentenceRNNConfig = field(default_factory=lambda: SentenceRNNConfig(dim=620, hidden_dim=2400))
    objective: SkipThoughtConfig = field(default_factory=SkipThoughtConfig)
    expand: str = ""  # static word vectors for vocabulary expansion (a catalog name or path); "" = none
    # the paper: Adam, gradients clipped at norm 10, batches of 128
    train: TrainConfig = field(default_factory=lambda: TrainConfig(optimizer="adam", weight_decay=0.0, clip=10.0))
    out: str = "runs/skipthought"
    resume: bool = False
    overwrite: bool = False  # a run already in `out` is moved aside (OUT.replaced-<time>) and a new one starts

    def __post_init__(self):
        if self.sentence_rnn.towers != 1:
            raise ConfigError(f"sentence_rnn.towers must be 1 for skip-thought (one encoder), got "
                              f"{self.sentence_rnn.towers}")


def load_skip_thought(path: str | Path) -> tuple[SkipThought, Vocab]:
    """A ``pretrain skipthought`` checkpoint -> the whole model (decoders too; its expansion map,
    if fitted, loaded but without its static vectors) and the vocabulary."""
    ckpt = load_checkpoint(path)
    if "vocab" not in ckpt.files or "sentence_rnn" not in ckpt.config:
        raise ValueError(f"{path}: not a `transferlab pretrain skipthought` checkpoint (no sentence_rnn config "
                         f"and vocabulary)")
    encoder = SentenceRNN(from_dict(SentenceRNNConfig, ckpt.config["sentence_rnn"], "sentence_rnn."))
    model = SkipThought(encoder, from_dict(SkipThoughtConfig, ckpt.config.get("objective", {}), "objective."))
    model.load_state_dict(ckpt.weights)
    return model, Vocab.from_dict(ckpt.files["vocab"])


def expand_vocabulary(model: SkipThought, vocab: Vocab, vectors: str, path: Path) -> dict:
    """Fit the expansion map of ``model``'s encoder from ``vectors`` and save it into checkpoint ``path``."""
    from transferlab.vectors.keyed import load_vectors

    wv = load_vectors(vectors)
    r2 = model.encoder.expand(vocab.itos, wv, vectors)
    ckpt = load_checkpoint(path)  # the config now names the vectors and the map's size
    save_checkpoint(path, model, config=ckpt.config | {"sentence_rnn": to_dict(model.encoder.cfg)}, files=ckpt.files,
                    state=ckpt.state)
    shared = sum(wv.get_index(w) is not None for w in vocab.itos)
    log(f"vocabulary expansion: {vectors} ({len(wv):,} words) -> the word embeddings, fitted on {shared:,} "
        f"words, R^2 {r2:.3f}")
    return {"expansion_r2": r2, "expansion_vectors": vectors, "expansion_fit_words": shared,
            "expansion_words": len(wv)}


def run(cfg: PretrainSkipThoughtConfig) -> dict:
    torch.manual_seed(cfg.train.seed)
    out = Path(cfg.out)
    check_run_folder(out, cfg.resume, to_dict(cfg), cfg.overwrite, derived=("sentence_rnn",))
    d = cfg.data
    vocab, sents = encode_sentences(d, tokenizer(cfg.text))
    for split, s in sents.items():
        if not len(s.triples()):
            raise ConfigError(f"the {split} text of {d.corpus} has no document of three sentences: skip-thought "
                              f"predicts a sentence's neighbours (more text, or a larger data.held_out)")
    rnn_cfg = dataclasses.replace(cfg.sentence_rnn, vocab_size=len(vocab), pad_id=vocab.pad_id)
    model = SkipThought(SentenceRNN(rnn_cfg), cfg.objective)
    specials = {"pad_id": vocab.pad_id, "bos_id": vocab.bos_id, "eos_id": vocab.eos_id}

    def batches(epoch: int) -> TripleBatches:
        return TripleBatches(sents["train"], d.batch_size, **specials, seed=cfg.train.seed, epoch=epoch)

    def scores(m: SkipThought, split: str) -> dict:
        held_out = TripleBatches(sents[split], d.eval_batch_size, **specials, shuffle=False)
        return {f"{split}_{k}": v for k, v in skip_thought_perplexity(m, held_out).items()}

    start = time.perf_counter()
    result = fit(model, skip_thought_loss, batches, cfg.train, evaluate=lambda m: scores(m, "valid"),
                 metric="valid_loss", mode="min", out_dir=out,
                 config=to_dict(cfg) | {"sentence_rnn": to_dict(rnn_cfg)}, files={"vocab": vocab.to_dict()})
    wall = time.perf_counter() - start
    best = load_skip_thought(out / "best")[0].to(next(model.parameters()).device)
    expansion = expand_vocabulary(best, vocab, cfg.expand, out / "best") if cfg.expand else {}
    summary = {**scores(best, "valid"), **scores(best, "test"), **expansion, "wall_s": wall,
               "wall_s_total": wall + result.earlier_wall_s, "steps": result.step,
               "tokens_per_s": result.tokens_per_s,  # the encoded (middle) sentences' words; the decoders read 2x
               "vocab_size": len(vocab),
               "train_sentences": len(sents["train"]), "train_triples": len(sents["train"].triples()),
               "n_params": sum(p.numel() for p in best.encoder.parameters()),
               "n_params_total": sum(p.numel() for p in best.parameters()), "checkpoint": str(out / "best")}
    write_json(summary, out / "results.json")
    log(f"valid perplexity {summary['valid_ppl']:.1f} (previous sentence {summary['valid_prev_ppl']:.1f}, next "
        f"{summary['valid_next_ppl']:.1f}), test {summary['test_ppl']:.1f} ({wall:.0f} s)")
    return summary
