"""``transferlab generate`` end to end: a tiny ``pretrain clm`` checkpoint, a tiny ``pretrain lm``
AWD-LSTM and a tiny random Hugging Face GPT-2 saved to a folder continue prompts through the CLI;
greedy output matches the model's own decoding, the cache and the seed behave, and models that
cannot continue text are refused."""

from __future__ import annotations

import json

import pytest
import torch

from transferlab import cli
from transferlab.recipes.generate import load_generator
from transferlab.tasks.generate import LMGenerateConfig

LINES = [f"the {a} {b} was {c} and the {b} {d}" for a, b, c, d in
         zip(["old", "young", "tall", "kind"] * 40, ["king", "queen", "lord", "fool"] * 40,
             ["sad", "glad", "wise", "mad"] * 40, ["slept", "spoke", "wept", "laughed"] * 40)]


@pytest.fixture(scope="module")
def clm(tmp_path_factory):
    d = tmp_path_factory.mktemp("generate")
    (d / "corpus.txt").write_text("\n".join(LINES) + "\n", encoding="utf-8")
    out = d / "clm"
    assert cli.main(["pretrain", "clm", "--corpus", str(d / "corpus.txt"), "--preset", "tiny", "--out", str(out),
                     "--data.valid_split=train", "--train.steps=10", "--train.progress=false"]) == 0
    return out


@pytest.fixture(scope="module")
def gpt2_folder(tmp_path_factory):
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(LINES, trainers.BpeTrainer(vocab_size=300, special_tokens=["<|endoftext|>"],
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    eos = tok.token_to_id("<|endoftext|>")
    folder = tmp_path_factory.mktemp("gpt2") / "tiny-gpt2"
    transformers.PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>",
                                         bos_token="<|endoftext|>").save_pretrained(folder)
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=tok.get_vocab_size(), n_positions=64, n_embd=32, n_layer=2, n_head=4,
                                     bos_token_id=eos, eos_token_id=eos)
    transformers.GPT2LMHeadModel(config).save_pretrained(folder)
    return folder


def _generate(capsys, *args) -> list[str]:
    capsys.readouterr()
    assert cli.main(["generate", *args]) == 0
    return capsys.readouterr().out.splitlines()


def test_generate_from_a_pretrain_clm_checkpoint(clm, capsys):
    prompts = ["the old king", "the queen was"]
    greedy = _generate(capsys, "--model", str(clm / "best"), *prompts, "--temperature", "0", "--max-new-tokens", "8",
                       "--json")
    rows = [json.loads(line) for line in greedy]
    assert [r["prompt"] for r in rows] == prompts
    gen = load_generator(str(clm))  # the run folder: its best checkpoint
    cfg = LMGenerateConfig(max_new_tokens=8, temperature=0.0)
    assert [r["continuation"] for r in rows] == gen.continue_texts(prompts, cfg)
    assert any(r["continuation"].strip() for r in rows)
    # greedy by hand: the argmax of the full model (decoder on the top layer) after [eos] + prompt
    ids = gen.prompt_ids(prompts[0])
    model = gen.lm.model
    new = []
    with torch.no_grad():
        for _ in range(8):
            logits, _ = model(torch.tensor([ids + new]))
            new.append(int(logits[0, -1].argmax()))
            if new[-1] == gen.eos:
                new.pop()
                break
    assert rows[0]["continuation"] == gen.continuation(ids, new)
    # the cache changes no token; a seed repeats its sample and another seed differs
    assert _generate(capsys, "--model", str(clm), *prompts, "--temperature", "0", "--max-new-tokens", "8", "--json",
                     "--no-cache") == greedy
    sample = ["--model", str(clm), *prompts, "--max-new-tokens", "12", "--top-k", "50", "--top-p", "0.95", "--json"]
    first = _generate(capsys, *sample, "--seed", "1")
    assert _generate(capsys, *sample, "--seed", "1") == first
    assert _generate(capsys, *sample, "--seed", "2", "--no-cache") != first
    plain = _generate(capsys, "--model", str(clm), *prompts, "--beam", "3", "--max-new-tokens", "6")
    assert len(plain) == 2


@pytest.fixture(scope="module")
def awd_lm(tmp_path_factory):
    d = tmp_path_factory.mktemp("generate-lm")
    (d / "corpus.txt").write_text("\n".join(LINES * 3) + "\n", encoding="utf-8")
    out = d / "lm"
    assert cli.main(["pretrain", "lm", "--corpus", str(d / "corpus.txt"), "--preset", "tiny", "--out", str(out),
                     "--train.steps=30", "--train.progress=false", "--lm.samples=0"]) == 0
    return out


