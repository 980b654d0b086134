"""The play server: one live battle served to a browser on the loopback interface.

:class:`PlayServer` binds ``127.0.0.1`` (never another interface) on a free port and
serves the page (the replay viewer's look, :mod:`envs.rendering`), its scripts and style
sheets from a fixed list (:data:`ASSETS`), the battle's map and state, and two POST
endpoints: an order to one of Blue's units (:meth:`~envs.play.battle.LiveBattle.order`)
and a clock command. A request that is not a valid order or clock command for the live
battle gets a 4xx answer and changes nothing; every request is handled on its own
thread, and every state carries a ``revision`` so that a slow poll cannot undo a newer
order. The clock runs on its own thread at the chosen speed (:data:`SPEED_RANGE`); when
the battle ends the replay is written to ``out_dir`` and ``on_result`` is called with the
:class:`PlayResult`. ``docs/play.md`` ("The server") lists the endpoints and the answers.
"""

from __future__ import annotations

import hmac
import html
import json
import logging
import math
import re
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any

from envs.play.battle import LiveBattle, OrderError
from envs.rendering.replay import save_replay
from envs.rendering.viewer import viewer_payload, write_replay_html
from envs.sim import constants as C
from envs.sim.validation import check_identifier, check_in_range, check_int, short_repr
from storage.files import loads_json

logger = logging.getLogger(__name__)

HOST = "127.0.0.1"
"""The only address the server binds: the loopback interface."""
MAX_BODY_BYTES = 4096
"""Largest request body read (an order takes under 100 bytes)."""
REQUEST_TIMEOUT_S = 10.0
"""A connection silent this long is closed."""
SPEED_RANGE = (0.5, 100.0)
"""Steps a second the clock may run at."""
DEFAULT_SPEED = 10.0
CLOCK_ACTIONS = ("run", "pause", "step")
ASSETS = {
    "battle_draw.js": ("envs.rendering", "text/javascript; charset=utf-8"),
    "viewer.css": ("envs.rendering", "text/css; charset=utf-8"),
    "play.js": ("envs.play", "text/javascript; charset=utf-8"),
    "play.css": ("envs.play", "text/css; charset=utf-8"),
}
"""The page's files, by name: package data of these packages."""
CONTENT_SECURITY_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; "
                           "connect-src 'self'; img-src 'self' data: blob:; base-uri 'none'; "
                           "form-action 'none'; frame-ancestors 'none'")
_SCORES = {"blue": 1.0, "draw": 0.5, "red": 0.0}


@dataclass(frozen=True)
class PlayResult:
    """How a played battle ended, from Blue's (the player's) side."""

    player: str
    red: str
    outcome: str
    """``"blue"``, ``"red"`` or ``"draw"``."""
    score: float
    """Elo's score of the battle for the player: 1 won, 0.5 drawn, 0 lost."""
    steps: int
    replay: Path
    """The replay file (``.npz``)."""
    page: Path
    """The viewer's page of the replay (``.html``)."""
    notes: dict[str, Any] = field(default_factory=dict)
    """What ``on_result`` returned (e.g. the player's new rating)."""

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "replay": str(self.replay), "page": str(self.page)}


ResultHook = Callable[[PlayResult], dict[str, Any] | None]
"""Called with the result when the battle ends; returns notes to show, or None."""


