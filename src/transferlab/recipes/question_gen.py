"""``transferlab qg``: question generation from SQuAD as sequence-to-sequence learning, with the
encoder and decoder initialized from a pretrained language model (Ramachandran et al. 2017,
:mod:`transferlab.pretrain.seq2seq`) or at random.

The task (after Du, Shao and Cardie 2017, "Learning to Ask"): the input is the sentence of the
context that holds the answer (the sentences that hold it, should it cross a boundary; sentences
by :func:`transferlab.pretrain.sentences.split_sentences`), then ``<eos>``, then the answer, in the
LM's words: ``sentence <eos> answer``. ``<eos>`` is the LM's own line separator, so marking the
answer needs no token the LM never saw. The target is the question. Each question's first answer
is used.

Data: a catalog QA dataset (``squad-v1.1``: the catalog's train and test splits are the SQuAD dev
set's articles, 80 / 20); the last ``data.valid_frac`` of the training articles (by title, in file
order) are the validation split, so no context is shared between splits. Words are the LM's: its
tokenizer settings (``text``) and vocabulary; without ``--pretrained`` (``--init random`` only) a
vocabulary of the training side's words and ``awd_lstm``'s shape.

Training: teacher-forced cross-entropy (plus ``aux_lm`` times the decoder's own LM loss) with
:func:`transferlab.train.fit`, the best checkpoint by validation perplexity. Report: validation
and test perplexity per target word, and test BLEU of the best checkpoint's questions (greedy or
beam search, ``generate.beam``) beside the BLEU of copying the input sentence as the question
(the floor: a question shares many words with its sentence). BLEU is sacreBLEU's corpus BLEU on
the LM tokenizer's words (lower-cased when the LM's are), with ``tokenize="none"``: a word-level
model cannot restore the casing and spacing the tokenizer dropped, so outputs and references are
compared in the same words, as the question-generation literature scores tokenized text. A
generated ``<unk>`` never matches.
"""

from __future__ import annotations

import csv
import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import torch

from transferlab.checkpoint import check_run_folder, has_checkpoint, load_checkpoint, load_weights
from transferlab.config import ConfigError, check_at_least, from_dict, to_dict, write_json
from transferlab.data import catalog
from transferlab.data.examples import QAExample
from transferlab.encoders.awd_lstm import AWDLSTMConfig
from transferlab.log import log
from transferlab.pretrain.lm import lm_text, load_lm
from transferlab.pretrain.mt import Parallel, ParallelBatches, mt_perplexity
from transferlab.pretrain.sentences import split_sentences
from transferlab.pretrain.seq2seq import LMSeq2Seq, Seq2SeqConfig, Seq2SeqLoss, init_from_lm
from transferlab.recipes.pretrain_mt import bleu
from transferlab.tasks.generate import GenerateConfig, generate
from transferlab.text.tokenize import TextConfig, tokenizer
from transferlab.text.vocab import Vocab
from transferlab.train import TrainConfig, fit


@dataclass(frozen=True)
class QGDataConfig:
    task: str = "squad-v1.1"  # a catalog QA dataset with train and test splits
    valid_frac: float = 0.1  # the last fraction of the training articles, held out for validation
    train_size: int = 0  # the first N training questions (0 = all)
    eval_size: int = 0  # the first N validation and test questions (0 = all)
    max_len: int = 100  # training pairs with a longer input (sentence, <eos>, answer) or question are left out
    min_freq: int = 2  # without --pretrained: the training side's words seen this often
    max_vocab: int = 30_000
    batch_size: int = 32
    eval_batch_size: int = 64

    def __post_init__(self):
        if not 0.0 < self.valid_frac < 1.0:
            raise ConfigError(f"data.valid_frac must be in (0, 1), got {self.valid_frac}")
        check_at_least(self, "data", 1, ("max_len", "min_freq", "max_vocab", "batch_size", "eval_batch_size"))
        if self.train_size < 0 or self.eval_size < 0:
            raise ConfigError("data.train_size (--train-size) and data.eval_size must be >= 0 (0 = all)")


