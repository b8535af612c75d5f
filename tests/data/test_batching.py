from transferlab.data.batching import Batches, bucket_order, pad_batch


def test_pad_batch_masks_real_tokens():
    b = pad_batch([[5, 6, 7], [8]], pad_id=0)
    assert b["ids"].tolist() == [[5, 6, 7], [8, 0, 0]]
    assert b["mask"].tolist() == [[True, True, True], [True, False, False]]


def test_buckets_cover_every_index_once_and_are_deterministic():
    lengths = [(i * 7) % 23 for i in range(500)]
    a = bucket_order(lengths, 16, seed=1, epoch=2)
    assert sorted(i for b in a for i in b) == list(range(500))
    assert a == bucket_order(lengths, 16, seed=1, epoch=2)
    assert a != bucket_order(lengths, 16, seed=1, epoch=3)
    # inside a bucket, batches hold similar lengths: padding is far below a random order's
    waste = sum(max(lengths[i] for i in b) * len(b) - sum(lengths[i] for i in b) for b in a)
    assert waste < 0.2 * sum(lengths)


def test_batches_carry_labels_and_index():
    seqs = [[1] * n for n in range(1, 11)]
    batches = list(Batches(seqs, 4, extra={"labels": list(range(10))}, shuffle=False))
    assert len(batches) == 3
    for b in batches:
        assert b["labels"].tolist() == b["index"].tolist()
        assert b["mask"].sum(1).tolist() == [len(seqs[i]) for i in b["index"].tolist()]
