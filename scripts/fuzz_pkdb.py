"""Run a pkdb command-fuzzing campaign (see tests/pkdb/pkdb_fuzz.py) and print its figures.

    python scripts/fuzz_pkdb.py --lines 5000 --seed 1

Random command lines are typed into real pkdb sessions on examples/yax.py and
examples/teams.py, at host and kernel prompts; the campaign reports hangs, internal
errors (pkdb tracebacks, "pkdb failed on", gdb internal errors), sessions that ended,
and programs that did not print their right result, with the seed and transcript of
each. The exit status is 1 when anything failed. The test suite runs a short campaign
(tests/pkdb/test_fuzz.py; PKDB_FUZZ_LINES makes it longer).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "pkdb"))

import pkdb_fuzz  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=5000, help="lines to type in all")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--session-lines", type=int, default=120, help="lines per session")
    parser.add_argument("--log", type=Path, help="also write progress and failures here")
    parser.add_argument(
        "--replay", nargs=2, metavar=("PROGRAM", "SESSION_SEED"),
        help="run one session again (yax or teams, the session seed a failure names) and "
        "print its whole transcript",
    )  # fmt: skip
    options = parser.parse_args()
    if options.replay:
        return _replay(options.replay[0], int(options.replay[1]), options.session_lines)
    log_file = options.log.open("w") if options.log else None

    def log(text: str) -> None:
        stamped = f"[{time.strftime('%H:%M:%S')}] {text}"
        print(stamped, flush=True)
        if log_file:
            log_file.write(stamped + "\n")
            log_file.flush()

    with tempfile.TemporaryDirectory(prefix="pkdb-fuzz-") as work:
        figures = pkdb_fuzz.campaign(
            options.lines, options.seed, Path(work), options.session_lines, log
        )
    for failure in figures.failures:
        log(
            f"--- {failure.kind} in {failure.program} (session seed {failure.seed}) at "
            f"{failure.line[:200]!r}\n{failure.detail[:3000]}\n--- transcript:\n"
            f"{failure.transcript}"
        )
    log(f"campaign seed {options.seed}: {figures.summary()}")
    return 1 if figures.failures else 0


def _replay(name: str, seed: int, budget: int) -> int:
    program = next(p for p in pkdb_fuzz.PROGRAMS if p.name == name)
    figures = pkdb_fuzz.Figures()
    transcripts: list[str] = []
    with tempfile.TemporaryDirectory(prefix="pkdb-fuzz-") as work:
        pkdb_fuzz.run_session(
            program, seed, budget, figures, Path(work), transcript=transcripts.append
        )
    print("\n".join(transcripts))
    print(figures.summary())
    return 1 if figures.failures else 0


if __name__ == "__main__":
    sys.exit(main())
