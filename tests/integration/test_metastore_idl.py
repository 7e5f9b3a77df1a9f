"""Our hive_metastore.thrift against the real HMS classes, field by field.

A small Java program reads the Thrift metadata the generated classes of
hive-metastore-*.jar carry (field ids, names, types, requiredness of every
struct, enum and method argument/result) and prints it; we compare it with
the specs thriftpy2 built from our IDL. Wire compatibility is the contract: a
wrong id or type here would silently drop or corrupt data.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from thriftpy2.thrift import TType

import idl
from catalogd.hms.embedded import find_pyspark_jars

pytestmark = [pytest.mark.hms, pytest.mark.timeout(120)]

hms = idl.hive_metastore

DUMP_JAVA = r"""
import java.util.Map;
import org.apache.thrift.TEnum;
import org.apache.thrift.TFieldIdEnum;
import org.apache.thrift.meta_data.*;
import org.apache.thrift.protocol.TType;

public class DumpThriftMeta {
  static final String PKG = "org.apache.hadoop.hive.metastore.api.";

  static String type(FieldValueMetaData m) {
    if (m instanceof StructMetaData)
      return "struct:" + ((StructMetaData) m).structClass.getSimpleName();
    if (m instanceof EnumMetaData) return "enum:" + ((EnumMetaData) m).enumClass.getSimpleName();
    if (m instanceof ListMetaData) return "list<" + type(((ListMetaData) m).elemMetaData) + ">";
    if (m instanceof SetMetaData) return "set<" + type(((SetMetaData) m).elemMetaData) + ">";
    if (m instanceof MapMetaData) {
      MapMetaData mm = (MapMetaData) m;
      return "map<" + type(mm.keyMetaData) + "," + type(mm.valueMetaData) + ">";
    }
    switch (m.type) {
      case TType.BOOL: return "bool";
      case TType.BYTE: return "byte";
      case TType.I16: return "i16";
      case TType.I32: return "i32";
      case TType.I64: return "i64";
      case TType.DOUBLE: return "double";
      case TType.STRING: return "string";  // binary travels as string too
      default: return "ttype" + m.type;
    }
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  static void fields(String label, String className) throws Exception {
    Class c = Class.forName(PKG + className);
    Map<TFieldIdEnum, FieldMetaData> meta = FieldMetaData.getStructMetaDataMap(c);
    for (Map.Entry<TFieldIdEnum, FieldMetaData> e : meta.entrySet()) {
      FieldMetaData f = e.getValue();
      System.out.println(label + "\t" + e.getKey().getThriftFieldId() + "\t" + f.fieldName
          + "\t" + type(f.valueMetaData) + "\t" + (f.requirementType == 1 ? "required" : "-"));
    }
  }

  public static void main(String[] args) throws Exception {
    for (String a : args) {
      String[] kv = a.split(":", 2);
      if (kv[0].equals("enum")) {
        for (Object o : Class.forName(PKG + kv[1]).getEnumConstants())
          System.out.println("enum:" + kv[1] + "\t" + ((TEnum) o).getValue() + "\t" + o);
      } else if (kv[0].equals("method")) {
        fields("args:" + kv[1], "ThriftHiveMetastore$" + kv[1] + "_args");
        fields("result:" + kv[1], "ThriftHiveMetastore$" + kv[1] + "_result");
      } else {
        fields("struct:" + kv[1], kv[1]);
      }
    }
  }
}
"""

_PRIMITIVES = {
    TType.BOOL: "bool",
    TType.BYTE: "byte",
    TType.I16: "i16",
    TType.I32: "i32",
    TType.I64: "i64",
    TType.DOUBLE: "double",
    TType.STRING: "string",
    TType.BINARY: "string",
}


def _type_name(ttype: int, extra: Any) -> str:
    """Render a thriftpy2 spec entry in the Java dumper's notation."""
    if ttype == TType.STRUCT:
        return f"struct:{extra.__name__}"
    if ttype == TType.I32 and isinstance(extra, type):
        return f"enum:{extra.__name__}"
    if ttype in (TType.LIST, TType.SET):
        kind = "list" if ttype == TType.LIST else "set"
        return f"{kind}<{_nested(extra)}>"
    if ttype == TType.MAP:
        return f"map<{_nested(extra[0])},{_nested(extra[1])}>"
    return _PRIMITIVES[ttype]


def _nested(spec: Any) -> str:
    if isinstance(spec, tuple):
        return _type_name(spec[0], spec[1])
    return _type_name(spec, None)


def _our_fields(spec: dict[int, tuple[Any, ...]]) -> dict[int, tuple[str, str, str]]:
    out = {}
    for fid, entry in spec.items():
        ttype, name, required = entry[0], entry[1], entry[-1]
        extra = entry[2] if len(entry) == 4 else None
        out[fid] = (name, _type_name(ttype, extra), "required" if required else "-")
    return out


def _declared() -> tuple[list[str], list[str], list[str]]:
    structs, enums = [], []
    for name in dir(hms):
        obj = getattr(hms, name)
        if isinstance(obj, type) and hasattr(obj, "_VALUES_TO_NAMES"):
            enums.append(name)
        elif (
            isinstance(obj, type) and hasattr(obj, "thrift_spec") and name != "ThriftHiveMetastore"
        ):
            structs.append(name)
    return structs, enums, list(hms.ThriftHiveMetastore.thrift_services)


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[int, tuple[str, ...]]]:
    """{label: {id: (name, type, requiredness)}} read from the HMS jar by reflection."""
    work: Path = tmp_path_factory.mktemp("thrift-meta")
    source = work / "DumpThriftMeta.java"
    source.write_text(DUMP_JAVA)
    structs, enums, methods = _declared()
    args = (
        [f"struct:{s}" for s in structs]
        + [f"enum:{e}" for e in enums]
        + [f"method:{m}" for m in methods]
    )
    done = subprocess.run(
        ["java", "-XX:TieredStopAtLevel=1", "-cp", f"{find_pyspark_jars()}/*", str(source), *args],
        capture_output=True,
        text=True,
        timeout=100,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    table: dict[str, dict[int, tuple[str, ...]]] = {}
    for line in done.stdout.splitlines():
        label, fid, *rest = line.split("\t")
        table.setdefault(label, {})[int(fid)] = tuple(rest)
    return table


def test_every_declared_struct_matches_the_jar(upstream: dict[str, Any]) -> None:
    structs, _, _ = _declared()
    assert len(structs) > 40
    for name in structs:
        theirs = upstream[f"struct:{name}"]
        ours = _our_fields(getattr(hms, name).thrift_spec)
        for fid, field in ours.items():
            assert fid in theirs, f"{name}.{field[0]}: id {fid} does not exist upstream"
            assert field == theirs[fid], f"{name} field {fid}: ours {field} != jar {theirs[fid]}"


def test_only_the_documented_fields_are_left_out(upstream: dict[str, Any]) -> None:
    structs, _, _ = _declared()
    missing = {
        (name, fid)
        for name in structs
        for fid in upstream[f"struct:{name}"].keys() - getattr(hms, name).thrift_spec.keys()
    }
    # SkewedInfo 3 is a map keyed by list<string>: thriftpy2 cannot decode it.
    assert missing == {("SkewedInfo", 3)}


def test_every_enum_matches_the_jar(upstream: dict[str, Any]) -> None:
    _, enums, _ = _declared()
    for name in enums:
        theirs = {fid: value[0] for fid, value in upstream[f"enum:{name}"].items()}
        assert theirs == getattr(hms, name)._VALUES_TO_NAMES, name


def test_every_method_matches_the_jar(upstream: dict[str, Any]) -> None:
    _, _, methods = _declared()
    assert len(methods) >= 45
    service = hms.ThriftHiveMetastore
    for method in methods:
        for kind in ("args", "result"):
            ours = _our_fields(getattr(service, f"{method}_{kind}").thrift_spec)
            theirs = upstream.get(f"{kind}:{method}", {})
            if kind == "args":
                # Requests must carry exactly what the server reads.
                assert ours == theirs, f"{method} {kind}: ours {ours} != jar {theirs}"
            else:
                for fid, field in ours.items():
                    assert theirs.get(fid) == field, f"{method} result {fid}: {field}"
                assert set(theirs) <= set(ours), f"{method}: an exception id is not declared"
