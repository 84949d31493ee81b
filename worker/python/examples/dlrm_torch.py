#!/usr/bin/env python3
"""A DLRM in PyTorch with its embeddings and MLPs in tauPS, on the same
synthetic click logs as `ps_worker --model=ctr`.

Data: taups.CtrData, the C++ trainer's generator (13 dense count features,
26 Zipf-distributed categorical fields, labels drawn from a planted model),
so the planted model's AUC on the eval examples is the ceiling, and the C++
worker's AUC on the very same examples is the reference. Worker w of W
trains on the examples i < --examples with i % W == w, reshuffled each
epoch; every worker evaluates on eval examples [0, --eval_examples).

Model, as ps_worker's (worker/trainer/ctr_model.h): bottom MLP 13-32-16
(ReLU), the 26 fields' 16-wide embeddings, the pairwise dot products of
(bottom output, embeddings), top MLP 367-64-1; mean log-loss. Embeddings:
taups.torch.EmbeddingBagCollection over one sparse table (one feature per
field, each its own key space: the keys equal ps_worker's). MLPs:
taups.torch.DenseParameters over one dense table. Both tables use
server-side Adagrad (lr 0.1, initial accumulator 1e-3, a warm-up of 100
updates per worker) like ps_worker, under --consistency.

Launch one worker per process with torchrun (RANK / WORLD_SIZE give the
worker id and count), against running shards:

    PYTHONPATH=build/python torchrun --nproc_per_node=4 \\
        worker/python/examples/dlrm_torch.py --servers=127.0.0.1:7000

A tqdm bar (worker 0; --progress=all for every worker) shows the running
loss, the training AUC of recent batches, samples/s and tau; the last line
on stdout is a JSON summary (with the steady step time and its compute and
network parts). --device=cuda trains on a GPU; --compression=CODEC
compresses the MLP table's pushes (encoded on the GPU when it can be). Exits 2 when the eval AUC is below --min_auc,
more than --max_auc_gap below the planted AUC, or more than
--max_reference_gap below --reference_auc.

Measured (2 shared CPU cores, 1 ps_server, 200,000 examples, 780 steps of
256 per worker, seed 1; see worker/python/README.md for the commands):
figures in the README's DLRM section.
"""

import argparse
import json
import os
import sys
import time

import numpy as np
import torch

import taups
import taups.metrics
import taups.torch as tt

try:
    from tqdm import tqdm
except ImportError:  # Debian: python3-tqdm
    tqdm = None

FIELDS = 26
DENSE = 13


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--servers", default=os.environ.get("TAUPS_SERVERS"),
                   help="host:port of every shard, comma-separated "
                        "(default: $TAUPS_SERVERS)")
    p.add_argument("--worker_id", type=int, default=None,
                   help="default: $RANK (torchrun), else 0")
    p.add_argument("--num_workers", type=int, default=None,
                   help="default: $WORLD_SIZE (torchrun), else 1")
    p.add_argument("--steps", type=int, default=780,
                   help="steps of this worker")
    p.add_argument("--examples", type=int, default=200000,
                   help="training examples shared by the workers")
    p.add_argument("--eval_examples", type=int, default=20000)
    p.add_argument("--batch_size", type=int, default=256)
    p.add_argument("--dim", type=int, default=16)
    p.add_argument("--learning_rate", type=float, default=0.1)
    p.add_argument("--warmup_steps", type=int, default=100,
                   help="Adagrad warm-up, in updates per worker")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--consistency", default="async",
                   choices=["async", "sync", "semi_sync", "ssp"])
    p.add_argument("--staleness_bound", type=int, default=2, help="ssp")
    p.add_argument("--prefetch", default="on", choices=["on", "off"],
                   help="pull the next batch's rows while this one computes")
    p.add_argument("--row_tau", action="store_true",
                   help="also measure per-row tau of the embedding pushes")
    p.add_argument("--table_prefix", default="dlrm_torch")
    p.add_argument("--device", default="cpu",
                   help="cpu, or cuda[:N]: the MLPs, ids and embeddings' "
                        "outputs on the GPU (rows staged through pinned "
                        "memory)")
    p.add_argument("--compression", default="none",
                   help="push codec of the MLPs' dense table (int8, fp16, "
                        "topk, ...; with error feedback); on a GPU the "
                        "gradient is encoded there when taups has the CUDA "
                        "codecs")
    p.add_argument("--threads", type=int, default=1,
                   help="torch CPU threads of this worker")
    p.add_argument("--progress", default="rank0",
                   choices=["rank0", "all", "none"])
    p.add_argument("--min_auc", type=float, default=0.0)
    p.add_argument("--max_auc_gap", type=float, default=1.0,
                   help="largest allowed planted AUC - AUC")
    p.add_argument("--reference_auc", type=float, default=None,
                   help="ps_worker --model=ctr's AUC on the same data")
    p.add_argument("--max_reference_gap", type=float, default=1.0,
                   help="largest allowed reference_auc - AUC")
    taups.add_transport_arguments(p)
    args = p.parse_args(argv)
    if not args.servers:
        p.error("--servers (or $TAUPS_SERVERS) is required")
    args.worker_id, args.num_workers = tt.worker_from_env(
        args.worker_id, args.num_workers)
    return args


