// Fuzz target: checkpoint files (training/checkpoint/checkpoint_format.h): the manifest
// (ParseManifest) and the data file it describes (ReadCheckpointTensors), as
// `predict`, recovery and the serving loader read them from disk.
//
// Input layout: the manifest's text, optionally followed by kDataSeparator and the
// data file's bytes (written to a scratch file for each input).
//
// Never crashes. Invariants: a manifest that parses has unique names, sizes that
// match dtype and shape, and non-overlapping byte ranges; ManifestToJsonText of it
// parses back to the same entries and the same text. Tensors that read have their
// entry's dtype and shape and only finite floats (checkpoints refuse the others).
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "graph/checked_size.h"
#include "training/checkpoint/checkpoint_format.h"
#include "tools/fuzz/fuzz_check.h"

namespace {

using actorflow::CheckpointEntry;
using actorflow::CheckpointManifest;

constexpr std::string_view kDataSeparator = "\n@@DATA@@\n";

bool SameEntries(const CheckpointManifest& a, const CheckpointManifest& b) {
  if (a.global_step != b.global_step || a.tensors.size() != b.tensors.size()) return false;
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const CheckpointEntry& x = a.tensors[i];
    const CheckpointEntry& y = b.tensors[i];
    if (x.name != y.name || x.dtype != y.dtype || x.shape != y.shape || x.offset != y.offset ||
        x.size != y.size || x.checksum != y.checksum) {
      return false;
    }
  }
  return true;
}

// A scratch data file of this process (removed at exit).
const std::string& ScratchPath() {
  static const std::string path = [] {
    const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    std::string p = std::string(dir) + "/actorflow_checkpoint_fuzzer." + std::to_string(getpid()) +
                    ".data";
    std::atexit([] { std::remove(ScratchPath().c_str()); });
    return p;
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find(kDataSeparator);
  const std::string_view manifest_text = input.substr(0, split);
  const std::string_view data_bytes =
      split == std::string_view::npos ? std::string_view() : input.substr(split + kDataSeparator.size());

  (void)actorflow::ParseCheckpointBasename(manifest_text);
  auto manifest = actorflow::ParseManifest(manifest_text, "ckpt-1.json");
  if (!manifest.ok()) {
    FUZZ_CHECK(manifest.status().message().find("ckpt-1.json") != std::string::npos,
               manifest.status().ToString());
    return 0;
  }

  std::set<std::string> names;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const CheckpointEntry& e : manifest->tensors) {
    FUZZ_CHECK(names.insert(e.name).second, "duplicate " + e.name);
    auto bytes = actorflow::CheckedByteSize(e.dtype, e.shape);
    FUZZ_CHECK(bytes.ok() && static_cast<uint64_t>(*bytes) == e.size, e.name);
    if (e.size > 0) ranges.emplace_back(e.offset, e.offset + e.size);
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) FUZZ_CHECK(ranges[i - 1].second <= ranges[i].first, "overlap");

  const std::string written = actorflow::ManifestToJsonText(*manifest);
  auto again = actorflow::ParseManifest(written, "written.json");
  FUZZ_CHECK(again.ok(), again.status().ToString() + "\nwritten: " + written);
  FUZZ_CHECK(SameEntries(*again, *manifest), "written: " + written);
  FUZZ_CHECK(actorflow::ManifestToJsonText(*again) == written, "written: " + written);

  if (split == std::string_view::npos) return 0;
  const std::string& path = ScratchPath();
  FILE* f = std::fopen(path.c_str(), "wb");
  FUZZ_CHECK(f != nullptr, "cannot write " + path);
  FUZZ_CHECK(std::fwrite(data_bytes.data(), 1, data_bytes.size(), f) == data_bytes.size(), path);
  std::fclose(f);
  auto tensors = actorflow::ReadCheckpointTensors(*manifest, path);
  if (!tensors.ok()) return 0;
  FUZZ_CHECK(tensors->size() == manifest->tensors.size(), "tensor count");
  for (const CheckpointEntry& e : manifest->tensors) {
    auto it = tensors->find(e.name);
    FUZZ_CHECK(it != tensors->end(), "missing " + e.name);
    FUZZ_CHECK(it->second.dtype() == e.dtype && it->second.shape() == e.shape, e.name);
    FUZZ_CHECK(actorflow::CheckFiniteValues(e.name, it->second).ok(), e.name);
  }
  return 0;
}
