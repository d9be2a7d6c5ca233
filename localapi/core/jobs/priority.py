"""A conversion child's place below the service: idle-priority scheduling, and no way back up.

Light on purpose (the standard library and psutil): the child's entry (``filekiln _child``) calls
:func:`lower_priority` before it imports a tool or an engine, so that even a warm child's start-up
(a second or more of CPU, three of them beside a server that is starting) waits for the service.
"""

from __future__ import annotations

import os
import sys

import psutil

CHILD_NICENESS = 10  # POSIX: well below the service, still above idle work


def lower_priority() -> None:
    """Conversions yield the CPU to the API and the desktop window: a status poll or a click never waits for one.

    Everything the conversion starts (LibreOffice, a model server) inherits the priority. On Linux
    the child also runs under ``SCHED_IDLE``: nice alone did not do it there. A conversion child has
    a session (and so an autogroup) of its own, where nice counts only against its own threads, and
    the service's threads were measured waiting up to 2.4 s on the run queue behind a video encode
    (the supervisor's 0.1 s waits stretched so far that cancels and timeouts were seen seconds
    late). An idle-policy task is preempted as soon as a normal one wakes; the conversion still
    gets every cycle nothing else wants.
    """
    me = psutil.Process()
    try:
        if sys.platform == "win32":
            me.nice(psutil.BELOW_NORMAL_PRIORITY_CLASS)
        else:
            me.nice(max(me.nice(), CHILD_NICENESS))
    except (OSError, psutil.Error):
        pass  # a sandbox may forbid it; the conversion runs at normal priority
    if hasattr(os, "SCHED_IDLE"):
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        except OSError:
            pass  # as above: nice 10 then
    if sys.platform.startswith("linux"):
        give_up_raising_priority()


CAP_SYS_NICE = 23
PR_CAPBSET_DROP = 24
LINUX_CAPABILITY_VERSION_3 = 0x20080522


def give_up_raising_priority() -> None:
    """Drop CAP_SYS_NICE, so that neither the conversion nor what it starts can climb back above the service.

    Running as root (a container, a system service), a process may raise its own scheduling priority,
    and some engines do: SVT-AV1 puts its threads, and the thread that called it, under ``SCHED_FIFO``,
    real-time, above every normal process. An AV1 encode then took the CPU from the API and the desktop
    outright. Without the capability the engine's request is refused (SVT-AV1 warns and encodes on).
    """
    import ctypes

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        header, data = Header(LINUX_CAPABILITY_VERSION_3, 0), (Data * 2)()
        if libc.capget(ctypes.byref(header), data) != 0 or not data[0].permitted & (1 << CAP_SYS_NICE):
            return  # an ordinary user holds no such capability: nothing to give up
        libc.prctl(PR_CAPBSET_DROP, CAP_SYS_NICE, 0, 0, 0)  # nor for the programs it runs
        keep = ~(1 << CAP_SYS_NICE) & 0xFFFFFFFF
        data[0].effective &= keep
        data[0].permitted &= keep
        data[0].inheritable &= keep
        libc.capset(ctypes.byref(header), data)
    except (OSError, AttributeError):
        pass  # no capget in this libc: the conversion keeps what it has