class Dlrm(torch.nn.Module):
    """Bottom MLP, dot interaction and top MLP; the embeddings come in."""

    def __init__(self, dim):
        super().__init__()
        self.bottom = torch.nn.Sequential(
            torch.nn.Linear(DENSE, 32), torch.nn.ReLU(),
            torch.nn.Linear(32, dim), torch.nn.ReLU())
        vectors = FIELDS + 1
        pairs = torch.tril_indices(vectors, vectors, offset=-1)
        # Positions of the pairs (i > j, row by row) in the flat Gram matrix.
        self.register_buffer("pairs", pairs[0] * vectors + pairs[1])
        width = dim + vectors * (vectors - 1) // 2
        self.top = torch.nn.Sequential(
            torch.nn.Linear(width, 64), torch.nn.ReLU(),
            torch.nn.Linear(64, 1))

    def forward(self, dense, embeddings):
        """dense (B, 13), embeddings (B, 26, dim) -> logits (B,)."""
        z = self.bottom(dense)
        t = torch.cat([z.unsqueeze(1), embeddings], dim=1)
        gram = torch.bmm(t, t.transpose(1, 2)).flatten(1)
        dots = gram.index_select(1, self.pairs)
        return self.top(torch.cat([z, dots], dim=1)).squeeze(1)


def field_features(ids):
    """The EmbeddingBagCollection input: field f's ids, one per example."""
    return {f"C{f}": ids[:, f] for f in range(FIELDS)}


def batches(args, data, device):
    """This worker's training batches, epoch after epoch, as dicts of
    tensors; `features` is the embedding input (prefetch keys on it)."""
    shard = np.arange(args.worker_id, args.examples, args.num_workers)
    epoch, made = 0, 0
    while made < args.steps:
        rng = np.random.default_rng([args.seed, epoch, args.worker_id])
        order = rng.permutation(shard)
        for start in range(0, len(order) - args.batch_size + 1,
                           args.batch_size):
            if made == args.steps:
                return
            ex = data.take("train", order[start:start + args.batch_size])
            yield {"dense": torch.from_numpy(ex["dense"]).to(device),
                   "labels": torch.from_numpy(ex["labels"]).to(device),
                   "features": field_features(
                       torch.from_numpy(ex["ids"]).to(device))}
            made += 1
        epoch += 1


def build(args, client):
    staleness = taups.StalenessConfig()
    per_step = args.consistency in ("sync", "semi_sync")
    staleness.warmup_versions = args.warmup_steps * (
        1 if per_step else args.num_workers)
    consistency = taups.consistency(
        args.consistency, num_workers=args.num_workers,
        staleness_bound=args.staleness_bound
        if args.consistency == "ssp" else 0)
    common = dict(optimizer="adagrad", learning_rate=args.learning_rate,
                  initializer="uniform", init_seed=args.seed,
                  adagrad_initial_accumulator=1e-3, consistency=consistency,
                  staleness=staleness)
    table = tt.EmbeddingTable(
        f"{args.table_prefix}_embeddings", args.dim,
        [f"C{f}" for f in range(FIELDS)], init_scale=0.05,
        row_versions=args.row_tau, **common)
    embeddings = tt.EmbeddingBagCollection(client, [table],
                                           device=args.device)
    model = Dlrm(args.dim).to(args.device)
    compression = None
    if args.compression != "none":
        compression = taups.compression(args.compression, error_feedback=True)
    dense = tt.DenseParameters(client, f"{args.table_prefix}_mlp",
                               model.parameters(), init_scale=0.1,
                               compression=compression, **common)
    return embeddings, model, dense


def forward(embeddings, model, batch):
    pooled = embeddings(batch["features"])
    return model(batch["dense"], torch.stack(list(pooled.values()), dim=1))


def progress_bar(args):
    show = args.progress == "all" or (args.progress == "rank0"
                                      and args.worker_id == 0)
    if tqdm is None or not show:
        return None
    return tqdm(total=args.steps, desc=f"worker {args.worker_id}",
                unit="step", mininterval=1.0, file=sys.stderr,
                position=args.worker_id if args.progress == "all" else 0)


