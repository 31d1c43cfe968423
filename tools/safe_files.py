"""Reading a model's input files and writing an output model directory the
way `ted quantize` does (src/model/quantize.c), for the exporters.

Inputs: regular files only (opened without blocking, so a FIFO cannot hang
the open, then checked with fstat, so there is no window between the check
and the open: a FIFO, /dev/zero or a directory is refused), their size
checked against a bound for their kind before anything is read.

Output: a new or empty directory that is not the input directory and not a
symbolic link; every file is created under a unique temporary name in it
(O_CREAT | O_EXCL | O_NOFOLLOW, relative to the directory's descriptor: no
link is followed, nothing replaced) and renamed into place once all are
whole. After a failure, or SIGINT, SIGTERM or SIGHUP (stop_signals), the
files written are removed, and the directory when it was created here.
"""
import errno
import fcntl
import os
import secrets
import signal
import stat

from ted_format import ExportError

MIB = 1 << 20


def open_regular(path, limit, what):
    """(descriptor, size) of the regular file `path`, at most `limit` bytes;
    ExportError naming the file otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise ExportError(f"{path}: cannot open: {e.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ExportError(f"{path}: not a regular file")
        if info.st_size > limit:
            raise ExportError(f"{path}: {info.st_size} bytes is larger than {limit // MIB} MiB; "
                              f"not {what}")
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except OSError as e:
        os.close(fd)
        raise ExportError(f"{path}: cannot open: {e.strerror}") from None
    except BaseException:
        os.close(fd)
        raise
    return fd, info.st_size


def read_regular(path, limit, what):
    """The bytes of the regular file `path` (open_regular's checks)."""
    fd, size = open_regular(path, limit, what)
    try:
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise ExportError(f"{path}: cannot read the file: {e.strerror}") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise ExportError(f"{path}: grew past {limit // MIB} MiB while read; not {what}")
    return data


# ---- the output directory ----------------------------------------------------------

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Stopped(BaseException):
    """SIGINT, SIGTERM or SIGHUP arrived (stop_signals); `signum` says which."""

    def __init__(self, signum):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def stop_signals():
    """SIGINT, SIGTERM and SIGHUP raise Stopped, so that an OutputDirectory
    removes what it wrote; a signal ignored at the start stays ignored."""
    def stop(signum, frame):
        raise Stopped(signum)
    for sig in STOP_SIGNALS:
        if signal.getsignal(sig) != signal.SIG_IGN:
            signal.signal(sig, stop)


def die_of(signum):
    """Ends the process by `signum`'s default action (after Stopped)."""
    signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
    os.kill(os.getpid(), signum)


class OutputDirectory:
    """`with OutputDirectory(out_dir, in_dir) as out:` out.write(name, bytes)
    for each file; leaving the block whole renames them all into place,
    leaving it by an exception (Stopped included) removes them."""

    def __init__(self, out_dir, in_dir):
        self.path, self.in_dir = out_dir, in_dir
        self.created, self.fd = False, None
        self.temporary = {}  # final name -> temporary name, each created here
        self.placed = []     # final names renamed into place

    def __enter__(self):
        try:
            self._prepare()
        except BaseException:
            self._remove()
            raise
        return self

    def _prepare(self):
        out, in_dir = self.path, self.in_dir
        try:
            in_info = os.stat(in_dir)
        except OSError as e:
            raise ExportError(f"{in_dir}: {e.strerror}") from None
        try:
            os.mkdir(out, 0o777)
            self.created = True
        except FileExistsError:
            pass
        except OSError as e:
            raise ExportError(f"{out}: cannot create the output directory: {e.strerror}") \
                from None
        try:
            self.fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as e:
            if e.errno == errno.ELOOP or os.path.islink(out):
                raise ExportError(f"{out}: the output directory is a symbolic link; give a new "
                                  "or empty directory") from None
            raise ExportError(f"{out}: exists and is not a directory one can list: "
                              f"{e.strerror}") from None
        info = os.fstat(self.fd)
        if (info.st_dev, info.st_ino) == (in_info.st_dev, in_info.st_ino):
            raise ExportError(f"{out}: the output directory is the input directory; give a "
                              "new one")
        if not self.created and os.listdir(self.fd):
            raise ExportError(f"{out}: the output directory exists and is not empty; give a "
                              "new or empty one")

    def write(self, name, data):
        """Writes `data` (bytes, or a list of bytes) as `name` under a new
        temporary name "NAME.XXXXXXXX"; synced, renamed at the end."""
        chunks = [data] if isinstance(data, (bytes, bytearray, memoryview)) else data
        for _ in range(100):
            temporary = f"{name}.{secrets.token_hex(4)}"
            self.temporary[name] = temporary  # recorded before it exists
            try:
                fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                             | os.O_CLOEXEC, 0o666, dir_fd=self.fd)
                break
            except FileExistsError:
                del self.temporary[name]
            except OSError as e:
                del self.temporary[name]
                raise ExportError(f"cannot write {os.path.join(self.path, name)}: "
                                  f"{e.strerror}") from None
        else:
            raise ExportError(f"cannot write {os.path.join(self.path, name)}: no free "
                              "temporary name")
        try:
            with os.fdopen(fd, "wb") as f:
                for chunk in chunks:
                    f.write(chunk)
                    del chunk  # one tensor's bytes alive at a time, not two
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:
            raise ExportError(f"cannot write {os.path.join(self.path, name)}: "
                              f"{e.strerror}") from None

    def _place(self):
        for name, temporary in self.temporary.items():
            self.placed.append(name)  # recorded before it exists
            try:
                os.rename(temporary, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
            except OSError as e:
                raise ExportError(f"cannot write {os.path.join(self.path, name)}: "
                                  f"{e.strerror}") from None
        self.temporary = {}

    def _remove(self):
        """Every file written here, then the directory when created here."""
        for name in list(self.temporary.values()) + self.placed:
            try:
                os.unlink(name, dir_fd=self.fd)
            except OSError:
                pass
        self.temporary, self.placed = {}, []
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        if self.created:
            try:
                os.rmdir(self.path)
            except OSError:
                pass
            self.created = False

    def __exit__(self, kind, value, traceback):
        # a second signal must not cut the clean-up short
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            if kind is None:
                try:
                    self._place()
                except BaseException:
                    self._remove()
                    raise
                os.close(self.fd)
                self.fd = None
            else:
                self._remove()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        return False
