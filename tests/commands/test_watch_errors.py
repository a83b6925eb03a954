"""Error paths end with one clear line on stderr, the right exit code, and
everything received kept in the report — never a traceback."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import io
import json
import operator
import os
import pty
import signal
import socket
import string
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers.apps import wait_received
from tests.helpers.cli import CliRunner, console_script
from tests.helpers.streaming import assert_close_timing, untimed
from tests.helpers.waiting import until_true
from toolstream_stubs import StubServer
from toolstream_tui.app import ToolstreamApp
from toolstream_tui.app.apps.watch import exit_status
from toolstream_tui.cli import main
from toolstream_tui.commands.watch import build_parser, build_source
from toolstream_tui.core.events import Status
from toolstream_tui.core.exit_codes import EXIT_INCOMPLETE, EXIT_INTERRUPTED, EXIT_OUTPUT_FAILED
from toolstream_tui.sources.base import TransportError
from toolstream_tui.sources.http import HttpRequest, HttpSource, describe_transport_error
from toolstream_tui.watching.options import WatchOptions

PARTIAL_BODY = (
    b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_cut",'
    b'"type":"function","function":{"name":"get_weather","arguments":""}}]}}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":'
    b'{"arguments":"{\\"city\\":\\"Ber"}}]}}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{"tool_ca'
)


@pytest.fixture
def cutting_server() -> Iterator[str]:
    """Sends a chunked SSE response, then drops the connection mid-chunk."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve_once() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(65536)
            head = (
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n"
            )
            chunk = b"%x\r\n" % (len(PARTIAL_BODY) + 100) + PARTIAL_BODY
            connection.sendall(head + chunk)

    thread = threading.Thread(target=serve_once, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{port}/v1/chat/completions"
    thread.join(timeout=10)
    listener.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_connection_refused_names_the_url(cli: CliRunner) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1/chat/completions"
    result = cli("--headless", "--url", url, "--timeout", "5")
    report = json.loads(result.stdout)
    assert result.returncode == 1
    assert report["status"] == "error"
    assert report["error"] == f"connection refused: {url}"
    assert result.stderr.strip() == f"toolstream-tui: connection refused: {url}"
    assert "Traceback" not in result.stderr


def test_stream_cut_mid_arguments_is_truncated_with_the_partial_buffer(
    cli: CliRunner, cutting_server: str
) -> None:
    result = cli("--headless", "--url", cutting_server, "--timeout", "10")
    report = json.loads(result.stdout)
    assert result.returncode == EXIT_INCOMPLETE
    assert report["status"] == "truncated"
    (call,) = report["tool_calls"]
    assert call["arguments_raw"] == '{"city":"Ber'
    assert call["arguments"] is None
    assert "before the finish" in call["error"]
    kinds = {anomaly["kind"] for anomaly in report["anomalies"]}
    assert {"connection-lost", "unterminated-event"} <= kinds
    assert '{"choices":[{"index":0,"delta":{"tool_ca' in report["trailing"]
    assert "truncated" in result.stderr
    assert "Traceback" not in result.stderr


def test_request_method_body_and_headers_reach_the_server(cli: CliRunner, tmp_path: Path) -> None:
    body = tmp_path / "request.json"
    body.write_text('{"model": "m", "stream": true}', encoding="utf-8")
    with StubServer("weather", speed=0) as server:
        result = cli(
            "--headless",
            "--url",
            server.url,
            "-d",
            f"@{body}",
            "-H",
            "Authorization: Bearer sk-test",
            "-H",
            "X-Trace: 42",
        )
        (request,) = server.requests
    assert result.returncode == 0
    assert request.method == "POST"
    assert request.body == body.read_bytes()
    headers = {name.lower(): value for name, value in request.headers.items()}
    assert headers["authorization"] == "Bearer sk-test"
    assert headers["x-trace"] == "42"
    assert headers["content-type"] == "application/json"


def test_without_data_the_request_is_a_get(cli: CliRunner) -> None:
    with StubServer("weather", speed=0) as server:
        assert cli("--headless", "--url", server.url).returncode == 0
        assert cli("--headless", "--url", server.url, "-X", "post").returncode == 0
        methods = [request.method for request in server.requests]
    assert methods == ["GET", "POST"]


def test_recording_replays_to_the_same_report(cli: CliRunner, tmp_path: Path) -> None:
    recording = tmp_path / "demo.sse"
    with StubServer("demo", split="random", seed=5, speed=0) as server:
        live = cli("--headless", "--url", server.url, "--record", str(recording))
    replayed = cli("--headless", "--replay", str(recording), "--speed", "0")
    live_report, replay_report = json.loads(live.stdout), json.loads(replayed.stdout)
    assert live.returncode == replayed.returncode == 0
    assert replay_report["source"] == str(recording)
    for report in (live_report, replay_report):
        del report["source"]
    assert untimed(replay_report) == untimed(live_report)
    assert_close_timing(replay_report["timing"], live_report["timing"])
    assert recording.read_bytes().startswith(b"data: ")


def test_a_bare_sse_file_replays(cli: CliRunner, tmp_path: Path) -> None:
    body = tmp_path / "cut.sse"
    body.write_bytes(PARTIAL_BODY)
    result = cli("--headless", "--replay", str(body), "--speed", "0")
    report = json.loads(result.stdout)
    assert result.returncode == EXIT_INCOMPLETE
    assert report["tool_calls"][0]["arguments_raw"] == '{"city":"Ber'


def test_http_error_recording_replays_as_the_same_error(cli: CliRunner, tmp_path: Path) -> None:
    recording = tmp_path / "401.sse"
    with StubServer("http-401", speed=0) as server:
        live = cli("--headless", "--url", server.url, "--record", str(recording))
    replayed = cli("--headless", "--replay", str(recording))
    assert live.returncode == replayed.returncode == 1
    assert json.loads(replayed.stdout)["error"] == json.loads(live.stdout)["error"]


@pytest.mark.parametrize(
    ("args", "message", "code"),
    [
        (["--scenario", "nope"], "unknown scenario 'nope'; known: ", 2),
        (["--url", "http://127.0.0.1:9/", "-H", "no colon"], "is not of the form 'Name: value'", 2),
        (["--url", "http://127.0.0.1:9/", "-d", "@/no/such/file"], "cannot read request body", 1),
        (["--replay", "/no/such/file.sse"], "cannot read recording /no/such/file.sse", 1),
    ],
)
def test_bad_input_gets_one_clear_line(
    cli: CliRunner, args: list[str], message: str, code: int
) -> None:
    """Exit 2: the command line is wrong; exit 1: a URL or file it names cannot be used."""
    result = cli("--headless", *args)
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert result.returncode == code


def test_list_scenarios_names_each_with_a_description(cli: CliRunner) -> None:
    result = cli("--list-scenarios")
    lines = result.stdout.splitlines()
    assert result.returncode == 0
    names = {line.split()[0] for line in lines}
    assert {"demo", "weather", "huge-args", "many-parallel", "http-401"} <= names
    assert all(len(line.split(maxsplit=1)) == 2 for line in lines)


# -- malformed URLs (every one a single line, exit 1) ------------------------------

REFUSING_HOST = "127.0.0.1:9"  # the discard port: closed, so a well-formed URL is refused
NO_URL_SYNTAX = st.text(alphabet=string.ascii_letters + string.digits + ".-_", max_size=12)
WITHOUT_HTTP_SCHEME = st.builds(
    operator.add,
    st.sampled_from(["", "ftp://", "file://", "ws://", "//", "htp://", "http:", "http:/"]),
    NO_URL_SYNTAX,
)
UNPARSABLE_URLS = st.one_of(  # each fails before any connection is tried
    st.builds(  # an IPv6 bracket never closed
        "http://[{}".format,
        st.text(alphabet=st.characters(exclude_characters="]"), max_size=12),
    ),
    st.builds(  # a port out of range, or not a number
        "http://127.0.0.1:{}/v1/chat/completions".format,
        st.integers(min_value=65536, max_value=10**12)
        | st.text(alphabet=string.ascii_letters + "-+", min_size=1, max_size=6),
    ),
    st.builds(  # no host
        "https://{}".format, st.sampled_from(["", "/", ":80/", "/v1/messages", "?key=sk-1"])
    ),
    st.builds(  # a control character
        f"http://{REFUSING_HOST}/{{}}".format,
        st.characters(max_codepoint=0x1F) | st.just("\x7f"),
    ),
)
MALFORMED_URLS = WITHOUT_HTTP_SCHEME | UNPARSABLE_URLS


def run_main(*args: str) -> tuple[int, str, str]:
    """The command line in this process: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exit:
            code = int(exit.code or 0)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("url", ["http://[::1", "http://127.0.0.1:99999/x"])
def test_the_reported_malformed_urls_are_one_line_and_exit_1(cli: CliRunner, url: str) -> None:
    result = cli("--headless", "--url", url)
    assert result.returncode == 1
    assert result.stderr.startswith("toolstream-tui: --url is not a URL that can be requested:")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


@settings(max_examples=150, deadline=None)
@given(url=MALFORMED_URLS)
def test_any_malformed_url_is_one_line_and_exit_1(url: str) -> None:
    # --url=VALUE: a value that starts with '-' (hypothesis found '-A') is still the URL.
    code, _, err = run_main("--headless", f"--url={url}", "--timeout", "10")
    assert code == 1, err
    assert err.startswith("toolstream-tui: ") and err.count("\n") == 1, err
    assert "Traceback" not in err


async def source_items(url: str, headers: dict[str, str] | None = None) -> list[object]:
    source = HttpSource(HttpRequest(url=url, headers=headers or {}, timeout=10))
    return [item async for item in source.items()]


@settings(max_examples=150, deadline=None)
@given(url=UNPARSABLE_URLS)
def test_the_http_source_ends_any_unparsable_url_with_one_transport_error(url: str) -> None:
    """Without the check up front, the source still fails in one line, never raising
    (a ValueError from the URL parser, an exception group from the socket layer). Not
    given other schemes: httpx speaks ws://, and would go out to the network."""
    *_, last = asyncio.run(source_items(url))
    assert isinstance(last, TransportError)
    assert last.message.startswith("invalid URL ") and "\n" not in last.message


def test_whatever_the_transport_raises_ends_the_stream_in_one_line() -> None:
    """httpx refuses a header value outside ASCII with a UnicodeEncodeError."""
    *_, last = asyncio.run(source_items(f"http://{REFUSING_HOST}/", {"X-Note": "café"}))
    assert isinstance(last, TransportError)
    assert last.message.startswith(f"cannot request http://{REFUSING_HOST}/: ")
    assert "\n" not in last.message


def test_an_exception_group_from_the_socket_layer_is_named_by_what_is_inside() -> None:
    group = ExceptionGroup(
        "unhandled errors in a TaskGroup", [OverflowError("port must be 0-65535")]
    )
    request = HttpRequest(url="http://127.0.0.1:1/x")
    message = describe_transport_error(group, request)
    assert message == "cannot request http://127.0.0.1:1/x: port must be 0-65535"


# -- numbers out of range are usage errors naming the range ------------------------


@pytest.mark.parametrize(
    ("option", "value", "rule"),
    [
        ("--speed", "-1", "a number >= 0"),
        ("--speed", "nan", "a number >= 0"),
        ("--speed", "1e-320", "0 (as fast as possible) or a number >= 0.001"),
        ("--speed", "0.0009", "0 (as fast as possible) or a number >= 0.001"),
        ("--typing-cps", "-3", "a number > 0"),
        ("--typing-cps", "0", "a number > 0"),
        ("--stall-threshold", "-1", "a number > 0"),
        ("--max-event-bytes", "0", "an integer >= 1"),
        ("--max-bytes", "-5", "an integer >= 1"),
        ("--max-bytes", "1.5", "an integer >= 1"),
        ("--timeout", "0", "a number > 0"),
        ("--timeout", "-2", "a number > 0"),
        ("--idle-timeout", "-1", "a number > 0"),
        ("--idle-timeout", "inf", "a number > 0"),
    ],
)
def test_a_number_out_of_range_is_a_usage_error_naming_the_range(
    option: str, value: str, rule: str
) -> None:
    code, out, err = run_main("--headless", "--scenario", "weather", option, value)
    assert code == 2
    assert out == ""
    assert err == (
        f"toolstream-tui: error: argument {option}: expected {rule}, got {value!r}"
        " (see toolstream-tui --help)\n"
    ), "one line, no usage block above it"


URL = "http://127.0.0.1:9/v1/chat/completions"  # never reached: refused before
NO_NAME = "an empty name: name a file or folder"
STDIN = "'-' (stdin or stdout) is not taken here: name a file (./- for a file called -)"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--replay", ""), f"argument --replay: {NO_NAME}"),  # an unset $FILE, not `.`
        (("--replay", "-"), f"argument --replay: {STDIN}"),
        (("open", "-"), f"argument FILE: {STDIN}"),
        (("--scenario", "weather", "--record", ""), f"argument --record: {NO_NAME}"),
        (("--scenario", "weather", "--bundle", "-"), f"argument --bundle: {STDIN}"),
    ],
)
def test_a_file_named_nothing_or_dash_is_a_usage_error(args: tuple[str, ...], said: str) -> None:
    code, out, err = run_main("--headless", *args) if args[0] != "open" else run_main(*args)
    assert (code, out) == (2, "")
    [line] = err.splitlines()
    assert f"error: {said} (see toolstream-tui" in line


