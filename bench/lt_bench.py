#!/usr/bin/python3
"""make bench-serve: ted serve against LibreTranslate on the same weights,
under the same open-loop trace, through each one's POST /translate.

    /usr/bin/python3 bench/lt_bench.py --ted build/ted --lt-venv build/lt-venv \
        [--model en-fr] [--model base] [--seconds 20] [--quick] [--json FILE]

The servers:

  LibreTranslate  1.9.6 (pip, its own virtualenv: bench/requirements-lt.txt)
                  over Argos Translate and CTranslate2, run by
                  bench/lt_server.py (its sentence splitter keeps each text
                  whole: offline, minisbd's download fails); an Argos
                  package made here from the model's CTranslate2 form
                  (bench/lt_models.py: model/, sentencepiece.model = the
                  source SentencePiece model), installed with a second,
                  reversed one (with one package, LibreTranslate fetches
                  the package index at startup); ARGOS_INTER_THREADS 2 and
                  ARGOS_INTRA_THREADS 1 (two replicas of a thread each: its
                  fastest settings on two cores), 4 web server threads.
  ted serve       the same checkpoint in ted's form, --threads T (1).

Decoding as Argos fixes it in code: beam max(1, ARGOS_BEAM_SIZE) (4 by
default), length penalty 0.2 (a hypothesis's log-probability over its
length^0.2), at most 256 tokens; ted's copy of the model gets the same
(config.yaml's decoding section). --beam B (repeatable; default 4, then 1):
each comparison runs with ARGOS_BEAM_SIZE=B and ted's beam_size B. The
models (bench/lt_models.py): models/en-fr (float32; a trained model whose
translations end, as real ones do), and the Transformer-base-sized Marian
checkpoint of make bench (random weights, int8 on both sides; its
translations never end on their own, so both servers bound a translation
at its source tokens + 4: bench/lt_server.py's --length-offset, ted's
max_length_offset).

The trace: requests of one sentence of models/en-fr/test.en each, {"q",
"source": "en", "target": "fr"}, sent by bench/openloop.c. Saturation: 64
requests kept open for --saturation-seconds: the sentences a second each
server answers, and the CPU time its processes take per sentence (on a
machine that other work shares, the measure the others' load moves the
least: a server gets the cores the others leave it). Then Poisson arrivals at 25, 50 and 75 % of LibreTranslate's
saturation for --warmup then --seconds seconds, each server in turn (the
order swapped from level to level, so the load of a shared machine falls
on both alike): p50 and p99 latency (from the scheduled arrival to the
answer) of the short and the long sentences (the shortest and the longest
quarter by words). Argos Translate caches the last translation of a text;
the bench's 1 500 distinct sentences drawn at random make a repeat rare.

Prints a Markdown table with the CPU and its flags. --quick: en-fr only,
shorter runs.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from run import cpu_info  # noqa: E402
from serve_bench import classes, percentile  # noqa: E402

BUILD = os.environ.get("BUILD", "build")
TEXTS = os.path.join(ROOT, "models", "en-fr", "test.en")
LENGTH_PENALTY, MAX_LENGTH, OFFSET = 0.2, 256, 4
LEVELS = (0.25, 0.5, 0.75)


def log(message):
    print(f"lt_bench: {message}", file=sys.stderr, flush=True)


# ---- the models in each server's form ---------------------------------------------------

def models(name, out, args):
    """{"ted": ted model directory, "ct2": CTranslate2 directory, "spm":
    source SentencePiece model, "offset": length offset or None}."""
    subprocess.run([args.venv_python, os.path.join(HERE, "lt_models.py"), name, "--out", out,
                    "--ted", args.ted], check=True, cwd=ROOT)
    if name == "en-fr":
        return {"ted": os.path.join(ROOT, "models", "en-fr"),
                "ct2": os.path.join(out, "en-fr-ct2"),
                "spm": os.path.join(ROOT, "models", "en-fr", "source.spm"), "offset": None}
    return {"ted": os.path.join(out, "base-int8"), "ct2": os.path.join(out, "base-ct2-int8"),
            "spm": os.path.join(BUILD, "bench", "marian-hf", "source.spm"), "offset": OFFSET}


def ted_copy(model, out, offset, beam):
    """`out`: the ted model (links to its files) with Argos's decoding:
    the beam, length penalty 0.2, at most 256 tokens (or source + offset)."""
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    for name in os.listdir(model):
        if name != "config.yaml":
            os.symlink(os.path.abspath(os.path.join(model, name)), os.path.join(out, name))
    with open(os.path.join(model, "config.yaml"), encoding="utf-8") as f:
        head, decoding = f.read().split("\ndecoding:\n", 1)
    # the random checkpoint's tokenizer says en -> de; both servers call it en -> fr
    head = re.sub(r"(?m)^(  source_lang:).*$", r"\1 en", head)
    head = re.sub(r"(?m)^(  target_lang:).*$", r"\1 fr", head)
    decoding = re.sub(r"(?m)^  (#|beam_size:|max_length_offset:|max_length:|length_penalty:|"
                      r"length_normalization:).*\n", "", decoding)
    bound = f"  max_length: 0\n  max_length_offset: {offset}\n" if offset is not None else \
        f"  max_length: {MAX_LENGTH}\n  max_length_offset: 0\n"
    with open(os.path.join(out, "config.yaml"), "w", encoding="utf-8") as f:
        penalty = f"  length_penalty: {LENGTH_PENALTY}\n  length_normalization: power\n" \
            if beam > 1 else ""
        f.write(head + f"\ndecoding:\n  beam_size: {beam}\n" + penalty + bound + decoding)
    return out


def argos_package(ct2_dir, spm, source, target, out_dir):
    """An .argosmodel of the CTranslate2 model for source -> target."""
    name = f"translate-{source}_{target}"
    path = os.path.join(out_dir, name + ".argosmodel")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr(f"{name}/metadata.json", json.dumps({
            "package_version": "1.0", "argos_version": "1.0", "from_code": source,
            "from_name": {"en": "English", "fr": "French"}[source], "to_code": target,
            "to_name": {"en": "English", "fr": "French"}[target], "type": "translate",
            "links": []}))
        z.write(spm, f"{name}/sentencepiece.model")
        for f in os.listdir(ct2_dir):
            z.write(os.path.join(ct2_dir, f), f"{name}/model/{f}")
    return path


def lt_env(home, beam=4):
    env = dict(os.environ)
    env.update({"ARGOS_PACKAGES_DIR": os.path.join(home, "packages"),
                "XDG_DATA_HOME": os.path.join(home, "data"),
                "XDG_CONFIG_HOME": os.path.join(home, "config"),
                "XDG_CACHE_HOME": os.path.join(home, "cache"), "HOME": home,
                "ARGOS_INTER_THREADS": "2", "ARGOS_INTRA_THREADS": "1",
                "ARGOS_DEVICE_TYPE": "cpu", "OMP_WAIT_POLICY": "PASSIVE",
                "ARGOS_BEAM_SIZE": str(beam)})
    return env


def install_argos(m, home, lt_python):
    """Both packages (en->fr and the reversed one) into home."""
    shutil.rmtree(home, ignore_errors=True)
    os.makedirs(home)
    paths = [argos_package(m["ct2"], m["spm"], s, t, home) for s, t in (("en", "fr"),
                                                                          ("fr", "en"))]
    code = ("import sys, argostranslate.package as p\n"
            "for path in sys.argv[1:]: p.install_from_path(path)\n")
    subprocess.run([lt_python, "-c", code] + paths, check=True, env=lt_env(home))


# ---- the servers -------------------------------------------------------------------------

def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A server process; .port; stop()."""

    def __init__(self, cmd, env, port, name):
        self.name, self.port = name, port
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=self.log, cwd=ROOT,
                                     start_new_session=True)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.log.seek(0)
                raise SystemExit(f"lt_bench: {name} exited: "
                                 f"{self.log.read().decode(errors='replace')[-2000:]}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/languages", timeout=5).read()
                return
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise SystemExit(f"lt_bench: {name} did not answer GET /languages in 180 s")

    def cpu_seconds(self):
        """The CPU time (user and system) that the server's processes (its
        session: LibreTranslate's workers too) have taken so far."""
        ticks = 0
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/stat", encoding="ascii") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == self.proc.pid:  # the session id
                ticks += int(fields[11]) + int(fields[12])
        return ticks / os.sysconf("SC_CLK_TCK")

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def start_lt(m, home, args):
    port = free_port()
    cmd = [args.lt_python, os.path.join(HERE, "lt_server.py")]
    if m["offset"] is not None:
        cmd += ["--length-offset", str(m["offset"])]
    cmd += ["--", "--host", "127.0.0.1", "--port", str(port), "--load-only", "en,fr",
            "--threads", "4", "--disable-web-ui", "--disable-files-translation"]
    return Server(cmd, lt_env(home, args.beam_size), port, "LibreTranslate")


