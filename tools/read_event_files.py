#!/usr/bin/python3
"""Independent reader of `actorflow train --logdir` output, for logdir_test.sh.

Parses TensorBoard event files with Debian's python3-protobuf (the Event and Summary
messages are declared here, not taken from the writer) and checks them:

  read_event_files.py LOGDIR WORKERS ACCURACY

- LOGDIR/worker_<i>/ exists for every i < WORKERS and holds one file named
  events.out.tfevents.<unix seconds>.<hostname>;
- every record's masked CRC-32C of its length and of its data is right;
- the first event's file_version is "brain.Event:2";
- "loss" scalars are finite at strictly increasing steps;
- the last "accuracy" scalar equals ACCURACY (float32 precision).
Exits 1 with a line naming the file and record on the first failure.
"""

import json
import math
import os
import re
import socket
import struct
import sys

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def event_class():
    proto = descriptor_pb2.FileDescriptorProto(name="test_event.proto",
                                               package="tensorflow", syntax="proto3")
    F = descriptor_pb2.FieldDescriptorProto
    summary = proto.message_type.add(name="Summary")
    value = summary.nested_type.add(name="Value")
    value.field.add(name="tag", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    value.field.add(name="simple_value", number=2, type=F.TYPE_FLOAT, label=F.LABEL_OPTIONAL)
    summary.field.add(name="value", number=1, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
                      type_name=".tensorflow.Summary.Value")
    event = proto.message_type.add(name="Event")
    event.oneof_decl.add(name="what")
    event.field.add(name="wall_time", number=1, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL)
    event.field.add(name="step", number=2, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    event.field.add(name="file_version", number=3, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL,
                    oneof_index=0)
    event.field.add(name="summary", number=5, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                    type_name=".tensorflow.Summary", oneof_index=0)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    descriptor = pool.FindMessageTypeByName("tensorflow.Event")
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(descriptor)
    return message_factory.MessageFactory(pool).GetPrototype(descriptor)


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def read_records(path):
    with open(path, "rb") as f:
        data = f.read()
    at, index = 0, 0
    while at < len(data):
        if at + 12 > len(data):
            fail("%s: record %d: truncated header" % (path, index))
        header = data[at:at + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[at + 8:at + 12])
        if length_crc != masked(crc32c(header)):
            fail("%s: record %d: bad length CRC" % (path, index))
        if at + 16 + length > len(data):
            fail("%s: record %d: truncated data" % (path, index))
        payload = data[at + 12:at + 12 + length]
        (data_crc,) = struct.unpack("<I", data[at + 12 + length:at + 16 + length])
        if data_crc != masked(crc32c(payload)):
            fail("%s: record %d: bad data CRC" % (path, index))
        yield index, payload
        at += 16 + length
        index += 1


def check_final_scalars(path, scalars, result, worker, learning_rate):
    """The scalars a cluster run logs at its end match what --json printed, at the
    step of the worker's last push; learning_rate is the --lr given throughout."""
    steps = result["worker_reports"][worker]["steps"]
    expected = {
        "accuracy": result["accuracy"],
        "updates_applied": result["updates_applied"],
        "dropped_stale": result["dropped_stale"],
        "mean_staleness": result["mean_staleness"],
        "workers_lost": len(result["workers_lost"]),
    }
    for tag, value in expected.items():
        if tag not in scalars:
            fail("%s: no %s scalar" % (path, tag))
        step, got = scalars[tag][-1]
        if step != steps:
            fail("%s: %s logged at step %d, the worker pushed %d times" % (path, tag, step, steps))
        if abs(got - value) > 1e-5 * max(1.0, abs(value)):
            fail("%s: %s is %r, train printed %r" % (path, tag, got, value))
    for step, got in scalars.get("learning_rate", []):
        if abs(got - learning_rate) > 1e-7:
            fail("%s: learning_rate %r at step %d, --lr was %r" % (path, got, step, learning_rate))
    if not scalars.get("learning_rate"):
        fail("%s: no learning_rate scalar" % path)
    if not all(v > 0 for _, v in scalars.get("examples_per_sec", [(0, 0)])):
        fail("%s: examples_per_sec missing or not positive" % path)


def check_run(run_dir, expected_accuracy, Event, result=None, worker=0, learning_rate=None):
    if not os.path.isdir(run_dir):
        fail("no run directory " + run_dir)
    files = os.listdir(run_dir)
    if len(files) != 1:
        fail("%s: expected one event file, found %s" % (run_dir, files))
    name = files[0]
    pattern = r"events\.out\.tfevents\.(\d+)\.(.+)$"
    match = re.match(pattern, name)
    if not match or match.group(2) != socket.gethostname():
        fail("%s: file name %s is not events.out.tfevents.<secs>.%s" %
             (run_dir, name, socket.gethostname()))
    path = os.path.join(run_dir, name)
    losses, accuracies = [], []
    scalars = {}  # tag -> [(step, value)]
    for index, payload in read_records(path):
        event = Event()
        event.ParseFromString(payload)
        if index == 0:
            if event.file_version != "brain.Event:2":
                fail("%s: first event's file_version is %r" % (path, event.file_version))
            if abs(event.wall_time - int(match.group(1))) > 1:
                fail("%s: wall_time %f does not match the name" % (path, event.wall_time))
            continue
        if event.WhichOneof("what") != "summary":
            fail("%s: record %d holds no summary" % (path, index))
        for value in event.summary.value:
            scalars.setdefault(value.tag, []).append((event.step, value.simple_value))
            if value.tag == "loss":
                losses.append((event.step, value.simple_value))
            elif value.tag == "accuracy":
                accuracies.append(value.simple_value)
    if len(losses) < 2:
        fail("%s: %d loss scalars" % (path, len(losses)))
    for (s0, _), (s1, _) in zip(losses, losses[1:]):
        if s1 <= s0:
            fail("%s: loss steps not increasing: %d then %d" % (path, s0, s1))
    for step, loss in losses:
        if not math.isfinite(loss):
            fail("%s: loss %r at step %d" % (path, loss, step))
    if not accuracies:
        fail("%s: no accuracy scalar" % path)
    if abs(accuracies[-1] - expected_accuracy) > 1e-6:
        fail("%s: accuracy %r, train printed %r" % (path, accuracies[-1], expected_accuracy))
    if result is not None:
        check_final_scalars(path, scalars, result, worker, learning_rate)
    print("%s: %d loss scalars, accuracy %.4f, tags %s" %
          (path, len(losses), accuracies[-1], ",".join(sorted(scalars))))


def main():
    # logdir workers accuracy [result.json learning_rate]: with the --json result and
    # the --lr of the run, every final scalar and the learning rate are checked too.
    logdir, workers, accuracy = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    result = json.load(open(sys.argv[4])) if len(sys.argv) > 4 else None
    learning_rate = float(sys.argv[5]) if len(sys.argv) > 5 else None
    Event = event_class()
    for worker in range(workers):
        check_run(os.path.join(logdir, "worker_%d" % worker), accuracy, Event, result, worker,
                  learning_rate)
    print("PASS")


if __name__ == "__main__":
    main()
