"""Keys go where each provider expects them, and nowhere else: not in recordings,
reports, error messages, the raw log or screenshots."""

from __future__ import annotations

import asyncio
import html
import json
import re
from pathlib import Path

import pytest

from tests.helpers.apps import frozen_clock, wait_settled
from tests.helpers.cli import CliRunner
from toolstream_stubs import StubServer, load_scenario
from toolstream_tui.app import ToolstreamApp
from toolstream_tui.core.redact import SecretScrubber
from toolstream_tui.sources.base import BodyChunk, ResponseHead, SourceItem
from toolstream_tui.sources.http import HttpRequest, HttpSource
from toolstream_tui.sources.secrets import (
    ANTHROPIC_VERSION,
    REDACTED,
    MissingKey,
    Redactor,
    auth_headers,
    scrubbed_reads,
    secrets_in,
)
from toolstream_tui.watching.options import WatchOptions

SECRET = "sk-test-9f8e7d6c5b4a3210"


def test_bearer_for_openai_style_endpoints() -> None:
    headers = auth_headers("http://127.0.0.1:1/v1/chat/completions", None, "KEY", {"KEY": SECRET})
    assert headers == {"Authorization": f"Bearer {SECRET}"}


@pytest.mark.parametrize(
    ("url", "dialect"),
    [("http://127.0.0.1:1/v1/messages", None), ("http://127.0.0.1:1/proxy", "anthropic")],
)
def test_x_api_key_for_anthropic(url: str, dialect: str | None) -> None:
    headers = auth_headers(url, dialect, "KEY", {"KEY": SECRET})
    assert headers == {"x-api-key": SECRET, "anthropic-version": ANTHROPIC_VERSION}


def test_well_known_hosts_use_the_usual_variable_and_others_get_nothing() -> None:
    environ = {"OPENAI_API_KEY": "sk-openai", "ANTHROPIC_API_KEY": "sk-ant"}
    openai = auth_headers("https://api.openai.com/v1/responses", None, None, environ)
    anthropic = auth_headers("https://api.anthropic.com/v1/messages", None, None, environ)
    local = auth_headers("http://127.0.0.1:8765/v1/chat/completions", None, None, environ)
    assert openai == {"Authorization": "Bearer sk-openai"}
    assert anthropic["x-api-key"] == "sk-ant"
    assert local == {}


GEMINI = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash"
BEDROCK = "https://bedrock-runtime.eu-west-3.amazonaws.com/model/m/converse-stream"


@pytest.mark.parametrize(
    ("url", "environ", "expected"),
    [
        (
            f"{GEMINI}:streamGenerateContent?alt=sse",
            {"GEMINI_API_KEY": "g1"},
            {"x-goog-api-key": "g1"},
        ),
        # google-genai prefers GOOGLE_API_KEY when both are set
        (
            f"{GEMINI}:streamGenerateContent",
            {"GEMINI_API_KEY": "g1", "GOOGLE_API_KEY": "g2"},
            {"x-goog-api-key": "g2"},
        ),
        (BEDROCK, {"AWS_BEARER_TOKEN_BEDROCK": "b1"}, {"Authorization": "Bearer b1"}),
        ("https://api.cohere.com/v2/chat", {"CO_API_KEY": "c1"}, {"Authorization": "Bearer c1"}),
        ("http://localhost:11434/api/chat", {"CO_API_KEY": "c1", "GEMINI_API_KEY": "g"}, {}),
        (
            "https://bedrock-runtime.amazonaws.com.evil.example/model/m",
            {"AWS_BEARER_TOKEN_BEDROCK": "b"},
            {},
        ),
    ],
)
def test_each_provider_gets_its_usual_variable_in_its_header(
    url: str, environ: dict[str, str], expected: dict[str, str]
) -> None:
    assert auth_headers(url, None, None, environ) == expected


@pytest.mark.parametrize(
    ("url", "dialect"),
    [
        ("http://127.0.0.1:1/v1beta/models/m:streamGenerateContent", None),
        ("http://127.0.0.1:1/anything", "gemini"),
    ],
)
def test_a_named_key_goes_to_gemini_as_x_goog_api_key(url: str, dialect: str | None) -> None:
    assert auth_headers(url, dialect, "KEY", {"KEY": SECRET}) == {"x-goog-api-key": SECRET}