def start_ted(model, args):
    port = free_port()
    cmd = [args.ted, "serve", "-m", model, "--port", str(port), "--threads",
           str(args.ted_threads), "--max-connections-per-client", "4096"]
    return Server(cmd, dict(os.environ), port, "ted serve")


# ---- the load ----------------------------------------------------------------------------

def write_bodies(path, texts):
    short, long = classes(texts)
    kind = {**{t: "short" for t in short}, **{t: "long" for t in long}}
    with open(path, "w", encoding="utf-8") as f:
        for t in texts:
            body = json.dumps({"q": t, "source": "en", "target": "fr"}, ensure_ascii=False)
            f.write(f"{kind.get(t, 'other')}\t{body}\n")
    return path


def generate(server, load, warmup, seconds, args):
    """bench/openloop.c against server's /translate: latencies by class,
    failures (status other than 200) and answers a second."""
    out = subprocess.run([args.openloop, str(server.port), str(load), str(warmup), str(seconds),
                          str(args.seed), args.bodies, "/translate"],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"lt_bench: openloop failed: {out.stderr.strip()}")
    latencies = {"short": [], "long": [], "all": []}
    failed, answered = 0, 0
    for line in out.stdout.splitlines():
        fields = line.split()
        if fields[0] == "answered":
            answered = int(fields[1])
            continue
        if int(fields[1]) != 200:
            failed += 1
            continue
        latencies["all"].append(int(fields[2]) * 1e-3)
        if fields[0] in latencies:
            latencies[fields[0]].append(int(fields[2]) * 1e-3)
    return {"per_s": answered / seconds, "failed": failed,
            **{k: {"p50_ms": percentile(v, 50), "p99_ms": percentile(v, 99), "n": len(v)}
               for k, v in latencies.items()}}