@dataclass(frozen=True)
class QuestionGenConfig:
    data: QGDataConfig = field(default_factory=QGDataConfig)
    init: Literal["random", "lm"] = "lm"  # --init: encoder and decoder from --pretrained, or random
    pretrained: str = ""  # a `pretrain lm` checkpoint: its vocabulary, tokenizer and shape (and weights: init=lm)
    text: TextConfig = field(default_factory=TextConfig)  # without --pretrained only (else the LM's)
    # the shape applies without --pretrained only (else the LM's); the dropouts always
    awd_lstm: AWDLSTMConfig = field(default_factory=lambda: AWDLSTMConfig(
        embed_p=0.05, input_p=0.25, hidden_p=0.15, weight_p=0.2, output_p=0.1))
    seq2seq: Seq2SeqConfig = field(default_factory=Seq2SeqConfig)
    aux_lm: float = 0.0  # --aux_lm: weight of the decoder's own next-word loss (no attention)
    generate: GenerateConfig = field(default_factory=lambda: GenerateConfig(beam=3, max_len_a=0.0, max_len_b=32))
    train: TrainConfig = field(default_factory=lambda: TrainConfig(lr=1e-3, clip=1.0, epochs=6, patience=2))
    out: str = "runs/qg"
    resume: bool = False
    overwrite: bool = False  # a run already in `out` is moved aside (OUT.replaced-<time>) and a new one starts

    def __post_init__(self):
        if self.init == "lm" and not self.pretrained:
            raise ConfigError("init='lm' (--init lm) starts encoder and decoder from a language model: name a "
                              "`transferlab pretrain lm` checkpoint with --pretrained, or pass --init random")
        if self.init not in ("random", "lm"):
            raise ConfigError(f"init (--init) must be 'random' or 'lm', got {self.init!r}")
        if self.aux_lm < 0:
            raise ConfigError(f"aux_lm (--aux_lm) must be >= 0, got {self.aux_lm}")


# --- data ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class QGExample:
    sentence: str  # the context's sentence(s) holding the answer
    answer: str
    question: str


def answer_sentence(context: str, start: int, end: int, sentences: list[str] | None = None) -> str:
    """The sentences of ``context`` that overlap the characters ``[start, end)`` (the answer), as
    written there; the whole context when the split finds none."""
    spans, pos = [], 0
    for s in sentences if sentences is not None else split_sentences(context):
        at = context.find(s, pos)
        if at < 0:  # never for split_sentences' pieces, which are stripped slices of the context
            continue
        spans.append((at, at + len(s)))
        pos = at + len(s)
    hit = [(a, b) for a, b in spans if a < max(end, start + 1) and b > start]
    return context[hit[0][0]: hit[-1][1]] if hit else context


def qg_examples(examples: Sequence[QAExample]) -> list[QGExample]:
    """One example per answered question: its first answer's sentence, the answer, the question."""
    cache: dict[str, list[str]] = {}
    out = []
    for ex in examples:
        if not ex.answers:
            continue
        a = ex.answers[0]
        if ex.context not in cache:
            cache[ex.context] = split_sentences(ex.context)
        out.append(QGExample(answer_sentence(ex.context, a.start, a.start + len(a.text), cache[ex.context]),
                             a.text, ex.question))
    return out


def qg_splits(d: QGDataConfig) -> dict[str, list[QGExample]]:
    """Train, valid (the last ``valid_frac`` of the training articles) and test examples."""
    train = list(catalog.load_examples(d.task, "train"))
    test = list(catalog.load_examples(d.task, "test"))
    for split, exs in (("train", train), ("test", test)):
        if not exs or not isinstance(exs[0], QAExample):
            raise ConfigError(f"data.task={d.task!r}: its {split} split holds no questions with contexts "
                              f"(a QA dataset such as squad-v1.1)")
    titles = list(dict.fromkeys(ex.title for ex in train))
    if len(titles) < 2:
        raise ConfigError(f"data.task={d.task!r}: {len(titles)} training article(s), too few to hold some out "
                          f"for validation")
    held = set(titles[len(titles) - max(1, round(d.valid_frac * len(titles))):])
    splits = {"train": qg_examples([ex for ex in train if ex.title not in held]),
              "valid": qg_examples([ex for ex in train if ex.title in held]), "test": qg_examples(test)}
    for split, limit in (("train", d.train_size), ("valid", d.eval_size), ("test", d.eval_size)):
        if limit:
            splits[split] = splits[split][:limit]
    return splits


