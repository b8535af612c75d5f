"""``transferlab pretrain mt``: CoVe's translation model (McCann et al. 2017) on a parallel corpus;
``transferlab translate`` with what it trained.

Build the English vocabulary (the training side's words with a GloVe vector) and train a
byte-level BPE tokenizer on the German side, train the attentional encoder-decoder
(:class:`transferlab.encoders.cove.CoVeMT`) with teacher forcing, keep the checkpoint with the
best validation perplexity, then report its test perplexity and test BLEU (sacreBLEU's
``corpus_bleu`` on detokenized output against the raw references), with beam search and
greedily, beside the BLEU of copying the English source unchanged: the floor a translation
model must clear on a corpus of software strings, where names and numbers are often left as
they are. Its encoder is what ``finetune --encoder cove --pretrained OUT/best`` reads.
"""

from __future__ import annotations

import csv
import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

from transferlab.checkpoint import check_run_folder, checkpoint_folder, has_checkpoint, load_checkpoint, load_weights
from transferlab.config import from_dict, to_dict, write_json
from transferlab.encoders.cove import CoVe, CoVeConfig, CoVeMT, MTDecoderConfig, glove_rows
from transferlab.log import log
from transferlab.pretrain.mt import (MTDataConfig, MTLoss, ParallelBatches, encode_pairs, mt_perplexity,
                                     parallel_pairs, source_vocab)
from transferlab.tasks.generate import GenerateConfig, generate
from transferlab.text.subword import SubwordTokenizer, train_tokenizer
from transferlab.text.tokenize import TextConfig, tokenizer
from transferlab.text.vocab import SPECIALS, Vocab
from transferlab.train import TrainConfig, fit


@dataclass(frozen=True)
class PretrainMTConfig:
    data: MTDataConfig = field(default_factory=MTDataConfig)
    text: TextConfig = field(default_factory=TextConfig)  # the English words (lower-cased: GloVe 6B is)
    cove: CoVeConfig = field(default_factory=CoVeConfig)
    decoder: MTDecoderConfig = field(default_factory=MTDecoderConfig)
    generate: GenerateConfig = field(default_factory=GenerateConfig)  # test BLEU's decoding; translate's default
    train: TrainConfig = field(default_factory=lambda: TrainConfig(lr=1e-3, clip=1.0))
    out: str = "runs/mt"
    resume: bool = False
    overwrite: bool = False  # a run already in `out` is moved aside (OUT.replaced-<time>) and a new one starts


def bleu(hypotheses: Sequence[str], references: Sequence[str], metric=None) -> float:
    """sacreBLEU's corpus BLEU (its defaults: 13a tokenization, exponential smoothing; one
    reference per segment), 0-100; ``metric`` a ``sacrebleu.metrics.BLEU`` to score with."""
    from sacrebleu.metrics import BLEU

    return (metric or BLEU()).corpus_score(list(hypotheses), [list(references)]).score


