#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""PyTorch's side of the training benchmark (bench/gpu/README.md, "Training").

The same two workloads memwall compiles with bench/gpu/compile_train_bundles.sh,
built as memwall-gen builds them (GPT-2: pre-norm blocks, LayerNorm eps 1e-5
with bias, fused QKV with bias, causal attention, tanh GELU, 4x MLP, no
dropout; bf16 weights and activations):

  stack     24 GPT-2-medium blocks (d 1024, 16 heads) on hidden states
            [16, 1024, 1024], forward and backward of mean(out^2) in f32, no
            optimizer (memwall-gen --blocks-only; ../shared/docs/baselines.md)
  step      the whole GPT-2-medium step at batch 16, seq 1024: embeddings,
            the blocks, ln_f, the tied head, mean cross-entropy, backward and
            AdamW (lr 1e-3, betas 0.9/0.999, eps 1e-8, weight decay 0.01)
            with memwall's precision policy: bf16 weights and gradients, fp32
            master weights and moments (the gradients cast to the fp32
            master one parameter at a time, so no fp32 gradient copy of the
            whole model is live)

each in four modes: eager, torch.compile (default mode), per-block
torch.utils.checkpoint (use_reentrant=False) in eager, and torch.compile with
torch._functorch.config.activation_memory_budget (default 0.5). A record is

  { "workload", "mode", "step_ms", "peak_bytes", "error" }

step_ms: the median over `iters` steps, each between its own pair of CUDA
events, after `warmup` steps; peak_bytes: torch.cuda.max_memory_allocated()
over the timed steps (reset after the warm-up), which excludes the caching
allocator's reserve, the figure memwall's arena is compared with. A mode
that fails (out of memory, a compile error) is recorded with its error and
the run goes on.

  python3 bench/gpu/train_bench.py --out train_pytorch.json
  python3 bench/gpu/train_bench.py --list            # no GPU, no torch needed

