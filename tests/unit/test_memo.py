"""BoundedMemo: the one clear-when-full memo (decoded objects, encoded HMS structs)."""

from __future__ import annotations

from subscriber.memo import BoundedMemo
from subscriber.metastore.answers import CacheAnswers
from subscriber.reads import ObjectDecoder


def test_put_remembers_until_full_then_starts_over() -> None:
    memo: BoundedMemo[str, int] = BoundedMemo(3)
    assert memo.put("a", 1) == 1
    memo.put("b", 2)
    memo.put("c", 3)
    values = memo.values
    assert values.get("a") == 1 and len(memo) == 3
    memo.put("d", 4)  # full: cleared first
    assert memo.values == {"d": 4} and memo.values is values  # cleared in place
    memo.put("d", 5)
    assert memo.values == {"d": 5}


def test_decoder_and_answers_share_the_memo_class() -> None:
    assert isinstance(ObjectDecoder(10)._memo, BoundedMemo)
    assert isinstance(CacheAnswers(ObjectDecoder())._encoded, BoundedMemo)
