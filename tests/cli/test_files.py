"""Files you can trust: output paths, one writer per results file, bounded work on any input, Ctrl-C.

One table: each case runs a command (in process through ``main``, or as a subprocess where the old
behaviour would block or fill memory) or an API call, and states the message, the exit status and
every file of its folder before and after (bytes of regular files; the kind of anything else). The
lock is tested with two real processes, Ctrl-C with a real SIGINT.
"""
from __future__ import annotations

import errno
import functools
import gzip
import json
import logging
import os
import signal
import stat
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

from csd_lib import config, generate, load_family, random_family
from csd_lib.cli.args import read_k, read_prompts
from csd_lib.cli.main import main
from csd_lib.engine.plan import Plan
from csd_lib.families.tasks import load_task
from csd_lib.fileio import check_output_path, write_atomic
from csd_lib.measure import records as R
from csd_lib.measure.bench import run_bench
from csd_lib.price.costmodel import CostModel
from csd_lib.price.ewif import predict_speedup

ROOT = Path(__file__).resolve().parents[2]
COSTS = ROOT / "results" / "costs-tiny-t5-cpu.json"
LLAMA_RUN = b"".join((ROOT / "results" / "tiny-llama-synth-gsm8k.jsonl").read_bytes().splitlines(True)[:14])
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
BENCH = ["bench", "--family", "tiny-t5", "--n", "1", "--methods", "ar", "--costs", "none"]
PREDICT = ["predict", "--family", "tiny-t5", "--costs", str(COSTS)]
IS_ROOT = os.name == "posix" and os.geteuid() == 0


def make_folder(d: Path) -> None:
    """The files every case starts from: a FIFO, a symlink, a folder, results files and (as root) a
    private copy of /dev/full's device node."""
    os.mkfifo(d / "fifo")
    (d / "target.json").write_bytes(b"old\n")
    (d / "link.json").symlink_to(d / "target.json")
    (d / "adir").mkdir()
    (d / "llama.jsonl").write_bytes(LLAMA_RUN)
    (d / "torn.jsonl").write_bytes(b'{"example": 0, "method": "ar", "stats": {}}\n{oops\n{"example": 1}\n')
    (d / "packed.jsonl.gz").write_bytes(gzip.compress(LLAMA_RUN, mtime=0))
    os.link(d / "target.json", d / "hardlink.json")
    if IS_ROOT:
        os.mknod(d / "full", 0o600 | stat.S_IFCHR, os.makedev(1, 7))


def snapshot(d: Path) -> dict:
    """Every path under ``d``: a regular file's bytes, else what it is (a link: its target)."""
    out = {}
    for p in sorted(d.rglob("*")):
        m = p.lstat().st_mode
        out[str(p.relative_to(d))] = (p.read_bytes() if stat.S_ISREG(m) else f"-> {os.readlink(p)}"
                                      if stat.S_ISLNK(m) else stat.filemode(m)[0])
    return out


@dataclass
class Case:
    id: str
    msg: str                          # in the one stderr line (CLI) or the ValueError (API); {d}: the folder
    argv: tuple = ()                  # CLI arguments ({d}: the folder)
    api: object = None                # callable(d) for API cases
    code: int = 2                     # exit status of a CLI case
    sub: bool = False                 # run as a subprocess: the old code would block or fill memory here
    changed: dict | None = None       # files a case may change: {name: bytes after}
    root: bool = False                # needs a device node (mknod: root only)


