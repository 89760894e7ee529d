"""Kernel-level isolation steps for the sandbox's child process; stdlib only.

The sandbox runner loads this file by path inside the child, before any
untrusted code runs; nothing here is ever called in the host process. Every
step is best effort and says what it achieved, so that the host can report
what was actually contained on this platform.

Longer than the ~300 lines a module should hold: every confinement step of the child
is here, in one file the runner loads by path before any untrusted code runs, so that
what the sandbox holds can be read in one place (the sandbox guide's threat model
follows its order).
"""

from __future__ import annotations

import ctypes
import os
import re
import resource
import stat
from collections.abc import Iterable, Sequence

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21
MS_STRICTATIME = 1 << 24
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
_MOUNT_FLAGS = {
    "nosuid": MS_NOSUID,
    "nodev": MS_NODEV,
    "noexec": MS_NOEXEC,
    "noatime": MS_NOATIME,
    "nodiratime": MS_NODIRATIME,
    "relatime": MS_RELATIME,
    "strictatime": MS_STRICTATIME,
}

SHARED_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run")  # covered by an empty tmpfs

_libc = ctypes.CDLL(None, use_errno=True)


def _check(name: str, result: int) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{name}: {os.strerror(errno)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    def raw(text: str | None) -> bytes | None:
        return None if text is None else os.fsencode(text)

    _check("mount", _libc.mount(raw(source), raw(target), raw(fstype), flags, raw(data or None)))


def _unshare(flags: int) -> bool:
    return _libc.unshare(flags) == 0


def _write(path: str, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


def _map_ids(uid: int, gid: int) -> None:
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")


def enter_pid_namespace(as_root: bool) -> set[str]:
    """Make this process's next child the first process of a private PID namespace.

    Anyone but root needs a user namespace for it (keeping its own uid and gid);
    return which namespaces were entered: {"pid"} or {"pid", "user"}, or none.
    """
    if as_root:
        return {"pid"} if _unshare(CLONE_NEWPID) else set()
    uid, gid = os.getuid(), os.getgid()
    _libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # else /proc/self/uid_map may not be ours to write
    if not _unshare(CLONE_NEWUSER | CLONE_NEWPID):
        return set()
    try:
        _map_ids(uid, gid)
    except OSError:
        return {"pid"}
    return {"pid", "user"}


def enter_namespaces(privileged: bool) -> set[str]:
    """Move into private mount, IPC and network namespaces; return which ones were entered.

    `privileged` means root, or already inside a user namespace of this run;
    anyone else needs a new user namespace, keeping its own uid and gid.
    """
    if privileged:
        if _unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC):
            return {"mount", "network", "ipc"}
        entered = {"mount"} if _unshare(CLONE_NEWNS) else set()
        entered |= {"ipc"} if _unshare(CLONE_NEWIPC) else set()
        return entered | ({"network"} if _unshare(CLONE_NEWNET) else set())
    uid, gid = os.getuid(), os.getgid()
    _libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # else /proc/self/uid_map may not be ours to write
    if not _unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC):
        return set()
    try:
        _map_ids(uid, gid)
    except OSError:
        return {"network", "ipc"}  # without an id map, files could not be created: skip mounts
    return {"mount", "network", "ipc"}


def _mounts() -> list[tuple[str, int]]:
    """Mount points of this namespace with the per-mount flags a bind remount must keep."""
    found = []
    with open("/proc/self/mountinfo") as handle:
        for line in handle:
            fields = line.split()
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
            flags = 0
            for option in fields[5].split(","):
                flags |= _MOUNT_FLAGS.get(option, 0)
            found.append((point, flags))
    return found


def blocking_ancestor(path: str) -> str | None:
    """The first directory on the way to `path` that other users may not enter, if any."""
    current = "/"
    for part in [p for p in path.split("/") if p]:
        if not os.stat(current).st_mode & stat.S_IXOTH:
            return current
        current = os.path.join(current, part)
    mode = os.stat(current).st_mode
    return None if mode & stat.S_IXOTH and mode & stat.S_IROTH else current


def _expose(paths: Iterable[str], stash: str) -> None:
    """Make `paths` reachable for another user when a parent directory is closed to it.

    Each closed directory is covered with an empty read-only tmpfs (hiding the
    rest of its content) in which only the needed paths are bind-mounted back.
    """
    wanted: dict[str, list[str]] = {}
    unique = sorted({os.path.realpath(p) for p in paths if os.path.isdir(p)})
    outermost = [p for p in unique if not any(p.startswith(q + "/") for q in unique)]
    for path in outermost:
        if (closed := blocking_ancestor(path)) and closed != path:
            wanted.setdefault(closed, []).append(path)
    os.makedirs(stash, exist_ok=True)
    for n, (closed, inside) in enumerate(sorted(wanted.items())):
        kept = []
        for k, path in enumerate(inside):
            keep = os.path.join(stash, f"{n}-{k}")
            os.mkdir(keep)
            _mount(path, keep, None, MS_BIND | MS_REC)
            kept.append((keep, path))
        _mount("tmpfs", closed, "tmpfs", MS_NOSUID | MS_NODEV, "mode=755,size=1m")
        for keep, path in kept:
            os.makedirs(path, mode=0o755, exist_ok=True)
            _mount(keep, path, None, MS_BIND | MS_REC)


