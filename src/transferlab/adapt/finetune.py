"""Fine-tuning a pretrained encoder: the ULMFiT techniques (Howard & Ruder 2018).

- Discriminative fine-tuning: each layer group gets its own learning rate, the top group ``lr``
  and each group below it ``decay`` (2.6 in the paper) times less: ``param_groups``.
- Gradual unfreezing: first only the top group trains, then one more group per epoch, going
  down: ``freeze_to`` and ``unfreeze_schedule``.
- Chain-thaw (Felbo et al. 2017, DeepMoji), the alternative schedule: the new layers (the head)
  alone, then each group alone from the bottom up, then all of them together, a fixed number of
  epochs each: ``chain_thaw_schedule`` and ``thaw``.
- Target vocabulary transfer: the pretrained embedding rows move to the target vocabulary;
  words the pretrained model never saw start from the mean embedding, as in the paper's
  released code: ``transfer_embeddings``.

All of them work over ``layer_groups()`` (bottom to top), so they apply to every encoder.
"""

from __future__ import annotations

import torch
from torch import nn


def param_groups(groups: list[nn.Module], lr: float, decay: float = 2.6,
                 head: nn.Module | None = None, names: list[str] | None = None) -> list[dict]:
    """Optimizer groups, bottom to top, with lr / decay**(depth below the top).

    ``head`` (the task head, if any) trains at ``lr`` as the topmost group. A parameter shared
    by two groups (tied embeddings) is kept in the lowest one only.
    """
    modules = list(groups) + ([head] if head is not None else [])
    seen: set[int] = set()
    out = []
    for i, module in enumerate(modules):
        params = [p for p in module.parameters() if id(p) not in seen]
        seen.update(id(p) for p in params)
        depth = len(modules) - 1 - i
        name = names[i] if names and i < len(names) else ("head" if module is head else f"group{i}")
        out.append({"params": params, "lr": lr / decay**depth, "name": name})
    return out


def freeze_to(groups: list[nn.Module], n: int) -> None:
    """Train only the top ``n`` groups (``n >= len(groups)`` unfreezes everything)."""
    cut = max(len(groups) - n, 0)
    for i, module in enumerate(groups):
        for p in module.parameters():
            p.requires_grad_(i >= cut)


def unfreeze_schedule(epoch: int, n_groups: int, enabled: bool = True) -> int:
    """How many groups (counted from the top) train in ``epoch``: one at first, one more per epoch."""
    return min(epoch + 1, n_groups) if enabled else n_groups


def chain_thaw_stages(n_groups: int) -> int:
    """Chain-thaw's stages over ``n_groups`` groups (the head last): the head, each group below
    it, then all of them."""
    return n_groups + 1


def chain_thaw_schedule(epoch: int, n_groups: int, epochs_per_stage: int = 1) -> list[int]:
    """Which of ``n_groups`` groups (bottom to top, the new layers, the head, last) train in
    ``epoch`` under chain-thaw (Felbo et al. 2017, section 3.3): the head alone, then each
    other group alone from the first (bottom) up, then all of them, ``epochs_per_stage`` each."""
    stage = epoch // epochs_per_stage
    if stage == 0:
        return [n_groups - 1]
    if stage < n_groups:
        return [stage - 1]
    return list(range(n_groups))


def thaw(groups: list[nn.Module], which: list[int]) -> None:
    """Train the groups at the indices ``which`` and freeze the others (a parameter shared by a
    trained and a frozen group trains)."""
    trained = {id(p) for i in which for p in groups[i].parameters()}
    for module in groups:
        for p in module.parameters():
            p.requires_grad_(id(p) in trained)


def transfer_embeddings(old_weight: torch.Tensor, old_itos: list[str], new_itos: list[str]
                        ) -> tuple[torch.Tensor, int]:
    """Rows of ``old_weight`` re-ordered for ``new_itos``; unseen words get the mean row.

    Returns the new (V_new, D) matrix and how many words were new to the pretrained model.
    """
    old_index = {w: i for i, w in enumerate(old_itos)}
    mean = old_weight.mean(dim=0)
    new = mean.expand(len(new_itos), -1).clone()  # (V_new, D)
    known_new = [i for i, w in enumerate(new_itos) if w in old_index]
    known_old = [old_index[new_itos[i]] for i in known_new]
    if known_new:
        new[torch.tensor(known_new)] = old_weight[torch.tensor(known_old)]
    return new, len(new_itos) - len(known_new)
