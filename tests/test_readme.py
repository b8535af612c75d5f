"""The README's examples run: every ```sh block line by line, every ```python block as a script.

```bash blocks are the set-up commands (`make demo`, `make test`: this test runs inside the
latter) and the torchrun example (covered by tests/test_distributed.py); they are not run here.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)


def blocks(lang: str) -> list[str]:
    return [body for kind, body in BLOCK.findall((ROOT / "README.md").read_text()) if kind == lang]


def test_readme_has_the_two_setup_commands():
    setup = blocks("bash")[0]
    assert [line.split("#")[0].strip() for line in setup.strip().splitlines()] == ["make demo", "make test"]


def test_readme_shell_examples(tmp_path):
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    for block in blocks("sh"):
        for line in block.strip().splitlines():
            result = subprocess.run(line, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True,
                                    timeout=600)
            assert result.returncode == 0, f"{line}\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
    preds = subprocess.run("transferlab predict --model runs/readme-clf/last 'great'", shell=True, cwd=tmp_path,
                           env=env, capture_output=True, text=True)
    assert '"label"' in preds.stdout and '"probabilities"' in preds.stdout


def test_readme_python_examples(tmp_path):
    for block in blocks("python"):
        result = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True,
                                timeout=300)
        assert result.returncode == 0, result.stderr[-4000:]
