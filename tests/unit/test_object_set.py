"""The cache's objects in hash buckets: a read-only mapping like a dict, whose changes
copy only the buckets they touch and leave every earlier set as it was."""

from __future__ import annotations

import random

import pytest

from subscriber.cache import CatalogCache
from subscriber.object_set import BUCKETS, ObjectSet
from subscriber.protocol.delta import Delta, Entry
from subscriber.protocol.keys import partition_key


def entry(key: str, version: int) -> Entry:
    return Entry(key, version, f"{key}@{version}".encode())


@pytest.mark.parametrize("seed", range(20))
def test_it_reads_as_the_dict_it_was_made_from_after_random_changes(seed: int) -> None:
    rng = random.Random(seed)
    keys = [f"TABLE:db{rng.randrange(3)}.t{i}é" for i in range(rng.choice([5, 60, 700]))]
    model: dict[str, Entry] = {}
    objects = ObjectSet()
    history: list[tuple[ObjectSet, dict[str, Entry]]] = []
    for version in range(1, 40):
        updates: dict[str, Entry | None] = {}
        for key in rng.sample(keys, rng.randint(0, min(len(keys), 50))):
            updates[key] = None if rng.random() < 0.3 else entry(key, version)
        came = [k for k, e in updates.items() if e is not None and k not in model]
        went = [k for k, e in updates.items() if e is None and k in model]
        for key, value in updates.items():
            if value is None:
                model.pop(key, None)
            else:
                model[key] = value
        objects, got_came, got_went = objects.changed(updates)
        assert sorted(got_came) == sorted(came) and sorted(got_went) == sorted(went)
        history.append((objects, dict(model)))
    for objects, expected in history:  # every earlier set still reads as it did
        assert len(objects) == len(expected)
        assert objects == expected and dict(objects.items()) == expected
        assert sorted(objects) == sorted(expected)
        assert sorted(e.version for e in objects.values()) == sorted(
            e.version for e in expected.values()
        )
        for key in keys[:50]:
            assert (key in objects) == (key in expected)
            assert objects.get(key) == expected.get(key)
            if key in expected:
                assert objects[key] == expected[key]
            else:
                with pytest.raises(KeyError):
                    objects[key]


def test_a_change_copies_only_the_buckets_it_touches() -> None:
    objects = ObjectSet.of({f"TABLE:db.t{i}": entry(f"TABLE:db.t{i}", 1) for i in range(5000)})
    changed, came, went = objects.changed({"TABLE:db.t7": entry("TABLE:db.t7", 2)})
    assert (came, went) == ([], [])
    shared = sum(a is b for a, b in zip(objects._buckets, changed._buckets, strict=True))
    assert shared == BUCKETS - 1
    assert objects["TABLE:db.t7"].version == 1 and changed["TABLE:db.t7"].version == 2
    assert objects.changed({}) == (objects, [], [])


def test_a_database_key_set_is_made_anew_only_when_a_key_comes_or_goes() -> None:
    cache = CatalogCache()
    cache.install("s", 3, [entry("DATABASE:db", 1), entry("TABLE:db.a", 2), entry("TABLE:db.b", 3)])
    keys = cache.view.keys_of("db")
    cache.apply(Delta(3, 4, (entry("TABLE:db.a", 4),)))  # an update
    assert cache.view.keys_of("db") is keys
    assert cache.view.objects["TABLE:db.a"].version == 4
    cache.apply(Delta(4, 6, (entry("TABLE:db.c", 5), Entry("TABLE:db.b", 6, None))))
    assert cache.view.keys_of("db") == {"DATABASE:db", "TABLE:db.a", "TABLE:db.c"}
    cache.apply(
        Delta(
            6,
            9,
            tuple(Entry(k, 7 + i, None) for i, k in enumerate(sorted(cache.view.keys_of("db")))),
        )
    )
    assert "db" not in cache.view.by_database and len(cache.view.objects) == 0


def test_replacing_a_present_key_equals_changing_it_and_copies_one_bucket_an_absent_none() -> None:
    rng = random.Random(7)
    objects = ObjectSet.of({f"TABLE:db.t{i}": entry(f"TABLE:db.t{i}", 1) for i in range(300)})
    for version in range(2, 50):
        key = f"TABLE:db.t{rng.randrange(300)}"
        replaced = objects.replaced(key, entry(key, version))
        assert replaced is not None
        assert objects.replaced(f"TABLE:db.absent{version}", entry(key, version)) is None
        changed, came, went = objects.changed({key: entry(key, version)})
        assert (came, went) == ([], []) and replaced == changed and len(replaced) == 300
        shared = sum(a is b for a, b in zip(objects._buckets, replaced._buckets, strict=True))
        assert shared == BUCKETS - 1 and objects[key].version < version
        objects = replaced


@pytest.mark.parametrize("seed", range(10))
def test_the_one_entry_short_way_of_a_delta_equals_the_general_way(seed: int) -> None:
    """``_with_changes`` takes a short way for a tuple of one live entry whose
    non-partition key is present; a list of the same entries takes the general way."""
    from subscriber.cache import _with_changes  # the function under test: private

    rng = random.Random(seed)
    tables = [f"TABLE:db{i % 3}.t{i}" for i in range(40)]
    keys = tables + [partition_key("db0", "t0", f"p={i}") for i in range(5)]
    cache = CatalogCache()
    cache.install("s", 1, [entry(k, 1) for k in keys[::2]])
    view = cache.view
    short_ways = 0
    for version in range(2, 200):
        key = rng.choice(keys)
        one = Entry(key, version, None) if rng.random() < 0.2 else entry(key, version)
        short_events: list = []
        general_events: list = []
        short = _with_changes(view, version, (one,), short_events)
        general = _with_changes(view, version, [one], general_events)
        assert short.version == general.version == version
        assert dict(short.objects.items()) == dict(general.objects.items())
        assert short.by_database == general.by_database
        assert {t: dict(p.items()) for t, p in short.partitions.items()} == {
            t: dict(p.items()) for t, p in general.partitions.items()
        }
        assert short_events == general_events
        short_ways += key in view.objects and one.payload is not None
        view = general
    assert short_ways > 50  # the short way was taken (a present table, updated)
