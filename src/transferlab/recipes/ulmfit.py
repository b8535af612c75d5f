"""ULMFiT (Howard & Ruder 2018) on an AWD-LSTM: the target-task LM fine-tuning stage.

The paper's three stages:

1. general-domain LM pretraining (``transferlab pretrain lm``; a checkpoint comes in);
2. target-task LM fine-tuning on the task's own text (its labels unused), with the vocabulary
   moved to the target's (new words start at the mean embedding), discriminative fine-tuning
   and slanted triangular learning rates: :func:`finetune_lm`, here;
3. classifier fine-tuning: concat pooling head, discriminative learning rates, slanted
   triangular learning rates and gradual unfreezing (top group first, one more per epoch), in
   :mod:`transferlab.recipes.finetune`, which runs the same techniques for every encoder.

Each technique can be switched off (``ulmfit.discriminative``, ``ulmfit.stlr``,
``ulmfit.gradual_unfreeze``) for the paper's ablations.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from torch import nn

from transferlab.adapt.finetune import param_groups, transfer_embeddings
from transferlab.config import ConfigError, to_dict, write_json
from transferlab.data import catalog
from transferlab.data.tasks import TaskDataConfig, task_texts
from transferlab.log import log
from transferlab.pretrain.lm import LanguageModel, LMLoss, LMStream, encode_corpus, load_lm, perplexity
from transferlab.text.vocab import Vocab
from transferlab.train import TrainConfig, fit


@dataclass(frozen=True)
class ULMFiTConfig:
    discriminative: bool = True  # lr / decay per layer group going down
    decay: float = 2.6
    stlr: bool = True  # slanted triangular learning rates (else constant)
    gradual_unfreeze: bool = True  # top group first, one more group per epoch
    # Felbo et al.'s chain-thaw instead of gradual unfreezing (it takes precedence): the head
    # alone, each layer group alone from the bottom up, then all together, chain_thaw_epochs
    # each; the run lasts (groups + 2) * chain_thaw_epochs epochs, whatever train.epochs says
    chain_thaw: bool = False
    chain_thaw_epochs: int = 1

    def __post_init__(self):
        if self.decay < 1.0:
            raise ValueError(f"ulmfit.decay must be >= 1, got {self.decay}")
        if self.chain_thaw_epochs < 1:
            raise ValueError(f"ulmfit.chain_thaw_epochs is the epochs of each chain-thaw stage and must be >= 1, "
                             f"got {self.chain_thaw_epochs}")


@dataclass(frozen=True)
class LMFinetuneConfig:
    enabled: bool = True
    text: str = ""  # corpus for target-domain LM fine-tuning; "" = the task's training text
    min_freq: int = 2
    max_vocab: int = 60000
    batch_size: int = 32
    bptt: int = 70
    eval_batch_size: int = 8  # rows of the validation stream (its perplexity)
    out: str = ""  # where the fine-tuned LM is kept (reused if complete); "" = <out>/lm
    train: TrainConfig = field(default_factory=lambda: TrainConfig(lr=2e-3, epochs=1, schedule="slanted_triangular"))


def schedule(train: TrainConfig, u: ULMFiTConfig) -> TrainConfig:
    """The configured schedule, or a constant learning rate with ``ulmfit.stlr=false``."""
    return train if u.stlr else dataclasses.replace(train, schedule="constant")


def retarget_vocab(lm: LanguageModel, old: Vocab, new: Vocab) -> int:
    """Move ``lm``'s embedding (and tied decoder) to ``new``'s words; returns how many are new. The
    encoder's config follows (``vocab_size``): a checkpoint written from it rebuilds this model."""
    weight, n_new = transfer_embeddings(lm.encoder.embedding.weight.data, old.itos, new.itos)
    emb = lm.encoder.embedding
    lm.encoder.embedding = nn.Embedding(len(new), weight.size(1), padding_idx=emb.padding_idx)
    lm.encoder.cfg = dataclasses.replace(lm.encoder.cfg, vocab_size=len(new))
    lm.encoder.embedding.weight.data.copy_(weight)
    bias = lm.decoder.bias.data if lm.decoder.bias is not None else None
    lm.decoder = nn.Linear(weight.size(1), len(new), bias=bias is not None)
    lm.decoder.weight = lm.encoder.embedding.weight  # tied again
    if bias is not None:
        lm.decoder.bias.data.copy_(transfer_embeddings(bias[:, None], old.itos, new.itos)[0][:, 0])
    return n_new


