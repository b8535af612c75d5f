from transferlab.text.framing import Framing, truncate_pair

CLS, SEP, BOS, DELIM, EXT = 101, 102, 1, 2, 3


def test_bert_pair_framing_and_segments():
    enc = Framing.bert(CLS, SEP, max_len=None).pair([5, 6], [7])
    assert enc.ids == [CLS, 5, 6, SEP, 7, SEP]
    assert enc.type_ids == [0, 0, 0, 0, 1, 1]
    assert not enc.truncated


def test_gpt_pair_framing_and_both_orders():
    f = Framing.gpt(BOS, DELIM, EXT, max_len=None)
    assert f.pair([5, 6], [7]).ids == [BOS, 5, 6, DELIM, 7, EXT]
    assert f.pair([5, 6], [7], swap=True).ids == [BOS, 7, DELIM, 5, 6, EXT]
    assert f.pair([5], [7]).type_ids == [0, 0, 0, 0, 0]  # GPT has no segments
    assert [e.ids for e in f.choices([9], [[5], [6, 6]])] == [[BOS, 9, DELIM, 5, EXT], [BOS, 9, DELIM, 6, 6, EXT]]


def test_truncation_is_longest_first_and_flagged():
    assert truncate_pair([1] * 10, [2] * 3, 8) == ([1] * 5, [2] * 3)
    assert truncate_pair([1] * 5, [2] * 5, 7) == ([1] * 3, [2] * 4)
    f = Framing.bert(CLS, SEP, max_len=8)
    enc = f.pair(list(range(10, 20)), [7, 7])
    assert len(enc.ids) == 8 and enc.truncated and enc.ids[-4:] == [SEP, 7, 7, SEP]
    single = f.single(list(range(20)))
    assert single.ids == [CLS, *range(6), SEP] and single.truncated


def test_words_keep_first_pieces_that_survive_truncation():
    # three words: pieces [5], [6, 66], [7]; first pieces at 0, 1, 3
    f = Framing.bert(CLS, SEP, max_len=4)  # room for two pieces
    enc = f.words([5, 6, 66, 7], [0, 1, 3])
    assert enc.ids == [CLS, 5, 6, SEP]
    assert enc.word_positions == [1, 2] and enc.truncated
    plain = Framing(delim=3).words([5, 6, 7], [0, 1, 2])  # a word-level LSTM: one position per word
    assert plain.word_positions == [0, 1, 2] and not plain.truncated
