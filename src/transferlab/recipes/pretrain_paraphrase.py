"""``transferlab pretrain paraphrase``: Paragram-phrase (Wieting et al. 2016), word averaging
trained on paraphrase pairs, for ``senteval``, ``probe`` and ``finetune --pretrained``.

Read the paraphrase pairs (the positive pairs of MRPC's train split by default, or a TSV file of
pairs), build the vocabulary (their words and the most frequent words of the static vectors,
which keep their vector), start every word vector from the static vectors (GloVe 6B 50d offline,
the stand-in for the paper's Paragram-SL999), train the margin loss with MAX negatives
(:mod:`transferlab.pretrain.paraphrase`), keep the checkpoint whose phrase vectors' cosine best
correlates with STS-B's dev scores, then report Pearson and Spearman on STS-B dev and test, next
to the same figures for the untrained average of the static vectors (what training bought).

The checkpoint is a ``fasttext`` encoder (``ngrams=1``, config key ``fasttext``, vocabulary in
``vocab.json``), so ``transferlab senteval OUT/best`` reads it unchanged: its mean pooling over
``hidden`` is the phrase average.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from transferlab.checkpoint import check_run_folder
from transferlab.config import ConfigError, check_at_least, to_dict, write_json
from transferlab.data import catalog
from transferlab.data.examples import PairExample
from transferlab.data.tasks import nested_subset
from transferlab.encoders.backbone import load_encoder_weights
from transferlab.encoders.fasttext import FastTextConfig, FastTextEncoder
from transferlab.eval.senteval import sts_scores
from transferlab.log import log
from transferlab.pretrain.paraphrase import PairBatches, ParagramConfig, ParagramPhrase, paraphrase_loss, phrase_vectors
from transferlab.text.tokenize import TextConfig, tokenizer
from transferlab.text.vocab import Vocab
from transferlab.train import TrainConfig, fit
from transferlab.vectors.init import init_embedding


@dataclass(frozen=True)
class ParaphraseDataConfig:
    corpus: str = "mrpc"  # a catalog pair dataset (its `positive` pairs of the train split), or a TSV file of pairs
    positive: str = "1"  # the label of the paraphrase pairs in a labeled corpus; "" = every pair
    a_col: str = "0"  # a file's columns: 0-based indices written as strings, or names (the file has a header)
    b_col: str = "1"
    label_col: str = ""  # a file's label column, where it has one ("" = every row is a paraphrase pair)
    train_size: int = 0  # a fixed random subset of the training pairs; 0 = all
    sts: str = "stsb"  # the held-out relatedness data: a catalog pair dataset with dev and test splits, 0-5 scores
    eval_size: int = 0  # a fixed random subset of each held-out split; 0 = all
    vectors_words: int = 50_000  # the vocabulary also holds the N most frequent words of the vectors
    min_freq: int = 1  # a training word enters the vocabulary at this count
    batch_size: int = 100  # pairs per batch (the paper's 100): the MAX negatives come from the batch
    eval_batch_size: int = 256

    def __post_init__(self):
        check_at_least(self, "data", 1, ("min_freq", "batch_size", "eval_batch_size"))
        check_at_least(self, "data", 0, ("train_size", "eval_size", "vectors_words"), "0 = all / none")
        if self.batch_size < 2:
            raise ConfigError("data.batch_size must be >= 2: the negatives are the batch's other pairs")


@dataclass(frozen=True)
class PretrainParaphraseConfig:
    data: ParaphraseDataConfig = field(default_factory=ParaphraseDataConfig)
    text: TextConfig = field(default_factory=TextConfig)  # lower-cased words: GloVe 6B is uncased
    fasttext: FastTextConfig = field(default_factory=lambda: FastTextConfig(dim=50, ngrams=1))  # dim follows vectors
    objective: ParagramConfig = field(default_factory=ParagramConfig)
    vectors: str = "glove-6b-50d"  # the starting word vectors ("" = random, fasttext.dim wide)
    # Adam without weight decay: the objective's lambda_w pulls towards the start, not towards zero
    train: TrainConfig = field(default_factory=lambda: TrainConfig(optimizer="adam", lr=1e-3, weight_decay=0.0,
                                                                   epochs=10))
    out: str = "runs/paraphrase"
    resume: bool = False
    overwrite: bool = False  # a run already in `out` is moved aside (OUT.replaced-<time>) and a new one starts


def _column(value: str) -> str | int:
    return int(value) if value.isdigit() else value


def paraphrase_pairs(d: ParaphraseDataConfig) -> list[PairExample]:
    """The training pairs: a catalog dataset's train split (its ``positive`` pairs), or a file's rows."""
    if catalog.is_catalog_name(d.corpus):
        examples = list(catalog.load_examples(d.corpus, "train"))
        if examples and not isinstance(examples[0], PairExample):
            raise ConfigError(f"data.corpus={d.corpus} is not a dataset of sentence pairs")
    else:
        cols = {"a_col": _column(d.a_col), "b_col": _column(d.b_col)}
        if d.label_col:
            cols["label_col"] = _column(d.label_col)
        examples = list(catalog.load_examples(d.corpus, **cols))
    pairs = [ex for ex in examples if not d.positive or ex.label is None or ex.label == d.positive]
    if not pairs:
        raise ConfigError(f"data.corpus={d.corpus} has no pair labeled {d.positive!r} (data.positive)")
    return [pairs[i] for i in nested_subset(len(pairs), d.train_size, seed=0)] if d.train_size else pairs


def sts_pairs(d: ParaphraseDataConfig) -> dict[str, list[PairExample]]:
    """The held-out relatedness pairs, ``valid`` (the dev split) and ``test``, scores as labels."""
    out = {}
    for role, split in (("valid", "dev"), ("test", "test")):
        examples = list(catalog.load_examples(d.sts, split))
        out[role] = [examples[i] for i in nested_subset(len(examples), d.eval_size, seed=0)] if d.eval_size \
            else examples
    return out


def vectors_vocab(token_lists: Iterable[list[str]], wv, extra: int, min_freq: int = 1) -> Vocab:
    """The training words (counted, most frequent first), then the ``extra`` most frequent words
    of the vectors ``wv`` not among them (a WordVectors' keys are in its file's order, most
    frequent first for GloVe and word2vec), so the encoder reads words the training data lacks."""
    vocab = Vocab.build(token_lists, min_freq=min_freq)
    if wv is None or not extra:
        return vocab
    have = set(vocab.itos)
    return Vocab(vocab.itos + [w for w in wv.keys[:extra] if w not in have], min_freq=min_freq)


def pair_words(pairs: Iterable[PairExample], text: TextConfig, vectors: str, extra: int, min_freq: int
               ) -> tuple[Vocab, Callable[[Iterable[str]], list[list[int]]], object]:
    """The vocabulary of the pairs' words (:func:`vectors_vocab`), texts -> ids as senteval encodes
    them (an empty text is ``<unk>``), and the static vectors (None without ``vectors``)."""
    tok = tokenizer(text)
    wv = load_static(vectors)
    vocab = vectors_vocab((tok(t) for ex in pairs for t in (ex.text_a, ex.text_b)), wv, extra, min_freq)

    def encode(texts: Iterable[str]) -> list[list[int]]:
        return [vocab.encode(tok(t)) or [vocab.unk_id] for t in texts]

    return vocab, encode, wv


def load_static(name: str):
    """The static vectors a recipe starts its embedding from (None for "": a random start)."""
    if not name:
        return None
    from transferlab.vectors.keyed import load_vectors

    wv = load_vectors(name)
    log(f"{name}: {len(wv):,} vectors of {wv.dim} dimensions")
    return wv


def run(cfg: PretrainParaphraseConfig) -> dict:
    torch.manual_seed(cfg.train.seed)  # the model is built before fit() seeds: the same start per seed
    out = Path(cfg.out)
    check_run_folder(out, cfg.resume, to_dict(cfg), cfg.overwrite, derived=("fasttext",))
    d = cfg.data
    train_pairs, held = paraphrase_pairs(d), sts_pairs(d)
    vocab, encode, wv = pair_words(train_pairs, cfg.text, cfg.vectors, d.vectors_words, d.min_freq)

    ft_cfg = dataclasses.replace(cfg.fasttext, vocab_size=len(vocab), pad_id=vocab.pad_id,
                                 dim=wv.dim if wv is not None else cfg.fasttext.dim)
    encoder = FastTextEncoder(ft_cfg)
    if wv is not None:
        specials = [vocab.pad_id, vocab.unk_id, vocab.bos_id, vocab.eos_id]
        log(str(init_embedding(encoder.embedding, vocab.itos, wv, skip=specials, seed=cfg.train.seed)))
    model = ParagramPhrase(encoder, cfg.objective)
    a, b = encode(ex.text_a for ex in train_pairs), encode(ex.text_b for ex in train_pairs)
    sts = {role: (encode(ex.text_a for ex in exs), encode(ex.text_b for ex in exs), [float(ex.label) for ex in exs])
           for role, exs in held.items()}
    log(f"{d.corpus}: {len(train_pairs):,} paraphrase pairs; {d.sts} dev {len(held['valid']):,}, test "
        f"{len(held['test']):,} pairs; {len(vocab):,} words")

    def batches(epoch: int) -> PairBatches:  # random batches (bucket=1), as the paper's
        return PairBatches(a, b, d.batch_size, pad_id=vocab.pad_id, seed=cfg.train.seed, epoch=epoch, bucket=1)

    def scores(m: ParagramPhrase, split: str) -> dict:
        u_ids, v_ids, gold = sts[split]
        u, v = phrase_vectors(m, u_ids, d.eval_batch_size), phrase_vectors(m, v_ids, d.eval_batch_size)
        return {f"{split}_{k}": s for k, s in sts_scores(u, v, gold).items()}

    before = {f"init_{k}": v for split in ("valid", "test") for k, v in scores(model, split).items()}
    start = time.perf_counter()
    result = fit(model, paraphrase_loss, batches, cfg.train, evaluate=lambda m: scores(m, "valid"),
                 metric="valid_pearson", mode="max", out_dir=out,
                 config=to_dict(cfg) | {"fasttext": to_dict(ft_cfg)}, files={"vocab": vocab.to_dict()})
    wall = time.perf_counter() - start
    best = FastTextEncoder(ft_cfg)
    load_encoder_weights(best, out / "best")
    best_model = ParagramPhrase(best, cfg.objective).to(encoder.embedding.weight.device)
    summary = {**scores(best_model, "valid"), **scores(best_model, "test"), **before, "wall_s": wall,
               "wall_s_total": wall + result.earlier_wall_s, "steps": result.step, "train_pairs": len(train_pairs),
               "vocab_size": len(vocab), "n_params": sum(p.numel() for p in encoder.parameters()),
               "checkpoint": str(out / "best")}
    write_json(summary, out / "results.json")
    log(f"{d.sts} Pearson x100: dev {100 * summary['valid_pearson']:.1f}, test {100 * summary['test_pearson']:.1f} "
        f"(the untrained average: {100 * summary['init_valid_pearson']:.1f}, {100 * summary['init_test_pearson']:.1f}"
        f"; {wall:.0f} s)")
    return summary