def test_the_smallest_valid_numbers_are_taken() -> None:
    args = build_parser().parse_args(
        ["--speed", "0", "--max-bytes", "1", "--max-event-bytes", "1", "--timeout", "0.001"]
    )
    assert (args.speed, args.max_bytes, args.max_event_bytes, args.timeout) == (0, 1, 1, 0.001)
    assert build_parser().parse_args(["--speed", "0.001"]).speed == 0.001


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--scenario", "weather", "-d", "@req.json"), "-d is a request option: give --url too"),
        (("--scenario", "weather", "-H", "X: y", "-X", "POST"), "-X, -H are request options"),
        (("--replay", "x.sse", "--api-key-env", "KEY"), "--api-key-env is a request option"),
        (("--scenario", ""), "unknown scenario ''"),
        (("--url", URL, "-H", "X: a\r\nY: b"), "is not of the form 'Name: value' on one line"),
        (("--url", URL, "-H", "X Y: z"), "is not of the form 'Name: value' on one line"),
        (("--url", URL, "-X", "GE T"), "-X 'GE T' is not an HTTP method"),
        (("--url", URL, "-X", ""), "-X '' is not an HTTP method"),
        (("--url", URL, "--api-key-env", "EMPTY_KEY"), "environment variable 'EMPTY_KEY' is empty"),
    ],
)
def test_a_request_option_that_cannot_be_sent_is_a_usage_error(
    args: tuple[str, ...], said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before anything is sent: each is one line, exit 2 (an option without --url used
    to be dropped without a word, an empty --scenario ran demo, a CR in a header or a
    space in a method failed later as a source, exit 1, in httpx's words)."""
    monkeypatch.setenv("EMPTY_KEY", "")
    code, out, err = run_main("--headless", *args)
    assert (code, out) == (2, "")
    [line] = err.splitlines()
    assert said in line


# -- exit codes: the app gives what headless gives; one rule for files ---------------

FINISHED_BODY = (
    b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)


def source_args(case: str, tmp_path: Path) -> list[str]:
    if case == "refused":
        return ["--url", f"http://127.0.0.1:{free_port()}/v1/chat/completions"]
    bodies = {"finished": FINISHED_BODY, "truncated": PARTIAL_BODY}
    recording = tmp_path / f"{case}.sse"
    if case in bodies:
        recording.write_bytes(bodies[case])
    return ["--replay", str(recording), "--speed", "0"]


@pytest.mark.parametrize(
    ("case", "code"),
    [("missing", 1), ("refused", 1), ("truncated", EXIT_INCOMPLETE), ("finished", 0)],
)
async def test_the_app_exits_with_the_code_headless_gives(
    cli: CliRunner, tmp_path: Path, case: str, code: int
) -> None:
    args = source_args(case, tmp_path)
    assert cli("--headless", *args).returncode == code
    app = ToolstreamApp(build_source(build_parser().parse_args(args)))
    async with app.run_test() as pilot:
        await wait_received(app)
        await pilot.press("q")
    assert exit_status(app) == code


async def test_quitting_the_app_before_the_stream_ends_exits_0() -> None:
    with socket.create_server(("127.0.0.1", 0)) as silent:  # takes the request, never answers
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/"
        app = ToolstreamApp(HttpSource(HttpRequest(url=url)))
        async with app.run_test() as pilot:
            await pilot.press("q")
    assert not app.session.ended
    assert exit_status(app) == 0


async def test_quitting_before_the_end_exits_0_with_bundle_too(tmp_path: Path) -> None:
    """--bundle cuts the stream where the person quit, to bundle it: that cut is
    theirs, not the stream's, and no failure."""
    with socket.create_server(("127.0.0.1", 0)) as silent:
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/"
        options = WatchOptions(bundle=tmp_path / "bundle")
        app = ToolstreamApp(HttpSource(HttpRequest(url=url)), options)
        async with app.run_test() as pilot:
            await pilot.press("q")
    assert app.session.state.status is Status.TRUNCATED, "cut there for the bundle"
    assert exit_status(app) == 0


def test_an_unreadable_request_body_exits_1_like_an_unreadable_recording(
    cli: CliRunner, tmp_path: Path
) -> None:
    missing = tmp_path / "missing.json"
    body = cli("--headless", "--url", "http://127.0.0.1:9/", "-d", f"@{missing}")
    replay = cli("--headless", "--replay", str(missing))
    assert body.returncode == replay.returncode == 1
    assert (
        body.stderr
        == f"toolstream-tui: cannot read request body {missing}: no such file or directory\n"
    )
    assert (
        replay.stderr
        == f"toolstream-tui: cannot read recording {missing}: no such file or directory\n"
    )
    assert (
        json.loads(replay.stdout)["error"]
        == f"cannot read recording {missing}: no such file or directory"
    )


# -- no terminal: a hint, not escape codes into a pipe --------------------------------


def without_a_terminal(*args: str) -> subprocess.CompletedProcess[str]:
    """The console script with stdin, stdout and stderr none of them a terminal."""
    return subprocess.run(
        [console_script("toolstream-tui"), *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_app_without_a_terminal_says_to_use_headless() -> None:
    result = without_a_terminal("--scenario", "weather")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        "toolstream-tui: the app needs a terminal and stdout is not one; "
        "add --headless for a JSON report\n"
    )


def run_with_stdout(stdout: int, *args: str) -> subprocess.CompletedProcess[str]:
    """The console script with stdout on file descriptor `stdout`, no stdin."""
    return subprocess.run(
        [console_script("toolstream-tui"), *args],
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_app_with_a_terminal_but_no_keyboard_says_so() -> None:
    primary, secondary = pty.openpty()
    try:
        result = run_with_stdout(secondary, "--scenario", "weather")
    finally:
        os.close(secondary)
        os.close(primary)
    assert result.returncode == 2
    assert "the app needs a terminal and stdin is not one" in result.stderr


def test_the_diff_view_without_a_terminal_says_to_use_headless(tmp_path: Path) -> None:
    recording = tmp_path / "a.sse"
    recording.write_bytes(FINISHED_BODY)
    result = without_a_terminal("diff", str(recording), str(recording))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        "toolstream-tui diff: the diff view needs a terminal and stdout is not one; "
        "add --headless for the diff as JSON\n"
    )


# -- --version and --help ---------------------------------------------------------------


def test_version_is_the_installed_distribution_version() -> None:
    code, out, _ = run_main("--version")
    assert code == 0
    assert out == f"toolstream-tui {importlib.metadata.version('toolstream-tui')}\n"


def test_help_names_every_provider_it_reads() -> None:
    code, out, _ = run_main("--help")
    description = " ".join(out[out.index("Watch LLM tool calls") : out.index("options:")].split())
    assert code == 0
    assert "OpenAI-compatible" not in out
    providers = (
        "OpenAI chat completions and Responses",
        "Anthropic Messages",
        "Gemini",
        "Vertex AI",
        "Bedrock",
        "Cohere",
        "Ollama",
        "Vercel AI SDK",
    )
    for provider in providers:
        assert provider in description
    assert "in any dialect (see --dialect)" in " ".join(out.split())


# -- a reader that stops reading ----------------------------------------------------------


def read_a_little_then_close(*args: str) -> tuple[int, str]:
    """Run the console script with its stdout read for 10 bytes, then closed, as
    `| head -c 10` does; its exit code and stderr."""
    process = subprocess.Popen(
        [console_script("toolstream-tui"), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    assert len(process.stdout.read(10)) == 10
    process.stdout.close()
    stderr = process.stderr.read().decode()
    return process.wait(timeout=120), stderr


def test_a_report_whose_reader_went_away_exits_141_in_one_line(tmp_path: Path) -> None:
    """The report of huge-args (6 MB) outgrows any pipe's buffer: its writes fail."""
    bundle = tmp_path / "bundle"
    code, stderr = read_a_little_then_close(
        "--headless", "--scenario", "huge-args", "--speed", "0", "--bundle", str(bundle)
    )
    assert code == 141  # as a shell reports a command that SIGPIPE ended
    assert "Traceback" not in stderr and "Exception" not in stderr
    assert json.loads((bundle / "report.json").read_text())["status"] == "finished"


@pytest.mark.parametrize(
    "args",
    [("--list-scenarios",), ("--headless", "--scenario", "weather", "--speed", "0")],
)
def test_output_for_a_reader_gone_before_it_starts_exits_141(args: tuple[str, ...]) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # every write to stdout fails: small outputs fail at the last flush
    try:
        result = run_with_stdout(write_end, *args)
    finally:
        os.close(write_end)
    assert (result.returncode, result.stderr) == (141, "")


# -- a stdout that refuses what it is given -------------------------------------------------

FULL_DISK = Path("/dev/full")  # Linux: every write to it fails with ENOSPC


@pytest.mark.skipif(not FULL_DISK.exists(), reason="no /dev/full on this system")
@pytest.mark.parametrize(
    "args",
    [
        ("--headless", "--scenario", "weather", "--speed", "0"),
        ("--list-anomalies",),
        ("--list-scenarios",),
    ],
)
def test_a_full_disk_under_stdout_is_one_line_and_exit_74(args: tuple[str, ...]) -> None:
    with FULL_DISK.open("wb") as full:
        result = run_with_stdout(full.fileno(), *args)
    assert result.returncode == EXIT_OUTPUT_FAILED
    assert result.stderr == "toolstream-tui: cannot write to stdout: no space left on device\n"


@pytest.mark.skipif(not FULL_DISK.exists(), reason="no /dev/full on this system")
def test_a_stderr_that_refuses_its_messages_changes_no_exit_code(tmp_path: Path) -> None:
    """A truncated stream exits 4 whether or not its one line could be shown."""
    cut = tmp_path / "cut.sse"
    cut.write_bytes(b'data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\ndata: {"cho')
    with FULL_DISK.open("wb") as full:
        result = subprocess.run(
            [console_script("toolstream-tui"), "--replay", str(cut), "--headless"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=full,
            timeout=120,
            check=False,
        )
    assert result.returncode == EXIT_INCOMPLETE
    assert json.loads(result.stdout)["status"] == "truncated"


@pytest.mark.skipif(not FULL_DISK.exists(), reason="no /dev/full on this system")
def test_a_report_refused_by_a_full_disk_still_leaves_its_bundle(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    with FULL_DISK.open("wb") as full:
        result = run_with_stdout(
            full.fileno(),
            "--headless",
            "--scenario",
            "weather",
            "--speed",
            "0",
            "--bundle",
            str(bundle),
        )
    assert result.returncode == EXIT_OUTPUT_FAILED
    assert json.loads((bundle / "report.json").read_text())["status"] == "finished"


@pytest.mark.parametrize("encoding", ["cp1252", "ascii"])
def test_a_stdout_in_another_encoding_gets_the_same_report_escaped(encoding: str) -> None:
    """The demo's text holds 北京: as JSON escapes, it is the same report."""
    args = ("--headless", "--scenario", "demo", "--speed", "0")
    utf8 = subprocess.run(
        [console_script("toolstream-tui"), *args], capture_output=True, timeout=120, check=False
    )
    other = subprocess.run(
        [console_script("toolstream-tui"), *args],
        capture_output=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONIOENCODING": encoding},
    )
    assert (other.returncode, other.stderr) == (utf8.returncode, utf8.stderr)
    assert other.stdout.isascii()
    report, expected = json.loads(other.stdout), json.loads(utf8.stdout)
    report.pop("timing"), expected.pop("timing")  # the live stub's own pace
    assert report == expected


def test_a_closed_stdout_is_no_traceback() -> None:
    script = console_script("toolstream-tui")
    result = subprocess.run(
        ["sh", "-c", f"exec '{script}' --headless --scenario weather --speed 0 >&-"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (result.returncode, result.stderr) == (0, "")


@pytest.mark.parametrize(
    ("sent", "status", "why"),
    [
        (signal.SIGINT, EXIT_INTERRUPTED, "interrupted by the user"),
        (signal.SIGTERM, 128 + signal.SIGTERM, "terminated (SIGTERM)"),
    ],
    ids=["SIGINT", "SIGTERM"],
)
def test_a_signal_mid_stream_still_reports_and_bundles_what_arrived(
    stub: StubServer, tmp_path: Path, sent: signal.Signals, status: int, why: str
) -> None:
    """Ctrl-C, or a CI job's timeout or cancel (SIGTERM): the report of what arrived,
    truncated, and the bundle, as the README promises for a failing CI run."""
    recording, bundle = tmp_path / "stalled.sse", tmp_path / "bundle"
    url = stub.scenario_url("weather") + "?fault=stall&at=4&seconds=120"
    command = [console_script("toolstream-tui"), "--headless", "--url", url]
    process = subprocess.Popen(
        [*command, "--record", str(recording), "--bundle", str(bundle)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        until_true(
            lambda: recording.exists() and recording.read_bytes().count(b"\n\n") >= 3,
            "three events recorded",
        )
        process.send_signal(sent)
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == status, err
    report = json.loads(out)
    assert report["status"] == "truncated" and report["tool_calls"], "what arrived stands"
    assert why in err.decode()
    bundled = json.loads((bundle / "report.json").read_text(encoding="utf-8"))
    assert bundled["status"] == "truncated"


@pytest.mark.parametrize(
    ("scenario", "dialect", "warned"),
    [("aisdk-text-tools", "openai-chat", True), ("weather", "openai-chat", False)],
)
def test_a_forced_dialect_that_reads_nothing_says_so(
    scenario: str, dialect: str, warned: bool
) -> None:
    """An AI SDK stream read as chat completions finished (its [DONE]) with nothing
    understood, exit 0, and only the report's unexpected-shape anomalies hinted."""
    _, out, err = run_main(
        "--headless", "--scenario", scenario, "--speed", "0", "--dialect", dialect
    )
    assert json.loads(out)["dialect"] == dialect
    said = f"--dialect {dialect} read nothing of this stream"
    assert (said in err) == warned, err
    if warned:
        assert "25 of its 26 events ignored): another dialect's?" in err