class PlayServer:
    """Serves ``battle`` to a browser (module docstring).

    Args:
        battle: the battle, at its start.
        player: the person's name (the replay's notes, the files' names, the Elo row).
        out_dir: where the replay is written when the battle ends (created).
        on_result: called with the :class:`PlayResult` when the battle ends.
        port: the port to bind, 0 for a free one.
        speed: the clock's starting speed, steps a second (:data:`SPEED_RANGE`).

    Raises:
        TypeError: for a ``battle`` that is not a LiveBattle.
        ValueError: for a player name that is empty or not printable, a port outside
            0 to 65535, a speed out of range or an ``on_result`` that is not callable.
        OSError: if the port cannot be bound.
    """

    def __init__(self, battle: LiveBattle, *, player: str, out_dir: str | Path,
                 on_result: ResultHook | None = None, port: int = 0,
                 speed: float = DEFAULT_SPEED) -> None:
        if not isinstance(battle, LiveBattle):
            raise TypeError(f"battle={short_repr(battle)} is invalid: expected a LiveBattle")
        self.player = check_identifier("player", player)
        port = check_int("port", port, minimum=0, maximum=65535)
        self.speed = check_in_range("speed", speed, *SPEED_RANGE)
        if on_result is not None and not callable(on_result):
            raise ValueError(f"on_result={short_repr(on_result)} is invalid: expected a "
                             "callable or None")
        self.battle, self.out_dir, self.on_result = battle, Path(out_dir), on_result
        self.token = secrets.token_urlsafe(24)
        self.running = False
        self.error: str | None = None
        self.result: PlayResult | None = None
        self.revision = 0
        self._lock = threading.RLock()
        self._closed = threading.Event()
        self._wake = threading.Event()
        self._threads: list[threading.Thread] = []
        self._assets = {name: resources.files(package).joinpath(name).read_bytes()
                        for name, (package, _) in ASSETS.items()}
        self._battle_json = _json_bytes(self._battle_payload())
        self._httpd = _Server((HOST, port), _Handler, self)
        self.port = int(self._httpd.server_address[1])
        self.hosts = {f"{HOST}:{self.port}", f"localhost:{self.port}"}

    @property
    def url(self) -> str:
        """The page's address."""
        return f"http://{HOST}:{self.port}/"

    # --- running and stopping ----------------------------------------------------------

    def start(self) -> PlayServer:
        """Serve and run the clock on background threads; returns the server."""
        for target, name in ((self._httpd.serve_forever, "play-http"),
                             (self._run_clock, "play-clock")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the server is closed (or ``timeout`` seconds pass); True if closed."""
        return self._closed.wait(timeout)

    def close(self) -> None:
        """Stop serving and stop the clock (a battle not over is not saved)."""
        self._closed.set()
        self._wake.set()
        if any(t.name == "play-http" for t in self._threads):
            self._httpd.shutdown()
        self._httpd.server_close()
        for thread in self._threads:
            thread.join(timeout=5)

    def __enter__(self) -> PlayServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # --- what the page reads -----------------------------------------------------------

    def _battle_payload(self) -> dict[str, Any]:
        battle = self.battle
        payload = viewer_payload(battle.replay())
        payload.update(
            player=self.player, red=battle.red.name, field=battle.field.name,
            blueUnits=battle.blue_units.tolist(),
            armFormations=[[C.FORMATION_NAMES[f] for f in formations]
                           for formations in C.ARM_FORMATIONS])
        return payload

    def state(self) -> dict[str, Any]:
        """The battle now, the clock and the result, as JSON values."""
        with self._lock:
            return {**self.battle.view(), "running": self.running, "speed": self.speed,
                    "error": self.error, "revision": self.revision,
                    "result": None if self.result is None else self.result.to_json()}

    def page(self) -> str:
        """The play page (its scripts and style sheets are :data:`ASSETS`)."""
        title = html.escape(f"{self.player} (Blue) against {self.battle.red.name} (Red)")
        speeds = "".join(f'<option value="{s}"{" selected" if s == self.speed else ""}>'
                         f"{s:g} steps/s</option>"
                         for s in sorted({1, 2, 5, 10, 25, 50, self.speed}))
        notes = html.escape(f"{self.battle.field.name}, seed {self.battle.seed}")
        return (
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{title}</title>\n<link rel=\"icon\" href=\"data:,\">\n"
            "<link rel=\"stylesheet\" href=\"/static/viewer.css\">\n"
            "<link rel=\"stylesheet\" href=\"/static/play.css\">\n</head>\n"
            f"<body data-token=\"{self.token}\">\n"
            f"<header><h1 id=\"title\">{title}</h1><p id=\"notes\">{notes}</p></header>\n"
            "<main>\n<div id=\"stage\"><canvas id=\"map\" aria-label=\"battle map\"></canvas>"
            "</div>\n<div id=\"controls\">\n"
            "<button id=\"run\" type=\"button\" title=\"run or pause the clock (space)\">"
            "Run</button>\n<button id=\"step\" type=\"button\">Step</button>\n"
            f"<label>speed <select id=\"speed\">{speeds}</select></label>\n"
            "<span id=\"counter\">step 0</span>\n</div>\n"
            "<div id=\"orders\">\n<span id=\"selected\">click one of Blue's units</span>\n"
            "<fieldset><legend hidden>a click on the map</legend>"
            "<label><input type=\"radio\" name=\"mode\" id=\"mode-move\" value=\"move\" "
            "checked> move to</label>"
            "<label><input type=\"radio\" name=\"mode\" id=\"mode-face\" value=\"face\"> "
            "face towards</label></fieldset>\n"
            "<button id=\"halt\" type=\"button\">Halt</button>\n"
            "<button id=\"fire\" type=\"button\">Fire at will</button>\n"
            "<button id=\"hold\" type=\"button\">Hold fire</button>\n"
            "<label>formation <select id=\"formation\" disabled></select></label>\n</div>\n"
            "<div id=\"message\" role=\"status\"></div>\n<div id=\"status\"></div>\n"
            "<div id=\"result\" hidden></div>\n<ul id=\"legend\"></ul>\n</main>\n"
            "<script src=\"/static/battle_draw.js\"></script>\n"
            "<script src=\"/static/play.js\"></script>\n</body>\n</html>\n")

    # --- orders and the clock -----------------------------------------------------------

    def order(self, body: Any) -> dict[str, Any]:
        """Carry out an order request (``{"unit": i, ...}``).

        Raises:
            OrderError: for anything but a valid order for the live battle.
        """
        if not isinstance(body, dict) or "unit" not in body:
            raise OrderError(400, f"order={short_repr(body)} is invalid: expected an object "
                             "with unit and some of move, face, fire, formation")
        changes = {key: value for key, value in body.items() if key != "unit"}
        with self._lock:
            orders = self.battle.order(body["unit"], changes)
            self.revision += 1
            return {"unit": body["unit"], "orders": orders}

    def clock(self, body: Any) -> dict[str, Any]:
        """Carry out a clock request (``{"action": ..., "speed": ...}``); returns the state.

        Raises:
            OrderError: for a malformed request (400) or a battle that is over (409).
        """
        if not isinstance(body, dict) or not set(body) <= {"action", "speed"} \
                or body.get("action") not in CLOCK_ACTIONS:
            raise OrderError(400, f"clock={short_repr(body)} is invalid: expected "
                             f"{{\"action\": one of {list(CLOCK_ACTIONS)}, \"speed\": steps a "
                             f"second in [{SPEED_RANGE[0]:g}, {SPEED_RANGE[1]:g}] (optional)}}")
        speed = self.speed
        if "speed" in body:
            value = body["speed"]
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not math.isfinite(value) or not SPEED_RANGE[0] <= value <= SPEED_RANGE[1]:
                raise OrderError(400, f"speed={short_repr(value)} is invalid: expected steps a "
                                 f"second in [{SPEED_RANGE[0]:g}, {SPEED_RANGE[1]:g}]")
            speed = float(value)
        with self._lock:
            if self.battle.over:
                raise OrderError(409, f"the battle is over ({self.battle.winner}): the clock "
                                 "has stopped")
            self.speed = speed
            self.revision += 1
            action = body["action"]
            self.running = action == "run"
            if action == "step":
                self._advance()
        self._wake.set()
        return self.state()

    def _advance(self) -> None:
        """One step of the battle (under the lock); the result once it is over. An error of
        Red's commander stops the clock and is shown, not raised."""
        self.revision += 1
        try:
            self.battle.step()
        except OrderError:
            raise
        except Exception as error:  # a commander from elsewhere may fail in any way
            logger.exception("the battle could not step")
            self.running = False
            self.error = f"the battle stopped: {type(error).__name__}: {error}"
            return
        if self.battle.over:
            self.running = False
            try:
                self._finish()
            except (OSError, ValueError) as error:  # e.g. out_dir cannot be written
                logger.exception("the replay could not be written")
                self.error = f"the replay could not be written: {error}"

    def _finish(self) -> None:
        """Write the replay and its viewer page, and hand the result to ``on_result``."""
        battle = self.battle
        stamp = time.strftime("%Y%m%d-%H%M%S")
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", self.player).strip("._") or "player"
        stem = self.out_dir / f"play_{stamp}_{name}"
        for n in range(2, 1000):
            if not stem.with_suffix(".npz").exists():
                break
            stem = self.out_dir / f"play_{stamp}_{name}_{n}"
        replay = battle.replay()
        path = save_replay(replay, stem.with_suffix(".npz"))
        page = write_replay_html(replay, stem.with_suffix(".html"))
        result = PlayResult(self.player, battle.red.name, battle.winner,
                            _SCORES[battle.winner], battle.step_count, path, page)
        if self.on_result is not None:
            try:
                notes = self.on_result(result) or {}
                result = PlayResult(**{**asdict(result), "notes": dict(notes)})
            except Exception as error:  # the replay is saved; the page says what failed
                logger.exception("on_result failed")
                self.error = f"the result could not be recorded: {type(error).__name__}: {error}"
        self.result = result

    def _run_clock(self) -> None:
        due = time.monotonic()
        while not self._closed.is_set():
            with self._lock:
                running, period = self.running, 1.0 / self.speed
                if running and not self.battle.over:
                    self._advance()
            if not running:
                self._wake.wait(0.1)
                self._wake.clear()
                due = time.monotonic()
                continue
            due += period
            # A slow step does not make the clock race afterwards to catch up.
            due = max(due, time.monotonic() - period)
            self._closed.wait(max(0.0, due - time.monotonic()))


class _Server(ThreadingHTTPServer):
    """The HTTP server of one :class:`PlayServer`, on threads that never keep it alive."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type, play: PlayServer) -> None:
        self.play = play
        super().__init__(address, handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up mid-answer is its own business: logged, not printed.
        logger.debug("play server: a connection from %s failed", client_address,
                     exc_info=True)


class _Handler(BaseHTTPRequestHandler):
    """One request to the play server (module docstring)."""

    server: _Server
    server_version = "wargames-play"
    sys_version = ""
    timeout = REQUEST_TIMEOUT_S

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base's name)
        logger.debug("%s %s", self.address_string(), format % args)

    def do_GET(self) -> None:  # noqa: N802 (the base class's naming)
        self._handle("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._handle("POST")

    def __getattr__(self, name: str) -> Any:
        # Any other method (HEAD, PUT, DELETE, made-up ones) is refused as not allowed,
        # not as unimplemented (a 5xx).
        if name.startswith("do_"):
            return lambda: self._send_json(405, {"error": f"method {self.command} is not "
                                                          "allowed: expected GET or POST"})
        raise AttributeError(name)

    def _handle(self, method: str) -> None:
        try:
            self._route(method)
        except OrderError as error:
            self._send_json(error.status, {"error": str(error)})
        except (TimeoutError, ConnectionError):  # the client stalled or left
            self.close_connection = True
        except Exception:  # never let one request take the server down
            logger.exception("play server: %s %s failed", method, short_repr(self.path))
            self._send_json(500, {"error": "internal error (logged)"})

    def _route(self, method: str) -> None:
        play = self.server.play
        host = self.headers.get("Host", "")
        if host not in play.hosts:
            raise OrderError(400, f"Host={short_repr(host)} is invalid: expected one of "
                             f"{sorted(play.hosts)}")
        path = self.path.split("?", 1)[0]
        gets = {"/": self._page, "/api/battle": self._battle, "/api/state": self._state}
        posts = {"/api/order": play.order, "/api/clock": play.clock}
        if path.startswith("/static/") and path[len("/static/"):] in ASSETS:
            gets[path] = self._asset
        handler = (gets if method == "GET" else posts).get(path)
        if handler is None:
            known = path in gets or path in posts
            raise OrderError(405 if known else 404, f"{method} {short_repr(path)} is invalid: "
                             "expected GET /, /static/<page file>, /api/battle, /api/state "
                             "or POST /api/order, /api/clock")
        if method == "GET":
            handler(path)
        else:
            self._send_json(200, handler(self._body()))

    def _body(self) -> Any:
        """The POST's JSON body, checked before and after it is read (``docs/play.md``)."""
        play = self.server.play
        length = self.headers.get("Content-Length")
        if length is None:
            raise OrderError(411, "Content-Length is missing: expected the body's length")
        if not length.isdigit():
            raise OrderError(400, f"Content-Length={short_repr(length)} is invalid: expected "
                             "a number of bytes")
        if int(length) > MAX_BODY_BYTES:
            self.close_connection = True  # the body is never read
            raise OrderError(413, f"Content-Length={int(length)} is invalid: expected at most "
                             f"{MAX_BODY_BYTES} bytes")
        kind = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if kind != "application/json":
            self.close_connection = True
            raise OrderError(415, f"Content-Type={short_repr(kind)} is invalid: expected "
                             "application/json")
        if not hmac.compare_digest(self.headers.get("X-Play-Token", ""), play.token):
            self.close_connection = True
            raise OrderError(403, "X-Play-Token is missing or wrong: expected the page's token")
        data = self.rfile.read(int(length))
        if len(data) != int(length):
            raise OrderError(400, f"the body has {len(data)} bytes: expected Content-Length="
                             f"{int(length)}")
        try:
            return loads_json(data, "the request body")
        except ValueError as error:
            raise OrderError(400, str(error)) from None

    def _page(self, path: str) -> None:
        self._send(200, self.server.play.page().encode("utf-8"), "text/html; charset=utf-8")

    def _asset(self, path: str) -> None:
        name = path[len("/static/"):]
        self._send(200, self.server.play._assets[name], ASSETS[name][1])

    def _battle(self, path: str) -> None:
        self._send(200, self.server.play._battle_json, "application/json")

    def _state(self, path: str) -> None:
        self._send_json(200, self.server.play.state())

    def _send_json(self, status: int, value: Any) -> None:
        self._send(status, _json_bytes(value), "application/json")

    def _send(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status, HTTPStatus(status).phrase)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), allow_nan=False).encode("utf-8")


__all__ = ["ASSETS", "CLOCK_ACTIONS", "DEFAULT_SPEED", "HOST", "MAX_BODY_BYTES",
           "REQUEST_TIMEOUT_S", "SPEED_RANGE", "PlayResult", "PlayServer", "ResultHook"]