Standard library and torch only.
"""

import argparse
import json
import statistics
import sys
import traceback

# GPT-2-medium as memwall-gen's preset has it.
CONFIG = {"layers": 24, "hidden": 1024, "heads": 16, "ffn": 4096,
          "vocab": 50257, "positions": 1024, "batch": 16, "seq": 1024}
WORKLOADS = ("stack", "step")
MODES = ("eager", "compile", "checkpoint", "compile_budget")

torch = None
nn = None
F = None


def define_model():
    """The modules, defined once torch is imported."""
    global Block, Stack, GPT2

    class Block(nn.Module):
        def __init__(self, d, heads, ffn):
            super().__init__()
            self.heads = heads
            self.ln_1 = nn.LayerNorm(d, eps=1e-5)
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.ln_2 = nn.LayerNorm(d, eps=1e-5)
            self.fc = nn.Linear(d, ffn)
            self.out = nn.Linear(ffn, d)

        def forward(self, h):
            b, t, d = h.shape
            q, k, v = self.qkv(self.ln_1(h)).split(d, dim=-1)
            split = lambda x: x.view(b, t, self.heads, d // self.heads).transpose(1, 2)
            o = F.scaled_dot_product_attention(split(q), split(k), split(v),
                                               is_causal=True)
            h = h + self.proj(o.transpose(1, 2).reshape(b, t, d))
            return h + self.out(F.gelu(self.fc(self.ln_2(h)), approximate="tanh"))

    class Stack(nn.Module):
        def __init__(self, cfg, checkpoint):
            super().__init__()
            self.checkpoint = checkpoint
            self.blocks = nn.ModuleList(
                Block(cfg["hidden"], cfg["heads"], cfg["ffn"])
                for _ in range(cfg["layers"]))

        def forward(self, h):
            for block in self.blocks:
                if self.checkpoint:
                    h = torch.utils.checkpoint.checkpoint(block, h,
                                                          use_reentrant=False)
                else:
                    h = block(h)
            return h

    class GPT2(nn.Module):
        def __init__(self, cfg, checkpoint):
            super().__init__()
            self.wte = nn.Embedding(cfg["vocab"], cfg["hidden"])
            self.wpe = nn.Embedding(cfg["positions"], cfg["hidden"])
            self.stack = Stack(cfg, checkpoint)
            self.ln_f = nn.LayerNorm(cfg["hidden"], eps=1e-5)

        def forward(self, tokens, positions, labels):
            h = self.wte(tokens) + self.wpe(positions)
            h = self.ln_f(self.stack(h))
            logits = h @ self.wte.weight.t()
            return F.cross_entropy(logits.view(-1, logits.shape[-1]).float(),
                                   labels.view(-1))


def build(workload, mode, cfg):
    """(step function, description) for one workload and mode."""
    checkpoint = mode == "checkpoint"
    device = "cuda"
    if workload == "stack":
        model = Stack(cfg, checkpoint).to(device, torch.bfloat16)
        x = torch.empty(cfg["batch"], cfg["seq"], cfg["hidden"], device=device,
                        dtype=torch.bfloat16).uniform_(-1, 1)

        def loss_of(m):
            return lambda: m(x).float().square().mean()
    else:
        model = GPT2(cfg, checkpoint).to(device, torch.bfloat16)
        tokens = torch.randint(0, cfg["vocab"], (cfg["batch"], cfg["seq"]),
                               device=device)
        labels = torch.randint(0, cfg["vocab"], (cfg["batch"], cfg["seq"]),
                               device=device)
        positions = torch.arange(cfg["seq"], device=device)

        def loss_of(m):
            return lambda: m(tokens, positions, labels)
    compiled = model
    if mode in ("compile", "compile_budget"):
        compiled = torch.compile(model)
    forward = loss_of(compiled)
    params = [p for p in model.parameters()]
    if workload == "stack":
        def step():
            for p in params:
                p.grad = None
            loss = forward()
            loss.backward()
            return loss
        return step
    # bf16 weights and gradients; fp32 master weights and moments.
    masters = [p.detach().float().requires_grad_() for p in params]
    optimizer = torch.optim.AdamW(masters, lr=1e-3, betas=(0.9, 0.999),
                                  eps=1e-8, weight_decay=0.01, foreach=True)

    def step():
        for p in params:
            p.grad = None
        loss = forward()
        loss.backward()
        for p, master in zip(params, masters):
            master.grad = p.grad.float()
            p.grad = None
        optimizer.step()
        with torch.no_grad():
            for p, master in zip(params, masters):
                p.copy_(master)
                master.grad = None
        return loss
    return step


def time_step(step, warmup, iters):
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(iters):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), torch.cuda.max_memory_allocated()


def run(args):
    global torch, nn, F
    import torch as torch_module
    import torch.nn as nn_module
    import torch.nn.functional as functional
    import torch.utils.checkpoint  # noqa: F401 (torch.utils.checkpoint)
    torch, nn, F = torch_module, nn_module, functional
    define_model()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    cfg = dict(CONFIG)
    if args.layers:
        cfg["layers"] = args.layers
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "cuda": torch.version.cuda, "config": cfg, "warmup": args.warmup,
              "iters": args.iters, "activation_memory_budget":
              args.activation_memory_budget, "records": []}
    for workload in args.workloads:
        for mode in args.modes:
            record = {"workload": workload, "mode": mode, "step_ms": None,
                      "peak_bytes": None, "error": None}
            try:
                import torch._functorch.config as functorch_config
                functorch_config.activation_memory_budget = (
                    args.activation_memory_budget
                    if mode == "compile_budget" else 1.0)
                torch._dynamo.reset()
                step = build(workload, mode, cfg)
                record["step_ms"], record["peak_bytes"] = time_step(
                    step, args.warmup, args.iters)
            except Exception as error:  # recorded, the run goes on
                record["error"] = "%s: %s" % (type(error).__name__, error)
                traceback.print_exc()
            finally:
                step = None
                torch.cuda.empty_cache()
            print("%-6s %-15s %s" % (workload, mode, (
                "%.2f ms, peak %.2f GB" % (record["step_ms"],
                                           record["peak_bytes"] / 1e9))
                if record["error"] is None else "error: " + record["error"]),
                flush=True)
            result["records"].append(record)
    with open(args.out, "w") as out:
        json.dump(result, out, indent=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="train_pytorch.json")
    parser.add_argument("--list", action="store_true",
                        help="print the workloads and modes, and exit")
    parser.add_argument("--workloads", nargs="+", choices=WORKLOADS,
                        default=list(WORKLOADS))
    parser.add_argument("--modes", nargs="+", choices=MODES,
                        default=list(MODES))
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--layers", type=int, default=0,
                        help="blocks instead of 24 (a quicker smoke run)")
    parser.add_argument("--activation-memory-budget", type=float, default=0.5)
    args = parser.parse_args()
    if args.list:
        for workload in WORKLOADS:
            print(workload, " ".join(MODES), json.dumps(CONFIG))
        return 0
    run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
