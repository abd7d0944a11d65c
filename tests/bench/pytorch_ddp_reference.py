#!/usr/bin/python3
"""PyTorch's own DDP on dtlab's TinyGPT: the reference that dtlab's DDP is measured against.

Usage:
    /usr/bin/python3 tests/bench/pytorch_ddp_reference.py --ranks N --steps S --warmup W --json OUT

What it runs (kept identical to dtlab's C++ DDP scenario so the two step times compare):
  * N processes on this host, one rank each, torch.distributed with the Gloo backend
    (MASTER_ADDR=127.0.0.1, a free MASTER_PORT), 1 torch thread and OPENBLAS_NUM_THREADS=1
    per rank (set in the environment before the child imports torch).
  * Model: the char GPT of engine/src/model/tiny_gpt.cpp: vocab 128, context 64, d_model 128,
    4 layers, 4 heads, MLP ratio 4, exact GELU, pre-LayerNorm blocks, untied bias-free head.
  * torch.nn.parallel.DistributedDataParallel with its defaults (bucket_cap_mb 25,
    find_unused_parameters False), AdamW(lr=3e-4, weight_decay=0.01).
  * Data: the bytes of Debian's fortunes text (/usr/share/games/fortunes/*, files without an
    extension, sorted by name, each byte & 0x7F); per rank, batches of 16 random windows of
    65 bytes (input = the first 64, target = the next 64) from a generator seeded per rank.

Timing: every rank times each step (data + forward + backward + optimizer step) with
time.perf_counter, with no barrier; the first W steps are warm-up and are left out; each rank
reports the median of the other S - W steps. Rank 0 writes
    {"ranks": N, "step_ms_median": [per rank], "loss_first": x, "loss_last": y, ...}
where the losses are the mean over ranks at the first and last step.

The launcher itself never imports torch; it starts the ranks as child processes, waits for
them, kills the rest if one fails (and all of them on Ctrl-C, SIGTERM or --timeout), and
exits non-zero with a message saying which rank failed and how.
"""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time

FORTUNES_DIR = "/usr/share/games/fortunes"

# TinyGPT hyper-parameters (must match dtlab's C++ TinyGPT and scenarios/ddp_basics.toml).
VOCAB = 128
CONTEXT = 64
D_MODEL = 128
N_LAYERS = 4
N_HEADS = 4
MLP_RATIO = 4
BATCH_PER_RANK = 16
LR = 3e-4
WEIGHT_DECAY = 0.01


def fail(msg, code=1):
    print(f"pytorch_ddp_reference: error: {msg}", file=sys.stderr)
    sys.exit(code)


# ---------------------------------------------------------------------------------------------
# [SECTION] launcher (parent process: no torch import)
# ---------------------------------------------------------------------------------------------

def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def describe_exit(code):
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def launch(args):
    if args.ranks < 1:
        fail("--ranks must be >= 1", 2)
    if args.steps < 1 or args.warmup < 0 or args.warmup >= args.steps:
        fail(f"need 0 <= --warmup < --steps (got --steps {args.steps} --warmup {args.warmup})", 2)
    out_dir = os.path.dirname(os.path.abspath(args.json))
    if not os.path.isdir(out_dir):
        fail(f"directory of --json does not exist: {out_dir}", 2)
    if not os.path.isdir(FORTUNES_DIR):
        fail(f"{FORTUNES_DIR} not found (install Debian's 'fortunes' package)", 2)

    if os.path.exists(args.json):
        os.unlink(args.json)  # a stale result must not pass for this run's
    port = args.port or free_port()
    env = dict(os.environ)
    env.update({
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
        "WORLD_SIZE": str(args.ranks),
    })
    procs = []

    def kill_all(sig=signal.SIGKILL):
        for p in procs:
            if p.poll() is None:
                try:
                    p.send_signal(sig)
                except ProcessLookupError:
                    pass
        for p in procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def on_signal(signum, _frame):
        kill_all()
        fail(f"interrupted by {signal.Signals(signum).name}; all ranks killed", 128 + signum)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    try:
        for rank in range(args.ranks):
            renv = dict(env, RANK=str(rank), LOCAL_RANK=str(rank))
            cmd = [sys.executable, os.path.abspath(__file__), "--worker",
                   "--ranks", str(args.ranks), "--steps", str(args.steps),
                   "--warmup", str(args.warmup), "--seed", str(args.seed),
                   "--json", os.path.abspath(args.json)]
            procs.append(subprocess.Popen(cmd, env=renv))

        deadline = time.monotonic() + args.timeout
        failed = None
        rank0_done_at = None
        while True:
            codes = [p.poll() for p in procs]
            if codes[0] == 0 and rank0_done_at is None:
                rank0_done_at = time.monotonic()
            bad = [(r, c) for r, c in enumerate(codes) if c not in (None, 0)]
            if bad:
                time.sleep(0.2)  # let a peer's resulting failure show too, then name all
                codes = [p.poll() for p in procs]
                failed = "; ".join("rank %d failed (%s)" % (r, describe_exit(c))
                                   for r, c in enumerate(codes) if c not in (None, 0))
                break
            if all(c == 0 for c in codes):
                break
            # Rank 0 wrote the result after a barrier all ranks passed: a rank still alive
            # long after that is stuck in teardown, not training. Keep the result.
            if rank0_done_at is not None and time.monotonic() - rank0_done_at > 30 \
                    and os.path.isfile(args.json):
                stuck = [r for r, c in enumerate(codes) if c is None]
                print("pytorch_ddp_reference: warning: rank(s) %s still running 30 s after "
                      "the run finished; killed" % ", ".join(map(str, stuck)), file=sys.stderr)
                break
            if time.monotonic() > deadline:
                failed = f"timed out after {args.timeout} s; ranks still running: " + \
                    ", ".join(str(r) for r, c in enumerate(codes) if c is None)
                break
            time.sleep(0.05)
        if failed:
            kill_all()
            fail(failed + "; the other ranks were killed")
    finally:
        kill_all()

    if not os.path.isfile(args.json):
        fail(f"all ranks exited 0 but {args.json} was not written")
    if not args.quiet:
        with open(args.json) as f:
            res = json.load(f)
        meds = ", ".join(f"{m:.1f}" for m in res["step_ms_median"])
        print(f"pytorch DDP: ranks={res['ranks']} step_ms_median=[{meds}] "
              f"loss {res['loss_first']:.4f} -> {res['loss_last']:.4f}")


