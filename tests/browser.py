"""Headless Chromium for the HTML tests: a screenshot, and axe-core's accessibility
check of a page (https://github.com/dequelabs/axe-core, MPL-2.0).

axe-core is fetched at test time with npm (``npm pack axe-core@AXE_VERSION``, npm
checks the registry's integrity hash) into a cache outside the repository
(``$FSTCHUNK_TEST_CACHE``, default ``~/.cache/fstchunk-tests``); ``FSTCHUNK_AXE`` names
an ``axe.min.js`` to use instead (offline).  The check runs in the browser without
any Python driver: a copy of the page with axe.min.js and a call of ``axe.run``
inlined is loaded with ``--dump-dom``, and the violations are read back from the
element the call writes.  Without Chromium a test skips, except in CI
(``CI=true``, where .ci/run installs it) where it fails; a missing npm or axe-core
fails everywhere (the check cannot pass without it).
"""

import json
import os
import re
import shutil
import subprocess
import tarfile

import pytest

AXE_VERSION = "4.14.1"


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def chromium() -> str:
    """The Chromium executable; a skip (a failure in CI) without one."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        msg = "chromium not installed (apt-get install chromium; .ci/run installs it)"
        if in_ci():
            pytest.fail(msg)
        pytest.skip(msg)
    return exe


def axe_script() -> str:
    """The text of axe.min.js (module doc); a failure naming what is missing."""
    given = os.environ.get("FSTCHUNK_AXE")
    if given:
        with open(given, encoding="utf-8") as fh:
            return fh.read()
    cache = os.path.join(os.environ.get("FSTCHUNK_TEST_CACHE")
                         or os.path.expanduser("~/.cache/fstchunk-tests"),
                         f"axe-core-{AXE_VERSION}")
    path = os.path.join(cache, "axe.min.js")
    if not os.path.exists(path):
        npm = shutil.which("npm")
        if npm is None:
            pytest.fail(f"npm not found: it fetches axe-core {AXE_VERSION} for the "
                        f"accessibility check (apt-get install npm; .ci/run installs it), "
                        f"or set FSTCHUNK_AXE to an axe.min.js")
        os.makedirs(cache, exist_ok=True)
        proc = subprocess.run([npm, "pack", f"axe-core@{AXE_VERSION}", "--pack-destination",
                               cache], capture_output=True, text=True, timeout=300)
        tgz = os.path.join(cache, f"axe-core-{AXE_VERSION}.tgz")
        if proc.returncode != 0 or not os.path.exists(tgz):
            pytest.fail(f"npm pack axe-core@{AXE_VERSION} failed: {proc.stderr[-1500:]}")
        with tarfile.open(tgz) as tar:
            data = tar.extractfile("package/axe.min.js").read()
        with open(path + ".part", "wb") as fh:
            fh.write(data)
        os.replace(path + ".part", path)
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def _run(args: list[str], tmp_path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--no-first-run", "--disable-extensions", "--force-device-scale-factor=1",
         "--proxy-server=127.0.0.1:9", "--force-color-profile=srgb",
         f"--user-data-dir={tmp_path / 'profile'}", *args],
        capture_output=True, text=True, timeout=180)


def axe_violations(page, tmp_path) -> list[dict]:
    """axe-core's violations on the HTML file ``page`` (every rule axe runs by default,
    WCAG 2 A/AA and best practices): ``[{"id", "impact", "help", "nodes": [html...]}]``."""
    text = page.read_text(encoding="utf-8")
    probe = ("<script>" + axe_script() + "</script><script>axe.run(document, "
             "{resultTypes: ['violations']}).then(function (r) {"
             "var out = document.createElement('pre'); out.id = 'axe-result';"
             "out.textContent = JSON.stringify(r.violations.map(function (v) {"
             "return {id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map("
             "function (n) { return n.html + ' ' + (n.failureSummary || ''); })}; }));"
             "document.body.appendChild(out); }, function (e) {"
             "var out = document.createElement('pre'); out.id = 'axe-result';"
             "out.textContent = 'axe failed: ' + e; document.body.appendChild(out); });"
             "</script>")
    assert text.count("</body>") == 1
    probed = tmp_path / ("axe-" + page.name)
    probed.write_text(text.replace("</body>", probe + "</body>"), encoding="utf-8")
    proc = _run(["--virtual-time-budget=60000", "--dump-dom", probed.as_uri()], tmp_path)
    found = re.search(r'<pre id="axe-result">(.*?)</pre>', proc.stdout, re.S)
    assert found, f"axe-core wrote no result: {proc.stderr[-2000:]}"
    import html
    result = html.unescape(found.group(1))
    assert not result.startswith("axe failed"), result
    return json.loads(result)


def screenshot(page, shot, tmp_path, size=(900, 500)) -> None:
    """A PNG of ``page`` (an HTML file) at ``size`` pixels, the network off."""
    proc = _run([f"--window-size={size[0]},{size[1]}", f"--screenshot={shot}",
                 page.as_uri()], tmp_path)
    assert shot.exists() and shot.stat().st_size > 1000, proc.stderr[-2000:]
