"""``transferlab finetune``: ULMFiT (Howard & Ruder 2018) on an AWD-LSTM, or the same from scratch.

The paper's three stages, one function each:

1. general-domain LM pretraining (``transferlab pretrain lm``; a checkpoint comes in);
2. target-task LM fine-tuning on the task's own text (its labels unused), with the vocabulary
   moved to the target's (new words start at the mean embedding), discriminative fine-tuning
   and slanted triangular learning rates;
3. classifier fine-tuning: concat pooling head, discriminative learning rates, slanted
   triangular learning rates and gradual unfreezing (top group first, one more per epoch).

Each technique can be switched off (``ulmfit.discriminative``, ``ulmfit.stlr``,
``ulmfit.gradual_unfreeze``) for the paper's ablations.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path

from torch import nn

from transferlab.adapt.finetune import freeze_to, param_groups, transfer_embeddings, unfreeze_schedule
from transferlab.config import to_dict, write_json
from transferlab.data import catalog
from transferlab.data.batching import Batches
from transferlab.encoders.awd_lstm import AWDLSTM, DROPOUTS, AWDLSTMConfig
from transferlab.eval.metrics import classification_metrics
from transferlab.pretrain.lm import LanguageModel, LMLoss, LMStream, encode_corpus, perplexity
from transferlab.recipes.common import TextConfig, load_lm, log, tokenizer
from transferlab.recipes.task_data import TaskDataConfig, label_ids, load_task, task_texts
from transferlab.tasks.classify import ClassifierHeadConfig, PoolingClassifier, TaskModel, classify_loss, predict_proba
from transferlab.text.vocab import Vocab
from transferlab.train import TrainConfig, fit


@dataclass(frozen=True)
class ULMFiTConfig:
    discriminative: bool = True  # lr / decay per layer group going down
    decay: float = 2.6
    stlr: bool = True  # slanted triangular learning rates (else constant)
    gradual_unfreeze: bool = True  # top group first, one more group per epoch

    def __post_init__(self):
        if self.decay < 1.0:
            raise ValueError(f"ulmfit.decay must be >= 1, got {self.decay}")


@dataclass(frozen=True)
class LMFinetuneConfig:
    enabled: bool = True
    text: str = ""  # corpus for target-domain LM fine-tuning; "" = the task's training text
    min_freq: int = 2
    max_vocab: int = 60000
    batch_size: int = 32
    bptt: int = 70
    out: str = ""  # where the fine-tuned LM is kept (reused if complete); "" = <out>/lm
    train: TrainConfig = field(default_factory=lambda: TrainConfig(lr=2e-3, epochs=1, schedule="slanted_triangular"))


@dataclass(frozen=True)
class FinetuneConfig:
    data: TaskDataConfig = field(default_factory=TaskDataConfig)
    text: TextConfig = field(default_factory=TextConfig)
    pretrained: str = ""  # an LM checkpoint folder; "" = train the classifier from scratch
    # the classifier's encoder: its dropouts apply in both cases (the LM stage keeps the
    # checkpoint's), its sizes only from scratch (a pretrained encoder keeps its own). fastai's
    # classifier rates; its output_p is the head's input dropout (head.input_p), so 0 here.
    awd_lstm: AWDLSTMConfig = field(default_factory=lambda: AWDLSTMConfig(
        embed_p=0.05, input_p=0.4, hidden_p=0.3, weight_p=0.5, output_p=0.0))
    scratch_min_freq: int = 1
    lm_finetune: LMFinetuneConfig = field(default_factory=LMFinetuneConfig)
    ulmfit: ULMFiTConfig = field(default_factory=ULMFiTConfig)
    head: ClassifierHeadConfig = field(default_factory=ClassifierHeadConfig)
    train: TrainConfig = field(default_factory=lambda: TrainConfig(lr=1e-2, epochs=6, schedule="slanted_triangular"))
    out: str = "runs/finetune"


def _schedule(train: TrainConfig, u: ULMFiTConfig) -> TrainConfig:
    return train if u.stlr else dataclasses.replace(train, schedule="constant")


def retarget_vocab(lm: LanguageModel, old: Vocab, new: Vocab) -> int:
    """Move ``lm``'s embedding (and tied decoder) to ``new``'s words; returns how many are new."""
    weight, n_new = transfer_embeddings(lm.encoder.embedding.weight.data, old.itos, new.itos)
    emb = lm.encoder.embedding
    lm.encoder.embedding = nn.Embedding(len(new), weight.size(1), padding_idx=emb.padding_idx)
    lm.encoder.embedding.weight.data.copy_(weight)
    bias = lm.decoder.bias.data if lm.decoder.bias is not None else None
    lm.decoder = nn.Linear(weight.size(1), len(new), bias=bias is not None)
    lm.decoder.weight = lm.encoder.embedding.weight  # tied again
    if bias is not None:
        lm.decoder.bias.data.copy_(transfer_embeddings(bias[:, None], old.itos, new.itos)[0][:, 0])
    return n_new


def _valid_text(cfg: FinetuneConfig) -> list[str] | None:
    """Held-out text for the LM stage: the task's validation texts (their labels unused)."""
    if cfg.lm_finetune.text:
        return None
    if cfg.data.valid:
        return list(task_texts(cfg.data, "valid", cfg.data.valid))
    if cfg.data.task and not cfg.data.train and "valid" in catalog.splits(cfg.data.task):
        return list(task_texts(cfg.data, "valid"))
    return None


