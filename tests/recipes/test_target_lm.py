"""Target-task LM fine-tuning for Transformers: on a tiny Transformer (masked and causal) and a tiny
random Hugging Face BERT the stage runs, changes the encoder's weights, starts from the pretrained
LM head, and its folder is reused for the same stage and refused for another."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
import torch

from transferlab import cli
from transferlab.checkpoint import load_checkpoint, save_checkpoint
from transferlab.config import ConfigError, to_dict
from transferlab.data.tasks import TaskDataConfig
from transferlab.encoders import backbone as bb
from transferlab.encoders.transformer import Transformer, TransformerConfig
from transferlab.pretrain.lm import LanguageModel
from transferlab.pretrain.mlm import MaskedLM
from transferlab.recipes import target_lm
from transferlab.recipes.finetune import FinetuneConfig
from transferlab.recipes.target_lm import finetune_encoder_lm
from transferlab.recipes.ulmfit import LMFinetuneConfig
from transferlab.text.subword import train_tokenizer
from transferlab.train import TrainConfig

WORDS = "good great fun loved fine bad awful boring dull waste the a movie film plot was it".split()


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """A toy task file and tiny `pretrain mlm` and `pretrain clm`-shaped checkpoints on its text."""
    d = tmp_path_factory.mktemp("target-lm")
    rng = random.Random(0)
    texts = [" ".join(rng.choice(WORDS) for _ in range(8)) for _ in range(48)]
    (d / "train.tsv").write_text("text\tlabel\n" + "".join(f"{t}\t{i % 2}\n" for i, t in enumerate(texts)),
                                 encoding="utf-8")
    tok = train_tokenizer(texts, "wordpiece", 120, 1, lower=True)
    for causal in (False, True):
        cfg = TransformerConfig(vocab_size=tok.vocab_size, dim=32, n_layers=2, n_heads=2, ffn_dim=64, max_len=32,
                                pad_id=tok.pad_id, causal=causal)
        torch.manual_seed(0)
        lm = LanguageModel(Transformer(cfg), tok.vocab_size) if causal else \
            MaskedLM(Transformer(cfg), tok.vocab_size, nsp=False)
        save_checkpoint(d / ("clm" if causal else "mlm"), lm, config={"transformer": to_dict(cfg)},
                        files={"tokenizer": tok.to_dict()})
    return d


def _stage(data: Path, ckpt: str, out: Path, lr: float = 1e-3):
    """The stage on a fresh backbone of ``ckpt``: (the backbone before, the adapted one)."""
    cfg = FinetuneConfig(encoder="transformer", pretrained=ckpt,
                         data=TaskDataConfig(task="", train=str(data / "train.tsv")),
                         lm_finetune=LMFinetuneConfig(batch_size=8, train=TrainConfig(lr=lr, steps=4, progress=False)))
    b = bb.transformer_backbone(TransformerConfig(), bb.SubwordConfig(), ckpt, (), True, 24)
    before = {k: v.clone() for k, v in b.encoder.state_dict().items()}
    return before, finetune_encoder_lm(b, cfg.lm_finetune, cfg.ulmfit, cfg.data, out, to_dict(cfg))


@pytest.mark.parametrize("objective", ["mlm", "clm"])
def test_the_stage_adapts_the_encoder_and_its_folder_is_reused_only_for_the_same_stage(data, tmp_path, objective,
                                                                                         monkeypatch):
    ckpt, out = str(data / objective), tmp_path / "stage"
    before, adapted = _stage(data, ckpt, out)
    after = adapted.encoder.state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)  # the encoder trained
    done = json.loads((out / "results.json").read_text())
    assert done["steps"] == 4 and done["objective"] == ("causal LM" if objective == "clm" else "masked LM")
    held = json.loads((out / "stage.json").read_text())
    assert len(held["encoder"]) == 64 and held["pretrained"] == str(Path(ckpt).resolve())
    assert "decoder.bias" in adapted.lm_head and ("transform.0.weight" in adapted.lm_head) == (objective == "mlm")

    monkeypatch.setattr(target_lm, "fit", lambda *a, **k: pytest.fail("the stage trained again"))
    _, again = _stage(data, ckpt, out)  # the same stage: reused, the same weights
    assert all(torch.equal(after[k], v) for k, v in again.encoder.state_dict().items())
    with pytest.raises(ConfigError, match="differs in: lm_finetune"):
        _stage(data, ckpt, out, lr=2e-3)
    shutil.copytree(data / objective, tmp_path / "copy")
    with pytest.raises(ConfigError, match="differs in: pretrained"):  # another path: another pretrained model
        _stage(data, str(tmp_path / "copy"), out)


def test_the_stage_starts_from_the_pretrained_head(data, tmp_path):
    b = bb.transformer_backbone(TransformerConfig(), bb.SubwordConfig(), str(data / "mlm"), (), True, 24)
    saved = load_checkpoint(data / "mlm").weights
    assert set(b.lm_head) == {"transform.0.weight", "transform.0.bias", "transform.2.weight", "transform.2.bias",
                              "decoder.bias"}
    model = target_lm.lm_model(b)
    assert all(torch.equal(model.state_dict()[k], saved[k]) for k in b.lm_head)


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory, make_tiny_bert) -> Path:
    """A random 2-layer BERT of hidden size 32 with an MLM head and minilm-l6's WordPiece vocabulary."""
    return make_tiny_bert(tmp_path_factory.mktemp("hf") / "tiny-bert", "BertForMaskedLM")


