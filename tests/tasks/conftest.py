"""A context-free encoder (an embedding per token) for the heads' learning tests."""

import pytest
from torch import nn

from transferlab.encoders.base import EncoderOutput


class BagEncoder(nn.Module):
    def __init__(self, vocab=30, dim=16):
        super().__init__()
        self.embedding, self.dim = nn.Embedding(vocab, dim), dim

    def forward(self, ids, mask=None):
        h = self.embedding(ids)
        return EncoderOutput(hidden=h, layers=[h])

    def layer_groups(self):
        return [self.embedding]


@pytest.fixture
def bag_encoder():
    return BagEncoder
