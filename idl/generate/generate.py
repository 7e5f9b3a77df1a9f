"""Writes idl/hive_metastore.thrift and idl/fb303.thrift from Hive Metastore releases.

Not part of the installed package (no ``__init__.py``): a developer tool, run as

    python idl/generate/generate.py            # write the IDL files
    python idl/generate/generate.py --check    # exit 1 if they are not what it would write

It runs :file:`HmsIdl.java` (reflection on the compiled Thrift classes of a release,
see its header) once per release, merges what the releases declare and renders
Thrift IDL. The merge is a union: every constant, enum value, struct field and
service method of any release; where releases differ, the newest wins (fields are
only ever added upstream; anything else, such as a field id whose type changed, is
printed as an incompatibility).

Releases: HMS 2.3.10 from the pyspark wheel's jars (required); 3.1.3
(``org.apache.hive:hive-standalone-metastore``) and 4.0.1 / 4.1.0
(``hive-standalone-metastore-common``) with the libthrift/libfb303 they were built
with, from ``~/.m2`` (``--fetch`` downloads them with ``mvn dependency:get``).

One local deviation (``OVERRIDES``): ``SkewedInfo.skewedColValueLocationMaps`` is
``map<list<string>,string>`` upstream; thriftpy2 decodes a list into an unhashable
Python list, so a map keyed by lists fails to decode when it has entries. Declared
with ``string`` keys, thriftpy2 and our validator skip the entries of a map whose wire
key type differs and yield ``{}``: the field is present exactly when HMS sends it
(HMS sends it empty for every table without list bucketing) and a table that has
entries still decodes (the entries are dropped).
"""

from __future__ import annotations

import argparse
import difflib
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
IDL_DIR = HERE.parent
M2 = Path.home() / ".m2" / "repository"

# (module, struct, field id) -> (IDL type, why)
OVERRIDES = {
    ("hive_metastore", "SkewedInfo", 3): (
        "map<string,string>",
        "upstream map<list<string>,string>: thriftpy2 cannot key a dict by a list; "
        "declared with string keys, an HMS map decodes as {} (entries skipped)",
    ),
}


@dataclass(frozen=True)
class Release:
    """A Hive Metastore release: the jars to put on the class path, the ones to scan."""

    name: str
    classpath: tuple[Path, ...]
    scan: tuple[Path, ...]
    coordinates: tuple[str, ...] = ()

    def available(self) -> bool:
        return all(p.is_file() for p in self.classpath)


def _m2(group: str, artifact: str, version: str) -> Path:
    return M2.joinpath(*group.split("."), artifact, version, f"{artifact}-{version}.jar")


def pyspark_jars() -> Path:
    import pyspark  # the wheel carries HMS 2.3.10

    return Path(pyspark.__file__).resolve().parent / "jars"


def releases() -> list[Release]:
    """The releases merged, oldest first (later ones win where they differ)."""
    jars = pyspark_jars()
    fb303 = _m2("org.apache.thrift", "libfb303", "0.9.3")
    out = [
        Release(
            "2.3.10",
            tuple(sorted(jars.glob("*.jar"))),
            (jars / "hive-metastore-2.3.10.jar", jars / "libfb303-0.9.3.jar"),
        )
    ]
    hms3 = _m2("org.apache.hive", "hive-standalone-metastore", "3.1.3")
    thrift9 = _m2("org.apache.thrift", "libthrift", "0.9.3")
    out.append(
        Release(
            "3.1.3",
            (hms3, thrift9, fb303, *jars.glob("slf4j-api-*.jar")),
            (hms3, fb303),
            (
                "org.apache.hive:hive-standalone-metastore:3.1.3",
                "org.apache.thrift:libthrift:0.9.3",
                "org.apache.thrift:libfb303:0.9.3",
            ),
        )
    )
    for version in ("4.0.1", "4.1.0"):
        common = _m2("org.apache.hive", "hive-standalone-metastore-common", version)
        out.append(
            Release(
                version,
                (common, *jars.glob("libthrift-*.jar"), fb303, *jars.glob("slf4j-api-*.jar")),
                (common, fb303),
                (
                    f"org.apache.hive:hive-standalone-metastore-common:{version}",
                    "org.apache.thrift:libfb303:0.9.3",
                ),
            )
        )
    return out


