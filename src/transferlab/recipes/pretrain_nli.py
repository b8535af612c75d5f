"""``transferlab pretrain nli``: InferSent (Conneau et al. 2017), a biLSTM-max sentence encoder
trained on natural language inference, for ``senteval``, ``probe`` and ``finetune --pretrained``.

Read the NLI pairs: SICK's entailment pairs offline (``data.corpus=sick``), split exactly as
``senteval``'s sick-e task splits them (its own split function, so the encoder never trains on
the pairs senteval tests it on), or SNLI / MultiNLI (``snli``, ``multi_nli``) from the Hugging
Face hub for users who are online, written once into the download cache as the catalog writes
its hub entries. Build the vocabulary (the training words and the most frequent words of the
static vectors), set the word embeddings to the static vectors (GloVe 6B 50d offline; the paper:
GloVe 840B 300d) and keep them fixed, train encoder and classifier with cross-entropy
(:mod:`transferlab.pretrain.nli`), keep the checkpoint with the best validation accuracy, and
report validation and test accuracy beside the majority class.

Where we differ from the paper (SNLI, 570k pairs; SGD at 0.1, the rate divided by 5 whenever
dev accuracy drops): the train section's optimizer (Adam in the presets), and on SICK's ~7.9k
training pairs a much smaller encoder (the presets; the paper's is 2 x 2048 units).

The checkpoint is a ``sentence_rnn`` encoder (config key ``sentence_rnn``, vocabulary in
``vocab.json``; the classifier's weights are kept beside it, not read by the encoder's users):
``transferlab senteval OUT/best`` reads its max-pooled sentence vector.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from transferlab.checkpoint import check_run_folder, load_weights
from transferlab.config import ConfigError, check_at_least, to_dict, write_json
from transferlab.data import catalog, loaders
from transferlab.data.entries import CatalogEntry
from transferlab.data.examples import PairExample
from transferlab.data.tasks import nested_subset
from transferlab.encoders.sentence_rnn import SentenceRNN, SentenceRNNConfig
from transferlab.log import log
from transferlab.pretrain.nli import InferSent, NLIConfig, nli_loss, nli_scores
from transferlab.pretrain.paraphrase import PairBatches
from transferlab.recipes.pretrain_paraphrase import pair_words
from transferlab.recipes.senteval import TASKS, read_split
from transferlab.text.tokenize import TextConfig
from transferlab.train import TrainConfig, fit
from transferlab.vectors.init import init_embedding

NLI_LABELS = ("entailment", "neutral", "contradiction")
# NLI corpora for online users, fetched and written as the catalog fetches its own hub entries (not
# in the catalog: nothing offline holds them); a hub label of -1 (no gold label) is left out
HUB_CORPORA: dict[str, CatalogEntry] = {
    "snli": CatalogEntry(
        "pair", "SNLI: 570k premise-hypothesis pairs (Bowman et al. 2015)", "datasets/snli", "table",
        {"train": "train.tsv", "valid": "dev.tsv", "test": "test.tsv"}, layout=("premise", "hypothesis", "label"),
        header=True, columns={"a": "premise", "b": "hypothesis", "label": "label"}, hub_id="stanfordnlp/snli",
        hub_fields=("premise", "hypothesis", "label"),
        hub_files={"train.tsv": "train", "dev.tsv": "validation", "test.tsv": "test"}),
    "multi_nli": CatalogEntry(
        "pair", "MultiNLI: 433k pairs of ten genres (Williams et al. 2018); test = the mismatched dev set",
        "datasets/multi_nli", "table", {"train": "train.tsv", "valid": "dev_matched.tsv",
                                        "test": "dev_mismatched.tsv"},
        layout=("premise", "hypothesis", "label"), header=True,
        columns={"a": "premise", "b": "hypothesis", "label": "label"}, hub_id="nyu-mll/multi_nli",
        hub_fields=("premise", "hypothesis", "label"),
        hub_files={"train.tsv": "train", "dev_matched.tsv": "validation_matched",
                   "dev_mismatched.tsv": "validation_mismatched"}),
}
CORPORA = ("sick", *HUB_CORPORA)


@dataclass(frozen=True)
class NLIDataConfig:
    corpus: str = "sick"  # sick (offline: senteval's sick-e split), or snli / multi_nli (Hugging Face hub)
    train_size: int = 0  # a fixed random subset of the training pairs; 0 = all
    eval_size: int = 0  # a fixed random subset of the valid and test pairs; 0 = all
    vectors_words: int = 50_000  # the vocabulary also holds the N most frequent words of the vectors
    min_freq: int = 1  # a training word enters the vocabulary at this count
    batch_size: int = 64  # the paper's 64
    eval_batch_size: int = 256

    def __post_init__(self):
        if self.corpus.strip().lower().replace("-", "_") not in CORPORA:
            raise ConfigError(f"data.corpus must be one of {', '.join(CORPORA)}, got {self.corpus!r}")
        check_at_least(self, "data", 1, ("min_freq", "batch_size", "eval_batch_size"))
        check_at_least(self, "data", 0, ("train_size", "eval_size", "vectors_words"), "0 = all / none")


@dataclass(frozen=True)
class PretrainNLIConfig:
    data: NLIDataConfig = field(default_factory=NLIDataConfig)
    text: TextConfig = field(default_factory=TextConfig)  # lower-cased words: GloVe 6B is uncased
    # the paper's encoder: a biLSTM of 2 x 2048 units, max-pooled (dim follows the vectors)
    sentence_rnn: SentenceRNNConfig = field(default_factory=lambda: SentenceRNNConfig(
        dim=50, hidden_dim=2048, cell="lstm", bidirectional=True, pooling="max"))
    objective: NLIConfig = field(default_factory=NLIConfig)
    vectors: str = "glove-6b-50d"  # the word embeddings ("" = random, sentence_rnn.dim wide, and then trained)
    train: TrainConfig = field(default_factory=lambda: TrainConfig(optimizer="adam", lr=1e-3, weight_decay=0.0,
                                                                   epochs=10, clip=5.0))
    out: str = "runs/nli"
    resume: bool = False
    overwrite: bool = False  # a run already in `out` is moved aside (OUT.replaced-<time>) and a new one starts


def _hub_split(key: str, split: str) -> list[PairExample]:
    entry = HUB_CORPORA[key]
    folder, _, tried = catalog.locate(entry, fetch_missing=True)
    if folder is None:
        places = "".join(f"\n  - {t}" for t in tried)
        raise ConfigError(f"data.corpus={key}: {entry.description} is read from the Hugging Face hub "
                          f"({entry.hub_id}), which could not be reached. Tried:{places}\nGo online with "
                          f"`pip install transferlab[hf]`, or train offline on SICK (--data.corpus=sick).")
    return [ex for ex in loaders.entry_examples(key, entry, folder, split) if ex.label in NLI_LABELS]


def nli_pairs(d: NLIDataConfig) -> dict[str, list[PairExample]]:
    """``train``, ``valid`` and ``test`` pairs of ``d.corpus`` (SICK: senteval's sick-e split, less
    the training pairs that repeat a held-out pair's two texts), each cut to its subset size."""
    key = d.corpus.strip().lower().replace("-", "_")
    if key == "sick":
        task = TASKS["sick-e"]
        data = {role: read_split(task, split, 0) for role, split in zip(("train", "valid", "test"), task.splits)}
        # SICK repeats a few pairs word for word under another pair id: a training pair that is also
        # a held-out pair is left out, so no senteval sick-e test pair is ever trained on
        held = {(ex.text_a, ex.text_b) for role in ("valid", "test") for ex in data[role]}
        kept = [ex for ex in data["train"] if (ex.text_a, ex.text_b) not in held]
        if len(kept) < len(data["train"]):
            log(f"sick: {len(data['train']) - len(kept)} training pairs repeat a valid or test pair; left out")
        data["train"] = kept
    else:
        data = {role: _hub_split(key, role) for role in ("train", "valid", "test")}
    sizes = {"train": d.train_size, "valid": d.eval_size, "test": d.eval_size}
    return {role: [exs[i] for i in nested_subset(len(exs), sizes[role], seed=0)] if sizes[role] else exs
            for role, exs in data.items()}


def run(cfg: PretrainNLIConfig) -> dict:
    torch.manual_seed(cfg.train.seed)  # the model is built before fit() seeds: the same start per seed
    out = Path(cfg.out)
    check_run_folder(out, cfg.resume, to_dict(cfg), cfg.overwrite, derived=("sentence_rnn",))
    d = cfg.data
    pairs = nli_pairs(d)
    labels = sorted({ex.label for ex in pairs["train"]})
    unknown = sorted({ex.label for exs in pairs.values() for ex in exs} - set(labels))
    if len(labels) < 2 or unknown:
        raise ConfigError(f"data.corpus={d.corpus}: training labels {labels}; held-out labels {unknown} never "
                          f"occur in training")
    vocab, encode, wv = pair_words(pairs["train"], cfg.text, cfg.vectors, d.vectors_words, d.min_freq)

    rnn_cfg = dataclasses.replace(cfg.sentence_rnn, vocab_size=len(vocab), pad_id=vocab.pad_id,
                                  dim=wv.dim if wv is not None else cfg.sentence_rnn.dim)
    encoder = SentenceRNN(rnn_cfg)
    if wv is not None:
        specials = [vocab.pad_id, vocab.unk_id, vocab.bos_id, vocab.eos_id]
        for emb in encoder.embedding:  # every tower reads the vectors
            log(str(init_embedding(emb, vocab.itos, wv, skip=specials, seed=cfg.train.seed)))
        if not cfg.objective.train_embeddings:
            encoder.embedding.requires_grad_(False)
    model = InferSent(encoder, len(labels), cfg.objective)
    index = {label: i for i, label in enumerate(labels)}
    enc = {role: (encode(ex.text_a for ex in exs), encode(ex.text_b for ex in exs), [index[ex.label] for ex in exs])
           for role, exs in pairs.items()}
    log(f"{d.corpus}: train {len(pairs['train']):,}, valid {len(pairs['valid']):,}, test {len(pairs['test']):,} "
        f"pairs; labels {', '.join(labels)}; {len(vocab):,} words")

    def batches(epoch: int) -> PairBatches:
        a, b, y = enc["train"]
        return PairBatches(a, b, d.batch_size, pad_id=vocab.pad_id, labels=y, seed=cfg.train.seed, epoch=epoch)

    def scores(m: InferSent, split: str) -> dict:
        a, b, y = enc[split]
        held = PairBatches(a, b, d.eval_batch_size, pad_id=vocab.pad_id, labels=y, shuffle=False)
        return {f"{split}_{k}": v for k, v in nli_scores(m, held).items()}

    start = time.perf_counter()
    result = fit(model, nli_loss, batches, cfg.train, evaluate=lambda m: scores(m, "valid"),
                 metric="valid_accuracy", mode="max", out_dir=out,
                 config=to_dict(cfg) | {"sentence_rnn": to_dict(rnn_cfg), "labels": labels},
                 files={"vocab": vocab.to_dict()})
    wall = time.perf_counter() - start
    best = InferSent(SentenceRNN(rnn_cfg), len(labels), cfg.objective)
    load_weights(best, out / "best")  # the encoder's and the classifier's weights
    best.to(next(model.parameters()).device)
    y_train, y_test = np.array(enc["train"][2]), np.array(enc["test"][2])
    summary = {**scores(best, "valid"), **scores(best, "test"),
               "test_majority": float(np.mean(y_test == np.bincount(y_train).argmax())), "labels": labels,
               "n": {role: len(exs) for role, exs in pairs.items()}, "wall_s": wall,
               "wall_s_total": wall + result.earlier_wall_s, "steps": result.step, "vocab_size": len(vocab),
               "n_params": sum(p.numel() for p in encoder.parameters()),
               "n_trained": sum(p.numel() for p in model.parameters() if p.requires_grad),
               "checkpoint": str(out / "best")}
    write_json(summary, out / "results.json")
    log(f"{d.corpus} accuracy: valid {summary['valid_accuracy']:.1%}, test {summary['test_accuracy']:.1%} "
        f"(majority {summary['test_majority']:.1%}; {wall:.0f} s)")
    return summary