def test_a_hugging_face_bert_goes_through_the_stage_with_its_own_mlm_head(data, tiny_bert, tmp_path):
    from transferlab.encoders.hf import load_pretrained, read_hf_weights

    p = load_pretrained(str(tiny_bert))
    hf = read_hf_weights(tiny_bert)
    assert torch.equal(p.lm_head["transform.0.weight"], hf["cls.predictions.transform.dense.weight"])
    assert torch.equal(p.lm_head["decoder.bias"], hf["cls.predictions.bias"])
    out = tmp_path / "clf"
    assert cli.main(["finetune", "--train", str(data / "train.tsv"), "--encoder", str(tiny_bert), "--out", str(out),
                     "--data.max_len=24", "--train.epochs=1", "--train.progress=false", "--lm_finetune.enabled=true",
                     "--lm_finetune.train.steps=3", "--lm_finetune.batch_size=8", "--lm_finetune.train.lr=1e-3",
                     "--lm_finetune.train.progress=false"]) == 0
    stage = json.loads((out / "lm" / "results.json").read_text())
    assert stage["objective"] == "masked LM" and stage["steps"] == 3
    tuned = load_checkpoint(out / "lm" / "last").weights
    original = p.encoder.state_dict()
    assert any(not torch.equal(tuned[f"encoder.{k}"], v) for k, v in original.items())
    assert json.loads((out / "results.json").read_text())["steps"] > 0


def test_our_masked_lm_gives_bert_for_masked_lms_logits_and_loss(tiny_bert):
    """Parity of BERT's pretraining objective: the same weights (a random BertForMaskedLM, read by
    name into our Transformer and MLM head) give the same vocabulary logits and MLM loss."""
    from transformers import BertForMaskedLM

    from transferlab.encoders.hf import load_pretrained
    from transferlab.pretrain.mlm import mask_tokens, mlm_loss

    ours = target_lm.lm_model(load_pretrained(str(tiny_bert))).eval()
    hf = BertForMaskedLM.from_pretrained(tiny_bert).eval()
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1000, 5000, (3, 16), generator=g)
    mask = torch.ones_like(ids, dtype=torch.bool)
    mask[1, 11:] = False  # padding in one row
    inputs, labels = mask_tokens(ids, ~mask, mask_id=103, vocab_size=30522, generator=g)
    with torch.no_grad():
        logits, _ = ours(inputs, mask, torch.zeros_like(ids))
        out = hf(input_ids=inputs, attention_mask=mask.long(), token_type_ids=torch.zeros_like(ids), labels=labels)
        loss = mlm_loss(ours, {"ids": inputs, "mask": mask, "type_ids": torch.zeros_like(ids), "labels": labels})
    assert torch.allclose(logits[mask], out.logits[mask], atol=1e-4)
    assert (labels != -100).sum() > 0 and float(loss) == pytest.approx(float(out.loss), abs=1e-5)


def test_a_pretrained_transformer_keeps_its_shape_but_takes_the_runs_dropout(data):
    """A checkpoint pretrained without dropout (as Geiping & Goldstein's budgeted BERT) is
    fine-tuned with the run's rates; its width, depth and vocabulary stay the checkpoint's."""
    b = bb.transformer_backbone(TransformerConfig(dim=512, dropout=0.0, attn_dropout=0.05), bb.SubwordConfig(),
                                str(data / "mlm"), (), True, 24)
    assert (b.encoder.cfg.dim, b.encoder.cfg.n_layers) == (32, 2)
    assert (b.encoder.cfg.dropout, b.encoder.cfg.attn_dropout) == (0.0, 0.05)
    assert b.files["encoder"]["config"]["attn_dropout"] == 0.05
