"""Re-run the "cluster safety" attacks of issue 15 against gpudoctor and count what breaks.

    python bench/campaign_cluster.py [--quick] [--workers N] [--code DIR] [--show N]

Families (inputs are generated here, on a healthy replayed node unless said otherwise):
  broken-install  click.py that raises / is empty / exits, stray gpudoctor/ packages, broken
                  packaging and psutil, sitecustomize; each through the console script and
                  `python -m gpudoctor`, for hook, check, parse-smi, devices and explain, and for
                  hook also through contrib/slurm/gpudoctor-prolog with stub sinfo/scontrol
  huge-numbers    20 to 100,000 digits, 1e400, nan and inf in every hook setting (flags, TOML,
                  JSON, INI), devices --visible, CUDA_VISIBLE_DEVICES, SLURM_JOB_GPUS
  nested-config   TOML arrays and inline tables, JSON arrays and objects, 100 to 100,000 deep
  config-files    configs that cannot be read (a FIFO, /dev/zero, a folder, binary, empty, a typo)
  dev-full        stdout on /dev/full for every command that prints
  garbage-smi     stub nvidia-smi programs printing generated non-nvidia-smi text (and real
                  output of the wrong format) for `hook --gpus 1`, `parse-smi` and `check`
  parse-fuzz      the same generator, in-process, straight into gpudoctor.smi.parse

Counted per family: inputs; crashes (exit 3 where it is not the documented answer, a traceback,
"Exception ignored", an exit code outside 0-3); wrong drains (hook exit 1, or a wrapper drain,
on a node that is healthy); hangs (no answer within 60 s); garbage judged healthy (exit 0 or a
GPU read from text that is not nvidia-smi's); unexpected exits; stderr not one line.
Exit 1 if any crash, wrong drain, hang or garbage judged healthy was counted.

--code DIR runs another checkout's gpudoctor (its gpudoctor.cli:main) instead of this one,
for before/after figures.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, FrozenSet, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
HEALTHY = ROOT / "fixtures" / "scenarios" / "core-healthy-workstation" / "snapshot"
BROKEN = ROOT / "fixtures" / "scenarios" / "core-driver-not-loaded" / "snapshot"
SMI = ROOT / "fixtures" / "nvidia-smi"
XML = SMI / "xml" / "rtx-4090_driver-535.86.05_cuda-12.2.xml"
PROLOG = ROOT / "contrib" / "slurm" / "gpudoctor-prolog"
TIMEOUT_S = 60
REASON = "gpudoctor: "


@dataclass
class Attack:
    family: str
    name: str
    argv: List[str]
    expect: FrozenSet[int]                     # exit codes that are the right answer
    env: Dict[str, str] = field(default_factory=dict)
    module: bool = False                       # python -m gpudoctor instead of the console script
    full: bool = False                         # stdout on /dev/full
    healthy: bool = True                       # exit 1 from hook would drain a healthy node
    unguardable: bool = False                  # Python dies before any gpudoctor code runs
    wrapper: bool = False                      # also run through the Slurm Prolog wrapper
    garbage: bool = False                      # the input is not nvidia-smi's: exit 0 is "judged healthy"


@dataclass
class Outcome:
    attack: Attack
    rc: Optional[int]
    stderr: str
    seconds: float
    drained: Optional[bool] = None
    labels: Tuple[str, ...] = ()


# --- running ----------------------------------------------------------------------------------------

class Runner:
    def __init__(self, work: Path, code: Optional[str]):
        self.work = work
        self.code = code
        self.script = work / "gpudoctor-script"
        if code:
            self.script.write_text(f"import sys\nsys.path.append({code!r})\nfrom gpudoctor.cli import main\nmain()\n")
            # The installed entry point names gpudoctor_checks: let it be that checkout's checks/ too.
            (work / "shim").mkdir()
            (work / "shim" / "gpudoctor_checks").symlink_to(Path(code) / "checks")
        else:
            self.script.write_text("import sys\nfrom gpudoctor_entry import main\nsys.exit(main())\n")
        for name, text in (("sinfo", "#!/bin/sh\necho 'alloc|none'\n"),
                           ("scontrol", '#!/bin/sh\necho "$*" >> "$STUB_LOG"\n')):
            (work / name).write_text(text)
            (work / name).chmod(0o755)

    def argv(self, a: Attack) -> List[str]:
        if a.module and not self.code:
            return [sys.executable, "-m", "gpudoctor", *a.argv]
        return [sys.executable, str(self.script), *a.argv]

    def env(self, a: Attack) -> Dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUDOCTOR", "SLURM_", "PYTHONPATH"))}
        env.update(a.env)
        if self.code:
            parts = [env["PYTHONPATH"]] if "PYTHONPATH" in env else []
            env["PYTHONPATH"] = os.pathsep.join(parts + [str(self.work / "shim"), self.code])
        return env

    def run(self, a: Attack) -> Outcome:
        start = time.monotonic()
        out = open("/dev/full", "w") if a.full else subprocess.DEVNULL
        try:
            proc = subprocess.run(self.argv(a), stdout=out, stderr=subprocess.PIPE, text=True, errors="replace",
                                  env=self.env(a), timeout=TIMEOUT_S, cwd=str(self.work))
            rc, err = proc.returncode, proc.stderr
        except subprocess.TimeoutExpired:
            rc, err = None, ""
        finally:
            if a.full:
                out.close()
        outcome = Outcome(a, rc, err, time.monotonic() - start)
        if a.wrapper and not self.code:  # another checkout's wrapper cannot be pointed at stubs
            outcome.drained = self.prolog(a)
        outcome.labels = classify(outcome)
        return outcome

    def prolog(self, a: Attack) -> bool:
        """Did contrib/slurm/gpudoctor-prolog call scontrol (drain) for this broken install?"""
        log = Path(tempfile.mkstemp(dir=self.work, suffix=".scontrol")[1])
        cmd = " ".join(self.argv(a)[:-len(a.argv)])  # the wrapper word-splits it, as an admin's would be
        env = {**self.env(a), "GPUDOCTOR": cmd, "GPUDOCTOR_SINFO": str(self.work / "sinfo"),
               "GPUDOCTOR_SCONTROL": str(self.work / "scontrol"), "GPUDOCTOR_LOGGER": "true",
               "STUB_LOG": str(log), "SLURMD_NODENAME": "node01",
               "GPUDOCTOR_SNAPSHOT": a.env.get("GPUDOCTOR_SNAPSHOT", str(HEALTHY))}
        try:
            subprocess.run([str(PROLOG)], capture_output=True, env=env, timeout=TIMEOUT_S, cwd=str(self.work))
        except subprocess.TimeoutExpired:
            return False
        return bool(log.read_text().strip())


def classify(o: Outcome) -> Tuple[str, ...]:
    a, rc, err = o.attack, o.rc, o.stderr
    if rc is None:
        return ("hang",)
    labels = []
    # Python's own report of a raising sitecustomize is not gpudoctor's to shorten.
    own = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith(("Error in sitecustomize", "RuntimeError: site"))]
    noisy = len(own) > 2 or any(not ln.startswith(REASON) for ln in own)
    hook = "hook" in a.argv[:1]
    crashed = "Traceback" in err or "Exception ignored" in err or rc not in (0, 1, 2, 3)
    if (crashed or (rc == 3 and 3 not in a.expect)) and not a.unguardable:
        labels.append("crash")
    if hook and a.healthy and rc == 1 and not a.unguardable:
        labels.append("wrong drain")
    if o.drained:
        labels.append("wrong drain")
    if a.garbage and rc == 0:
        labels.append("judged healthy")
    if rc not in a.expect and not labels and not a.unguardable:
        labels.append("unexpected exit")
    if noisy and not a.unguardable:
        labels.append("not one line")
    return tuple(dict.fromkeys(labels))


# --- the attacks ------------------------------------------------------------------------------------

BREAKAGES = {
    "click raises RuntimeError": {"click.py": 'raise RuntimeError("x")\n'},
    "click raises ImportError": {"click.py": 'raise ImportError("no click for you")\n'},
    "click empty": {"click.py": ""},
    "click exits 1": {"click.py": "import sys\nsys.exit(1)\n"},
    "click exits with a gpudoctor line": {"click.py": 'import sys\nsys.exit("gpudoctor: fake problem")\n'},
    "click raises KeyError": {"click.py": "raise KeyError('echo')\n"},
    "packaging raises": {"packaging/__init__.py": 'raise ImportError("broken packaging")\n'},
    "psutil raises": {"psutil/__init__.py": 'raise OSError("broken psutil")\n'},
    "stray gpudoctor/ (empty)": {"gpudoctor/__init__.py": ""},
    "stray gpudoctor/ raises": {"gpudoctor/__init__.py": 'raise RuntimeError("stray")\n'},
    "stray gpudoctor/cli.py raises": {"gpudoctor/__init__.py": "", "gpudoctor/cli.py": "raise SystemExit(1)\n"},
    "sitecustomize raises": {"sitecustomize.py": 'raise RuntimeError("site")\n'},
    "sitecustomize exits": {"sitecustomize.py": 'raise SystemExit("gpudoctor: fake")\n'},
}
UNGUARDABLE = {"sitecustomize exits"}  # Python itself stops before the first line of gpudoctor runs


def _plant(work: Path, name: str, files: Dict[str, str]) -> Path:
    where = work / "plants" / str(abs(hash(name)))
    for rel, text in files.items():
        (where / rel).parent.mkdir(parents=True, exist_ok=True)
        (where / rel).write_text(text)
    return where


def broken_installs(work: Path) -> List[Attack]:
    # The right answer: the command's own verdict when it does not need what is broken (parse-smi
    # never imports packaging), else one line and exit 3 (2 for hook: unknown, never a drain).
    commands = [
        (["hook", "--snapshot", str(HEALTHY), "--gpus", "1", "--min-driver", "525"], {0, 2}),
        (["check", "--snapshot", str(HEALTHY)], {0, 3}),
        (["parse-smi", str(XML)], {0, 3}),
        (["devices", "--snapshot", str(HEALTHY)], {0, 3}),
        (["explain", "CUDA error: out of memory"], {0, 3}),
    ]
    out = []
    for name, files in BREAKAGES.items():
        env = {"PYTHONPATH": str(_plant(work, name, files))}
        for argv, expect in commands:
            for module in (False, True):
                # sitecustomize errors are reported by Python, which then goes on: the verdict stands.
                ok = {0, 1} | expect if name == "sitecustomize raises" else expect
                stray_m = module and name.startswith("stray gpudoctor/")  # -m runs the stray package
                out.append(Attack("broken-install", f"{name} / {argv[0]}{' (-m)' if module else ''}", argv,
                                  frozenset(ok), env, module=module, unguardable=name in UNGUARDABLE or stray_m,
                                  wrapper=argv[0] == "hook"))
    return out


def _numbers() -> List[str]:
    return ["9" * n for n in (21, 100, 400, 4300, 5000, 100000)] + ["1e400", "nan", "inf", "-inf", "-1"]


def huge_numbers(work: Path) -> List[Attack]:
    out, hook = [], ["hook", "--snapshot", str(HEALTHY)]
    keys = {"min_free_mem": "--min-free-mem", "gpus": "--gpus", "max_temp": "--max-temp",
            "timeout": "--timeout", "min_driver": "--min-driver", "cuda": "--cuda"}
    for i, n in enumerate(_numbers()):
        for key, flag in keys.items():
            # A version of 21 or 100 nines is absurd but a version: a node below it fails the requirement.
            version = key in ("min_driver", "cuda")
            expect = frozenset({1, 2} if version else {2})
            if not (len(n) > 5000 and flag == "--gpus"):  # argv: click refuses it before gpudoctor sees it
                out.append(Attack("huge-numbers", f"{flag} {n[:12]}", hook + [flag, n], expect, healthy=not version))
            for suffix, text in ((".toml", f'[hook]\n{key} = "{n}"\n'), (".json", json.dumps({key: n})),
                                 (".ini", f"[hook]\n{key} = {n}\n")):
                path = work / f"num-{i}-{key}{suffix}"
                path.write_text(text)
                out.append(Attack("huge-numbers", f"{key}={n[:12]}{suffix}", hook + ["--config", str(path)],
                                  expect, healthy=not version))
            if n.isdigit():
                path = work / f"num-{i}-{key}-bare.json"
                path.write_text('{"%s": %s}' % (key, n))
                out.append(Attack("huge-numbers", f"{key}={n[:12]} (JSON number)", hook + ["--config", str(path)],
                                  expect, healthy=not version))
        out.append(Attack("huge-numbers", f"devices --visible {n[:12]}",
                          ["devices", "--snapshot", str(HEALTHY), "--visible", n], frozenset({0, 1, 2})))
        out.append(Attack("huge-numbers", f"CUDA_VISIBLE_DEVICES={n[:12]} check", ["check", "--snapshot", str(HEALTHY)],
                          frozenset({0, 1}), {"CUDA_VISIBLE_DEVICES": n}))
        out.append(Attack("huge-numbers", f"SLURM_JOB_GPUS={n[:12]}", hook + ["--no-foreign-processes"],
                          frozenset({0}), {"SLURM_JOB_ID": "7", "SLURM_JOB_GPUS": n, "CUDA_VISIBLE_DEVICES": n}))
    return out


def nested_configs(work: Path) -> List[Attack]:
    out = []
    for depth in (100, 500, 1000, 5000, 100000):
        texts = {
            "toml-array.toml": "[hook]\nallow_users = " + "[" * depth + "]" * depth + "\n",
            "toml-table.toml": "[hook]\ngpus = " + "{a = " * depth + "1" + "}" * depth + "\n",
            "json-array.json": '{"allow_users": ' + "[" * depth + "]" * depth + "}",
            "json-object.json": '{"hook": ' + '{"a": ' * depth + "1" + "}" * depth + "}",
        }
        for name, text in texts.items():
            path = work / f"deep-{depth}-{name}"
            path.write_text(text)
            out.append(Attack("nested-config", f"{name} depth {depth}",
                              ["hook", "--snapshot", str(HEALTHY), "--config", str(path)], frozenset({2})))
    return out


def config_files(work: Path) -> List[Attack]:
    """Configs that cannot be read: each must be a clear unknown (2), never a run without them."""
    fifo = work / "fifo.toml"
    os.mkfifo(fifo)  # nobody ever writes: a read blocks until the hook's own watchdog ends it
    files = {"missing.toml": None, "dir.toml": "DIR", "binary.toml": b"\x00\xff\xfe" * 100,
             "latin1.toml": "[hook]\ngpus = 1 # caf\xe9\n".encode("latin-1"), "empty.toml": b"",
             "section-only.toml": b"[hook]\n", "other-section.ini": b"[other]\ngpus = 8\n",
             "typo.toml": b"[hook]\ngpu = 8\n", "syntax.toml": b"[hook\ngpus = 8\n", "list.json": b"[1, 2]",
             "big.toml": b"# " + b"x" * (2 << 20)}
    out = [Attack("config-files", "a FIFO", ["hook", "--snapshot", str(HEALTHY), "--config", str(fifo)],
                  frozenset({2})),
           Attack("config-files", "/dev/zero", ["hook", "--snapshot", str(HEALTHY), "--config", "/dev/zero"],
                  frozenset({2}))]
    for name, data in files.items():
        path = work / "configs" / name
        path.parent.mkdir(exist_ok=True)
        if data == "DIR":
            path.mkdir()
        elif data is not None:
            path.write_bytes(data)
        out.append(Attack("config-files", name, ["hook", "--snapshot", str(HEALTHY), "--config", str(path)],
                          frozenset({2})))
    return out


def dev_full(work: Path) -> List[Attack]:
    smi = str(XML)
    cases = [
        (["hook", "--snapshot", str(HEALTHY), "--json"], {2}, True), (["hook", "--snapshot", str(HEALTHY), "--npd"], {2}, True),
        (["hook", "--snapshot", str(HEALTHY), "-v"], {2}, True), (["hook", "--snapshot", str(BROKEN), "--npd"], {1}, False),
        (["hook", "--snapshot", str(BROKEN), "--json"], {1}, False),
        (["check", "--snapshot", str(HEALTHY)], {2}, True), (["check", "--snapshot", str(HEALTHY), "--json"], {2}, True),
        (["check", "--snapshot", str(HEALTHY), "--jsonl"], {2}, True), (["check", "--list-checks"], {2}, True),
        (["devices", "--snapshot", str(HEALTHY)], {2}, True), (["devices", "--snapshot", str(HEALTHY), "--json"], {2}, True),
        (["parse-smi", smi], {2}, True), (["parse-smi", "--json", smi], {2}, True),
        (["explain", "CUDA error: out of memory"], {2}, True), (["explain", "--json", "CUDA error: out of memory"], {2}, True),
        (["--help"], {2}, True), (["--version"], {2}, True), (["hook", "--help"], {2}, True),
    ]
    return [Attack("dev-full", " ".join(a[:3])[:60], a, frozenset(e), full=True, healthy=h) for a, e, h in cases]


# --- garbage that is not nvidia-smi's output ----------------------------------------------------------

WORDS = ["hello", "I", "am", "not", "nvidia-smi", "ok", "driver", "version", "memory", "GPU", "NVIDIA", "Tesla",
         "GeForce", "Quadro", "TITAN", "GRID", "cuda", "12.4", "535.104.05", "80GB", "MiB", "%", "W", "usage:",
         "warning", "0", "1", "P0", "Enabled", "yes", "N/A", "[N/A]", "index", "name", "uuid", "foo", "bar", "|", "+"]
TEMPLATES = [
    "hello, I am not nvidia-smi", "GPU 0: x (UUID: GPU-1)", "<nvidia_smi_log></nvidia_smi_log>",
    "<nvidia_smi_log><gpu/></nvidia_smi_log>", "name, foo\nbar, baz", "index, name\n0, hello",
    "NVIDIA rocks, yes", "GeForce is nice, 3 %", "Usage: nvidia-smi [OPTION1 [ARG1]] [OPTION2 [ARG2]] ...",
    "NVIDIA System Management Interface -- v535.104.05", "{\"gpus\": [{\"name\": \"NVIDIA A100\"}]}",
]


def garbage_texts(rng: random.Random, n: int) -> List[str]:
    texts = list(TEMPLATES)
    while len(texts) < n:
        lines = []
        for _ in range(rng.randint(1, 4)):
            cells = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(1, 5))]
            lines.append(rng.choice([", ", ",", " | ", " "]).join(cells))
        texts.append("\n".join(lines))
    return texts


def wrong_format_outputs() -> List[str]:
    """Real nvidia-smi output, but not what `nvidia-smi -q -x` prints: a stub answering every call alike."""
    return [(SMI / "text" / "h100-80gb-hbm3-x8_mig-1g.10gb-x7_list-gpus-L.txt").read_text(),
            (SMI / "text" / "h100-80gb-hbm3-x8_driver-550.90.07_cuda-12.4.txt").read_text(),
            (SMI / "csv" / "tesla-p100-pcie-16gb_query-gpu_na-fan.csv").read_text()]


def garbage_smi(work: Path, rng: random.Random, n: int, checks: int) -> List[Attack]:
    out = []
    for i, text in enumerate(garbage_texts(rng, n) + wrong_format_outputs()):
        stub_dir = work / f"stub-{i}"
        stub_dir.mkdir()
        (stub_dir / "out.txt").write_text(text + "\n")
        (stub_dir / "nvidia-smi").write_text(f"#!/bin/sh\ncat '{stub_dir / 'out.txt'}'\n")
        (stub_dir / "nvidia-smi").chmod(0o755)
        env = {"PATH": f"{stub_dir}:{os.environ['PATH']}"}
        label = text.splitlines()[0][:40] if text.strip() else "(blank)"
        out.append(Attack("garbage-smi", f"hook: {label}", ["hook", "--gpus", "1"], frozenset({2}), env, garbage=True))
        if i < n:  # parse-smi reads any format: a real -L or CSV is fine there
            out.append(Attack("garbage-smi", f"parse-smi: {label}", ["parse-smi", str(stub_dir / "out.txt")],
                              frozenset({2}), garbage=True))
        if i < checks:  # DRV001 "cannot read" is a check that could not tell: exit 0 by the exit-code table, 1 with
            # --strict, as for every could-not-tell; a garbage output read as a working driver would still exit 0
            out.append(Attack("garbage-smi", f"check: {label}",
                              ["check", "--only", "DRV001", "--no-frameworks", "--strict"], frozenset({1}), env,
                              garbage=True))
    return out


def parse_fuzz(rng: random.Random, n: int, code: Optional[str]) -> Counter:
    """In-process: how many generated non-nvidia-smi texts does the parser take for a report with GPUs?"""
    if code:  # gpudoctor.smi is standard-library only: that checkout's copy imports on its own
        sys.path.insert(0, code)
    from gpudoctor.smi import SmiParseError, parse

    counts = Counter()
    for text in garbage_texts(rng, n):
        counts["inputs"] += 1
        try:
            report = parse(text)
        except SmiParseError:
            continue
        except Exception:  # noqa: BLE001 - counting crashes is the point
            counts["crashes"] += 1
            continue
        if report.gpus:
            counts["judged healthy"] += 1
    return counts


# --- report -----------------------------------------------------------------------------------------

COLUMNS = ("inputs", "crash", "wrong drain", "hang", "judged healthy", "unexpected exit", "not one line")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer generated inputs (about a third)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--code", help="run this checkout's gpudoctor (gpudoctor.cli:main) instead")
    ap.add_argument("--show", type=int, default=3, help="examples to print per family and label")
    ap.add_argument("--seed", type=int, default=15)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    n_garbage, n_checks, n_fuzz = (30, 5, 2000) if args.quick else (100, 15, 10000)
    with tempfile.TemporaryDirectory(prefix="gpudoctor-campaign-") as tmp:
        work = Path(tmp)
        runner = Runner(work, args.code)
        attacks = (broken_installs(work) + huge_numbers(work) + nested_configs(work) + config_files(work) + dev_full(work)
                   + garbage_smi(work, rng, n_garbage, n_checks))
        start = time.monotonic()
        with ThreadPoolExecutor(args.workers) as pool:
            outcomes = list(pool.map(runner.run, attacks))
        wall = time.monotonic() - start
    fuzz = parse_fuzz(random.Random(args.seed + 1), n_fuzz, args.code)
    table: Dict[str, Counter] = defaultdict(Counter)
    examples: Dict[Tuple[str, str], List[str]] = defaultdict(list)
    for o in outcomes:
        table[o.attack.family]["inputs"] += 1
        for label in o.labels:
            table[o.attack.family][label] += 1
            examples[(o.attack.family, label)].append(f"{o.attack.name}: exit {o.rc}: "
                                                      f"{(o.stderr.strip().splitlines() or [''])[-1][:110]}")
    table["parse-fuzz"].update({"inputs": fuzz["inputs"], "crash": fuzz["crashes"],
                                "judged healthy": fuzz["judged healthy"]})
    print(f"gpudoctor cluster-safety campaign ({'code: ' + args.code if args.code else 'this checkout'}; "
          f"{len(outcomes)} runs in {wall:.0f}s, {args.workers} workers)")
    print(f"{'family':<16}" + "".join(f"{c:>16}" for c in COLUMNS))
    total = Counter()
    for family, counts in table.items():
        total.update(counts)
        print(f"{family:<16}" + "".join(f"{counts[c]:>16}" for c in COLUMNS))
    print(f"{'total':<16}" + "".join(f"{total[c]:>16}" for c in COLUMNS))
    for (family, label), lines in sorted(examples.items()):
        for line in lines[:args.show]:
            print(f"  [{family} / {label}] {line}")
    bad = total["crash"] + total["wrong drain"] + total["hang"] + total["judged healthy"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
