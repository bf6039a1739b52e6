#!/usr/bin/python3
"""Character language models: `actorflow train --model char-lstm|char-transformer` beside
a PyTorch peer of the same model on the text of Debian's fortunes package, interleaved
in one run.

Both sides read the text the same way (training/data/char_text.h): UTF-8 code points,
the vocabulary of the distinct characters in ascending order, records = the fortunes'
entries (separated by lines holding only "%"), record k in validation when k % 10 == 9.
Training draws --batch windows of --seq-len + 1 characters at uniform random starts of
the training part; evaluation runs the consecutive windows of the validation part (at
most --eval-chars characters of it), each window from a zero state.

The models (training/estimators/char_lm.h):
  char-lstm         embedding 64 -> 2 LSTM layers of 256 -> dense to the vocabulary,
                    initialized as ours (CharLstm below);
  char-transformer  embedding 128 + learned positions -> 4 pre-norm causal blocks
                    (4 heads, MLP 512 with GELU) -> layer norm -> dense;
trained by Adam (lr 0.002 for the LSTM, 0.001 for the Transformer) on the mean
cross-entropy of every position.

Figures (min / median / max over --rounds):
  samples/s  ours / peer (windows trained per second), 1 and 2 threads (each side
             pinned to that many cores);
  bpc        each side's validation bits per character after --steps steps; with
             --seeds, each round draws its initial weights and windows from the next
             seed on both sides, and the means over the rounds are compared.

Usage (from the repository root):
  bazel build -c opt //tools:actorflow
  tools/bench/char_lm_vs_torch.py [--model char-lstm] [--rounds 3] [--steps 500]
      [--threads 1,2] [--text DIR] [--bin PATH] [--peer-only]
Needs Debian's /usr/bin/python3 with python3-torch, and the fortunes package.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn as nn


def read_corpus(path):
    if os.path.isdir(path):
        names = sorted(n for n in os.listdir(path)
                       if not n.endswith(".dat") and not n.endswith(".u8")
                       and os.path.isfile(os.path.join(path, n)))
        files = [os.path.join(path, n) for n in names]
    else:
        files = [path]
    text = ""
    for f in files:
        part = open(f, "rb").read().decode("utf-8")
        text += part if part.endswith("\n") or not part else part + "\n"
    vocabulary = sorted(set(text))
    index = {c: i for i, c in enumerate(vocabulary)}
    lines = text.splitlines(keepends=True)
    separator = lambda line: line in ("%\n", "%")
    if any(separator(line) for line in lines):
        records, current = [], ""
        for line in lines:
            if separator(line):
                if current:
                    records.append(current)
                current = ""
            else:
                current += line
        if current:
            records.append(current)
    else:
        records = lines
    train, validation = [], []
    for k, record in enumerate(records):
        (validation if k % 10 == 9 else train).extend(index[c] for c in record)
    return vocabulary, train, validation


def glorot_(weight, fan_in, fan_out):
    std = math.sqrt(2.0 / (fan_in + fan_out))
    nn.init.trunc_normal_(weight, std=std, a=-2 * std, b=2 * std)


class CharLstm(nn.Module):
    """Initialized as ours (training/estimators/sequence_layers.h): each layer's
    [input + hidden, 4 * hidden] kernel Glorot-normal (truncated), zero biases but
    TensorFlow's forget bias of 1, the output layer Glorot-normal."""

    def __init__(self, vocab, hidden=256):
        super().__init__()
        self.embedding = nn.Embedding(vocab, 64)
        self.lstm = nn.LSTM(64, hidden, num_layers=2, batch_first=True)
        self.out = nn.Linear(hidden, vocab)
        with torch.no_grad():
            nn.init.trunc_normal_(self.embedding.weight, std=1.0, a=-2.0, b=2.0)
            for layer, inputs in enumerate([64, hidden]):
                for name in ("weight_ih_l%d" % layer, "weight_hh_l%d" % layer):
                    glorot_(getattr(self.lstm, name), inputs + hidden, 4 * hidden)
                getattr(self.lstm, "bias_ih_l%d" % layer).zero_()
                getattr(self.lstm, "bias_hh_l%d" % layer).zero_()
                getattr(self.lstm, "bias_ih_l%d" % layer)[hidden:2 * hidden] = 1.0  # i, f, g, o
            glorot_(self.out.weight, hidden, vocab)
            self.out.bias.zero_()

    def forward(self, x):
        h, _ = self.lstm(self.embedding(x))
        return self.out(h)


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attention = nn.MultiheadAttention(d, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x, mask):
        h = self.norm1(x)
        x = x + self.attention(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class CharTransformer(nn.Module):
    def __init__(self, vocab, seq_len, d=128, heads=4, blocks=4):
        super().__init__()
        self.embedding = nn.Embedding(vocab, d)
        self.position = nn.Parameter(torch.zeros(seq_len, d).normal_(0, 0.02))
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(blocks))
        self.norm = nn.LayerNorm(d)
        self.out = nn.Linear(d, vocab)
        self.register_buffer("mask", torch.triu(torch.full((seq_len, seq_len), -1e9), 1))

    def forward(self, x):
        t = x.shape[1]
        h = self.embedding(x) + self.position[:t]
        for block in self.blocks:
            h = block(h, self.mask[:t, :t])
        return self.out(self.norm(h))