# ---------------------------------------------------------------------------------------------
# [SECTION] worker (one rank)
# ---------------------------------------------------------------------------------------------

def die_with_parent():
    """Ask Linux to SIGKILL this rank if the launcher dies (no orphans even on kill -9)."""
    try:
        import ctypes
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() == 1:  # parent already gone before prctl took effect
            os._exit(1)
    except OSError:
        pass


def load_fortunes():
    """Bytes of every extension-less regular file in FORTUNES_DIR, sorted by name, & 0x7F."""
    names = sorted(n for n in os.listdir(FORTUNES_DIR)
                   if "." not in n and os.path.isfile(os.path.join(FORTUNES_DIR, n)))
    if not names:
        raise RuntimeError(f"no fortune text files in {FORTUNES_DIR}")
    data = bytearray()
    for n in names:
        with open(os.path.join(FORTUNES_DIR, n), "rb") as f:
            data += f.read()
    return bytes(b & 0x7F for b in data)


def worker(args):
    die_with_parent()
    # Ctrl-C reaches the whole process group; the launcher handles it and kills the ranks,
    # so a rank ignores it instead of printing a KeyboardInterrupt traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The launcher set OPENBLAS_NUM_THREADS=1 in our environment before this import.
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(1)
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL)
            self.proj = nn.Linear(D_MODEL, D_MODEL)
            # A plain attribute, not a registered buffer: DDP (broadcast_buffers=True) would
            # otherwise broadcast it before every forward, a collective dtlab does not do.
            self.mask = torch.triu(torch.ones(CONTEXT, CONTEXT, dtype=torch.bool), diagonal=1)

        def forward(self, x):  # x: (B, T, d)
            B, T, C = x.shape
            hd = C // N_HEADS
            q, k, v = self.qkv(x).split(C, dim=2)                  # 3 x (B, T, d)
            q = q.view(B, T, N_HEADS, hd).transpose(1, 2)          # (B, h, T, hd)
            k = k.view(B, T, N_HEADS, hd).transpose(1, 2)
            v = v.view(B, T, N_HEADS, hd).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / (hd ** 0.5))  # (B, h, T, T)
            att = att.masked_fill(self.mask[:T, :T], float("-inf"))
            att = F.softmax(att, dim=-1)
            y = att @ v                                            # (B, h, T, hd)
            y = y.transpose(1, 2).contiguous().view(B, T, C)       # (B, T, d)
            return self.proj(y)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(D_MODEL)
            self.attn = CausalSelfAttention()
            self.ln2 = nn.LayerNorm(D_MODEL)
            self.fc = nn.Linear(D_MODEL, MLP_RATIO * D_MODEL)
            self.fc_out = nn.Linear(MLP_RATIO * D_MODEL, D_MODEL)

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            x = x + self.fc_out(F.gelu(self.fc(self.ln2(x))))  # exact (erf) GELU
            return x

    class TinyGPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok_emb = nn.Embedding(VOCAB, D_MODEL)
            self.pos_emb = nn.Embedding(CONTEXT, D_MODEL)
            self.blocks = nn.ModuleList([Block() for _ in range(N_LAYERS)])
            self.ln_f = nn.LayerNorm(D_MODEL)
            self.head = nn.Linear(D_MODEL, VOCAB, bias=False)
            self.pos = torch.arange(CONTEXT)  # plain attribute, see mask above

        def forward(self, idx, targets):  # idx, targets: (B, T) int64
            B, T = idx.shape
            x = self.tok_emb(idx) + self.pos_emb(self.pos[:T])    # (B, T, d)
            for blk in self.blocks:
                x = blk(x)
            logits = self.head(self.ln_f(x))                       # (B, T, vocab)
            return F.cross_entropy(logits.view(-1, VOCAB), targets.view(-1))

    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(args.seed)  # same initial weights on every rank (DDP also broadcasts)
    model = DDP(TinyGPT())        # defaults: bucket_cap_mb=25, find_unused_parameters=False
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)

    data = torch.frombuffer(bytearray(load_fortunes()), dtype=torch.uint8)
    window = CONTEXT + 1
    offsets = torch.arange(window)
    gen = torch.Generator().manual_seed(args.seed * 1000003 + rank)  # different per rank

    times_ms = []
    losses = []
    for _step in range(args.steps):
        t0 = time.perf_counter()
        starts = torch.randint(0, data.numel() - window + 1, (BATCH_PER_RANK,), generator=gen)
        batch = data[starts.unsqueeze(1) + offsets].long()    # (B, 65)
        x = batch[:, :CONTEXT].contiguous()                    # (B, 64) inputs
        y = batch[:, 1:].contiguous()                          # (B, 64) next bytes
        loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()                                        # DDP all-reduces buckets here
        opt.step()
        loss_value = loss.item()
        times_ms.append((time.perf_counter() - t0) * 1000.0)
        losses.append(loss_value)

    timed = sorted(times_ms[args.warmup:])
    n = len(timed)
    median = timed[n // 2] if n % 2 else 0.5 * (timed[n // 2 - 1] + timed[n // 2])

    try:
        _ld = model._get_ddp_logging_data()
        raw = _ld.get("rebuilt_bucket_sizes") or _ld.get("bucket_sizes", "")
        bucket_bytes = [int(b) for b in str(raw).replace(" ", "").split(",") if b]
    except Exception:  # private API: informational only
        bucket_bytes = None

    # Gather after the timed loop (not timed): per-rank medians and losses.
    gathered = [None] * world
    dist.all_gather_object(gathered, {"median": median, "first": losses[0],
                                      "last": losses[-1]})
    if rank == 0:
        result = {
            "ranks": world,
            "step_ms_median": [g["median"] for g in gathered],
            "loss_first": sum(g["first"] for g in gathered) / world,
            "loss_last": sum(g["last"] for g in gathered) / world,
            "steps": args.steps,
            "warmup": args.warmup,
            "batch_per_rank": BATCH_PER_RANK,
            "parameters": sum(p.numel() for p in model.parameters()),
            # DDP's gradient buckets in bytes, in all-reduce order. Step 0 uses one bucket;
            # DDP then rebuilds them in gradient-ready order, the first capped at 1 MiB
            # (dist._DEFAULT_FIRST_BUCKET_BYTES), the others at bucket_cap_mb (25 MiB).
            "ddp_bucket_bytes": bucket_bytes,
            "torch_version": torch.__version__,
            "torch_threads": torch.get_num_threads(),
        }
        tmp_path = args.json + ".tmp"
        with open(tmp_path, "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")
        os.replace(tmp_path, args.json)
    dist.barrier()  # rank 0 (the TCPStore server) must not leave before the others are done


def run_worker(args):
    """Run one rank, then leave with os._exit, skipping Python's and LibTorch's teardown.

    Teardown can deadlock in torch 1.13: when the DDP model is freed, ~Reducer drops the last
    reference to ProcessGroupGloo, whose destructor joins Gloo's worker threads while this
    thread holds the GIL, and a worker thread freeing a tensor waits for the GIL (seen about
    once in ten 2-rank runs on a loaded machine: rank 1 hung for good, with its TCPStore
    client thread spinning on the socket rank 0 had closed). Everything worth keeping (the
    JSON file) is written and flushed before this exit.
    """
    code = 0
    try:
        worker(args)
    except BaseException:  # noqa: BLE001 - report anything, then leave without teardown
        import traceback
        rank = os.environ.get("RANK", "?")
        print(f"pytorch_ddp_reference: rank {rank}:", file=sys.stderr)
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main():
    ap = argparse.ArgumentParser(description="PyTorch DDP reference for dtlab's DDP benchmark")
    ap.add_argument("--ranks", type=int, required=True, help="number of rank processes")
    ap.add_argument("--steps", type=int, default=30, help="total steps, warm-up included")
    ap.add_argument("--warmup", type=int, default=5, help="first steps left out of the median")
    ap.add_argument("--json", required=True, help="result file written by rank 0")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--port", type=int, default=0, help="MASTER_PORT (default: a free port)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds before giving up")
    ap.add_argument("--quiet", action="store_true", help="no summary line on stdout")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        run_worker(args)
    else:
        launch(args)


if __name__ == "__main__":
    main()
