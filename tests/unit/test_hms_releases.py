"""The HMS version matrix's pure parts: releases, the fetch pom, the config key."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from catalogd.config_schema import EMBEDDED_HMS_VERSIONS
from catalogd.hms.embedded.fetch import render_pom
from catalogd.hms.embedded.releases import RELEASES, VERSIONS, installed
from catalogd.hms.embedded.standalone import standalone_properties
from subscriber.protocol.errors import MetastoreUnavailableError

POM = "{http://maven.apache.org/POM/4.0.0}"


def test_the_config_key_offers_exactly_the_versions() -> None:
    assert EMBEDDED_HMS_VERSIONS == VERSIONS == ("2.3", *RELEASES)


@pytest.mark.parametrize("version", sorted(RELEASES))
def test_a_missing_release_names_what_to_fetch(version: str, tmp_path: Path) -> None:
    release = RELEASES[version]
    with pytest.raises(MetastoreUnavailableError) as caught:
        installed(version, tmp_path)
    message = str(caught.value)
    assert f"--fetch {version}" in message and "make system" in message
    assert release.distribution in message and release.hadoop in message


def test_the_pom_asks_for_hadoop_of_the_build_and_the_listener_alone() -> None:
    root = ET.fromstring(render_pom(RELEASES["3.1"]))
    deps = {d.findtext(f"{POM}artifactId"): d for d in root.iter(f"{POM}dependency")}
    assert set(deps) == {
        "hadoop-common", "hadoop-hdfs-client", "hadoop-hdfs", "hive-hcatalog-server-extensions"
    }  # fmt: skip
    assert {d.findtext(f"{POM}version") for n, d in deps.items() if "hadoop" in n} == {"3.1.0"}
    excluded = {
        e.findtext(f"{POM}artifactId") for e in deps["hadoop-common"].iter(f"{POM}exclusion")
    }
    assert {"log4j", "reload4j", "slf4j-log4j12", "jdk.tools"} <= excluded
    alone = deps["hive-hcatalog-server-extensions"].find(f"{POM}exclusions")
    assert alone is not None and alone.findtext(f"{POM}exclusion/{POM}artifactId") == "*"
    four = ET.fromstring(render_pom(RELEASES["4.x"]))
    assert "hive-hcatalog-server-extensions" not in {
        d.findtext(f"{POM}artifactId") for d in four.iter(f"{POM}dependency")
    }


def test_standalone_settings_per_version(tmp_path: Path) -> None:
    from catalogd.hms.embedded.releases import Installed

    three = Installed(RELEASES["3.1"], tmp_path, ())
    four = Installed(RELEASES["4.x"], tmp_path, ())
    props = standalone_properties(
        three, warehouse_uri="file:/w", notification_events=True, bind_loopback=True
    )
    assert props["hive.metastore.transactional.event.listeners"].endswith(
        "hcatalog.listener.DbNotificationListener"
    )
    assert props["hive.metastore.event.db.notification.api.auth"] == "false"
    assert "hive.metastore.thrift.bind.host" not in props  # 3.1 has no such key
    props = standalone_properties(
        four, warehouse_uri="file:/w", notification_events=True, bind_loopback=True
    )
    assert "hive.metastore.transactional.event.listeners" not in props
    assert props["hive.metastore.thrift.bind.host"] == "127.0.0.1"
    assert props["hive.metastore.warehouse.external.dir"] == "file:/w"
