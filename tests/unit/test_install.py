"""Installing curator beside elasticsearch-curator, and the licence the metadata names.

elasticsearch-curator installs an import package `curator` and a `curator` command too.
In one environment the two overwrite each other; in separate tool environments (pipx,
uv tool, two venvs: what README.md recommends) each command runs its own package. The
test builds a stand-in for elasticsearch-curator with the same layout (an environment
whose site-packages holds a `curator` package and whose bin/ holds a `curator` script),
puts it first on PATH and activates it, then runs curator's real console script: the real
elasticsearch-curator needs a download, which the suite does not make.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

from curator import __version__

ROOT = Path(__file__).resolve().parents[2]
CURATOR = Path(sys.executable).parent / "curator"


def _stand_in(tmp_path: Path) -> Path:
    """An 'elasticsearch-curator' environment: `curator` package and command of its own."""
    env = tmp_path / "es-curator"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    purelib = sysconfig.get_path("purelib", vars={"base": str(env), "platbase": str(env)})
    package = Path(purelib) / "curator"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('__version__ = "8.0.21"\nELASTICSEARCH = True\n')
    (package / "cli.py").write_text('def main():\n    print("elasticsearch-curator stand-in")\n')
    script = env / "bin" / "curator"
    script.write_text(f"#!{env / 'bin' / 'python'}\nfrom curator.cli import main\nmain()\n")
    script.chmod(0o755)
    return env


def test_the_console_script_runs_its_own_package_beside_elasticsearch_curator(tmp_path):
    other = _stand_in(tmp_path)
    activated = {**os.environ, "PATH": f"{other / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
                 "VIRTUAL_ENV": str(other)}
    activated.pop("PYTHONPATH", None)
    # the other tool's command is the one on PATH...
    theirs = subprocess.run(["curator"], env=activated, capture_output=True, text=True, timeout=30)
    assert theirs.stdout.strip() == "elasticsearch-curator stand-in"
    # ...and curator's own script, called by its path, is unaffected by it
    ours = subprocess.run([str(CURATOR), "--version"], env=activated, capture_output=True, text=True, timeout=60)
    assert ours.returncode == 0 and __version__ in ours.stdout, ours.stderr
    ws = tmp_path / "evals"
    made = subprocess.run([str(CURATOR), "init", str(ws)], env=activated, capture_output=True, text=True,
                          timeout=60)
    assert made.returncode == 0, made.stderr
    status = subprocess.run([str(CURATOR), "status", "--json"], env=activated, cwd=ws, capture_output=True, text=True, timeout=60)
    assert status.returncode == 0 and '"corpus"' in status.stdout, status.stderr
    # python -m curator in curator's environment imports curator's package, not theirs
    module = subprocess.run([sys.executable, "-c", "import curator, curator.cli.main; print(curator.__file__)"],
                            env=activated, capture_output=True, text=True, timeout=60)
    assert module.returncode == 0 and str(ROOT / "curator") in module.stdout


def test_the_licence_named_by_the_metadata_is_shipped():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert meta["license"] == "Apache-2.0"
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.lstrip().startswith("Apache License") and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
