"""Test hosts made of Linux network namespaces, for clusters across real network stacks.

Hosts("ps", "w0", "w1") makes one namespace per host and one more for a switch: a
bridge with one veth pair per host (the host's end is its `eth0`, with an address of
a private /24 of the test's own). Nothing is added to the calling process's
namespace, so all traffic between the hosts stays inside the namespaces: no
loopback or host-local socket joins two hosts. A host's link can be cut
(`partition`: its switch port goes down, its packets vanish with no reset) and
restored (`heal`). `close()` (also on context exit) kills what runs in the hosts
and deletes every namespace, which removes their links.

Needs root with CAP_NET_ADMIN; `available()` says whether namespaces can be made
here, and why not.
"""
import os
import subprocess
import uuid


def _ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=30)


def available():
    """(True, "") when this process may create namespaces, else (False, why)."""
    probe = f"afp{uuid.uuid4().hex[:8]}"
    try:
        _ip("netns", "add", probe)
    except FileNotFoundError:
        return False, "the ip command (iproute2) is missing"
    except subprocess.CalledProcessError as e:
        return False, f"ip netns add failed: {e.stderr.strip()} (needs root with CAP_NET_ADMIN)"
    try:
        _ip("netns", "del", probe)
    except subprocess.CalledProcessError:
        pass
    return True, ""


class Hosts:
    def __init__(self, *names, subnet="10.213.7"):
        # A short random tag keeps names unique across concurrent tests and within
        # the 15-character limit of interface names.
        self.tag = uuid.uuid4().hex[:6]
        self.switch = f"af{self.tag}sw"
        self.names = list(names)
        self.namespaces = {}
        self.addresses = {}
        self.ports = {}
        self.children = []
        try:
            _ip("netns", "add", self.switch)
            self._made = [self.switch]
            _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
            _ip("-n", self.switch, "link", "set", "br0", "up")
            for i, name in enumerate(self.names):
                ns = f"af{self.tag}h{i}"
                _ip("netns", "add", ns)
                self._made.append(ns)
                port = f"p{i}"
                _ip("-n", self.switch, "link", "add", port, "type", "veth", "peer", "name",
                    "eth0", "netns", ns)
                _ip("-n", self.switch, "link", "set", port, "master", "br0", "up")
                address = f"{subnet}.{i + 1}"
                _ip("-n", ns, "addr", "add", f"{address}/24", "dev", "eth0")
                _ip("-n", ns, "link", "set", "eth0", "up")
                _ip("-n", ns, "link", "set", "lo", "up")
                self.namespaces[name] = ns
                self.addresses[name] = address
                self.ports[name] = port
        except BaseException:
            self.close()
            raise

    def address(self, name):
        return self.addresses[name]

    def command(self, name, args):
        """`args` run inside host `name`'s namespace."""
        return ["ip", "netns", "exec", self.namespaces[name], *args]

    def partition(self, name):
        """Cuts host `name` off: its switch port goes down, packets vanish, no reset."""
        _ip("-n", self.switch, "link", "set", self.ports[name], "down")

    def heal(self, name):
        _ip("-n", self.switch, "link", "set", self.ports[name], "up")

    def close(self):
        for child in self.children:
            if child.poll() is None:
                child.kill()
                try:
                    child.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
        for ns in reversed(getattr(self, "_made", [])):
            # Whatever still runs in a namespace is killed first: `ip netns del`
            # only unmounts it, and a process left inside would keep it alive.
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
            for pid in pids.stdout.split():
                try:
                    os.kill(int(pid), 9)
                except (ProcessLookupError, ValueError):
                    pass
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        self._made = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
