"""idl/hive_metastore.thrift against the compiled Thrift classes of each HMS release.

The generator's reflection dump (idl/generate/HmsIdl.java) runs on HMS 2.3.10 (the
pyspark jars, always present) and, when their jars are in ~/.m2, 3.1.3, 4.0.1 and
4.1.0. Every method of each release's service must be declared with the same
argument ids and wire types, and every struct field of the newest release (and of
2.3.10, except where a later release changed the field incompatibly) likewise:
a wrong id or type would silently drop or corrupt data.
"""

from __future__ import annotations

import importlib.util
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from thriftpy2.thrift import TType

import idl

pytestmark = [pytest.mark.hms, pytest.mark.timeout(300)]

hms = idl.hive_metastore
fb303 = idl.fb303
GENERATOR = Path(idl.__file__).parent / "generate" / "generate.py"


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("hms_idl_generate", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


gen = _generator()
RELEASES = {r.name: r for r in gen.releases()}


@cache
def _dump(release: str) -> Any:
    merged = gen.Merged()
    merged.add(release, gen.dump(RELEASES[release]))
    return merged


def _release(name: str) -> Any:
    if not RELEASES[name].available():
        pytest.skip(f"HMS {name} jars are not in ~/.m2 (idl/generate/generate.py --fetch)")
    return _dump(name)


_WIRE = {
    TType.BOOL: "bool",
    TType.BYTE: "byte",
    TType.I16: "i16",
    TType.I32: "i32",
    TType.I64: "i64",
    TType.DOUBLE: "double",
    TType.STRING: "string",
    TType.BINARY: "string",
}


def _ours(ttype: int, extra: Any) -> str:
    """A thriftpy2 spec entry in the generator's spelling (binary as string)."""
    if ttype == TType.STRUCT:
        return f"{extra.__module__.split('.')[-1].removesuffix('_thrift')}.{extra.__name__}"
    if ttype == TType.I32 and isinstance(extra, type):
        return f"{extra.__module__.split('.')[-1].removesuffix('_thrift')}.{extra.__name__}"
    if ttype in (TType.LIST, TType.SET):
        return f"{'list' if ttype == TType.LIST else 'set'}<{_nested(extra)}>"
    if ttype == TType.MAP:
        return f"map<{_nested(extra[0])},{_nested(extra[1])}>"
    return _WIRE[ttype]


def _nested(spec: Any) -> str:
    return _ours(spec[0], spec[1]) if isinstance(spec, tuple) else _ours(spec, None)


def _spec(cls: Any) -> dict[int, tuple[str, str]]:
    out = {}
    for fid, entry in cls.thrift_spec.items():
        extra = entry[2] if len(entry) == 4 else None
        out[fid] = (entry[1], _ours(entry[0], extra))
    return out


def _theirs(fields: dict[int, Any]) -> dict[int, tuple[str, str]]:
    return {f.fid: (f.name, gen._wire(f.type)) for f in fields.values()}


def _service(module: str, service: str) -> Any:
    return getattr({"hive_metastore": hms, "fb303": fb303}[module], service)


@pytest.mark.parametrize("release", list(RELEASES))
def test_every_method_is_declared_with_its_arguments(release: str) -> None:
    merged = _release(release)
    count = 0
    for module, mod in merged.modules.items():
        for service, declared in mod.methods.items():
            ours = _service(module, service)
            for name, method in declared.items():
                count += 1
                assert name in ours.thrift_services, f"HMS {release}: {name} is not declared"
                args = _spec(getattr(ours, f"{name}_args"))
                for fid, arg in _theirs(method.args).items():  # later releases add some
                    assert args.get(fid) == arg, f"HMS {release}: {name} argument {fid}"
                oneway = getattr(ours, f"{name}_result").oneway  # thriftpy2 makes one anyway
                assert oneway == method.oneway, f"HMS {release}: {name} oneway"
                if 0 in method.results:
                    result = _spec(getattr(ours, f"{name}_result"))
                    assert result[0] == _theirs(method.results)[0], f"{name} return type"
    assert count > 150


# (struct, field id) where a later release changed a 2.3 field incompatibly (the
# generator prints these and the IDL header lists them) or we deviate on purpose.
CHANGED_AFTER_2_3 = {
    ("AddDynamicPartitions", 2),
    ("AddDynamicPartitions", 3),
    ("AddDynamicPartitions", 4),
    ("AddDynamicPartitions", 5),
    ("GetOpenTxnsResponse", 2),
    ("InsertEventRequestData", 1),
    ("InsertEventRequestData", 2),
    ("LockComponent", 7),  # renamed only (isAcid -> isTransactional)
    ("Table", 16),  # catName in 2.3.10, creationMetadata from 3.1
}
DEVIATIONS = {("SkewedInfo", 3)}  # see idl/generate/generate.py OVERRIDES


@pytest.mark.parametrize("release", list(RELEASES))
def test_every_struct_field_is_declared(release: str) -> None:
    merged = _release(release)
    newest = release == list(RELEASES)[-1]
    for module, mod in merged.modules.items():
        ours_module = {"hive_metastore": hms, "fb303": fb303}[module]
        for name, struct in mod.structs.items():
            ours = _spec(getattr(ours_module, name))
            for fid, field in _theirs(struct.fields).items():
                if (name, fid) in DEVIATIONS or (not newest and (name, fid) in CHANGED_AFTER_2_3):
                    continue
                assert ours.get(fid) == field, f"HMS {release}: {name} field {fid}"
        for name, values in mod.enums.items():
            ours_enum = getattr(ours_module, name)._NAMES_TO_VALUES
            assert values.items() <= ours_enum.items(), f"HMS {release}: enum {name}"


def test_the_generated_files_are_current() -> None:
    """The committed IDL is what the generator writes from the releases present."""
    if not all(r.available() for r in RELEASES.values()):
        pytest.skip("not every release's jars are in ~/.m2")
    assert gen.main(["--check"]) == 0


def test_skewed_location_maps_arrive_as_hms_sends_them() -> None:
    """HMS's map<list<string>,string> decodes as {} (present), empty or not."""
    from subscriber.protocol import codec

    # Field 3 as HMS writes it: key type LIST, value type STRING, one entry.
    entry = b"\x0b\x00\x00\x00\x01" + b"\x00\x00\x00\x01a" + b"\x00\x00\x00\x03loc"
    for count, entries in ((0, b""), (1, entry)):
        field = b"\x0d\x00\x03\x0f\x0b" + count.to_bytes(4, "big") + entries
        decoded = codec.decode(hms.SkewedInfo, field + b"\x00")
        assert decoded.skewedColValueLocationMaps == {}
    assert codec.decode(hms.SkewedInfo, b"\x00").skewedColValueLocationMaps is None
