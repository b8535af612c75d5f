"""Is our masked LM's slow start ours, or BERT's at this size and budget? Hugging Face's
``BertForMaskedLM`` (its own initialisation) masked by its ``DataCollatorForLanguageModeling``
and trained on the same packed windows with the same optimizer, schedule and precision as a
``transferlab pretrain mlm`` run, its validation MLM loss beside the run's own at the same steps.

    transferlab pretrain mlm --budget 1h --out runs/bench/mlm-1h --train.threads=1
    TRANSFERLAB_DATA=../shared .venv/bin/python benchmarks/mlm_vs_hf.py --run runs/bench/mlm-1h \\
        [--steps 1000] [--threads 1]

The run folder gives everything the peer needs: its tokenizer (the WordPiece the run trained, so
both models see the same pieces), its corpus and its ``[transformer]``/``[train]`` settings
(layers, width, heads, dropout; AdamW's rate, betas and weight decay, linear decay after the
warm-up over the run's total steps, gradient clipping, bf16 autocast, batch size). The peer runs
``--steps`` of those steps (its schedule is the run's whole one, so step 1,000 of both saw the
same rates) and is scored every ``eval_every`` of the run on the run's validation windows, masked
by its own collator with a fixed seed. What differs is only what Hugging Face does its own way:
initialisation, masking, the optimizer's parameter groups (no decay on biases and layer norms).
The peer scores the vocabulary only at the masked positions, as ours does (the same loss as
``BertForMaskedLM(labels=...)``, a third of the step's cost saved).

Figures (``results/mlm_vs_hf.json``): ``ours_valid_mlm_loss_<step>`` and ``hf_valid_mlm_loss_<step>``
at every evaluated step both have, and ``hf_tokens_per_s``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).parent))
from common import write_result  # noqa: E402

from transferlab.checkpoint import load_checkpoint  # noqa: E402
from transferlab.data import catalog  # noqa: E402
from transferlab.pretrain.mlm import packed_windows, token_stream  # noqa: E402
from transferlab.schedules import warmup_steps  # noqa: E402
from transferlab.text.subword import SubwordTokenizer  # noqa: E402


def hf_tokenizer(tok: SubwordTokenizer):
    """Our WordPiece as a ``PreTrainedTokenizerFast``: what the collator asks for its mask id,
    vocabulary size and special tokens."""
    from transformers import PreTrainedTokenizerFast

    roles = {"pad": "pad_token", "unk": "unk_token", "cls": "cls_token", "sep": "sep_token", "mask": "mask_token"}
    return PreTrainedTokenizerFast(tokenizer_object=tok.tokenizer,
                                   **{roles[r]: t for r, t in tok.specials.items() if r in roles})


def batches(windows: list[list[int]], size: int, pad: int, generator: torch.Generator | None):
    """Padded ``(B, T)`` id tensors and their attention masks; shuffled and without a short last
    batch when ``generator`` is given (training), else in order (validation)."""
    order = torch.randperm(len(windows), generator=generator).tolist() if generator else list(range(len(windows)))
    stop = len(order) - len(order) % size if generator else len(order)
    for i in range(0, stop, size):
        rows = [windows[j] for j in order[i:i + size]]
        width = max(map(len, rows))
        ids = torch.full((len(rows), width), pad, dtype=torch.long)
        for r, w in enumerate(rows):
            ids[r, :len(w)] = torch.tensor(w)
        yield ids, ids != pad


def masked_loss(model, collator, ids: torch.Tensor, attention: torch.Tensor, bf16: bool) -> torch.Tensor:
    """BertForMaskedLM's loss on the collator's corruption of ``ids``, the vocabulary scored only
    where a label is."""
    special = torch.tensor([collator.tokenizer.get_special_tokens_mask(r, already_has_special_tokens=True)
                            for r in ids.tolist()], dtype=torch.bool)
    inputs, labels = collator.torch_mask_tokens(ids.clone(), special_tokens_mask=special)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        hidden = model.bert(input_ids=inputs, attention_mask=attention.long()).last_hidden_state
        select = labels != -100
        logits = model.cls(hidden[select])
    return F.cross_entropy(logits.float(), labels[select])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", required=True, help="a `transferlab pretrain mlm` run folder (its last checkpoint)")
    ap.add_argument("--steps", type=int, default=1000, help="the peer's training steps (of the run's schedule)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--record", default="mlm_vs_hf", help="the results/NAME.json to write")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    from transformers import BertConfig, BertForMaskedLM, DataCollatorForLanguageModeling, \
        get_linear_schedule_with_warmup

    run = Path(args.run)
    saved = load_checkpoint(run / "last", json_only=True)
    cfg = saved.config
    if cfg.get("objective", "mlm") != "mlm" or cfg["mlm"].get("nsp"):
        sys.exit(f"{run}: this comparison is for a packed-window MLM run without NSP")
    tok = SubwordTokenizer.from_dict(saved.files["tokenizer"])
    t, tr, data = cfg["transformer"], cfg["train"], cfg["data"]
    width = t["max_len"]
    print(f"encoding {data['corpus']} with the run's tokenizer ({tok.vocab_size:,} pieces)", flush=True)
    windows = {s: packed_windows(token_stream(catalog.corpus(data["corpus"], s), tok, tok.ids["sep"]), width,
                                 tok.ids["cls"], tok.ids["sep"]) for s in ("train", data["valid_split"])}

    torch.manual_seed(tr["seed"])
    model = BertForMaskedLM(BertConfig(
        vocab_size=tok.vocab_size, hidden_size=t["dim"], num_hidden_layers=t["n_layers"],
        num_attention_heads=t["n_heads"], intermediate_size=t["ffn_dim"], max_position_embeddings=width,
        hidden_dropout_prob=t["dropout"], attention_probs_dropout_prob=t["attn_dropout"],
        pad_token_id=tok.pad_id, layer_norm_eps=1e-12))
    collator = DataCollatorForLanguageModeling(hf_tokenizer(tok), mlm_probability=cfg["mlm"]["p"])
    decay = [p for n, p in model.named_parameters() if not (n.endswith("bias") or "LayerNorm" in n)]
    rest = [p for n, p in model.named_parameters() if n.endswith("bias") or "LayerNorm" in n]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": tr["weight_decay"]},
                             {"params": rest, "weight_decay": 0.0}],
                            lr=tr["lr"], betas=(tr["beta1"], tr["beta2"]), fused=True)
    sched = get_linear_schedule_with_warmup(opt, warmup_steps(tr["warmup"], tr["steps"]), tr["steps"])
    bf16 = tr["precision"] in ("bf16", "auto")

    def evaluate() -> float:
        total, n = 0.0, 0
        model.eval()
        with torch.no_grad(), torch.random.fork_rng():
            torch.manual_seed(0)  # the same corruption of the validation windows at every evaluation
            for ids, att in batches(windows[data["valid_split"]], 64, tok.pad_id, None):
                total, n = total + float(masked_loss(model, collator, ids, att, bf16)), n + 1
        model.train()
        return total / n

    hf: dict[int, float] = {}
    g = torch.Generator().manual_seed(tr["seed"])
    step, tokens, start = 0, 0, time.perf_counter()
    bar = tqdm(total=args.steps, desc="BertForMaskedLM", unit="step")
    model.train()
    while step < args.steps:
        for ids, att in batches(windows["train"], data["batch_size"], tok.pad_id, g):
            loss = masked_loss(model, collator, ids, att, bf16)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), tr["clip"])
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
            step, tokens = step + 1, tokens + int(att.sum())
            bar.update(1)
            bar.set_postfix(loss=f"{float(loss):.3f}")
            if step % tr["eval_every"] == 0 or step == args.steps:
                hf[step] = evaluate()
                bar.write(f"step {step}: validation MLM loss {hf[step]:.4f}")
            if step == args.steps:
                break
    bar.close()
    wall = time.perf_counter() - start

    ours = {}
    for line in (run / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        if "eval/valid_mlm_loss" in row:
            ours[row["step"]] = row["eval/valid_mlm_loss"]
    figures = {"hf_tokens_per_s": tokens / wall}
    print("| step | ours | BertForMaskedLM | ours - HF |\n|---|---|---|---|")
    for s in sorted(hf):
        figures[f"hf_valid_mlm_loss_{s}"] = hf[s]
        if s in ours:
            figures[f"ours_valid_mlm_loss_{s}"] = ours[s]
            print(f"| {s} | {ours[s]:.4f} | {hf[s]:.4f} | {ours[s] - hf[s]:+.4f} |")
        else:
            print(f"| {s} | (not in {run}/metrics.jsonl) | {hf[s]:.4f} | |")
    write_result(args.record, figures, run=str(run), steps=args.steps, wall_s=wall, batch_size=data["batch_size"],
                 corpus=data["corpus"], train=tr, transformer=t)


if __name__ == "__main__":
    main()
