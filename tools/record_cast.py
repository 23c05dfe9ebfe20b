#!/usr/bin/env python3
# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Record ``ovos-a2a demo`` and ``ovos-a2a chat`` as asciinema casts (v2), for the README.

    python tools/record_cast.py                  # docs/demo.cast, docs/chat.cast (+ .svg, see below)
    python tools/record_cast.py --only chat --out /tmp/casts

Each command runs in a pseudo-terminal (pexpect) and everything it prints is written with
its time as asciinema's cast v2: a JSON header line, then one ``[seconds, "o", text]``
line per output. ``asciinema play docs/chat.cast`` replays one in a terminal. The chat
talks to the bridge with the embedded offline persona (the one ``ovos-a2a demo`` starts),
so a recording needs nothing but this checkout installed with ``[server]``.

With ``--svg`` (the default when ``npx`` is on the PATH) each cast is also rendered to an
animated SVG by ``svg-term-cli`` from npm (``npx --yes svg-term-cli``).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pexpect

ROOT = Path(__file__).resolve().parent.parent
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
WIDTH, HEIGHT = 100, 28
PROMPT = "\x1b[1;32m$\x1b[0m "
CHAT_TURNS = ("/help", "hello", "my name is Ada", "what is my name?", "/new", "what is my name?", "/quit")
#: how a person reads what appears: seconds per word, and the least and most a piece of output is left alone
READING_SECONDS_PER_WORD = 0.3
READING_PAUSE = (0.6, 4.0)
#: the longest wait of the recording kept as it was (a slower step is shortened to this)
LONGEST_WAIT = 1.5
#: seconds the last screen stays before a viewer loops the recording
HOLD_LAST = 8.0


