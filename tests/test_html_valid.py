"""The guide's HTML, its courtyard drawing (SVG, standalone) and its style sheet pass the Nu Html
Checker (vnu.jar from the npm package vnu-jar, run by Java; tests/system-deps.sh installs both).

The guides are built through the CLI: the whole default ceremony without audio, and 貍首 with the
audio and the chapter captions the renderer writes (as ``yuexuan build`` does). A deliberately
invalid page is checked in the same run: it must be reported (the checker says nothing at all about
a file it could not read, so silence alone proves nothing).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from cli_support import DEFAULT_CUES, run_cli
from system_tools import vnu_command

pytestmark = pytest.mark.system("java, vnu-jar")

BROKEN_PAGE = "<!doctype html><html lang=en><head></head><body><p><div></p></body></html>\n"
BROKEN_SVG = '<svg xmlns="http://www.w3.org/2000/svg"><rect foo="1"/></svg>\n'


def vnu_errors(files: list[Path]) -> dict[Path, list[str]]:
    """The checker's errors for each file, checked in one run (HTML, SVG by its suffix, CSS)."""
    for f in files:
        assert f.is_file(), f"not written: {f}"
    done = subprocess.run([*vnu_command(), "--errors-only", "--also-check-css", "--also-check-svg",
                           "--format", "json", "--stdout", *map(str, files)],
                          capture_output=True, text=True, timeout=300)
    report = json.loads(done.stdout)            # not JSON: the checker itself failed (stderr below)
    errors: dict[Path, list[str]] = {}
    for m in report["messages"]:
        if m["type"] in ("error", "non-document-error"):
            where = Path(unquote(urlparse(m.get("url", "")).path)).resolve()
            errors.setdefault(where, []).append(f"line {m.get('lastLine', '?')}: {m['message']} "
                                                f"[{m.get('extract', '').strip()}]")
    return errors


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> list[Path]:
    """What the project writes for a browser: two guides (the whole ceremony without audio; 貍首 with
    its render and the renderer's chapter captions, as ``build`` makes it), a guide's glossary page
    and ``yuexuan layout``'s SVG."""
    base = tmp_path_factory.mktemp("guides")
    whole, lishou = base / "whole", base / "lishou"
    done = run_cli("guide", DEFAULT_CUES, "-o", whole, "--no-audio")
    assert done.returncode == 0, done.stderr
    audio = base / "lishou.flac"
    done = run_cli("render", DEFAULT_CUES, "--cues", "lishou", "-o", audio)
    assert done.returncode == 0, done.stderr
    assert audio.with_suffix(".vtt").is_file()
    done = run_cli("guide", DEFAULT_CUES, "--cues", "lishou", "--audio", audio, "-o", lishou)
    assert done.returncode == 0, done.stderr
    page = (lishou / "index.html").read_text(encoding="utf-8")
    assert '<track id="captions" kind="captions" src="captions.vtt"' in page and "<svg" in page
    court = base / "court.svg"
    done = run_cli("layout", DEFAULT_CUES, "-o", court)
    assert done.returncode == 0, done.stderr
    return [site / name for site in (whole, lishou) for name in ("index.html", "layout.svg", "style.css")] + \
        [court, whole / "glossary.html"]


def test_guide_html_svg_and_css_pass_the_checker(written, tmp_path):
    broken = (tmp_path / "broken.html").resolve()
    broken.write_text(BROKEN_PAGE, encoding="utf-8")
    broken_svg = (tmp_path / "broken.svg").resolve()
    broken_svg.write_text(BROKEN_SVG, encoding="utf-8")
    errors = vnu_errors([broken, broken_svg, *written])
    # the checker ran over this batch and reads HTML and standalone SVG: it reports the broken files
    assert broken in errors and broken_svg in errors, errors
    ours = {str(p): e for p, e in errors.items() if p not in (broken, broken_svg)}
    assert not ours, json.dumps(ours, ensure_ascii=False, indent=1)
