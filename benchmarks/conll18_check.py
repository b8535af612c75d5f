"""Our UAS/LAS against the CoNLL 2018 shared task's own ``conll18_ud_eval.py``, on one parser's output.

    TRANSFERLAB_DATA=../shared .venv/bin/python benchmarks/conll18_check.py \\
        [--model runs/bench/ud-parsing/minilm-0-bf16/last] [--gold ud-ewt test]

The unit tests check :mod:`transferlab.eval.parsing` against a re-implementation of the script's
logic; this runs the script itself. It is not vendored: the official file (Mozilla Public License
2.0) ships inside stanza 1.4.0's wheel as ``stanza/utils/conll18_ud_eval.py``, so ``pip download
stanza==1.4.0 --no-deps`` fetches it once into ``--cache`` (a PyPI mirror is enough) and the file
is read from the wheel, nothing installed.

1. ``transferlab predict``'s CoNLL-U path (:func:`transferlab.recipes.predict.predict_conllu`)
   parses the gold file's words with ``--model`` (``benchmarks/ud_parsing.py`` trains one),
   writing HEAD and DEPREL and keeping every other column and line;
2. the official script scores that file against the gold one (``load_conllu_file``, ``evaluate``:
   UAS and LAS F1, relations compared by their universal part);
3. :func:`transferlab.eval.parsing.attachment_scores` scores the same file read back.

Figures: ``official_uas``, ``official_las``, ``ours_uas``, ``ours_las``, ``max_abs_diff`` (the
issue's bar: equal up to float rounding, 1e-6).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import module_from_wheel, write_result  # noqa: E402

from transferlab.data import catalog  # noqa: E402
from transferlab.data.conll import ConlluReader  # noqa: E402
from transferlab.eval.parsing import attachment_scores  # noqa: E402
from transferlab.recipes.predict import predict_conllu  # noqa: E402

WHEEL, MEMBER = "stanza==1.4.0", "stanza/utils/conll18_ud_eval.py"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="runs/bench/ud-parsing/minilm-0-bf16/last", help="a parser checkpoint")
    ap.add_argument("--gold", default="", help="a CoNLL-U file (default: the ud-ewt test split)")
    ap.add_argument("--cache", default="runs/bench/conll18", help="where the wheel, the script and the output go")
    ap.add_argument("--record", default="conll18_check")
    args = ap.parse_args()
    cache = Path(args.cache)
    ev = module_from_wheel(WHEEL, MEMBER, cache, "conll18_ud_eval")
    gold = Path(args.gold) if args.gold else catalog.resolve("ud-ewt") / "test.conllu"
    system = cache / "system.conllu"
    with open(system, "w", encoding="utf-8") as f:
        n = predict_conllu(args.model, gold, f)
    official = ev.evaluate(ev.load_conllu_file(str(gold)), ev.load_conllu_file(str(system)))
    gold_trees, predicted = list(ConlluReader(gold)), list(ConlluReader(system))
    ours = attachment_scores(gold_trees, [s.heads for s in predicted], [s.deprels for s in predicted])
    figures = {"official_uas": official["UAS"].f1, "official_las": official["LAS"].f1,
               "ours_uas": ours["uas"], "ours_las": ours["las"]}
    figures["max_abs_diff"] = max(abs(figures[f"official_{m}"] - ours[m]) for m in ("uas", "las"))
    write_result(args.record, figures, model=args.model, gold=str(gold), sentences=n, script=f"{WHEEL}:{MEMBER}")


if __name__ == "__main__":
    main()