def lm_groups(lm: LanguageModel) -> list[nn.Module]:
    """The LM stage's layer groups below the decoder, bottom to top. A group tied to the decoder
    (the embedding) is left out: it trains in the decoder's group, at the top learning rate, as
    in fastai's language-model split, so the words new to the pretrained LM (most of a new
    domain's vocabulary, mean-initialized) are learned at the full rate, not 2.6**n times less."""
    tied = {id(p) for p in lm.decoder.parameters()}
    return [g for g in lm.encoder.layer_groups() if not any(id(p) in tied for p in g.parameters())]


def finetune_lm(cfg: FinetuneConfig, lm: LanguageModel, old_vocab: Vocab, tok) -> tuple[LanguageModel, Vocab]:
    """Stage 2: target-task LM fine-tuning, reused when its output folder is complete."""
    c = cfg.lm_finetune
    out = Path(c.out or Path(cfg.out) / "lm")
    if (out / "results.json").exists():
        log(f"reusing the fine-tuned language model in {out}")
        return load_lm(out / "best" if (out / "best").exists() else out / "last")
    lines = catalog.corpus(c.text, "train") if c.text else task_texts(cfg.data, "train", cfg.data.train)
    vocab = Vocab.build((tok(line) for line in lines), min_freq=c.min_freq, max_size=c.max_vocab)
    n_new = retarget_vocab(lm, old_vocab, vocab)
    log(f"target vocabulary {len(vocab):,} words, {n_new:,} new to the pretrained LM (mean-initialized)")
    if not c.enabled:
        return lm, vocab
    stream = encode_corpus(lines, vocab, tok)
    valid_text = _valid_text(cfg)
    evaluate = None
    if valid_text:
        valid = encode_corpus(valid_text, vocab, tok)
        evaluate = lambda m: {"valid_ppl": perplexity(m, LMStream(valid, 8, c.bptt, variable=False))}  # noqa: E731
    u = cfg.ulmfit
    pgroups = param_groups(lm_groups(lm), c.train.lr, u.decay if u.discriminative else 1.0, head=lm.decoder)
    start = time.perf_counter()
    fit(lm, LMLoss(), lambda epoch: LMStream(stream, c.batch_size, c.bptt, seed=c.train.seed, epoch=epoch),
        _schedule(c.train, u), groups=pgroups, evaluate=evaluate, metric="valid_ppl" if evaluate else None,
        mode="min", out_dir=out, config=to_dict(cfg) | {"awd_lstm": to_dict(lm.encoder.cfg)},
        files={"vocab": vocab.to_dict()})
    write_json({"wall_s": time.perf_counter() - start, "tokens": len(stream)}, out / "results.json")
    return load_lm(out / "best" if (out / "best").exists() else out / "last")


def classifier_groups(model: TaskModel) -> list[nn.Module]:
    return list(model.encoder.layer_groups()) + [model.head]


