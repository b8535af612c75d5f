"""``pretrain quickthought --preset tiny`` end to end on Shakespeare: results, a checkpoint that loads
as a backbone whose sentence vector is ``[f(s); g(s)]``, and (no vocabulary expansion) words
outside the vocabulary read as ``<unk>`` without growing the embeddings."""

from __future__ import annotations

import json

import pytest
import torch

from transferlab import cli
from transferlab.config import ConfigError
from transferlab.encoders.backbone import pretrained_backbone
from transferlab.encoders.sentence_rnn import SentenceRNNConfig
from transferlab.recipes.pretrain_quickthought import PretrainQuickThoughtConfig
from transferlab.text.tokenize import TextConfig


def test_tiny_preset_end_to_end(shared_data, tmp_path):
    argv = ["pretrain", "quickthought", "--preset", "tiny", "--out", str(tmp_path / "run"), "--train.progress=false",
            "--train.threads=1"]
    assert cli.main(argv) == 0
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["steps"] == 20 and results["candidates"] == 32
    for split in ("valid", "test"):
        assert 0.0 <= results[f"{split}_next_acc"] <= 1.0 and 0.0 <= results[f"{split}_context_acc"] <= 1.0
        assert 0.0 < results[f"{split}_loss"] < 10.0

    backbone = pretrained_backbone(tmp_path / "run" / "best", TextConfig(), None)
    encoder = backbone.encoder
    rows = encoder.embedding[0].num_embeddings
    ids = backbone.texts(["the zebra qwzxvq spoke ."])[0]
    assert ids[1] == ids[2] == 1 and encoder.embedding[0].num_embeddings == rows  # <unk>, nothing added
    x = torch.tensor([ids])
    f, g = encoder.tower_sentences(x, x.ne(0))
    assert torch.equal(encoder.sentence(x), torch.cat([f, g], -1)) and encoder.sentence_dim == 64


def test_quick_thought_takes_two_towers():
    with pytest.raises(ConfigError, match="sentence_rnn.towers"):
        PretrainQuickThoughtConfig(sentence_rnn=SentenceRNNConfig(towers=1))
