"""CoNLL column files and CoNLL-U on synthetic files: sentence breaks, skipped lines, errors."""

import pytest

from transferlab.data.conll import ConllReader, ConlluReader
from transferlab.data.errors import DataError
from transferlab.data.examples import TaggedSentence

CONLL = ("-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n\n"
         "Peter NNP B-NP B-PER\r\nBlackburn NNP I-NP I-PER")

CONLLU = """# newdoc id = d1
# sent_id = s1
# text = Don't go.
1-2\tDon't\t_\t_\t_\t_\t_\t_\t_\t_
1\tDo\tdo\tAUX\tVBP\t_\t3\taux\t_\t_
2\tn't\tnot\tPART\tRB\t_\t3\tadvmod\t_\t_
3\tgo\tgo\tVERB\tVB\t_\t0\troot\t_\tSpaceAfter=No
3.1\tgone\tgo\tVERB\tVBN\t_\t_\t_\t3:conj\t_
4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_

# sent_id = s2
1\tHi\thi\tINTJ\tUH\t_\t0\troot\t_\t_"""


def test_conll_sentences_docstart_and_tag_columns(write):
    path = write("c.txt", CONLL)
    reader = ConllReader(path, columns=("word", "pos", "chunk", "ner"), tag_col="ner")
    assert list(reader) == [TaggedSentence(("EU", "rejects"), ("B-ORG", "O")),
                            TaggedSentence(("Peter", "Blackburn"), ("B-PER", "I-PER"))]
    assert list(reader) == list(reader)
    assert [s.tags for s in ConllReader(path, tag_col=1)] == [("NNP", "VBZ"), ("NNP", "NNP")]
    assert list(ConllReader(path).rows())[1][1] == ("Blackburn", "NNP", "I-NP", "I-PER")


def test_conll_errors(write):
    path = write("c.txt", "a B C\nb D\n")
    with pytest.raises(DataError) as info:
        list(ConllReader(path))
    assert info.value.line == 2 and "expected 3 columns, found 2" in str(info.value)
    with pytest.raises(DataError, match="no such column"):
        ConllReader(path, columns=("word", "pos", "ner"), tag_col="chunk")


@pytest.mark.parametrize("blank", ["\ufeff", "\u00a0", "\t", "  \t ", "\ufeff\u00a0"])
def test_whitespace_only_and_bom_lines_break_sentences(write, blank):
    path = write("c.conll", f"\ufeffEU NNP B-ORG\nrejects VBZ O\n{blank}\n\ufeffPeter NNP B-PER\n{blank}\n"
                            f"Blackburn NNP I-PER\n")
    assert list(ConllReader(path)) == [TaggedSentence(("EU", "rejects"), ("B-ORG", "O")),
                                       TaggedSentence(("Peter",), ("B-PER",)),
                                       TaggedSentence(("Blackburn",), ("I-PER",))]


def test_conllu_bom_line_breaks_sentences(write):
    one = "1\tHi\thi\tINTJ\tUH\t_\t0\troot\t_\t_"
    path = write("u.conllu", f"{one}\n\ufeff\n\ufeff# sent_id = s2\n{one}\n")
    assert [s.tokens for s in ConlluReader(path)] == [("Hi",), ("Hi",)]


def test_conllu_skips_ranges_and_empty_nodes(write):
    path = write("u.conllu", CONLLU)
    first, second = list(ConlluReader(path))
    assert first.tokens == ("Do", "n't", "go", ".") and first.heads == (3, 3, 0, 3)
    assert first.upos == ("AUX", "PART", "VERB", "PUNCT") and first.xpos[0] == "VBP"
    assert first.deprels[2] == "root" and first.text == "Don't go." and first.sent_id == "s1"
    assert second.tokens == ("Hi",) and second.text == ""
    assert list(ConlluReader(path).tagged("upos"))[1] == TaggedSentence(("Hi",), ("INTJ",))
    with pytest.raises(ValueError):
        ConlluReader(path).tagged("ner")


@pytest.mark.parametrize("line, field", [("1\tDo\tdo\tAUX\tVBP\t_\t3\taux", None),
                                         ("1\tDo\tdo\tAUX\tVBP\t_\tx\taux\t_\t_", "HEAD"),
                                         ("one\tDo\tdo\tAUX\tVBP\t_\t0\troot\t_\t_", "ID")])
def test_conllu_errors(write, line, field):
    path = write("bad.conllu", f"# sent_id = s\n{line}\n")
    with pytest.raises(DataError) as info:
        list(ConlluReader(path))
    assert info.value.line == 2 and info.value.field == field and str(path) in str(info.value)