CASES = [
    # 1. an output path that is a device, a FIFO or a symlink
    Case("summary-json-device", "--summary-json {d}/full is a device, not a regular file",
         argv=(*BENCH, "--out", "{d}/o.jsonl", "--summary-json", "{d}/full"), root=True),
    Case("plot-fifo", "--plot {d}/fifo is a FIFO (named pipe), not a regular file",
         argv=(*BENCH, "--out", "{d}/o.jsonl", "--plot", "{d}/fifo")),
    Case("predict-out-device", "--out {d}/full is a device, not a regular file",
         argv=(*PREDICT, "--acceptance", "0.7,0.6,0.3", "--out", "{d}/full"), root=True),
    Case("write-atomic-fifo", "output {d}/fifo is a FIFO (named pipe)", api=lambda d: write_atomic(d / "fifo", "x")),
    Case("write-atomic-symlink-writes-through", "", api=lambda d: write_atomic(d / "link.json", "new\n"),
         changed={"target.json": b"new\n"}),
    Case("symlink-to-a-fifo", "--plot {d}/pipe-link is a FIFO",
         api=lambda d: ((d / "pipe-link").symlink_to(d / "fifo"), check_output_path(d / "pipe-link", "--plot")),
         changed={"pipe-link": f"-> {{d}}/fifo"}),
    Case("bench-out-fifo", "--out {d}/fifo is a FIFO (named pipe), not a regular file",
         argv=(*BENCH, "--out", "{d}/fifo"), sub=True),
    # 2. one writer per results file: a resumed file keeps the first of duplicate lines (see also the
    # two-process tests below)
    Case("resume-drops-duplicates", "", api=lambda d: _duplicates(d), changed={"dup.jsonl": None}),
    # 3. predict with another family's results
    Case("predict-other-family", "--acceptance {d}/llama.jsonl holds another family's runs (line 1: family is "
         "'tiny-llama' there, 'tiny-t5' now); predict with --family tiny-llama",
         argv=(*PREDICT, "--acceptance", "{d}/llama.jsonl")),
    # 4. bounded work: the Monte Carlo, a T5 prompt, an endless results file
    Case("mc-capped", "", api=lambda d: _mc_capped()),
    Case("t5-prompt-limit", "the prompt has 2100 tokens, more than the limit of 2048 for models with relative "
         "positions such as 'target'", api=lambda d: generate(_t5(), " ".join(["w"] * 2100), max_new_tokens=2)),
    Case("t5-prompt-limit-raised", "more than the limit of 100",
         api=lambda d: _with_limit("100", lambda: generate(_t5(), " ".join(["w"] * 101), max_new_tokens=2))),
    Case("t5-prompt-limit-bad-setting", "CSD_MAX_PROMPT_TOKENS (csd_lib.config.MAX_PROMPT_TOKENS) is 'lots'",
         api=lambda d: _with_limit("lots", lambda: generate(_t5(), "w w", max_new_tokens=2))),
    Case("bench-out-dev-zero", "--out /dev/zero is a device, not a regular file", argv=(*BENCH, "--out", "/dev/zero"),
         sub=True),
    Case("read-records-dev-zero", "results file /dev/zero is a device, not a regular file", api=lambda d: R.read_records(Path("/dev/zero"))),
    Case("read-records-too-big", "is larger than 0 MiB, more than a results file holds",
         api=lambda d: _too_big(d)),
    # 6. late checks and unclear messages
    Case("predict-out-folder-before-the-forecast", "--out {d}/adir is a directory, not a regular file",
         argv=(*PREDICT, "--acceptance", "0.7,0.6,0.3", "--out", "{d}/adir")),
    Case("write-atomic-beside-a-tmp-folder", "", api=lambda d: ((d / "new.json.tmp").mkdir(),
                                                                 write_atomic(d / "new.json", "{}\n")),
         changed={"new.json.tmp": "d", "new.json": b"{}\n"}),
    Case("write-atomic-names-the-users-path", "", api=lambda d: _failed_rename(d)),
    Case("bench-out-dev-null", "--out /dev/null is a device, not a regular file", argv=(*BENCH, "--out", "/dev/null")),
    Case("predict-acceptance-empty", "--acceptance is empty", argv=(*PREDICT, "--acceptance", "")),
    Case("predict-acceptance-folder", "--acceptance {d}/adir is a folder, not a results file",
         argv=(*PREDICT, "--acceptance", "{d}/adir")),
    Case("predict-acceptance-malformed", "{d}/torn.jsonl:2 is not a JSON record (Expecting property name enclosed "
         "in double quotes); delete that line, or give another --acceptance file",
         argv=(*PREDICT, "--acceptance", "{d}/torn.jsonl")),
    Case("predict-negative-rate", "--acceptance: base has '-0.1'; every rate must lie in [0, 1]",
         argv=(*PREDICT, "--acceptance", "-0.1,0.5,0.3")),
    Case("predict-target-no-such-folder", "argument --target: /no/such/dir: no such folder; give a local model "
         "folder", argv=("predict", "--target", "/no/such/dir", "--acceptance", "0.7")),
    Case("costs-seconds-negative", "argument --seconds: '-1' must be > 0", argv=("costs", "--seconds", "-1")),
    Case("predict-seconds-zero", "argument --seconds: '0' must be > 0", argv=(*PREDICT, "--seconds", "0")),
    Case("predict-duplicate-pair", "--acceptance gives target<-base twice; give each pair once",
         argv=(*PREDICT, "--acceptance", "target<-base=0.7,target<-base=0.2")),
    Case("bench-one-file-twice", "--out and --summary-json both name {d}/o.json",
         argv=(*BENCH, "--out", "{d}/o.json", "--summary-json", "{d}/o.json")),
    # 7. an output that is one of the command's inputs, or named for another format; inputs that are no files
    Case("predict-out-is-its-acceptance-file", "--out {d}/llama.jsonl is the --acceptance file this command reads",
         argv=(*PREDICT, "--acceptance", "{d}/llama.jsonl", "--out", "{d}/llama.jsonl")),
    Case("predict-out-is-its-costs-file", "--out {d}/target.json is the --costs file this command reads",
         argv=(*PREDICT, "--acceptance", "0.7,0.6,0.3", "--costs", "{d}/target.json", "--out", "{d}/target.json")),
    Case("predict-out-through-a-link-is-its-costs", "--out {d}/target.json is the --costs file this command reads",
         argv=(*PREDICT, "--acceptance", "0.7,0.6,0.3", "--costs", "{d}/link.json", "--out", "{d}/target.json")),
    Case("predict-out-a-hard-link-of-its-costs", "--out {d}/hardlink.json is the --costs file this command reads",
         argv=(*PREDICT, "--acceptance", "0.7,0.6,0.3", "--costs", "{d}/target.json", "--out", "{d}/hardlink.json")),
    Case("bench-summary-is-its-costs-file", "--summary-json {d}/target.json is the --costs file this command reads",
         argv=(*BENCH, "--out", "{d}/o.jsonl", "--costs", "{d}/target.json", "--summary-json", "{d}/target.json")),
    Case("bench-plot-is-its-costs-file", "--plot {d}/c.html is the --costs file this command reads",
         argv=(*BENCH, "--out", "{d}/o.jsonl", "--costs", "{d}/c.html", "--plot", "{d}/c.html")),
    Case("bench-out-is-its-costs-file", "--out {d}/target.json is the --costs file this command reads",
         argv=(*BENCH, "--out", "{d}/target.json", "--costs", "{d}/target.json")),
    Case("bench-out-is-its-k-file", "--out {d}/target.json is the --k file this command reads",
         argv=(*BENCH, "--methods", "csd", "--k", "@{d}/target.json", "--out", "{d}/target.json")),
    Case("bench-out-new-gz", "--out {d}/new.jsonl.gz: a .gz name says gzip-packed, but --out writes plain JSON "
         "lines; give --out {d}/new.jsonl", argv=(*BENCH, "--out", "{d}/new.jsonl.gz")),
    Case("bench-out-a-packed-run", "--out {d}/packed.jsonl.gz: a .gz name says gzip-packed, but --out writes plain "
         "JSON lines; give --out {d}/packed.jsonl (a packed run resumes so", argv=(*BENCH, "--out", "{d}/packed.jsonl.gz")),
    Case("bench-plot-png", "--plot {d}/p.png: the name says an image, but --plot writes HTML; give a name ending in "
         ".html or .htm", argv=(*BENCH, "--out", "{d}/o.jsonl", "--plot", "{d}/p.png")),
    Case("costs-out-gz", "--out {d}/c.json.gz: a .gz name says gzip-packed, but --out writes plain JSON",
         argv=("costs", "--family", "tiny-t5", "--out", "{d}/c.json.gz")),
    Case("prompts-file-fifo", "--prompts-file {d}/fifo is a FIFO (named pipe), not a regular file",
         argv=("generate", "--family", "tiny-t5", "--prompts-file", "{d}/fifo"), sub=True),
    Case("prompts-file-dev-zero", "--prompts-file /dev/zero is a device, not a regular file",
         argv=("generate", "--family", "tiny-t5", "--prompts-file", "/dev/zero"), sub=True),
    Case("k-file-dev-zero", "--k /dev/zero is a device, not a regular file",
         argv=("generate", "--family", "tiny-t5", "--k", "@/dev/zero", "--prompt", "w"), sub=True),
    Case("read-prompts-fifo", "prompts file {d}/fifo is a FIFO (named pipe), not a regular file",
         api=lambda d: read_prompts(str(d / "fifo"))),
    Case("read-k-dev-zero", "K file /dev/zero is a device, not a regular file", api=lambda d: read_k("@/dev/zero")),
    Case("read-records-fifo", "results file {d}/fifo is a FIFO (named pipe), not a regular file",
         api=lambda d: R.read_records(d / "fifo")),
    Case("bench-costs-fifo", "--costs {d}/fifo is a FIFO (named pipe), not a regular file",
         argv=(*BENCH, "--out", "{d}/o.jsonl", "--costs", "{d}/fifo"), sub=True),
    Case("predict-costs-dev-zero", "--costs /dev/zero is a device, not a regular file",
         argv=(*PREDICT, "--acceptance", "0.7,0.6,0.3", "--costs", "/dev/zero"), sub=True),
    Case("predict-acceptance-fifo", "--acceptance {d}/fifo is a FIFO (named pipe), not a regular file",
         argv=(*PREDICT, "--acceptance", "{d}/fifo"), sub=True),
    Case("prompts-file-too-big", "prompts file {d}/big.jsonl is larger than 0 MiB, more than a prompts file holds",
         api=lambda d: _big_prompts(d), changed={"big.jsonl": b'{"prompt": "w"}\n'}),
    Case("random-family-vocab-2", "vocab_size must be an integer >= 4", api=lambda d: random_family("t5", vocab_size=2)),
]


