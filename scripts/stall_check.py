"""Execute notebooks headless again and again and report every cell that stalls.

    python scripts/stall_check.py --notebooks 00,01 --families tiny-t5,tiny-llama --runs 30 --cell-timeout 60

Each execution runs one notebook top to bottom in a fresh kernel with nbclient (what nbconvert
--execute and papermill use), with CSD_FAMILY set to the family. For every cell it records the
client's wall time and the kernel's own times (the ``date`` of the kernel's busy, reply and idle
messages), so a wait that the kernel did not cause is visible: the *lag* of a cell is how long the
client went on waiting after the kernel had sent both its execute reply and its idle status.
A cell *stalls* when it hits the cell timeout (an error, or a reply that only arrives at the
deadline) or when its lag exceeds --max-lag seconds.

Prints one line per execution (notebook, family, run, seconds, slowest cell, largest lag, stalls)
and a summary (executions, stalls, max cell time). --log FILE writes one JSON line per execution
with every cell's times and, for a stalled cell, the messages the client received with both clocks.
Exit status: 0 when nothing stalled, 1 on any stall or failed execution, 2 on bad arguments.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--notebooks", default="00,01",
                   help="comma-separated notebook paths or prefixes in notebooks/ (default 00,01)")
    p.add_argument("--families", default="tiny-t5,tiny-llama", help="comma-separated CSD_FAMILY values")
    p.add_argument("--runs", type=int, default=1, help="executions per notebook and family (default 1)")
    p.add_argument("--cell-timeout", type=float, default=60.0, help="seconds one cell may take (default 60)")
    p.add_argument("--max-lag", type=float, default=3.0,
                   help="seconds the client may wait after the kernel is done with a cell (default 3)")
    p.add_argument("--seed", default=None, help="CSD_SEED for the notebooks (default: unset, the notebooks' own)")
    p.add_argument("--log", default=None, help="write one JSON line per execution to this file")
    args = p.parse_args(argv)
    if args.runs < 1:
        p.error(f"--runs must be at least 1, got {args.runs}")
    if args.cell_timeout <= 0 or args.max_lag <= 0:
        p.error(f"--cell-timeout and --max-lag must be positive, got {args.cell_timeout} and {args.max_lag}")
    args.notebook_paths = [find_notebook(n, p.error) for n in args.notebooks.split(",") if n]
    args.family_list = [f for f in args.families.split(",") if f]
    for f in args.family_list:
        if not (ROOT / "data" / "models" / f"{f}.json").is_file():
            p.error(f"--families: {f!r} is not an embedded family (no data/models/{f}.json)")
    if not args.notebook_paths or not args.family_list:
        p.error("give at least one notebook and one family")
    return args


def find_notebook(name: str, error) -> Path:
    """A notebook path, or the single notebook in notebooks/ whose name starts with ``name``."""
    path = Path(name)
    if path.suffix == ".ipynb":
        if not path.is_file():
            error(f"--notebooks: no file {name}")
        return path.resolve()
    match = sorted((ROOT / "notebooks").glob(f"{name}*.ipynb"))
    if len(match) != 1:
        error(f"--notebooks: {name!r} names {len(match)} notebooks in notebooks/, not one")
    return match[0]


def _kernel_time(msg) -> float:
    """The kernel's clock for a message (seconds since the epoch)."""
    d = msg["header"]["date"]
    return d.timestamp() if hasattr(d, "timestamp") else float("nan")


def _relative(seen: list[dict], start: float) -> list[dict]:
    """The messages of one cell with both clocks in seconds since the cell was sent (None: not known)."""
    def rel(t):
        return None if t != t else round(t - start, 3)
    return [dict(m, kernel=rel(m["kernel"]), client=rel(m["client"])) for m in seen]


def _client_class():
    from nbclient import NotebookClient

    class TimedClient(NotebookClient):
        """A NotebookClient that notes, for each cell, when each message was sent and received."""

        def process_message(self, msg, cell, cell_index):
            self._seen.append(dict(channel="iopub", type=msg["msg_type"], kernel=_kernel_time(msg),
                                   client=time.time(),
                                   state=msg["content"].get("execution_state")))
            return super().process_message(msg, cell, cell_index)

        def _wrap_shell(self):
            """Note every shell message's arrival (the execute reply among them) and every send."""
            get = self.kc.shell_channel.get_msg

            async def get_msg(*a, **kw):
                from jupyter_core.utils import ensure_async
                msg = await ensure_async(get(*a, **kw))
                self._seen.append(dict(channel="shell", type=msg["msg_type"], kernel=_kernel_time(msg),
                                       client=time.time(), state=msg["content"].get("status")))
                return msg
            self.kc.shell_channel.get_msg = get_msg
            send = self.kc.shell_channel.send

            def send_msg(msg):  # what the client sends while a cell runs (nbclient's Output widget mimic)
                send(msg)
                self._seen.append(dict(channel="shell", type="sent " + msg["msg_type"], kernel=float("nan"),
                                       client=time.time(), state=None))  # when the send returned
            self.kc.shell_channel.send = send_msg

    return TimedClient