def train_classifier(cfg: FinetuneConfig, data: dict, encoder: AWDLSTM, vocab: Vocab, tok, pretrained: bool) -> dict:
    """Stage 3: the classifier, with the ULMFiT techniques where the encoder was pretrained."""
    labels = sorted({ex.label for ex in data["train"]})
    max_len = cfg.data.max_len or None
    sets = {}
    for split, examples in data.items():
        ids = [vocab.encode(tok(ex.text)) or [vocab.unk_id] for ex in examples]
        y = label_ids(labels, examples, f"{cfg.data.task or cfg.data.train} {split}")
        sets[split] = (ids, y)
    model = TaskModel(encoder, PoolingClassifier(encoder.dim, len(labels), cfg.head))
    groups = classifier_groups(model)
    u = cfg.ulmfit
    technique = pretrained  # from scratch, every group trains at one lr from the start
    pgroups = param_groups(groups[:-1], cfg.train.lr, u.decay if (u.discriminative and technique) else 1.0,
                           head=groups[-1])
    unfreeze = u.gradual_unfreeze and technique

    def on_epoch_start(epoch: int, trainer) -> None:
        n = unfreeze_schedule(epoch, len(groups), unfreeze)
        freeze_to(groups, n)
        present = {g.get("name") for g in trainer.optimizer.param_groups}
        for g in pgroups[len(pgroups) - n :]:
            if g["name"] not in present:
                trainer.add_group(g)

    bs = cfg.data.batch_size
    train_ids, train_y = sets["train"]

    def batches(epoch: int) -> Batches:
        return Batches(train_ids, bs, pad_id=vocab.pad_id, extra={"labels": train_y}, seed=cfg.train.seed,
                       epoch=epoch, max_len=max_len, drop_last=len(train_ids) > bs)

    def evaluate_split(m, split: str) -> dict:
        ids, y = sets[split]
        probs = predict_proba(m, Batches(ids, 128, pad_id=vocab.pad_id, shuffle=False, max_len=max_len),
                              device=next(m.parameters()).device)
        return classification_metrics(y, probs.argmax(-1).tolist())

    train_cfg = _schedule(cfg.train, u) if technique else cfg.train
    start = time.perf_counter()
    out = Path(cfg.out)
    result = fit(model, classify_loss, batches, train_cfg, groups=[pgroups[-1]] if unfreeze else pgroups,
                 on_epoch_start=on_epoch_start if unfreeze else None,
                 evaluate=lambda m: {f"valid_{k}": v for k, v in evaluate_split(m, "valid").items()},
                 out_dir=out, config=to_dict(cfg),
                 files={"vocab": vocab.to_dict(), "labels": labels,
                        "encoder": {"name": "awd_lstm", "config": to_dict(encoder.cfg)}})
    wall = time.perf_counter() - start
    test = evaluate_split(model, "test")
    summary = {"test_accuracy": test["accuracy"], "test_macro_f1": test["macro_f1"],
               "valid": evaluate_split(model, "valid"), "train_size": len(train_ids),
               "labels": labels, "pretrained": pretrained, "wall_s": wall, "steps": result.step,
               "checkpoint": str(out / "last")}
    write_json(summary, out / "results.json")
    log(f"test accuracy {test['accuracy']:.4f}  macro-F1 {test['macro_f1']:.4f}  ({wall:.0f} s)")
    return summary


def run(cfg: FinetuneConfig) -> dict:
    tok = tokenizer(cfg.text)
    data = load_task(cfg.data)
    if cfg.pretrained:
        lm, old_vocab = load_lm(cfg.pretrained)
        lm, vocab = finetune_lm(cfg, lm, old_vocab, tok)
        lm.encoder.set_dropouts(**{name: getattr(cfg.awd_lstm, name) for name in DROPOUTS})
        return train_classifier(cfg, data, lm.encoder, vocab, tok, pretrained=True)
    vocab = Vocab.build((tok(ex.text) for ex in data["train"]), min_freq=cfg.scratch_min_freq)
    encoder = AWDLSTM(dataclasses.replace(cfg.awd_lstm, vocab_size=len(vocab)))
    return train_classifier(cfg, data, encoder, vocab, tok, pretrained=False)


def load_classifier(path: str | Path):
    """A classifier checkpoint folder -> (TaskModel with its weights, Vocab, labels, tokenizer)."""
    from transferlab.checkpoint import load_checkpoint, load_weights
    from transferlab.config import from_dict

    ckpt = load_checkpoint(path)
    missing = [name for name in ("vocab", "labels", "encoder") if name not in ckpt.files]
    if missing:
        raise ValueError(f"{path}: not a classifier checkpoint (no {', '.join(m + '.json' for m in missing)})")
    cfg = from_dict(FinetuneConfig, ckpt.config)
    vocab = Vocab.from_dict(ckpt.files["vocab"])
    labels = list(ckpt.files["labels"])
    enc_cfg = from_dict(AWDLSTMConfig, ckpt.files["encoder"]["config"], "awd_lstm.")
    model = TaskModel(AWDLSTM(enc_cfg), PoolingClassifier(enc_cfg.dim, len(labels), cfg.head))
    load_weights(model, path)
    model.eval()
    return model, vocab, labels, tokenizer(cfg.text)