@functools.lru_cache(maxsize=None)
def _t5():
    return load_family("tiny-t5")


def _with_limit(value, fn):
    old = config.MAX_PROMPT_TOKENS
    config.MAX_PROMPT_TOKENS = value
    try:
        return fn()
    finally:
        config.MAX_PROMPT_TOKENS = old


def _duplicates(d: Path) -> None:
    fam = random_family("llama", vocab_size=32, n_drafters=1, seed=0)
    ex = load_task("synth-gsm8k", "test", 2)
    out = d / "dup.jsonl"
    run_bench(fam, ex, ["ar"], out, max_new_tokens=3, progress=False, warmup=0, stop_after=1)
    first = out.read_bytes()
    out.write_bytes(first + first.replace(b'"example": 0', b'"example": 0, "copy": 1'))  # the same line twice
    said = []
    handler = logging.Handler()
    handler.emit = lambda record: said.append(record.getMessage())
    logging.getLogger("csd_lib.measure.bench").addHandler(handler)
    try:
        recs = run_bench(fam, ex, ["ar"], out, max_new_tokens=3, progress=False, warmup=0)
    finally:
        logging.getLogger("csd_lib.measure.bench").removeHandler(handler)
    assert f"bench: {out} held 1 duplicate (example, method, repeat) line(s); kept the first of each" in said
    lines = out.read_bytes().splitlines(True)
    assert lines[0] == first and len(lines) == 2 and b'"copy"' not in out.read_bytes()
    assert sorted((r["example"], r["method"]) for r in recs) == [(0, "ar"), (1, "ar")]


