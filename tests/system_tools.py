"""The system tools some tests measure with (installed by tests/system-deps.sh): a missing one
FAILS the test, naming it — a check that quietly skips is not a check."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def require(*tools: str) -> None:
    """Fail the calling test, naming every tool of ``tools`` that is not on the PATH."""
    missing = [t for t in tools if not shutil.which(t)]
    if missing:
        pytest.fail(f"missing {', '.join(missing)}: run tests/system-deps.sh as root", pytrace=False)


def vnu_command() -> list[str]:
    """``java -jar …/vnu.jar`` (the Nu Html Checker from npm); fails naming what is missing."""
    java = shutil.which("java")
    npm = shutil.which("npm")
    root = subprocess.run([npm, "root", "-g"], capture_output=True, text=True).stdout.strip() if npm else ""
    jar = Path(root) / "vnu-jar" / "build" / "dist" / "vnu.jar"
    missing = ([] if java else ["java (Debian default-jre-headless)"]) + \
              ([] if npm else ["npm (Debian npm)"]) + \
              ([] if npm and jar.is_file() else [f"vnu.jar (npm install -g vnu-jar; looked for {jar})"])
    if missing:
        pytest.fail("the Nu Html Checker cannot run: missing " + ", ".join(missing)
                    + "; run tests/system-deps.sh as root", pytrace=False)
    # a short run: C1's quick code and the serial collector (half the CPU of the JVM's default,
    # 2.2 s against 4.4 s for the guide's three files; the same messages); the checker's schema
    # needs a deeper stack than C1's frames leave in the default 1 MB
    return [java, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xss8m", "-jar", str(jar)]
