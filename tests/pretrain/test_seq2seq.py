"""The LM-initialized seq2seq model (Ramachandran et al. 2017): the LM's weights land exactly in
encoder and decoder, padding changes nothing, step-by-step decoding equals teacher forcing, the
auxiliary LM loss is what it says, and a few SQuAD questions are learned by heart."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from transferlab import IGNORE_INDEX
from transferlab.config import ConfigError
from transferlab.encoders.awd_lstm import AWDLSTMConfig
from transferlab.pretrain.lm import build_lm
from transferlab.pretrain.mt import Parallel
from transferlab.pretrain.seq2seq import LMSeq2Seq, Seq2SeqConfig, Seq2SeqLoss, init_from_lm
from transferlab.tasks.generate import beam_search, greedy_decode

from helpers import overfit

V = 99
NO_DROPOUT = dict(embed_p=0.0, input_p=0.0, hidden_p=0.0, weight_p=0.0, output_p=0.0)


def awd(**kw) -> AWDLSTMConfig:
    return AWDLSTMConfig(**({"vocab_size": V, "dim": 16, "hidden_dim": 24, "n_layers": 2} | NO_DROPOUT | kw))


def batch_of(src: list[list[int]], tgt: list[list[int]], eos: int = 3) -> dict[str, torch.Tensor]:
    from transferlab.pretrain.mt import ParallelBatches

    return next(iter(ParallelBatches(Parallel(src, tgt), len(src), src_pad=0, tgt_pad=0, bos=eos, eos=eos,
                                     shuffle=False)))


def randomized(model: LMSeq2Seq) -> LMSeq2Seq:
    """Non-zero bridges (they start at zero), so the encoder's last states matter."""
    torch.manual_seed(1)
    with torch.no_grad():
        for p in model.bridges.parameters():
            p.normal_(0, 0.3)
    return model.eval()


@pytest.mark.parametrize("share", [True, False])
def test_lm_init_copies_the_lm_into_encoder_and_decoder(share):
    torch.manual_seed(0)
    lm = build_lm(awd(), V)
    with torch.no_grad():
        lm.decoder.bias.normal_()
    model = init_from_lm(LMSeq2Seq(awd(), Seq2SeqConfig(share_embeddings=share)), lm)
    lm_weights = lm.encoder.state_dict()
    for side in (model.encoder, model.decoder):
        weights = side.state_dict()
        assert weights.keys() == lm_weights.keys()
        for k, t in lm_weights.items():
            assert torch.equal(weights[k], t), k
            assert weights[k].data_ptr() != t.data_ptr()  # copies, not the LM's own tensors
    assert torch.equal(model.out.bias, lm.decoder.bias) and model.out.weight is model.decoder.embedding.weight
    assert (model.encoder.embedding.weight is model.decoder.embedding.weight) == share
    # the bridge starts at zero: the decoder's LSTM reads the target exactly as the LM reads a line
    b = batch_of([[5, 6, 7], [8, 9]], [[10, 11], [12, 13, 14]])
    model.eval(), lm.eval()
    _, h = model.features(b["ids"], b["mask"], b["tgt_in"])
    assert torch.allclose(h, lm.encoder(b["tgt_in"]).hidden, atol=1e-6)


def test_lm_init_refuses_another_shape():
    with pytest.raises(ValueError, match="awd_lstm.hidden_dim"):
        init_from_lm(LMSeq2Seq(awd(hidden_dim=20)), build_lm(awd(), V))