def lm_valid_text(c: LMFinetuneConfig, data: TaskDataConfig) -> list[str] | None:
    """Held-out text for the LM stage: the task's validation texts (their labels unused)."""
    if c.text:
        return None
    if data.valid:
        return list(task_texts(data, "valid", data.valid))
    if data.task and not data.train and "valid" in catalog.splits(data.task):
        return list(task_texts(data, "valid"))
    return None


def lm_groups(lm: LanguageModel) -> list[nn.Module]:
    """The LM stage's layer groups below the decoder, bottom to top. A group tied to the decoder
    (the embedding) is left out: it trains in the decoder's group, at the top learning rate, as
    in fastai's language-model split, so the words new to the pretrained LM (most of a new
    domain's vocabulary, mean-initialized) are learned at the full rate, not 2.6**n times less."""
    tied = {id(p) for p in lm.decoder.parameters()}
    return [g for g in lm.encoder.layer_groups() if not any(id(p) in tied for p in g.parameters())]


def stage_identity(config: dict) -> dict:
    """What the LM stage's result depends on: the pretrained LM (its folder), the stage's own
    settings (not its folder, progress display or threads) and the text it reads."""
    lmf = {k: v for k, v in config.get("lm_finetune", {}).items() if k != "out"}
    lmf["train"] = {k: v for k, v in lmf.get("train", {}).items() if k not in ("progress", "log_every", "threads")}
    data, pretrained = config.get("data", {}), config.get("pretrained") or ""
    return {"pretrained": str(Path(pretrained).resolve()) if pretrained else "", "lm_finetune": lmf,
            "text": config.get("text"), "task": data.get("task"), "train": data.get("train")}


def check_stage(out: Path, identity: dict) -> None:
    """Record ``identity`` in ``out/stage.json``, or check it against the one recorded there."""
    path = out / "stage.json"
    if not path.exists():
        write_json(identity, path)
        return
    held = json.loads(path.read_text())
    differ = sorted(k for k in set(held) | set(identity) if held.get(k) != identity.get(k))
    if differ:
        raise ConfigError(f"{out} holds the LM fine-tuning stage of another run (it differs in: "
                          f"{', '.join(differ)}): set lm_finetune.out to another folder, or delete {out}")


def finetune_lm(lm: LanguageModel, old_vocab: Vocab, tok, c: LMFinetuneConfig, u: ULMFiTConfig,
                data: TaskDataConfig, out: Path, config: dict) -> tuple[LanguageModel, Vocab]:
    """Stage 2: target-task LM fine-tuning on ``data``'s text (or ``c.text``) into ``out``, reused
    when that folder is complete; ``config`` (the whole run's) is written with its checkpoints.
    ``out/stage.json`` records what the stage depends on (:func:`stage_identity`): a folder that
    holds the stage of another pretrained LM, text or LM-stage setting is an error, not reused."""
    check_stage(out, stage_identity(config))
    if (out / "results.json").exists():
        log(f"reusing the fine-tuned language model in {out}")
        return load_lm(out / "best" if (out / "best").exists() else out / "last")
    lines = catalog.corpus(c.text, "train") if c.text else task_texts(data, "train", data.train)
    vocab = Vocab.build((tok(line) for line in lines), min_freq=c.min_freq, max_size=c.max_vocab)
    n_new = retarget_vocab(lm, old_vocab, vocab)
    log(f"target vocabulary {len(vocab):,} words, {n_new:,} new to the pretrained LM (mean-initialized)")
    if not c.enabled:
        return lm, vocab
    stream = encode_corpus(lines, vocab, tok)
    valid_text = lm_valid_text(c, data)
    evaluate = None
    if valid_text:
        valid = encode_corpus(valid_text, vocab, tok)
        evaluate = lambda m: {"valid_ppl": perplexity(m, LMStream(valid, c.eval_batch_size, c.bptt, variable=False))}  # noqa: E731
    pgroups = param_groups(lm_groups(lm), c.train.lr, u.decay if u.discriminative else 1.0, head=lm.decoder)
    start = time.perf_counter()
    fit(lm, LMLoss(), lambda epoch: LMStream(stream, c.batch_size, c.bptt, seed=c.train.seed, epoch=epoch),
        schedule(c.train, u), groups=pgroups, evaluate=evaluate, metric="valid_ppl" if evaluate else None,
        mode="min", out_dir=out, config=config | {"awd_lstm": to_dict(lm.encoder.cfg)},
        files={"vocab": vocab.to_dict()})
    write_json({"wall_s": time.perf_counter() - start, "tokens": len(stream)}, out / "results.json")
    return load_lm(out / "best" if (out / "best").exists() else out / "last")
