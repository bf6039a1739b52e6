#!/usr/bin/env python3
"""Prints "N passed, N failed" for the test cases in a bazel-testlogs tree.

Counts GoogleTest cases from each target's test.xml. A target that failed without
reporting any failing case (a crash, a timeout, a test that is no GoogleTest) adds
one failure, so a broken target is never counted as passing. Exits 1 if anything
failed or nothing ran.
"""
import os
import sys
import xml.etree.ElementTree as ET


def count(root):
    passed = failed = skipped = 0
    for dirpath, _, files in os.walk(root, followlinks=True):
        if "test.xml" not in files:
            continue
        path = os.path.join(dirpath, "test.xml")
        try:
            tree = ET.parse(path)
        except ET.ParseError:
            failed += 1
            continue
        cases = list(tree.iter("testcase"))
        target_failed = any(
            int(s.get("failures", 0) or 0) + int(s.get("errors", 0) or 0) > 0
            for s in tree.iter("testsuite"))
        case_failures = 0
        for case in cases:
            if case.find("failure") is not None or case.find("error") is not None:
                failed += 1
                case_failures += 1
            elif case.find("skipped") is not None or case.get("result") == "skipped" \
                    or case.get("status") == "notrun":
                skipped += 1
            else:
                passed += 1
        if target_failed and case_failures == 0:
            failed += 1
    return passed, failed, skipped


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "bazel-testlogs"
    passed, failed, skipped = count(root)
    line = f"{passed} passed, {failed} failed"
    if skipped:
        line += f", {skipped} skipped"
    print(line)
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
