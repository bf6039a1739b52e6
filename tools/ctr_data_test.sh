#!/usr/bin/env bash
# tools/ctr_data.py: the files and columns it promises, the same files for the same
# seed and other files for another, labels drawn from the planted model (its AUC on
# the test rows well above chance) and its AUC routine on hand-checked cases.
set -euo pipefail
gen="$(dirname "$0")/ctr_data.py"
[ -f "$gen" ] || gen="$TEST_SRCDIR/$TEST_WORKSPACE/tools/ctr_data.py"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

python3 "$gen" --rows 3000 --seed 7 --out "$out/a"
python3 "$gen" --rows 3000 --seed 7 --out "$out/b"
python3 "$gen" --rows 3000 --seed 8 --out "$out/c"
cmp "$out/a/train.csv" "$out/b/train.csv"
cmp "$out/a/planted.json" "$out/b/planted.json"
if cmp -s "$out/a/train.csv" "$out/c/train.csv"; then
  echo "FAIL: seeds 7 and 8 gave the same rows" >&2
  exit 1
fi
if python3 "$gen" --rows 3 --out "$out/d" 2>/dev/null; then
  echo "FAIL: --rows 3 was accepted" >&2
  exit 1
fi

python3 - "$out/a" "$gen" <<'PY'
import csv, importlib.util, json, sys
out, gen = sys.argv[1], sys.argv[2]
planted = json.load(open(out + "/planted.json"))
rows = {}
for name in ("train", "test"):
    with open("%s/%s.csv" % (out, name)) as f:
        reader = csv.reader(f)
        assert next(reader) == ["user", "item", "site", "category", "hour", "price", "clicked"]
        rows[name] = list(reader)
assert len(rows["train"]) == 2400 and len(rows["test"]) == 600, {k: len(v) for k, v in rows.items()}
assert planted["train_rows"] == 2400 and planted["test_rows"] == 600
for r in rows["train"] + rows["test"]:
    user, item, site, category, hour = int(r[0]), int(r[1]), int(r[2]), int(r[3]), int(r[4])
    price, clicked = float(r[5]), int(r[6])
    assert 0 <= user < 10000 and 0 <= item < 100000 and 0 <= site < 1000000, r
    assert 0 <= category < 100, r
    assert 0 <= hour < 24 and 0 <= price < 1 and clicked in (0, 1), r
users = [int(r[0]) for r in rows["train"]]
top = max(set(users), key=users.count)
assert users.count(top) > 20, "user ids are not Zipf-distributed: the top user has %d rows" % users.count(top)
assert 0.15 < planted["click_rate"] < 0.5, planted
assert 0.65 < planted["auc"] < 0.95, planted
spec = importlib.util.spec_from_file_location("ctr_data", gen)
ctr = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ctr)
assert ctr.auc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]) == 0.75
assert ctr.auc([0.5, 0.5, 0.5], [0, 1, 0]) == 0.5
print("ctr_data ok: auc %.4f, click rate %.3f" % (planted["auc"], planted["click_rate"]))
PY