@dataclass
class Words:
    """The LM's words: a tokenizer and a vocabulary, and the model's inputs and outputs in them."""

    vocab: Vocab
    text: TextConfig

    def tokens(self, text: str) -> list[str]:
        return tokenizer(self.text)(text)

    def source(self, ex: QGExample) -> list[int]:
        """``sentence <eos> answer`` as ids."""
        return self.vocab.encode(self.tokens(ex.sentence)) + [self.vocab.eos_id] + \
            self.vocab.encode(self.tokens(ex.answer))

    def encode(self, examples: Sequence[QGExample], max_len: int | None = None) -> Parallel:
        src = [self.source(ex) for ex in examples]
        tgt = [self.vocab.encode(self.tokens(ex.question)) for ex in examples]
        if max_len is None:
            return Parallel(src, tgt)
        keep = [i for i in range(len(src)) if len(src[i]) <= max_len and 0 < len(tgt[i]) <= max_len]
        return Parallel([src[i] for i in keep], [tgt[i] for i in keep], len(src) - len(keep))


def batches(data: Parallel, vocab: Vocab, batch_size: int, shuffle: bool = True, seed: int = 0,
            epoch: int = 0) -> ParallelBatches:
    """``<eos>`` starts and ends a target (the LM's line separator; see the module docstring)."""
    return ParallelBatches(data, batch_size, src_pad=vocab.pad_id, tgt_pad=vocab.pad_id, bos=vocab.eos_id,
                           eos=vocab.eos_id, shuffle=shuffle, seed=seed, epoch=epoch)


# --- the model ----------------------------------------------------------------------------------

@dataclass
class QuestionGenerator:
    """A ``qg`` model with its words: examples -> questions (as the LM's words, space-joined)."""

    model: LMSeq2Seq
    words: Words
    generate: GenerateConfig

    def questions(self, examples: Sequence[QGExample], beam: int | None = None) -> list[str]:
        gen = self.generate if beam is None else dataclasses.replace(self.generate, beam=beam)
        v = self.words.vocab
        self.model.eval()
        out = generate(self.model, [self.words.source(ex) for ex in examples], v.pad_id, v.eos_id, v.eos_id, gen,
                       device=next(self.model.parameters()).device)
        return [" ".join(v.decode(ids)) for ids in out]


def load_question_generator(path: str | Path) -> QuestionGenerator:
    """A ``qg`` checkpoint folder (or its run folder, whose ``best`` is taken)."""
    path = Path(path)
    if not has_checkpoint(path) and has_checkpoint(path / "best"):
        path = path / "best"
    ckpt = load_checkpoint(path, json_only=True)
    c = ckpt.config
    if "seq2seq" not in c or "vocab" not in ckpt.files:
        raise ValueError(f"{path}: not a `transferlab qg` checkpoint (no seq2seq config and vocab.json)")
    model = LMSeq2Seq(from_dict(AWDLSTMConfig, c["awd_lstm"], "awd_lstm."),
                      from_dict(Seq2SeqConfig, c["seq2seq"], "seq2seq."))
    load_weights(model, path)
    words = Words(Vocab.from_dict(ckpt.files["vocab"], f"{path}/vocab.json"),
                  from_dict(TextConfig, c.get("text", {}), "text."))
    return QuestionGenerator(model.eval(), words, from_dict(GenerateConfig, c.get("generate", {}), "generate."))


def build_model(cfg: QuestionGenConfig, train: list[QGExample], out: Path) -> tuple[LMSeq2Seq, Words, dict]:
    """The model and its words, and the resolved ``text`` and ``awd_lstm`` sections: the LM's
    (weights too with ``init=lm``), else a vocabulary of the training side (a resumed run's own)."""
    drop = {k: getattr(cfg.awd_lstm, k) for k in ("embed_p", "input_p", "hidden_p", "weight_p", "output_p")}
    if cfg.pretrained:
        lm, vocab = load_lm(cfg.pretrained)
        text = lm_text(cfg.pretrained)
        awd = dataclasses.replace(lm.encoder.cfg, **drop)
        model = LMSeq2Seq(awd, cfg.seq2seq)
        if cfg.init == "lm":
            init_from_lm(model, lm)
        log(f"{cfg.pretrained}: {len(vocab):,} words, awd_lstm dim {awd.dim}, hidden {awd.hidden_dim}, "
            f"{awd.n_layers} layers; encoder and decoder {'from the LM' if cfg.init == 'lm' else 'random'}")
    else:
        text = cfg.text
        if cfg.resume and has_checkpoint(out / "last"):
            vocab = Vocab.from_dict(load_checkpoint(out / "last", json_only=True).files["vocab"])
        else:
            tok = tokenizer(text)
            vocab = Vocab.build((tok(s) for ex in train for s in (ex.sentence, ex.question)),
                                min_freq=cfg.data.min_freq, max_size=cfg.data.max_vocab)
        awd = dataclasses.replace(cfg.awd_lstm, vocab_size=len(vocab))
        model = LMSeq2Seq(awd, cfg.seq2seq)
    return model, Words(vocab, text), {"text": to_dict(text), "awd_lstm": to_dict(awd)}