def _mc_capped() -> None:
    plan, table = Plan.sd(4, "small"), {("target", "small"): [0.0]}
    cm = CostModel.constant({"target": 1.0, "small": 0.1})
    full = predict_speedup(plan, table, cm, n_sim=1000, horizon=128)
    cut = predict_speedup(plan, table, cm, n_sim=1000, horizon=128, max_steps=16)
    assert full["steps"] == 128 and not full["capped"]  # a rate of 0: one token a step
    assert cut["steps"] == 16 and cut["capped"] and cut["speedup"] == pytest.approx(full["speedup"], rel=0.01)


def _too_big(d: Path) -> None:
    old = R.MAX_RESULTS_BYTES
    R.MAX_RESULTS_BYTES = 10
    try:
        R.read_records(d / "llama.jsonl")
    finally:
        R.MAX_RESULTS_BYTES = old


def _big_prompts(d: Path) -> None:
    from csd_lib.cli import args
    (d / "big.jsonl").write_bytes(b'{"prompt": "w"}\n')
    old = args.MAX_PROMPTS_BYTES
    args.MAX_PROMPTS_BYTES = 10
    try:
        args.read_prompts(str(d / "big.jsonl"))
    finally:
        args.MAX_PROMPTS_BYTES = old


def _failed_rename(d: Path) -> None:
    real = os.replace

    def cross_device(src, dst):
        raise OSError(errno.EXDEV, "Invalid cross-device link", src, dst)
    os.replace = cross_device
    try:
        with pytest.raises(OSError) as e:
            write_atomic(d / "target.json", "new\n")
    finally:
        os.replace = real
    assert e.value.filename == str(d / "target.json") and ".tmp" not in str(e.value)