def execute_once(path: Path, family: str, args) -> dict:
    """Execute one notebook in a fresh kernel; per-cell times and the stalls found."""
    import nbformat
    from nbclient.exceptions import CellTimeoutError

    os.environ["CSD_FAMILY"] = family
    if args.seed is not None:
        os.environ["CSD_SEED"] = str(args.seed)
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    nb = nbformat.read(path, as_version=4)
    cells, state = [], {}

    def on_execute(cell, cell_index):
        if not state.get("wrapped"):
            client._wrap_shell()
            state["wrapped"] = True
        client._seen = []
        state.update(index=cell_index, start=time.time())

    def on_executed(cell, cell_index, execute_reply):
        end = time.time()
        seen = client._seen
        reply = next((m for m in seen if m["channel"] == "shell" and m["type"] == "execute_reply"), None)
        idle = next((m for m in seen if m["type"] == "status" and m["state"] == "idle"), None)
        busy = next((m for m in seen if m["type"] == "status" and m["state"] == "busy"), None)
        done = max((m["kernel"] for m in (reply, idle) if m), default=float("nan"))
        rec = dict(cell=cell_index, wall=round(end - state["start"], 3),
                   kernel=round(done - busy["kernel"], 3) if busy else None,
                   lag=round(end - done, 3) if done == done else None,
                   reply_lag=round(reply["client"] - reply["kernel"], 3) if reply else None,
                   idle_lag=round(idle["client"] - idle["kernel"], 3) if idle else None)
        rec["stall"] = bool(rec["wall"] >= args.cell_timeout or rec["lag"] is None or rec["lag"] > args.max_lag)
        if rec["stall"]:
            rec["messages"] = _relative(seen, state["start"])
        cells.append(rec)

    client = _client_class()(nb, timeout=int(args.cell_timeout), kernel_name="python3",
                             resources={"metadata": {"path": str(path.parent)}},
                             on_cell_execute=on_execute, on_cell_executed=on_executed)
    client._seen = []
    t0, error = time.time(), None
    try:
        client.execute()
    except CellTimeoutError as e:
        error = f"cell {state.get('index')} timed out: {str(e).splitlines()[0]}"
        cells.append(dict(cell=state.get("index"), wall=round(time.time() - state["start"], 3), kernel=None,
                          lag=None, stall=True, timeout=True,
                          messages=_relative(client._seen, state["start"])))
    except Exception as e:  # a failing cell is reported, not a stall
        error = f"cell {state.get('index')}: {type(e).__name__}: {str(e).strip().splitlines()[-1][:200]}"
    return dict(notebook=path.name, family=family, seconds=round(time.time() - t0, 1), error=error, cells=cells,
                stalls=[c["cell"] for c in cells if c["stall"]])


def main(argv=None) -> int:
    args = parse_args(argv)
    log = open(args.log, "a") if args.log else None
    n = n_stalls = n_failed = 0
    max_cell, max_lag = (0.0, None), (0.0, None)
    for run in range(1, args.runs + 1):
        for family in args.family_list:
            for path in args.notebook_paths:
                r = execute_once(path, family, args)
                r["run"] = run
                n += 1
                n_stalls += bool(r["stalls"])
                n_failed += r["error"] is not None and not r["stalls"]
                slow = max(r["cells"], key=lambda c: c["wall"], default=None)
                lagged = max((c for c in r["cells"] if c.get("lag") is not None), key=lambda c: c["lag"], default=None)
                if slow and slow["wall"] > max_cell[0]:
                    max_cell = (slow["wall"], f"{path.name} cell {slow['cell']}")
                if lagged and lagged["lag"] > max_lag[0]:
                    max_lag = (lagged["lag"], f"{path.name} cell {lagged['cell']}")
                print(f"{path.name} {family} run {run}: {r['seconds']:.0f} s; slowest cell "
                      f"{slow['cell'] if slow else '-'} {slow['wall'] if slow else 0:.1f} s; largest lag "
                      f"{lagged['lag'] if lagged else 0:.2f} s (cell {lagged['cell'] if lagged else '-'}); "
                      f"stalls: {r['stalls'] or 'none'}" + (f"; ERROR {r['error']}" if r["error"] else ""),
                      flush=True)
                if log:
                    log.write(json.dumps(r) + "\n")
                    log.flush()
    print(f"summary: {n} executions, {n_stalls} with a stall, {n_failed} failed otherwise; max cell time "
          f"{max_cell[0]:.1f} s ({max_cell[1]}); max lag {max_lag[0]:.2f} s ({max_lag[1]}); cell timeout "
          f"{args.cell_timeout:g} s, max lag {args.max_lag:g} s")
    return 1 if n_stalls or n_failed else 0


if __name__ == "__main__":
    sys.exit(main())
