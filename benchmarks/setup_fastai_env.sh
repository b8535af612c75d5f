#!/usr/bin/env bash
# Benchmark-only virtual environment with fastai (the peer of our AWD-LSTM LM) beside
# torch 2.13.0 CPU and transferlab itself. Never part of the package's dependencies.
#
#   bash benchmarks/setup_fastai_env.sh [VENV_DIR]      (default /work/venvs/fastai)
#
# Order matters (see shared/PEERS.md):
#  1. torch==2.13.0 first, the CPU wheel from local disk, so pip never resolves a CUDA torch;
#  2. fastai with torch and torchvision pinned: fastai's `torchvision>=0.11` otherwise
#     resolves to a torchvision that pins a newer, CUDA torch (several GB);
#  3. uninstall torchvision again: the PyPI build is CUDA-only, fails to import here
#     (`operator torchvision::nms does not exist`) and breaks `from transformers import Trainer`;
#     fastai.text works without it;
#  4. transferlab itself, editable.
set -euo pipefail

VENV="${1:-/work/venvs/fastai}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
TORCH_VERSION=2.13.0
TORCHVISION_VERSION=0.28.0
WHEEL_DIR="${TORCH_WHEEL_DIR:-/opt/wheels}"

python3 -m venv "$VENV"
PY="$VENV/bin/python"
"$PY" -m pip install --upgrade pip wheel setuptools

# 1. CPU torch from local disk when the wheel is there; otherwise the CPU index only.
WHEEL="$(ls "$WHEEL_DIR"/torch-${TORCH_VERSION}+cpu-*.whl 2>/dev/null | head -n1 || true)"
if [[ -n "$WHEEL" ]]; then
    "$PY" -m pip install "$WHEEL"
else
    "$PY" -m pip install "torch==${TORCH_VERSION}" --index-url https://download.pytorch.org/whl/cpu \
        --extra-index-url https://pypi.org/simple
fi

# 2. fastai, torch and torchvision pinned together so the resolver keeps our torch.
"$PY" -m pip install fastai "torch==${TORCH_VERSION}" "torchvision==${TORCHVISION_VERSION}"
# 3. the CUDA torchvision does not import on this machine; fastai.text does not need it.
"$PY" -m pip uninstall -y torchvision

# 4. transferlab (editable).
"$PY" -m pip install -e "$REPO"

# Check: the torch is still the CPU build and fastai.text imports.
"$PY" - <<'PY'
import torch, fastai
from fastai.text.all import AWD_LSTM, get_language_model  # noqa: F401
assert torch.__version__.startswith("2.13.0"), torch.__version__
assert not torch.version.cuda, f"CUDA torch crept in: {torch.version.cuda}"
print(f"ok: torch {torch.__version__} (cpu), fastai {fastai.__version__}")
PY