def _cover_shared(work: str) -> list[str]:
    """Cover /tmp, /run and the like (and the temp dir holding `work`) with empty tmpfs mounts.

    Host socket files and other runs' files there become invisible; `work`
    itself is bound back at its own path. Return the covered directories.
    """
    keep = os.open(work, os.O_PATH | os.O_DIRECTORY)
    try:
        candidates = {*SHARED_DIRS, os.path.dirname(work)} - {"/"}
        found = sorted({os.path.realpath(d) for d in candidates if os.path.isdir(d)})
        covered = [d for d in found if not any(d.startswith(o + "/") for o in found)]
        for directory in covered:
            _mount("tmpfs", directory, "tmpfs", MS_NOSUID | MS_NODEV, "mode=755,size=1m")
        os.makedirs(work, mode=0o755, exist_ok=True)
        _mount(f"/proc/self/fd/{keep}", work, None, MS_BIND | MS_REC)
    finally:
        os.close(keep)
    return covered


def mount_private_proc() -> bool:
    """Replace /proc with one for this PID namespace; False when the kernel refuses.

    Must run in a private mount namespace, as the first process of a private
    PID namespace; afterwards /proc shows only the processes of this run.
    """
    try:
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except OSError:
        return False
    return True


def lock_filesystem(work: str, expose: Sequence[str], stash: str, fresh_proc: bool = False) -> str:
    """Hide shared temp dirs, remount everything read-only except `work`; describe the result.

    Must run inside a private mount namespace (see enter_namespaces). With
    `fresh_proc`, /proc is replaced first (see mount_private_proc); the result
    then says whether that held.
    """
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    if expose:
        _expose([*expose, work], stash)
    proc_note = ""
    if fresh_proc and not mount_private_proc():
        proc_note, fresh_proc = "; /proc could not be replaced", False
    covered = _cover_shared(work) + (["/proc"] if fresh_proc else [])
    _mount(work, work, None, MS_BIND)
    stuck = []
    for point, flags in _mounts():
        if point == work or point.startswith(work.rstrip("/") + "/"):
            continue
        if any(point.startswith(d + "/") for d in covered):
            continue  # under an empty tmpfs or the fresh /proc now: out of reach
        try:
            _mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)
        except OSError:
            stuck.append(point)
    if not stuck:
        return "read-only except the working directory" + proc_note
    return (
        f"read-only except the working directory and {len(stuck)} mount(s): "
        f"{', '.join(stuck)}{proc_note}"
    )


_INODES_PER_MB = 64
"""Files and folders a capped working directory may hold per MB of its size."""


def cap_disk(work: str, disk_mb: int) -> bool:
    """Cover `work` with a fresh tmpfs of `disk_mb` MB; False when the kernel refuses.

    Must run in a private mount namespace, after lock_filesystem: the code then
    writes into memory the size of the cap, never to the host's disk, and a
    write past it fails with ENOSPC. The number of files is capped alike.
    """
    inodes = max(disk_mb * _INODES_PER_MB, 256)
    options = f"mode=755,size={disk_mb}m,nr_inodes={inodes}"
    try:
        _mount("tmpfs", work, "tmpfs", MS_NOSUID | MS_NODEV, options)
    except OSError:
        return False
    return True


def drop_privileges(candidates: Sequence[int], work: str) -> int:
    """Switch from root to the first usable uid (its gid alike), owning `work`; return it."""
    for uid in candidates:
        try:
            os.chown(work, uid, uid)
        except OSError:
            continue  # not mapped in this user namespace
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        return uid
    raise OSError("cannot switch to an unprivileged user: no candidate uid is usable")


def forbid_new_privileges() -> None:
    """Drop every capability and make setuid programs powerless for this process tree."""

    class _Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class _Data(ctypes.Structure):
        _fields_ = [(name, ctypes.c_uint32) for name in ("effective", "permitted", "inherit")]

    header = _Header(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    empty = (_Data * 2)()
    _check("capset", _libc.capset(ctypes.byref(header), empty))
    _check("prctl", _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))


def die_with_parent() -> None:
    """Have the kernel kill this process when the thread that started it ends."""
    _check("prctl", _libc.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0))  # SIGKILL


def become_subreaper() -> None:
    """Adopt every orphaned descendant, so that none can outlive the run unnoticed."""
    _check("prctl", _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))


def _processes() -> list[dict[str, str]]:
    """The status fields of every process (scans /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/status") as handle:
                    found.append(dict(line.split(":", 1) for line in handle if ":" in line))
            except OSError:
                continue
    return found


def count_processes(uid: int) -> int:
    """How many live processes run with real uid `uid`."""
    return sum(
        1
        for fields in _processes()
        if int(fields["Uid"].split()[0]) == uid and not fields["State"].strip().startswith("Z")
    )


def children_of(pid: int) -> list[int]:
    """The pids of the live children of process `pid`."""
    return [
        int(fields["Pid"])
        for fields in _processes()
        if int(fields["PPid"]) == pid and not fields["State"].strip().startswith("Z")
    ]


def apply_limits(
    cpu_seconds: int, memory_mb: int, file_size_mb: int, open_files: int, processes: int
) -> None:
    """Set hard resource limits for this process and everything it starts."""
    limits = {
        resource.RLIMIT_CPU: (cpu_seconds, cpu_seconds + 1),
        resource.RLIMIT_AS: (memory_mb << 20,) * 2,
        resource.RLIMIT_FSIZE: (file_size_mb << 20,) * 2,
        resource.RLIMIT_NOFILE: (open_files,) * 2,
        resource.RLIMIT_NPROC: (processes,) * 2,
        resource.RLIMIT_CORE: (0, 0),
    }
    for which, (soft, hard) in limits.items():
        resource.setrlimit(which, (soft, hard))