class Cast:
    """Output of one terminal session, with the time each piece appeared."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.start = time.monotonic()
        self.events: list[tuple[float, str]] = []

    # pexpect's logfile_read interface
    def write(self, text: str) -> None:
        if text:
            self.events.append((round(time.monotonic() - self.start, 3), text))

    def flush(self) -> None:
        pass

    def type(self, child: pexpect.spawn, line: str, pace: float = 0.04) -> None:
        """Type ``line`` as a person would (the terminal echoes it), then Enter."""
        for ch in line:
            child.send(ch)
            child.expect_exact(ch)  # its echo, recorded at the time it appears
            time.sleep(pace)  # the pace of the recording, not a wait for anything
        child.send("\r")

    def save(self, path: Path) -> Path:
        header = {"version": 2, "width": WIDTH, "height": HEIGHT, "timestamp": int(time.time()),
                  "title": self.title, "env": {"TERM": "xterm-256color", "SHELL": "/bin/bash"}}
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(json.dumps(header) + "\n")
            for at, text in paced(self.events):
                f.write(json.dumps([at, "o", text], ensure_ascii=False) + "\n")
        return path


def reading_time(text: str) -> float:
    """How long a person takes to read ``text`` as it appears (a typed character: no time)."""
    words = len(ANSI.sub("", text).split())
    if words <= 1 and len(text.strip()) <= 1:
        return 0.0
    low, high = READING_PAUSE
    return min(max(words * READING_SECONDS_PER_WORD, low), high)


def paced(events: list[tuple[float, str]]) -> list[tuple[float, str]]:
    """``events`` re-timed as a person would watch them: each piece of output stays at least as
    long as it takes to read, a slow step waits at most :data:`LONGEST_WAIT`, and the last
    screen stays :data:`HOLD_LAST` seconds (an SGR reset, which draws nothing, marks the end)."""
    out: list[tuple[float, str]] = []
    now = 0.0
    for (at, text), following in zip(events, [*events[1:], None]):
        out.append((round(now, 3), text))
        recorded = (following[0] - at) if following else 0.0
        now += max(min(recorded, LONGEST_WAIT), reading_time(text))
    out.append((round(now + HOLD_LAST, 3), "\x1b[0m"))
    return out


def spawn(argv: list[str], cast: Cast, env: dict[str, str], timeout: float) -> pexpect.spawn:
    cast.write(PROMPT + "ovos-a2a " + " ".join(argv) + "\r\n")
    child = pexpect.spawn(sys.executable, ["-m", "ovos_a2a_solver.cli", *argv], env=env, encoding="utf-8",
                          timeout=timeout, dimensions=(HEIGHT, WIDTH))
    child.logfile_read = cast
    return child


def finish(child: pexpect.spawn, what: str) -> None:
    child.expect(pexpect.EOF)
    child.close()
    if child.exitstatus != 0:
        raise SystemExit(f"record_cast: {what} ended with status {child.exitstatus}")


def record_demo(out: Path, env: dict[str, str], timeout: float) -> Path:
    cast = Cast("ovos-a2a demo")
    child = spawn(["demo"], cast, env, timeout)
    finish(child, "ovos-a2a demo")
    return cast.save(out / "demo.cast")


def record_chat(out: Path, env: dict[str, str], timeout: float) -> Path:
    from ovos_a2a_solver.demo import start_bridge

    with tempfile.TemporaryDirectory(prefix="ovos-a2a-cast-") as state:
        proc, url, _name = start_bridge(state, timeout=timeout)
        try:
            cast = Cast("ovos-a2a chat")
            child = spawn(["chat", url], cast, env, timeout)
            for turn in CHAT_TURNS:
                child.expect_exact("you> ")
                cast.type(child, turn)
            finish(child, "ovos-a2a chat")
        finally:
            proc.terminate()
            proc.wait(10)
    return cast.save(out / "chat.cast")


def render_svg(cast: Path) -> Path | None:
    """``cast`` as an animated SVG next to it, with svg-term-cli (npm); None without npx."""
    npx = shutil.which("npx")
    if not npx:
        print("record_cast: no npx: skipping the SVG", file=sys.stderr)
        return None
    svg = cast.with_suffix(".svg")
    subprocess.run([npx, "--yes", "svg-term-cli", "--in", str(cast), "--out", str(svg), "--window",
                    "--no-cursor", "--width", str(WIDTH), "--height", str(HEIGHT)], check=True)
    svg.write_text(with_static_frame(svg.read_text(encoding="utf-8")), encoding="utf-8")
    return svg


#: the frames svg-term-cli lays side by side, each shown in turn by moving the strip
FRAME = re.compile(r'<svg( x="\d+")?>((?:<use [^>]*/>)*)</svg>')


def with_static_frame(svg: str) -> str:
    """``svg`` whose first frame is its last screen. svg-term-cli's animation starts at its second
    frame, and its first one, an empty terminal, is all a viewer that does not play animations
    (an image preview, a page on the package index) shows: there it shows the whole session."""
    frames = list(FRAME.finditer(svg))
    if len(frames) < 2 or frames[0].group(1):
        raise SystemExit("record_cast: the SVG's frames are not where svg-term-cli puts them")
    first, last = frames[0], frames[-1]
    return svg[:first.start()] + f"<svg>{last.group(2)}</svg>" + svg[first.end():]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs", help="where the casts go (default docs/)")
    parser.add_argument("--only", choices=("demo", "chat"), help="record just this one")
    parser.add_argument("--svg", action=argparse.BooleanOptionalAction, default=None,
                        help="render each cast to SVG with svg-term-cli (default: when npx is available)")
    parser.add_argument("--timeout", type=float, default=120, help="seconds to wait for any one step")
    args = parser.parse_args(argv)
    env = {**os.environ, "COLUMNS": str(WIDTH), "LINES": str(HEIGHT), "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    made = []
    if args.only in (None, "demo"):
        made.append(record_demo(args.out, env, args.timeout))
    if args.only in (None, "chat"):
        made.append(record_chat(args.out, env, args.timeout))
    svg = args.svg if args.svg is not None else bool(shutil.which("npx"))
    for cast in made:
        print(cast)
        if svg:
            rendered = render_svg(cast)
            if rendered:
                print(rendered)
    return 0


if __name__ == "__main__":
    sys.exit(main())
