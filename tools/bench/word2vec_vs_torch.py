#!/usr/bin/python3
"""word2vec skip-gram: `actorflow train --model word2vec` beside a PyTorch peer, on the
text of Debian's fortunes package, interleaved in one run.

The peer (below) trains the same model the same way: the vocabulary and (center,
context) pairs of training/estimators/word2vec.h (runs of letters, lowercased, the most
frequent words with UNK for the rest; context words within --skip-window, in corpus
order), an embedding table, NCE weights and biases as nn.Embedding(sparse=True), NCE
against --num-sampled unique log-uniform negative words (TensorFlow's expected-count
correction), plain SGD on the mean loss, one process.

Figures (ratio = ours / peer, so above 1 is faster; min / median / max over --rounds):
  words/s  center words trained per second, ours in one process and ours between-graph
           with --cluster local:ps=1,worker=2 (async), each against the peer's words/s
           measured in the same round;
  loss     each side's mean NCE loss of its last 100 steps.

Usage (from the repository root):
  bazel build -c opt //tools:actorflow
  tools/bench/word2vec_vs_torch.py [--rounds 3] [--steps 4000] [--text DIR] [--bin PATH]
Needs Debian's /usr/bin/python3 with python3-torch, and the fortunes package.
"""
import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time

import torch


def read_corpus(path, vocab_size):
    if os.path.isdir(path):
        names = sorted(n for n in os.listdir(path)
                       if not n.endswith(".dat") and not n.endswith(".u8")
                       and os.path.isfile(os.path.join(path, n)))
        files = [os.path.join(path, n) for n in names]
    else:
        files = [path]
    text = b"\n".join(open(f, "rb").read() for f in files) + b"\n"
    words = [w.lower() for w in re.findall(rb"[A-Za-z]+", text)]
    counts, first = {}, {}
    for i, w in enumerate(words):
        counts[w] = counts.get(w, 0) + 1
        first.setdefault(w, i)
    ranked = sorted(counts, key=lambda w: (-counts[w], first[w]))[:vocab_size - 1]
    index = {w: i + 1 for i, w in enumerate(ranked)}
    return [index.get(w, 0) for w in words], len(ranked) + 1


def pairs(ids, window, batch):
    n, offsets = len(ids), [o for o in range(-window, window + 1) if o != 0]
    position, k = 0, 0
    while True:
        centers, contexts = [], []
        for _ in range(batch):
            centers.append(ids[position])
            contexts.append(ids[(position + offsets[k]) % n])
            k += 1
            if k == len(offsets):
                k, position = 0, (position + 1) % n
        yield torch.tensor(centers), torch.tensor(contexts)


def torch_word2vec(ids, vocab, args):
    torch.manual_seed(1)
    d, s = args.embedding_dim, args.num_sampled
    emb = torch.nn.Embedding(vocab, d, sparse=True)
    torch.nn.init.uniform_(emb.weight, -1, 1)
    nce_w = torch.nn.Embedding(vocab, d, sparse=True)
    torch.nn.init.trunc_normal_(nce_w.weight, std=1 / math.sqrt(d))
    nce_b = torch.nn.Embedding(vocab, 1, sparse=True)
    torch.nn.init.zeros_(nce_b.weight)
    opt = torch.optim.SGD(list(emb.parameters()) + list(nce_w.parameters()) +
                          list(nce_b.parameters()), lr=args.lr)
    log_range = math.log(vocab + 1)

    def prob(k):
        return (torch.log(k.double() + 2) - torch.log(k.double() + 1)) / log_range

    losses, batches = [], pairs(ids, args.skip_window, args.batch)
    start = time.perf_counter()
    for _ in range(args.steps):
        centers, contexts = next(batches)
        # Unique log-uniform draws, as the sampler of graph/sampled_ops.h.
        drawn, tries = [], 0
        seen = set()
        while len(drawn) < s:
            u = torch.rand(2 * s, dtype=torch.float64)
            for k in (torch.exp(u * log_range).long() - 1).clamp(0, vocab - 1).tolist():
                if len(drawn) == s:
                    break
                tries += 1
                if k not in seen:
                    seen.add(k)
                    drawn.append(k)
        sampled = torch.tensor(drawn)
        true_expected = -torch.expm1(tries * torch.log1p(-prob(contexts)))
        sampled_expected = -torch.expm1(tries * torch.log1p(-prob(sampled)))
        x = emb(centers)
        true_logits = (x * nce_w(contexts)).sum(1) + nce_b(contexts).squeeze(1) \
            - torch.log(true_expected.float())
        sampled_logits = x @ nce_w(sampled).t() + nce_b(sampled).squeeze(1) \
            - torch.log(sampled_expected.float())
        loss = (torch.nn.functional.softplus(-true_logits) +
                torch.nn.functional.softplus(sampled_logits).sum(1)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    seconds = time.perf_counter() - start
    words = args.steps * args.batch / (2 * args.skip_window)
    return {"words_per_second": words / seconds, "loss": statistics.mean(losses[-100:])}


def ours(args, cluster):
    cmd = [args.bin, "train", "--model", "word2vec", "--text", args.text, "--steps",
           str(args.steps), "--embedding-dim", str(args.embedding_dim), "--num-sampled",
           str(args.num_sampled), "--batch", str(args.batch), "--skip-window",
           str(args.skip_window), "--lr", str(args.lr), "--json"]
    if cluster:
        cmd += ["--cluster", "local:ps=1,worker=2"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def triple(values):
    return "%.2f / %.2f / %.2f" % (min(values), statistics.median(values), max(values))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=4000)
    p.add_argument("--text", default="/usr/share/games/fortunes")
    p.add_argument("--bin", default="bazel-bin/tools/actorflow")
    p.add_argument("--embedding-dim", type=int, default=128)
    p.add_argument("--num-sampled", type=int, default=64)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--skip-window", type=int, default=1)
    p.add_argument("--lr", type=float, default=1.0)
    p.add_argument("--vocab-size", type=int, default=50000)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    ids, vocab = read_corpus(args.text, args.vocab_size)
    print("corpus: %d words, vocabulary of %d" % (len(ids), vocab))
    single, cluster, peer = [], [], []
    for r in range(args.rounds):
        t = torch_word2vec(ids, vocab, args)
        a = ours(args, False)
        b = ours(args, True)
        peer.append(t["words_per_second"])
        single.append(a["words_per_second"] / t["words_per_second"])
        cluster.append(b["words_per_second"] / t["words_per_second"])
        print("round %d: peer %.0f words/s (loss %.2f); ours %.0f (loss %.2f); "
              "ps=1,worker=2 %.0f (loss %.2f)" %
              (r + 1, t["words_per_second"], t["loss"], a["words_per_second"], a["loss"],
               b["words_per_second"], b["loss"]))
        sys.stdout.flush()
    print("peer words/s:                 %s" % triple(peer))
    print("ours one process / peer:      %s" % triple(single))
    print("ours ps=1,worker=2 / peer:    %s" % triple(cluster))


if __name__ == "__main__":
    main()