def test_generate_from_a_pretrain_lm_checkpoint(awd_lm, capsys):
    prompts = ["The old King", "the queen was"]
    rows = [json.loads(line) for line in _generate(capsys, "--model", str(awd_lm), *prompts, "--temperature", "0",
                                                   "--max-new-tokens", "8", "--json")]
    assert [r["prompt"] for r in rows] == prompts
    gen = load_generator(str(awd_lm / "best"))
    assert gen.prompt_ids(prompts[0]) == gen.prompt_ids("the old king")  # read lower-cased, as its corpus was
    # greedy by hand: the full LM over [eos] + prompt + the tokens so far, no state carried
    ids, new = gen.prompt_ids(prompts[1]), []
    with torch.no_grad():
        for _ in range(8):
            logits, _ = gen.lm.model(torch.tensor([ids + new]))
            logits[0, -1, gen.tokenizer.vocab.unk_id] = -float("inf")  # never <unk>
            new.append(int(logits[0, -1].argmax()))
            if new[-1] == gen.eos:
                new.pop()
                break
    assert rows[1]["continuation"] == gen.continuation(ids, new)
    unk = gen.tokenizer.vocab.unk_id
    assert gen.lm.logits(torch.tensor([ids]), None, False)[0][0, unk] == -float("inf")
    assert set(rows[1]["continuation"].split()) <= set(" ".join(LINES).split())  # words of its vocabulary
    # the LSTM state as the cache changes no token, in greedy decoding and in a beam (whose rows it reorders)
    for extra in (["--temperature", "0"], ["--beam", "3"]):
        args = ["--model", str(awd_lm), *prompts, "--max-new-tokens", "8", "--json", *extra]
        assert _generate(capsys, *args) == _generate(capsys, *args, "--no-cache")
    sample = ["--model", str(awd_lm), *prompts, "--max-new-tokens", "10", "--top-k", "20"]
    assert _generate(capsys, *sample, "--seed", "1") == _generate(capsys, *sample, "--seed", "1", "--no-cache")


def test_generate_from_a_hugging_face_gpt2_folder(gpt2_folder, capsys):
    transformers = pytest.importorskip("transformers")
    prompts = ["the old king", "the kind fool was mad and"]
    rows = [json.loads(line) for line in _generate(capsys, "--model", str(gpt2_folder), *prompts, "--temperature", "0",
                                                   "--max-new-tokens", "6", "--json")]
    hf = transformers.AutoModelForCausalLM.from_pretrained(gpt2_folder).eval()
    tok = transformers.AutoTokenizer.from_pretrained(gpt2_folder)
    eos = hf.config.eos_token_id
    for prompt, row in zip(prompts, rows):
        ids = torch.tensor([tok(prompt)["input_ids"]])
        out = hf.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=6, do_sample=False,
                          pad_token_id=eos)[0, ids.size(1):].tolist()
        out = out[: out.index(eos)] if eos in out else out
        full = tok.decode(ids[0].tolist() + out)
        assert row["continuation"] == full[len(tok.decode(ids[0].tolist())):]
    assert _generate(capsys, "--model", str(gpt2_folder), *prompts, "--temperature", "0", "--max-new-tokens", "6",
                     "--json", "--no-cache") == [json.dumps(r, ensure_ascii=False) for r in rows]
    sampled = _generate(capsys, "--model", str(gpt2_folder), "", "--max-new-tokens", "5", "--seed", "3")
    assert len(sampled) == 1  # an empty prompt starts from the model's start token


def test_models_that_cannot_continue_text_are_refused(tmp_path, capsys):
    transformers = pytest.importorskip("transformers")
    bert = transformers.BertConfig(vocab_size=30, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                   intermediate_size=16)
    transformers.BertModel(bert).save_pretrained(tmp_path)
    with pytest.raises(SystemExit) as e:
        cli.main(["generate", "--model", str(tmp_path), "hello"])
    assert e.value.code == 1 and "not a causal" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        cli.main(["generate", "--model", str(tmp_path), "hello", "--top-p", "0"])
    assert e.value.code == 1 and "--top-p" in capsys.readouterr().err


def test_checkpoints_that_are_not_language_models_are_refused(tmp_path, capsys):
    (tmp_path / "train.tsv").write_text("text\tlabel\n" + "".join(f"{line}\t{i % 2}\n" for i, line in
                                                                      enumerate(LINES[:40])), encoding="utf-8")
    out = tmp_path / "clf"
    assert cli.main(["finetune", "--train", str(tmp_path / "train.tsv"), "--preset", "tiny", "--out", str(out),
                     "--train.epochs=1", "--train.progress=false"]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        cli.main(["generate", "--model", str(out / "last"), "hello"])
    assert e.value.code == 1 and "a fine-tuned task model" in capsys.readouterr().err