def test_vertex_paths_take_a_bearer_token() -> None:
    url = "https://aiplatform.googleapis.com/v1/projects/p/locations/l/publishers/google/models/m:streamGenerateContent"
    assert auth_headers(url, None, "KEY", {"KEY": SECRET}) == {"Authorization": f"Bearer {SECRET}"}


def test_a_named_variable_that_is_not_set_is_an_error() -> None:
    with pytest.raises(MissingKey, match="'NOPE' is not set"):
        auth_headers("http://127.0.0.1:1/v1/chat/completions", None, "NOPE", {})


def test_redactor_covers_headers_query_and_text() -> None:
    redactor = Redactor([SECRET, "k"])  # one-letter values would redact ordinary text
    assert redactor.headers({"Authorization": f"Bearer {SECRET}", "X-Trace": "k"}) == {
        "Authorization": REDACTED,
        "X-Trace": "k",
    }
    url = redactor.url(f"http://h/v1/x?key={SECRET}&alt=sse")
    assert SECRET not in url and "alt=sse" in url
    assert redactor.text(f"said {SECRET}.") == f"said {REDACTED}."


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("/paced?events=1&offset_ms=0.5", "/paced?events=1&offset_ms=0.5"),
        ("/v1/x?a=1&b", "/v1/x?a=1&b="),  # as parsing and encoding the query give it
        ("/v1/x?a=%7E+b&&c=d=e", "/v1/x?a=~+b&c=d%3De"),
        (f"/v1/x?%6Bey={SECRET}&alt=sse", f"/v1/x?key={REDACTED}&alt=sse"),
        (f"HTTP://h/v1/x?KEY={SECRET}#", f"http://h/v1/x?KEY={REDACTED}"),
        (f"/v1/x?note={SECRET}", f"/v1/x?note={REDACTED}"),
    ],
)
def test_a_url_is_shown_the_same_however_often_it_is_redacted(url: str, shown: str) -> None:
    redactor = Redactor([SECRET])
    assert redactor.url(url) == shown
    assert redactor.url(url) == shown  # the second time, as kept


def test_secret_query_parameters_are_found_however_their_name_is_spelled() -> None:
    assert secrets_in(f"/x?%6Bey={SECRET}", {}) == [SECRET]
    assert secrets_in(f"/x?API_KEY={SECRET}&a=b", {}) == [SECRET]
    assert secrets_in("/x?monkey=1&keys=2&tokens=3", {}) == []


async def collect(items: list[SourceItem], redactor: Redactor) -> bytes:
    async def source():  # type: ignore[no-untyped-def]
        for item in items:
            yield item

    return b"".join(
        [item.data async for item in redactor.stream(source()) if isinstance(item, BodyChunk)]
    )


@pytest.mark.parametrize("cut", range(1, len(SECRET)))
def test_a_secret_split_across_reads_is_still_redacted(cut: int) -> None:
    body = f"data: echo {SECRET} end\n\n".encode()
    at = body.index(SECRET.encode()) + cut
    chunks: list[SourceItem] = [BodyChunk(body[:at], 0.0), BodyChunk(body[at:], 0.1)]
    data = asyncio.run(collect(chunks, Redactor([SECRET])))
    assert data == f"data: echo {REDACTED} end\n\n".encode()


def test_nothing_is_held_back_when_no_secret_could_start() -> None:
    chunks: list[SourceItem] = [BodyChunk(b"data: x\n\n", 0.0)]
    assert asyncio.run(collect(chunks, Redactor([SECRET]))) == b"data: x\n\n"