def dump(release: Release) -> list[list[str]]:
    """HmsIdl.java's records for ``release`` (each a list of tab-separated columns)."""
    done = subprocess.run(
        [
            "java",
            "-XX:TieredStopAtLevel=1",
            "-cp",
            ":".join(map(str, release.classpath)),
            str(HERE / "HmsIdl.java"),
            *map(str, release.scan),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"HmsIdl.java on {release.name} failed:\n{done.stderr[-3000:]}")
    return [line.split("\t") for line in done.stdout.splitlines()]


@dataclass
class Field:
    fid: int
    name: str
    type: str
    req: str = "default"
    default: str | None = None
    since: str = ""


@dataclass
class Struct:
    kind: str
    fields: dict[int, Field] = field(default_factory=dict)
    since: str = ""


@dataclass
class Method:
    oneway: bool
    args: dict[int, Field] = field(default_factory=dict)
    results: dict[int, Field] = field(default_factory=dict)
    since: str = ""


@dataclass
class Module:
    consts: dict[str, tuple[str, str]] = field(default_factory=dict)
    enums: dict[str, dict[str, int]] = field(default_factory=dict)
    structs: dict[str, Struct] = field(default_factory=dict)
    services: dict[str, str] = field(default_factory=dict)
    methods: dict[str, dict[str, Method]] = field(default_factory=dict)


class Merged:
    """The union of releases, with the differences found on the way."""

    def __init__(self) -> None:
        self.modules: dict[str, Module] = {}
        self.problems: list[str] = []
        self.first = ""

    def add(self, release: str, records: list[list[str]]) -> None:
        self.first = self.first or release
        for rec in records:
            kind, mod = rec[0], self.modules.setdefault(rec[1], Module())
            if kind == "const":
                mod.consts[rec[2]] = (rec[3], rec[4])
            elif kind == "enum":
                values = mod.enums.setdefault(rec[2], {})
                if values.get(rec[3], int(rec[4])) != int(rec[4]):
                    self.problems.append(f"{release}: enum {rec[2]}.{rec[3]} changed value")
                values[rec[3]] = int(rec[4])
            elif kind == "struct":
                s = mod.structs.setdefault(rec[2], Struct(rec[3], since=release))
                s.kind = rec[3]
            elif kind == "field":
                self._field(release, f"{rec[2]}", mod.structs[rec[2]].fields, rec[3:])
            elif kind == "service":
                mod.services[rec[2]] = rec[3]
                mod.methods.setdefault(rec[2], {})
            elif kind == "method":
                methods = mod.methods[rec[2]]
                m = methods.setdefault(rec[3], Method(rec[4] == "oneway", since=release))
                m.oneway = rec[4] == "oneway"
            elif kind in ("arg", "result"):
                service, method = rec[2].split(".")
                m = mod.methods[service][method]
                into = m.args if kind == "arg" else m.results
                self._field(release, rec[2], into, rec[3:])
            else:
                raise ValueError(f"unknown record {rec}")

    def _field(self, release: str, owner: str, into: dict[int, Field], rec: list[str]) -> None:
        fid, name, ftype = int(rec[0]), rec[1], rec[2]
        req = rec[3] if len(rec) > 3 else "default"
        default = rec[4] if len(rec) > 4 else None
        old = into.get(fid)
        if old is not None and _wire(old.type) != _wire(ftype):
            self.problems.append(
                f"{release}: {owner} field {fid} ({name}) type {old.type} -> {ftype} (INCOMPATIBLE)"
            )
        if old is not None and old.name != name:
            self.problems.append(f"{release}: {owner} field {fid} renamed {old.name} -> {name}")
        for other in [f for f in into.values() if f.name == name and f.fid != fid]:
            self.problems.append(f"{release}: {owner} {name} moved from id {other.fid} to {fid}")
            del into[other.fid]
        since = old.since if old is not None else release
        into[fid] = Field(fid, name, ftype, req, default, since)


def _wire(ftype: str) -> str:
    """A type as the binary protocol sees it (binary travels as string)."""
    return ftype.replace("binary", "string")


def _type(ftype: str, mod: str) -> str:
    """An IDL type as written inside module ``mod`` (own types unqualified)."""
    return ftype.replace(f"{mod}.", "")


def _order(mod: Module) -> list[str]:
    """Structs in dependency order (a struct after those its fields use), then by name."""
    done: list[str] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        for f in mod.structs[name].fields.values():
            for other in _refs(f.type):
                if other in mod.structs:
                    visit(other)
        done.append(name)

    for name in sorted(mod.structs):
        visit(name)
    return done


def _refs(ftype: str) -> list[str]:
    for ch in "<>,":
        ftype = ftype.replace(ch, " ")
    return [t.split(".", 1)[1] for t in ftype.split() if "." in t]


def _field_line(f: Field, mod: str, first: str, with_req: bool = True) -> str:
    req = f"{f.req} " if with_req and f.req != "default" else ""
    # No default for an optional field: thriftpy2 would fill it in on decode and
    # send it again on encode, so a proxy would add fields HMS never sent (an HMS
    # 2.3 Table would grow 3.x's ownerType and writeId). Presence is preserved.
    keep = f.default if f.req != "optional" else None
    default = f" = {_type(keep, mod)}" if keep is not None else ""
    since = f"  // HMS {f.since}+" if f.since != first else ""
    return f"{f.fid}: {req}{_type(f.type, mod)} {f.name}{default},{since}"


HEADER = """\
// GENERATED by idl/generate/generate.py from the compiled Thrift classes of
// Hive Metastore {releases}: do not edit by hand, run the generator.
//
// The union of those releases: every constant, enum, struct field and service
// method any of them declares; where they differ, the newest. Members without a
// "// HMS x+" note exist in {first}. Optional fields carry no default value
// (thriftpy2 would fill it in on decode and send it on encode: a proxy must send
// exactly the fields HMS sent).
{overrides}"""


def render(merged: Merged, mod_name: str, names: list[str]) -> str:
    mod = merged.modules[mod_name]
    first = merged.first
    notes = "".join(
        f"//\n// Local deviation: {struct}.{mod.structs[struct].fields[fid].name} {why}.\n"
        for (m, struct, fid), (_, why) in OVERRIDES.items()
        if m == mod_name
    )
    notes += "".join(
        "// Incompatible between releases (the newest is declared): "
        f"{_type(p.split(': ', 1)[1], mod_name)}\n"
        for p in merged.problems
        if p.endswith("(INCOMPATIBLE)") and mod_name == "hive_metastore"
    )
    out = [HEADER.format(releases=", ".join(names), first=first, overrides=notes)]
    if mod_name == "hive_metastore":
        out += ['include "fb303.thrift"', ""]
    out += [f"namespace py {mod_name}", ""]
    for name, (ctype, value) in sorted(mod.consts.items()):
        out.append(f"const {ctype} {name} = {value}")
    out.append("")
    for name, values in sorted(mod.enums.items()):
        out.append(f"enum {name} {{")
        out += [f"  {k} = {v}," for k, v in sorted(values.items(), key=lambda kv: kv[1])]
        out += ["}", ""]
    for name in _order(mod):
        s = mod.structs[name]
        since = f"  // HMS {s.since}+" if s.since != first else ""
        out.append(f"{s.kind} {name} {{{since}")
        for fid in sorted(s.fields):
            f = s.fields[fid]
            override = OVERRIDES.get((mod_name, name, fid))
            if override is not None:
                f = Field(f.fid, f.name, override[0], f.req, f.default, f.since)
            out.append("  " + _field_line(f, mod_name, first, s.kind != "union"))
        out += ["}", ""]
    for service, parent in sorted(mod.services.items()):
        extends = f" extends {parent}" if parent != "-" else ""
        out.append(f"service {service}{extends} {{")
        for mname, m in sorted(mod.methods[service].items()):
            success = m.results.get(0)
            ret = "void" if success is None else _type(success.type, mod_name)
            ret = f"oneway {ret}" if m.oneway else ret
            args = ", ".join(
                _field_line(a, mod_name, first).rstrip(",").split("  //")[0].rstrip(",")
                for a in sorted(m.args.values(), key=lambda a: a.fid)
            )
            throws = [r for fid, r in sorted(m.results.items()) if fid != 0]
            raises = ""
            if throws:
                raises = (
                    " throws ("
                    + ", ".join(f"{r.fid}: {_type(r.type, mod_name)} {r.name}" for r in throws)
                    + ")"
                )
            since = f"  // HMS {m.since}+" if m.since != first else ""
            out.append(f"  {ret} {mname}({args}){raises},{since}")
        out += ["}", ""]
    return "\n".join(out).rstrip("\n") + "\n"


def fetch(release: Release) -> None:
    for coordinate in release.coordinates:
        subprocess.run(
            ["mvn", "-q", "dependency:get", f"-Dartifact={coordinate}", "-Dtransitive=false"],
            check=True,
            timeout=600,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    parser.add_argument("--fetch", action="store_true", help="download missing releases")
    parser.add_argument(
        "--fetch-only", action="store_true", help="download missing releases, write nothing"
    )
    opts = parser.parse_args(argv)
    if opts.fetch_only:
        for release in releases():
            if not release.available():
                fetch(release)
        return 0
    merged = Merged()
    names = []
    for release in releases():
        if not release.available() and opts.fetch:
            fetch(release)
        if not release.available():
            print(f"HMS {release.name}: jars missing, left out (--fetch)", file=sys.stderr)
            continue
        merged.add(release.name, dump(release))
        names.append(release.name)
    for problem in merged.problems:
        print(problem, file=sys.stderr)
    stale = False
    for mod_name in ("fb303", "hive_metastore"):
        text = render(merged, mod_name, names)
        path = IDL_DIR / f"{mod_name}.thrift"
        old = path.read_text() if path.exists() else ""
        if opts.check:
            if old != text:
                stale = True
                sys.stdout.writelines(
                    difflib.unified_diff(old.splitlines(True), text.splitlines(True), str(path))
                )
        else:
            path.write_text(text)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