def _expected(case: Case, d: Path, before: dict) -> dict:
    after = dict(before)
    for name, value in (case.changed or {}).items():
        after[name] = value.format(d=d) if isinstance(value, str) else value
    return after


def _cli(argv, timeout=120):
    return subprocess.run([sys.executable, "-m", "csd_lib", *argv], capture_output=True, text=True, cwd=ROOT,
                          env=ENV, timeout=timeout, preexec_fn=_memory_cap)


def _memory_cap():
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (4 * 2 ** 30, 4 * 2 ** 30))  # /dev/zero read whole ends soon


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_files(case, tmp_path, capsys):
    if case.root and not IS_ROOT:
        pytest.skip("a private device node needs mknod (root)")
    d = tmp_path
    make_folder(d)
    before = snapshot(d)
    msg = case.msg.format(d=d)
    if case.api is not None:
        if msg:
            with pytest.raises(ValueError) as e:
                case.api(d)
            assert msg in str(e.value), str(e.value)
        else:
            case.api(d)
    else:
        argv = [a.format(d=d) for a in case.argv]
        if case.sub:
            r = _cli(argv)
            rc, out, err = r.returncode, r.stdout, r.stderr
        else:
            try:
                rc = main(argv)
            except SystemExit as e:
                rc = e.code
            out, err = capsys.readouterr()
        assert rc == case.code, err
        assert out == "" and "Traceback" not in err, err
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and msg in lines[0], err
    now = snapshot(d)
    want = _expected(case, d, before)
    for name, value in want.items():
        if value is None:  # a file the case writes itself; its content is checked inside
            want[name] = now.get(name)
    assert now == want


# -- one writer per results file: two real processes -------------------------------------------------

def _wait(cond, timeout=180.0):
    t0 = time.time()
    while not cond():
        if time.time() - t0 > timeout:
            raise AssertionError("timed out")
        time.sleep(0.1)


def test_a_second_bench_on_the_same_file_is_refused(tmp_path):
    out = tmp_path / "o.jsonl"
    argv = [sys.executable, "-m", "csd_lib", "bench", "--family", "tiny-t5", "--n", "6", "--methods", "ar,sd",
            "--costs", "none", "--max-new-tokens", "64", "--out", str(out)]
    first = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=ENV)
    try:  # the lock is taken before the family loads: the second run meets it however fast the first is
        _wait(lambda: Path(f"{out}.lock").exists() or first.poll() is not None)
        second = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=ENV, timeout=180)
        assert second.returncode == 2 and second.stdout == "", second.stderr
        assert [line for line in second.stderr.splitlines() if not line.startswith("load_task: ")] == [
            f"error: {out} is being written by another bench (pid {first.pid}, lock {os.path.realpath(out)}.lock); "
            f"wait for it to "
            f"finish, or give another --out"]
        assert first.wait(timeout=300) == 0
    finally:
        first.kill()
    keys = [(r["example"], r["method"], r["rep"]) for r in R.read_records(out)]
    assert sorted(keys) == sorted({(i, m, 0) for i in range(6) for m in ("ar", "sd")})  # each once
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.jsonl"]  # the lock went with its run