def test_no_secret_reaches_report_recording_or_stderr(
    cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stub's http-401-echo scenario echoes the key it received, as some servers do."""
    monkeypatch.setenv("STUB_KEY", SECRET)
    recording = tmp_path / "echo.sse"
    with StubServer("http-401-echo", speed=0) as server:
        result = cli(
            "--headless",
            "--url",
            server.url + f"?key={SECRET}",
            "--api-key-env",
            "STUB_KEY",
            "--record",
            str(recording),
        )
        (request,) = server.requests
    assert request.headers["Authorization"] == f"Bearer {SECRET}"
    report = json.loads(result.stdout)
    assert result.returncode == 1
    assert f"Incorrect API key provided: {REDACTED}" in report["error"]
    timing = recording.with_name(recording.name + ".timing.jsonl")
    everything = result.stdout + result.stderr + recording.read_text() + timing.read_text()
    assert SECRET not in everything
    recorded_request = json.loads(timing.read_text().splitlines()[1])["request"]
    assert recorded_request["headers"]["Authorization"] == REDACTED
    assert recorded_request["method"] == "GET"


@pytest.mark.parametrize(
    "value", [f"Bearer  {SECRET}", f"Bearer {SECRET}\r", f"\tBearer {SECRET} ", f" {SECRET}\n"]
)
def test_a_key_with_white_space_around_it_is_found_without_it(value: str) -> None:
    """As a model echoes it back, or an error message shows it: without the spaces or
    line end it was sent with (two spaces after Bearer, a key read with its CRLF)."""
    assert SECRET in secrets_in("http://127.0.0.1/x", {"Authorization": value}, {})


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("Ocp-Apim-Subscription-Key", True),
        ("X-Auth-Token", True),
        ("x-amz-security-token", True),
        ("X_Session", True),
        ("x-ratelimit-remaining-tokens", False),  # a count: `tokens` is another word
        ("anthropic-version", False),
        ("Keep-Alive", False),
    ],
)
def test_a_header_whose_name_says_credential_is_a_secret(name: str, secret: bool) -> None:
    headers = {name: SECRET}
    assert (SECRET in secrets_in("http://127.0.0.1/x", headers, {})) is secret
    assert (Redactor([]).headers(headers)[name] == REDACTED) is secret


@pytest.mark.parametrize(
    ("url", "secrets"),
    [
        (f"http://user:{SECRET}@127.0.0.1/x", [SECRET]),
        ("http://user:p%40ss%2Fword@127.0.0.1/x", ["p%40ss%2Fword", "p@ss/word"]),
        (f"https://{SECRET}@127.0.0.1/x", [SECRET]),  # a token as the user name
        ("https://alice@127.0.0.1/x", []),  # a name: redacting it would blank words
    ],
)
def test_a_password_in_the_url_is_a_secret(url: str, secrets: list[str]) -> None:
    assert secrets_in(url, {}, {}) == secrets
    assert SECRET not in Redactor(secrets_in(url, {}, {})).url(url)


def test_a_key_in_the_environment_is_a_secret_sent_or_not() -> None:
    environ = {"OPENAI_API_KEY": SECRET, "CO_API_KEY": " ", "PATH": "/usr/bin"}
    assert secrets_in("http://127.0.0.1/x", {}, environ) == [SECRET]