@dataclass
class Translator:
    """A ``pretrain mt`` model with its vocabularies: English texts -> German texts."""

    model: CoVeMT
    vocab: Vocab
    tokenizer: SubwordTokenizer
    text: TextConfig
    generate: GenerateConfig

    def source_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Word ids of English texts; a word outside the MT vocabulary gets its GloVe vector (a new
        row of the encoder), or ``<unk>`` when GloVe lacks it or the vectors cannot be loaded."""
        words = [tokenizer(self.text)(t) for t in texts]
        ids = [self.vocab.encode(ws) for ws in words]
        unknown = list(dict.fromkeys(w for ws, row in zip(words, ids) for w, i in zip(ws, row)
                                     if i == self.vocab.unk_id))
        if unknown:
            try:
                added = dict(zip(unknown, self.model.encoder.add_words(unknown)))
            except Exception as e:  # the vectors moved or are not installed here: the MT vocabulary alone
                log(f"{self.model.encoder.cfg.vectors}: not loadable ({e}); words outside the MT vocabulary "
                    f"are <unk>")
                added = {}
            ids = [[added.get(w, i) if i == self.vocab.unk_id else i for w, i in zip(ws, row)]
                   for ws, row in zip(words, ids)]
        return ids

    def translate(self, texts: Sequence[str], beam: int | None = None, alpha: float | None = None) -> list[str]:
        """German for each text (greedy when ``beam`` is 1; the checkpoint's settings by default)."""
        gen = dataclasses.replace(self.generate, **{k: v for k, v in (("beam", beam), ("alpha", alpha))
                                                    if v is not None})
        ids = self.tokenizer.ids
        self.model.eval()
        out = generate(self.model, self.source_ids(texts), self.vocab.pad_id, ids["bos"], ids["eos"], gen,
                       device=next(self.model.parameters()).device)
        return [self.tokenizer.decode(o) for o in out]


def load_translator(path: str | Path) -> Translator:
    """A ``pretrain mt`` checkpoint folder (or its run folder, whose ``best`` is taken) -> a Translator."""
    path = checkpoint_folder(path)
    ckpt = load_checkpoint(path, json_only=True)
    if "cove" not in ckpt.config or "vocab" not in ckpt.files or "tokenizer" not in ckpt.files:
        raise ValueError(f"{path}: not a `transferlab pretrain mt` checkpoint (no cove config, vocab.json and "
                         f"tokenizer.json)")
    c = ckpt.config
    model = CoVeMT(CoVe(from_dict(CoVeConfig, c["cove"], "cove.")),
                   from_dict(MTDecoderConfig, c["decoder"], "decoder."))
    load_weights(model, path)
    return Translator(model.eval(), Vocab.from_dict(ckpt.files["vocab"], f"{path}/vocab.json"),
                      SubwordTokenizer.from_dict(ckpt.files["tokenizer"], f"{path}/tokenizer.json"),
                      from_dict(TextConfig, c.get("text", {}), "text."),
                      from_dict(GenerateConfig, c.get("generate", {}), "generate."))


def _vocabularies(cfg: PretrainMTConfig, train_pairs: list[tuple[str, str]], wv, out: Path
                  ) -> tuple[Vocab, SubwordTokenizer]:
    """The English vocabulary and the German tokenizer: a resumed run's own, else built on the training side."""
    if cfg.resume and has_checkpoint(out / "last"):
        files = load_checkpoint(out / "last", json_only=True).files
        return Vocab.from_dict(files["vocab"]), SubwordTokenizer.from_dict(files["tokenizer"])
    tok = tokenizer(cfg.text)
    vocab = source_vocab((tok(s) for s, _ in train_pairs), lambda w: w in wv or w.lower() in wv,
                         cfg.data.max_src_vocab)
    german = train_tokenizer((t for _, t in train_pairs), "bpe", cfg.data.tgt_vocab_size, min_freq=2, lower=False)
    return vocab, german


def run(cfg: PretrainMTConfig) -> dict:
    from transferlab.vectors.keyed import load_vectors

    torch.manual_seed(cfg.train.seed)  # the model is built before fit() seeds: the same start per seed
    out = Path(cfg.out)
    check_run_folder(out, cfg.resume, to_dict(cfg), cfg.overwrite, derived=("cove", "decoder"))
    d = cfg.data
    pairs = parallel_pairs(d)
    wv = load_vectors(cfg.cove.vectors)
    vocab, tgt_tok = _vocabularies(cfg, pairs["train"], wv, out)
    rows = glove_rows(vocab.itos, wv)
    rows[: len(SPECIALS)] = 0.0  # <pad>, <unk>, <bos>, <eos> are zero vectors
    enc_cfg = dataclasses.replace(cfg.cove, vocab_size=len(vocab), embed_dim=wv.dim, pad_id=vocab.pad_id,
                                  unk_id=vocab.unk_id)
    dec_cfg = dataclasses.replace(cfg.decoder, vocab_size=tgt_tok.vocab_size, pad_id=tgt_tok.pad_id)
    model = CoVeMT(CoVe(enc_cfg, rows), dec_cfg)
    words = tokenizer(cfg.text)
    train = encode_pairs(pairs["train"], lambda s: vocab.encode(words(s)), tgt_tok, d.max_len)
    held = {s: encode_pairs(pairs[s], lambda s: vocab.encode(words(s)), tgt_tok) for s in ("valid", "test")}
    log(f"{d.corpus}: {len(train.src):,} training pairs ({train.dropped:,} longer than {d.max_len} or empty left "
        f"out), valid {len(held['valid'].src):,}, test {len(held['test'].src):,}; {len(vocab):,} English words "
        f"with a GloVe vector, {tgt_tok.vocab_size:,} German pieces")
    ids = tgt_tok.ids
    specials = {"src_pad": vocab.pad_id, "tgt_pad": tgt_tok.pad_id, "bos": ids["bos"], "eos": ids["eos"]}

    def batches(epoch: int) -> ParallelBatches:
        return ParallelBatches(train, d.batch_size, **specials, seed=cfg.train.seed, epoch=epoch)

    def perplexity(m, split: str) -> float:
        return mt_perplexity(m, ParallelBatches(held[split], d.eval_batch_size, **specials, shuffle=False))

    start = time.perf_counter()
    result = fit(model, MTLoss(), batches, cfg.train, evaluate=lambda m: {"valid_ppl": perplexity(m, "valid")},
                 metric="valid_ppl", mode="min", out_dir=out,
                 config=to_dict(cfg) | {"cove": to_dict(enc_cfg), "decoder": to_dict(dec_cfg)},
                 files={"vocab": vocab.to_dict(), "tokenizer": tgt_tok.to_dict()})
    wall = time.perf_counter() - start
    best = load_translator(out / "best")
    best.model.to(next(model.parameters()).device)  # where it trained
    summary = {"valid_ppl": perplexity(best.model, "valid"), "test_ppl": perplexity(best.model, "test"),
               **bleu_report(best, pairs["test"], cfg.generate, out), "wall_s": wall,
               "wall_s_total": wall + result.earlier_wall_s, "steps": result.step,
               "tokens_per_s": result.tokens_per_s, "train_pairs": len(train.src), "src_vocab": len(vocab),
               "tgt_vocab": tgt_tok.vocab_size, "n_params": sum(p.numel() for p in model.parameters()),
               "n_encoder_params": sum(p.numel() for p in model.encoder.parameters()),
               "checkpoint": str(out / "best")}
    write_json(summary, out / "results.json")
    log(f"valid ppl {summary['valid_ppl']:.2f}, test ppl {summary['test_ppl']:.2f}; test BLEU "
        f"{summary['test_bleu']:.2f} (beam {cfg.generate.beam}), {summary['test_bleu_greedy']:.2f} (greedy), "
        f"copying the source {summary['test_bleu_copy']:.2f} ({wall:.0f} s)")
    return summary


def bleu_report(translator: Translator, pairs: list[tuple[str, str]], gen: GenerateConfig, out: Path) -> dict:
    """BLEU of beam search, of greedy decoding and of the copy-source baseline on the test pairs;
    the translations in ``out/test_translations.tsv``."""
    sources, refs = [s for s, _ in pairs], [t for _, t in pairs]
    start = time.perf_counter()
    beamed = translator.translate(sources, beam=gen.beam, alpha=gen.alpha)
    secs = time.perf_counter() - start
    greedy = beamed if gen.beam == 1 else translator.translate(sources, beam=1)
    with open(out / "test_translations.tsv", "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, delimiter="\t", quoting=csv.QUOTE_NONE, escapechar="\\", lineterminator="\n")
        w.writerow(["en", "de", "beam", "greedy"])
        w.writerows(zip(sources, refs, beamed, greedy))
    from sacrebleu.metrics import BLEU

    metric = BLEU()
    return {"test_bleu": bleu(beamed, refs, metric), "test_bleu_greedy": bleu(greedy, refs, metric),
            "test_bleu_copy": bleu(sources, refs, metric), "bleu_signature": str(metric.get_signature()),
            "beam": gen.beam, "alpha": gen.alpha, "test_sentences_per_s": len(sources) / max(secs, 1e-9)}
