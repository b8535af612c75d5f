import torch

from transferlab.data.batching import pad_batch
from transferlab.encoders.transformer import Transformer, TransformerConfig
from transferlab.tasks.choice import ChoiceModel, choice_loss
from transferlab.text.framing import Framing

from helpers import overfit


def test_options_are_scored_and_softmaxed_per_question_and_it_learns():
    torch.manual_seed(0)
    enc = Transformer(TransformerConfig(vocab_size=40, dim=32, n_layers=2, n_heads=2, ffn_dim=64, max_len=16,
                                        causal=True, norm="pre", embed_norm=False, type_vocab_size=0,
                                        dropout=0.0, attn_dropout=0.0))
    framing = Framing.gpt(1, 2, 3, max_len=16)
    # question q's right option repeats the context's first token; three options per question
    questions, labels = [], []
    for q in range(8):
        context = [10 + q, 20 + q % 3]
        right = q % 3
        options = [[10 + q] if k == right else [30 + (q + k) % 8] for k in range(3)]
        questions.append(framing.choices(context, options))
        labels.append(right)
    seqs = [e.ids for options in questions for e in options]
    batch = pad_batch(seqs, pad_id=0) | {"labels": torch.tensor(labels)}
    model = ChoiceModel(enc, n_options=3, dropout=0.0)
    logits = model(batch)
    assert logits.shape == (8, 3)
    first, last = overfit(model, lambda: choice_loss(model, batch), 80, lr=3e-3)
    assert last < 0.1 * first
    assert model(batch).argmax(-1).tolist() == labels
