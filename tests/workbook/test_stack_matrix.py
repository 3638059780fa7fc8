"""scripts/stack_matrix.sh: the transformers releases it runs are the tested range's, and the full tier runs it."""
import re
import subprocess
from pathlib import Path

import pytest

from csd_lib.engine.models import TRANSFORMERS_TESTED, transformers_ok

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "stack_matrix.sh"


def releases() -> dict[str, str]:
    """The RELEASES table of the script: release -> what it installs beside it."""
    table = re.search(r"declare -A RELEASES=\((.*?)\n\)", SCRIPT.read_text(encoding="utf-8"), re.S).group(1)
    return dict(re.findall(r'\[([\d.]+)\]="([^"]*)"', table))


def test_the_matrix_covers_the_oldest_tested_release_and_the_gpu_machines():
    rel = releases()
    assert TRANSFORMERS_TESTED[0] in rel and "5.17.0" in rel
    assert all(transformers_ok(v) is None for v in rel)  # only releases pyproject.toml admits
    for extra in rel.values():  # exact versions: the matrix installs the same thing every time
        assert all(re.fullmatch(r"[a-z_]+==[\d.]+", spec) for spec in extra.split())
    assert "bash scripts/stack_matrix.sh" in (ROOT / "scripts" / "test.sh").read_text(encoding="utf-8")


@pytest.mark.parametrize("args,says", [(["4.57.1"], "not in scripts/stack_matrix.sh's RELEASES"),
                                       (["--site"], "--site needs one release"),
                                       (["--site", "5.0.0", "5.17.0"], "--site needs one release")])
def test_bad_arguments_get_one_line_before_any_setup(args, says):
    r = subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1 and says in r.stderr
