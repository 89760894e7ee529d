"""`read_input`: a whole input file, and a wait on a pipe that every signal ends."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from self_refine.input_files import read_input


class Stopped(Exception):
    pass


def _stop(signum: int, frame: object) -> None:
    raise Stopped(signum)


@pytest.fixture
def usr1_stops() -> Iterator[None]:
    before = signal.signal(signal.SIGUSR1, _stop)
    yield
    signal.signal(signal.SIGUSR1, before)


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """A FIFO and a write end held open; a read end that never reads keeps what is written
    before the reader opens (a FIFO nobody has open drops it)."""
    path = tmp_path / "items.jsonl"
    os.mkfifo(path)
    keeper = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    writer = os.open(path, os.O_WRONLY)
    yield path, writer
    for end in (writer, keeper):
        try:
            os.close(end)
        except OSError:
            pass


def _later(seconds: float, action: object) -> threading.Timer:
    timer = threading.Timer(seconds, action)  # type: ignore[arg-type]
    timer.daemon = True
    timer.start()
    return timer


def test_a_file_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    data = b'{"task": "a"}\n' * 20000  # more than one read's worth
    path.write_bytes(data)
    assert read_input(path) == data
    assert read_input(str(path)) == data


def test_a_fifo_is_read_until_its_writer_closes(fifo: tuple[Path, int]) -> None:
    path, writer = fifo
    chunks = [b"one\n", b"two\n" * 30000]

    def write() -> None:
        for chunk in chunks:
            while chunk:
                chunk = chunk[os.write(writer, chunk) :]
        os.close(writer)

    threading.Thread(target=write, daemon=True).start()
    assert read_input(path) == b"".join(chunks)
    assert signal.set_wakeup_fd(-1) == -1  # nothing left behind


def test_a_missing_file_and_a_folder_raise_as_open_does(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_input(tmp_path / "none.jsonl")
    with pytest.raises(IsADirectoryError):
        read_input(tmp_path)


def test_a_signal_that_another_thread_takes_still_ends_the_wait(
    fifo: tuple[Path, int], usr1_stops: None
) -> None:
    """The kernel may hand a process's signal to any of its threads; then the main thread's
    `read()` is never interrupted, and only the wakeup pipe tells it (a signal that comes
    just before `read()` starts is the same case). A plain read waits here until the
    writer gives up (after 5 s), and only then does the handler run."""
    path, writer = fifo
    gave_up = threading.Event()

    def signal_from_this_thread() -> None:
        signal.pthread_kill(threading.get_ident(), signal.SIGUSR1)

    def give_up() -> None:
        gave_up.set()
        os.close(writer)

    _later(0.3, signal_from_this_thread)
    late = _later(5, give_up)
    try:
        with pytest.raises(Stopped):
            read_input(path)
    finally:
        late.cancel()
    assert not gave_up.is_set(), "the wait ended only when the writer closed"
    assert signal.set_wakeup_fd(-1) == -1


def test_off_the_main_thread_it_reads_plainly(fifo: tuple[Path, int]) -> None:
    path, writer = fifo
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(read_input(path)))
    reader.start()
    os.write(writer, b'{"task": "a"}\n')
    os.close(writer)
    reader.join(10)
    assert got == [b'{"task": "a"}\n']


def test_an_event_loops_wakeup_pipe_is_left_to_it(fifo: tuple[Path, int]) -> None:
    path, writer = fifo

    async def read_in_the_loop() -> tuple[bytes, int]:
        os.write(writer, b"x\n")
        os.close(writer)
        listening = signal.set_wakeup_fd(-1)
        signal.set_wakeup_fd(listening)
        data = read_input(path)
        after = signal.set_wakeup_fd(-1)
        signal.set_wakeup_fd(after)
        assert listening != -1
        return data, after - listening

    loop = asyncio.new_event_loop()
    try:
        loop.add_signal_handler(signal.SIGUSR2, lambda: None)  # the loop takes the pipe
        assert loop.run_until_complete(read_in_the_loop()) == (b"x\n", 0)
    finally:
        loop.close()


def test_a_device_that_cannot_be_waited_on_by_epoll_still_reads() -> None:
    assert read_input("/dev/null") == b""


def test_a_limit_reads_that_much_and_leaves_the_rest(
    tmp_path: Path, fifo: tuple[Path, int]
) -> None:
    path = tmp_path / "big.json"
    path.write_bytes(b"x" * 200_000)
    assert read_input(path, 70_001) == b"x" * 70_001
    assert read_input(path, 0) == b""
    fifo_path, writer = fifo

    def write() -> None:  # more than a pipe holds: the writer waits for the reader
        data = b"y" * 120_000
        while data:
            data = data[os.write(writer, data) :]

    writing = threading.Thread(target=write, daemon=True)
    writing.start()
    assert read_input(fifo_path, 100_001) == b"y" * 100_001
    writing.join(10)  # the rest fits in the pipe: nobody had to read it
    assert not writing.is_alive()