def translate(server, text):
    body = json.dumps({"q": text, "source": "en", "target": "fr"}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{server.port}/translate", data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as answer:
        return json.load(answer)["translatedText"]


def same_text(a, b):
    """a and b alike but for spacing, the first letter's case and a final
    full stop (LibreTranslate gives a translation its source's capital and
    final punctuation)."""
    a, b = (" ".join(x.split()).rstrip(".") for x in (a, b))
    return a[:1].lower() + a[1:] == b[:1].lower() + b[1:]


def agreement(servers, texts):
    """How many of texts both servers translate alike (the same weights and
    decoding give the same words, up to float rounding)."""
    answers = [[translate(s, t) for t in texts] for s in servers]
    same = sum(same_text(a, b) for a, b in zip(*answers))
    return {"same": same, "of": len(texts),
            "examples": [list(x) for x in zip(texts, *answers)][:3]}


def measure(servers, args):
    """Saturation of each, then the open loop at each level, in turn."""
    r = {s.name: {"saturation": None, "levels": []} for s in servers}
    r["agreement"] = agreement(servers, args.texts[:args.agreement])
    log(f"the same translation from both: {r['agreement']['same']} of "
        f"{r['agreement']['of']}")
    for s in servers:
        generate(s, "c8", 0, 2, args)  # warm-up: LibreTranslate loads its models lazily
    order = list(servers)
    for s in order:
        cpu = s.cpu_seconds()
        x = r[s.name]["saturation"] = generate(s, "c64", 2, args.saturation_seconds, args)
        # the CPU time of the warm-up's answers too, at the rate measured
        x["cpu_ms"] = (s.cpu_seconds() - cpu) * 1e3 / max(
            x["per_s"] * (2 + args.saturation_seconds), 1)
        log(f"{s.name}: saturation {x['per_s']:.1f} sentences/s, "
            f"{x['cpu_ms']:.1f} CPU ms a sentence")
    lt_rate = r["LibreTranslate"]["saturation"]["per_s"]
    for k, level in enumerate(LEVELS):
        for s in (order if k % 2 else order[::-1]):
            x = generate(s, f"{level * lt_rate:.3f}", args.warmup, args.seconds, args)
            x.update(level=level, rate_per_s=level * lt_rate)
            r[s.name]["levels"].append(x)
            log(f"{s.name} at {level:.0%}: short p50/p99 {x['short']['p50_ms']:.0f}/"
                f"{x['short']['p99_ms']:.0f} ms, long {x['long']['p50_ms']:.0f}/"
                f"{x['long']['p99_ms']:.0f} ms, {x['failed']} failed")
    return r


def run_model(name, beam, args):
    out = os.path.join(BUILD, "bench", "lt")
    m = models(name, out, args)
    home = os.path.join(out, f"argos-{name}")
    install_argos(m, home, args.lt_python)
    args.beam_size = beam
    ted_model = ted_copy(m["ted"], os.path.join(out, f"ted-{name}-beam{beam}"), m["offset"],
                         beam)
    servers = []
    try:
        servers.append(start_lt(m, home, args))
        servers.append(start_ted(ted_model, args))
        return measure(servers, args)
    finally:
        for s in servers:
            s.stop()


# ---- the report ----------------------------------------------------------------------------

def cells(x):
    return " | ".join(f"{x[c]['p50_ms']:,.0f} / {x[c]['p99_ms']:,.0f}" for c in ("short", "long"))


def table(results, args):
    host = cpu_info()
    lines = ["## ted serve against LibreTranslate 1.9.6, the same weights, POST /translate", "",
             f"CPU: {host['cpu']}, {os.cpu_count()} logical CPUs; flags: "
             f"{' '.join(host['isa_flags'])}. Load average before: {results['load_before']}. "
             f"Length penalty {LENGTH_PENALTY}; ted serve --threads "
             f"{args.ted_threads}; LibreTranslate: 2 CTranslate2 replicas of 1 thread, 4 web "
             f"threads. Saturation {args.saturation_seconds:g} s (64 open), each load "
             f"{args.warmup:g} + {args.seconds:g} s.", "",
             "| model | beam | server | saturation sentences/s | ÷ LibreTranslate "
             "| CPU ms / sentence | load | arrivals/s | answered/s | short p50 / p99 ms "
             "| long p50 / p99 ms | failed |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for key, r in results["models"].items():
        name, beam = key.rsplit(" beam ", 1)
        lt = r["LibreTranslate"]["saturation"]["per_s"]
        for server, x in r.items():
            if server == "agreement":
                continue
            sat = x["saturation"]["per_s"]
            lines.append(f"| {name} | {beam} | {server} | {sat:.1f} | {sat / lt:.2f}× | "
                         f"{x['saturation']['cpu_ms']:.1f} | | | | "
                         f"{cells(x['saturation'])} | {x['saturation']['failed']} |")
            for lv in x["levels"]:
                lines.append(f"| {name} | {beam} | {server} | | | | {lv['level']:.0%} | "
                             f"{lv['rate_per_s']:.2f} | {lv['per_s']:.2f} | {cells(lv)} | "
                             f"{lv['failed']} |")
    lines += ["", "The same translation from both servers (the first sentences of the trace, "
              "compared before the load): " + ", ".join(
                  f"{k}: {r['agreement']['same']} of {r['agreement']['of']}"
                  for k, r in results["models"].items()) + "."]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ted", default=os.path.join(BUILD, "ted"))
    parser.add_argument("--lt-venv", default=os.path.join(BUILD, "lt-venv"))
    parser.add_argument("--venv-python", default=sys.executable,
                        help="the Python with transformers and ctranslate2 (the test "
                        "virtualenv's) for bench/lt_models.py")
    parser.add_argument("--openloop", default=os.path.join(BUILD, "bench-openloop"))
    parser.add_argument("--model", action="append", choices=("en-fr", "base"))
    parser.add_argument("--beam", type=int, action="append",
                        help="beam sizes to compare (default: 4, LibreTranslate's, then 1)")
    parser.add_argument("--ted-threads", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--saturation-seconds", type=float, default=15.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--agreement", type=int, default=100,
                        help="sentences both servers translate first, compared (100)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", help="write the numbers to this file")
    args = parser.parse_args(argv)
    if args.quick:
        args.model, args.seconds, args.saturation_seconds = args.model or ["en-fr"], 8.0, 6.0
    args.model = args.model or ["en-fr", "base"]
    args.beam = args.beam or [4, 1]
    args.lt_python = os.path.join(args.lt_venv, "bin", "python")
    work = tempfile.mkdtemp(prefix="lt-bench-")
    with open(TEXTS, encoding="utf-8") as f:
        texts = [line.strip() for line in f if line.strip()]
    args.bodies = write_bodies(os.path.join(work, "bodies.tsv"), texts)
    args.texts = texts
    results = {"load_before": " ".join(f"{v:.2f}" for v in os.getloadavg()), "models": {}}
    try:
        for name in args.model:
            for beam in args.beam:
                results["models"][f"{name} beam {beam}"] = run_model(name, beam, args)
                print(table(results, args), file=sys.stderr, flush=True)
                if args.json:
                    with open(args.json, "w", encoding="utf-8") as f:
                        json.dump(results, f, indent=1)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(table(results, args), flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
