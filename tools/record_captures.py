"""Records the captures under tests/data/captures/ from real tools against the stub
server, so the capture readers are tested on what those tools write, not on what
we think they write.

- playwright.har: Chromium (Debian's), driven by Playwright's Python package with
  `record_har_path`, fetching several stub scenarios from a page of the stub's origin.
- playwright-one.har: the same, one streaming scenario (and the page it ran on).
- playwright-one.zip: the same as a .zip, Playwright's form for big captures: the
  HAR names each body's file (`_file`) in the archive instead of holding it.
- chromium-cdp.har: Chromium's own network log, read over the DevTools protocol
  (Network.* events and Network.getResponseBody) as DevTools does for its HAR
  export, written as HAR 1.2 here (content.size the decoded body's bytes, as
  DevTools writes it); it holds a fetch() stream and an EventSource (whose body
  Chromium may not keep: then the HAR's body is empty).
- mitmdump.flows: `mitmdump -w` in reverse-proxy mode in front of the stub, the
  requests sent through it with urllib (one answered gzip'd: the stub's gzip fault);
  mitmdump.har: the same requests in mitmproxy's HAR export (`--set hardump=`).
- firefox.har: Firefox ESR's own HAR export, the network monitor's (the HAR
  builder its "Save All As HAR" uses, here run by its automatic export:
  `devtools.netmonitor.har.enableAutoExportToFile` with the toolbox open), of a
  page of the stub's origin that fetch()es several scenarios (one of them Bedrock's
  binary event stream) and opens an EventSource; the page is driven over
  Marionette, Firefox's own remote protocol.
- firefox-cut.har: the same, the demo stream only, with Firefox keeping 4096
  characters of a body instead of 1 MiB: the body cut as a longer one would be.
- chromium-devtools.har: Chromium's own DevTools frontend, open on the tab from
  the start (--auto-open-devtools-for-tabs), its Network panel's "Save all as HAR
  (with sensitive data)" run on the same page and requests as firefox.har; the
  frontend's save to disk is answered by us (over the DevTools protocol, on the
  frontend's own page) so that the HAR comes back instead of a Save dialog.

Every request carries `Authorization: Bearer sk-capture-secret-…` so the tests can
check it never reaches the screen or a report.

Run it with a Python that has playwright and mitmproxy (NOT the project's venv:
mitmproxy pins cryptography and more), the project's `stubs/` on the path:

    python3 -m venv /tmp/capvenv && /tmp/capvenv/bin/pip install playwright mitmproxy websockets
    apt-get install chromium firefox-esr
    PYTHONPATH=stubs /tmp/capvenv/bin/python tools/record_captures.py tests/data/captures
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from toolstream_stubs import StubServer, load_scenario

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FIREFOX = shutil.which("firefox-esr") or shutil.which("firefox") or "/usr/bin/firefox-esr"
SECRET = "sk-capture-secret-0123456789abcdef"
MANY = ("demo", "anthropic-parallel", "gemini-text-tools", "truncated")
ONE = "demo"
# A browser's HAR keeps a body of a type it does not take for text (Bedrock's binary
# event stream) base64'd: one such stream beside the others.
BROWSER_MANY = (*MANY, "bedrock-text-tools")
SPEED = 8.0  # the scenarios' own pacing, eight times faster: real gaps, a short run

FETCH_JS = """async ([url, body, key]) => {
  const response = await fetch(url, {method: "POST", body,
    headers: {"Content-Type": "application/json", "Authorization": "Bearer " + key}});
  return await response.text();
}"""
EVENT_SOURCE_JS = """(url) => new Promise((resolve) => {
  const source = new EventSource(url);
  let seen = 0;
  source.onmessage = () => { seen += 1; };
  source.onerror = () => { source.close(); resolve(seen); };
})"""


def request_body(name: str) -> str:
    scenario = load_scenario(name)
    if scenario.request is not None:
        payload = json.loads(scenario.request)
    else:
        payload = {"model": "stub-model", "messages": [{"role": "user", "content": name}]}
    payload["stream"] = True
    return json.dumps(payload)


def playwright_har(stub: StubServer, out: Path, names: tuple[str, ...]) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        content = "attach" if out.suffix == ".zip" else "embed"
        context = browser.new_context(record_har_path=str(out), record_har_content=content)
        page = context.new_page()
        page.goto(stub.base_url + "/scenarios")  # a page of the stub's origin: same-origin fetch
        for name in names:
            page.evaluate(FETCH_JS, [stub.scenario_url(name), request_body(name), SECRET])
        context.close()  # the HAR is written here
        browser.close()


def cdp_har(stub: StubServer, out: Path) -> None:
    from playwright.sync_api import sync_playwright

    events: list[tuple[str, dict[str, Any]]] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        page = browser.new_page()
        cdp = page.context.new_cdp_session(page)
        for name in (
            "Network.requestWillBeSent",
            "Network.responseReceived",
            "Network.dataReceived",
            "Network.loadingFinished",
            "Network.loadingFailed",
        ):
            cdp.on(name, lambda params, name=name: events.append((name, params)))
        cdp.send("Network.enable")
        page.goto(stub.base_url + "/scenarios")
        page.evaluate(FETCH_JS, [stub.scenario_url("demo"), request_body("demo"), SECRET])
        page.evaluate(EVENT_SOURCE_JS, stub.scenario_url("anthropic-parallel"))
        entries = [entry for entry in har_entries(events, cdp) if entry is not None]
        browser.close()
    version = "Chromium (DevTools protocol, toolstream-tui tools/record_captures.py)"
    har = {"log": {"version": "1.2", "creator": {"name": version, "version": "1"}, "pages": []}}
    har["log"]["entries"] = entries
    out.write_text(json.dumps(har, indent=2) + "\n")


def har_entries(events: list[tuple[str, dict[str, Any]]], cdp: Any) -> list[dict[str, Any] | None]:
    sent: dict[str, dict[str, Any]] = {}
    received: dict[str, dict[str, Any]] = {}
    decoded: dict[str, int] = {}  # the body's bytes as decoded, DevTools' content.size
    entries = []
    for name, params in events:
        request_id = params["requestId"]
        if name == "Network.requestWillBeSent":
            sent[request_id] = params
        elif name == "Network.responseReceived":
            received[request_id] = params
        elif name == "Network.dataReceived":
            decoded[request_id] = decoded.get(request_id, 0) + params["dataLength"]
        elif request_id in sent:
            end = params | {"decodedLength": decoded.get(request_id, 0)}
            entries.append(har_entry(sent[request_id], received.get(request_id), end, cdp))
    return entries


def har_entry(
    sent: dict[str, Any], received: dict[str, Any] | None, end: dict[str, Any], cdp: Any
) -> dict[str, Any] | None:
    if received is None:
        return None
    request, response = sent["request"], received["response"]
    content: dict[str, Any] = {"size": end["decodedLength"], "mimeType": ""}
    content["mimeType"] = response.get("mimeType", "")
    try:
        body = cdp.send("Network.getResponseBody", {"requestId": sent["requestId"]})
        content["text"] = body["body"]
        if body.get("base64Encoded"):
            content["encoding"] = "base64"
    except Exception:  # Chromium may keep no body (an EventSource's): the HAR has none
        pass
    timing = response.get("timing") or {}
    wait = timing.get("receiveHeadersEnd", 0) - timing.get("sendEnd", 0)
    receive = (end["timestamp"] - sent["timestamp"]) * 1000 - timing.get("receiveHeadersEnd", 0)
    started = datetime.fromtimestamp(sent["wallTime"], UTC).isoformat().replace("+00:00", "Z")
    entry: dict[str, Any] = {
        "startedDateTime": started,
        "time": round((end["timestamp"] - sent["timestamp"]) * 1000, 3),
        "request": {
            "method": request["method"],
            "url": request["url"],
            "httpVersion": response.get("protocol", "http/1.1"),
            "headers": pairs(request.get("headers", {})),
            "queryString": [],
            "cookies": [],
            "headersSize": -1,
            "bodySize": len(request.get("postData", "")),
        },
        "response": {
            "status": response["status"],
            "statusText": response.get("statusText", ""),
            "httpVersion": response.get("protocol", "http/1.1"),
            "headers": pairs(response.get("headers", {})),
            "cookies": [],
            "content": content,
            "redirectURL": "",
            "headersSize": -1,
            "bodySize": int(end.get("encodedDataLength", -1)),
        },
        "cache": {},
        "timings": {
            "blocked": -1,
            "dns": -1,
            "connect": -1,
            "send": round(timing.get("sendEnd", 0) - timing.get("sendStart", 0), 3),
            "wait": round(wait, 3),
            "receive": round(receive, 3),
        },
        "_resourceType": sent.get("type", "").lower(),
    }
    if "postData" in request:
        mime = request.get("headers", {}).get("Content-Type", "")
        entry["request"]["postData"] = {"mimeType": mime, "text": request["postData"]}
    return entry


def pairs(headers: dict[str, str]) -> list[dict[str, str]]:
    return [{"name": name, "value": value} for name, value in headers.items()]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def mitmdump_flows(stub: StubServer, out: Path, har: Path | None = None) -> None:
    """`out` written by `mitmdump -w`; with `har`, mitmproxy's HAR export too."""
    beside = Path(sys.executable).with_name("mitmdump")
    mitmdump = str(beside) if beside.exists() else shutil.which("mitmdump") or "mitmdump"
    port = free_port()
    command = [mitmdump, "-q", "-w", str(out), "--listen-host", "127.0.0.1"]
    command += ["-p", str(port), "--mode", f"reverse:{stub.base_url}"]
    if har is not None:
        command += ["--set", f"hardump={har}"]
    process = subprocess.Popen(command)
    try:
        wait_for_port(port)
        proxy = f"http://127.0.0.1:{port}"
        for name, zipped in (("demo", False), ("anthropic-parallel", True), ("truncated", False)):
            query = "?fault=gzip" if zipped else ""  # the stub gzips the stream when asked
            send(proxy + stub.scenario_url(name).removeprefix(stub.base_url) + query, name)
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)


