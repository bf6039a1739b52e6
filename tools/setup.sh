#!/usr/bin/env bash
# Installs the Debian packages the build and tests need. Idempotent: when every
# package is already present it prints nothing and makes no network call.
set -euo pipefail

packages=(
  bazel-bootstrap
  g++
  libcaf-dev
  libopenblas-dev
  nlohmann-json3-dev
  libfmt-dev
  libgtest-dev
  libgmock-dev
  libcli11-dev
  libbenchmark-dev
  python3
  python3-protobuf
  graphviz
  libcpp-httplib-dev
  # training/data/idx_file: gzipped IDX files, and Fashion-MNIST to train on.
  zlib1g-dev
  dataset-fashion-mnist
  # train --model word2vec: English text to train on (/usr/share/games/fortunes).
  fortunes
  chromium
  # tests/secure_cluster_test: certificates for mutual TLS.
  openssl
  libssl-dev
  wrk
  # tools/fuzz/: clang with libFuzzer and the sanitizer runtimes.
  clang-14
  libclang-rt-14-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup.sh: missing packages ${missing[*]}; run as root to install them" >&2
    exit 1
  fi
  echo "setup.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
