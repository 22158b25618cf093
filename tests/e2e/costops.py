# SPDX-License-Identifier: MIT
# tests/e2e/costops.py - N calls of one kind between two marker calls, for t-cost.sh: the
# system calls strace sees between access("/BBX-COST-BEGIN") and access("/BBX-COST-END")
# are the calls' own plus whatever bbx adds to each.  A first mutation before the begin
# marker opens the run (journal, state, PROC record), which every later call then shares.
import os
import sys

if sys.argv[1] == "--prep":
    # Made before the run, by the test, outside it: files the run did not create.
    op, n = sys.argv[2], int(sys.argv[3])
    if op in ("unlinkold", "unlinkxdev", "chmodold", "touchold", "appendold"):
        for i in range(n):
            open("f%d" % i, "w").write("old %d\n" % i)
    if op == "rmdirold":
        for i in range(n):
            os.mkdir("d%d" % i)
    if op in ("chmodatold", "linkold"):
        os.mkdir("d")
        for i in range(n):
            open("d/f%d" % i, "w").write("old %d\n" % i)
    sys.exit(0)
op, n = sys.argv[1], int(sys.argv[2])
if op == "appendold":
    # a shell appending to a file older than the run ("echo x >> log" in a loop), that
    # creates nothing in its working directory: the first append opens the run
    fd = os.open("f0", os.O_WRONLY | os.O_APPEND)
    os.write(fd, b"x\n")
    os.close(fd)
else:
    open("warm", "w").close()
if op in ("rename", "link"):
    open("src", "w").close()
if op in ("unlink", "unlinkat", "unlinkatdup"):
    for i in range(n):
        open("f%d" % i, "w").close()
if op == "object":
    os.makedirs("o/ab")
if op in ("subcreate", "sedi"):
    os.mkdir("d")
    for i in range(n if op == "sedi" else 0):
        open("d/f%d" % i, "w").write("x\n")
    # the directory's name proved once, before the measured calls
    open("d/warm", "w").close()
if op == "shards":
    # git's object shards: more directories in turn than a thread keeps in its four
    # slots of proved names (journal/capture.h, bbx_dtab), each proved once before
    for k in range(16):
        os.makedirs("o/%02x" % k)
        open("o/%02x/warm" % k, "w").close()
if op == "readsym":
    os.symlink(".", "sl")
if op == "dirmeta":
    # tar -x: the directories it made, their times, owner and mode set by name at the end
    os.mkdir("m")
    for i in range(n):
        os.mkdir("m/d%d" % i)
if op == "dirlist":
    # rm -r, find, grep -r (gnulib's fts): open a directory, then fdopendir and closedir
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)  # the shim's fdopendir and closedir
    libc.fdopendir.restype = ctypes.c_void_p
    libc.closedir.argtypes = [ctypes.c_void_p]
    os.mkdir("m")
    for i in range(n):
        os.mkdir("m/d%d" % i)
if op == "mkstemp":
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)  # the shim's mkstemp: it is preloaded
    os.mkdir("d")
    open("d/warm", "w").close()
    tmpl = [ctypes.create_string_buffer(b"d/tXXXXXX") for _ in range(n)]
here = os.getcwd()
if op == "chmodatold":
    dfd = os.open("d", os.O_RDONLY | os.O_DIRECTORY)
if op == "readat":
    # grep -r, find (gnulib's fts): each entry opened relative to its directory's
    # descriptor, itself opened by a relative name
    os.mkdir("d")
    open("d/warm", "w").close()
    dfd = os.open("d", os.O_RDONLY | os.O_DIRECTORY)
if op in ("unlinkat", "unlinkatdup"):
    os.mkdir("d")
    for i in range(n):
        os.rename("f%d" % i, "d/f%d" % i)
    dfd = os.open("d", os.O_RDONLY | os.O_DIRECTORY)