@pytest.mark.parametrize("attention", ["dot", "general"])
def test_padding_changes_nothing(attention):
    torch.manual_seed(0)
    model = randomized(LMSeq2Seq(awd(), Seq2SeqConfig(attention=attention)))
    src = [[5, 6, 7, 8, 9, 10], [11, 12], [13, 14, 15, 3, 16]]
    tgt = [[20, 21], [22, 23, 24, 25, 26], [27]]
    b = batch_of(src, tgt)
    loss = Seq2SeqLoss()
    together = model(b["ids"], b["mask"], b["tgt_in"])  # (3, T, V)
    sums, count = 0.0, 0
    for row, i in enumerate(b["index"].tolist()):
        alone = batch_of([src[i]], [tgt[i]])
        logits = model(alone["ids"], alone["mask"], alone["tgt_in"])  # (1, T_i, V)
        n = len(tgt[i]) + 1
        assert torch.allclose(together[row, :n], logits[0], atol=1e-5)
        sums += float(loss(model, alone).detach()) * n
        count += n
    assert float(loss(model, b).detach()) == pytest.approx(sums / count, rel=1e-5)


def test_step_by_step_decoding_equals_teacher_forcing():
    torch.manual_seed(0)
    model = randomized(LMSeq2Seq(awd()))
    b = batch_of([[5, 6, 7, 8], [9, 10]], [[11, 12, 13], [14, 15, 16]])
    forced = model(b["ids"], b["mask"], b["tgt_in"]).log_softmax(-1)  # (2, 4, V)
    state = model.start(b["ids"], b["mask"])
    for t in range(b["tgt_in"].size(1)):
        logp, state = model.step(b["tgt_in"][:, t], state)
        assert torch.allclose(logp, forced[:, t], atol=1e-5)


@torch.no_grad()
def test_aux_lm_adds_the_decoders_own_next_word_loss():
    torch.manual_seed(0)
    model = randomized(LMSeq2Seq(awd()))
    b = batch_of([[5, 6, 7], [8, 9]], [[10, 11], [12, 13, 14]])
    feats, h = model.features(b["ids"], b["mask"], b["tgt_in"])
    labels = b["labels"].flatten()
    main = F.cross_entropy(model.out(feats).flatten(0, 1), labels, ignore_index=IGNORE_INDEX)
    lm = F.cross_entropy(model.out(h).flatten(0, 1), labels, ignore_index=IGNORE_INDEX)
    assert float(Seq2SeqLoss()(model, b)) == pytest.approx(float(main), rel=1e-5)
    assert float(Seq2SeqLoss(0.5)(model, b)) == pytest.approx(float(main + 0.5 * lm), rel=1e-5)
    assert abs(float(lm) - float(main)) > 1e-3  # attention makes a difference
    with pytest.raises(ValueError, match="aux_lm"):
        Seq2SeqLoss(-1.0)


def test_config_errors_name_the_flag():
    with pytest.raises(ConfigError, match="seq2seq.attention"):
        Seq2SeqConfig(attention="concat")


def test_overfits_squad_questions(shared_data):
    """Six SQuAD (sentence, answer) -> question pairs learned by heart: greedy decoding and beam
    search give back each question exactly."""
    from transferlab.data import catalog
    from transferlab.recipes.question_gen import Words, batches, qg_examples
    from transferlab.text.tokenize import TextConfig, tokenizer
    from transferlab.text.vocab import Vocab

    examples = qg_examples([ex for _, ex in zip(range(6), catalog.load_examples("squad-v1.1", "test"))])
    tok = tokenizer(TextConfig())
    vocab = Vocab.build(tok(s) for ex in examples for s in (ex.sentence, ex.answer, ex.question))
    data = Words(vocab, TextConfig()).encode(examples)
    torch.set_num_threads(1)  # 300 steps of tiny matrices: a second thread only adds synchronization
    torch.manual_seed(0)
    model = LMSeq2Seq(awd(vocab_size=len(vocab), dim=32, hidden_dim=48))
    b = next(iter(batches(data, vocab, 8, shuffle=False)))
    loss = Seq2SeqLoss()
    _, last = overfit(model, lambda: loss(model, b), 300, lr=1e-2)
    assert last < 0.05
    model.eval()
    want = [data.tgt[i] for i in b["index"].tolist()]
    assert greedy_decode(model, b["ids"], b["mask"], vocab.eos_id, vocab.eos_id, 40) == want
    assert beam_search(model, b["ids"], b["mask"], vocab.eos_id, vocab.eos_id, 3, 40) == want
