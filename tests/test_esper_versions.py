"""Every esper release the package claims, run: the tests of what the package reads of esper's
private state (``_esper_tables``), of saving, and the processors' integration tests, with
each claimed release on ``sys.path`` in a subprocess.

The claim is ``pyproject.toml``'s dependency on esper; :data:`RELEASES` lists every esper 3
release there is (3.5 was never released), so a test holds the claim and this list to each
other. Why the claim starts at 3.8, release by release (each checked by running the suite
against it):

- 3.0 and 3.1 have no ``esper.current_world``, by which every processor tells its world;
  3.2 has a function of that name, not the world's name;
- 3.3 to 3.7 lose the default world's entities, processors and handlers when another world
  is made current and then the default one again (their table of worlds holds a fresh,
  empty entry for the default world), and the delivery's rules for a handler that switches
  worlds, the guide's scene-change example and saving's round trips all rely on a switch
  and back;
- 3.6 and 3.7 also lose a world's "cache dirty" flag across a switch of worlds, so
  ``esper.get_component`` may answer a world's stale list after it; the processors' change
  stamp (``_esper_tables.world_stamp``) with it.

The wheels (a few kilobytes, pure Python) come from ``pip download esper==V --no-deps`` into
a cache directory, ``$ECS_SPATIAL_ESPER_WHEELS`` or one in the system's temporary directory.
A release that cannot be downloaded here (no network) is skipped, saying so; with
``ECS_SPATIAL_ESPER_VERSIONS=required`` in the environment (CI) that is a failure instead.
The installed esper runs the whole suite, so it is not run again here; each other claimed
release's subprocess runs the files of :data:`FILES`, about 4 s.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import esper
import pytest

ROOT = Path(__file__).resolve().parent.parent

#: Every esper 3 release, oldest first.
RELEASES = ("3.0", "3.1", "3.2", "3.3", "3.4", "3.6", "3.7", "3.8", "3.9")

#: What each release's subprocess runs: esper's private state, saving (which writes it),
#: and the processors' integration tests that switch, clear and delete worlds.
FILES = (
    "tests/test_esper_tables.py",
    "tests/test_save_restore.py",
    "tests/test_spatial_processor.py",
    "tests/test_hostile_handlers.py",
    "tests/test_delivery.py",
)


def _claim() -> tuple[tuple[int, ...], tuple[int, ...]]:
    """pyproject.toml's ``esper>=A,<B`` as (A, B), each a tuple of ints."""
    text = (ROOT / "pyproject.toml").read_text()
    match = re.search(r'"esper>=([\d.]+),<([\d.]+)"', text)
    assert match is not None, "pyproject.toml claims esper as esper>=A,<B"
    low, high = (tuple(int(part) for part in v.split(".")) for v in match.groups())
    return low, high


def _version(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in release.split("."))


def claimed() -> list[str]:
    """The releases of :data:`RELEASES` within pyproject.toml's claim."""
    low, high = _claim()
    return [r for r in RELEASES if low <= _version(r) < high]


def test_the_claim_covers_the_installed_esper_and_the_releases_listed() -> None:
    """The esper installed here is claimed, and the claim's bounds are releases listed
    (or the next major version), so that every claimed release is run below."""
    low, high = _claim()
    assert ".".join(map(str, low)) in RELEASES
    assert high == (low[0] + 1,)
    assert esper.__version__ in claimed()


def _wheel(release: str) -> Path:
    """esper ``release``'s wheel, downloaded into the cache directory if it is not there."""
    cache = Path(
        os.environ.get("ECS_SPATIAL_ESPER_WHEELS")
        or Path(tempfile.gettempdir()) / "ecs_spatial-esper-wheels"
    )
    found = sorted(cache.glob(f"esper-{release}-*.whl"))
    if found:
        return found[0]
    cache.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
         "--disable-pip-version-check", "-d", str(cache), f"esper=={release}"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    found = sorted(cache.glob(f"esper-{release}-*.whl"))
    if done.returncode != 0 or not found:
        why = f"esper {release} cannot be downloaded here: {done.stderr.strip()[-300:]}"
        if os.environ.get("ECS_SPATIAL_ESPER_VERSIONS") == "required":
            pytest.fail(why)
        pytest.skip(why)
    return found[0]


@pytest.mark.parametrize("release", [r for r in claimed() if r != esper.__version__])
def test_each_claimed_release_runs_the_tests(release: str, tmp_path: Path) -> None:
    """With esper ``release`` first on ``sys.path``, the files of FILES pass."""
    with zipfile.ZipFile(_wheel(release)) as wheel:
        wheel.extractall(tmp_path)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(tmp_path), *filter(None, [env.get("PYTHONPATH")])]
    )
    seen = subprocess.run(
        [sys.executable, "-c", "import esper; print(esper.__version__, esper.__file__)"],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=60, check=True,
    ).stdout.split()
    assert seen[0] == release and seen[1].startswith(str(tmp_path)), seen
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *FILES],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=600, check=False,
    )
    assert run.returncode == 0, f"esper {release}:\n{run.stdout[-4000:]}\n{run.stderr[-2000:]}"