def evaluate(model, validation, seq_len, batch, eval_chars):
    ids = validation[:eval_chars + 1]
    windows = (len(ids) - 1) // seq_len
    total, count = 0.0, 0
    model.eval()
    with torch.no_grad():
        for w in range(0, windows, batch):
            rows = range(w, min(windows, w + batch))
            x = torch.tensor([ids[k * seq_len:(k + 1) * seq_len] for k in rows])
            y = torch.tensor([ids[k * seq_len + 1:(k + 1) * seq_len + 1] for k in rows])
            logits = model(x)
            total += nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]), y.reshape(-1), reduction="sum").item()
            count += y.numel()
    model.train()
    return total / count / math.log(2)


def run_peer(args, corpus, threads):
    os.sched_setaffinity(0, set(range(threads)))  # the same cores as ours
    torch.set_num_threads(threads)
    torch.manual_seed(args.seed)
    vocabulary, train, validation = corpus
    lstm = args.model == "char-lstm"
    model = CharLstm(len(vocabulary)) if lstm else CharTransformer(len(vocabulary), args.seq_len)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.002 if lstm else 0.001)
    generator = torch.Generator().manual_seed(args.seed)
    data = torch.tensor(train)
    first_bpc = None
    start = time.perf_counter()
    trained_seconds = 0.0
    for step in range(args.steps):
        starts = torch.randint(0, len(train) - args.seq_len - 1, (args.batch,), generator=generator)
        index = starts[:, None] + torch.arange(args.seq_len + 1)[None, :]
        window = data[index]
        logits = model(window[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                           window[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step + 1 == 10:
            trained_seconds += time.perf_counter() - start
            first_bpc = evaluate(model, validation, args.seq_len, args.batch, args.eval_chars)
            start = time.perf_counter()
    trained_seconds += time.perf_counter() - start
    bpc = evaluate(model, validation, args.seq_len, args.batch, args.eval_chars)
    return {"bits_per_char": bpc, "first_bits_per_char": first_bpc,
            "samples_per_second": args.steps * args.batch / trained_seconds}


def run_ours(args, threads):
    command = [args.bin, "train", "--model", args.model, "--text", args.text,
               "--seq-len", str(args.seq_len), "--batch", str(args.batch),
               "--steps", str(args.steps), "--seed", str(args.seed),
               "--eval-chars", str(args.eval_chars), "--json"]
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads))
    # Pinned to the first `threads` cores: the executor's threads and BLAS's share them.
    command = ["taskset", "-c", "0-%d" % (threads - 1)] + command
    out = subprocess.run(command, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def spread(values):
    return "%.2f / %.2f / %.2f" % (min(values), statistics.median(values), max(values))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="char-lstm", choices=["char-lstm", "char-transformer"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--seq-len", type=int, default=64)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--seeds", default="",
                        help="comma-separated seeds, one per round in turn (instead of --seed): "
                             "the bpc then compares the means over seeds")
    parser.add_argument("--eval-chars", type=int, default=65536)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--text", default="/usr/share/games/fortunes")
    parser.add_argument("--bin", default="bazel-bin/tools/actorflow")
    parser.add_argument("--peer-only", action="store_true")
    args = parser.parse_args()
    corpus = read_corpus(args.text)
    print("%s: %d characters of training text, %d of validation, vocabulary %d" %
          (args.model, len(corpus[1]), len(corpus[2]), len(corpus[0])), file=sys.stderr)
    all_cores = os.sched_getaffinity(0)
    for threads in [int(t) for t in args.threads.split(",")]:
        os.sched_setaffinity(0, all_cores)
        ratios, ours_bpc, peer_bpc = [], [], []
        seeds = [int(x) for x in args.seeds.split(",")] if args.seeds else [args.seed]
        for round_index in range(args.rounds):
            args.seed = seeds[round_index % len(seeds)]
            peer = run_peer(args, corpus, threads)
            peer_bpc.append(peer["bits_per_char"])
            print("peer, %d thread(s): %s" % (threads, json.dumps(peer)), file=sys.stderr)
            if args.peer_only:
                continue
            ours = run_ours(args, threads)
            ours_bpc.append(ours["bits_per_char"])
            ratios.append(ours["samples_per_second"] / peer["samples_per_second"])
        print("%s, %d thread(s), %d steps: peer bpc %s" %
              (args.model, threads, args.steps, spread(peer_bpc)))
        if ratios:
            print("  ours bpc %s; samples/s ours/peer %s" % (spread(ours_bpc), spread(ratios)))
            print("  mean bpc over seeds %s: ours %.3f, peer %.3f, difference %+.3f" %
                  (",".join(str(x) for x in seeds), statistics.mean(ours_bpc),
                   statistics.mean(peer_bpc),
                   statistics.mean(ours_bpc) - statistics.mean(peer_bpc)))


if __name__ == "__main__":
    main()