if op == "unlinkatdup":
    # rm -r (gnulib's fts): the directory's descriptor copied by fcntl(F_DUPFD_CLOEXEC),
    # the first one closed, every removal through the copy
    import fcntl
    first, dfd = dfd, fcntl.fcntl(dfd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.close(first)
os.access("/BBX-COST-BEGIN", 0)
for i in range(n):
    if op == "rename":
        os.rename("src", "dst") if i % 2 == 0 else os.rename("dst", "src")
    elif op == "create":
        os.close(os.open("f%d" % i, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    elif op == "mkstemp":
        fd = libc.mkstemp(tmpl[i])
        if fd < 0:
            sys.exit("mkstemp: errno %d" % ctypes.get_errno())
        os.close(fd)
    elif op in ("unlink", "unlinkold", "unlinkxdev"):
        os.unlink("f%d" % i)
    elif op in ("unlinkat", "unlinkatdup"):
        os.unlink("f%d" % i, dir_fd=dfd)
    elif op == "chmodold":
        os.chmod("f%d" % i, 0o640)
    elif op == "appendold":
        fd = os.open("f0", os.O_WRONLY | os.O_APPEND)
        os.write(fd, b"x\n")
        os.close(fd)
    elif op == "touchold":
        # GNU touch of a file older than the run: opened for writing (no O_TRUNC: its
        # content is preserved), its times set through the descriptor
        fd = os.open("f%d" % i, os.O_WRONLY | os.O_CREAT | os.O_NOCTTY | os.O_NONBLOCK, 0o666)
        os.utime(fd)
        os.close(fd)
    elif op == "chmodatold":
        # chmod -R: fchmodat relative to the descriptor of the directory it reads
        os.chmod("f%d" % i, 0o640, dir_fd=dfd)
    elif op == "object":
        # git's loose object: a temporary file in .git/objects/xx, linked to its name,
        # then removed
        t = "o/ab/tmp_obj_%d" % i
        os.close(os.open(t, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o444))
        os.link(t, "o/ab/obj%d" % i)
        os.unlink(t)
    elif op == "shards":
        os.close(os.open("o/%02x/f%d" % (i % 16, i), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    elif op == "mkdirfill":
        # tar -x, git's new shard: a directory made, then a file created in it
        os.mkdir("n%d" % i)
        os.close(os.open("n%d/f" % i, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    elif op == "subcreate":
        os.close(os.open("d/f%d" % i, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    elif op == "sedi":
        # sed -i: a temporary file beside the file, renamed over it
        t = "d/sed%d" % i
        fd = os.open(t, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, b"X\n")
        os.close(fd)
        os.rename(t, "d/f%d" % i)
    elif op == "createmeta":
        fd = os.open("f%d" % i, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.fchmod(fd, 0o644)
        os.fchown(fd, -1, -1)
        os.utime(fd, ns=(1000000000, 1000000000))
        os.close(fd)
    elif op == "dirmeta":
        os.utime("m/d%d" % i, ns=(1000000000, 1000000000))
        os.chown("m/d%d" % i, -1, -1)
        os.chmod("m/d%d" % i, 0o755)
    elif op == "link":
        os.link("src", "l%d" % i)
    elif op == "linkold":
        # cp -al: a file older than the run, named through a subdirectory of the
        # working directory that the run neither made nor proved
        os.link("d/f%d" % i, "l%d" % i)
    elif op == "mkdir":
        os.mkdir("d%d" % i)
    elif op == "rmdirold":
        os.rmdir("d%d" % i)
    elif op == "missing":
        try:
            os.open("nodir%d/f" % i, os.O_WRONLY | os.O_CREAT, 0o644)
        except FileNotFoundError:
            pass
    elif op == "dirlist":
        d = libc.fdopendir(os.open("m/d%d" % i, os.O_RDONLY | os.O_DIRECTORY))
        if not d or libc.closedir(d):
            sys.exit("fdopendir/closedir: errno %d" % ctypes.get_errno())
    elif op == "spawn":
        pid = os.posix_spawn("/bin/true", ["true"], os.environ)
        os.waitpid(pid, 0)
    elif op == "stat":
        os.stat("warm")
    elif op == "read":
        os.close(os.open("warm", os.O_RDONLY))
    elif op == "readat":
        os.close(os.open("warm", os.O_RDONLY | os.O_NOCTTY, dir_fd=dfd))
    elif op == "readabs":
        os.close(os.open(here + "/warm", os.O_RDONLY))
    elif op == "readsym":
        os.close(os.open(here + "/sl/warm", os.O_RDONLY))
    elif op == "statabs":
        os.stat(here + "/warm")
os.access("/BBX-COST-END", 0)