def test_no_repair_while_another_process_holds_the_file(tmp_path):
    """A file with an error line is repaired at start-up, but never under another writer's feet."""
    out = tmp_path / "o.jsonl"
    out.write_bytes(b'{"example": 0, "method": "ar", "rep": 0, "error": "RuntimeError: x"}\n')
    holder = subprocess.Popen([sys.executable, "-c", "import sys; from csd_lib.measure.bench import results_lock\n"
                               "with results_lock(sys.argv[1]):\n    print('held', flush=True); sys.stdin.read()",
                               str(out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT, env=ENV)
    try:
        assert holder.stdout.readline().strip() == "held"
        fam = random_family("llama", vocab_size=32, n_drafters=1, seed=0)
        with pytest.raises(ValueError, match=rf"is being written by another bench \(pid {holder.pid}, lock"):
            run_bench(fam, load_task("synth-gsm8k", "test", 1), ["ar"], out, max_new_tokens=3, progress=False)
        assert out.read_bytes() == b'{"example": 0, "method": "ar", "rep": 0, "error": "RuntimeError: x"}\n'
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)


# -- Ctrl-C: a real SIGINT ------------------------------------------------------------------------------

def test_ctrl_c_one_line_exit_130_file_intact_and_resumable(tmp_path):
    out = tmp_path / "o.jsonl"
    argv = [sys.executable, "-m", "csd_lib", "bench", "--family", "tiny-t5", "--n", "40", "--methods", "ar",
            "--costs", "none", "--max-new-tokens", "64", "--out", str(out)]
    # Ctrl-C's default action, as in a terminal: a shell's background job inherits SIGINT ignored
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=ENV,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        _wait(lambda: out.exists() and out.read_bytes().count(b"\n") >= 2 or p.poll() is not None)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=120)
    finally:
        p.kill()
    assert p.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    said = [line for line in err.splitlines() if "interrupted" in line]
    kept = R.read_records(out)
    assert said == [f"interrupted after {len(kept)} of 40 results; run the same command again to resume"], err
    data = out.read_bytes()
    assert data.endswith(b"\n") and len(data.splitlines()) == len(kept) >= 2  # whole lines only
    assert not (tmp_path / "o.jsonl.lock").exists()
    more = str(len({r["example"] for r in kept}) + 1)  # one example more: the rest is kept, not rerun
    again = subprocess.run([*argv[:7], more, *argv[8:]], capture_output=True, text=True, cwd=ROOT, env=ENV,
                           timeout=300)
    assert again.returncode == 0, again.stderr
    assert out.read_bytes().startswith(data) and f"bench: {len(kept)} results kept from {out}" in again.stderr


def _maps(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/maps").read_text()
    except OSError:  # the process has ended
        return ""


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc to see torch being imported")
def test_ctrl_c_while_torch_imports_is_one_line():
    """A real SIGINT sent as soon as torch's library is mapped, in the middle of ``import torch``."""
    p = subprocess.Popen([sys.executable, "-m", "csd_lib", "generate", "--family", "tiny-t5", "--prompt", "w"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=ENV,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        _wait(lambda: p.poll() is not None or "libtorch" in _maps(p.pid), timeout=60)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 130 and out == "", err
    assert "Traceback" not in err and [line for line in err.splitlines() if line] == [
        "interrupted; nothing was written"], err


def test_warnings_are_note_lines(monkeypatch, capsys):
    """A library warning (predict's 'does not fit') is one note line, without its source line."""
    import csd_lib.cli.commands as C

    def fake_predict(*a, **kw):
        warnings.warn("flan-t5 does not fit this device: 45 GiB needed", stacklevel=2)
        raise ValueError("stop here")
    monkeypatch.setattr(C, "predict_for_device", fake_predict)
    assert main(["predict", "--family", "tiny-t5", "--acceptance", "0.7,0.6,0.3"]) == 2
    assert capsys.readouterr().err.splitlines() == ["note: flan-t5 does not fit this device: 45 GiB needed",
                                                    "error: stop here"]


def test_load_family_hides_weight_bars_in_plain_python():
    r = subprocess.run([sys.executable, "-c", "from csd_lib import load_family; load_family('tiny-t5')"],
                       capture_output=True, text=True, cwd=ROOT, env=ENV, timeout=180)
    assert r.returncode == 0 and "Loading weights" not in r.stderr, r.stderr


@pytest.mark.slow  # prices every plan at acceptance 0 (about 30 s); _mc_capped is the fast twin
def test_predict_shows_a_bar_and_notes_the_cap(tmp_path):
    r = subprocess.run([sys.executable, "-m", "csd_lib", *PREDICT, "--acceptance", "0,0,0", "--out",
                        str(tmp_path / "p.json")], capture_output=True, text=True, cwd=ROOT, env=ENV, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "predict: pricing plans: 100%" in r.stderr, r.stderr
    res = json.loads((tmp_path / "p.json").read_text())
    assert any(n.startswith("Monte Carlo: ") and "cut at 32 steps" in n for n in res["notes"])
