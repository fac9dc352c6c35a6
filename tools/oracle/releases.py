"""Engine releases the recorders run, and the folder each release's recordings live in.

A release is named on the command line as `--release vllm==0.34.0`; its recordings go to
tests/data/oracle/releases/<engine>-<version>/ (cases/, models/, cases-models.json), where the
tests find every release by folder. A case or recording that only exists from some release on
carries `since` (e.g. {"vllm": "0.34.0"}) and is left out of older releases.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
RELEASES_DIR = REPO / "tests" / "data" / "oracle" / "releases"
ENGINES = ("vllm", "sglang")


def parse_release(spec: str) -> tuple[str, str]:
    """"vllm==0.34.0" → ("vllm", "0.34.0")."""
    engine, sep, version = spec.partition("==")
    if not sep or engine not in ENGINES or not version:
        raise SystemExit(f"--release: expected ENGINE==VERSION with ENGINE one of {ENGINES}, got {spec!r}")
    return engine, version


def add_release_arguments(ap) -> None:
    ap.add_argument("--release", action="append", default=[], metavar="ENGINE==VERSION",
                    help="an engine release to record (repeat for both engines), e.g. vllm==0.34.0")


def releases_of(args) -> dict[str, str]:
    releases = dict(parse_release(s) for s in args.release)
    if not releases:
        raise SystemExit("name the releases to record: --release vllm==0.34.0 --release sglang==0.5.23")
    return releases


def release_dir(engine: str, version: str) -> Path:
    return RELEASES_DIR / f"{engine}-{version}"


def engine_version(engine: str, version: str) -> str:
    """What recordings write as engine_commit / engine_version: "vllm 0.34.0"."""
    return f"{engine} {version}"


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def holds(item: dict, engine: str, version: str) -> bool:
    """Whether a case or recording with an optional `since` {engine: version} exists at
    `engine` `version`."""
    since = (item.get("since") or {}).get(engine)
    return since is None or _key(version) >= _key(since)