def test_a_replayed_stream_never_shows_a_key_of_this_machine(
    cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream saved elsewhere (`curl -o`) in which the model echoed the key back,
    cut across two deltas: replayed where that key is set, it is redacted everywhere."""
    monkeypatch.setenv("GEMINI_API_KEY", SECRET)
    half = len(SECRET) // 2
    deltas = [f"my key is {SECRET[:half]}", f"{SECRET[half:]}, as asked"]
    events = [{"choices": [{"index": 0, "delta": {"content": text}}]} for text in deltas]
    events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    saved = tmp_path / "echo.sse"
    saved.write_text("".join(f"data: {json.dumps(event)}\n\n" for event in events))
    bundle = tmp_path / "bundle"
    result = cli("--headless", "--replay", str(saved), "--speed", "0", "--bundle", str(bundle))
    assert json.loads(result.stdout)["text"] == f"my key is {REDACTED}, as asked"
    written = "".join(path.read_text() for path in bundle.iterdir() if path.is_file())
    assert SECRET not in result.stdout + result.stderr + written


def screen_text(svg: str) -> str:
    """The characters an SVG screenshot shows, in order: the text of its `<text>`
    elements joined (a styled run of a line is an element of its own), entities
    such as `&#160;` decoded, no-break spaces as spaces."""
    texts = re.findall(r"<text[^>]*>(.*?)</text>", svg, flags=re.DOTALL)
    return html.unescape("".join(texts)).replace("\xa0", " ")


async def test_no_secret_reaches_the_screen() -> None:
    with StubServer("http-401-echo", speed=0) as server:
        request = HttpRequest(
            url=server.url, headers={"Authorization": f"Bearer {SECRET}"}, timeout=10
        )
        app = ToolstreamApp(
            HttpSource(request, clock=frozen_clock), WatchOptions(clock=frozen_clock)
        )
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_settled(app)
            await pilot.press("l")
            await pilot.pause()
            svg = app.export_screenshot()
            exported = app.session.state.error or ""
    shown = screen_text(svg)
    assert "Incorrect API key provided" in shown
    assert SECRET not in shown
    assert SECRET not in "".join(shown.split())  # nor cut across lines by wrapping
    assert SECRET not in exported


def test_missing_stream_flag_is_pointed_out_before_sending(cli: CliRunner, tmp_path: Path) -> None:
    body = tmp_path / "request.json"
    body.write_text('{"model": "m", "messages": []}', encoding="utf-8")
    with StubServer("weather", speed=0) as server:
        result = cli("--headless", "--url", server.url, "-d", f"@{body}")
    assert 'does not set "stream": true' in result.stderr
    assert result.returncode == 0


def test_without_a_secret_the_items_pass_untouched() -> None:
    """No cost per read or per event when the request carried no secret."""

    async def source():  # type: ignore[no-untyped-def]
        yield BodyChunk(b"data: x\n\n", 0.0)

    items = source()
    assert Redactor([]).stream(items) is items
    assert Redactor(["k"]).stream(items) is items  # too short to be a secret


@pytest.mark.parametrize("scenario", ["bedrock-text-tools", "ollama-text-tools", "gemini-array"])
def test_with_a_key_each_read_of_a_stream_is_passed_on_when_it_arrives(scenario: str) -> None:
    """Bedrock's frames, Ollama's lines and Gemini's array elements reach the session
    at the read that brought them: a key in play (a Bedrock API key, a key in the
    environment of a replay) held them all to the stream's end."""
    stub = load_scenario(scenario)
    writes = [write for group in stub.writes() for write in group]
    reads: list[SourceItem] = [ResponseHead(200, stub.content_type)]
    reads += [BodyChunk(write, float(t)) for t, write in enumerate(writes)]

    async def passed_on() -> list[tuple[bytes, float]]:
        async def source():  # type: ignore[no-untyped-def]
            for item in reads:
                yield item

        items = Redactor([SECRET]).stream(source())
        return [(item.data, item.t) async for item in items if isinstance(item, BodyChunk)]

    by_time: dict[float, bytes] = {}
    for data, t in asyncio.run(passed_on()):  # the array's closing `]` comes at the end
        by_time[t] = by_time.get(t, b"") + data
    assert by_time == {float(t): write for t, write in enumerate(writes)}


@pytest.mark.parametrize("scenario", ["huge-args", "many-parallel"])
def test_with_a_key_every_read_gives_a_chunk_and_times_never_go_back(scenario: str) -> None:
    """Their events are held back now and then (arguments cut inside a `\\` escape):
    a read then still gives a chunk, or an --idle-timeout would stop a stream that
    goes on; and a held event comes at its own time, which no chunk before it
    passed."""
    writes = [write for group in load_scenario(scenario).writes() for write in group]
    scrubber = SecretScrubber([SECRET])
    scrubber.open(200, "text/event-stream")
    times: list[float] = []
    for t, write in enumerate(writes):
        chunks = scrubbed_reads(scrubber, BodyChunk(write, float(t)))
        assert chunks, f"read {t} gave nothing"
        times += [chunk.t for chunk in chunks]
    assert times == sorted(times)
    assert times[-1] == len(writes) - 1
