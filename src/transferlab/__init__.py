"""transferlab: sequential transfer learning for NLP.

Pretrain representations on unlabeled text, look inside them, adapt them to a labeled task,
and measure what the transfer bought (the NAACL 2019 tutorial "Transfer Learning in Natural
Language Processing", Ruder, Peters, Swayamdipta and Wolf).

Contracts between pipeline stages (written once, here):

- Examples (``transferlab.data.examples``): frozen dataclasses of strings, ``TextExample``,
  ``PairExample``, ``TaggedSentence``, ``QAExample``.
- Batch: ``dict[str, Tensor]`` with fixed keys: ``ids (B,T) long``, ``mask (B,T) bool`` (True =
  real token), ``labels``, optional ``type_ids``, ``start``, ``end``, ``word_index``.
  ``IGNORE_INDEX = -100`` marks unlabeled positions.
- Encoder (``transferlab.encoders.base``): ``forward(ids, mask) -> EncoderOutput(hidden (B,T,D),
  layers)``, a ``dim`` attribute, ``layer_groups()`` ordered bottom to top.
- Objective or task: ``loss(model, batch) -> Tensor``, so one ``fit()`` serves pretraining and
  fine-tuning alike.
- Artifacts: a checkpoint is a folder of ``model.safetensors``, ``config.json``, vocabulary or
  tokenizer files and ``state.json``. Nothing is ever pickled.

Layers: a module imports from its own floor or the floors below it, never from above, and the
imports (inside functions too) form no cycle; ``tests/test_layers.py`` checks every module
against this table (the longest name that matches a module is its entry):

    floor  modules
    0      config, checkpoint, devices, schedules, log, train, transferlab (this package)
    1      data
    2      text, vectors, eval.metrics, eval.squad, eval.parsing
    3      encoders
    4      pretrain, adapt, tasks
    5      eval
    6      recipes
    7      cli, __main__ (python -m transferlab)

``train`` knows nothing of NLP (the loss is passed in); ``eval.metrics`` (and SQuAD's and the
parsers' ``eval.squad``, ``eval.parsing``) are plain functions of labels and predictions, below
the task heads that report them.
"""

__version__ = "0.1.0"
IGNORE_INDEX = -100