def train(args, embeddings, model, dense):
    loss_fn = torch.nn.BCEWithLogitsLoss()
    loop = batches(args, taups.CtrData(args.seed), args.device)
    if args.prefetch == "on":
        loop = tt.prefetch(loop, embeddings, lambda b: b["features"])
    bar = progress_bar(args)
    totals = {"tau_sum": 0.0, "tau_max": 0, "row_tau_max": 0, "rejected": 0,
              "wait_s": 0.0, "steps": 0}
    # Per step: compute (forward and backward less the forward's wait for
    # rows) and network (the pulls' and pushes' own durations, on their
    # threads): with prefetch a step takes about the larger of the two,
    # without about their sum.
    compute_times, network_times = [], []
    window_scores, window_labels, window_loss = [], [], []
    step_times = []
    started = last = time.monotonic()
    for batch in loop:
        with tt.training_step(embeddings, dense) as step:
            computing = time.monotonic()
            logits = forward(embeddings, model, batch)
            loss = loss_fn(logits, batch["labels"])
            loss.backward()
            if logits.is_cuda:
                torch.cuda.synchronize(logits.device)
            computed = time.monotonic() - computing
        now = time.monotonic()
        step_times.append(now - last)
        last = now
        s = step.stats
        taus = [t.tau_max for t in s.tables.values()]
        totals["steps"] += 1
        totals["tau_sum"] += float(np.mean(taus))
        totals["tau_max"] = max(totals["tau_max"], s.tau_max)
        totals["row_tau_max"] = max(totals["row_tau_max"], s.row_tau_max)
        totals["rejected"] += s.rejected
        totals["wait_s"] += s.wait_s
        compute_times.append(max(computed - s.wait_s, 0.0))
        network_times.append(s.pull_s + s.push_s)
        window_loss.append(loss.item())
        window_scores.append(logits.detach().cpu().numpy())
        window_labels.append(batch["labels"].cpu().numpy())
        if bar is not None:
            bar.update(1)
            if totals["steps"] % 50 == 0:
                bar.set_postfix(
                    loss=f"{np.mean(window_loss):.4f}",
                    auc=f"{taups.metrics.auc(np.concatenate(window_scores), np.concatenate(window_labels)):.4f}",
                    samples_s=f"{totals['steps'] * args.batch_size / (now - started):.0f}",
                    tau=f"{totals['tau_sum'] / totals['steps']:.2f}",
                    refresh=False)
                window_scores, window_labels, window_loss = [], [], []
    if bar is not None:
        bar.close()
    totals["seconds"] = time.monotonic() - started
    # Steady-state step time: the first steps warm caches and connections.
    for name, times in (("step_ms", step_times),
                        ("compute_ms", compute_times),
                        ("network_ms", network_times)):
        steady = times[10:] if len(times) > 20 else times
        totals[name] = 1000.0 * float(np.mean(steady)) if steady else 0.0
    return totals


def evaluate(args, embeddings, model, dense):
    eval_set = taups.CtrData(args.seed).range("eval", 0, args.eval_examples)
    dense.pull()
    embeddings.eval()
    probs = np.empty(args.eval_examples, np.float32)
    with torch.no_grad():
        for start in range(0, args.eval_examples, 4096):
            end = min(start + 4096, args.eval_examples)
            batch = {"dense": torch.from_numpy(
                         eval_set["dense"][start:end]).to(args.device),
                     "features": field_features(torch.from_numpy(
                         eval_set["ids"][start:end]).to(args.device))}
            probs[start:end] = torch.sigmoid(
                forward(embeddings, model, batch)).cpu().numpy()
    labels = eval_set["labels"]
    planted = eval_set["planted_probs"]
    return {"auc": taups.metrics.auc(probs, labels),
            "planted_auc": taups.metrics.auc(planted, labels),
            "logloss": taups.metrics.log_loss(probs, labels),
            "planted_logloss": taups.metrics.log_loss(planted, labels)}


def check(args, summary):
    failures = taups.metrics.auc_bound_failures(
        summary["auc"], summary["planted_auc"], args.min_auc,
        args.max_auc_gap)
    if (args.reference_auc is not None
            and args.reference_auc - summary["auc"] > args.max_reference_gap):
        failures.append(f"AUC {summary['auc']:.4f} is more than "
                        f"{args.max_reference_gap} below ps_worker's "
                        f"{args.reference_auc:.4f}")
    for failure in failures:
        print(f"FAIL: worker {args.worker_id}: {failure}", file=sys.stderr)
    return 2 if failures else 0


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    with tt.connect(args.servers, args.worker_id,
                    **taups.transport_settings(args)) as client:
        embeddings, model, dense = build(args, client)
        totals = train(args, embeddings, model, dense)
        result = evaluate(args, embeddings, model, dense)
        embeddings.close()
        dense.close()
    steps = totals["steps"]
    summary = {
        "worker": args.worker_id, "workers": args.num_workers,
        "consistency": args.consistency, "prefetch": args.prefetch,
        "steps": steps, "batch_size": args.batch_size,
        **{k: round(v, 4) for k, v in result.items()},
        "samples_per_s": round(steps * args.batch_size / totals["seconds"]),
        "device": args.device, "gradient_path": dense.gradient_path,
        "step_ms": round(totals["step_ms"], 3),
        "compute_ms": round(totals["compute_ms"], 3),
        "network_ms": round(totals["network_ms"], 3),
        "tau_mean": round(totals["tau_sum"] / max(steps, 1), 3),
        "tau_max": totals["tau_max"],
        "row_tau_max": totals["row_tau_max"],
        "rejected_pushes": totals["rejected"],
        "pull_wait_ms_per_step": round(1000 * totals["wait_s"]
                                       / max(steps, 1), 3),
        "train_seconds": round(totals["seconds"], 2),
    }
    print(json.dumps(summary), flush=True)
    return check(args, summary)


if __name__ == "__main__":
    sys.exit(main())
