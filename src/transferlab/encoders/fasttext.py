"""The fastText supervised classifier's encoder: a bag of word and word n-gram embeddings.

Joulin et al. 2017 ("Bag of Tricks for Efficient Text Classification"): a text is the average
of the embeddings of its words and of its word n-grams (bigrams by default), the n-grams hashed
into a fixed number of buckets, and a linear layer on that average is the classifier. It is the
fast baseline every transfer result should be compared with; its word embeddings can start
from pretrained vectors (``finetune --vectors``), as fastText's ``-pretrainedVectors``.

As an encoder (DESIGN.md contract): ``hidden[:, t]`` is the embedding of word ``t`` plus those of
the n-grams that start at ``t`` (n = 2..``ngrams``, all of whose words are real tokens), so a
mean over the real positions (the task head's pooling) is fastText's average up to a constant
factor, which the linear layer absorbs. The n-gram hash is fastText's
(``h = h * 116049371 + id``, modulo the bucket count), computed from the ids in ``forward``: no
tokenizer change, nothing to store but the table.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from transferlab.encoders.base import EncoderOutput

_PRIME = 116049371  # fastText's multiplier for word n-gram hashes (dictionary.cc addWordNgrams)


@dataclass(frozen=True)
class FastTextConfig:
    vocab_size: int = 0  # 0 = unset: the recipe fills it in from the vocabulary
    dim: int = 100
    ngrams: int = 2  # longest word n-gram (1: words only)
    buckets: int = 200_000  # hash buckets of the n-gram table (fastText's default is 2M)
    dropout: float = 0.0  # on the summed embeddings
    pad_id: int = 0

    def __post_init__(self):
        for name in ("dim", "ngrams", "buckets"):
            if getattr(self, name) < 1:
                raise ValueError(f"fasttext.{name} must be >= 1, got {getattr(self, name)}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"fasttext.dropout must be in [0, 1), got {self.dropout}")


def ngram_buckets(ids: torch.Tensor, mask: torch.Tensor, n: int, buckets: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Bucket ids (B, T-n+1) of the word n-grams starting at each position, and their mask."""
    t = ids.size(1) - n + 1
    h = ids[:, :t].long()
    valid = mask[:, :t].clone()
    for k in range(1, n):
        h = (h * _PRIME + ids[:, k:k + t].long()) % buckets
        valid &= mask[:, k:k + t]
    return h % buckets, valid


class FastTextEncoder(nn.Module):
    def __init__(self, cfg: FastTextConfig):
        super().__init__()
        if cfg.vocab_size < 1:
            raise ValueError("fasttext.vocab_size must be set (>= 1)")
        self.cfg = cfg
        self.dim = cfg.dim
        self.embedding = nn.Embedding(cfg.vocab_size, cfg.dim, padding_idx=cfg.pad_id)
        self.ngram_embedding = nn.Embedding(cfg.buckets, cfg.dim) if cfg.ngrams > 1 else None
        self.drop = nn.Dropout(cfg.dropout)
        # fastText's init: uniform(-1/dim, 1/dim) for the input table (the output layer starts at 0)
        bound = 1.0 / cfg.dim
        for table in (self.embedding, self.ngram_embedding):
            if table is not None:
                nn.init.uniform_(table.weight, -bound, bound)
        with torch.no_grad():
            self.embedding.weight[cfg.pad_id].zero_()

    def layer_groups(self) -> list[nn.Module]:
        groups: list[nn.Module] = [self.embedding]
        return groups + ([self.ngram_embedding] if self.ngram_embedding is not None else [])

    def forward(self, ids: torch.Tensor, mask: torch.Tensor | None = None) -> EncoderOutput:
        if mask is None:
            mask = ids != self.cfg.pad_id
        hidden = self.embedding(ids)  # (B,T,D)
        if self.ngram_embedding is not None:
            for n in range(2, self.cfg.ngrams + 1):
                if ids.size(1) < n:
                    break
                h, valid = ngram_buckets(ids, mask, n, self.cfg.buckets)  # (B,T-n+1)
                grams = self.ngram_embedding(h) * valid.unsqueeze(-1)  # (B,T-n+1,D)
                hidden = hidden + nn.functional.pad(grams, (0, 0, 0, n - 1))  # (B,T,D)
        hidden = self.drop(hidden * mask.unsqueeze(-1))
        return EncoderOutput(hidden, [hidden])