def send(url: str, name: str) -> None:
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {SECRET}"}
    headers["Accept-Encoding"] = "gzip"
    request = urllib.request.Request(url, request_body(name).encode(), headers)
    with urllib.request.urlopen(request) as response:
        response.read()


def wait_for_port(port: int, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listens on port {port}")


EXPORT_IDLE_S = 5.0
FIREFOX_ATTEMPTS = 3
FIREFOX_PREFS = {
    # The network monitor exports what it saw once the page has loaded and no request
    # has moved for pageLoadedTimeout ms: long enough for every fetch below to end.
    "devtools.netmonitor.har.enableAutoExportToFile": True,
    "devtools.netmonitor.har.defaultFileName": "firefox",
    "devtools.netmonitor.har.includeResponseBodies": True,
    "devtools.netmonitor.har.pageLoadedTimeout": int(EXPORT_IDLE_S * 1000),
    "devtools.jsonview.enabled": False,  # its viewer page cannot fetch(); the page stays plain
    "browser.shell.checkDefaultBrowser": False,
    "datareporting.policy.dataSubmissionEnabled": False,
}


class ExportedEarly(Exception):
    """Firefox exported the page's HAR before the page's requests: it exports once
    per page, EXPORT_IDLE_S after the load, and a loaded machine can take longer
    than that to start the first fetch."""


def firefox_har(
    stub: StubServer,
    out: Path,
    names: tuple[str, ...] = BROWSER_MANY,
    body_limit: int | None = None,
) -> None:
    """`out` written by Firefox's network monitor: a page of the stub's origin that
    fetch()es `names` one after the other, then opens an EventSource (a GET) on
    anthropic-parallel. With `body_limit`, Firefox keeps that many characters of a
    body instead of its 1 MiB (devtools.netmonitor.responseBodyLimit), as a longer
    stream is cut. Recorded again when Firefox exported too early."""
    for attempt in range(1, FIREFOX_ATTEMPTS + 1):
        try:
            out.write_bytes(firefox_session(stub, names, body_limit))
            return
        except ExportedEarly:
            if attempt == FIREFOX_ATTEMPTS:
                raise


def firefox_session(stub: StubServer, names: tuple[str, ...], body_limit: int | None) -> bytes:
    """One Firefox, its page's requests, and the HAR it exported of them."""
    with tempfile.TemporaryDirectory() as profile, tempfile.TemporaryDirectory() as exported:
        port = free_port()
        prefs = FIREFOX_PREFS | {"marionette.port": port}
        if body_limit is not None:
            prefs["devtools.netmonitor.responseBodyLimit"] = body_limit
        prefs["devtools.netmonitor.har.defaultLogDir"] = exported
        lines = (
            f"user_pref({json.dumps(key)}, {json.dumps(value)});" for key, value in prefs.items()
        )
        Path(profile, "user.js").write_text("\n".join(lines) + "\n")
        command = [FIREFOX, "--headless", "--no-remote", "--marionette", "--devtools"]
        # Its stdout is the pages' console: noise here.
        process = subprocess.Popen(
            [*command, "-profile", profile, "about:blank"], stdout=subprocess.DEVNULL
        )
        try:
            wait_for_port(port, 60)
            with Marionette(port) as browser:
                browser.send("WebDriver:NewSession", {"capabilities": {}})
                browser.send("WebDriver:Navigate", {"url": stub.base_url + "/scenarios"})
                for name in names:
                    browser.run(FETCH_JS, [stub.scenario_url(name), request_body(name), SECRET])
                browser.run(EVENT_SOURCE_JS, stub.scenario_url("anthropic-parallel"))
                asked = [stub.scenario_url(name) for name in (*names, "anthropic-parallel")]
                har = exported_har(Path(exported) / "firefox.har", Counter(asked))
                browser.send("Marionette:Quit", {"flags": ["eForceQuit"]})
        except BaseException:
            process.kill()
            raise
        finally:
            process.wait(timeout=60)
    return har


def exported_har(path: Path, asked: Counter[str], seconds: float = 60.0) -> bytes:
    """The HAR once written with an entry for each request `asked` (every one has
    ended by now; the page and its icon come and go with the browser's timing, so
    they are not waited for). A HAR written without them that stays so for twice
    the export's idle time was exported before they began: ExportedEarly."""
    deadline = time.monotonic() + seconds
    settled = time.monotonic() + 2 * EXPORT_IDLE_S
    seen: Counter[str] | None = None
    while time.monotonic() < deadline:
        try:
            data = path.read_bytes()
            seen = Counter(entry["request"]["url"] for entry in json.loads(data)["log"]["entries"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
        else:
            if not asked - seen:
                return data
            if time.monotonic() > settled:
                raise ExportedEarly(f"Firefox's HAR at {path} was written before its requests")
        time.sleep(0.5)
    missing = ", ".join(sorted((asked - (seen or Counter())).elements()))
    raise TimeoutError(f"Firefox's HAR at {path} lacks {missing} after {seconds:.0f} s")


class Marionette:
    """Just enough of Marionette (Firefox's remote protocol: `length:JSON` packets)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=120)
        self.stream = self.sock.makefile("rb")
        self.last_id = 0
        self.read()  # the server's hello

    def __enter__(self) -> Marionette:
        return self

    def __exit__(self, *_: object) -> None:
        self.stream.close()
        self.sock.close()

    def read(self) -> Any:
        length = b""
        while (byte := self.stream.read(1)) != b":":
            if not byte:
                raise ConnectionError("Marionette closed the connection")
            length += byte
        return json.loads(self.stream.read(int(length)))

    def send(self, command: str, params: dict[str, Any]) -> Any:
        self.last_id += 1
        packet = json.dumps([0, self.last_id, command, params]).encode()
        self.sock.sendall(b"%d:%s" % (len(packet), packet))
        _kind, _id, error, result = self.read()
        if error:
            raise RuntimeError(f"Marionette {command}: {error}")
        return result

    def run(self, function: str, argument: Any) -> Any:
        """Call a page function (as Playwright's evaluate does) and await its promise."""
        script = f"return ({function})(arguments[0]);"
        return self.send("WebDriver:ExecuteScript", {"script": script, "args": [argument]})


# Run in Chromium's DevTools frontend (its own page, devtools://devtools/bundled/):
# the Network panel shown, as a user opens it, so that DevTools logs the requests.
LOADED_JS = "location.protocol === 'http:' && document.readyState === 'complete' || null"
SHOW_NETWORK_JS = """import('./ui/legacy/legacy.js').then(
  (UI) => UI.ViewManager.ViewManager.instance().showView('network')).then(() => true)"""
# How many of the requests to the stub's scenarios the panel's log holds, finished.
LOGGED_JS = """import('./models/logs/logs.js').then((Logs) =>
  Logs.NetworkLog.NetworkLog.instance().requests().filter(
    (request) => request.finished && request.url().includes('/scenarios/')).length)"""
# The panel's "Save all as HAR (with sensitive data)": its own exportAll, which
# writes through the embedder's save/append/close; those are answered here with the
# events the embedder sends, so the HAR comes back instead of going to a Save dialog.
SAVE_ALL_AS_HAR_JS = """(async () => {
  const Network = await import('./panels/network/network.js');
  const Workspace = await import('./models/workspace/workspace.js');
  const Host = await import('./core/host/host.js');
  const host = Host.InspectorFrontendHost.InspectorFrontendHostInstance;
  const files = Workspace.FileManager.FileManager.instance();
  const parts = [];
  let closed;
  const written = new Promise((resolve) => { closed = resolve; });
  host.save = (url, content) => {
    parts.push(content);
    setTimeout(() => files.savedURL({data: {url, fileSystemPath: url}}));
  };
  host.append = (url, content) => {
    parts.push(content);
    setTimeout(() => files.dispatchEventToListeners('AppendedToURL', url));
  };
  host.close = () => closed();
  await Network.NetworkPanel.NetworkPanel.instance().networkLogView.exportAll({sanitize: false});
  await written;
  return parts.join('');
})()"""


def devtools_har(stub: StubServer, out: Path, names: tuple[str, ...] = BROWSER_MANY) -> None:
    """`out` written by Chromium's DevTools frontend, its Network panel's "Save all as
    HAR": a page of the stub's origin that fetch()es `names`, then opens an
    EventSource on anthropic-parallel, with DevTools open on it from the start."""
    with tempfile.TemporaryDirectory() as profile:
        port = free_port()
        command = [CHROMIUM, "--headless", "--no-sandbox", "--no-first-run", "--no-proxy-server"]
        command += [f"--remote-debugging-port={port}", f"--user-data-dir={profile}"]
        command += ["--auto-open-devtools-for-tabs", "about:blank"]
        process = subprocess.Popen(command, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            wait_for_port(port, 60)
            page_url, devtools_url = debugged_targets(port)
            with cdp(devtools_url) as devtools, cdp(page_url) as page:
                retried(lambda: devtools.evaluate(SHOW_NETWORK_JS))  # once DevTools is up
                page.send("Page.navigate", {"url": stub.base_url + "/scenarios"})
                retried(lambda: page.evaluate(LOADED_JS))
                for name in names:
                    arguments = [stub.scenario_url(name), request_body(name), SECRET]
                    page.evaluate(f"({FETCH_JS})({json.dumps(arguments)})")
                source = json.dumps(stub.scenario_url("anthropic-parallel"))
                page.evaluate(f"({EVENT_SOURCE_JS})({source})")
                # The frontend takes the page's network events in its own time: on a
                # busy machine it had not logged the fetch()es yet when asked to save.
                made = len(names) + 1
                retried(lambda: devtools.evaluate(LOGGED_JS) >= made or None)
                out.write_text(devtools.evaluate(SAVE_ALL_AS_HAR_JS))
        finally:
            stop_browser(process)


def stop_browser(process: subprocess.Popen[bytes], seconds: float = 10.0) -> None:
    """Chromium, then every process it started: a helper that outlived it wrote into
    the profile while it was being removed ("Directory not empty")."""
    process.terminate()
    process.wait(timeout=60)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.killpg(process.pid, signal.SIGKILL)  # its session's group: Chromium's alone
        except ProcessLookupError:
            return
        time.sleep(0.1)


def debugged_targets(port: int, seconds: float = 60.0) -> tuple[str, str]:
    """The WebSocket URLs of the tab's page and of the DevTools frontend opened on it."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list") as answer:
            targets = json.load(answer)
        by_scheme = {target["url"].partition(":")[0]: target for target in targets}
        if "devtools" in by_scheme and "about" in by_scheme:  # the tab is still about:blank
            page, devtools = by_scheme["about"], by_scheme["devtools"]
            return page["webSocketDebuggerUrl"], devtools["webSocketDebuggerUrl"]
        time.sleep(0.5)
    raise TimeoutError("Chromium opened no DevTools frontend")


def retried(attempt: Any, seconds: float = 30.0) -> Any:
    """`attempt()`'s first true value, trying again while it raises or gives none."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            if result := attempt():
                return result
        except RuntimeError:
            if time.monotonic() > deadline:
                raise
        if time.monotonic() > deadline:
            raise TimeoutError("gave up waiting")
        time.sleep(0.25)


@contextmanager
def cdp(url: str) -> Iterator[Cdp]:
    """A DevTools protocol session on the target whose WebSocket is at `url`."""
    from websockets.sync.client import connect

    with connect(url, max_size=None, open_timeout=30) as socket:
        yield Cdp(socket)


class Cdp:
    """Just enough of the DevTools protocol over one target's WebSocket."""

    def __init__(self, socket: Any) -> None:
        self.socket = socket
        self.last_id = 0

    def send(self, method: str, params: dict[str, Any] | None = None) -> Any:
        self.last_id += 1
        self.socket.send(json.dumps({"id": self.last_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv(timeout=120))
            if message.get("id") == self.last_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    def evaluate(self, expression: str) -> Any:
        params = {"expression": expression, "awaitPromise": True, "returnByValue": True}
        result = self.send("Runtime.evaluate", params)
        if "exceptionDetails" in result:
            raise RuntimeError(result["exceptionDetails"].get("text", "evaluation failed"))
        return result["result"].get("value")


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data/captures")
    out.mkdir(parents=True, exist_ok=True)
    with StubServer(speed=SPEED) as stub:
        playwright_har(stub, out / "playwright.har", MANY)
        playwright_har(stub, out / "playwright-one.har", (ONE,))
        playwright_har(stub, out / "playwright-one.zip", (ONE,))  # the bodies as attached files
        cdp_har(stub, out / "chromium-cdp.har")
        mitmdump_flows(stub, out / "mitmdump.flows", out / "mitmdump.har")
        firefox_har(stub, out / "firefox.har")
        firefox_har(stub, out / "firefox-cut.har", (ONE,), body_limit=4096)
        devtools_har(stub, out / "chromium-devtools.har")
    print(f"captures written to {out}")


if __name__ == "__main__":
    main()
