"""``transferlab pretrain lm`` on a user's corpus: held-out lines for valid and test, a run folder
that is not silently reused, and runs killed (twice; ten times at random steps) that end
bit-identical to an uninterrupted one (the way a pretraining of hours runs in pieces)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap

import pytest
from safetensors.torch import load_file

from transferlab import cli

def _args(corpus, out, *extra):
    return ["pretrain", "lm", "--corpus", str(corpus), "--preset", "tiny", "--out", str(out),
            "--train.steps=40", "--train.save_every=5", "--train.progress=false", "--lm.samples=16", *extra]


def test_a_folder_holding_a_run_needs_resume(corpus, tmp_path, capsys):
    assert cli.main(_args(corpus, tmp_path / "run")) == 0
    with pytest.raises(SystemExit):
        cli.main(_args(corpus, tmp_path / "run"))
    assert "pass --resume to continue it" in capsys.readouterr().err
    assert cli.main(_args(corpus, tmp_path / "run", "--resume")) == 0  # finished: resumes to the end at once


KILLER = textwrap.dedent("""
    import os, signal, sys
    from transferlab import cli, train
    kill_at = int(os.environ["KILL_AT"])
    after_step = train._Run._after_step
    def killing(self):
        after_step(self)
        if self.t.step == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
    train._Run._after_step = killing
    sys.exit(cli.main(sys.argv[1:]))
""")


@pytest.mark.parametrize("kills", [[12, 27], pytest.param(sorted(random.Random(17).sample(range(1, 40), 10)),
                                                           marks=pytest.mark.slow, id="soak")])
def test_killed_runs_resume_bit_identical_to_an_uninterrupted_one(corpus, tmp_path, kills):
    """SIGKILLed at each step of ``kills`` in turn (checkpoints every 5 steps, so most kills lose
    steps that the resumed run redoes), then resumed to the end: the weights equal a run never
    killed. The second case is the soak (``-m slow``): 10 random kill points."""
    def run(out, kill_at=0, *extra):
        env = dict(os.environ, KILL_AT=str(kill_at), OMP_NUM_THREADS="1")
        return subprocess.run([sys.executable, "-c", KILLER, *_args(corpus, out, "--train.threads=1", *extra)],
                              env=env, capture_output=True, text=True)

    whole = run(tmp_path / "whole")
    assert whole.returncode == 0, whole.stderr
    for i, step in enumerate(kills):
        killed = run(tmp_path / "pieces", step, *(["--resume"] if i else []))
        assert killed.returncode == -9, killed.stderr
    last = run(tmp_path / "pieces", 0, "--resume")
    assert last.returncode == 0, last.stderr
    a = load_file(tmp_path / "whole" / "last" / "model.safetensors")
    b = load_file(tmp_path / "pieces" / "last" / "model.safetensors")
    assert a.keys() == b.keys() and all((a[k] == b[k]).all() for k in a)
    print(f"[soak] {len(kills)} SIGKILLs at steps {kills}: resumed run bit-identical")


def test_killed_mlm_run_resumes_bit_identical_with_its_own_tokenizer(corpus, tmp_path):
    """`pretrain mlm --resume` reads the run's saved tokenizer (none is trained again) and ends
    where an uninterrupted run does; without --resume the folder is refused. Byte-level BPE here:
    tokenizers' WordPiece trainer breaks count ties in hash order (huggingface/tokenizers#1794), so
    two fresh WordPiece runs need not agree, while a resumed one always reuses its own."""
    def run(out, kill_at=0, *extra):
        args = ["pretrain", "mlm", "--corpus", str(corpus), "--preset", "tiny", "--out", str(out),
                "--subword.kind=bpe", "--subword.vocab_size=300", "--train.steps=16", "--train.save_every=4",
                "--train.progress=false", "--train.threads=1", *extra]
        env = dict(os.environ, KILL_AT=str(kill_at), OMP_NUM_THREADS="1")
        return subprocess.run([sys.executable, "-c", KILLER, *args], env=env, capture_output=True, text=True)

    whole = run(tmp_path / "whole")
    assert whole.returncode == 0, whole.stderr
    assert run(tmp_path / "pieces", 10).returncode == -9
    refused = run(tmp_path / "pieces")
    assert refused.returncode != 0 and "pass --resume" in refused.stderr
    last = run(tmp_path / "pieces", 0, "--resume")
    assert last.returncode == 0, last.stderr
    assert "resuming" in last.stderr and "tokenizer of" not in last.stderr
    a = load_file(tmp_path / "whole" / "last" / "model.safetensors")
    b = load_file(tmp_path / "pieces" / "last" / "model.safetensors")
    assert a.keys() == b.keys() and all((a[k] == b[k]).all() for k in a)


MEASURE = textwrap.dedent("""
    import resource, sys
    from transferlab import cli
    cli.main(sys.argv[1:])
    print("maxrss_kb", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
""")


def test_peak_memory_does_not_grow_with_the_corpus(tmp_path):
    """The training ids live in a file: a corpus 4x larger (4.5M more tokens, 36 MB as int64 in
    memory) leaves the peak RSS of `pretrain lm` within a few MB."""
    rng = random.Random(0)
    words = [f"w{i}" for i in range(300)]
    peaks = {}
    for scale in (1, 4):
        path = tmp_path / f"corpus{scale}.txt"
        with path.open("w") as f:
            for _ in range(125_000 * scale):
                f.write(" ".join(rng.choices(words, k=12)) + "\n")
        args = ["pretrain", "lm", "--corpus", str(path), "--preset", "tiny", "--out", str(tmp_path / f"run{scale}"),
                "--train.steps=5", "--train.progress=false", "--text.tokenizer=whitespace", "--train.threads=1"]
        done = subprocess.run([sys.executable, "-c", MEASURE, *args], capture_output=True, text=True,
                              env=dict(os.environ, OMP_NUM_THREADS="1"))
        assert done.returncode == 0, done.stderr
        peaks[scale] = int(done.stdout.split("maxrss_kb")[-1]) / 1024
    print(f"[memory] peak RSS {peaks[1]:.0f} MB with 1.5M tokens, {peaks[4]:.0f} MB with 6M tokens")
    assert peaks[4] - peaks[1] < 12, peaks