# --- the run ------------------------------------------------------------------------------------

def run(cfg: QuestionGenConfig) -> dict:
    torch.manual_seed(cfg.train.seed)  # the model is built before fit() seeds: the same start per seed
    out = Path(cfg.out)
    check_run_folder(out, cfg.resume, to_dict(cfg), cfg.overwrite, derived=("text", "awd_lstm"))
    d = cfg.data
    examples = qg_splits(d)
    model, words, resolved = build_model(cfg, examples["train"], out)
    vocab = words.vocab
    train = words.encode(examples["train"], d.max_len)
    held = {s: words.encode(examples[s]) for s in ("valid", "test")}
    log(f"{d.task}: {len(train.src):,} training questions ({train.dropped:,} longer than {d.max_len} words left "
        f"out), valid {len(held['valid'].src):,}, test {len(held['test'].src):,}; {len(vocab):,} words")

    def perplexity(m, split: str) -> float:
        return mt_perplexity(m, batches(held[split], vocab, d.eval_batch_size, shuffle=False))

    start = time.perf_counter()
    result = fit(model, Seq2SeqLoss(cfg.aux_lm),
                 lambda epoch: batches(train, vocab, d.batch_size, seed=cfg.train.seed, epoch=epoch), cfg.train,
                 evaluate=lambda m: {"valid_ppl": perplexity(m, "valid")}, metric="valid_ppl", mode="min",
                 out_dir=out, config=to_dict(cfg) | resolved, files={"vocab": vocab.to_dict()})
    wall = time.perf_counter() - start
    best = load_question_generator(out / "best")
    best.model.to(next(model.parameters()).device)  # where it trained
    summary = {"valid_ppl": perplexity(best.model, "valid"), "test_ppl": perplexity(best.model, "test"),
               **bleu_report(best, examples["test"], out), "wall_s": wall,
               "wall_s_total": wall + result.earlier_wall_s, "steps": result.step, "init": cfg.init,
               "pretrained": cfg.pretrained, "aux_lm": cfg.aux_lm, "train_size": len(train.src),
               "vocab_size": len(vocab), "n_params": sum(p.numel() for p in model.parameters()),
               "checkpoint": str(out / "best")}
    write_json(summary, out / "results.json")
    log(f"valid ppl {summary['valid_ppl']:.2f}, test ppl {summary['test_ppl']:.2f}; test BLEU {summary['bleu']:.2f} "
        f"(beam {summary['beam']}), copying the sentence {summary['copy_bleu']:.2f} ({wall:.0f} s)")
    return summary


def bleu_report(gen: QuestionGenerator, examples: list[QGExample], out: Path) -> dict:
    """BLEU of the generated questions and of the copy baseline on ``examples`` (module docstring);
    every input, reference and output in ``out/test_questions.tsv``."""
    from sacrebleu.metrics import BLEU

    refs = [" ".join(gen.words.tokens(ex.question)) for ex in examples]
    copies = [" ".join(gen.words.tokens(ex.sentence)) for ex in examples]
    start = time.perf_counter()
    hyps = gen.questions(examples)
    secs = time.perf_counter() - start
    with open(out / "test_questions.tsv", "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, delimiter="\t", quoting=csv.QUOTE_NONE, escapechar="\\", lineterminator="\n")
        w.writerow(["sentence", "answer", "question", "generated"])
        w.writerows((ex.sentence, ex.answer, ref, hyp) for ex, ref, hyp in zip(examples, refs, hyps))
    metric = BLEU(tokenize="none")
    score, copy = bleu(hyps, refs, metric), bleu(copies, refs, metric)
    return {"bleu": score, "copy_bleu": copy, "bleu_signature": str(metric.get_signature()),
            "beam": gen.generate.beam, "test_questions": len(examples),
            "test_questions_per_s": len(examples) / max(secs, 1e-9),
            "mean_question_words": sum(len(h.split()) for h in hyps) / max(len(hyps), 1)}
