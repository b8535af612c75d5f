from transferlab.data.conll import ConlluReader
from transferlab.data.treebank import new_sentence, sentence_lines, with_tree

TEXT = """# newdoc id = d1

# sent_id = 1
# text = Don't go.
1-2\tDon't\t_\t_\t_\t_\t_\t_\t_\t_
1\tDo\tdo\tAUX\tVB\t_\t3\taux\t3:aux\t_
2\tn't\tnot\tPART\tRB\t_\t3\tadvmod\t3:advmod\t_
3\tgo\tgo\tVERB\tVB\t_\t0\troot\t0:root\t_
3.1\tgone\tgo\tVERB\tVBN\t_\t_\t_\t3:conj\t_
4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t3:punct\t_

# sent_id = 2
1\tHi\thi\tINTJ\tUH\t_\t0\troot\t0:root\t_
"""


def test_blocks_match_the_reader_and_only_columns_7_and_8_change(tmp_path):
    path = tmp_path / "a.conllu"
    path.write_text(TEXT, encoding="utf-8")
    blocks = list(sentence_lines(path))
    sentences = list(ConlluReader(path))
    assert len(blocks) == len(sentences) == 2  # the comment-only block holds no sentence
    assert blocks[0][0] == "# sent_id = 1" and blocks[1][-1].startswith("1\tHi")
    assert with_tree(blocks[0], sentences[0].heads, sentences[0].deprels) == blocks[0]  # gold in, same lines out
    out = with_tree(blocks[0], [2, 0, 2, 2], ["nsubj", "root", "obj", "punct"])
    changed = [(a.split("\t"), b.split("\t")) for a, b in zip(blocks[0], out) if a != b]
    assert [(b[0], b[6], b[7]) for _, b in changed] == [("1", "2", "nsubj"), ("2", "0", "root"),
                                                     ("3", "2", "obj"), ("4", "2", "punct")]
    assert all(a[:6] + a[8:] == b[:6] + b[8:] for a, b in changed)
    path.write_text("\n".join(out) + "\n\n", encoding="utf-8")
    again = next(iter(ConlluReader(path)))
    assert again.heads == (2, 0, 2, 2) and again.deprels == ("nsubj", "root", "obj", "punct")


def test_new_sentence_is_ten_columns():
    lines = new_sentence(["Hi", "there"], [0, 1], ["root", "advmod"], "Hi there")
    assert lines[0] == "# text = Hi there"
    assert [len(x.split("\t")) for x in lines[1:]] == [10, 10] and lines[2].split("\t")[6:8] == ["1", "advmod"]
