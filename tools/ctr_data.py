#!/usr/bin/env python3
"""Click-through data with a planted model, for the wide & deep workload.

    tools/ctr_data.py --rows N --seed S --out DIR

writes DIR/train.csv (80 % of the rows), DIR/test.csv (20 %) and DIR/planted.json.

Each row is one impression; every column is an integer (categorical ids) or a float:
    user      id in [0, 10 000)      Zipf-distributed (exponent 1.1): a few users
    item      id in [0, 100 000)     are most of the traffic, as in click logs
    site      id in [0, 1 000 000)
    category  id in [0, 100)         the item's category (a fixed function of item)
    hour      0..23                  uniform
    price     float in [0, 1)        uniform
    clicked   0 or 1                 the label
Ids are ranked by popularity after a fixed random permutation, so id order says
nothing about frequency.

The planted model (its parameters drawn from --seed):
    logit = bias + u[user] + i[item] + s[site] + x[(category, hour)] + h[hour]
            + 1.5 * (price - 0.5)
    P(clicked) = 1 / (1 + exp(-logit))
with u, i, s, x and h independent normal weights (standard deviations 0.5, 0.5, 0.3,
0.8 and 0.3; the crossed term x, over category x hour, is what a linear model needs
a crossed column for) and bias -1 (about 30 % clicks). Only the 1 000 most popular
users, 2 000 items and 2 000 sites have a weight; every other id weighs 0, so the
planted model is learnable from enough rows (a few million). clicked is drawn from P(clicked). planted.json holds
{"auc": the test set's AUC of P(clicked) itself (the best any model can reach on
these rows), "rows", "seed", "train_rows", "test_rows", "click_rate", "columns",
"label", "vocabulary_sizes"}.

Only the Python standard library: the same --rows and --seed give the same files.
"""
import argparse
import bisect
import json
import math
import os
import random

USERS, ITEMS, SITES, CATEGORIES = 10_000, 100_000, 1_000_000, 100
# Only the most popular ids carry a preference (the rest weigh 0), so that a model can
# learn the whole planted model from enough rows.
HEAD_USERS, HEAD_ITEMS, HEAD_SITES = 1_000, 2_000, 2_000


def zipf_sampler(rng, n, exponent=1.1):
    """Draws (id, rank) with ids in [0, n), P(rank r) ~ 1 / (r + 1)^exponent, ranks
    mapped to ids by a random permutation. Returns a function of no arguments."""
    cumulative, total = [], 0.0
    for r in range(n):
        total += 1.0 / (r + 1) ** exponent
        cumulative.append(total)
    ids = list(range(n))
    rng.shuffle(ids)

    def draw():
        rank = min(n - 1, bisect.bisect_left(cumulative, rng.random() * total))
        return ids[rank], rank
    return draw


def lazy_normal(rng, stddev, head=None):
    """A weight per key, drawn the first time the key is seen (keys are many); with
    `head`, only ranks below it have one (the others weigh 0)."""
    weights = {}

    def weight(key, rank=0):
        if head is not None and rank >= head:
            return 0.0
        if key not in weights:
            weights[key] = rng.gauss(0.0, stddev)
        return weights[key]
    return weight


def auc(scores, labels):
    """Area under the ROC curve by ranks (ties get their mean rank)."""
    order = sorted(range(len(scores)), key=lambda k: scores[k])
    ranks = [0.0] * len(scores)
    k = 0
    while k < len(order):
        j = k
        while j + 1 < len(order) and scores[order[j + 1]] == scores[order[k]]:
            j += 1
        for m in range(k, j + 1):
            ranks[order[m]] = (k + j) / 2.0 + 1
        k = j + 1
    positives = sum(labels)
    negatives = len(labels) - positives
    if positives == 0 or negatives == 0:
        return float("nan")
    rank_sum = sum(r for r, y in zip(ranks, labels) if y == 1)
    return (rank_sum - positives * (positives + 1) / 2.0) / (positives * negatives)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    if args.rows < 10:
        parser.error("--rows must be at least 10")
    rng = random.Random(args.seed)
    user, item, site = (zipf_sampler(rng, n) for n in (USERS, ITEMS, SITES))
    u = lazy_normal(rng, 0.5, head=HEAD_USERS)
    i = lazy_normal(rng, 0.5, head=HEAD_ITEMS)
    s = lazy_normal(rng, 0.3, head=HEAD_SITES)
    x = lazy_normal(rng, 0.8)
    h = [rng.gauss(0.0, 0.3) for _ in range(24)]
    category_of = [rng.randrange(CATEGORIES) for _ in range(ITEMS)]

    os.makedirs(args.out, exist_ok=True)
    train_rows = args.rows * 8 // 10
    header = "user,item,site,category,hour,price,clicked\n"
    test_scores, test_labels, clicks = [], [], 0
    with open(os.path.join(args.out, "train.csv"), "w") as train, \
            open(os.path.join(args.out, "test.csv"), "w") as test:
        train.write(header)
        test.write(header)
        for row in range(args.rows):
            (a, rank_a), (b, rank_b), (c, rank_c) = user(), item(), site()
            category = category_of[b]
            hour, price = rng.randrange(24), rng.random()
            logit = (-1.0 + u(a, rank_a) + i(b, rank_b) + s(c, rank_c) + x((category, hour))
                     + h[hour] + 1.5 * (price - 0.5))
            p = 1.0 / (1.0 + math.exp(-logit))
            clicked = 1 if rng.random() < p else 0
            clicks += clicked
            line = "%d,%d,%d,%d,%d,%.6f,%d\n" % (a, b, c, category, hour, price, clicked)
            if row < train_rows:
                train.write(line)
            else:
                test.write(line)
                test_scores.append(p)
                test_labels.append(clicked)
    planted = {
        "auc": auc(test_scores, test_labels),
        "rows": args.rows,
        "seed": args.seed,
        "train_rows": train_rows,
        "test_rows": args.rows - train_rows,
        "click_rate": clicks / args.rows,
        "columns": ["user", "item", "site", "category", "hour", "price"],
        "label": "clicked",
        "vocabulary_sizes": {"user": USERS, "item": ITEMS, "site": SITES,
                             "category": CATEGORIES, "hour": 24},
    }
    with open(os.path.join(args.out, "planted.json"), "w") as out:
        json.dump(planted, out, indent=1)
        out.write("\n")


if __name__ == "__main__":
    main()
